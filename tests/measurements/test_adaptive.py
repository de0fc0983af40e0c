import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_exponential_selection
from opendp_wasserstein.measurements._adaptive import softmax_probabilities
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import standard_candidates
from opendp_wasserstein.transformations._schedule_scores import score_table


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


VEC = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=4)
LINF = dp.linf_distance(T=float)


def test_exponential_selection_map_exact():
    m = make_exponential_selection(VEC, LINF, epsilon=0.7, sensitivity=0.25)
    scale = round_up(Fraction(2) * Fraction(0.25) / Fraction(0.7))
    assert m.map(0.25) == round_up(Fraction(2) * Fraction(0.25) / Fraction(scale))
    assert m.map(0.25) <= 0.7
    assert m.map(0.25) == pytest.approx(0.7, rel=1e-15)
    assert m.check(0.25, m.map(0.25))
    assert not m.check(0.25, math.nextafter(m.map(0.25), 0))
    assert m.map(0.5) == pytest.approx(1.4, rel=1e-15)
    pf = make_exponential_selection(
        VEC, LINF, epsilon=0.7, sensitivity=0.25, selection="permute_and_flip"
    )
    assert pf.map(0.25) == pytest.approx(0.7, rel=1e-12)
    assert pf.map(0.25) <= 0.7 * (1 + 1e-12)


@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
def test_selection_distribution(selection):
    scores = np.array([0.0, 0.3, 1.0, 2.5])
    eps, delta = 2.0, 0.5
    m = make_exponential_selection(VEC, LINF, epsilon=eps, sensitivity=delta, selection=selection)
    runs = 6000
    counts = np.bincount([m(scores.tolist()) for _ in range(runs)], minlength=4)
    if selection == "exponential":
        p = softmax_probabilities(scores, eps, delta)
        assert stats.chisquare(counts, p * runs).pvalue > 1e-4
    else:
        # permute-and-flip is never worse in expectation than the exponential mechanism
        p = softmax_probabilities(scores, eps, delta)
        assert (counts / runs) @ scores <= p @ scores + 0.03
        # and it is a different law
        assert stats.chisquare(counts, p * runs).pvalue < 1e-3


