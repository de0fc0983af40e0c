"""Least-squares consistency on the pruned tree (opendp_wasserstein.hierarchy.least_squares)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.hierarchy.cells import build_count_tree
from opendp_wasserstein.hierarchy.least_squares import (
    VisitedLevel,
    gls_estimates,
    least_squares_masses,
    noise_variance,
)
from opendp_wasserstein.hierarchy.traversal import pruned_traversal
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pruned_pmm
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import paper_schedule


def _lv(noisy: list[int], paper: list[int]) -> VisitedLevel:
    return VisitedLevel(np.array(noisy, dtype=np.int64), np.array(paper, dtype=np.int64))


# the hand-computed tree: root mass 10 (public), level 1 noisy (7, 2), level 2 noisy (5, 1 | 3, -1),
# all variances 1; the paper's masses: (7, 3), then (5, 2 | 3, 0)
HAND = [_lv([7, 2], [7, 3]), _lv([5, 1, 3, -1], [5, 2, 3, 0])]


def test_gls_on_a_hand_computed_tree():
    """Bottom-up: z = (20/3, 2), W = 2/3; top-down: residual 10 - 26/3 = 4/3 shared equally,
    h1 = (22/3, 8/3), P1 = 2/3 - (1/4)(4/3) = 1/3; level 2: residuals 4/3 and 2/3, h2 = (17/3,
    5/3 | 10/3, -2/3), P2 = 1 - (1/4)(2 - 1/3) = 7/12."""
    est = gls_estimates(HAND, (0.0, 1.0, 1.0), None, 10)
    assert est.root == 10.0
    np.testing.assert_allclose(est.levels[0], [22 / 3, 8 / 3], rtol=1e-15)
    np.testing.assert_allclose(est.levels[1], [17 / 3, 5 / 3, 10 / 3, -2 / 3], rtol=1e-14)
    np.testing.assert_allclose(est.errors[0], [math.sqrt(1 / 3)] * 2, rtol=1e-15)
    np.testing.assert_allclose(est.errors[1], [math.sqrt(7 / 12)] * 4, rtol=1e-14)


def test_masses_on_the_hand_computed_tree():
    # threshold 0: floor(10 * 22/30) = 7; floor(7 * 17/22) = 5; the negative estimate gets nothing
    total, mass = least_squares_masses(HAND, (0.0, 1.0, 1.0), None, 10)
    assert (total, mass.tolist()) == (10, [5, 2, 3])
    # threshold 3: 5/3 <= 3 sqrt(7/12) = 2.29 fails the test, but 5/3 > 0.1 * 7 (its parent's
    # mass) keeps it; without the share rule it is read as empty and its sibling takes all 7
    total, mass = least_squares_masses(HAND, (0.0, 1.0, 1.0), None, 10, threshold=3.0)
    assert (total, mass.tolist()) == (10, [5, 2, 3])
    total, mass = least_squares_masses(HAND, (0.0, 1.0, 1.0), None, 10, threshold=3.0, share=0.3)
    assert (total, mass.tolist()) == (10, [7, 0, 3])  # 5/3 <= 0.3 * 7 = 2.1
    total, mass = least_squares_masses(HAND, (0.0, 1.0, 1.0), None, 10, threshold=3.0, share=0.2)
    assert (total, mass.tolist()) == (10, [5, 2, 3])  # 5/3 > 0.2 * 7 = 1.4


def test_noisy_root_is_estimated():
    # root noisy 13 with variance 1; the children's sum is 26/3 with variance 4/3:
    # h0 = (13 * 4/3 + 26/3 * 1) / (4/3 + 1) = (78/3) / (7/3) = 78/7
    est = gls_estimates(HAND, (1.0, 1.0, 1.0), 13, None)
    assert est.root == pytest.approx(78 / 7, rel=1e-15)
    total, _ = least_squares_masses(HAND, (1.0, 1.0, 1.0), 13, None)
    assert total == round(78 / 7)


def test_noise_variance_exact_values():
    # LapZ(s): P(k) proportional to exp(-|k|/s); variance 2 q / (1 - q)^2 with q = e^{-1/s}
    for s in (0.5, 1.0, 3.0, 40.0):
        k = np.arange(-4000, 4001)
        p = np.exp(-np.abs(k) / s)
        p /= p.sum()
        assert noise_variance(s) == pytest.approx(float((p * k**2).sum()), rel=1e-9)
    assert noise_variance(3.0, "gaussian") == 9.0
    assert math.isinf(noise_variance(math.inf))


def _dense_gls(
    levels: list[VisitedLevel], var: tuple[float, ...], root_noisy, root_mass
) -> list[np.ndarray]:
    """The same estimates by a dense weighted least-squares solve over the visited leaves."""
    r = len(levels)
    # leaf sets: a visited node's set of visited-tree leaves, built bottom-up
    sets: list[list[list[int]]] = [[] for _ in range(r + 1)]
    leaves = 0
    sets[r] = [[leaves + i] for i in range(levels[r - 1].noisy.size)]
    leaves += levels[r - 1].noisy.size
    for j in range(r - 1, 0, -1):
        expanded = np.flatnonzero(levels[j - 1].paper > 0)
        row: list[list[int]] = []
        for i in range(levels[j - 1].noisy.size):
            if levels[j - 1].paper[i] > 0:
                k = int(np.searchsorted(expanded, i))
                row.append(sets[j + 1][2 * k] + sets[j + 1][2 * k + 1])
            else:
                row.append([leaves])
                leaves += 1
        sets[j] = row
    obs, ys, ws = [], [], []
    for j in range(1, r + 1):
        for i, s in enumerate(sets[j]):
            a = np.zeros(leaves)
            a[s] = 1.0
            obs.append(a)
            ys.append(float(levels[j - 1].noisy[i]))
            ws.append(1.0 / var[j])
    if root_mass is None:
        obs.append(np.ones(leaves))
        ys.append(float(root_noisy))
        ws.append(1.0 / var[0])
    A, y, W = np.array(obs), np.array(ys), np.diag(ws)
    if root_mass is None:
        x = np.linalg.solve(A.T @ W @ A, A.T @ W @ y)
    else:  # equality-constrained: the KKT system
        kkt = np.block(
            [[A.T @ W @ A, np.ones((leaves, 1))], [np.ones((1, leaves)), np.zeros((1, 1))]]
        )
        x = np.linalg.solve(kkt, np.concatenate([A.T @ W @ y, [float(root_mass)]]))[:leaves]
    return [np.array([x[s].sum() for s in sets[j]]) for j in range(1, r + 1)]


@st.composite
def visited_trees(draw):
    """A random visited tree: pairs of children below every expanded node, random noisy counts,
    random paper masses with at least one positive child in each pair (the paper's split gives
    an expanded node's mass to its children)."""
    r = draw(st.integers(1, 4))
    levels = []
    pairs = 1
    for j in range(1, r + 1):
        noisy = draw(st.lists(st.integers(-20, 60), min_size=2 * pairs, max_size=2 * pairs))
        if j < r:
            expand = draw(st.lists(st.booleans(), min_size=2 * pairs, max_size=2 * pairs))
            expand = [e or (i % 2 == 0 and not expand[i + 1]) for i, e in enumerate(expand)]
            paper = [1 if e else 0 for e in expand]
        else:
            paper = draw(st.lists(st.integers(0, 3), min_size=2 * pairs, max_size=2 * pairs))
            paper = [
                p or (1 if i % 2 == 0 and not paper[i + 1] else 0) for i, p in enumerate(paper)
            ]
        levels.append(_lv(noisy, paper))
        pairs = sum(1 for p in paper if p > 0)
    var = tuple(draw(st.floats(0.5, 50.0)) for _ in range(r + 1))
    public = draw(st.booleans())
    root_mass = draw(st.integers(1, 200)) if public else None
    root_noisy = None if public else draw(st.integers(-5, 200))
    return levels, var, root_noisy, root_mass


@settings(max_examples=60, deadline=None)
@given(visited_trees())
def test_gls_matches_a_dense_weighted_solve(tree):
    levels, var, root_noisy, root_mass = tree
    est = gls_estimates(levels, var, root_noisy, root_mass)
    dense = _dense_gls(levels, var, root_noisy, root_mass)
    for got, want in zip(est.levels, dense, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-7)


@settings(max_examples=80, deadline=None)
@given(visited_trees(), st.sampled_from([0.0, 1.0, 2.5]))
def test_masses_are_nonnegative_integers_summing_to_the_root(tree, threshold):
    levels, var, root_noisy, root_mass = tree
    total, mass = least_squares_masses(levels, var, root_noisy, root_mass, threshold)
    assert mass.dtype == np.int64
    assert np.all(mass >= 0)
    assert int(mass.sum()) == total
    if root_mass is not None:
        assert total == root_mass
    else:
        assert total >= 1
    # one entry per level-r node the paper gave mass (those are the only candidates)
    assert mass.size == int(np.count_nonzero(levels[-1].paper > 0))


def _tree(n: int, depth: int, seed: int):
    x = np.random.default_rng(seed).beta(0.5, 3.0, size=(n, 2))  # crowded corner, empty regions
    return build_count_tree(x, depth)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 400),
    st.integers(1, 9),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 2.0, 3.0]),
)
def test_traversal_support_is_within_the_papers(n, depth, seed, threshold):
    """Same noise (node-addressed, one key): least squares keeps the total and puts mass only
    in leaves the paper's rule gave mass."""
    counts = _tree(n, depth, seed)
    scales = paper_schedule(2, 1.0, depth, s=2)
    key = np.random.default_rng(seed).bytes(32)
    paper = pruned_traversal(counts, scales, n, KeyedNodeNoise(key))
    ls = pruned_traversal(
        counts, scales, n, KeyedNodeNoise(key), threshold, consistency="least_squares"
    )
    assert ls.total == n
    assert np.all(ls.masses > 0)
    assert ls.masses.dtype == np.int64
    assert ls.visited == paper.visited
    assert {tuple(c) for c in ls.cells.tolist()} <= {tuple(c) for c in paper.cells.tolist()}


