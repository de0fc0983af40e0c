"""Adaptive Pruned-PMM: private depth-schedule selection, then Pruned-PMM (Algorithm 3)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence
from opendp.mod import Domain, Measure, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core.data import replacements
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.core.parameters import check_output_measure
from opendp_wasserstein.core.plan import AdaptivePlan, attach, plan_of
from opendp_wasserstein.hierarchy.cells import shared_count_trees
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements._adaptive_common import (
    adaptive_setup,
    candidate_releases,
    shared_options,
    softmax_choice,
)
from opendp_wasserstein.measurements._adaptive_zcdp import make_adaptive_pruned_pmm_zcdp
from opendp_wasserstein.measurements._exponential_selection import make_exponential_selection
from opendp_wasserstein.noise._source import SELECTION_STREAM, as_random_source
from opendp_wasserstein.schedules.pure import ScheduleCandidate
from opendp_wasserstein.transformations._schedule_scores import occupancy_units

__all__ = ["make_adaptive_pruned_pmm", "then_adaptive_pruned_pmm", "softmax_probabilities"]


def softmax_probabilities(scores: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """``P(a) proportional to exp(-epsilon * B_a / (2 * sensitivity))`` (for tests and reports)."""
    z = -epsilon * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    z -= z.max()
    p = np.exp(z)
    return p / p.sum()


def make_adaptive_pruned_pmm(
    input_domain: Domain,
    input_metric: Metric,
    epsilon_select: float,
    epsilon_main: float,
    bounds: Any = None,
    placement: str = "center",
    candidates: Sequence[ScheduleCandidate] | None = None,
    selection: str = "exponential",
    c_abs: float = 1.0,
    size: int | None = None,
    output_measure: Measure | None = None,
    split_order: SplitOrder | None = None,
    consistency: str = "paper",
    threshold: float | None = None,
    score: str = "paper",
) -> Measurement:
    r"""Construct Adaptive Pruned-PMM (Zare Moayedi et al. 2026, Algorithm 3 and Appendix B).

    1. Score every public candidate ``a = (s, r_a, sigma^(s, r_a))`` by ``B_a(X)``
       (:func:`~opendp_wasserstein.transformations.make_schedule_scores`), and select one with
       the exponential mechanism at ``epsilon_select``
       (:func:`~opendp_wasserstein.measurements.make_exponential_selection`).
    2. Run Pruned-PMM with the chosen depth and schedule and fresh randomness
       (:func:`~opendp_wasserstein.measurements.make_pruned_pmm`, spending ``epsilon_main``).

    The release is the synthetic array only (inside
    :func:`opendp_wasserstein.runtime.diagnostics` the chosen candidate is recorded too: it is
    a function of the release's randomness and the selection, both public after the release).

    Privacy map: sequential composition, the selection chain's map plus the largest Pruned-PMM
    map over the candidates, summed over the rationals and rounded up: ``k (epsilon_select +
    epsilon_main)`` for ``k`` replacements (``d_in = 2k`` under ``symmetric_distance``,
    ``d_in = k`` under ``change_one_distance``), never above the float ``epsilon_select +
    epsilon_main`` for one replacement (the selection's scale absorbs the rounding).

    **Private size.**  On a domain without a size, give ``size``, a public estimate of ``n``
    (e.g. a DP count released before): it replaces ``n`` in the candidates, the scores and the
    number of rows released (``sigma_0 = inf``: the root is neither noised nor charged).  One
    added or removed record (``d_in = 1``) then costs at most ``epsilon_select + epsilon_main /
    2`` (the selection absorbs the rounding, as above), and ``d_in`` records ``d_in`` times that.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * McSherry, Talwar, *Mechanism Design via Differential Privacy*, FOCS 2007

    **Proof Definition:** :doc:`/proofs/adaptive_pruned_pmm`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param epsilon_select: budget of the selection
    :param epsilon_main: budget of the synthesis (every candidate spends it exactly)
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped
    :param placement: ``"center"`` or ``"uniform"`` within the leaf cells
    :param candidates: public candidates; default ``standard_candidates(d, n, epsilon_main)``
    :param selection: ``"exponential"`` (the paper's) or ``"permute_and_flip"``
    :param c_abs: the score's constant ``C_abs`` (1 is valid for discrete Laplace)
    :param size: the public estimate of ``n`` when the domain has no size (required then)
    :param output_measure: ``dp.max_divergence()`` (the default, ``None``) or
        ``dp.zero_concentrated_divergence()``: zCDP, with ``epsilon_select`` and ``epsilon_main``
        read as the budgets ``rho_select`` and ``rho_main``, the zCDP candidates
        (:func:`~opendp_wasserstein.schedules.zcdp.zcdp_candidates`), the exponential mechanism
        certified in zCDP by OpenDP (``make_noisy_max``, ``eps^2/8``) and discrete Gaussian
        Pruned-PMM; the map is ``rho_select + rho_main`` for one replacement
        (:func:`~opendp_wasserstein.measurements._adaptive_zcdp.make_adaptive_pruned_pmm_zcdp`)
    :param split_order: a public :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder` (e.g.
        a table's, :meth:`~opendp_wasserstein.tables.TableEncoding.split_order`): every candidate
        runs on its hierarchy, the scores use its occupancy and diameter profile, and the
        default candidates are :func:`~opendp_wasserstein.schedules.pure.split_order_candidates`.
        The privacy map keeps its form (:doc:`/proofs/split_order`).  In zCDP the default
        candidates are :func:`~opendp_wasserstein.schedules.zcdp.zcdp_split_order_candidates`.
    :param consistency: the synthesis's post-processing, ``"paper"`` (default) or
        ``"least_squares"`` (:func:`~opendp_wasserstein.measurements.make_pruned_pmm`); the map
        is unchanged
    :param threshold: the synthesis's suppression threshold (default None: the rule's default;
        see :func:`~opendp_wasserstein.measurements.make_pruned_tree_laplace`)
    :param score: the selection's score, ``"paper"`` (default: the paper's bound ``B_a``) or
        ``"capped"`` (the capped-count estimate of
        :func:`~opendp_wasserstein.transformations.make_schedule_scores`, whose sensitivity is
        tens to hundreds of times smaller, so the selection is informative).  With ``"capped"``
        the default cube candidates also hold each model dimension's optimising depth
        (``standard_candidates(..., include_optimal_depths=True)``).  The map keeps its form.
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
    >>> dp.enable_features("contrib")
    >>> meas = make_adaptive_pruned_pmm(
    ...     dp.numpy.array2_domain(num_columns=3, size=2000, T=float), dp.change_one_distance(),
    ...     epsilon_select=0.25, epsilon_main=0.75)
    >>> meas.map(1)
    1.0
    >>> x = np.random.default_rng(0).uniform(size=(2000, 3))
    >>> meas(x).shape
    (2000, 3)
    >>> zmeas = make_adaptive_pruned_pmm(
    ...     dp.numpy.array2_domain(num_columns=3, size=2000, T=float), dp.change_one_distance(),
    ...     epsilon_select=0.05, epsilon_main=0.45,
    ...     output_measure=dp.zero_concentrated_divergence())
    >>> zmeas.map(1), zmeas(x).shape
    (0.5, (2000, 3))
    """
    assert_features("contrib")
    shared = shared_options(locals())
    if check_output_measure(output_measure) == "gaussian":
        return make_adaptive_pruned_pmm_zcdp(
            input_domain, input_metric, rho_select=epsilon_select, rho_main=epsilon_main, **shared
        )
    setup = adaptive_setup(
        input_domain,
        input_metric,
        budget_select=epsilon_select,
        budget_main=epsilon_main,
        output_measure=None,
        **shared,
    )
    n, cands, kind = setup.n, setup.candidates, setup.kind
    eps_sel, eps_main = setup.select, setup.main
    score, t_scores = setup.score, setup.scores
    # the score sensitivity Delta_A the transformation's map is calibrated to: its map of one unit
    # (one replacement, d_in = 2 under a sized symmetric_distance; one record without a size)
    sensitivity = t_scores.map(2 if n is not None and kind == "symmetric" else 1)
    # exact per-replacement losses: the synthesis spends 2 sum_{j>=1} 1/sigma_j (largest over the
    # candidates); the selection gets what is left of the exact total eps_sel + eps_main rounded
    # down to a float, so the certified total never exceeds eps_sel + eps_main (it is lowered by at
    # most a few ulps) nor the float the caller may have computed for it
    main_unit = max(
        2 * sum((Fraction(1) / Fraction(s) for s in c.scales[1:]), Fraction(0)) for c in cands
    )
    if n is not None:  # one replacement: the selection and the synthesis both move once
        total = round_down(Fraction(eps_sel) + Fraction(eps_main))
        sel_budget = Fraction(total) - main_unit
    else:  # one added or removed record: scores move by a whole Delta, the levels by half a unit
        total = round_down(Fraction(eps_sel) + Fraction(eps_main) / 2)
        sel_budget = Fraction(total) - main_unit / 2
    if sel_budget <= 0:  # pragma: no cover - check_schedule_candidates bounds main_unit by eps_main
        raise ValueError("epsilon_select is too small to represent next to epsilon_main")
    eps_sel_eff = round_down(sel_budget)
    scale = round_up(2 * Fraction(sensitivity) / Fraction(eps_sel_eff))
    m_select = make_exponential_selection(
        t_scores.output_domain, t_scores.output_metric, eps_sel_eff, sensitivity, selection
    )
    t_scores >> m_select  # OpenDP checks that the selection chains onto the scores
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
    )

    def choose_from_scores(scores: list[float]) -> int:
        """The selection applied to the score vector ``t_scores(x)``: ``(t_scores >> m_select)(x)``
        is ``m_select(t_scores(x))``."""
        src = as_random_source()
        if src.secure:
            return int(m_select(scores))
        # reproducible (non-private) runs: the same law as the secure path, from the seeded stream
        z = -np.asarray(scores) / scale  # the utilities q_a = -B_a / scale
        rng = src.derive(SELECTION_STREAM)
        if selection == "permute_and_flip":  # McKenna-Sheldon: accept a w.p. exp(q_a - max q)
            order = rng.permutation(len(z))
            accept = rng.uniform(len(z)) < np.exp(z[order] - z.max())  # the best always accepts
            return int(order[int(np.argmax(accept))])
        return softmax_choice(z, rng)  # the exponential mechanism: P(a) ~ exp(q_a)

    def record(a: int, inner: dict[str, Any]) -> None:
        c = cands[a]
        runtime.record(
            inner
            | {
                "candidate_index": a,
                "s": c.s,
                "num_candidates": len(cands),
                "epsilon_select": eps_sel,
                "epsilon_main": eps_main,
                "score": score,
            }
        )

    def function(x: np.ndarray) -> Any:
        # one count tree per release: built (at the deepest candidate depth) for the scores,
        # then read to the chosen depth by the synthesis and freed
        with shared_count_trees(release=True):  # the release owns its trees
            a = choose_from_scores(t_scores(x))
            with runtime.capture() as inner:  # folded into this release's record
                points = mains[a](x)
        record(a, inner[-1] if inner else {})
        return points

    def privacy_map(d_in: int) -> float:
        r = replacements(kind, d_in)
        u = occupancy_units(kind, n, d_in)
        # selection: scores move by at most u * Delta in l_inf, loss 2 u Delta / scale
        # (permute-and-flip and the exponential mechanism alike); synthesis: r * main_unit
        return round_up(2 * u * Fraction(sensitivity) / Fraction(scale) + r * main_unit)

    meas = make_measurement(input_domain, input_metric, max_divergence(), function, privacy_map)
    plan = AdaptivePlan(
        plan_of(t_scores), choose_from_scores, tuple(plan_of(m) for m in mains), record
    )
    return attach(meas, plan)


then_adaptive_pruned_pmm = to_then(make_adaptive_pruned_pmm)
register(make_adaptive_pruned_pmm)
