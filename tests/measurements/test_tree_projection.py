import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from opendp.core import function_eval
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import (
    make_tree_count_laplace,
    make_tree_multiset,
    make_tree_projection,
    then_tree_projection,
)
from opendp_wasserstein.measurements._tree_count_noise import NoisyTreeCounts
from opendp_wasserstein.public_candidates.trees import Tree, closest_multiset, frt_tree
from opendp_wasserstein.runtime import reproducible, sampler
from opendp_wasserstein.transformations import (
    candidate_index_domain,
    make_tree_counts,
    tree_counts_domain,
    tree_level_scales,
)

# leaves in id order: node 2 (depth 1) = candidate 0, nodes 3, 4 (depth 2) = candidates 1, 2
TREE = Tree([-1, 0, 0, 1, 1], [0, 2.0, 3.0, 0.5, 0.5])
# a balanced binary tree: leaves 3, 4, 5, 6 at depth 2
BAL = Tree([-1, 0, 0, 1, 1, 2, 2], [0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0])
SCALES = [5.0, 2.0, 8.0]


def idx_dom(k=3, n=None):
    return candidate_index_domain(k, n)


def exact(v: Fraction) -> float:
    return round_up(v)


def l1s(a, b, tree, scales):
    d = Fraction(0)
    for v in range(tree.num_nodes):
        d += Fraction(int(abs(a[v] - b[v]))) / Fraction(scales[tree.depth[v]])
    return d


# -- the tree count transformation ------------------------------------------------------------


def test_counts_are_exact():
    t = make_tree_counts(idx_dom(3, 6), dp.symmetric_distance(), TREE, SCALES)
    tc = t(np.array([0, 1, 1, 2, 2, 2]))
    assert tc.counts.tolist() == [6, 5, 1, 2, 3]
    assert tc.tree == TREE
    assert tc.counts.dtype == np.int64


def test_maps_sized_unsized_change_one():
    levels = Fraction(1, 2) + Fraction(1, 8)
    sym = make_tree_counts(idx_dom(3, 6), dp.symmetric_distance(), TREE, SCALES)
    assert sym.map(2) == exact(2 * levels)
    assert sym.check(2, exact(2 * levels))
    assert not sym.check(2, math.nextafter(exact(2 * levels), 0))
    unsized = make_tree_counts(idx_dom(3), dp.symmetric_distance(), TREE, SCALES)
    assert unsized.map(1) == exact(Fraction(1, 5) + levels)
    assert unsized.map(2) == exact(2 * (Fraction(1, 5) + levels))
    one = make_tree_counts(idx_dom(3, 6), dp.change_one_distance(), TREE, SCALES)
    assert one.map(1) == exact(2 * levels)
    assert one.map(3) == exact(6 * levels)


def test_sensitivity_is_attained_and_never_exceeded():
    """Every record is in at most one node per depth: a replacement moves each level by <= 2.
    Between two depth-2 leaves on opposite sides of the root the bound is attained."""
    t = make_tree_counts(idx_dom(4, 5), dp.symmetric_distance(), BAL, SCALES)
    x = np.array([0, 0, 1, 2, 3])
    worst = Fraction(0)
    for i in range(5):
        for new in range(4):
            xn = x.copy()
            xn[i] = new
            d = l1s(t(x).counts, t(xn).counts, BAL, SCALES)
            assert exact(d) <= t.map(2)
            worst = max(worst, d)
    assert exact(worst) == t.map(2)
    # leaves at different depths: moving candidate 1 (depth 2) to candidate 0 (depth 1)
    u = make_tree_counts(idx_dom(3, 2), dp.symmetric_distance(), TREE, SCALES)
    d = l1s(u(np.array([1, 2])).counts, u(np.array([0, 2])).counts, TREE, SCALES)
    assert d == Fraction(2, 2) + Fraction(1, 8)
    assert exact(d) <= u.map(2)


