"""Pruned-PMM and PMM as single certified OpenDP Measurements."""

from __future__ import annotations

import math
from typing import Any

from opendp.mod import Domain, Measure, Measurement, Metric, assert_features

from opendp_wasserstein._compat import register, to_then
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.core.data import domain_allows_nan
from opendp_wasserstein.core.parameters import check_output_measure
from opendp_wasserstein.core.plan import PmmPlan, attach
from opendp_wasserstein.hierarchy.domain import DyadicCountsDomain
from opendp_wasserstein.hierarchy.least_squares import check_postprocessing
from opendp_wasserstein.hierarchy.placement import check_placement
from opendp_wasserstein.measurements._tree_noise import (
    check_output_size,
    make_pruned_tree_noise,
    make_tree_noise,
)
from opendp_wasserstein.postprocessing import make_full_consistency, make_synthesis
from opendp_wasserstein.transformations._dyadic_counts import make_dyadic_counts

__all__ = ["make_pruned_pmm", "then_pruned_pmm", "make_pmm", "then_pmm"]


def make_pruned_pmm(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any = None,
    placement: str = "center",
    output_size: int | None = None,
    output_measure: Measure | None = None,
    axes: Any = None,
    consistency: str = "paper",
    threshold: float | None = None,
) -> Measurement:
    r"""Construct Pruned-PMM at a fixed depth and schedule: a pure-DP (or zCDP) synthetic dataset.

    The chain ``make_dyadic_counts >> make_pruned_tree_laplace >> make_synthesis`` (Zare
    Moayedi et al. 2026, Algorithms 1-2): noisy child counts are drawn only below nodes with
    positive corrected mass, so at most ``1 + 2 m r`` nodes are visited.  The privacy map is the
    chain's: ``d_in * sum_{j>=1} 1/sigma_j`` for ``symmetric_distance`` on a sized domain (so
    ``map(2) == epsilon`` with ``paper_schedule(d, epsilon, depth, s)``), ``+ d_in / sigma_0``
    without a public size (unless ``sigma_0 = inf`` and ``output_size`` is given), and
    ``2 d_in sum_{j>=1} 1/sigma_j`` under ``change_one_distance``.

    The release is the synthetic array only: ``m`` rows (``m = n`` when the size is public),
    each at the centre of, or uniform in, a leaf cell with positive mass, in random order.

    **zCDP.**  With ``output_measure=dp.zero_concentrated_divergence()`` the noise is discrete
    Gaussian, ``N_Z(0, sigma_j^2)`` (``make_dyadic_counts(..., output_metric="l2sq") >>
    make_pruned_tree_gaussian``), and the map is ``m^2 sum_{j>=1} 1/sigma_j^2`` for ``m``
    replacements (``m = d_in // 2`` under ``symmetric_distance``, ``d_in`` under
    ``change_one_distance``; ``map(2) == rho`` with
    :func:`~opendp_wasserstein.schedules.zcdp.zcdp_schedule`), ``d_in^2 sum_{j>=0}
    1/sigma_j^2 / 2`` without a public size.  Approximate DP follows from OpenDP's
    ``dp.c.make_zCDP_to_approxDP`` and ``dp.c.make_fix_delta``.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * He, Vershynin, Zhu, *Algorithmically Effective Differentially Private Synthetic Data*, COLT
      2023

    **Proof Definition:** :doc:`/proofs/pmm`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param depth: the depth ``r >= 1``
    :param scales: ``sigma_0 .. sigma_r``, each in ``[1e-100, 2^52]`` (``sigma_0 = inf``: the root
        is not released)
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped; default unit cube
    :param placement: ``"center"`` (default) or ``"uniform"`` within each leaf cell
    :param output_size: without a public size, the number of rows to release when it is public
        otherwise (e.g. a DP count released before; needs ``sigma_0 = inf``)
    :param output_measure: ``dp.max_divergence()`` (discrete Laplace noise, pure DP; the
        default, ``None``) or ``dp.zero_concentrated_divergence()`` (discrete Gaussian noise, zCDP)
    :param axes: the public split order, one coordinate per level (default cyclic); the privacy
        map does not depend on it (:doc:`/proofs/split_order`)
    :param consistency: how the noisy counts become leaf masses (post-processing, the map is
        unchanged): ``"paper"`` (Algorithm 2, the default) or ``"least_squares"`` (the same
        traversal, then generalised least squares over all visited levels,
        :mod:`opendp_wasserstein.hierarchy.least_squares`)
    :param threshold: suppression of noise-made mass in empty cells (post-processing; default
        None: 0 for ``"paper"``, 3 standard errors for ``"least_squares"``): see
        :func:`~opendp_wasserstein.measurements.make_pruned_tree_laplace`
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_pruned_pmm
    >>> from opendp_wasserstein.schedules.pure import paper_schedule
    >>> dp.enable_features("contrib")
    >>> meas = make_pruned_pmm(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.symmetric_distance(),
    ...     depth=8, scales=paper_schedule(d=2, epsilon=1.0, depth=8))
    >>> meas.map(2)
    1.0
    >>> meas(np.random.default_rng(0).uniform(size=(500, 2))).shape
    (500, 2)

    In OpenDP's Context API (every constructor of the package is registered):

    >>> ctx = dp.Context.compositor(
    ...     data=np.random.default_rng(1).uniform(size=(500, 2)),
    ...     privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(epsilon=1.0),
    ...     split_evenly_over=1, domain=dp.numpy.array2_domain(num_columns=2, T=float))
    >>> query = ctx.query().pruned_pmm(depth=6, scales=[float("inf")] + [12.0] * 6, output_size=500)
    >>> query.release().shape
    (500, 2)

    In zCDP, with the zCDP-optimal schedule:

    >>> from opendp_wasserstein.schedules.zcdp import zcdp_schedule
    >>> meas = make_pruned_pmm(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.symmetric_distance(),
    ...     depth=8, scales=zcdp_schedule(d=2, rho=0.5, depth=8),
    ...     output_measure=dp.zero_concentrated_divergence())
    >>> meas.map(2)
    0.5
    """
    assert_features("contrib")
    check_placement(placement)
    noise = check_output_measure(output_measure)
    consistency, threshold = check_postprocessing(consistency, threshold)
    t_counts = make_dyadic_counts(
        input_domain,
        input_metric,
        depth,
        scales,
        bounds,
        "l1" if noise == "laplace" else "l2sq",
        axes,
    )
    dom = t_counts.output_domain
    m_noise = make_pruned_tree_noise(
        dom, t_counts.output_metric, noise, output_size, consistency, threshold
    )
    meas = t_counts >> m_noise >> make_synthesis(dom, placement)
    plan = _plan(
        input_domain, t_counts, placement, output_size, True, noise, consistency, threshold
    )
    return attach(meas, plan)