def test_unknown_consistency_is_refused():
    counts = _tree(10, 3, 0)
    with pytest.raises(ValueError, match="consistency must be one of"):
        pruned_traversal(
            counts, paper_schedule(2, 1.0, 3), 10, KeyedNodeNoise(b"k" * 32), consistency="hay"
        )


@pytest.mark.parametrize(
    "consistency,threshold",
    [("paper", 0.0), ("paper", 2.0), ("least_squares", 0.0), ("least_squares", 3.0)],
)
def test_maps_do_not_change(consistency, threshold):
    dp.enable_features("contrib")
    dom = dp.numpy.array2_domain(num_columns=2, size=500, T=float)
    scales = paper_schedule(2, 1.0, 8)
    base = make_pruned_pmm(dom, dp.symmetric_distance(), 8, scales)
    meas = make_pruned_pmm(
        dom, dp.symmetric_distance(), 8, scales, consistency=consistency, threshold=threshold
    )
    assert meas.map(2) == base.map(2) == 1.0
    assert meas.check(2, 1.0)
    assert not meas.check(2, math.nextafter(1.0, 0.0))
    co = dp.change_one_distance()
    a0 = make_adaptive_pruned_pmm(dom, co, 0.2, 0.8)
    a1 = make_adaptive_pruned_pmm(dom, co, 0.2, 0.8, consistency=consistency, threshold=threshold)
    assert Fraction(a1.map(1)) == Fraction(a0.map(1))
    assert a1.map(3) == a0.map(3)


