import itertools
import math

import numpy as np
import ot
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.trees import (
    Tree,
    closest_multiset,
    distortion,
    frt_tree,
    multiset_cost,
    quadtree,
    resolve_tree,
    tree_w1,
)
from opendp_wasserstein.runtime import reproducible
from tests.strategies import float_vectors, trees

CDIST = {"l1": "cityblock", "l2": "euclidean", "linf": "chebyshev"}


def example_tree():
    #        0
    #      /   \
    #     1 (1)  2 (2)      leaves in id order: 2, 3, 4 -> candidates 0, 1, 2
    #    / \
    #  3(.5) 4(.5)
    return Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])


def brute_leaf_distance(tree, i, j):
    u, v = int(tree.leaves[i]), int(tree.leaves[j])
    anc = {}
    d, x = 0.0, u
    while x != -1:
        anc[x] = d
        d += tree.weight[x] if x != 0 else 0.0
        x = int(tree.parent[x])
    d, x = 0.0, v
    while x not in anc:
        d += tree.weight[x]
        x = int(tree.parent[x])
    return anc[x] + d


# -- the Tree type -------------------------------------------------------------------------


def test_basic_facts():
    t = example_tree()
    assert t.k == 3
    assert t.num_nodes == 5
    assert t.height == 2
    assert t.leaves.tolist() == [2, 3, 4]
    assert t.depth.tolist() == [0, 1, 1, 2, 2]
    assert t.children(1).tolist() == [3, 4]
    assert t.diameter() == 3.5
    assert t.leaf_distance(0, 1) == 3.5
    assert t.leaf_distance(1, 2) == 1.0
    assert t.leaf_distance(2, 2) == 0.0
    assert t.leaf_distance([0, 1], [2, 2]).tolist() == [3.5, 1.0]
    assert t.subtree_sums([1, 2, 3]).tolist() == [6, 5, 1, 2, 3]
    assert "digest=" in repr(t)


def test_equality_hash_and_immutability():
    a, b = example_tree(), example_tree()
    assert a == b
    assert hash(a) == hash(b)
    assert a.digest == b.digest
    c = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.75])
    assert a != c
    assert a.digest != c.digest
    with pytest.raises(ValueError):
        a.weight[1] = 5.0
    assert Tree([-1, 0, 0], [7.0, 1.0, 1.0]).weight[0] == 0.0  # the root's weight is ignored


def test_single_node_tree():
    t = Tree([-1], [0.0])
    assert t.k == 1
    assert t.diameter() == 0.0
    assert t.leaf_distance(0, 0) == 0.0
    assert closest_multiset(t, [3.0], 4).tolist() == [4]


@pytest.mark.parametrize(
    "parent,weight,match",
    [
        ([0, 0], [0, 1], "parent\\[0\\]"),
        ([-1, 5], [0, 1], "node ids"),
        ([-1, -1], [0, 1], "node ids"),
        ([-1, 1], [0, 1], "own parent"),
        ([-1, 2, 1], [0, 1, 1], "cycle"),
        ([-1, 0], [0, -1.0], "weight"),
        ([-1, 0], [0, float("nan")], "weight"),
        ([-1, 0], [0, 1, 2], "one entry per node"),
        ([], [], "non-empty"),
    ],
)
def test_bad_trees(parent, weight, match):
    with pytest.raises(ValueError, match=match):
        Tree(parent, weight)


