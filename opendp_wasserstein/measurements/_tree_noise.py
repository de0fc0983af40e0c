r"""Noise on the counts of the dyadic tree: one kernel, discrete Laplace and Gaussian shells.

The kernel adds independent noise to the count of every node of level ``j`` of the complete
dyadic tree, ``LapZ(sigma_j)`` into ``max_divergence`` on counts in ``l1(s)`` (Zare Moayedi et
al. 2026, Lemma in Appendix A.3) or ``N_Z(0, sigma_j^2)`` into
``zero_concentrated_divergence`` on counts in ``l2sq(s)`` (Canonne, Kamath, Steinke 2020), as
OpenDP's ``make_noise`` does for vectors; the public constructors are thin shells that fix the
distribution.  What they release:

- :func:`make_tree_laplace` / :func:`make_tree_gaussian`: the whole noisy tree, a
  :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree` (``2^(r+1) - 1`` noisy counts),
  for the full-tree PMM of He, Vershynin and Zhu;
- :func:`make_pruned_tree_laplace` / :func:`make_pruned_tree_gaussian`: only what Algorithms 1-2
  make of it, the consistent :class:`~opendp_wasserstein.hierarchy.traversal.LeafMasses`; noise
  is drawn only where the zero-respecting traversal looks, which has the law of drawing it
  everywhere first.

Neither release holds the exact counts, the records or their codes.  The privacy maps:
:func:`laplace_map` (``d_in -> d_in``) and :func:`zcdp_map` (``rho = d_in / 2``, exact, rounded
up); proofs in ``docs/proofs/tree_laplace.rst`` and ``docs/proofs/gaussian_counts.rst``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence, zero_concentrated_divergence
from opendp.mod import Domain, Measure, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.limits import check_memory
from opendp_wasserstein.core.metrics import WeightedL1Distance, WeightedL2SqDistance, descriptor_of
from opendp_wasserstein.core.parameters import SCALE_MAX, ScaleLimitError
from opendp_wasserstein.hierarchy.cells import CountTree, release_if_owned
from opendp_wasserstein.hierarchy.domain import DyadicCountsDomain
from opendp_wasserstein.hierarchy.least_squares import check_postprocessing
from opendp_wasserstein.hierarchy.noisy_tree import NoisyTree, draw_full_tree
from opendp_wasserstein.hierarchy.traversal import LeafMasses, pruned_traversal
from opendp_wasserstein.noise._fast_gaussian import MAX_SCALE
from opendp_wasserstein.noise._source import CORRECTION_STREAM, NOISE_STREAM, as_random_source
from opendp_wasserstein.noise.node_noise import NodeNoise, PooledNoise
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise

__all__ = [
    "make_tree_laplace",
    "then_tree_laplace",
    "make_pruned_tree_laplace",
    "then_pruned_tree_laplace",
    "make_tree_gaussian",
    "then_tree_gaussian",
    "make_pruned_tree_gaussian",
    "then_pruned_tree_gaussian",
    "make_tree_noise",
    "make_pruned_tree_noise",
    "laplace_map",
    "zcdp_map",
    "check_noise_metric",
    "check_output_size",
]


def laplace_map(d_in: Any) -> float:
    """The privacy map of discrete Laplace noise in ``l1(s)``: ``epsilon = d_in``."""
    d = float(d_in)
    if not d >= 0.0:
        raise ValueError("d_in must be a non-negative l1(s) distance")
    return d


def zcdp_map(d_in: Any) -> float:
    """The privacy map of Gaussian noise in ``l2sq(s)``: ``rho = d_in / 2``, exact, rounded up.

    :param d_in: an ``l2sq(s)`` distance (a float, as the stability maps return it)
    :return: the zero-concentrated privacy loss ``rho``

    :example:

    >>> from opendp_wasserstein.measurements import zcdp_map
    >>> zcdp_map(0.625), zcdp_map(5e-324)  # halving is exact except below the normal range
    (0.3125, 5e-324)
    """
    if isinstance(d_in, bool) or not isinstance(d_in, (float, numbers.Rational)):
        raise TypeError(
            f"d_in must be a float or a rational (an l2sq distance), got {type(d_in).__name__}"
        )
    d = float(d_in)
    if not d >= 0.0:
        raise ValueError("d_in must be a non-negative l2sq(s) distance")
    if math.isinf(d):
        return math.inf
    return round_up(Fraction(d_in) / 2)  # exact: floats and rationals are not rounded first


def check_gaussian_scales(scales: tuple[float, ...]) -> None:
    """Finite positive scales up to ``2^52`` (``sigma_0 = inf``: the root is not released)."""
    rest = scales[1:] if scales and math.isinf(scales[0]) else scales
    if not all(math.isfinite(s) and 0 < s <= MAX_SCALE for s in rest):
        raise ValueError(f"input_metric scales must be positive and at most 2^52 = {MAX_SCALE:.6g}")


#: per distribution: the input metric's descriptor, the output measure and the privacy map
NOISE: dict[str, tuple[type, Callable[[], Measure], Callable[[Any], float]]] = {
    "laplace": (WeightedL1Distance, max_divergence, laplace_map),
    "gaussian": (WeightedL2SqDistance, zero_concentrated_divergence, zcdp_map),
}


def check_noise_metric(
    input_metric: Metric, levels: int, distribution: str, infinite_root: bool = True
) -> Any:
    """The descriptor of ``l1(s)`` (Laplace) or ``l2sq(s)`` (Gaussian) with one scale per level,
    each scale within what the exact sampler draws (``sigma_0 = inf``, a root that is not
    released, allowed where ``infinite_root``; always for Gaussian noise)."""
    met = descriptor_of(input_metric, NOISE[distribution][0])
    if len(met.scales) != levels:
        raise ValueError(
            f"input_metric must have {levels} scales (one per level), got {len(met.scales)}"
        )
    if distribution == "gaussian":
        check_gaussian_scales(met.scales)
    elif max(met.scales[1:], default=0.0) > SCALE_MAX or (
        (math.isfinite(met.scales[0]) or not infinite_root) and met.scales[0] > SCALE_MAX
    ):
        raise ScaleLimitError("input_metric scales must be at most 2^52 (exact integer noise)")
    return met


def noise_measurement(
    input_domain: Domain, input_metric: Metric, distribution: str, function: Callable[[Any], Any]
) -> Measurement:
    """The Measurement of ``function`` with the output measure and map of ``distribution``."""
    _, measure, privacy_map = NOISE[distribution]
    return make_measurement(input_domain, input_metric, measure(), function, privacy_map)


def _release_noise(distribution: str = "laplace") -> NodeNoise:
    """The noise of one release: node-addressed noise under a fresh secret key
    (:class:`~opendp_wasserstein.noise.node_randomness.KeyedNodeNoise`: a node's noise and coin are
    a function of the key and the node, so a distributed run or a retry draws the same values),
    or a key from the non-private test seed; with ``runtime.sampler("opendp")`` OpenDP's own
    ``make_laplace`` (or ``make_gaussian``) draws the noise in the order asked (it cannot be
    keyed).  Gaussian noise (the zCDP measurements) is node-addressed too
    (:meth:`~opendp_wasserstein.noise.node_randomness.KeyedNodeNoise.gaussian`)."""
    src = as_random_source()
    if runtime.current_sampler() == "opendp":
        return PooledNoise(src.derive(NOISE_STREAM), src.derive(CORRECTION_STREAM))
    return KeyedNodeNoise.from_random_source(src.derive(NOISE_STREAM))


def check_output_size(
    output_size: Any, dom: DyadicCountsDomain, scales: tuple[float, ...]
) -> int | None:
    """The public root mass: ``output_size``, else the domain's size, else None (noisy root).

    :raises ValueError: ``output_size`` on a sized domain, or a root that is neither public nor
        released (``sigma_0 = inf`` without ``output_size``), or released but unused.
    """
    root_inf = math.isinf(scales[0])
    if output_size is None:
        if dom.size is None and root_inf:
            raise ValueError(
                "output_size is required when the input size is private and sigma_0 = inf "
                "(the root count is then not released, so the number of rows must be given)"
            )
        return dom.size
    if (
        isinstance(output_size, (bool, np.bool_))
        or not isinstance(output_size, (int, np.integer))
        or output_size < 1
    ):
        raise ValueError(f"output_size must be an integer >= 1, got {output_size!r}")
    if dom.size is not None:
        raise ValueError("output_size applies only when the input domain has no public size")
    if not root_inf:
        raise ValueError(
            "output_size replaces the noisy root count: set sigma_0 = inf so the root is not "
            "charged"
        )
    return int(output_size)


def _check(
    input_domain: Domain, input_metric: Metric, distribution: str
) -> tuple[DyadicCountsDomain, Any]:
    assert_features("contrib")
    dom = descriptor_of(input_domain, DyadicCountsDomain)
    return dom, check_noise_metric(input_metric, dom.depth + 1, distribution)


def _check_counts(counts: Any, dom: DyadicCountsDomain) -> CountTree:
    """The release-time input check: the exact count tree of the domain (its depth and
    dimension)."""
    if (
        not isinstance(counts, CountTree)
        or counts.depth != dom.depth
        or counts.d != dom.num_columns
    ):
        raise TypeError(
            f"data must be the CountTree of the input domain (depth {dom.depth}, "
            f"{dom.num_columns} columns), "
            "as released by make_dyadic_counts"
        )
    if dom.size is not None and counts.n != dom.size:
        raise ValueError(f"data must count exactly {dom.size} rows (the domain's public size)")
    return counts


def full_tree_function(
    dom: DyadicCountsDomain, scales: tuple[float, ...], distribution: str
) -> Callable[[Any], NoisyTree]:
    """The release of the complete noisy tree (``make_tree_laplace``/``make_tree_gaussian``):
    every node noised, ``"laplace"`` or ``"gaussian"``; its memory is checked up front."""
    release_root = dom.size is None and not math.isinf(scales[0])
    check_memory(
        2.0 ** (dom.depth + 1) * 8 * (dom.num_columns + 5) * 2,
        f"the full tree at depth {dom.depth} ({2 ** (dom.depth + 1) - 1:,} nodes)",
        f"use make_pruned_tree_{distribution}, which only noises nodes with positive mass, "
        "or a smaller depth",
    )

    def function(counts: CountTree) -> NoisyTree:
        return draw_full_tree(
            _check_counts(counts, dom),
            scales,
            _release_noise(distribution),
            release_root,
            distribution=distribution,
        )

    return function


def pruned_function(
    dom: DyadicCountsDomain,
    scales: tuple[float, ...],
    output_size: Any,
    consistency: str,
    threshold: float | None,
    distribution: str,
) -> Callable[[Any], LeafMasses]:
    """The release of Pruned-PMM's leaf masses (``make_pruned_tree_laplace``/``_gaussian``):
    Algorithms 1-2 with ``"laplace"`` or ``"gaussian"`` node noise and the chosen
    post-processing; the arguments are checked at construction."""
    size = check_output_size(output_size, dom, scales)
    consistency, threshold = check_postprocessing(consistency, threshold)

    def function(counts: CountTree) -> LeafMasses:
        leaves = pruned_traversal(
            _check_counts(counts, dom),
            scales,
            size,
            _release_noise(distribution),
            threshold,
            distribution,
            consistency,
        )
        release_if_owned(
            counts
        )  # an adaptive release's tree is done with: free it before the placement
        return leaves

    return function


def make_tree_noise(input_domain: Domain, input_metric: Metric, distribution: str) -> Measurement:
    """The kernel of :func:`make_tree_laplace` and :func:`make_tree_gaussian`: every node of the
    complete tree noised, ``distribution`` ``"laplace"`` or ``"gaussian"``."""
    dom, met = _check(input_domain, input_metric, distribution)
    function = full_tree_function(dom, met.scales, distribution)
    return noise_measurement(input_domain, input_metric, distribution, function)


def make_pruned_tree_noise(
    input_domain: Domain,
    input_metric: Metric,
    distribution: str,
    output_size: int | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
) -> Measurement:
    """The kernel of :func:`make_pruned_tree_laplace` and :func:`make_pruned_tree_gaussian`:
    Algorithms 1-2 with ``distribution`` node noise."""
    dom, met = _check(input_domain, input_metric, distribution)
    function = pruned_function(dom, met.scales, output_size, consistency, threshold, distribution)
    return noise_measurement(input_domain, input_metric, distribution, function)


def make_tree_laplace(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement releasing the whole noisy dyadic tree,
    ``n_theta + LapZ(sigma_|theta|)``.

    The release is a :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree`: the noisy count of
    every one of the ``2^(r+1) - 1`` nodes (the root only when the size is private and ``sigma_0``
    is finite), nothing else.
    Privacy map ``d_in -> d_in`` in ``max_divergence``: for ``F(X) + lambda`` with independent
    ``lambda_i ~ LapZ(s_i)`` the privacy loss is ``||F(X) - F(X')||_{l1(s)}`` (Zare Moayedi et
    al. 2026, Appendix A.3).  A depth whose tree would not fit in memory is refused here.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020

    **Proof Definition:** :doc:`/proofs/tree_laplace`

    :param input_domain: a dyadic counts domain (the output of ``make_dyadic_counts``)
    :param input_metric: ``l1(s)`` (``weighted_l1_distance``) with one scale per level
    :return: a Measurement releasing a ``NoisyTree``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_laplace
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.symmetric_distance(), depth=3, scales=[1.0, 6.0, 6.0, 6.0])
    >>> meas = t >> make_tree_laplace(t.output_domain, t.output_metric)
    >>> meas.map(2)
    1.0
    >>> noisy = meas(np.random.default_rng(0).uniform(size=(100, 2)))
    >>> [level.size for level in noisy.levels]   # 1, 2, 4, 8 nodes
    [1, 2, 4, 8]
    """
    return make_tree_noise(input_domain, input_metric, "laplace")


