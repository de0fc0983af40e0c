"""Tree-EM: the exponential mechanism over size-m multisets on public candidates, sampled
exactly on a tree metric."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    replacements,
)
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.limits import check_memory
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.core.plan import HistogramPlan, attach
from opendp_wasserstein.noise._source import SELECTION_STREAM, as_random_source
from opendp_wasserstein.public_candidates.sets import (
    check_candidate_dims,
    check_candidates,
    check_ground_metric,
    check_multiset_size,
)
from opendp_wasserstein.public_candidates.tree_em_sampling import sample_tree_em
from opendp_wasserstein.public_candidates.trees import resolve_tree
from opendp_wasserstein.transformations._nearest_candidate import make_nearest_candidate

__all__ = ["make_tree_em", "then_tree_em", "tree_em_privacy_map"]


def tree_em_privacy_map(metric_kind: str, epsilon: float) -> Any:
    """``d_in -> epsilon * replacements(d_in)`` (group privacy), exact, rounded up."""
    eps = Fraction(epsilon)

    def privacy_map(d_in: Any) -> float:
        return round_up(eps * replacements(metric_kind, d_in))

    return privacy_map


def make_tree_em(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Any,
    m: int,
    epsilon: float,
    tree: Any = None,
    metric: str = "l2",
) -> Measurement:
    r"""Construct Tree-EM: a size-``m`` multiset on public candidates, by the exponential
    mechanism with score ``-W1_T(pi#D, S)`` on a tree metric, sampled exactly.

    The chain is ``make_nearest_candidate`` (``pi``, stable) then a measurement releasing ``k``
    multiplicities summing to ``m`` with

    .. math:: P(S) \propto \exp\Big(-\frac{\epsilon\, n\, W1_T(\pi\#D, S)}{2
       \operatorname{diam}(T)}\Big)

    over all ``C(k + m - 1, m)`` multisets
    (:mod:`opendp_wasserstein.public_candidates.tree_em_sampling`: bottom-up log-partition
    recursion, top-down sampling; ``O(k m^2)`` time, ``O(k m)`` memory).

    **Privacy.** With ``a_v`` the data's mass fraction below node ``v``, replacing one record
    moves ``a`` by ``1/n`` along two root-leaf paths, so ``W1_T`` moves by at most
    ``d_T(i, j)/n <= diam(T)/n``: the score has sensitivity ``Delta = diam(T)/n`` and
    ``exp(epsilon u / (2 Delta))`` is ``epsilon``-DP per replacement.  The map is
    ``epsilon * replacements(d_in)``: ``map(2) = epsilon`` under ``symmetric_distance``,
    ``map(1) = epsilon`` under ``change_one_distance``, ``d_in`` times more by group privacy.
    ``n`` must be public (the score is scaled by it).  The tree is public: it is read from
    the candidates only (when ``tree`` is None a fresh
    :func:`~opendp_wasserstein.public_candidates.trees.frt_tree` is built once, at construction).
    Floats enter the argument in the scores, the log-sum-exp recursion, ``diam(T)`` and the
    inverse-CDF draws (float64 throughout; see
    :mod:`opendp_wasserstein.public_candidates.tree_em_sampling`): the sampled law equals the
    exponential mechanism's only up to floating-point error, so, as OpenDP's own float-based extras
    do, the constructor requires ``dp.enable_features("contrib", "idealized-numerics")``.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*
    * McSherry, Talwar, *Mechanism Design via Differential Privacy*, FOCS 2007
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree
      metrics*, JCSS 2004

    **Proof Definition:** :doc:`/proofs/tree_em`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=p, size=n, T=float)`` (sized)
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param candidates: the public candidates ``(k, p)``: distinct, finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy loss of one replacement
    :param tree: a public :class:`~opendp_wasserstein.public_candidates.trees.Tree` with ``k``
        leaves, or None
    :param metric: the ground metric ``"l1"``, ``"l2"`` (default) or ``"linf"``
    :return: a Measurement releasing ``k`` int64 multiplicities summing to ``m``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_tree_em
    >>> dp.enable_features("contrib", "idealized-numerics")
    >>> C = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    >>> meas = make_tree_em(
    ...     dp.numpy.array2_domain(num_columns=2, size=100, T=float), dp.symmetric_distance(),
    ...     candidates=C, m=10, epsilon=1.0)
    >>> meas.map(2)
    1.0
    >>> out = meas(np.random.default_rng(0).normal(scale=0.3, size=(100, 2)))
    >>> out.shape, int(out.sum())
    ((4,), 10)
    """
    assert_features("contrib", "idealized-numerics")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError(
            "input_domain must have a public size (array2_domain(..., size=n)): "
            "Tree-EM's score is scaled by n"
        )
    kind = check_metric(input_metric, n)
    cand = check_candidates(candidates)
    check_candidate_dims(cand, d)
    m = check_multiset_size(m)
    eps = check_epsilon(epsilon)
    metric = check_ground_metric(metric)
    # the recursion holds (edge terms + G table + a temporary) N x (m + 1) floats, N <= 2k
    check_memory(
        3 * 8 * 2 * cand.shape[0] * (m + 1.0),
        f"Tree-EM with k = {cand.shape[0]:,} candidates and m = {m:,}",
        "lower m, or use make_tree_projection, whose memory does not grow with m",
    )
    the_tree = resolve_tree(tree, cand, metric)
    t_near = make_nearest_candidate(input_domain, input_metric, cand, metric)
    k = the_tree.k

    def from_counts(counts: np.ndarray) -> np.ndarray:
        return sample_tree_em(
            the_tree, counts, m, eps, as_random_source().derive(SELECTION_STREAM), n=n
        )

    def function(idx: Any) -> np.ndarray:
        return from_counts(np.bincount(np.asarray(idx, dtype=np.int64), minlength=k))

    m_em = make_measurement(
        t_near.output_domain,
        t_near.output_metric,
        max_divergence(),
        function,
        tree_em_privacy_map(kind, eps),
    )
    plan = HistogramPlan(d, n, domain_allows_nan(input_domain), t_near.nearest, from_counts)
    return attach(t_near >> m_em, plan)


then_tree_em = to_then(make_tree_em)
register(make_tree_em)
