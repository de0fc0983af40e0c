"""Every ``opendp-wasserstein`` command line of the README and the Sphinx pages runs (a smoke test).

The Python snippets run in ``tests/docs/test_snippets.py``; this runs the command lines of the
``bash``/``console``/``shell`` blocks: every line (``$`` prompts, ``\\`` continuations and ``#``
comments handled) that calls ``opendp-wasserstein``, through the package's ``main`` in a
temporary directory holding the files the page names: ``data.csv`` and ``bounds.json`` (numeric,
``height``/``weight``), ``table.csv``/``table.parquet``/``candidates.csv`` and a public
``schema.json`` (mixed columns).  The files are written afresh before each command, as a reader
starts from the page's files (so ``schema.json`` is the edited, public one when ``synth`` runs,
not the draft the ``schema`` example writes).  Each must exit 0 and write its output.

Two substitutions make cluster examples runnable here, and nothing else is changed: a remote
scheduler (``tcp://...``) becomes an in-process ``local:1`` cluster, and absolute paths under
``/data/`` are read from the temporary directory.  (The ``demo`` lines run as written, but score
their release on a 16^2 W1 grid instead of the demo's 256^2: that grid's flow is most of the
demo's time, ~20 s here; ``tests/cli/test_cli.py::test_demo_writes_png`` checks the demo's own.)
Lines that are not ``opendp-wasserstein`` commands (``pip install``, ``kubectl``, ``bash .ci/run``,
Sphinx) are not run here.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from opendp_wasserstein.cli import demo as demo_cli
from opendp_wasserstein.cli import main
from opendp_wasserstein.tables.io import write_file

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.rst") if "_build" not in p.parts),
]

_MD_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
_RST_CODE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\S*)\s*$")
SHELLS = {"bash", "console", "shell", "sh", "shell-session"}


def _blocks(path: Path) -> list[tuple[int, list[str]]]:
    """``(first line number, lines)`` of the shell blocks of a page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = _MD_FENCE.match(lines[i]) if path.suffix == ".md" else None
        if m:
            fence, lang, start = m[1], m[2].lower(), i + 1
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(fence):
                i += 1
            if lang in SHELLS:
                out.append((start + 1, lines[start:i]))
            i += 1
            continue
        r = _RST_CODE.match(lines[i]) if path.suffix == ".rst" else None
        if r:
            indent, lang = len(r[1]), r[2].lower()
            i += 1
            while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):
                i += 1
            start = i
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                i += 1
            if lang in SHELLS:
                out.append((start + 1, lines[start:i]))
            continue
        i += 1
    return out


def commands(path: Path) -> list[tuple[str, list[str]]]:
    """The ``opendp-wasserstein`` commands of a page: ``(where, argv)``."""
    out = []
    for first, block in _blocks(path):
        joined: list[tuple[int, str]] = []
        pending = ""
        for k, line in enumerate(block):
            text = line.strip()
            if text.startswith("$ "):
                text = text[2:]
            if pending:
                text = pending + " " + text
            if text.endswith("\\"):
                pending = text[:-1].strip()
                continue
            pending = ""
            joined.append((first + k, text))
        for lineno, text in joined:
            text = text.split(" #", 1)[0].strip()  # a trailing comment
            if text.startswith("#"):
                continue
            for part in text.split("&&"):
                argv = shlex.split(part.strip())
                if argv and argv[0] == "opendp-wasserstein":
                    out.append((f"{path.relative_to(ROOT)}:{lineno}", argv[1:]))
    return out


CASES = [case for page in PAGES for case in commands(page)]


def test_the_pages_have_commands():
    pages = {where.split(":")[0] for where, _ in CASES}
    assert {"README.md", "docs/tables.rst", "docs/getting_started.rst"} <= pages
    assert len(CASES) >= 12


# ---------------------------------------------------------------------------------------------
# the files the pages name

SCHEMA = {
    "columns": {
        "age": {"type": "int", "bounds": [0, 120]},
        "income": {"type": "float", "bounds": [0, 500000], "nullable": True},
        "region": {"type": "categorical", "categories": ["north", "east", "south", "west"]},
        "visit": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]},
        "smoker": {"type": "bool"},
    }
}


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "age": pa.array(rng.integers(18, 90, n)),
            "income": pa.array(rng.lognormal(10, 0.5, n), mask=rng.uniform(size=n) < 0.1),
            "region": pa.array(rng.choice(["north", "east", "south", "west"], n).tolist()),
            "visit": pa.array(
                [dt.date(2015, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 365, n)],
                type=pa.date32(),
            ),
            "smoker": pa.array(rng.uniform(size=n) < 0.2),
        }
    )


def _write_files(d: Path) -> None:
    rng = np.random.default_rng(0)
    numeric = pa.table(
        {"height": rng.uniform(140, 200, 3000), "weight": rng.uniform(40, 120, 3000)}
    )
    write_file(numeric, str(d / "data.csv"))
    write_file(numeric, str(d / "data.parquet"))
    write_file(numeric, str(d / "people.parquet"))
    bounds = json.dumps({"height": [100, 220], "weight": [30, 200]})
    (d / "bounds.json").write_text(bounds)
    (d / "b.json").write_text(bounds)
    table = _table(20000, 1)  # --estimate-bounds needs enough rows for its budget
    write_file(table, str(d / "table.csv"))
    write_file(table, str(d / "table.parquet"))
    (d / "schema.json").write_text(json.dumps(SCHEMA))


def _candidates(d: Path, argv: list[str]) -> None:
    """``candidates.csv`` in the form the command needs: a table under the schema, or numeric."""
    if "--schema" in argv:
        write_file(
            _table(30, 2).select(["region", "age", "income", "visit", "smoker"]),
            str(d / "candidates.csv"),
        )
    else:
        rng = np.random.default_rng(3)
        write_file(
            pa.table({"height": rng.uniform(140, 200, 40), "weight": rng.uniform(40, 120, 40)}),
            str(d / "candidates.csv"),
        )


def _runnable(argv: list[str], d: Path) -> list[str]:
    out = []
    for a in argv:
        if a.startswith("tcp://"):
            a = "local:1"
        if a.startswith("/data/"):
            a = str(d / a[len("/data/") :])
        out.append(a)
    return out


def _output(argv: list[str]) -> str | None:
    for flag in ("-o", "--output", "--out"):
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return None


def _param(where: str, argv: list[str]) -> object:
    slow = (
        argv[0] == "demo" or "--scheduler" in argv
    )  # a 30000-point release and figure, a Dask cluster
    return pytest.param(where, argv, id=where, marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("where,argv", [_param(w, a) for w, a in CASES])
def test_command_runs(where: str, argv: list[str], tmp_path: Path, monkeypatch, capsys) -> None:
    if "--scheduler" in argv:
        pytest.importorskip("distributed")
    if argv[0] == "demo":
        pytest.importorskip("matplotlib")
        monkeypatch.setattr(demo_cli, "DEMO_GRID_BITS", 4)  # where run_demo reads it
    monkeypatch.chdir(tmp_path)
    _write_files(tmp_path)
    _candidates(tmp_path, argv)
    args = _runnable(argv, tmp_path)
    rc = main(args)
    assert rc == 0, f"{where}: opendp-wasserstein {' '.join(argv)}\n{capsys.readouterr().err}"
    out = _output(args)
    if out is not None:
        assert (tmp_path / out).exists() or Path(out).exists(), f"{where}: no {out}"
