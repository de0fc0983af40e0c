import numpy as np
import pytest

from opendp_wasserstein.hierarchy.cells import (
    _bit_length_frexp,
    _bit_length_popcount,
    axis_of_level,
    bit_length_u64,
    bits_per_coord,
    build_count_tree,
    check_axes,
    coord_bits_at_level,
    grid_codes,
    max_depth,
)


def brute_occupancy(u: np.ndarray, depth: int) -> list[int]:
    d = u.shape[1]
    g = grid_codes(u, depth)
    B = -(-depth // d)
    out = []
    for j in range(depth + 1):
        cells = g >> (B - coord_bits_at_level(j, d))
        out.append(len(np.unique(cells, axis=0)))
    return out


@pytest.mark.parametrize("d,depth", [(1, 10), (2, 15), (3, 40), (3, 70), (10, 150), (4, 129)])
def test_occupancy_matches_brute_force(d, depth):
    rng = np.random.default_rng(depth * 31 + d)
    u = rng.uniform(size=(400, d))
    u[:50] = u[50:100]  # duplicates
    u[100:110, 0] = 0.5  # on a split plane
    u[110:115] = 1.0  # on the top face
    tree = build_count_tree(u, depth)
    assert tree.occupancy().tolist() == brute_occupancy(u, depth)


def test_occupancy_single_point_and_all_equal():
    tree = build_count_tree(np.full((7, 2), 0.3), 12)
    assert tree.occupancy().tolist() == [1] * 13
    tree = build_count_tree(np.array([[0.1, 0.9]]), 5)
    assert tree.occupancy().tolist() == [1] * 6


def test_split_planes_go_to_upper_child():
    u = np.array([[0.5, 0.0], [0.4999, 0.0], [1.0, 1.0], [0.0, 0.0]])
    g = grid_codes(u, 4)  # B = 2 bits per coordinate
    assert g[:, 0].tolist() == [2, 1, 3, 0]
    assert g[:, 1].tolist() == [0, 0, 3, 0]


def test_bit_length():
    x = np.array([0, 1, 2, 3, 2**63, 2**64 - 1, 2**40 + 5], dtype=np.uint64)
    assert bit_length_u64(x).tolist() == [0, 1, 2, 2, 64, 64, 41]


BIT_LENGTH_IMPLEMENTATIONS = [
    pytest.param(_bit_length_frexp, id="frexp"),
    pytest.param(
        _bit_length_popcount,
        id="popcount",
        marks=pytest.mark.skipif(not hasattr(np, "bitwise_count"), reason="numpy < 2.0"),
    ),
]


@pytest.mark.parametrize("impl", BIT_LENGTH_IMPLEMENTATIONS)
def test_bit_length_implementations_match_python(impl):
    # every power of two, its neighbours, and random words of every length
    powers = [1 << k for k in range(64)]
    edges = sorted(
        {v + e for v in powers for e in (-1, 0, 1) if 0 <= v + e < 2**64} | {0, 2**64 - 1}
    )
    rng = np.random.default_rng(7)
    shifts = rng.integers(0, 64, size=5000, dtype=np.uint64)
    randoms = rng.integers(0, 2**64 - 1, size=5000, dtype=np.uint64, endpoint=True) >> shifts
    x = np.concatenate([np.array(edges, dtype=np.uint64), randoms])
    expected = [int(v).bit_length() for v in x.tolist()]
    assert impl(x).tolist() == expected


@pytest.mark.parametrize("d,depth", [(2, 12), (3, 100)])
def test_split_partitions_ranges_consistently(d, depth):
    rng = np.random.default_rng(1)
    u = rng.uniform(size=(300, d)) ** 3
    tree = build_count_tree(u, depth)
    g = tree.grid
    B = tree.bits
    lo, hi = np.array([0]), np.array([tree.n])
    cells = np.zeros((1, d), dtype=np.int64)
    for level in range(depth):
        mid = tree.split(level, lo, hi)
        assert np.all((lo <= mid) & (mid <= hi))
        c = level % d
        lo, hi = np.stack([lo, mid], 1).reshape(-1), np.stack([mid, hi], 1).reshape(-1)
        cells = np.repeat(cells, 2, axis=0)
        cells[:, c] = cells[:, c] * 2 + np.tile([0, 1], cells.shape[0] // 2)
        keep = hi > lo
        lo, hi, cells = lo[keep], hi[keep], cells[keep]
        # every point in a range lies in that range's cell
        b = coord_bits_at_level(level + 1, d)
        pc = g >> (B - b)
        owner = np.repeat(np.arange(lo.size), hi - lo)
        assert np.array_equal(
            pc[np.concatenate([np.arange(a, z) for a, z in zip(lo, hi, strict=False)])],
            cells[owner],
        )
    assert (hi - lo).sum() == tree.n


def test_depth_limit():
    with pytest.raises(ValueError, match="depth"):
        grid_codes(np.zeros((2, 2)), max_depth(2) + 1)


# ---------------------------------------------------------------------------------------------
# the word-parallel kernel
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 7, 10, 13, 21, 33, 64])
def test_word_parallel_morton_matches_bitwise(d):
    from opendp_wasserstein.hierarchy.cells import morton_words, morton_words_bitwise

    rng = np.random.default_rng(d)
    for depth in sorted({1, d, 63, 64, 65, 127, 128, 129, 52 * d, min(52 * d, 3 * d + 5)}):
        if depth > 52 * d:
            continue
        B = -(-depth // d)
        g = rng.integers(0, 2**B, size=(70, d), dtype=np.int64)
        g[0] = 2**B - 1  # all ones: any misplaced bit shows
        g[1] = 0
        assert np.array_equal(morton_words(g, depth), morton_words_bitwise(g, depth)), depth


def test_bitwise_path_takes_a_split_order():
    from opendp_wasserstein.hierarchy.cells import morton_words, morton_words_bitwise

    g = np.random.default_rng(0).integers(0, 2**5, size=(50, 3))
    assert np.array_equal(
        morton_words_bitwise(g, 15, axes=[j % 3 for j in range(15)]), morton_words(g, 15)
    )
    other = morton_words_bitwise(g, 15, axes=[0] * 5 + [1] * 5 + [2] * 5)  # coordinate-major
    expect = (g[:, 0] << 10) | (g[:, 1] << 5) | g[:, 2]
    assert np.array_equal(other[0] >> np.uint64(64 - 15), expect.astype(np.uint64))


def test_tree_from_box_rows_matches_unit_points_and_leaves_input():
    from opendp_wasserstein.core.box import as_box

    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 5, size=(2000, 3))
    x[:10] = [[-9, 0, 9]] * 10  # clamped
    keep = x.copy()
    box = as_box(([-2, -2, -2], [4, 4, 4]), 3)
    for depth in (20, 64, 90):
        a = build_count_tree(x, depth, box)
        b = build_count_tree(box.to_unit(x), depth)
        assert np.array_equal(a.occupancy(), b.occupancy())
        assert np.array_equal(a.lcp, b.lcp)
    assert np.array_equal(x, keep)


