import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.schedules.pure import ScheduleCandidate, paper_schedule, standard_candidates
from opendp_wasserstein.transformations import make_occupancy, make_schedule_scores
from opendp_wasserstein.transformations._schedule_scores import score_table
from tests.hierarchy.test_cells import brute_occupancy

from ..strategies import replacements


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


@pytest.mark.parametrize("d,depth", [(2, 20), (3, 64), (5, 140)])
def test_occupancy_transformation_matches_brute_force(d, depth):
    x = np.random.default_rng(d).uniform(-1, 2, size=(300, d))  # some rows clamped
    t = make_occupancy(dom(300, d), dp.symmetric_distance(), depth, bounds=(-1.0, 2.0))
    u = np.clip((x + 1) / 3, 0, 1)
    assert t(x).tolist() == brute_occupancy(u, depth)[:depth]


def test_occupancy_maps():
    assert make_occupancy(dom(10), dp.symmetric_distance(), 5).map(2) == 1
    assert make_occupancy(dom(10), dp.symmetric_distance(), 5).map(6) == 3
    assert make_occupancy(dom(10), dp.change_one_distance(), 5).map(1) == 1
    assert make_occupancy(dom(10), dp.change_one_distance(), 5).map(4) == 4
    assert make_occupancy(dom(None), dp.symmetric_distance(), 5).map(1) == 1
    assert make_occupancy(dom(None), dp.symmetric_distance(), 5).map(3) == 3


@settings(max_examples=60, deadline=None)
@given(replacements(max_n=60, max_d=4))
def test_occupancy_and_scores_move_within_sensitivity(pair):
    x, x2 = pair
    n, d = x.shape
    depth = 30
    t = make_occupancy(dom(n, d), dp.change_one_distance(), depth)
    assert np.abs(t(x) - t(x2)).max() <= t.map(1)
    cands = standard_candidates(d, n, 0.8, include_optimal_depths=True)
    s = make_schedule_scores(dom(n, d), dp.change_one_distance(), cands, 0.8)
    diff = np.abs(np.array(s(x)) - np.array(s(x2))).max()
    assert diff <= s.map(1)


def test_standard_candidates_hand_computed():
    cands = standard_candidates(2, 30000, 0.9)
    # L = floor(2 log2(27000)) = 29; r_2 = floor(log2(1 + 27000 / 4)) = 12
    assert [(c.s, c.depth) for c in cands] == [(1, 29), (2, 12)]
    cands = standard_candidates(3, 1000, 1.0)
    # L = floor(3 log2 1000) = 29; r_2 = floor(1.5 log2(1 + 1000/9)) = 10; r_3 = floor(log2(1 +
    # 4000/9)) = 8
    assert [(c.s, c.depth) for c in cands] == [(1, 29), (2, 10), (3, 8)]
    for c in cands:
        assert len(c.scales) == c.depth + 1
        assert c.scales[0] == 1.0
        assert round_up(2 * sum(Fraction(1) / Fraction(s) for s in c.scales[1:])) == 1.0
        q = 2 ** ((c.s - 1) / 6)
        S = sum(q**j for j in range(c.depth))
        assert np.allclose(c.scales[1:], [2 * S / q**j for j in range(c.depth)], rtol=1e-12)


def test_optional_optimal_depths():
    from opendp_wasserstein.schedules.pure import model_bound

    d, n, eps = 3, 5000, 1.0
    plain = standard_candidates(d, n, eps)
    more = standard_candidates(d, n, eps, include_optimal_depths=True)
    assert len(plain) <= len(more) <= 2 * d
    L = plain[0].depth
    for s in range(1, d + 1):
        best = min(range(1, L + 1), key=lambda r: model_bound(d, n, eps, s, r))
        assert best in {c.depth for c in more if c.s == s}


def test_score_hand_computed():
    # d = 1, n = 4, one candidate of depth 3 with scales (1, 2, 4, 8)
    cand = ScheduleCandidate(1, 3, (1.0, 4.0, 8.0, 8.0))  # 2 (1/4 + 1/8 + 1/8) = 1
    x = np.array([[0.1], [0.2], [0.6], [0.9]])
    t = make_schedule_scores(dom(4, 1), dp.change_one_distance(), [cand], 1.0)
    # levels 0..2 of d = 1: O = (1, 2, 3) ([0,.5),[.5,1)) then quarters: {0}, {2}, {3}
    expected = 1 / (1.0 * 4) + (4 / 4) * (4.0 * 1 * 1 + 8.0 * 2 * 0.5 + 8.0 * 3 * 0.25) + 2 * 2**-3
    assert t(x)[0] == pytest.approx(expected, rel=1e-15)
    delta = (4 / 4) * (8.0 * 0.5 + 8.0 * 0.25)  # levels 1 and 2
    table = score_table([cand], 1, 4, 1.0)
    assert table.delta_exact == delta
    assert delta < table.sensitivity <= delta * (1 + 1e-12)
    assert t.map(1) == table.sensitivity
    assert t.map(3) == round_up(3 * Fraction(table.sensitivity))
    t2 = make_schedule_scores(dom(4, 1), dp.symmetric_distance(), [cand], 1.0)
    assert t2.map(2) == table.sensitivity


