"""zCDP schedules: exact budgets (the chained map of one replacement is exactly rho) and the
Lagrange/Hölder optimality of sigma_j proportional to b_j^(-1/3)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import zcdp_map
from opendp_wasserstein.public_candidates.trees import frt_tree, quadtree
from opendp_wasserstein.schedules.tree import tree_level_scales_zcdp, tree_zcdp_budget
from opendp_wasserstein.schedules.zcdp import (
    tighten_exact,
    zcdp_budget,
    zcdp_model_bound,
    zcdp_schedule,
)
from opendp_wasserstein.transformations import make_dyadic_counts


@pytest.mark.parametrize("d", [1, 2, 5, 10])
@pytest.mark.parametrize("depth", [2, 3, 7, 30])
@pytest.mark.parametrize("rho", [1e-3, 0.37, 1.0, 17.3])
def test_budget_is_exactly_rho(d: int, depth: int, rho: float) -> None:
    for s in sorted({1, (d + 1) // 2, d}):
        sigma = zcdp_schedule(d, rho, depth, s)
        assert len(sigma) == depth + 1
        exact = zcdp_budget(sigma)
        assert exact <= Fraction(rho), (s, float(exact))
        assert round_up(exact) == rho, (s, float(exact))


@pytest.mark.parametrize("rho", [0.1, 0.5, 3.0])
def test_depth_one_never_above_rho(rho: float) -> None:
    # one charged level: a float sigma_1 with 1/sigma_1^2 in the one-float window may not exist
    exact = zcdp_budget(zcdp_schedule(3, rho, 1, 2))
    assert exact <= Fraction(rho)
    assert round_up(exact) >= math.nextafter(rho, 0.0)


@pytest.mark.parametrize(
    "size,metric,d_in", [(100, dp.symmetric_distance(), 2), (100, dp.change_one_distance(), 1)]
)
def test_chained_map_is_rho(size, metric, d_in) -> None:
    sigma = zcdp_schedule(2, 0.25, 12, 2)
    t = make_dyadic_counts(
        dp.numpy.array2_domain(num_columns=2, size=size, T=float),
        metric,
        12,
        sigma,
        output_metric="l2sq",
    )
    assert zcdp_map(t.map(d_in)) == 0.25


def _objective(sigma: np.ndarray, d: int, s: int) -> float:
    """The paper's transport bound weights ``b_{j+1} = 2^{j (s - 1)/d}`` against ``sigma_1..r``."""
    j = np.arange(sigma.size)
    return float(np.sum(2.0 ** (j * (s - 1) / d) * sigma))


@pytest.mark.parametrize("d,s,depth", [(2, 1, 10), (2, 2, 10), (5, 3, 20), (10, 10, 40)])
def test_schedule_minimises_the_transport_bound(d: int, s: int, depth: int) -> None:
    rho = 0.5
    ours = np.array(zcdp_schedule(d, rho, depth, s)[1:])
    q2 = 2.0 ** (2 * (s - 1) / (3 * d))
    S = depth if s == 1 else (q2**depth - 1) / (q2 - 1)
    assert _objective(ours, d, s) == pytest.approx(S**1.5 / math.sqrt(rho), rel=1e-12)  # Hölder
    gen = np.random.default_rng(0)  # random feasible schedules (test data)
    for _ in range(200):
        w = gen.uniform(0.05, 1.0, size=depth) * np.exp(gen.normal(size=depth))
        other = 1.0 / np.sqrt(w / w.sum() * rho)  # sum 1/sigma^2 = rho
        assert _objective(ours, d, s) <= _objective(other, d, s) * (1 + 1e-12)
    # the pure-DP shape sigma proportional to b^(-1/2), rescaled to the same rho, is worse
    b = 2.0 ** (np.arange(depth) * (s - 1) / d)
    pure = b**-0.5
    pure = pure * math.sqrt(np.sum(pure**-2.0) / rho)
    if s > 1:
        assert _objective(ours, d, s) < _objective(pure, d, s)