@pytest.mark.parametrize("share", [0.0, 2.0], ids=["radix-passes", "refine"])
@pytest.mark.parametrize("depth", [70, 140, 200])
def test_deep_ties_are_refined(depth, share, monkeypatch):
    # every point shares the first 64 code bits; they differ only far below (several passes).
    # share: the multi-word sort's choice between radix passes over every row and the
    # refinement of the tied rows (both must give the sorted codes)
    from opendp_wasserstein.hierarchy import cells

    monkeypatch.setattr(cells, "_LSD_TIED_SHARE", share)
    d = 4
    B = -(-depth // d)
    rng = np.random.default_rng(depth)
    k = min(5, B - 16)  # the points differ only in their last k bits per coordinate
    base = rng.integers(0, 2 ** (B - k), size=(1, d)) << k
    g = base + rng.integers(0, 2**k, size=(600, d))
    g[:100] = g[100:200]  # exact duplicates
    u = (g + 0.5) / 2.0**B
    tree = build_count_tree(u, depth)
    assert tree.occupancy().tolist() == brute_occupancy(u, depth)
    # the tree's order is the code order: its lcp equals that of the sorted codes
    from opendp_wasserstein.hierarchy.cells import morton_words

    words = morton_words(grid_codes(u, depth), depth)
    order = np.lexsort(words[::-1])
    ref = np.full(599, depth)
    sw = words[:, order]
    for i in range(599):
        for w in range(words.shape[0]):
            x = int(sw[w, i] ^ sw[w, i + 1])
            if x:
                ref[i] = min(depth, 64 * w + 64 - x.bit_length())
                break
    assert np.array_equal(tree.lcp, ref)
    assert np.array_equal(tree._words, sw)  # the codes, in sorted order


@pytest.mark.parametrize("case", ["few-ties", "tied-runs", "too-many-tied"])
@pytest.mark.parametrize("d,depth,split_order", [(10, 196, False), (5, 89, False), (4, 90, True)])
def test_deeper_words_of_untied_rows_computed_on_first_read(
    case, d, depth, split_order, monkeypatch
):
    """A tree whose first sort leaves few rows tied computes the deeper words of the tied runs
    only (the others on first read, or per row where a split reads them): the same splits,
    lcp, occupancy and sorted words as the tree that computes every word up front."""
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.hierarchy import cells

    monkeypatch.setattr(cells, "_LAZY_SAMPLE", 64)  # every 46th row
    rng = np.random.default_rng(d)
    u = rng.uniform(-1.0, 2.0, size=(3000, d))
    if case == "tied-runs":  # 2% of the rows in a tiny cluster, 1% duplicated
        u[:60] = 0.3 + 1e-12 * rng.uniform(size=(60, d))
        u[60:90] = u[90:120]
    elif case == "too-many-tied":  # each row twice: a sample rarely sees both copies
        u[1500:] = u[:1500]
    box = as_box((-1.0, 2.0), d)
    axes = [(j * 7) % d for j in range(depth)] if split_order else None
    lazy = build_count_tree(u, depth, box, axes)
    assert bool(lazy._lazy) == (case != "too-many-tied")
    assert cells._few_ties(u, box, depth, lazy.axes)
    eager = cells.CountTree(u, depth, box, axes, keep_input=False)
    assert not eager._lazy
    assert np.array_equal(lazy.lcp, eager.lcp)
    assert np.array_equal(lazy.occupancy(), eager.occupancy())
    lo, hi = np.zeros(1, dtype=np.int64), np.full(1, u.shape[0], dtype=np.int64)
    e_lo, e_hi = lo, hi
    for level in range(depth):  # the splits read the deeper words of single rows
        assert np.array_equal(lazy.split(level, lo, hi), eager.split(level, e_lo, e_hi))
        lo, hi = lazy.children(level, lo, hi)
        e_lo, e_hi = eager.children(level, e_lo, e_hi)
        keep = hi > lo
        lo, hi, e_lo, e_hi = lo[keep], hi[keep], e_lo[keep], e_hi[keep]
    assert np.array_equal(lo, e_lo)
    assert np.array_equal(hi, e_hi)
    assert lo.size == {"few-ties": 3000, "tied-runs": 3000 - 59 - 30, "too-many-tied": 1500}[case]
    view = lazy.truncated(depth // 2)
    assert np.array_equal(view._words, eager._words)  # computed on this first read
    assert "runs" not in lazy._lazy
    assert np.array_equal(lazy._words, eager._words)


@pytest.mark.parametrize("d,depth", [(10, 196), (5, 89), (3, 150)])
def test_both_multi_word_sorts_give_the_same_tree(d, depth, monkeypatch):
    """Radix passes inside the first sort's runs, cut into chunks of whole runs of any size
    (one run per chunk, several, or every run in one), and refinement of the tied rows (few
    tied) are ways to the same sorted codes and lcp, on points of a curve with duplicated
    rows."""
    from opendp_wasserstein.hierarchy import cells

    t = np.random.default_rng(d).uniform(size=4000)
    u = 0.5 + 0.4 * np.sin(2 * np.pi * np.outer(t, 1 + np.arange(d) % 3) + np.arange(d))
    u[:800] = u[800:1600]
    inner = cells._sort_chunk
    sizes: list[int] = []

    def counted(cw, lc, start, *args):
        if start < 64:  # a chunk of the first sort's runs (not the tail of one: _sort_tail)
            sizes.append(cw.shape[1])
        return inner(cw, lc, start, *args)

    monkeypatch.setattr(cells, "_sort_chunk", counted)
    trees, chunks = [], []
    for share, rows in ((0.0, 1), (0.0, 500), (0.0, 1 << 20), (2.0, 500)):
        monkeypatch.setattr(cells, "_LSD_TIED_SHARE", share)
        monkeypatch.setattr(cells, "_RUN_ROWS", rows)
        sizes.clear()
        trees.append(build_count_tree(u, depth))
        chunks.append(list(sizes))
    assert sum(chunks[1]) == chunks[2][0] == 4000  # every row, once
    assert sum(chunks[0]) < 4000  # one run a chunk: the untied rows are not sorted
    assert len(chunks[0]) > len(chunks[1]) > len(chunks[2]) == 1
    assert len(chunks[1]) <= 8  # a chunk ends at the first run start past a multiple of 500
    assert chunks[3] == []  # the refinement path
    for other in trees[1:]:
        assert np.array_equal(trees[0]._words, other._words)
        assert np.array_equal(trees[0].lcp, other.lcp)
        assert np.array_equal(trees[0].occupancy(), other.occupancy())
    assert trees[0].lcp.dtype == trees[3].lcp.dtype == np.uint16


@pytest.mark.parametrize("d,depth", [(10, 196), (21, 1000), (21, 1092)])
def test_radix_chunks_match_the_reference_on_deep_ties(d, depth, monkeypatch):
    """Rows tied far below the first word (clusters of near-duplicates and exact duplicates)
    through the radix passes inside chunks of runs, small chunks included: the sorted codes and
    lcp of the plain reference, on both sides of the depth (1022) where the lcp of a chunk is
    read word by word instead of by the minimum over words."""
    from opendp_wasserstein.hierarchy import cells

    monkeypatch.setattr(cells, "_RUN_ROWS", 64)
    inner = cells._sort_tail
    tails: list[int] = []

    def counted(cw, *args):
        tails.append(cw.shape[1])
        return inner(cw, *args)

    monkeypatch.setattr(cells, "_sort_tail", counted)
    rng = np.random.default_rng(depth)
    base = rng.uniform(size=(12, d))
    u = np.repeat(base, 25, axis=0) + 1e-14 * rng.uniform(size=(300, d))
    u[::7] = u[1::7]  # exact duplicates
    tree = build_count_tree(u, depth)
    assert tails  # the last digit sorted inside the runs still tied above it
    words, lcp, starts = ref.tree_arrays(u, depth)
    assert np.array_equal(tree._words, words)
    assert np.array_equal(tree.lcp, lcp)
    assert np.array_equal(tree._lcp_starts, starts)
    assert int(lcp.max()) > 64  # the ties reach past the first word


@pytest.mark.parametrize("d,depth,r", [(3, 58, 20), (2, 100, 64), (10, 150, 70), (10, 150, 20)])
def test_truncated_tree_equals_a_direct_tree(d, depth, r):
    rng = np.random.default_rng(r)
    u = rng.uniform(size=(3000, d)) ** 2
    full = build_count_tree(u, depth).truncated(r)
    direct = build_count_tree(u, r)
    assert full.depth == r
    assert np.array_equal(full.occupancy(), direct.occupancy())
    lo, hi = np.array([0]), np.array([u.shape[0]])
    for level in range(r):
        m1, m2 = full.split(level, lo, hi), direct.split(level, lo, hi)
        assert np.array_equal(m1, m2)
        lo, hi = np.stack([lo, m1], 1).reshape(-1), np.stack([m1, hi], 1).reshape(-1)
        lo, hi = lo[hi > lo], hi[hi > lo]
    with pytest.raises(ValueError, match="depth"):
        full.truncated(depth + 1)


def test_split_positions_are_built_for_the_deepest_view_that_asks():
    # a shallow view first, then a deeper one and the full tree: each sees every split
    u = np.random.default_rng(7).uniform(size=(2000, 3)) ** 2
    tree = build_count_tree(u, 30)
    ref = build_count_tree(u, 30)
    for r in (6, 18, 30):
        view = tree.truncated(r) if r < 30 else tree
        lo, hi = np.array([0]), np.array([u.shape[0]])
        for level in range(r):
            mid = view.split(level, lo, hi)
            assert np.array_equal(mid, ref.split(level, lo, hi))
            lo, hi = np.stack([lo, mid], 1).reshape(-1), np.stack([mid, hi], 1).reshape(-1)
            lo, hi = lo[hi > lo], hi[hi > lo]
        assert tree._grouped_cache["depth"] == r
        assert tree._grouped_cache["positions"].size == int(np.count_nonzero(tree.lcp < r))


def test_chunk_boundaries(monkeypatch):
    import opendp_wasserstein.hierarchy.cells as h

    monkeypatch.setattr(h, "_ROWS", 7)
    u = np.random.default_rng(9).uniform(size=(100, 3))
    for depth in (30, 100):
        assert h.build_count_tree(u, depth).occupancy().tolist() == brute_occupancy(u, depth)


def test_shared_count_trees_builds_once_and_releases():
    import opendp_wasserstein.hierarchy.cells as h

    x = np.random.default_rng(2).uniform(size=(500, 2))
    built = []
    real = h.CountTree

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, *a, **k):
            built.append(1)
            super().__init__(*a, **k)

    h.CountTree = Counting
    try:
        with h.shared_count_trees():
            a = h.count_tree(x, 40, keep=True)  # the scores
            b = h.count_tree(x, 12)  # the synthesis: the same tree, truncated, then released
            c = h.count_tree(x, 12)  # a third reader builds its own
            d = h.count_tree(x.copy(), 12)  # another array object: its own tree
        e = h.count_tree(x, 12, keep=True)  # outside the block: nothing is shared or kept
        f = h.count_tree(x, 12)
    finally:
        h.CountTree = real
    assert len(built) == 5
    assert b.depth == 12
    assert a.depth == 40
    assert b._words is a._words
    assert c._words is not a._words
    assert d._words is not a._words
    assert e._words is not f._words


# general split orders


def brute_cells(u: np.ndarray, depth: int, axes) -> list[np.ndarray]:
    """Per level, each point's per-coordinate cell index, by bisecting its coordinates directly."""
    n, d = u.shape
    lo = np.zeros((n, d))
    hi = np.ones((n, d))
    idx = np.zeros((n, d), dtype=np.int64)
    out = [idx.copy()]
    for j in range(depth):
        c = axes[j] if axes is not None else j % d
        mid = (lo[:, c] + hi[:, c]) / 2
        up = u[:, c] >= mid
        idx[:, c] = 2 * idx[:, c] + up
        lo[:, c] = np.where(up, mid, lo[:, c])
        hi[:, c] = np.where(up, hi[:, c], mid)
        out.append(idx.copy())
    return out


ORDERS = [
    (3, [2, 2, 2, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]),  # one coordinate first, then cyclic
    (2, [0] * 20 + [1] * 5),  # more splits of one coordinate than ceil(depth / d)
    (4, [3, 1, 3, 0, 0, 2, 1, 3, 0, 2, 2, 1]),
    (2, [1, 0] * 40),  # the other cyclic order, 80 levels (two code words)
]


@pytest.mark.parametrize("d,axes", ORDERS)
def test_general_order_cells_and_occupancy_match_brute_force(d, axes):
    rng = np.random.default_rng(len(axes))
    u = rng.uniform(size=(300, d)) ** 2
    u[:40] = u[40:80]
    u[80:90, axes[0]] = 0.5
    u[90:95] = 1.0
    depth = len(axes)
    tree = build_count_tree(u, depth, axes=axes)
    assert tree.axes == tuple(axes)
    cells = brute_cells(u, depth, axes)
    assert tree.occupancy().tolist() == [len(np.unique(c, axis=0)) for c in cells]
    # the grid codes read back the brute-force cells at every level
    g = grid_codes(u, depth, axes)
    B = bits_per_coord(depth, d, axes)
    for j in (1, depth // 2, depth):
        assert np.array_equal(g >> (B - coord_bits_at_level(j, d, axes)), cells[j])


@pytest.mark.parametrize("d,axes", ORDERS)
def test_general_order_split_and_child_cells(d, axes):
    from opendp_wasserstein.hierarchy.traversal import child_cells, prefix_cells

    rng = np.random.default_rng(7)
    u = rng.uniform(size=(200, d)) ** 3
    depth = len(axes)
    tree = build_count_tree(u, depth, axes=axes)
    brute = brute_cells(u, depth, axes)
    lo, hi = np.array([0]), np.array([tree.n])
    cells = np.zeros((1, d), dtype=np.int64)
    for level in range(depth):
        mid = tree.split(level, lo, hi)
        lo, hi = np.stack([lo, mid], 1).reshape(-1), np.stack([mid, hi], 1).reshape(-1)
        cells = child_cells(cells, level, tree.axes)
        counts = {
            tuple(c): int(k)
            for c, k in zip(*np.unique(brute[level + 1], axis=0, return_counts=True), strict=True)
        }
        got = {tuple(c): int(k) for c, k in zip(cells, hi - lo, strict=True) if k > 0}
        assert got == counts
        keep = hi > lo
        lo, hi, cells = lo[keep], hi[keep], cells[keep]
    # Morton prefixes in the same order name the same cells
    level = min(depth, 10)
    pc = prefix_cells(np.arange(2**level), level, d, tree.axes)
    kids = np.zeros((1, d), dtype=np.int64)
    for j in range(level):
        kids = child_cells(kids, j, tree.axes)
    assert np.array_equal(pc, kids)


def test_check_axes():
    assert check_axes(None, 3, 5) is None
    assert check_axes([0, 1, 2, 0, 1, 2, 0], 3, 5) is None  # the cyclic order, normalised
    assert check_axes((2, 2, 0), 3, 3) == (2, 2, 0)
    assert check_axes([2, 2, 0, 1], 3, 2) == (2, 2)
    with pytest.raises(ValueError, match="each of the 4 levels"):
        check_axes([0, 1], 2, 4)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        check_axes([0, 2], 2, 2)
    with pytest.raises(ValueError, match="52 times"):
        check_axes([0] * 53, 2, 53)
    with pytest.raises(TypeError, match="axes"):
        check_axes("01", 2, 2)
    assert bits_per_coord(25, 2, [0] * 20 + [1] * 5) == 20
    assert axis_of_level(5, 3) == 2
    assert axis_of_level(1, 3, (2, 0)) == 0


# ---------------------------------------------------------------------------------------------
# the capped level sums of the capped schedule score


def brute_capped(u: np.ndarray, caps: np.ndarray, axes=None) -> np.ndarray:
    """``sum_v min(c_v, caps[j, a])`` per level from the brute-force cells."""
    L, k = caps.shape
    out = np.zeros((L, k), dtype=np.int64)
    for j, cells in enumerate(brute_cells(u, L - 1, axes)[:L]):
        _, c = np.unique(cells, axis=0, return_counts=True)
        out[j] = [np.minimum(c, caps[j, a]).sum() for a in range(k)]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_capped_level_sums_match_brute_force(seed):
    from opendp_wasserstein.hierarchy.cells import CountTree, capped_level_sums

    rng = np.random.default_rng(seed)
    n, d, L = int(rng.integers(1, 300)), int(rng.integers(1, 4)), int(rng.integers(1, 14))
    # clustered points (heavy deep cells) or uniform ones, some duplicated
    u = rng.beta(0.3, 0.3, size=(n, d)) if seed % 2 else rng.uniform(size=(n, d))
    u[: n // 5] = u[0]
    caps = rng.integers(1, 25, size=(L, 3))
    tree = CountTree(u, L)
    got = capped_level_sums(tree, caps)
    assert got.dtype == np.int64
    assert np.array_equal(got, brute_capped(u, caps))
    # caps of 1 give the occupancy; start leaves the levels above it at 0
    assert np.array_equal(
        capped_level_sums(tree, np.ones((L, 1), dtype=np.int64))[:, 0], tree.occupancy()[:L]
    )
    start = L // 2
    part = capped_level_sums(tree, caps, start=start)
    assert np.array_equal(part[start:], got[start:])
    assert not part[:start].any()


def test_capped_level_sums_on_a_split_order_and_empty_data():
    from opendp_wasserstein.hierarchy.cells import CountTree, capped_level_sums

    rng = np.random.default_rng(3)
    axes = (2, 2, 0, 1) * 3
    u = rng.uniform(size=(200, 3))
    caps = rng.integers(1, 9, size=(10, 2))
    assert np.array_equal(
        capped_level_sums(CountTree(u, 10, axes=axes), caps), brute_capped(u, caps, axes)
    )
    assert not capped_level_sums(
        CountTree(np.zeros((0, 2)), 5), np.ones((5, 2), dtype=np.int64)
    ).any()
    for bad in (np.zeros((3, 2)), np.ones((9, 2)), np.ones(3)):
        with pytest.raises(ValueError, match="caps"):
            capped_level_sums(CountTree(u, 7), bad)


@pytest.mark.parametrize("seed", range(8))
def test_level_imbalance_matches_brute_force(seed):
    from opendp_wasserstein.hierarchy.cells import CountTree, imbalance_of_counts, level_imbalance

    rng = np.random.default_rng(100 + seed)
    n, d, L = int(rng.integers(1, 250)), int(rng.integers(1, 4)), int(rng.integers(1, 12))
    u = rng.beta(0.3, 0.3, size=(n, d))
    u[: n // 4] = u[0]
    tree = CountTree(u, L)
    got = level_imbalance(tree, L)
    cells = brute_cells(u, L, None)
    for j in range(L):
        parents, inv = np.unique(cells[j], axis=0, return_inverse=True)
        bit = cells[j + 1][:, j % d] & 1
        c0 = np.bincount(inv.ravel()[bit == 0], minlength=len(parents))
        c1 = np.bincount(inv.ravel()[bit == 1], minlength=len(parents))
        assert got[j] == np.abs(c0 - c1).sum()
        assert got[j] == imbalance_of_counts(np.stack([c0, c1], axis=1))
    assert np.array_equal(level_imbalance(tree, L, start=L // 2)[L // 2 :], got[L // 2 :])
    assert not level_imbalance(CountTree(np.zeros((0, d)), L), L).any()
    with pytest.raises(ValueError, match="levels"):
        level_imbalance(tree, L + 1)


# ---------------------------------------------------------------------------------------------
# the fused kernel (issue 24) against the plain reference (tests/hierarchy/reference_kernel.py)
# ---------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

from tests.hierarchy import reference_kernel as ref  # noqa: E402

#: coordinates of rows in a box: the faces, split planes, outside values, NaN and infinities
_ROW_VALUES = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, -0.0, 2.0, -1.0, 0.75, np.nan, np.inf, -np.inf]),
    st.floats(-2.0, 3.0, allow_nan=False),
    st.integers(0, 2**12).map(lambda k: k / 2**12),
)


@st.composite
def kernel_inputs(draw: st.DrawFn) -> tuple[np.ndarray, object, int]:
    """Rows, a box (None: the rows are in [0, 1]^d) and a depth: depths not a multiple of d,
    above 64 and above 128 bits, boxes with power-of-two and other sides, lower 0 or not."""
    from opendp_wasserstein.core.box import Box

    d = draw(st.integers(1, 12))
    depth = draw(
        st.one_of(st.integers(1, min(52 * d, 200)), st.sampled_from([d, 63, 64, 65, 128, 129]))
    )
    depth = min(depth, 52 * d)
    n = draw(st.integers(0, 40))
    kind = draw(st.sampled_from(["unit", "cube", "pow2", "any"]))
    if kind == "unit":
        x = draw(
            arrays(
                np.float64,
                (n, d),
                elements=st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.25]), st.floats(0.0, 1.0)),
            )
        )
        return x, None, depth
    if kind == "cube":
        box = Box(np.zeros(d), np.ones(d))
    else:
        lower = np.array(
            draw(st.lists(st.sampled_from([0.0, -1.0, 0.3, -2.5]), min_size=d, max_size=d))
        )
        sides = [2.0**-3, 0.5, 1.0, 4.0] if kind == "pow2" else [0.1, 3.0, 1.0, 7.25, 1e-9]
        side = np.array(draw(st.lists(st.sampled_from(sides), min_size=d, max_size=d)))
        box = Box(lower, lower + side)
    x = draw(arrays(np.float64, (n, d), elements=_ROW_VALUES))
    if draw(st.booleans()) and n:  # rows on the upper faces and the lower corner
        x[0] = box.upper
        x[-1] = box.lower
    if draw(st.booleans()):
        x = x.astype(np.float32)
    return x, box, depth


