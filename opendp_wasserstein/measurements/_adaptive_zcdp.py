r"""Adaptive Pruned-PMM in zCDP: private depth-schedule selection, then Gaussian Pruned-PMM.

The zCDP branch of :func:`~opendp_wasserstein.measurements.make_adaptive_pruned_pmm`
(``output_measure=dp.zero_concentrated_divergence()``):

1. the scores ``B_a(X)`` of the public zCDP candidates
   (:func:`~opendp_wasserstein.schedules.zcdp.zcdp_candidates`;
   :func:`~opendp_wasserstein.transformations.make_schedule_scores` with the zCDP measure),
   and the exponential mechanism in zCDP: OpenDP's ``make_noisy_max`` with
   ``zero_concentrated_divergence()`` adds Gumbel noise, so its output is exactly the softmax of
   ``-B_a / scale``, and its (OpenDP) map is ``rho = (d_in / scale)^2 / 2`` -- the exponential
   mechanism's ``eps = 2 Delta / scale`` is ``eps^2 / 8``-zCDP (bounded range).  Permute-and-flip
   is only certified in pure DP (``eps^2 / 2`` after conversion, four times the cost), so it is
   not offered here;
2. Pruned-PMM with the chosen candidate's Gaussian schedule and fresh randomness
   (:func:`~opendp_wasserstein.measurements.make_pruned_pmm`, zCDP).

zCDP composes additively, also adaptively: the map is the selection chain's OpenDP map plus the
largest synthesis map over the candidates, summed over the rationals and rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import whole_replacements
from opendp_wasserstein.core.exact import inverse_squares, round_down, round_up
from opendp_wasserstein.hierarchy.cells import shared_count_trees
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements._adaptive_common import (
    adaptive_setup,
    candidate_releases,
    shared_options,
    softmax_choice,
)
from opendp_wasserstein.noise._source import SELECTION_STREAM, as_random_source
from opendp_wasserstein.schedules.pure import ScheduleCandidate

__all__ = ["make_adaptive_pruned_pmm_zcdp"]

_ZCDP = dp.zero_concentrated_divergence()


def _selection(t_scores: Any, scale: float) -> Measurement:
    dom, met = t_scores.output_domain, t_scores.output_metric
    return t_scores >> dp.m.make_noisy_max(dom, met, _ZCDP, scale, negate=True)


def make_adaptive_pruned_pmm_zcdp(
    input_domain: Domain,
    input_metric: Metric,
    *,
    rho_select: float,
    rho_main: float,
    bounds: Any = None,
    placement: str = "center",
    candidates: Sequence[ScheduleCandidate] | None = None,
    selection: str = "exponential",
    c_abs: float = 1.0,
    size: int | None = None,
    split_order: SplitOrder | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
    score: str = "paper",
) -> Measurement:
    r"""Adaptive Pruned-PMM in zCDP (module docstring); the parameters are those of
    :func:`~opendp_wasserstein.measurements.make_adaptive_pruned_pmm` with the budgets ``rho``.

    Privacy map: ``rho_select + rho_main`` for one replacement with a public size (``d_in = 2``
    under ``symmetric_distance``, ``1`` under ``change_one_distance``), never above the float
    ``rho_select + rho_main`` (the selection's scale absorbs the rounding); ``m^2 rho_main`` plus
    the selection's OpenDP map for ``m`` replacements (both quadratic).  Without a public size
    (``size`` given, ``sigma_0 = inf``): one added or removed record costs at most
    ``rho_select + rho_main / 2``.

    With a public ``split_order`` (a table's hierarchy) every candidate runs on its hierarchy,
    the scores use its occupancy and diameter profile, and the default candidates are
    :func:`~opendp_wasserstein.schedules.zcdp.zcdp_split_order_candidates`; the map keeps its
    form (:doc:`/proofs/split_order`).
    """
    setup = adaptive_setup(
        input_domain,
        input_metric,
        budget_select=rho_select,
        budget_main=rho_main,
        output_measure=_ZCDP,
        **shared_options(locals()),
    )
    n, cands, kind = setup.n, setup.candidates, setup.kind
    rho_sel, rho_main_ = setup.select, setup.main
    score, t_scores = setup.score, setup.scores
    # exact synthesis cost of one replacement (sized: m^2 sum w, m = 1) or one record (unsized,
    # sigma_0 = inf: k^2 sum w / 2, k = 1), largest over the candidates
    main_unit = max(sum(inverse_squares(c.scales[1:]), Fraction(0)) for c in cands)
    one = (1 if kind == "change_one" else 2) if n is not None else 1
    main_one = main_unit if n is not None else main_unit / 2
    total = round_down(
        Fraction(rho_sel) + (Fraction(rho_main_) if n is not None else Fraction(rho_main_) / 2)
    )
    sel_budget = Fraction(total) - main_one
    if sel_budget <= 0:  # pragma: no cover - check_schedule_candidates bounds main_unit by rho_main
        raise ValueError("epsilon_select is too small to represent next to epsilon_main")
    # OpenDP's map for Gumbel noise: rho = (d / scale)^2 / 2 at l_inf score distance d
    scale = t_scores.map(one) / math.sqrt(2.0 * float(sel_budget))
    select = _selection(t_scores, scale)
    for _ in range(4096):  # nudge up until OpenDP's rounded map fits the exact budget
        if Fraction(select.map(one)) <= sel_budget:
            break
        scale = math.nextafter(scale, math.inf)
        select = _selection(t_scores, scale)
    else:  # pragma: no cover
        raise RuntimeError("could not calibrate the selection scale")
    mains = candidate_releases(
        input_domain,
        input_metric,
        setup.candidates,
        setup.n,
        bounds,
        placement,
        size,
        setup.order,
        setup.consistency,
        setup.threshold,
        output_measure=_ZCDP,
    )

    def choose(x: np.ndarray) -> int:
        src = as_random_source()
        if src.secure:
            return int(select(x))
        # reproducible (non-private) runs: the exponential mechanism's softmax from the seed
        z = -np.asarray(t_scores(x)) / scale  # P(a) ~ exp(-B_a / scale), as the Gumbel max
        return softmax_choice(z, src.derive(SELECTION_STREAM))

    def function(x: np.ndarray) -> Any:
        # one count tree per release, shared by the scores and the synthesis (as in pure DP)
        with shared_count_trees(release=True):  # the release owns its trees
            a = choose(x)
            with runtime.capture() as inner:  # folded into this release's record
                points = mains[a](x)
        c = cands[a]
        runtime.record(
            (inner[-1] if inner else {})
            | {
                "candidate_index": a,
                "s": c.s,
                "num_candidates": len(cands),
                "rho_select": rho_sel,
                "rho_main": rho_main_,
                "score": score,
            }
        )
        return points

    def privacy_map(d_in: int) -> float:
        sel = Fraction(select.map(d_in))
        if n is not None:
            m = whole_replacements(kind, d_in)
            main = m * m * main_unit
        else:
            k = whole_replacements("unsized", d_in)
            main = k * k * main_unit / 2
        return round_up(sel + main)

    return make_measurement(input_domain, input_metric, _ZCDP, function, privacy_map)
