import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from scipy.special import logsumexp

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.tree_em_sampling import (
    _lse_convolve,
    binarize,
    sample_tree_em,
    tree_em_log_partition,
    tree_em_log_probability,
)
from opendp_wasserstein.public_candidates.trees import Tree, frt_tree
from tests.strategies import trees


def multisets(k, m):
    for comb in itertools.combinations_with_replacement(range(k), m):
        yield tuple(np.bincount(comb, minlength=k).tolist())


def exact_law(tree, counts, n, m, eps):
    """Brute force: P(S) proportional to exp(-eps n W1_T(A/n, S/m) / (2 diam)) over all
    multisets."""
    diam = tree.diameter()
    a = tree.subtree_sums(np.asarray(counts)) / n
    scores = {}
    for c in multisets(tree.k, m):
        b = tree.subtree_sums(np.asarray(c)) / m
        w1 = float(np.sum(tree.weight * np.abs(a - b)))
        scores[c] = -eps * n * w1 / (2 * diam)
    lz = logsumexp(list(scores.values()))
    return {c: float(np.exp(s - lz)) for c, s in scores.items()}, lz


TREES = [
    Tree([-1, 0, 0, 1, 1], [0, 1.0, 2.0, 0.5, 0.5]),  # 3 leaves, one internal level
    Tree([-1, 0, 0, 0, 0], [0, 1.0, 2.0, 3.0, 4.0]),  # a star: binarised with zero-weight nodes
    Tree([-1, 0, 1, 1, 2, 2, 2], [0, 3.0, 1.0, 2.0, 0.5, 0.25, 1.5]),  # unary root chain
    Tree([-1, 0, 1, 2, 2, 0, 5], [0, 1.0, 1.0, 0.5, 0.7, 2.0, 1.0]),  # unary chains inside
]


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_log_partition_matches_enumeration(tree, m):
    counts = np.arange(tree.k) + 1
    n = int(counts.sum())
    for eps in (0.3, 1.7, 40.0):
        _, lz = exact_law(tree, counts, n, m, eps)
        assert tree_em_log_partition(tree, counts, n, m, eps) == pytest.approx(
            lz, rel=1e-12, abs=1e-12
        )


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 4), st.floats(0.1, 5.0))
def test_log_probabilities_match_enumeration_on_random_trees(data, m, eps):
    tree = data.draw(trees(max_nodes=8, weights=st.floats(0.1, 3.0)), label="tree")
    counts = data.draw(arrays(np.int64, tree.k, elements=st.integers(0, 3)), label="counts")
    counts[0] += 1
    n = int(counts.sum())
    law, _ = exact_law(tree, counts, n, m, eps) if tree.k > 1 else ({(m,): 1.0}, 0.0)
    for c, p in law.items():
        assert tree_em_log_probability(tree, counts, n, m, eps, np.array(c)) == pytest.approx(
            np.log(p), abs=1e-10
        )


def chi_square_pvalue(law, observed, runs):
    keys = sorted(law, key=lambda c: -law[c])
    exp = np.array([law[c] * runs for c in keys])
    obs = np.array([observed.get(c, 0) for c in keys])
    assert sum(observed.values()) == obs.sum()  # nothing outside the support
    big = exp >= 5
    f_obs = np.append(obs[big], obs[~big].sum())
    f_exp = np.append(exp[big], exp[~big].sum())
    if f_exp[-1] == 0:
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
    return stats.chisquare(f_obs, f_exp * f_obs.sum() / f_exp.sum()).pvalue


@pytest.mark.parametrize("tree,m", [(TREES[0], 3), (TREES[1], 3), (TREES[2], 2), (TREES[3], 3)])
def test_sampler_matches_exact_distribution(tree, m):
    """Chi-square of the sampler against brute-force enumeration of all multisets."""
    counts = np.array([3, 0, 1, 2][: tree.k])
    n = int(counts.sum())
    eps = 2.0
    law, _ = exact_law(tree, counts, n, m, eps)
    rng = RandomSource(12345)
    runs = 20000
    observed: dict = {}
    for row in sample_tree_em(tree, counts, m, eps, rng, draws=runs).tolist():
        observed[tuple(row)] = observed.get(tuple(row), 0) + 1
    assert chi_square_pvalue(law, observed, runs) > 1e-4
    # the single-draw path is the same code with one draw
    single: dict = {}
    for _ in range(500):
        c = tuple(sample_tree_em(tree, counts, m, eps, rng).tolist())
        single[c] = single.get(c, 0) + 1
    assert chi_square_pvalue(law, single, 500) > 1e-4