def make_pmm(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any = None,
    placement: str = "center",
    output_size: int | None = None,
    output_measure: Measure | None = None,
    axes: Any = None,
) -> Measurement:
    r"""Construct the full-tree PMM of He, Vershynin and Zhu (COLT 2023), the baseline.

    The chain ``make_dyadic_counts >> make_tree_laplace >> make_full_consistency >>
    make_synthesis``: every one of the ``2^(depth+1) - 1`` nodes is noised and split comparably,
    so cost grows as ``2^depth`` (a depth whose tree would not fit in memory is refused up front,
    see :mod:`opendp_wasserstein.core.limits`).  Same parameters, privacy map and release as
    :func:`make_pruned_pmm`, in pure DP or (``output_measure=dp.zero_concentrated_divergence()``,
    discrete Gaussian noise, ``make_tree_gaussian``) in zCDP.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * He, Vershynin, Zhu, *Algorithmically Effective Differentially Private Synthetic Data*, COLT
      2023

    **Proof Definition:** :doc:`/proofs/pmm`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param depth: the depth ``r >= 1``
    :param scales: ``sigma_0 .. sigma_r``, each in ``[1e-100, 2^52]`` (``sigma_0 = inf`` only with
        a public size or ``output_size``)
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped; default unit cube
    :param placement: ``"center"`` (default) or ``"uniform"`` within each leaf cell
    :param output_size: without a public size, the number of rows to release when it is public
        otherwise (e.g. a DP count released before; needs ``sigma_0 = inf``)
    :param output_measure: ``dp.max_divergence()`` (discrete Laplace; the default, ``None``) or
        ``dp.zero_concentrated_divergence()`` (discrete Gaussian)
    :param axes: the public split order (default cyclic)
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_pmm
    >>> from opendp_wasserstein.schedules.pure import paper_schedule
    >>> dp.enable_features("contrib")
    >>> meas = make_pmm(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.change_one_distance(),
    ...     depth=6, scales=paper_schedule(d=2, epsilon=1.0, depth=6))
    >>> meas.map(1)
    1.0
    """
    assert_features("contrib")
    check_placement(placement)
    noise = check_output_measure(output_measure)
    t_counts = make_dyadic_counts(
        input_domain,
        input_metric,
        depth,
        scales,
        bounds,
        "l1" if noise == "laplace" else "l2sq",
        axes,
    )
    dom = t_counts.output_domain
    check_output_size(output_size, dom.descriptor, t_counts.output_metric.descriptor.scales)
    m_noise = make_tree_noise(dom, t_counts.output_metric, noise)
    meas = (
        t_counts
        >> m_noise
        >> make_full_consistency(dom, output_size)
        >> make_synthesis(dom, placement)
    )
    return attach(meas, _plan(input_domain, t_counts, placement, output_size, False, noise))


def _plan(
    input_domain: Domain,
    t_counts: Any,
    placement: str,
    output_size: int | None,
    pruned: bool,
    noise: str,
    consistency: str = "paper",
    threshold: float = 0.0,
) -> PmmPlan:
    """The distributed plan of the chain (:mod:`opendp_wasserstein.distributed`)."""
    dom = t_counts.output_domain.descriptor
    scales = t_counts.output_metric.descriptor.scales
    assert isinstance(dom, DyadicCountsDomain)
    root_size = dom.size if output_size is None else int(output_size)
    return PmmPlan(
        pruned=pruned,
        d=dom.num_columns,
        size=dom.size,
        nan=domain_allows_nan(input_domain),
        box=Box(dom.lower, dom.upper),
        depth=dom.depth,
        scales=tuple(scales),
        placement=placement,
        root_size=root_size,
        release_root=dom.size is None and not math.isinf(scales[0]),
        axes=dom.axes,
        distribution=noise,
        consistency=consistency,
        threshold=threshold,
    )


then_pruned_pmm = to_then(make_pruned_pmm)
then_pmm = to_then(make_pmm)
register(make_pruned_pmm)
register(make_pmm)
