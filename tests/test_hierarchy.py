import numpy as np
import pytest

from opendp_wasserstein.hierarchy import (
    _bit_length_frexp,
    _bit_length_popcount,
    bit_length_u64,
    build_count_tree,
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
    edges = sorted({v + e for v in powers for e in (-1, 0, 1) if 0 <= v + e < 2**64} | {0, 2**64 - 1})
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
        assert np.array_equal(pc[np.concatenate([np.arange(a, z) for a, z in zip(lo, hi, strict=False)])], cells[owner])
    assert (hi - lo).sum() == tree.n


def test_depth_limit():
    with pytest.raises(ValueError, match="depth"):
        grid_codes(np.zeros((2, 2)), max_depth(2) + 1)
