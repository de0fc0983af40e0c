r"""Exact discrete Gaussian draws from per-element random streams (node-addressed noise).

:func:`stream_discrete_gaussian` draws ``N_Z(0, sigma^2)`` for every element of a batch, element
``i`` reading only stream ``i``, so its value does not depend on the other elements, their
number or their order: what :class:`~opendp_wasserstein.noise.node_randomness.KeyedNodeNoise` needs
to give a tree node the same Gaussian noise on any worker, in any retry and in memory.

Method: the rejection sampler of Canonne, Kamath and Steinke (NeurIPS 2020, Algorithm 3), as in
:mod:`~opendp_wasserstein.noise._fast_gaussian`: with ``t = floor(sigma) + 1`` (capped at ``2^52``),
round ``r = 0, 1, ...`` draws a proposal ``Y ~ LapZ(t)`` and accepts it with probability
``exp(-gamma(|Y|))``, ``gamma(x) = (x - sigma^2/t)^2 / (2 sigma^2)``; the first accepted proposal
is the draw.  Element ``i``'s stream is cut into regions of :data:`REGION` 16-byte blocks:
round ``r`` reads its proposal from region ``2r`` (by
:func:`~opendp_wasserstein.noise._stream_laplace.stream_discrete_laplace`) and its acceptance test
from region ``2r + 1`` (an :class:`~opendp_wasserstein.noise._fast_laplace._ElementBits` over it),
so every round of every element reads fresh, independent bytes whatever happened in other rounds (a
region is ``2^40`` blocks, 16 TiB: never exhausted).  Each round accepts with probability above
``1/2``, so the loop ends after a few rounds (more than 64 with probability below ``2^-64``);
the rounds are vectorised over the elements still pending.

The acceptance test ``Bernoulli(exp(-gamma))`` is exact: ``gamma = n + f`` is bracketed by the
certified float interval of :func:`~opendp_wasserstein.noise._fast_gaussian._gamma_interval` (``n``
taken from it when the interval settles it, else the test runs in rational arithmetic), then
``n`` draws of ``Bernoulli(exp(-1))`` and CKS Algorithm 1 for ``exp(-f)`` with
``Bernoulli(f/K) = Bernoulli(1/K) Bernoulli(f)``, ``Bernoulli(f)`` the event ``U < f`` for a
uniform ``U`` whose first 32 binary digits are the top half of one stream word, further digits
read (exact rational comparison) only when the interval cannot decide (probability about
``2^-32``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from opendp_wasserstein.noise._fast_gaussian import (
    _HI_MAX,
    MAX_SCALE,
    MIN_FAST_SCALE,
    _constants,
    _exact_gamma,
    _gamma_interval,
    _uniform_less,
)
from opendp_wasserstein.noise._fast_laplace import (
    StreamFn,
    _bern_exp_minus_one,
    _bernoulli_const,
    _ElementBits,
)
from opendp_wasserstein.noise._stream_laplace import stream_discrete_laplace

__all__ = ["stream_discrete_gaussian", "REGION"]

#: 16-byte blocks per region of an element's stream (one region per proposal, one per test)
REGION = 1 << 40
_W_BITS = 32
_TWO_W = float(2**_W_BITS)


class _OneElement:
    """Further 64-bit words of one element's stream (the rare exact comparisons)."""

    def __init__(self, bits: _ElementBits, elem: int) -> None:
        self._bits = bits
        self._elem = np.array([elem], dtype=np.int64)

    def uint64(self, count: int) -> np.ndarray:
        return np.concatenate([self._bits.uint64(self._elem) for _ in range(int(count))])


def _first_digits(bits: _ElementBits, elems: np.ndarray) -> np.ndarray:
    """The first 32 binary digits of a fresh uniform ``U`` per element (uint64)."""
    return bits.uint64(elems) >> np.uint64(64 - _W_BITS)


def _bern_exp_exact(gamma: Fraction, bits: _ElementBits, elem: int) -> bool:
    """Exact ``Bernoulli(exp(-gamma))`` for one element, in rational arithmetic (slow path)."""
    e = np.array([elem], dtype=np.int64)
    n = math.floor(gamma)
    f = gamma - n
    for _ in range(n):  # stops at the first failure (after fewer than 2 draws on average)
        if not bool(_bern_exp_minus_one(e, bits)[0]):
            return False
    k = 1
    while True:  # CKS Algorithm 1 with Bernoulli(f/K) = Bernoulli(1/K) Bernoulli(f)
        draw = k == 1 or bool(_bernoulli_const(1, k, e, bits)[0])
        if draw:
            one = _OneElement(bits, elem)
            draw = _uniform_less(int(_first_digits(bits, e)[0]), _W_BITS, f, one)  # type: ignore[arg-type]
        if not draw:
            return bool(k % 2)
        k += 1