def test_binarize_preserves_tree_w1():
    rng = np.random.default_rng(0)
    for tree in TREES + [frt_tree(rng.uniform(size=(40, 2)), seed=1)]:
        bt = binarize(tree)
        assert np.all((bt.left >= 0) == (bt.right >= 0))
        assert np.sum(bt.candidate >= 0) == tree.k
        assert sorted(bt.candidate[bt.candidate >= 0].tolist()) == list(range(tree.k))
        parent = bt.parent
        btree = Tree(parent, bt.weight)
        # the binary tree's leaves in id order are not the candidates' order: map them
        for _ in range(5):
            mu = rng.uniform(size=tree.k)
            nu = rng.uniform(size=tree.k)
            mu_b = np.zeros(btree.k)
            nu_b = np.zeros(btree.k)
            mu_b[btree.leaf_index[bt.leaf_of]] = mu
            nu_b[btree.leaf_index[bt.leaf_of]] = nu
            assert btree.w1(mu_b, nu_b) == pytest.approx(tree.w1(mu, nu), rel=1e-12)


def test_lse_convolve_matches_naive():
    rng = np.random.default_rng(1)
    for m in (0, 1, 5, 300):
        f = rng.normal(scale=50, size=(3, m + 1))
        g = rng.normal(scale=50, size=(3, m + 1))
        naive = np.array(
            [
                [logsumexp([f[b, t] + g[b, c - t] for t in range(c + 1)]) for c in range(m + 1)]
                for b in range(3)
            ]
        )
        np.testing.assert_allclose(_lse_convolve(f, g), naive, rtol=1e-12, atol=1e-9)


def test_extreme_privacy_levels_are_stable():
    rng = np.random.default_rng(2)
    pts = rng.uniform(size=(60, 2))
    tree = frt_tree(pts, seed=0)
    counts = rng.multinomial(10_000, rng.dirichlet(np.ones(60) * 0.3))
    # eps n = 10^8: the mode (the closest multiset in tree W1) is essentially certain
    s = sample_tree_em(tree, counts, 100, 1e4, RandomSource(0))
    assert s.sum() == 100
    a = tree.subtree_sums(counts) / counts.sum()
    score = np.sum(tree.weight * np.abs(a - tree.subtree_sums(s) / 100))
    from opendp_wasserstein.public_candidates.trees import closest_multiset

    best = closest_multiset(tree, a * 100, 100)
    assert score == pytest.approx(
        np.sum(tree.weight * np.abs(a - tree.subtree_sums(best) / 100)), rel=1e-9
    )
    # eps -> 0: (nearly) uniform over multisets, still finite
    s = sample_tree_em(tree, counts, 100, 1e-12, RandomSource(0))
    assert s.sum() == 100
    assert np.all(s >= 0)


def test_single_candidate_and_seed_reproducibility():
    assert sample_tree_em(Tree([-1], [0.0]), np.array([7]), 5, 1.0, RandomSource(0)).tolist() == [5]
    tree = TREES[0]
    a = sample_tree_em(tree, np.array([1, 2, 3]), 50, 1.0, RandomSource(3))
    b = sample_tree_em(tree, np.array([1, 2, 3]), 50, 1.0, RandomSource(3))
    assert np.array_equal(a, b)
    assert a.sum() == 50


def test_log_probability_rejects_bad_multisets():
    with pytest.raises(ValueError, match="multiset"):
        tree_em_log_probability(TREES[0], np.array([1, 1, 1]), 3, 2, 1.0, np.array([1, 0, 0]))
