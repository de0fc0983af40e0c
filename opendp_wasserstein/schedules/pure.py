"""Public noise schedules (Zare Moayedi et al. 2026, Appendices A.8 and B.1).

For a model dimension ``s`` in ``1..d`` and depth ``r``: ``q_s = 2^((s-1)/(2d))``,
``S_{s,r} = sum_{j<r} q_s^j`` and ``sigma_{j+1} = 2 S_{s,r} / (eps q_s^j)`` for ``j < r``, so
that ``2 sum_{j=1}^r 1/sigma_j = eps`` (the budget is used exactly); ``sigma_0 = 1/eps``.

Every schedule is returned with ``2 sum 1/sigma_j`` equal to ``eps`` *exactly in the map's
arithmetic*: the rational value of the float scales is at most ``eps`` and rounds up to it, so
``make_pruned_pmm(...).map(2) == eps`` on a sized domain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from opendp_wasserstein.core.exact import round_up, spent, tighten_budget
from opendp_wasserstein.core.parameters import SCALE_MAX, check_epsilon
from opendp_wasserstein.hierarchy.cells import max_depth
from opendp_wasserstein.hierarchy.split_order import SplitOrder

__all__ = [
    "paper_schedule",
    "budget_of",
    "ScheduleCandidate",
    "standard_candidates",
    "ambient_depth",
    "profile_schedule",
    "split_order_candidates",
    "model_optimal_depth",
]


def budget_of(scales: tuple[float, ...] | list[float]) -> float:
    """``2 sum_{j>=1} 1/sigma_j`` of a schedule ``sigma_0..sigma_r``, exact, rounded up."""
    return round_up(spent(scales, range(1, len(scales))))


def paper_schedule(d: int, epsilon: float, depth: int, s: int = 1) -> tuple[float, ...]:
    """The paper's public schedule ``sigma_0 .. sigma_depth`` for model dimension ``s``.

    :param d: the data dimension
    :param epsilon: the budget ``2 sum_{j>=1} 1/sigma_j`` (``sigma_0 = 1/epsilon``)
    :param depth: the depth ``r >= 1``
    :param s: the model (packing-growth) dimension, ``1 <= s <= d``
    :return: a tuple of ``depth + 1`` positive floats

    :example:

    >>> from opendp_wasserstein.schedules.pure import paper_schedule, budget_of
    >>> sigma = paper_schedule(d=2, epsilon=1.0, depth=3, s=1)
    >>> len(sigma), sigma[0], budget_of(sigma)
    (4, 1.0, 1.0)
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    eps = check_epsilon(epsilon)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if depth > max_depth(d):
        raise ValueError(f"depth must be <= {max_depth(d)} for d = {d}, got {depth}")
    if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= d:
        raise ValueError(f"s must be an integer in [1, {d}], got {s!r}")
    q = 2.0 ** ((s - 1) / (2 * d))
    S = float(depth) if s == 1 else (q**depth - 1.0) / (q - 1.0)
    scales = [1.0 / eps] + [2.0 * S / (eps * q**j) for j in range(depth)]
    return tuple(tighten_budget(scales, range(1, depth + 1), eps, adjust=depth))


def ambient_depth(epsilon: float, n: int) -> int:
    """He et al.'s ambient depth rule ``r = ceil(log2(eps n))`` (at least 1)."""
    return max(1, math.ceil(math.log2(check_epsilon(epsilon) * n)))


@dataclass(frozen=True)
class ScheduleCandidate:
    """A public depth-schedule pair ``a = (s, r, sigma^(s, r))`` (Appendix B.1)."""

    s: int
    depth: int
    scales: tuple[float, ...]


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    return n


def candidate_depth(d: int, n: int, epsilon_main: float, s: int) -> int:
    """The explicit depth ``r_s``: ``L = floor(d log2(eps n))`` for ``s = 1``, else
    ``max(1, floor((d/s) log2(1 + eps n ((s-1)/d)^2)))``, capped at ``L`` and the grid."""
    en = epsilon_main * n
    L = max(1, math.floor(d * math.log2(en))) if en > 1 else 1
    L = min(L, max_depth(d))
    if s == 1:
        return L
    r = max(1, math.floor((d / s) * math.log2(1.0 + en * ((s - 1) / d) ** 2)))
    return min(r, L)


