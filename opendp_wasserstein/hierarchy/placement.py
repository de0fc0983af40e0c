"""Synthesis: place ``m_theta`` points in every leaf cell (a data-independent rule).

Placement is post-processing of the released leaf masses (the masses can be read back off the
output points), so its randomness cannot affect privacy: it is drawn from a fast generator,
:class:`PlacementStream` (numpy's PCG64, keyed by 256 bits from the operating
system's CSPRNG for every release), not from the noise's sources (:doc:`randomness`).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from opendp_wasserstein.core.box import Box
from opendp_wasserstein.hierarchy.cells import _KEY_SORT, coord_bits_at_level, unreleased_trees
from opendp_wasserstein.hierarchy.traversal import LeafMasses
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.node_randomness import random_words

__all__ = [
    "PLACEMENTS",
    "PlacementStream",
    "check_placement",
    "place_points",
    "shuffle_order",
    "shuffled_labels",
]

PLACEMENTS = ("center", "uniform")

_POINTS = 1 << 18  # floats placed per chunk (bounds the temporaries, stays in cache)
_COLLECT = 1 << 22  # outputs from this many floats on first free every unreachable cycle ...
_YOUNG = 1 << 18  # ... and from this many the young ones (place_points)
_KEY_BYTES = 32


def check_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    return placement


class _Words:
    """A numpy generator as a source of uniform 64-bit words (what the shuffles read)."""

    secure = False

    def __init__(self, gen: np.random.Generator) -> None:
        self._gen = gen

    def uint64(self, size: int) -> np.ndarray:
        return np.asarray(self._gen.bit_generator.random_raw(int(size)), dtype=np.uint64)

    def permutation(self, k: int) -> np.ndarray:  # pragma: no cover - more than 2^48 rows
        return self._gen.permutation(int(k))


#: packed keys are float sort keys: a random word shifted right by 3 bits (its top 61 bits),
#: its low ``low`` bits cleared for the payload, and bit 61 set.  Bits 63 and 62 are then 0 and
#: the exponent field (bits 62..52) is in ``[2^9, 2^10)``: read as float64 every key is a
#: positive normal number, and the float order of those is the integer order of their bits
#: (numpy's AVX2 sort has float64 min/max but no int64 ones: 10-15% faster than sorting int64;
#: with AVX-512 the int64 sort is the faster: the keys sort as ``cells._KEY_SORT``, the same
#: sorted array either way)
_KEY_SHIFT = np.uint64(3)
_KEY_BIT = np.uint64(1 << 61)


def _random_keys(rng: RandomSource | _Words, k: int, low: int) -> np.ndarray:
    """``k`` i.i.d. float sort keys (:data:`_KEY_BIT`) with their low ``low`` bits clear for
    the payload (a fresh, writable array)."""
    keys = rng.uint64(k) if isinstance(rng, _Words) else np.array(random_words(rng, k))
    keys >>= _KEY_SHIFT
    keys &= ~np.uint64((1 << low) - 1)
    keys |= _KEY_BIT
    return keys


def _shuffle_packed(
    rng: RandomSource | _Words, payload: np.ndarray, low: int, strip: bool = True
) -> np.ndarray:
    """``payload`` (uint64 values below ``2^low``) in uniformly random order.

    Every item gets ``61 - low`` i.i.d. uniform random bits (the top bits of a random word)
    above its payload and the packed keys are sorted; items whose random bits tie (a run of
    equal keys) are put in a fresh uniformly random order, recursively, so the order is exactly
    uniform (i.i.d. keys are exchangeable: every order of the distinct keys is equally
    likely).  ``strip=False`` leaves the random high bits on the items outside the tied runs
    (the caller masks them, :func:`_gather_rows`).  The search for ties runs on cache-sized
    chunks (no full-size temporaries).
    """
    keys = _random_keys(rng, payload.size, low)
    keys |= payload
    return _sort_packed(rng, keys, low, strip)


def _sort_packed(
    rng: RandomSource | _Words, keys: np.ndarray, low: int, strip: bool = True
) -> np.ndarray:
    """:func:`_shuffle_packed` from its packed keys (random high bits above ``low`` payload
    bits, float sort keys: :data:`_KEY_BIT`), sorted in place (as float64 or int64: the keys'
    order either way)."""
    k = keys.size
    mask = np.uint64((1 << low) - 1)
    keys.view(_KEY_SORT).sort()
    # neighbours whose high bits tie have an XOR below 2^low (about k^2 / 2^(65 - low) pairs):
    # a chunk is searched only where its smallest XOR is (one reduction instead of a full-size
    # comparison and its test)
    ties = []
    xor = np.empty(min(_POINTS, max(k - 1, 0)), dtype=np.uint64)
    for a in range(0, k - 1, _POINTS):
        b = min(k - 1, a + _POINTS)
        x = xor[: b - a]
        np.bitwise_xor(keys[a + 1 : b + 1], keys[a:b], out=x)
        if x.min() <= mask:
            ties.append(np.flatnonzero(x <= mask) + a)
    if strip:
        keys &= mask
    if ties:  # every run of equal keys in a fresh random order
        tied = np.concatenate(ties)
        first = tied[np.concatenate(([True], tied[1:] != tied[:-1] + 1))]
        last = tied[np.concatenate((tied[1:] != tied[:-1] + 1, [True]))] + 1
        for a, b in zip(first.tolist(), last.tolist(), strict=True):
            keys[a : b + 1] = _shuffle_packed(rng, keys[a : b + 1] & mask, low)
    return keys


def _label_bits(k: int) -> int:
    """Bits of a label (an index below ``k``) in the packed keys."""
    return max(1, int(k - 1).bit_length())


def shuffle_order(rng: RandomSource | _Words, k: int) -> np.ndarray:
    """A uniformly random permutation of ``range(k)`` (int64): the indices packed below i.i.d.
    uniform random bits and sorted, ties put in a fresh random order (exactly uniform)."""
    if k <= 1:
        return np.arange(k, dtype=np.int64)
    low = _label_bits(k)
    if low > 48:  # pragma: no cover - more than 2^48 rows in memory
        return rng.permutation(k)
    return _shuffle_packed(rng, np.arange(k, dtype=np.uint64), low).view(np.int64)


def _shuffled_label_keys(
    rng: RandomSource | _Words, masses: np.ndarray, out: np.ndarray | None = None
) -> tuple[np.ndarray, int] | None:
    """:func:`shuffled_labels` as packed keys whose low ``low`` bits are the labels (their high
    bits may hold random bits), and ``low``; None when there are not two labels to shuffle or
    too many leaves to pack.  ``out``: where to build the keys (``masses.sum()`` uint64; with
    ``rng`` a :class:`_Words`, its words are read chunk by chunk into it, the same words as one
    read), else a new array."""
    k = masses.size
    low = _label_bits(k)
    m = int(masses.sum())
    if m <= 1 or low > 48:
        return None
    # the labels (leaf i repeated masses[i] times) are OR-ed into the random words chunk by
    # chunk: the same keys as _shuffle_packed of the repeated labels, without a full-size
    # array of them (fresh memory costs about as much to touch as the sort here)
    words = None  # a _Words source read chunk by chunk into out
    if out is None:
        keys = _random_keys(rng, m, low)
    elif isinstance(rng, _Words):
        keys, words = out, rng
    else:  # pragma: no cover - the placement reads _Words
        keys = out
        np.copyto(keys, _random_keys(rng, m, low))
    high = ~np.uint64((1 << low) - 1)
    ends = np.cumsum(masses)
    begins = ends - masses
    leaf = np.arange(k, dtype=np.uint64)
    if words is not None:
        leaf |= _KEY_BIT  # the float keys' bit comes with the labels
    for lo in range(0, m, _POINTS):
        hi = min(m, lo + _POINTS)
        if words is not None:  # this chunk's random words, as float sort keys (_random_keys)
            np.right_shift(words.uint64(hi - lo), _KEY_SHIFT, out=keys[lo:hi])
            keys[lo:hi] &= high
        a = int(np.searchsorted(ends, lo, side="right"))
        b = int(np.searchsorted(ends, hi - 1, side="right")) + 1
        count = np.minimum(ends[a:b], hi) - np.maximum(begins[a:b], lo)
        keys[lo:hi] |= np.repeat(leaf[a:b], count)
    return _sort_packed(rng, keys, low, strip=False), low


def shuffled_labels(rng: RandomSource | _Words, masses: np.ndarray) -> np.ndarray:
    """Label ``i`` repeated ``masses[i]`` times, in uniformly random order (int64)."""
    packed = _shuffled_label_keys(rng, masses)
    if packed is None:
        labels = np.repeat(np.arange(masses.size, dtype=np.int64), masses)
        if labels.size <= 1:
            return labels
        return labels[rng.permutation(labels.size)]  # pragma: no cover - more than 2^48 leaves
    keys, low = packed
    keys &= np.uint64((1 << low) - 1)
    return keys.view(np.int64)


def _gather_rows(
    table: np.ndarray, keys: np.ndarray, low: int, out: np.ndarray | None = None
) -> np.ndarray:
    """``table[keys & (2^low - 1)]`` for a ``(k, d)`` float table: ``np.take`` of whole rows
    (about twice as fast as a two-dimensional fancy index), the index masked chunk by chunk in
    cache.  ``out``: an ``(m, d)`` float array to write, which may hold ``keys`` in its last
    ``8 m`` bytes (as :func:`place_points` builds them): rows ``a .. b - 1`` are written after
    keys ``a .. b - 1`` are read and end at byte ``8 d b <= 8 (d - 1) m + 8 b``, so no unread
    key is overwritten."""
    k, d = table.shape
    m = keys.size
    out = np.empty((m, d), dtype=np.float64) if out is None else out
    if m == 0 or d == 0:
        return out
    src = np.ascontiguousarray(table, dtype=np.float64)
    mask = np.uint64((1 << low) - 1)
    chunk = max(1024, _POINTS // d)
    idx = np.empty(min(chunk, m), dtype=np.uint64)
    for a in range(0, m, chunk):
        b = min(m, a + chunk)
        i = idx[: b - a]
        np.bitwise_and(keys[a:b], mask, out=i)
        # every label is below k: mode='wrap' changes no index and spares the buffered 'raise' check
        np.take(src, i.view(np.int64), axis=0, out=out[a:b], mode="wrap")
    return out


class PlacementStream:
    """The randomness of point placement and of the order of the output rows (post-processing).

    Keyed by 256 bits (:func:`os.urandom` for every release; a seeded source's stream inside the
    non-private reproducible option).  Two uses, independent (distinct ``SeedSequence`` spawn
    keys of the one key):

    * :meth:`points`: the uniform offsets of the points in their leaf cells.  Point ``g`` of a
      release (its index in leaf order, the Morton order of the leaves) reads words
      ``g w .. g w + w - 1`` of one PCG64 stream (which jumps ahead to any word in
      ``O(log g)`` steps: :meth:`numpy.random.PCG64.advance`), so the points do not depend on
      how the leaves are split between the parts of a distributed run;
    * :meth:`order`: the words of a uniformly random order of a part's rows (PCG64, one
      stream per part; :func:`shuffle_order`, :func:`shuffled_labels`).

    :param key: 32 bytes
    """

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, (bytes, bytearray)) or len(key) != _KEY_BYTES:
            raise ValueError(f"key must be {_KEY_BYTES} bytes")
        self._key = bytes(key)

    def _seq(self, *spawn: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(int.from_bytes(self._key, "little"), spawn_key=spawn)

    @classmethod
    def from_random_source(cls, rng: RandomSource) -> PlacementStream:
        """A fresh :func:`os.urandom` key if ``rng`` is secure, else one read from its seeded
        stream (reproducible and **not private**: tests and figures only)."""
        if rng.secure:
            return cls(os.urandom(_KEY_BYTES))
        return cls(rng.uint64(_KEY_BYTES // 8).astype("<u8").tobytes())

    def __reduce__(self) -> tuple[Any, ...]:  # pickled for the workers of a distributed run
        return (PlacementStream, (self._key,))

    def __repr__(self) -> str:
        return "PlacementStream(key=<hidden>)"

    def points_from(self, start: int, width: int) -> np.random.Generator:
        """The point stream from point ``start`` on: ``random((count, width))`` of the returned
        generator gives points ``start .. start + count - 1``, each coordinate a multiple of
        ``2^-53`` in ``[0, 1)`` (the top 53 bits of one 64-bit word)."""
        return np.random.Generator(np.random.PCG64(self._seq(0)).advance(int(start) * int(width)))

    def points(self, start: int, count: int, width: int) -> np.ndarray:
        """Points ``start .. start + count - 1`` of the stream, ``(count, width)`` floats."""
        return self.points_from(start, width).random((int(count), int(width)))

    def order(self, part: int = 0) -> _Words:
        """The words of part ``part``'s row order (PCG64), for :func:`shuffle_order` and
        :func:`shuffled_labels`."""
        return _Words(np.random.Generator(np.random.PCG64(self._seq(1, int(part)))))


def place_points(
    leaves: LeafMasses,
    box: Box,
    placement: str,
    rng: RandomSource,
    axes: Sequence[int] | None = None,
    stream: PlacementStream | None = None,
    start: int = 0,
    part: int = 0,
) -> np.ndarray:
    """``leaves.masses[i]`` points in leaf cell ``i``, at its centre or uniform in it, mapped into
    ``box``, rows in random order.  Returns an (m, d) float array.  ``axes`` is the split order
    of the hierarchy (default cyclic): it sets the cell sides.

    Centres: the ``k`` leaf centres gathered by the leaf labels (leaf ``i`` repeated by its mass)
    in a uniformly random order.  Uniform: the points are made in leaf order a chunk at a time
    (leaf ``i``'s cell repeated by its mass plus the :meth:`PlacementStream.points` of the rows)
    and scattered to a uniformly random permutation of the rows.  Either way the memory is the
    output plus one or two integers a row.  The
    stream is keyed from ``rng``, or is ``stream`` when given: a distributed run places each
    part's leaves with the release's one stream, ``start`` being the index of the part's first
    point in the leaf order of the whole release and ``part`` the part (its rows' order).
    """
    d = box.dim
    m = leaves.total
    if m * d >= _YOUNG:
        # OpenDP's FFI keeps what a measurement returns (ctypes ExtrinsicObject pointers) in
        # reference cycles that only the garbage collector frees, so an earlier release's
        # output, dropped by the caller, still holds its memory and this output would land on
        # pages never touched before (up to 2-3 ms a MB on the project's VM: seeded d = 3
        # releases of 10^6 rows back to back took 91-127 ms median instead of 62-68).  Those
        # cycles are young: a collection of generations 0 and 1 (about 0.05 ms) frees them.
        # An earlier release's count tree may be held the same way (this release's own tree is
        # in use): then a full collection (about 115 ms in a benchmark's process), skipped
        # when no other tree holds its arrays (the adaptive releases drop theirs as they end:
        # shared_count_trees(release=True))
        if m * d >= _COLLECT and unreleased_trees() > 1:
            gc.collect()
        else:
            gc.collect(1)
    if stream is None:
        stream = PlacementStream.from_random_source(rng)
    masses = np.asarray(leaves.masses, dtype=np.int64)
    cells = leaves.cells
    width = np.ldexp(1.0, -coord_bits_at_level(leaves.depth, d, axes))  # cell side, exact
    lower = np.asarray(box.lower, dtype=np.float64)
    upper = np.asarray(box.upper, dtype=np.float64)
    # the cell side is a power of two, so (u * width) * span == u * (width * span) exactly, and
    # lower + u * span >= lower for u >= 0: one product, one sum and one clamp at the top
    step = width * (upper - lower)

    if placement == "center":  # the k centres, gathered in a random order of the labels
        centers = (cells.astype(np.float64) + 0.5) * step + lower
        np.minimum(centers, upper, out=centers)
        order = stream.order(part)
        if m > 1 and _label_bits(masses.size) <= 48:
            out = np.empty((m, d), dtype=np.float64)
            # the keys in the output's last 8 m bytes (no other full-size array): _gather_rows
            tail = out.reshape(m * d).view(np.uint64)[(d - 1) * m :]
            packed = _shuffled_label_keys(order, masses, tail)
            if packed is not None:  # always, for these m and labels
                return _gather_rows(centers, *packed, out=out)
        # at most one row, or more than 2^48 leaves
        return centers[shuffled_labels(order, masses)]
    out = np.empty((m, d), dtype=np.float64)
    if m == 0:
        return out
    dest = shuffle_order(stream.order(part), m)  # row g (leaf order) goes to row dest[g]
    points = stream.points_from(start, d)
    row = np.dtype((np.void, 8 * d))
    rows_out = out.reshape(m * d).view(row)
    ends = np.cumsum(masses)
    begins = ends - masses
    chunk = max(1024, _POINTS // d)  # rows per chunk: about _POINTS floats, in cache
    # the chunk's points, and step, lower and upper repeated once per row: each operation is one
    # contiguous pass over the chunk (not d strided ones), the same float operations per value
    u = np.empty(min(chunk, m) * d)
    tiles = [np.tile(v, min(chunk, m)) for v in (step, lower, upper)]
    for lo in range(0, m, chunk):
        hi = min(m, lo + chunk)
        a = int(np.searchsorted(ends, lo, side="right"))
        b = int(np.searchsorted(ends, hi - 1, side="right")) + 1
        count = np.minimum(ends[a:b], hi) - np.maximum(begins[a:b], lo)
        k = (hi - lo) * d
        y = np.repeat(cells[a:b].astype(np.float64), count, axis=0).reshape(k)
        uu = u[:k]
        points.random(out=uu.reshape(hi - lo, d))
        y += uu
        y *= tiles[0][:k]
        y += tiles[1][:k]
        np.minimum(y, tiles[2][:k], out=y)
        rows_out[dest[lo:hi]] = y.view(row)
    return out
