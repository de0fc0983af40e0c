"""The nearest-neighbour histogram baseline, from OpenDP's own count and Laplace constructors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from opendp.mod import Domain, Function, Measure, Measurement, Metric, assert_features

from opendp_wasserstein._compat import new_function, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_data_domain, check_metric, domain_allows_nan
from opendp_wasserstein.core.parameters import (
    SCALE_MAX,
    ScaleLimitError,
    check_epsilon,
    check_output_measure,
)
from opendp_wasserstein.core.plan import HistogramPlan, attach
from opendp_wasserstein.noise._source import TIE_STREAM, as_random_source
from opendp_wasserstein.public_candidates.sets import (
    check_candidate_dims,
    check_candidates,
    check_ground_metric,
    check_multiset_size,
)
from opendp_wasserstein.transformations._nearest_candidate import make_nearest_candidate

__all__ = ["make_nn_histogram", "then_nn_histogram", "largest_remainder", "make_largest_remainder"]


def largest_remainder(noisy_counts: Any, m: int, tie_break: Any = None) -> np.ndarray:
    """Round clamped noisy counts to ``m`` points: ``z = max(y, 0)``, ``floor(m z_i / sum z)``
    each, and the remaining points one each to the largest remainders.  Equal remainders go to
    the lowest index by default, in a uniformly random order with ``tie_break`` (a
    :class:`~opendp_wasserstein.noise._source.RandomSource`; what the NN histogram releases, so that
    no candidate is favoured by its row number).  Exact integer arithmetic.  All-zero counts
    give the uniform allocation.

    :example:

    >>> from opendp_wasserstein.measurements import largest_remainder
    >>> largest_remainder([5, -2, 3, 1], 4).tolist()
    [2, 0, 1, 1]
    """
    m = check_multiset_size(m)
    z = np.maximum(np.asarray(noisy_counts, dtype=np.int64), 0)
    if z.ndim != 1 or z.size == 0:
        raise ValueError("noisy_counts must be a non-empty vector")
    if not z.any():
        z = np.ones_like(z)
    if int(z.max()) * z.size < 2**62:
        total = int(z.sum())
    else:  # the int64 sum could wrap: add exactly
        total = sum(int(v) for v in z.tolist())
    if m * int(z.max()) < 2**62 and total < 2**62:
        scaled = z * m
        base, rem = scaled // total, scaled % total
    else:  # pragma: no cover - only for astronomically large counts
        q = [divmod(int(v) * m, total) for v in z.tolist()]
        base = np.array([a for a, _ in q], dtype=np.int64)
        rem = np.array([float(b) for _, b in q])
    left = m - int(base.sum())
    coins = np.arange(z.size) if tie_break is None else tie_break.permutation(z.size)
    order = np.lexsort((coins, -rem))
    base[order[:left]] += 1
    return base.astype(np.int64)


def make_largest_remainder(m: int) -> Function:
    """:func:`largest_remainder` as a post-processing ``Function`` (a list of counts in), equal
    remainders in a uniformly random order (fresh coins at every call)."""
    m = check_multiset_size(m)
    return new_function(
        lambda counts: largest_remainder(counts, m, as_random_source().derive(TIE_STREAM))
    )


def _noise_scale(meas_of: Any, d_in: int, epsilon: float, start: float) -> float:
    """The smallest float scale >= ``start`` whose OpenDP map at ``d_in`` is at most epsilon
    (``start = 2/epsilon`` for Laplace, ``sqrt(2/rho)`` for Gaussian noise)."""
    scale = start
    for _ in range(64):
        if meas_of(scale).map(d_in) <= epsilon:
            return scale
        scale = math.nextafter(scale, math.inf)
    raise RuntimeError("could not calibrate the noise scale")  # pragma: no cover


def make_nn_histogram(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Any,
    m: int,
    epsilon: float,
    metric: str = "l2",
    output_measure: Measure | None = None,
) -> Measurement:
    r"""Construct the nearest-neighbour histogram baseline: noisy counts per candidate rounded
    to a size-``m`` multiset.

    The chain ``make_nearest_candidate`` (then ``dp.t.make_metric_unbounded`` under
    ``change_one_distance``) ``>> dp.t.make_count_by_categories`` (the ``k`` candidates, no null
    category, i64) ``>> dp.m.make_laplace`` (integer, scale ``2/epsilon``) ``>>``
    :func:`make_largest_remainder`.  It treats the candidates as unrelated bins.

    **Privacy** (OpenDP's own maps): one replacement changes the count vector by 2 in l1, so
    ``map(2) = epsilon`` under ``symmetric_distance`` and ``map(1) = epsilon`` under
    ``change_one_distance`` (the scale is the smallest float ``>= 2/epsilon`` for which
    OpenDP's rounded-up map is at most ``epsilon``).  Unsized domains cost nothing extra:
    the count vector's l1 sensitivity is ``d_in`` with or without a public size, and the
    rounding does not need ``n``.  The noise is OpenDP's CSPRNG (this baseline cannot be seeded).

    **zCDP.**  With ``output_measure=dp.zero_concentrated_divergence()``, ``epsilon`` is the zCDP
    budget ``rho`` of one replacement and the noise is OpenDP's integer ``make_gaussian`` on
    counts in ``L2Distance<i64>``.  OpenDP's count map gives a replacement (``d_in = 2``) an l2
    sensitivity of 2, not the exact ``sqrt(2)``, so the scale is ``sqrt(2/rho)`` (the smallest
    float at least that whose OpenDP map is at most ``rho``): this OpenDP-only baseline pays a
    factor 2 in ``rho`` against an exact accounting (which
    :func:`~opendp_wasserstein.measurements.make_tree_projection` has).

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*

    **Proof Definition:** :doc:`/proofs/nn_histogram`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=p, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param candidates: the public candidates ``(k, p)``: distinct, finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy loss of one replacement, in ``output_measure``: epsilon (pure DP)
        or rho (zCDP)
    :param metric: the ground metric ``"l1"``, ``"l2"`` (default) or ``"linf"``
    :param output_measure: ``dp.max_divergence()`` (OpenDP's ``make_laplace``; the default,
        ``None``) or ``dp.zero_concentrated_divergence()`` (OpenDP's ``make_gaussian``)
    :return: a Measurement releasing ``k`` int64 multiplicities summing to ``m``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_nn_histogram
    >>> dp.enable_features("contrib")
    >>> meas = make_nn_histogram(
    ...     dp.numpy.array2_domain(num_columns=2, size=200, T=float), dp.symmetric_distance(),
    ...     candidates=[[0.0, 0.0], [1.0, 1.0]], m=10, epsilon=1.0)
    >>> meas.map(2)
    1.0
    >>> int(meas(np.zeros((200, 2))).sum())
    10
    >>> make_nn_histogram(
    ...     dp.numpy.array2_domain(num_columns=2, size=200, T=float), dp.symmetric_distance(),
    ...     candidates=[[0.0, 0.0], [1.0, 1.0]], m=10, epsilon=0.5,
    ...     output_measure=dp.zero_concentrated_divergence()).map(2)
    0.5
    """
    assert_features("contrib")
    noise = check_output_measure(output_measure)
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)
    cand = check_candidates(candidates)
    check_candidate_dims(cand, d)
    m = check_multiset_size(m)
    eps = check_epsilon(epsilon)
    metric = check_ground_metric(metric)
    k = int(cand.shape[0])
    t_near = make_nearest_candidate(input_domain, input_metric, cand, metric)
    chain = t_near
    if kind == "change_one":
        chain = chain >> dp.t.then_metric_unbounded()
    norm = "L1Distance<i64>" if noise == "laplace" else "L2Distance<i64>"
    chain = chain >> dp.t.then_count_by_categories(
        categories=list(range(k)), null_category=False, MO=norm, TOA="i64"
    )
    d_in = 1 if kind == "change_one" else 2
    if noise == "laplace":
        scale = _noise_scale(lambda s: chain >> dp.m.then_laplace(scale=s), d_in, eps, 2.0 / eps)
        if (
            scale > SCALE_MAX
        ):  # as for every sampler of the package: noisy counts stay far below 2^63
            raise ScaleLimitError(
                "epsilon is too small: the Laplace scale 2/epsilon would pass 2^52"
            )
        m_noise = dp.m.make_laplace(chain.output_domain, chain.output_metric, scale=scale)
    else:
        start = math.sqrt(2.0 / eps)
        scale = _noise_scale(lambda s: chain >> dp.m.then_gaussian(scale=s), d_in, eps, start)
        if scale > SCALE_MAX:
            raise ScaleLimitError(
                "epsilon is too small: the Gaussian scale sqrt(2/epsilon) would pass 2^52 "
                "(epsilon is rho in zCDP)"
            )
        m_noise = dp.m.make_gaussian(chain.output_domain, chain.output_metric, scale=scale)
    m_rest = m_noise >> make_largest_remainder(m)
    meas = chain >> m_rest

    def finish(histogram: np.ndarray) -> Any:  # count_by_categories of pi(x) is its histogram
        return m_rest(np.asarray(histogram, dtype=np.int64).tolist())

    return attach(
        meas, HistogramPlan(d, n, domain_allows_nan(input_domain), t_near.nearest, finish)
    )


then_nn_histogram = to_then(make_nn_histogram)
register(make_nn_histogram)