def make_pruned_tree_laplace(
    input_domain: Domain,
    input_metric: Metric,
    output_size: int | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
) -> Measurement:
    r"""Construct a Measurement releasing the consistent leaf masses of Pruned-PMM (Algorithms 1-2).

    It adds ``LapZ(sigma_j)`` to the count of a node of level ``j`` only when the zero-respecting
    traversal reaches it: the root mass (the public size, else ``max(1, noisy root)``) is split
    top-down between the two noisy children of every node with positive mass (Algorithm 2: a
    child whose truncated noisy count is 0 gets nothing, both 0: a fair coin picks one), and
    children with zero mass are not expanded, so at most ``1 + 2 m r`` nodes are noised.

    **What is released**: a :class:`~opendp_wasserstein.hierarchy.traversal.LeafMasses`, the leaf
    cells with positive mass, their masses and public traversal counts.  It is a function of the
    imagined complete noisy tree and of independent coins, so the privacy map is that of
    :func:`make_tree_laplace`, ``d_in -> d_in`` (post-processing); it holds no exact count, record
    or code.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020

    **Proof Definition:** :doc:`/proofs/tree_laplace`

    :param input_domain: a dyadic counts domain (the output of ``make_dyadic_counts``)
    :param input_metric: ``l1(s)`` with one scale per level
    :param output_size: without a public input size, the number of rows to release when it is
        known otherwise (e.g. a DP count released before); needs ``sigma_0 = inf`` (the root is
        then neither noised nor charged).  Default: the public size, else ``max(1, noisy root)``.
    :param consistency: ``"paper"`` (Algorithm 2, default) or ``"least_squares"``: the same
        traversal, then the masses re-split from the generalised least-squares estimates of all
        visited nodes (:mod:`opendp_wasserstein.hierarchy.least_squares`); post-processing, same map
    :param threshold: suppression of noise-made mass in empty cells (post-processing):
        ``"paper"``: a noisy count at most ``threshold * sigma_j`` is read as 0 (default 0, the
        paper's truncation); ``"least_squares"``: an estimate at most ``threshold`` standard
        errors is read as 0 (default 3)
    :return: a Measurement releasing ``LeafMasses``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_pruned_tree_laplace
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.symmetric_distance(), depth=4, scales=[1.0] + [8.0] * 4)
    >>> meas = t >> make_pruned_tree_laplace(t.output_domain, t.output_metric)
    >>> meas.map(2)
    1.0
    >>> leaves = meas(np.random.default_rng(0).uniform(size=(100, 2)))
    >>> leaves.total, leaves.cells.shape[1]
    (100, 2)
    """
    return make_pruned_tree_noise(
        input_domain, input_metric, "laplace", output_size, consistency, threshold
    )