def test_unsized_adding_a_record_moves_every_level_once():
    t = make_tree_counts(idx_dom(4), dp.symmetric_distance(), BAL, SCALES)
    d = l1s(t(np.array([0, 1])).counts, t(np.array([0, 1, 3])).counts, BAL, SCALES)
    assert exact(d) == t.map(1)


def test_counts_domain_and_metric_identifiers():
    t = make_tree_counts(idx_dom(3, 6), dp.symmetric_distance(), TREE, SCALES)
    assert TREE.digest in str(t.output_domain)
    assert "size=6" in str(t.output_domain)
    assert "(5.0, 2.0, 8.0)" in str(t.output_metric)
    assert str(t.output_domain) == str(tree_counts_domain(TREE, 6))


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda: make_tree_counts(idx_dom(4, 6), dp.symmetric_distance(), TREE, SCALES),
            "4 candidates",
        ),
        (
            lambda: make_tree_counts(idx_dom(3, 6), dp.symmetric_distance(), TREE, [1.0, 2.0]),
            "scales",
        ),
        (lambda: make_tree_counts(idx_dom(3, 6), dp.symmetric_distance(), "tree", SCALES), "tree"),
        (
            lambda: make_tree_counts(idx_dom(3), dp.change_one_distance(), TREE, SCALES),
            "input_metric",
        ),
        (
            lambda: make_tree_counts(
                dp.vector_domain(dp.atom_domain(T="i64")), dp.symmetric_distance(), TREE, SCALES
            ),
            "bounds",
        ),
        (
            lambda: make_tree_counts(
                dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance(), TREE, SCALES
            ),
            "candidate indices",
        ),
    ],
)
def test_tree_counts_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# -- the schedule ---------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1.0, 0.3, 2.5, 0.7, 0.01, 13.0])
@pytest.mark.parametrize("sized", [True, False])
def test_schedule_spends_the_budget_exactly(eps, sized):
    rng = np.random.default_rng(0)
    for tree in (TREE, BAL, frt_tree(rng.uniform(size=(300, 2)), seed=1)):
        s = tree_level_scales(tree, eps, sized=sized)
        assert len(s) == tree.height + 1
        assert all(v > 0 for v in s)
        charged = s if not sized else s[1:]
        budget = 2 * sum(Fraction(1) / Fraction(v) for v in charged)
        assert budget <= Fraction(eps)
        assert round_up(budget) == eps


def test_schedule_is_inverse_square_root_of_level_weight():
    s = tree_level_scales(TREE, 1.0)
    W1, W2 = 2.0 + 3.0, 0.5 + 0.5  # total edge weight at depths 1 and 2
    assert s[1] / s[2] == pytest.approx(math.sqrt(W2 / W1), rel=1e-9)
    s_un = tree_level_scales(TREE, 1.0, sized=False)
    W0 = np.mean([3.0, 2.5, 2.5])  # mean root-to-leaf distance
    assert s_un[0] / s_un[1] == pytest.approx(math.sqrt(W1 / W0), rel=1e-9)


# -- the discrete Laplace measurement and the post-processor -----------------------------------


def test_count_laplace_map_and_noise_law():
    star = Tree([-1] + [0] * 3000, [0.0] + [1.0] * 3000)
    t = make_tree_counts(idx_dom(3000, 3000), dp.symmetric_distance(), star, [1.0, 1.5])
    m = make_tree_count_laplace(t.output_domain, t.output_metric)
    assert m.map(0.75) == 0.75
    assert (t >> m).map(2) == t.map(2)
    x = np.arange(3000)
    with reproducible(3):
        rel = m(t(x))
    assert isinstance(rel, NoisyTreeCounts)
    noise = rel.noisy[1:] - 1
    # chi-square against the exact pmf of LapZ(1.5): P(z) = tanh(1/(2 s)) exp(-|z|/s)
    s = 1.5
    zs = np.arange(-6, 7)
    pmf = math.tanh(1 / (2 * s)) * np.exp(-np.abs(zs) / s)
    obs = np.array([np.sum(noise == z) for z in zs] + [np.sum(np.abs(noise) > 6)])
    exp_ = np.append(pmf, 1 - pmf.sum()) * noise.size
    assert stats.chisquare(obs, exp_).pvalue > 1e-4
    # seeded: reproducible
    with reproducible(3):
        assert np.array_equal(m(t(x)).noisy, rel.noisy)


