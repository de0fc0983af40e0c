"""The console script's start-up (issue 24, item 5): ``--help``, ``--version`` and a usage error
are answered by the launcher :mod:`opendp_wasserstein_cli` without importing numpy, OpenDP or the
package; any other command is handed to :func:`opendp_wasserstein.cli.console_main`.  No timing
here: ``benchmarks/bench_startup.py`` prints the times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import opendp_wasserstein
import opendp_wasserstein_cli
from opendp_wasserstein.cli import _parser
from opendp_wasserstein.evaluation.shapes import SHAPES
from opendp_wasserstein_cli.parser import SHAPE_NAMES, build_parser, package_version

ROOT = Path(__file__).resolve().parents[2]

#: top-level modules the launcher must not import for --help / --version / a usage error
HEAVY = ["numpy", "opendp", "opendp_wasserstein", "scipy", "pandas", "pyarrow", "polars"]

_PROBE = """
import contextlib, io, json, sys
from opendp_wasserstein_cli import console_main
runs = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = console_main(argv)
    runs.append([code, out.getvalue(), err.getvalue()])
loaded = sorted({m.partition(".")[0] for m in sys.modules} & set(json.loads(sys.argv[2])))
print(json.dumps({"runs": runs, "loaded": loaded}))
"""


def _probe(*argvs: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(list(argvs)), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_help_version_and_usage_errors_import_neither_numpy_nor_opendp():
    probe = _probe(
        ["--version"],
        ["--help"],
        ["synth", "--help"],
        ["select", "--help"],
        ["schema", "--help"],
        ["demo", "--help"],
        ["synth", "data.csv"],  # -o, --epsilon and --bounds/--schema missing: a usage error
    )
    assert probe["loaded"] == []
    (version, top, synth, select, schema, demo, usage) = probe["runs"]
    assert version[0] == 0
    assert version[1].startswith(f"opendp-wasserstein {opendp_wasserstein.__version__} (opendp ")
    assert top[0] == 0
    assert top[1].startswith("usage: opendp-wasserstein ")
    for (code, out, _), name in zip(
        (synth, select, schema, demo), ("synth", "select", "schema", "demo"), strict=True
    ):
        assert code == 0
        assert out.startswith(f"usage: opendp-wasserstein {name}")
    assert usage[0] == 2
    assert "the following arguments are required: -o/--output, --epsilon" in usage[2]


def test_the_probe_would_see_the_package():
    """The check above is not vacuous: a command that runs imports the package and OpenDP."""
    probe = _probe(["schema", "no-such-file.csv"])
    ((code, _, err),) = probe["runs"]
    assert code == 2
    assert "no-such-file.csv" in err
    assert {"numpy", "opendp", "opendp_wasserstein"} <= set(probe["loaded"])


def test_the_launcher_answers_as_the_command_line(tmp_path, capsys):
    """Same parser, same exit codes and texts as :func:`opendp_wasserstein.cli.main`."""
    assert _parser is build_parser
    for argv in (["--version"], ["synth", "--help"], ["select", "x.csv"]):
        codes = []
        texts = []
        for run in (opendp_wasserstein_cli.console_main, opendp_wasserstein.cli.main):
            codes.append(run(argv))
            texts.append(capsys.readouterr())
        assert codes[0] == codes[1], argv
        assert texts[0] == texts[1], argv
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n2,y\n")
    assert opendp_wasserstein_cli.console_main(["schema", str(csv), "--quiet"]) == 0


def test_the_parser_literals_match_the_package():
    assert SHAPE_NAMES == tuple(SHAPES)
    assert package_version() == opendp_wasserstein.__version__


def test_the_console_script_is_the_launcher():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {
        "opendp-wasserstein": "opendp_wasserstein_cli:console_main"
    }
    found = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert "opendp_wasserstein_cli" in found


@pytest.mark.parametrize("module", ["opendp_wasserstein_cli", "opendp_wasserstein"])
def test_python_dash_m_runs_the_program(module):
    proc = subprocess.run(
        [sys.executable, "-m", module, "--version"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"opendp-wasserstein {opendp_wasserstein.__version__} ")


_SYNTH_PROBE = """
import json, sys
from opendp_wasserstein_cli import console_main
code = console_main(json.loads(sys.argv[1]))
before = "sklearn" in sys.modules
deferred = sorted(m for m in ("pandas", "scipy") if m in sys.modules)
import opendp.prelude as dp
dp.sklearn.decomposition  # an attribute access loads the deferred extra in full
print(json.dumps(
    {"code": code, "before": before, "after": "sklearn" in sys.modules, "loaded": deferred}
))
"""


def _synth_probe(argv: list[str]) -> dict:
    """Run :data:`_SYNTH_PROBE` on ``argv`` in a fresh interpreter; its JSON report."""
    proc = subprocess.run(
        [sys.executable, "-c", _SYNTH_PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def test_a_synth_run_defers_the_sklearn_extra_until_it_is_used(tmp_path):
    """The program's ``synth`` runs OpenDP's ``array2_domain`` (which imports ``opendp.prelude``,
    which imports ``opendp.extras.sklearn``) without importing scikit-learn; the extra still
    works on first use."""
    pytest.importorskip("sklearn")
    csv, out = tmp_path / "x.csv", tmp_path / "y.csv"
    csv.write_text("a,b\n" + "".join(f"{i / 50},{(i * 7 % 50) / 50}\n" for i in range(50)))
    bounds = tmp_path / "b.json"
    bounds.write_text('{"a": [0, 1], "b": [0, 1]}')
    argv = ["synth", str(csv), "-o", str(out), "--epsilon", "1", "--bounds", str(bounds)]
    got = _synth_probe([*argv, "--quiet"])
    assert got == {"code": 0, "before": False, "after": True, "loaded": []}
    assert out.read_text().startswith("a,b\n")


def test_a_numeric_synth_imports_neither_pandas_nor_scipy(tmp_path):
    """A ``--bounds`` ``synth`` (numbers read as text, parsed by Arrow, written back through
    Arrow buffers) loads neither pandas (a third of its start-up) nor scipy; a table with a
    text category still goes through pandas, so the probe can see it."""
    csv, out = tmp_path / "x.csv", tmp_path / "y.csv"
    csv.write_text("a,b,c\n" + "".join(f"{i / 50},{i % 7},{'xy'[i % 2]}\n" for i in range(50)))
    bounds, schema = tmp_path / "b.json", tmp_path / "s.json"
    bounds.write_text('{"a": [0, 1], "b": [0, 6]}')
    schema.write_text(
        '{"columns": {"a": {"type": "float", "bounds": [0, 1]}, '
        '"c": {"type": "categorical", "categories": ["x", "y"]}}}'
    )
    loaded = []
    for extra in (["--bounds", str(bounds), "--columns", "a,b"], ["--schema", str(schema)]):
        argv = ["synth", str(csv), "-o", str(out), "--epsilon", "1", "--quiet", *extra]
        if extra[0] == "--schema":
            argv += ["--columns", "a,c"]
        got = _synth_probe(argv)
        assert got["code"] == 0
        loaded.append(got["loaded"])
    assert loaded == [[], ["pandas"]]


def test_deferring_is_a_no_op_once_the_extra_is_imported():
    import opendp.extras.sklearn  # noqa: F401

    assert opendp_wasserstein_cli.defer_sklearn_extra() is False


_IMPORT_PROBE = """
import json, sys
import opendp_wasserstein
print(json.dumps([m for m in ("pandas", "scipy.spatial", "scipy.special") if m in sys.modules]))
"""


def test_the_package_import_defers_pandas_and_scipy_submodules():
    # pandas (0.3 s) and scipy.spatial / scipy.special (0.36 s, 0.2 s) load on first use
    # (core.optional.lazy_module), not when the package is imported
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout) == []


def test_lazy_module_loads_on_first_attribute_read():
    from opendp_wasserstein.core.optional import lazy_module

    probe = "import sys\nfrom opendp_wasserstein.core.optional import lazy_module\n"
    probe += "m = lazy_module('colorsys')\nbefore = 'colorsys' in sys.modules\n"
    probe += "y = m.rgb_to_yiq(0.0, 0.0, 0.0)[0]\nprint(before, 'colorsys' in sys.modules, y)\n"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "True", "0.0"]
    assert repr(lazy_module("json")) == "<lazy module 'json'>"
