from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.schedules import (
    budget_of,
    paper_schedule,
    profile_schedule,
    split_order_candidates,
    standard_candidates,
)
from opendp_wasserstein.split_order import SplitOrder


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=40).filter(lambda w: max(w) > 0), st.floats(1e-3, 50))
def test_profile_schedule_spends_the_budget_exactly(weights, eps):
    sigma = profile_schedule(weights, eps)
    assert len(sigma) == len(weights) + 1
    assert sigma[0] == 1 / eps
    assert budget_of(sigma) == eps
    assert 2 * sum(Fraction(1) / Fraction(s) for s in sigma[1:]) <= Fraction(eps)


def test_profile_schedule_is_the_paper_schedule_on_the_cube():
    # w_j = O_j diam_j = 2^(j s / d) 2^(-j / d): sigma_{j+1} proportional to q_s^-j
    d, s, r, eps = 3, 2, 12, 0.9
    w = [2.0 ** (j * (s - 1) / d) for j in range(r)]
    assert profile_schedule(w, eps) == pytest.approx(paper_schedule(d, eps, r, s), rel=1e-12)


def test_profile_schedule_lagrange_optimum():
    w = np.array([4.0, 1.0, 0.25])
    sigma = np.array(profile_schedule(w, 1.0)[1:])
    best = float(w @ sigma)
    assert best == pytest.approx(2 * (np.sqrt(w).sum()) ** 2)  # (2/eps) (sum sqrt w)^2
    rng = np.random.default_rng(0)
    for _ in range(200):  # any other schedule at the same budget costs more
        other = rng.uniform(0.1, 10, 3)
        other *= 2 * (1 / other).sum() / 1.0
        assert w @ other >= best * (1 - 1e-12)


def test_profile_schedule_errors():
    for bad in ([], [0.0, 0.0], [1.0, -1.0], [np.inf]):
        with pytest.raises(ValueError, match="weights"):
            profile_schedule(bad, 1.0)


@pytest.mark.parametrize(
    "order",
    [
        SplitOrder.discrete_first(cells=(4, 0, 0)),
        SplitOrder.discrete_first(cells=(3, 2, 5)),  # no numeric axis
        SplitOrder.cyclic(cells=(3, 0, 2, 0)),
        SplitOrder.cyclic(2),
    ],
)
@pytest.mark.parametrize("n", [50, 30000])
def test_split_order_candidates_are_valid(order, n):
    cands = split_order_candidates(order, n, 0.8)
    assert cands
    assert len({(c.s, c.depth) for c in cands}) == len(cands)
    for c in cands:
        assert 1 <= c.depth <= order.max_depth
        assert len(c.scales) == c.depth + 1
        assert budget_of(c.scales) == 0.8
        assert all(np.isfinite(c.scales))
        assert min(c.scales) > 0


def test_split_order_candidates_on_the_cube_keep_the_paper_depths():
    ours = {(c.s, c.depth) for c in split_order_candidates(SplitOrder.cyclic(2), 30000, 0.9)}
    assert {(c.s, c.depth) for c in standard_candidates(2, 30000, 0.9)} <= ours


def test_split_order_candidates_errors():
    with pytest.raises(TypeError, match="SplitOrder"):
        split_order_candidates((0, 1), 10, 1.0)
