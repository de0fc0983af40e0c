from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.schedules.pure import (
    budget_of,
    paper_schedule,
    profile_schedule,
    split_order_candidates,
    standard_candidates,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.floats(0, 1e6), min_size=1, max_size=40).filter(lambda w: max(w) > 0),
    st.floats(1e-3, 50),
)
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


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    st.lists(st.sampled_from([0, 0, 2, 3, 5, 12]), min_size=1, max_size=8),
    st.sampled_from(["discrete-first", "cyclic"]),
    st.integers(20, 10**6),
    st.sampled_from([0.1, 0.5, 1.0, 4.0]),
)
def test_model_optimal_depth_is_raised_to_r1_only_where_the_bound_is_vacuous(cells, kind, n, eps):
    """The model-optimal split-order depth is the bound's minimiser, raised to ``r_1`` (the first
    level below diameter 1) only when the bound is >= 2 at every depth, i.e. above every W1
    under the table metric (which is at most 1): the raise never overrides an informative bound."""
    from opendp_wasserstein.schedules.pure import model_optimal_depth

    cells = tuple(cells)
    order = (
        SplitOrder.discrete_first(cells)
        if kind == "discrete-first"
        else SplitOrder.cyclic(cells=cells)
    )
    depths = {c.depth for c in split_order_candidates(order, n, eps)}
    for s in range(1, max(1, len(order.numeric)) + 1):
        depth, raw, r_1, bounds = model_optimal_depth(order, n, eps, s)
        assert depth in depths
        diam = order.diameters(len(bounds))
        assert all(x == 1.0 for x in diam[:r_1])  # below r_1 the cells have diameter 1 ...
        assert (bounds[: r_1 - 1] >= 2.0).all()  # ... so the bound is >= 2 there
        if raw < r_1:  # raised: the bound is vacuous at every depth
            assert bounds.min() >= 2.0
            assert depth == r_1
        else:  # the paper's rule as it is
            assert depth == raw


def test_r1_is_the_first_level_below_diameter_one():
    from opendp_wasserstein.schedules.pure import model_optimal_depth

    order = SplitOrder.discrete_first(cells=(5, 3, 2, 0, 0))
    _, _, r_1, bounds = model_optimal_depth(order, 300, 1.0, 1, cap=20)
    assert r_1 == 3 + 2 + 1 + 2  # the categories' 6 levels, then both numeric axes once
    assert order.diameters(20)[r_1 - 1 : r_1 + 1] == (1.0, 0.5)
    assert (bounds[: r_1 - 1] >= 2.0).all()
