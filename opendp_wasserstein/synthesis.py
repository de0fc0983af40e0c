"""Synthesis: place ``m_theta`` points in every leaf cell (a data-independent rule)."""

from __future__ import annotations

import gc
from collections.abc import Sequence

import numpy as np

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.box import Box
from opendp_wasserstein.consistency import LeafMasses
from opendp_wasserstein.hierarchy import coord_bits_at_level
from opendp_wasserstein.node_randomness import KeyedNodeNoise, random_words

__all__ = ["PLACEMENTS", "check_placement", "place_points", "shuffle_order", "shuffled_labels"]

PLACEMENTS = ("center", "uniform")

_POINTS = 1 << 16  # points placed per chunk (bounds the temporaries)
_COLLECT = 1 << 22  # outputs from this many floats on first free unreachable cycles


def check_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    return placement


def _shuffle_packed(rng: RandomSource, payload: np.ndarray, low: int) -> np.ndarray:
    """``payload`` (uint64 values below ``2^low``) in uniformly random order.

    Every item gets i.i.d. uniform high bits above its payload and the packed words are sorted;
    items whose high bits tie (a run of equal keys) are put in a fresh uniformly random order,
    recursively, so the order is exactly uniform.
    """
    k = payload.size
    mask = np.uint64((1 << low) - 1)
    keys = np.array(random_words(rng, k))
    keys &= ~mask
    keys |= payload
    keys.sort()
    high = keys >> np.uint64(low)
    tied = np.flatnonzero(high[1:] == high[:-1])  # about k^2 / 2^(65 - low) pairs
    del high
    keys &= mask
    if tied.size:  # every run of equal keys in a fresh random order
        first = tied[np.concatenate(([True], tied[1:] != tied[:-1] + 1))]
        last = tied[np.concatenate((tied[1:] != tied[:-1] + 1, [True]))] + 1
        for a, b in zip(first.tolist(), last.tolist(), strict=True):
            keys[a : b + 1] = _shuffle_packed(rng, keys[a : b + 1], low)
    return keys


def shuffle_order(rng: RandomSource, k: int) -> np.ndarray:
    """A uniformly random permutation of ``range(k)`` (int64): the indices packed below i.i.d.
    uniform random bits and sorted, ties put in a fresh random order (exactly uniform)."""
    if k <= 1:
        return np.arange(k, dtype=np.int64)
    low = max(1, int(k - 1).bit_length())
    if low > 48:  # pragma: no cover - more than 2^48 rows in memory
        return rng.permutation(k)
    return _shuffle_packed(rng, np.arange(k, dtype=np.uint64), low).view(np.int64)


def shuffled_labels(rng: RandomSource, masses: np.ndarray) -> np.ndarray:
    """Label ``i`` repeated ``masses[i]`` times, in uniformly random order (int64)."""
    k = masses.size
    labels = np.repeat(np.arange(k, dtype=np.uint64), masses)
    if labels.size <= 1:
        return labels.view(np.int64)
    low = max(1, int(k - 1).bit_length())
    if low > 48:  # pragma: no cover
        return labels.view(np.int64)[rng.permutation(labels.size)]
    return _shuffle_packed(rng, labels, low).view(np.int64)


def place_points(
    leaves: LeafMasses,
    box: Box,
    placement: str,
    rng: RandomSource,
    axes: Sequence[int] | None = None,
    keyed: KeyedNodeNoise | None = None,
) -> np.ndarray:
    """``leaves.masses[i]`` points in leaf cell ``i``, at its centre or uniform in it, mapped into
    ``box``, rows in random order.  Returns an (m, d) float array.  ``axes`` is the split order
    of the hierarchy (default cyclic): it sets the cell sides.

    The rows' leaf labels (each leaf repeated by its mass) are shuffled (:func:`shuffled_labels`),
    then each row is its leaf's centre (one gather from the ``k`` centres), or a uniform point
    of its leaf, written in row order a chunk at a time: the memory is the output plus a few
    integers a row.  The ``r``-th uniform point of a leaf is the ``r``-th point of the leaf's
    placement stream of a :class:`~opendp_wasserstein.node_randomness.KeyedNodeNoise` keyed
    from ``rng`` (or ``keyed``, when given: a distributed run places each partition's leaves
    with the release's one placement key): a function of the key, the leaf and ``r`` only.
    """
    d = box.dim
    m = leaves.total
    if m * d >= _COLLECT:
        # the count tree reaches here through OpenDP's ctypes keep-alive cycle: free it first
        gc.collect()
    masses = leaves.masses
    width = np.ldexp(1.0, -coord_bits_at_level(leaves.depth, d, axes))  # cell side, exact
    lower = np.asarray(box.lower, dtype=np.float64)
    upper = np.asarray(box.upper, dtype=np.float64)
    span = upper - lower

    # the cell side is a power of two, so (u * width) * span == u * (width * span) exactly, and
    # lower + u * span >= lower for u >= 0: one product, one sum and one clamp at the top
    step = width * span

    def to_box(u: np.ndarray) -> np.ndarray:
        u *= step
        u += lower
        np.minimum(u, upper, out=u)
        return u

    if placement == "center":
        centers = to_box(leaves.cells.astype(np.float64) + 0.5)
        return centers[shuffled_labels(rng, masses)]
    out = np.empty((m, d), dtype=np.float64)
    if keyed is None:
        keyed = KeyedNodeNoise.from_random_source(rng)
    state = keyed.placement_state(leaves.depth, leaves.cells)
    order = shuffle_order(rng, m)
    labels = np.repeat(np.arange(masses.size), masses)[order]
    ranks = (np.arange(m) - np.repeat(np.cumsum(masses) - masses, masses))[order]
    del order
    for lo in range(0, m, _POINTS):
        lab = labels[lo : lo + _POINTS]
        u = leaves.cells[lab].astype(np.float64)
        u += keyed.uniform_points(state[lab], ranks[lo : lo + _POINTS], d)
        out[lo : lo + u.shape[0]] = to_box(u)
    return out
