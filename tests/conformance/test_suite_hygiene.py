"""The suite's own conventions, checked so they do not erode."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_assert_joins_conditions_with_and():
    """``assert a and b`` hides which part failed: one assert per condition."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assert)
                and isinstance(node.test, ast.BoolOp)
                and isinstance(node.test.op, ast.And)
            ):
                found.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}")
    assert not found, f"split these asserts: {found}"
