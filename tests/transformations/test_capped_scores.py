"""The capped-count schedule score (``make_schedule_scores(..., score="capped")``)."""

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
from opendp_wasserstein.measurements._adaptive import softmax_probabilities
from opendp_wasserstein.schedules.pure import ScheduleCandidate, standard_candidates
from opendp_wasserstein.schedules.zcdp import zcdp_candidates
from opendp_wasserstein.transformations import make_schedule_scores
from opendp_wasserstein.transformations._schedule_scores import score_table

from ..strategies import replacements, unit_points


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


CAND = ScheduleCandidate(1, 3, (1.0, 4.0, 8.0, 8.0))  # 2 (1/4 + 1/8 + 1/8) = 1
X = np.array([[0.1], [0.2], [0.6], [0.9]])


def test_capped_score_hand_computed():
    t = make_schedule_scores(dom(4, 1), dp.change_one_distance(), [CAND], 1.0, score="capped")
    # caps ceil(sigma_{j+1}) = 4, 8, 8; level 0: min(4, 4) = 4; level 1: halves hold 2 and 2;
    # level 2: quarters hold 2 ({.1, .2}), 1 ({.6}), 1 ({.9}): every sum is 4
    expected = 1 / (1.0 * 4) + (1 / 8) * (1.0 * 4 + 0.5 * 4 + 0.25 * 4) + 2 * 2**-3
    assert t(X)[0] == pytest.approx(expected, rel=1e-15)
    table = score_table([CAND], 1, 4, 1.0, score="capped")
    assert table.delta_exact == (1 / 8) * (0.5 + 0.25)  # levels 1 and 2: T_0 = min(n, 4) is fixed
    assert table.delta_exact < table.sensitivity <= table.delta_exact * (1 + 1e-12)
    assert t.map(1) == table.sensitivity
    assert t.map(3) == round_up(3 * Fraction(table.sensitivity))
    assert make_schedule_scores(
        dom(4, 1), dp.symmetric_distance(), [CAND], 1.0, score="capped"
    ).map(2) == t.map(1)
    assert table.caps[:, 0].tolist() == [4, 8, 8]
    # a cap binds: with sigma = 1 everywhere, level 0 contributes min(4, 1) = 1
    small = ScheduleCandidate(1, 3, (1.0, 6.0, 6.0, 6.0))  # 2 * 3/6 = 1
    t1 = make_schedule_scores(dom(4, 1), dp.change_one_distance(), [small], 1.0, score="capped")
    assert t1(X)[0] == pytest.approx(
        1 / 4 + (1 / 8) * (4 + 0.5 * 4 + 0.25 * 4) + 2 * 2**-3, rel=1e-15
    )


def test_capped_score_with_the_data_resolution_term_hand_computed():
    """placement="uniform": 2 diam_r becomes sum_{r <= j < J} diam_j I_j / (2n) + diam_J."""
    t = make_schedule_scores(
        dom(4, 1), dp.change_one_distance(), [CAND], 1.0, score="capped", placement="uniform"
    )
    # J = 3 + 8 = 11; below level 3 every occupied cell holds one point: I_j = 4 for j = 3 .. 10
    resolution = sum(2.0**-j * 4 for j in range(3, 11)) / 8 + 2.0**-11
    assert resolution == 0.125
    expected = 1 / 4 + (1 / 8) * (4 + 0.5 * 4 + 0.25 * 4) + resolution
    assert t(X)[0] == pytest.approx(expected, rel=1e-15)
    table = score_table([CAND], 1, 4, 1.0, score="capped", resolution_levels=11)
    # a replacement moves each I_j by at most 2, each T_j (j >= 1) by at most 1
    assert table.delta_exact == (1 / 8) * (0.5 + 0.25) + 2 * sum(2.0**-j for j in range(3, 11)) / 8
    assert t.map(1) == table.sensitivity
    private = make_schedule_scores(
        dom(None, 1),
        dp.symmetric_distance(),
        [CAND],
        1.0,
        size=4,
        score="capped",
        placement="uniform",
    )
    assert score_table(
        [CAND], 1, 4, 1.0, occ_cap=80, score="capped", resolution_levels=11
    ).delta_exact == ((1 / 8) * (1 + 0.5 + 0.25) + sum(2.0**-j for j in range(3, 11)) / 8)
    assert (
        private.map(1)
        == score_table(
            [CAND], 1, 4, 1.0, occ_cap=80, score="capped", resolution_levels=11
        ).sensitivity
    )
    # a point mass has no imbalance to resolve below its cell: only the tail diam_J is left
    t_mass = make_schedule_scores(
        dom(4, 1), dp.change_one_distance(), [CAND], 1.0, score="capped", placement="uniform"
    )
    mass = np.full((4, 1), 0.3)
    assert t_mass(mass)[0] == pytest.approx(
        1 / 4
        + (1 / 8) * (4 + 0.5 * 4 + 0.25 * 4)
        + 2.0**-11
        + sum(2.0**-j * 4 for j in range(3, 11)) / 8,
        rel=1e-15,
    )
    with pytest.raises(ValueError, match="resolution_levels"):
        score_table([CAND], 1, 4, 1.0, resolution_levels=11)


