"""Reference implementations of the kernel (issue 24) that the fast paths must reproduce exactly.

They are the package's earlier code, kept plain: the grid by ``floor`` and clamps on whole
arrays, the Morton codes by one pass per level (:func:`morton_words_bitwise`), the tree's order
by a full lexicographic sort of every code word, the lcp by Python's ``int.bit_length``, and
the shuffles and the centre placement of the synthesis as they were (same random words, same
order of draws).  Not collected by pytest (no ``test_`` prefix); imported by the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opendp_wasserstein.hierarchy.cells import (
    bits_per_coord,
    coord_bits_at_level,
    morton_words_bitwise,
)
from opendp_wasserstein.hierarchy.placement import PlacementStream, _Words
from opendp_wasserstein.noise.node_randomness import random_words


def grid(x: np.ndarray, box: Any, depth: int) -> np.ndarray:
    """``floor(u 2^B)`` clamped to ``[0, 2^B - 1]`` (int64) of the rows, ``u = (x - lo) / w``
    computed as ``(x - lo) / (w 2^-B)`` (the earlier ``_box_grid``; without a box, ``u = x`` as
    ``grid_codes``), NaN and points below the box at 0."""
    d = x.shape[1]
    B = bits_per_coord(depth, d)
    if box is None:
        v = np.floor(np.asarray(x, dtype=np.float64) * float(2**B))
    else:
        lo = np.asarray(box.lower, dtype=np.float64)
        step = (np.asarray(box.upper, dtype=np.float64) - lo) * 2.0**-B
        with np.errstate(invalid="ignore", over="ignore"):
            v = np.floor((x - lo) / step)
    v = np.fmax(v, 0.0)
    v = np.minimum(v, float(2**B - 1))
    return v.astype(np.int64)


def codes(x: np.ndarray, box: Any, depth: int) -> np.ndarray:
    """All ``(W, n)`` code words of the rows, one pass per level."""
    return morton_words_bitwise(grid(x, box, depth), depth)


def tree_arrays(
    x: np.ndarray, depth: int, box: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(words, lcp, lcp_starts)`` of the count tree: the code words in lexicographic order,
    the common prefix of neighbours (uint16, at most ``depth``) and the group boundaries."""
    words = codes(x, box, depth)
    order = np.lexsort(words[::-1])
    words = words[:, order]
    n = words.shape[1]
    lcp = np.full(max(n - 1, 0), depth, dtype=np.int64)
    for i in range(n - 1):
        for w in range(words.shape[0]):
            v = int(words[w, i] ^ words[w, i + 1])
            if v:
                lcp[i] = min(depth, 64 * w + 64 - v.bit_length())
                break
    hist = np.bincount(lcp, minlength=depth + 1)
    return words, lcp.astype(np.uint16), np.concatenate(([0], np.cumsum(hist))).astype(np.int64)


# --------------------------------------------------------------------------------- synthesis


def shuffle_packed(rng: Any, payload: np.ndarray, low: int) -> np.ndarray:
    k = payload.size
    mask = np.uint64((1 << low) - 1)
    keys = rng.uint64(k) if isinstance(rng, _Words) else np.array(random_words(rng, k))
    keys &= ~mask
    keys |= payload
    keys.sort()
    high = keys >> np.uint64(low)
    tied = np.flatnonzero(high[1:] == high[:-1])
    keys &= mask
    if tied.size:
        first = tied[np.concatenate(([True], tied[1:] != tied[:-1] + 1))]
        last = tied[np.concatenate((tied[1:] != tied[:-1] + 1, [True]))] + 1
        for a, b in zip(first.tolist(), last.tolist(), strict=True):
            keys[a : b + 1] = shuffle_packed(rng, keys[a : b + 1], low)
    return keys


def shuffle_order(rng: Any, k: int) -> np.ndarray:
    if k <= 1:
        return np.arange(k, dtype=np.int64)
    low = max(1, int(k - 1).bit_length())
    return shuffle_packed(rng, np.arange(k, dtype=np.uint64), low).view(np.int64)


def shuffled_labels(rng: Any, masses: np.ndarray) -> np.ndarray:
    k = masses.size
    labels = np.repeat(np.arange(k, dtype=np.uint64), masses)
    if labels.size <= 1:
        return labels.view(np.int64)
    low = max(1, int(k - 1).bit_length())
    return shuffle_packed(rng, labels, low).view(np.int64)


def center_points(
    cells: np.ndarray,
    masses: np.ndarray,
    depth: int,
    box: Any,
    stream: PlacementStream,
    part: int = 0,
) -> np.ndarray:
    """The centre placement: the leaf centres gathered (two-dimensional fancy index) by the
    shuffled labels."""
    d = box.dim
    width = np.ldexp(1.0, -coord_bits_at_level(depth, d))
    lower = np.asarray(box.lower, dtype=np.float64)
    upper = np.asarray(box.upper, dtype=np.float64)
    centers = (cells.astype(np.float64) + 0.5) * (width * (upper - lower)) + lower
    np.minimum(centers, upper, out=centers)
    out: np.ndarray = centers[
        shuffled_labels(stream.order(part), np.asarray(masses, dtype=np.int64))
    ]
    return out
