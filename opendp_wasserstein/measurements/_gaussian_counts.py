r"""Discrete Gaussian noise on hierarchical counts in ``l2sq(s)``: the zCDP measurements.

The zCDP counterparts of :func:`~opendp_wasserstein.measurements.make_tree_laplace`,
:func:`~opendp_wasserstein.measurements.make_pruned_tree_laplace` and
:func:`~opendp_wasserstein.measurements.make_tree_count_laplace`: the same releases
(:class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree`, :class:`~opendp_wasserstein.hierarchy.traversal.LeafMasses`,
:class:`~opendp_wasserstein.measurements._tree_projection.NoisyTreeCounts`) with ``N_Z(0,
sigma_j^2)`` in place of ``LapZ(sigma_j)``, on counts in ``l2sq(s)``
(``make_dyadic_counts(..., output_metric="l2sq")``, ``make_tree_counts(..., output_metric="l2sq")``).

For counts ``F(X)`` and independent ``N_Z(0, s_v^2)`` noise on every node ``v``, the Renyi
divergence of order ``alpha`` between the releases on ``X`` and ``X'`` is
at most ``alpha / 2 * sum_v (F_v(X) - F_v(X'))^2 / s_v^2`` (Canonne, Kamath, Steinke 2020,
summed over independent coordinates), i.e. ``rho = d_{l2sq(s)}(F(X), F(X')) / 2``.  So the
privacy map from ``l2sq(s)`` into ``zero_concentrated_divergence()`` is ``d_in -> d_in / 2``,
computed exactly and rounded up (proof: ``docs/proofs/gaussian_counts.rst``).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import zero_concentrated_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.metrics import DyadicCountsDomain, WeightedL2SqDistance, descriptor_of
from opendp_wasserstein.measurements._tree_noise import full_tree_function, pruned_function
from opendp_wasserstein.measurements._tree_projection import NoisyTreeCounts
from opendp_wasserstein.noise._fast_gaussian import MAX_SCALE
from opendp_wasserstein.noise._source import NOISE_STREAM, as_random_source
from opendp_wasserstein.noise.node_noise import add_noise
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian
from opendp_wasserstein.transformations._tree_counts import TreeCounts, TreeCountsDomain

__all__ = [
    "zcdp_map",
    "make_tree_gaussian",
    "then_tree_gaussian",
    "make_pruned_tree_gaussian",
    "then_pruned_tree_gaussian",
    "make_tree_count_gaussian",
    "then_tree_count_gaussian",
]


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
        raise TypeError(f"d_in must be a float or a rational (an l2sq distance), got {type(d_in).__name__}")
    d = float(d_in)
    if not d >= 0.0:
        raise ValueError("d_in must be a non-negative l2sq(s) distance")
    if math.isinf(d):
        return math.inf
    return round_up(Fraction(d_in) / 2)  # exact: floats and rationals are not rounded first


def _check_scales_for_sampler(scales: tuple[float, ...]) -> None:
    """Finite positive scales up to ``2^52`` (``sigma_0 = inf``: the root is not released)."""
    rest = scales[1:] if scales and math.isinf(scales[0]) else scales
    if not all(math.isfinite(s) and 0 < s <= MAX_SCALE for s in rest):
        raise ValueError(f"input_metric scales must be positive and at most 2^52 = {MAX_SCALE:.6g}")


def _check_dyadic(input_domain: Domain, input_metric: Metric) -> tuple[DyadicCountsDomain, WeightedL2SqDistance]:
    assert_features("contrib")
    dom = descriptor_of(input_domain, DyadicCountsDomain)
    met = descriptor_of(input_metric, WeightedL2SqDistance)
    if len(met.scales) != dom.depth + 1:
        raise ValueError(
            f"input_metric must have {dom.depth + 1} scales (one per level), got {len(met.scales)}"
        )
    _check_scales_for_sampler(met.scales)
    return dom, met


def make_tree_gaussian(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement releasing the whole noisy dyadic tree, ``n_theta + N_Z(0, sigma_|theta|^2)``.

    The zCDP counterpart of :func:`~opendp_wasserstein.measurements.make_tree_laplace`: the same
    release, a :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree`, for the full-tree PMM.  Privacy
    map ``d_in -> d_in / 2`` from ``l2sq(s)`` into ``zero_concentrated_divergence()``
    (:func:`zcdp_map`).

    Required features: ``contrib``

    **Citations:**

    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020
    * Bun, Steinke, *Concentrated Differential Privacy*, TCC 2016

    **Proof Definition:** ``docs/proofs/gaussian_counts.rst``

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
    dom, met = _check_dyadic(input_domain, input_metric)
    function = full_tree_function(dom, met.scales, "gaussian")
    return make_measurement(input_domain, input_metric, zero_concentrated_divergence(), function, zcdp_map)


def make_pruned_tree_gaussian(
    input_domain: Domain,
    input_metric: Metric,
    output_size: int | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
) -> Measurement:
    r"""Construct a Measurement releasing the consistent leaf masses of Pruned-PMM with Gaussian noise.

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

    **Proof Definition:** ``docs/proofs/gaussian_counts.rst``

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
    dom, met = _check_dyadic(input_domain, input_metric)
    function = pruned_function(dom, met.scales, output_size, consistency, threshold, "gaussian")
    return make_measurement(input_domain, input_metric, zero_concentrated_divergence(), function, zcdp_map)


