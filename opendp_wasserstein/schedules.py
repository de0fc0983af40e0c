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

from opendp_wasserstein.exact import round_up, spent, tighten_budget
from opendp_wasserstein.hierarchy import max_depth
from opendp_wasserstein.parameters import check_epsilon

__all__ = ["paper_schedule", "budget_of", "Candidate", "standard_candidates", "ambient_depth"]


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

    >>> from opendp_wasserstein.schedules import paper_schedule, budget_of
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
class Candidate:
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


def model_bound(d: int, n: int, epsilon_main: float, s: int, depth: int, c_abs: float = 1.0) -> float:
    """The public model bound ``B_{s,r} = C/(eps n) + 2C/(eps n) A_{s,r}^2 + 2 * 2^(-r/d)``."""
    q = 2.0 ** ((s - 1) / (2 * d))
    A = 2.0 * (float(depth) if s == 1 else (q**depth - 1.0) / (q - 1.0))
    en = epsilon_main * n
    return c_abs / en + 2.0 * c_abs / en * A * A + 2.0 * 2.0 ** (-depth / d)


def standard_candidates(
    d: int, n: int, epsilon_main: float, include_optimal_depths: bool = False
) -> tuple[Candidate, ...]:
    """The standard public candidate set of Appendix B.1 (``d`` candidates, one per ``s``).

    :param d: the data dimension
    :param n: the public dataset size
    :param epsilon_main: the synthesis budget; every candidate uses it exactly
    :param include_optimal_depths: also add, for each ``s``, the public optimising depth
        ``r_s*`` (the smallest ``r <= L`` minimising ``B_{s,r}``) when it differs from ``r_s``
    :return: the candidates, data independent

    :example:

    >>> from opendp_wasserstein.schedules import standard_candidates
    >>> [(c.s, c.depth) for c in standard_candidates(d=2, n=30000, epsilon_main=0.9)]
    [(1, 29), (2, 12)]
    """
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    _check_n(n)
    eps = check_epsilon(epsilon_main, "epsilon_main")
    L = max_candidate_depth(d, n, eps)
    out: list[Candidate] = []
    for s in range(1, d + 1):
        r = candidate_depth(d, n, eps, s)
        out.append(Candidate(s, r, paper_schedule(d, eps, r, s)))
        if include_optimal_depths:
            bounds = [model_bound(d, n, eps, s, rr) for rr in range(1, L + 1)]
            r_star = 1 + min(range(L), key=lambda i: bounds[i])
            if r_star != r:
                out.append(Candidate(s, r_star, paper_schedule(d, eps, r_star, s)))
    return tuple(out)