@settings(max_examples=300, deadline=None)
@given(kernel_inputs())
def test_fused_codes_equal_the_per_level_reference(case):
    import opendp_wasserstein.hierarchy.cells as h

    x, box, depth = case
    W = h._words(depth)
    expect = ref.codes(x, box, depth)
    assert np.array_equal(h.row_codes(x, box, depth, list(range(W))), expect)
    if x.shape[0]:
        rows = np.arange(x.shape[0])[::-1].copy()
        assert np.array_equal(
            h.row_codes(x, box, depth, [W - 1], rows=rows), expect[[W - 1]][:, rows]
        )


@settings(max_examples=200, deadline=None)
@given(kernel_inputs())
def test_count_tree_equals_the_lexicographic_reference(case):
    x, box, depth = case
    tree = build_count_tree(x, depth, box)
    words, lcp, starts = ref.tree_arrays(x, depth, box)
    assert np.array_equal(tree._words, words)
    assert tree.lcp.dtype == np.uint16
    assert np.array_equal(tree.lcp, lcp)
    assert np.array_equal(tree._lcp_starts, starts)


def test_fused_codes_chunks_and_narrow_grids(monkeypatch):
    import opendp_wasserstein.hierarchy.cells as h

    rng = np.random.default_rng(11)
    x = rng.uniform(size=(101, 3))
    x[::7] = 1.0  # u = 1: the top cell
    monkeypatch.setattr(h, "_ROWS", 8)
    for depth in (1, 2, 58, 63, 64, 65, 93, 156):  # B <= 31 (int32) and B > 31 (int64)
        assert np.array_equal(
            h.row_codes(x, None, depth, list(range(h._words(depth)))), ref.codes(x, None, depth)
        )


