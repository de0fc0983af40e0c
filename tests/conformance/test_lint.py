"""The tree is lint-clean and ``ruff format``-clean, under the rules of ``pyproject.toml``.

Ruff runs as ``python -m ruff`` from the test's own interpreter, over the package, the tests, the
examples and the benchmarks (the paths the brief and CI name).  Ruff is in the ``dev`` extra, so
an interpreter without it fails here (the message names the extra) instead of skipping: a skipped
lint check is a lint check nobody runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("opendp_wasserstein", "tests", "examples", "benchmarks")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *PATHS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ruff_is_installed() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (
        f"`{sys.executable} -m ruff` does not run (install the dev extra: "
        f"pip install '.[dev]'):\n{done.stdout}{done.stderr}"
    )


@pytest.mark.parametrize(
    "args",
    [("check", "--no-cache"), ("format", "--check", "--no-cache")],
    ids=["check", "format"],
)
def test_ruff_clean(args: tuple[str, ...]) -> None:
    done = _ruff(*args)
    assert done.returncode == 0, (
        f"`ruff {' '.join(args)} {' '.join(PATHS)}` failed (exit {done.returncode}):\n"
        f"{done.stdout}{done.stderr}"
    )
