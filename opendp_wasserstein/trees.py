"""Tree metrics on public candidate sets (Zare Moayedi et al., *Private selection from public
candidates with Wasserstein guarantees*; Fakcharoenphol, Rao, Talwar 2004; Indyk 2004).

A :class:`Tree` is given by ``parent`` and ``weight`` arrays: node 0 is the root
(``parent[0] = -1``), ``weight[i]`` is the weight of the edge from node ``i`` to its parent, and
the leaves (nodes without children), taken in increasing node id, are the candidates
``0 .. k-1``.  The tree metric ``d_T`` between two candidates is the weight of the path between
their leaves, and the 1-Wasserstein distance between two measures on the leaves has the closed
form ``W1_T(mu, nu) = sum_v w_v |mu(T_v) - nu(T_v)|`` (``T_v`` the leaves below ``v``).

Two builders read only public candidates (no privacy cost):

- :func:`frt_tree`, the FRT / HST embedding of a general metric: a random permutation and a
  random radius ``beta`` carve balls of radius ``beta 2^i delta / 2`` at every scale ``i``;
  dominating (``d_T >= d`` on the candidates) with ``E[d_T / d] = O(log k)``;
- :func:`quadtree`, a randomly shifted quadtree for ``l_p`` data in a public box; dominating,
  expected distortion ``O(p log(aspect ratio))``.

Both produce compressed trees (chains of single-child nodes merged, weights summed: leaf
distances are unchanged), so leaves sit at different depths.  Internal nodes are numbered
first (parents before children), then the leaves, leaf ``I + i`` for candidate ``i``.

:func:`closest_multiset` solves ``min_c sum_v w_v |c_v - t_v|`` over size-``m`` multisets on the
leaves (``c_v`` its count in ``T_v``) by a min-plus dynamic programme with convex piecewise-
linear node costs; it is the postprocessor of the hierarchical tree projection.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

from opendp_wasserstein._random import RandomSource, as_random_source
from opendp_wasserstein.candidates import GROUND_METRICS, check_candidates, check_multiset_size
from opendp_wasserstein.domains import as_box

__all__ = [
    "Tree",
    "tree_w1",
    "frt_tree",
    "quadtree",
    "closest_multiset",
    "multiset_cost",
    "distortion",
    "TREE_STREAM",
    "resolve_tree",
]

#: the stream tag (see :meth:`RandomSource.derive`) from which a measurement builds its tree
TREE_STREAM = 16

#: builders multiply every edge weight by this factor, so that domination survives the
#: rounding of the distances they compare (a relative slack of about 1e-9)
_SLACK = 1.0 + 2.0**-30


# ---------------------------------------------------------------------------------------------
# the tree type


class Tree:
    """A rooted tree with weighted edges whose leaves are the candidates.

    :param parent: ``parent[i]`` the parent of node ``i``; ``parent[0] = -1`` (node 0 is the
        root); every node must reach the root
    :param weight: ``weight[i] >= 0`` the weight of the edge from ``i`` to its parent
        (``weight[0]`` is ignored and stored as 0)

    Trees are immutable (read-only arrays) and compare equal when their arrays are equal; the
    ``digest`` (SHA-256 of the arrays) names the tree in domain identifiers.

    :example:

    >>> from opendp_wasserstein.trees import Tree
    >>> t = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> t.k, t.leaves.tolist(), t.diameter(), t.leaf_distance(1, 2)  # leaves: nodes 2, 3, 4
    (3, [2, 3, 4], 3.5, 1.0)
    """

    def __init__(self, parent: Any, weight: Any) -> None:
        try:
            par = np.array(parent, dtype=np.int64, copy=True)
        except (TypeError, ValueError, OverflowError):
            raise TypeError("parent must be a sequence of integers") from None
        if par.ndim != 1 or par.size == 0:
            raise ValueError("parent must be a non-empty one-dimensional array")
        try:
            w = np.array(weight, dtype=np.float64, copy=True)
        except (TypeError, ValueError):
            raise TypeError("weight must be a sequence of numbers") from None
        if w.shape != par.shape:
            raise ValueError(f"weight must have one entry per node ({par.size}), got shape {w.shape}")
        N = par.size
        if par[0] != -1:
            raise ValueError("parent[0] must be -1 (node 0 is the root)")
        if N > 1 and (par[1:].min() < 0 or par[1:].max() >= N):
            raise ValueError("parent must hold node ids in [0, len(parent)) for every node but the root")
        if N > 1 and np.any(par[1:] == np.arange(1, N)):
            raise ValueError("parent must not make a node its own parent")
        w[0] = 0.0
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weight must be finite and >= 0")
        # depth by pointer jumping; a node that never reaches the root lies on a cycle
        up = par.copy()
        up[0] = 0
        hops = np.ones(N, dtype=np.int64)
        hops[0] = 0
        for _ in range(max(1, int(N).bit_length() + 1)):
            hops = hops + hops[up]
            up = up[up]
        if np.any(up != 0):
            raise ValueError("parent must describe a tree rooted at node 0 (a cycle was found)")
        self.parent = par
        self.weight = w
        self.depth = hops
        self.height = int(hops.max())
        # children in CSR form, in increasing node id
        child = np.arange(1, N)
        order = np.argsort(par[1:], kind="stable")
        self.child_ids = child[order]
        self.child_ptr = np.concatenate(([0], np.cumsum(np.bincount(par[1:], minlength=N))))
        self.degree = np.diff(self.child_ptr)
        self.leaves = np.flatnonzero(self.degree == 0)
        self.leaf_index = np.full(N, -1, dtype=np.int64)
        self.leaf_index[self.leaves] = np.arange(self.leaves.size)
        # nodes grouped by depth (level order)
        self.level_order = np.argsort(hops, kind="stable")
        self.level_ptr = np.searchsorted(hops[self.level_order], np.arange(self.height + 2))
        root_dist = np.zeros(N)
        for lev in range(1, self.height + 1):
            nodes = self.level_order[self.level_ptr[lev] : self.level_ptr[lev + 1]]
            root_dist[nodes] = root_dist[par[nodes]] + w[nodes]
        self.root_distance = root_dist
        for arr in (self.parent, self.weight, self.depth, self.child_ids, self.child_ptr,
                    self.degree, self.leaves, self.leaf_index, self.level_order, self.level_ptr,
                    self.root_distance):
            arr.setflags(write=False)
        h = hashlib.sha256()
        h.update(par.tobytes())
        h.update(w.tobytes())
        self.digest = h.hexdigest()[:24]
        self._diameter: float | None = None

    # -- basic facts ------------------------------------------------------------------------

    @property
    def num_nodes(self) -> int:
        """The number of nodes."""
        return int(self.parent.size)

    @property
    def k(self) -> int:
        """The number of leaves (candidates)."""
        return int(self.leaves.size)

    def children(self, v: int) -> np.ndarray:
        """The children of node ``v`` in increasing id."""
        return self.child_ids[self.child_ptr[v] : self.child_ptr[v + 1]]

    def nodes_at_depth(self, depth: int) -> np.ndarray:
        """The nodes at ``depth`` edges from the root."""
        return self.level_order[self.level_ptr[depth] : self.level_ptr[depth + 1]]

    def __repr__(self) -> str:
        return f"Tree(nodes={self.num_nodes}, leaves={self.k}, height={self.height}, digest={self.digest})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Tree)
            and self.digest == other.digest
            and np.array_equal(self.parent, other.parent)
            and np.array_equal(self.weight, other.weight)
        )

    def __hash__(self) -> int:
        return hash(self.digest)

    # -- metric ------------------------------------------------------------------------------

    def subtree_sums(self, leaf_values: Any) -> np.ndarray:
        """``s[v] = sum of leaf_values over the leaves below v`` for every node (same dtype kind).

        :param leaf_values: one value per candidate (length ``k``), int or float
        """
        vals = np.asarray(leaf_values)
        if vals.shape != (self.k,):
            raise ValueError(f"leaf values must have one entry per leaf ({self.k}), got shape {vals.shape}")
        integer = vals.dtype.kind in "iub"
        out = np.zeros(self.num_nodes, dtype=np.int64 if integer else np.float64)
        out[self.leaves] = vals
        for lev in range(self.height, 0, -1):
            nodes = self.nodes_at_depth(lev)
            np.add.at(out, self.parent[nodes], out[nodes])
        return out

    def diameter(self) -> float:
        """The largest tree distance between two leaves (0 for a single leaf)."""
        if self._diameter is None:
            N = self.num_nodes
            h = np.zeros(N)  # longest path from v down to a leaf
            for lev in range(self.height, 0, -1):
                nodes = self.nodes_at_depth(lev)
                np.maximum.at(h, self.parent[nodes], h[nodes] + self.weight[nodes])
            if N == 1:
                self._diameter = 0.0
            else:
                val = h[1:] + self.weight[1:]
                par = self.parent[1:]
                order = np.lexsort((val, par))
                vs, ps = val[order], par[order]
                pair = ps[1:] == ps[:-1]  # the two largest of a group end the group
                last = np.append(ps[1:] != ps[:-1], True)[1:]
                best = vs[1:][pair & last] + vs[:-1][pair & last]
                self._diameter = float(best.max()) if best.size else 0.0
        return self._diameter

    def leaf_distance(self, i: Any, j: Any) -> Any:
        """The tree distance between candidates ``i`` and ``j`` (scalars or arrays)."""
        ii = np.asarray(i, dtype=np.int64)
        jj = np.asarray(j, dtype=np.int64)
        if ii.size and (ii.min() < 0 or ii.max() >= self.k or jj.min() < 0 or jj.max() >= self.k):
            raise ValueError(f"candidate indices must be in [0, {self.k})")
        u, v = np.broadcast_arrays(self.leaves[ii], self.leaves[jj])
        u, v = u.copy(), v.copy()
        dist = np.zeros(u.shape)
        while True:
            diff = u != v
            if not np.any(diff):
                break
            du, dv = self.depth[u], self.depth[v]
            mu = diff & (du >= dv)
            mv = diff & (dv > du)
            dist[mu] += self.weight[u[mu]]
            u[mu] = self.parent[u[mu]]
            dist[mv] += self.weight[v[mv]]
            v[mv] = self.parent[v[mv]]
        return float(dist) if dist.ndim == 0 else dist

    def w1(self, mu: Any, nu: Any) -> float:
        """``W1_T(mu, nu)``; see :func:`tree_w1`."""
        return tree_w1(self, mu, nu)


def tree_w1(tree: Tree, mu: Any, nu: Any) -> float:
    """The tree 1-Wasserstein distance ``sum_v w_v |mu(T_v) - nu(T_v)|`` between two measures on
    the leaves, each given as ``k`` non-negative weights and normalised to total mass one.

    :example:

    >>> from opendp_wasserstein.trees import Tree, tree_w1
    >>> t = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> tree_w1(t, [1, 0, 0], [0, 0, 1])  # all mass from leaf node 2 to leaf node 4
    3.5
    """
    a = np.asarray(mu, dtype=np.float64)
    b = np.asarray(nu, dtype=np.float64)
    for name, x in (("mu", a), ("nu", b)):
        if x.shape != (tree.k,):
            raise ValueError(f"{name} must have one entry per leaf ({tree.k}), got shape {x.shape}")
        if not np.all(np.isfinite(x)) or np.any(x < 0) or x.sum() <= 0:
            raise ValueError(f"{name} must be finite, non-negative and not all zero")
    sa = tree.subtree_sums(a / a.sum())
    sb = tree.subtree_sums(b / b.sum())
    return float(np.sum(tree.weight * np.abs(sa - sb)))


def distortion(tree: Tree, points: Any, metric: str = "l2", pairs: int = 20000, seed: int = 0) -> dict[str, float]:
    """Measured distortion of a tree on its candidates: ``d_T / d`` over random pairs (all pairs
    when there are fewer than ``pairs``).  For evaluation only: it draws with a numpy generator.

    :return: ``{"mean": ..., "median": ..., "max": ..., "min": ...}`` of ``d_T / d``
    """
    pts = check_candidates(points, "points")
    k = pts.shape[0]
    if k < 2:
        raise ValueError("points must have at least two rows to measure distortion")
    if k * (k - 1) // 2 <= pairs:
        i, j = np.triu_indices(k, 1)
    else:
        gen = RandomSource(seed)  # the package's one source of randomness (seeded: public pairs)
        i = gen.integers(k, pairs)
        j = gen.integers(k - 1, pairs)
        j = j + (j >= i)
    d = _pair_distance(pts[i], pts[j], metric)
    ratio = tree.leaf_distance(i, j) / d
    return {
        "mean": float(ratio.mean()),
        "median": float(np.median(ratio)),
        "max": float(ratio.max()),
        "min": float(ratio.min()),
    }


def _pair_distance(x: np.ndarray, y: np.ndarray, metric: str) -> np.ndarray:
    p = GROUND_METRICS[metric]
    diff = np.abs(x - y)
    if p == 1.0:
        return diff.sum(axis=1)
    if p == 2.0:
        return np.sqrt((diff * diff).sum(axis=1))
    return diff.max(axis=1)


# ---------------------------------------------------------------------------------------------
# assembling a compressed tree from a top-down sequence of nested partitions


@dataclass
class _Builder:
    """Nodes of a compressed tree created top-down: a node is created when its parent's set
    splits, and is a leaf once it holds one candidate."""

    parent: list[np.ndarray]
    top: list[np.ndarray]
    point: list[np.ndarray]  # the candidate of a leaf, -1 for internal nodes
    split: dict[int, int]  # the level at which an internal node's children were created
    count: int = 1

    @classmethod
    def start(cls) -> _Builder:
        return cls([np.array([-1])], [np.array([0])], [np.array([-1])], {}, 1)

    def refine(self, node_of: np.ndarray, active: np.ndarray, labels: np.ndarray, level: int) -> np.ndarray:
        """Refine the nodes of the ``active`` candidates by ``labels`` (equal label = same part)
        at ``level``; returns the candidates still in sets of two or more."""
        pts = active
        key_node = node_of[pts]
        # one new part per distinct (node, label) pair
        pair = np.stack([key_node, labels], axis=1)
        uniq, inv = np.unique(pair, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        parts_per_node = np.bincount(uniq[:, 0] - uniq[:, 0].min(), minlength=1) if uniq.size else np.zeros(0)
        node_offset = uniq[:, 0].min() if uniq.size else 0
        splits = parts_per_node[uniq[:, 0] - node_offset] >= 2  # per unique part
        size = np.bincount(inv, minlength=uniq.shape[0])
        new_part = np.flatnonzero(splits)
        for old in np.unique(uniq[new_part, 0]).tolist():
            self.split[int(old)] = level
        ids = np.full(uniq.shape[0], -1, dtype=np.int64)
        ids[new_part] = self.count + np.arange(new_part.size)
        self.count += int(new_part.size)
        self.parent.append(uniq[new_part, 0])
        self.top.append(np.full(new_part.size, level, dtype=np.int64))
        leaf_of_part = np.full(uniq.shape[0], -1, dtype=np.int64)
        single = size == 1
        leaf_of_part[inv[single[inv]]] = pts[single[inv]]
        self.point.append(leaf_of_part[new_part])
        moved = splits[inv]
        node_of[pts[moved]] = ids[inv[moved]]
        still = ~(single[inv])
        return pts[still]

    def finish(self, k: int, weight_fn: Any) -> Tree:
        parent = np.concatenate(self.parent)
        top = np.concatenate(self.top)
        point = np.concatenate(self.point)
        N = parent.size
        split = np.full(N, -1, dtype=np.int64)
        for node, lev in self.split.items():
            split[node] = lev
        is_leaf = point >= 0
        if int(is_leaf.sum()) != k or np.any(split[~is_leaf] < 0):
            raise RuntimeError("tree construction did not separate every candidate")  # pragma: no cover
        internal = np.flatnonzero(~is_leaf)
        new_id = np.empty(N, dtype=np.int64)
        new_id[internal] = np.arange(internal.size)
        new_id[is_leaf] = internal.size + point[is_leaf]
        w = weight_fn(top, split, is_leaf)
        w[0] = 0.0
        out_parent = np.empty(N, dtype=np.int64)
        out_w = np.empty(N)
        out_parent[new_id] = np.where(parent >= 0, new_id[np.maximum(parent, 0)], -1)
        out_w[new_id] = w
        return Tree(out_parent, out_w)


# ---------------------------------------------------------------------------------------------
# FRT / HST embedding


def _check_metric_or_precomputed(metric: Any) -> str:
    if not isinstance(metric, str) or metric not in (*GROUND_METRICS, "precomputed"):
        raise ValueError(f"metric must be one of {(*GROUND_METRICS, 'precomputed')}, got {metric!r}")
    return metric


def _check_distance_matrix(points: Any) -> np.ndarray:
    D = np.array(points, dtype=np.float64, copy=True)
    if D.ndim != 2 or D.shape[0] != D.shape[1] or D.shape[0] == 0:
        raise ValueError("points must be a square (k, k) distance matrix when metric='precomputed'")
    if not np.all(np.isfinite(D)):
        raise ValueError("points (the distance matrix) must be finite")
    if not np.array_equal(D, D.T) or np.any(np.diag(D) != 0):
        raise ValueError("points (the distance matrix) must be symmetric with a zero diagonal")
    off = D[~np.eye(D.shape[0], dtype=bool)]
    if off.size and off.min() <= 0:
        raise ValueError("points (the distance matrix) must be positive off the diagonal (no duplicates)")
    return D


class _MinRankOracle:
    """``min rank(y) over y with d(x, y) < R``, by KD-trees on rank prefixes of size ``2^j``:
    the first prefix meeting the ball holds its minimum-rank point, and few of its points are
    in the ball (ranks are a uniform permutation)."""

    _K = 16

    def __init__(self, pts: np.ndarray, perm: np.ndarray, p: float) -> None:
        self.pts = pts
        self.p = p
        k = pts.shape[0]
        self.sizes = []
        self.trees = []
        size = 1
        while True:
            size = min(size, k)
            self.sizes.append(size)
            self.trees.append(cKDTree(pts[perm[:size]]))
            if size == k:
                break
            size *= 2

    def query(self, x_idx: np.ndarray, radius: float, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Min rank within ``radius`` of every point ``x_idx`` and the prefix level that found it
        (searching prefixes from ``start`` on; a point is always in its own ball)."""
        res = np.full(x_idx.size, -1, dtype=np.int64)
        jcur = start.copy()
        pending = np.arange(x_idx.size)
        for j in range(int(start.min()) if start.size else 0, len(self.trees)):
            if pending.size == 0:
                break
            sel = pending[jcur[pending] == j]
            if sel.size == 0:
                continue
            size = self.sizes[j]
            kq = min(self._K, size)
            d, idx = self.trees[j].query(self.pts[x_idx[sel]], k=kq, p=self.p, distance_upper_bound=radius)
            idx = np.asarray(idx).reshape(sel.size, kq)
            found = idx < size
            any_found = found[:, 0]
            complete = (~found[:, -1]) | (kq == size)
            best = np.where(found, idx, np.iinfo(np.int64).max).min(axis=1)
            ok = any_found & complete
            res[sel[ok]] = best[ok]
            over = np.flatnonzero(any_found & ~complete)
            if over.size:
                balls = self.trees[j].query_ball_point(self.pts[x_idx[sel[over]]], r=radius, p=self.p)
                # query_ball_point is inclusive (<=): keep the strict ball
                for t, ball in zip(over.tolist(), balls, strict=True):
                    cand = np.asarray(ball, dtype=np.int64)
                    dd = _pair_distance(self.pts[x_idx[sel[t]]][None, :], self.trees[j].data[cand], _metric_name(self.p))
                    cand = cand[dd < radius]
                    res[sel[t]] = int(cand.min()) if cand.size else int(best[t])
            jcur[sel[~any_found]] += 1
            resolved = np.zeros(x_idx.size, dtype=bool)
            resolved[res >= 0] = True
            pending = pending[~resolved[pending]]
        return res, jcur


