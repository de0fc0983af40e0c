"""Adaptive Pruned-PMM: private depth-schedule selection, then Pruned-PMM (Algorithm 3)."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from opendp._internal import _make_measurement
from opendp.extras._utilities import to_then
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._random import SELECTION_STREAM, as_random_source
from opendp_wasserstein.domains import (
    check_data_domain,
    check_epsilon,
    check_metric,
    replacements,
    round_down,
    round_up,
)
from opendp_wasserstein.measurements._exponential_selection import (
    SELECTIONS,
    make_exponential_selection,
)
from opendp_wasserstein.measurements._pmm import make_pruned_pmm
from opendp_wasserstein.schedules import Candidate, standard_candidates
from opendp_wasserstein.synthesis import check_placement
from opendp_wasserstein.transformations._schedule_scores import (
    check_candidates,
    make_schedule_scores,
    score_table,
)

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
    candidates: Sequence[Candidate] | None = None,
    selection: str = "exponential",
    c_abs: float = 1.0,
    backend: str = "fast",
    seed: int | None = None,
    diagnostics: bool = False,
) -> Measurement:
    r"""Construct Adaptive Pruned-PMM (Zare Moayedi et al. 2026, Algorithm 3 and Appendix B).

    1. Score every public candidate ``a = (s, r_a, sigma^(s, r_a))`` by ``B_a(X)``
       (:func:`~opendp_wasserstein.transformations.make_schedule_scores`), and select one with
       the exponential mechanism at ``epsilon_select``
       (:func:`~opendp_wasserstein.measurements.make_exponential_selection`).
    2. Run Pruned-PMM with the chosen depth and schedule and fresh randomness
       (:func:`~opendp_wasserstein.measurements.make_pruned_pmm`, spending ``epsilon_main``).

    Privacy map: sequential composition, the selection chain's map plus the largest Pruned-PMM
    map over the candidates: ``k (epsilon_select + epsilon_main)`` for ``k`` replacements
    (``d_in = 2k`` under ``symmetric_distance``, ``d_in = k`` under ``change_one_distance``),
    summed over the rationals and rounded up.

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n, T=float)``; n public
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param epsilon_select: budget of the selection
    :param epsilon_main: budget of the synthesis (every candidate spends it exactly)
    :param bounds: the public box ``(lower, upper)``; rows outside are clamped
    :param placement: ``"center"`` or ``"uniform"`` within the leaf cells
    :param candidates: public candidates; default ``standard_candidates(d, n, epsilon_main)``
    :param selection: ``"exponential"`` (the paper's) or ``"permute_and_flip"``
    :param c_abs: the score's constant ``C_abs`` (1 is valid for discrete Laplace)
    :param backend: discrete Laplace sampler, ``"fast"`` or ``"opendp"``
    :param seed: **not private** -- reproducible runs for tests and figures only (the
        selection then samples the same softmax from the seeded stream)
    :param diagnostics: release ``(points, info)`` where ``info`` holds what is public after the
        release: the chosen candidate, its depth and schedule, visited nodes
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
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError(
            "input_domain must have a public size n (array2_domain(size=n)): "
            "the candidate set and the scores depend on n"
        )
    eps_sel = check_epsilon(epsilon_select, "epsilon_select")
    eps_main = check_epsilon(epsilon_main, "epsilon_main")
    check_placement(placement)
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    cands = check_candidates(
        standard_candidates(d, n, eps_main) if candidates is None else candidates, d, eps_main
    )
    as_random_source(seed)

    t_scores = make_schedule_scores(input_domain, input_metric, cands, eps_main, c_abs, bounds)
    table = score_table(cands, d, n, eps_main, c_abs)
    kind = check_metric(input_metric, n)
    # exact per-replacement losses: the synthesis spends 2 sum_{j>=1} 1/sigma_j (largest over the
    # candidates); the selection gets what is left of the float total eps_sel + eps_main, so the
    # certified total never exceeds that float (eps_sel is lowered by at most a few ulps)
    main_unit = max(2 * sum((Fraction(1) / Fraction(s) for s in c.scales[1:]), Fraction(0)) for c in cands)
    total = eps_sel + eps_main
    sel_budget = Fraction(total) - main_unit
    if sel_budget <= 0:  # pragma: no cover - check_candidates bounds main_unit by eps_main
        raise ValueError("epsilon_select is too small to represent next to epsilon_main")
    eps_sel_eff = round_down(sel_budget)
    scale = round_up(2 * Fraction(table.sensitivity) / Fraction(eps_sel_eff))
    m_select = make_exponential_selection(
        t_scores.output_domain, t_scores.output_metric, eps_sel_eff, table.sensitivity, selection
    )
    select = t_scores >> m_select
    mains = [
        make_pruned_pmm(
            input_domain, input_metric, c.depth, c.scales, bounds, placement, backend, seed, diagnostics=True
        )
        for c in cands
    ]

    def choose(x: np.ndarray) -> int:
        if seed is None:
            return int(select(x))
        # seeded (non-private) runs: the same softmax, from the seeded stream
        z = -np.asarray(t_scores(x)) / scale  # P(a) ~ exp(-B_a / scale), as the secure path
        p = np.exp(z - z.max())
        p /= p.sum()
        u = as_random_source(seed).derive(SELECTION_STREAM).uniform(1)[0]
        return int(min(np.searchsorted(np.cumsum(p), u, side="right"), len(p) - 1))

    def function(x: np.ndarray) -> Any:
        a = choose(x)
        points, info = mains[a](x)
        if not diagnostics:
            return points
        c = cands[a]
        return points, info | {
            "candidate_index": a,
            "s": c.s,
            "scales": c.scales,
            "num_candidates": len(cands),
            "epsilon_select": eps_sel,
            "epsilon_main": eps_main,
        }

    def privacy_map(d_in: int) -> float:
        r = replacements(kind, d_in)
        # selection: scores move by at most r * Delta in l_inf, loss 2 r Delta / scale
        # (permute-and-flip and the exponential mechanism alike); synthesis: r * main_unit
        return round_up(2 * r * Fraction(table.sensitivity) / Fraction(scale) + r * main_unit)

    return _make_measurement(input_domain, input_metric, max_divergence(), function, privacy_map)


then_adaptive_pruned_pmm = to_then(make_adaptive_pruned_pmm)
