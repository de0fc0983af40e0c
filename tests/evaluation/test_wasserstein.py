"""Tests for the exact and subsampled 1-Wasserstein distances."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist

from opendp_wasserstein.evaluation import METRICS, W1Estimate, sample_four_blobs, w1, w1_estimate
from opendp_wasserstein.evaluation import wasserstein as wmod

ALL_METRICS = ["linf", "l1", "l2"]


def brute_force_w1(x: np.ndarray, y: np.ndarray, metric: str) -> float:
    """Uniform equal-size W1 as the best matching over all permutations."""
    cost = cdist(x, y, metric=METRICS[metric])
    n = len(x)
    return min(cost[np.arange(n), list(p)].mean() for p in itertools.permutations(range(n)))


# ----------------------------------------------------------------------------------------------
# exact values


@pytest.mark.parametrize(("metric", "expected"), [("linf", 4.0), ("l1", 7.0), ("l2", 5.0)])
def test_two_single_points(metric: str, expected: float) -> None:
    assert w1([[0.0, 0.0]], [[3.0, 4.0]], metric=metric) == pytest.approx(expected)
    assert w1([[1.0, 2.0]], [[1.0, 2.0]], metric=metric) == 0.0


def test_default_metric_is_linf() -> None:
    assert w1([[0.0, 0.0]], [[3.0, 4.0]]) == pytest.approx(4.0)


def test_one_dimensional_shift() -> None:
    x = np.array([[0.0], [1.0], [2.5], [7.0]])
    for metric in ALL_METRICS:
        assert w1(x, x + 0.7, metric=metric) == pytest.approx(0.7)
    # closed form also for sizes far above max_points
    big = np.random.default_rng(0).random((20_000, 1))
    assert w1(big, big - 0.25, max_points=10) == pytest.approx(0.25)
    est = w1_estimate(big, big - 0.25, sample_size=10)
    assert est.exact
    assert est.value == pytest.approx(0.25)
    assert est.noise_floor == 0.0


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_translation_costs_the_norm_of_the_shift(metric: str) -> None:
    x = np.random.default_rng(1).random((30, 3))
    shift = np.array([0.3, -0.1, 0.2])
    expected = {"linf": 0.3, "l1": 0.6, "l2": float(np.linalg.norm(shift))}[metric]
    assert w1(x, x + shift, metric=metric) == pytest.approx(expected)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_identical_and_permuted_sets(metric: str) -> None:
    x = np.random.default_rng(2).random((50, 2))
    assert w1(x, x, metric=metric) == pytest.approx(0.0, abs=1e-12)
    assert w1(x, x[::-1], metric=metric) == pytest.approx(0.0, abs=1e-12)
    # duplicated points are the same empirical measure
    assert w1(x, np.vstack([x, x]), metric=metric) == pytest.approx(0.0, abs=1e-12)


def test_two_by_two_assignment() -> None:
    # pairing (0,0)-(1,0) and (2,2)-(2,3) costs 1 each in every metric; the crossed pairing
    # costs (3 + 2) / 2 in linf, (5 + 3) / 2 in l1
    x = np.array([[0.0, 0.0], [2.0, 2.0]])
    y = np.array([[2.0, 3.0], [1.0, 0.0]])
    for metric in ALL_METRICS:
        assert w1(x, y, metric=metric) == pytest.approx(1.0)
    # metric-dependent: x = {(0,0), (1,1)}, y = {(1,0), (0,1)}: every move is one unit step
    x2 = np.array([[0.0, 0.0], [1.0, 1.0]])
    y2 = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert w1(x2, y2, metric="linf") == pytest.approx(1.0)
    assert w1(x2, y2, metric="l2") == pytest.approx(1.0)
    # and a mass split: one point to two at distances 1 and 3
    assert w1([[0.0, 0.0]], [[1.0, 0.0], [-3.0, 0.0]]) == pytest.approx(2.0)


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize("seed", range(4))
def test_matches_brute_force_matching(metric: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.random((6, 3)), rng.random((6, 3))
    assert w1(x, y, metric=metric) == pytest.approx(brute_force_w1(x, y, metric))


def test_weights() -> None:
    y = np.array([[1.0, 0.0], [3.0, 0.0]])
    # 3/4 of the mass moves 1, 1/4 moves 3; weights need not be normalised
    assert w1([[0.0, 0.0]], y, weights_y=[3, 1]) == pytest.approx(1.5)
    assert w1([[0.0]], [[1.0], [3.0]], weights_y=[0.75, 0.25]) == pytest.approx(1.5)
    # weights on x, and zero weights ignore points
    x = np.array([[0.0, 0.0], [10.0, 10.0]])
    assert w1(x, [[0.0, 1.0]], weights_x=[1.0, 0.0]) == pytest.approx(1.0)
    # uniform weights are the default
    rng = np.random.default_rng(3)
    a, b = rng.random((7, 2)), rng.random((9, 2))
    assert w1(a, b, weights_x=np.ones(7), weights_y=np.full(9, 2.0)) == pytest.approx(w1(a, b))


@pytest.mark.parametrize("seed", range(3))
def test_l2_agrees_with_pot(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.random((40, 2)), rng.normal(0.5, 0.2, size=(25, 2))
    direct = ot.emd2(ot.unif(40), ot.unif(25), ot.dist(x, y, metric="euclidean"))
    assert w1(x, y, metric="l2") == pytest.approx(float(direct), rel=1e-9)


def test_integer_input_and_return_type() -> None:
    value = w1(np.array([[0, 0]]), np.array([[3, 4]]), metric="l2")
    assert isinstance(value, float)
    assert value == pytest.approx(5.0)


# ----------------------------------------------------------------------------------------------
# metric properties

points = arrays(
    np.float64,
    st.tuples(st.integers(1, 6), st.just(2)),
    elements=st.floats(-10, 10, allow_nan=False, width=32),
)


@settings(max_examples=40, deadline=None)
@given(points, points, points, st.sampled_from(ALL_METRICS))
def test_symmetry_and_triangle_inequality(
    x: np.ndarray, y: np.ndarray, z: np.ndarray, metric: str
) -> None:
    xy, yx = w1(x, y, metric=metric), w1(y, x, metric=metric)
    assert xy >= 0
    assert xy == pytest.approx(yx, rel=1e-9, abs=1e-9)
    assert xy <= w1(x, z, metric=metric) + w1(z, y, metric=metric) + 1e-9


def test_metric_ordering() -> None:
    # linf <= l2 <= l1 pointwise, hence for W1
    rng = np.random.default_rng(7)
    x, y = rng.random((30, 4)), rng.random((20, 4))
    linf, l2, l1 = (w1(x, y, metric=m) for m in ("linf", "l2", "l1"))
    assert linf <= l2 + 1e-12
    assert l2 <= l1 + 1e-12
    assert linf < l1


# ----------------------------------------------------------------------------------------------
# subsampled estimate


def test_estimate_exact_when_small() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((50, 2)), rng.random((60, 2))
    est = w1_estimate(x, y, sample_size=100)
    assert est == W1Estimate(
        value=w1(x, y), std_error=0.0, noise_floor=0.0, sample_size=100, repeats=1, exact=True
    )


def test_estimate_same_distribution_is_near_noise_floor() -> None:
    x = sample_four_blobs(3000, seed=0)
    y = sample_four_blobs(3000, seed=1)
    est = w1_estimate(x, y, sample_size=400, repeats=4, seed=0)
    assert not est.exact
    assert est.sample_size == 400
    assert est.repeats == 4
    assert est.noise_floor > 0
    assert est.std_error > 0
    assert 0.5 * est.noise_floor <= est.value <= 2.0 * est.noise_floor
    # a different distribution stands well clear of the floor
    far = w1_estimate(x, y + 0.1, sample_size=400, repeats=4, seed=0)
    assert far.value > est.noise_floor + 0.08


def test_estimate_reproducible_and_used_by_w1() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.random((700, 2)), rng.random((300, 2))
    a = w1_estimate(x, y, sample_size=200, repeats=3, seed=11)
    assert a == w1_estimate(x, y, sample_size=200, repeats=3, seed=11)
    assert a != w1_estimate(x, y, sample_size=200, repeats=3, seed=12)
    assert w1(x, y, max_points=200, seed=11) == pytest.approx(
        w1_estimate(x, y, sample_size=200, seed=11).value
    )
    single = w1_estimate(x, y, sample_size=200, repeats=1, seed=0)
    assert np.isnan(single.std_error)
    assert single.repeats == 1


def test_estimate_only_y_subsampled_uses_y_for_floor() -> None:
    rng = np.random.default_rng(3)
    x, y = rng.random((100, 2)), rng.random((1000, 2))
    est = w1_estimate(x, y, sample_size=150, repeats=2, seed=0)
    assert not est.exact
    assert est.noise_floor > 0


def test_estimate_is_frozen() -> None:
    est = w1_estimate([[0.0, 0.0]], [[1.0, 1.0]])
    with pytest.raises(AttributeError):
        est.value = 3.0  # type: ignore[misc]


# ----------------------------------------------------------------------------------------------
# inputs untouched, validation, fallback


def test_inputs_not_modified() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random((500, 2)), rng.random((400, 2))
    wx, wy = rng.random(500), rng.random(400)
    copies = [a.copy() for a in (x, y, wx, wy)]
    for a in (x, y, wx, wy):
        a.setflags(write=False)  # any write attempt would raise
    w1(x, y, weights_x=wx, weights_y=wy)
    w1(x, y, max_points=100, seed=0)
    w1_estimate(x, y, sample_size=100, repeats=2, seed=0)
    for a, c in zip((x, y, wx, wy), copies, strict=True):
        np.testing.assert_array_equal(a, c)


BAD_INPUTS: list[tuple[Any, Any, str]] = [
    ([[0.0, np.nan]], [[0.0, 0.0]], "x must contain only finite"),
    ([[0.0, 0.0]], [[np.inf, 0.0]], "y must contain only finite"),
    ([0.0, 1.0], [[0.0, 0.0]], "x must be a 2-D array"),
    ([[0.0, 0.0]], np.zeros((1, 1, 2)), "y must be a 2-D array"),
    ([[0.0, 0.0]], [[0.0, 0.0, 0.0]], "same number of columns"),
    (np.zeros((0, 2)), [[0.0, 0.0]], "x must be non-empty"),
    ([[0.0, 0.0]], np.zeros((3, 0)), "y must be non-empty"),
    ([["a", "b"]], [[0.0, 0.0]], "x must hold real numbers"),
    ([[1j, 0]], [[0.0, 0.0]], "x must hold real numbers"),
]


@pytest.mark.parametrize(("x", "y", "match"), BAD_INPUTS)
def test_bad_points(x: Any, y: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        w1(x, y)
    with pytest.raises(ValueError, match=match):
        w1_estimate(x, y)


def test_bad_parameters() -> None:
    x = [[0.0, 0.0], [1.0, 1.0]]
    for bad in ["l3", "euclidean", None, 2]:
        with pytest.raises(ValueError, match="metric must be one of"):
            w1(x, x, metric=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="metric must be one of"):
            w1_estimate(x, x, metric=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_points"):
        w1(x, x, max_points=0)
    with pytest.raises(ValueError, match="sample_size"):
        w1_estimate(x, x, sample_size=0)
    with pytest.raises(ValueError, match="repeats"):
        w1_estimate(x, x, repeats=0)
    with pytest.raises(ValueError, match="weights_x must be a 1-D array of length 2"):
        w1(x, x, weights_x=[1.0])
    with pytest.raises(ValueError, match="weights_y must be finite and non-negative"):
        w1(x, x, weights_y=[1.0, -1.0])
    with pytest.raises(ValueError, match="weights_y must have a positive sum"):
        w1(x, x, weights_y=[0.0, 0.0])
    big = np.random.default_rng(0).random((30, 2))
    with pytest.raises(ValueError, match="only supported for exact computation"):
        w1(big, big, max_points=10, weights_x=np.ones(30))


def test_without_pot(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x, y, z = rng.random((40, 2)), rng.random((40, 2)), rng.random((30, 2))
    with_pot = w1(x, y)

    def no_ot() -> Any:
        raise ImportError("no POT")

    monkeypatch.setattr(wmod, "_import_ot", no_ot)
    assert w1(x, y) == pytest.approx(with_pot)  # assignment fallback
    assert w1(x[:, :1], z[:, :1]) >= 0  # 1-D closed form needs no POT
    with pytest.raises(ImportError, match="pip install POT"):
        w1(x, z)
