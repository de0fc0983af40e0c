r"""The hierarchical count transformation of a public tree (the tree analogue of
:func:`~opendp_wasserstein.transformations.make_dyadic_counts`).

**Levels.**  The level of a node is its depth (edges from the root).  A record at candidate
``i`` is counted in exactly the nodes of the path from the root to leaf ``i``, one node per
depth ``0 .. depth(leaf i)``; leaves may sit at different depths (compressed trees), and a
record simply has no node at the depths below its leaf.  So *every record is in at most one
node per level*, the premise of the l1(s) accounting (Zare Moayedi et al. 2026, Lemma A.3):
replacing one record lowers one count and raises one count per level (by 1 each, or not at all
below a leaf), an l1 change of at most 2 per level; adding or removing one changes at most one
count per level by 1; the root changes only when the size changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import extrinsic_domain, make_transformation, register, to_then
from opendp_wasserstein.core.data import check_metric, replacements, whole_replacements
from opendp_wasserstein.core.exact import exact_epsilon, inverse_squares, round_up
from opendp_wasserstein.core.metrics import weighted_l1_distance, weighted_l2sq_distance
from opendp_wasserstein.core.parameters import check_scales
from opendp_wasserstein.public_candidates.trees import Tree
from opendp_wasserstein.schedules.tree import pair_value, tree_pair_profiles
from opendp_wasserstein.transformations._dyadic_counts import check_output_metric
from opendp_wasserstein.transformations._nearest_candidate import check_index_domain

__all__ = [
    "TreeCounts",
    "TreeCountsDomain",
    "tree_counts_domain",
    "make_tree_counts",
    "then_tree_counts",
    "tree_counts_stability",
    "tree_counts_l2sq_stability",
]


@dataclass(frozen=True)
class TreeCounts:
    """The exact count of records below every node of ``tree`` (private: the input of the
    tree count Laplace measurement, never a release)."""

    tree: Tree
    counts: np.ndarray  # int64, one per node (root first)


@dataclass(frozen=True)
class TreeCountsDomain:
    """:class:`TreeCounts` of one public tree; ``size`` the public number of records or None."""

    tree: Tree
    size: int | None


def tree_counts_domain(tree: Tree, size: int | None) -> Domain:
    """The domain of :class:`TreeCounts` on ``tree`` (identified by the tree's digest)."""
    if not isinstance(tree, Tree):
        raise TypeError(
            "tree must be an opendp_wasserstein.public_candidates.trees.Tree, got "
            f"{type(tree).__name__}"
        )
    desc = TreeCountsDomain(tree, size)

    def member(x: Any) -> bool:
        return isinstance(x, TreeCounts) and x.tree == tree

    return extrinsic_domain(f"TreeCountsDomain(tree={tree!r}, size={size})", member, desc)


def tree_counts_stability(metric_kind: str, size: int | None, scales: tuple[float, ...]) -> Any:
    """``d_in -> 2 replacements(d_in) sum_{sensitive levels} 1/sigma_j``, exact, rounded up.

    Level 0 (the root) is sensitive only when the size is not public and the metric is
    ``symmetric_distance``; every other level moves by at most 2 per replacement (module
    docstring).
    """
    root_sensitive = size is None and metric_kind == "symmetric"
    sensitive = scales if root_sensitive else scales[1:]

    def stability_map(d_in: int) -> float:
        return exact_epsilon(2 * replacements(metric_kind, d_in), sensitive)

    return stability_map


def tree_counts_l2sq_stability(
    metric_kind: str, size: int | None, tree: Tree, scales: tuple[float, ...]
) -> Any:
    """The stability map ``d_in -> ||F(X) - F(X')||_{l2sq(s)}`` on tree counts, exact, rounded up.

    With a public size (``symmetric_distance``: ``m = d_in // 2`` replacements;
    ``change_one_distance``: ``m = d_in``): ``m^2 max_{p, q} (W(depth p) + W(depth q) - 2
    W(depth lca(p, q)))`` over pairs of leaves (:func:`tree_pair_profiles`), ``W(t) =
    sum_{1 <= j <= t} 1/sigma_j^2``.  Without a public size (``k = d_in`` rows added or
    removed): ``k^2 (1/sigma_0^2 + W(height))``.  Both are attained (``m <= n``), so the map is
    the exact sensitivity.  Proof: ``docs/proofs/gaussian_counts.rst``.
    """
    w = inverse_squares(scales)
    if size is None and metric_kind == "symmetric":
        per_row = w[0] + sum(w[1:], Fraction(0))
        kind = "unsized"
    else:
        per_row = pair_value(tree_pair_profiles(tree), w)
        kind = metric_kind

    def stability_map(d_in: int) -> float:
        m = whole_replacements(kind, d_in)
        return round_up(m * m * per_row)

    return stability_map


def tree_counts_of_histogram(tree: Tree, histogram: np.ndarray) -> TreeCounts:
    """The :class:`TreeCounts` of records whose candidate-index histogram is ``histogram``."""
    counts = tree.subtree_sums(np.asarray(histogram).astype(np.int64))
    counts.setflags(write=False)
    return TreeCounts(tree, counts)


def make_tree_counts(
    input_domain: Domain,
    input_metric: Metric,
    tree: Tree,
    scales: Any,
    output_metric: str = "l1",
) -> Transformation:
    r"""Construct a Transformation from candidate indices to the count below every tree node.

    The output is a :class:`TreeCounts` (a flat int64 vector over the nodes) in the weighted l1
    metric ``l1(s)`` with one scale per level (depth) ``s = scales``.  Stability map: ``d_in
    sum_{j >= 1} 1/sigma_j`` under ``symmetric_distance`` on a sized domain, plus ``d_in /
    sigma_0`` without a public size; ``2 d_in sum_{j >= 1} 1/sigma_j`` under
    ``change_one_distance``; exact over the rationals, rounded up.  Proof: module docstring.

    With ``output_metric="l2sq"`` the output metric is ``l2sq(s)``
    (:func:`~opendp_wasserstein.core.metrics.weighted_l2sq_distance`, for discrete Gaussian noise
    and zCDP) and the map is the exact squared-l2 sensitivity, quadratic in the number of
    changed rows (:func:`tree_counts_l2sq_stability`).

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree
      metrics*, JCSS 2004

    **Proof Definition:** :doc:`/proofs/tree_projection`

    :param input_domain: a candidate-index domain (the output of ``make_nearest_candidate``)
        whose bounds ``(0, k - 1)`` match the tree's ``k`` leaves
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param tree: the public :class:`~opendp_wasserstein.public_candidates.trees.Tree`
    :param scales: ``sigma_0 .. sigma_h``, one per level (``h = tree.height``)
    :param output_metric: ``"l1"`` (default; ``l1(s)``, for discrete Laplace noise) or
        ``"l2sq"`` (``l2sq(s)``, for discrete Gaussian noise)
    :return: a Transformation into :func:`tree_counts_domain`

    :example:

    >>> import opendp.prelude as dp
    >>> from opendp_wasserstein.public_candidates.trees import Tree
    >>> from opendp_wasserstein.transformations import candidate_index_domain, make_tree_counts
    >>> dp.enable_features("contrib")
    >>> tree = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> t = make_tree_counts(
    ...     candidate_index_domain(3, 4), dp.symmetric_distance(), tree, [1.0, 2.0, 4.0])
    >>> t([0, 1, 1, 2]).counts.tolist()  # root, node 1 (candidates 1, 2), candidates 0, 1, 2
    [4, 3, 1, 2, 1]
    >>> t.map(2)  # 2 * (1/2 + 1/4): the root is not sensitive with a public size
    1.5
    >>> t2 = make_tree_counts(candidate_index_domain(3, 4), dp.symmetric_distance(), tree,
    ...                       [1.0, 2.0, 4.0], output_metric="l2sq")
    >>> t2.map(2)  # one record from candidate 0 (depth 1) to candidate 1 (depth 2): 2/4 + 1/16
    0.5625
    """
    assert_features("contrib")
    if not isinstance(tree, Tree):
        raise TypeError(
            "tree must be an opendp_wasserstein.public_candidates.trees.Tree, got "
            f"{type(tree).__name__}"
        )
    k, n = check_index_domain(input_domain, tree.k)
    kind = check_metric(input_metric, n)
    sigma = check_scales(scales, tree.height + 1)
    output_metric = check_output_metric(output_metric)

    def function(idx: Any) -> TreeCounts:
        arr = np.asarray(idx, dtype=np.int64)
        if arr.ndim != 1 or (n is not None and arr.size != n):
            raise ValueError("data must be a vector of candidate indices of the domain's size")
        if arr.size and (arr.min() < 0 or arr.max() >= k):
            raise ValueError(f"data must hold candidate indices in [0, {k})")
        return tree_counts_of_histogram(tree, np.bincount(arr, minlength=k))

    return make_transformation(
        input_domain,
        input_metric,
        tree_counts_domain(tree, n),
        weighted_l1_distance(sigma) if output_metric == "l1" else weighted_l2sq_distance(sigma),
        function,
        tree_counts_stability(kind, n, sigma)
        if output_metric == "l1"
        else tree_counts_l2sq_stability(kind, n, tree, sigma),
    )


then_tree_counts = to_then(make_tree_counts)
register(make_tree_counts)
