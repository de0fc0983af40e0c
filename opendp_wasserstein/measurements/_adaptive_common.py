"""What the two branches of Adaptive Pruned-PMM share (pure DP in ``_adaptive``, zCDP in
``_adaptive_zcdp``): the checks of their arguments and the score transformation, the candidate
syntheses, and the seeded softmax of reproducible runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from opendp.mod import Domain, Measure, Measurement, Metric, Transformation

from opendp_wasserstein.core.data import check_data_domain, check_metric
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.hierarchy.least_squares import check_postprocessing
from opendp_wasserstein.hierarchy.placement import check_placement
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements._exponential_selection import SELECTIONS
from opendp_wasserstein.measurements._pmm import make_pruned_pmm
from opendp_wasserstein.schedules.pure import (
    ScheduleCandidate,
    split_order_candidates,
    standard_candidates,
)
from opendp_wasserstein.schedules.zcdp import zcdp_candidates, zcdp_split_order_candidates
from opendp_wasserstein.transformations._schedule_scores import (
    check_schedule_candidates,
    check_score,
    check_score_size,
    check_split_order,
    make_schedule_scores,
)

__all__ = ["AdaptiveSetup", "adaptive_setup", "candidate_releases", "softmax_choice"]


@dataclass(frozen=True, kw_only=True)
class AdaptiveSetup:
    """The checked arguments of Adaptive Pruned-PMM and its score transformation."""

    d: int
    n: int | None
    select: float
    main: float
    consistency: str
    threshold: float | None
    order: SplitOrder | None
    score: str
    candidates: tuple[ScheduleCandidate, ...]
    kind: str
    scores: Transformation


#: the options both branches (pure and zCDP) pass unchanged to :func:`adaptive_setup`
SHARED_OPTIONS = (
    "bounds",
    "placement",
    "candidates",
    "selection",
    "c_abs",
    "size",
    "split_order",
    "consistency",
    "threshold",
    "score",
)


def shared_options(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`SHARED_OPTIONS` of a constructor's arguments (its ``locals()`` on entry)."""
    return {k: scope[k] for k in SHARED_OPTIONS}


def adaptive_setup(
    input_domain: Domain,
    input_metric: Metric,
    *,
    budget_select: float,
    budget_main: float,
    bounds: Any,
    placement: str,
    candidates: Sequence[ScheduleCandidate] | None,
    selection: str,
    c_abs: float,
    size: int | None,
    split_order: SplitOrder | None,
    consistency: str,
    threshold: float | None,
    score: str,
    output_measure: Measure | None,
) -> AdaptiveSetup:
    """Check the arguments of either branch (``output_measure`` None: pure DP, else zCDP, whose
    budgets are ``rho``) and build the scores of the public candidates (the default candidates
    of the branch when ``candidates`` is None)."""
    zcdp = output_measure is not None
    d, n = check_data_domain(input_domain)
    norm = check_score_size(n, size)
    sel = check_epsilon(budget_select, "epsilon_select")
    main = check_epsilon(budget_main, "epsilon_main")
    check_placement(placement)
    consistency, threshold = check_postprocessing(consistency, threshold)
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if zcdp and selection != "exponential":
        raise ValueError(
            "selection must be 'exponential' in zCDP: permute-and-flip is certified in pure "
            "DP only "
            "(converted, it costs four times the exponential mechanism's eps^2/8)"
        )
    order = check_split_order(split_order, d)
    score = check_score(score)
    if candidates is None:
        optimal = score == "capped"
        if zcdp:
            default = (
                zcdp_candidates(d, norm, main, c_abs, include_optimal_depths=optimal)
                if order is None
                else zcdp_split_order_candidates(order, norm, main, c_abs)
            )
        else:
            default = (
                standard_candidates(d, norm, main, include_optimal_depths=optimal)
                if order is None
                else split_order_candidates(order, norm, main, c_abs)
            )
    cands = check_schedule_candidates(
        default if candidates is None else candidates,
        d,
        main,
        default=candidates is None,
        zcdp=zcdp,
        split_order=order,
    )
    kind = check_metric(input_metric, n)
    t_scores = make_schedule_scores(
        input_domain,
        input_metric,
        cands,
        main,
        c_abs,
        bounds,
        size=size,
        output_measure=output_measure,
        split_order=order,
        score=score,
        placement=placement,
    )
    return AdaptiveSetup(
        d=d,
        n=n,
        select=sel,
        main=main,
        consistency=consistency,
        threshold=threshold,
        order=order,
        score=score,
        candidates=tuple(cands),
        kind=kind,
        scores=t_scores,
    )


def candidate_releases(
    input_domain: Domain,
    input_metric: Metric,
    cands: Sequence[ScheduleCandidate],
    n: int | None,
    bounds: Any,
    placement: str,
    size: int | None,
    order: SplitOrder | None,
    consistency: str,
    threshold: float | None,
    output_measure: Measure | None = None,
) -> list[Measurement]:
    """Pruned-PMM at every candidate's depth and schedule (the root not released when ``n`` is
    private), on the split order's hierarchy: the synthesis steps the adaptive selection picks
    from, pure DP or (``output_measure``) zCDP."""
    return [
        make_pruned_pmm(
            input_domain,
            input_metric,
            c.depth,
            c.scales if n is not None else (math.inf, *c.scales[1:]),
            bounds,
            placement,
            output_size=size,
            output_measure=output_measure,
            axes=None if order is None else order.axes_to(c.depth),
            consistency=consistency,
            threshold=threshold,
        )
        for c in cands
    ]


def softmax_choice(z: np.ndarray, rng: Any) -> int:
    """An index drawn with probability proportional to ``exp(z_a)`` from the seeded stream ``rng``
    (the exponential mechanism's law, for reproducible, non-private runs only)."""
    p = np.exp(z - z.max())
    p /= p.sum()
    u = rng.uniform(1)[0]
    return int(min(np.searchsorted(np.cumsum(p), u, side="right"), len(p) - 1))
