"""The dyadic hierarchy of [0, 1]^d: grid codes, Morton order, occupancy, count trees.

Level ``j`` (root ``j = 0``) splits every cell in half along one coordinate, ``axes[j]``: by
default the cyclic order ``axes[j] = j mod d``, or any public order given as ``axes`` (a
sequence of coordinates, one per level, each coordinate at most 52 times; see
:class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder`).  A point on a split plane goes to
the upper child and ``x = 1`` to the top cell.  A level-``j`` cell is a ``j``-bit prefix of the
point's interleaved (Morton) code: bit ``j`` of the code is bit ``b_c(j)`` (from the top) of
coordinate ``c = axes[j]``, where ``b_c(j)`` is the number of splits of ``c`` above level ``j``
(cyclic: bit ``j // d`` of coordinate ``j mod d``).

Points are first put on an integer grid with ``B`` bits per coordinate, ``B`` the largest
number of splits of any coordinate to ``depth`` (cyclic: ``B = ceil(depth / d)``;
``U_c = floor(x_c 2^B)``, capped at ``2^B - 1``), so a level-``j`` cell is identified by the
vector of its per-coordinate indices ``U_c >> (B - b_c(j))``.  The Morton code is held in
``ceil(depth / 64)`` words, so depth may exceed 64 bits (``d = 10`` gives depths near 150).  Sorting
the codes once makes every cell a contiguous range of the sorted points, and the longest common
prefix (lcp) of neighbours gives every level's occupied-cell count at once:
``O_j = 1 + #{i : lcp(code_i, code_{i+1}) < j}`` (He, Vershynin, Zhu 2023; Zare Moayedi et
al. 2026, Appendix A.9).

Kernel
------

* Morton codes are interleaved word-parallel (:func:`row_codes`): rows are processed in
  cache-sized chunks straight from the caller's array; per chunk the grid coordinates of all
  columns are computed at once in one ``(d, rows)`` float buffer (rescaling and clamping
  included: one multiplication per coordinate for the cube or any box with power-of-two sides),
  converted once per coordinate (through int32 when ``B <= 31``), and for each 64-bit word the
  run of the coordinate's bits that lands in it is spread ``d`` apart by multiply-and-mask steps
  (:func:`_spread_ops`: one step for at most ``d - 1`` bits, e.g. ``d = 10``; five for the 21
  bits of ``d = 3``; magic numbers computed once per ``(m, d)`` and verified bit by bit), so no
  full-size float or grid copy is made.  :func:`morton_words_bitwise` is the per-bit general
  path, which a split order other than the cyclic one takes (``axes``; chunked the same way).
* The tree sorts the code words themselves when the depth fits in one word (one ``np.sort``)
  and reads the lcp of neighbours from the float exponent of their XOR, chunk by chunk
  (:func:`_sorted_lcp`), with the level histogram, in one pass.  Beyond 64 bits it sorts
  packed keys, never ``np.argsort`` (several times slower on uint64): the top ``64 - i`` code
  bits above the row index, then, for the rows still tied, ``(run, next bits, index in the
  run)`` keys: when most rows are tied, radix passes inside chunks of whole runs that stay in
  cache (:func:`_sort_runs`: a chunk's few runs leave more code bits a pass), else rounds over
  the tied rows only, until no ties are left or the depth is reached (the runs read off the
  sorted tied positions, the rounds' moves composed into one permutation applied to the words
  once).  When a sample of the rows shows few of them tied on the first word's
  sorted bits, only the first word of every row is computed up front: after the first sort the
  deeper words are computed for the rows in tied runs only (from the input rows, gathered), and
  those of the other rows when first read (:attr:`CountTree._words`; a split reads single rows'
  words from the input), which spares most of the codes and the gathers of the deeper words on
  data with few deep ties.  It keeps the sorted words, the lcp (``uint16``) and the positions
  grouped by lcp: about ``n (8 W + 2 + 8)`` bytes besides a reference to the input (plus the
  sorted rows' input indices, ``8 n``, where the deeper words wait to be read).  An adaptive release
  frees its tree as soon as the traversal has the leaf masses (:func:`release_if_owned`).
* One tree serves every depth up to its own (:meth:`CountTree.truncated`): the first ``r`` bits
  of a depth-``L`` code are the depth-``r`` code, so the scores and the synthesis of one adaptive
  release share it (:func:`shared_count_trees`).
"""

from __future__ import annotations

import contextvars
import copy
import importlib
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np

__all__ = [
    "MAX_BITS_PER_COORD",
    "max_depth",
    "check_axes",
    "axis_of_level",
    "bits_per_coord",
    "coord_bits_at_level",
    "grid_codes",
    "morton_words",
    "morton_words_bitwise",
    "bit_length_u64",
    "CountTree",
    "capped_level_sums",
    "capped_sums_of_counts",
    "level_imbalance",
    "imbalance_of_counts",
    "build_count_tree",
    "count_tree",
    "shared_count_trees",
    "release_if_owned",
    "unreleased_trees",
]

#: the grid resolution is capped at 2^-52 per coordinate (a float in [0, 1) has 53 bits)
MAX_BITS_PER_COORD = 52

_ROWS = 1 << 15  # rows per chunk of the code kernel (a chunk's temporaries stay in cache)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_TOP = np.uint64(1 << 63)


def _avx512_sort() -> bool:
    """Whether numpy's ``np.sort`` of 64-bit items runs its AVX-512 quicksort on this CPU
    (x86-simd-sort, dispatched on numpy's ``AVX512_SKX`` feature group; False where numpy does
    not say)."""
    for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            features = importlib.import_module(name).__cpu_features__
        except (ImportError, AttributeError):
            continue
        return bool(features.get("AVX512_SKX", False))
    return False  # pragma: no cover - every numpy the package supports has one of the two


#: whether 64-bit sorts run numpy's AVX-512 quicksort (:func:`_avx512_sort`)
_SORT512 = _avx512_sort()
#: the view under which sort keys below ``2^62`` whose float64 order is their integer order
#: (the float keys of :func:`_float_keys`, of ``placement``'s shuffles and of
#: :func:`_sort_chunk`) are sorted: the same sorted array either way (equal keys are equal
#: bits), so only the speed differs.  With AVX-512 (native 64-bit integer min/max) numpy's
#: int64 sort of 10^6 keys is about 8% faster than its float64 sort (4.8 vs 5.2 ms on the
#: project's AVX-512 machine); its AVX2 sort has float64 min/max but no int64 ones, and there
#: float64 was 10-15% faster
_KEY_SORT: type[np.generic] = np.int64 if _SORT512 else np.float64
_BUCKET_BITS = 8  # codes of up to 64 + 8 bits are sorted in buckets of their top bits
# multi-word codes: radix passes inside the first sort's runs (_sort_runs) when more than this
# share of the rows is still tied after the first sort, else refinement of the tied rows
# (CountTree._refine)
_LSD_TIED_SHARE = 0.2
# multi-word codes: the deeper words of the rows in tied runs only (CountTree._sort_first_word)
# when a sample of _LAZY_SAMPLE rows has at most _LAZY_SAMPLE_TIED of its neighbours tied and
# then at most _LAZY_ROWS_SHARE of all rows are in tied runs; else of every row, up front
_LAZY_SAMPLE = 1 << 14
_LAZY_SAMPLE_TIED = 0.05
_LAZY_ROWS_SHARE = 0.05


def max_depth(d: int) -> int:
    """The deepest supported hierarchy for dimension ``d``."""
    return MAX_BITS_PER_COORD * d


def check_axes(axes: Any, d: int, depth: int, name: str = "axes") -> tuple[int, ...] | None:
    """The split order to ``depth`` as a tuple ``axes[:depth]``, or None for the cyclic order.

    :param axes: None (cyclic), or a sequence of coordinates in ``[0, d)``, one per level, of
        length at least ``depth``, no coordinate more than 52 times in its first ``depth`` entries
        (the grid resolution)
    :return: ``axes[:depth]`` as a tuple of ints, or None when that is the cyclic order (so that
        equal hierarchies have equal descriptors)
    :raises ValueError: naming ``name``
    """
    if axes is None:
        return None
    if isinstance(axes, (str, bytes)) or not isinstance(axes, Sequence):
        raise TypeError(f"{name} must be a sequence of coordinates (one per level) or None")
    if len(axes) < depth:
        raise ValueError(
            f"{name} must give a coordinate for each of the {depth} levels, got {len(axes)}"
        )
    out = []
    for a in axes[:depth]:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)) or not 0 <= a < d:
            raise ValueError(f"{name} must hold coordinates in [0, {d})")
        out.append(int(a))
    if out and int(np.bincount(out, minlength=d).max()) > MAX_BITS_PER_COORD:
        raise ValueError(f"{name} must split no coordinate more than {MAX_BITS_PER_COORD} times")
    if all(a == j % d for j, a in enumerate(out)):
        return None
    return tuple(out)


def axis_of_level(j: int, d: int, axes: Sequence[int] | None = None) -> int:
    """The coordinate split at level ``j``."""
    return j % d if axes is None else int(axes[j])


