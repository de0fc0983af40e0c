"""Tests of the synthesis step (:mod:`opendp_wasserstein.synthesis`): placement and shuffles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.box import as_box
from opendp_wasserstein.consistency import LeafMasses
from opendp_wasserstein.node_randomness import KeyedNodeNoise
from opendp_wasserstein.synthesis import place_points, shuffle_order, shuffled_labels

P_MIN = 1e-4


class CoarseSource(RandomSource):
    """A seeded source whose words keep only their top 3 random bits: most keys tie."""

    def uint64(self, size):  # type: ignore[no-untyped-def, override]
        return super().uint64(size) & np.uint64(0xE000_0000_0000_0000)


@pytest.mark.parametrize("source", [RandomSource(3), CoarseSource(4)], ids=["seeded", "ties"])
def test_shuffle_order_is_uniform(source):
    k, runs = 4, 12_000
    perms = {p: i for i, p in enumerate(itertools.permutations(range(k)))}
    counts = np.zeros(len(perms))
    for _ in range(runs):
        counts[perms[tuple(shuffle_order(source, k).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > P_MIN


def test_shuffle_order_is_a_permutation_and_labels_keep_counts():
    rng = RandomSource(5)
    for k in (0, 1, 2, 1000, 70_001):
        assert np.array_equal(np.sort(shuffle_order(rng, k)), np.arange(k))
    masses = np.array([3, 1, 0, 5])
    lab = shuffled_labels(CoarseSource(6), masses)
    assert np.bincount(lab, minlength=4).tolist() == masses.tolist()


def test_shuffled_labels_positions_are_uniform():
    # where label 1 (mass 1) lands among 5 rows: uniform
    counts = np.zeros(5)
    src = CoarseSource(8)
    for _ in range(5000):
        counts[int(np.flatnonzero(shuffled_labels(src, np.array([2, 1, 2])) == 1)[0])] += 1
    assert stats.chisquare(counts).pvalue > P_MIN


def leaves_of(cells, masses, depth):  # type: ignore[no-untyped-def]
    return LeafMasses(np.asarray(cells), np.asarray(masses), depth, 0, (1,), (1.0,) * (depth + 1))


def test_center_placement_is_the_leaf_centres_in_random_order():
    leaves = leaves_of([[0, 1], [3, 2]], [2, 3], 4)  # 2 bits per coordinate
    box = as_box({"lower": [0, 10], "upper": [4, 14]}, 2)
    pts = place_points(leaves, box, "center", RandomSource(1))
    expect = sorted([(0.5, 11.5)] * 2 + [(3.5, 12.5)] * 3)
    assert sorted(map(tuple, pts.tolist())) == expect


def test_uniform_placement_is_the_leaves_own_streams():
    # the multiset of points is that of KeyedNodeNoise.uniform under the key drawn from rng
    leaves = leaves_of([[0, 1], [3, 2], [1, 1]], [4, 1, 2], 4)
    box = as_box((0.0, 1.0), 2)
    pts = place_points(leaves, box, "uniform", RandomSource(9))
    keyed = KeyedNodeNoise.from_random_source(RandomSource(9))
    u = keyed.uniform(4, leaves.cells, leaves.masses, 2)
    ref = (np.repeat(leaves.cells, leaves.masses, axis=0) + u) * 0.25
    assert sorted(map(tuple, pts.tolist())) == sorted(map(tuple, ref.tolist()))
    assert np.all((pts >= 0) & (pts <= 1))
