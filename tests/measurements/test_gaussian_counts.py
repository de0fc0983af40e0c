"""The discrete Gaussian measurement on tree counts (zCDP): exact maps, the Renyi divergence of
the released distributions on a tiny input, schedules that spend exactly rho, and (eps, delta)
through OpenDP's own combinators."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy.special import logsumexp

import opendp_wasserstein.measurements._tree_count_noise as gc
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.metrics import weighted_l2sq_distance
from opendp_wasserstein.measurements import (
    make_tree_count_gaussian,
    make_tree_count_laplace,
    make_tree_multiset,
    then_tree_count_gaussian,
    zcdp_map,
)
from opendp_wasserstein.public_candidates.trees import Tree, quadtree
from opendp_wasserstein.schedules.tree import tree_level_scales_zcdp
from opendp_wasserstein.transformations import candidate_index_domain, make_tree_counts

TREE = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])  # leaves at depths 1, 2, 2
SCALES = [1.0, 3.0, 7.0]


def chain(size: int | None, metric, scales=SCALES, tree: Tree = TREE):
    t = make_tree_counts(
        candidate_index_domain(tree.k, size), metric, tree, scales, output_metric="l2sq"
    )
    return t, t >> make_tree_count_gaussian(t.output_domain, t.output_metric)


def test_zcdp_map_is_half_rounded_up() -> None:
    assert zcdp_map(0.625) == 0.3125
    assert zcdp_map(0) == 0.0
    assert zcdp_map(5e-324) == 5e-324  # half the smallest subnormal rounds up to it
    third = round_up(Fraction(1, 3))
    assert zcdp_map(third) == round_up(Fraction(third) / 2)
    assert zcdp_map(Fraction(2, 3)) == third  # a rational d_in is not rounded to a float first
    assert zcdp_map(math.inf) == math.inf
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="d_in"):
            zcdp_map(bad)
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match="d_in"):
            zcdp_map(bad)


@pytest.mark.parametrize(
    "size,metric,d_in,value",
    [
        # max over leaf pairs: (0, 1) at the root charges level 1 twice and level 2 once
        (10, dp.symmetric_distance(), 2, (2 * Fraction(1, 9) + Fraction(1, 49)) / 2),
        (10, dp.symmetric_distance(), 5, 4 * (2 * Fraction(1, 9) + Fraction(1, 49)) / 2),
        (10, dp.change_one_distance(), 3, 9 * (2 * Fraction(1, 9) + Fraction(1, 49)) / 2),
        (None, dp.symmetric_distance(), 1, (1 + Fraction(1, 9) + Fraction(1, 49)) / 2),
        (None, dp.symmetric_distance(), 2, 4 * (1 + Fraction(1, 9) + Fraction(1, 49)) / 2),
    ],
)
def test_chain_map_exact(size, metric, d_in, value) -> None:
    _, meas = chain(size, metric)
    assert str(meas.output_measure) == "ZeroConcentratedDivergence"
    rho = round_up(value)
    assert meas.map(d_in) == rho
    assert meas.check(d_in, rho)
    assert not meas.check(d_in, math.nextafter(rho, 0.0))


def _renyi(alpha: float, shifts: list[tuple[int, float]]) -> float:
    """``D_alpha`` between two products of discrete Gaussians whose means differ by ``shift``
    (integers) in coordinates of scale ``sigma``, by summing the pmfs."""
    total = 0.0
    for shift, sigma in shifts:
        half = int(40 * sigma) + abs(shift) + 5
        y = np.arange(-half, half + 1, dtype=np.float64)
        logp = -(y * y) / (2 * sigma * sigma)
        logq = -((y - shift) ** 2) / (2 * sigma * sigma)
        logp -= logsumexp(logp)
        logq -= logsumexp(logq)
        total += logsumexp(alpha * logp + (1 - alpha) * logq) / (alpha - 1)
    return total


def test_renyi_divergence_of_neighbouring_releases() -> None:
    """Two data sets one replacement apart (candidate 0 -> candidate 1) through the whole
    measurement: the per-node count shifts times independent discrete Gaussians have Renyi
    divergence alpha * rho at integer orders (CKS: equality for integer shifts) and at most
    that in between, with rho the measurement's map."""
    t, meas = chain(4, dp.change_one_distance())
    a = t(np.array([0, 0, 2, 1])).counts
    b = t(np.array([1, 0, 2, 1])).counts
    shifts = [
        (int(a[v] - b[v]), SCALES[TREE.depth[v]]) for v in range(TREE.num_nodes) if a[v] != b[v]
    ]
    rho = meas.map(1)
    for alpha in (2.0, 3.0, 7.0):
        assert _renyi(alpha, shifts) == pytest.approx(alpha * rho, rel=1e-12)
    for alpha in (1.3, 2.5):
        assert _renyi(alpha, shifts) <= alpha * rho * (1 + 1e-12)