def make_tree_gaussian(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement releasing the whole noisy dyadic tree,
    ``n_theta + N_Z(0, sigma_|theta|^2)``.

    The zCDP counterpart of :func:`~opendp_wasserstein.measurements.make_tree_laplace`: the same
    release, a :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree`, for the full-tree PMM.
    Privacy map ``d_in -> d_in / 2`` from ``l2sq(s)`` into ``zero_concentrated_divergence()``
    (:func:`zcdp_map`).

    Required features: ``contrib``

    **Citations:**

    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020
    * Bun, Steinke, *Concentrated Differential Privacy*, TCC 2016

    **Proof Definition:** :doc:`/proofs/gaussian_counts`

    :param input_domain: a dyadic counts domain (the output of ``make_dyadic_counts``)
    :param input_metric: ``l2sq(s)`` (``make_dyadic_counts(..., output_metric="l2sq")``)
    :return: a Measurement releasing a ``NoisyTree``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_gaussian
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.symmetric_distance(), depth=3, scales=[1.0, 2.0, 2.0, 2.0],
    ...                        output_metric="l2sq")
    >>> meas = t >> make_tree_gaussian(t.output_domain, t.output_metric)
    >>> meas.map(2)  # one replacement: (2 (1/4 + 1/4 + 1/4)) / 2
    0.75
    >>> [level.size for level in meas(np.random.default_rng(0).uniform(size=(100, 2))).levels]
    [1, 2, 4, 8]
    """
    return make_tree_noise(input_domain, input_metric, "gaussian")


def make_pruned_tree_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    output_size: int | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
) -> Measurement:
    r"""Construct a Measurement releasing the consistent leaf masses of Pruned-PMM with Gaussian
    noise.

    The zCDP counterpart of :func:`~opendp_wasserstein.measurements.make_pruned_tree_laplace`:
    Algorithms 1-2 with ``N_Z(0, sigma_j^2)`` added to a level-``j`` node when the
    zero-respecting traversal reaches it; the release is a
    :class:`~opendp_wasserstein.hierarchy.traversal.LeafMasses`, a function of the imagined complete
    noisy tree and independent coins, so the privacy map is that of :func:`make_tree_gaussian`,
    ``d_in -> d_in / 2`` into ``zero_concentrated_divergence()``.

    Required features: ``contrib``

    **Citations:**

    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020
    * Bun, Steinke, *Concentrated Differential Privacy*, TCC 2016

    **Proof Definition:** :doc:`/proofs/gaussian_counts`

    :param input_domain: a dyadic counts domain (the output of ``make_dyadic_counts``)
    :param input_metric: ``l2sq(s)`` with one scale per level
    :param output_size: as for ``make_pruned_tree_laplace`` (needs ``sigma_0 = inf``)
    :param consistency: ``"paper"`` (default) or ``"least_squares"``, as for
        ``make_pruned_tree_laplace`` (post-processing)
    :param threshold: the suppression threshold, as for ``make_pruned_tree_laplace``
    :return: a Measurement releasing ``LeafMasses``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_pruned_tree_gaussian
    >>> from opendp_wasserstein.schedules.zcdp import zcdp_schedule
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.change_one_distance(), depth=4,
    ...                        scales=zcdp_schedule(d=2, rho=0.5, depth=4), output_metric="l2sq")
    >>> meas = t >> make_pruned_tree_gaussian(t.output_domain, t.output_metric)
    >>> meas.map(1)
    0.5
    >>> meas(np.random.default_rng(0).uniform(size=(100, 2))).total
    100
    """
    return make_pruned_tree_noise(
        input_domain, input_metric, "gaussian", output_size, consistency, threshold
    )


then_tree_laplace = to_then(make_tree_laplace)
then_pruned_tree_laplace = to_then(make_pruned_tree_laplace)
then_tree_gaussian = to_then(make_tree_gaussian)
then_pruned_tree_gaussian = to_then(make_pruned_tree_gaussian)
register(make_tree_laplace)
register(make_pruned_tree_laplace)
register(make_tree_gaussian)
register(make_pruned_tree_gaussian)
