r"""Adaptive Pruned-PMM whose public candidates are (split order, depth, schedule) triples.

:func:`make_order_adaptive_pmm` generalises
:func:`~opendp_wasserstein.measurements.make_adaptive_pruned_pmm` from one split order to a
public family of them (:func:`~opendp_wasserstein.tables.orders.order_family`): every order
brings its own candidates (:func:`~opendp_wasserstein.schedules.pure.split_order_candidates`) and
its own score transformation (:func:`~opendp_wasserstein.transformations.make_schedule_scores`,
the capped score on that order's hierarchy with its diameter profile); the score vectors are
concatenated and one exponential mechanism picks a candidate among all of them, then Pruned-PMM
runs on the chosen order's hierarchy with fresh randomness.

**Privacy.**  A replacement moves each order's score vector by at most its ``Delta_o`` in
``l_inf`` (that transformation's map), so the concatenation moves by at most ``Delta = max_o
Delta_o``; the exponential mechanism at scale ``2 Delta / eps_sel`` costs ``eps_sel``; every
candidate's synthesis spends ``eps_main`` (``2 sum_{j>=1} 1/sigma_j``, its Pruned-PMM map).
Sequential composition: ``k (eps_sel + eps_main)`` for ``k`` replacements, computed over the
rationals and rounded up, never above the float ``eps_sel + eps_main`` for one (the
selection's scale absorbs the rounding, as in the one-order measurement).  The orders are public
(built from the schema and a DP release), so the candidate set is too
(:doc:`/proofs/split_order`, :doc:`/proofs/gower`).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_data_domain, check_metric, replacements
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.hierarchy.cells import shared_count_trees
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements._adaptive_common import candidate_releases, softmax_choice
from opendp_wasserstein.measurements._exponential_selection import make_exponential_selection
from opendp_wasserstein.noise._source import SELECTION_STREAM, as_random_source
from opendp_wasserstein.schedules.pure import (
    ScheduleCandidate,
    level_with,
    profile_schedule,
    split_order_candidates,
)
from opendp_wasserstein.transformations._schedule_scores import (
    check_schedule_candidates,
    check_split_order,
    make_schedule_scores,
)

__all__ = ["make_order_adaptive_pmm", "table_candidates", "SPLITS_PER_COLUMN"]

#: the extra candidates' depths: every numeric axis split this many times (flat schedules)
SPLITS_PER_COLUMN = (1, 2, 3)


def table_candidates(
    order: SplitOrder, n: int, epsilon_main: float, c_abs: float = 1.0
) -> tuple[ScheduleCandidate, ...]:
    """The public candidates of one order:
    :func:`~opendp_wasserstein.schedules.pure.split_order_candidates` and, for each ``k`` in
    :data:`SPLITS_PER_COLUMN`, the first level at which every numeric axis has had ``k`` splits (and
    every discrete one is resolved) with equal scales on every level
    (:func:`~opendp_wasserstein.schedules.pure.profile_schedule` of constant weights), up to the
    deepest standard candidate; repeats dropped.  Public values only."""
    out = list(split_order_candidates(order, n, epsilon_main, c_abs))
    deepest = max(c.depth for c in out)
    d_num = len(order.numeric)
    for k in SPLITS_PER_COLUMN:
        r = min(
            level_with(order, k * d_num) if d_num else order.max_depth, deepest, order.max_depth
        )
        scales = profile_schedule(np.ones(r), epsilon_main)
        if all((c.depth, c.scales) != (r, scales) for c in out):
            out.append(ScheduleCandidate(0, r, scales))
    return tuple(out)


def make_order_adaptive_pmm(
    input_domain: Domain,
    input_metric: Metric,
    epsilon_select: float,
    epsilon_main: float,
    orders: Sequence[SplitOrder],
    placement: str = "uniform",
    consistency: str = "least_squares",
    threshold: float | None = None,
    c_abs: float = 1.0,
) -> Measurement:
    r"""Construct Adaptive Pruned-PMM over a public family of split orders (module docstring).

    **Proof Definition:** :doc:`/proofs/gower`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, size=n, T=float)``: points of
        ``[0, 1]^D`` with a public size
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param epsilon_select: budget of the selection
    :param epsilon_main: budget of the synthesis
    :param orders: the public split orders (at least one), each over the ``D`` axes
    :param placement: ``"uniform"`` (default) or ``"center"``
    :param consistency: ``"least_squares"`` (default) or ``"paper"``
    :param threshold: the synthesis's suppression threshold (default: the rule's)
    :param c_abs: the score's constant ``C_abs``
    :return: a Measurement releasing an ``(n, D)`` array, map ``k (epsilon_select + epsilon_main)``
        for ``k`` replacements
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_order_adaptive_pmm needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    eps_sel = check_epsilon(epsilon_select, "epsilon_select")
    eps_main = check_epsilon(epsilon_main, "epsilon_main")
    checked = [check_split_order(o, d) for o in orders]
    if not checked or any(o is None for o in checked):
        raise ValueError("orders must hold at least one SplitOrder")
    orders = tuple(o for o in checked if o is not None)
    per_order: list[tuple[SplitOrder, tuple[ScheduleCandidate, ...]]] = []
    for o in orders:
        cands = check_schedule_candidates(
            table_candidates(o, n, eps_main, c_abs), d, eps_main, default=True, split_order=o
        )
        per_order.append((o, cands))  # type: ignore[arg-type]
    scores = [
        make_schedule_scores(
            input_domain,
            input_metric,
            cands,
            eps_main,
            c_abs,
            (0.0, 1.0),
            split_order=o,
            score="capped",
            placement=placement,
        )
        for o, cands in per_order
    ]
    unit = 2 if kind == "symmetric" else 1
    sensitivity = max(Fraction(t.map(unit)) for t in scores)
    flat = [(i, c) for i, (_, cands) in enumerate(per_order) for c in cands]
    main_unit = max(
        2 * sum((Fraction(1) / Fraction(s) for s in c.scales[1:]), Fraction(0)) for _, c in flat
    )
    total = round_down(Fraction(eps_sel) + Fraction(eps_main))
    sel_budget = Fraction(total) - main_unit
    if sel_budget <= 0:  # pragma: no cover - the candidates spend epsilon_main exactly
        raise ValueError("epsilon_select is too small to represent next to epsilon_main")
    eps_sel_eff = round_down(sel_budget)
    scale = round_up(2 * sensitivity / Fraction(eps_sel_eff))

    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(flat))
    m_select = make_exponential_selection(
        vec, dp.linf_distance(T=float), eps_sel_eff, float(sensitivity)
    )
    mains: list[Measurement] = []
    for o, cands in per_order:
        mains += candidate_releases(
            input_domain,
            input_metric,
            cands,
            n,
            (0.0, 1.0),
            placement,
            None,
            o,
            consistency,
            threshold,
        )

    def choose(vector: list[float]) -> int:
        src = as_random_source()
        if src.secure:
            return int(m_select(vector))
        return softmax_choice(-np.asarray(vector) / scale, src.derive(SELECTION_STREAM))

    def function(x: np.ndarray) -> Any:
        with shared_count_trees():
            vector = [float(v) for t in scores for v in t(x)]
            a = choose(vector)
            with runtime.diagnostics() as inner:
                points = mains[a](x)
        o_index, cand = flat[a]
        runtime.record(
            (inner[-1] if inner else {})
            | {
                "candidate_index": a,
                "order_index": o_index,
                "num_orders": len(orders),
                "s": cand.s,
                "num_candidates": len(flat),
                "epsilon_select": eps_sel,
                "epsilon_main": eps_main,
                "score": "capped",
            }
        )
        return points

    def privacy_map(d_in: int) -> float:
        r = replacements(kind, d_in)
        return round_up(2 * r * sensitivity / Fraction(scale) + r * main_unit)

    return make_measurement(input_domain, input_metric, max_divergence(), function, privacy_map)