def test_score_errors():
    cands = standard_candidates(2, 100, 1.0)
    with pytest.raises(ValueError, match="size"):
        make_schedule_scores(dom(None), dp.symmetric_distance(), cands, 1.0)
    with pytest.raises(ValueError, match="candidates"):
        make_schedule_scores(
            dom(100), dp.symmetric_distance(), standard_candidates(2, 100, 0.5), 1.0
        )
    with pytest.raises(ValueError, match="candidates"):
        make_schedule_scores(dom(100), dp.symmetric_distance(), [], 1.0)
    bad = ScheduleCandidate(1, 3, paper_schedule(2, 2.0, 3))
    with pytest.raises(ValueError, match="candidates"):
        make_schedule_scores(dom(100), dp.symmetric_distance(), [bad], 1.0)
    with pytest.raises(ValueError, match="epsilon_main"):
        make_schedule_scores(dom(100), dp.symmetric_distance(), cands, -1.0)
    assert math.isfinite(make_schedule_scores(dom(100), dp.symmetric_distance(), cands, 1.0).map(2))


def test_private_size_scores_respect_their_map_from_the_empty_dataset():
    """With a private size the empty dataset is in the domain: O_0 must not move (it is fixed)."""
    import opendp.prelude as dp

    from opendp_wasserstein.schedules.pure import standard_candidates
    from opendp_wasserstein.transformations import make_schedule_scores

    cands = standard_candidates(d=2, n=10, epsilon_main=0.9)
    t = make_schedule_scores(
        dp.numpy.array2_domain(num_columns=2, T=float), dp.symmetric_distance(), cands, 0.9, size=10
    )
    empty = np.array(t(np.zeros((0, 2))))
    for row in ([0.1, 0.1], [0.9, 0.4], [0.5, 0.5]):
        one = np.array(t(np.array([row])))
        assert np.max(np.abs(one - empty)) <= t.map(1)


# ---------------------------------------------------------------------------------------------
# scores on a split order with its diameter profile


def test_split_order_scores_hand_computed():
    from opendp_wasserstein.hierarchy.split_order import SplitOrder

    order = SplitOrder.discrete_first(cells=(2, 0))  # the bool first, then the numeric axis
    assert order.diameters(3) == (1.0, 1.0, 0.5, 0.25)
    cand = ScheduleCandidate(1, 3, (1.0, 4.0, 4.0, 4.0))  # 2 (1/4 + 1/4 + 1/4) = 1.5
    table = score_table([cand], 2, 8, 1.5, diameters=order.diameters(3))
    # w_j = 4 C sigma_{j+1} diam_j / n = 16 diam_j / 8
    assert table.weights.tolist() == [[2.0, 2.0, 1.0]]
    assert table.const.tolist() == [1 / (1.5 * 8) + 2 * 0.25]
    assert table.delta_exact == 3.0  # w_1 + w_2: O_0 never moves
    assert table.sensitivity > 3.0
    assert table.sensitivity < 3.0 * (1 + 1e-12)
    t = make_schedule_scores(dom(8), dp.change_one_distance(), [cand], 1.5, split_order=order)
    assert t.map(1) == table.sensitivity
    assert t.map(2) == round_up(2 * Fraction(table.sensitivity))
    # the occupancy of the split order's hierarchy: level 1 splits the bool (coordinate 0)
    x = np.array([[0.25, 0.1]] * 4 + [[0.75, 0.1]] * 4)
    assert t(x) == [table.const[0] + 2.0 * 1 + 2.0 * 2 + 1.0 * 2]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.integers(0, 10_000), st.integers(2, 60))
def test_split_order_scores_move_within_sensitivity(seed, n):
    from opendp_wasserstein.hierarchy.split_order import SplitOrder
    from opendp_wasserstein.schedules.pure import split_order_candidates

    rng = np.random.default_rng(seed)
    order = SplitOrder.discrete_first(cells=(3, 0, 2, 0))
    x = rng.uniform(size=(n, 4))
    x[:, 0] = rng.choice([0.25, 0.625, 0.875], n)
    x[:, 2] = rng.choice([0.25, 0.75], n)
    x2 = x.copy()
    x2[rng.integers(n)] = [0.875, rng.uniform(), 0.75, 1.0]
    cands = split_order_candidates(order, n, 0.8)
    s = make_schedule_scores(dom(n, 4), dp.change_one_distance(), cands, 0.8, split_order=order)
    assert np.abs(np.array(s(x)) - np.array(s(x2))).max() <= s.map(1)
    unsized = make_schedule_scores(
        dom(None, 4), dp.symmetric_distance(), cands, 0.8, size=n, split_order=order
    )
    assert np.abs(np.array(unsized(x)) - np.array(unsized(x[1:]))).max() <= unsized.map(1)


def test_split_order_checked():
    from opendp_wasserstein.hierarchy.split_order import SplitOrder

    cands = standard_candidates(2, 100, 0.8)
    with pytest.raises(ValueError, match="split_order is for 3 columns"):
        make_schedule_scores(
            dom(100), dp.change_one_distance(), cands, 0.8, split_order=SplitOrder.cyclic(3)
        )
    with pytest.raises(TypeError, match="split_order"):
        make_schedule_scores(dom(100), dp.change_one_distance(), cands, 0.8, split_order=(0, 1))
    short = SplitOrder.discrete_first(cells=(4, 2))  # 3 levels only
    with pytest.raises(ValueError, match=r"depth .* must be in \[1, 3\]"):
        make_schedule_scores(dom(100), dp.change_one_distance(), cands, 0.8, split_order=short)
