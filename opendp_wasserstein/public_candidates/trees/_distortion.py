"""How far a tree metric is from the metric it embeds (a diagnostic on public points)."""

from __future__ import annotations

from typing import Any

import numpy as np

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.sets import GROUND_METRICS, check_candidates
from opendp_wasserstein.public_candidates.trees._tree import Tree

__all__ = ["distortion"]


def distortion(
    tree: Tree, points: Any, metric: str = "l2", pairs: int = 20000, seed: int = 0
) -> dict[str, float]:
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
