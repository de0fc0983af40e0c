"""Tests of the exact vectorised discrete Gaussian sampler
(:mod:`opendp_wasserstein.noise._fast_gaussian`).

Distribution tests are chi-square goodness-of-fit tests against the exact pmf of ``N_Z(0, s^2)``,
``P(y) proportional to exp(-y^2 / (2 s^2))``, with seeded sources (deterministic).  The
certified float interval of the acceptance exponent is checked against exact rationals, and the
exact fall-backs are forced to run often.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

import opendp_wasserstein.noise._fast_gaussian as fg
from opendp_wasserstein.noise._fast_gaussian import (
    MAX_SCALE,
    MIN_FAST_SCALE,
    fast_discrete_gaussian,
)
from opendp_wasserstein.noise._fast_laplace import _Bits
from opendp_wasserstein.noise._source import RandomSource

P_MIN = 1e-4  # fixed threshold for the (deterministic, seeded) goodness-of-fit tests


def dg_cdf(z: np.ndarray, scale: float) -> np.ndarray:
    """``P(Y <= z)`` for ``Y ~ N_Z(0, scale^2)`` and integer ``z``.

    Exact sums of the pmf up to ``scale = 1e5``; beyond, the normal cdf at ``z + 1/2``, whose
    error (Euler-Maclaurin) is below ``1/(24 scale^2)``, far below what a test can see.
    """
    z = np.asarray(z, dtype=np.float64)
    if scale > 1e5:
        return special.ndtr((z + 0.5) / scale)
    half = math.ceil(14 * scale) + 2
    ys = np.arange(-half, half + 1, dtype=np.float64)
    w = np.exp(-(ys * ys) / (2 * scale * scale))
    cdf = np.cumsum(w) / w.sum()
    pos = np.clip(z + half, -1, 2 * half).astype(np.int64)
    return np.where(pos < 0, 0.0, cdf[np.maximum(pos, 0)])


def _cuts(scale: float, n: int, nbins: int = 60) -> np.ndarray:
    """Integer cut points (approximate quantiles, plus every likely single value near 0); bins
    ``(-inf, c_0], (c_0, c_1], ..., (c_last, inf)``, pooled to expect at least 5 each."""
    u = np.linspace(0, 1, nbins + 1)[1:-1]
    quant = np.floor(special.ndtri(u) * scale)
    zs = np.arange(-40, 41)
    single = zs[n * np.diff(dg_cdf(np.concatenate(([-41], zs)), scale)) >= 20]
    cuts = np.unique(np.concatenate((quant, single, single - 1))).astype(np.int64)
    expected = n * np.diff(np.concatenate(([0.0], dg_cdf(cuts, scale))))
    kept: list[int] = []
    acc = 0.0
    for cut, e in zip(cuts.tolist(), expected.tolist(), strict=True):
        acc += e
        if acc >= 5:
            kept.append(cut)
            acc = 0.0
    while kept and n * (1.0 - float(dg_cdf(np.array(kept[-1:]), scale)[0])) < 5:
        kept.pop()
    return np.array(kept, dtype=np.int64)


def binned(x: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    return np.bincount(np.searchsorted(cuts, x, side="left"), minlength=cuts.size + 1)


def gof_pvalue(x: np.ndarray, scale: float) -> float:
    """Chi-square goodness-of-fit p-value of the integer sample ``x`` against
    ``N_Z(0, scale^2)``."""
    cuts = _cuts(scale, x.size)
    assert cuts.size >= 1
    probs = np.diff(np.concatenate(([0.0], dg_cdf(cuts, scale), [1.0])))
    expected = probs / probs.sum() * x.size
    assert expected.min() >= 5
    return float(stats.chisquare(binned(x, cuts), expected).pvalue)


# ---------------------------------------------------------------------------------------------
# goodness of fit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.6, 1.0, 2.5, 17.0, 1234.5])
def test_goodness_of_fit(scale: float) -> None:
    x = fast_discrete_gaussian(np.full(200_000, scale), RandomSource(101))
    assert gof_pvalue(x, scale) > P_MIN


@pytest.mark.parametrize(
    "scale", [0.3, 0.45, 0.999, 1.5, 2.0, 3.0, 7.3, 100.0, 98765.4, 2.0**40 + 0.5, MAX_SCALE]
)
def test_goodness_of_fit_more_scales(scale: float) -> None:
    # small scales (mass mostly at 0), t = floor(sigma) + 1 on both sides of powers of two,
    # integer scales, large scales (normal cdf reference)
    x = fast_discrete_gaussian(np.full(50_000, scale), RandomSource(7))
    assert gof_pvalue(x, scale) > P_MIN


def test_goodness_of_fit_secure_source() -> None:
    x = fast_discrete_gaussian(np.full(100_000, 2.5), RandomSource())
    assert gof_pvalue(x, 2.5) > 1e-6  # not seeded: a looser fixed threshold


def test_moments_large_scale() -> None:
    scale = 1e6
    x = fast_discrete_gaussian(np.full(100_000, scale), RandomSource(3)).astype(np.float64)
    assert abs(x.mean()) < 5 * scale / math.sqrt(x.size)
    assert abs(x.var() / scale**2 - 1) < 0.03


MIXED = np.array([0.4, 1.0, 1.7, 2.5, 17.0, 1000.0])


def _check_groups(scales: np.ndarray, x: np.ndarray) -> None:
    assert x.shape == scales.shape
    assert x.dtype == np.int64
    for s in MIXED:
        sel = scales == s
        assert sel.sum() >= 500
        assert gof_pvalue(x[sel], float(s)) > P_MIN, s


def test_mixed_scales_interleaved() -> None:
    rng = RandomSource(11)
    scales = MIXED[rng.integers(MIXED.size, 120_000)]
    _check_groups(scales, fast_discrete_gaussian(scales, rng))


def test_mixed_scales_runs() -> None:
    scales = np.repeat(MIXED, [30_000, 900, 20_000, 5_000, 20_000, 1_500])
    _check_groups(scales, fast_discrete_gaussian(scales, RandomSource(12)))


def test_distinct_scales_per_element() -> None:
    rng = RandomSource(14)
    base = MIXED[rng.integers(MIXED.size, 120_000)]
    scales = base * (1.0 + 1e-13 * rng.uniform(120_000))
    _check_groups(base, fast_discrete_gaussian(scales, rng))


def test_shape_and_reproducibility() -> None:
    scales = np.linspace(0.1, 50.0, 600).reshape(20, 30)
    a = fast_discrete_gaussian(scales, RandomSource(42))
    b = fast_discrete_gaussian(scales, RandomSource(42))
    c = fast_discrete_gaussian(scales, RandomSource(43))
    assert a.shape == (20, 30)
    assert a.dtype == np.int64
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    assert fast_discrete_gaussian(np.zeros((0, 3)) + 1.0, RandomSource(1)).shape == (0, 3)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, MAX_SCALE * 2])
def test_invalid_scales(bad: float) -> None:
    with pytest.raises(ValueError, match="scales"):
        fast_discrete_gaussian(np.array([1.0, bad]), RandomSource(0))


# ---------------------------------------------------------------------------------------------
# the certified interval and the exact fall-backs
# ---------------------------------------------------------------------------------------------


def _interval(sigma: float, x: int) -> tuple[Fraction, Fraction]:
    s = np.array([sigma])
    _, c, a = fg._constants(s)
    lo, hi = fg._gamma_interval(np.array([x], dtype=np.int64), c, a)
    return Fraction(float(lo[0])), Fraction(float(hi[0]))


def _near_centre(sigma: float) -> list[int]:
    """Integers ``x`` next to ``sigma^2 / t`` (where ``gamma`` is smallest and the float
    subtraction cancels) and a few far ones."""
    centre = Fraction(sigma) ** 2 / (math.floor(sigma) + 1)
    base = math.floor(centre)
    near = [base + k for k in range(-2, 3) if base + k >= 0]
    return near + [0, 1, int(min(40 * sigma + 3, 2**61))]


@settings(max_examples=300, deadline=None)
@given(
    log2_sigma=st.floats(min_value=-20.0, max_value=52.0, allow_nan=False),
    extra=st.integers(min_value=0, max_value=2**62 - 1),
)
def test_gamma_interval_contains_exact(log2_sigma: float, extra: int) -> None:
    sigma = min(max(2.0**log2_sigma, MIN_FAST_SCALE), MAX_SCALE)
    for x in [*_near_centre(sigma), extra]:
        lo, hi = _interval(sigma, x)
        gamma = fg._exact_gamma(sigma, x)
        assert lo <= gamma <= hi, (sigma, x)
        assert hi - lo <= Fraction(1, 2**40) * (1 + gamma + Fraction(x) ** 2 / Fraction(sigma) ** 2)


@pytest.mark.parametrize(
    "sigma", [MIN_FAST_SCALE, 0.1, 1.0, 1.0 - 2**-53, 3.0, 2.0**26 + 1, 2.0**52 - 0.5, MAX_SCALE]
)
def test_gamma_interval_edge_scales(sigma: float) -> None:
    for x in [*_near_centre(sigma), 2**53 - 1, 2**53 + 1, 2**62 - 1]:
        lo, hi = _interval(sigma, x)
        assert lo <= fg._exact_gamma(sigma, x) <= hi, (sigma, x)


def test_uniform_less() -> None:
    bits = _Bits(RandomSource(5), 1 << 12)
    f = Fraction(5, 2**32)  # a dyadic f: U < f iff the first 32 bits are below 5
    assert fg._uniform_less(4, 32, f, bits)
    assert not fg._uniform_less(5, 32, f, bits)
    assert not fg._uniform_less(6, 32, f, bits)
    third = Fraction(1, 3)
    w = int(third * 2**32)  # U's first 32 bits equal f's: the next bits decide
    draws = [fg._uniform_less(w, 32, third, bits) for _ in range(20_000)]
    p = float(third * 2**32 - w)  # P(U < f | first bits = w)
    assert stats.binomtest(sum(draws), len(draws), p).pvalue > P_MIN


def test_fraction_draws_when_undecided() -> None:
    # an interval [0, 1] never decides: every Bernoulli(f) goes through the exact comparison
    rng = RandomSource(6)
    sigma, x = 2.5, 7
    gamma = fg._exact_gamma(sigma, x)
    n = math.floor(gamma)
    size = 30_000
    frac = fg._Frac(
        np.zeros(size),
        np.ones(size),
        np.full(size, sigma),
        np.full(size, x),
        np.full(size, float(n)),
    )
    draws = frac.draw(np.arange(size), _Bits(rng, 1 << 16))
    assert stats.binomtest(int(draws.sum()), size, float(gamma - n)).pvalue > P_MIN


@pytest.mark.parametrize("scale", [0.6, 1.5, 40.0])
def test_exact_paths_forced(monkeypatch: pytest.MonkeyPatch, scale: float) -> None:
    # widen every certified interval by 2^48: most acceptance tests then run in exact rational
    # arithmetic (the floor of gamma is uncertain) or compare U with the exact f
    monkeypatch.setattr(fg, "_SLACK", 2.0**48)
    x = fast_discrete_gaussian(np.full(6_000, scale), RandomSource(21))
    assert gof_pvalue(x, scale) > P_MIN


def test_exact_bern_exp() -> None:
    rng = _Bits(RandomSource(22), 1 << 12)
    gamma = Fraction(7, 5)
    draws = [fg._bern_exp_exact(gamma, rng) for _ in range(20_000)]
    assert stats.binomtest(sum(draws), len(draws), math.exp(-1.4)).pvalue > P_MIN


def test_tiny_scales_exact_path() -> None:
    # below MIN_FAST_SCALE every acceptance test is exact; P(y != 0) < 2 exp(-2^41)
    scales = np.array([5e-324, 1e-300, 1e-7, MIN_FAST_SCALE / 2] * 25)
    assert np.array_equal(fast_discrete_gaussian(scales, RandomSource(23)), np.zeros(100))


# ---------------------------------------------------------------------------------------------
# agreement with OpenDP's sampler
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.8, 3.0])
def test_two_sample_against_opendp(scale: float) -> None:
    fast = fast_discrete_gaussian(np.full(100_000, scale), RandomSource())
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=scale
    )
    ref = np.asarray(meas([0] * 20_000), dtype=np.int64)
    cuts = _cuts(scale, 2_000)  # every bin expects >= 50 OpenDP draws: P(fewer than 5) < 1e-14
    table = np.vstack([binned(fast, cuts), binned(ref, cuts)])
    assert table.min() >= 5
    assert stats.chi2_contingency(table).pvalue > 1e-6  # unseeded: a looser fixed threshold


# ---------------------------------------------------------------------------------------------
# the back-ends and the traversal's noise object


def test_sample_discrete_gaussian_backends() -> None:
    from opendp_wasserstein.noise.samplers import sample_discrete_gaussian
    from opendp_wasserstein.runtime import sampler

    fast = sample_discrete_gaussian(np.full((3, 4), 2.0), RandomSource(1))
    assert fast.shape == (3, 4)
    assert fast.dtype == np.int64
    ref = sample_discrete_gaussian(np.full(20_000, 2.0), RandomSource(), backend="opendp")
    assert gof_pvalue(ref, 2.0) > 1e-6  # OpenDP's own sampler, unseeded
    with sampler("opendp"):
        assert sample_discrete_gaussian(np.full(5, 2.0), RandomSource()).shape == (5,)
    with pytest.raises(ValueError, match="seeded"):
        sample_discrete_gaussian(np.full(5, 2.0), RandomSource(1), backend="opendp")
    with pytest.raises(ValueError, match="backend"):
        sample_discrete_gaussian(np.full(5, 2.0), RandomSource(1), backend="numpy")


def test_pooled_noise_gaussian_pools_per_kind() -> None:
    from opendp_wasserstein.noise.node_noise import PooledNoise

    noise = PooledNoise(RandomSource(2), RandomSource(3))
    cells = np.zeros((30_000, 2), dtype=np.int64)
    g = np.concatenate([noise.gaussian(j, cells, 3.0) for j in range(3)])
    lap = noise.laplace(0, cells, 3.0)  # same scale, other distribution: its own pool
    assert gof_pvalue(g, 3.0) > P_MIN
    assert abs(float(np.var(lap)) - 2 * math.exp(-1 / 3) / (1 - math.exp(-1 / 3)) ** 2) < 1.0