def test_selection_errors():
    with pytest.raises(ValueError, match="epsilon"):
        make_exponential_selection(VEC, LINF, epsilon=0.0, sensitivity=1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        make_exponential_selection(VEC, LINF, epsilon=1.0, sensitivity=-1.0)
    with pytest.raises(ValueError, match="selection"):
        make_exponential_selection(VEC, LINF, epsilon=1.0, sensitivity=1.0, selection="gumbel")


@pytest.mark.parametrize(
    "metric,d_in", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_adaptive_map_is_sequential_composition(metric, d_in):
    n, d = 500, 3
    meas = make_adaptive_pruned_pmm(dom(n, d), metric, epsilon_select=0.25, epsilon_main=0.75)
    cands = standard_candidates(d, n, 0.75)
    sens = score_table(cands, d, n, 0.75).sensitivity
    main = max(2 * sum(Fraction(1) / Fraction(s) for s in c.scales[1:]) for c in cands)
    # the selection's exact loss is 2 Delta / scale with scale calibrated to what is left of 1.0
    sel_eff = float(Fraction(1) - main)
    if Fraction(sel_eff) > Fraction(1) - main:
        sel_eff = math.nextafter(sel_eff, 0)
    scale = round_up(2 * Fraction(sens) / Fraction(sel_eff))
    expected = round_up(2 * Fraction(sens) / Fraction(scale) + main)
    assert meas.map(d_in) == expected
    assert abs(sel_eff - 0.25) < 1e-15
    assert meas.map(d_in) == 1.0
    assert meas.check(d_in, 1.0)
    assert not meas.check(d_in, math.nextafter(1.0, 0))
    assert meas.map(3 * d_in) == round_up(3 * (2 * Fraction(sens) / Fraction(scale) + main))


@pytest.mark.parametrize("sel,main", [(0.2, 0.8), (0.1, 0.9), (0.3, 0.4), (0.01, 2.0)])
def test_adaptive_total_never_exceeds_the_float_sum(sel, main):
    meas = make_adaptive_pruned_pmm(dom(800, 2), dp.change_one_distance(), sel, main)
    assert meas.map(1) == sel + main
    assert not meas.check(1, math.nextafter(sel + main, 0))


def test_adaptive_release_and_diagnostics():
    n, d = 3000, 4
    rng = np.random.default_rng(0)
    x = np.zeros((n, d)) + 0.5
    x[:, 0] = rng.uniform(size=n)  # a line
    keep = x.copy()
    meas = make_adaptive_pruned_pmm(dom(n, d), dp.change_one_distance(), 0.5, 0.5)
    with reproducible(7), diagnostics() as records:
        y = meas(x)
    (info,) = records
    assert np.array_equal(x, keep)
    assert y.shape == (n, d)
    assert {"s", "depth", "scales", "visited_nodes", "candidate_index", "num_candidates"} <= set(
        info
    )
    assert info["visited_nodes"] <= 2 * n * info["depth"]
    with reproducible(7), diagnostics() as records2:
        y2 = meas(x)
    assert np.array_equal(y, y2)
    assert records2 == records


@pytest.mark.slow
def _seeded_choices(meas, x, scores, runs, released=100):
    """The candidate index a release ``meas(x)`` chooses under ``reproducible(s)``, for
    ``s < runs``.  The first ``released`` seeds run the whole release and are checked to choose
    what the release's own selection step (its plan's ``choose_from_scores``, applied to the score
    vector ``scores`` of ``x``) chooses under the same seed; the law is then read off that step
    alone for every seed, without building ``runs`` releases."""
    from opendp_wasserstein.core.plan import plan_of

    choose = plan_of(meas).choose_from_scores
    chosen = []
    for s in range(runs):
        with reproducible(s):
            chosen.append(choose([float(v) for v in scores]))
    for s in range(min(released, runs)):
        with reproducible(s), diagnostics() as records:
            meas(x)
        assert records[0]["candidate_index"] == chosen[s], s
    return chosen


def test_adaptive_seeded_selection_follows_softmax():
    n, d = 400, 2
    x = np.random.default_rng(1).uniform(size=(n, d))
    cands = standard_candidates(d, n, 0.5)
    from opendp_wasserstein.transformations import make_schedule_scores

    scores = np.array(make_schedule_scores(dom(n, d), dp.change_one_distance(), cands, 0.5)(x))
    p = softmax_probabilities(scores, 0.5, score_table(cands, d, n, 0.5).sensitivity)
    runs = 600
    meas = make_adaptive_pruned_pmm(dom(n, d), dp.change_one_distance(), 0.5, 0.5)
    chosen = _seeded_choices(meas, x, scores, runs)
    counts = np.bincount(chosen, minlength=len(cands))
    assert stats.chisquare(counts, p * runs).pvalue > 1e-4


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"epsilon_select": 0.0}, "epsilon_select"),
        ({"epsilon_select": float("nan")}, "epsilon_select"),
        ({"epsilon_main": -1.0}, "epsilon_main"),
        ({"epsilon_main": float("inf")}, "epsilon_main"),
        ({"placement": "edge"}, "placement"),
        ({"selection": "argmin"}, "selection"),
    ],
)
def test_adaptive_bad_parameters(kwargs, match):
    args = {"epsilon_select": 0.5, "epsilon_main": 0.5} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_adaptive_pruned_pmm(dom(100), dp.symmetric_distance(), **args)


def test_adaptive_needs_size_and_matching_candidates():
    with pytest.raises(ValueError, match="size"):
        make_adaptive_pruned_pmm(dom(None), dp.symmetric_distance(), 0.5, 0.5)
    with pytest.raises(ValueError, match="size applies only"):
        make_adaptive_pruned_pmm(dom(100), dp.symmetric_distance(), 0.5, 0.5, size=100)
    with pytest.raises(ValueError, match="candidates"):
        make_adaptive_pruned_pmm(
            dom(100), dp.symmetric_distance(), 0.5, 0.5, candidates=standard_candidates(2, 100, 0.4)
        )


def test_adaptive_high_dimension_runs():
    n, d = 30000, 10
    x = np.full((n, d), 0.5)
    x[:, 0] = np.random.default_rng(2).uniform(size=n)
    meas = make_adaptive_pruned_pmm(dom(n, d), dp.change_one_distance(), 0.2, 0.8)
    with reproducible(3):
        assert meas(x).shape == (n, d)


