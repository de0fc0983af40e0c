"""Tests of the exact vectorised discrete Laplace sampler
(:mod:`opendp_wasserstein.noise._fast_laplace`).

Distribution tests are chi-square goodness-of-fit tests against the exact pmf of ``LapZ(s)``,
``P(z) = (1 - q)/(1 + q) q^|z|`` with ``q = exp(-1/s)``; seeded sources make them deterministic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import opendp_wasserstein.noise._fast_laplace as fl
from opendp_wasserstein.noise._fast_laplace import MAX_SCALE, fast_discrete_laplace
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.samplers import opendp_discrete_laplace, sample_discrete_laplace

P_MIN = 1e-4  # fixed threshold for the (deterministic, seeded) goodness-of-fit tests


def lapz_cdf(z: np.ndarray, scale: float) -> np.ndarray:
    """``P(Z <= z)`` for ``Z ~ LapZ(scale)`` and integer ``z`` (float64 is fine for a test)."""
    q = math.exp(-1.0 / scale)
    z = np.asarray(z, dtype=np.float64)
    upper = 1.0 - np.exp(-(np.maximum(z, 0.0) + 1.0) / scale) / (1.0 + q)
    lower = np.exp(np.minimum(z, 0.0) / scale) / (1.0 + q)
    return np.where(z >= 0, upper, lower)


def _bins(scale: float, n: int, nbins: int = 80) -> np.ndarray:
    """Integer cut points ``c_0 < c_1 < ...``: bins ``(-inf, c_0], (c_0, c_1], ..., (c_last, inf)``.

    The cuts are (approximate) quantiles of the exact distribution plus every integer near 0
    that is likely enough on its own; a bin expecting fewer than 5 is pooled with a neighbour.
    """
    q = math.exp(-1.0 / scale)
    u = np.linspace(0, 1, nbins + 1)[1:-1]
    with np.errstate(divide="ignore"):
        quant = np.where(
            u < 1.0 / (1.0 + q),
            np.floor(scale * np.log(u * (1.0 + q))),
            np.floor(-scale * np.log((1.0 - u) * (1.0 + q)) - 1.0),
        )
    zs = np.arange(-60, 61)
    pmf = -math.expm1(-1.0 / scale) / (1.0 + q) * np.exp(-np.abs(zs) / scale)
    single = zs[n * pmf >= 20]
    cuts = np.unique(np.concatenate((quant, single, single - 1))).astype(np.int64)
    expected = n * np.diff(np.concatenate(([0.0], lapz_cdf(cuts, scale))))
    kept: list[int] = []
    acc = 0.0
    for cut, e in zip(cuts.tolist(), expected.tolist(), strict=True):
        acc += e
        if acc >= 5:
            kept.append(cut)
            acc = 0.0
    while kept and n * (1.0 - float(lapz_cdf(np.array(kept[-1:]), scale)[0])) < 5:
        kept.pop()
    return np.array(kept, dtype=np.int64)


def binned(x: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Counts of ``x`` in the bins of :func:`_bins`."""
    return np.bincount(np.searchsorted(cuts, x, side="left"), minlength=cuts.size + 1)


def gof_pvalue(x: np.ndarray, scale: float) -> float:
    """Chi-square goodness-of-fit p-value of the integer sample ``x`` against ``LapZ(scale)``."""
    cuts = _bins(scale, x.size)
    observed = binned(x, cuts)
    probs = np.diff(np.concatenate(([0.0], lapz_cdf(cuts, scale), [1.0])))
    expected = probs / probs.sum() * x.size
    assert expected.min() >= 5
    assert cuts.size >= 2
    return float(stats.chisquare(observed, expected).pvalue)


# ---------------------------------------------------------------------------------------------
# goodness of fit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 17.0, 1000.0])
def test_goodness_of_fit(scale: float) -> None:
    x = fast_discrete_laplace(np.full(200_000, scale), RandomSource(101))
    assert gof_pvalue(x, scale) > P_MIN


@pytest.mark.parametrize(
    "scale",
    [0.2, 0.25, 0.5, 0.7, 1.5, 2.0, 3.0, 123456.7, 2.0**40 + 0.5],
)
def test_goodness_of_fit_edge_scales(scale: float) -> None:
    # sigma < 1 with and without a fractional part of 1/sigma (0.25, 0.5: r = 0), [1, 2)
    # (no U part), powers of two (g = 1), 8/16/32/64-bit U fields
    x = fast_discrete_laplace(np.full(50_000, scale), RandomSource(7))
    assert gof_pvalue(x, scale) > P_MIN


def test_goodness_of_fit_secure_source() -> None:
    x = fast_discrete_laplace(np.full(100_000, 2.5), RandomSource())
    assert gof_pvalue(x, 2.5) > 1e-6  # not seeded: a looser fixed threshold


