"""Pruned-PMM and PMM as single certified OpenDP Measurements."""

from __future__ import annotations

from typing import Any

from opendp.extras._utilities import to_then
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein.limits import check_memory
from opendp_wasserstein.measurements._tree_laplace import make_tree_laplace
from opendp_wasserstein.postprocessing import (
    make_full_consistency,
    make_pruned_consistency,
    make_synthesis,
)
from opendp_wasserstein.synthesis import check_placement
from opendp_wasserstein.transformations._dyadic_counts import make_dyadic_counts

__all__ = ["make_pruned_pmm", "then_pruned_pmm", "make_pmm", "then_pmm"]


def _pipeline(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any,
    placement: str,
    pruned: bool,
    backend: str,
    seed: int | None,
    diagnostics: bool,
) -> Measurement:
    assert_features("contrib")
    check_placement(placement)
    t_counts = make_dyadic_counts(input_domain, input_metric, depth, scales, bounds)
    if not pruned:
        d = t_counts.output_domain.descriptor.num_columns
        # every level is held at once while it is split: ~ (d + 5) int64 per node, plus temporaries
        check_memory(
            2.0 ** (depth + 1) * 8 * (d + 5) * 2,
            f"full PMM at depth {depth} ({2 ** (depth + 1) - 1:,} nodes)",
            "use make_pruned_pmm, which only expands nodes with positive mass, or a smaller depth",
        )
    counts_domain = t_counts.output_domain
    m_noise = make_tree_laplace(counts_domain, t_counts.output_metric, backend=backend, seed=seed)
    correction = (
        make_pruned_consistency(counts_domain, seed) if pruned else make_full_consistency(counts_domain)
    )
    return t_counts >> m_noise >> correction >> make_synthesis(counts_domain, placement, seed, diagnostics)


def make_pruned_pmm(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any = None,
    placement: str = "center",
    backend: str = "fast",
    seed: int | None = None,
    diagnostics: bool = False,
) -> Measurement:
    r"""Construct Pruned-PMM at a fixed depth and schedule: a pure-DP synthetic dataset.

    The chain ``make_dyadic_counts >> make_tree_laplace >> make_pruned_consistency >>
    make_synthesis`` (Zare Moayedi et al. 2026, Algorithms 1-2): noisy child counts are drawn
    only below nodes with positive corrected mass, so at most ``1 + 2 m r`` nodes are visited.
    The privacy map is the chain's: ``d_in * sum_{j>=1} 1/sigma_j`` for ``symmetric_distance``
    on a sized domain (so ``map(2) == epsilon`` with ``paper_schedule(d, epsilon, depth, s)``),
    ``+ d_in / sigma_0`` without a public size, and ``2 d_in sum_{j>=1} 1/sigma_j`` under
    ``change_one_distance``.

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param depth: the depth ``r >= 1``
    :param scales: ``sigma_0 .. sigma_r``
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped; default unit cube
    :param placement: ``"center"`` (default) or ``"uniform"`` within each leaf cell
    :param backend: discrete Laplace sampler, ``"fast"`` or ``"opendp"``
    :param seed: **not private** -- reproducible runs for tests and figures only
    :param diagnostics: release ``(points, info)``; ``info`` (public) has visited nodes etc.
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_pruned_pmm
    >>> from opendp_wasserstein.schedules import paper_schedule
    >>> dp.enable_features("contrib")
    >>> meas = make_pruned_pmm(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.symmetric_distance(),
    ...     depth=8, scales=paper_schedule(d=2, epsilon=1.0, depth=8))
    >>> meas.map(2)
    1.0
    >>> meas(np.random.default_rng(0).uniform(size=(500, 2))).shape
    (500, 2)
    """
    return _pipeline(input_domain, input_metric, depth, scales, bounds, placement, True, backend, seed, diagnostics)


def make_pmm(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any = None,
    placement: str = "center",
    backend: str = "fast",
    seed: int | None = None,
    diagnostics: bool = False,
) -> Measurement:
    r"""Construct the full-tree PMM of He, Vershynin and Zhu (COLT 2023), the baseline.

    Same parameters and privacy map as :func:`make_pruned_pmm`; every one of the
    ``2^(depth+1) - 1`` nodes is drawn and split comparably, so cost grows as ``2^depth``
    (a depth whose tree would not fit in memory is refused up front, see
    :mod:`opendp_wasserstein.limits`).

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param depth: the depth ``r >= 1``
    :param scales: ``sigma_0 .. sigma_r``
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped; default unit cube
    :param placement: ``"center"`` (default) or ``"uniform"`` within each leaf cell
    :param backend: discrete Laplace sampler, ``"fast"`` or ``"opendp"``
    :param seed: **not private** -- reproducible runs for tests and figures only
    :param diagnostics: release ``(points, info)``; ``info`` (public) has visited nodes etc.
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_pmm
    >>> from opendp_wasserstein.schedules import paper_schedule
    >>> dp.enable_features("contrib")
    >>> meas = make_pmm(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.change_one_distance(),
    ...     depth=6, scales=paper_schedule(d=2, epsilon=1.0, depth=6))
    >>> meas.map(1)
    1.0
    """
    return _pipeline(input_domain, input_metric, depth, scales, bounds, placement, False, backend, seed, diagnostics)


then_pruned_pmm = to_then(make_pruned_pmm)
then_pmm = to_then(make_pmm)