@pytest.mark.parametrize("depth", [1, 5, 40, 63, 64, 65, 130])
def test_sorted_lcp_matches_bit_length(depth):
    import opendp_wasserstein.hierarchy.cells as h

    rng = np.random.default_rng(depth)
    used = min(depth, 64)
    raw = rng.integers(0, 2**62, size=500, dtype=np.uint64) * np.uint64(4) | rng.integers(
        0, 4, 500
    ).astype(np.uint64)
    word = raw >> np.uint64(64 - used) << np.uint64(64 - used)  # a depth-bit code, left-aligned
    word[:50] = word[50:100]  # equal neighbours
    # neighbours whose XOR has 53 or more ones below its leading bit (the float rounding case)
    word[100] = np.uint64(2**63 - 2 ** (64 - used)) if used < 64 else np.uint64(2**63 - 1)
    word[101] = np.uint64(2**63)
    word.sort()
    lcp = h._sorted_lcp(word, depth)
    expect = [
        64 - int(a ^ b).bit_length()
        for a, b in zip(word[:-1].tolist(), word[1:].tolist(), strict=True)
    ]
    expect = [min(depth, v) if (v < 64 or depth <= 64) else 1086 for v in expect]
    assert lcp.dtype == np.uint16
    assert lcp.tolist() == expect


