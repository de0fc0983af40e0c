"""Assembling a compressed tree from a top-down sequence of nested partitions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from opendp_wasserstein.public_candidates.trees._tree import Tree

__all__: list[str] = []

#: builders multiply every edge weight by this factor, so that domination survives the
#: rounding of the distances they compare (a relative slack of about 1e-9)
_SLACK = 1.0 + 2.0**-30


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

    def refine(
        self, node_of: np.ndarray, active: np.ndarray, labels: np.ndarray, level: int
    ) -> np.ndarray:
        """Refine the nodes of the ``active`` candidates by ``labels`` (equal label = same part)
        at ``level``; returns the candidates still in sets of two or more."""
        pts = active
        key_node = node_of[pts]
        # one new part per distinct (node, label) pair
        pair = np.stack([key_node, labels], axis=1)
        uniq, inv = np.unique(pair, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        parts_per_node = (
            np.bincount(uniq[:, 0] - uniq[:, 0].min(), minlength=1) if uniq.size else np.zeros(0)
        )
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
            raise RuntimeError(
                "tree construction did not separate every candidate"
            )  # pragma: no cover
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