def test_noise_scales_per_node(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def fake(scales, rng, backend=None):
        seen["scales"] = np.array(scales)
        return np.zeros(np.shape(scales), dtype=np.int64)

    monkeypatch.setattr(gc, "sample_discrete_gaussian", fake)
    t, meas = chain(3, dp.symmetric_distance())
    out = meas(np.array([0, 1, 1]))
    assert seen["scales"].tolist() == [SCALES[j] for j in TREE.depth]
    assert out.noisy.tolist() == [3, 2, 1, 2, 0]
    assert out.scales == tuple(SCALES)
    assert not out.noisy.flags.writeable


def test_release_is_noisy_counts() -> None:
    t, meas = chain(40, dp.symmetric_distance(), scales=[1.0, 0.5, 0.5])
    out = meas(np.arange(40) % 3)
    assert out.noisy.dtype == np.int64
    assert out.noisy.shape == (5,)
    assert np.abs(out.noisy - t(np.arange(40) % 3).counts).max() < 20  # P(fail) < 1e-300


def test_then_partial_and_postprocessing() -> None:
    t = make_tree_counts(
        candidate_index_domain(3, 30), dp.symmetric_distance(), TREE, SCALES, output_metric="l2sq"
    )
    meas = t >> then_tree_count_gaussian() >> make_tree_multiset(t.output_domain, m=9)
    assert meas.map(2) == round_up((2 * Fraction(1, 9) + Fraction(1, 49)) / 2)
    assert int(meas(np.arange(30) % 3).sum()) == 9


def test_rejects_l1_metric_and_bad_scales() -> None:
    t = make_tree_counts(candidate_index_domain(3, 4), dp.symmetric_distance(), TREE, SCALES)
    with pytest.raises(ValueError, match="WeightedL2SqDistance"):
        make_tree_count_gaussian(t.output_domain, t.output_metric)
    with pytest.raises(ValueError, match="2\\^52"):
        make_tree_count_gaussian(t.output_domain, weighted_l2sq_distance([1.0, 2.0**53, 1.0]))
    lap = make_tree_counts(
        candidate_index_domain(3, 4), dp.symmetric_distance(), TREE, SCALES, output_metric="l2sq"
    )
    with pytest.raises(ValueError):  # the Laplace measurement needs l1(s)
        make_tree_count_laplace(lap.output_domain, lap.output_metric)


# ---------------------------------------------------------------------------------------------
# schedules spend exactly rho; (eps, delta) through OpenDP's combinators


@pytest.mark.parametrize("rho", [0.01, 0.5, 2.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_tree_schedule_spends_exactly_rho(rho: float, seed: int) -> None:
    pts = np.random.default_rng(seed).uniform(size=(40, 2))  # public candidates (test data)
    tree = quadtree(pts, bounds=(0.0, 1.0), seed=seed)
    sized = tree_level_scales_zcdp(tree, rho, sized=True)
    _, sym = chain(100, dp.symmetric_distance(), sized, tree)
    _, co = chain(100, dp.change_one_distance(), sized, tree)
    assert sym.map(2) == rho
    assert co.map(1) == rho
    unsized = tree_level_scales_zcdp(tree, rho, sized=False)
    _, un = chain(None, dp.symmetric_distance(), unsized, tree)
    assert un.map(2) == rho


def test_approximate_dp_through_opendp_combinators() -> None:
    """rho = 1/2 for one replacement, converted by OpenDP: the same (eps, delta) as OpenDP's
    own Gaussian mechanism at rho = 1/2 (scale 1, sensitivity 1)."""
    tree = quadtree(np.random.default_rng(2).uniform(size=(30, 2)), bounds=(0.0, 1.0), seed=2)
    _, meas = chain(50, dp.symmetric_distance(), tree_level_scales_zcdp(tree, 0.5), tree)
    ours = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), 1e-9)
    ref = dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(
                dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=1.0
            )
        ),
        1e-9,
    )
    eps, delta = ours.map(2)
    assert (eps, delta) == ref.map(1)
    assert delta == 1e-9
    assert 6.0 < eps < 7.0
    assert ours.check(2, (eps, 1e-9))
    assert not ours.check(2, (math.nextafter(eps, 0.0), 1e-9))