@pytest.mark.parametrize("depth", [1, 5, 40, 58, 60])
@pytest.mark.parametrize("rows", [8, 1 << 15])
def test_one_word_float_sort_matches_the_int64_path(depth, rows, monkeypatch):
    import opendp_wasserstein.hierarchy.cells as h

    monkeypatch.setattr(h, "_ROWS", rows)  # chunk boundaries inside the fused pass
    rng = np.random.default_rng(depth)
    raw = rng.integers(0, 2**63, size=501, dtype=np.uint64) << np.uint64(1)
    word = raw >> np.uint64(64 - depth) << np.uint64(64 - depth)  # a depth-bit code
    word[:50] = word[50:100]  # equal neighbours
    word[100] = np.uint64(2**63 - 2 ** (64 - depth))  # the float rounding case
    word[101] = np.uint64(2**63)
    word[102] = np.uint64(0)
    keys = word.copy()
    h._float_keys(keys)
    f = keys.view(np.float64)
    assert np.all(np.isfinite(f))
    assert np.all(f > 0)
    assert np.array_equal(np.argsort(f, kind="stable"), np.argsort(word, kind="stable"))
    expect = word.copy()
    lcp0, hist0 = h._sort_one_word(expect, depth)
    lcp, hist = h._sort_one_word(keys, depth, keys=True)
    assert np.array_equal(keys, expect)  # the codes restored, sorted
    assert np.array_equal(keys, np.sort(word))
    assert lcp.dtype == np.uint16
    assert np.array_equal(lcp, lcp0)
    assert hist.dtype == np.int64
    assert hist.tolist() == np.bincount(lcp0, minlength=depth + 1).tolist()
    assert np.array_equal(hist0, hist)