def test_moments_large_scale() -> None:
    scale = 1e6
    x = fast_discrete_laplace(np.full(100_000, scale), RandomSource(3)).astype(np.float64)
    q = math.exp(-1 / scale)
    var = 2 * q / (1 - q) ** 2
    assert abs(x.mean()) < 5 * math.sqrt(var / x.size)
    assert abs(x.var() / var - 1) < 0.05


# ---------------------------------------------------------------------------------------------
# mixed per-element scales: runs, interleaved (sorted into runs) and per-element paths
# ---------------------------------------------------------------------------------------------

MIXED = np.array([0.2, 0.3, 1.0, 1.5, 2.5, 17.0, 1000.0])


def _check_groups(scales: np.ndarray, x: np.ndarray) -> None:
    assert x.shape == scales.shape
    assert x.dtype == np.int64
    for s in MIXED:
        sel = scales == s
        assert sel.sum() >= 500
        assert gof_pvalue(x[sel], float(s)) > P_MIN, s


def test_mixed_scales_interleaved() -> None:
    rng = RandomSource(11)
    scales = MIXED[rng.integers(MIXED.size, 140_000)]
    _check_groups(scales, fast_discrete_laplace(scales, rng))


def test_mixed_scales_runs() -> None:
    # one run (900) is short enough for the per-element path
    scales = np.repeat(MIXED, [30_000, 900, 20_000, 5_000, 20_000, 1_500, 20_000])
    _check_groups(scales, fast_discrete_laplace(scales, RandomSource(12)))


def test_mixed_scales_per_element_path() -> None:
    # the per-element sampler, without sorting into runs
    rng = RandomSource(13)
    scales = MIXED[rng.integers(MIXED.size, 140_000)]
    x = fl._dispatch(scales, fl._Bits(rng, 1 << 16), allow_sort=False)
    _check_groups(scales, x)


def test_distinct_scales_per_element() -> None:
    # every scale different: the sample of each group is checked against the group's centre
    rng = RandomSource(14)
    base = MIXED[rng.integers(MIXED.size, 140_000)]
    scales = base * (1.0 + 1e-13 * rng.uniform(140_000))
    x = fast_discrete_laplace(scales, rng)
    _check_groups(base, x)


# ---------------------------------------------------------------------------------------------
# rare exact fall-backs, forced
# ---------------------------------------------------------------------------------------------


def test_tiny_scale_fallback_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    # treat every sigma < 0.5 as "tiny" and stop the vectorised exp(-1) chain after one step,
    # so that the exact Python-integer completion runs often
    monkeypatch.setattr(fl, "_TINY_EXP", 0)
    monkeypatch.setattr(fl, "_CHAIN_CAP", 1)
    rng = RandomSource(21)
    x = fast_discrete_laplace(np.full(6_000, 0.3), rng)  # stream path
    scales = np.where(np.arange(12_000) % 2 == 0, 0.3, 0.45)  # per-element path
    y = fl._dispatch(scales, fl._Bits(rng, 1 << 16), allow_sort=False)
    assert gof_pvalue(x, 0.3) > P_MIN
    assert gof_pvalue(y[scales == 0.3], 0.3) > P_MIN
    assert gof_pvalue(y[scales == 0.45], 0.45) > P_MIN


def test_product_form_fallback_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    # Algorithm-1 steps K > _K_MAX draw Bernoulli(a/M) Bernoulli(1/K): force it from K = 2
    monkeypatch.setattr(fl, "_K_MAX", 1)
    rng = RandomSource(22)
    x = fast_discrete_laplace(np.full(50_000, 2.5), rng)
    scales = np.where(np.arange(50_000) % 2 == 0, 2.5, 17.0)
    y = fl._dispatch(scales, fl._Bits(rng, 1 << 16), allow_sort=False)
    assert gof_pvalue(x, 2.5) > P_MIN
    assert gof_pvalue(y[scales == 17.0], 17.0) > P_MIN


def test_tiny_and_huge_scales_run() -> None:
    rng = RandomSource(23)
    tiny = np.array([5e-324, 1e-300, 2.0**-11, 2.0**-10, 1e-3])
    assert np.array_equal(fast_discrete_laplace(np.repeat(tiny, 100), rng), np.zeros(500))
    x = fast_discrete_laplace(np.full(1000, MAX_SCALE), rng)
    assert np.all(np.abs(x) < 2**62)
    assert np.median(np.abs(x)) > MAX_SCALE / 100


# ---------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------


