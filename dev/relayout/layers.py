#!/usr/bin/env python3
"""Layer figures of opendp_wasserstein read with ast: cycles, upward imports, root modules,
private cross imports, lazy package imports.  Usage: python dev/relayout/layers.py [--map MAP] [-v]

With --map (old->new module map), module names are translated before their layer is looked up,
so the figures of the old layout can be measured against the new layer order."""
from __future__ import annotations
import argparse, ast, sys
from pathlib import Path

NAME = "opendp_wasserstein"
LAYERS = (
    ("vocabulary", ("_version", "_compat", "runtime", "core")),
    ("randomness", ("noise",)),
    ("kernels", ("hierarchy", "public_candidates")),
    ("schedules", ("schedules",)),
    ("constructors", ("transformations", "postprocessing", "measurements", "combinators")),
    ("release", ("release",)),
    ("front ends", ("tables", "distributed")),
    ("evaluation", ("evaluation",)),
    ("doors", ("api", "cli", "__main__", "")),
)

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=".")
    ap.add_argument("--map")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    pkg = Path(a.root) / NAME
    mp = {}
    if a.map:
        for line in open(a.map):
            line = line.split("#", 1)[0].split()
            if len(line) == 2:
                mp[line[0]] = line[1]
    mods = {}
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(pkg.parent).with_suffix("").as_posix().replace("/", ".")
        mods[rel.removesuffix(".__init__")] = p
    def owner(n):
        while n and n not in mods:
            n = n.rpartition(".")[0]
        return n or None
    graph, lazy = {}, 0
    for m, p in mods.items():
        base = m if p.name == "__init__.py" else m.rpartition(".")[0]
        tree = ast.parse(p.read_text())
        top = {id(n) for n in tree.body}
        for n in ast.walk(tree):
            for b in getattr(n, "body", []) if isinstance(n, (ast.If, ast.Try)) and id(n) in top else []:
                top.add(id(b))
        out = []
        for n in ast.walk(tree):
            found = []
            if isinstance(n, ast.Import):
                found = [(owner(x.name), "") for x in n.names if x.name.startswith(NAME)]
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    parts = base.split(".")
                    src = ".".join(parts[: len(parts) - n.level + 1] + ([n.module] if n.module else []))
                else:
                    src = n.module or ""
                if src.startswith(NAME):
                    for x in n.names:
                        if f"{src}.{x.name}" in mods:
                            found.append((f"{src}.{x.name}", ""))
                        else:
                            found.append((owner(src), x.name))
            found = [(t, nm) for t, nm in found if t and t != m]
            if found and id(n) not in top:
                lazy += 1
            out += [(t, nm, n.lineno) for t, nm in found]
        graph[m] = out
    def translate(m):
        parts = m.split(".")
        for i in range(len(parts), 0, -1):
            k = ".".join(parts[:i])
            if k in mp:
                return ".".join([mp[k], *parts[i:]])
        return m
    def layer(m):
        rel = translate(m).removeprefix(NAME).lstrip(".")
        top = rel.split(".")[0]
        for i, (_, ns) in enumerate(LAYERS):
            if top and top in ns:
                return i
        if rel == "":
            return len(LAYERS) - 1
        return None
    # Tarjan
    sys.setrecursionlimit(10000)
    index, low, stack, on, comps = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w, _, _ in graph[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            c = []
            while True:
                w = stack.pop(); on.discard(w); c.append(w)
                if w == v: break
            if len(c) > 1: comps.append(sorted(c))
    for v in graph:
        if v not in index: visit(v)
    upward, nolayer = set(), set()
    for m, ts in graph.items():
        for t, _, ln in ts:
            lm, lt = layer(m), layer(t)
            if lm is None: nolayer.add(m); continue
            if lt is None: nolayer.add(t); continue
            if (t == NAME and m != NAME) or lt > lm:
                upward.add((m, t))
    sub = lambda m: ".".join(m.split(".")[:2])
    private = []
    for m, ts in graph.items():
        for t, nm, ln in ts:
            if nm.startswith("_") and not nm.startswith("__"):
                if mods[m].parent == pkg or sub(t) != sub(m):
                    private.append(f"{m}:{ln} {t}.{nm}")
    roots = sorted(p.name for p in pkg.glob("*.py") if p.name != "__init__.py")
    edges_in_cycles = sum(1 for c in comps for m in c for t, _, _ in graph[m] if t in c)
    print(f"modules {len(mods)}; cycles (SCCs) {len(comps)} ({sum(map(len, comps))} modules, {edges_in_cycles} edges); "
          f"upward imports {len(upward)}; root modules {len(roots)}; private cross imports {len(private)}; "
          f"lazy package import statements {lazy}; modules in no layer {len(nolayer)}")
    if a.v:
        for c in comps: print("cycle:", " ".join(c))
        for u in sorted(upward): print("upward:", *u)
        print("root:", roots)
        for p in private: print("private:", p)
        for n in sorted(nolayer): print("no layer:", n)
    return 0
sys.exit(main())
