"""Tests for the 2-D test shapes and the subspace generator."""

from __future__ import annotations

import numpy as np
import pytest

from opendp_wasserstein.evaluation import (
    SHAPES,
    SUBSPACE_FILL,
    sample_checkerboard,
    sample_cross,
    sample_shape,
    sample_subspace,
)
from opendp_wasserstein.evaluation.shapes import sample_annulus

NAMES = sorted(SHAPES)
# shapes whose support is bounded, so that without jitter they stay inside [0.05, 0.95]^2
BOUNDED = ["two_moons", "spiral", "annulus", "s_curve", "figure_eight", "checkerboard", "cross"]


def test_nine_named_shapes() -> None:
    assert set(SHAPES) == {
        "two_moons",
        "spiral",
        "annulus",
        "s_curve",
        "pinwheel",
        "figure_eight",
        "four_blobs",
        "checkerboard",
        "cross",
    }
    for name, fn in SHAPES.items():
        assert fn.__name__ == f"sample_{name}"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [1, 2, 7, 1000])
def test_shape_in_unit_square(name: str, n: int) -> None:
    pts = SHAPES[name](n, seed=3)
    assert isinstance(pts, np.ndarray)
    assert pts.shape == (n, 2)
    assert pts.dtype == np.float64
    assert np.all(np.isfinite(pts))
    assert np.all((pts >= 0.0) & (pts <= 1.0))


@pytest.mark.parametrize("name", NAMES)
def test_shape_large_noise_is_clipped(name: str) -> None:
    pts = SHAPES[name](500, seed=0, noise=0.5)
    assert np.all((pts >= 0.0) & (pts <= 1.0))
    assert np.any(pts == 0.0)
    assert np.any(pts == 1.0)


@pytest.mark.parametrize("name", BOUNDED)
def test_noiseless_bounded_shape_within_margin(name: str) -> None:
    pts = SHAPES[name](2000, seed=1, noise=0.0)
    assert pts.min() >= 0.05 - 1e-12
    assert pts.max() <= 0.95 + 1e-12
    # the shape fills its box along its longer side
    span = pts.max(axis=0) - pts.min(axis=0)
    assert span.max() > 0.8


@pytest.mark.parametrize("name", NAMES)
def test_shape_reproducible_and_seed_dependent(name: str) -> None:
    a = SHAPES[name](200, seed=42)
    b = SHAPES[name](200, seed=42)
    c = SHAPES[name](200, seed=43)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # a Generator is accepted as the seed
    g1 = SHAPES[name](50, seed=np.random.default_rng(5))
    g2 = SHAPES[name](50, seed=np.random.default_rng(5))
    np.testing.assert_array_equal(g1, g2)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [0, -1])
def test_shape_rejects_small_n(name: str, bad: int) -> None:
    with pytest.raises(ValueError, match="n must be at least 1"):
        SHAPES[name](bad, seed=0)


@pytest.mark.parametrize("name", NAMES)
def test_shape_rejects_bad_arguments(name: str) -> None:
    with pytest.raises(ValueError, match="n must be an integer"):
        SHAPES[name](2.5, seed=0)
    with pytest.raises(ValueError, match="n must be an integer"):
        SHAPES[name](True, seed=0)
    with pytest.raises(ValueError, match="noise"):
        SHAPES[name](10, seed=0, noise=-0.1)
    with pytest.raises(ValueError, match="noise"):
        SHAPES[name](10, seed=0, noise=float("nan"))


def test_no_global_random_state() -> None:
    np.random.seed(123)  # noqa: NPY002 - checking that the package leaves it alone
    expected = np.random.random(3)  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    for fn in SHAPES.values():
        fn(20, seed=0)
        fn(20)
    sample_subspace(20, 4, 2, seed=0, noise=0.1)
    np.testing.assert_array_equal(np.random.random(3), expected)  # noqa: NPY002