@settings(max_examples=60, deadline=None)
@given(trees(max_nodes=12))
def test_distances_and_diameter_match_brute_force(t):
    pairs = list(itertools.product(range(t.k), repeat=2))
    brute = np.array([brute_leaf_distance(t, i, j) for i, j in pairs])
    got = t.leaf_distance([i for i, _ in pairs], [j for _, j in pairs])
    np.testing.assert_allclose(got, brute, rtol=1e-12)
    assert t.diameter() == pytest.approx(brute.max(), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_tree_w1_closed_form_is_optimal_transport(data):
    """sum_v w_v |mu(T_v) - nu(T_v)| equals the OT distance with the tree's leaf metric."""
    t = data.draw(trees(max_nodes=10), label="tree")
    mu = data.draw(float_vectors(t.k, 0.0, 1.0), label="mu") + 1e-3
    nu = data.draw(float_vectors(t.k, 0.0, 1.0), label="nu")
    assume(nu.sum() > 0)
    i, j = np.meshgrid(np.arange(t.k), np.arange(t.k), indexing="ij")
    M = t.leaf_distance(i.ravel(), j.ravel()).reshape(t.k, t.k)
    expected = ot.emd2(mu / mu.sum(), nu / nu.sum(), M)
    assert tree_w1(t, mu, nu) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert t.w1(mu, mu) == 0.0


def test_tree_w1_errors():
    t = example_tree()
    with pytest.raises(ValueError, match="mu"):
        tree_w1(t, [1, 2], [1, 1, 1])
    with pytest.raises(ValueError, match="nu"):
        tree_w1(t, [1, 1, 1], [-1, 1, 1])


# -- builders: domination, distortion, determinism ----------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 60).flatmap(
        lambda k: st.integers(1, 5).flatmap(
            # lattice points at several scales: near-duplicates and ties in the carving
            lambda p: arrays(
                np.float64, (k, p), elements=st.integers(0, 1000).map(lambda v: v / 1000)
            )
        )
    ),
    st.sampled_from([1.0, 1e-3, 1e3]),
    st.sampled_from(["l1", "l2", "linf"]),
    st.sampled_from(["frt", "quadtree", "precomputed"]),
    st.integers(0, 2**32),  # the builder's own (public) randomness
)
def test_trees_dominate_the_candidate_metric(lattice, scale, metric, builder, seed):
    pts = np.unique(lattice * scale, axis=0)
    if pts.shape[0] < 2:
        return
    D = cdist(pts, pts, CDIST[metric])
    if builder == "frt":
        t = frt_tree(pts, metric, seed=seed)
    elif builder == "precomputed":
        t = frt_tree(D, "precomputed", seed=seed)
    else:
        lo, hi = pts.min(axis=0), pts.max(axis=0) + 1.0
        t = quadtree(pts, {"lower": lo, "upper": hi}, seed=seed, metric=metric)
    assert t.k == pts.shape[0]
    i, j = np.triu_indices(pts.shape[0], 1)
    dt = t.leaf_distance(i, j)
    assert np.all(dt >= D[i, j])
    # compressed: no internal node with a single child
    assert not np.any(t.degree == 1)


@pytest.mark.parametrize("builder", ["frt", "quadtree"])
def test_distortion_is_measured_and_logarithmic(builder):
    """Mean d_T / d over pairs of uniform points (the benchmark prints the full table)."""
    rng = np.random.default_rng(0)
    results = []
    for k in (100, 1000):
        pts = rng.uniform(size=(k, 2))
        t = frt_tree(pts, "l2", seed=1) if builder == "frt" else quadtree(pts, (0.0, 1.0), seed=1)
        r = distortion(t, pts, "l2", pairs=5000, seed=0)
        assert r["min"] >= 1.0
        results.append(r["mean"])
        print(
            f"{builder} k={k}: mean distortion {r['mean']:.2f} (median {r['median']:.2f}, "
            f"max {r['max']:.1f})"
        )
    # O(log k) in expectation: a generous constant
    assert all(1.0 <= mean <= 4 * math.log2(1000) for mean in results)


def test_frt_distortion_averaged_over_trees_is_moderate():
    rng = np.random.default_rng(1)
    pts = rng.uniform(size=(200, 3))
    D = cdist(pts, pts)
    i, j = np.triu_indices(200, 1)
    ratios = np.mean(
        [frt_tree(pts, seed=s).leaf_distance(i, j) / D[i, j] for s in range(10)], axis=0
    )
    assert 1.0 <= ratios.mean() < 15.0


def test_seeds_reproduce_and_secure_default_differs():
    pts = np.random.default_rng(0).uniform(size=(300, 2))
    assert frt_tree(pts, seed=5) == frt_tree(pts, seed=5)
    assert frt_tree(pts, seed=5) != frt_tree(pts, seed=6)
    assert frt_tree(pts, seed=RandomSource(5)) == frt_tree(pts, seed=5)
    assert frt_tree(pts) != frt_tree(pts)
    assert quadtree(pts, (0, 1), seed=2) == quadtree(pts, (0, 1), seed=2)
    assert quadtree(pts, (0, 1)) != quadtree(pts, (0, 1))


