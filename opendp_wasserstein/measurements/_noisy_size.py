"""A DP estimate of the number of rows, then a mechanism built for it: sequential composition.

When ``n`` is private, nothing that shapes a release (a depth, a candidate set, a score's
normaliser, the number of rows) may be computed from ``n``.  :func:`make_noisy_size_then`
releases ``n_hat = n + LapZ(1 / epsilon_size)`` with OpenDP's own integer ``make_laplace``
first, and only then builds the mechanism that needs a size, from ``n_hat`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_data_domain, domain_allows_nan
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.parameters import SCALE_MAX, ScaleLimitError, check_epsilon
from opendp_wasserstein.core.plan import NoisySizePlan, attach
from opendp_wasserstein.noise._source import SIZE_STREAM, as_random_source
from opendp_wasserstein.noise.samplers import sample_discrete_laplace
from opendp_wasserstein.transformations._row_count import make_row_count

__all__ = ["make_noisy_size_then", "then_noisy_size_then"]


def make_noisy_size_then(
    input_domain: Domain,
    input_metric: Metric,
    epsilon_size: float,
    build: Callable[[int], Measurement],
    bound: Callable[[int], float],
) -> Measurement:
    r"""Construct ``x -> build(n_hat)(x)`` with ``n_hat = max(1, n + LapZ(1/epsilon_size))``.

    The count is OpenDP's: :func:`~opendp_wasserstein.transformations.make_row_count`
    ``>> dp.m.then_laplace(1/epsilon_size)``. ``build`` makes, from the public ``n_hat`` alone, a
    Measurement on the same input domain and metric (e.g. Pruned-PMM at the depth ``n_hat`` calls
    for, releasing ``n_hat`` rows); ``bound(d_in)`` is a map that every such Measurement satisfies
    whatever ``n_hat`` is.

    **Privacy map** (sequential composition of an adaptively chosen second mechanism, pure DP):
    ``count.map(d_in) + bound(d_in)``, over the rationals, rounded up.  ``bound`` is the
    caller's obligation; at release the built Measurement's own map is checked against it
    (``check(d_in, bound(d_in))`` for ``d_in = 1, 2``), so a wrong ``bound`` fails loudly, and
    the failure depends only on ``n_hat`` (which the release reveals anyway).

    **Release**: whatever ``build(n_hat)`` releases (``n_hat`` itself is not returned; a
    synthetic dataset of ``n_hat`` rows reveals it, which the map already pays for).

    Required features: ``contrib``

    **Proof Definition:** :doc:`/proofs/noisy_size`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, T=float)`` without ``size``
    :param input_metric: ``dp.symmetric_distance()``
    :param epsilon_size: the budget of the count (one added or removed record)
    :param build: ``n_hat -> Measurement`` on ``input_domain``, ``input_metric``, ``max_divergence``
    :param bound: ``d_in -> epsilon`` bounding the map of every ``build(n_hat)``
    :return: a Measurement

    :example:

    >>> import math, numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_noisy_size_then, make_pruned_pmm
    >>> from opendp_wasserstein.schedules.pure import ambient_depth, paper_schedule
    >>> dp.enable_features("contrib")
    >>> dom, met = dp.numpy.array2_domain(num_columns=2, T=float), dp.symmetric_distance()
    >>> def build(n_hat):
    ...     depth = ambient_depth(0.9, n_hat)
    ...     scales = (math.inf, *paper_schedule(2, 0.9, depth)[1:])
    ...     return make_pruned_pmm(dom, met, depth, scales, output_size=n_hat)
    >>> meas = make_noisy_size_then(dom, met, 0.1, build, bound=lambda d_in: d_in * 0.45)
    >>> meas.map(1)   # 0.1 for the count + 0.45 for the levels
    0.55
    >>> meas(np.random.default_rng(0).uniform(size=(300, 2))).shape[1]
    2
    """
    assert_features("contrib")
    eps = check_epsilon(epsilon_size, "epsilon_size")
    scale = round_up(1 / Fraction(eps))
    if scale > SCALE_MAX:  # as for every sampler of the package
        raise ScaleLimitError(
            "epsilon_size is too small: the count's Laplace scale 1/epsilon_size would pass 2^52"
        )
    rows = make_row_count(input_domain, input_metric)  # validates the data as every release does
    count = rows >> dp.m.then_laplace(scale=scale)
    if not callable(build) or not callable(bound):
        raise TypeError("build and bound must be callables")

    laplace = dp.m.make_laplace(rows.output_domain, rows.output_metric, scale=scale)
    count_scale = scale

    def noisy_size(n: int) -> int:
        """``n_hat`` from the exact count ``n`` (``count = rows >> laplace``: the count's noise
        is ``laplace`` applied to ``rows(x)``; a distributed run sums ``n`` over its parts)."""
        src = as_random_source()
        if src.secure:  # OpenDP's own Laplace and CSPRNG
            return max(1, int(laplace(int(n))))
        # reproducible (NOT private) runs: the same LapZ law, drawn from the seeded stream
        z = sample_discrete_laplace(np.array([count_scale]), src.derive(SIZE_STREAM), "fast")
        return max(1, int(n) + int(z[0]))

    def inner(n_hat: int) -> Measurement:
        """The mechanism for ``n_hat``, checked against the declared bound (raises otherwise:
        a function of ``n_hat`` only)."""
        runtime.record({"size_estimate": n_hat})
        built = build(n_hat)
        for d_in in (1, 2):
            if not built.check(d_in, bound(d_in)):
                raise RuntimeError(
                    "the mechanism built from the noisy size exceeds its declared bound"
                )
        return built

    def function(x: Any) -> Any:
        return inner(noisy_size(int(rows(x))))(x)

    def privacy_map(d_in: int) -> float:
        return round_up(Fraction(count.map(d_in)) + Fraction(bound(d_in)))

    meas = make_measurement(input_domain, input_metric, max_divergence(), function, privacy_map)
    d, _ = check_data_domain(input_domain)
    return attach(meas, NoisySizePlan(d, domain_allows_nan(input_domain), noisy_size, inner))


then_noisy_size_then = to_then(make_noisy_size_then)
register(make_noisy_size_then)
