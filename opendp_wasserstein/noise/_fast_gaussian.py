r"""Exact, vectorised discrete Gaussian sampling.

:func:`fast_discrete_gaussian` draws ``N_Z(0, scales[i]^2)`` for every entry of an array of
per-element scales in one call, where

.. math:: P(y) = \frac{e^{-y^2 / (2\sigma^2)}}{\sum_{z \in \mathbb{Z}} e^{-z^2/(2\sigma^2)}},
   \qquad y \in \mathbb{Z},

the distribution of OpenDP's integer ``make_gaussian`` (and of Canonne, Kamath and Steinke,
"The Discrete Gaussian for Differential Privacy", NeurIPS 2020).

Method (CKS Algorithm 3)
------------------------
With ``t = floor(sigma) + 1`` (capped at ``2^52``, the largest discrete Laplace scale; any
``t > 0`` gives the same law, this one few rejections): draw ``Y ~ LapZ(t)``
(:mod:`~opendp_wasserstein.noise._fast_laplace`, exact), and accept it with probability
``exp(-gamma)``,

.. math:: \gamma(Y) = \frac{(|Y| - \sigma^2/t)^2}{2\sigma^2}
   = \frac{Y^2}{2\sigma^2} - \frac{|Y|}{t} + \frac{\sigma^2}{2t^2},

otherwise draw again.  ``P(Y = y) exp(-gamma(y))`` is proportional to
``exp(-|y|/t) exp(-gamma(y)) = exp(-y^2/(2 sigma^2)) exp(-sigma^2/(2 t^2))``, i.e. to the
target; independent proposals make the accepted value an exact draw.  Many draws of one scale
are a stream: i.i.d. proposals in bulk, the first accepted ones kept.  Otherwise each element
has its own rejection loop, vectorised over the elements still pending (a quarter to a half are
rejected per round).

``Bernoulli(exp(-gamma))`` for ``gamma = n + f`` (``n`` an integer, ``0 <= f < 1``) is ``n``
draws of ``Bernoulli(exp(-1))`` (all must succeed) and one ``Bernoulli(exp(-f))`` by CKS
Algorithm 1: for ``K = 1, 2, ...`` draw ``Bernoulli(f/K)`` until the first failure, output 1 iff
it happens at an odd ``K``.  ``Bernoulli(f/K)`` is drawn as ``Bernoulli(1/K)`` (exact, from
:mod:`~opendp_wasserstein.noise._fast_laplace`) times an independent ``Bernoulli(f)``, and
``Bernoulli(f)`` is the event ``U < f`` for a uniform real ``U`` in ``[0, 1)``, whose binary
digits are random bits.

Exactness: certified intervals, exact fallback
----------------------------------------------
``gamma`` is a rational with large numerator and denominator (``sigma^2`` is a dyadic rational
with up to 106 significant bits).  It is **not rounded**.  Instead a float ``g`` and a bound
``delta`` are computed with ``|g - gamma| <= delta`` *proved* (below), giving floats
``lo <= gamma <= hi``.  Decisions that the interval settles are made from it; the few it cannot
settle are made with exact rational arithmetic (:class:`fractions.Fraction`) on the same random
bits, so every decision is the exact one:

* ``n = floor(gamma)`` is ``floor(lo)`` when ``floor(lo) == floor(hi)``; otherwise (and for
  scales below :data:`MIN_FAST_SCALE`, where the analysis below does not hold) the whole
  acceptance test of that proposal is done exactly.
* ``U < f``: the first 32 bits ``W`` of ``U`` put ``U`` in ``[W, W + 1) 2^-32``, and
  ``f in [lo - n, hi - n]`` (both differences exact, by Sterbenz's lemma).  If
  ``W + 1 <= floor((lo - n) 2^32)`` then ``U < f``; if ``W >= ceil((hi - n) 2^32)`` then
  ``U >= f``; otherwise (probability about ``2^-32``) ``U`` is compared with the exact ``f``,
  reading further 64-bit words of ``U`` until the comparison is decided.

**The bound.**  Write ``u = 2^-53``; for ``sigma`` in ``[2^-20, 2^52]`` and ``|Y| < 2^62`` no
operation below overflows or leaves the normal range, so every float operation is correctly
rounded with relative error at most ``u``.  The code computes ``s = fl(sigma^2)``,
``c = fl(s/t)``, ``a = fl(0.5/s)``, ``x = fl(|Y|)``, ``d = fl(x - c)`` and
``g = fl(fl(d^2) a)``.  With exact ``C = sigma^2/t``, ``A = 1/(2 sigma^2)``, ``D = |Y| - C``
(so ``gamma = D^2 A``):

* ``|c - C| <= 2.0000001 u C`` and ``|a - A| <= 2.0000001 u A`` (two roundings each);
* ``d - D = (x - |Y|) - (c - C) + theta (x - c)`` with ``|theta| <= u``, so
  ``|d - D| <= u |Y| + 2.0000001 u C + u (x + c) <= E := 3.1 u (x + c)``;
* ``g = d^2 A (1 + eta)`` with ``|eta| <= 4.0000001 u``, and
  ``|d^2 - D^2| = |d - D| |d + D| <= E (2|d| + E)``; hence

  .. math:: |g - \gamma| \le A\,\big(4.0000001\,u\,d^2 + E(2|d| + E)\big)
     \le B := a\,\big(4.2\,u\,d^2 + E(2|d| + E)\big),

  and ``B`` evaluated in floats (about ten roundings of positive terms, the coefficients
  ``4.2`` and ``3.2`` in place of ``4.0000001`` and ``3.1`` absorb them) is still ``>= B``.
* ``delta = fl(2 B + 4 u g)``; then ``lo = fl(g - delta) <= g - B <= gamma`` and
  ``hi = fl(g + delta) >= g + B >= gamma`` (the margin ``delta - B`` exceeds the rounding
  ``u (g + delta)`` of the sum).

``tests/noise/test_fast_gaussian.py`` checks ``lo <= gamma <= hi`` against exact rationals on
adversarial inputs (``|Y|`` next to ``sigma^2/t``, extreme scales), and forces the exact
fall-backs to run often (chi-square tests then too).

Range
-----
Scales must be finite, positive and at most ``2^52`` (:data:`MAX_SCALE`).  Scales below
:data:`MIN_FAST_SCALE` are exact but slow (every acceptance test in rational arithmetic); such
a Gaussian is 0 with probability above ``1 - 2 exp(-2^39)``.  Draws of magnitude ``2^62`` or
more raise :class:`OverflowError` (from the Laplace proposals; probability below
``exp(-2^10)`` per draw at the largest scale).

Randomness comes only from the given :class:`~opendp_wasserstein.noise._source.RandomSource`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from opendp_wasserstein.noise._fast_laplace import (
    _CHUNK,
    _bern_exp_minus_one,
    _bernoulli_const,
    _Bits,
    _dispatch,
)
from opendp_wasserstein.noise._fast_laplace import MAX_SCALE as _LAPLACE_MAX
from opendp_wasserstein.noise._fast_laplace import _sample_const as _laplace_const
from opendp_wasserstein.noise._source import RandomSource

__all__ = ["fast_discrete_gaussian", "MAX_SCALE", "MIN_FAST_SCALE"]

#: largest accepted scale (as for the discrete Laplace sampler; the proposal scale is capped there)
MAX_SCALE = 2.0**52
#: smallest scale with vectorised acceptance tests (the float analysis needs it)
MIN_FAST_SCALE = 2.0**-20

_U = 2.0**-53
_E_COEF = 3.2 * _U  # E = 3.2 u (x + c) >= the exact 3.1 u (x + c) after rounding
_G_COEF = 4.2 * _U
_SLACK = 1.0  # multiplies delta; tests raise it to force the exact fall-backs
_HI_MAX = 2.0**52  # above this, floor() of a float says nothing: exact path
_W_BITS = 32  # bits of U compared in the vectorised step
_TWO_W = float(2**_W_BITS)
_BYTES_PER_DRAW = 24  # about the mean use (sizes the random-byte blocks)
_FEW, _REPS = 2048, 4  # below _FEW pending elements, _REPS proposals per element and round


def _constants(sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``t = min(floor(sigma) + 1, 2^52)``, ``c = fl(fl(sigma^2)/t)`` and
    ``a = fl(0.5/fl(sigma^2))``."""
    t = np.minimum(np.floor(sigma) + 1.0, _LAPLACE_MAX)
    s = sigma * sigma
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        return t, s / t, 0.5 / s


