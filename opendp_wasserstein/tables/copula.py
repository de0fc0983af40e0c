r"""A DP Gaussian copula from one noisy count per column pair (small tables; pure DP or zCDP).

In the spirit of DPCopula (Li, Xiong and Jiang, *DPCopula: Differentially Private Data
Synthesis for Multi-Dimensional Data via Copulas*, EDBT 2014): the 1-D marginals come from the
first look (:func:`~opendp_wasserstein.tables.marginals.make_table_marginals`), the dependence
from a Gaussian copula whose correlations are estimated from noisy statistics of the pairs.
DPCopula estimates each pair's Kendall tau; here every pair costs one count:

1. **Splits** (post-processing of the first look, :func:`copula_splits`): every column ``c``
   gets a binary split at the cell edge (numeric) or category boundary (categorical, the
   categories in their order along the axis) whose released CDF is nearest ``1/2``, and
   ``a_c``, the released mass of its present values below the split.  A column whose split
   leaves all its released mass on one side takes no part.
2. **Counts** (:func:`make_split_counts`, noised by OpenDP's discrete Laplace): for each pair
   ``(i, j)`` of the ``k'`` taking part, ``N_ij``, the rows present and below the split in
   both.  One row is in at most every count once: a replacement moves every count by at most
   1, so the vector by at most ``P = k' (k' - 1) / 2`` in ``l1`` (stability ``P m`` for ``m``
   replacements: ``d_in`` under ``change_one_distance``, ``d_in // 2`` under
   ``symmetric_distance`` on the sized domain, ``d_in`` added or removed rows without a size).
3. **Correlations** (post-processing, :func:`latent_correlations`): the expected count of pair
   ``(i, j)`` at latent correlation ``r`` is ``n (1 - m_i)(1 - m_j) Phi_2(Phi^-1(a_i),
   Phi^-1(a_j); r)`` (``m`` the released missing shares, ``n`` public; ``Phi_2`` by Plackett's
   identity, :func:`bivariate_normal_cdf`); each pair's ``r`` is its posterior median on a grid
   under the prior ``w delta_0 + (1 - w) Uniform(-0.99, 0.99)``, the noisy count's likelihood
   Laplace at the public scale, ``w`` fitted to all pairs by maximum marginal likelihood
   (empirical Bayes: weak, noisy pairs go to 0, strong ones keep their size); the matrix is
   then repaired to a correlation matrix by eigenvalue clipping (:func:`nearest_correlation`).
4. **Join** (:func:`correlate_axes` inside
   :func:`~opendp_wasserstein.tables.pipeline.independent_join`): the scrambled Halton points'
   value axes of the columns taking part made dependent through ``Phi(Phi^-1(u) L^T)``
   (``L`` the Cholesky factor), then the same layout and calibration: every column is released
   exactly as by the independent join (its law given the first look unchanged).

With ``delta`` (zCDP) the counts are in ``l2`` (a replacement moves each by at most 1: ``l2``
sensitivity ``sqrt(P)``, rounded up) under OpenDP's discrete Gaussian, and the posterior
median's likelihood is normal (the noise's variance plus the sampling variance).

``joint="auto"`` chooses it under pure DP from
:data:`~opendp_wasserstein.tables.pipeline.COPULA_MIN_NEPS` to
:data:`~opendp_wasserstein.tables.pipeline.PAIRS_MIN_NEPS` per column, with ``delta`` from
:data:`~opendp_wasserstein.tables.pipeline.COPULA_MIN_NEPS_ZCDP` to
:data:`~opendp_wasserstein.tables.pipeline.PAIRS_MIN_NEPS_ZCDP` (independent columns
below): measured on the small tables it wins correlations where the numeric columns are
strongly dependent, and where the budget it takes from the first look costs 1-way or 2-way TVD
the release stays better than independent noisy marginals (docs/tables_compare.rst, "A Gaussian
copula of pair counts").  The Dask release counts the pairs block by block (per-block sums of
:func:`pair_counts`) and noises the sum once on the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, Transformation, assert_features

from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    validate_data,
    whole_replacements,
)
from opendp_wasserstein.core.exact import round_up, sqrt_up
from opendp_wasserstein.core.optional import lazy_module
from opendp_wasserstein.tables.encoding import category_boundaries
from opendp_wasserstein.tables.marginals import (
    ColumnPlan,
    TableMarginals,
    check_noise,
    make_count_vector,
    seeded_gaussian,
    seeded_laplace,
)

if TYPE_CHECKING:
    from scipy import special
else:
    special = lazy_module("scipy.special")

__all__ = [
    "CopulaSplits",
    "copula_splits",
    "split_indicators",
    "pair_counts",
    "make_split_counts",
    "make_copula_counts",
    "copula_scale",
    "latent_correlations",
    "nearest_correlation",
    "bivariate_normal_cdf",
    "correlate_axes",
]

#: the seeded stream's tag of the counts' noise in reproducible runs (apart from the first
#: look's tags, one per level)
COPULA_NOISE_TAG = 1 << 16

#: the largest latent correlation in absolute value
MAX_CORRELATION = 0.99

#: the smallest eigenvalue kept by :func:`nearest_correlation`
MIN_EIGENVALUE = 1e-3

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)


@dataclass(frozen=True)
class CopulaSplits:
    """The splits of the columns taking part (public: post-processing of the first look).

    :param columns: the columns taking part (indices into the plans)
    :param axes: the encoded axis each is split on (its value or category axis)
    :param thresholds: the split on that axis: below is ``x < threshold``
    :param missing_axes: the is-missing axis of each (``-1``: not nullable)
    :param below: ``a_c``, the released mass of the present values below the split
    :param present: ``1 - m_c``, the released share of present rows
    """

    columns: tuple[int, ...]
    axes: tuple[int, ...]
    thresholds: tuple[float, ...]
    missing_axes: tuple[int, ...]
    below: tuple[float, ...]
    present: tuple[float, ...]

    @property
    def pairs(self) -> int:
        """``P = k' (k' - 1) / 2``."""
        k = len(self.columns)
        return k * (k - 1) // 2


def _split(plan: ColumnPlan, masses: np.ndarray) -> tuple[float, float] | None:
    """``(threshold, a)`` of one column, or ``None`` when no edge splits its released mass."""
    m = np.clip(np.asarray(masses, dtype=np.float64), 0.0, None)
    if len(m) < 2 or not m.sum() > 0:
        return None
    f = np.cumsum(m / m.sum())[:-1]  # the CDF at the inner edges 1 .. L-1
    i = int(np.argmin(np.abs(f - 0.5)))
    a = float(f[i])
    if not 1e-3 < a < 1.0 - 1e-3:
        return None
    if plan.kind == "category":
        return float(category_boundaries(plan.cells)[i + 1]), a
    return (i + 1) / len(m), a


def copula_splits(marginals: TableMarginals, columns: Sequence[int] | None = None) -> CopulaSplits:
    """Every column's split at its released median (module docstring, step 1).

    :param marginals: the first look (a DP release)
    :param columns: the columns that may take part (default all; a public rule)
    """
    cols, axes, thr, mis, below, present = [], [], [], [], [], []
    allowed = range(len(marginals.plans)) if columns is None else columns
    for c in allowed:
        p = marginals.plans[c]
        s = _split(p, marginals.masses[c])
        if s is None:
            continue
        cols.append(int(c))
        axes.append(p.value_axis)
        thr.append(s[0])
        mis.append(-1 if p.missing_axis is None else p.axes[p.missing_axis])
        below.append(s[1])
        present.append(float(max(1.0 - marginals.missing[c], 1e-6)))
    return CopulaSplits(
        tuple(cols), tuple(axes), tuple(thr), tuple(mis), tuple(below), tuple(present)
    )


def split_indicators(x: np.ndarray, splits: CopulaSplits) -> np.ndarray:
    """``(n, k')`` booleans: row present and below the split in each column taking part."""
    ax = np.asarray(splits.axes, dtype=np.int64)
    b = x[:, ax] < np.asarray(splits.thresholds)[None, :]
    ma = np.asarray(splits.missing_axes, dtype=np.int64)
    has = ma >= 0
    if has.any():
        b[:, has] &= x[:, ma[has]] < 0.5
    return b  # type: ignore[no-any-return]


def pair_counts(x: np.ndarray, splits: CopulaSplits) -> np.ndarray:
    """The ``P`` counts ``N_ij`` (pairs ``i < j`` in row-major order of the upper triangle)."""
    b = split_indicators(x, splits).astype(np.int64)
    g = b.T @ b
    iu = np.triu_indices(len(splits.columns), 1)
    return g[iu]  # type: ignore[no-any-return]


def make_split_counts(
    input_domain: Domain, input_metric: Metric, splits: CopulaSplits, output_metric: str = "l1"
) -> Transformation:
    r"""The pair counts of :func:`pair_counts`: a Transformation from the encoded points to an
    ``i64`` vector of ``P`` counts in ``l1_distance``.  A row adds at most 1 to every count: an
    added or removed row moves the vector by at most ``P``, a replacement (remove one, add one)
    by at most ``P`` too (each count changes by -1, 0 or 1).  Stability ``P m``, ``m`` the
    replacements ``d_in`` stands for (``d_in`` under ``change_one_distance``, ``d_in // 2``
    under ``symmetric_distance`` on a sized domain, whose data sets differ by as many additions
    as removals) or, without a size, ``P d_in``.

    ``output_metric="l2"`` (the discrete Gaussian of a release with ``delta``): the vector in
    ``l2_distance(T=float)``; every count moves by at most 1 per replacement, so the vector by
    at most ``sqrt(P)`` in ``l2``: stability ``sqrt(P m^2)`` rounded up (``m`` as above, the
    added or removed rows without a size).

    **Proof Definition:** :doc:`/proofs/table_copula`
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)
    if n is None:
        kind = "unsized"
    size = splits.pairs

    def function(x: np.ndarray) -> list[int]:
        x = validate_data(x, d, n, nan=False)
        return pair_counts(x, splits).tolist()  # type: ignore[no-any-return]

    def stability(d_in: Any) -> int:
        return size * whole_replacements(kind, d_in)

    def l2_stability(d_in: Any) -> float:
        m = whole_replacements(kind, d_in)
        return sqrt_up(size * m * m)

    return make_count_vector(
        input_domain, input_metric, size, function, stability, l2_stability, output_metric
    )


def copula_scale(pairs: int, epsilon: float, noise: str = "laplace") -> float:
    """The discrete Laplace scale of ``pairs`` counts at ``epsilon`` per replacement: ``P /
    epsilon`` rounded up (at least the scale of one pair); ``noise="gaussian"``: the discrete
    Gaussian's ``sigma`` at ``rho = epsilon`` per replacement, ``sqrt(P / (2 rho))`` rounded up
    (the map of ``sqrt(P)`` in ``l2`` is ``P / (2 sigma^2)``)."""
    if check_noise(noise) == "gaussian":
        return sqrt_up(Fraction(max(pairs, 1)) / (2 * Fraction(epsilon)))
    return round_up(Fraction(max(pairs, 1)) / Fraction(epsilon))


def make_copula_counts(
    input_domain: Domain,
    input_metric: Metric,
    splits: CopulaSplits,
    scale: float,
    noise: str = "laplace",
) -> Measurement:
    """:func:`make_split_counts` ``>>`` OpenDP's discrete Laplace at ``scale`` (seeded in
    reproducible runs, :func:`~opendp_wasserstein.tables.marginals.seeded_laplace`): map ``P m
    / scale`` for ``m`` replacements.  ``noise="gaussian"``: the counts in ``l2`` ``>>``
    OpenDP's discrete Gaussian at ``sigma = scale``
    (:func:`~opendp_wasserstein.tables.marginals.seeded_gaussian`), map ``(sqrt(P m^2) /
    sigma)^2 / 2`` in ``zero_concentrated_divergence``."""
    if check_noise(noise) == "gaussian":
        l2 = make_split_counts(input_domain, input_metric, splits, "l2")
        return seeded_gaussian(l2, scale, COPULA_NOISE_TAG)
    counts = make_split_counts(input_domain, input_metric, splits)
    return seeded_laplace(counts, scale, COPULA_NOISE_TAG)


def bivariate_normal_cdf(h: np.ndarray, k: np.ndarray, r: np.ndarray) -> np.ndarray:
    r"""``Phi_2(h, k; r)`` elementwise, by Plackett's identity ``Phi(h) Phi(k) + \int_0^r
    phi_2(h, k; t) dt`` (Gauss-Legendre, 48 nodes; ``|r| <= MAX_CORRELATION``).

    >>> float(np.round(bivariate_normal_cdf(np.array([0.0]), np.array([0.0]),
    ...                                     np.array([0.5]))[0], 6))
    0.333333
    """
    h, k, r = np.broadcast_arrays(
        np.asarray(h, np.float64), np.asarray(k, np.float64), np.asarray(r, np.float64)
    )
    t = (r[..., None] / 2.0) * (_GL_NODES + 1.0)  # nodes on [0, r]
    s = 1.0 - t * t
    dens = np.exp(
        -(h[..., None] ** 2 - 2 * t * h[..., None] * k[..., None] + k[..., None] ** 2) / (2 * s)
    ) / (2 * np.pi * np.sqrt(s))
    integral = (r / 2.0) * (dens * _GL_WEIGHTS).sum(axis=-1)
    return special.ndtr(h) * special.ndtr(k) + integral  # type: ignore[no-any-return]


def _solve_r(h: np.ndarray, k: np.ndarray, p: np.ndarray) -> np.ndarray:
    lo = np.full(h.shape, -MAX_CORRELATION)
    hi = np.full(h.shape, MAX_CORRELATION)
    for _ in range(40):  # bisection steps (public), vectorised over the pairs
        mid = (lo + hi) / 2
        up = bivariate_normal_cdf(h, k, mid) < p
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    return (lo + hi) / 2  # type: ignore[no-any-return]


def latent_correlations(
    noisy: np.ndarray,
    splits: CopulaSplits,
    n: int,
    scale: float,
    shrink: bool = True,
    noise: str = "laplace",
) -> np.ndarray:
    """The ``k' x k'`` latent correlation matrix from the noisy counts (post-processing of a
    DP release and public values; module docstring, step 3).

    :param noisy: the ``P`` noisy counts (:func:`make_copula_counts`)
    :param splits: the splits they were counted at
    :param n: the public number of rows
    :param scale: the counts' discrete Laplace scale (``noise="gaussian"``: the discrete
        Gaussian's ``sigma``; public)
    :param shrink: ``True`` (default): every pair's posterior median under the empirical Bayes
        prior of :func:`_posterior_median`; ``False``: the plug-in root of
        ``Phi_2(h_i, h_j; r) = p_ij`` (tests)
    :param noise: the counts' noise, ``"laplace"`` (default) or ``"gaussian"``: the
        likelihood of :func:`_posterior_median`
    :return: a correlation matrix (:func:`nearest_correlation`)
    """
    k = len(splits.columns)
    out = np.eye(k)
    if k < 2:
        return out
    iu = np.triu_indices(k, 1)
    a = np.asarray(splits.below)
    pres = np.asarray(splits.present)
    ai, aj = a[iu[0]], a[iu[1]]
    denom = n * pres[iu[0]] * pres[iu[1]]
    p = np.asarray(noisy, dtype=np.float64) / denom
    hi_, hj = special.ndtri(ai), special.ndtri(aj)
    if shrink:
        r = _posterior_median(
            np.asarray(noisy, dtype=np.float64), denom, ai, aj, float(scale), noise
        )
    else:
        lo = np.maximum(0.0, ai + aj - 1.0)
        top = np.minimum(ai, aj)
        p = np.clip(p, lo + 1e-9, top - 1e-9)
        r = _solve_r(hi_, hj, p)
    out[iu] = r
    out[(iu[1], iu[0])] = r
    return nearest_correlation(out)


#: the grid of latent correlations of :func:`_posterior_median`
R_GRID = np.linspace(-MAX_CORRELATION, MAX_CORRELATION, 199)

#: the candidate weights of the point mass at 0 in :func:`_posterior_median`'s prior
NULL_WEIGHTS = np.linspace(0.0, 1.0, 41)


def _posterior_median(
    noisy: np.ndarray,
    denom: np.ndarray,
    ai: np.ndarray,
    aj: np.ndarray,
    scale: float,
    noise: str = "laplace",
) -> np.ndarray:
    """Per pair, the posterior median of ``r`` under the prior ``w delta_0 + (1 - w)
    Uniform(-1, 1)`` (on :data:`R_GRID`), the noisy count's likelihood Laplace around the
    expected count ``denom Phi_2(h_i, h_j; r)`` (its scale widened by the sampling noise;
    ``noise="gaussian"``: normal, variance ``sigma^2`` plus the sampling variance), ``w`` chosen
    by maximum marginal likelihood over the pairs (empirical Bayes).  Post-processing of the
    noisy counts."""
    h, k = special.ndtri(ai)[:, None], special.ndtri(aj)[:, None]
    p = bivariate_normal_cdf(h, k, R_GRID[None, :])  # (P, G)
    mean = denom[:, None] * p
    if check_noise(noise) == "gaussian":
        var = scale**2 + denom[:, None] * p * (1 - p)
        log_lik = -((noisy[:, None] - mean) ** 2) / (2 * var) - np.log(var) / 2
    else:
        b = np.sqrt(scale**2 + denom[:, None] * p * (1 - p) / 2)
        log_lik = -np.abs(noisy[:, None] - mean) / b - np.log(2 * b)  # (P, G)
    # each pair's likelihood up to its own constant factor (no underflow): the posterior and
    # the argmax over w do not change
    lik = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
    g = len(R_GRID)
    zero = int(np.argmin(np.abs(R_GRID)))
    slab = lik.mean(axis=1)  # uniform prior over the grid
    spike = lik[:, zero]
    ll = np.log(
        np.maximum(
            NULL_WEIGHTS[None, :] * spike[:, None] + (1 - NULL_WEIGHTS[None, :]) * slab[:, None],
            1e-300,
        )
    ).sum(axis=0)
    w = float(NULL_WEIGHTS[int(np.argmax(ll))])
    post = (1 - w) * lik / g
    post[:, zero] += w * spike
    cdf = np.cumsum(post, axis=1)
    cdf /= cdf[:, -1:]
    idx = np.argmax(cdf >= 0.5, axis=1)
    return R_GRID[idx]  # type: ignore[no-any-return]


def nearest_correlation(r: np.ndarray) -> np.ndarray:
    """A correlation matrix near ``r`` (symmetric, unit diagonal): eigenvalues clipped at
    :data:`MIN_EIGENVALUE`, then rescaled to unit diagonal."""
    w, v = np.linalg.eigh((r + r.T) / 2)
    c = (v * np.maximum(w, MIN_EIGENVALUE)) @ v.T
    d = np.sqrt(np.diag(c))
    c = c / d[:, None] / d[None, :]
    np.fill_diagonal(c, 1.0)
    return c  # type: ignore[no-any-return]


def correlate_axes(u: np.ndarray, axes: Sequence[int], corr: np.ndarray) -> np.ndarray:
    """``u`` (uniforms) with its ``axes`` made dependent through the Gaussian copula of
    ``corr``: ``Phi(Phi^-1(u_axes) L^T)``, ``L`` the Cholesky factor (in place)."""
    if len(axes) < 2:
        return u
    ax = np.asarray(axes, dtype=np.int64)
    lower = np.linalg.cholesky(corr)
    z = special.ndtri(np.clip(u[:, ax], 1e-12, 1 - 1e-12))
    u[:, ax] = np.minimum(special.ndtr(z @ lower.T), np.nextafter(1.0, 0.0))
    return u
