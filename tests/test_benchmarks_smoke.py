"""Smoke test of the benchmark suite: ``benchmarks/run_all.py --quick --skip-peers`` runs and
writes CSVs with the expected columns (the numbers themselves are not checked)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_ALL = ROOT / "benchmarks" / "run_all.py"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
@pytest.mark.skipif(not RUN_ALL.exists(), reason="benchmarks/ not present")
def test_run_all_quick(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    proc = subprocess.run(
        [sys.executable, str(RUN_ALL), "--quick", "--skip-peers", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
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
    assert {"d", "n", "status", "seconds", "floor_s", "ratio", "peak_mb", "visited"} <= set(scaling[0])
    ok = [r for r in scaling if r["status"] == "ok"]
    assert {r["d"] for r in ok} == {"2", "3", "10"}
    for r in ok:
        assert float(r["seconds"]) > 0
        assert float(r["floor_s"]) > 0
        assert int(r["visited"]) >= 1
        assert abs(float(r["ratio"]) - float(r["seconds"]) / float(r["floor_s"])) < 1e-6 * float(r["ratio"])

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
        ("bench_tables_real.py", "bench_tables_real.csv", {"table", "mechanism", "epsilon", "w1", "tvd1", "tvd2", "clf", "seconds"}),
        ("bench_split_order.py", "bench_split_order.csv", {"table", "order", "w1", "w1_floor", "tvd1", "tvd2", "depth"}),
    ],
)
def test_table_benchmarks_quick(tmp_path: Path, script: str, csv_name: str, columns: set[str]) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--out", str(tmp_path)],
        cwd=ROOT / "benchmarks", capture_output=True, text=True, timeout=600,
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
        [sys.executable, str(ROOT / "benchmarks" / "bench_tables_structured.py"), "--quick", "--out", str(tmp_path)],
        cwd=ROOT / "benchmarks", capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path / "bench_tables_structured.csv")
    assert {(r["table"], r["mech"]) for r in rows} >= {("mixed-3k", "structured"), ("mixed-3k", "marginals")}
    assert all(0 <= float(r["tvd1"]) <= 1 and 0 <= float(r["gower"]) <= 1 for r in rows)


@pytest.mark.slow
def test_table_candidates_benchmark_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_tables_candidates.py"), "--tables", "penguins",
         "--epsilons", "4", "--seeds", "1"],
        cwd=ROOT / "benchmarks", capture_output=True, text=True, timeout=600,
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
        [sys.executable, str(BENCH_ACCURACY), "--quick", "--skip-peers", "--skip-rates", "--shapes", "two_moons",
         "--airport-runs", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(out / "accuracy.csv")
    assert {"part", "dataset", "method", "privacy", "status", "w1", "w1_floor", "far_share", "seconds"} <= set(rows[0])
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
@pytest.mark.parametrize("script,csv_name,extra", [
    ("bench_privtree.py", "bench_privtree.csv", []),
    ("bench_selection.py", "bench_selection.csv", []),
])
def test_comparison_benchmarks_quick(tmp_path: Path, script: str, csv_name: str, extra: list[str]) -> None:
    """The PrivTree and selection benchmarks run end to end in their quick form and write W1s."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--out", str(tmp_path), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(tmp_path / csv_name)
    assert rows
    key = "w1" if script == "bench_privtree.py" else "expected_w1"
    assert all(0 < float(r[key]) <= 1 for r in rows)
