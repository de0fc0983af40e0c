"""The package's layers, read off its source with ``ast`` (nothing of it runs).

Every import of a package module counts, lazy ones (inside functions) included.  The layers, from
the ground up (``docs/architecture.rst``): a module may import its own layer and the layers below
it, never one above; there is no import cycle; at most :data:`MAX_ROOT_MODULES` modules sit at the
package root; and no underscored name is imported from a module outside the importer's own
subpackage (a shared internal is a plain name in a private module).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import opendp_wasserstein

PACKAGE = Path(opendp_wasserstein.__file__).resolve().parent
NAME = "opendp_wasserstein"

#: the layers, lowest first; a module belongs to the first entry that names it or a package above it
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
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

MAX_ROOT_MODULES = 8


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("").as_posix().replace("/", ".")
        out[rel.removesuffix(".__init__")] = path
    return out


MODULES = modules()


def owner(name: str) -> str | None:
    """The module a dotted import target lives in (a module, or a name in a module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path) -> list[tuple[str, str, int]]:
    """``(target module, imported name or "", line)`` for every package import of ``module``."""
    is_pkg = path.name == "__init__.py"
    base = module if is_pkg else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == NAME or a.name.startswith(NAME + "."):
                    target = owner(a.name)
                    if target is not None:
                        out.append((target, "", node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = base.split(".")
                src = ".".join(
                    parts[: len(parts) - node.level + 1] + ([node.module] if node.module else [])
                )
            else:
                src = node.module or ""
            if src != NAME and not src.startswith(NAME + "."):
                continue
            for a in node.names:
                if f"{src}.{a.name}" in MODULES:  # a module imported by name
                    out.append((f"{src}.{a.name}", "", node.lineno))
                else:
                    target = owner(src)
                    if target is not None:
                        out.append((target, a.name, node.lineno))
    return out


GRAPH = {m: [(t, n, ln) for t, n, ln in imports(m, p) if t != m] for m, p in MODULES.items()}


def layer_of(module: str) -> int:
    rel = module.removeprefix(NAME).lstrip(".")
    top = rel.split(".")[0]
    for i, (_, names) in enumerate(LAYERS):
        if top in names and top:
            return i
    if rel == "":
        return next(i for i, (_, names) in enumerate(LAYERS) if "" in names)
    raise AssertionError(f"{module} is in no layer: add its package to LAYERS")


def cycles() -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w, _, _ in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    for m in MODULES:
        layer_of(m)


def test_no_import_cycle():
    found = cycles()
    pairs = []
    for comp in found:
        members = set(comp)
        pairs += sorted(
            {f"{m} -> {t} (line {ln})" for m in comp for t, _, ln in GRAPH[m] if t in members}
        )
    assert not found, "import cycles: " + "; ".join(pairs)


def test_no_import_from_a_lower_layer_to_a_higher_one():
    upward = []
    for m, targets in GRAPH.items():
        for t, _, ln in targets:
            if t == NAME and m != NAME:  # the package's face: never imported from inside
                upward.append(f"{m} (line {ln}) imports the package root {t}")
            elif layer_of(t) > layer_of(m):
                upward.append(
                    f"{m} ({LAYERS[layer_of(m)][0]}, line {ln}) imports {t} "
                    f"({LAYERS[layer_of(t)][0]})"
                )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(
        sorted(set(upward))
    )


def test_at_most_eight_modules_at_the_package_root():
    root = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at the package root: {root}"


def subpackage(module: str) -> str:
    """The importer's own subpackage: ``opendp_wasserstein.x`` for a module under ``x/``, the
    module itself for a root module."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_underscored_name_crosses_a_subpackage():
    crossing = []
    for m, targets in GRAPH.items():
        for t, name, ln in targets:
            if name.startswith("_") and not name.startswith("__"):
                if MODULES[m].parent == PACKAGE or subpackage(t) != subpackage(m):
                    crossing.append(f"{m} (line {ln}) imports {t}.{name}")
    assert not crossing, "underscored names imported across subpackages:\n" + "\n".join(crossing)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from opendp_wasserstein.core.box import as_box\n",
            [("opendp_wasserstein.core.box", "as_box")],
        ),
        (
            "def f():\n    from opendp_wasserstein.api import _x\n",
            [("opendp_wasserstein.api", "_x")],
        ),
        (
            "import opendp_wasserstein.noise.samplers as s\n",
            [("opendp_wasserstein.noise.samplers", "")],
        ),
        ("from opendp_wasserstein import runtime\n", [("opendp_wasserstein.runtime", "")]),
        ("from . import box\n", [("opendp_wasserstein.core.box", "")]),
    ],
)
def test_the_walk_sees_every_form_of_import(tmp_path, source, expected):
    """The walk finds top-level, lazy, aliased, module-by-name and relative imports (the last
    one as written in a module of ``core/``)."""
    path = tmp_path / "m.py"
    path.write_text(source)
    found = [(t, n) for t, n, _ in imports("opendp_wasserstein.core.probe", path)]
    assert found == expected


def test_the_checks_name_the_pair():
    """A lower-to-higher import and a cycle are reported with both modules (checked on a toy
    graph, so the messages of the real checks are known to be informative)."""
    saved = dict(GRAPH)
    try:
        GRAPH.clear()
        GRAPH.update(
            {
                "opendp_wasserstein.core.box": [("opendp_wasserstein.api", "synthesize", 3)],
                "opendp_wasserstein.api": [("opendp_wasserstein.core.box", "as_box", 5)],
            }
        )
        with pytest.raises(
            AssertionError,
            match=r"core\.box \(vocabulary, line 3\) imports opendp_wasserstein\.api",
        ):
            test_no_import_from_a_lower_layer_to_a_higher_one()
        with pytest.raises(
            AssertionError, match=r"opendp_wasserstein\.api -> opendp_wasserstein\.core\.box"
        ):
            test_no_import_cycle()
    finally:
        GRAPH.clear()
        GRAPH.update(saved)