def test_release_keeps_the_size_and_the_box():
    dp.enable_features("contrib")
    x = np.random.default_rng(3).beta(0.5, 3.0, size=(700, 2))
    dom = dp.numpy.array2_domain(num_columns=2, size=700, T=float)
    meas = make_pruned_pmm(
        dom,
        dp.change_one_distance(),
        9,
        paper_schedule(2, 1.0, 9),
        placement="uniform",
        consistency="least_squares",
        threshold=3.0,
    )
    with reproducible(5):
        y = meas(x)
    assert y.shape == (700, 2)
    assert np.all((y >= 0) & (y <= 1))
    assert x.flags.writeable  # input untouched


def test_synthesize_passes_the_options_and_refuses_them_for_pmm():
    from opendp_wasserstein import synthesize

    x = np.random.default_rng(4).uniform(size=(300, 2))
    with reproducible(1):
        y, rep = synthesize(
            x, 1.0, bounds=(0, 1), mechanism="pruned", consistency="least_squares", threshold=3.0
        )
    assert y.shape == (300, 2)
    assert rep.epsilon == 1.0
    with pytest.raises(ValueError, match="consistency and threshold apply only"):
        synthesize(x, 1.0, bounds=(0, 1), mechanism="pmm", consistency="least_squares")
    with pytest.raises(ValueError, match="consistency must be one of"):
        synthesize(x, 1.0, bounds=(0, 1), consistency="lsq")
    with pytest.raises(ValueError, match="threshold must be a finite number >= 0"):
        synthesize(x, 1.0, bounds=(0, 1), threshold=-1)
