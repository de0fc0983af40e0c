"""Hierarchical tree projection (HTP): noisy subtree counts on a public tree, post-processed
into the size-m multiset on the candidates closest to them in tree W1."""

from __future__ import annotations

from typing import Any

import numpy as np
from opendp.mod import Domain, Function, Measure, Measurement, Metric, assert_features

from opendp_wasserstein._compat import new_function, register, to_then
from opendp_wasserstein.core.data import check_data_domain, check_metric, domain_allows_nan
from opendp_wasserstein.core.metrics import descriptor_of
from opendp_wasserstein.core.parameters import (
    SCALE_MAX,
    ScaleLimitError,
    check_epsilon,
    check_output_measure,
)
from opendp_wasserstein.core.plan import HistogramPlan, attach
from opendp_wasserstein.measurements._tree_count_noise import (
    NoisyTreeCounts,
    make_tree_count_gaussian,
    make_tree_count_laplace,
)
from opendp_wasserstein.noise._source import TIE_STREAM, as_random_source
from opendp_wasserstein.public_candidates.sets import (
    check_candidate_dims,
    check_candidates,
    check_ground_metric,
    check_multiset_size,
)
from opendp_wasserstein.public_candidates.trees import closest_multiset, resolve_tree
from opendp_wasserstein.schedules.tree import tree_level_scales, tree_level_scales_zcdp
from opendp_wasserstein.transformations._nearest_candidate import make_nearest_candidate
from opendp_wasserstein.transformations._tree_counts import (
    TreeCountsDomain,
    make_tree_counts,
    tree_counts_of_histogram,
)

__all__ = [
    "make_tree_multiset",
    "make_tree_projection",
    "then_tree_projection",
]


def make_tree_multiset(counts_domain: Domain, m: int) -> Function:
    r"""The HTP post-processor: noisy subtree counts to the closest size-``m`` multiset.

    With ``N = n`` (public size) or ``N = max(1, noisy root)`` and targets ``t_v = m
    max(noisy_v, 0) / N``, returns the multiset (``k`` multiplicities summing to ``m``) that
    minimises ``sum_v w_v |c_v - t_v|``, i.e. the tree W1 to the clamped, rescaled noisy
    masses, exactly (:func:`~opendp_wasserstein.public_candidates.trees.closest_multiset`; several
    optimal multisets are told apart by uniformly random coins, not by the candidates' row numbers).
    Reads only the release, public parameters and data-independent coins, so it costs no
    privacy.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree
      metrics*, JCSS 2004

    **Proof Definition:** :doc:`/proofs/tree_projection`

    :param counts_domain: the tree counts domain the noisy counts were drawn on
    :param m: the multiset size

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.public_candidates.trees import quadtree
    >>> from opendp_wasserstein.transformations import (
    ...     make_nearest_candidate, make_tree_counts, tree_level_scales)
    >>> from opendp_wasserstein.measurements import make_tree_count_laplace, make_tree_multiset
    >>> dp.enable_features("contrib")
    >>> C = np.array([[0.2, 0.2], [0.8, 0.8]])
    >>> tree = quadtree(C, bounds=(0.0, 1.0), seed=1)
    >>> t = make_nearest_candidate(
    ...     dp.numpy.array2_domain(num_columns=2, size=40, T=float), dp.change_one_distance(), C)
    >>> t = t >> make_tree_counts(
    ...     t.output_domain, t.output_metric, tree, tree_level_scales(tree, 2.0))
    >>> meas = (t >> make_tree_count_laplace(t.output_domain, t.output_metric)
    ...           >> make_tree_multiset(t.output_domain, m=7))
    >>> meas.map(1), int(meas(np.full((40, 2), 0.25)).sum())
    (2.0, 7)
    """
    dom = descriptor_of(counts_domain, TreeCountsDomain)
    m = check_multiset_size(m)
    tree = dom.tree

    def function(noisy: NoisyTreeCounts) -> np.ndarray:
        clamped = np.maximum(noisy.noisy, 0).astype(np.float64)
        total = float(dom.size) if dom.size is not None else max(1.0, clamped[0])
        # equal slopes are ordered by fresh coins, not by node ids (which follow the candidates'
        # row numbers): a permutation of the candidates permutes the law of the release
        return closest_multiset(
            tree, clamped * (m / total), m, tie_break=as_random_source().derive(TIE_STREAM)
        )

    return new_function(function)