def test_exact_privacy_ratio_of_noisy_counts():
    """The exact pmf ratio of the released noisy counts on neighbours is at most e^eps with
    the projection's schedule, and attains it.  The noise is independent across nodes, so the
    joint log-ratio is the sum of the nodes' log-ratios, each maximised over its own grid."""
    eps = 1.0
    scales = tree_level_scales(BAL, eps)
    t = make_tree_counts(idx_dom(4, 3), dp.symmetric_distance(), BAL, scales)
    sig = np.asarray(scales)[BAL.depth]
    grid = np.arange(-30, 31)

    def log_pmf(y, centre, s):  # LapZ(s) centred at the count: log(tanh(1/(2s))) - |y - c|/s
        return np.log(np.tanh(1 / (2 * s))) - np.abs(y - centre) / s

    x = np.array([0, 1, 3])
    worst_all = 0.0
    for i in range(3):
        for new in range(4):
            xn = x.copy()
            xn[i] = new
            a, b = t(x).counts, t(xn).counts
            worst = sum(
                float(np.max(np.abs(log_pmf(grid, a[v], sig[v]) - log_pmf(grid, b[v], sig[v]))))
                for v in range(BAL.num_nodes)
            )
            assert worst <= eps * (1 + 1e-12)
            worst_all = max(worst_all, worst)
    assert worst_all == pytest.approx(eps, rel=1e-12)


def _optimal_multisets(tree, targets, m):
    """Every size-``m`` multiset on the leaves at the minimal cost (ties included), by brute
    force."""
    from itertools import product

    from opendp_wasserstein.public_candidates.trees import multiset_cost

    k = tree.leaves.size
    sets = [np.array(c) for c in product(range(m + 1), repeat=k) if sum(c) == m]
    costs = [multiset_cost(tree, targets, c) for c in sets]
    best = min(costs)
    return {
        tuple(c.tolist())
        for c, v in zip(sets, costs, strict=True)
        if math.isclose(v, best, rel_tol=0, abs_tol=1e-12)
    }


def _releases(post, noisy, seeds=range(30)):
    """The releases of ``post`` under 30 reproducible runs (one set of coins per seed)."""
    out = set()
    for seed in seeds:
        with reproducible(seed):
            out.add(tuple(function_eval(post, noisy, TI="ExtrinsicObject").tolist()))
    return out


def test_multiset_postprocessor():
    # the release is an optimal multiset for the clamped noisy counts rescaled by n (public n:
    # 10, not the noisy 99); tied optima are told apart by coins, not by the leaves' ids
    noisy = NoisyTreeCounts(TREE, np.array([99, 7, 4, -2, 6]), (1.0, 1.0, 1.0))
    sized = _optimal_multisets(TREE, np.array([99, 7, 4, 0, 6]) * 4 / 10, 4)
    assert sized == {(1, 0, 3)}
    assert _releases(make_tree_multiset(tree_counts_domain(TREE, 10), 4), noisy) == sized
    post_unsized = make_tree_multiset(tree_counts_domain(TREE, None), 4)
    unsized = _optimal_multisets(TREE, np.array([99, 7, 4, 0, 6]) * 4 / 99, 4)
    assert unsized == {(1, 0, 3), (1, 1, 2), (1, 2, 1)}
    assert tuple(closest_multiset(TREE, np.array([99, 7, 4, 0, 6]) * 4 / 99, 4).tolist()) in unsized
    seen = _releases(post_unsized, noisy)
    assert seen <= unsized
    assert len(seen) >= 2
    zero = NoisyTreeCounts(TREE, np.array([-3, -1, -1, -1, -1]), (1.0, 1.0, 1.0))
    assert function_eval(post_unsized, zero, TI="ExtrinsicObject").sum() == 4


