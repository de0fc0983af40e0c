"""Public candidate sets: validation and the nearest-candidate projection.

A candidate set ``C`` is a public ``(k, p)`` float array: ``k >= 1`` distinct rows with finite
entries.  The projection ``pi(x)`` sends a data row to the index of its nearest candidate in the
ground metric (``"l1"``, ``"l2"`` or ``"linf"``), ties to the lowest index.  It is computed with
scipy's KD-tree (:class:`scipy.spatial.cKDTree`), in chunks of rows, so ``n = 10^6`` rows
against ``k = 10^5`` candidates needs only ``O(k + chunk)`` memory.

Ties are judged on the distances the KD-tree computes (floating point): a row whose two
nearest reported distances are equal is re-queried with more neighbours until every candidate
at that distance is known, and the lowest index among them wins.  Two candidates at the same
real distance that floating point separates go to the (float-)nearer one.  Either way the
projection is a fixed row-wise function, which is all its stability needs.

Everything here is data-independent except :meth:`NearestCandidates.query`, whose error
messages name only the parameter.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.spatial import cKDTree

__all__ = [
    "GROUND_METRICS",
    "check_candidates",
    "check_candidate_dims",
    "check_multiset_size",
    "check_ground_metric",
    "NearestCandidates",
]

#: the supported ground metrics and their Minkowski exponents (cKDTree's ``p``)
GROUND_METRICS: dict[str, float] = {"l1": 1.0, "l2": 2.0, "linf": math.inf}

#: rows per KD-tree query (bounds the memory of one query to a few MB)
DEFAULT_CHUNK = 1 << 16


def check_ground_metric(metric: Any, name: str = "metric") -> str:
    """One of ``"l1"``, ``"l2"``, ``"linf"``, or a ``ValueError`` naming ``name``."""
    if not isinstance(metric, str) or metric not in GROUND_METRICS:
        raise ValueError(f"{name} must be one of {tuple(GROUND_METRICS)}, got {metric!r}")
    return metric


def check_multiset_size(m: Any, name: str = "m") -> int:
    """The output size ``m``: an integer ``>= 1``."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"{name} must be >= 1, got {m}")
    return int(m)


#: candidate entries are bounded so that no distance overflows, and distinct candidates must be
#: farther apart than this (relative to their magnitude) so that no distance is subnormal
CANDIDATE_MAX, CANDIDATE_MIN_GAP = 1e150, 1e-150


def check_candidates(candidates: Any, name: str = "candidates") -> np.ndarray:
    """A read-only ``(k, p)`` float64 copy of a public candidate set.

    :raises ValueError: not two-dimensional, no rows (``k = 0``), no columns, non-finite
        entries, or two equal rows (duplicates make the nearest candidate ambiguous and the
        candidate metric degenerate)
    """
    try:
        arr = np.array(candidates, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array of shape (k, p)") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-dimensional array of shape (k, p), got {arr.ndim} dimensions")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row (k >= 1), got k = 0")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or infinite entries)")
    if np.abs(arr).max() > CANDIDATE_MAX:
        raise ValueError(f"{name} must have entries of magnitude <= {CANDIDATE_MAX:g} (distances must not overflow)")
    if arr.shape[0] > 1:
        order = np.lexsort(arr.T[::-1])
        srt = arr[order]
        same = np.all(srt[1:] == srt[:-1], axis=1)
        if np.any(same):
            first = int(np.flatnonzero(same)[0])
            i, j = sorted((int(order[first]), int(order[first + 1])))
            raise ValueError(f"{name} must be distinct: rows {i} and {j} are equal")
        # tree builders divide by distances: distinct rows must not be subnormally close
        nearest_gap = cKDTree(arr).query(arr, k=2, p=np.inf)[0][:, 1]
        if nearest_gap.min() < CANDIDATE_MIN_GAP * max(1.0, float(np.abs(arr).max())):
            raise ValueError(f"{name} must not hold rows closer than {CANDIDATE_MIN_GAP:g} (relative) to each other")
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


def check_candidate_dims(candidates: np.ndarray, d: int, name: str = "candidates") -> None:
    """The candidates must have the data's ``d`` columns."""
    if candidates.shape[1] != d:
        raise ValueError(
            f"{name} must have {d} columns (the input_domain's num_columns), got {candidates.shape[1]}"
        )


class NearestCandidates:
    """The nearest-candidate projection onto a public candidate set (ties to the lowest index).

    :param candidates: a ``(k, p)`` array (validated with :func:`check_candidates`)
    :param metric: ``"l1"``, ``"l2"`` (default) or ``"linf"``
    :param chunk: rows per KD-tree query
    """

    def __init__(self, candidates: Any, metric: str = "l2", chunk: int = DEFAULT_CHUNK) -> None:
        self.candidates = check_candidates(candidates)
        self.metric = check_ground_metric(metric)
        self.p = GROUND_METRICS[self.metric]
        self.k = int(self.candidates.shape[0])
        self.chunk = int(chunk)
        self._tree = cKDTree(self.candidates)

    def query(self, x: np.ndarray) -> np.ndarray:
        """The index of the nearest candidate of every row of ``x`` (int64, ties to lowest)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.candidates.shape[1]:
            raise ValueError(f"data must have shape (n, {self.candidates.shape[1]})")
        out = np.empty(x.shape[0], dtype=np.int64)
        for start in range(0, x.shape[0], self.chunk):
            out[start : start + self.chunk] = self._query_chunk(x[start : start + self.chunk])
        return out

    def _query_chunk(self, x: np.ndarray) -> np.ndarray:
        if self.k == 1:
            return np.zeros(x.shape[0], dtype=np.int64)
        dist, idx = self._tree.query(x, k=2, p=self.p, workers=-1)
        best = idx[:, 0].astype(np.int64)
        tied = np.flatnonzero(dist[:, 1] <= dist[:, 0])
        kk = 2
        while tied.size:
            # every candidate at the best distance is among the kk nearest once the kk-th
            # nearest is strictly farther (or kk = k)
            kk = min(2 * kk, self.k)
            dt, it = self._tree.query(x[tied], k=kk, p=self.p, workers=-1)
            d0 = dt[:, :1]
            at_best = dt == d0
            done = (~at_best[:, -1]) | (kk == self.k)
            cand = np.where(at_best, it, np.iinfo(np.int64).max)
            best[tied[done]] = cand[done].min(axis=1)
            tied = tied[~done]
        return best
