"""Tests for the whole-set W1 on a grid (min-cost flow on the king / rook graph)."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.evaluation import GridW1, sample_two_moons, w1, w1_grid
from opendp_wasserstein.evaluation import grid_transport as gmod


def centres(cells: np.ndarray, bits: int) -> np.ndarray:
    """Centres of the given cubes of the 2**bits grid on [0, 1]^d."""
    return (np.asarray(cells, dtype=float) + 0.5) / (1 << bits)


@pytest.mark.parametrize("metric", ["linf", "l1"])
@pytest.mark.parametrize("seed", range(4))
def test_exact_for_points_at_cube_centres(metric: str, seed: int) -> None:
    # points at centres: binning moves nothing, so the flow value is the sets' own W1 (POT)
    gen = np.random.default_rng(seed)
    bits = 3
    x = centres(gen.integers(0, 8, size=(40, 2)), bits)
    y = centres(gen.integers(0, 8, size=(25, 2)), bits)
    got = w1_grid(x, y, bits=bits, metric=metric, bounds=(0.0, 1.0))
    assert got.error_bound == pytest.approx(0.0, abs=1e-15)
    assert got.value == pytest.approx(w1(x, y, metric=metric), rel=1e-12, abs=1e-15)


def test_king_and_rook_distances_by_hand() -> None:
    # one point each: W1 is the centres' distance; king steps give l_inf, rook steps l1
    x, y = centres([[0, 0]], 2), centres([[3, 1]], 2)
    assert w1_grid(x, y, bits=2, bounds=(0, 1)).value == pytest.approx(3 / 4)
    assert w1_grid(x, y, bits=2, metric="l1", bounds=(0, 1)).value == pytest.approx(4 / 4)


@pytest.mark.parametrize("seed", range(3))
def test_three_dimensions_at_centres(seed: int) -> None:
    gen = np.random.default_rng(seed)
    x, y = (
        centres(gen.integers(0, 4, size=(15, 3)), 2),
        centres(gen.integers(0, 4, size=(15, 3)), 2),
    )
    for metric in ("linf", "l1"):
        assert w1_grid(x, y, bits=2, metric=metric, bounds=(0, 1)).value == pytest.approx(
            w1(x, y, metric=metric)
        )


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), bits=st.integers(1, 6), metric=st.sampled_from(["linf", "l1"])
)
def test_error_bound_holds(seed: int, bits: int, metric: str) -> None:
    gen = np.random.default_rng(seed)
    x, y = gen.random((30, 2)) ** 2, gen.random((20, 2))
    got = w1_grid(x, y, bits=bits, metric=metric)
    exact = w1(x, y, metric=metric)
    lo, hi = got.interval
    assert lo - 1e-12 <= exact <= hi + 1e-12


def test_fine_grid_is_close_on_a_shape() -> None:
    # the bound is a worst case; at 256 cubes per axis the binned value is within 1% of exact
    x, y = sample_two_moons(1500, seed=1), sample_two_moons(1500, seed=2)
    got = w1_grid(x, y, bits=8, bounds=(0, 1))
    exact = w1(x, y)
    assert got.error_bound <= 1 / 256
    assert abs(got.value - exact) <= 0.01 * exact


def test_identical_sets_and_result_type() -> None:
    x = sample_two_moons(200, seed=3)
    got = w1_grid(x, x[::-1].copy(), bits=5)
    assert got.value == 0.0
    assert isinstance(got, GridW1)
    assert got.bits == 5
    assert got.metric == "linf"
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.value = 1.0  # type: ignore[misc]


def test_default_bounds_are_the_smallest_cube() -> None:
    # scaling both sets scales W1 and the cube with them
    gen = np.random.default_rng(5)
    x, y = gen.random((50, 2)), gen.random((40, 2))
    a, b = w1_grid(x, y, bits=4), w1_grid(10 * x + 3, 10 * y + 3, bits=4)
    assert b.value == pytest.approx(10 * a.value)
    assert b.cell == pytest.approx(10 * a.cell)


def test_points_outside_bounds_are_counted_in_the_bound() -> None:
    x, y = np.array([[2.0, 0.5]]), np.array([[0.5, 0.5]])
    got = w1_grid(x, y, bits=1, bounds=(0, 1))
    lo, hi = got.interval
    assert lo <= 1.5 <= hi


def test_inputs_not_modified() -> None:
    gen = np.random.default_rng(6)
    x, y = gen.random((20, 2)), gen.random((20, 2))
    x0, y0 = x.copy(), y.copy()
    w1_grid(x, y, bits=3)
    assert np.array_equal(x, x0)
    assert np.array_equal(y, y0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bits": 0}, "bits"),
        ({"bits": 2.5}, "bits"),
        ({"bits": True}, "bits"),
        ({"metric": "l2"}, "metric"),
        ({"bounds": (1.0, 0.0)}, "bounds"),
        ({"bounds": (0.0, np.inf)}, "bounds"),
        ({"bits": 12, "max_arcs": 1000}, "max_arcs"),
    ],
)
def test_bad_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        w1_grid(np.zeros((3, 2)), np.ones((3, 2)), **kwargs)


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (np.zeros((0, 2)), np.zeros((3, 2)), "x must be non-empty"),
        (np.zeros((3, 2)), np.full((3, 2), np.nan), "y must contain only finite"),
        (np.zeros((3, 2)), np.zeros((3, 3)), "same number of columns"),
    ],
)
def test_bad_points(x: np.ndarray, y: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        w1_grid(x, y)


def test_without_ortools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ortools.graph.python", None)
    with pytest.raises(ImportError, match="pip install ortools"):
        gmod.w1_grid(np.zeros((2, 2)), np.ones((2, 2)), bits=2)
