"""Exact, vectorised discrete Laplace sampling.

:func:`fast_discrete_laplace` draws ``LapZ(scales[i])`` for every entry of an array of
per-element scales in one call, where

.. math:: P(z) = \\frac{1 - e^{-1/\\sigma}}{1 + e^{-1/\\sigma}}\\, e^{-|z|/\\sigma},
   \\qquad z \\in \\mathbb{Z}.

The method is that of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020: Algorithm 1 (``Bernoulli(exp(-gamma))`` from ``Bernoulli(rational)``
draws) and Algorithm 2 (discrete Laplace with rational scale), reorganised so that every step is
an array operation and so that few random bits are used.

Exactness
---------
No probability is rounded and **the scale is not rounded**.  Every float is a dyadic rational:
``sigma = M 2^(e - 53)`` with the integer mantissa ``2^52 <= M < 2^53`` (exact, from
:func:`numpy.frexp`), so ``1/sigma = 2^(53 - e) / M``.  With ``q = exp(-1/sigma)``,
``Y ~ Geometric(q)`` (``P(Y = y) = (1 - q) q^y``), a fair sign ``B`` and rejection of
``(Y = 0, B = 1)``, ``(1 - 2B) Y`` is exactly ``LapZ(sigma)`` (CKS Algorithm 2, steps 5-8).

``Y`` is drawn as follows.

* ``sigma >= 2``: with ``T = 2^k <= sigma < 2^(k+1)``, ``Y = U + T V`` where ``U`` and ``V`` are
  independent, ``P(U = u) ∝ q^u`` on ``[0, T)`` and ``V ~ Geometric(q^T)``.  (CKS Algorithm 2
  takes ``T`` = the numerator of the scale; any positive integer ``T`` works, and a power of two
  makes ``U`` a plain bit field.)  ``U`` is a uniform ``k``-bit integer accepted with
  probability ``exp(-U/sigma)``, and ``U/sigma = (U 2^(52-k)) / M`` is a rational in ``[0, 1)``.
* ``sigma < 2``: ``T = 1``, ``U = 0`` and ``Y = V``.

``V`` counts the successes of independent ``Bernoulli(exp(-g))`` trials before the first failure,
with ``g = T/sigma = 2^52/M`` in ``(1/2, 1]`` for ``sigma >= 1`` and ``g = 1/sigma = n + r/M``
(integers ``n >= 1``, ``0 <= r < M``) for ``sigma < 1``.  A trial is ``n`` draws of
``Bernoulli(exp(-1))`` and one of ``Bernoulli(exp(-r/M))``, each by CKS Algorithm 1, which needs
``Bernoulli(a / (M K))`` for ``K = 1, 2, ...``.

Each such rational Bernoulli is exact.  With an integer multiplier ``m >= 1`` such that
``L = M K m <= 2^64 - 1``, a uniform 64-bit word ``W`` conditioned on ``W < L`` (otherwise a
fresh word is drawn) has ``floor(W/m)`` uniform on ``[0, M K)``, so ``P(W < a m) = a / (M K)``
exactly.  For a single scale ``m = floor((2^64 - 1) / (M K))`` in exact integer arithmetic; for
per-element scales ``m = floor(fl(fl(c / M) / K))`` in float64 with ``c = 2^64 - 2^34``: IEEE-754
division rounds correctly, so ``m M K <= c (1 + 2^-53)^2 < 2^64 - 1`` and the float only picks a
*valid* multiplier, it never enters a probability.  The word is compared lazily: its top byte
first; the low 56 bits are drawn only when the top byte cannot decide (probability about
``2^-7``), and as they are independent of the top byte this is the same comparison.  Steps
``K > 1024`` (probability below ``1/1023!``) use ``Bernoulli(a/M) Bernoulli(1/K)`` instead, so
every integer stays below ``2^64``.  Scales below ``2^-11`` have ``n >= 2048`` and ``2^(53-e)``
does not fit in 64 bits; a trial that survives its first 2048 ``Bernoulli(exp(-1))`` draws
(probability below ``exp(-2048)``) is finished with exact Python integers.

Equal scales are drawn as streams: independent proposals, trials and signs are generated in bulk
and the first accepted ones are kept (rejection sampling with independent proposals, so the
kept values are independent draws from the target; which ones are kept depends only on the
accept/reject decisions and their order).  Scales that change from element to element are
handled with per-element rejection loops instead.  Random bytes are read from the source in
blocks; every byte is used at most once and bytes left over at the end are discarded.

Range
-----
Scales must be finite, positive and at most ``2^52`` (:data:`MAX_SCALE`).  A draw with
``|z| >= 2^62`` (probability below ``exp(-2^62/sigma)``, i.e. below ``exp(-1024)`` at ``2^52``)
does not fit the output and raises :class:`OverflowError`; it is never clipped.

Randomness comes only from the given :class:`~opendp_wasserstein.noise._source.RandomSource`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from opendp_wasserstein.noise._source import RandomSource

__all__ = ["fast_discrete_laplace", "StreamFn", "MAX_SCALE"]

#: largest accepted scale (the decomposition needs ``sigma < 2^53``; from ``2^52`` on, draws
#: would overflow ``int64`` with non-negligible probability anyway)
MAX_SCALE = 2.0**52

_CHUNK = 1 << 17  # elements per vectorised block (bounds memory, keeps arrays in cache)
_RUN_MIN = 1024  # runs of equal scales at least this long use the stream sampler
_SORT_PROBE = 1024  # sample size used to decide whether sorting into runs pays
_K_MAX = 1024  # Algorithm-1 steps K <= _K_MAX use one word with denominator M K < 2^63
_TINY_EXP = -10  # frexp exponent below which 2^(53 - e) >= 2^64 (sigma < 2^-11)
_CHAIN_CAP = 2048  # exp(-1) draws per trial done vectorised for tiny scales (n >= 2048)
_MULT_C = float(2**64 - 2**34)  # floor(c / M / K) is a valid multiplier (module docstring)
_MAX_WORD = 2**64 - 1
_MIN_BLOCK = 1 << 12  # bytes fetched from the RandomSource at a time: at least 4 KiB ...
_MAX_BLOCK = 1 << 18  # ... and at most 256 KiB
_BYTES_PER_DRAW = 12  # about the measured mean use, 3-12 bytes a draw (sizes the blocks)
_MAX_Y = 1 << 62
_S8 = np.uint64(8)
_S56 = np.uint64(56)
_U52 = np.uint64(52)
_TWO52 = np.uint64(1 << 52)

# a threshold, multiplier or denominator: one per element, or one for all elements
_Thr = np.ndarray | np.uint64
_Flt = np.ndarray | float
#: who a request of random bits is for: the ids of the elements (one value each, in order), or
#: just how many values (the pooled stream of proposals of the equal-scale sampler)
_Elems = np.ndarray | int
#: ``streams(elems, first, blocks)``: the 16-byte blocks ``first .. first + blocks - 1`` of the
#: streams of elements ``elems``, as a ``(len(elems), 16 * blocks)`` uint8 array
StreamFn = Callable[[np.ndarray, np.ndarray, int], np.ndarray]
_LE: dict[int, np.dtype[Any]] = {
    1: np.dtype("u1"),
    2: np.dtype("<u2"),
    4: np.dtype("<u4"),
    8: np.dtype("<u8"),
}


def _count(elems: _Elems) -> int:
    """The number of values requested."""
    return int(elems) if isinstance(elems, (int, np.integer)) else int(elems.size)


def _sub(elems: _Elems, idx: np.ndarray) -> _Elems:
    """The request for positions ``idx`` of a request ``elems``."""
    return int(idx.size) if isinstance(elems, (int, np.integer)) else elems[idx]


def _sel(x: _Thr, idx: np.ndarray) -> _Thr:
    """``x[idx]`` for per-element arrays; a shared scalar is returned as is."""
    return x[idx] if isinstance(x, np.ndarray) else x


class _Bits:
    """Uniform random bytes from a :class:`RandomSource`, fetched in blocks (one pooled stream).

    Every byte is handed out at most once, so the bytes handed out are independent and uniform;
    bytes left in the last block are discarded (whatever their values).  A request names its
    elements (or only their number): the pool ignores who asks and hands out the next bytes.

    :param rng: the source
    :param hint: expected number of bytes needed (sizes the blocks)
    """

    def __init__(self, rng: RandomSource, hint: int) -> None:
        self._rng = rng
        self._block = min(max(hint, _MIN_BLOCK), _MAX_BLOCK)
        self._buf = np.empty(0, dtype=np.uint8)
        self._pos = 0

    def _refill(self, n: int) -> None:
        rest = self._buf[self._pos :]  # unused bytes are kept, not thrown away
        words = (max(self._block, n - rest.size) + 7) // 8
        fresh = self._rng.uint64(words).view(np.uint8)
        self._buf = np.concatenate((rest, fresh)) if rest.size else fresh
        self._pos = 0

    def bytes(self, elems: _Elems) -> np.ndarray:
        """One fresh uniform byte (uint8) per requested element."""
        n = _count(elems)
        if self._pos + n > self._buf.size:
            self._refill(n)
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def uint64(self, elems: _Elems) -> np.ndarray:
        """One fresh uniform 64-bit word per requested element."""
        self._pos = (self._pos + 7) & ~7  # keep words aligned
        return self.bytes(8 * _count(elems)).view(np.uint64)

    def view(self, n: int, dtype: type[np.unsignedinteger]) -> np.ndarray:
        """``n`` fresh uniform integers of an unsigned ``dtype``."""
        width = np.dtype(dtype).itemsize
        self._pos = (self._pos + width - 1) // width * width
        return self.bytes(width * n).view(dtype)

    def coins(self, elems: _Elems) -> np.ndarray:
        """One fair coin flip per requested element, boolean (eight per random byte)."""
        n = _count(elems)
        return np.unpackbits(self.bytes((n + 7) // 8))[:n].view(bool)

    def fields(self, elems: _Elems, k: np.ndarray | int, kmax: int) -> np.ndarray:
        """One uniform ``k``-bit integer (uint64) per element, ``1 <= k <= kmax <= 63``."""
        n = _count(elems)
        for width, dtype in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
            if kmax <= width:
                words = self.view(n, dtype)
                shift = np.asarray(width - np.asarray(k)).astype(dtype)
                return (words >> shift).astype(np.uint64)
        return self.uint64(n) >> (np.uint64(64) - np.asarray(k).astype(np.uint64))


class _ElementBits:
    """Uniform random bytes from one stream per element (node-addressed randomness).

    Element ``i`` reads only from stream ``i``, block after block and byte after byte, each byte
    at most once; a request names the ids of the elements it serves and each gets the next value
    of its own stream.  The samplers' requests for an element depend only on that element's
    scale and on the values it has read, so the value drawn for element ``i`` is a function of
    its scale and stream alone: not of the other elements, their number or their order.

    A value of ``w`` bytes starts at the next multiple of ``w`` in the element's current
    ``16 * blocks``-byte buffer; if it does not fit, the rest of the buffer is discarded and the
    element's next ``blocks`` blocks are read.  A ``k``-bit field takes the smallest of 1, 2, 4
    or 8 bytes that holds ``k`` bits (chosen from the element's own ``k``), a coin one byte.

    :param streams: the block function of the streams (see :data:`StreamFn`)
    :param size: the number of elements (ids ``0 .. size - 1``)
    :param blocks: 16-byte blocks read at a time per element
    """

    def __init__(self, streams: StreamFn, size: int, blocks: int = 2) -> None:
        self._streams = streams
        self._blocks = blocks
        self._width = 16 * blocks
        self._size = size
        self._buf = self._read(np.arange(size), np.zeros(size, dtype=np.uint64))
        # the positions, next blocks and a writable buffer: made by the first request
        self._next = np.zeros(0, dtype=np.uint64)
        self._pos = np.zeros(0, dtype=np.int64)
        self._fresh = True  # no request made yet

    def _start(self) -> None:
        """The bookkeeping of the requests, made on the first (a sampler whose common case
        reads :meth:`first_blocks` only may never need it)."""
        self._buf = np.array(self._buf)  # writable: refills replace rows
        self._next = np.full(self._size, self._blocks, dtype=np.uint64)
        self._pos = np.zeros(self._size, dtype=np.int64)
        self._fresh = False

    def first_blocks(self) -> np.ndarray:
        """The first ``blocks`` blocks of every element's stream, ``(size, 16 * blocks)`` uint8
        (read-only), before any request: a sampler may read the bytes its common case needs
        from here directly, and hand the elements that need more to the requests, which then
        start from the beginning of their streams (these same bytes) as if nothing had been
        read."""
        if not self._fresh:
            raise RuntimeError("first_blocks is only available before the first request")
        view = self._buf.view()
        view.setflags(write=False)
        return view

    def blocks_at(self, elems: np.ndarray, first: int) -> np.ndarray:
        """Blocks ``first .. first + blocks - 1`` of the streams of elements ``elems``,
        ``(len(elems), 16 * blocks)`` uint8, read without changing any element's position (a
        sampler's look ahead at where an attempt that starts on a block boundary reads)."""
        return self._read(elems, np.full(elems.size, first, dtype=np.uint64))

    def attempts(self, elems: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
        """``count`` consecutive reads of ``blocks`` blocks of each element's stream from block
        ``first[i]`` on, one row per read, element-major: ``(len(elems) * count, 16 * blocks)``
        uint8 (one stream call; read without changing any element's position, as
        :meth:`blocks_at`)."""
        first = np.asarray(first, dtype=np.uint64)
        buf = np.ascontiguousarray(
            self._streams(elems, first, self._blocks * count), dtype=np.uint8
        )
        if buf.shape != (elems.size, self._width * count):
            raise ValueError("a stream function returned the wrong number of bytes")
        return buf.reshape(elems.size * count, self._width)

    def _read(self, elems: np.ndarray, first: np.ndarray) -> np.ndarray:
        buf = np.ascontiguousarray(self._streams(elems, first, self._blocks), dtype=np.uint8)
        if buf.shape != (elems.size, self._width):
            raise ValueError("a stream function returned the wrong number of bytes")
        return buf

    def _claim(self, elems: _Elems, length: int, align: int) -> np.ndarray:
        """Reserve the next ``length`` bytes (starting at a multiple of ``align``) of every
        element's stream; return their start offsets in the flattened buffer."""
        if not isinstance(elems, np.ndarray):
            raise TypeError("per-element streams need the element ids of every request")
        if length > self._width:
            raise ValueError("a request is longer than the stream buffer")
        if self._fresh:
            self._start()
        pos = self._pos[elems]
        if align > 1:
            pos += align - 1
            pos &= -align
        end = pos + length
        full = np.flatnonzero(end > self._width)
        if full.size:
            e = elems[full]
            self._buf[e] = self._read(e, self._next[e])
            self._next[e] += np.uint64(self._blocks)
            pos[full] = 0
            end[full] = length
        self._pos[elems] = end
        return elems * self._width + pos

    def _take(self, elems: _Elems, width: int) -> np.ndarray:
        start = self._claim(elems, width, width)
        return self._buf.reshape(-1).view(_LE[width])[start // width]

    def run(self, elems: np.ndarray, count: int) -> np.ndarray:
        """The next ``count`` bytes of each element's stream, shape ``(len(elems), count)``."""
        start = self._claim(elems, count, 1)
        return self._buf.reshape(-1)[start[:, None] + np.arange(count)]

    def word_be(self, elems: np.ndarray) -> np.ndarray:
        """The next 8 bytes of each element's stream read as a big-endian integer (uint64):
        the first byte is the most significant, as the leading digit of a base-256 fraction."""
        start = self._claim(elems, 8, 8)
        return self._buf.reshape(-1).view(">u8")[start // 8].astype(np.uint64)

    def bytes(self, elems: _Elems) -> np.ndarray:
        """The next byte of each element's stream (uint8)."""
        return self._take(elems, 1)

    def uint64(self, elems: _Elems) -> np.ndarray:
        """The next 64-bit word (little-endian) of each element's stream."""
        return self._take(elems, 8).astype(np.uint64, copy=False)

    def coins(self, elems: _Elems) -> np.ndarray:
        """A fair coin per element: the low bit of its next byte (boolean)."""
        return (self._take(elems, 1) & np.uint8(1)).astype(bool)

    def fields(self, elems: _Elems, k: np.ndarray | int, kmax: int) -> np.ndarray:
        """A uniform ``k``-bit integer per element (uint64), from its next 1, 2, 4 or 8 bytes."""
        if not isinstance(elems, np.ndarray):
            raise TypeError("per-element streams need the element ids of every request")
        k_arr = np.broadcast_to(np.asarray(k, dtype=np.int64), elems.shape)
        nbytes = np.where(k_arr <= 8, 1, np.where(k_arr <= 16, 2, np.where(k_arr <= 32, 4, 8)))
        out = np.empty(elems.size, dtype=np.uint64)
        for width in np.unique(nbytes).tolist():
            sel = np.flatnonzero(nbytes == width)
            words = self._take(elems[sel], width).astype(np.uint64)
            out[sel] = words >> (np.uint64(8 * width) - k_arr[sel].astype(np.uint64))
        return out


_AnyBits = _Bits | _ElementBits


def _top_byte(x: _Thr) -> _Thr:
    if isinstance(x, np.ndarray):
        return (x >> _S56).astype(np.uint8)
    return np.uint8(int(x) >> 56)


def _bernoulli(a_thr: _Thr, l_thr: _Thr, elems: _Elems, rng: _AnyBits) -> np.ndarray:
    """Exact ``Bernoulli(a_thr / l_thr)`` draws for uint64 ``0 <= a_thr <= l_thr``, ``l_thr >= 1``.

    A uniform 64-bit word ``W`` is drawn until ``W < l_thr``; the result is ``W < a_thr``.  The
    top byte of ``W`` is drawn first and the low 56 bits only for the elements whose top byte
    equals that of ``a_thr`` or is at least that of ``l_thr`` (no other element can be undecided
    or rejected).

    :param a_thr: success thresholds (one per element, or one shared scalar)
    :param l_thr: acceptance limits (one per element, or one shared scalar)
    :param elems: the elements drawn for (ids), or the number of draws
    :param rng: the randomness
    :return: boolean array, one draw per element
    """
    w8 = rng.bytes(elems)
    a8 = _top_byte(a_thr)
    l8 = _top_byte(l_thr)
    out = w8 < a8
    und = np.flatnonzero((w8 == a8) | (w8 >= l8))
    while und.size:  # top byte undecided: draw the low 56 bits
        word = (w8[und].astype(np.uint64) << _S56) | (rng.uint64(_sub(elems, und)) >> _S8)
        out[und] = word < _sel(a_thr, und)
        rej = und[word >= _sel(l_thr, und)]
        if not rej.size:
            break
        fresh = rng.bytes(_sub(elems, rej))  # W >= l_thr: a fresh word, top byte first
        w8 = w8.copy()
        w8[rej] = fresh
        a8r = _sel(a8, rej)
        out[rej] = fresh < a8r
        und = rej[(fresh == a8r) | (fresh >= _sel(l8, rej))]
    return out


def _bernoulli_const(numer: int, denom: int, elems: _Elems, rng: _AnyBits) -> np.ndarray:
    """Exact ``Bernoulli(numer/denom)`` draws, integers ``0 <= numer <= denom < 2^64``."""
    m = _MAX_WORD // denom
    return _bernoulli(np.uint64(numer * m), np.uint64(denom * m), elems, rng)


def _bern_exp_minus_one(elems: _Elems, rng: _AnyBits) -> np.ndarray:
    """Exact ``Bernoulli(exp(-1))`` draws (CKS Algorithm 1 with ``gamma = 1``)."""
    # K = 1 draws Bernoulli(1) = 1; K = 2 is a fair coin; output 1 iff stopped at an odd K
    out = rng.coins(elems)  # True: continue to K = 3 (provisional)
    act = np.flatnonzero(out)
    k = 3
    while act.size:
        draw = _bernoulli_const(1, k, _sub(elems, act), rng)
        out[act[~draw]] = bool(k % 2)
        act = act[draw]
        k += 1
    return out


def _multiplier(m_flt: np.ndarray, k: int) -> np.ndarray:
    """Per-element multipliers ``1 <= m`` with ``m M k <= 2^64 - 1`` (``m_flt`` is ``M``).

    ``q = fl(fl(c/M)/k) <= c/(M k) (1 + 2^-53)^2`` by IEEE-754 correct rounding, hence
    ``floor(q) M k <= (2^64 - 2^34)(1 + 2^-52 + 2^-106) < 2^64 - 1``; ``m >= 1`` as ``M k <= 2^63``.
    """
    q = _MULT_C / m_flt
    if k != 1:
        q = q / float(k)
    return np.floor(q).astype(np.uint64)


def _bern_exp_ratio(
    a: _Thr,
    m_int: _Thr,
    m_flt: _Flt,
    a1: _Thr,
    l1: _Thr,
    elems: _Elems,
    rng: _AnyBits,
) -> np.ndarray:
    """Exact ``Bernoulli(exp(-a/M))`` draws for ``0 <= a <= M`` (CKS Algorithm 1).

    Step ``K`` draws ``Bernoulli(a/(M K))``; the output is 1 iff the first failure is at an odd
    ``K``.  Every argument is either one value per draw or one shared scalar.

    :param a: numerators (uint64)
    :param m_int: denominators ``M`` (uint64, ``2^52 <= M < 2^53``)
    :param m_flt: ``M`` as float64 (exact)
    :param a1: ``a m_1``, the ``K = 1`` threshold
    :param l1: ``M m_1``, the ``K = 1`` limit
    :param elems: the elements drawn for (ids), or the number of draws
    :param rng: the randomness
    """
    draw = _bernoulli(a1, l1, elems, rng)  # K = 1
    out = ~draw  # stopped at K = 1 (odd): 1
    act = np.flatnonzero(draw)
    k = 2
    while act.size:
        a_k = _sel(a, act)
        if k > _K_MAX:  # Bernoulli(a/(M K)) = Bernoulli(a/M) Bernoulli(1/K)
            sub = _sub(elems, act)
            draw = _bernoulli(_sel(a1, act), _sel(l1, act), sub, rng)
            draw &= _bernoulli_const(1, k, sub, rng)
        elif isinstance(m_int, np.ndarray) and isinstance(m_flt, np.ndarray):
            m = _multiplier(m_flt[act], k)
            draw = _bernoulli(a_k * m, m_int[act] * m * np.uint64(k), _sub(elems, act), rng)
        else:
            denom = int(m_int) * k
            m_k = _MAX_WORD // denom
            if isinstance(a_k, np.ndarray):
                a_thr: _Thr = a_k * np.uint64(m_k)
            else:
                a_thr = np.uint64(int(a_k) * m_k)
            draw = _bernoulli(a_thr, np.uint64(denom * m_k), _sub(elems, act), rng)
        out[act[~draw]] = bool(k % 2)
        act = act[draw]
        k += 1
    return out


def _tiny_finish_trial(scale: float, rng: _AnyBits, elem: _Elems = 1) -> bool:
    """Finish a ``Bernoulli(exp(-1/scale))`` trial that survived ``_CHAIN_CAP`` ``exp(-1)`` draws.

    Exact Python integers: ``1/scale = n + r/M``; ``n - _CHAIN_CAP`` more ``Bernoulli(exp(-1))``
    draws, then ``Bernoulli(exp(-r/M))`` by Algorithm 1 with ``Bernoulli(r/M) Bernoulli(1/K)``.
    ``elem`` is the element's id (per-element streams) or 1.
    """
    mant, ex = math.frexp(scale)
    m_int = int(mant * 2.0**53)
    n, r = divmod(1 << (53 - ex), m_int)
    for _ in range(n - _CHAIN_CAP):
        if not _bern_exp_minus_one(elem, rng)[0]:
            return False
    k = 1
    while True:
        draw = bool(_bernoulli_const(r, m_int, elem, rng)[0])
        if draw and k > 1:
            draw = bool(_bernoulli_const(1, k, elem, rng)[0])
        if not draw:
            return bool(k % 2)
        k += 1


# --------------------------------------------------------------------------------------------
# one scale for many draws: streams of independent proposals
# --------------------------------------------------------------------------------------------


class _Scale:
    """The constants of the decomposition for one scale (exact Python integers)."""

    def __init__(self, scale: float) -> None:
        mant, ex = math.frexp(scale)
        m = int(mant * 2.0**53)  # exact: scale = m 2^(ex - 53), 2^52 <= m < 2^53
        self.scale = scale
        self.m_int = np.uint64(m)
        self.m_flt = float(m)
        m1 = _MAX_WORD // m
        self.l1 = np.uint64(m * m1)
        self.m1 = np.uint64(m1)
        self.k = ex - 1 if ex >= 1 else 0  # T = 2^k <= sigma
        self.tiny = ex < _TINY_EXP
        if ex >= 1:
            self.n, r = 0, 1 << 52  # g = 2^52 / m
            g = 2.0**52 / m
        elif self.tiny:
            self.n, r = _CHAIN_CAP, 0  # the rest is exact, in _tiny_finish_trial
            g = math.inf
        else:
            self.n, r = divmod(1 << (53 - ex), m)
            g = 1.0 / scale
        self.r = np.uint64(r)
        self.r1 = np.uint64(r * m1)
        # floats below only size the batches; they never enter a probability
        self.p_trial = math.exp(-g)  # success probability of one V trial
        gu = 2.0**52 / m
        self.p_accept_u = (1.0 - math.exp(-gu)) / gu
        q = math.exp(-1.0 / scale)
        self.p_accept_sign = (1.0 + q) / 2.0


def _trials_const(s: _Scale, elems: _Elems, rng: _AnyBits) -> np.ndarray:
    """Independent ``Bernoulli(exp(-g))`` trials for one scale, one per element."""
    if s.n == 0:
        return _bern_exp_ratio(s.r, s.m_int, s.m_flt, s.r1, s.l1, elems, rng)
    size = _count(elems)
    out = np.zeros(size, dtype=bool)
    act = np.arange(size)
    for _ in range(s.n):
        act = act[_bern_exp_minus_one(_sub(elems, act), rng)]
        if not act.size:
            return out
    if s.tiny:  # probability < exp(-2048) per trial
        for i in act.tolist():
            out[i] = _tiny_finish_trial(s.scale, rng, _sub(elems, np.array([i])))
    elif int(s.r):
        out[act] = _bern_exp_ratio(s.r, s.m_int, s.m_flt, s.r1, s.l1, _sub(elems, act), rng)
    else:
        out[act] = True
    return out


def _geometric_const(s: _Scale, count: int, rng: _Bits) -> np.ndarray:
    """``count`` draws of ``V``: lengths of the runs of successes in a stream of trials."""
    out = np.empty(count, dtype=np.int64)
    filled = 0
    carry = 0  # successes at the end of the previous batch (start of the current run)
    while filled < count:
        size = int((count - filled) / (1.0 - s.p_trial) * 1.02) + 64
        fail = np.flatnonzero(~_trials_const(s, size, rng))
        if not fail.size:
            carry += size
            continue
        runs = np.diff(fail, prepend=-1) - 1
        runs[0] += carry
        carry = size - 1 - int(fail[-1])
        take = min(runs.size, count - filled)
        out[filled : filled + take] = runs[:take]
        filled += take
    return out


def _truncated_const(s: _Scale, count: int, rng: _Bits) -> np.ndarray:
    """``count`` draws of ``U`` (``P(u) ∝ exp(-u/sigma)`` on ``[0, 2^k)``) by rejection."""
    out = np.empty(count, dtype=np.uint64)
    filled = 0
    shift = np.uint64(52 - s.k)
    while filled < count:
        size = int((count - filled) / s.p_accept_u * 1.02) + 64
        u = rng.fields(size, s.k, s.k)
        a = u << shift  # u / sigma = a / M
        acc = _bern_exp_ratio(a, s.m_int, s.m_flt, a * s.m1, s.l1, size, rng)
        u = u[acc]
        take = min(u.size, count - filled)
        out[filled : filled + take] = u[:take]
        filled += take
    return out


def _sample_const(scale: float, count: int, rng: _Bits) -> np.ndarray:
    """``count`` independent ``LapZ(scale)`` draws."""
    s = _Scale(scale)
    out = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        size = min(int((count - filled) / s.p_accept_sign * 1.01) + 64, _CHUNK)
        y = _geometric_const(s, size, rng)
        if np.any(y >= (_MAX_Y >> s.k)):
            raise OverflowError("a discrete Laplace draw reached 2^62 in magnitude")
        if s.k:
            y <<= s.k
            y += _truncated_const(s, size, rng).astype(np.int64)
        neg = rng.coins(size)
        np.negative(y, out=y, where=neg)
        z = y[~(neg & (y == 0))]  # CKS Algorithm 2 step 7: reject "-0"
        take = min(z.size, count - filled)
        out[filled : filled + take] = z[:take]
        filled += take
    return out


# --------------------------------------------------------------------------------------------
# one scale, one stream per element: per-element rejection loops with shared constants
# --------------------------------------------------------------------------------------------


def _sample_elements(s: _Scale, size: int, rng: _ElementBits) -> np.ndarray:
    """One ``LapZ(s.scale)`` draw for each element ``0 .. size - 1``, each from its own stream.

    The steps of :func:`_sample_const` (``Y = U + T V``, sign, reject ``-0``), but every
    rejection loop runs per element over a shrinking set of element ids, and every random value
    is read from the stream of the element it is for.
    """
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    shift = np.uint64(52 - s.k)
    while pending.size:
        # V: successes before the first failed trial, per element
        y = np.empty(pending.size, dtype=np.int64)
        pos = np.arange(pending.size)
        alive = pending
        successes = 0
        while alive.size:
            ok = _trials_const(s, alive, rng)
            y[pos[~ok]] = successes
            pos, alive = pos[ok], alive[ok]
            successes += 1
        if np.any(y >= (_MAX_Y >> s.k)):
            raise OverflowError("a discrete Laplace draw reached 2^62 in magnitude")
        if s.k:  # U: a k-bit field accepted with probability exp(-U/sigma), per element
            y <<= s.k
            pos = np.arange(pending.size)
            ids = pending
            while ids.size:
                u = rng.fields(ids, s.k, s.k)
                a = u << shift  # u / sigma = a / M
                acc = _bern_exp_ratio(a, s.m_int, s.m_flt, a * s.m1, s.l1, ids, rng)
                y[pos[acc]] += u[acc].astype(np.int64)
                pos, ids = pos[~acc], ids[~acc]
        neg = rng.coins(pending)
        reject = neg & (y == 0)  # CKS Algorithm 2 step 7: reject "-0"
        np.negative(y, out=y, where=neg)
        keep = ~reject
        out[pending[keep]] = y[keep]
        pending = pending[reject]
    return out


# --------------------------------------------------------------------------------------------
# per-element scales: per-element rejection loops over shrinking index sets
# --------------------------------------------------------------------------------------------


class _Params:
    """Per-element constants of the decomposition (arrays; see the module docstring)."""

    def __init__(self, scale: np.ndarray) -> None:
        mant, ex = np.frexp(scale)
        self.scale = scale
        self.m_flt = np.ldexp(mant, 53)  # exact integers 2^52 <= M < 2^53
        self.m_int = self.m_flt.astype(np.uint64)
        self.m1 = _multiplier(self.m_flt, 1)
        self.l1 = self.m_int * self.m1
        ex = ex.astype(np.int64)
        big = ex >= 1
        self.k = np.where(big, ex - 1, 0)  # T = 2^k <= sigma
        self.kmax = int(self.k.max())
        self.n = np.zeros(scale.shape, dtype=np.int64)
        self.r = np.full(scale.shape, _TWO52, dtype=np.uint64)  # g = 2^52 / M if sigma >= 1
        self.tiny = ex < _TINY_EXP
        small = np.flatnonzero(~big & ~self.tiny)
        if small.size:  # 1/sigma = s/M with s = 2^(53 - e) < 2^64
            s = np.left_shift(np.uint64(1), (53 - ex[small]).astype(np.uint64))
            m_small = self.m_int[small]
            n_small = s // m_small
            self.n[small] = n_small.astype(np.int64)
            self.r[small] = s - n_small * m_small
        tiny = np.flatnonzero(self.tiny)
        if tiny.size:  # n >= 2048; the exact rest is in _tiny_finish_trial
            self.n[tiny] = _CHAIN_CAP
            self.r[tiny] = 0
        self.any_chain = bool(np.any(self.n))
        self.any_tiny = tiny.size > 0
        self.r1 = self.r * self.m1


def _trials_array(p: _Params, idx: np.ndarray, rng: _AnyBits) -> np.ndarray:
    """One ``Bernoulli(exp(-(n + r/M)))`` trial for each element ``idx``."""
    if not p.any_chain:  # all sigma >= 1: n = 0, r = 2^52
        return _bern_exp_ratio(_TWO52, p.m_int[idx], p.m_flt[idx], p.r1[idx], p.l1[idx], idx, rng)
    out = np.ones(idx.size, dtype=bool)
    n_idx = p.n[idx]
    chain = np.flatnonzero(n_idx)
    step = 0
    while chain.size:  # n draws of Bernoulli(exp(-1)), stopping at the first failure
        ok = _bern_exp_minus_one(idx[chain], rng)
        out[chain[~ok]] = False
        step += 1
        chain = chain[ok]
        chain = chain[n_idx[chain] > step]
    finished = None
    if p.any_tiny:  # past _CHAIN_CAP draws: probability < exp(-2048)
        survivors = np.flatnonzero(out & p.tiny[idx])
        if survivors.size:
            finished = np.zeros(idx.size, dtype=bool)
            for i in survivors.tolist():
                out[i] = _tiny_finish_trial(float(p.scale[idx[i]]), rng, idx[i : i + 1])
                finished[i] = True
    frac_mask = out & (p.r[idx] > 0)
    if finished is not None:
        frac_mask &= ~finished
    frac = np.flatnonzero(frac_mask)
    if frac.size:
        g = idx[frac]
        out[frac] = _bern_exp_ratio(p.r[g], p.m_int[g], p.m_flt[g], p.r1[g], p.l1[g], g, rng)
    return out


def _geometric_array(p: _Params, idx: np.ndarray, rng: _AnyBits) -> np.ndarray:
    """``V`` for each element ``idx``: successes before its first failed trial."""
    v = np.empty(idx.size, dtype=np.int64)
    pos = np.arange(idx.size)
    alive = idx
    successes = 0
    while alive.size:
        ok = _trials_array(p, alive, rng)
        v[pos[~ok]] = successes  # first failure after `successes` successful trials
        pos = pos[ok]
        alive = alive[ok]
        successes += 1
    return v


def _truncated_array(p: _Params, idx: np.ndarray, rng: _AnyBits) -> np.ndarray:
    """``U`` for each element ``idx`` (0 where ``k = 0``), by per-element rejection."""
    u_out = np.zeros(idx.size, dtype=np.uint64)
    pos = np.flatnonzero(p.k[idx] > 0)
    g = idx[pos]
    while g.size:
        k = p.k[g]
        u = rng.fields(g, k, p.kmax)
        a = u << (_U52 - k.astype(np.uint64))  # u / sigma = a / M
        acc = _bern_exp_ratio(a, p.m_int[g], p.m_flt[g], a * p.m1[g], p.l1[g], g, rng)
        u_out[pos[acc]] = u[acc]
        pos = pos[~acc]
        g = g[~acc]
    return u_out


def _sample_array(scale: np.ndarray, rng: _AnyBits) -> np.ndarray:
    """One ``LapZ(scale[i])`` draw per element (per-element scales); element ``i`` has id ``i``.

    Every random value is requested for named elements, and what an element requests depends
    only on its scale and the values it has read: with per-element streams
    (:class:`_ElementBits`) its draw is a function of its own scale and stream.
    """
    p = _Params(scale)
    out = np.empty(scale.size, dtype=np.int64)
    pending = np.arange(scale.size)
    while pending.size:
        v = _geometric_array(p, pending, rng)
        k = p.k[pending]
        if np.any(v >= (np.int64(_MAX_Y) >> k)):
            raise OverflowError("a discrete Laplace draw reached 2^62 in magnitude")
        y = (v << k) + _truncated_array(p, pending, rng).astype(np.int64)
        neg = rng.coins(pending)
        reject = neg & (y == 0)  # CKS Algorithm 2 step 7: reject "-0"
        np.negative(y, out=y, where=neg)
        keep = ~reject
        out[pending[keep]] = y[keep]
        pending = pending[reject]
    return out


def _dispatch(scale: np.ndarray, bits: _Bits, allow_sort: bool) -> np.ndarray:
    """One draw per element of ``scale`` (1-D), choosing the faster sampler for each part.

    Runs of equal consecutive scales covering ``_RUN_MIN`` elements (or a quarter of the array)
    use the stream sampler.  If the other elements are many but take few distinct values (a
    sample decides; this only affects speed), they are sorted into runs first.  The rest use the
    per-element sampler.  Every element's draw is independent of the others', so how the
    elements are grouped does not change the joint distribution.
    """
    size = scale.size
    out = np.empty(size, dtype=np.int64)
    starts = np.concatenate(([0], np.flatnonzero(scale[1:] != scale[:-1]) + 1))
    lengths = np.diff(starts, append=size)
    long_run = lengths >= min(_RUN_MIN, (size + 3) // 4)
    for start, length in zip(starts[long_run].tolist(), lengths[long_run].tolist(), strict=True):
        out[start : start + length] = _sample_const(float(scale[start]), length, bits)
    if bool(long_run.all()):
        return out
    rest = np.flatnonzero(np.repeat(~long_run, lengths))
    values = scale[rest]
    if allow_sort and rest.size >= 4 * _RUN_MIN:
        probe = values[:: max(1, rest.size // _SORT_PROBE)]
        if np.unique(probe).size * _RUN_MIN <= rest.size // 4:
            order = np.argsort(values)
            res = np.empty(rest.size, dtype=np.int64)
            res[order] = _dispatch(values[order], bits, allow_sort=False)
            out[rest] = res
            return out
    # scales >= 1 and < 1 apart: the former then need no Bernoulli(exp(-1)) chains
    for part in (np.flatnonzero(values >= 1.0), np.flatnonzero(values < 1.0)):
        for lo in range(0, part.size, _CHUNK):
            sub = part[lo : lo + _CHUNK]
            out[rest[sub]] = _sample_array(values[sub], bits)
    return out


def fast_discrete_laplace(scales: np.ndarray, rng: RandomSource) -> np.ndarray:
    """Independent exact discrete Laplace draws, one per entry of ``scales``.

    Entry ``i`` is distributed as ``LapZ(scales[i])``,
    ``P(z) = (1 - e^{-1/s}) / (1 + e^{-1/s}) e^{-|z|/s}`` on the integers, with no
    floating-point approximation of any probability and no rounding of the scales (see the
    module docstring).  All elements are drawn with array operations: runs of equal scales as
    streams, the other elements together with per-element rejection loops.

    Reference: C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
    Privacy", NeurIPS 2020 (Algorithms 1 and 2).

    :param scales: finite scales in ``(0, 2^52]``, any shape
    :param rng: the source of randomness (secure, or seeded for reproducible tests)
    :return: ``int64`` array with the shape of ``scales``
    :raises ValueError: if a scale is not finite, not positive or above :data:`MAX_SCALE`
    :raises OverflowError: if a draw reaches ``2^62`` in magnitude (probability below
        ``exp(-2^62 / max(scales))`` per draw)
    """
    arr, flat = _check_scales(scales)
    if flat.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    bits = _Bits(rng, _BYTES_PER_DRAW * flat.size + 64)
    return _dispatch(flat, bits, allow_sort=True).reshape(arr.shape)


def _check_scales(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(scales, dtype=np.float64)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if not (bool(np.all(np.isfinite(flat))) and bool(np.all(flat > 0))):
        raise ValueError("scales must be finite and positive")
    if bool(np.any(flat > MAX_SCALE)):
        raise ValueError(f"scales must be at most 2^52 = {MAX_SCALE:.6g}")
    return arr, flat