def make_tree_projection(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Any,
    m: int,
    epsilon: float,
    tree: Any = None,
    metric: str = "l2",
    output_measure: Measure | None = None,
) -> Measurement:
    r"""Construct the hierarchical tree projection (HTP): a size-``m`` multiset on public
    candidates from noisy subtree counts on a tree metric.

    The chain ``make_nearest_candidate >> make_tree_counts >> make_tree_count_laplace >>
    make_tree_multiset``: project every record to its nearest candidate, count the records
    below every tree node, add ``LapZ(sigma_j)`` at depth ``j``, and release the multiset
    closest in tree W1 to the clamped noisy masses (an exact min-plus programme).

    **Schedule** (:func:`~opendp_wasserstein.transformations.tree_level_scales`):
    ``sigma_j proportional to W_j^(-1/2)``, ``W_j`` the total edge weight at depth ``j``,
    scaled so that ``2 sum_j 1/sigma_j = epsilon``: it minimises the expected tree-W1 error of
    the noisy masses, ``sum_j W_j sigma_j / n``, under the budget; heavy levels near the root
    (long HST edges) get less noise, the many light levels near the leaves more.

    **Privacy.** Every record is in at most one node per depth, so one replacement moves the
    counts by at most 2 per level and the map is ``d_in sum_{j>=1} 1/sigma_j`` under
    ``symmetric_distance`` with a public size (``map(2) = epsilon``), ``2 d_in sum_{j>=1}
    1/sigma_j`` under ``change_one_distance`` (``map(1) = epsilon``).  **Without a public
    size** the root count is noised and charged as well, and the schedule still spends exactly
    ``epsilon`` per replacement: ``map(2) = epsilon`` (one added record costs
    ``map(1) = epsilon / 2``); the multiset is then normalised by the noisy root count.

    **zCDP.**  With ``output_measure=dp.zero_concentrated_divergence()``, ``epsilon`` is the zCDP
    budget ``rho`` of one replacement: discrete Gaussian noise ``N_Z(0, sigma_j^2)``
    (``make_tree_counts(..., output_metric="l2sq") >> make_tree_count_gaussian``) with the
    zCDP-optimal schedule :func:`~opendp_wasserstein.schedules.tree.tree_level_scales_zcdp`
    (``sigma_j proportional to W_j^(-1/3)``, exact tree sensitivity), so ``map(2) == rho``
    (``map(1) == rho`` under ``change_one_distance``; without a public size ``map(2) == rho``).

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree
      metrics*, JCSS 2004

    **Proof Definition:** :doc:`/proofs/tree_projection`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=p, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param candidates: the public candidates ``(k, p)``: distinct, finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy loss of one replacement, in ``output_measure``: epsilon (pure DP)
        or rho (zCDP)
    :param tree: a public :class:`~opendp_wasserstein.public_candidates.trees.Tree` with ``k``
        leaves, or None for a fresh :func:`~opendp_wasserstein.public_candidates.trees.frt_tree`
        built at construction
    :param metric: the ground metric ``"l1"``, ``"l2"`` (default) or ``"linf"``
    :param output_measure: ``dp.max_divergence()`` (discrete Laplace; the default, ``None``) or
        ``dp.zero_concentrated_divergence()`` (discrete Gaussian)
    :return: a Measurement releasing ``k`` int64 multiplicities summing to ``m``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_tree_projection
    >>> dp.enable_features("contrib")
    >>> C = np.random.default_rng(1).uniform(size=(30, 2))
    >>> meas = make_tree_projection(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.symmetric_distance(),
    ...     candidates=C, m=50, epsilon=1.0)
    >>> meas.map(2)
    1.0
    >>> int(meas(np.random.default_rng(0).uniform(size=(500, 2))).sum())
    50
    >>> zmeas = make_tree_projection(
    ...     dp.numpy.array2_domain(num_columns=2, size=500, T=float), dp.symmetric_distance(),
    ...     candidates=C, m=50, epsilon=0.5, output_measure=dp.zero_concentrated_divergence())
    >>> zmeas.map(2)
    0.5
    """
    assert_features("contrib")
    noise = check_output_measure(output_measure)
    d, n = check_data_domain(input_domain)
    check_metric(input_metric, n)
    cand = check_candidates(candidates)
    check_candidate_dims(cand, d)
    m = check_multiset_size(m)
    eps = check_epsilon(epsilon)
    metric = check_ground_metric(metric)
    the_tree = resolve_tree(tree, cand, metric)
    t_near = make_nearest_candidate(input_domain, input_metric, cand, metric)
    if noise == "laplace":
        scales = tree_level_scales(the_tree, eps, sized=n is not None)
    else:
        scales = tree_level_scales_zcdp(the_tree, eps, sized=n is not None)
    if max(scales) > SCALE_MAX:
        raise ScaleLimitError(
            "epsilon is too small: the tree projection's noise scales would pass 2^52 (exact "
            "integer noise)"
        )
    if noise == "laplace":
        t_counts = make_tree_counts(t_near.output_domain, t_near.output_metric, the_tree, scales)
        m_noise = make_tree_count_laplace(t_counts.output_domain, t_counts.output_metric)
    else:
        t_counts = make_tree_counts(
            t_near.output_domain, t_near.output_metric, the_tree, scales, output_metric="l2sq"
        )
        m_noise = make_tree_count_gaussian(t_counts.output_domain, t_counts.output_metric)
    m_rest = m_noise >> make_tree_multiset(t_counts.output_domain, m)
    meas = t_near >> t_counts >> m_rest

    def finish(histogram: np.ndarray) -> Any:  # the chain after the histogram of pi(x)
        return m_rest(tree_counts_of_histogram(the_tree, histogram))

    return attach(
        meas, HistogramPlan(d, n, domain_allows_nan(input_domain), t_near.nearest, finish)
    )


then_tree_projection = to_then(make_tree_projection)
register(make_tree_projection)
