"""The tree type: parent and weight arrays, distances, subtree sums and the closed-form W1."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["Tree", "tree_w1"]


class Tree:
    """A rooted tree with weighted edges whose leaves are the candidates.

    :param parent: ``parent[i]`` the parent of node ``i``; ``parent[0] = -1`` (node 0 is the
        root); every node must reach the root
    :param weight: ``weight[i] >= 0`` the weight of the edge from ``i`` to its parent
        (``weight[0]`` is ignored and stored as 0)

    Trees are immutable (read-only arrays) and compare equal when their arrays are equal; the
    ``digest`` (SHA-256 of the arrays) names the tree in domain identifiers.

    :example:

    >>> from opendp_wasserstein.public_candidates.trees import Tree
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
            raise ValueError(
                f"weight must have one entry per node ({par.size}), got shape {w.shape}"
            )
        N = par.size
        if par[0] != -1:
            raise ValueError("parent[0] must be -1 (node 0 is the root)")
        if N > 1 and (par[1:].min() < 0 or par[1:].max() >= N):
            raise ValueError(
                "parent must hold node ids in [0, len(parent)) for every node but the root"
            )
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
        for arr in (
            self.parent,
            self.weight,
            self.depth,
            self.child_ids,
            self.child_ptr,
            self.degree,
            self.leaves,
            self.leaf_index,
            self.level_order,
            self.level_ptr,
            self.root_distance,
        ):
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
        return (
            f"Tree(nodes={self.num_nodes}, leaves={self.k}, height={self.height}, "
            f"digest={self.digest})"
        )

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
            raise ValueError(
                f"leaf values must have one entry per leaf ({self.k}), got shape {vals.shape}"
            )
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

    >>> from opendp_wasserstein.public_candidates.trees import Tree, tree_w1
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
