"""Exact discrete Laplace draws, each element from its own random stream.

:func:`stream_discrete_laplace` draws ``LapZ(sigma)`` for ``size`` elements, element ``i``
reading only the bytes of its own stream ``i`` (node-addressed randomness,
:mod:`opendp_wasserstein.noise.node_randomness`), so that its value is a function of ``sigma`` and
stream ``i`` alone, whatever other elements are drawn with it and in which order.  No
probability is rounded: the law is exactly ``LapZ(sigma)`` for the float ``sigma`` (a dyadic
rational) when the streams are uniform.

Method (``sigma >= 1/8``)
-------------------------

With ``q = exp(-1/sigma)``, a fair sign ``B`` and ``Y ~ Geometric(q)`` (``P(Y = y) = (1 - q)
q^y``), ``(1 - 2B) Y`` conditioned on not ``(B = 1, Y = 0)`` is ``LapZ(sigma)`` (Canonne,
Kamath, Steinke 2020, Algorithm 2).  ``Y`` is split at ``T = 2^k``, ``k = max(0,
floor(log2 sigma) - 4)`` (so ``sigma / T`` is in ``[16, 32)`` when ``sigma >= 16``):
``Y = U + T V`` with

* ``U = sum_i b_i 2^i`` on ``[0, T)``, whose bits ``b_0 .. b_{k-1}`` are **independent**,
  ``P(b_i = 1) = theta_i = q^(2^i) / (1 + q^(2^i))``: indeed ``P(U = u) ∝ q^u = prod_i
  (q^(2^i))^(b_i)``, a product over the bits;
* ``V ~ Geometric(p)``, ``p = q^T``, independent of ``U`` (``P(U = u, V = v) ∝ q^(u + T v)``).

Each ``b_i`` is ``[R < theta_i]`` for a uniform ``R = sum_j R_j 256^-j`` read lazily byte by
byte: the first byte decides unless it equals the first base-256 digit of ``theta_i``
(probability ``1/256``), then the next byte is compared with the next digit, and so on.  ``V``
is ``#{v >= 1 : R < p^v}`` for a fresh uniform ``R`` whose first 8 bytes form the 64-bit integer
``W``: ``W < P_v = floor(2^64 p^v)`` implies ``R < p^v`` and ``W > P_v`` implies ``R > p^v``, so
``V`` is the number of ``P_v > W`` from a table of ``v <= v_max`` (with ``p^v_max`` about
``2^-8``); on ``W = P_v`` the following bytes of ``R`` are compared with the following digits of
``p^v``; if ``R < p^v_max``, then ``V = v_max + V'`` with a fresh ``V'`` (``V`` is memoryless).

Digits are exact: every threshold is bracketed by integers ``lo <= 2^F x <= hi`` computed from
one value of ``exp(-1/sigma)`` (Python's :mod:`decimal`, whose ``exp`` is correctly rounded;
``1/sigma`` rounded with a known error) by repeated squaring and multiplication with floor and
ceiling, and a digit is used only where ``lo`` and ``hi`` agree on it.  A comparison that runs
past the known digits recomputes the constants at twice the precision, as often as needed
(the first precision is 128 bits: about 14 known digits of every threshold at the usual
scales, so about ``256^-6`` of the word ties, which are ``2^-64`` events, read past them).
The ``V`` words are read from the bounds of the powers, the powers' digits built only on a
word tie.  Every threshold is irrational (``e^x`` is transcendental for rational ``x != 0``),
so a comparison ends after finitely many bytes with probability 1.

A typical draw reads ``1 + k + 8`` bytes (one AES block for ``sigma < 2048``) in a few array
operations over all elements; the law does not depend on the split ``k`` or on ``v_max``, only
the number of bytes read does.

Scales below ``1/8`` (where ``Y`` is 0 with probability above ``1 - 3.4 10^-4``) use the
Canonne-Kamath-Steinke rejection sampler of :mod:`opendp_wasserstein.noise._fast_laplace` with
per-element streams.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from functools import cached_property, lru_cache

import numpy as np

from opendp_wasserstein.noise._fast_laplace import (
    _CHUNK,
    _MAX_Y,
    MAX_SCALE,
    StreamFn,
    _ElementBits,
    _sample_elements,
    _Scale,
)

__all__ = ["stream_discrete_laplace"]

#: scales from this one on use the bit-decomposition sampler
MIN_TABLE_SCALE = 0.125
_RATIO_LOG2 = 4  # T = 2^k <= sigma / 16
_TAIL = 8 * math.log(2.0)  # v_max ~ 8 ln 2 sigma / T: P(V >= v_max) ~ 2^-8 (speed only)
_FRAC = 128  # initial fixed-point precision of the thresholds, in bits


@dataclass(frozen=True)
class _Digits:
    """Known base-256 digits of thresholds in ``(0, 1)``: row ``t`` has ``known[t]`` digits."""

    digits: np.ndarray  # (count, frac // 8) uint8
    known: np.ndarray  # (count,) int64


@dataclass(frozen=True)
class _Constants:
    """The constants of the bit-decomposition sampler for one scale, at one precision."""

    scale: float
    frac: int
    k: int  # T = 2^k
    vmax: int
    theta: _Digits  # theta_0 .. theta_{k-1}
    words: np.ndarray  # P_v = floor(2^64 p^v), v = 1 .. vmax, decreasing (uint64)
    words_ascending: np.ndarray  # the same, increasing
    bounds: tuple[tuple[int, ...], tuple[int, ...]] = field(repr=False, compare=False)

    @cached_property
    def powers(self) -> _Digits:
        """The known digits of ``p^1 .. p^vmax`` (built on the first read: only a tie of a
        ``V`` word with a table word reads past the words)."""
        return _digits(self.bounds[0], self.bounds[1], self.frac)


def _split(scale: float) -> tuple[int, int]:
    """``(k, v_max)`` for a scale (a function of the scale only, never of the precision)."""
    ex = math.frexp(scale)[1]  # 2^(ex - 1) <= scale < 2^ex
    k = max(0, ex - 1 - _RATIO_LOG2)
    vmax = max(1, math.ceil(_TAIL * scale / 2.0**k))
    return k, vmax


def _digits(lo: Sequence[int], hi: Sequence[int], frac: int) -> _Digits:
    """The base-256 digits on which ``lo[t]`` and ``hi[t]`` (``frac``-bit fractions) agree, from
    the first: row ``t`` holds its first ``known[t]`` digits, zeros after them (all rows at
    once)."""
    nbytes = frac // 8
    count = len(lo)
    if len(hi) != count:
        raise ValueError("lo and hi must have the same length")
    da = np.frombuffer(b"".join(a.to_bytes(nbytes, "big") for a in lo), dtype=np.uint8).reshape(
        count, nbytes
    )
    db = np.frombuffer(b"".join(b.to_bytes(nbytes, "big") for b in hi), dtype=np.uint8).reshape(
        count, nbytes
    )
    differ = da != db
    # the first differing digit, or nbytes where all agree
    known = np.where(differ.any(axis=1), differ.argmax(axis=1), nbytes).astype(np.int64)
    out = np.where(np.arange(nbytes) < known[:, None], da, np.uint8(0))
    return _Digits(np.ascontiguousarray(out, dtype=np.uint8), known)


@lru_cache(maxsize=1024)
def _constants(scale: float, frac: int = _FRAC) -> _Constants:
    """Exact digits of ``theta_i`` and ``p^v`` for ``scale``, bracketed at ``2^-frac``."""
    k, vmax = _split(scale)
    one = 1 << frac
    # q = exp(-1/scale): 1/scale rounded to `prec` digits (relative error <= 10^(1-prec)),
    # exp correctly rounded; 1/scale <= 8, so the relative error of q is below 10^(3-prec)
    prec = math.ceil(frac * math.log10(2.0)) + 10
    with localcontext() as ctx:
        ctx.prec = prec
        q_dec = (-(Decimal(1) / Decimal(scale))).exp()
    # q_dec (1 -/+ rel), rel = 10^(4 - prec), floored / ceiled at 2^-frac, in integers: q_dec
    # = num / den exactly (a finite decimal)
    num, den = q_dec.as_integer_ratio()
    big = 10 ** (prec - 4)
    q_lo = (num * (big - 1) * one) // (den * big)
    # q <= exp(-2^-52) < 1 - 2^-53, so one - 1 bounds it as soon as frac >= 53
    q_hi = min(-(-(num * (big + 1) * one) // (den * big)), one - 1)
    th_lo: list[int] = []
    th_hi: list[int] = []
    for _ in range(k):  # q_i = q^(2^i); theta_i = q_i / (1 + q_i), increasing in q_i
        th_lo.append((q_lo << frac) // (one + q_lo))
        th_hi.append(-(-(q_hi << frac) // (one + q_hi)))
        q_lo = (q_lo * q_lo) >> frac
        q_hi = min((q_hi * q_hi + one - 1) >> frac, one - 1)
    p_lo, p_hi = q_lo, q_hi  # p = q^T
    pw_lo, pw_hi = [p_lo], [p_hi]
    lo, hi, up = p_lo, p_hi, one - 1  # ceil(x / one) = (x + one - 1) >> frac
    add_lo, add_hi = pw_lo.append, pw_hi.append
    for _ in range(vmax - 1):
        lo = (lo * p_lo) >> frac
        hi = (hi * p_hi + up) >> frac
        add_lo(lo)
        add_hi(hi)
    theta = _digits(th_lo, th_hi, frac)
    # the words are the first 8 digits of p^v: known where lo and hi agree on them
    shift = frac - 64
    words = np.array([a >> shift for a in pw_lo], dtype=np.uint64)
    if (k and int(theta.known.min()) < 1) or not np.array_equal(
        words, np.array([b >> shift for b in pw_hi], dtype=np.uint64)
    ):
        return _constants(scale, 2 * frac)  # a threshold too close to a digit boundary
    return _Constants(
        scale, frac, k, vmax, theta, words, words[::-1].copy(), (tuple(pw_lo), tuple(pw_hi))
    )


def _less(
    bits: _ElementBits, elems: np.ndarray, table: str, tid: np.ndarray, start: int, c: _Constants
) -> np.ndarray:
    """``R < x_t`` for uniforms ``R`` whose first ``start`` digits equal those of ``x_t``.

    ``x_t`` is ``theta_t`` (``table == "theta"``) or ``p^(t+1)`` (``"powers"``); the next digits
    of each ``R`` are the next bytes of its element's stream, one at a time.
    """
    out = np.zeros(elems.size, dtype=bool)
    act = np.arange(elems.size)
    j = start
    while act.size:
        digits: _Digits = getattr(c, table)
        while int(digits.known[tid[act]].min()) <= j:  # past the known digits: refine
            c = _constants(c.scale, 2 * c.frac)
            digits = getattr(c, table)
        r = bits.bytes(elems[act])
        d = digits.digits[tid[act], j]
        out[act[r < d]] = True
        act = act[r == d]
        j += 1
    return out


def _geometric(bits: _ElementBits, elems: np.ndarray, c: _Constants) -> np.ndarray:
    """``V ~ Geometric(p)`` for each element, by inversion of a 64-bit word and the table."""
    v = np.zeros(elems.size, dtype=np.int64)
    act = np.arange(elems.size)
    while act.size:
        w = bits.word_be(elems[act])
        idx = np.searchsorted(c.words_ascending, w, side="right")
        count = c.vmax - idx  # #{v : P_v > W}
        tie = np.flatnonzero((idx > 0) & (c.words_ascending[np.maximum(idx - 1, 0)] == w))
        if tie.size:  # W = P_v for v = count + 1: compare the following digits with p^v
            below = _less(bits, elems[act[tie]], "powers", count[tie], 8, c)
            count[tie] += below
        v[act] += count
        act = act[count == c.vmax]  # R < p^vmax: V = vmax + a fresh V' (memoryless)
    return v


#: bits of the V word that index the bucket table (:func:`_v_table`)
_BUCKET_BITS = 12


@lru_cache(maxsize=256)
def _v_table(scale: float) -> np.ndarray:
    """``V`` by the top ``_BUCKET_BITS`` bits of the word ``W`` (int64, ``2^12`` entries): entry
    ``h`` is ``#{v : P_v > W}`` for every ``W`` of the bucket ``[h 2^52, (h + 1) 2^52)`` when no
    table word lies in the bucket (so that count is the same for all of them and no ``W`` can
    tie a ``P_v``) and it is below ``v_max``; else -1 (the word is looked up in the table).
    A function of the exact words of :func:`_constants` (the same at every precision): one
    entry per scale, the most recent 256 scales kept."""
    c = _constants(scale)
    # words in each bucket; #{P_v > high end of bucket h} = #{P_v in a bucket above h}
    inside = np.bincount(
        (c.words >> np.uint64(64 - _BUCKET_BITS)).view(np.int64), minlength=1 << _BUCKET_BITS
    )
    above = c.vmax - np.cumsum(inside)
    out = np.where((inside == 0) & (above < c.vmax), above, -1).astype(np.int64)
    out.setflags(write=False)
    return out


_HIGH = np.uint64(0x8080808080808080)  # the top bit of every byte lane
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_GATHER = np.uint64(0x0102040810204080)  # bit 8 i -> bit 56 + i (i < 8, no carries)


@lru_cache(maxsize=256)
def _lane_constants(digits: bytes) -> tuple[np.uint64, np.uint64, np.uint64]:
    """For first digits ``t_0 .. t_{k-1}`` (``k <= 7``): the word with ``t_i`` in byte lane
    ``i + 1``, its low 7 bits per lane, and the top bits of lanes ``1 .. k``."""
    word = sum(t << (8 * (i + 1)) for i, t in enumerate(digits))
    top = sum(0x80 << (8 * (i + 1)) for i in range(len(digits)))
    return np.uint64(word), np.uint64(word & ~0x8080808080808080), np.uint64(top)


def _swar_bits(x: np.ndarray, digits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``U = sum_i [R_i < t_i] 2^i`` and ``any_i R_i == t_i`` for the bytes ``R_i`` in lanes
    ``1 .. k`` of the little-endian words ``x`` (``k = len(digits) <= 7``), by byte-lane
    arithmetic on whole words: per lane, ``(R | 0x80) - (t & 0x7f)`` cannot borrow from the
    next lane and its top bit is ``[R mod 128 >= t mod 128]``, so ``R < t`` is
    ``(~R_7 & t_7) | (~(R_7 ^ t_7) & ~that)`` on the top bits; a lane of ``R ^ t`` is zero iff
    the top bit of ``((z & 0x7f) + 0x7f) | z`` is clear (no carry leaves a lane)."""
    word, low, top = _lane_constants(digits.tobytes())
    t = x | _HIGH
    t -= low
    z = x ^ word
    lt: np.ndarray = np.bitwise_and(~x, word)
    lt |= ~(z | t)
    lt &= top
    eq = z & _LOW7
    eq += _LOW7
    eq |= z
    tie = (~eq & top) != 0
    lt >>= np.uint64(15)  # lane i + 1's top bit to bit 8 i
    lt *= _GATHER
    lt >>= np.uint64(56)
    return lt, tie