def make_tree_count_gaussian(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement adding ``N_Z(0, sigma_j^2)`` to the count of every node at depth ``j``.

    The release is a :class:`~opendp_wasserstein.measurements._tree_projection.NoisyTreeCounts`
    (noisy counts of every node, and the public scales), the input of
    :func:`~opendp_wasserstein.measurements.make_tree_multiset`.  Privacy map ``d_in -> d_in /
    2`` into ``zero_concentrated_divergence()`` (:func:`zcdp_map`).  Noise comes from the exact
    discrete Gaussian sampler of the run-time back-end, drawn at release time from
    ``as_random_source(None)`` (the operating system's CSPRNG unless a non-private
    reproducible run is requested).

    Required features: ``contrib``

    **Citations:**

    * Canonne, Kamath, Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020
    * Bun, Steinke, *Concentrated Differential Privacy*, TCC 2016

    **Proof Definition:** ``docs/proofs/gaussian_counts.rst``

    :param input_domain: a tree counts domain (the output of ``make_tree_counts``)
    :param input_metric: ``l2sq(s)`` (``make_tree_counts(..., output_metric="l2sq")``) with one
        scale per level ``0 .. tree.height``, each at most ``2^52``
    :return: a Measurement into ``NoisyTreeCounts``, output measure ``zero_concentrated_divergence()``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.public_candidates.trees import Tree
    >>> from opendp_wasserstein.transformations import candidate_index_domain, make_tree_counts
    >>> from opendp_wasserstein.measurements import make_tree_count_gaussian, make_tree_multiset
    >>> dp.enable_features("contrib")
    >>> tree = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> t = make_tree_counts(candidate_index_domain(3, 40), dp.change_one_distance(), tree,
    ...                      [1.0, 2.0, 4.0], output_metric="l2sq")
    >>> meas = t >> make_tree_count_gaussian(t.output_domain, t.output_metric)
    >>> meas.map(1)  # (2/4 + 1/16) / 2
    0.28125
    >>> release = meas(np.arange(40) % 3)
    >>> release.noisy.shape, release.scales
    ((5,), (1.0, 2.0, 4.0))
    >>> int((meas >> make_tree_multiset(t.output_domain, m=6))(np.arange(40) % 3).sum())
    6
    """
    assert_features("contrib")
    dom = descriptor_of(input_domain, TreeCountsDomain)
    met = descriptor_of(input_metric, WeightedL2SqDistance)
    tree = dom.tree
    if len(met.scales) != tree.height + 1:
        raise ValueError(
            f"input_metric must have {tree.height + 1} scales (one per level), got {len(met.scales)}"
        )
    _check_scales_for_sampler(met.scales)
    node_scales = np.asarray(met.scales)[tree.depth]

    def function(counts: TreeCounts) -> NoisyTreeCounts:
        if not isinstance(counts, TreeCounts) or counts.tree != tree:
            raise ValueError("data must be the TreeCounts of the domain's tree")
        noise = sample_discrete_gaussian(node_scales, as_random_source(None).derive(NOISE_STREAM))
        noisy = add_noise(counts.counts, noise)  # clamped to +-2^61: post-processing
        noisy.setflags(write=False)
        return NoisyTreeCounts(tree, noisy, met.scales)

    return make_measurement(
        input_domain, input_metric, zero_concentrated_divergence(), function, zcdp_map
    )


then_tree_gaussian = to_then(make_tree_gaussian)
then_pruned_tree_gaussian = to_then(make_pruned_tree_gaussian)
then_tree_count_gaussian = to_then(make_tree_count_gaussian)
register(make_tree_gaussian)
register(make_pruned_tree_gaussian)
register(make_tree_count_gaussian)