def test_make_shape_dispatch() -> None:
    for name in NAMES:
        np.testing.assert_array_equal(sample_shape(name, 30, seed=9), SHAPES[name](30, seed=9))
        np.testing.assert_array_equal(
            sample_shape(name, 30, seed=9, noise=0.0), SHAPES[name](30, seed=9, noise=0.0)
        )
    with pytest.raises(ValueError, match="name must be one of"):
        sample_shape("circle", 10)
    with pytest.raises(ValueError, match="n must be at least 1"):
        sample_shape("cross", 0)


def test_checkerboard_on_dark_cells() -> None:
    pts = sample_checkerboard(4000, seed=0, noise=0.0)
    cells = np.floor((pts - 0.05) / 0.9 * 4).astype(int)
    assert np.all((cells.sum(axis=1) % 2) == 0)
    # all eight dark cells are used, about equally
    counts = np.unique(cells[:, 0] * 4 + cells[:, 1], return_counts=True)[1]
    assert counts.size == 8
    assert counts.min() > 400


def test_cross_uniform_on_plus() -> None:
    pts = (sample_cross(20000, seed=0, noise=0.0) - 0.5) / 0.45  # back to [-1, 1]^2
    w = 0.2
    in_h = np.abs(pts[:, 1]) <= w + 1e-9
    in_v = np.abs(pts[:, 0]) <= w + 1e-9
    assert np.all(in_h | in_v)
    # uniform: the fraction in the central square is its share of the area, w^2 / (2w - w^2)
    centre = in_h & in_v
    expected = (2 * w) ** 2 / (4 * w * (2 - w))
    assert abs(centre.mean() - expected) < 0.01


def test_annulus_radii() -> None:
    r = np.hypot(*((sample_annulus(5000, seed=0) - 0.5) / 0.45).T)
    assert r.min() >= 0.6 - 1e-9
    assert r.max() <= 1.0 + 1e-9
    # uniform in area: P(r <= 0.8) = (0.64 - 0.36) / (1 - 0.36)
    assert abs(np.mean(r <= 0.8) - 0.28 / 0.64) < 0.03


# ----------------------------------------------------------------------------------------------
# sample_subspace


@pytest.mark.parametrize(("d", "k"), [(1, 1), (3, 0), (5, 2), (4, 4)])
def test_subspace_layout(d: int, k: int) -> None:
    pts = sample_subspace(2000, d, k, seed=0)
    assert pts.shape == (2000, d)
    assert np.all((pts >= 0) & (pts <= 1))
    assert np.all(pts[:, k:] == SUBSPACE_FILL)
    if k:
        # uniform on [0, 1]: mean 1/2, standard deviation 1/sqrt(12)
        assert np.allclose(pts[:, :k].mean(axis=0), 0.5, atol=0.03)
        assert np.allclose(pts[:, :k].std(axis=0), 12**-0.5, atol=0.02)


def test_subspace_noise_and_reproducibility() -> None:
    a = sample_subspace(500, 6, 2, seed=4, noise=0.05)
    np.testing.assert_array_equal(a, sample_subspace(500, 6, 2, seed=4, noise=0.05))
    assert not np.array_equal(a, sample_subspace(500, 6, 2, seed=5, noise=0.05))
    assert np.all((a >= 0) & (a <= 1))
    assert 0.03 < a[:, 2:].std() < 0.07
    assert sample_subspace(1, 3, 1, seed=0).shape == (1, 3)


@pytest.mark.parametrize(
    ("n", "d", "k", "noise", "match"),
    [
        (0, 3, 1, 0.0, "n must be at least 1"),
        (10, 0, 0, 0.0, "d must be"),
        (10, 3, 4, 0.0, "k must be"),
        (10, 3, -1, 0.0, "k must be"),
        (10, 3, 1.5, 0.0, "k must be"),
        (10, 3, 1, -1.0, "noise"),
    ],
)
def test_subspace_validation(n: int, d: int, k: int, noise: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sample_subspace(n, d, k, noise=noise)
