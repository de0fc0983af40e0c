"""Exact arithmetic for privacy maps: rationals in, floats rounded the safe way out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

__all__ = [
    "round_up",
    "round_down",
    "sqrt_up",
    "exact_epsilon",
    "inverse_squares",
    "spent",
    "tighten_budget",
]


def round_up(value: Fraction | int) -> float:
    """The smallest float >= ``value`` (exact rational), so a map never under-reports
    (``inf`` past the largest float: a valid, if vacuous, bound)."""
    try:
        f = float(value)
    except OverflowError:
        return math.inf
    if Fraction(f) < value:
        f = math.nextafter(f, math.inf)
    return f


def round_down(value: Fraction | int) -> float:
    """The largest float <= ``value`` (exact rational)."""
    f = float(value)
    if Fraction(f) > value:
        f = math.nextafter(f, -math.inf)
    return f


def sqrt_up(value: Fraction | int) -> float:
    """The smallest float ``x >= 0`` with ``x^2 >= value`` (exact rational; a stability or noise
    scale bounded by a square root, never below it)."""
    q = Fraction(value)
    if q < 0:
        raise ValueError("sqrt_up needs a non-negative value")
    x = round_down(Fraction(math.sqrt(float(q))))
    while x > 0 and Fraction(x) ** 2 >= q:
        x = math.nextafter(x, -math.inf)
    while Fraction(x) ** 2 < q:
        x = math.nextafter(x, math.inf)
    return x


def exact_epsilon(weight: Fraction | int, scales: Sequence[float]) -> float:
    """``weight * sum(1 / s)`` computed exactly over the rationals, rounded up to a float
    (an infinite scale, a level that is not released, adds nothing)."""
    total = sum((Fraction(1) / Fraction(float(s)) for s in scales if math.isfinite(s)), Fraction(0))
    return round_up(Fraction(weight) * total)


def inverse_squares(scales: Sequence[float]) -> list[Fraction]:
    """``1 / s^2`` for every scale, as exact rationals (the weights of ``l2sq(s)``; an infinite
    scale, a level that is not released, weighs 0)."""
    return [1 / Fraction(float(s)) ** 2 if math.isfinite(s) else Fraction(0) for s in scales]


def spent(scales: Sequence[float], charged: Sequence[int]) -> Fraction:
    """``2 sum_{j in charged} 1/sigma_j`` exactly: the loss of one replacement on counts where
    every record sits in one node per level."""
    return 2 * sum((Fraction(1) / Fraction(scales[j]) for j in charged), Fraction(0))


def tighten_budget(
    scales: Sequence[float], charged: Sequence[int], epsilon: float, adjust: int
) -> list[float]:
    """Re-solve ``scales[adjust]`` over the rationals so that ``spent(scales, charged)`` is at
    most ``epsilon`` and rounds up to it, so a map computed from the schedule certifies exactly
    ``epsilon``.  If no float lands in that window, another charged scale is nudged by one ulp
    and the solve repeated; should that fail too (it can at depth 1, with one charged level), the
    budget lands just below ``epsilon``, never above.

    :param scales: the schedule (not modified)
    :param charged: the indices of the levels whose noise is charged
    :param epsilon: the target loss of one replacement
    :param adjust: the charged index to re-solve (e.g. the last level, or the largest scale)
    :return: the tightened schedule
    """
    out = [float(s) for s in scales]
    eps = Fraction(epsilon)
    rest_idx = [j for j in charged if j != adjust]
    nudge = rest_idx[0] if rest_idx else None
    for _ in range(64):
        rest = spent(out, rest_idx)
        if rest >= eps:  # pragma: no cover - float schedules are never this far off
            for j in rest_idx:
                out[j] = math.nextafter(out[j], math.inf)
            continue
        cand = round_up(2 / (eps - rest))  # 2/cand <= eps - rest: the budget is at most eps
        for _ in range(8):  # a smaller scale raises the budget towards eps from below
            exact = rest + Fraction(2) / Fraction(cand)
            if exact > eps:
                break
            if round_up(exact) == epsilon:
                out[adjust] = cand
                return out
            cand = math.nextafter(cand, 0.0)
        if nudge is None:
            break
        out[nudge] = math.nextafter(out[nudge], math.inf)
    out[adjust] = round_up(2 / (eps - spent(out, rest_idx)))
    return out