def test_leaf_order_is_candidate_order():
    pts = np.array([[0.0, 0.0], [10.0, 0.0], [0.1, 0.0], [10.1, 0.0]])
    for t in (frt_tree(pts, seed=0), quadtree(pts, (0.0, 11.0), seed=0)):
        # candidates 0 and 2 (and 1 and 3) are close: their tree distance is the small one
        assert t.leaf_distance(0, 2) < t.leaf_distance(0, 1)
        assert t.leaf_distance(1, 3) < t.leaf_distance(1, 2)
        assert t.leaves.tolist() == sorted(t.leaves.tolist())
        assert np.all(t.parent[1:] < np.arange(1, t.num_nodes))  # parents come first


def test_single_point_builders():
    assert frt_tree([[1.0, 2.0]], seed=0).k == 1
    assert quadtree([[0.5]], (0.0, 1.0), seed=0).k == 1


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: frt_tree(np.zeros((0, 2))), "k >= 1"),
        (lambda: frt_tree([[0.0, 1.0], [0.0, 1.0]]), "distinct"),
        (lambda: frt_tree([[0.0, np.nan], [0.0, 1.0]]), "finite"),
        (lambda: frt_tree([0.0, 1.0]), "2-dimensional"),
        (lambda: frt_tree([[0.0], [1.0]], metric="cosine"), "metric"),
        (lambda: frt_tree([[1.0, 1.0], [1.0, 0.0]], metric="precomputed"), "zero diagonal"),
        (lambda: frt_tree([[0.0, 1.0], [2.0, 0.0]], metric="precomputed"), "symmetric"),
        (lambda: frt_tree([[0.0, 0.0], [0.0, 0.0]], metric="precomputed"), "positive"),
        (lambda: quadtree([[0.5], [2.0]], (0.0, 1.0)), "inside bounds"),
        (lambda: quadtree([[0.5], [0.7]], (1.0, 0.0)), "bounds"),
        (lambda: quadtree([[0.5], [0.7]], (0.0, 1.0), metric="l3"), "metric"),
    ],
)
def test_builder_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_resolve_tree_checks_leaf_count():
    pts = np.random.default_rng(0).uniform(size=(5, 2))
    with pytest.raises(ValueError, match="5 candidates but the tree has 3 leaves"):
        resolve_tree(example_tree(), pts, "l2")
    with pytest.raises(TypeError, match="tree"):
        resolve_tree("not a tree", pts, "l2")
    with reproducible(3):
        a = resolve_tree(None, pts, "l2")
    with reproducible(3):
        assert resolve_tree(None, pts, "l2") == a


# -- the closest multiset --------------------------------------------------------------------


def brute_closest(tree, targets, m):
    best = math.inf
    for comb in itertools.combinations_with_replacement(range(tree.k), m):
        best = min(best, multiset_cost(tree, targets, np.bincount(comb, minlength=tree.k)))
    return best


@settings(max_examples=150, deadline=None)
@given(st.data(), st.integers(1, 5), st.booleans())
def test_closest_multiset_is_optimal(data, m, integral):
    t = data.draw(trees(max_nodes=9), label="tree")
    targets = data.draw(float_vectors(t.num_nodes, 0.0, m + 2.0), label="targets")
    if integral:
        targets = np.round(targets)
    c = closest_multiset(t, targets, m)
    assert c.dtype == np.int64
    assert c.sum() == m
    assert np.all(c >= 0)
    assert multiset_cost(t, targets, c) <= brute_closest(t, targets, m) + 1e-9


def test_closest_multiset_recovers_consistent_targets():
    rng = np.random.default_rng(3)
    pts = rng.uniform(size=(400, 2))
    t = frt_tree(pts, seed=1)
    truth = rng.multinomial(1000, rng.dirichlet(np.ones(400)))
    c = closest_multiset(t, t.subtree_sums(truth).astype(float), 1000)
    assert np.array_equal(c, truth)


def test_closest_multiset_errors():
    t = example_tree()
    with pytest.raises(ValueError, match="targets"):
        closest_multiset(t, [1.0, 2.0], 3)
    with pytest.raises(ValueError, match="targets"):
        closest_multiset(t, [1.0, -2.0, 0, 0, 0], 3)
    with pytest.raises(ValueError, match="m"):
        closest_multiset(t, [1.0] * 5, 0)