def _accept(sigma: float, c: float, a: float, x: np.ndarray, bits: _ElementBits) -> np.ndarray:
    """One exact ``Bernoulli(exp(-gamma(x_i)))`` per element ``i`` (its own stream)."""
    k = x.size
    out = np.zeros(k, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        lo, hi = _gamma_interval(x, np.full(k, c), np.full(k, a))
        n = np.floor(lo)
        certified = (sigma >= MIN_FAST_SCALE) & (hi < _HI_MAX) & (np.floor(hi) == n)
    for i in np.flatnonzero(~certified).tolist():
        out[i] = _bern_exp_exact(_exact_gamma(sigma, int(x[i])), bits, i)
    cert = np.flatnonzero(certified)
    n_int = n[cert].astype(np.int64)
    alive = np.ones(cert.size, dtype=bool)
    act = np.flatnonzero(n_int > 0)
    step = 0
    while act.size:  # n_i draws of Bernoulli(exp(-1)), stopping at the first failure
        ok = _bern_exp_minus_one(cert[act], bits)
        alive[act[~ok]] = False
        step += 1
        act = act[ok]
        act = act[n_int[act] > step]
    cert = cert[alive]
    if not cert.size:
        return out
    nc = n[cert]
    a_lo = np.floor((lo[cert] - nc) * _TWO_W).astype(np.uint64)  # exact differences (Sterbenz)
    a_hi = np.ceil((hi[cert] - nc) * _TWO_W).astype(np.uint64)

    def frac(idx: np.ndarray) -> np.ndarray:
        """``U < f`` for the certified elements ``cert[idx]``."""
        w = _first_digits(bits, cert[idx])
        res = w < a_lo[idx]
        for i in np.flatnonzero(~res & (w < a_hi[idx])).tolist():  # probability about 2^-32
            j = int(cert[idx[i]])
            f = _exact_gamma(sigma, int(x[j])) - int(n[j])
            res[i] = _uniform_less(int(w[i]), _W_BITS, f, _OneElement(bits, j))  # type: ignore[arg-type]
        return res

    res = np.empty(cert.size, dtype=bool)
    act = np.arange(cert.size)
    kk = 1
    while act.size:  # CKS Algorithm 1: Bernoulli(f/K) = Bernoulli(1/K) Bernoulli(f)
        if kk == 1:
            draw = frac(act)
        else:
            draw = _bernoulli_const(1, kk, cert[act], bits)
            hit = np.flatnonzero(draw)
            draw[hit] = frac(act[hit])
        res[act[~draw]] = bool(kk % 2)
        act = act[draw]
        kk += 1
    out[cert] = res
    return out


def stream_discrete_gaussian(scale: float, size: int, streams: StreamFn) -> np.ndarray:
    """Exact ``N_Z(0, scale^2)`` draws, element ``i`` from its own random stream ``i`` only.

    :param scale: a finite scale in ``(0, 2^52]``
    :param size: the number of elements (ids ``0 .. size - 1``)
    :param streams: as for :func:`~opendp_wasserstein.noise._stream_laplace.stream_discrete_laplace`
        (blocks of element ``i``'s stream from block ``first[i]``; at least ``2^64`` blocks)
    :return: ``int64`` array of length ``size``
    :raises ValueError: if the scale is not finite, not positive or above ``2^52``
    """
    sigma = float(scale)
    if not (math.isfinite(sigma) and 0.0 < sigma <= MAX_SCALE):
        raise ValueError("scale must be finite and in (0, 2^52]")
    t, c, a = (float(v[0]) for v in _constants(np.array([sigma])))
    out = np.zeros(int(size), dtype=np.int64)
    pending = np.arange(int(size))
    r = 0
    while pending.size:
        base = np.uint64(2 * r * REGION)

        def proposal(
            ids: np.ndarray,
            first: np.ndarray,
            count: int,
            p: np.ndarray = pending,
            b: np.uint64 = base,
        ) -> np.ndarray:
            return streams(p[ids], first + b, count)

        def test(
            ids: np.ndarray,
            first: np.ndarray,
            count: int,
            p: np.ndarray = pending,
            b: np.uint64 = base,
        ) -> np.ndarray:
            return streams(p[ids], first + b + np.uint64(REGION), count)

        y = stream_discrete_laplace(t, pending.size, proposal)
        ok = _accept(sigma, c, a, np.abs(y), _ElementBits(test, pending.size))
        out[pending[ok]] = y[ok]
        pending = pending[~ok]
        r += 1
    return out