def test_geometric_ratio_and_root() -> None:
    sigma = zcdp_schedule(4, 2.0, 9, 3)
    ratios = np.array(sigma[1:-1]) / np.array(sigma[2:])
    assert np.allclose(ratios[:-1], 2.0 ** (2 / 12), rtol=1e-12)  # q = 2^((s-1)/(3d))
    assert sigma[0] == pytest.approx(1 / math.sqrt(2.0))
    flat = zcdp_schedule(4, 2.0, 9, 1)
    assert np.allclose(flat[1:], math.sqrt(9 / 2.0), rtol=1e-12)


def test_model_bound() -> None:
    d, n, rho, depth = 2, 1000, 0.5, 8
    got = zcdp_model_bound(d, n, rho, 1, depth)
    assert got == pytest.approx(
        1 / (math.sqrt(rho) * n) + 4 / n * depth**1.5 / math.sqrt(rho) + 2 * 2 ** (-depth / d)
    )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"rho": 0.0}, "rho"),
        ({"rho": math.nan}, "rho"),
        ({"d": 0}, "d must"),
        ({"depth": 0}, "depth"),
        ({"depth": 10**6}, "depth"),
        ({"s": 3}, "s must"),
        ({"s": 0}, "s must"),
    ],
)
def test_bad_parameters(kwargs, match) -> None:
    args = {"d": 2, "rho": 0.5, "depth": 4, "s": 1} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        zcdp_schedule(**args)


def test_tighten_exact_refuses_uncharged_levels() -> None:
    with pytest.raises(ValueError, match="level"):
        tighten_exact([1.0, 1.0], lambda sc: Fraction(1) / Fraction(sc[1]) ** 2, 0.5, [0])


# ---------------------------------------------------------------------------------------------
# trees


@pytest.mark.parametrize("maker", ["quadtree", "frt"])
def test_tree_schedule_beats_other_shapes(maker: str) -> None:
    pts = np.random.default_rng(3).uniform(size=(80, 2))  # public candidates (test data)
    tree = (
        quadtree(pts, bounds=(0.0, 1.0), seed=3) if maker == "quadtree" else frt_tree(pts, seed=3)
    )
    rho = 0.5
    ours = np.array(tree_level_scales_zcdp(tree, rho))
    budget = tree_zcdp_budget(tree)
    assert round_up(budget(list(ours))) == rho
    W = np.bincount(tree.depth, weights=tree.weight, minlength=tree.height + 1)[1:]

    def cost(sigma: np.ndarray) -> float:
        return float(np.sum(W * sigma[1:]))

    def at_rho(shape: np.ndarray) -> np.ndarray:
        sigma = np.concatenate(([ours[0]], shape))
        return sigma * math.sqrt(float(budget(list(sigma))) / rho)  # exact cost rho

    for shape in (np.ones(tree.height), np.maximum(W, 1e-6 * W.max()) ** -0.5):
        assert cost(ours) <= cost(at_rho(shape)) * (1 + 1e-9)


def test_zcdp_candidates_with_optimal_depths() -> None:
    """``include_optimal_depths`` adds, for each s, the smallest depth minimising the zCDP model
    bound (when it differs from r_s), each spending rho exactly."""
    from opendp_wasserstein.schedules.zcdp import zcdp_budget, zcdp_candidates, zcdp_model_bound

    d, n, rho = 3, 5000, 0.05
    plain = zcdp_candidates(d, n, rho)
    more = zcdp_candidates(d, n, rho, include_optimal_depths=True)
    assert set(plain) <= set(more)
    assert len(more) <= 2 * d
    deepest = plain[0].depth
    for s in range(1, d + 1):
        best = min(range(1, deepest + 1), key=lambda r: zcdp_model_bound(d, n, rho, s, r))
        assert best in {c.depth for c in more if c.s == s}
    for c in more:
        assert round_up(zcdp_budget(c.scales)) == rho