def test_capped_score_private_size_counts_level_zero():
    t = make_schedule_scores(
        dom(None, 1), dp.symmetric_distance(), [CAND], 1.0, size=4, score="capped"
    )
    table = score_table([CAND], 1, 4, 1.0, occ_cap=4 * 4 + 64, score="capped")
    assert table.delta_exact == (1 / 8) * (1 + 0.5 + 0.25)  # T_0 = min(n, 4) moves with n
    assert t.map(1) == table.sensitivity
    empty = np.array(t(np.zeros((0, 1))))
    for row in ([0.1], [0.6], [1.0]):
        assert np.max(np.abs(np.array(t(np.array([row]))) - empty)) <= t.map(1)


def test_capped_sensitivity_is_far_below_the_papers():
    n, d = 30000, 2
    cands = standard_candidates(d, n, 0.8, include_optimal_depths=True)
    paper = score_table(cands, d, n, 0.8)
    capped = score_table(cands, d, n, 0.8, score="capped")
    assert capped.sensitivity * 20 < paper.sensitivity


@settings(max_examples=80, deadline=None)
@given(
    replacements(max_n=60, max_d=3),
    st.sampled_from([0.3, 1.0, 4.0]),
    st.sampled_from(["center", "uniform"]),
)
def test_capped_scores_move_within_sensitivity(pair, eps, placement):
    x, x2 = pair
    n, d = x.shape
    cands = standard_candidates(d, n, eps, include_optimal_depths=True)
    s = make_schedule_scores(
        dom(n, d), dp.change_one_distance(), cands, eps, score="capped", placement=placement
    )
    assert np.abs(np.array(s(x)) - np.array(s(x2))).max() <= s.map(1)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3).flatmap(lambda d: st.tuples(unit_points(40, d), unit_points(1, d))),
    st.sampled_from(["center", "uniform"]),
)
def test_capped_scores_move_within_sensitivity_when_a_record_is_added(pair, placement):
    x, row = pair
    d = x.shape[1]
    cands = standard_candidates(d, 40, 1.0, include_optimal_depths=True)
    s = make_schedule_scores(
        dom(None, d),
        dp.symmetric_distance(),
        cands,
        1.0,
        size=40,
        score="capped",
        placement=placement,
    )
    bigger = np.vstack([x, row])
    assert np.abs(np.array(s(bigger)) - np.array(s(x))).max() <= s.map(1)


def test_capped_scores_in_zcdp_and_on_a_split_order():
    n, d = 500, 3
    x = np.random.default_rng(0).uniform(size=(n, d))
    x2 = x.copy()
    x2[0] = 1.0
    cands = zcdp_candidates(d, n, 0.05, include_optimal_depths=True)
    t = make_schedule_scores(
        dom(n, d),
        dp.change_one_distance(),
        cands,
        0.05,
        output_measure=dp.zero_concentrated_divergence(),
        score="capped",
        placement="uniform",
    )
    assert np.abs(np.array(t(x)) - np.array(t(x2))).max() <= t.map(1)
    assert (
        t.map(1)
        == score_table(
            cands,
            d,
            n,
            math.sqrt(0.05),
            score="capped",
            resolution_levels=max(c.depth for c in cands) + 8,
        ).sensitivity
    )
    from opendp_wasserstein.schedules.pure import split_order_candidates

    order = SplitOrder.discrete_first(cells=(0, 4, 0), max_splits=20)
    oc = split_order_candidates(order, n, 0.8)
    t2 = make_schedule_scores(
        dom(n, d),
        dp.change_one_distance(),
        oc,
        0.8,
        split_order=order,
        score="capped",
        placement="uniform",
    )
    assert np.abs(np.array(t2(x)) - np.array(t2(x2))).max() <= t2.map(1)


