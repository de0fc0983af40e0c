r"""Public noise schedules of a public tree (hierarchical tree projection), pure DP and zCDP.

The error of noisy subtree masses on a tree is about ``sum_j W_j sigma_j / n`` in tree W1
(``W_j`` the total edge weight at depth ``j``).  Under the pure-DP budget ``2 sum_j 1/sigma_j =
epsilon`` it is smallest for ``sigma_j proportional to W_j^(-1/2)`` (:func:`tree_level_scales`),
under the zCDP budget ``sum_j 1/sigma_j^2 = rho`` for ``sigma_j proportional to W_j^(-1/3)``
(:func:`tree_level_scales_zcdp`).  The exact zCDP cost of a schedule uses the level profiles of
the pairs of leaves that move the counts most (:func:`tree_pair_profiles`), the same ones the
squared-l2 stability map of :func:`~opendp_wasserstein.transformations.make_tree_counts` uses.
Every function reads the public tree and public parameters only.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from opendp_wasserstein.core.exact import inverse_squares, tighten_budget
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.public_candidates.trees import Tree
from opendp_wasserstein.schedules.zcdp import Budget, tighten_exact

__all__ = [
    "tree_level_scales",
    "tree_level_scales_zcdp",
    "tree_zcdp_budget",
    "tree_pair_profiles",
    "pair_value",
]


def charged_level_weights(tree: Tree, sized: bool) -> tuple[int, list[int], np.ndarray]:
    """``(height, charged levels, their weights W_j)``: ``W_j`` the total edge weight at depth
    ``j`` (``W_0`` the mean root-to-leaf distance, charged only without a public size), levels
    of zero weight raised to ``10^-6 max W``."""
    if not isinstance(tree, Tree):
        raise TypeError(
            "tree must be an opendp_wasserstein.public_candidates.trees.Tree, got "
            f"{type(tree).__name__}"
        )
    h = tree.height
    charged = list(range(0 if not sized else 1, h + 1))
    W = np.bincount(tree.depth, weights=tree.weight, minlength=h + 1)
    W[0] = float(np.mean(tree.root_distance[tree.leaves]))
    Wc = W[charged]
    top = float(Wc.max()) if Wc.size and Wc.max() > 0 else 1.0
    return h, charged, np.maximum(Wc, 1e-6 * top)


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
    h, charged, Wc = charged_level_weights(tree, sized)
    if not charged:  # a single node: nothing is sensitive but the size
        return (1.0 / eps,)
    root = np.sqrt(Wc)
    sig = (2.0 / eps) * root.sum() / root
    scales = [1.0 / eps] * (h + 1)
    for j, s in zip(charged, sig.tolist(), strict=True):
        scales[j] = float(s)
    return tuple(tighten_budget(scales, charged, eps, adjust=max(charged, key=lambda i: scales[i])))


def tree_level_scales_zcdp(tree: Tree, rho: float, sized: bool = True) -> tuple[float, ...]:
    r"""The zCDP noise schedule ``sigma_0 .. sigma_h`` for hierarchical tree projection.

    The expected tree-W1 error of the noisy masses is about ``sum_j W_j sigma_j / n`` (``W_j``
    the total edge weight at depth ``j``; ``E|N_Z(0, sigma^2)| <= sigma``).  Minimising it
    under ``sum_j 1/sigma_j^2 = rho`` gives ``sigma_j proportional to W_j^(-1/3)`` (module
    docstring); a level is charged at most twice per replacement, so this spends at most
    ``rho``.  The exact sensitivity can be lower (levels only one of the two deepest leaves
    reaches are charged once), so all scales are then shrunk by one factor until the exact
    cost is ``rho``.  Without a public size the root is charged too (``W_0`` the mean
    root-to-leaf distance) and one replacement (``d_in = 2``: two rows) costs
    ``2 sum_{j>=0} 1/sigma_j^2``; with a public size ``sigma_0 = 1/sqrt(rho)`` is a placeholder.
    Levels of zero weight get ``W_j = 10^-6 max W``.  The exact cost is at most ``rho`` and
    rounds up to it: ``make_tree_counts(..., output_metric="l2sq") >> make_tree_count_gaussian``
    has ``map(2) == rho`` (``symmetric_distance``) and ``map(1) == rho`` (``change_one_distance``).

    :param tree: the public tree
    :param rho: the zCDP cost of one replacement
    :param sized: whether the number of records is public

    :example:

    >>> from opendp_wasserstein.core.exact import round_up
    >>> from opendp_wasserstein.public_candidates.trees import Tree
    >>> from opendp_wasserstein.schedules.tree import tree_level_scales_zcdp, tree_zcdp_budget
    >>> tree = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> sigma = tree_level_scales_zcdp(tree, rho=0.5)
    >>> len(sigma), round_up(tree_zcdp_budget(tree)(sigma))
    (3, 0.5)
    """
    r = check_epsilon(rho, "rho")
    h, charged, Wc = charged_level_weights(tree, sized)
    placeholder = 1.0 / math.sqrt(r)
    if not charged:  # a single node: nothing is sensitive but the size
        return (placeholder,)
    per_level = r if sized else r / 2  # sum of 1/sigma_j^2 over the charged levels
    sig = np.sqrt(np.sum(Wc ** (2.0 / 3.0)) / per_level) * Wc ** (-1.0 / 3.0)
    scales = [placeholder] * (h + 1)
    for j, s in zip(charged, sig.tolist(), strict=True):
        scales[j] = float(s)
    budget = tree_zcdp_budget(tree, sized)
    exact = float(budget(scales))
    if 0.0 < exact < r:  # the exact sensitivity is below the per-level bound: less noise
        shrink = math.sqrt(exact / r)
        scales = [s * shrink if j in charged else s for j, s in enumerate(scales)]
    order = sorted(charged, key=lambda j: -(Wc[charged.index(j)] ** (-1.0 / 3.0)))
    return tuple(tighten_exact(scales, budget, r, order))


def tree_zcdp_budget(tree: Tree, sized: bool = True) -> Budget:
    """The exact zCDP cost of one replacement as a function of the tree schedule: ``rho =
    map(2) / 2`` of ``make_tree_counts(..., output_metric="l2sq")`` -- half the pair value of
    :func:`tree_pair_profiles` with a public
    size, ``2 (1/sigma_0^2 + sum_{j>=1} 1/sigma_j^2)`` without."""
    if sized:
        profiles = tree_pair_profiles(tree)
        return lambda sc: pair_value(profiles, inverse_squares(sc)) / 2
    return lambda sc: 2 * sum(inverse_squares(sc), Fraction(0))


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
        (b[..., 0] >= a[..., 0])
        & (b[..., 1] >= a[..., 1])
        & (b[..., 2] <= a[..., 2])
        & np.any(b != a, axis=2)
    ).any(axis=1)
    return rows[~dominated]


def pair_value(profiles: np.ndarray, w: list[Fraction]) -> Fraction:
    """``max over profiles of W(D1) + W(D2) - 2 W(dv)`` (0 without pairs), exact."""
    prefix = [Fraction(0)]
    for wj in w[1:]:
        prefix.append(prefix[-1] + wj)
    return max(
        (prefix[a] + prefix[b] - 2 * prefix[v] for a, b, v in profiles.tolist()),
        default=Fraction(0),
    )
