#!/usr/bin/env python3
"""Rewrite imports and dotted references of opendp_wasserstein (and tests) to the new layout.

Usage: python3 relayout_rewrite.py DIR [--map RELAYOUT_MAP.txt] [--dry-run]

Every .py/.rst/.md file under DIR is rewritten by the map (one ``old.dotted.path
new.dotted.path`` per line; ``#`` starts a comment).  A line may name a module (everything under
it moves) or a module attribute (that one name moves; the longest matching line wins).  Three
kinds of text are rewritten:

* ``from X import a, b as c`` statements (also multi-line ones in parentheses, and doctest
  ``>>> from ...`` lines): each imported name is looked up as ``X.a`` and the statement is split
  into one statement per new module when the names now live in different modules;
* ``import X`` / ``import X as y`` statements;
* every other dotted reference ``opendp_wasserstein.x.y`` / ``tests.x.y`` (docstrings, Sphinx
  roles, ``mock.patch`` strings), and file paths ``opendp_wasserstein/x/y.py``, ``tests/x.py``.

The rewrite is idempotent: a reference with a prefix that exists only in the new layout is left
alone, and so is a bare reference to a name that is an old module and a new package at once
(``opendp_wasserstein.hierarchy``, ``opendp_wasserstein.schedules``: the package).  Run
``ruff check --select I --fix`` afterwards to re-sort the import blocks it touched.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

ROOTS = ("opendp_wasserstein", "tests")
DEFAULT_MAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wt", "h21-layout",
                           "RELAYOUT_MAP.txt")


def load_map(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            old, new = line.split()
            out[old] = new
    return out


class Mapper:
    def __init__(self, mapping: dict[str, str]):
        self.map = mapping
        old = set(mapping)
        new = set()
        for v in mapping.values():
            parts = v.split(".")
            for i in range(2, len(parts) + 1):
                new.add(".".join(parts[:i]))
        # every prefix of an old name is an old name too (a package that held it)
        olds = set()
        for o in old:
            parts = o.split(".")
            for i in range(1, len(parts) + 1):
                olds.add(".".join(parts[:i]))
        # a name that is a new module only (a value, not a key) is not an old name, even when
        # a line moving one of its attributes (a key under it) makes it a prefix of a key
        olds -= {v for v in mapping.values() if v not in mapping}
        self.new_only = new - olds
        self.olds = olds
        self.inverse = {v: k for k, v in mapping.items() if v != k}
        # an old module whose name is now a package (the bare name means the package)
        self.ambiguous = {o for o in old if any(v.startswith(o + ".") for v in mapping.values())
                          and mapping[o].startswith(o + ".")}

    def map_dotted(self, name: str, bare_is_old: bool = False) -> tuple[str, int]:
        """The new name, and how many leading components of it are the mapped part (0: unchanged)."""
        parts = name.split(".")
        key = next((i for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in self.map), 0)
        # a prefix that exists only in the new layout, more specific than the matched line:
        # the name is already in the new layout
        for i in range(key + 1, len(parts) + 1):
            if ".".join(parts[:i]) in self.new_only:
                return name, 0
        if not key or (name in self.ambiguous and not bare_is_old):
            return name, 0
        new = self.map[".".join(parts[:key])]
        return ".".join([new, *parts[key:]]), len(new.split("."))


DOTTED = re.compile(r"(?<![\w.])((?:%s)(?:\.\w+)+)" % "|".join(ROOTS))
PATH = re.compile(r"(?<![\w/])((?:%s)(?:/\w+)+)(\.py|/)?" % "|".join(ROOTS))
FROM = re.compile(
    r"(?P<prefix>^[ \t]*(?:>>> |\.\.\. )?[ \t]*)from[ \t]+(?P<mod>(?:%s)(?:\.\w+)*)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n#;]*?)(?P<tail>[ \t]*(?:#[^\n]*)?)$" % "|".join(ROOTS),
    re.M,
)
IMPORT = re.compile(r"(?P<prefix>^[ \t]*(?:>>> )?[ \t]*import[ \t]+)(?P<mod>(?:%s)(?:\.\w+)+)" % "|".join(ROOTS), re.M)
NAME = re.compile(r"(\w+)(?:\s+as\s+(\w+))?")


def rewrite_from(m: re.Match[str], mp: Mapper) -> str:
    prefix, mod, names, tail = m.group("prefix"), m.group("mod"), m.group("names"), m.group("tail")
    body = names.strip()
    paren = body.startswith("(")
    if paren:
        body = body[1:-1]
    # comments inside a parenthesised list go with the statement's tail
    comments = re.findall(r"#[^\n]*", body)
    body = re.sub(r"#[^\n]*", "", body)
    items = [NAME.fullmatch(x.strip()) for x in body.replace("\\\n", " ").split(",") if x.strip()]
    if any(it is None for it in items):
        return m.group(0)
    groups: dict[str, list[str]] = {}
    changed = False
    for it in items:
        assert it is not None
        name, alias = it.group(1), it.group(2)
        full = f"{mod}.{name}"
        new, k = mp.map_dotted(full)
        if new == full:
            newmod, newname = mod, name
        else:
            changed = True
            parts = new.split(".")
            if k >= len(parts):  # the name itself was mapped (a module or a moved attribute)
                newmod, newname = ".".join(parts[:-1]), parts[-1]
            else:
                newmod, newname = ".".join(parts[:-1]), parts[-1]
        alias = alias or (name if newname != name else None)
        groups.setdefault(newmod, []).append(newname if alias in (None, newname) else f"{newname} as {alias}")
    if not changed:
        return m.group(0)
    indent = prefix
    lines = []
    tails = (tail + (" " + " ".join(comments) if comments else "")).rstrip()
    for i, (newmod, ns) in enumerate(groups.items()):
        text = f"{indent}from {newmod} import {', '.join(ns)}"
        if paren and len(text) > 100 and not indent.lstrip().startswith(">>>"):
            inner = indent + "    "
            text = f"{indent}from {newmod} import (\n" + "".join(f"{inner}{n},\n" for n in ns) + f"{indent})"
        if i == 0 and tails:
            if text.endswith(")") and "(\n" in text:  # a comment of the first line stays there
                head, rest = text.split("(\n", 1)
                text = f"{head}(  {tails.strip()}\n{rest}"
            else:
                text += " " + tails.strip() if not tails.startswith(" ") else tails
        lines.append(text)
    return "\n".join(lines)


RELATIVE = re.compile(
    r"(?P<prefix>^[ \t]*)from[ \t]+(?P<dots>\.+)(?P<mod>\w+(?:\.\w+)*)?[ \t]+import[ \t]+", re.M
)


def absolute_relative(text: str, mp: Mapper, module: str | None, is_pkg: bool) -> str:
    """``from .x import y`` in a file whose module is ``module`` (new layout): resolved against
    the file's old module name, made absolute when what it names has moved."""
    if module is None:
        return text
    old_self = mp.inverse.get(module, module)

    def sub(m: re.Match[str]) -> str:
        parts = old_self.split(".")
        base = parts if is_pkg else parts[:-1]
        up = len(m.group("dots")) - 1
        if up > len(base) - 1:
            return m.group(0)
        base = base[: len(base) - up]
        target = ".".join(base + ([m.group("mod")] if m.group("mod") else []))
        # what the statement names under the old layout: moved, or its file moved
        moved = mp.map_dotted(target, bare_is_old=True)[0] != target or module != old_self
        if not moved or not any(target == o or target.startswith(o + ".") for o in mp.olds):
            return m.group(0)
        return f"{m.group('prefix')}from {target} import "

    return RELATIVE.sub(sub, text)


