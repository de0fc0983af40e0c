"""The FRT / HST embedding of a general metric (Fakcharoenphol, Rao, Talwar 2004), and the tree a
measurement uses."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from opendp_wasserstein.core.optional import lazy_module
from opendp_wasserstein.noise._source import RandomSource, as_random_source
from opendp_wasserstein.public_candidates.sets import GROUND_METRICS, check_candidates
from opendp_wasserstein.public_candidates.trees._builder import _SLACK, _Builder
from opendp_wasserstein.public_candidates.trees._distortion import _pair_distance
from opendp_wasserstein.public_candidates.trees._tree import Tree

if TYPE_CHECKING:
    from scipy import spatial
else:
    spatial = lazy_module("scipy.spatial")  # imported on first use: 0.36 s of start-up

__all__ = ["TREE_STREAM", "frt_tree", "resolve_tree"]

#: the stream tag (see :meth:`RandomSource.derive`) from which a measurement builds its tree
TREE_STREAM = 16


# ---------------------------------------------------------------------------------------------
# FRT / HST embedding


def _check_metric_or_precomputed(metric: Any) -> str:
    if not isinstance(metric, str) or metric not in (*GROUND_METRICS, "precomputed"):
        raise ValueError(
            f"metric must be one of {(*GROUND_METRICS, 'precomputed')}, got {metric!r}"
        )
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
        raise ValueError(
            "points (the distance matrix) must be positive off the diagonal (no duplicates)"
        )
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
            self.trees.append(spatial.cKDTree(pts[perm[:size]]))
            if size == k:
                break
            size *= 2

    def query(
        self, x_idx: np.ndarray, radius: float, start: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
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
            d, idx = self.trees[j].query(
                self.pts[x_idx[sel]], k=kq, p=self.p, distance_upper_bound=radius
            )
            idx = np.asarray(idx).reshape(sel.size, kq)
            found = idx < size
            any_found = found[:, 0]
            complete = (~found[:, -1]) | (kq == size)
            best = np.where(found, idx, np.iinfo(np.int64).max).min(axis=1)
            ok = any_found & complete
            res[sel[ok]] = best[ok]
            over = np.flatnonzero(any_found & ~complete)
            if over.size:
                balls = self.trees[j].query_ball_point(
                    self.pts[x_idx[sel[over]]], r=radius, p=self.p
                )
                # query_ball_point is inclusive (<=): keep the strict ball
                for t, ball in zip(over.tolist(), balls, strict=True):
                    cand = np.asarray(ball, dtype=np.int64)
                    dd = _pair_distance(
                        self.pts[x_idx[sel[t]]][None, :],
                        self.trees[j].data[cand],
                        _metric_name(self.p),
                    )
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
        reproducible tests and figures) or a :class:`~opendp_wasserstein.noise._source.RandomSource`
    :return: a :class:`Tree` with leaf ``i`` for point ``i``

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.public_candidates.trees import frt_tree
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
        kd = spatial.cKDTree(pts)
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


def resolve_tree(tree: Any, candidates: np.ndarray, metric: str) -> Tree:
    """The tree a measurement uses: ``tree`` itself (checked to have one leaf per candidate) or,
    when ``None``, a fresh :func:`frt_tree` on the candidates (public, built once at
    construction from the OS CSPRNG, or from the seed of an enclosing
    :func:`opendp_wasserstein.runtime.reproducible` block)."""
    k = int(candidates.shape[0])
    if tree is None:
        return frt_tree(candidates, metric, seed=as_random_source().derive(TREE_STREAM))
    if not isinstance(tree, Tree):
        raise TypeError(
            "tree must be an opendp_wasserstein.public_candidates.trees.Tree or None, got "
            f"{type(tree).__name__}"
        )
    if tree.k != k:
        raise ValueError(
            f"tree must have one leaf per candidate: {k} candidates but the tree has "
            f"{tree.k} leaves"
        )
    return tree
