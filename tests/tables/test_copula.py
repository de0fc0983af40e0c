"""The DP Gaussian copula from one noisy count per column pair: exact maps (symmetric and
change-one), the counts' sensitivity and the exact law of their noise by enumeration, the
splits, the latent correlations, the join's outputs within the schema, and the release's map."""

import itertools
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from opendp_wasserstein import synthesize
from opendp_wasserstein.combinators import make_approx_dp
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.tables import (
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
)
from opendp_wasserstein.tables.calibration import largest_remainder
from opendp_wasserstein.tables.copula import (
    CopulaSplits,
    bivariate_normal_cdf,
    copula_scale,
    copula_splits,
    latent_correlations,
    make_copula_counts,
    make_split_counts,
    nearest_correlation,
    pair_counts,
)
from opendp_wasserstein.tables.encoding import category_boundaries
from opendp_wasserstein.tables.marginals import TableMarginals, column_plans
from opendp_wasserstein.tables.pipeline import (
    COPULA_MARGINAL_SHARE,
    COPULA_MIN_NEPS,
    COPULA_MIN_NEPS_ZCDP,
    PAIRS_MIN_NEPS,
    PAIRS_MIN_NEPS_ZCDP,
    StructuredOptions,
    first_look_share,
    fit_copula,
    fit_marginals,
    independent_join,
    joint_kind,
    make_structured_synthesis,
    make_structured_synthesis_zcdp,
    structured_zcdp,
)

dp.enable_features("contrib")

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0)),
        "y": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "c": CategoricalColumn(categories=("a", "b", "c")),
        "k": IntColumn(bounds=(0, 20)),
    }
)
ENC = TableEncoding(SCHEMA)


def _domain(n, d=ENC.dimension):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float, nan=False)


