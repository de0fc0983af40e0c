import csv
import importlib.util
import os
import sys

import pytest

SCRIPT = os.path.join(
    os.path.dirname(__file__), "..", "..", "examples", "public_candidates_regimes.py"
)


@pytest.fixture(scope="module")
def regimes_module():
    spec = importlib.util.spec_from_file_location("public_candidates_regimes", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_quick_run_writes_png_and_csv(regimes_module, tmp_path, capsys):
    # no wall-clock assertion: the machine is shared (speed belongs in benchmarks/)
    regimes_module.main(["--quick", "--out", str(tmp_path)])
    png = tmp_path / "public_candidates_regimes.png"
    assert png.exists()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "public_candidates_regimes.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["method"] for r in rows} == {"tree_em", "tree_projection", "nn_histogram"}
    assert {r["family"] for r in rows} >= {"m", "eps_n", "k", "clustering", "structure", "digits"}
    assert all(float(r["w1"]) >= float(r["floor"]) - 1e-9 for r in rows)  # the projection floor
    with open(tmp_path / "public_candidates_summary.csv") as f:
        summary = list(csv.DictReader(f))
    assert all(r["winner"] in {"tree_em", "tree_projection", "nn_histogram"} for r in summary)
    assert "Regimes found" in capsys.readouterr().out
