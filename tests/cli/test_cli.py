import io
import json
import os
import re
import sys

import numpy as np
import pytest

from opendp_wasserstein.cli import demo as demo_cli
from opendp_wasserstein.cli import main


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(800, 2)) * [10, 5]
    path = tmp_path / "in.csv"
    path.write_text("height,weight\n" + "".join(f"{a},{b}\n" for a, b in x))
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"height": [0, 10], "weight": [0, 5]}))
    return path, bounds, tmp_path


def _synth(src, out, bounds, *extra):
    """``synth SRC -o OUT --epsilon 1 --bounds BOUNDS EXTRA...``: the program's exit status."""
    return main(
        ["synth", str(src), "-o", str(out), "--epsilon", "1", "--bounds", str(bounds), *extra]
    )


def test_synth_success_json(data, capsys):
    path, bounds, tmp = data
    out = tmp / "out.csv"
    rc = _synth(path, out, bounds, "--json", "--seed", "1")
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert "seconds" not in summary  # a timing depends on the data and no proof covers it
    assert summary["rows_out"] == 800
    assert summary["columns"] == ["height", "weight"]
    lines = out.read_text().splitlines()
    assert lines[0] == "height,weight"
    assert len(lines) == 801
    y = np.loadtxt(out, delimiter=",", skiprows=1)
    assert np.all((y >= 0) & (y <= [10, 5]))


@pytest.mark.parametrize("mechanism", ["pruned", "pmm"])
def test_synth_other_mechanisms_and_columns(data, capsys, mechanism):
    path, bounds, tmp = data
    out = tmp / "o.csv"
    rc = main(
        [
            "synth",
            str(path),
            "-o",
            str(out),
            "--epsilon",
            "0.5",
            "--bounds",
            str(bounds),
            "--mechanism",
            mechanism,
            "--columns",
            "weight",
            "--quiet",
        ]
    )
    assert rc == 0
    assert out.read_text().splitlines()[0] == "weight"
    assert capsys.readouterr().out == ""


def test_synth_prints_eps_and_schedule(data, capsys):
    path, bounds, tmp = data
    assert _synth(path, tmp / "o.csv", bounds) == 0
    out = capsys.readouterr().out
    assert "certified epsilon" in out
    assert "schedule" in out


def write(tmp, name, text):
    p = tmp / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    "case,match",
    [
        ("missing_bounds", "bounds"),
        # the header field without bounds is counted, not quoted (in a headerless file it is a
        # record)
        (
            "bounds_missing_column",
            "1 of its 2 header field\\(s\\) are not columns of the schema.*"
            "the schema's columns are \\['height'\\]; pass --columns height",
        ),
        ("bounds_bad_order", "lower < upper"),
        ("bounds_not_json", "not valid JSON"),
        ("unreadable", "cannot read file"),
        ("empty", "empty"),
        ("eps_zero", "epsilon"),
        ("eps_negative", "epsilon"),
        ("unknown_column", "\\['age'\\] are not in the schema"),
    ],
)
def test_synth_errors(data, capsys, case, match):
    path, bounds, tmp = data
    out = tmp / "out.csv"
    args = ["synth", str(path), "-o", str(out), "--epsilon", "1", "--bounds", str(bounds)]
    if case == "missing_bounds":
        args = args[:-2]
    elif case == "bounds_missing_column":
        args[-1] = write(tmp, "b2.json", json.dumps({"height": [0, 10]}))
    elif case == "bounds_bad_order":
        args[-1] = write(tmp, "b3.json", json.dumps({"height": [10, 0], "weight": [0, 5]}))
    elif case == "bounds_not_json":
        args[-1] = write(tmp, "b4.json", "{height: 1")
    elif case == "nan":
        args[1] = write(tmp, "nan.csv", "height,weight\n1,2\nnan,3\n")
    elif case == "text":
        args[1] = write(tmp, "t.csv", "height,weight\n1,2\n3,abc\n")
    elif case == "unreadable":
        args[1] = str(tmp / "does-not-exist.csv")
    elif case == "empty":
        args[1] = write(tmp, "e.csv", "")
    elif case == "eps_zero":
        args[5] = "0"
    elif case == "eps_negative":
        args[5] = "-1"
    elif case == "unknown_column":
        args += ["--columns", "age"]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2
    assert "error:" in err
    assert "Traceback" not in err
    import re

    assert re.search(match, err), err
    if case in ("bounds_missing_column", "unknown_column"):
        assert "'weight'" not in err  # a header field the schema does not name is never quoted
    assert not out.exists()
    assert not [f for f in os.listdir(tmp) if ".tmp" in f]