def _splits(k=3):
    """``k`` categorical-free columns on axes ``0 .. k-1`` split at 1/2, none nullable."""
    return CopulaSplits(
        tuple(range(k)), tuple(range(k)), (0.5,) * k, (-1,) * k, (0.5,) * k, (1.0,) * k
    )


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    z = (
        rng.standard_normal((n, 3))
        @ np.linalg.cholesky(np.array([[1.0, 0.8, 0.5], [0.8, 1.0, 0.4], [0.5, 0.4, 1.0]])).T
    )
    y = np.clip(5 + 1.5 * z[:, 1], 0, 10)
    y[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame(
        {
            "x": np.clip(5 + 1.5 * z[:, 0], 0, 10),
            "y": y,
            "c": np.array(["a", "b", "c"])[np.digitize(z[:, 2], [-0.4, 0.6])],
            "k": np.clip(np.round(10 + 3 * z[:, 2]), 0, 20).astype(int),
        }
    )


# ------------------------------------------------------------------ maps (exact)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_split_counts_stability_is_exact(k):
    p = k * (k - 1) // 2
    sized_c1 = make_split_counts(_domain(4, k), dp.change_one_distance(), _splits(k))
    sized_sym = make_split_counts(_domain(4, k), dp.symmetric_distance(), _splits(k))
    unsized = make_split_counts(
        dp.numpy.array2_domain(num_columns=k, T=float, nan=False),
        dp.symmetric_distance(),
        _splits(k),
    )
    # change_one: d_in replacements; symmetric on a sized domain: d_in // 2 replacements
    assert [sized_c1.map(d) for d in (0, 1, 2, 3)] == [0, p, 2 * p, 3 * p]
    assert [sized_sym.map(d) for d in (0, 2, 3, 4)] == [0, p, p, 2 * p]
    # without a size, every added or removed row moves every count by at most 1
    assert [unsized.map(d) for d in (0, 1, 2)] == [0, p, 2 * p]


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_copula_counts_map_is_exact_and_check_is_tight(metric, unit):
    sp = _splits(4)  # P = 6
    eps = Fraction(1, 2)
    scale = copula_scale(sp.pairs, float(eps))
    assert scale == 12.0
    meas = make_copula_counts(_domain(5, 4), metric, sp, scale)
    assert meas.map(unit) == 0.5
    assert meas.check(unit, 0.5)
    assert not meas.check(unit, float(np.nextafter(0.5, 0.0)))


def _replaced_counts(sp: Any) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The pair counts of every table of 3 rows over the 2 x 2 x 2 grid of below/above, and
    of every replacement of one of its rows: ``(counts, counts after the replacement)``."""
    cells = [np.array(c, dtype=float) for c in itertools.product((0.25, 0.75), repeat=3)]
    for rows in itertools.combinations_with_replacement(range(8), 3):
        x = np.array([cells[r] for r in rows])
        cx = pair_counts(x, sp)
        for pos, new in itertools.product(range(3), range(8)):
            y = x.copy()
            y[pos] = cells[new]
            yield cx, pair_counts(y, sp)


def test_split_counts_sensitivity_by_enumeration():
    """Every table of n = 3 rows over the 2 x 2 x 2 grid of below/above, every replacement
    of one row: the count vector moves by at most P = 3 in l1, and P is reached."""
    sp = _splits(3)
    worst = max(int(np.abs(cy - cx).sum()) for cx, cy in _replaced_counts(sp))
    assert worst == sp.pairs == 3


def test_copula_counts_exact_law_on_every_replacement():
    """The exact law of the released vector (independent discrete Laplace noise of scale
    ``P / eps`` on each count, pmf ``prop. exp(-|z| / s)``) moves by at most ``e^eps`` at every
    output on every replacement of one row of every table of 3 rows over the 2 x 2 x 2 grid:
    the log-ratio at output ``o`` is ``sum_i (|o_i - c'_i| - |o_i - c_i|) / s``, whose largest
    value over outputs is ``|c - c'|_1 / s``; it is evaluated on a box of outputs around both
    count vectors (where the maximum is reached)."""
    sp = _splits(3)
    eps = 0.5
    s = copula_scale(sp.pairs, eps)
    grid = np.array(list(itertools.product(range(-2, 6), repeat=3)))  # outputs
    worst = 0.0
    for cx, cy in _replaced_counts(sp):
        ratio = (np.abs(grid - cy).sum(axis=1) - np.abs(grid - cx).sum(axis=1)) / s
        worst = max(worst, float(np.max(np.abs(ratio))))
    assert worst == pytest.approx(eps)
    assert worst <= eps * (1 + 1e-12)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_release_map_is_the_sum_and_at_most_epsilon(metric, unit):
    n, eps = 400, 1.0
    opts = StructuredOptions(joint="copula")
    meas = make_structured_synthesis(_domain(n), metric, ENC, eps, opts)
    d = meas.map(unit)
    assert d <= eps
    assert Fraction(d) >= Fraction(eps) * (1 - Fraction(1, 2**40))
    assert meas.check(unit, d)
    assert not meas.check(unit, float(np.nextafter(d, 0.0)))
    # its parts: the first look at COPULA_MARGINAL_SHARE, the counts at the rest
    target = round_down(Fraction(eps) * COPULA_MARGINAL_SHARE)
    _, m_marg = fit_marginals(_domain(n), metric, ENC, target, unit)
    plans = column_plans(ENC)
    scale, template = fit_copula(_domain(n), metric, eps, m_marg.map(unit), unit, plans, (0, 1, 3))
    assert template is not None
    assert d == round_up(Fraction(m_marg.map(unit)) + Fraction(template.map(unit)))
    # the default copula_columns="numeric": x, y and k, P = 3
    assert scale == round_up(Fraction(3) / (Fraction(eps) - Fraction(m_marg.map(unit))))


def test_auto_rule_runs_the_copula_from_its_public_threshold_under_pure_dp():
    """``joint="auto"``: independent columns below ``COPULA_MIN_NEPS`` per column, the copula
    from there up to ``PAIRS_MIN_NEPS``."""
    o, k = StructuredOptions(), 4
    lo, hi = int(COPULA_MIN_NEPS * k), int(PAIRS_MIN_NEPS * k)
    assert joint_kind(o, lo - 1, 1.0, k) == "independent"
    assert joint_kind(o, lo, 1.0, k) == "copula"
    assert joint_kind(o, hi - 1, 1.0, k) == "copula"
    assert joint_kind(o, hi, 1.0, k) == "network"
    assert joint_kind(StructuredOptions(joint="never"), lo, 1.0, k) == "independent"


def test_auto_rule_runs_the_copula_from_its_public_threshold_with_delta():
    """With delta (``noise="gaussian"``): independent columns below ``COPULA_MIN_NEPS_ZCDP`` per
    column, the copula from there up to ``PAIRS_MIN_NEPS_ZCDP``, the network from there, its
    first look at ``COPULA_MARGINAL_SHARE`` in the copula's range."""
    o, k = StructuredOptions(), 4
    lo, hi = int(COPULA_MIN_NEPS_ZCDP * k), int(PAIRS_MIN_NEPS_ZCDP * k)
    assert joint_kind(o, lo - 1, 1.0, k, "gaussian") == "independent"
    assert joint_kind(o, lo, 1.0, k, "gaussian") == "copula"
    assert joint_kind(o, hi - 1, 1.0, k, "gaussian") == "copula"
    assert joint_kind(o, hi, 1.0, k, "gaussian") == "network"
    assert first_look_share(o, lo, 1.0, k, "gaussian") == COPULA_MARGINAL_SHARE


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_auto_delta_release_in_the_copula_range_is_the_copula_and_its_exact_map(metric, unit):
    """At ``n eps / k = COPULA_MIN_NEPS_ZCDP`` (4 columns, n 400, eps 1, delta 1e-9) the default
    zCDP release's map is the forced copula's (first look at ``COPULA_MARGINAL_SHARE`` of rho
    plus the Gaussian counts', summed exactly, rounded up); ``check`` true at it and false just
    below; one row fewer is independent columns at the whole rho."""
    n, eps, delta = 400, 1.0, 1e-9
    auto, rho = structured_zcdp(_domain(n), metric, ENC, eps, delta)
    forced, _ = structured_zcdp(
        _domain(n), metric, ENC, eps, delta, StructuredOptions(joint="copula")
    )
    d = auto.map(unit)
    assert d == forced.map(unit)
    m_marg, _, template = _fit_zcdp_parts(n, metric, unit, rho)
    assert d == round_up(Fraction(m_marg.map(unit)) + Fraction(template.map(unit)))
    assert auto.check(unit, d)
    assert not auto.check(unit, float(np.nextafter(d, 0.0)))
    below, _ = structured_zcdp(_domain(n - 1), metric, ENC, eps, delta)
    _, m_all = fit_marginals(_domain(n - 1), metric, ENC, rho, unit, noise="gaussian")
    assert below.map(unit) == m_all.map(unit)


def test_auto_delta_release_in_the_copula_range_is_the_copula_release():
    """Under a seed the default release with delta at ``n eps / k`` in ``[100, 180)`` is the
    ``joint="copula"`` release, row for row, and reports the copula."""
    df = _frame(600)  # 4 columns: n eps / k = 150 at eps 1
    with reproducible(3), diagnostics() as rec:
        a, ra = synthesize(df, 1.0, schema=SCHEMA, delta=1e-9)
    opts = StructuredOptions(joint="copula")
    with reproducible(3):
        b, _ = synthesize(df, 1.0, schema=SCHEMA, delta=1e-9, structured=opts)
    assert a.equals(b)
    info = {k: v for r in rec for k, v in r.items()}
    assert info["joint_kind"] == "copula"
    assert ra.details["split_order"] == "gaussian copula of pair counts"


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_auto_release_in_the_copula_range_has_the_exact_map(metric, unit):
    """At ``n eps / k = COPULA_MIN_NEPS`` (4 columns, n 400, eps 1) the default release's map is
    the first look's at ``COPULA_MARGINAL_SHARE`` plus the copula counts' (3 numeric columns,
    ``P = 3``), summed over the rationals and rounded up; ``check`` holds at it and fails just
    below; one row fewer is independent columns at the whole budget."""
    n, eps = 400, 1.0
    meas = make_structured_synthesis(_domain(n), metric, ENC, eps, StructuredOptions())
    d = meas.map(unit)
    target = round_down(Fraction(eps) * COPULA_MARGINAL_SHARE)
    _, m_marg = fit_marginals(_domain(n), metric, ENC, target, unit)
    plans = column_plans(ENC)
    _, template = fit_copula(_domain(n), metric, eps, m_marg.map(unit), unit, plans, (0, 1, 3))
    assert template is not None
    assert d == round_up(Fraction(m_marg.map(unit)) + Fraction(template.map(unit)))
    assert d <= eps
    assert meas.check(unit, d)
    assert not meas.check(unit, float(np.nextafter(d, 0.0)))
    forced = make_structured_synthesis(
        _domain(n), metric, ENC, eps, StructuredOptions(joint="copula")
    )
    assert forced.map(unit) == d
    below = make_structured_synthesis(_domain(n - 1), metric, ENC, eps, StructuredOptions())
    never = make_structured_synthesis(
        _domain(n - 1), metric, ENC, eps, StructuredOptions(joint="never")
    )
    assert below.map(unit) == never.map(unit)
    _, m_all = fit_marginals(_domain(n - 1), metric, ENC, eps, unit)
    assert below.map(unit) == m_all.map(unit)


def test_auto_release_in_the_copula_range_is_the_copula_release():
    """Under a seed the default release at ``n eps / k`` in ``[100, 400)`` is the
    ``joint="copula"`` release, row for row, and reports the copula."""
    df = _frame(800)  # 4 columns: n eps / k = 200 at eps 1
    with reproducible(3), diagnostics() as rec:
        a, ra = synthesize(df, 1.0, schema=SCHEMA)
    with reproducible(3):
        b, _ = synthesize(df, 1.0, schema=SCHEMA, structured=StructuredOptions(joint="copula"))
    assert a.equals(b)
    info = {k: v for r in rec for k, v in r.items()}
    assert info["joint_kind"] == "copula"
    assert ra.details["split_order"] == "gaussian copula of pair counts"


# ------------------------------------------------------------------ zCDP (with delta)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_split_counts_l2_stability_is_exact(k):
    """In ``l2`` every count moves by at most 1 per replacement: ``sqrt(P m^2)`` rounded up to
    the smallest float whose square is at least ``P m^2``."""
    p = k * (k - 1) // 2
    sized_c1 = make_split_counts(_domain(4, k), dp.change_one_distance(), _splits(k), "l2")
    sized_sym = make_split_counts(_domain(4, k), dp.symmetric_distance(), _splits(k), "l2")
    unsized = make_split_counts(
        dp.numpy.array2_domain(num_columns=k, T=float, nan=False),
        dp.symmetric_distance(),
        _splits(k),
        "l2",
    )
    assert sized_c1.output_metric == dp.l2_distance(T=float)
    assert [sized_c1.map(d) for d in (0, 1, 2, 3)] == [sqrt_up(p * m * m) for m in (0, 1, 2, 3)]
    assert [sized_sym.map(d) for d in (0, 2, 3, 4)] == [sqrt_up(p * m * m) for m in (0, 1, 1, 2)]
    assert [unsized.map(d) for d in (0, 1, 2)] == [sqrt_up(p * m * m) for m in (0, 1, 2)]
    one = sized_c1.map(1)
    assert Fraction(one) ** 2 >= p
    assert Fraction(float(np.nextafter(one, 0.0))) ** 2 < p


def test_split_counts_l2_sensitivity_by_enumeration():
    """Every replacement of one row of every table of 3 rows over the 2 x 2 x 2 grid: the
    squared ``l2`` move of the counts is at most ``P = 3``, and ``P`` is reached."""
    sp = _splits(3)
    worst = max(int(((cy - cx) ** 2).sum()) for cx, cy in _replaced_counts(sp))
    assert worst == sp.pairs == 3


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_copula_counts_zcdp_map_is_exact_and_check_is_tight(metric, unit):
    """``P = 36`` (9 columns), rho 1/2: sigma ``sqrt(36 / 1) = 6`` and the map ``(6 / 6)^2 / 2
    = 1/2`` exactly; ``check`` true at it, false just below."""
    sp = _splits(9)
    scale = copula_scale(sp.pairs, 0.5, "gaussian")
    assert scale == 6.0
    meas = make_copula_counts(_domain(5, 9), metric, sp, scale, "gaussian")
    assert meas.output_measure == dp.zero_concentrated_divergence()
    assert meas.map(unit) == 0.5
    assert meas.check(unit, 0.5)
    assert not meas.check(unit, float(np.nextafter(0.5, 0.0)))


def test_copula_scale_zcdp_rounds_sigma_up():
    """``P = 3``, rho 1/2: sigma is the smallest float with ``sigma^2 >= 3``; the map at most
    rho."""
    sigma = copula_scale(3, 0.5, "gaussian")
    assert Fraction(sigma) ** 2 >= 3
    assert Fraction(float(np.nextafter(sigma, 0.0))) ** 2 < 3
    co = dp.change_one_distance()
    meas = make_copula_counts(_domain(5, 3), co, _splits(3), sigma, "gaussian")
    assert meas.map(1) <= 0.5


@pytest.mark.parametrize("alpha", [2, 10])
def test_copula_counts_gaussian_renyi_divergence_on_every_replacement(alpha):
    """The exact Renyi divergence of order ``alpha`` between the released vectors (independent
    discrete Gaussian noise of ``sigma = copula_scale(3, rho)`` on each count) before and after
    every replacement of one row of every table of 3 rows over the 2 x 2 x 2 grid, summed over
    the coordinates (independent), each in log space on the integers ``|z| <= 200``: at most
    ``alpha rho`` and reached (``rho`` the map's)."""
    sp = _splits(3)
    rho = 0.5
    s = copula_scale(sp.pairs, rho, "gaussian")
    z = np.arange(-200, 201, dtype=np.float64)

    def renyi(shift: int) -> float:
        lp = -(z**2) / (2 * s * s)
        lq = -((z - shift) ** 2) / (2 * s * s)
        lp, lq = lp - logsumexp(lp), lq - logsumexp(lq)  # the normalised log pmfs
        return float(logsumexp(alpha * lp + (1 - alpha) * lq) / (alpha - 1))

    table = {d: renyi(d) for d in (-1, 0, 1)}
    worst = max(sum(table[int(d)] for d in cy - cx) for cx, cy in _replaced_counts(sp))
    assert worst == pytest.approx(alpha * rho, rel=1e-9)
    assert worst <= alpha * rho * (1 + 1e-9)


def _fit_zcdp_parts(n, metric, unit, rho, share=COPULA_MARGINAL_SHARE):
    target = round_down(Fraction(rho) * share)
    _, m_marg = fit_marginals(_domain(n), metric, ENC, target, unit, noise="gaussian")
    plans = column_plans(ENC)
    scale, template = fit_copula(
        _domain(n), metric, rho, m_marg.map(unit), unit, plans, (0, 1, 3), "gaussian"
    )
    assert template is not None
    return m_marg, scale, template


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_zcdp_release_map_is_the_sum_and_at_most_rho(metric, unit):
    """``joint="copula"`` in zCDP: the map is the first look's (at ``COPULA_MARGINAL_SHARE`` of
    rho) plus the counts' (3 numeric columns, ``P = 3``, sigma ``sqrt(3 / (2 rho_rest))``
    rounded up, raised only by the fit's relative steps), summed over the rationals and rounded
    up; at most rho; ``check`` true at it,
    false just below."""
    n, rho = 400, 0.25
    meas = make_structured_synthesis_zcdp(
        _domain(n), metric, ENC, rho, StructuredOptions(joint="copula")
    )
    assert meas.output_measure == dp.zero_concentrated_divergence()
    d = meas.map(unit)
    m_marg, scale, template = _fit_zcdp_parts(n, metric, unit, rho)
    assert d == round_up(Fraction(m_marg.map(unit)) + Fraction(template.map(unit)))
    assert d <= rho
    assert Fraction(d) >= Fraction(rho) * (1 - Fraction(1, 2**40))
    assert meas.check(unit, d)
    assert not meas.check(unit, float(np.nextafter(d, 0.0)))
    # sigma at the rest of rho, lowered by the fit's relative steps only (OpenDP's float map)
    exact = Fraction(3) / (2 * (Fraction(rho) - Fraction(m_marg.map(unit))))
    assert Fraction(scale) ** 2 >= exact
    assert Fraction(scale) ** 2 <= exact * (1 + Fraction(1, 2**40))


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_delta_release_is_opendps_conversion_of_the_zcdp_map(metric, unit):
    """With ``delta``: OpenDP's conversion of the zCDP release's map; ``(eps', delta)`` with
    ``eps' <= eps``, ``check`` true at it and false just below."""
    n, eps, delta = 400, 1.0, 1e-9
    opts = StructuredOptions(joint="copula")
    meas = make_structured_synthesis(_domain(n), metric, ENC, eps, opts, delta=delta)
    zcdp, rho = structured_zcdp(_domain(n), metric, ENC, eps, delta, opts)
    m_marg, _, template = _fit_zcdp_parts(n, metric, unit, rho)
    assert zcdp.map(unit) == round_up(Fraction(m_marg.map(unit)) + Fraction(template.map(unit)))
    got_eps, got_delta = meas.map(unit)
    assert (got_eps, got_delta) == make_approx_dp(zcdp, delta).map(unit)
    assert got_delta == delta
    assert got_eps <= eps
    assert meas.check(unit, (got_eps, delta))
    assert not meas.check(unit, (float(np.nextafter(got_eps, 0.0)), delta))


def test_delta_copula_release_adds_correlation():
    """Seeded, 3,000 rows at ``(4, 1e-9)``: the correlation of x and y (0.8 in the data) is
    positive in the copula release; the release reports the Gaussian noise."""
    df = _frame(3000)
    opts = StructuredOptions(joint="copula")
    with reproducible(1), diagnostics() as rec:
        out, rep = synthesize(df, 4.0, schema=SCHEMA, structured=opts, delta=1e-9)
    assert rep.delta == 1e-9
    info = {k: v for r in rec for k, v in r.items()}
    assert info["joint_kind"] == "copula"
    assert info["noise"] == "gaussian"
    assert info["copula_pairs"] == 3
    assert out[["x", "y"]].astype(float).corr().iloc[0, 1] > 0.4


def test_latent_correlations_gaussian_shrink_pure_noise_to_near_zero():
    sp = _splits(5)
    n, sigma = 300, 40.0
    counts = n / 4 + np.random.default_rng(5).normal(0, sigma, sp.pairs)
    got = latent_correlations(counts, sp, n, sigma, noise="gaussian")
    assert np.abs(got[np.triu_indices(5, 1)]).mean() < 0.1


def test_latent_correlations_gaussian_keep_a_strong_pair():
    """Counts of 20,000 rows of latent correlation 0.8 with discrete-Gaussian-sized noise
    (sigma 5, seeded): the posterior median under the normal likelihood is near 0.8."""
    rng = np.random.default_rng(9)
    corr = np.array([[1.0, 0.8], [0.8, 1.0]])
    z = rng.standard_normal((20_000, 2)) @ np.linalg.cholesky(corr).T
    x = 1 / (1 + np.exp(-z))
    sp = _splits(2)
    noisy = pair_counts(x, sp) + np.round(rng.normal(0, 5.0, 1))
    got = latent_correlations(noisy, sp, len(x), 5.0, noise="gaussian")
    assert abs(got[0, 1] - 0.8) < 0.05


# ------------------------------------------------------------------ post-processing


def test_bivariate_normal_cdf_closed_forms():
    r = np.array([-0.9, -0.5, 0.0, 0.3, 0.8])
    got = bivariate_normal_cdf(np.zeros(5), np.zeros(5), r)
    np.testing.assert_allclose(got, 0.25 + np.arcsin(r) / (2 * np.pi), atol=1e-10)


def test_latent_correlations_recover_a_known_matrix_without_noise():
    """Noise-free counts of a large Gaussian sample: the latent correlations come back."""
    rng = np.random.default_rng(3)
    corr = np.array([[1.0, 0.7, -0.4], [0.7, 1.0, 0.0], [-0.4, 0.0, 1.0]])
    z = rng.standard_normal((200_000, 3)) @ np.linalg.cholesky(corr).T
    x = 1 / (1 + np.exp(-z))  # in (0, 1), split at 1/2 = z below 0
    sp = CopulaSplits((0, 1, 2), (0, 1, 2), (0.5,) * 3, (-1,) * 3, (0.5,) * 3, (1.0,) * 3)
    got = latent_correlations(pair_counts(x, sp), sp, len(x), 1e-9, shrink=False)
    np.testing.assert_allclose(got, corr, atol=0.02)


def test_latent_correlations_shrink_pure_noise_to_near_zero():
    sp = _splits(5)
    n, scale = 300, 40.0
    counts = n / 4 + np.random.default_rng(5).laplace(0, scale, sp.pairs)
    got = latent_correlations(counts, sp, n, scale, shrink="bayes")
    off = got[np.triu_indices(5, 1)]
    assert np.abs(off).mean() < 0.1


def test_nearest_correlation_is_a_correlation_matrix():
    r = np.array([[1.0, 0.9, -0.9], [0.9, 1.0, 0.9], [-0.9, 0.9, 1.0]])  # not PSD
    c = nearest_correlation(r)
    np.testing.assert_allclose(np.diag(c), 1.0)
    np.testing.assert_allclose(c, c.T)
    assert np.linalg.eigvalsh(c).min() > 0


def test_splits_at_the_released_median():
    plans = column_plans(ENC)
    masses = (
        np.array([0.1, 0.2, 0.3, 0.4]),  # x: CDF 0.1, 0.3, 0.6 -> edge 3/4? no: 0.6 nearest
        np.array([0.5, 0.5]),
        np.array([0.2, 0.2, 0.6]),  # c: boundaries 0, 1/2, 3/4, 1: CDF 0.2, 0.4 -> after b
        np.array([1.0, 0.0]),  # k: all below: takes no part
    )
    m = TableMarginals(plans, masses, (0.0, 0.2, 0.0, 0.0), 100)
    sp = copula_splits(m)
    assert sp.columns == (0, 1, 2)
    assert sp.thresholds == (0.75, 0.5, 0.75)
    assert sp.below == pytest.approx((0.6, 0.5, 0.4))
    assert sp.present == pytest.approx((1.0, 0.8, 1.0))
    assert sp.missing_axes[1] == plans[1].axes[plans[1].missing_axis]


# ------------------------------------------------------------------ the join


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 60),
    seed=st.integers(0, 2**16),
    r=st.floats(-0.95, 0.95),
)
def test_copula_join_stays_in_the_schema(n, seed, r):
    plans = column_plans(ENC)
    rng = np.random.default_rng(seed)
    masses = tuple(rng.dirichlet(np.full(k, 0.5)) for k in (8, 8, 3, 21))
    m = TableMarginals(plans, masses, (0.0, 0.3, 0.0, 0.0), n)
    axes = tuple(p.value_axis for p in plans)
    corr = nearest_correlation(np.where(np.eye(4) > 0, 1.0, r))
    pts = independent_join(m, ENC, n, RandomSource(seed), axes, corr)
    assert pts.shape == (n, ENC.dimension)
    assert np.all((pts >= 0) & (pts <= 1))
    # the category axis: category midpoints only, at the calibration's target counts
    b = category_boundaries(3)
    cat = pts[:, plans[2].value_axis]
    mids = (b[:-1] + b[1:]) / 2
    assert np.all(np.isin(cat, mids))
    codes = np.searchsorted(mids, cat)
    assert np.bincount(codes, minlength=3).tolist() == largest_remainder(masses[2], n).tolist()
    # the is-missing axis: 1/4 or 3/4, the missing rows at the target, their value at 1/2
    ma = pts[:, plans[1].axes[plans[1].missing_axis]]
    assert np.all(np.isin(ma, (0.25, 0.75)))
    miss = ma == 0.75
    assert int(miss.sum()) == int(largest_remainder(np.array([0.7, 0.3]), n)[1])
    assert np.all(pts[miss, plans[1].value_axis] == 0.5)
    # numeric values never in a cell the release left empty
    for c, leaves in ((0, 8), (3, 21)):
        v = pts[:, plans[c].value_axis] if c != 1 else pts[~miss, plans[c].value_axis]
        cell = np.clip(np.floor(v * leaves).astype(int), 0, leaves - 1)
        assert np.all(masses[c][cell] > 0)