def test_adaptive_with_a_public_size_estimate():
    """Private n: the candidates, scores and output size come from the public estimate."""
    x = np.random.default_rng(4).uniform(size=(500, 2))
    meas = make_adaptive_pruned_pmm(dom(None), dp.symmetric_distance(), 0.2, 0.8, size=480)
    # one added/removed record: the selection moves by a whole Delta, the levels by half a unit
    assert meas.map(1) <= 0.2 + 0.8 / 2
    assert meas.map(1) == pytest.approx(0.6, rel=1e-12)
    assert meas.map(2) == pytest.approx(1.2, rel=1e-12)
    with reproducible(0):
        y = meas(x)
    assert y.shape == (480, 2)


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-3, 50.0), st.floats(1e-3, 50.0))
def test_adaptive_never_certifies_above_the_float_sum(sel, main):
    meas = make_adaptive_pruned_pmm(dom(1000, 2), dp.change_one_distance(), sel, main)
    assert meas.map(1) <= sel + main
    from fractions import Fraction

    assert Fraction(meas.map(1)) <= Fraction(sel) + Fraction(main)


# ---------------------------------------------------------------------------------------------
# a table's split order


def _mixed_points(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.empty((n, 3))
    x[:, 0] = rng.choice([0.25, 0.625, 0.875], n, p=[0.6, 0.3, 0.1])  # 3 categories
    x[:, 1] = np.clip(rng.normal(0.3 + 0.3 * (x[:, 0] > 0.5), 0.05), 0, 1)
    x[:, 2] = rng.uniform(size=n)
    return x


@pytest.mark.parametrize("n", [500, None])
def test_split_order_keeps_the_map(n):
    from opendp_wasserstein.hierarchy.split_order import SplitOrder

    order = SplitOrder.discrete_first(cells=(3, 0, 0))
    if n is None:
        meas = make_adaptive_pruned_pmm(
            dom(None, 3), dp.symmetric_distance(), 0.25, 1.5, size=500, split_order=order
        )
        assert meas.map(1) == 1.0
    else:
        meas = make_adaptive_pruned_pmm(
            dom(n, 3), dp.change_one_distance(), 0.25, 0.75, split_order=order
        )
        assert meas.map(1) == 1.0
        assert not meas.check(1, math.nextafter(1.0, 0))
        assert meas.map(3) == pytest.approx(3.0, rel=1e-12)


def test_split_order_release_uses_its_hierarchy():
    from opendp_wasserstein.hierarchy.split_order import SplitOrder
    from opendp_wasserstein.schedules.pure import split_order_candidates

    order = SplitOrder.discrete_first(cells=(3, 0, 0))
    x = _mixed_points(2000)
    cands = split_order_candidates(order, 2000, 0.8)
    meas = make_adaptive_pruned_pmm(
        dom(2000, 3), dp.change_one_distance(), 0.2, 0.8, placement="center", split_order=order
    )
    with reproducible(4), diagnostics() as info:
        y = meas(x)
    rec = info[-1]
    assert rec["num_candidates"] == len(cands)
    depth = rec["depth"]
    assert (rec["s"], depth) in {(c.s, c.depth) for c in cands}
    # centre placement in the split order's leaf cells: the categorical axis (2 levels first)
    # is resolved, so every synthetic category coordinate is the centre of a level-2 cell
    assert depth >= 2
    assert set(np.unique(y[:, 0])) <= {0.125, 0.375, 0.625, 0.875}
    assert y.shape == (2000, 3)


def test_split_order_and_explicit_candidates_are_checked():
    from opendp_wasserstein.hierarchy.split_order import SplitOrder
    from opendp_wasserstein.schedules.pure import ScheduleCandidate

    order = SplitOrder.discrete_first(cells=(3, 2))  # two discrete axes: 3 levels in all
    deep = ScheduleCandidate(1, 4, (1.0, 8.0, 8.0, 8.0, 8.0))
    with pytest.raises(ValueError, match=r"\[1, 3\]"):
        make_adaptive_pruned_pmm(
            dom(100), dp.change_one_distance(), 0.2, 1.0, candidates=[deep], split_order=order
        )
    ok = ScheduleCandidate(1, 3, (1.0, 6.0, 6.0, 6.0))
    meas = make_adaptive_pruned_pmm(
        dom(100), dp.change_one_distance(), 0.2, 1.0, candidates=[ok], split_order=order
    )
    assert meas.map(1) == pytest.approx(1.2, rel=1e-12)


def test_reproducible_permute_and_flip_follows_its_own_law():
    """Inside runtime.reproducible the permute-and-flip selection samples permute-and-flip,
    not the softmax: its law on three scores, computed exactly, against 3000 seeded draws."""
    import itertools

    from scipy import stats

    n, d = 400, 3
    x = np.random.default_rng(1).uniform(size=(n, d))
    meas = make_adaptive_pruned_pmm(
        dom(n, d), dp.change_one_distance(), 0.5, 0.5, selection="permute_and_flip"
    )
    cands = standard_candidates(d, n, 0.5)
    from opendp_wasserstein.transformations import make_schedule_scores

    scores = np.array(make_schedule_scores(dom(n, d), dp.change_one_distance(), cands, 0.5)(x))
    scale = 2 * score_table(cands, d, n, 0.5).sensitivity / 0.5
    q = -scores / scale
    acc = np.exp(q - q.max())
    law = np.zeros(len(q))
    for perm in itertools.permutations(range(len(q))):  # exact: the first acceptance in the order
        reach = 1.0
        for a in perm:
            law[a] += reach * acc[a] / math.factorial(len(q))
            reach *= 1 - acc[a]
    runs = 3000
    chosen = _seeded_choices(meas, x, scores, runs)
    counts = np.bincount(chosen, minlength=len(q))
    keep = law * runs >= 5
    assert (
        stats.chisquare(
            counts[keep], law[keep] * runs * counts[keep].sum() / (law[keep] * runs).sum()
        ).pvalue
        > 1e-6
    )


@pytest.mark.parametrize("zcdp", [False, True])
def test_adaptive_release_drops_its_count_tree(zcdp):
    # the release owns its tree: no tree arrays outlive it, even while OpenDP's keep-alive
    # cycles still reach the tree object (no garbage collection needed to get the memory back)
    import gc

    from opendp_wasserstein.hierarchy.cells import unreleased_trees

    kw = {"output_measure": dp.zero_concentrated_divergence()} if zcdp else {}
    meas = make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=400, T=float),
        dp.change_one_distance(),
        0.1 if zcdp else 0.2,
        0.4 if zcdp else 0.8,
        **kw,
    )
    x = np.random.default_rng(0).uniform(size=(400, 2))
    gc.collect()
    before = unreleased_trees()
    gc.disable()
    try:
        for _ in range(3):
            assert meas(x).shape == (400, 2)
            assert unreleased_trees() == before
    finally:
        gc.enable()