def test_demo_writes_png(tmp_path, capsys):
    png = tmp_path / "demo.png"
    rc = main(["demo", "--n", "3000", "-o", str(png), "--seed", "0", "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert png.exists()
    assert png.stat().st_size > 1000
    assert 0 < summary["w1_linf"] < 0.2
    # all points on the grid (OR-Tools is in the dev extra): a binning bound, no subsampling floor
    assert summary["w1_noise_floor"] == 0.0
    assert 0 < summary["w1_error_bound"] <= 1 / 256


def test_demo_without_ortools_falls_back_to_subsamples(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ortools.graph.python", None)
    assert main(["demo", "--n", "1000", "-o", "", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "subsampling floor" in out
    assert "pip install ortools" in out


def test_demo_bad_epsilon(capsys):
    assert main(["demo", "--epsilon", "-2", "-o", ""]) == 2


@pytest.fixture
def select_files(tmp_path):
    rng = np.random.default_rng(1)
    d = tmp_path / "d.csv"
    d.write_text("a,b\n" + "".join(f"{x},{y}\n" for x, y in rng.normal(size=(600, 2))))
    c = tmp_path / "c.csv"
    c.write_text("a,b\n" + "".join(f"{x},{y}\n" for x, y in rng.normal(size=(40, 2)) * 2))
    return d, c, tmp_path


@pytest.mark.parametrize("mechanism", ["projection", "tree-em", "nn"])
def test_select_success(select_files, capsys, mechanism):
    d, c, tmp = select_files
    out = tmp / "sel.csv"
    args = [
        "select",
        str(d),
        str(c),
        "-m",
        "25",
        "--epsilon",
        "1",
        "--mechanism",
        mechanism,
        "-o",
        str(out),
        "--json",
    ]
    if mechanism == "tree-em":
        args.append("--idealized-numerics")
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert summary["m"] == 25
    lines = out.read_text().splitlines()
    assert lines[0] == "a,b,multiplicity"
    assert sum(int(r.split(",")[-1]) for r in lines[1:]) == 25


@pytest.mark.parametrize(
    "case,match",
    [
        ("m0", "-m"),
        ("header", "columns"),
        ("eps", "epsilon"),
        ("treeem", "idealized-numerics"),
        ("dup", "distinct"),
    ],
)
def test_select_errors(select_files, capsys, case, match):
    d, c, tmp = select_files
    out = tmp / "sel.csv"
    args = ["select", str(d), str(c), "-m", "5", "--epsilon", "1", "-o", str(out)]
    if case == "m0":
        args[4] = "0"
    elif case == "header":
        args[2] = write(tmp, "c2.csv", "x,y\n1,2\n")
    elif case == "eps":
        args[6] = "-1"
    elif case == "treeem":
        args += ["--mechanism", "tree-em"]
    elif case == "dup":
        args[2] = write(tmp, "c3.csv", "a,b\n1,2\n1,2\n")
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2
    assert match in err
    assert "Traceback" not in err
    assert not out.exists()


def test_synth_private_size_reports_nothing_read_off_n(data, capsys):
    """--private-size: no field of the summary is computed from the private row count."""
    path, bounds, tmp = data
    out = tmp / "priv.csv"
    seen = []
    for seed in ("1", "2"):
        rc = _synth(
            path, out, bounds, "--json", "--seed", seed, "--private-size", "--mechanism", "pruned"
        )
        assert rc == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["rows_in"] is None
        assert summary["epsilon_certified"] <= 1.0
        assert summary["rows_out"] == summary["details"]["size_estimate"]
        assert len(out.read_text().splitlines()) == summary["rows_out"] + 1
        seen.append((summary["rows_out"], summary["depth"]))
    assert seen[0] != seen[1]  # the size and depth come from the noisy count, not from n


def test_select_private_size(select_files, capsys):
    d, c, tmp = select_files
    out = tmp / "sel.csv"
    assert (
        main(
            [
                "select",
                str(d),
                str(c),
                "-m",
                "9",
                "--epsilon",
                "1",
                "-o",
                str(out),
                "--json",
                "--private-size",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] <= 1.0
    assert sum(int(r.split(",")[-1]) for r in out.read_text().splitlines()[1:]) == 9


@pytest.mark.parametrize("private_size", [False, True])
def test_synth_on_neighbouring_files_succeeds_on_both(data, private_size, capsys):
    """Whether ``synth`` succeeds must not depend on one record: an infinite value is clamped to
    the box, and with --private-size a file with no data rows is data too."""
    path, bounds, tmp = data
    pairs = [("height,weight\n1,2\ninf,3\n", "height,weight\n1,2\n4,3\n")]
    if private_size:
        pairs.append(("height,weight\n", "height,weight\n1,2\n"))
    extra = ["--private-size"] if private_size else []
    for pair in pairs:
        for i, text in enumerate(pair):
            src = tmp / f"n{i}.csv"
            src.write_text(text)
            out = tmp / f"o{i}.csv"
            rc = _synth(src, out, bounds, "--json", *extra)
            assert rc == 0, capsys.readouterr().err
            y = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
            assert np.all((y >= 0) & (y <= [10, 5]))
        capsys.readouterr()


def test_numeric_synth_refuses_missing_values_by_column(data, capsys):
    """--bounds declares numeric columns (no schema): a missing value is outside the input domain
    and refused by column, with --delta (the numeric reader) and without it (the table path),
    as in Python (issue 20, item 11: --bounds alone used to impute it)."""
    path, bounds, tmp = data
    src = tmp / "m.csv"
    src.write_text("height,weight\n1,\n2,3\ninf,4\n")
    cmd = ["synth", str(src), "-o", str(tmp / "o.csv"), "--epsilon", "1", "--bounds", str(bounds)]
    assert main([*cmd, "--delta", "1e-9"]) == 2
    assert "column 'weight'" in capsys.readouterr().err
    assert main(cmd) == 2
    assert "column 'weight'" in capsys.readouterr().err
    src.write_text("height,weight\n1,2\n2,3\ninf,4\n")
    assert main([*cmd, "--delta", "1e-9"]) == 0


def test_select_candidates_must_be_finite(select_files, capsys):
    d, c, tmp = select_files
    header = c.read_text().splitlines()[0]
    bad = tmp / "c_inf.csv"
    bad.write_text(
        header
        + "\n"
        + ",".join(["inf"] * len(header.split(",")))
        + "\n"
        + c.read_text().splitlines()[1]
        + "\n"
    )
    assert (
        main(["select", str(d), str(bad), "-m", "3", "--epsilon", "1", "-o", str(tmp / "s.csv")])
        == 2
    )
    assert "infinite" in capsys.readouterr().err


def test_select_a_record_with_all_cells_empty_is_refused_like_one_missing_value(
    select_files, capsys
):
    """A record written as "," is a record with missing values, not a line to skip (skipping it
    would turn a replacement into a removal)."""
    d, c, tmp = select_files
    errors = []
    for row in (",0.5", ","):
        src = tmp / "m.csv"
        src.write_text("a,b\n0.1,0.2\n" + row + "\n")
        assert (
            main(
                ["select", str(src), str(c), "-m", "3", "--epsilon", "1", "-o", str(tmp / "s.csv")]
            )
            == 2
        )
        errors.append(capsys.readouterr().err)
    assert all("missing or NaN" in e for e in errors)


def test_select_names_what_epsilon_is_certified_for(select_files, capsys):
    d, c, tmp = select_files
    cmd = ["select", str(d), str(c), "-m", "9", "--epsilon", "1", "-o", str(tmp / "s.csv")]
    assert main(cmd) == 0
    assert "one replacement" in capsys.readouterr().out
    assert main([*cmd, "--private-size"]) == 0
    assert "one added or removed record" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# --version, help texts, usage lines, progress


def _subparsers():
    import argparse

    from opendp_wasserstein.cli import _parser

    parser = _parser()
    (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return parser, group.choices


def test_version(capsys):
    from importlib.metadata import version

    from opendp_wasserstein import __version__

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"opendp-wasserstein {__version__} ")
    assert f"(opendp {version('opendp')})" in out


def test_every_option_of_every_subcommand_has_help():
    import argparse

    parser, subcommands = _subparsers()
    assert {"demo", "synth", "select", "schema"} <= set(subcommands)
    for name, sub in [("", parser), *subcommands.items()]:
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            label = f"{name} {'/'.join(action.option_strings) or action.dest}"
            assert action.help, f"{label} has no help text"
            assert action.help != argparse.SUPPRESS, label


@pytest.mark.parametrize("command", ["demo", "synth", "select", "schema"])
def test_help_of_each_subcommand_exits_zero(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: opendp-wasserstein {command}")


def test_usage_shows_required_options_as_required():
    import re

    _, subcommands = _subparsers()
    usage = " ".join(subcommands["synth"].format_usage().split())
    for option in ("-o OUTPUT", "--epsilon EPSILON"):
        assert option in usage, option
        assert not re.search(r"\[" + re.escape(option), usage), f"{option} is shown as optional"
    # one of the two public descriptions of the data is required
    assert "(--bounds BOUNDS.json | --schema SCHEMA.json)" in usage
    assert "[--mechanism" in usage
    usage = " ".join(subcommands["select"].format_usage().split())
    assert "-m M" in usage
    assert "[-m" not in usage


def test_usage_error_is_exit_code_two(capsys):
    assert main(["synth", "in.csv", "-o", "out.csv", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "one of the arguments --bounds --schema is required" in err
    assert main(["demo", "--shape", "no-such-shape"]) == 2
    assert "invalid choice" in capsys.readouterr().err


class _Terminal(io.StringIO):
    """A standard error stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def _run_quick_demo(tmp_path, monkeypatch, stream, *extra):
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.chdir(tmp_path)
    # these tests check the progress bar, not the W1: its grid's flow is the demo's time (a
    # 256^2 grid, ~20 s here, whatever n; test_demo_writes_png runs the demo's own grid)
    monkeypatch.setattr(demo_cli, "DEMO_GRID_BITS", 4)  # where run_demo reads it
    return main(["demo", "--n", "600", "-o", "", "--seed", "0", *extra])


def test_demo_shows_w1_progress_on_a_terminal(tmp_path, monkeypatch, capsys):
    pytest.importorskip("tqdm")
    stream = _Terminal()
    assert _run_quick_demo(tmp_path, monkeypatch, stream) == 0
    assert "W1 evaluation" in stream.getvalue()
    assert "W1 (l_inf) to the original" in capsys.readouterr().out


@pytest.mark.parametrize("case", ["not-a-terminal", "quiet", "json", "no-tqdm"])
def test_demo_shows_no_progress_otherwise(tmp_path, monkeypatch, case):
    stream = io.StringIO() if case == "not-a-terminal" else _Terminal()
    extra = {"quiet": ["--quiet"], "json": ["--json"]}.get(case, [])
    if case == "no-tqdm":
        monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    assert _run_quick_demo(tmp_path, monkeypatch, stream, *extra) == 0
    assert stream.getvalue() == ""


def test_progress_bar_steps_to_the_reported_total(monkeypatch):
    pytest.importorskip("tqdm")
    from opendp_wasserstein.cli._common import progress as _progress

    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    bar = _progress(1, False, "work")
    for done in range(1, 11):
        bar.step(done, 10)
    assert (bar.n, bar.total) == (10, 10)
    bar.close()
    assert "work" in stream.getvalue()


def test_w1_estimate_reports_every_solve():
    from opendp_wasserstein.evaluation import w1_estimate

    rng = np.random.default_rng(3)
    x, y = rng.uniform(size=(300, 2)), rng.uniform(size=(250, 2))
    seen: list[tuple[int, int]] = []
    est = w1_estimate(x, y, sample_size=100, repeats=3, seed=1, on_step=lambda *a: seen.append(a))
    assert seen == [(k, 6) for k in range(1, 7)]
    assert est == w1_estimate(x, y, sample_size=100, repeats=3, seed=1)  # progress changes nothing
    seen.clear()
    w1_estimate(x, y, sample_size=1000, on_step=lambda *a: seen.append(a))  # exact: one solve
    assert seen == [(1, 1)]


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned"])
def test_synth_delta_certifies_the_pair(data, capsys, mechanism):
    path, bounds, tmp = data
    out = tmp / "d.csv"
    rc = main(
        [
            "synth",
            str(path),
            "-o",
            str(out),
            "--epsilon",
            "1",
            "--delta",
            "1e-9",
            "--bounds",
            str(bounds),
            "--mechanism",
            mechanism,
            "--json",
            "--seed",
            "2",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert summary["delta_certified"] == 1e-9
    assert summary["rows_out"] == 800


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--delta", "0"], "--delta must be in \\(0, 1\\)"),
        (["--delta", "1"], "--delta must be in \\(0, 1\\)"),
        (["--delta", "1e-9", "--private-size"], "--delta needs a public row count"),
        (["--delta", "1e-9", "--mechanism", "structured"], "pure DP only"),
    ],
)
def test_synth_delta_errors(data, capsys, extra, match):
    path, bounds, tmp = data
    rc = _synth(path, tmp / "e.csv", bounds, *extra)
    assert rc != 0
    assert re.search(match, capsys.readouterr().err)


def test_synth_consistency_option(data, capsys):
    """--consistency picks the post-processing: the default is least squares (as synthesize's),
    the paper's rule gives another release under the same seed, and pmm refuses the option."""
    path, bounds, tmp = data
    texts = {}
    for name, extra in [
        ("default", []),
        ("least_squares", ["--consistency", "least_squares"]),
        ("paper", ["--consistency", "paper"]),
    ]:
        out = tmp / f"c-{name}.csv"
        rc = _synth(path, out, bounds, "--mechanism", "pruned", "--quiet", "--seed", "4", *extra)
        assert rc == 0, capsys.readouterr().err
        texts[name] = out.read_text()
    assert texts["default"] == texts["least_squares"]
    assert texts["paper"] != texts["least_squares"]
    rc = _synth(
        path, tmp / "p.csv", bounds, "--mechanism", "pmm", "--consistency", "paper", "--quiet"
    )
    assert rc == 2
    assert "consistency" in capsys.readouterr().err


def test_synth_score_option(data, capsys):
    """--score picks the adaptive selection's score: capped by default (as synthesize's), the
    paper's on request (recorded in the JSON report); other mechanisms refuse it."""
    path, bounds, tmp = data
    scores = {}
    for name, extra in [
        ("default", []),
        ("capped", ["--score", "capped"]),
        ("paper", ["--score", "paper"]),
    ]:
        rc = _synth(path, tmp / f"s-{name}.csv", bounds, "--json", "--seed", "4", *extra)
        captured = capsys.readouterr()
        assert rc == 0, captured.err
        scores[name] = json.loads(captured.out)["details"]["score"]
    assert scores == {"default": "capped", "capped": "capped", "paper": "paper"}
    rc = _synth(path, tmp / "p.csv", bounds, "--mechanism", "pruned", "--score", "paper", "--quiet")
    assert rc == 2
    assert "--score applies only to mechanism='adaptive'" in capsys.readouterr().err


def test_synth_privtree(data, capsys):
    path, bounds, tmp = data
    out = tmp / "pt.csv"
    rc = _synth(path, out, bounds, "--mechanism", "privtree", "--json", "--seed", "1")
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    report = json.loads(captured.out)
    assert report["mechanism"] == "privtree"
    assert report["epsilon_certified"] <= 1.0
    assert out.read_text().count("\n") >= 2


# ---------------------------------------------------------------------------------------------
# issue 20, items 6, 7, 10 and 13 on the numeric paths, and interrupts

_INTERRUPT = """
import os, signal, sys, time
import pyarrow.csv as pacsv
real = pacsv.write_csv
def write_csv(table, sink, *a, **k):
    real(table.slice(0, 1), sink, *a, **k)  # part of the output is on disk
    sink.flush()
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    time.sleep(30)
    real(table, sink, *a, **k)
pacsv.write_csv = write_csv
from opendp_wasserstein.cli import console_main
sys.exit(console_main(sys.argv[2:]))
"""


def _interrupted(signame, argv, cwd):
    import subprocess

    return subprocess.run(
        [sys.executable, "-c", _INTERRUPT, signame, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


@pytest.mark.parametrize(
    "signame,code,line",
    [
        ("SIGINT", 130, "opendp-wasserstein: interrupted"),
        ("SIGTERM", 143, "opendp-wasserstein: terminated by SIGTERM"),
    ],
)
def test_an_interrupted_run_prints_one_line_and_leaves_no_temporary(data, signame, code, line):
    """Item 13: Ctrl-C printed a traceback; SIGTERM left the hidden temporary output behind."""
    path, bounds, tmp = data
    run = _interrupted(
        signame,
        ["synth", str(path), "-o", "out.csv", "--epsilon", "1", "--bounds", str(bounds), "--quiet"],
        tmp,
    )
    assert run.returncode == code, run.stderr
    assert run.stderr.strip() == line
    assert sorted(os.listdir(tmp)) == ["b.json", "in.csv"]


def test_a_killed_runs_temporary_is_removed_by_the_next_run(data):
    """Item 13: SIGKILL cannot be handled; the next write of the same output removes what it
    left."""
    path, bounds, tmp = data
    argv = [
        "synth",
        str(path),
        "-o",
        "out.csv",
        "--epsilon",
        "1",
        "--bounds",
        str(bounds),
        "--quiet",
    ]
    run = _interrupted("SIGKILL", argv, tmp)
    assert run.returncode == -9
    left = [f for f in os.listdir(tmp) if f.startswith(".out.csv.tmp-")]
    assert len(left) == 1
    assert main([*argv[:3], str(tmp / "out.csv"), *argv[4:]]) == 0
    assert sorted(os.listdir(tmp)) == ["b.json", "in.csv", "out.csv"]


def test_numeric_paths_refuse_an_output_that_is_an_input(data, capsys):
    """Item 6 on the numeric paths (``--delta``; ``select`` without a schema)."""
    path, bounds, tmp = data
    before = path.read_bytes()
    assert _synth(path, path, bounds, "--delta", "1e-6") == 2
    assert "-o/--output" in capsys.readouterr().err
    cands = tmp / "c.csv"
    cands.write_text("height,weight\n1,1\n5,2\n9,4\n")
    c_before = cands.read_bytes()
    for out in (path, cands):
        assert (
            main(["select", str(path), str(cands), "-m", "5", "--epsilon", "1", "-o", str(out)])
            == 2
        )
        assert "-o/--output" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert cands.read_bytes() == c_before


def test_numeric_paths_write_by_extension_and_respect_the_umask(data, capsys):
    import stat

    import pyarrow.parquet as pq

    path, bounds, tmp = data
    cands = tmp / "c.csv"
    cands.write_text("height,weight\n1,1\n5,2\n9,4\n")
    old = os.umask(0o022)
    try:
        assert (
            main(
                [
                    "select",
                    str(path),
                    str(cands),
                    "-m",
                    "5",
                    "--epsilon",
                    "1",
                    "-o",
                    str(tmp / "s.parquet"),
                    "--quiet",
                ]
            )
            == 0
        )
        assert pq.read_table(tmp / "s.parquet").column_names == ["height", "weight", "multiplicity"]
        assert stat.S_IMODE((tmp / "s.parquet").stat().st_mode) == 0o644
        assert _synth(path, tmp / "y.csv", bounds, "--delta", "1e-6", "--quiet") == 0
        assert stat.S_IMODE((tmp / "y.csv").stat().st_mode) == 0o644
    finally:
        os.umask(old)
    assert (
        main(
            [
                "select",
                str(path),
                str(cands),
                "-m",
                "5",
                "--epsilon",
                "1",
                "-o",
                str(tmp / "s.xlsx"),
            ]
        )
        == 2
    )
    assert ".csv, .tsv" in capsys.readouterr().err
    assert not (tmp / "s.xlsx").exists()


def test_numeric_paths_never_quote_a_headerless_files_record(data, capsys):
    """Item 7: the numeric paths quoted the header (the first record of a headerless file)."""
    path, bounds, tmp = data
    nohead = tmp / "nohead.csv"
    nohead.write_text("1.8125,29.5\n2.0,18.25\n")
    cands = tmp / "c.csv"
    cands.write_text("height,weight\n1,1\n5,2\n")
    runs = [
        [
            "synth",
            str(nohead),
            "-o",
            str(tmp / "o.csv"),
            "--epsilon",
            "1",
            "--bounds",
            str(bounds),
            "--delta",
            "1e-6",
        ],
        ["synth", str(nohead), "-o", str(tmp / "o.csv"), "--epsilon", "1", "--bounds", str(bounds)],
        ["select", str(nohead), str(cands), "-m", "3", "--epsilon", "1", "-o", str(tmp / "o.csv")],
    ]
    for argv in runs:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "1.8125" not in err, err
        assert "29.5" not in err, err
        assert "header" in err


def test_numeric_synth_refuses_bounds_for_a_column_the_data_lacks(data, capsys):
    """Item 10 on the ``--delta`` path: a bounded column missing from the data was accepted."""
    path, _, tmp = data
    b = tmp / "b3.json"
    b.write_text(json.dumps({"height": [0, 10], "weight": [0, 5], "age": [0, 120]}))
    argv = [
        "synth",
        str(path),
        "-o",
        str(tmp / "o.csv"),
        "--epsilon",
        "1",
        "--bounds",
        str(b),
        "--delta",
        "1e-6",
        "--quiet",
    ]
    assert main(argv) == 2
    assert "['age'] are not in the input's header; pass --columns" in capsys.readouterr().err
    assert main([*argv, "--columns", "height,weight"]) == 0