def _metric_name(p: float) -> str:
    return {1.0: "l1", 2.0: "l2"}.get(p, "linf")


def frt_tree(points: Any, metric: str = "l2", seed: int | RandomSource | None = None) -> Tree:
    r"""A random FRT / HST tree on public points (Fakcharoenphol, Rao and Talwar 2004).

    With ``delta`` the smallest distance between two points, a uniformly random permutation
    ``pi`` and ``beta`` uniform on ``[1/2, 1)``: at level ``i`` (from ``L - 1`` down to 0) every
    point joins the first centre in ``pi`` order within distance ``R_i = beta 2^i delta / 2``
    (strictly), and the level-``i`` parts are those of level ``i + 1`` refined by the centres.
    Level ``L`` (the root) holds everything, with ``delta 2^(L-1)`` at least an upper bound on
    the diameter; level 0 parts are single points since ``2 R_0 < delta``.  The edge from a
    level-``i`` part to its parent weighs ``beta 2^i delta``; chains of unsplit parts are
    merged.  **Domination**: points in one level-``(i+1)`` part share its centre, so
    ``d(x, y) < 2 R_(i+1) = beta 2^(i+1) delta``, while if they part at level ``i`` their tree
    path holds both chains below, ``2 beta delta (2^(i+1) - 1) >= beta 2^(i+1) delta``.
    Expected distortion ``E[d_T(x, y) / d(x, y)] = O(log k)``.  Weights carry a relative slack
    of ``2^-30`` against rounding.

    The centres come from KD-trees over rank prefixes of size ``2^j`` (the minimum-rank point
    of a ball is in the first prefix that meets it), so no ``k x k`` matrix is formed:
    ``O(k log k)`` memory and about ``O(k log k log(aspect ratio))`` time for ``l_p`` metrics.
    With ``metric="precomputed"``, ``points`` is a ``(k, k)`` distance matrix of any metric
    (``O(k^2)`` memory and time per level).

    :param points: the public candidates, ``(k, p)`` (or a distance matrix, see ``metric``)
    :param metric: ``"l1"``, ``"l2"`` (default), ``"linf"`` or ``"precomputed"``
    :param seed: ``None`` (default) for the OS CSPRNG, an int (**not private**: for
        reproducible tests and figures) or a :class:`~opendp_wasserstein._random.RandomSource`
    :return: a :class:`Tree` with leaf ``i`` for point ``i``

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.trees import frt_tree
    >>> pts = np.random.default_rng(0).uniform(size=(50, 2))
    >>> t = frt_tree(pts, seed=1)
    >>> t.k
    50
    >>> bool(t.leaf_distance(0, 1) >= np.linalg.norm(pts[0] - pts[1]))
    True
    """
    metric = _check_metric_or_precomputed(metric)
    rng = as_random_source(seed)
    if metric == "precomputed":
        D = _check_distance_matrix(points)
        k = D.shape[0]
        pts = np.zeros((k, 1))
    else:
        pts = check_candidates(points, "points")
        k = pts.shape[0]
    if k == 1:
        return Tree([-1], [0.0])
    perm = rng.permutation(k)
    rank = np.empty(k, dtype=np.int64)
    rank[perm] = np.arange(k)
    beta = 0.5 + 0.5 * float(rng.uniform(1)[0])
    if metric == "precomputed":
        off = D + np.diag(np.full(k, np.inf))
        delta = float(off.min())
        diam_ub = float(D.max())
        oracle = None
    else:
        p = GROUND_METRICS[metric]
        kd = cKDTree(pts)
        nn, _ = kd.query(pts, k=2, p=p)
        delta = float(nn[:, 1].min())
        diam_ub = 2.0 * float(_pair_distance(pts, pts[:1], metric).max())
        oracle = _MinRankOracle(pts, perm, p)
    L = max(1, math.ceil(math.log2(diam_ub / delta)) + 1)
    while delta * 2.0 ** (L - 1) < diam_ub:
        L += 1
    b = _Builder.start()
    node_of = np.zeros(k, dtype=np.int64)
    active = np.arange(k)
    centre = np.zeros(k, dtype=np.int64)  # rank of the current centre (level L: rank 0)
    start = np.zeros(k, dtype=np.int64)
    for level in range(L - 1, -1, -1):
        if active.size == 0:
            break
        radius = beta * 2.0**level * delta / 2.0
        if oracle is None:
            Dr = D[active][:, perm]  # columns in rank order
            inside = Dr < radius
            new_c = np.argmax(inside, axis=1).astype(np.int64)
        else:
            # the previous centre is still the first in pi order if it is still within R
            keep = _pair_distance(pts[active], pts[perm[centre[active]]], metric) < radius
            new_c = centre[active].copy()
            redo = np.flatnonzero(~keep)
            if redo.size:
                res, jfound = oracle.query(active[redo], radius, start[active[redo]])
                new_c[redo] = res
                start[active[redo]] = jfound
        centre[active] = new_c
        active = b.refine(node_of, active, new_c, level)

    unit = beta * delta * _SLACK

    def weights(top: np.ndarray, split: np.ndarray, is_leaf: np.ndarray) -> np.ndarray:
        # an internal node is the same set from level top down to split + 1; a leaf to level 0
        bot = np.where(is_leaf, 0, split + 1)
        # a node spanning levels bot..top weighs sum_{l=bot}^{top} beta 2^l delta
        return unit * (np.exp2(top + 1.0) - np.exp2(bot.astype(np.float64)))

    return b.finish(k, weights)