def bits_per_coord(depth: int, d: int, axes: Sequence[int] | None = None) -> int:
    """``B``: grid bits per coordinate for a depth-``depth`` hierarchy, the most splits of any
    coordinate (cyclic: ``ceil(depth / d)``)."""
    if axes is None:
        return -(-depth // d)
    return int(coord_bits_at_level(depth, d, axes).max()) if depth else 0


def coord_bits_at_level(j: int, d: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """``b_c(j)`` for every coordinate c: splits of coordinate c on the path to level ``j``."""
    if axes is None:
        c = np.arange(d)
        return np.maximum(0, (j - c + d - 1) // d)
    return np.bincount(np.asarray(axes[:j], dtype=np.int64), minlength=d).astype(np.int64)


def grid_codes(u: np.ndarray, depth: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """Integer grid coordinates ``floor(u * 2^B)`` (int64, capped) of points ``u`` in [0,1]^d."""
    d = u.shape[1]
    B = bits_per_coord(depth, d, axes)
    if B > MAX_BITS_PER_COORD:
        raise ValueError(f"depth must be <= {max_depth(d)} for d = {d}, got {depth}")
    scale = float(2**B)
    g = np.floor(u * scale)  # exact: u in [0,1], multiplication by a power of two
    np.minimum(g, scale - 1.0, out=g)
    return g.astype(np.int64)


def _box_grid(x: np.ndarray, box: Any, depth: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """``grid_codes(box.to_unit(x), depth)`` in fewer passes, with the same result.

    ``floor((x - lo) / (w 2^-B))`` clamped to ``[0, 2^B - 1]`` (NaN to 0): dividing by
    ``w 2^-B`` instead of ``w`` scales the correctly rounded quotient by exactly ``2^B`` (both
    are normal numbers, or the floor is 0 either way), which is ``floor(u 2^B)`` for the
    clamped ``u = (x - lo) / w`` of :meth:`~opendp_wasserstein.core.box.Box.to_unit`.
    """
    if box is None:
        return grid_codes(x, depth, axes)
    d = x.shape[1]
    B = bits_per_coord(depth, d, axes)
    if B > MAX_BITS_PER_COORD:
        raise ValueError(f"depth must be <= {max_depth(d)} for d = {d}, got {depth}")
    lo = np.asarray(box.lower, dtype=np.float64)
    step = (np.asarray(box.upper, dtype=np.float64) - lo) * 2.0**-B
    if float(step.min()) < 2.0**-1021:  # pragma: no cover - a box narrower than 2^-969
        return grid_codes(box.to_unit(x), depth, axes)
    with np.errstate(invalid="ignore", over="ignore"):
        v = x - lo
        v /= step
    np.floor(v, out=v)
    np.fmax(v, 0.0, out=v)  # NaN and below the box: 0
    np.minimum(v, float(2**B - 1), out=v)
    return v.astype(np.int64)


def _words(depth: int) -> int:
    return max(1, -(-depth // 64))


@cache
def _spread_steps(m: int, d: int) -> tuple[tuple[int, int], ...]:
    """Shift-or-mask steps that move bit ``i`` of an ``m``-bit field to bit ``i d``.

    Step ``k`` (from the highest power of two below ``m`` down to 1) moves the bits whose index
    has bit ``k`` set by ``2^k (d - 1)``: ``x = (x | x << s_k) & mask_k``.  Every step is linear
    over OR, so checking every single bit (done here) checks every field.
    """
    if d == 1 or m <= 1:
        return ()
    pos = list(range(m))
    steps: list[tuple[int, int]] = []
    for k in range((m - 1).bit_length() - 1, -1, -1):
        shift = (1 << k) * (d - 1)
        pos = [p + shift if (i >> k) & 1 else p for i, p in enumerate(pos)]
        mask = 0
        for p in pos:
            mask |= 1 << p
        steps.append((shift, mask))
    full = (1 << 64) - 1
    for i in range(m):
        x = 1 << i
        for shift, mask in steps:
            x = ((x | (x << shift)) & full) & mask
        if x != 1 << (i * d):  # pragma: no cover - the construction is exact for m d <= 64 + d
            raise AssertionError(f"spreading {m} bits by {d} failed at bit {i}")
    return tuple(steps)


_FULL = (1 << 64) - 1


@cache
def _spread_ops(m: int, d: int, dst: int) -> tuple[tuple[str, int, int], ...]:
    """Whole-word steps that move bit ``i`` of an ``m``-bit field (no higher bit set) to bit
    ``dst + i d`` (all below 64): ``("mul", a, mask)`` is ``x = (x * a) & mask``, ``("or", s,
    mask)`` is ``x = (x | x << s) & mask`` and ``("shl", s, 0)`` is ``x <<= s``.

    With ``c = d - 1``, the field is cut into units of ``c`` bits; unit ``u`` first moves by
    ``u c (d - 1)`` (binary splitting on ``u``, one step per bit of the unit index), then one
    multiplication by ``sum_{o < c} 2^(o (d - 1))`` moves bit ``o`` of every unit by
    ``o (d - 1)``, and the shift to ``dst`` is folded into the last multiplier.  A product is an
    OR of shifted copies exactly when the copies' possible bits are disjoint (no carry), which
    is checked for every multiplication (a step that fails the check is a shift-or); the result
    is then linear over OR and is checked bit by bit, and on the all-ones field.  For ``m <= d -
    1`` (e.g. ``d = 10``, a word holding 6 or 7 bits of each coordinate) this is one
    multiplication and one mask.
    """
    ops: list[tuple[str, int, int]] = []
    pos = list(range(m))
    support = (1 << m) - 1
    if d > 1 and m > 1:
        c = d - 1
        units = -(-m // c)
        for k in range((units - 1).bit_length() - 1, -1, -1):
            shift = (1 << k) * c * (d - 1)
            pos = [p + shift if ((i // c) >> k) & 1 else p for i, p in enumerate(pos)]
            mask = sum(1 << p for p in pos)
            kind = "mul" if support & (support << shift) & _FULL == 0 else "or"
            ops.append((kind, (1 + (1 << shift)) & _FULL if kind == "mul" else shift, mask))
            support = mask
        if c > 1:
            mult, seen = 0, 0
            for o in range(min(c, m)):
                copy = (support << (o * (d - 1))) & _FULL
                if seen & copy:  # pragma: no cover - the unit layout keeps the copies apart
                    raise AssertionError(f"spreading {m} bits by {d}: overlapping copies")
                seen |= copy
                mult |= 1 << (o * (d - 1))
            pos = [p + (i % c) * (d - 1) for i, p in enumerate(pos)]
            ops.append(("mul", mult, sum(1 << p for p in pos)))
    if dst:
        if ops and ops[-1][0] == "mul":
            _, a, mask = ops[-1]
            ops[-1] = ("mul", (a << dst) & _FULL, mask << dst)
        else:
            ops.append(("shl", dst, 0))
    steps = tuple(ops)
    for i in [*range(m), -1]:  # every single bit, then the all-ones field
        x = (1 << m) - 1 if i < 0 else 1 << i
        for kind, a, mask in steps:
            if kind == "mul":
                x = (x * a) & _FULL & mask
            elif kind == "or":
                x = (x | (x << a)) & _FULL & mask
            else:
                x = (x << a) & _FULL
        want = sum(1 << (dst + j * d) for j in range(m)) if i < 0 else 1 << (dst + i * d)
        if x != want:  # pragma: no cover - the construction is exact
            raise AssertionError(f"spreading {m} bits by {d} to {dst} failed at bit {i}")
    return steps


def _spread(
    field: np.ndarray,
    ops: tuple[tuple[str, int, int], ...],
    tmp: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Apply :func:`_spread_ops` to ``field`` (uint64, overwritten); the last mask may write to
    ``out``."""
    res = field
    for k, (kind, a, mask) in enumerate(ops):
        last = k == len(ops) - 1
        if kind == "shl":
            res = np.left_shift(field, np.uint64(a), out=out if last and out is not None else field)
            continue
        if kind == "mul":
            field *= np.uint64(a)
        else:
            np.left_shift(field, np.uint64(a), out=tmp)
            field |= tmp
        res = np.bitwise_and(field, np.uint64(mask), out=out if last and out is not None else field)
    if out is not None and res is not out:
        np.copyto(out, res)
        res = out
    return res


@cache
def _word_plan(depth: int, d: int, w: int) -> tuple[tuple[int, int, int, int], ...]:
    """For word ``w`` of a depth-``depth`` code: ``(c, src, m, dst)`` per coordinate ``c`` whose
    bits ``U_c >> src`` (``m`` of them) land, spread ``d`` apart, at bit ``dst`` upwards."""
    B = bits_per_coord(depth, d)
    lo, hi = 64 * w, min(64 * w + 64, depth)  # levels held by the word
    plan = []
    for c in range(d):
        t0 = max(0, -(-(lo - c) // d))  # first t with c + d t >= lo
        t1 = (hi - 1 - c) // d  # last t with c + d t < hi
        if t1 < t0:
            continue
        m = t1 - t0 + 1
        # level j = c + d t is bit B - 1 - t of U_c and bit 63 - (j - 64 w) of the word
        plan.append((c, B - 1 - t1, m, 63 - (c + d * t1 - 64 * w)))
    return tuple(plan)


def _morton_word(g: np.ndarray, depth: int, w: int) -> np.ndarray:
    """Word ``w`` of the Morton codes of grid rows ``g`` (uint64, shape (k, d))."""
    out = np.zeros(g.shape[0], dtype=np.uint64)
    field = np.empty_like(out)
    tmp = np.empty_like(out)
    B = bits_per_coord(depth, g.shape[1])
    for c, src, m, dst in _word_plan(depth, g.shape[1], w):
        np.right_shift(g[:, c], np.uint64(src), out=field)
        if src + m < B:
            field &= np.uint64((1 << m) - 1)
        out |= _spread(field, _spread_ops(m, g.shape[1], dst), tmp)
    return out


def morton_words(grid: np.ndarray, depth: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """The depth-bit Morton codes of grid points as ``(W, n)`` uint64 words, most significant first.

    Level ``j`` is bit ``63 - j % 64`` of word ``j // 64``.  Word-parallel bit spreading over
    chunks of rows (see the module docstring); same output as :func:`morton_words_bitwise`.  A
    split order ``axes`` other than the cyclic one takes :func:`morton_words_bitwise`.
    """
    if check_axes(axes, grid.shape[1], depth) is not None:
        return morton_words_bitwise(grid, depth, axes)
    n, d = grid.shape
    W = _words(depth)
    words = np.zeros((W, n), dtype=np.uint64)
    for lo in range(0, n, _ROWS):
        g = grid[lo : lo + _ROWS].astype(np.uint64)
        for w in range(W):
            words[w, lo : lo + g.shape[0]] = _morton_word(g, depth, w)
    return words


def morton_words_bitwise(
    grid: np.ndarray, depth: int, axes: Sequence[int] | None = None
) -> np.ndarray:
    """Morton codes by one vectorised pass per level: the general path.

    :param grid: grid codes, shape (n, d), ``B = bits_per_coord(depth, d, axes)`` bits per
        coordinate (the most splits of any coordinate; cyclic ``ceil(depth / d)``)
    :param depth: the number of code bits
    :param axes: the coordinate split at each level (default the cyclic order ``j mod d``);
        coordinate ``c``'s ``t``-th split reads its bit ``B - 1 - t``
    :return: ``(W, n)`` uint64 words as :func:`morton_words`
    """
    n, d = grid.shape
    words = np.zeros((_words(depth), n), dtype=np.uint64)
    for lo in range(0, n, _ROWS):
        g = grid[lo : lo + _ROWS].astype(np.uint64)
        words[:, lo : lo + g.shape[0]] = _bitwise_words(g, depth, axes)
    return words


def _level_plan(depth: int, d: int, axes: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per level: the coordinate split and the grid bit read (``B - 1 - b_c(j)``)."""
    B = bits_per_coord(depth, d, axes)
    coord = np.array([axis_of_level(j, d, axes) for j in range(depth)], dtype=np.int64)
    seen = np.zeros(d, dtype=np.int64)
    shift = np.empty(depth, dtype=np.int64)
    for j in range(depth):  # one entry per level (public), not per point
        shift[j] = B - 1 - seen[coord[j]]
        seen[coord[j]] += 1
    return coord, shift


def _bitwise_words(g: np.ndarray, depth: int, axes: Sequence[int] | None) -> np.ndarray:
    """All code words of grid rows ``g`` (uint64, one chunk) by one pass per level."""
    coord, shift = _level_plan(depth, g.shape[1], axes)
    words = np.zeros((_words(depth), g.shape[0]), dtype=np.uint64)
    for j in range(depth):
        bit = (g[:, coord[j]] >> np.uint64(shift[j])) & _ONE
        words[j // 64] |= bit << np.uint64(63 - j % 64)
    return words


def _unit_scaling(box: Any, B: int, d: int) -> tuple[np.ndarray | None, np.ndarray, bool] | None:
    """``(lo, factor, divide)``: the grid coordinate of ``x`` is ``(x - lo) / factor`` (``divide``)
    or ``(x - lo) * factor`` (``lo`` None: no subtraction), floored and clamped, exactly as
    :func:`_box_grid` computes it; None for a box too narrow for that (:func:`_box_grid` then).

    Subtracting ``lo = 0`` changes no float, and multiplying by the reciprocal of a power of two
    gives the correctly rounded quotient, so the cube ``[0, 1]^d`` (and any box with power-of-two
    sides) costs one multiplication per coordinate.
    """
    if box is None:
        return None, np.full((d, 1), 2.0**B), False
    lo = np.asarray(box.lower, dtype=np.float64)
    step = (np.asarray(box.upper, dtype=np.float64) - lo) * 2.0**-B
    if float(step.min()) < 2.0**-1021:  # pragma: no cover - a box narrower than 2^-969
        return None
    pow2 = bool(np.all(np.isfinite(step)) and np.all(np.frexp(step)[0] == 0.5))
    factor = (1.0 / step if pow2 else step).reshape(d, 1)
    return (None if not np.any(lo) else lo.reshape(d, 1)), factor, not pow2


def row_codes(
    x: np.ndarray,
    box: Any,
    depth: int,
    words: Sequence[int],
    rows: np.ndarray | None = None,
    axes: Sequence[int] | None = None,
    out: np.ndarray | None = None,
    sortable: bool = False,
) -> np.ndarray:
    """Code words ``words`` of input rows (all, or ``x[rows]``), computed chunk by chunk.

    The cyclic order takes the fused kernel: per chunk of rows, the grid coordinates of every
    column at once in float (clamping and rescaling included, one ``(d, rows)`` buffer), then per
    coordinate one conversion to integers (through int32 when ``B <= 31``) and, per word, the
    coordinate's field spread by :func:`_spread_ops` and OR-ed into the word; all temporaries
    are chunk-sized.  Same output as ``_morton_word(_box_grid(...))`` on every input.

    :param x: the input rows, in the box (``box`` given) or already in ``[0, 1]^d``
    :param box: a :class:`~opendp_wasserstein.core.metrics.Box` (clamp and rescale) or None
    :param axes: the split order (checked, see :func:`check_axes`; None: cyclic, word-parallel)
    :param out: where to write the words (``(len(words), n)`` uint64), else a new array
    :param sortable: write every word as its float sort key (:func:`_float_keys`: shifted
        right by 3 bits, bit 61 set; for ``depth <= 60``), each chunk while it is in cache
    """
    if sortable and depth > _FLOAT_DEPTH:
        raise ValueError(f"sortable codes need depth <= {_FLOAT_DEPTH}, got {depth}")
    n = x.shape[0] if rows is None else rows.size
    d = x.shape[1]
    B = bits_per_coord(depth, d, axes)
    if B > MAX_BITS_PER_COORD:
        raise ValueError(f"depth must be <= {max_depth(d)} for d = {d}, got {depth}")
    scaling = None if axes is not None else _unit_scaling(box, B, d)
    if out is None:
        out = np.empty((len(words), n), dtype=np.uint64)
    elif out.shape != (len(words), n) or out.dtype != np.uint64:
        raise ValueError(f"out must be a ({len(words)}, {n}) uint64 array")
    if scaling is None:  # a split order (one pass per level), or a very narrow box
        for lo in range(0, n, _ROWS):
            part = x[lo : lo + _ROWS] if rows is None else x[rows[lo : lo + _ROWS]]
            g = _box_grid(part, box, depth, axes).view(
                np.uint64
            )  # non-negative int64: the same bits
            if axes is None:  # pragma: no cover - a box narrower than 2^-969
                for i, w in enumerate(words):
                    out[i, lo : lo + g.shape[0]] = _morton_word(g, depth, w)
            else:
                out[:, lo : lo + g.shape[0]] = _bitwise_words(g, depth, axes)[list(words)]
            if sortable:
                _float_keys(out[:, lo : lo + g.shape[0]])
        return out
    shift, factor, divide = scaling
    # per coordinate: (word row, src, m, spread ops); the first coordinate writing a word assigns it
    fields: list[list[tuple[int, int, int, tuple[tuple[str, int, int], ...]]]] = [
        [] for _ in range(d)
    ]
    writer: dict[int, int] = {}
    for i, w in enumerate(words):
        for c, src, m, dst in _word_plan(depth, d, w):
            fields[c].append((i, src, m, _spread_ops(m, d, dst)))
            writer.setdefault(i, c)
    if len(writer) < len(words):  # a word no coordinate writes (beyond the depth) stays 0
        out.fill(0)
    R = max(1, min(_ROWS, n))
    v = np.empty((d, R))
    g = np.empty(R, dtype=np.uint64)
    f = np.empty(R, dtype=np.uint64)
    tmp = np.empty(R, dtype=np.uint64)
    narrow = np.empty(R, dtype=np.int32) if B <= 31 else None
    top = float(2**B - 1)
    with np.errstate(invalid="ignore", over="ignore"):
        for a in range(0, n, R):
            b = min(n, a + R)
            k = b - a
            part = x[a:b] if rows is None else x[rows[a:b]]
            vv = v[:, :k]
            if shift is None:
                (np.divide if divide else np.multiply)(part.T, factor, out=vv)
            else:
                np.subtract(part.T, shift, out=vv)
                if divide:
                    vv /= factor
                else:
                    vv *= factor
            np.fmax(vv, 0.0, out=vv)  # NaN and below the box: 0
            np.minimum(vv, top, out=vv)  # in [0, 2^B - 1]: truncation is the floor
            gg, ff, tt = g[:k], f[:k], tmp[:k]
            for c in range(d):
                if not fields[c]:
                    continue
                if narrow is not None:
                    np.copyto(narrow[:k], vv[c], casting="unsafe")
                    np.copyto(gg, narrow[:k], casting="unsafe")
                else:
                    np.copyto(gg.view(np.int64), vv[c], casting="unsafe")
                for j, (i, src, m, ops) in enumerate(fields[c]):
                    fld = (
                        gg if j == len(fields[c]) - 1 else ff
                    )  # the last field may overwrite the grid
                    if src:
                        np.right_shift(gg, np.uint64(src), out=fld)
                    elif fld is not gg:
                        np.copyto(fld, gg)
                    if src + m < B:
                        fld &= np.uint64((1 << m) - 1)
                    dest = out[i, a:b]
                    if writer[i] == c:
                        _spread(fld, ops, tt, out=dest)
                    else:
                        dest |= _spread(fld, ops, tt)
            if sortable:
                _float_keys(out[:, a:b])
    return out


def _xor_fields(
    word: np.ndarray,
    a: int,
    b: int,
    stop: np.uint64 | None,
    x: np.ndarray,
    y: np.ndarray,
    fl: np.ndarray,
    below63: bool = False,
) -> np.ndarray:
    """The float exponent fields of ``(word[i] ^ word[i + 1]) | stop`` for ``i`` in ``[a, b)``,
    rounding kept off by clearing the bits below the 53 after the leading one (see
    :func:`_sorted_lcp`); written into ``y[: b - a]`` (returned), with ``x`` and ``fl`` as
    scratch.  ``below63``: every XOR is below ``2^63`` (the words are float sort keys, bits 63
    and 62 clear), so it converts to float from its int64 view, the same value (numpy's int64
    to float64 conversion is about 1.6x faster than its uint64 one on a chunk in cache)."""
    k = b - a
    xx, yy = x[:k], y[:k]
    np.bitwise_xor(word[a + 1 : b + 1], word[a:b], out=xx)
    if stop is not None:
        xx |= stop
    np.right_shift(xx, np.uint64(53), out=yy)
    np.invert(yy, out=yy)
    xx &= yy
    np.copyto(fl[:k], xx.view(np.int64) if below63 else xx, casting="unsafe")
    np.right_shift(fl[:k].view(np.uint64), np.uint64(52), out=yy)
    return yy


def _sorted_lcp(word: np.ndarray, depth: int) -> np.ndarray:
    """``lcp[i] = min(depth, 64 - bit_length(word[i] ^ word[i + 1]))`` (uint16) for the first
    code words of sorted rows, or 1086 where they are equal and ``depth > 64`` (ties, refined by
    the caller).  Chunk by chunk, from the float exponent of the XOR of neighbours.

    The conversion to float rounds to nearest: clearing the bits below the 53 bits that
    follow the leading one (``x & ~(x >> 53)`` clears at least the rounding bit) keeps it from
    rounding up to the next power of two, so the exponent is ``bit_length - 1`` (the field reads
    ``1022 + bit_length``, 0 for 0).  With ``depth < 64`` bit ``63 - depth`` of every word is 0,
    and setting it in the XOR bounds the lcp by ``depth`` without a minimum.
    """
    n = word.size
    out = np.empty(max(n - 1, 0), dtype=np.uint16)
    R = max(1, min(_ROWS, n - 1))
    x = np.empty(R, dtype=np.uint64)
    y = np.empty(R, dtype=np.uint64)
    fl = np.empty(R, dtype=np.float64)
    stop = np.uint64(1 << (63 - depth)) if depth < 64 else None
    for a in range(0, n - 1, R):
        b = min(n - 1, a + R)
        yy = _xor_fields(word, a, b, stop, x, y, fl)
        o = out[a:b]
        np.copyto(o, yy, casting="unsafe")
        np.subtract(np.uint16(1086), o, out=o)
    if depth == 64:
        np.minimum(out, np.uint16(64), out=out)
    return out


#: one-word codes of at most this depth are sorted as float64 keys (:func:`_sort_one_word`)
_FLOAT_DEPTH = 60
_FLOAT_SHIFT = np.uint64(3)
_FLOAT_BIT = np.uint64(1 << 61)
#: the float exponent field of the XOR of two float keys, minus their lcp (see _sorted_lcp)
_FLOAT_FIELD = 1083


def _float_keys(words: np.ndarray) -> None:
    """Codes of at most 61 bits (the low 3 bits of every word zero) made float sort keys, in
    place: ``(w >> 3) | 2^61``.  Bit 63 (the sign) is 0 and the exponent field (bits 62..52)
    is in ``[2^9, 2^10)``, so every key read as float64 is a positive normal number, and the
    float order of such numbers is the integer order of their bits: the codes' order."""
    words >>= _FLOAT_SHIFT
    words |= _FLOAT_BIT


def _sort_one_word(
    word: np.ndarray, depth: int, keys: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Sort one-word codes in place; return their lcp (:func:`_sorted_lcp`) and its histogram
    (:func:`_lcp_histogram`).

    ``keys``: ``word`` holds the codes as float sort keys (:func:`_float_keys`, ``depth <=
    60``): one ``np.sort`` of the keys as :data:`_KEY_SORT` (float64 on AVX2: 10-15% faster
    than the int64 sort of :func:`_sort_u64` there; int64 with AVX-512, the same array), then
    one pass, chunk by chunk in cache, reads the lcp of neighbours off the keys' XOR (the same
    XOR shifted by 3 bits), counts it from the float exponent field (int64: no cast for
    ``np.bincount``) and restores the codes (bit 61 cleared, shifted back).  Same sorted codes,
    lcp and histogram as the int64 path."""
    if not keys:
        _sort_u64(word)
        lcp = _sorted_lcp(word, depth)
        return lcp, _lcp_histogram(lcp, depth)
    if depth > _FLOAT_DEPTH:
        raise ValueError(f"float keys need depth <= {_FLOAT_DEPTH}, got {depth}")
    n = word.size
    word.view(_KEY_SORT).sort()
    out = np.empty(max(n - 1, 0), dtype=np.uint16)
    fields = np.zeros(_FLOAT_FIELD + 1, dtype=np.int64)
    R = max(1, min(_ROWS, n - 1))
    x = np.empty(R, dtype=np.uint64)
    y = np.empty(R, dtype=np.uint64)
    fl = np.empty(R, dtype=np.float64)
    stop = np.uint64(1 << (_FLOAT_DEPTH - depth))  # bit 63 - depth of the codes, shifted
    for a in range(0, n - 1, R):
        b = min(n - 1, a + R)
        yy = _xor_fields(word, a, b, stop, x, y, fl, below63=True)  # word[b] is still a key
        fields += np.bincount(yy.view(np.int64), minlength=_FLOAT_FIELD + 1)
        o = out[a:b]
        np.copyto(o, yy, casting="unsafe")
        np.subtract(np.uint16(_FLOAT_FIELD), o, out=o)
        _restore_keys(word[a:b])
    _restore_keys(word[max(n - 1, 0) :])
    # lcp v <-> field 1083 - v, v = 0 .. depth
    hist = fields[_FLOAT_FIELD - depth :][::-1].copy()
    return out, hist


def _restore_keys(words: np.ndarray) -> None:
    """The inverse of :func:`_float_keys`, in place: one shift left by 3 bits, which carries
    the key's bit 61 out of the word (bits 63 and 62 of a key are 0, so no code bit is lost)."""
    words <<= _FLOAT_SHIFT


def _sort_u64(keys: np.ndarray, restore: bool = True) -> None:
    """Sort uint64 ``keys`` in place in their uint64 order, as int64 with the top bit flipped
    (the same order; numpy's AVX2 int64 sort is faster than its uint64 sort), or as uint64
    where numpy sorts 64-bit items with AVX-512 (:data:`_SORT512`: the two as fast, so the two
    passes that flip the bit are spared).  ``restore=False`` leaves the top bit flipped, for
    keys whose top bit is masked off or only XOR-ed with a neighbour's afterwards."""
    if restore and _SORT512:
        keys.sort()
        return
    keys ^= _TOP
    keys.view(np.int64).sort()
    if restore:
        keys ^= _TOP


def _lcp_histogram(lcp: np.ndarray, depth: int) -> np.ndarray:
    """``hist[v] = #{i : lcp[i] = v}`` for ``v = 0 .. depth`` (int64), chunk by chunk:
    ``np.bincount`` casts its input to intp, so a chunk of ``2^13`` rows keeps that copy (64 KB)
    in cache and below the allocator's mmap threshold (a chunk of ``2^20`` rows made an 8 MB
    temporary whose fresh pages cost about ten times the count itself)."""
    hist = np.zeros(depth + 1, dtype=np.int64)
    for a in range(0, lcp.size, 1 << 13):
        hist += np.bincount(lcp[a : a + (1 << 13)], minlength=depth + 1)
    return hist


def _bit_length_popcount(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """:func:`bit_length_u64` by smearing the top bit down and counting bits (numpy >= 2.0)."""
    x = np.asarray(x)
    x = x if overwrite and x.dtype == np.uint64 else x.astype(np.uint64, copy=True)
    tmp = np.empty_like(x)
    for s in (1, 2, 4, 8, 16, 32):
        np.right_shift(x, np.uint64(s), out=tmp)
        x |= tmp
    del tmp
    return np.bitwise_count(x).astype(np.int64)


def _bit_length_frexp(x: np.ndarray) -> np.ndarray:
    """:func:`bit_length_u64` from the float exponent of each 32-bit half (any numpy).

    A value below ``2**32`` is exact in float64, and ``frexp(v)[1]`` is its bit length (0 for 0).
    About twice the time of the popcount version (10 vs 5 ms per million on the project's
    machine), which is negligible next to the sort it follows.
    """
    x = np.asarray(x).astype(np.uint64, copy=False)
    hi = x >> np.uint64(32)
    upper = hi != 0
    half = np.where(upper, hi, x & np.uint64(0xFFFFFFFF)).astype(np.float64)
    bits = np.frexp(half)[1].astype(np.int64)
    bits[upper] += 32
    return bits


def bit_length_u64(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0), vectorised.  ``overwrite``: ``x``
    (a uint64 array) may be used as scratch space.

    :example:

    >>> bit_length_u64(np.array([0, 1, 6, 2**63], dtype=np.uint64)).tolist()
    [0, 1, 3, 64]
    """
    if _HAS_BITWISE_COUNT:
        return _bit_length_popcount(x, overwrite)
    return _bit_length_frexp(x)  # numpy < 2.0 has no bitwise_count


_HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")


def _bits_of(words: np.ndarray, rows: np.ndarray, start: int, count: int) -> np.ndarray:
    """Code bits ``start .. start + count - 1`` (``count <= 64``) of the codes ``words[:, rows]``,
    the first of them the most significant bit of the result (uint64 below ``2^count``)."""
    w_a, w_b = start // 64, (start + count - 1) // 64
    off = start % 64
    top = words[w_a, rows]
    if off:
        top = top << np.uint64(off)
    if w_b > w_a:
        top |= words[w_b, rows] >> np.uint64(64 - off)
    return top >> np.uint64(64 - count) if count < 64 else top


def _take(src: np.ndarray, rows: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``src[rows]`` into ``out``: ``np.take`` with ``mode="wrap"`` (every index is in range, so
    the mode changes nothing and spares the bounds check), about twice as fast as fancy
    indexing a row of a 2-D array on a million random positions."""
    return np.take(src, rows, mode="wrap", out=out)


def _permute_words(words: np.ndarray, order: np.ndarray, first: int = 0) -> None:
    """``words[w] = words[w][order]`` for ``w >= first``, one word of temporary memory."""
    if first >= words.shape[0]:
        return
    buf = np.empty(words.shape[1], dtype=np.uint64)
    for w in range(first, words.shape[0]):
        words[w] = _take(words[w], order, buf)


#: the bits of a :func:`_sort_chunk` key (run, digit, index in the run), sorted as float64:
#: with bits 63 and 62 clear every key is a non-negative finite float (subnormal below 2^52;
#: IEEE comparisons order these exactly, as integers), and numpy's AVX2 float64 sort is about
#: 12% faster than its int64 sort on a chunk in cache (with AVX-512 the int64 sort is the faster,
#: :data:`_KEY_SORT`).  Where the thread treats subnormals as zero (denormals-are-zero, switched
#: on by a library built with ``-ffast-math``), the keys sort as int64: the same order
#: (:func:`_subnormals_ordered`)
_KEY_BITS = 62


def _subnormals_ordered() -> bool:
    """Whether this thread's floating-point mode orders subnormal float64 numbers (it does
    unless denormals-are-zero is on: then every subnormal compares equal to 0).

    >>> _subnormals_ordered()
    True
    """
    tiny = np.array([0.0, 5e-324])  # 0 and the smallest subnormal
    return bool(tiny[1] > tiny[0])


#: rows per chunk of :func:`_sort_runs`, about (a chunk is whole runs: it ends at the first run
#: start past a multiple of this): a chunk's keys, frame and permutation stay in cache
_RUN_ROWS = 1 << 15


def _sort_runs(words: np.ndarray, lcp: np.ndarray, start: int, depth: int) -> None:
    """Sort multi-word codes already in order of their first ``start`` bits, in place, and set
    the lcp of the pairs tied on those bits (``lcp > 64`` marks them, as :func:`_sorted_lcp`
    leaves the first sort's keys; the other pairs' lcp is below ``start`` and stays).

    The runs of tied rows are cut into chunks of whole runs, about :data:`_RUN_ROWS` rows each
    (the first run start at or after every multiple of it; a run never spans two chunks), and
    each chunk is sorted on its own (:func:`_sort_chunk`) while it is in cache; the chunks'
    short last digits are sorted at the end, in one :func:`_sort_tail` over the rows still tied
    in any chunk.  Only the speed depends on the cut, never the result."""
    n = words.shape[1]
    starts = np.flatnonzero(lcp <= 64)  # pair p untied: a run starts at p + 1
    starts += 1
    at = np.searchsorted(starts, np.arange(_RUN_ROWS, n, _RUN_ROWS, dtype=np.int64))
    bounds = np.unique(np.concatenate(([0], starts[at[at < starts.size]], [n])))
    del starts, at
    size = int((bounds[1:] - bounds[:-1]).max())
    work = _ChunkBuffers(size)
    stop = depth  # the fewest bits a chunk's passes sorted (its short last digit left over)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if b - a > 1:
            stop = min(stop, _sort_chunk(words[:, a:b], lcp[a : b - 1], start, depth, work, True))
    del work
    if stop < depth:  # the chunks' last digits: once, over the runs of all chunks still tied
        _sort_tail(words, lcp, stop, depth)


class _ChunkBuffers:
    """The scratch arrays of :func:`_sort_chunk`, allocated once for the largest chunk."""

    def __init__(self, size: int) -> None:
        self.index = np.arange(size, dtype=np.int64)
        self.key = np.empty(size, dtype=np.uint64)
        self.tmp = np.empty(size, dtype=np.uint64)
        self.frame = np.empty(size, dtype=np.uint64)
        self.first = np.empty(size, dtype=np.int64)
        self.perm = np.empty(size, dtype=np.int64)
        self.spare = np.empty(size, dtype=np.int64)
        self.head = np.empty(size, dtype=bool)
        self.lcp = np.empty(size, dtype=np.uint16)
        self.exp = np.empty(size, dtype=np.uint16)


def _sort_chunk(
    cw: np.ndarray,
    lc: np.ndarray,
    start: int,
    depth: int,
    work: _ChunkBuffers,
    defer: bool = False,
) -> int:
    """Sort the codes ``cw`` (``(W, m)``, whole runs of rows tied on their first ``start`` bits,
    ``lc > 64`` marking the tied pairs) in place and set their lcp ``lc``.

    Least-significant-digit radix passes over the code bits from ``start`` on, ``c`` bits a
    pass, each one ``np.sort`` of ``(run, digit, index in the run)`` keys (the run above keeps
    every run in its positions, the index below makes the pass stable) of
    :data:`_KEY_BITS` = 62 bits, sorted as float64: ``c = 62 - r - ir`` with ``r`` bits for the
    chunk's runs and ``ir`` for its longest run, so a chunk of few runs sorts more bits a pass
    than one frame over every row would.  A digit that spans two words is joined in the codes'
    order and gathered once.  The digit of each position is
    gathered through the permutation so far, the passes' moves are composed, and the words are
    permuted once at the end; the lcp is then read off the sorted words (:func:`_chunk_lcp`,
    or :func:`_sorted_words_lcp` for depths above 1022).  A last digit of at most half a pass's
    bits is not sorted over every row: :func:`_sort_tail` sorts it inside the runs still tied
    above it, here, or (``defer``) the caller does, once for all its chunks.  Returns the bits
    the codes are sorted on (``stop``, the tail's start, when a deferred tail is left; else
    ``depth``)."""
    m = cw.shape[1]
    head = work.head[:m]
    head[0] = True
    np.less_equal(lc, 64, out=head[1:])  # a run starts after every untied pair
    if bool(head.all()):  # no tied pair
        return depth
    index = work.index[:m]
    run = work.frame[:m].view(np.int64)
    np.cumsum(head, out=run)
    run -= 1
    first = work.first[:m]
    np.multiply(head, index, out=first)
    np.maximum.accumulate(first, out=first)  # where each position's run starts
    perm = work.perm[:m]
    np.subtract(index, first, out=perm)  # the index in the run
    r = int(run[-1]).bit_length()
    ir = max(1, int(perm.max()).bit_length())
    c = _KEY_BITS - r - ir
    if c < 1:  # pragma: no cover - more than 2^31 rows
        raise ValueError("the count tree holds at most 2^31 rows")
    frame = work.frame[:m]
    frame <<= np.uint64(c + ir)
    frame |= perm.view(np.uint64)
    low = np.uint64((1 << ir) - 1)
    as_float = _subnormals_ordered()  # the thread's mode, read once per chunk
    key, tmp, spare = work.key[:m], work.tmp[:m], work.spare[:m]
    passes = -(-(depth - start) // c)
    tail = depth - start - (passes - 1) * c  # the last digit's bits
    # a short last digit is sorted only inside the runs still tied above it (_sort_tail)
    stop = start + (passes - 1) * c if passes > 1 and 2 * tail <= c else depth
    for p, lo in enumerate(reversed(range(start, stop, c))):
        count = min(c, stop - lo)
        w_a, w_b, off = lo // 64, (lo + count - 1) // 64, lo % 64
        if w_b > w_a:  # the digit spans two words: joined in the codes' order (off > 0)
            np.left_shift(cw[w_a], np.uint64(off), out=key if not p else tmp)
            np.right_shift(cw[w_b], np.uint64(64 - off), out=tmp if not p else key)
            if p:  # then gathered once: the digit of the code now at each position
                tmp |= key
                _take(tmp, perm, key)
            else:
                key |= tmp
        else:
            if p:
                _take(cw[w_a], perm, key)  # the digit of the code now at each position
            else:
                np.copyto(key, cw[w_a])
            if off:
                key <<= np.uint64(off)
        key >>= np.uint64(64 - count - ir)  # the digit at bit ir
        key &= ~low
        key |= frame
        key.view(_KEY_SORT if as_float else np.int64).sort()  # bits 63, 62 clear: one order
        key &= low
        src = key.view(np.int64)
        src += first  # the position in the previous pass's order
        if p:
            _take(perm, src, spare)
            perm, spare = spare, perm
        else:
            np.copyto(perm, src)
    for w in range(start // 64, cw.shape[0]):  # earlier words are equal within a run
        _take(cw[w], perm, tmp)
        np.copyto(cw[w], tmp)
    if depth + 64 > 1086:  # pragma: no cover - d > 20: the lcp word by word
        lc[:] = _sorted_words_lcp(cw, depth)
    else:
        _chunk_lcp(cw, lc, start, depth, work)
    if stop < depth and not defer:
        _sort_tail(cw, lc, stop, depth, work)
        return depth
    return stop


def _sort_tail(
    cw: np.ndarray, lc: np.ndarray, stop: int, depth: int, work: _ChunkBuffers | None = None
) -> None:
    """Finish :func:`_sort_chunk` when its passes stopped at ``stop`` bits: the rows in runs
    tied on their first ``stop`` bits (``lc >= stop``: the lcp read off the words, whose bits
    below ``stop`` are not sorted yet) are gathered, sorted on their own by :func:`_sort_chunk`
    from ``stop`` on, and put back with their lcp.  On points of a curve at ``d = 10`` (depth
    196, 10^6 rows) the passes stop at 176 or 179 bits (44 or 45 bits a pass), and 11.7% of
    the pairs are still tied at 176: this spares the last pass over the other rows.
    :func:`_sort_runs` calls it once over all its chunks, from the fewest bits any chunk sorted
    (runs already sorted further are sorted again, to the same order), instead of once per
    chunk."""
    tie = lc >= stop  # the pairs tied on the first stop bits
    fix = np.flatnonzero(tie)
    if not fix.size:
        return
    mark = np.zeros(cw.shape[1], dtype=bool)  # the rows of those pairs
    mark[:-1] = tie
    mark[1:] |= tie
    rows = np.flatnonzero(mark)
    del mark
    # the earlier words are equal within these runs: not gathered nor moved (zeros stand in:
    # equal too, for the lcp read word by word)
    w0 = stop // 64
    sub = np.zeros((cw.shape[0], rows.size), dtype=np.uint64)
    for w in range(w0, cw.shape[0]):  # word by word: a 2-D fancy index is several times slower
        _take(cw[w], rows, sub[w])
    tied = tie[rows[:-1]]  # a tied pair's second row is the next of rows
    del tie
    sub_lc = np.where(tied, np.uint16(1086), np.uint16(0))  # 0: rows of different runs
    if work is None or work.index.size < rows.size:
        work = _ChunkBuffers(rows.size)
    _sort_chunk(sub, sub_lc, stop, depth, work)  # the caller's buffers are free again
    for w in range(w0, cw.shape[0]):
        cw[w, rows] = sub[w]
    lc[fix] = sub_lc[tied]  # the tied pairs are fix, in order


def _chunk_lcp(cw: np.ndarray, lc: np.ndarray, start: int, depth: int, work: _ChunkBuffers) -> None:
    """The lcp ``lc`` of the sorted codes ``cw`` of :func:`_sort_chunk` (``depth + 64 <= 1086``):
    the pairs tied on the first ``start`` bits get ``min(depth, min_w v_w)`` with ``v_w = 64 w
    + 1086 - e_w`` and ``e_w`` the float exponent field of word ``w``'s XOR (``1022 +
    bit_length``, 0 for 0): ``64 w + 64 - bit_length`` where the XOR is not 0, else at least
    1086, so the minimum is read at the first differing word without a mask.  Word ``start //
    64`` is read below the tied bits only (its XOR there is below ``2^53``: exact), so an
    untied pair keeps its lcp (below ``start``); later words clear the bits that would round the
    float up (as :func:`_sorted_lcp`).  Plain whole-chunk passes, except for the last word when
    at most a quarter of the pairs are equal on all the words before it (``acc >= 64 w``): only
    those read it (:func:`_word_field`; any other pair's ``v_w >= 64 w`` exceeds its minimum).
    On the d = 10 curve (depth 196) 4% of the pairs reach the last word's 4 bits."""
    k = cw.shape[1] - 1
    acc, e = work.lcp[:k], work.exp[:k]
    x, y = work.key[:k], work.tmp[:k]
    fl = work.first[:k].view(np.float64)
    np.copyto(acc, lc)  # untied pairs: their lcp (below start); tied: 1086
    w0, low = start // 64, 64 - start % 64
    last = cw.shape[0] - 1
    for w in range(w0, cw.shape[0]):
        if w == last and w > w0:  # the last word decides only the pairs equal on all others
            reach = np.flatnonzero(acc >= 64 * w)  # (acc <= 64 w + 64 - bit_length: any other
            if 4 * reach.size <= k:  # pair's v_w >= 64 w > acc leaves its minimum alone)
                if reach.size:
                    acc[reach] = np.minimum(acc[reach], _word_field(cw[w], reach, 64 * w + 1086))
                break
        np.bitwise_xor(cw[w, 1:], cw[w, :-1], out=x)
        if w == w0 and low < 64:
            x &= np.uint64((1 << low) - 1)
        if w > w0 or low > 53:
            np.right_shift(x, np.uint64(53), out=y)
            np.invert(y, out=y)
            x &= y
        np.copyto(fl, x, casting="unsafe")
        np.right_shift(fl.view(np.uint64), np.uint64(52), out=y)
        np.copyto(e, y, casting="unsafe")
        np.subtract(np.uint16(64 * w + 1086), e, out=e)
        np.minimum(acc, e, out=acc)
    np.minimum(acc, np.uint16(depth), out=lc)


def _word_field(word: np.ndarray, pairs: np.ndarray, base: int) -> np.ndarray:
    """``base - e`` (uint16) for the pairs ``(p, p + 1)`` of ``pairs`` of one code word, ``e``
    the float exponent field of their XOR with the rounding bits cleared (as
    :func:`_chunk_lcp` reads a whole word)."""
    x = np.take(word, pairs + 1, mode="wrap")
    x ^= np.take(word, pairs, mode="wrap")
    x &= ~(x >> np.uint64(53))
    e = (x.astype(np.float64).view(np.uint64) >> np.uint64(52)).astype(np.uint16)
    return np.subtract(np.uint16(base), e, out=e)


def _sorted_words_lcp(words: np.ndarray, depth: int) -> np.ndarray:
    """The lcp (uint16, at most ``depth``) of neighbours of sorted multi-word codes, chunk by
    chunk: the XOR of neighbours' first word, replaced, for the pairs equal so far, by the XOR
    of their next word (with ``64 w`` bits counted as common), until no pair of the chunk is
    equal so far; then one bit length of that first differing word's XOR per pair (the float
    exponent, as in :func:`_sorted_lcp`).  Sequential passes in cache, a chunk's later words
    read only while it has pairs tied so far."""
    W, n = words.shape
    out = np.empty(max(n - 1, 0), dtype=np.uint16)
    R = max(1, min(_ROWS, n - 1))
    x = np.empty(R, dtype=np.uint64)
    y = np.empty(R, dtype=np.uint64)
    fl = np.empty(R, dtype=np.float64)
    fbits = fl.view(np.uint64)
    base = np.empty(R, dtype=np.uint16)
    tied = np.empty(R, dtype=bool)
    for a in range(0, n - 1, R):
        b = min(n - 1, a + R)
        k = b - a
        xx, yy, bb, tt, o = x[:k], y[:k], base[:k], tied[:k], out[a:b]
        np.bitwise_xor(words[0, a + 1 : b + 1], words[0, a:b], out=xx)
        bb.fill(0)
        for w in range(1, W):
            np.equal(xx, _ZERO, out=tt)  # equal on the words so far
            if not tt.any():
                break
            np.bitwise_xor(words[w, a + 1 : b + 1], words[w, a:b], out=yy)
            np.copyto(xx, yy, where=tt)
            np.add(bb, np.uint16(64), out=bb, where=tt)
        np.right_shift(xx, np.uint64(53), out=yy)
        np.invert(yy, out=yy)
        xx &= yy  # no rounding up to the next power of two (see _sorted_lcp)
        np.copyto(fl[:k], xx, casting="unsafe")
        np.right_shift(fbits[:k], np.uint64(52), out=yy)  # 1022 + bit length, 0 for 0
        np.copyto(o, yy, casting="unsafe")
        np.subtract(np.uint16(1086), o, out=o)  # 64 - bit length; 1086 where equal
        np.minimum(o, np.uint16(64), out=o)
        o += bb
    np.minimum(out, np.uint16(depth), out=out)
    return out


def _few_ties(x: np.ndarray, box: Any, depth: int, axes: Sequence[int] | None) -> bool:
    """Whether a sample of the rows (every ``k``-th, about :data:`_LAZY_SAMPLE` of them) has
    at most :data:`_LAZY_SAMPLE_TIED` of its sorted neighbours tied on the first word's bits
    above the row index (the bits :meth:`CountTree._first_sort` sorts).  Only the speed
    depends on it (the deeper words of few rows, or of all, up front), never the tree."""
    n = x.shape[0]
    i = max(1, (n - 1).bit_length())
    sample = x[:: max(1, n // _LAZY_SAMPLE)]
    word = row_codes(sample, box, depth, [0], axes=axes)[0]
    word >>= np.uint64(i)
    word.sort()
    return int(np.count_nonzero(word[1:] == word[:-1])) <= _LAZY_SAMPLE_TIED * word.size


class CountTree:
    """The exact hierarchical counts of a dataset, held lazily (private).

    The points are kept in Morton order, implicitly: their sorted code words, the lcp of
    neighbours and the positions grouped by lcp.  A cell's points are a contiguous range
    ``[lo, hi)`` of that order, and the children of a cell at level ``j`` split that range where
    the neighbours' common prefix is exactly ``j`` bits long.  Nothing here is private-safe to
    release: it is the *input* of the tree Laplace measurements.

    :param x: the rows, shape (n, d): inside ``box`` (clamped and rescaled) or, without a box,
        already in ``[0, 1]^d``; only read
    :param depth: the hierarchy depth r
    :param box: the public box, or None
    :param axes: the split order (see :func:`check_axes`), default cyclic
    :param keep_input: keep a reference to ``x`` (only :attr:`grid` reads it)
    """

    def __init__(
        self,
        x: np.ndarray,
        depth: int,
        box: Any = None,
        axes: Sequence[int] | None = None,
        keep_input: bool = True,
    ) -> None:
        n, d = x.shape
        self.n, self.d, self.depth = int(n), int(d), int(depth)
        self._full_depth = int(depth)
        self._x, self._box = (x if keep_input else None), box
        self._axes_full = check_axes(axes, self.d, self.depth)
        self.axes = self._axes_full
        W = _words(depth)
        # the deeper words of the rows that no tie needs are computed on first read (from the
        # kept input): {"order": the input row of each sorted position, "runs": the positions
        # whose deeper words are computed}, empty when every word is
        self._lazy: dict[str, np.ndarray] = {}
        if (
            W > 1
            and n > 1
            and depth > 64 + _BUCKET_BITS
            and keep_input
            and _few_ties(x, box, depth, self._axes_full)
        ):
            words, lcp = self._sort_first_word(x)
        else:
            keys = W == 1 and n > 1 and depth <= _FLOAT_DEPTH  # float sort keys
            words = row_codes(x, box, depth, list(range(W)), axes=self._axes_full, sortable=keys)
            if W == 1 or n <= 1:
                lcp, hist = _sort_one_word(words[0], depth, keys)  # lcp: uint16, <= depth
            elif depth <= 64 + _BUCKET_BITS:
                words, lcp = self._sort_two_words(words)
            else:
                words, lcp = self._sort_words(words)
        del x
        self._buffer = words
        self.lcp = lcp
        if W > 1 and n > 1:
            hist = _lcp_histogram(lcp, depth)
        self._lcp_starts = np.concatenate(([0], np.cumsum(hist))).astype(np.int64)
        # positions grouped by lcp value (see _grouped), built on first use for the levels a
        # traversal reads, shared with the truncated views: {"depth": d, "positions": array}
        self._grouped_cache: dict[str, Any] = {}
        self._views: list[weakref.ref[CountTree]] = []  # shared with the truncated views
        _UNRELEASED.add(self)

    def release(self) -> None:
        """Drop the tree's arrays, and those of its truncated views, now: the tree is unusable
        afterwards.  A release that owns its trees (:func:`shared_count_trees` with
        ``release=True``) frees them as it ends, even where OpenDP's ctypes keep-alive cycles still
        reach the tree object, so no later release needs a full garbage collection to get the memory
        back."""
        for tree in [self, *(r() for r in self._views)]:
            if tree is not None:
                tree._buffer = tree.lcp = tree._x = None  # type: ignore[assignment]
        self._lazy.clear()
        self._grouped_cache.clear()
        self._views.clear()
        _UNRELEASED.discard(self)

    def _sort_two_words(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Codes of ``64 + b`` bits (``b <= 8``) in lexicographic order, and their lcp, without a
        permutation: rows with equal codes are interchangeable, so it is enough to sort the
        codes.  The top ``b`` bits pick one of ``2^b`` buckets (a stable radix argsort of one
        byte), the other 64 bits are one uint64 key sorted within its bucket by ``np.sort``,
        and the two words are rebuilt from the bucket and the key."""
        depth = self._full_depth
        b = depth - 64
        shift = np.uint64(64 - b)
        bucket = (words[0] >> shift).astype(np.uint8)
        key = words[0] << np.uint64(b)
        key |= words[1] >> shift
        key = key[np.argsort(bucket, kind="stable")]
        counts = np.bincount(bucket, minlength=1 << b)
        del bucket
        ends = np.cumsum(counts)
        for lo, hi in zip((ends - counts).tolist(), ends.tolist(), strict=True):
            key[lo:hi].sort()
        head = np.repeat(np.arange(1 << b, dtype=np.uint64), counts)
        np.left_shift(head, shift, out=words[0])
        words[0] |= key >> np.uint64(b)
        np.left_shift(key, shift, out=words[1])
        del key, head
        lcp = _sorted_lcp(words[0], depth)  # depth > 64: 1086 marks the pairs tied on word 0
        tied = np.flatnonzero(lcp > 64)
        if tied.size:
            xor = words[1, tied + 1] ^ words[1, tied]
            lcp[tied] = np.minimum(128 - bit_length_u64(xor, overwrite=True), depth)
        return words, lcp

    def _first_sort(
        self, word: np.ndarray, in_place: bool = False
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The first sort of multi-word codes: one ``np.sort`` of the top ``64 - i`` bits of
        the first words ``word`` (rows in input order) above the row index (``i`` bits).
        Returns ``(order, lcp, i)``: the input row of each sorted position, the lcp of
        neighbours (1086 where tied on those bits), and ``i``.

        :param in_place: sort the keys in ``word`` itself and leave ``word`` holding the first
            words in sorted order: their low ``i`` bits are kept aside (uint32) and gathered
            back through the order, which spares a full-size key array and a gather of the
            whole word
        """
        n, depth = self.n, self._full_depth
        i = max(1, (n - 1).bit_length())
        mask = np.uint64((1 << i) - 1)
        if in_place:
            low = np.empty(n, dtype=np.uint32)  # i <= 31
            for a in range(0, n, _ROWS):
                np.bitwise_and(word[a : a + _ROWS], mask, out=low[a : a + _ROWS], casting="unsafe")
            keys = word
            keys &= ~mask
        else:
            keys = word & ~mask
        for a in range(0, n, _ROWS):  # | the row index, chunk by chunk (no full-size temporary)
            keys[a : a + _ROWS] |= np.arange(a, min(n, a + _ROWS), dtype=np.uint64)
        _sort_u64(keys, restore=False)  # the top bit flipped: only masked or XOR-ed below
        order = (keys & mask).view(np.int64)
        keys &= ~mask
        lcp = _sorted_lcp(keys, depth)  # depth > 64: 1086 marks the pairs tied on the key's bits
        if in_place:
            keys ^= _TOP
            for a in range(0, n, _ROWS):  # the low bits back, in sorted order
                keys[a : a + _ROWS] |= np.take(low, order[a : a + _ROWS], mode="wrap")
        del keys
        return order, lcp, i

    def _sort_first_word(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Multi-word codes in lexicographic order, and their lcp, computing the first word of
        every row but the deeper words only of the rows in runs tied after the first sort (the
        others' are computed from the kept input when read: :attr:`_words`).  When more than
        :data:`_LAZY_ROWS_SHARE` of the rows are tied, the deeper words of every row are
        computed and :meth:`_sort_words` goes on from the first sort."""
        n, depth, box, axes = self.n, self._full_depth, self._box, self._axes_full
        W = _words(depth)
        word = row_codes(x, box, depth, [0], axes=axes)[0]
        order, lcp, i = self._first_sort(word)
        tied = np.flatnonzero(lcp > 64)
        runs = np.union1d(tied, tied + 1)  # the positions in runs of tied rows, increasing
        if runs.size > n * _LAZY_ROWS_SHARE:
            del runs
            words = np.empty((W, n), dtype=np.uint64)
            words[0] = word
            del word
            row_codes(x, box, depth, list(range(1, W)), axes=axes, out=words[1:])
            return self._sort_words(words, (order, lcp, tied, i))
        words = np.empty((W, n), dtype=np.uint64)
        _take(word, order, words[0])
        del word
        if runs.size:
            words[1:, runs] = row_codes(x, box, depth, list(range(1, W)), order[runs], axes)
            perm = self._refine(words, lcp, tied, 64 - i, runs)
            if perm is not None:
                order[runs] = order[perm[runs]]
        np.minimum(lcp, np.uint16(depth), out=lcp)
        self._lazy["order"] = order
        self._lazy["runs"] = runs  # the positions whose deeper words are computed
        return words, lcp

    def _input(self) -> np.ndarray:
        """The kept input rows (a tree with lazily computed words keeps them)."""
        if self._x is None:  # pragma: no cover - released trees are not read
            raise ValueError("this tree's input is no longer held")
        return self._x

    @property
    def _words(self) -> np.ndarray:
        """The sorted code words, ``(W, n)`` uint64 (the deeper words of the rows no tie needed
        are computed here on first read)."""
        words, runs = self._buffer, self._lazy.pop("runs", None)
        if runs is not None and words is not None and runs.size < self.n:
            pending = np.ones(self.n, dtype=bool)
            pending[runs] = False
            rows = self._lazy["order"][pending]
            deeper = list(range(1, words.shape[0]))
            words[1:, pending] = row_codes(
                self._input(), self._box, self._full_depth, deeper, rows, self._axes_full
            )
        return words

    def _sort_words(
        self,
        words: np.ndarray,
        first: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Multi-word codes (rows in input order) in lexicographic order, and their lcp.

        ``np.sort`` of packed keys throughout, never ``np.argsort`` (several times slower on
        uint64 here): first the top ``64 - i`` code bits above the row index (``i`` bits),
        :meth:`_first_sort` (or ``first``, its result), the words gathered once in that order,
        then :meth:`_refine` for the rows still tied.
        """
        n, depth = self.n, self._full_depth
        if first is None:  # the first words sorted in place
            order, lcp, i = self._first_sort(words[0], in_place=True)
            tied = None  # the tied pairs' positions: built only for the refinement
            done = 1
        else:
            order, lcp, tied, i = first
            done = 0
        del first
        many = int(np.count_nonzero(lcp > 64)) if tied is None else tied.size
        if many > n * _LSD_TIED_SHARE:  # most rows tied: radix passes inside the runs
            del tied
            _permute_words(words, order, done)
            del order
            _sort_runs(words, lcp, 64 - i, depth)
            np.minimum(lcp, np.uint16(depth), out=lcp)
            return words, lcp
        _permute_words(words, order, done)  # one word at a time: one word of temporary memory
        del order
        if tied is None:
            tied = np.flatnonzero(lcp > 64)
        self._refine(words, lcp, tied, 64 - i)
        np.minimum(lcp, np.uint16(depth), out=lcp)
        return words, lcp

    def _refine(
        self,
        words: np.ndarray,
        lcp: np.ndarray,
        tied: np.ndarray,
        start: int,
        runs: np.ndarray | None = None,
    ) -> np.ndarray | None:
        """Sort the rows tied on their first ``start`` code bits by their further bits; set
        their lcp.  Each round sorts ``(run, next bits, index in the run)`` keys of the tied
        rows (the run above keeps every run in its slots; as many next bits as the key has
        room for).  A run is a chain of consecutive tied pairs ``p, p + 1, .., q`` (rows ``p ..
        q + 1``), read off the sorted ``tied`` positions without a full-size mask.  The moves
        of all rounds are composed into one permutation of the positions and applied to the
        words once at the end (only to the words from the first round's on: earlier words are
        equal within a run)."""
        n, depth = self.n, self._full_depth
        perm: np.ndarray | None = None  # position p holds the code of words[:, perm[p]]
        first_word = start // 64
        while tied.size and start < depth:
            brk = np.flatnonzero(tied[1:] != tied[:-1] + 1)
            heads = np.concatenate(([0], brk + 1))  # each chain's first pair, in tied
            pairs = np.diff(np.concatenate((heads, [tied.size])))  # tied pairs per chain
            del brk
            lengths = pairs + 1  # rows per run
            first = np.cumsum(lengths) - lengths  # where each run starts in rows
            total = tied.size + heads.size
            run = np.repeat(np.arange(heads.size, dtype=np.int64), lengths)
            offset = np.arange(total, dtype=np.int64) - first[run]  # index in the run
            rows = tied[heads][run] + offset  # positions in runs of tied rows, increasing
            r = int(heads.size - 1).bit_length()
            ir = max(1, int(lengths.max() - 1).bit_length())
            if r + ir > 62:  # pragma: no cover - more than 2^31 rows
                raise ValueError("the count tree holds at most 2^31 rows")
            count = min(64 - r - ir, depth - start)
            src = rows if perm is None else perm[rows]
            bits = _bits_of(words, src, start, count)
            key = (run.astype(np.uint64) << np.uint64(count + ir)) | (bits << np.uint64(ir))
            key |= offset.view(np.uint64)
            del offset, run
            _sort_u64(key)
            sub = np.repeat(first, lengths)
            sub += (key & np.uint64((1 << ir) - 1)).view(np.int64)
            bits = (key >> np.uint64(ir)) & np.uint64((1 << count) - 1)
            del key, first
            if perm is None:
                perm = np.arange(n, dtype=np.int64)
            perm[rows] = src[sub]  # position rows[i] now holds the code rows[sub[i]] held
            del sub, src, rows
            # the pair (tied[t], tied[t] + 1) is rows t + c, t + c + 1 for t in chain c
            same = np.arange(tied.size, dtype=np.int64) + np.repeat(
                np.arange(heads.size, dtype=np.int64), pairs
            )
            del heads, pairs, lengths
            xor = bits[same + 1] ^ bits[same]
            del bits, same
            hit = xor != 0
            lcp[tied[hit]] = start + count - bit_length_u64(xor[hit])
            tied = tied[~hit]
            start += count
        if perm is not None and runs is None:
            _permute_words(words, perm, first_word)  # one word at a time
        elif perm is not None:  # only the positions in runs hold codes that move
            src = perm[runs]
            for w in range(first_word, words.shape[0]):
                words[w, runs] = words[w, src]
        return perm

    # ------------------------------------------------------------------ views

    def truncated(self, depth: int) -> CountTree:
        """The same tree read to a smaller ``depth`` (shares every array)."""
        if not 1 <= depth <= self._full_depth:
            raise ValueError(f"depth must be in [1, {self._full_depth}], got {depth}")
        view = copy.copy(self)
        view.depth = int(depth)
        view.axes = check_axes(self._axes_full, self.d, view.depth)
        self._views.append(weakref.ref(view))
        return view

    @property
    def bits(self) -> int:
        """``B``: grid bits per coordinate at this tree's depth."""
        return bits_per_coord(self.depth, self.d, self.axes)

    @property
    def grid(self) -> np.ndarray:
        """The grid codes (``B`` bits) of the points in the tree's order (tests and debugging;
        recomputed from the input: rows with equal codes may come in any order)."""
        if self._x is None:
            raise ValueError("this tree was built without keeping its input")
        u = self._box.to_unit(self._x) if self._box is not None else self._x
        g = grid_codes(u, self.depth, self.axes)
        full = self._axes_full
        words = morton_words(grid_codes(u, self._full_depth, full), self._full_depth, full)
        return g[np.lexsort(words[::-1])]

    # ------------------------------------------------------------------ queries

    def occupancy(self) -> np.ndarray:
        """``O_j`` for ``j = 0 .. depth``: the number of occupied cells of each level."""
        if self.n == 0:
            return np.zeros(self.depth + 1, dtype=np.int64)
        below = np.cumsum(self._lcp_starts[1:] - self._lcp_starts[:-1])  # #{lcp <= v}
        # O_j = 1 + #{lcp < j}
        return 1 + np.concatenate(([0], below[: self.depth])).astype(np.int64)

    def _first_bits(self, level: int, pos: np.ndarray) -> np.ndarray:
        """The level-``level`` code bit of the points at sorted positions ``pos`` (int64 0/1)."""
        if level >= 64 and "runs" in self._lazy:  # the rows' word, from the kept input
            rows = self._lazy["order"][pos]
            full = self._full_depth
            word = row_codes(self._input(), self._box, full, [level // 64], rows, self._axes_full)[
                0
            ]
        else:
            word = self._buffer[level // 64, pos]
        return ((word >> np.uint64(63 - level % 64)) & _ONE).astype(np.int64)

    def _grouped(self) -> np.ndarray:
        """The positions ``p`` with ``lcp[p] < depth`` grouped by lcp value, each group in
        increasing order: group ``v`` is ``[_lcp_starts[v], _lcp_starts[v + 1])``.  Built once
        for the deepest view that asks (a traversal to depth ``r`` reads only the levels below
        ``r``: about as many positions as level-``r`` cells, not ``n``)."""
        cache = self._grouped_cache
        if cache.get("depth", -1) < self.depth:
            below = np.flatnonzero(self.lcp < self.depth)
            cache["positions"] = below[np.argsort(self.lcp[below], kind="stable")]
            cache["depth"] = self.depth
        positions: np.ndarray = cache["positions"]
        return positions

    def split(self, level: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Split points ``mid`` of cells ``[lo, hi)`` at ``level``: children are ``[lo, mid)``,
        ``[mid, hi)``."""
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        positions = self._grouped()[self._lcp_starts[level] : self._lcp_starts[level + 1]]
        # the (unique) neighbour pair (p, p+1) inside the range whose common prefix is `level` bits
        k = positions.searchsorted(lo, side="left")
        cand = positions[np.minimum(k, max(positions.size - 1, 0))] if positions.size else lo
        inside = (k < positions.size) & (cand < hi - 1)
        mid = np.where(inside, cand + 1, 0)
        # no split inside: all points in one child, decided by the level's bit of the first point
        rest = (~inside).nonzero()[0]
        if rest.size:
            lo_r, hi_r = lo[rest], hi[rest]
            nonempty = hi_r > lo_r
            bit = np.zeros(rest.size, dtype=np.int64)
            if self.n and nonempty.any():
                bit[nonempty] = self._first_bits(level, lo_r[nonempty])
            mid[rest] = np.where(nonempty, np.where(bit == 1, lo_r, hi_r), lo_r)
        return mid

    def children(self, level: int, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ranges ``[lo, hi)`` of the two children of cells ``[lo, hi)`` at ``level``: rows
        ``2i`` and ``2i + 1`` are the children of cell ``i``."""
        mid = self.split(level, lo, hi)
        c_lo = np.empty((mid.size, 2), dtype=np.int64)  # rows (lo, mid): as np.stack, cheaper
        c_hi = np.empty((mid.size, 2), dtype=np.int64)
        c_lo[:, 0] = lo
        c_lo[:, 1] = mid
        c_hi[:, 0] = mid
        c_hi[:, 1] = hi
        return c_lo.reshape(-1), c_hi.reshape(-1)


def capped_sums_of_counts(counts: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """``sum_v min(c_v, tau)`` for every cap ``tau`` in ``caps``, exact (int64).

    :param counts: the cells' counts (non-negative integers; empty cells add nothing)
    :param caps: integer caps ``>= 1``
    """
    c = np.sort(np.asarray(counts, dtype=np.int64))
    tau = np.asarray(caps, dtype=np.int64)
    tail = np.concatenate((np.cumsum(c[::-1])[::-1], [0]))  # tail[i] = sum of c[i:]
    above = np.searchsorted(c, tau, side="right")  # the cells with c > tau start here
    # sum_v min(c_v, tau) = sum_v c_v - sum_{c_v > tau} (c_v - tau)
    return np.asarray(tail[0] - (tail[above] - tau * (c.size - above)), dtype=np.int64)


def capped_level_sums(tree: CountTree, caps: np.ndarray, start: int = 0) -> np.ndarray:
    """``T[j, a] = sum_{v at level j} min(c_v, caps[j, a])`` for ``j = start .. L-1`` (rows
    before ``start`` are 0), exact int64: the statistic of the capped schedule scores.

    With ``caps`` all 1 this is the occupancy ``O_j``.  Only the cells holding more than
    ``t = min(caps)`` points are visited (a subtree: a cell's parent holds at least as many),
    level by level with :meth:`CountTree.split`; a cell with at most ``t`` points adds its
    count ``c_v = min(c_v, tau)`` to every sum, so ``T[j, a] = n - sum_{c_v > t} (c_v - tau)^+``.

    :param tree: the exact count tree, of depth at least ``L - 1``
    :param caps: shape ``(L, k)``, integers ``>= 1``
    :param start: the first level recorded (the parts of a distributed tree record the levels
        whose cells they hold whole)
    """
    caps = np.asarray(caps, dtype=np.int64)
    if caps.ndim != 2 or caps.shape[0] < 1 or caps.shape[0] > tree.depth + 1 or caps.min() < 1:
        raise ValueError(
            f"caps must be an (L, k) array of integers >= 1 with L <= {tree.depth + 1}"
        )
    L, k = caps.shape
    out = np.zeros((L, k), dtype=np.int64)
    if tree.n == 0:
        return out
    t = int(caps.min())
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, tree.n, dtype=np.int64)
    for j in range(L):  # a loop over the (public) levels; each level is vectorised
        if j >= start:
            # the light cells (c_v <= t <= tau) add their whole count: n - (the heavy cells' total)
            heavy = capped_sums_of_counts(hi - lo, caps[j])
            out[j] = tree.n - (int((hi - lo).sum()) - heavy)
        if j == L - 1:
            break
        lo, hi = tree.children(j, lo, hi)
        keep = hi - lo > t
        lo, hi = lo[keep], hi[keep]
    return out


def imbalance_of_counts(child_counts: np.ndarray) -> int:
    """``sum_v |c_{v0} - c_{v1}|`` from the counts of a level's children in cell order (pairs)."""
    c = np.asarray(child_counts, dtype=np.int64).reshape(-1, 2)
    return int(np.abs(c[:, 0] - c[:, 1]).sum())


def level_imbalance(tree: CountTree, stop: int, start: int = 0) -> np.ndarray:
    """``I_j = sum_{v at level j} |c_{v0} - c_{v1}|`` (the two children's counts) for
    ``j = start .. stop - 1`` (entries before ``start`` are 0), exact int64.

    A level-``j`` cell is a run of the sorted rows between positions whose common prefix is
    shorter than ``j`` bits; it splits where the prefix is exactly ``j`` bits long (at most once),
    so ``I_j = n - 2 sum_splits min(left, right)``.  One vectorised pass over the rows per level.

    :param tree: the exact count tree, of depth at least ``stop``
    :param stop: one past the last level
    :param start: the first level computed
    """
    if not 0 <= start <= stop <= tree.depth:
        raise ValueError(f"levels must satisfy 0 <= start <= stop <= {tree.depth}")
    out = np.zeros(stop, dtype=np.int64)
    n = tree.n
    if n == 0:
        return out
    lcp = tree.lcp
    for j in range(start, stop):  # a loop over the (public) levels
        bounds = np.concatenate(([0], np.flatnonzero(lcp < j) + 1, [n]))
        split = np.flatnonzero(lcp == j)  # the right child starts at split + 1
        cell = np.searchsorted(bounds, split, side="right") - 1
        left = split + 1 - bounds[cell]
        right = bounds[cell + 1] - split - 1
        out[j] = n - 2 * int(np.minimum(left, right).sum())
    return out


def build_count_tree(
    u: np.ndarray, depth: int, box: Any = None, axes: Sequence[int] | None = None
) -> CountTree:
    """The count tree of points ``u`` in [0, 1]^d to ``depth`` (or of rows in ``box``, clamped and
    rescaled on the fly, when a box is given), split order ``axes`` (default cyclic)."""
    return CountTree(u, depth, box, axes)


_SHARED: contextvars.ContextVar[list[tuple[Any, Any, CountTree]] | None] = contextvars.ContextVar(
    "opendp_wasserstein_shared_trees", default=None
)


#: the count trees whose arrays are held (not :meth:`CountTree.release`-d), garbage included
_UNRELEASED: weakref.WeakSet[CountTree] = weakref.WeakSet()

_OWNED: contextvars.ContextVar[list[CountTree] | None] = contextvars.ContextVar(
    "opendp_wasserstein_owned_trees", default=None
)


def unreleased_trees() -> int:
    """The number of count trees whose arrays are still held (in use, or garbage in a cycle that
    only a full collection frees)."""
    return len(_UNRELEASED)


@contextmanager
def shared_count_trees(release: bool = False) -> Iterator[None]:
    """Inside this block, :func:`count_tree` builds the tree of an input array once.

    The first call for an array builds its tree and keeps it; a later call for the *same array
    object* and box at a depth not above the kept one takes it (truncated) and releases it, so
    the scores and the synthesis of one adaptive release share one sort, and the tree is freed
    as soon as the synthesis has its counts.  Nothing is kept after the block.

    :param release: the block owns every tree :func:`count_tree` builds in it (none is returned
        to a caller outside): their arrays are dropped as the block ends
        (:meth:`CountTree.release`), whatever still references the tree objects
    """
    token = _SHARED.set([])
    owned: list[CountTree] = []
    own = _OWNED.set(owned if release else None)
    try:
        yield
    finally:
        _OWNED.reset(own)
        _SHARED.reset(token)
        for tree in owned:
            tree.release()


def release_if_owned(tree: CountTree) -> bool:
    """Drop the arrays of ``tree`` (a tree or a truncated view) now if a block
    :func:`shared_count_trees` with ``release=True`` owns it and no later :func:`count_tree`
    call of the block can take it (it is not kept for one): its reader is done, so the memory
    goes back before the release's next steps (the placement) allocate theirs.  Returns whether
    it was dropped."""
    owned = _OWNED.get()
    if not owned:
        return False
    kept = _SHARED.get() or []
    for base in owned:
        if base is tree or any(r() is tree for r in base._views):
            if any(t is base for _, _, t in kept):
                return False
            base.release()
            return True
    return False


def count_tree(
    x: np.ndarray,
    depth: int,
    box: Any = None,
    keep: bool = False,
    axes: Sequence[int] | None = None,
) -> CountTree:
    """The count tree of rows ``x`` (in ``box``) to ``depth``, shared inside
    :func:`shared_count_trees`.

    :param keep: leave the tree for a later call (the scores, which a synthesis follows)
    :param axes: the split order (default cyclic); a kept tree serves a later call whose order
        is its own to that depth
    """
    cache = _SHARED.get()
    order = check_axes(axes, x.shape[1], depth)
    if cache is not None:
        for i, (ref, bx, tree) in enumerate(cache):
            if (
                ref is x
                and bx == box
                and tree._full_depth >= depth
                and check_axes(tree._axes_full, tree.d, depth) == order
            ):
                if not keep:
                    del cache[i]
                return tree if tree.depth == depth else tree.truncated(depth)
    tree = CountTree(x, depth, box, order)
    if cache is not None and keep:
        cache.append((x, box, tree))
    owned = _OWNED.get()
    if owned is not None:
        owned.append(tree)
    return tree
