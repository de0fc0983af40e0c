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
from opendp_wasserstein.core.exact import exact_epsilon, inverse_squares, round_up, tighten_budget
from opendp_wasserstein.core.metrics import weighted_l1_distance, weighted_l2sq_distance
from opendp_wasserstein.core.parameters import check_epsilon, check_scales
from opendp_wasserstein.public_candidates.trees import Tree
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
    "tree_pair_profiles",
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
        raise TypeError(f"tree must be an opendp_wasserstein.public_candidates.trees.Tree, got {type(tree).__name__}")
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


def tree_pair_profiles(tree: Tree) -> np.ndarray:
    r"""The level profiles of the pairs of leaves that can move the counts most (public).

    Replacing ``m`` records at leaf ``p`` by ``m`` records at leaf ``q`` whose lowest common
    ancestor is ``v`` moves, at every level ``j``, two counts by ``m`` for ``depth(v) < j <=
    min(depth p, depth q)`` and one count by ``m`` for ``min < j <= max``: a squared l2 change
    of ``m^2 (W(depth p) + W(depth q) - 2 W(depth v))`` with ``W(t) = sum_{1 <= j <= t}
    1/sigma_j^2``.  ``W`` is non-decreasing, so for each ``v`` the best pair takes the two
    deepest leaves below two *different* children of ``v``.  Returns the rows ``(D1, D2,
    depth v)`` of those pairs, one per distinct profile, without the rows another row dominates
    (``D1' >= D1``, ``D2' >= D2``, ``depth v' <= depth v``); empty for a one-leaf tree.

    :param tree: the public tree
    :return: ``int64`` array of shape ``(T, 3)``
    """
    maxd = tree.depth.astype(np.int64).copy()  # deepest leaf below every node
    for lev in range(tree.height, 0, -1):
        nodes = tree.nodes_at_depth(lev)
        np.maximum.at(maxd, tree.parent[nodes], maxd[nodes])
    child = tree.child_ids
    order = np.lexsort((maxd[child], tree.parent[child]))  # by parent, then deepest leaf
    ranked = maxd[child[order]]
    inner = np.flatnonzero(tree.degree >= 2)
    end = tree.child_ptr[inner + 1]  # groups by parent are the CSR groups, in node order
    rows = np.unique(
        np.stack([ranked[end - 1], ranked[end - 2], tree.depth[inner]], axis=1), axis=0
    ).astype(np.int64)
    if rows.shape[0] <= 1:
        return rows.reshape(-1, 3)
    a = rows[:, None, :]
    b = rows[None, :, :]
    dominated = (
        (b[..., 0] >= a[..., 0]) & (b[..., 1] >= a[..., 1]) & (b[..., 2] <= a[..., 2])
        & np.any(b != a, axis=2)
    ).any(axis=1)
    return rows[~dominated]


def _pair_value(profiles: np.ndarray, w: list[Fraction]) -> Fraction:
    """``max over profiles of W(D1) + W(D2) - 2 W(dv)`` (0 without pairs), exact."""
    prefix = [Fraction(0)]
    for wj in w[1:]:
        prefix.append(prefix[-1] + wj)
    return max(
        (prefix[a] + prefix[b] - 2 * prefix[v] for a, b, v in profiles.tolist()),
        default=Fraction(0),
    )


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
        per_row = _pair_value(tree_pair_profiles(tree), w)
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
    * Fakcharoenphol, Rao, Talwar, *A tight bound on approximating arbitrary metrics by tree metrics*, JCSS 2004

    **Proof Definition:** ``docs/proofs/tree_projection.rst``

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
    >>> t = make_tree_counts(candidate_index_domain(3, 4), dp.symmetric_distance(), tree, [1.0, 2.0, 4.0])
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
        raise TypeError(f"tree must be an opendp_wasserstein.public_candidates.trees.Tree, got {type(tree).__name__}")
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
        raise TypeError(f"tree must be an opendp_wasserstein.public_candidates.trees.Tree, got {type(tree).__name__}")
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
