"""What a distributed run needs to know about a measurement: its plan, recorded at construction.

A constructor of the package attaches a plan to the Measurement it returns (:func:`attach`).
The plan holds the constructor's public parameters and, where the in-memory function goes
through an intermediate that a cluster can compute by a reduction (the occupancy of the
adaptive scores, the candidate histogram), the very closures the in-memory function applies
to that intermediate.  The distributed executor (:mod:`opendp_wasserstein.distributed`) runs
the same steps on a Dask cluster, so a distributed release is an execution plan for the same
Measurement: same constructor arguments, same ``map``, no second proof.

This module imports neither Dask nor anything heavy: the measurement modules import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from opendp_wasserstein.core.box import Box

__all__ = [
    "PmmPlan",
    "ScoresPlan",
    "AdaptivePlan",
    "HistogramPlan",
    "NoisySizePlan",
    "attach",
    "plan_of",
    "PLAN_ATTRIBUTE",
]

PLAN_ATTRIBUTE = "_opendp_wasserstein_plan"


@dataclass(frozen=True)
class PmmPlan:
    """Pruned-PMM (``pruned=True``) or the full-tree PMM on rows in ``box``.

    :param pruned: Algorithms 1-2 (True) or the full tree with comparable splits (False)
    :param d: the number of columns
    :param size: the input domain's public size, or None
    :param nan: whether the input domain admits NaN
    :param box: the public box
    :param depth: the depth ``r``
    :param scales: ``sigma_0 .. sigma_r``
    :param placement: ``"center"`` or ``"uniform"``
    :param root_size: the public root mass (the size, or ``output_size``), or None (noisy root)
    :param release_root: full PMM: whether the root count is noised and released
    :param axes: the split order (None: cyclic)
    :param distribution: ``"laplace"`` (pure DP) or ``"gaussian"`` (zCDP)
    :param consistency: the pruned traversal's post-processing, ``"paper"`` or ``"least_squares"``
    :param threshold: its suppression threshold
    """

    pruned: bool
    d: int
    size: int | None
    nan: bool
    box: Box
    depth: int
    scales: tuple[float, ...]
    placement: str
    root_size: int | None
    release_root: bool = False
    axes: tuple[int, ...] | None = None
    distribution: str = "laplace"
    consistency: str = "paper"
    threshold: float = 0.0


@dataclass(frozen=True)
class ScoresPlan:
    """The schedule scores: the occupancy of levels ``0 .. L-1`` of the rows' tree (or, with
    ``caps``, the capped sums ``T[j, a] = sum_v min(c_v, caps[j, a])``), then
    ``scores_of_occupancy`` (the in-memory transformation's own closure)."""

    d: int
    size: int | None
    nan: bool
    box: Box
    L: int
    scores_of_occupancy: Callable[[np.ndarray], list[float]]
    axes: tuple[int, ...] | None = None
    caps: np.ndarray | None = None
    #: ``(first, J)``: the imbalance ``I_first .. I_{J-1}`` follows the capped sums (rows
    #: ``L .. L + J - 1`` of the statistic), read off trees of depth ``J``; None: no such rows
    resolution: tuple[int, int] | None = None

    @property
    def depth(self) -> int:
        """The depth of the count trees the statistic reads."""
        return self.L if self.resolution is None else max(self.L, self.resolution[1])


@dataclass(frozen=True)
class AdaptivePlan:
    """Adaptive Pruned-PMM: scores, ``choose_from_scores`` (the in-memory selection applied to the
    score vector), then the chosen candidate's Pruned-PMM ``mains[a]``; ``record(a, info)``
    records what the in-memory release records."""

    scores: ScoresPlan
    choose_from_scores: Callable[[list[float]], int]
    mains: tuple[PmmPlan, ...]
    record: Callable[[int, dict[str, Any]], None]


@dataclass(frozen=True)
class HistogramPlan:
    """A public-candidate mechanism: the nearest candidate of every row (ties to the lowest
    index), the ``k``-bin histogram of those indices, then ``finish(histogram)``, which is what
    the in-memory measurement releases from the same histogram."""

    d: int
    size: int | None
    nan: bool
    nearest: Any  # the NearestCandidates of make_nearest_candidate (sent to the workers)
    finish: Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class NoisySizePlan:
    """A DP row count, then a mechanism built for it
    (:func:`~opendp_wasserstein.measurements.make_noisy_size_then`): the number of rows is a
    sum over the parts; ``noisy_size(n)`` is the in-memory closure that releases
    ``n_hat = max(1, n + LapZ(1 / epsilon_size))`` from the exact count (OpenDP's ``make_laplace``,
    or the seeded stream inside ``reproducible``); ``inner(n_hat)`` the in-memory closure that
    builds the mechanism for ``n_hat`` and checks it against the declared bound.  The built
    measurement's own plan runs next."""

    d: int
    nan: bool
    noisy_size: Callable[[int], int]
    inner: Callable[[int], Any]


Plan = PmmPlan | AdaptivePlan | HistogramPlan | NoisySizePlan


def attach(meas: Any, plan: Any) -> Any:
    """Record ``plan`` on the Measurement ``meas`` (returned)."""
    setattr(meas, PLAN_ATTRIBUTE, plan)
    return meas


def plan_of(meas: Any) -> Any:
    """The plan recorded on ``meas``.

    :raises TypeError: if ``meas`` was not built by one of the package's constructors with a
        distributed plan (a chain built by hand has none)
    """
    plan = getattr(meas, PLAN_ATTRIBUTE, None)
    if plan is None:
        raise TypeError(
            "meas has no distributed plan: build it with make_pruned_pmm, make_pmm, "
            "make_adaptive_pruned_pmm, make_tree_projection, make_tree_em or make_nn_histogram"
        )
    return plan