# -- the whole mechanism ----------------------------------------------------------------------


def dom(n=200, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


CAND = np.random.default_rng(5).uniform(size=(40, 2))


@pytest.mark.parametrize("eps", [1.0, 0.3, 2.5, 0.7])
def test_map_is_exact(eps):
    tree = frt_tree(CAND, seed=0)
    sym = make_tree_projection(dom(), dp.symmetric_distance(), CAND, 20, eps, tree=tree)
    assert sym.map(2) == eps
    assert sym.check(2, eps)
    assert not sym.check(2, math.nextafter(eps, 0))
    one = make_tree_projection(dom(), dp.change_one_distance(), CAND, 20, eps, tree=tree)
    assert one.map(1) == eps
    assert one.check(1, eps)
    assert not one.check(1, math.nextafter(eps, 0))
    unsized = make_tree_projection(dom(None), dp.symmetric_distance(), CAND, 20, eps, tree=tree)
    s = tree_level_scales(tree, eps, sized=False)
    assert unsized.map(2) == eps
    assert unsized.map(1) == round_up(sum(Fraction(1) / Fraction(v) for v in s))
    assert unsized.check(2, eps)
    assert not unsized.check(2, math.nextafter(eps, 0))


def test_release_shape_seed_and_backends():
    rng = np.random.default_rng(0)
    x = rng.normal(0.5, 0.2, size=(200, 2))
    with reproducible(4):
        out = make_tree_projection(dom(), dp.symmetric_distance(), CAND, 30, 1.0)(x)
    with reproducible(4):
        again = make_tree_projection(dom(), dp.symmetric_distance(), CAND, 30, 1.0)(x)
    assert out.dtype == np.int64
    assert out.shape == (40,)
    assert out.sum() == 30
    assert np.all(out >= 0)
    assert np.array_equal(out, again)
    secure = make_tree_projection(dom(), dp.symmetric_distance(), CAND, 30, 1.0)
    assert len({tuple(secure(x).tolist()) for _ in range(5)}) > 1
    od = make_tree_projection(dom(), dp.symmetric_distance(), CAND, 30, 1.0)
    with sampler("opendp"):
        assert od(x).sum() == 30
    unsized = make_tree_projection(dom(None), dp.symmetric_distance(), CAND, 30, 1.0)
    assert unsized(x[:50]).sum() == 30


def test_high_epsilon_recovers_the_histogram():
    rng = np.random.default_rng(1)
    on = rng.choice(40, 4, replace=False)
    x = CAND[np.repeat(on, [40, 30, 20, 10])] + 1e-5
    with reproducible(2):
        out = make_tree_projection(dom(100), dp.symmetric_distance(), CAND, 10, 1e6)(x)
    expected = np.zeros(40, dtype=np.int64)
    expected[on] = [4, 3, 2, 1]
    assert np.array_equal(out, expected)


def test_then_partial():
    m = (dom(), dp.symmetric_distance()) >> then_tree_projection(
        CAND, 10, 1.0, tree=frt_tree(CAND, seed=0)
    )
    assert m.map(2) == 1.0


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"m": 0}, "m must be >= 1"),
        ({"candidates": np.zeros((0, 2))}, "k >= 1"),
        ({"candidates": [[0.0, 0.0], [0.0, np.nan]]}, "finite"),
        ({"candidates": [[0.0, 0.0], [0.0, 0.0]]}, "distinct"),
        ({"candidates": [[0.0], [1.0]]}, "2 columns"),
        ({"tree": TREE}, "40 candidates but the tree has 3 leaves"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"metric": "cosine"}, "metric"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"candidates": CAND, "m": 5, "epsilon": 1.0} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_tree_projection(dom(), dp.symmetric_distance(), **args)


def test_change_one_needs_a_size():
    with pytest.raises(ValueError, match="input_metric"):
        make_tree_projection(dom(None), dp.change_one_distance(), CAND, 5, 1.0)