# ---------------------------------------------------------------------------------------------
# the dyadic-tree measurements


def _dyadic(size, metric, scales, depth=3):
    from opendp_wasserstein.transformations import make_dyadic_counts

    return make_dyadic_counts(
        dp.numpy.array2_domain(num_columns=2, size=size, T=float),
        metric,
        depth,
        scales,
        output_metric="l2sq",
    )


def test_dyadic_gaussian_measurements_maps() -> None:
    from opendp_wasserstein.measurements import make_pruned_tree_gaussian, make_tree_gaussian

    scales = [2.0, 3.0, 5.0, 7.0]
    sq = Fraction(1, 9) + Fraction(1, 25) + Fraction(1, 49)
    for mk in (make_tree_gaussian, make_pruned_tree_gaussian):
        t = _dyadic(50, dp.symmetric_distance(), scales)
        meas = t >> mk(t.output_domain, t.output_metric)
        assert meas.map(2) == round_up(sq)
        assert meas.map(4) == round_up(4 * sq)
        assert meas.check(2, round_up(sq))
        assert not meas.check(2, math.nextafter(round_up(sq), 0))
        tu = _dyadic(None, dp.symmetric_distance(), scales)
        mu = tu >> mk(tu.output_domain, tu.output_metric)
        assert mu.map(1) == round_up((Fraction(1, 4) + sq) / 2)


def test_dyadic_gaussian_releases() -> None:
    from opendp_wasserstein.measurements import make_pruned_tree_gaussian, make_tree_gaussian
    from opendp_wasserstein.runtime import reproducible

    x = np.random.default_rng(0).uniform(size=(50, 2))
    t = _dyadic(50, dp.symmetric_distance(), [1.0, 0.5, 0.5, 0.5])
    with reproducible(1):
        full = (t >> make_tree_gaussian(t.output_domain, t.output_metric))(x)
    assert [lv.size for lv in full.levels] == [1, 2, 4, 8]
    assert not full.root_released
    exact = t(x)
    assert abs(int(full.levels[1].sum()) - exact.n) < 20  # |noise| < 10 per node: P > 1 - 1e-20
    with reproducible(1):
        leaves = (t >> make_pruned_tree_gaussian(t.output_domain, t.output_metric))(x)
    assert leaves.total == 50
    assert leaves.scales == (1.0, 0.5, 0.5, 0.5)
    tu = _dyadic(None, dp.symmetric_distance(), [math.inf, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="output_size"):
        make_pruned_tree_gaussian(tu.output_domain, tu.output_metric)
    m = make_pruned_tree_gaussian(tu.output_domain, tu.output_metric, output_size=40)
    assert (tu >> m)(x).total == 40
