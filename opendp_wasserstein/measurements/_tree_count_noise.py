"""Noise on the counts of a public tree: one kernel, discrete Laplace and Gaussian shells.

:func:`make_tree_count_laplace` adds ``LapZ(sigma_j)`` (into ``max_divergence``, counts in
``l1(s)``) and :func:`make_tree_count_gaussian` ``N_Z(0, sigma_j^2)`` (into
``zero_concentrated_divergence``, counts in ``l2sq(s)``) to the count of every node at depth
``j`` of the public tree of :func:`~opendp_wasserstein.transformations.make_tree_counts`; both
release a :class:`NoisyTreeCounts`, the input of
:func:`~opendp_wasserstein.measurements.make_tree_multiset`.  Noise is drawn at release time
from ``as_random_source()`` (the operating system's CSPRNG unless a non-private reproducible run
is requested) by the exact sampler of the run-time back-end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._compat import register, to_then
from opendp_wasserstein.core.metrics import descriptor_of
from opendp_wasserstein.measurements._tree_noise import check_noise_metric, noise_measurement
from opendp_wasserstein.noise._source import NOISE_STREAM, as_random_source
from opendp_wasserstein.noise.node_noise import add_noise
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian, sample_discrete_laplace
from opendp_wasserstein.public_candidates.trees import Tree
from opendp_wasserstein.transformations._tree_counts import TreeCounts, TreeCountsDomain

__all__ = [
    "NoisyTreeCounts",
    "make_tree_count_noise",
    "make_tree_count_laplace",
    "then_tree_count_laplace",
    "make_tree_count_gaussian",
    "then_tree_count_gaussian",
]


@dataclass(frozen=True)
class NoisyTreeCounts:
    """The release of :func:`make_tree_count_laplace` and :func:`make_tree_count_gaussian`:
    ``noisy[v] = n_v + noise(scales[depth v])`` for every node ``v`` of the public ``tree``."""

    tree: Tree
    noisy: np.ndarray
    scales: tuple[float, ...]


def make_tree_count_noise(
    input_domain: Domain, input_metric: Metric, distribution: str
) -> Measurement:
    """The kernel of :func:`make_tree_count_laplace` and :func:`make_tree_count_gaussian`: noise
    of ``distribution`` (``"laplace"`` or ``"gaussian"``) on the count of every node."""
    assert_features("contrib")
    dom = descriptor_of(input_domain, TreeCountsDomain)
    tree = dom.tree
    met = check_noise_metric(input_metric, tree.height + 1, distribution, infinite_root=False)
    node_scales = np.asarray(met.scales)[tree.depth]
    sample = sample_discrete_laplace if distribution == "laplace" else sample_discrete_gaussian

    def function(counts: TreeCounts) -> NoisyTreeCounts:
        if not isinstance(counts, TreeCounts) or counts.tree != tree:
            raise ValueError("data must be the TreeCounts of the domain's tree")
        noise = sample(node_scales, as_random_source().derive(NOISE_STREAM))
        noisy = add_noise(counts.counts, noise)  # clamped to +-2^61: post-processing
        noisy.setflags(write=False)
        return NoisyTreeCounts(tree, noisy, met.scales)

    return noise_measurement(input_domain, input_metric, distribution, function)


def make_tree_count_laplace(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement adding ``LapZ(sigma_j)`` to the count of every node at depth ``j``.

    Privacy map ``d_in -> d_in`` in ``max_divergence``: for ``F(X) + lambda`` with independent
    ``lambda_v ~ LapZ(s_v)`` the privacy loss is ``||F(X) - F(X')||_{l1(s)}`` (the
    density ratio of each coordinate is at most ``exp(|F_v(X) - F_v(X')| / s_v)``).

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree
      metrics*, JCSS 2004

    **Proof Definition:** :doc:`/proofs/tree_projection`

    :param input_domain: a tree counts domain (the output of ``make_tree_counts``)
    :param input_metric: ``l1(s)`` with one scale per level ``0 .. tree.height``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.public_candidates.trees import quadtree
    >>> from opendp_wasserstein.transformations import (
    ...     make_nearest_candidate, make_tree_counts, tree_level_scales)
    >>> from opendp_wasserstein.measurements import make_tree_count_laplace, make_tree_multiset
    >>> dp.enable_features("contrib")
    >>> C = np.array([[0.1, 0.1], [0.9, 0.1], [0.5, 0.9]])
    >>> tree = quadtree(C, bounds=(0.0, 1.0), seed=0)
    >>> t = make_nearest_candidate(
    ...     dp.numpy.array2_domain(num_columns=2, size=50, T=float), dp.symmetric_distance(), C)
    >>> t = t >> make_tree_counts(
    ...     t.output_domain, t.output_metric, tree, tree_level_scales(tree, 1.0))
    >>> meas = t >> make_tree_count_laplace(t.output_domain, t.output_metric)
    >>> meas = meas >> make_tree_multiset(t.output_domain, m=10)
    >>> meas.map(2)
    1.0
    >>> int(meas(np.random.default_rng(0).uniform(size=(50, 2))).sum())
    10
    """
    return make_tree_count_noise(input_domain, input_metric, "laplace")


def make_tree_count_gaussian(input_domain: Domain, input_metric: Metric) -> Measurement:
    r"""Construct a Measurement adding ``N_Z(0, sigma_j^2)`` to the count of every node at depth
    ``j``.

    The release is a :class:`~opendp_wasserstein.measurements._tree_count_noise.NoisyTreeCounts`
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

    **Proof Definition:** :doc:`/proofs/gaussian_counts`

    :param input_domain: a tree counts domain (the output of ``make_tree_counts``)
    :param input_metric: ``l2sq(s)`` (``make_tree_counts(..., output_metric="l2sq")``) with one
        scale per level ``0 .. tree.height``, each at most ``2^52``
    :return: a Measurement into ``NoisyTreeCounts``, output measure
        ``zero_concentrated_divergence()``

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
    return make_tree_count_noise(input_domain, input_metric, "gaussian")


then_tree_count_laplace = to_then(make_tree_count_laplace)
then_tree_count_gaussian = to_then(make_tree_count_gaussian)
register(make_tree_count_laplace)
register(make_tree_count_gaussian)