def _permute_and_flip_law(q):
    """The exact law of permute-and-flip on log-acceptances ``q`` (the first accepted candidate
    of a uniformly random order, candidate ``a`` accepted with probability ``exp(q_a - max q)``)."""
    import itertools

    acc = np.exp(np.asarray(q) - np.max(q))
    law = np.zeros(len(q))
    for perm in itertools.permutations(range(len(q))):
        reach = 1.0
        for a in perm:
            law[a] += reach * acc[a] / math.factorial(len(q))
            reach *= 1 - acc[a]
    return law


def test_the_two_selection_laws_are_told_apart():
    """On scores where the laws differ (log-weights 0, -1, -1: softmax [0.576, 0.212, 0.212],
    permute-and-flip [0.677, 0.161, 0.161]), 3000 seeded draws of each selection step fit their
    own law and reject the other's (a chi-square noncentrality of about 140, so neither test can
    pass on the wrong law, nor on an argmax)."""
    n, d = 400, 3
    x = np.random.default_rng(1).uniform(size=(n, d))
    cands = standard_candidates(d, n, 0.5)
    assert len(cands) == 3
    scale = 2 * score_table(cands, d, n, 0.5).sensitivity / 0.5
    q = np.array([0.0, -1.0, -1.0])
    scores = -q * scale
    laws = {
        "exponential": softmax_probabilities(
            scores, 0.5, score_table(cands, d, n, 0.5).sensitivity
        ),
        "permute_and_flip": _permute_and_flip_law(q),
    }
    assert np.allclose(laws["exponential"], np.exp(q) / np.exp(q).sum())
    runs = 3000
    for kind, law in laws.items():
        meas = make_adaptive_pruned_pmm(
            dom(n, d), dp.change_one_distance(), 0.5, 0.5, selection=kind
        )
        chosen = _seeded_choices(meas, x, scores, runs, released=0)
        counts = np.bincount(chosen, minlength=3)
        other = laws["permute_and_flip" if kind == "exponential" else "exponential"]
        assert stats.chisquare(counts, law * runs).pvalue > 1e-6, kind
        assert stats.chisquare(counts, other * runs).pvalue < 1e-6, kind
