"""Exact, vectorised discrete Laplace sampling.

:func:`fast_discrete_laplace` draws ``LapZ(scales[i])`` for every entry of an array of
per-element scales in one call, with

.. math:: P(z) = \\frac{1 - e^{-1/\\sigma}}{1 + e^{-1/\\sigma}}\\, e^{-|z|/\\sigma}, \\qquad z \\in \\mathbb{Z}.

The method is that of Canonne, Kamath and Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020 (Algorithm 1, ``Bernoulli(exp(-gamma))`` from ``Bernoulli(rational)``
draws, and Algorithm 2, discrete Laplace of rational scale), reorganised so that every step is
an array operation over all pending elements and so that few random bits are used.

**Exactness.**  No probability is ever rounded.  Every float is a dyadic rational: write the
scale as ``sigma = M * 2^(e - 53)`` with the integer mantissa ``2^52 <= M < 2^53`` (exact, from
:func:`numpy.frexp`), so ``1 / sigma = 2^(53 - e) / M`` is a rational with denominator ``M``.
The scale is **not** rounded.  With ``Y ~ Geometric(exp(-1/sigma))`` (``P(Y = y) = (1 - q) q^y``,
``q = exp(-1/sigma)``), a fair sign ``B`` and rejection of ``(Y = 0, B = 1)``, ``(1 - 2B) Y`` is
exactly ``LapZ(sigma)`` (CKS Algorithm 2, steps 5-8).  ``Y`` is sampled as follows.

* ``sigma >= 2``: let ``T = 2^k <= sigma < 2^(k+1)``.  Then ``Y = U + T V`` with ``U`` and ``V``
  independent, ``P(U = u) ∝ exp(-u/sigma)`` on ``[0, T)`` and ``V ~ Geometric(exp(-T/sigma))``
  (CKS Algorithm 2 uses ``T = t``, the numerator of the scale; any ``T`` works and a power of two
  makes ``U`` a plain bit field).  ``U`` is a uniform ``k``-bit integer accepted with probability
  ``exp(-U/sigma)``, where ``U/sigma = (U 2^(52-k)) / M`` is a rational in ``[0, 1)``.
* ``sigma < 2``: ``T = 1``, ``U = 0``, ``Y = V``.

``V`` counts successes of ``Bernoulli(exp(-g))`` before the first failure, with ``g = T/sigma``
(``2^52 / M``, in ``(1/2, 1]``) for ``sigma >= 1`` and ``g = 1/sigma = n + r/M`` (integer ``n``,
``0 <= r < M``) for ``sigma < 1``; ``exp(-g)`` is drawn as ``n`` draws of ``Bernoulli(exp(-1))``
and one of ``Bernoulli(exp(-r/M))`` (CKS Algorithm 1 for each).

Algorithm 1 for ``Bernoulli(exp(-a/M))`` with ``0 <= a <= M`` needs ``Bernoulli(a / (M K))`` for
``K = 1, 2, ...``.  Each is drawn *exactly* from a uniform 64-bit word ``W`` and an integer
multiplier ``m >= 1`` with ``L = M K m <= 2^64 - 1``: conditioned on ``W < L`` (else redraw),
``floor(W / m)`` is uniform on ``[0, M K)`` and so ``P(W < a m) = a / (M K)`` exactly.  ``m`` is
``floor(c / M / K)`` in float64 with ``c = 2^64 - 2^34``; with IEEE-754 correct rounding this
gives ``m M K <= c (1 + 2^-53)^2 < 2^64 - 1``, so the float only picks a *valid* multiplier (it
never enters a probability).  The word is compared lazily: its top byte first, and the other 56
bits are drawn only when the top byte does not decide (probability about ``2^-7``); the
undecided low bits are independent of the top byte, so this is the same comparison.  For
``K > 1024`` (probability below ``1/1024!``) the draw uses ``Bernoulli(a/M) * Bernoulli(1/K)``
instead, which keeps every integer below ``2^64``.  Scales below ``2^-11`` have
``n >= 2048``; a draw that survives the first 2048 ``Bernoulli(exp(-1))`` steps of one trial
(probability below ``exp(-2048)``) finishes that trial with exact Python integers.

**Range.**  Scales must be finite, positive and at most ``2^52`` (:data:`MAX_SCALE`).  A draw
with ``|z| >= 2^62`` (probability below ``exp(-2^62 / sigma)``, i.e. below ``exp(-2^10)`` at
``2^52``) cannot be stored in ``int64`` and raises :class:`OverflowError` rather than being
clipped.

**Randomness** comes only from the given :class:`~opendp_wasserstein._random.RandomSource`.
"""