def max_candidate_depth(d: int, n: int, epsilon_main: float) -> int:
    """``L``, the deepest depth any standard candidate uses."""
    return candidate_depth(d, n, epsilon_main, 1)


def model_bound(
    d: int, n: int, epsilon_main: float, s: int, depth: int, c_abs: float = 1.0
) -> float:
    """The public model bound ``B_{s,r} = C/(eps n) + 2C/(eps n) A_{s,r}^2 + 2 * 2^(-r/d)``."""
    q = 2.0 ** ((s - 1) / (2 * d))
    A = 2.0 * (float(depth) if s == 1 else (q**depth - 1.0) / (q - 1.0))
    en = epsilon_main * n
    return c_abs / en + 2.0 * c_abs / en * A * A + 2.0 * 2.0 ** (-depth / d)


def standard_candidates(
    d: int, n: int, epsilon_main: float, include_optimal_depths: bool = False
) -> tuple[ScheduleCandidate, ...]:
    """The standard public candidate set of Appendix B.1 (``d`` candidates, one per ``s``).

    :param d: the data dimension
    :param n: the public dataset size
    :param epsilon_main: the synthesis budget; every candidate uses it exactly
    :param include_optimal_depths: also add, for each ``s``, the public optimising depth
        ``r_s*`` (the smallest ``r <= L`` minimising ``B_{s,r}``) when it differs from ``r_s``
    :return: the candidates, data independent

    :example:

    >>> from opendp_wasserstein.schedules.pure import standard_candidates
    >>> [(c.s, c.depth) for c in standard_candidates(d=2, n=30000, epsilon_main=0.9)]
    [(1, 29), (2, 12)]
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    _check_n(n)
    eps = check_epsilon(epsilon_main, "epsilon_main")
    L = max_candidate_depth(d, n, eps)
    out: list[ScheduleCandidate] = []
    for s in range(1, d + 1):
        r = candidate_depth(d, n, eps, s)
        out.append(ScheduleCandidate(s, r, paper_schedule(d, eps, r, s)))
        if include_optimal_depths:
            bounds = [model_bound(d, n, eps, s, rr) for rr in range(1, L + 1)]
            r_star = 1 + min(range(L), key=lambda i: bounds[i])
            if r_star != r:
                out.append(ScheduleCandidate(s, r_star, paper_schedule(d, eps, r_star, s)))
    return tuple(out)


def profile_schedule(weights: np.ndarray | list[float], epsilon: float) -> tuple[float, ...]:
    r"""The schedule ``sigma_0 .. sigma_r`` minimising ``sum_j w_j sigma_{j+1}`` at budget
    ``epsilon``.

    Under ``2 sum_{j=1}^r 1/sigma_j = epsilon`` (Lagrange, as in the paper's Appendix A.8):

    .. math:: \sigma_{j+1} = \frac{2}{\epsilon}\,\frac{\sum_i \sqrt{w_i}}{\sqrt{w_j}}, \qquad
        \sum_j w_j \sigma_{j+1} = \frac{2}{\epsilon}\Big(\sum_j \sqrt{w_j}\Big)^2 .

    With ``w_j = O_j diam_j`` (the expected number of occupied level-``j`` cells times their
    diameter) this is the schedule that minimises the score's noise term; for the cube with
    ``O_j = 2^(j s/d)`` and ``diam_j = 2^(-j/d)`` it is the paper's ``sigma_{j+1} propto q_s^-j``.
    Weights below ``1e-6`` of the largest are raised to it (a level of zero weight would get an
    infinite scale); ``sigma_0 = 1/epsilon``.  The budget is met exactly in the map's
    arithmetic (:func:`~opendp_wasserstein.core.exact.tighten_budget`).

    :param weights: ``w_0 .. w_{r-1}`` (non-negative, not all zero)
    :param epsilon: the budget

    >>> from opendp_wasserstein.schedules.pure import profile_schedule, budget_of
    >>> sigma = profile_schedule([1.0, 1.0, 1.0], 1.0)
    >>> sigma, budget_of(sigma)
    ((1.0, 6.0, 6.0, 6.0), 1.0)
    """
    eps = check_epsilon(epsilon)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size < 1 or not np.all(np.isfinite(w)) or w.min() < 0 or w.max() <= 0:
        raise ValueError("weights must be one or more finite non-negative numbers, not all zero")
    w = np.maximum(w, 1e-6 * w.max())
    root = np.sqrt(w)
    sig = np.minimum((2.0 / eps) * root.sum() / root, SCALE_MAX / 2)
    depth = w.size
    scales = [1.0 / eps, *sig.tolist()]
    adjust = 1 + int(np.argmax(sig))
    return tuple(tighten_budget(scales, range(1, depth + 1), eps, adjust=adjust))


def level_weights(order: SplitOrder, depth: int, n: int, s: int) -> np.ndarray:
    """``w_j = g_j diam_j`` for ``j < depth``: the model occupancy ``g_j`` (doubling at every
    split of an unresolved discrete coordinate, growing by ``2^(s/d_num)`` at every numeric
    split, capped at ``n``) times the level's diameter."""
    kinds = order.growth(depth)
    d_num = max(1, len(order.numeric))
    step = {"discrete": 1.0, "numeric": s / d_num, "resolved": 0.0}
    log_g = np.concatenate(([0.0], np.cumsum([step[k] for k in kinds])))[:depth]
    g = np.minimum(np.exp2(log_g), float(n))
    return g * np.asarray(order.diameters(depth)[:depth])


def level_with(order: SplitOrder, numeric_splits: int) -> int:
    """The first level with that many numeric splits above it (and every discrete one)."""
    kinds = order.growth(order.max_depth)
    numeric_at = np.concatenate(
        ([0], np.cumsum([k == "numeric" for k in kinds]))
    )  # numeric splits above level r
    discrete_done = max([j + 1 for j, k in enumerate(kinds) if k == "discrete"], default=0)
    r = int(np.searchsorted(numeric_at, numeric_splits, side="left"))
    return max(1, min(max(r, discrete_done), order.max_depth))


def _candidate_cap(order: SplitOrder, n: int, eps: float) -> int:
    """The deepest split-order candidate: ``floor(d_num log2(eps n))`` numeric splits."""
    en, d_num = eps * n, len(order.numeric)
    return level_with(order, max(1, math.floor(d_num * math.log2(en))) if en > 1 and d_num else 0)


def model_optimal_depth(
    order: SplitOrder,
    n: int,
    epsilon_main: float,
    s: int,
    cap: int | None = None,
    c_abs: float = 1.0,
) -> tuple[int, int, int, np.ndarray]:
    """The model-optimal depth of :func:`split_order_candidates` for model dimension ``s``.

    :return: ``(depth, minimiser, r_1, bounds)``: the depth used, the smallest minimiser of the
        model bound ``B_r`` (``bounds[r - 1]``, ``r = 1 .. cap``), and ``r_1``, the first level
        whose cells have diameter below 1; ``depth = max(minimiser, r_1)``, which differs from
        the minimiser only when ``B_r >= 2`` at every depth (see :func:`split_order_candidates`)
    """
    cap = _candidate_cap(order, n, epsilon_main) if cap is None else cap
    bounds = _split_order_model_bounds(order, n, epsilon_main, s, cap, c_abs)
    raw = 1 + int(np.argmin(bounds))
    r_1 = _first_informative_level(order, cap)
    return max(raw, r_1), raw, r_1, bounds


def _first_informative_level(order: SplitOrder, cap: int) -> int:
    """``r_1``: the first level (at most ``cap``) whose cells have diameter below 1."""
    below_one = np.flatnonzero(np.asarray(order.diameters(cap)) < 1.0)
    return int(below_one[0]) if below_one.size else cap


def _split_order_model_bounds(
    order: SplitOrder, n: int, eps: float, s: int, cap: int, c_abs: float
) -> np.ndarray:
    """The model bound ``B_r`` of :func:`split_order_candidates` for ``r = 1 .. cap``."""
    en = eps * n
    w_all = level_weights(order, cap, n, s)
    root = np.sqrt(np.maximum(w_all, 1e-6 * max(float(w_all.max()), 1e-300)))
    diam = np.asarray(order.diameters(cap))
    noise = np.cumsum(root)  # sum_{j<r} sqrt(w_j) for r = 1 .. cap
    return c_abs / en + 8.0 * c_abs * noise**2 / en + 2.0 * diam[1 : cap + 1]


def split_order_candidates(
    order: SplitOrder, n: int, epsilon_main: float, c_abs: float = 1.0
) -> tuple[ScheduleCandidate, ...]:
    r"""Public depth-schedule candidates for a hierarchy with split order ``order`` (a table).

    The analogue of :func:`standard_candidates` for any public split order and its diameter
    profile (:meth:`~opendp_wasserstein.hierarchy.split_order.SplitOrder.diameters`).  For each
    model dimension ``s = 1 .. d_num`` of the numeric coordinates (one candidate set if there are
    none), the model occupancy ``g_j`` doubles at each split of an unresolved discrete
    coordinate and grows by ``2^(s/d_num)`` at each numeric split (capped at ``n``); the schedule
    is :func:`profile_schedule` with ``w_j = g_j diam_j``, and the depths are

    * the *explicit* depth: the level at which the numeric coordinates have had
      ``candidate_depth(d_num, n, eps, s)`` splits (for the cube, the paper's ``r_s``; with
      discrete coordinates first, every category is resolved by then), and
    * the *model-optimal* depth ``r*_s``: the smallest minimiser of the model bound
      ``B_r = C/(eps n) + 8C (sum_{j<r} sqrt(w_j))^2 / (eps n) + 2 diam_r`` (the paper's
      ``B_{s,r}`` with the real diameter profile), except that it is never below ``r_1``, the
      first level whose cells have diameter below 1 (every category resolved, every numeric
      coordinate split once).  *This changes the choice only where the bound is vacuous.*  For
      ``r < r_1`` the cells have diameter 1, so ``B_r >= 2``; if the minimiser is below ``r_1``
      then ``B_r >= 2`` at *every* depth, while the W1 distance under the table metric never
      exceeds 1 (the metric is at most 1).  The bound then says nothing about any depth, and
      its minimiser (often depth 1 on tables with several categorical columns) would be a
      depth that resolves nothing, which wrecks every marginal; ``r_1`` is the shallowest depth
      at which the bound's resolution term ``2 diam_r`` is below 2.  Wherever the bound is
      informative somewhere (``min_r B_r < 2``) its minimiser is at least ``r_1`` and is taken
      as it is (``tests/schedules/test_pure.py`` checks both).  Measured with
      ``benchmarks/bench_split_order.py`` (penguins, cars, a 12-column table), the raised
      depth gave the lowest W1, and the same on seattle-weather,

    both capped at the level where the numeric coordinates have had ``floor(d_num log2(eps n))``
    splits (and at the order's depth).  A candidate whose depth and schedule repeat an earlier
    one is dropped: copies would only tilt the selection towards it.  Everything is a function of
    public values.

    :param order: the public split order
    :param n: the public size (or public estimate)
    :param epsilon_main: the synthesis budget every candidate spends exactly
    :param c_abs: the constant of the model bound

    :example:

    >>> from opendp_wasserstein.hierarchy.split_order import SplitOrder
    >>> from opendp_wasserstein.schedules.pure import split_order_candidates
    >>> order = SplitOrder.discrete_first(cells=(4, 0, 0))
    >>> [(c.s, c.depth) for c in split_order_candidates(order, n=10000, epsilon_main=1.0)]
    [(1, 28), (1, 10), (2, 13), (2, 6)]
    """
    if not isinstance(order, SplitOrder):
        raise TypeError("order must be an opendp_wasserstein.hierarchy.split_order.SplitOrder")
    _check_n(n)
    eps = check_epsilon(epsilon_main, "epsilon_main")
    d_num = len(order.numeric)
    cap = _candidate_cap(order, n, eps)
    out: list[ScheduleCandidate] = []
    for s in range(1, max(1, d_num) + 1):
        r_star = model_optimal_depth(order, n, eps, s, cap, c_abs)[0]
        r_explicit = level_with(order, candidate_depth(d_num, n, eps, s)) if d_num else cap
        for r in dict.fromkeys((min(r_explicit, cap), r_star)):  # distinct, in order
            w = level_weights(order, r, n, s)
            if w.max() <= 0:
                w = np.ones(r)
            scales = profile_schedule(w, eps)
            # the same schedule for another s (e.g. depth 1) would only tilt the selection
            if all((c.depth, c.scales) != (r, scales) for c in out):
                out.append(ScheduleCandidate(s, r, scales))
    return tuple(out)