def test_copula_release_keeps_the_marginals_and_adds_correlation():
    """Same seed: the copula's numeric columns are released from the same kind of first look;
    the correlation of x and y, 0.8 in the data, is positive in the copula release and near
    0 in the independent one."""
    df = _frame(3000)
    with reproducible(1), diagnostics() as rec:
        out, rep = synthesize(df, 4.0, schema=SCHEMA, structured=StructuredOptions(joint="copula"))
    assert rep.epsilon <= 4.0
    info = {k: v for r in rec for k, v in r.items()}
    assert info["joint_kind"] == "copula"
    assert info["copula_pairs"] == 3
    with reproducible(1):
        ind, _ = synthesize(df, 4.0, schema=SCHEMA, structured=StructuredOptions(joint="never"))
    c_cop = out[["x", "y"]].astype(float).corr().iloc[0, 1]
    c_ind = ind[["x", "y"]].astype(float).corr().iloc[0, 1]
    assert c_cop > 0.4
    assert abs(c_ind) < 0.1


def test_fewer_than_two_copula_columns_release_independent_columns_at_the_whole_budget():
    """One numeric column: nothing to count; the first look gets the whole budget, as with
    joint='never' (the same map), and the options are checked."""
    schema = Schema(
        {"x": FloatColumn(bounds=(0.0, 1.0)), "c": CategoricalColumn(categories=("a", "b"))}
    )
    enc = TableEncoding(schema)
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=50, T=float, nan=False)
    cop = make_structured_synthesis(
        dom, dp.change_one_distance(), enc, 1.0, StructuredOptions(joint="copula")
    )
    never = make_structured_synthesis(
        dom, dp.change_one_distance(), enc, 1.0, StructuredOptions(joint="never")
    )
    assert cop.map(1) == never.map(1)
    with pytest.raises(ValueError, match="copula_columns"):
        StructuredOptions(copula_columns="some")