from __future__ import annotations

import math

import numpy as np

from opendp_wasserstein._random import RandomSource

__all__ = ["fast_discrete_laplace", "MAX_SCALE"]

#: largest accepted scale (the mantissa decomposition needs ``sigma < 2^53``; beyond ``2^52``
#: draws would overflow ``int64`` with non-negligible probability anyway)
MAX_SCALE = 2.0**52

_CHUNK = 1 << 19  # elements per vectorised block (bounds memory, keeps arrays cache-friendly)
_K_MAX = 1024  # Algorithm-1 steps K <= _K_MAX use one word with denominator M*K < 2^63
_TINY_EXP = -10  # frexp exponent below which 1/sigma = 2^(53-e)/M has a numerator >= 2^64
_CHAIN_CAP = 2048  # exp(-1) steps drawn vectorised for tiny scales before the exact scalar path
_MULT_C = float(2**64 - 2**34)  # see the module docstring: floor(c / M / K) is a valid multiplier
_TWO52 = np.uint64(1 << 52)
_S56 = np.uint64(56)
_S8 = np.uint64(8)
_MAX_Y = 1 << 62

_BoolArray = np.ndarray


def _random_bytes(rng: RandomSource, n: int) -> np.ndarray:
    """``n`` independent uniform bytes (the bytes of uniform 64-bit words)."""
    return rng.uint64((n + 7) // 8).view(np.uint8)[:n]


def _fair_bits(rng: RandomSource, n: int) -> _BoolArray:
    """``n`` independent fair coin flips (eight per random byte)."""
    return np.unpackbits(_random_bytes(rng, (n + 7) // 8))[:n].view(bool)


def _bernoulli(a_thr: np.ndarray, l_thr: np.ndarray, rng: RandomSource) -> _BoolArray:
    """Exact ``Bernoulli(a_thr / l_thr)`` elementwise, for uint64 ``0 <= a_thr <= l_thr``.

    A uniform 64-bit word ``W`` is drawn until ``W < l_thr`` and the result is ``W < a_thr``.
    The top byte is drawn first; the low 56 bits are drawn only for the elements whose top
    byte equals that of ``a_thr`` or is at least that of ``l_thr`` (only those can be undecided
    or rejected).  ``a_thr``/``l_thr`` are equal-length uint64 arrays.

    :param a_thr: success thresholds
    :param l_thr: acceptance limits (``l_thr >= 1``)
    :param rng: the randomness
    :return: boolean array, ``True`` with probability ``a_thr / l_thr``
    """
    w8 = _random_bytes(rng, a_thr.shape[0])
    a8 = (a_thr >> _S56).astype(np.uint8)
    l8 = (l_thr >> _S56).astype(np.uint8)
    out = w8 < a8
    und = np.flatnonzero((w8 == a8) | (w8 >= l8))
    while und.size:  # top byte undecided (probability about 2^-7): draw the low 56 bits
        word = (w8[und].astype(np.uint64) << _S56) | (rng.uint64(und.size) >> _S8)
        out[und] = word < a_thr[und]
        rej = und[word >= l_thr[und]]
        if not rej.size:
            break
        # W >= l_thr: a completely fresh word for those elements, again top byte first
        fresh = _random_bytes(rng, rej.size)
        w8[rej] = fresh
        a8r = a8[rej]
        out[rej] = fresh < a8r
        und = rej[(fresh == a8r) | (fresh >= l8[rej])]
    return out


def _bernoulli_const(numer: int, denom: int, size: int, rng: RandomSource) -> _BoolArray:
    """``size`` exact draws of ``Bernoulli(numer / denom)`` for integers ``0 <= numer <= denom < 2^64``."""
    m = (2**64 - 1) // denom
    a = np.full(size, numer * m, dtype=np.uint64)
    lim = np.full(size, denom * m, dtype=np.uint64)
    return _bernoulli(a, lim, rng)


def _bern_exp_minus_one(size: int, rng: RandomSource) -> _BoolArray:
    """``size`` exact draws of ``Bernoulli(exp(-1))`` (CKS Algorithm 1 with ``gamma = 1``)."""
    out = np.empty(size, dtype=bool)
    # K = 1 draws Bernoulli(1): always 1.  K = 2 is a fair coin.
    go = _fair_bits(rng, size)
    out[~go] = False  # stopped at K = 2 (even)
    act = np.flatnonzero(go)
    k = 3
    while act.size:
        a = _bernoulli_const(1, k, act.size, rng)
        out[act[~a]] = bool(k % 2)
        act = act[a]
        k += 1
    return out


def _multiplier(mf: np.ndarray, k: int) -> np.ndarray:
    """A valid multiplier ``m >= 1`` with ``m * M * k <= 2^64 - 1`` (``mf`` = ``M`` as float64).

    IEEE-754 division rounds correctly, so ``q = fl(fl(c / M) / k) <= c / (M k) (1 + 2^-53)^2``
    and ``floor(q) M k <= (2^64 - 2^34)(1 + 2^-52 + 2^-106) < 2^64 - 1``.  Requires ``M k <= 2^63``.
    """
    q = _MULT_C / mf
    if k != 1:
        q = q / float(k)
    return np.floor(q).astype(np.uint64)


def _bern_exp_ratio(
    a: np.ndarray,
    m_int: np.ndarray,
    m_flt: np.ndarray,
    a1: np.ndarray,
    l1: np.ndarray,
    rng: RandomSource,
) -> _BoolArray:
    """Exact ``Bernoulli(exp(-a / M))`` elementwise for uint64 ``0 <= a <= M`` (CKS Algorithm 1).

    :param a: numerators
    :param m_int: denominators ``M`` (uint64, ``2^52 <= M < 2^53``)
    :param m_flt: ``M`` as float64 (exact)
    :param a1: ``a * m1`` (the ``K = 1`` threshold)
    :param l1: ``M * m1`` (the ``K = 1`` limit)
    :param rng: the randomness
    """
    size = a.shape[0]
    out = np.empty(size, dtype=bool)
    draw = _bernoulli(a1, l1, rng)  # K = 1: Bernoulli(a / M)
    out[~draw] = True  # stopped at K = 1 (odd)
    act = np.flatnonzero(draw)
    k = 2
    while act.size:
        if k <= _K_MAX:
            m = _multiplier(m_flt[act], k)
            draw = _bernoulli(a[act] * m, m_int[act] * m * np.uint64(k), rng)
        else:  # Bernoulli(a / (M K)) = Bernoulli(a / M) * Bernoulli(1 / K), exactly
            draw = _bernoulli(a1[act], l1[act], rng) & _bernoulli_const(1, k, act.size, rng)
        out[act[~draw]] = bool(k % 2)
        act = act[draw]
        k += 1
    return out


class _Params:
    """Per-element constants of the decomposition (see the module docstring)."""

    __slots__ = ("scale", "m_int", "m_flt", "m1", "l1", "k", "n", "r", "r1", "tiny")

    def __init__(self, scale: np.ndarray) -> None:
        mant, ex = np.frexp(scale)
        self.scale = scale
        self.m_flt = np.ldexp(mant, 53)  # exact integer 2^52 <= M < 2^53
        self.m_int = self.m_flt.astype(np.uint64)
        self.m1 = _multiplier(self.m_flt, 1)
        self.l1 = self.m_int * self.m1
        ex = ex.astype(np.int64)
        big = ex >= 1  # sigma >= 1
        self.k = np.where(big, ex - 1, 0)  # T = 2^k <= sigma (k = 0: no U part)
        self.n = np.zeros(scale.shape, dtype=np.int64)
        self.r = np.full(scale.shape, _TWO52, dtype=np.uint64)  # g = 2^52 / M for sigma >= 1
        self.tiny = ex < _TINY_EXP
        small = np.flatnonzero(~big & ~self.tiny)
        if small.size:  # 1/sigma = s / M with s = 2^(53 - e) < 2^64
            s = np.left_shift(np.uint64(1), (53 - ex[small]).astype(np.uint64))
            m_small = self.m_int[small]
            n_small = s // m_small
            self.n[small] = n_small.astype(np.int64)
            self.r[small] = s - n_small * m_small
        tiny = np.flatnonzero(self.tiny)
        if tiny.size:  # n >= 2048: the exact remainder is only needed after 2048 steps
            self.n[tiny] = _CHAIN_CAP
            self.r[tiny] = 0
        self.r1 = self.r * self.m1

    def take(self, idx: np.ndarray) -> _Params:
        """The parameters of the elements ``idx``."""
        new = object.__new__(_Params)
        for name in self.__slots__:
            setattr(new, name, getattr(self, name)[idx])
        return new


def _tiny_finish_trial(scale: float, rng: RandomSource) -> bool:
    """Finish a ``Bernoulli(exp(-1/scale))`` trial that survived ``_CHAIN_CAP`` steps.

    Exact Python integers: ``1/scale = n + r/M``; ``n - _CHAIN_CAP`` more ``Bernoulli(exp(-1))``
    draws, then ``Bernoulli(exp(-r/M))`` with Algorithm 1 using ``Bernoulli(r/M) Bernoulli(1/K)``.
    """
    mant, ex = math.frexp(scale)
    m_int = int(mant * 2.0**53)
    n, r = divmod(1 << (53 - ex), m_int)
    for _ in range(n - _CHAIN_CAP):
        if not _bern_exp_minus_one(1, rng)[0]:
            return False
    k = 1
    while True:
        draw = bool(_bernoulli_const(r, m_int, 1, rng)[0])
        if draw and k > 1:
            draw = bool(_bernoulli_const(1, k, 1, rng)[0])
        if not draw:
            return bool(k % 2)
        k += 1


def _trial(p: _Params, rng: RandomSource) -> _BoolArray:
    """One exact ``Bernoulli(exp(-(n + r/M)))`` draw per element."""
    size = p.n.shape[0]
    out = np.ones(size, dtype=bool)
    chain = np.flatnonzero(p.n > 0)
    step = 0
    while chain.size:  # n draws of Bernoulli(exp(-1)), stopping at the first failure
        ok = _bern_exp_minus_one(chain.size, rng)
        out[chain[~ok]] = False
        chain = chain[ok]
        step += 1
        chain = chain[p.n[chain] > step]
        if step == _CHAIN_CAP:
            break
    finished = np.zeros(size, dtype=bool)
    if step == _CHAIN_CAP:
        survivors = np.flatnonzero(out & p.tiny)  # probability < exp(-2048) per trial
        for i in survivors.tolist():
            out[i] = _tiny_finish_trial(float(p.scale[i]), rng)
            finished[i] = True
    frac = np.flatnonzero(out & (p.r > 0) & ~finished)
    if frac.size:
        out[frac] = _bern_exp_ratio(
            p.r[frac], p.m_int[frac], p.m_flt[frac], p.r1[frac], p.l1[frac], rng
        )
    return out


def _geometric_high(p: _Params, rng: RandomSource) -> np.ndarray:
    """``V ~ Geometric(exp(-g))`` per element: successes before the first failed trial."""
    v = np.zeros(p.n.shape[0], dtype=np.int64)
    alive = np.arange(p.n.shape[0])
    q = p
    while alive.size:
        ok = _trial(q, rng)
        alive = alive[ok]
        v[alive] += 1
        q = q.take(ok)
    return v


def _truncated_low(p: _Params, rng: RandomSource) -> np.ndarray:
    """``U`` on ``[0, 2^k)`` with ``P(U = u) ∝ exp(-u / sigma)``: uniform bits, exact rejection."""
    u_out = np.zeros(p.k.shape[0], dtype=np.uint64)
    todo = np.flatnonzero(p.k > 0)
    if not todo.size:
        return u_out
    narrow = int(p.k[todo].max()) <= 32
    while todo.size:
        k = p.k[todo].astype(np.uint64)
        if narrow:  # 32-bit fields suffice
            w32 = rng.uint64((todo.size + 1) // 2).view(np.uint32)[: todo.size]
            u = (w32 >> (np.uint32(32) - k.astype(np.uint32))).astype(np.uint64)
        else:
            u = rng.uint64(todo.size) >> (np.uint64(64) - k)
        a = u << (np.uint64(52) - k)  # U / sigma = a / M
        m1 = p.m1[todo]
        acc = _bern_exp_ratio(a, p.m_int[todo], p.m_flt[todo], a * m1, p.l1[todo], rng)
        u_out[todo[acc]] = u[acc]
        todo = todo[~acc]
    return u_out


def _magnitude(p: _Params, rng: RandomSource) -> np.ndarray:
    """``Y = U + 2^k V ~ Geometric(exp(-1/sigma))`` per element (int64)."""
    u = _truncated_low(p, rng)
    v = _geometric_high(p, rng)
    if bool(np.any(v >= (np.int64(_MAX_Y) >> p.k))):  # then and only then Y >= 2^62
        raise OverflowError("a discrete Laplace draw exceeded 2^62 in magnitude")
    return u.astype(np.int64) + (v << p.k)


def _sample_block(scale: np.ndarray, rng: RandomSource) -> np.ndarray:
    out = np.empty(scale.shape[0], dtype=np.int64)
    pending = np.arange(scale.shape[0])
    p = _Params(scale)
    while pending.size:
        y = _magnitude(p, rng)
        neg = _fair_bits(rng, pending.size)
        reject = neg & (y == 0)  # CKS Algorithm 2 step 7: reject "-0"
        keep = ~reject
        out[pending[keep]] = np.where(neg[keep], -y[keep], y[keep])
        pending = pending[reject]
        p = p.take(reject)
    return out


def fast_discrete_laplace(scales: np.ndarray, rng: RandomSource) -> np.ndarray:
    """Independent exact discrete Laplace draws, one per entry of ``scales``.

    Entry ``i`` of the result is distributed as ``LapZ(scales[i])``:
    ``P(z) = (1 - e^{-1/s}) / (1 + e^{-1/s}) e^{-|z|/s}`` for ``z`` in the integers, with no
    floating-point approximation of any probability (see the module docstring).  All elements,
    whatever their scales, are drawn together with array operations.

    Reference: C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
    Privacy", NeurIPS 2020, Algorithms 1 and 2.

    :param scales: positive finite scales ``<= 2^52``, any shape
    :param rng: the source of randomness (secure, or seeded for reproducible tests)
    :return: ``int64`` array with the shape of ``scales``
    :raises ValueError: if a scale is not finite, not positive or above :data:`MAX_SCALE`
    :raises OverflowError: if a draw has magnitude at least ``2^62`` (probability below
        ``exp(-2^62 / max(scales))``)
    """
    arr = np.asarray(scales, dtype=np.float64)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if not bool(np.all(np.isfinite(flat))) or not bool(np.all(flat > 0)):
        raise ValueError("scales must be finite and positive")
    if bool(np.any(flat > MAX_SCALE)):
        raise ValueError(f"scales must be at most 2^52 = {MAX_SCALE:.6g}")
    out = np.empty(flat.size, dtype=np.int64)
    for start in range(0, flat.size, _CHUNK):
        out[start : start + _CHUNK] = _sample_block(flat[start : start + _CHUNK], rng)
    return out.reshape(arr.shape)