def _first_round(
    c: _Constants, buf: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One attempt of every element from a fresh start of its bytes ``buf`` (one row each, the
    layout of the module docstring: sign, ``U`` bytes, ``V`` word) in the common cases.

    A first digit of ``theta_i`` tied by one ``U`` byte (probability about ``k / 256``) is
    decided by the element's next byte, right after the ``U`` bytes, when that byte differs
    from the second digit and the word stays at byte 8 (``k <= 6``), as the general path reads.

    :return: ``(y, again, tail, slow)``: the signed values; the elements rejected as ``-0``
        (their bytes end with the ``V`` word); the elements with ``V >= v_max`` (their ``y`` has
        ``V = v_max``: a fresh ``V'`` from the word that follows is to be added; never
        rejected); the elements the common cases do not cover (their ``y`` is meaningless)
    """
    size = buf.shape[0]
    k = c.k
    w = buf.view(">u8")[:, (1 + k + 7) // 8].astype(np.uint64)  # the first multiple of 8
    y = _v_table(c.scale).take((w >> np.uint64(64 - _BUCKET_BITS)).view(np.int64))
    slow = np.zeros(size, dtype=bool)
    tail = np.zeros(size, dtype=bool)
    look = (y < 0).nonzero()[0]  # 1-D: as np.flatnonzero, without its wrappers
    any_slow = False  # whether slow has an entry (the masks below are skipped when not)
    if look.size:  # a table word in the bucket: V = #{P_v > W} = v_max - idx
        any_slow = True
        wl = w[look]
        idx = c.words_ascending.searchsorted(wl, side="right")
        y[look] = c.vmax - idx
        tail[look] = idx == 0  # V >= v_max: a fresh word follows
        slow[look] = c.words_ascending[np.maximum(idx, 1) - 1] == wl  # W = P_v: next digits
    if k:  # b_i = [R_i < theta_i] from byte 1 + i; a tied first digit: the next bytes decide
        digits = c.theta.digits[:, 0]
        if k <= 7:  # bytes 1 .. k are lanes of the row's first 64-bit word: all bits at once
            u, tie = _swar_bits(buf.view("<u8")[:, 0], digits)
        else:
            u = np.zeros(size, dtype=np.int64)
            bit = np.empty(size, dtype=bool)
            part = np.empty(size, dtype=np.int64)
            tie = np.zeros(size, dtype=bool)
            for i, digit in enumerate(digits.tolist()):
                col = buf[:, 1 + i]  # one column at a time: contiguous passes, any k
                tie |= col == digit
                np.less(col, digit, out=bit)
                np.left_shift(bit, i, out=part, dtype=part.dtype)
                u |= part
        y <<= k
        y += u.view(np.int64)
        tied = tie.nonzero()[0]
        if tied.size:  # one tie, decided by the next byte (the word stays at byte 8): here
            eq = buf[tied, 1 : 1 + k] == digits
            count = eq.sum(axis=1)
            one = np.flatnonzero(count == 1) if k <= 6 else np.zeros(0, dtype=np.int64)
            col_of = eq[one].argmax(axis=1)
            rows = tied[one]
            nxt = buf[rows, 1 + k]
            second = c.theta.digits[col_of, 1]
            ok = (nxt != second) & (c.theta.known[col_of] >= 2)
            y[rows[ok]] += (nxt[ok] < second[ok]).astype(np.int64) << col_of[ok]
            handled = np.zeros(tied.size, dtype=bool)
            handled[one[ok]] = True
            slow[tied[~handled]] = True
            any_slow = True
    neg = (buf[:, 0] & np.uint8(1)).view(bool)
    again = neg & (y == 0)  # CKS Algorithm 2 step 7: "-0" is rejected and redrawn
    if any_slow:
        again &= ~slow
        tail &= ~slow
    np.negative(y, out=y, where=neg)
    return y, again, tail, slow


#: the retries of :func:`_sample_table`: at most this many attempts per element a round, as
#: many as leave about _LEFT elements for another round (speed only, never the values)
_MAX_REPS = 8
_LEFT = 0.1


def _sample_table(c: _Constants, size: int, bits: _ElementBits) -> np.ndarray:
    """``size`` draws of ``LapZ(c.scale)``, element ``i`` from stream ``i`` (ids
    ``0 .. size-1``).

    The common cases first, for all elements at once and without per-request bookkeeping
    (:func:`_first_round`), from the blocks every element holds already
    (:meth:`~opendp_wasserstein.noise._fast_laplace._ElementBits.first_blocks`): the sign at byte
    0, the ``k`` bytes of ``U`` at bytes ``1 .. k``, the ``V`` word at the next multiple of 8.
    When those bytes fill the blocks exactly (``k <= 7``, the usual case), an attempt rejected
    as ``-0`` starts again at the next blocks, and ``V >= v_max`` reads its fresh word from
    the first 8 bytes of the next block: both are done here too, on the elements concerned.
    The few elements left are drawn by :func:`_sample_table_elems` from the start of their
    streams, which reads the same bytes in the same order: every element's value is the one
    :func:`_sample_table_elems` gives it, a function of its own stream.
    """
    out = np.empty(size, dtype=np.int64)
    if size == 0:
        return out
    buf = bits.first_blocks()
    layout = (1 + c.k + 7) // 8 * 8 + 8
    blocks = buf.shape[1] // 16
    exact = layout == buf.shape[1]  # an attempt ends on a block boundary
    # the elements rejected as -0 try again from the next blocks: all the attempts a round
    # expects to need (``reps``, from the rejection probability; speed only) are read and
    # drawn at once, and each element takes its first attempt that is not rejected, which is
    # the attempt the one-at-a-time loop reaches (it reads the same blocks in the same order)
    reject = 0.5 * -math.expm1(-1.0 / c.scale)  # P(sign 1 and Y = 0)
    rest = []
    ids = np.arange(size)
    after = np.full(size, blocks, dtype=np.uint64)  # the block after each element's attempt
    reps = 1
    while ids.size:
        y, again, tail, slow = _first_round(c, buf)
        if not exact:
            slow |= again | tail
            again[:] = False
            tail[:] = False
        if reps > 1:  # rows (element, attempt), element-major: the first accepted attempt
            tries = again.reshape(ids.size, reps)
            pick = np.argmin(tries, axis=1)  # the first False; 0 when every attempt is rejected
            again = np.all(tries, axis=1, keepdims=False).reshape(-1)
            row = np.arange(ids.size) * reps + np.where(again, reps - 1, pick)
            y, tail, slow = y[row], tail[row], slow[row]  # a rejected row is neither
            after += (row % reps + 1).astype(np.uint64) * np.uint64(blocks)
        t = tail.nonzero()[0]
        if t.size:  # V' from the next block's first word (a tail is never rejected)
            w2 = bits.attempts(ids[t], after[t], 1).view(">u8")[:, 0].astype(np.uint64)
            idx = np.searchsorted(c.words_ascending, w2, side="right")
            more = (idx == 0) | (c.words_ascending[np.maximum(idx, 1) - 1] == w2)
            step = (c.vmax - idx).astype(np.int64) << c.k
            y[t] += np.where(y[t] < 0, -step, step)
            slow[t[more]] = True
        done = ~(again | slow)
        if reps == 1 and ids.size == size:  # the first round: ids is arange(size)
            np.copyto(out, y, where=done)
        else:
            out[ids[done]] = y[done]
        rest.append(ids[slow])
        ids, after = ids[again], after[again]
        if ids.size:
            # about ids.size * reject^reps elements are left after reps more attempts
            reps = 1
            while reps < _MAX_REPS and ids.size * reject**reps > _LEFT:
                reps += 1
            buf = bits.attempts(ids, after, reps)
            if reps == 1:
                after += np.uint64(blocks)
    todo = np.concatenate(rest)
    if todo.size:
        out[todo] = _sample_table_elems(c, todo, bits)
    return out


def _sample_table_elems(c: _Constants, ids: np.ndarray, bits: _ElementBits) -> np.ndarray:
    """Draws of ``LapZ(c.scale)`` for the elements ``ids`` (none of which has read from its
    stream yet), element ``ids[i]`` from its own stream: every request goes through
    :class:`~opendp_wasserstein.noise._fast_laplace._ElementBits` (the general path)."""
    out = np.empty(ids.size, dtype=np.int64)
    pending = ids
    where = np.arange(ids.size)
    weights = np.left_shift(np.int64(1), np.arange(c.k, dtype=np.int64))
    while pending.size:
        neg = bits.coins(pending)
        y = np.zeros(pending.size, dtype=np.int64)
        if c.k:
            r = bits.run(pending, c.k)
            first = c.theta.digits[:, 0]
            ones = r < first
            tied = r == first
            for i in np.flatnonzero(tied.any(axis=0)).tolist():  # bit order: per element, too
                rows = np.flatnonzero(tied[:, i])
                tid = np.full(rows.size, i, dtype=np.int64)
                ones[rows, i] = _less(bits, pending[rows], "theta", tid, 1, c)
            y = ones.astype(np.int64) @ weights
        v = _geometric(bits, pending, c)
        if np.any(v >= (_MAX_Y >> c.k)):
            raise OverflowError("a discrete Laplace draw reached 2^62 in magnitude")
        y += v << c.k
        reject = neg & (y == 0)  # CKS Algorithm 2 step 7: reject "-0"
        np.negative(y, out=y, where=neg)
        keep = ~reject
        out[where[keep]] = y[keep]
        pending = pending[reject]
        where = where[reject]
    return out


def stream_discrete_laplace(scale: float, size: int, streams: StreamFn) -> np.ndarray:
    """Exact ``LapZ(scale)`` draws, element ``i`` from its own random stream ``i`` only.

    Element ``i`` reads the blocks ``streams(ids, first, blocks)`` of stream ``i`` in order and
    nothing else, and what it reads next depends only on what it has read, so its value is a
    function of ``scale`` and stream ``i`` only, whatever the other elements, their number and
    their order.  If the streams are independent and uniform, the draws are independent
    ``LapZ(scale)``, ``P(z) = (1 - e^{-1/s}) / (1 + e^{-1/s}) e^{-|z|/s}`` (module docstring).

    :param scale: a finite scale in ``(0, 2^52]``
    :param size: the number of elements (ids ``0 .. size - 1``)
    :param streams: ``streams(ids, first, blocks)`` returns, for every element id in ``ids``
        (int64), the ``blocks`` consecutive 16-byte blocks of its stream starting at block
        ``first[i]`` (uint64), as a ``(len(ids), 16 * blocks)`` uint8 array; it must be a
        deterministic function of (id, block index)
    :return: ``int64`` array of length ``size``
    :raises ValueError: if the scale is not finite, not positive or above ``2^52``
    :raises OverflowError: if a draw reaches ``2^62`` in magnitude
    """
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0.0):  # as _check_scales, for one scale
        raise ValueError("scales must be finite and positive")
    if scale > MAX_SCALE:
        raise ValueError(f"scales must be at most 2^52 = {MAX_SCALE:.6g}")
    out = np.empty(int(size), dtype=np.int64)
    if scale >= MIN_TABLE_SCALE:
        c = _constants(scale)
        layout = ((1 + c.k + 7) // 8) * 8 + 8  # sign, U bytes, the aligned V word
        blocks = (layout + 15) // 16
    else:
        s = _Scale(scale)
        blocks = 2
    for lo in range(0, out.size, _CHUNK):
        hi = min(out.size, lo + _CHUNK)

        def chunk(ids: np.ndarray, first: np.ndarray, count: int, lo: int = lo) -> np.ndarray:
            return streams(ids + lo, first, count)

        bits = _ElementBits(chunk, hi - lo, blocks)
        if scale >= MIN_TABLE_SCALE:
            out[lo:hi] = _sample_table(c, hi - lo, bits)
        else:
            out[lo:hi] = _sample_elements(s, hi - lo, bits)
    return out
