"""Every example runs (small settings), so none rots."""

import importlib.util
import pathlib

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chaining_with_opendp():
    out = load("chaining_with_opendp").main(n=2000)
    assert out["composition_epsilon"] == pytest.approx(1.0, rel=1e-12)
    assert out["binary_search_epsilon"] <= 0.7


def test_figure2_quick(tmp_path):
    rows = load("figure2_adaptive").main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "figure2.csv").exists()
    assert (tmp_path / "figure2.png").exists()
    text = (tmp_path / "figure2.csv").read_text().splitlines()
    assert text[0].startswith("k,d,rep,mechanism,w1")
    assert len(text) > 4
    assert len(rows) == 2 * 2 * 2  # d in {2, 4}, two repeats, two mechanisms
    assert all(r["epsilon"] == 1.0 and r["w1"] > 0 for r in rows)
    adaptive = [r for r in rows if r["mechanism"] == "adaptive"]
    assert all(0 < r["p_max"] <= 1 for r in adaptive)
    assert all(r["num_candidates"] == r["d"] for r in adaptive)  # one standard candidate per s


def test_figure2_quick_per_candidate(tmp_path):
    rows = load("figure2_adaptive").main(["--quick", "--per-candidate", "--out", str(tmp_path)])
    assert (tmp_path / "figure2_candidates.csv").exists()
    assert [(r["d"], r["s"]) for r in rows] == [(2, 1), (2, 2), (4, 1), (4, 2), (4, 3), (4, 4)]
    for d in (2, 4):
        assert sum(r["p_select"] for r in rows if r["d"] == d) == pytest.approx(1.0)
    assert all(r["w1"] > 0 for r in rows)


def test_figure2_quick_with_optimal_depths(tmp_path):
    rows = load("figure2_adaptive").main(
        [
            "--quick",
            "--out",
            str(tmp_path),
            "--candidates",
            "with-optimal",
            "--epsilon-select",
            "0.5",
        ]
    )
    adaptive = [r for r in rows if r["mechanism"] == "adaptive"]
    assert all(r["candidates"] == "with-optimal" and r["eps_sel"] == 0.5 for r in adaptive)
    assert all(r["num_candidates"] > r["d"] for r in adaptive)  # the optimal depths added
    assert all(r["epsilon"] == 1.0 for r in rows)


@pytest.mark.slow
def test_real_data_digits(tmp_path):
    pytest.importorskip("sklearn")
    reports = load("real_data_digits").main(["--out", str(tmp_path)])
    assert (tmp_path / "digits.png").exists()
    assert all(r.epsilon == 1.0 for r in reports.values())


def test_rates_quick(tmp_path):
    rates = load("rates")
    rows = rates.main(["--quick", "--out", str(tmp_path)])
    for name in ("rates.csv", "rates.png", "rates_slopes.csv"):
        assert (tmp_path / name).exists()
    assert len(rows) == 2 * 2 * 3  # k in {1, 2}, n in {10^3, 10^4}, three mechanisms
    assert {r["mechanism"] for r in rows} == {"adaptive", "adaptive-capped", "pmm"}
    assert all(0 < r["w1_lower"] <= r["w1_upper"] for r in rows)


def test_rates_bounds_bracket_exact_w1():
    """The sliced lower bound and the dyadic-grid upper bound enclose the exact W1 (l_inf)."""
    from opendp_wasserstein.evaluation import w1

    rates = load("rates")
    gen = np.random.default_rng(0)  # test data
    for d in (1, 3, 8):
        x = gen.uniform(size=(300, d))
        y = gen.uniform(size=(200, d)) ** 1.5
        exact = w1(x, y, metric="linf")
        assert rates.sliced_lower_bound(x, y) <= exact * (1 + 1e-9)
        assert exact <= rates.grid_upper_bound(x, y) * (1 + 1e-9)
    # the grid sum against a direct cube count (3-D, 6 bits)
    x, y = gen.uniform(size=(500, 3)), gen.uniform(size=(400, 3))
    pts = np.concatenate([x, y])
    wts = np.concatenate([np.full(500, 1 / 500), np.full(400, -1 / 400)])
    total = 2.0**-6
    for b in range(1, 7):
        g = np.minimum(np.floor(pts * 2**b), 2**b - 1).astype(int)
        keys = (g[:, 0] * 2**b + g[:, 1]) * 2**b + g[:, 2]
        total += 2.0**-b * np.abs(np.bincount(keys, weights=wts, minlength=8**b)).sum()
    assert rates.grid_upper_bound(x, y, bits=6) == pytest.approx(total, rel=1e-12)
