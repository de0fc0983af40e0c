"""A randomly shifted quadtree on public points in a public box (Indyk 2004)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.noise._source import RandomSource, as_random_source
from opendp_wasserstein.public_candidates.sets import GROUND_METRICS, check_candidates
from opendp_wasserstein.public_candidates.trees._builder import _SLACK, _Builder
from opendp_wasserstein.public_candidates.trees._tree import Tree

__all__ = ["quadtree"]


def quadtree(
    points: Any, bounds: Any, seed: int | RandomSource | None = None, metric: str = "l2"
) -> Tree:
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
    >>> from opendp_wasserstein.public_candidates.trees import quadtree
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