def test_bits_pool_hands_out_each_byte_once() -> None:
    # the pool's bytes are the source's stream, in order, none skipped or repeated
    pool = fl._Bits(RandomSource(5), 4096)
    sizes = [1, 7, 4096, 3, 10_000, 5, 300_000, 2]
    got = np.concatenate([pool.bytes(n).copy() for n in sizes])
    ref = RandomSource(5).uint64(got.size // 8 + 1).view(np.uint8)[: got.size]
    assert np.array_equal(got, ref)


def test_multiplier_is_valid() -> None:
    rng = np.random.default_rng(0)  # test data only, not the sampler's randomness
    m_int = rng.integers(2**52, 2**53, size=2000, dtype=np.int64)
    m_int[:3] = [2**52, 2**53 - 1, 2**52 + 1]
    for k in (1, 2, 3, 7, 1000, 1024):
        m = fl._multiplier(m_int.astype(np.float64), k)
        for mi, mm in zip(m_int.tolist(), m.tolist(), strict=True):
            assert 1 <= mm
            assert mm * mi * k <= 2**64 - 1
            assert mm >= (2**64 - 1) // (mi * k) - (2**35 // (mi * k)) - 1  # near-optimal


def test_bernoulli_rejection_and_low_bits() -> None:
    # a small limit makes the top byte reject often, and equal top bytes need the low bits
    a_thr = np.uint64((1 << 56) + 12345)
    l_thr = np.uint64((1 << 56) * 3 + 99)
    n = 200_000
    draws = fl._bernoulli(a_thr, l_thr, n, fl._Bits(RandomSource(31), 1 << 16))
    p = int(a_thr) / int(l_thr)
    assert stats.binomtest(int(draws.sum()), n, p).pvalue > P_MIN
    arr_a = np.full(n, a_thr, dtype=np.uint64)
    arr_l = np.full(n, l_thr, dtype=np.uint64)
    draws = fl._bernoulli(arr_a, arr_l, n, fl._Bits(RandomSource(32), 1 << 16))
    assert stats.binomtest(int(draws.sum()), n, p).pvalue > P_MIN


def test_bern_exp_minus_one() -> None:
    n = 200_000
    draws = fl._bern_exp_minus_one(n, fl._Bits(RandomSource(33), 1 << 16))
    assert stats.binomtest(int(draws.sum()), n, math.exp(-1)).pvalue > P_MIN


# ---------------------------------------------------------------------------------------------
# agreement with OpenDP's sampler
# ---------------------------------------------------------------------------------------------


def test_two_sample_against_opendp() -> None:
    scale = 3.0
    fast = fast_discrete_laplace(np.full(100_000, scale), RandomSource())
    ref = opendp_discrete_laplace(np.full(20_000, scale))
    cuts = np.arange(-12, 12)
    table = np.vstack([binned(fast, cuts), binned(ref, cuts)])
    assert table.min() >= 5
    assert stats.chi2_contingency(table).pvalue > 1e-6  # unseeded: a looser fixed threshold


def test_backend_dispatch() -> None:
    x = sample_discrete_laplace(np.full((4, 5), 2.0), RandomSource(5), backend="fast")
    assert x.shape == (4, 5)
    assert x.dtype == np.int64


# ---------------------------------------------------------------------------------------------
# API: reproducibility, shapes, validation
# ---------------------------------------------------------------------------------------------


def test_seed_reproducibility() -> None:
    scales = np.concatenate([np.full(3000, 0.7), np.linspace(0.1, 50.0, 3000), np.full(5, 9.0)])
    a = fast_discrete_laplace(scales, RandomSource(42))
    b = fast_discrete_laplace(scales, RandomSource(42))
    c = fast_discrete_laplace(scales, RandomSource(43))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_secure_sources_differ() -> None:
    scales = np.full(1000, 100.0)
    assert not np.array_equal(
        fast_discrete_laplace(scales, RandomSource()), fast_discrete_laplace(scales, RandomSource())
    )


@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (2, 3, 5), (600, 3)])
def test_shape_and_dtype(shape: tuple[int, ...]) -> None:
    x = fast_discrete_laplace(np.full(shape, 2.0), RandomSource(1))
    assert x.shape == shape
    assert x.dtype == np.int64


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty(shape: tuple[int, ...]) -> None:
    x = fast_discrete_laplace(np.ones(shape), RandomSource(1))
    assert x.shape == shape
    assert x.dtype == np.int64


def test_accepts_lists_and_ints() -> None:
    x = fast_discrete_laplace([1, 2, 3], RandomSource(1))  # type: ignore[arg-type]
    assert x.shape == (3,)
    assert x.dtype == np.int64


@pytest.mark.parametrize("bad", [0.0, -1.0, -0.0, np.nan, np.inf, -np.inf, 2.0**53])
def test_invalid_scales(bad: float) -> None:
    scales = np.array([1.0, bad, 2.0])
    with pytest.raises(ValueError, match="scales"):
        fast_discrete_laplace(scales, RandomSource(1))