def rewrite_text(text: str, mp: Mapper, roots_on_disk: str | None, module: str | None = None,
                 is_pkg: bool = False) -> str:
    text = absolute_relative(text, mp, module, is_pkg)
    text = FROM.sub(lambda m: rewrite_from(m, mp), text)
    text = IMPORT.sub(lambda m: m.group("prefix") + mp.map_dotted(m.group("mod"), bare_is_old=True)[0], text)
    text = DOTTED.sub(lambda m: mp.map_dotted(m.group(1))[0], text)

    def path_sub(m: re.Match[str]) -> str:
        path, ext = m.group(1), m.group(2) or ""
        dotted = path.replace("/", ".")
        new, k = mp.map_dotted(dotted, bare_is_old=(ext == ".py"))
        if k == 0:
            return m.group(0)
        newpath = new.replace(".", "/")
        if ext == ".py" and roots_on_disk is not None:
            if not os.path.exists(os.path.join(roots_on_disk, newpath + ".py")) and os.path.isdir(
                os.path.join(roots_on_disk, newpath)
            ):
                return newpath + "/__init__.py"
        return newpath + ext

    text = PATH.sub(path_sub, text)
    return text


def repo_root(start: str) -> str | None:
    d = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(d, "pyproject.toml")):
            return d
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--map", default=None, help="the map file (default: DIR's RELAYOUT_MAP.txt, else the worktree's)")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    root = repo_root(a.directory)
    mapfile = a.map or next(
        (p for p in (os.path.join(root or a.directory, "RELAYOUT_MAP.txt"), DEFAULT_MAP) if os.path.exists(p)), None
    )
    if mapfile is None:
        ap.error("no RELAYOUT_MAP.txt found: pass --map")
    mp = Mapper(load_map(mapfile))
    changed = 0
    for d, dirs, files in os.walk(a.directory):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in {"__pycache__", "_build", "node_modules"}]
        for f in files:
            if not f.endswith((".py", ".rst", ".md")):
                continue
            p = os.path.join(d, f)
            with open(p, encoding="utf-8") as fh:
                old = fh.read()
            module = None
            rel = os.path.relpath(os.path.abspath(p), root) if root else None
            if rel and f.endswith(".py") and rel.split(os.sep)[0] in ROOTS:
                module = rel[:-3].replace(os.sep, ".")
                if module.endswith(".__init__"):
                    module = module[: -len(".__init__")]
            new = rewrite_text(old, mp, root, module, f == "__init__.py")
            if new != old:
                changed += 1
                print("rewrote", os.path.relpath(p, a.directory))
                if not a.dry_run:
                    with open(p, "w", encoding="utf-8") as fh:
                        fh.write(new)
    print(f"{changed} files rewritten (map {mapfile})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
