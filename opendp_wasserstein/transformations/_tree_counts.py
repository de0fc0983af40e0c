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
from typing import Any

import numpy as np
from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import extrinsic_domain, make_transformation, register, to_then
from opendp_wasserstein.data import check_metric, replacements
from opendp_wasserstein.domains import weighted_l1_distance
from opendp_wasserstein.exact import exact_epsilon, tighten_budget
from opendp_wasserstein.parameters import check_epsilon, check_scales
from opendp_wasserstein.transformations._nearest_candidate import check_index_domain
from opendp_wasserstein.trees import Tree

__all__ = [
    "TreeCounts",
    "TreeCountsDomain",
    "tree_counts_domain",
    "make_tree_counts",
    "then_tree_counts",
    "tree_counts_stability",
    "tree_level_scales",
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
        raise TypeError(f"tree must be an opendp_wasserstein.trees.Tree, got {type(tree).__name__}")
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


def make_tree_counts(input_domain: Domain, input_metric: Metric, tree: Tree, scales: Any) -> Transformation:
    r"""Construct a Transformation from candidate indices to the count below every tree node.

    The output is a :class:`TreeCounts` (a flat int64 vector over the nodes) in the weighted l1
    metric ``l1(s)`` with one scale per level (depth) ``s = scales``.  Stability map: ``d_in
    sum_{j >= 1} 1/sigma_j`` under ``symmetric_distance`` on a sized domain, plus ``d_in /
    sigma_0`` without a public size; ``2 d_in sum_{j >= 1} 1/sigma_j`` under
    ``change_one_distance``; exact over the rationals, rounded up.  Proof: module docstring.

    :param input_domain: a candidate-index domain (the output of ``make_nearest_candidate``)
        whose bounds ``(0, k - 1)`` match the tree's ``k`` leaves
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param tree: the public :class:`~opendp_wasserstein.trees.Tree`
    :param scales: ``sigma_0 .. sigma_h``, one per level (``h = tree.height``)
    :return: a Transformation into :func:`tree_counts_domain`

    :example:

    >>> import opendp.prelude as dp
    >>> from opendp_wasserstein.trees import Tree
    >>> from opendp_wasserstein.transformations import candidate_index_domain, make_tree_counts
    >>> dp.enable_features("contrib")
    >>> tree = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> t = make_tree_counts(candidate_index_domain(3, 4), dp.symmetric_distance(), tree, [1.0, 2.0, 4.0])
    >>> t([0, 1, 1, 2]).counts.tolist()  # root, node 1 (candidates 1, 2), candidates 0, 1, 2
    [4, 3, 1, 2, 1]
    >>> t.map(2)  # 2 * (1/2 + 1/4): the root is not sensitive with a public size
    1.5
    """
    assert_features("contrib")
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be an opendp_wasserstein.trees.Tree, got {type(tree).__name__}")
    k, n = check_index_domain(input_domain, tree.k)
    kind = check_metric(input_metric, n)
    sigma = check_scales(scales, tree.height + 1)

    def function(idx: Any) -> TreeCounts:
        arr = np.asarray(idx, dtype=np.int64)
        if arr.ndim != 1 or (n is not None and arr.size != n):
            raise ValueError("data must be a vector of candidate indices of the domain's size")
        if arr.size and (arr.min() < 0 or arr.max() >= k):
            raise ValueError(f"data must hold candidate indices in [0, {k})")
        counts = tree.subtree_sums(np.bincount(arr, minlength=k).astype(np.int64))
        counts.setflags(write=False)
        return TreeCounts(tree, counts)

    return make_transformation(
        input_domain,
        input_metric,
        tree_counts_domain(tree, n),
        weighted_l1_distance(sigma),
        function,
        tree_counts_stability(kind, n, sigma),
    )


then_tree_counts = to_then(make_tree_counts)
register(make_tree_counts)


def tree_level_scales(tree: Tree, epsilon: float, sized: bool = True) -> tuple[float, ...]:
    r"""The noise schedule ``sigma_0 .. sigma_h`` used by the hierarchical tree projection.

    Noisy subtree masses ``n_v + lambda_v`` are off the truth by ``sum_v w_v |lambda_v| / n`` in
    tree W1, whose mean is about ``sum_j W_j sigma_j / n`` with ``W_j`` the total edge weight
    of level ``j`` (``E|LapZ(sigma)| <= sigma``).  Minimising it under the budget ``2 sum_j
    1/sigma_j = epsilon`` (Lagrange) gives ``sigma_j proportional to W_j^(-1/2)``:

    .. math:: \sigma_j = \frac{2}{\epsilon} \frac{\sum_i \sqrt{W_i}}{\sqrt{W_j}}, \qquad
        \text{error} \approx \frac{2}{\epsilon n} \Big(\sum_j \sqrt{W_j}\Big)^2.

    Heavy levels (near the root of an HST, or levels with many nodes) get less noise; a
    uniform schedule would pay ``(2/epsilon) h sum_j W_j`` instead, never less (Cauchy-Schwarz).
    Without a public size the root count is charged too, with ``W_0`` the mean root-to-leaf
    distance (a relative error ``lambda_0 / n`` in the normalisation moves every point about
    that far).  With a public size ``sigma_0 = 1/epsilon`` is a placeholder (never charged).
    Levels of zero weight get ``W_j = 10^-6 max W``.  The returned schedule spends the budget
    exactly in the map's arithmetic: ``2 sum 1/sigma_j`` over the charged levels is at most
    ``epsilon`` as a rational and rounds up to it.

    :param tree: the public tree
    :param epsilon: the privacy loss of one replacement
    :param sized: whether the number of records is public
    """
    eps = check_epsilon(epsilon)
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be an opendp_wasserstein.trees.Tree, got {type(tree).__name__}")
    h = tree.height
    W = np.bincount(tree.depth, weights=tree.weight, minlength=h + 1)
    W[0] = float(np.mean(tree.root_distance[tree.leaves]))
    charged = list(range(0 if not sized else 1, h + 1))
    if not charged:  # a single node: nothing is sensitive but the size
        return (1.0 / eps,)
    Wc = W[charged]
    top = float(Wc.max()) if Wc.max() > 0 else 1.0
    Wc = np.maximum(Wc, 1e-6 * top)
    root = np.sqrt(Wc)
    sig = (2.0 / eps) * root.sum() / root
    scales = [1.0 / eps] * (h + 1)
    for j, s in zip(charged, sig.tolist(), strict=True):
        scales[j] = float(s)
    return tuple(tighten_budget(scales, charged, eps, adjust=max(charged, key=lambda i: scales[i])))
