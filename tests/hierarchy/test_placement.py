"""Tests of the synthesis step (:mod:`opendp_wasserstein.hierarchy.placement`): placement and
shuffles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.hierarchy.placement import (
    PlacementStream,
    place_points,
    shuffle_order,
    shuffled_labels,
)
from opendp_wasserstein.hierarchy.traversal import LeafMasses
from opendp_wasserstein.noise._source import RandomSource

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


def test_uniform_placement_reads_the_stream_in_leaf_order():
    # the multiset of points is the leaves' cells (each repeated by its mass, in leaf order) plus
    # the stream's points 0 .. m - 1, under the stream keyed from rng
    leaves = leaves_of([[0, 1], [3, 2], [1, 1]], [4, 1, 2], 4)
    box = as_box((0.0, 1.0), 2)
    pts = place_points(leaves, box, "uniform", RandomSource(9))
    stream = PlacementStream.from_random_source(RandomSource(9))
    ref = (np.repeat(leaves.cells, leaves.masses, axis=0) + stream.points(0, 7, 2)) * 0.25
    assert sorted(map(tuple, pts.tolist())) == sorted(map(tuple, ref.tolist()))
    assert np.all((pts >= 0) & (pts <= 1))
    # a part that starts at point 4 of the release (the last two leaves) reads points 4 .. 6
    tail = leaves_of([[3, 2], [1, 1]], [1, 2], 4)
    part = place_points(tail, box, "uniform", RandomSource(0), stream=stream, start=4, part=1)
    assert sorted(map(tuple, part.tolist())) == sorted(map(tuple, ref[4:].tolist()))


def test_uniform_placement_in_chunks_is_the_same_points(monkeypatch):
    import opendp_wasserstein.hierarchy.placement as synthesis

    leaves = leaves_of([[0, 1], [3, 2], [1, 1], [2, 0]], [40, 1, 25, 7], 4)
    box = as_box({"lower": [-1, 0], "upper": [1, 8]}, 2)
    whole = place_points(leaves, box, "uniform", RandomSource(2))
    monkeypatch.setattr(synthesis, "_POINTS", 5)  # chunks that cut leaves
    chunked = place_points(leaves, box, "uniform", RandomSource(2))
    assert np.array_equal(whole, chunked)
    cells = np.floor((chunked - [-1, 0]) / [0.5, 2.0]).astype(int)
    got = sorted(map(tuple, cells.tolist()))
    assert got == sorted(map(tuple, np.repeat(leaves.cells, leaves.masses, axis=0).tolist()))


def test_placement_stream_ranges_and_jumps():
    stream = PlacementStream(bytes(range(32)))
    whole = stream.points(0, 50, 3)
    assert np.array_equal(stream.points(17, 20, 3), whole[17:37])
    assert np.array_equal(stream.points(1, 3, 2), whole.reshape(-1)[2:8].reshape(3, 2))
    assert np.all((whole >= 0) & (whole < 1))
    assert np.all(np.ldexp(whole, 53) == np.floor(np.ldexp(whole, 53)))  # multiples of 2^-53
    other = PlacementStream(bytes(range(1, 33)))
    assert not np.array_equal(other.points(0, 50, 3), whole)
    a, b = stream.order(0).uint64(8), stream.order(1).uint64(8)
    assert not np.array_equal(a, b)
    assert np.array_equal(a, stream.order(0).uint64(8))
    with pytest.raises(ValueError, match="key"):
        PlacementStream(bytes(31))
    assert "hidden" in repr(stream)


def test_placement_stream_points_are_uniform():
    # seeded chi-square: 20 bins per coordinate of 60,000 points drawn from a part at 12,345
    pts = PlacementStream(bytes(32)).points(12_345, 20_000, 3).reshape(-1)
    counts = np.bincount((pts * 20).astype(int), minlength=20)
    assert stats.chisquare(counts).pvalue > P_MIN


def test_placement_stream_orders_are_uniform():
    k, runs = 4, 12_000
    perms = {p: i for i, p in enumerate(itertools.permutations(range(k)))}
    counts = np.zeros(len(perms))
    stream = PlacementStream(bytes(32))
    words = stream.order(3)
    for _ in range(runs):
        counts[perms[tuple(shuffle_order(words, k).tolist())]] += 1
    assert stats.chisquare(counts).pvalue > P_MIN


def test_placement_stream_is_keyed_from_the_source():
    assert not PlacementStream.from_random_source(RandomSource()).points(0, 1, 1) == (
        PlacementStream.from_random_source(RandomSource()).points(0, 1, 1)
    )
    same = [PlacementStream.from_random_source(RandomSource(4)).points(0, 4, 2) for _ in range(2)]
    assert np.array_equal(same[0], same[1])


# ---------------------------------------------------------------------------------------------
# the fused shuffles and row gathers (issue 24) against the earlier code
# (tests/hierarchy/reference_kernel.py)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["seeded", "ties", "stream"])
def test_shuffles_draw_what_the_reference_draws(source):
    from tests.hierarchy import reference_kernel as ref

    def src(seed):  # type: ignore[no-untyped-def]
        if source == "seeded":
            return RandomSource(seed)
        if source == "ties":
            return CoarseSource(seed)
        return PlacementStream(bytes([seed]) * 32).order(seed)

    rng = np.random.default_rng(0)
    for seed, k in enumerate([0, 1, 2, 3, 17, 1000, 5000]):
        masses = rng.integers(0, 4, size=max(k, 1))
        assert np.array_equal(shuffle_order(src(seed), k), ref.shuffle_order(src(seed), k))
        assert np.array_equal(
            shuffled_labels(src(seed), masses), ref.shuffled_labels(src(seed), masses)
        )


def test_center_placement_equals_the_fancy_index_reference():
    from opendp_wasserstein.core.box import Box
    from tests.hierarchy import reference_kernel as ref

    rng = np.random.default_rng(1)
    for d, k in [(1, 1), (1, 2), (3, 50), (10, 300), (2, 40_000)]:
        cells = rng.integers(0, 2**6, size=(k, d))
        masses = rng.integers(0, 5, size=k)
        masses[0] += 1
        lower = rng.uniform(-3, 0, size=d)
        box = Box(lower, lower + rng.uniform(0.5, 4, size=d))
        stream = PlacementStream(bytes([d]) * 32)
        got = place_points(
            leaves_of(cells, masses, 6 * d), box, "center", RandomSource(0), stream=stream, part=2
        )
        assert np.array_equal(got, ref.center_points(cells, masses, 6 * d, box, stream, part=2))


def test_large_placements_collect_garbage_fully_only_when_another_tree_holds_arrays(monkeypatch):
    import gc

    import opendp_wasserstein.hierarchy.cells as h
    import opendp_wasserstein.hierarchy.placement as syn

    calls = []
    monkeypatch.setattr(gc, "collect", lambda *a: calls.append(a) or 0)
    monkeypatch.setattr(syn, "_COLLECT", 8)  # 10 rows x 2 columns count as large
    monkeypatch.setattr(syn, "_YOUNG", 8)
    leaves = leaves_of([[0, 1], [3, 2]], [4, 6], 4)
    small = leaves_of([[0, 1], [3, 2]], [1, 2], 4)
    box = as_box((0.0, 1.0), 2)
    u = np.random.default_rng(0).uniform(size=(50, 2))
    monkeypatch.setattr(h, "_UNRELEASED", type(h._UNRELEASED)())  # no tree of earlier tests
    own = h.build_count_tree(u, 10)  # the release's own tree (in use)
    place_points(leaves, box, "center", RandomSource(0))
    assert calls == [(1,)]  # the young generations only (an earlier output's FFI cycles)
    place_points(small, box, "center", RandomSource(0))
    assert calls == [(1,)]  # a small output: no collection
    other = h.build_count_tree(u, 10)  # another tree holds its arrays: a full collection
    place_points(leaves, box, "uniform", RandomSource(0))
    assert calls == [(1,), ()]
    other.release()  # released: the young generations again
    place_points(leaves, box, "center", RandomSource(0))
    assert calls == [(1,), (), (1,)]
    monkeypatch.setattr(syn, "_COLLECT", 30)  # between _YOUNG and _COLLECT: the young ones
    other = h.build_count_tree(u, 10)
    place_points(leaves, box, "center", RandomSource(0))
    assert calls == [(1,), (), (1,), (1,)]
    other.release()
    assert own._words is not None


def test_a_dropped_release_output_is_freed_before_the_next_large_output(monkeypatch):
    """OpenDP's FFI keeps a returned output in ctypes reference cycles: the next large placement
    frees it (a collection of the young generations) before it allocates its own output."""
    import gc
    import weakref

    import opendp.prelude as dp

    import opendp_wasserstein.hierarchy.placement as syn
    from opendp_wasserstein.measurements import make_adaptive_pruned_pmm

    dp.enable_features("contrib")
    monkeypatch.setattr(syn, "_YOUNG", 8)
    x = np.random.default_rng(0).uniform(size=(400, 2))
    meas = make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=400, T=float),
        dp.change_one_distance(),
        0.2,
        0.8,
        bounds=(0.0, 1.0),
    )
    gc.collect()
    gc.disable()  # no automatic collection: only the placement's
    try:
        out = meas(x)
        first = weakref.ref(out.base if out.base is not None else out)
        del out
        assert first() is not None  # still held by the FFI's cycles
        meas(x)
        assert first() is None  # freed by the second release's placement
    finally:
        gc.enable()


@pytest.mark.parametrize("d", [1, 2, 3, 10])
def test_center_placement_builds_its_keys_in_the_output(d, monkeypatch):
    # the shuffle keys live in the output's last 8 m bytes (no other full-size array): the rows
    # are those that keys built in a separate array give
    import opendp_wasserstein.hierarchy.placement as syn

    rng = np.random.default_rng(d)
    k, m = 300, 4000
    cells = rng.integers(0, 2**6, size=(k, d))
    masses = rng.multinomial(m, np.full(k, 1 / k))
    box = as_box((-1.0, 2.0), d)
    stream = PlacementStream(bytes([d]) * 32)
    got = place_points(
        leaves_of(cells, masses, 6 * d), box, "center", RandomSource(0), stream=stream
    )
    centers = (cells + 0.5) * (3.0 / 2**6) - 1.0
    keys, low = syn._shuffled_label_keys(stream.order(0), masses)  # a separate key array
    assert np.array_equal(got, centers[(keys & np.uint64((1 << low) - 1)).astype(np.int64)])
    seen = []
    inner = syn._shuffled_label_keys
    monkeypatch.setattr(syn, "_shuffled_label_keys", lambda *a: seen.append(a[2]) or inner(*a))
    again = place_points(
        leaves_of(cells, masses, 6 * d), box, "center", RandomSource(0), stream=stream
    )
    assert np.array_equal(again, got)
    (tail,) = seen  # the keys were built in the output's last m words
    assert tail.size == m
    assert tail.ctypes.data == again.ctypes.data + 8 * (d - 1) * m


def test_shuffle_keys_are_positive_normal_floats_in_integer_order():
    import opendp_wasserstein.hierarchy.placement as syn

    for low in (1, 12, 20, 48):
        keys = syn._random_keys(PlacementStream(bytes(32)).order(low), 5000, low)
        assert np.all(keys & np.uint64((1 << low) - 1) == 0)  # the payload bits are clear
        f = keys.view(np.float64)
        assert np.all(np.isfinite(f))
        assert np.all(f >= np.finfo(np.float64).tiny)  # normal: no denormal comparisons
        assert np.array_equal(np.sort(f).view(np.uint64), np.sort(keys))