def test_sortable_row_codes_are_the_float_keys():
    import opendp_wasserstein.hierarchy.cells as h

    x = np.random.default_rng(3).uniform(size=(300, 3))
    x[::9] = 1.0
    for depth, axes in ((58, None), (60, None), (12, None), (20, (0, 1, 2, 2, 1) * 4)):
        expect = h.row_codes(x, None, depth, [0], axes=axes)
        h._float_keys(expect)
        assert np.array_equal(h.row_codes(x, None, depth, [0], axes=axes, sortable=True), expect)
    with pytest.raises(ValueError, match="depth <= 60"):
        h.row_codes(x, None, 61, [0], sortable=True)
    with pytest.raises(ValueError, match="depth <= 60"):
        h._sort_one_word(np.zeros(3, dtype=np.uint64), 61, keys=True)


def test_spread_ops_move_every_bit():
    import opendp_wasserstein.hierarchy.cells as h

    rng = np.random.default_rng(5)
    for d in (1, 2, 3, 4, 5, 7, 9, 10, 11, 16, 33, 64):
        for m in range(1, 64 // d + 2):
            if (m - 1) * d > 63:
                continue
            for dst in sorted({0, min(1, 63 - (m - 1) * d), 63 - (m - 1) * d}):
                ops = h._spread_ops(m, d, dst)
                field = rng.integers(0, 2**m, size=200, dtype=np.uint64)
                field[0] = (1 << m) - 1
                got = h._spread(field.copy(), ops, np.empty_like(field))
                want = np.zeros_like(field)
                for i in range(m):
                    want |= ((field >> np.uint64(i)) & np.uint64(1)) << np.uint64(dst + i * d)
                assert np.array_equal(got, want), (m, d, dst)


def test_float32_points_on_the_upper_face_go_to_the_top_cell():
    # 2^B - 1 is not a float32 for B > 24: the clamp is done in float64 (the earlier kernel
    # clamped float32 points at 2^B, outside the grid, and their codes spilled into other levels)
    u = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [0.5, 0.25, 1.0]])
    for depth in (30, 90, 150):
        a, b = build_count_tree(u.astype(np.float32), depth), build_count_tree(u, depth)
        assert np.array_equal(a._words, b._words)
        assert np.array_equal(a.lcp, b.lcp)


