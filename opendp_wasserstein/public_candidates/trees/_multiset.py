"""The closest size-m multiset to (inconsistent) target subtree counts: a min-plus programme."""

from __future__ import annotations

from typing import Any

import numpy as np

from opendp_wasserstein.public_candidates.sets import check_multiset_size
from opendp_wasserstein.public_candidates.trees._tree import Tree

__all__ = ["multiset_cost", "closest_multiset"]


def multiset_cost(tree: Tree, targets: Any, counts: Any) -> float:
    """``sum_{v != root} w_v |c_v - t_v|`` for a multiset with leaf ``counts`` (``c_v`` its
    count below ``v``) and per-node ``targets``."""
    t = np.asarray(targets, dtype=np.float64)
    c = tree.subtree_sums(np.asarray(counts, dtype=np.int64))
    return float(np.sum(tree.weight[1:] * np.abs(c[1:] - t[1:])))


def _gather_runs(
    store: dict[str, list[np.ndarray]], where: np.ndarray, nodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Concatenate the stored runs (value, length) of ``nodes``; also return each run's node."""
    group, start, stop = where[nodes, 0], where[nodes, 1], where[nodes, 2]
    vals, lens, owner = [], [], []
    for g in np.unique(group).tolist():
        sel = np.flatnonzero(group == g)
        n_runs = stop[sel] - start[sel]
        total = int(n_runs.sum())
        if total == 0:
            continue
        base = np.repeat(start[sel] - np.concatenate(([0], np.cumsum(n_runs)[:-1])), n_runs)
        idx = base + np.arange(total)
        vals.append(store["val"][g][idx])
        lens.append(store["len"][g][idx])
        owner.append(np.repeat(sel, n_runs))
    if not vals:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(vals), np.concatenate(lens), np.concatenate(owner)


def _merged_child_runs(
    tree: Tree, store: dict, where: np.ndarray, nodes: np.ndarray, N: int, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The slope runs of the children of ``nodes``, merged per parent in increasing slope
    order: ``(vals, lens, owner, kid, before)``, ``owner`` the parent's position in ``nodes``,
    ``kid`` the child a run came from and ``before`` the units of the parent's earlier runs
    (equal slopes ordered by ``rank`` of their child)."""
    kids = _children_of(tree, nodes)
    local = np.empty(N, dtype=np.int64)
    local[nodes] = np.arange(nodes.size)
    vals, lens, kid_owner = _gather_runs(store, where, kids)
    kid = kids[kid_owner]
    owner = local[tree.parent[kid]]
    order = np.lexsort((rank[kid], vals, owner))  # equal slopes: by the children's tie-break rank
    vals, lens, owner, kid = vals[order], lens[order], owner[order], kid[order]
    cum = np.cumsum(lens)
    first = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1))
    before = cum - lens - np.repeat(cum[first] - lens[first], np.diff(np.append(first, owner.size)))
    return vals, lens, owner, kid, before


def closest_multiset(tree: Tree, targets: Any, m: int, tie_break: Any = None) -> np.ndarray:
    r"""The size-``m`` multiset on the leaves minimising ``sum_{v != root} w_v |c_v - t_v|``.

    ``c_v`` is the number of points of the multiset below ``v`` and ``t_v`` a target for it
    (any non-negative floats, not necessarily consistent: noisy subtree counts rescaled to
    ``m``).  With ``t = m x masses`` this is the multiset closest in tree 1-Wasserstein
    distance to the (inconsistent) masses.  **Exact** (up to float ties): the min-plus
    programme ``f_v(c) = min_{sum c_i = c} sum_i g_i(c_i)``, ``g_v(c) = f_v(c) + w_v |c - t_v|``,
    has convex ``g_v``, so ``f_v``'s slopes are the smallest ``m`` of its children's slopes
    merged, and the optimal split of ``c`` takes the ``c`` smallest.  Slopes are held run-length
    encoded (``O(size of subtree)`` runs per node, not ``m``) and every level of the tree is
    processed at once: ``O(N h log N)`` time for ``N`` nodes and height ``h``, independent of
    ``m``.  Equal slopes of two children (ties: several multisets are optimal) are ordered by a
    tie-break rank of the children: their ids by default, a uniformly random permutation of the
    nodes with ``tie_break`` (what the tree projection releases, so that no candidate is
    favoured by its row number).

    :param tree: the tree
    :param targets: one target ``t_v >= 0`` per node (the root's is ignored)
    :param m: the multiset size
    :param tie_break: ``None`` (ties to the lower child id) or a
        :class:`~opendp_wasserstein.noise._source.RandomSource` for uniformly random tie-breaks
    :return: ``k`` multiplicities (int64) summing to ``m``

    :example:

    >>> from opendp_wasserstein.public_candidates.trees import Tree, closest_multiset
    >>> t = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> closest_multiset(t, targets=[4, 3.2, 0.8, 2.9, 0.3], m=4).tolist()  # leaves 2, 3, 4
    [1, 3, 0]
    """
    m = check_multiset_size(m)
    t = np.asarray(targets, dtype=np.float64)
    if t.shape != (tree.num_nodes,):
        raise ValueError(
            f"targets must have one entry per node ({tree.num_nodes}), got shape {t.shape}"
        )
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("targets must be finite and >= 0")
    N = tree.num_nodes
    if N == 1:
        return np.array([m], dtype=np.int64)
    rank = np.arange(N) if tie_break is None else tie_break.permutation(N)
    w = tree.weight
    fl = np.minimum(np.floor(t), float(m)).astype(np.int64)  # slopes 1..fl get -w
    frac = t - np.floor(t)
    mid = np.where((frac > 0) & (fl < m), w * (2.0 * fl + 1.0 - 2.0 * t), np.nan)

    # height of every node, to process bottom-up a whole height at a time
    height = np.zeros(N, dtype=np.int64)
    for lev in range(tree.height, 0, -1):
        nodes = tree.nodes_at_depth(lev)
        np.maximum.at(height, tree.parent[nodes], height[nodes] + 1)
    by_h = np.argsort(height, kind="stable")
    h_ptr = np.searchsorted(height[by_h], np.arange(height.max() + 2))
    store: dict[str, list[np.ndarray]] = {"val": [], "len": []}
    where = np.zeros((N, 3), dtype=np.int64)  # (group, start, stop) of each node's g runs

    def add_edge(
        vals: np.ndarray, lens: np.ndarray, owner: np.ndarray, nodes: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # runs cover slope positions start..end (1-based); add w|c - t| of the owner node
        v = nodes[owner]
        end = np.cumsum(lens)
        first = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1))
        base = np.repeat(end[first] - lens[first], np.diff(np.append(first, owner.size)))
        end = end - base
        start = end - lens + 1
        f, mv, wv = fl[v], mid[v], w[v]
        has_mid = ~np.isnan(mv)
        # piece A: start..min(end, f) gets -w; piece B: f+1 (if has_mid) gets mid;
        # piece C: the rest gets +w
        a_end = np.minimum(end, f)
        a_len = np.maximum(a_end - start + 1, 0)
        b_len = (has_mid & (start <= f + 1) & (f + 1 <= end)).astype(np.int64)
        c_start = np.maximum(start, f + 1 + has_mid)
        c_len = np.maximum(end - c_start + 1, 0)
        pv = np.stack([vals - wv, vals + np.where(has_mid, mv, 0.0), vals + wv], axis=1).reshape(-1)
        pl = np.stack([a_len, b_len, c_len], axis=1).reshape(-1)
        po = np.repeat(owner, 3)
        keep = pl > 0
        return pv[keep], pl[keep], po[keep]

    for h in range(height.max() + 1):
        nodes = by_h[h_ptr[h] : h_ptr[h + 1]]
        if h == 0:  # leaves: f = 0, one run of m zero slopes
            vals = np.zeros(nodes.size)
            lens = np.full(nodes.size, m, dtype=np.int64)
            owner = np.arange(nodes.size)
        else:
            vals, lens, owner, _, before = _merged_child_runs(tree, store, where, nodes, N, rank)
            # keep the m smallest slopes of every node
            lens = np.clip(m - before, 0, lens)
            keep = lens > 0
            vals, lens, owner = vals[keep], lens[keep], owner[keep]
        if h < height.max():  # the root has no edge
            vals, lens, owner = add_edge(vals, lens, owner, nodes)
        g = len(store["val"])
        store["val"].append(vals)
        store["len"].append(lens)
        counts = np.bincount(owner, minlength=nodes.size)
        stops = np.cumsum(counts)
        where[nodes, 0] = g
        where[nodes, 1] = stops - counts
        where[nodes, 2] = stops

    # top-down: split every node's count among its children by the c smallest slopes
    c = np.zeros(N, dtype=np.int64)
    c[0] = m
    for lev in range(tree.height):
        nodes = tree.nodes_at_depth(lev)
        nodes = nodes[(tree.degree[nodes] > 0) & (c[nodes] > 0)]
        if nodes.size == 0:
            continue
        _, lens, owner, kid, before = _merged_child_runs(tree, store, where, nodes, N, rank)
        take = np.clip(c[nodes][owner] - before, 0, lens)
        np.add.at(c, kid, take)
    return c[tree.leaves]


def _children_of(tree: Tree, nodes: np.ndarray) -> np.ndarray:
    """The children of ``nodes``, concatenated in node order."""
    starts = tree.child_ptr[nodes]
    deg = tree.degree[nodes]
    total = int(deg.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    base = np.repeat(starts - np.concatenate(([0], np.cumsum(deg)[:-1])), deg)
    return tree.child_ids[base + np.arange(total)]
