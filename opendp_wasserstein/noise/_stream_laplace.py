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
past the known digits (probability about ``256^-24``) recomputes the constants at twice the
precision, as often as needed.  Every threshold is irrational (``e^x`` is transcendental for
rational ``x != 0``), so a comparison ends after finitely many bytes with probability 1.

A typical draw reads ``1 + k + 8`` bytes (one AES block for ``sigma < 2048``) in a few array
operations over all elements; the law does not depend on the split ``k`` or on ``v_max``, only
the number of bytes read does.

Scales below ``1/8`` (where ``Y`` is 0 with probability above ``1 - 3.4 10^-4``) use the
Canonne-Kamath-Steinke rejection sampler of :mod:`opendp_wasserstein.noise._fast_laplace` with
per-element streams.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np

from opendp_wasserstein.noise._fast_laplace import (
    _CHUNK,
    _MAX_Y,
    StreamFn,
    _check_scales,
    _ElementBits,
    _sample_elements,
    _Scale,
)

__all__ = ["stream_discrete_laplace"]

#: scales from this one on use the bit-decomposition sampler
MIN_TABLE_SCALE = 0.125
_RATIO_LOG2 = 4  # T = 2^k <= sigma / 16
_TAIL = 8 * math.log(2.0)  # v_max ~ 8 ln 2 sigma / T: P(V >= v_max) ~ 2^-8 (speed only)
_FRAC = 256  # initial fixed-point precision of the thresholds, in bits


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
    powers: _Digits  # p^1 .. p^vmax
    words: np.ndarray  # P_v = floor(2^64 p^v), v = 1 .. vmax, decreasing (uint64)
    words_ascending: np.ndarray  # the same, increasing


def _split(scale: float) -> tuple[int, int]:
    """``(k, v_max)`` for a scale (a function of the scale only, never of the precision)."""
    ex = math.frexp(scale)[1]  # 2^(ex - 1) <= scale < 2^ex
    k = max(0, ex - 1 - _RATIO_LOG2)
    vmax = max(1, math.ceil(_TAIL * scale / 2.0**k))
    return k, vmax


def _digits(lo: list[int], hi: list[int], frac: int) -> _Digits:
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
    rel = Fraction(1, 10 ** (prec - 4))
    qf = Fraction(q_dec)
    q_lo = math.floor(qf * (1 - rel) * one)
    # q <= exp(-2^-52) < 1 - 2^-53, so one - 1 bounds it as soon as frac >= 53
    q_hi = min(math.ceil(qf * (1 + rel) * one), one - 1)
    th_lo: list[int] = []
    th_hi: list[int] = []
    for _ in range(k):  # q_i = q^(2^i); theta_i = q_i / (1 + q_i), increasing in q_i
        th_lo.append((q_lo << frac) // (one + q_lo))
        th_hi.append(-(-(q_hi << frac) // (one + q_hi)))
        q_lo = (q_lo * q_lo) >> frac
        q_hi = min(-(-(q_hi * q_hi) // one), one - 1)
    p_lo, p_hi = q_lo, q_hi  # p = q^T
    pw_lo, pw_hi = [p_lo], [p_hi]
    for _ in range(vmax - 1):
        pw_lo.append((pw_lo[-1] * p_lo) >> frac)
        pw_hi.append(-(-(pw_hi[-1] * p_hi) // one))
    theta = _digits(th_lo, th_hi, frac)
    powers = _digits(pw_lo, pw_hi, frac)
    if (k and int(theta.known.min()) < 1) or int(powers.known.min()) < 8:
        return _constants(scale, 2 * frac)  # a threshold too close to a digit boundary
    words = powers.digits[:, :8].copy().view(">u8").reshape(-1).astype(np.uint64)
    return _Constants(scale, frac, k, vmax, theta, powers, words, words[::-1].copy())


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


def _sample_table(c: _Constants, size: int, bits: _ElementBits) -> np.ndarray:
    """``size`` draws of ``LapZ(c.scale)``, element ``i`` from stream ``i`` (ids
    ``0 .. size-1``)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
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
        out[pending[keep]] = y[keep]
        pending = pending[reject]
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
    _check_scales(np.array([scale]))
    scale = float(scale)
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