def test_owning_block_releases_its_trees_and_views():
    import opendp_wasserstein.hierarchy.cells as h

    x = np.random.default_rng(4).uniform(size=(300, 3))
    before = h.unreleased_trees()
    kept = h.count_tree(x, 20)  # built outside any block: the caller's
    with h.shared_count_trees(release=True):
        a = h.count_tree(x, 40, keep=True)
        b = h.count_tree(x, 12)  # a truncated view of a
        assert b._words is a._words
        assert h.unreleased_trees() == before + 2
        b.split(3, np.array([0]), np.array([300]))
    assert h.unreleased_trees() == before + 1  # only the caller's tree holds arrays
    assert a._words is None
    assert a.lcp is None
    assert b._words is None
    assert b.lcp is None
    assert a._grouped_cache == {}
    assert kept._words is not None
    assert kept.occupancy()[0] == 1
    with h.shared_count_trees():  # not owning: the trees stay usable after the block
        c = h.count_tree(x, 10, keep=True)
    assert c._words is not None


def test_release_if_owned_drops_a_done_tree_only_in_an_owning_block():
    import opendp_wasserstein.hierarchy.cells as h

    x = np.random.default_rng(5).uniform(size=(200, 2))
    outside = h.count_tree(x, 16)
    assert not h.release_if_owned(outside)  # no owning block
    assert outside._words is not None
    with h.shared_count_trees():  # a block that does not own its trees
        t = h.count_tree(x, 16)
        assert not h.release_if_owned(t)
        assert t._words is not None
    with h.shared_count_trees(release=True):
        a = h.count_tree(x, 30, keep=True)  # kept for a later call: not released
        assert not h.release_if_owned(a)
        assert a._words is not None
        b = h.count_tree(x, 10)  # the later call takes it (a view)
        mid = b.split(2, np.array([0]), np.array([200]))
        assert h.release_if_owned(b)
        assert a._words is None
        assert b._words is None
        assert b.lcp is None
        assert not h.release_if_owned(outside)  # not the block's tree
        assert outside._words is not None
    assert mid.shape == (1,)


@pytest.mark.parametrize("group", [1, 4, 40, 200])
def test_chunk_lcp_reads_the_last_word_of_the_pairs_that_reach_it(group):
    """A chunk's lcp reads its last word for the pairs equal on all the others only, when they
    are few (at most a quarter of the pairs), else for every pair: the lcp of a plain
    word-by-word reading of the sorted codes either way (equal codes, the float rounding case
    and an untied pair below ``start`` included)."""
    import opendp_wasserstein.hierarchy.cells as h

    rng = np.random.default_rng(group)
    depth, m = 196, 401
    words = rng.integers(0, 2**64 - 1, size=(4, m), dtype=np.uint64, endpoint=True)
    words[0] &= np.uint64(~((1 << 20) - 1) & (2**64 - 1))  # rows tied on their first 44 bits
    words[0] |= np.uint64(0xABC) << np.uint64(20)
    words[0, 200:] ^= np.uint64(1) << np.uint64(63)  # two runs: an untied pair between them
    words[3] &= np.uint64(0xF << 60)  # depth 196: the last word holds 4 bits
    lead = np.arange(m) - np.arange(m) % 5 * (group > 1)  # groups of 5 rows share words 0-2
    words[:3, : 5 * group] = words[:3, lead[: 5 * group]]
    words[:, 7] = words[:, 6]  # equal codes
    words[:3, 11] = words[:3, 10]  # a pair differing in the last word only: 0111 / 1000
    words[3, 10], words[3, 11] = np.uint64(0x7 << 60), np.uint64(0x8 << 60)
    words = np.ascontiguousarray(words[:, np.lexsort(words[::-1])])
    start = 44
    expect = h._sorted_words_lcp(words, depth)  # word by word: the reference
    lc = np.where(expect >= start, np.uint16(1086), expect).astype(np.uint16)
    h._chunk_lcp(words, lc, start, depth, h._ChunkBuffers(m))
    assert np.array_equal(lc, expect)
    reached = int(np.count_nonzero(expect >= 192))
    assert reached >= 2  # the equal codes and the last-word pair at least
    assert int(np.count_nonzero(expect < start)) >= 1
    assert (4 * reached <= m - 1) == (group <= 4)  # both ways of reading the last word