def test_score_is_checked():
    with pytest.raises(ValueError, match="score"):
        make_schedule_scores(dom(4, 1), dp.change_one_distance(), [CAND], 1.0, score="bound")
    with pytest.raises(ValueError, match="score"):
        make_adaptive_pruned_pmm(dom(100), dp.change_one_distance(), 0.2, 0.8, score=None)


# ---------------------------------------------------------------------------------------------
# the adaptive release with the capped score: the same map, and the selection's privacy ratio


@pytest.mark.parametrize("measure", [None, dp.zero_concentrated_divergence()])
def test_adaptive_map_is_unchanged_by_the_score(measure):
    kw = {} if measure is None else {"output_measure": measure}
    sel, main = (0.2, 0.8) if measure is None else (0.01, 0.09)
    a = make_adaptive_pruned_pmm(
        dom(1000), dp.change_one_distance(), sel, main, score="capped", **kw
    )
    b = make_adaptive_pruned_pmm(dom(1000), dp.change_one_distance(), sel, main, **kw)
    assert a.map(1) == b.map(1) == sel + main
    assert a.check(1, sel + main)
    assert not a.check(1, math.nextafter(sel + main, 0))
    p = make_adaptive_pruned_pmm(
        dom(None), dp.symmetric_distance(), 0.2, 1.6, size=1000, score="capped"
    )
    assert p.map(1) == 0.2 + 0.8
    assert p.map(2) == 2 * (0.2 + 0.8)


@settings(max_examples=40, deadline=None)
@given(replacements(max_n=50, max_d=2), st.sampled_from(["center", "uniform"]))
def test_capped_selection_ratio_is_within_e_to_the_eps(pair, placement):
    """The selection's exact law on neighbours: P(a | X) / P(a | X') <= exp(eps_select)."""
    x, x2 = pair
    n, d = x.shape
    eps_sel, eps_main = 0.5, 1.0
    cands = standard_candidates(d, n, eps_main, include_optimal_depths=True)
    t = make_schedule_scores(
        dom(n, d), dp.change_one_distance(), cands, eps_main, score="capped", placement=placement
    )
    p = softmax_probabilities(np.array(t(x)), eps_sel, t.map(1))
    q = softmax_probabilities(np.array(t(x2)), eps_sel, t.map(1))
    assert np.all(np.abs(np.log(p) - np.log(q)) <= eps_sel * (1 + 1e-9))


def test_capped_selection_follows_the_geometry():
    """Point masses: deep levels cost a few capped noises each, so the deepest candidate wins;
    uniform data: every deep level costs about its whole mass, so a shallow one wins.  The
    capped score decides both almost surely at eps_select = 0.2 (the paper's score does not)."""
    n, d = 20000, 2
    points = np.repeat(
        np.array([[0.1, 0.1], [0.8, 0.3], [0.4, 0.9]]),
        [n // 2, n // 4, n - n // 2 - n // 4],
        axis=0,
    )
    uniform = np.random.default_rng(0).uniform(size=(n, d))
    cands = standard_candidates(d, n, 0.8, include_optimal_depths=True)
    deep = np.array([c.depth == max(c.depth for c in cands) for c in cands])
    t = make_schedule_scores(dom(n, d), dp.change_one_distance(), cands, 0.8, score="capped")
    assert softmax_probabilities(np.array(t(points)), 0.2, t.map(1))[deep].sum() > 0.99
    assert softmax_probabilities(np.array(t(uniform)), 0.2, t.map(1))[deep].sum() < 0.01
    paper = make_schedule_scores(dom(n, d), dp.change_one_distance(), cands, 0.8)
    assert softmax_probabilities(np.array(paper(points)), 0.2, paper.map(1))[deep].sum() < 0.99
