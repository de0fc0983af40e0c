#!/usr/bin/env python3
"""Hoist imports that sit inside functions to the top of the module (issue 21: package imports at
the top; ruff PLC0415).  Usage: python dev/relayout/hoist.py FILE... [--dry-run]

An import of an optional dependency (dask, distributed, polars, matplotlib, tqdm, ot, ortools,
sklearn) is left where it is and reported: it goes through
:func:`opendp_wasserstein.core.optional.import_optional` by hand.  So is an import inside a
``try`` (an optional-dependency probe).  Run ``ruff check --select I,F401 --fix`` afterwards,
then the layers test: a hoisted package import may close a cycle at import time.
"""

from __future__ import annotations

import ast
import sys

OPTIONAL = {"dask", "distributed", "polars", "matplotlib", "tqdm", "ot", "ortools", "sklearn"}


def nested_imports(tree: ast.Module):
    out = []

    def visit(node, in_func, in_try):
        for child in ast.iter_child_nodes(node):
            f = in_func or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            t = in_try or isinstance(child, ast.Try)
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_func:
                out.append((child, in_try))
            visit(child, f, t)

    visit(tree, False, False)
    return out


def root(node) -> str:
    if isinstance(node, ast.Import):
        return node.names[0].name.split(".")[0]
    return (node.module or "").split(".")[0] if not node.level else "."


def main(argv):
    dry = "--dry-run" in argv
    for path in [a for a in argv if not a.startswith("--")]:
        src = open(path).read()
        tree = ast.parse(src)
        lines = src.splitlines(keepends=True)
        drop, hoisted = set(), []
        for node, in_try in nested_imports(tree):
            r = root(node)
            if r in OPTIONAL or in_try:
                print(f"{path}:{node.lineno}: left in place ({'optional' if r in OPTIONAL else 'in try'}): {ast.unparse(node)}")
                continue
            stmt = ast.unparse(node)
            if stmt not in hoisted:
                hoisted.append(stmt)
            drop.update(range(node.lineno - 1, node.end_lineno))
        if not hoisted:
            continue
        # the line after the last top-level import (or after the docstring / __future__)
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        at = top[-1].end_lineno if top else (tree.body[0].end_lineno if tree.body and isinstance(tree.body[0], ast.Expr) else 0)
        new = []
        for i, line in enumerate(lines):
            if i in drop:
                # a blank line left after a dropped import at the head of a body goes too
                continue
            new.append(line)
            if i == at - 1:
                new.extend(s + "\n" for s in hoisted)
        if at == 0:
            new = [s + "\n" for s in hoisted] + new
        text = "".join(new)
        # a blank line that now directly follows a def line or docstring end is harmless; ruff I sorts
        print(f"{path}: hoisted {len(hoisted)} import(s)")
        if not dry:
            open(path, "w").write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