def _gamma_interval(x: np.ndarray, c: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Floats ``lo <= gamma <= hi`` for ``gamma = (x - sigma^2/t)^2 / (2 sigma^2)`` (module
    docstring; valid for ``sigma`` in ``[MIN_FAST_SCALE, MAX_SCALE]`` and ``x < 2^62``)."""
    xf = x.astype(np.float64)
    d = xf - c
    d2 = d * d
    g = d2 * a
    e = _E_COEF * (xf + c)
    bound = a * (_G_COEF * d2 + e * (2.0 * np.abs(d) + e))
    delta = (2.0 * bound + (4.0 * _U) * g) * _SLACK
    return g - delta, g + delta


def _exact_gamma(sigma: float, x: int) -> Fraction:
    """``gamma = (x - sigma^2/t)^2 / (2 sigma^2)`` as an exact rational."""
    s = Fraction(sigma) ** 2
    t = min(math.floor(sigma) + 1, int(_LAPLACE_MAX))
    return (x - s / t) ** 2 / (2 * s)


def _uniform_less(first: int, nbits: int, f: Fraction, rng: _Bits) -> bool:
    """Whether ``U < f`` for ``U`` uniform on ``[0, 1)`` whose first ``nbits`` binary digits
    are the integer ``first``; further digits are drawn from ``rng`` 64 at a time until the
    comparison is decided (``f`` an exact rational in ``[0, 1)``)."""
    scaled = f * (1 << nbits)
    word = first
    while True:
        whole = math.floor(scaled)
        if word != whole:
            return word < whole
        scaled -= whole
        if scaled == 0:  # U's remaining digits are >= 0 = f's: U >= f
            return False
        scaled *= 1 << 64
        word = int(rng.uint64(1)[0])


def _bern_exp_exact(gamma: Fraction, rng: _Bits) -> bool:
    """Exact ``Bernoulli(exp(-gamma))`` in rational arithmetic (the slow path)."""
    n = math.floor(gamma)
    f = gamma - n
    step = 0
    while step < n:  # stops at the first failure (after fewer than 2 draws on average)
        if not bool(_bern_exp_minus_one(1, rng)[0]):
            return False
        step += 1
    k = 1
    while True:  # CKS Algorithm 1 with Bernoulli(f/K) = Bernoulli(1/K) Bernoulli(f)
        draw = k == 1 or bool(_bernoulli_const(1, k, 1, rng)[0])
        if draw:
            draw = _uniform_less(int(rng.view(1, np.uint32)[0]), _W_BITS, f, rng)
        if not draw:
            return bool(k % 2)
        k += 1


class _Frac:
    """``Bernoulli(f_i)`` draws for elements whose ``f_i`` lies in a certified interval."""

    def __init__(
        self, lo: np.ndarray, hi: np.ndarray, sigma: np.ndarray, x: np.ndarray, n: np.ndarray
    ) -> None:
        # W < a_lo  implies  U < (W + 1) 2^-32 <= lo <= f;  W >= a_hi  implies  U >= hi >= f
        self.a_lo = np.floor(lo * _TWO_W).astype(np.uint64)
        self.a_hi = np.ceil(hi * _TWO_W).astype(np.uint64)
        self.sigma, self.x, self.n = sigma, x, n

    def draw(self, idx: np.ndarray, rng: _Bits) -> np.ndarray:
        w = rng.view(idx.size, np.uint32).astype(np.uint64)
        out = w < self.a_lo[idx]
        undecided = np.flatnonzero(~out & (w < self.a_hi[idx]))
        for i in undecided.tolist():  # probability about 2^-32 each
            j = int(idx[i])
            f = _exact_gamma(float(self.sigma[j]), int(self.x[j])) - int(self.n[j])
            out[i] = _uniform_less(int(w[i]), _W_BITS, f, rng)
        return out


def _accept(
    sigma: np.ndarray, c: np.ndarray, a: np.ndarray, x: np.ndarray, rng: _Bits
) -> np.ndarray:
    """One exact ``Bernoulli(exp(-gamma(x_i)))`` per element (module docstring)."""
    out = np.zeros(x.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        lo, hi = _gamma_interval(x, c, a)
        n = np.floor(lo)
        certified = (sigma >= MIN_FAST_SCALE) & (hi < _HI_MAX) & (np.floor(hi) == n)
    for i in np.flatnonzero(~certified).tolist():
        out[i] = _bern_exp_exact(_exact_gamma(float(sigma[i]), int(x[i])), rng)
    cert = np.flatnonzero(certified)
    n_int = n[cert].astype(np.int64)
    alive = np.ones(cert.size, dtype=bool)
    act = np.flatnonzero(n_int > 0)
    step = 0
    while act.size:  # n_i draws of Bernoulli(exp(-1)), stopping at the first failure
        ok = _bern_exp_minus_one(act.size, rng)
        alive[act[~ok]] = False
        step += 1
        act = act[ok]
        act = act[n_int[act] > step]
    cert = cert[alive]
    if not cert.size:
        return out
    nc = n[cert]
    frac = _Frac(lo[cert] - nc, hi[cert] - nc, sigma[cert], x[cert], nc)  # exact differences
    res = np.empty(cert.size, dtype=bool)
    act = np.arange(cert.size)
    k = 1
    while act.size:  # CKS Algorithm 1: Bernoulli(f/K) = Bernoulli(1/K) Bernoulli(f)
        if k == 1:
            draw = frac.draw(act, rng)
        else:
            draw = _bernoulli_const(1, k, act.size, rng)
            hit = np.flatnonzero(draw)
            draw[hit] = frac.draw(act[hit], rng)
        res[act[~draw]] = bool(k % 2)
        act = act[draw]
        k += 1
    out[cert] = res
    return out


def _sample_const(sigma: float, count: int, bits: _Bits) -> np.ndarray:
    """``count`` draws for one scale: a stream of independent proposals, the first ``count``
    accepted ones kept (rejection sampling with i.i.d. proposals: the kept values are i.i.d.
    draws from the target, whichever ones are kept)."""
    t, c, a = (float(v[0]) for v in _constants(np.array([sigma])))
    out = np.empty(count, dtype=np.int64)
    filled = 0
    rate = 0.5  # acceptance is above 1/2 for every scale; refined from the first batch
    while filled < count:
        size = min(int((count - filled) / rate * 1.05) + 64, _CHUNK)
        y = _laplace_const(t, size, bits)
        n = y.size
        ok = _accept(
            np.broadcast_to(sigma, n), np.broadcast_to(c, n), np.broadcast_to(a, n), np.abs(y), bits
        )
        z = y[ok]
        rate = max(z.size / size, 0.05)
        take = min(z.size, count - filled)
        out[filled : filled + take] = z[:take]
        filled += take
    return out


def fast_discrete_gaussian(scales: np.ndarray, rng: RandomSource) -> np.ndarray:
    """Independent exact discrete Gaussian draws, one per entry of ``scales``.

    Entry ``i`` is distributed as ``N_Z(0, scales[i]^2)``, ``P(y)`` proportional to
    ``exp(-y^2 / (2 scales[i]^2))`` on the integers -- the law of OpenDP's integer
    ``make_gaussian`` -- with no floating-point approximation of any probability and no
    rounding of the scales (see the module docstring).  Discrete Laplace proposals and the
    acceptance tests are array operations over all pending elements.

    Reference: C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
    Privacy", NeurIPS 2020 (Algorithms 1-3).

    :param scales: finite scales in ``(0, 2^52]``, any shape
    :param rng: the source of randomness (secure, or seeded for reproducible tests)
    :return: ``int64`` array with the shape of ``scales``
    :raises ValueError: if a scale is not finite, not positive or above :data:`MAX_SCALE`

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.noise._fast_gaussian import fast_discrete_gaussian
    >>> from opendp_wasserstein.noise._source import RandomSource
    >>> y = fast_discrete_gaussian(np.full(100_000, 3.0), RandomSource(0))  # seeded: tests only
    >>> y.dtype, bool(abs(y.std() - 3.0) < 0.05)
    (dtype('int64'), True)
    """
    arr = np.asarray(scales, dtype=np.float64)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if not (bool(np.all(np.isfinite(flat))) and bool(np.all(flat > 0))):
        raise ValueError("scales must be finite and positive")
    if bool(np.any(flat > MAX_SCALE)):
        raise ValueError(f"scales must be at most 2^52 = {MAX_SCALE:.6g}")
    bits = _Bits(rng, _BYTES_PER_DRAW * flat.size + 64)
    if flat.size >= _FEW and bool(np.all(flat == flat[0])):
        return _sample_const(float(flat[0]), flat.size, bits).reshape(arr.shape)
    t, c, a = _constants(flat)
    out = np.empty(flat.size, dtype=np.int64)
    pending = np.arange(flat.size)
    while pending.size:
        # few pending elements: several independent proposals each, the first accepted one
        # is kept (fewer rounds of array calls; the law is that of one-at-a-time rejection)
        reps = 1 if pending.size >= _FEW else _REPS
        idx = np.repeat(pending, reps)
        y = _dispatch(t[idx], bits, allow_sort=True)
        ok = _accept(flat[idx], c[idx], a[idx], np.abs(y), bits).reshape(-1, reps)
        first = np.argmax(ok, axis=1)
        done = ok[np.arange(pending.size), first]
        out[pending[done]] = y.reshape(-1, reps)[np.flatnonzero(done), first[done]]
        pending = pending[~done]
    return out.reshape(arr.shape)
