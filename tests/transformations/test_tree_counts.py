"""The l2sq output metric of ``make_tree_counts``: the exact squared-l2 sensitivity on a public
tree, checked against brute force over all small data sets."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.public_candidates.trees import Tree, quadtree
from opendp_wasserstein.schedules.tree import tree_pair_profiles
from opendp_wasserstein.transformations import candidate_index_domain, make_tree_counts
from opendp_wasserstein.transformations._tree_counts import tree_counts_l2sq_stability

# leaves at depths 1, 2, 3, 3 (a compressed tree): the deepest pair is below node 3
UNEVEN = Tree(parent=[-1, 0, 0, 1, 1, 3, 3], weight=[0, 1, 2, 1, 1, 0.5, 0.5])
# every leaf at depth 2, the root's children both deep: the simple per-level bound is exact
BALANCED = Tree(parent=[-1, 0, 0, 1, 1, 2, 2], weight=[0, 1, 1, 0.5, 0.5, 0.5, 0.5])
SCALES = {UNEVEN: [1.5, 2.0, 3.0, 7.0], BALANCED: [1.5, 2.0, 3.0]}


def exact(value: Fraction) -> float:
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


def l2sq(tree: Tree, scales: list[float], a: np.ndarray, b: np.ndarray) -> Fraction:
    diff = tree.subtree_sums(np.bincount(a, minlength=tree.k)) - tree.subtree_sums(
        np.bincount(b, minlength=tree.k)
    )
    return sum(
        (
            Fraction(int(diff[v]) ** 2) / Fraction(scales[tree.depth[v]]) ** 2
            for v in range(tree.num_nodes)
        ),
        Fraction(0),
    )


def multisets(k: int, n: int) -> list[np.ndarray]:
    return [
        np.array(c, dtype=np.int64) for c in itertools.combinations_with_replacement(range(k), n)
    ]


def changed_rows(a: np.ndarray, b: np.ndarray, k: int) -> int:
    """Change-one distance of two equal-size multisets: rows not in common."""
    return int(a.size - np.minimum(np.bincount(a, minlength=k), np.bincount(b, minlength=k)).sum())


@pytest.mark.parametrize("tree", [UNEVEN, BALANCED], ids=["uneven", "balanced"])
def test_sized_map_equals_brute_force(tree: Tree) -> None:
    scales = SCALES[tree]
    n = 3
    sets = multisets(tree.k, n)
    best = {m: Fraction(0) for m in range(n + 1)}
    for a, b in itertools.product(sets, repeat=2):
        m = changed_rows(a, b, tree.k)
        best[m] = max(best[m], l2sq(tree, scales, a, b))
    sym = make_tree_counts(
        candidate_index_domain(tree.k, n),
        dp.symmetric_distance(),
        tree,
        scales,
        output_metric="l2sq",
    )
    co = make_tree_counts(
        candidate_index_domain(tree.k, n),
        dp.change_one_distance(),
        tree,
        scales,
        output_metric="l2sq",
    )
    for m in range(1, n + 1):
        worst = max(best[i] for i in range(m + 1))
        assert co.map(m) == exact(worst), m
        assert sym.map(2 * m) == exact(worst) == sym.map(2 * m + 1), m
        assert co.check(m, exact(worst))
        assert not co.check(m, math.nextafter(exact(worst), 0))


@pytest.mark.parametrize("tree", [UNEVEN, BALANCED], ids=["uneven", "balanced"])
def test_unsized_map_equals_brute_force(tree: Tree) -> None:
    scales = SCALES[tree]
    sets = [s for n in range(4) for s in multisets(tree.k, n)]
    best = {k: Fraction(0) for k in range(7)}
    for a, b in itertools.product(sets, repeat=2):
        ca, cb = np.bincount(a, minlength=tree.k), np.bincount(b, minlength=tree.k)
        k = int(np.abs(ca - cb).sum())
        best[k] = max(best[k], l2sq(tree, scales, a, b))
    t = make_tree_counts(
        candidate_index_domain(tree.k, None),
        dp.symmetric_distance(),
        tree,
        scales,
        output_metric="l2sq",
    )
    for k in (1, 2, 3):
        worst = max(best[i] for i in range(k + 1))
        assert t.map(k) == exact(worst), k


def test_uneven_tree_is_below_the_per_level_bound() -> None:
    # the exact map never charges all three levels twice: no two depth-3 leaves differ at level 1
    scales = SCALES[UNEVEN]
    t = make_tree_counts(
        candidate_index_domain(UNEVEN.k, 5),
        dp.change_one_distance(),
        UNEVEN,
        scales,
        output_metric="l2sq",
    )
    per_level = 2 * sum(Fraction(1) / Fraction(s) ** 2 for s in scales[1:])
    assert Fraction(t.map(1)) < per_level


def test_pair_profiles() -> None:
    assert tree_pair_profiles(UNEVEN).tolist() == [[3, 1, 0], [3, 2, 1], [3, 3, 2]]
    assert tree_pair_profiles(BALANCED).tolist() == [[2, 2, 0]]
    assert tree_pair_profiles(Tree(parent=[-1], weight=[0])).shape == (0, 3)
    assert tree_pair_profiles(Tree(parent=[-1, 0], weight=[0, 1])).shape == (0, 3)


def test_single_leaf_tree() -> None:
    tree = Tree(parent=[-1], weight=[0])
    sized = tree_counts_l2sq_stability("change_one", 4, tree, (2.0,))
    unsized = tree_counts_l2sq_stability("symmetric", None, tree, (2.0,))
    assert sized(3) == 0.0
    assert unsized(3) == 9 / 4


def test_quadtree_profiles_dominate_every_pair() -> None:
    """On a random quadtree, the pair value from the profiles is the max over all leaf pairs."""
    rng = np.random.default_rng(0)
    tree = quadtree(rng.uniform(size=(25, 2)), bounds=(0.0, 1.0), seed=1)
    scales = [1.0 + j for j in range(tree.height + 1)]
    t = tree_counts_l2sq_stability("change_one", 100, tree, tuple(scales))
    best = Fraction(0)
    for p, q in itertools.combinations(range(tree.k), 2):
        best = max(best, l2sq(tree, scales, np.array([p]), np.array([q])))
    assert t(1) == exact(best)


def test_bad_output_metric() -> None:
    with pytest.raises(ValueError, match="output_metric"):
        make_tree_counts(
            candidate_index_domain(4, 4),
            dp.symmetric_distance(),
            BALANCED,
            [1.0] * 3,
            output_metric="L2",
        )