# ---------------------------------------------------------------------------------------------
# randomly shifted quadtree


def quadtree(points: Any, bounds: Any, seed: int | RandomSource | None = None, metric: str = "l2") -> Tree:
    r"""A randomly shifted quadtree (2^p-tree) on public points in a public box.

    With ``S`` the longest side of the box ``bounds``, the root cell is a cube of side ``2S``
    whose corner is ``lower - s`` for a uniform shift ``s`` in ``[0, S)^p``; level ``i`` halves
    every side, and a level-``i`` cell hangs from its parent by an edge of half the parent's
    ``l_p`` diameter, ``c_p S 2^(1-i)`` (``c_p = p`` for l1, ``sqrt(p)`` for l2, 1 for linf).
    Cells are refined only while they hold two or more points (chains are merged), so the
    tree has at most ``2k - 1`` nodes and no ``k x k`` matrix is formed.  **Domination**: two
    points first separated at level ``i + 1`` share a level-``i`` cell, so ``d(x, y) <= c_p
    side_i``, and their path holds the two edges of weight ``c_p side_i / 2`` into that cell.
    Weights carry a relative slack of ``2^-30`` against rounding.

    :param points: the public candidates ``(k, p)``, inside ``bounds``
    :param bounds: the public box ``(lower, upper)``, scalars or length ``p``
    :param seed: ``None`` (OS CSPRNG), an int (**not private**) or a ``RandomSource``
    :param metric: the ``l_p`` metric the tree must dominate: ``"l1"``, ``"l2"`` or ``"linf"``
    :return: a :class:`Tree` with leaf ``i`` for point ``i``

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.trees import quadtree
    >>> pts = np.array([[0.1, 0.1], [0.9, 0.8], [0.15, 0.12]])
    >>> t = quadtree(pts, bounds=(0.0, 1.0), seed=0)
    >>> t.k, bool(t.leaf_distance(0, 2) >= np.hypot(0.05, 0.02))
    (3, True)
    """
    pts = check_candidates(points, "points")
    if not isinstance(metric, str) or metric not in GROUND_METRICS:
        raise ValueError(f"metric must be one of {tuple(GROUND_METRICS)}, got {metric!r}")
    k, p = pts.shape
    box = as_box(bounds, p)
    lo, hi = np.asarray(box.lower), np.asarray(box.upper)
    if np.any(pts < lo) or np.any(pts > hi):
        raise ValueError("points must lie inside bounds")
    rng = as_random_source(seed)
    if k == 1:
        return Tree([-1], [0.0])
    S = float(np.max(hi - lo))
    shift = rng.uniform(p) * S
    u = (pts - lo + shift) / (2.0 * S)
    np.clip(u, 0.0, math.nextafter(1.0, 0.0), out=u)
    c_p = {"l1": float(p), "l2": math.sqrt(p), "linf": 1.0}[metric]
    b = _Builder.start()
    node_of = np.zeros(k, dtype=np.int64)
    active = np.arange(k)
    level = 0
    while active.size:
        level += 1
        if level > 1000:  # distinct floats in [0, 1) differ within their first ~1074 digits
            raise ValueError("points are too close together relative to bounds to be separated")
        cells = np.floor(u[active] * 2.0**level)
        bits = (np.fmod(cells, 2.0) != 0).astype(np.uint8)
        packed = np.packbits(bits, axis=1)
        # one integer label per distinct bit pattern
        _, lab = np.unique(packed, axis=0, return_inverse=True)
        active = b.refine(node_of, active, lab.reshape(-1).astype(np.int64), level)

    def weights(top: np.ndarray, split: np.ndarray, is_leaf: np.ndarray) -> np.ndarray:
        # edge into a level-l cell: c_p S 2^(1-l); a node is one cell from level top down to
        # split - 1 (a leaf: just its level top)
        last = np.where(is_leaf, top, split - 1)
        # sum_{l=top}^{last} 2^(1-l) = 2^(2-top) - 2^(1-last)
        return c_p * S * _SLACK * (np.exp2(2.0 - top) - np.exp2(1.0 - last))

    return b.finish(k, weights)


