"""pyproject.toml's dependencies and extras cover what each documented entry point imports.

The quick start (``pip install '.[plot]' && opendp-wasserstein demo``) must run the demo, and
``pip install '.[examples]'`` must run every example.  The demo is run in a subprocess that cannot
import any installed distribution outside the requirement closure of the ``plot`` extra (read
from the installed metadata); the examples and the figure script are scanned for their imports.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
requirements = pytest.importorskip("packaging.requirements")
utils = pytest.importorskip("packaging.utils")

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _name(requirement: str) -> str:
    return utils.canonicalize_name(requirements.Requirement(requirement).name)


def _closure(extras: tuple[str, ...]) -> set[str]:
    """Canonical names of the distributions ``pip install '.[extras]'`` installs, from metadata."""
    todo = [r for r in PROJECT["dependencies"]]
    for extra in extras:
        todo += PROJECT["optional-dependencies"][extra]
    seen: set[str] = {"opendp-wasserstein"}
    while todo:
        req = requirements.Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = utils.canonicalize_name(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += requires(name) or []
        except PackageNotFoundError:
            pytest.skip(f"{name} is not installed, so its own requirements cannot be read")
    return seen


def _foreign(distributions: set[str]) -> set[str]:
    """Top-level import names of the installed distributions that are *not* in ``distributions``."""
    inside, outside = set(), set()
    for module, dists in packages_distributions().items():
        names = {utils.canonicalize_name(d) for d in dists}
        (inside if names & distributions else outside).add(module)
    return outside - inside - {"opendp_wasserstein"}


def test_hard_dependencies_are_the_core_only():
    names = {_name(r) for r in PROJECT["dependencies"]}
    # tables need pandas and pyarrow; node-addressed noise needs cryptography (AES)
    assert names == {"opendp", "numpy", "scipy", "pandas", "pyarrow", "cryptography"}
    (opendp,) = [r for r in PROJECT["dependencies"] if _name(r) == "opendp"]
    assert requirements.Requirement(opendp).specifier == requirements.SpecifierSet(">=0.16,<0.17")


def test_the_extras_nest():
    extras = {k: {_name(r) for r in v} for k, v in PROJECT["optional-dependencies"].items()}
    assert extras["progress"] == {"tqdm"}
    assert extras["progress"] <= extras["plot"] <= extras["examples"]
    assert extras["examples"] <= extras["dev"]
    assert extras["bench"] <= extras["dev"]
    assert {"pytest-xdist", "sphinx-mathjax-offline"} <= extras["dev"]


@pytest.mark.slow
def test_quick_start_install_runs_the_demo(tmp_path):
    """``opendp-wasserstein demo`` imports nothing beyond what ``.[plot]`` installs."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("ot")
    blocked = _foreign(_closure(("plot",)))
    assert {"sklearn", "hypothesis", "pytest"} <= blocked  # the guard really guards
    assert not {"matplotlib", "ot", "tqdm", "opendp", "numpy", "scipy"} & blocked
    guard = textwrap.dedent(
        f"""
        import sys
        from importlib.abc import MetaPathFinder

        BLOCKED = {sorted(blocked)!r}

        class Guard(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.partition(".")[0] in BLOCKED:
                    raise ImportError(f"{{name}} is not installed by the plot extra")
                return None

        sys.meta_path.insert(0, Guard())
        from opendp_wasserstein.cli import console_main  # what the installed script runs
        sys.exit(console_main(["demo", "--n", "800", "-o", "demo.png", "--quiet"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", guard], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "demo.png").stat().st_size > 1000


def _imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.partition(".")[0])
    return modules


@pytest.mark.parametrize(
    "script",
    sorted((ROOT / "examples").glob("*.py")) + [ROOT / "docs" / "make_figures.py"],
    ids=lambda p: p.name,
)
def test_examples_extra_covers_every_example(script):
    pytest.importorskip("sklearn")
    missing = _imports(script) & _foreign(_closure(("examples",)))
    assert not missing, f"{script.name} imports {sorted(missing)}, not in the examples extra"
