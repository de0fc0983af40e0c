"""The score transformation of Adaptive Pruned-PMM (Zare Moayedi et al. 2026, Appendix B.2).

With a public :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder` (a table's hierarchy),
the scores count the occupancy of that hierarchy and weigh level ``j`` by its real diameter
``diam_j`` instead of the cube's ``2^(-j/d)`` (:doc:`/proofs/split_order`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Measure, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    replacements,
    validate_data,
)
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.parameters import (
    SCALE_MAX,
    ScaleLimitError,
    check_epsilon,
    check_output_measure,
)
from opendp_wasserstein.core.plan import ScoresPlan, attach
from opendp_wasserstein.hierarchy.cells import (
    capped_level_sums,
    check_axes,
    count_tree,
    level_imbalance,
    max_depth,
)
from opendp_wasserstein.hierarchy.placement import check_placement
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.schedules.pure import ScheduleCandidate, budget_of
from opendp_wasserstein.schedules.zcdp import zcdp_budget

__all__ = [
    "SCORES",
    "ScoreTable",
    "score_table",
    "make_schedule_scores",
    "then_schedule_scores",
    "check_score_size",
    "occupancy_units",
]

_U = Fraction(1, 2**53)  # unit roundoff of float64

#: the schedule scores: the paper's occupancy bound, or the capped-count estimate
SCORES = ("paper", "capped")


@dataclass(frozen=True)
class ScoreTable:
    """The public part of the scores ``B_a(X) = const_a + sum_j weights[a, j] T_{j,a}(X)``.

    ``score="paper"``: ``T_{j,a} = O_j``, the occupancy (the same for every candidate);
    ``score="capped"``: ``T_{j,a} = sum_{v at level j} min(c_v, caps[j, a])``.

    :param const: ``C/(eps_main n) + 2 diam_{r_a}`` per candidate (cube: ``diam_r = 2^(-r/d)``)
    :param weights: ``(|A|, L)``: paper ``4 C sigma_{j+1} diam_j / n``, capped
        ``diam_j / (2 n)``, for ``j < r_a``, else 0
    :param sensitivity: ``Delta_A``, the largest change of any score when one record is
        replaced, including a bound on the rounding error of evaluating the scores in float
    :param delta_exact: ``max_a sum_j weights[a, j]`` over the levels that move (paper: ``j >= 1``;
        capped: also ``j = 0`` when the size is private), without the rounding term
    :param caps: capped only: ``(L, |A|)`` integers ``max(1, ceil(C sigma_{j+1}))`` for ``j < r_a``
        (below, where the weight is 0, the candidate's largest cap: the sums there are not used)
    """

    const: np.ndarray
    weights: np.ndarray
    sensitivity: float
    delta_exact: float
    caps: np.ndarray | None = None

    def scores(self, stat: np.ndarray) -> np.ndarray:
        """Every candidate's score from ``O_0 .. O_{L-1}`` (paper, shape ``(L,)``) or from
        ``T`` (capped, shape ``(L, |A|)``)."""
        t = np.asarray(stat).astype(np.float64)
        return self.const + (self.weights * (t.T if t.ndim == 2 else t)).sum(axis=1)


def _zcdp_budget_of(scales: Sequence[float]) -> float:
    return round_up(zcdp_budget(scales))


def check_split_order(split_order: Any, d: int) -> SplitOrder | None:
    """``split_order``, checked to be a :class:`SplitOrder` of dimension ``d``, or None."""
    if split_order is None:
        return None
    if not isinstance(split_order, SplitOrder):
        raise TypeError(
            "split_order must be an opendp_wasserstein.hierarchy.split_order.SplitOrder or None"
        )
    if split_order.d != d:
        raise ValueError(f"split_order is for {split_order.d} columns, the input domain has {d}")
    return split_order


def check_schedule_candidates(
    candidates: Sequence[ScheduleCandidate],
    d: int,
    epsilon_main: float,
    default: bool = False,
    zcdp: bool = False,
    split_order: SplitOrder | None = None,
) -> tuple[ScheduleCandidate, ...]:
    """Candidates with valid depths and schedules (level scales at most 2^52), all using
    ``epsilon_main`` exactly (with ``zcdp``: the zCDP budget ``rho_main = sum_{j>=1}
    1/sigma_j^2``).  ``default``: the candidates were derived from ``epsilon_main`` (then a
    scale above 2^52 means ``epsilon_main`` is too small, and the error says so).  Depths go up
    to the split order's, if one is given."""
    budget_of_ = _zcdp_budget_of if zcdp else budget_of
    cands = tuple(candidates)
    if not cands:
        raise ValueError("candidates must not be empty")
    deepest = max_depth(d) if split_order is None else split_order.max_depth
    for c in cands:
        if not isinstance(c, ScheduleCandidate):
            raise TypeError(
                "candidates must be opendp_wasserstein.schedules.pure.ScheduleCandidate objects"
            )
        if not 1 <= c.depth <= deepest:
            raise ValueError(f"candidates: depth {c.depth} must be in [1, {deepest}]")
        if len(c.scales) != c.depth + 1 or not all(np.isfinite(c.scales)) or min(c.scales) <= 0:
            raise ValueError("candidates: each schedule must have depth + 1 finite positive scales")
        if max(c.scales[1:]) > SCALE_MAX:
            raise ScaleLimitError(
                "epsilon_main is too small: the standard candidates' level scales would pass "
                "2^52 (exact integer noise)"
                if default
                else "candidates: level scales must be at most 2^52 (exact integer noise)"
            )
        if budget_of_(c.scales) > epsilon_main:
            raise ValueError(
                f"candidates: a schedule spends {budget_of_(c.scales)} > epsilon_main = "
                f"{epsilon_main}"
            )
        if budget_of_(c.scales) < epsilon_main * (1 - 1e-9):
            raise ValueError(
                f"candidates: a schedule spends {budget_of_(c.scales)}, not epsilon_main = "
                f"{epsilon_main}"
                " (every candidate must use the synthesis budget exactly)"
            )
    return cands


def check_score(score: Any) -> str:
    """``score``, checked to be one of :data:`SCORES`."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, got {score!r}")
    return str(score)


def score_table(
    candidates: Sequence[ScheduleCandidate],
    d: int,
    n: int,
    epsilon_main: float,
    c_abs: float = 1.0,
    occ_cap: int | None = None,
    diameters: Sequence[float] | None = None,
    score: str = "paper",
    resolution_levels: int = 0,
) -> ScoreTable:
    """The public score coefficients and the sensitivity ``Delta_A`` (Appendix B.2, B.6).

    ``occ_cap`` bounds every statistic in the rounding-error term (default ``n``: a public size
    bounds them); with a private size the scores clamp the statistic to it (and, for the capped
    score, level 0 moves too).  ``diameters`` is the public profile ``diam_0 ..`` of a split
    order (default the paper's cube profile ``2^(-j/d)``), to level ``max(L, J)``.  ``score``:
    ``"paper"`` (the occupancy bound) or ``"capped"`` (the capped-count estimate,
    :doc:`/proofs/occupancy_scores`).  ``resolution_levels``: capped only, ``J >= L``: the
    resolution term ``2 diam_{r_a}`` becomes the data's ``sum_{r_a <= j < J} diam_j I_j / (2n) +
    diam_J`` (``I_j``: the levels' child imbalance, rows ``L .. L + J - 1`` of the statistic),
    the distance of the data to its uniform spread within the cells (``placement="uniform"``).
    """
    score = check_score(score)
    L = max(c.depth for c in candidates)
    J = int(resolution_levels)
    if J and (score != "capped" or J < L):
        raise ValueError(
            "resolution_levels applies to the capped score only and must be at least the "
            "deepest depth"
        )
    k = len(candidates)
    weights = np.zeros((k, L + J))
    const = np.zeros(k)
    caps = np.ones((L, k), dtype=np.int64) if score == "capped" else None
    top_level = max(L, J)
    if diameters is not None:
        diam = np.asarray(diameters, dtype=np.float64)
        if diam.shape != (top_level + 1,) or not np.all(np.isfinite(diam)) or diam.min() < 0:
            raise ValueError(
                f"diameters must be {top_level + 1} finite non-negative numbers (levels 0 .. "
                f"{top_level})"
            )
    else:
        diam = 2.0 ** (-np.arange(top_level + 1) / d)
    for i, c in enumerate(candidates):  # a loop over the (at most 2d) candidates
        r = c.depth
        sig = np.asarray(c.scales[1:], dtype=np.float64)
        if caps is not None:
            weights[i, :r] = diam[:r] / (2.0 * n)
            caps[:r, i] = np.maximum(1, np.ceil(c_abs * sig)).astype(np.int64)
            caps[r:, i] = caps[:r, i].max()  # unused (weight 0); large, so few cells are visited
        else:
            weights[i, :r] = 4.0 * c_abs * sig * diam[:r] / n
        if J:
            weights[i, L + r : L + J] = diam[r:J] / (2.0 * n)
            const[i] = c_abs / (epsilon_main * n) + diam[J]
        else:
            const[i] = c_abs / (epsilon_main * n) + 2.0 * diam[r]
    # per-unit moves of the statistic's rows.  paper: O_0 = 1 for every non-empty dataset, so
    # level 0 never moves; capped: T_0 = min(n, tau) moves only when the size is private (occ_cap
    # is then given); a row of I moves by 1 per added or removed record, 2 per replacement
    private = occ_cap is not None
    moves = np.ones(L + J)
    if not (caps is not None and private):
        moves[0] = 0.0
    moves[L:] = 1.0 if private else 2.0
    delta = max(
        sum(
            (
                Fraction(float(w)) * Fraction(float(u))
                for w, u in zip(weights[i], moves, strict=True)
            ),
            Fraction(0),
        )
        for i in range(k)
    )
    # rounding: |fl(B) - B| <= gamma_{m} * (|const| + sum_j w_j T_j), m = L + J + 1 terms, with
    # T_j <= min(n, 2^j tau) and I_j <= n; two evaluations (X and X') may each err by that much
    m = L + J + 1
    gamma = m * _U / (1 - m * _U)
    top = float(n if occ_cap is None else occ_cap)
    upper = max(
        Fraction(float(const[i]))
        + sum(
            (
                Fraction(float(w)) * Fraction(float(o))
                for w, o in zip(weights[i], _statistic_bounds(L, J, top, caps, i), strict=True)
            ),
            Fraction(0),
        )
        for i in range(k)
    )
    sensitivity = round_up(delta + 2 * gamma * upper)
    return ScoreTable(const, weights, sensitivity, round_up(delta), caps)


def _statistic_bounds(L: int, J: int, top: float, caps: np.ndarray | None, i: int) -> np.ndarray:
    """Upper bounds of the statistic's rows for candidate ``i``: ``O_j <= min(top, 2^j)``,
    ``T_{j,i} <= min(top, 2^j tau_{j,i})``, ``I_j <= top``."""
    reach = np.minimum(top, 2.0 ** np.arange(L) * (1.0 if caps is None else caps[:, i]))
    return np.concatenate((reach, np.full(J, top)))


def check_score_size(n: int | None, size: Any) -> int:
    """The score normaliser: the public ``n``, or the public ``size`` when ``n`` is private."""
    if n is not None:
        if size is not None:
            raise ValueError("size applies only when the input domain has no public size")
        return n
    if size is None:
        raise ValueError(
            "size is required when input_domain has no public size: the scores scale with 1/n, "
            "so give a public estimate (e.g. a DP count)"
        )
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be an integer >= 1, got {size!r}")
    return int(size)


def occupancy_cap(size: int) -> int:
    """The public clamp of ``O_j`` when the size is private: ``4 size + 64``."""
    return 4 * int(size) + 64


def occupancy_units(metric_kind: str, n: int | None, d_in: int) -> Fraction:
    """The most any ``O_j`` moves for ``d_in``: ``d_in`` records added or removed (private size),
    else ``replacements(d_in)``."""
    r = replacements(metric_kind, d_in)
    return Fraction(int(d_in)) if n is None and metric_kind == "symmetric" else r


#: levels below the deepest candidate that the data resolution term reads (``placement="uniform"``)
RESOLUTION_EXTRA_LEVELS = 8


@dataclass(frozen=True)
class ScoresSetup:
    """The public quantities of the scores: the table, the deepest candidate depth ``L``, the
    resolution levels ``J`` (0: the constant ``2 diam_r``), the clamp (private size) and the
    first level whose imbalance any candidate reads."""

    table: ScoreTable
    L: int
    J: int
    cap: int | None
    first_resolution_level: int


def scores_setup(
    cands: Sequence[ScheduleCandidate],
    d: int,
    n: int | None,
    norm: int,
    eps: float,
    c_abs: float,
    order: SplitOrder | None,
    zcdp: bool,
    score: str,
    placement: str,
) -> ScoresSetup:
    """What :func:`make_schedule_scores` computes from public values only."""
    # with a private size the statistic is clamped to a public cap (1-Lipschitz: Delta is
    # unchanged), so the float rounding bound of the scores stays small
    cap = None if n is not None else occupancy_cap(norm)
    L = max(c.depth for c in cands)
    deepest = max_depth(d) if order is None else order.max_depth
    J = (
        min(L + RESOLUTION_EXTRA_LEVELS, deepest)
        if score == "capped" and placement == "uniform"
        else 0
    )
    top = max(L, J)
    diameters = None if order is None else order.diameters(top)
    table = score_table(
        cands,
        d,
        norm,
        math.sqrt(eps) if zcdp else eps,
        c_abs,
        occ_cap=cap,
        diameters=diameters,
        score=score,
        resolution_levels=J,
    )
    return ScoresSetup(table, L, J, cap, min(c.depth for c in cands))


def make_schedule_scores(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Sequence[ScheduleCandidate],
    epsilon_main: float,
    c_abs: float = 1.0,
    bounds: Any = None,
    size: int | None = None,
    output_measure: Measure | None = None,
    split_order: SplitOrder | None = None,
    score: str = "paper",
    placement: str = "center",
) -> Transformation:
    r"""Construct a Transformation from data to the candidates' scores ``B_a(X)``.

    ``B_a(X) = C/(eps_main n) + (4C/n) sum_{j<r_a} sigma_{j+1} O_j(X) 2^(-j/d) + 2 * 2^(-r_a/d)``
    (Zare Moayedi et al. 2026, B.2), an upper bound on the expected W1 of Pruned-PMM run with
    candidate ``a``.  Output: a float vector in ``linf_distance``; a replacement moves every
    ``O_j`` by at most 1 and ``O_0`` not at all, so ``B_a`` moves by at most
    ``Delta_a = (4C/n) sum_{1<=j<r_a} sigma_{j+1} 2^(-j/d)``; the map is
    ``replacements(d_in) * Delta_A`` with ``Delta_A = max_a Delta_a`` plus a bound on the
    float rounding of the scores (see :func:`score_table`).

    When the size is private, the scores are normalised by a public ``size`` instead of ``n``
    (e.g. a DP count released before): the formula, and so ``Delta_A``, take ``size`` for ``n``,
    and the map is ``d_in * Delta_A`` (each added or removed record moves every ``O_j`` by at
    most 1).

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)

    **Proof Definition:** :doc:`/proofs/occupancy_scores`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param candidates: the public candidates, e.g.
        :func:`~opendp_wasserstein.schedules.pure.standard_candidates`
    :param epsilon_main: the synthesis budget every candidate spends
    :param c_abs: the constant ``C_abs`` with ``E|LapZ(sigma)| <= C_abs sigma`` (1 is valid)
    :param bounds: the public box; default the unit cube
    :param size: the public normaliser when the input domain has no size (required then, refused
        otherwise)
    :param output_measure: the measure of the synthesis the candidates are for:
        ``dp.max_divergence()`` (default, ``None``) or ``dp.zero_concentrated_divergence()``, in
        which case ``epsilon_main`` is the zCDP budget ``rho_main`` every candidate spends
        (:func:`~opendp_wasserstein.schedules.zcdp.zcdp_candidates`) and the root term is
        ``C/(sqrt(rho_main) n)`` (``sigma_0 = 1/sqrt(rho_main)``; the same for every candidate)
    :param split_order: a public :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder`: the
        occupancy is that of its hierarchy and ``2^(-j/d)`` becomes its diameter profile
        ``diam_j`` (in the weights and the constant ``2 diam_{r_a}``); the map keeps its form
        (:doc:`/proofs/split_order`)
    :param score: ``"paper"`` (default): the paper's bound above, from the occupancy;
        ``"capped"``: ``C/(eps_main n) + (1/(2n)) sum_{j<r_a} diam_j sum_{v at level j}
        min(c_v, tau_{a,j}) + 2 diam_{r_a}`` with ``tau_{a,j} = max(1, ceil(C sigma_{j+1}))``: a
        node moves at most its own count, and on average about its noise ``C sigma_{j+1}``, by
        about half its diameter.  An estimate rather than a bound, with a far smaller
        sensitivity: each record moves each level's sum by at most 1, so ``Delta_a = (1/(2n))
        sum_j diam_j`` (level 0 included when the size is private), not ``4C/n sum_j sigma_{j+1}
        diam_j`` (:doc:`/proofs/occupancy_scores`)
    :param placement: the synthesis's placement, ``"center"`` (default) or ``"uniform"``.  With
        ``"uniform"`` and ``score="capped"`` the resolution term ``2 diam_{r_a}`` becomes the
        data's own: ``sum_{r_a <= j < J} diam_j I_j / (2n) + diam_J`` with ``I_j = sum_v
        |c_{v0} - c_{v1}|`` the imbalance of the level's children and ``J = min(L + 8, deepest
        level)`` (:data:`RESOLUTION_EXTRA_LEVELS`): a bound on the distance of the data
        to its uniform spread within the depth-``r_a`` cells, which is what uniform placement
        releases (a record moves each ``I_j`` by at most 1, or 2 when replaced)

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.schedules.pure import standard_candidates
    >>> from opendp_wasserstein.transformations import make_schedule_scores
    >>> dp.enable_features("contrib")
    >>> cands = standard_candidates(d=2, n=1000, epsilon_main=0.9)
    >>> t = make_schedule_scores(dp.numpy.array2_domain(num_columns=2, size=1000, T=float),
    ...                          dp.change_one_distance(), cands, epsilon_main=0.9)
    >>> len(t(np.random.default_rng(0).uniform(size=(1000, 2))))
    2
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    norm = check_score_size(n, size)
    kind = check_metric(input_metric, n)
    zcdp = check_output_measure(output_measure) == "gaussian"
    eps = check_epsilon(epsilon_main, "epsilon_main")
    c_abs = check_epsilon(c_abs, "c_abs")
    order = check_split_order(split_order, d)
    kind_of_score = check_score(score)
    cands = check_schedule_candidates(candidates, d, eps, zcdp=zcdp, split_order=order)
    box = as_box(bounds, d)
    nan_ok = domain_allows_nan(input_domain)
    setup = scores_setup(
        cands, d, n, norm, eps, c_abs, order, zcdp, kind_of_score, check_placement(placement)
    )
    table, L, J, cap = setup.table, setup.L, setup.J, setup.cap
    depth = max(L, J)  # the count tree's: the imbalance reads the children of level J - 1
    axes = None if order is None else check_axes(order.axes, d, depth)

    def scores_of_occupancy(stat: np.ndarray) -> list[float]:
        """The scores from the statistic: the occupancy ``O_0 .. O_{L-1}`` (paper) or the capped
        sums ``T`` of shape ``(L, |A|)`` (capped) followed, with the data resolution term, by the
        imbalance ``I_0 .. I_{J-1}`` (``J`` more rows), as the count tree or a cluster reduced
        them."""
        stat = np.array(stat[: L + J], dtype=np.int64)
        if table.caps is None:
            # O_0 is 1 on any non-empty data; it is fixed to 1 so that it never moves, also when an
            # empty dataset is possible (private size), and Delta may leave level 0 out
            stat[0] = 1
        if cap is not None:
            stat = np.minimum(stat, cap)
        return table.scores(stat).tolist()

    def function(x: np.ndarray) -> list[float]:
        x = validate_data(x, d, n, nan=nan_ok)
        # kept for the synthesis of the same release (inside shared_count_trees, else dropped)
        tree = count_tree(x, depth, box, keep=True, axes=axes)
        if table.caps is None:
            return scores_of_occupancy(tree.occupancy()[:L])
        stat = capped_level_sums(tree, table.caps)
        if J:
            imbalance = level_imbalance(tree, J, start=setup.first_resolution_level)
            stat = np.vstack((stat, np.repeat(imbalance[:, None], len(cands), axis=1)))
        return scores_of_occupancy(stat)

    def stability_map(d_in: int) -> float:
        return round_up(occupancy_units(kind, n, d_in) * Fraction(table.sensitivity))

    trans = make_transformation(
        input_domain,
        input_metric,
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(cands)),
        dp.linf_distance(T=float),
        function,
        stability_map,
    )
    resolution = (setup.first_resolution_level, J) if J else None
    return attach(
        trans, ScoresPlan(d, n, nan_ok, box, L, scores_of_occupancy, axes, table.caps, resolution)
    )


then_schedule_scores = to_then(make_schedule_scores)
register(make_schedule_scores)