@pytest.mark.parametrize("runs", [1, 7])
def test_chunk_passes_order_float_keys_below_2_52(runs):
    """The chunk passes sort (run, digit, index in the run) keys as float64 (62 bits, bits 63
    and 62 clear): where a pass's digit is 0 in the first run the key is below 2^52 (a subnormal
    float) or 0, and these must order as their integers.  Codes tied on their first 40 bits in
    ``runs`` runs, zero below but for a few low bits: sorted words and lcp equal the
    lexicographic order and the common prefixes of the codes as integers."""
    from opendp_wasserstein.hierarchy import cells

    rng = np.random.default_rng(runs)
    m, start, depth = 3000, 40, 190
    words = np.zeros((3, m), dtype=np.uint64)
    run = np.sort(rng.integers(0, runs, m)).astype(np.uint64)  # the runs in increasing order
    words[0] = (np.uint64(0xABC00) + run) << np.uint64(24)  # the run in bits 20..39
    some = rng.random(m) < 0.3
    words[2, some] = rng.integers(0, 1 << 12, some.sum()).astype(np.uint64) << np.uint64(2)
    words[1, rng.random(m) < 0.05] = np.uint64(1)  # bit 127: ties broken in word 1
    codes = [(int(a) << 128) | (int(b) << 64) | int(c) for a, b, c in words.T]
    # tied on the first 40 bits: 1086; between runs: their lcp (below 40), which stays
    between = [192 - (x ^ y).bit_length() for x, y in zip(codes[:-1], codes[1:], strict=True)]
    lc = np.where(run[1:] == run[:-1], 1086, between).astype(np.uint16)
    cells._sort_chunk(words, lc, start, depth, cells._ChunkBuffers(m))
    want = sorted(codes)
    assert [(int(a) << 128) | (int(b) << 64) | int(c) for a, b, c in words.T] == want
    lcp = [min(depth, 192 - (x ^ y).bit_length()) for x, y in zip(want[:-1], want[1:], strict=True)]
    assert lc.tolist() == lcp


@pytest.mark.parametrize("d", [6, 10])
def test_count_tree_is_the_same_where_subnormals_are_zero(monkeypatch, d):
    """Where the thread treats subnormal floats as zero (denormals-are-zero, which a library
    built with ``-ffast-math`` can switch on), the chunk passes sort their keys as int64: the
    same tree, row for row, as the float64 sort (simulated: the mode check answers False)."""
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.hierarchy import cells

    rng = np.random.default_rng(d)
    t = rng.random(20_000)
    x = np.stack([0.5 + 0.45 * np.sin(2 * np.pi * (j + 1) * t + j) for j in range(d)], axis=1)
    box = as_box((0.0, 1.0), d)
    depth = 30 * d

    def tree() -> tuple[np.ndarray, np.ndarray]:  # the sorted rows' lcp and the occupancies
        t = cells.build_count_tree(x, depth, box)
        return np.asarray(t.lcp).copy(), t.occupancy().copy()

    want = tree()
    calls = []

    def daz() -> bool:
        calls.append(1)
        return False

    monkeypatch.setattr(cells, "_subnormals_ordered", daz)
    got = tree()
    assert calls  # the chunk passes ran and read the mode
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("simd512", [False, True], ids=["float64-view", "int64-view"])
def test_sort_views_give_the_same_trees_shuffles_and_sorts(monkeypatch, simd512):
    """The sort keys below 2^62 sort as float64 (AVX2) or int64 (AVX-512) and uint64 keys as
    int64 with the top bit flipped or as uint64 (``cells._SORT512``): the same sorted arrays,
    hence the same count trees (one word, chunk passes, refinement) and shuffles, whichever
    view this machine's numpy picks."""
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.hierarchy import cells
    from opendp_wasserstein.hierarchy import placement as pl
    from opendp_wasserstein.noise._source import RandomSource
    from tests.hierarchy import reference_kernel as ref

    rng = np.random.default_rng(5)
    keys = rng.integers(0, 2**64, size=3001, dtype=np.uint64, endpoint=False)
    keys[:40] = keys[40:80]  # ties
    keys[80:84] = [0, 2**63 - 1, 2**63, 2**64 - 1]
    t = rng.random(6_000)
    data = {
        d: np.stack([0.5 + 0.45 * np.sin(2 * np.pi * (j + 1) * t + j) for j in range(d)], 1)
        for d in (3, 10)
    }
    u = rng.random((6_000, 10))
    u[:600] = u[600:1200]  # few ties: the tied rows refined by their deeper words (_refine)
    masses = rng.integers(0, 40, size=700)

    def outcome() -> list[np.ndarray]:
        got = []
        for d, x in [*data.items(), (10, u)]:
            for depth in (20, 58) if d == 3 else (40, 130, 196):
                tree = cells.build_count_tree(x, depth, as_box((0.0, 1.0), d))
                got += [np.asarray(tree.lcp).copy(), tree.occupancy().copy()]
                tree.release()
        sorted_keys = keys.copy()
        cells._sort_u64(sorted_keys)
        got.append(sorted_keys)
        got.append(pl.shuffled_labels(RandomSource(7), masses))
        got.append(pl.shuffle_order(RandomSource(8), 5000))
        return got

    monkeypatch.setattr(cells, "_SORT512", not simd512)
    for mod in (cells, pl):
        monkeypatch.setattr(mod, "_KEY_SORT", np.int64 if not simd512 else np.float64)
    want = outcome()
    monkeypatch.setattr(cells, "_SORT512", simd512)
    for mod in (cells, pl):
        monkeypatch.setattr(mod, "_KEY_SORT", np.int64 if simd512 else np.float64)
    got = outcome()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[-3], np.sort(keys))
    np.testing.assert_array_equal(got[-2], ref.shuffled_labels(RandomSource(7), masses))
    np.testing.assert_array_equal(got[-1], ref.shuffle_order(RandomSource(8), 5000))