# ---------------------------------------------------------------------------------------------
# the closest size-m multiset to (inconsistent) target subtree counts


def multiset_cost(tree: Tree, targets: Any, counts: Any) -> float:
    """``sum_{v != root} w_v |c_v - t_v|`` for a multiset with leaf ``counts`` (``c_v`` its
    count below ``v``) and per-node ``targets``."""
    t = np.asarray(targets, dtype=np.float64)
    c = tree.subtree_sums(np.asarray(counts, dtype=np.int64))
    return float(np.sum(tree.weight[1:] * np.abs(c[1:] - t[1:])))


def _gather_runs(store: dict[str, list[np.ndarray]], where: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    tree: Tree, store: dict, where: np.ndarray, nodes: np.ndarray, N: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The slope runs of the children of ``nodes``, merged per parent in increasing slope
    order: ``(vals, lens, owner, kid, before)``, ``owner`` the parent's position in ``nodes``,
    ``kid`` the child a run came from and ``before`` the units of the parent's earlier runs."""
    kids = _children_of(tree, nodes)
    local = np.empty(N, dtype=np.int64)
    local[nodes] = np.arange(nodes.size)
    vals, lens, kid_owner = _gather_runs(store, where, kids)
    kid = kids[kid_owner]
    owner = local[tree.parent[kid]]
    order = np.lexsort((kid, vals, owner))
    vals, lens, owner, kid = vals[order], lens[order], owner[order], kid[order]
    cum = np.cumsum(lens)
    first = np.concatenate(([0], np.flatnonzero(owner[1:] != owner[:-1]) + 1))
    before = cum - lens - np.repeat(cum[first] - lens[first], np.diff(np.append(first, owner.size)))
    return vals, lens, owner, kid, before


def closest_multiset(tree: Tree, targets: Any, m: int) -> np.ndarray:
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
    ``m``.  Ties go to the child with the lower id.

    :param tree: the tree
    :param targets: one target ``t_v >= 0`` per node (the root's is ignored)
    :param m: the multiset size
    :return: ``k`` multiplicities (int64) summing to ``m``

    :example:

    >>> from opendp_wasserstein.trees import Tree, closest_multiset
    >>> t = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])
    >>> closest_multiset(t, targets=[4, 3.2, 0.8, 2.9, 0.3], m=4).tolist()  # leaves 2, 3, 4
    [1, 3, 0]
    """
    m = check_multiset_size(m)
    t = np.asarray(targets, dtype=np.float64)
    if t.shape != (tree.num_nodes,):
        raise ValueError(f"targets must have one entry per node ({tree.num_nodes}), got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError("targets must be finite and >= 0")
    N = tree.num_nodes
    if N == 1:
        return np.array([m], dtype=np.int64)
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

    def add_edge(vals: np.ndarray, lens: np.ndarray, owner: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            vals, lens, owner, _, before = _merged_child_runs(tree, store, where, nodes, N)
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
        _, lens, owner, kid, before = _merged_child_runs(tree, store, where, nodes, N)
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


def resolve_tree(tree: Any, candidates: np.ndarray, metric: str) -> Tree:
    """The tree a measurement uses: ``tree`` itself (checked to have one leaf per candidate) or,
    when ``None``, a fresh :func:`frt_tree` on the candidates (public, built once at
    construction from the OS CSPRNG, or from the seed of an enclosing
    :func:`opendp_wasserstein.runtime.reproducible` block)."""
    k = int(candidates.shape[0])
    if tree is None:
        return frt_tree(candidates, metric, seed=as_random_source().derive(TREE_STREAM))
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be an opendp_wasserstein.trees.Tree or None, got {type(tree).__name__}")
    if tree.k != k:
        raise ValueError(f"tree must have one leaf per candidate: {k} candidates but the tree has {tree.k} leaves")
    return tree
