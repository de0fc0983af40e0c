r"""A tree of noisy 2-way marginals: the joint release for tables whose joint tree is too shallow.

Under the full-table metric the joint hierarchy's selection picks shallow trees once a table has
more than a few columns (its W1 gains from depth are small in many dimensions, its noise costs
grow), so every numeric column gets one or two splits and the pairwise structure (correlations,
2-way marginals, models) is lost: on an 8-column, 6,900-row table at epsilon 1 the chosen depth
was 2 or 3.  This module releases the pairwise structure directly, in the manner of Chow and
Liu (1968) trees and of MST (McKenna, Miklau, Sheldon 2021), on public-after-DP codes:

* **codes** (:class:`PairCoding`): every column coded from the first look alone (a DP release:
  public): a categorical column by its categories, a numeric one by ``B`` bins cut at its DP
  quantiles (repeated cuts merged, so an atom is one bin; an int column of one leaf per value at
  the leaf edges nearest them, so a value is one code: :func:`value_leaves`), one more code for
  missing rows of a nullable column; ``B`` (:func:`pair_bins`) is a function of public ``n``,
  ``epsilon`` and the number of columns.
* **the tree** (:func:`make_pair_tree`): ``k - 1`` rounds of the exponential mechanism, each
  choosing the pair of columns (among those that join two components of the edges chosen so
  far, Kruskal's rule: the candidate set of a round is a function of earlier releases) whose
  2-way count table ``C_ij`` is farthest in ``l1`` from the product of its own 1-way counts,
  ``C_i C_j^T / n`` (:func:`make_pair_scores`: a measure of dependence alone; against the DP
  marginals' product instead, as MST does, the error of a column's DP marginal (an atom split
  across a bin edge) won every round and the tree became a star around that column);
* **the measurements**: each chosen pair's 2-way count table (:func:`make_pair_counts`, ``l1``
  stability 2 per replacement) ``>>`` OpenDP's ``then_laplace``; with two nullable numeric
  columns or more (:func:`pattern_columns`, public), also the counts of the rows' missingness
  patterns (:func:`make_pattern_counts`) at :data:`PATTERN_SCALE` times the tables' scale: a
  tree carries two columns' missingness together only along an edge joining them, and real
  tables often miss several columns in the same rows;

then post-processing (:func:`sample_tree`): each noisy table projected row by row onto the
simplex of the parent's DP marginal mass gives the child's conditional law; rows are drawn down
the tree from a root's DP marginal, codes are placed uniformly inside their bins, and the
pipeline calibrates every column to the DP marginals; with the pattern table, a column's
missingness combines its tree conditional with the pattern's given the flags drawn so far
(:func:`pattern_missing_probability`).

**Privacy map.**  Sequential composition: per replacement ``(k - 1) epsilon_round`` for the
rounds (each an exponential mechanism at scale ``2 Delta / epsilon_round``, ``Delta = 6 + 4/n``,
:data:`pair_score_sensitivity`) plus
``(k - 1) 2 / s`` for the counts (discrete Laplace scale ``s``) and ``2 / (4 s)`` for the
pattern table if any (:func:`pair_tables`), summed over the rationals and
rounded up; ``r`` replacements cost ``r`` times that.  Neither the candidate sets' sizes nor the
chosen pairs change the map (:doc:`/proofs/table_marginals`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, Transformation, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement, make_transformation
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    replacements,
    validate_data,
)
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.core.optional import lazy_module
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.measurements._adaptive_common import softmax_choice
from opendp_wasserstein.measurements._exponential_selection import make_exponential_selection
from opendp_wasserstein.noise._source import (
    NOISE_STREAM,
    SELECTION_STREAM,
    RandomSource,
    as_random_source,
)
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian, sample_discrete_laplace
from opendp_wasserstein.tables.calibration import largest_remainder
from opendp_wasserstein.tables.encoding import (
    TableEncoding,
    category_boundaries,
    rows_right_index,
)
from opendp_wasserstein.tables.marginals import (
    ColumnPlan,
    TableMarginals,
    check_noise,
    column_plans,
    make_cell_counts,
    noise_variance,
    project_groups,
)
from opendp_wasserstein.tables.schema import IntColumn

if TYPE_CHECKING:
    from scipy import special
else:
    special = lazy_module("scipy.special")  # imported on first use: 0.2 s of start-up

__all__ = [
    "PairCoding",
    "value_leaves",
    "pair_bins",
    "make_pair_counts",
    "make_pair_scores",
    "CodesMemo",
    "pair_score_sensitivity",
    "make_pair_tree",
    "pair_count_scale",
    "zcdp_selection",
    "sample_tree",
    "pattern_columns",
    "pair_tables",
    "PATTERN_SCALE",
    "pattern_codes",
    "make_pattern_counts",
    "pattern_law",
    "pattern_missing_probability",
    "grade_correlation",
    "WITHIN_KINDS",
    "PAIR_BINS_MAX",
    "PAIR_CELL_NOISE",
    "sure_threshold",
]

#: the most bins of a numeric column's code
PAIR_BINS_MAX = 16

#: :func:`pair_bins` keeps ``n / B^2`` at least this many times the counts' noise scale
PAIR_CELL_NOISE = 4.0


def pair_count_scale(rounds: int | Fraction, budget: float, noise: str = "laplace") -> float:
    """The noise scale of each of the ``rounds`` count tables at the tables' budget (``rounds``
    may be a fraction: :func:`pair_tables`): discrete Laplace ``2 rounds / epsilon`` (each table
    moves by 2 in ``l1`` per replacement), discrete Gaussian ``sqrt(rounds / rho)`` (by
    ``sqrt(2)`` in ``l2``: ``1 / sigma^2`` each), rounded up."""
    if check_noise(noise) == "gaussian":
        return sqrt_up(Fraction(rounds) / Fraction(budget))
    return round_up(Fraction(2 * rounds) / Fraction(budget))


def pair_bins(n: int, epsilon_counts: float, columns: int, noise: str = "laplace") -> int:
    """The bins ``B`` of a numeric column's code, from public values: the largest ``B`` in
    ``[2, PAIR_BINS_MAX]`` with ``n / B^2 >= PAIR_CELL_NOISE * s``, where ``s = 2 (k - 1) /
    epsilon_counts`` is the scale of each of the ``k - 1`` tables' noise (a ``B x B`` table's
    cells then hold more rows, on average, than a few noise scales); with ``noise="gaussian"``
    ``epsilon_counts`` is a ``rho`` and ``s`` the Gaussian's standard deviation over
    ``sqrt(2)`` (the Laplace rule at the same noise variance, :func:`pair_count_scale`)."""
    k = max(2, int(columns))
    if check_noise(noise) == "gaussian":
        s = float(pair_count_scale(k - 1, epsilon_counts, noise)) / np.sqrt(2.0)
        b = int(np.floor(np.sqrt(max(n, 1) / (PAIR_CELL_NOISE * s))))
        return int(np.clip(b, 2, PAIR_BINS_MAX))
    s = 2.0 * (k - 1) / float(epsilon_counts)
    b = int(np.floor(np.sqrt(max(n, 1) / (PAIR_CELL_NOISE * s))))
    return int(np.clip(b, 2, PAIR_BINS_MAX))


@dataclass(frozen=True, eq=False)
class PairCoding:
    """Per column, its codes (public: the schema and the DP first look).

    :param plans: the columns
    :param edges: per column, the increasing bin edges of its value axis in ``[0, 1]`` (a
        numeric column: ``0``, the DP quantiles, ``1``, repeats merged) or None (categorical)
    :param sizes: per column, its number of codes (bins or categories, plus one for missing
        rows of a nullable numeric column, which is the last code)
    """

    plans: tuple[ColumnPlan, ...]
    edges: tuple[np.ndarray | None, ...]
    sizes: tuple[int, ...]

    @classmethod
    def from_marginals(
        cls,
        marginals: TableMarginals,
        bins: int | Sequence[int],
        enc: TableEncoding | None = None,
    ) -> PairCoding:
        """Numeric columns cut at their DP quantiles ``j / bins`` (``bins`` one number, or one
        per column: public); with ``enc``, a column whose
        leaves are its values (:func:`value_leaves`) cut at the leaf edge nearest each quantile,
        so a value is never split between two codes (its records all sit at its cell's centre:
        a cut inside the cell gave the pair tables none of the value on one side while the first
        look's quantiles put part of it there, and :func:`combine_margins` moved that part's
        mass onto the neighbouring values)."""
        atoms = value_leaves(enc, marginals) if enc is not None else (False,) * len(marginals.plans)
        per = [bins] * len(marginals.plans) if isinstance(bins, int | np.integer) else list(bins)
        if len(per) != len(marginals.plans):
            raise ValueError("bins must be one number or one per column")
        edges: list[np.ndarray | None] = []
        sizes = []
        for c, p in enumerate(marginals.plans):
            if p.kind == "category":
                edges.append(None)
                sizes.append(p.cells)
                continue
            q = marginals.quantiles(c, np.linspace(0.0, 1.0, int(per[c]) + 1)[1:-1])
            if atoms[c]:
                leaves = len(marginals.masses[c])
                q = np.round(q * leaves) / leaves
            e = np.unique(np.concatenate(([0.0], q[(q > 0.0) & (q < 1.0)], [1.0])))
            edges.append(e)
            sizes.append(len(e) - 1 + (1 if p.missing_axis is not None else 0))
        return cls(marginals.plans, tuple(edges), tuple(sizes))

    def codes(self, points: np.ndarray, c: int) -> np.ndarray:
        """Column ``c``'s code of every encoded point (int64)."""
        p = self.plans[c]
        x = points[:, p.value_axis]
        e = self.edges[c]
        if e is None:
            b = category_boundaries(p.cells)
            return np.clip(np.searchsorted(b, x, side="right") - 1, 0, p.cells - 1).astype(np.int64)
        code = np.clip(np.searchsorted(e, x, side="right") - 1, 0, len(e) - 2).astype(np.int64)
        if p.missing_axis is not None:
            code = np.where(points[:, p.axes[p.missing_axis]] >= 0.5, len(e) - 1, code)
        return code

    def marginal(self, marginals: TableMarginals, c: int) -> np.ndarray:
        """Column ``c``'s DP marginal over its codes (summing to 1)."""
        p = self.plans[c]
        e = self.edges[c]
        if e is None:
            m = np.clip(np.asarray(marginals.masses[c], dtype=np.float64), 0.0, None)
        else:
            x, f = marginals.cdf_knots(c)
            miss = marginals.missing[c]
            m = np.diff(np.interp(e, x, f)) * (1.0 - miss)
            if p.missing_axis is not None:
                m = np.append(m, miss)
        total = m.sum()
        return m / total if total > 0 else np.full(len(m), 1.0 / len(m))

    def place(
        self, codes: np.ndarray, rng: RandomSource, within: np.ndarray | None = None
    ) -> np.ndarray:
        """Encoded points of the codes (``(m, k)`` int64, one column per plan): a category at
        its cell's centre, a bin's value at the relative position ``within[:, c]`` between its
        edges (default: uniform), a missing row with the encoding's value 1/2 and is-missing
        coordinate 3/4 (1/4 when present)."""
        m = codes.shape[0]
        d = sum(len(p.axes) for p in self.plans)
        out = np.empty((m, d), order="F")  # column by column: each column contiguous
        u = rng.uniform((m, len(self.plans))) if within is None else within
        for c, (p, e) in enumerate(zip(self.plans, self.edges, strict=True)):  # columns (public)
            code = codes[:, c]
            if e is None:
                b = category_boundaries(p.cells)
                out[:, p.value_axis] = ((b[:-1] + b[1:]) / 2)[code]
                continue
            nb = len(e) - 1
            cb = np.minimum(code, nb - 1)
            pos = u[:, c] if within is None else np.clip(within[:, c], 0.0, 1.0)
            col = out[:, p.value_axis]  # e[cb] + pos * (e[cb + 1] - e[cb]), in the column
            np.multiply(pos, np.diff(e)[cb], out=col)
            col += e[cb]
            if p.missing_axis is not None:
                miss = code == nb
                out[:, p.axes[p.missing_axis]] = np.where(miss, 0.75, 0.25)
                np.copyto(col, 0.5, where=miss)
        return out


def value_leaves(enc: TableEncoding, marginals: TableMarginals) -> tuple[bool, ...]:
    """Per column, whether its first-look leaves are its values (public: the schema and the
    leaves' number): an int column of one leaf per integer, whose encoded records all sit at
    their cells' centres (the encoding's ``(x - lo + 1/2) / (hi - lo + 1)``)."""
    out = []
    for (_name, spec), p, m in zip(
        enc.schema.items(), marginals.plans, marginals.masses, strict=True
    ):
        values = spec.upper - spec.lower + 1 if isinstance(spec, IntColumn) else 0
        out.append(p.kind == "numeric" and len(m) == values)
    return tuple(out)


class CodesMemo:
    """:meth:`PairCoding.codes` computed once per column of one array: the pair tree's rounds
    of scores and its count tables all read the same rows, whose codes were recomputed for
    every round and table (70 times for 8 columns, 27% of a 336,776-row release's CPU).  The
    values are ``coding.codes(x, c)``'s, so every map and every release stays the same.  It
    lives inside one invocation of :func:`make_pair_tree` and forgets the codes when it is
    given another array (it holds the array, so the identity check cannot be fooled by a new
    array at a reused address).

    >>> import numpy as np
    >>> from opendp_wasserstein.tables import Schema, TableEncoding
    >>> from opendp_wasserstein.tables.marginals import column_plans
    >>> enc = TableEncoding(Schema.from_json({"columns": {"a": {"type": "bool"}}}))
    >>> coding = PairCoding(column_plans(enc), (None,), (2,))
    >>> memo, x = CodesMemo(coding), np.array([[0.25], [0.75]])
    >>> memo(x, 0).tolist(), memo(x, 0) is memo(x, 0)
    ([0, 1], True)
    """

    def __init__(self, coding: PairCoding) -> None:
        self.coding = coding
        self.x: np.ndarray | None = None
        self.codes: dict[int, np.ndarray] = {}

    def __call__(self, x: np.ndarray, c: int) -> np.ndarray:
        if x is not self.x:
            self.x, self.codes = x, {}
        if c not in self.codes:
            self.codes[c] = self.coding.codes(x, c)
        return self.codes[c]


def make_pair_counts(
    input_domain: Domain,
    input_metric: Metric,
    coding: PairCoding,
    i: int,
    j: int,
    output_metric: str = "l1",
    codes: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> Transformation:
    r"""The 2-way count table of columns ``i`` and ``j`` (row-major, ``sizes[i] x sizes[j]``
    entries) as an ``i64`` vector in ``l1_distance``.  Every record is in exactly one cell, so a
    replacement moves the vector by at most 2 in ``l1`` and an addition or removal by 1:
    stability ``2 d_in`` under ``change_one_distance``, ``d_in`` under ``symmetric_distance``.
    With ``output_metric="l2"``: in ``l2_distance(T=float)``, stability ``sqrt(2)`` per
    replacement, rounded up (:func:`~opendp_wasserstein.tables.marginals.l2_count_stability`).
    ``codes``: ``coding.codes`` or a :class:`CodesMemo` of it (the same values)."""
    ki, kj = coding.sizes[i], coding.sizes[j]
    code = coding.codes if codes is None else codes

    def cells(x: np.ndarray) -> np.ndarray:
        return code(x, i) * kj + code(x, j)

    return make_cell_counts(input_domain, input_metric, ki * kj, cells, output_metric)


#: the sweeps of iterative proportional fitting in :func:`pattern_law`
RAKE_SWEEPS = 200

#: the weight of the independent law that :func:`pattern_law` adds before its fitting (so a
#: missing share the projected table left at 0 can be reached)
RAKE_PRIOR = 1e-3


#: the most nullable numeric columns of the missingness pattern table (``2^m`` cells)
PATTERN_MAX_COLUMNS = 10


def pattern_columns(coding: PairCoding) -> tuple[int, ...]:
    """The columns of the missingness pattern table (public: the schema): the nullable numeric
    columns, the first :data:`PATTERN_MAX_COLUMNS` of them, when there are at least two (else
    none: one column's missing share is in its own codes)."""
    cols = tuple(c for c, p in enumerate(coding.plans) if p.missing_axis is not None)
    return cols[:PATTERN_MAX_COLUMNS] if len(cols) >= 2 else ()


#: the missingness pattern table's noise scale over the pair tables' (a power of 2: the product
#: is exact): its few patterns hold many rows each, so it takes ``1 / PATTERN_SCALE`` of a pair
#: table's budget (``1 / PATTERN_SCALE^2`` in zCDP)
PATTERN_SCALE = 4


def pair_tables(coding: PairCoding, noise: str = "laplace") -> Fraction:
    """The count tables :func:`make_pair_tree` releases, in pair tables' budgets: the ``k - 1``
    pair tables, plus the missingness pattern table's share when :func:`pattern_columns` is not
    empty (public: the schema): ``1 / PATTERN_SCALE`` under discrete Laplace noise (the map
    ``2 / s`` is inverse in the scale), ``1 / PATTERN_SCALE^2`` under discrete Gaussian noise
    (``1 / sigma^2``)."""
    extra = Fraction(0)
    if pattern_columns(coding):
        power = 2 if check_noise(noise) == "gaussian" else 1
        extra = Fraction(1, PATTERN_SCALE**power)
    return len(coding.plans) - 1 + extra


def pattern_codes(coding: PairCoding, points: np.ndarray) -> np.ndarray:
    """Every encoded point's missingness pattern over :func:`pattern_columns`: the bits of its
    is-missing flags, the first column the most significant (int64)."""
    out = np.zeros(points.shape[0], dtype=np.int64)
    for c in pattern_columns(coding):  # at most PATTERN_MAX_COLUMNS columns (public)
        p = coding.plans[c]
        assert p.missing_axis is not None
        out = 2 * out + (points[:, p.axes[p.missing_axis]] >= 0.5)
    return out


def make_pattern_counts(
    input_domain: Domain,
    input_metric: Metric,
    coding: PairCoding,
    output_metric: str = "l1",
) -> Transformation:
    r"""The count table of the missingness patterns over :func:`pattern_columns` (``2^m``
    entries, :func:`pattern_codes`) as an ``i64`` vector in ``l1_distance``: every record is in
    exactly one cell, so the stability of :func:`make_pair_counts` (``2 d_in`` under
    ``change_one_distance``, ``d_in`` under ``symmetric_distance``; with ``output_metric="l2"``
    ``sqrt(2)`` per replacement, rounded up)."""
    cols = pattern_columns(coding)
    if not cols:
        raise ValueError("the coding has fewer than two nullable numeric columns")
    return make_cell_counts(
        input_domain,
        input_metric,
        2 ** len(cols),
        lambda x: pattern_codes(coding, x),
        output_metric,
    )


def pattern_law(table: np.ndarray, missing: np.ndarray, sweeps: int = RAKE_SWEEPS) -> np.ndarray:
    """The law of the missingness patterns (post-processing): the noisy pattern counts
    projected onto the simplex, then raked (iterative proportional fitting, Deming and Stephan
    1940, ``sweeps`` times over the columns, from it plus :data:`RAKE_PRIOR` of the independent
    law) to the columns' missing shares ``missing`` (the DP marginals'): the last column's share
    is its target's, the others' within the fit's convergence (slow where the counts put
    almost no mass off a few patterns; the calibration matches every share in the end)."""
    miss = np.clip(np.asarray(missing, dtype=np.float64), 0.0, 1.0)
    m = len(miss)
    t = np.asarray(table, dtype=np.float64).reshape(-1)
    if len(t) != 2**m:
        raise ValueError(f"the pattern table has {len(t)} cells, expected 2^{m}")
    total = max(float(t.sum()), 1.0)
    h = project_groups(t, np.zeros(len(t), dtype=np.int64), np.array([total])) / total
    ind = np.ones(1)
    for q in miss:  # columns (public), the first most significant
        ind = np.outer(ind, [1.0 - q, q]).reshape(-1)
    h = (h + RAKE_PRIOR * ind).reshape((2,) * m)
    for _ in range(sweeps):  # a fixed number of sweeps (public)
        for a, q in enumerate(miss):  # columns (public)
            marg = h.sum(axis=tuple(b for b in range(m) if b != a))
            f = np.where(marg > 0, np.array([1.0 - q, q]) / np.where(marg > 0, marg, 1.0), 0.0)
            shape = [1] * m
            shape[a] = 2
            h = h * f.reshape(shape)
    out = h.reshape(-1)
    return out / out.sum() if out.sum() > 0 else ind


def pair_score_sensitivity(n: int) -> Fraction:
    r"""How far one replacement moves a score of :func:`make_pair_scores`, exactly: ``6 + 4/n``.

    With ``a = C_ij``, ``b = C_i C_j^T / n`` and the score ``||a - b||_1``, a replacement moves
    ``a`` by at most 2 in ``l1`` and changes ``C_i`` by ``delta_i`` (``||delta_i||_1 <= 2``),
    ``C_j`` by ``delta_j``, so ``b`` by ``(delta_i C_j^T + C_i delta_j^T + delta_i delta_j^T) / n``,
    at most ``(2 n + 2 n + 4) / n`` in ``l1`` (``||C_i||_1 = n``); by the triangle inequality the
    score moves by at most ``2 + 4 + 4/n``."""
    return Fraction(6) + Fraction(4, int(n))


def make_pair_scores(
    input_domain: Domain,
    input_metric: Metric,
    coding: PairCoding,
    pairs: Sequence[tuple[int, int]],
    codes: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> Transformation:
    r"""Per pair ``(i, j)``, ``||C_ij - C_i C_j^T / n||_1``: the ``l1`` distance of its 2-way
    count table to the product of its 1-way counts, a float vector in ``linf_distance``, stability
    ``r (6 + 4/n)`` for ``r`` replacements (:func:`pair_score_sensitivity`; ``r = d_in`` under
    ``change_one_distance``, ``d_in / 2`` under ``symmetric_distance``), rounded up.
    ``codes``: ``coding.codes`` or a :class:`CodesMemo` of it (the same values)."""
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_pair_scores needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    if not pairs:
        raise ValueError("pairs must not be empty")
    sens = pair_score_sensitivity(n)
    code = coding.codes if codes is None else codes

    def function(x: np.ndarray) -> list[float]:
        x = validate_data(x, d, n, nan=False)
        by_col = {c: code(x, c) for c in {c for p in pairs for c in p}}
        ones = {
            c: np.bincount(by_col[c], minlength=coding.sizes[c]).astype(np.float64) for c in by_col
        }
        out = []
        for i, j in pairs:  # pairs of columns (public)
            kj = coding.sizes[j]
            t = np.bincount(by_col[i] * kj + by_col[j], minlength=coding.sizes[i] * kj)
            out.append(float(np.abs(t - np.outer(ones[i], ones[j]).reshape(-1) / n).sum()))
        return out

    def stability(d_in: Any) -> float:
        return round_up(replacements(kind, d_in) * sens)

    return make_transformation(
        input_domain,
        input_metric,
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(pairs)),
        dp.linf_distance(T=float),
        function,
        stability,
    )


def _find(parent: list[int], a: int) -> int:
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


def zcdp_selection(size: int, rho: float, sensitivity: float) -> tuple[Measurement, float]:
    r"""The exponential mechanism in zCDP: OpenDP's ``make_noisy_max`` with
    ``zero_concentrated_divergence()`` on ``size`` float scores in ``linf_distance`` (Gumbel
    noise: the released index is exactly the softmax of ``score / scale``, the highest score
    favoured), at a scale whose OpenDP map at ``sensitivity`` is at most ``rho``:
    ``sensitivity / sqrt(2 rho)`` (OpenDP's map is ``(d_in / scale)^2 / 2``), raised float by
    float until OpenDP's rounded map fits.  The pure exponential mechanism at the same scale
    would be ``eps = 2 d_in / scale``-DP, ``eps^2 / 2`` after ``make_pureDP_to_zCDP``: four
    times this map.

    :return: the measurement and its scale (the scale does not depend on ``size``)"""
    r = check_epsilon(rho, "rho_select")
    dom = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=int(size))
    met = dp.linf_distance(T=float)
    zcdp = dp.zero_concentrated_divergence()
    scale = float(sensitivity) / float(np.sqrt(2.0 * r))
    for _ in range(4096):
        meas = dp.m.make_noisy_max(dom, met, zcdp, scale, negate=False)
        if Fraction(meas.map(float(sensitivity))) <= Fraction(r):
            return meas, scale
        scale = float(np.nextafter(scale, np.inf))
    raise RuntimeError("could not calibrate the selection scale")  # pragma: no cover


def noisy_counts(
    counts: Transformation, x: np.ndarray, scale: Any, gauss: bool, src: Any, noise_rng: Any
) -> np.ndarray:
    """``counts(x)`` plus discrete Laplace (``gauss``: discrete Gaussian) noise at ``scale``, as
    int64: OpenDP's ``then_laplace`` / ``then_gaussian`` when ``src`` is secure, else the
    package's exact sampler on the seeded ``noise_rng`` (reproducible runs, not private)."""
    if src.secure:
        then = dp.m.then_gaussian if gauss else dp.m.then_laplace
        return np.asarray((counts >> then(scale))(x), dtype=np.int64)
    sampler = sample_discrete_gaussian if gauss else sample_discrete_laplace
    raw = np.asarray(counts(x), dtype=np.int64)
    return raw + sampler(np.full(len(raw), float(scale)), noise_rng, "fast")


def make_pair_tree(
    input_domain: Domain,
    input_metric: Metric,
    coding: PairCoding,
    marginals: TableMarginals | None,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
) -> Measurement:
    r"""Construct the tree of noisy 2-way marginals (module docstring).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, size=n, T=float)``: encoded
        points with a public size
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param coding: the public codes (:meth:`PairCoding.from_marginals`)
    :param marginals: the DP first look; None only for a template, whose map is all that is
        used (invoking it raises)
    :param epsilon_select: the budget of the ``k - 1`` rounds of selection, shared equally
    :param epsilon_counts: the budget of the count tables: the ``k - 1`` pair tables, shared
        equally, and the missingness pattern table (:func:`make_pattern_counts`, when the
        schema has two nullable numeric columns or more) at :data:`PATTERN_SCALE` times their
        noise scale (:func:`pair_tables`)
    :param noise: ``"laplace"`` (default: pure DP) or ``"gaussian"``: the two budgets are zCDP
        ``rho``, every round :func:`zcdp_selection` (OpenDP's zCDP noisy max, Gumbel), every
        table ``make_pair_counts(..., "l2") >> then_gaussian`` at :func:`pair_count_scale`; the
        measurement is in ``zero_concentrated_divergence``
    :return: a Measurement releasing ``(edges, tables, pattern)``: the chosen pairs in the
        order chosen, their noisy count tables (int64 arrays of shape ``sizes[i] x sizes[j]``)
        and the noisy pattern counts (:func:`make_pattern_counts`, ``2^m`` int64, or None when
        :func:`pattern_columns` is empty); map at most ``epsilon_select + epsilon_counts`` per
        replacement
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_pair_tree needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    e_sel = check_epsilon(epsilon_select, "epsilon_select")
    e_cnt = check_epsilon(epsilon_counts, "epsilon_counts")
    k = len(coding.plans)
    if k < 2:
        raise ValueError("make_pair_tree needs at least two columns")
    rounds = k - 1
    gauss = check_noise(noise) == "gaussian"
    measure = dp.zero_concentrated_divergence() if gauss else dp.max_divergence()
    eps_round = round_down(Fraction(e_sel) / rounds)
    sel_sens = round_up(pair_score_sensitivity(n))  # a score's move per replacement
    with_pattern = bool(pattern_columns(coding))
    count_scale = pair_count_scale(pair_tables(coding, noise), e_cnt, noise)
    pattern_scale = PATTERN_SCALE * count_scale  # exact: a power of 2
    all_pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    if gauss:
        select_template, sel_scale = zcdp_selection(len(all_pairs), eps_round, sel_sens)
        count_templates = [
            make_pair_counts(input_domain, input_metric, coding, 0, 1, "l2")
            >> dp.m.then_gaussian(count_scale)
        ]
        if with_pattern:
            count_templates.append(
                make_pattern_counts(input_domain, input_metric, coding, "l2")
                >> dp.m.then_gaussian(pattern_scale)
            )
    else:
        sel_scale = round_up(2 * Fraction(sel_sens) / Fraction(eps_round))
        vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(all_pairs))
        select_template = make_exponential_selection(
            vec, dp.linf_distance(T=float), eps_round, sel_sens
        )
        count_templates = [
            make_pair_counts(input_domain, input_metric, coding, 0, 1)
            >> dp.m.then_laplace(count_scale)
        ]
        if with_pattern:
            count_templates.append(
                make_pattern_counts(input_domain, input_metric, coding)
                >> dp.m.then_laplace(pattern_scale)
            )

    def round_map(d_in: Any) -> Fraction:
        # a round: the scores (stability r sel_sens) >> the selection (map 2 d / scale)
        return Fraction(
            select_template.map(round_up(replacements(kind, d_in) * Fraction(sel_sens)))
        )

    def function(
        x: np.ndarray,
    ) -> tuple[list[tuple[int, int]], list[np.ndarray], np.ndarray | None]:
        if marginals is None:
            raise ValueError("make_pair_tree: a template (marginals=None) cannot be invoked")
        x = validate_data(x, d, n, nan=False)
        src = as_random_source()
        sel_rng, noise_rng = src.derive(SELECTION_STREAM + 32), src.derive(NOISE_STREAM + 32)
        parent = list(range(k))
        edges: list[tuple[int, int]] = []
        memo = CodesMemo(coding)  # every column's codes of x, once
        for _ in range(rounds):  # k - 1 rounds (public)
            cand = [(i, j) for i, j in all_pairs if _find(parent, i) != _find(parent, j)]
            scores = make_pair_scores(input_domain, input_metric, coding, cand, memo)
            if src.secure and gauss:
                g = dp.m.make_noisy_max(
                    scores.output_domain,
                    scores.output_metric,
                    measure,
                    sel_scale,
                    negate=False,
                )
                a = int((scores >> g)(x))
            elif src.secure:
                v = make_exponential_selection(
                    scores.output_domain, scores.output_metric, eps_round, sel_sens, negate=False
                )
                a = int((scores >> v)(x))
            else:  # reproducible (NOT private) runs: the same law from the seeded stream
                a = softmax_choice(np.asarray(scores(x)) / float(sel_scale), sel_rng)
            i, j = cand[a]
            edges.append((i, j))
            parent[_find(parent, i)] = _find(parent, j)
        tables = []
        for i, j in edges:
            counts = make_pair_counts(
                input_domain, input_metric, coding, i, j, "l2" if gauss else "l1", memo
            )
            t = noisy_counts(counts, x, count_scale, gauss, src, noise_rng)
            tables.append(t.reshape(coding.sizes[i], coding.sizes[j]))
        pattern = None
        if with_pattern:
            counts = make_pattern_counts(
                input_domain, input_metric, coding, "l2" if gauss else "l1"
            )
            pattern = noisy_counts(counts, x, pattern_scale, gauss, src, noise_rng)
        runtime.record(
            {
                "pair_edges": [(coding.plans[i].name, coding.plans[j].name) for i, j in edges],
                "pair_scale": float(count_scale),
                "pair_pattern": [coding.plans[c].name for c in pattern_columns(coding)],
            }
        )
        return edges, tables, pattern

    def privacy_map(d_in: Any) -> float:
        per_count = Fraction(count_templates[0].map(d_in))
        total = rounds * round_map(d_in) + rounds * per_count
        if with_pattern:
            total += Fraction(count_templates[1].map(d_in))
        return round_up(total)

    return make_measurement(input_domain, input_metric, measure, function, privacy_map)


def _conditional(
    table: np.ndarray, parent_mass: np.ndarray, child: np.ndarray, n: int, floor: float = 0.0
) -> np.ndarray:
    """Rows ``P(child | parent = a)`` from a noisy table (parent on rows): row ``a`` projected
    onto the simplex of mass ``n * parent_mass[a]``, whose threshold ``max(t - tau, 0)`` is
    raised to at least ``floor`` counts (``max(t - max(tau, floor), 0)``: the table's
    :func:`sure_threshold` in :func:`sample_tree`); a row left empty takes ``child``."""
    ka, kb = table.shape
    groups = np.repeat(np.arange(ka), kb)
    t = np.asarray(table, dtype=np.float64)
    h = project_groups(t.reshape(-1), groups, n * parent_mass).reshape(ka, kb)
    if floor > 0:
        h = np.minimum(h, np.clip(t - floor, 0.0, None))
    s = h.sum(axis=1, keepdims=True)
    return np.where(s > 0, h / np.where(s > 0, s, 1.0), child[None, :])


def _present_rows(cond: np.ndarray, child: np.ndarray) -> np.ndarray:
    """``cond``'s rows restricted to the present codes (all but the last, the missing code) and
    renormalised, the missing code given no mass; a row of no present mass takes the child's
    present law ``child[:-1]`` (even if that is empty too)."""
    pres = cond[:, :-1]
    s = pres.sum(axis=1, keepdims=True)
    c = np.clip(child[:-1], 0.0, None)
    c = c / c.sum() if c.sum() > 0 else np.full(len(c), 1.0 / max(len(c), 1))
    out = np.where(s > 0, pres / np.where(s > 0, s, 1.0), c[None, :])
    return np.concatenate([out, np.zeros((len(out), 1))], axis=1)


def pattern_missing_probability(
    law: np.ndarray,
    axes: Sequence[int],
    flags: np.ndarray,
    axis: int,
    tree: np.ndarray,
) -> np.ndarray:
    """Per row, the probability that a column of the pattern (``axis`` of ``law``, the pattern
    law as a ``(2,) * m`` array) is missing, from two experts: the tree's probability ``tree``
    (given the row's parent code) and the pattern's, given the row's flags ``flags`` (``(m_rows,
    len(axes))`` booleans) of the pattern columns drawn already (``axes``), combined as
    ``P(miss) ~ tree * pattern / p`` against ``(1 - tree) (1 - pattern) / (1 - p)`` (``p`` the
    column's missing share: the product of experts of two conditionals of one marginal)."""
    keep = sorted({*axes, axis})
    t = law.sum(axis=tuple(x for x in range(law.ndim) if x not in keep))
    t = np.transpose(t, [keep.index(x) for x in axes] + [keep.index(axis)]).reshape(-1, 2)
    idx = np.zeros(len(flags), dtype=np.int64)
    for j in range(len(axes)):  # at most PATTERN_MAX_COLUMNS columns (public)
        idx = 2 * idx + flags[:, j]
    joint = t[idx]
    tot = joint.sum(axis=1)
    p = float(law.sum(axis=tuple(x for x in range(law.ndim) if x != axis))[1])
    if not 0.0 < p < 1.0:
        return np.full(len(flags), 1.0 if p >= 1.0 else 0.0)
    pat = np.where(tot > 0, joint[:, 1] / np.where(tot > 0, tot, 1.0), p)
    wm = np.clip(tree, 0.0, 1.0) * pat / p
    wp = (1.0 - np.clip(tree, 0.0, 1.0)) * (1.0 - pat) / (1.0 - p)
    w = wm + wp
    return np.where(w > 0, wm / np.where(w > 0, w, 1.0), pat)  # type: ignore[no-any-return]


def _law(joint: np.ndarray) -> np.ndarray | None:
    """A noisy 2-way table as a law: negative cells cut to 0, then normalised; ``None`` when
    nothing is left."""
    p = np.clip(np.asarray(joint, dtype=np.float64), 0.0, None)
    total = p.sum()
    return p / total if total > 0 else None


def grade_correlation(joint: np.ndarray) -> float:
    r"""The Pearson correlation of the two codes' mid-grades under a 2-way law ``joint`` (rows:
    the first code, in increasing order of the values): Spearman's rank correlation of the binned
    pair, ties at mid-ranks; 0 when a margin is a single point."""
    p = _law(joint)
    if p is None:
        return 0.0
    pa, pb = p.sum(axis=1), p.sum(axis=0)
    ga, gb = np.cumsum(pa) - pa / 2 - 0.5, np.cumsum(pb) - pb / 2 - 0.5
    va, vb = float(pa @ ga**2), float(pb @ gb**2)
    if not (va > 1e-12 and vb > 1e-12):
        return 0.0
    return float(np.clip(ga @ p @ gb / np.sqrt(va * vb), -1.0, 1.0))


#: the grid of :func:`latent_correlation` (``tanh`` of equal steps of ``atanh r``: fine near +-1)
LATENT_GRID = np.tanh(np.linspace(-5.0, 5.0, 41))
#: the shares of independent mass (the tables' noise left after the threshold) the fit of
#: :func:`latent_correlation` allows, the best one per correlation
LATENT_OUTLIERS = np.array([0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2])
#: the fewest bins of both columns of an edge :func:`sample_tree` places by ``"latent"``
#: (public: the codes); coarser edges take the copula (txhousing at eps 0.5 with ``delta``, 5
#: bins, 9 seeds: model 0.060 lower on average with the latent placement, lower in 7; credit
#: at eps 4, 7-8 bins, 6 seeds: model 0.607 -> 0.595 at a floor of 8)
LATENT_MIN_BINS = 10
#: the fine search's points around the coarse maximum in :func:`latent_correlation`
LATENT_FINE = 41
#: quadrature nodes per row bin in :func:`latent_correlation`
LATENT_NODES = 16


def latent_correlation(joint: np.ndarray) -> float:
    r"""The correlation ``r`` of the bivariate normal whose cut at the margins' grades fits a
    binned 2-way law ``joint`` best (the polychoric correlation: the maximum of ``sum p_ij log
    P_ij(r)`` over :data:`LATENT_GRID`, ``P_ij(r)`` the normal's mass of cell ``ij`` by the
    midpoint rule over :data:`LATENT_NODES` grades of each row bin).  Post-processing of a
    released table.  Unlike the grade correlation of the binned pair, which the bins' width
    caps (diamonds' ``x``-``y`` at 12 bins: 0.97, so ``r`` 0.97, while the real values' is
    0.998), it estimates the dependence inside the cells too.  0 when a margin is one point.

    >>> from scipy.stats import multivariate_normal
    >>> cut = np.array([-np.inf, -0.5, 0.5, np.inf])
    >>> F = lambda a, b: multivariate_normal(cov=[[1, 0.8], [0.8, 1]]).cdf(
    ...     np.clip([a, b], -10, 10))
    >>> t = np.array([[F(cut[i + 1], cut[j + 1]) - F(cut[i], cut[j + 1]) - F(cut[i + 1], cut[j])
    ...                + F(cut[i], cut[j]) for j in range(3)] for i in range(3)])
    >>> round(latent_correlation(t), 2)
    0.8
    """
    p = _law(joint)
    if p is None:
        return 0.0
    pa, pb = p.sum(axis=1), p.sum(axis=0)
    if (pa > 1e-12).sum() < 2 or (pb > 1e-12).sum() < 2:
        return 0.0
    ca = np.concatenate(([0.0], np.cumsum(pa)))
    cb = special.ndtri(np.clip(np.concatenate(([0.0], np.cumsum(pb))), 0.0, 1.0))
    k = LATENT_NODES
    u = ca[:-1, None] + (np.arange(k) + 0.5)[None, :] / k * pa[:, None]  # (na, k) grades
    x = special.ndtri(np.clip(u, 1e-15, 1 - 1e-15)).reshape(-1)

    def loglik(r: np.ndarray) -> np.ndarray:
        # P_ij(r) = pa_i mean_k [Phi((b_{j+1} - r x_ik) / s) - Phi((b_j - r x_ik) / s)]
        s = np.sqrt(1.0 - r * r)[:, None, None]
        cdf = special.ndtr((cb[None, None, :] - r[:, None, None] * x[None, :, None]) / s)
        cell = np.diff(cdf, axis=2).reshape(len(r), len(pa), k, len(pb)).mean(axis=2)
        cell *= pa[None, :, None]
        w = LATENT_OUTLIERS[:, None, None, None]
        mix = (1.0 - w) * cell[None] + w * np.outer(pa, pb)[None, None]
        ll = (p[None, None] * np.log(np.maximum(mix, 1e-300))).sum(axis=(2, 3))
        return ll.max(axis=0)  # type: ignore[no-any-return]

    z = np.arctanh(LATENT_GRID)  # coarse, then fine around the coarse maximum
    z0 = z[int(np.argmax(loglik(LATENT_GRID)))]
    step = z[1] - z[0]
    fine = np.tanh(np.clip(z0 + np.linspace(-step, step, LATENT_FINE), z[0], z[-1]))
    return float(fine[int(np.argmax(loglik(fine)))])


def latent_position(
    r: float,
    grade_a: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    u: np.ndarray,
) -> np.ndarray:
    r"""A child's relative position inside its drawn bin (grades ``[lo, hi)`` of its margin)
    given its parent's grade ``grade_a``: the child's normal score drawn from ``N(r z_a, 1 -
    r^2)`` (``z_a = Phi^{-1}(grade_a)``) truncated to the bin's scores, by inverse transform of
    the uniforms ``u`` (in the lower tail, where ``log Phi`` is exact: an interval above 0 is
    drawn reflected).  A row whose parent is missing passes ``grade_a`` NaN: ``u``."""
    r = float(np.clip(r, -0.9999, 0.9999))
    za = special.ndtri(np.clip(grade_a, 1e-15, 1 - 1e-15))
    pos = truncated_position(r * za, np.sqrt(1.0 - r * r), lo, hi, u)
    return np.where(np.isnan(grade_a), u, pos)  # type: ignore[no-any-return]


def truncated_position(
    mu: np.ndarray, s: float, lo: np.ndarray, hi: np.ndarray, u: np.ndarray
) -> np.ndarray:
    """The relative position inside the bin of grades ``[lo, hi)`` of a normal score drawn
    from ``N(mu, s^2)`` truncated to the bin's scores (:func:`latent_position`), by inverse
    transform of ``u``; ``u`` where that is not finite."""
    a = (special.ndtri(np.clip(lo, 0.0, 1.0)) - mu) / s
    b = (special.ndtri(np.clip(hi, 0.0, 1.0)) - mu) / s
    flip = a > 0
    a2, b2 = np.where(flip, -b, a), np.where(flip, -a, b)
    la, lb = special.log_ndtr(a2), special.log_ndtr(b2)
    uu = np.clip(u, 1e-15, 1 - 1e-15)
    with np.errstate(divide="ignore", invalid="ignore"):
        lv = lb + np.log(uu + (1.0 - uu) * np.exp(la - lb))
        t = special.ndtri_exp(lv)
    t = np.clip(np.where(flip, -t, t), a, b)
    g = special.ndtr(mu + s * t)
    w = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        pos = np.where(w > 0, (g - lo) / np.where(w > 0, w, 1.0), u)
    pos = np.where(np.isfinite(pos), pos, u)
    return np.clip(pos, 0.0, 1.0)  # type: ignore[no-any-return]


def bin_bounds(probs: np.ndarray, bins: int, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grades ``[lo, hi)`` of each row's bin under a column's law over its codes ``probs``
    (its first ``bins`` present codes renormalised; a missing row's bin the last)."""
    q = np.clip(np.asarray(probs[:bins], dtype=np.float64), 0.0, None)
    q = q / q.sum() if q.sum() > 0 else np.full(bins, 1.0 / bins)
    c = np.concatenate(([0.0], np.cumsum(q)))
    c[-1] = 1.0
    cb = np.minimum(code, bins - 1)
    return c[cb], c[cb + 1]


def bin_grades(probs: np.ndarray, bins: int, code: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Each row's grade under its column's law over its present codes (:func:`bin_bounds`) at
    its relative position ``pos`` inside its bin; NaN for a missing row (``code >= bins``)."""
    lo, hi = bin_bounds(probs, bins, code)
    return np.where(code >= bins, np.nan, lo + np.clip(pos, 0.0, 1.0) * (hi - lo))  # type: ignore[no-any-return]


#: :func:`sample_tree`'s placement inside bins: ``"latent"`` (the child's normal score given its
#: parent's, at the edge's :func:`latent_correlation`, truncated to its bin:
#: :func:`latent_position`), ``"copula"`` (a Gaussian copula inside the bins along each
#: numeric-numeric edge at the edge's released rank correlation) or ``"uniform"`` (independent)
WITHIN_KINDS = ("copula", "uniform", "latent")


def _inverse_cdf(cum: np.ndarray, parent: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Per row ``r``, how many entries of ``cum[parent[r]]`` are at most ``u[r]`` (each row of
    ``cum`` a cumulative law: nondecreasing, its last entry ``1 > u``): ``searchsorted`` of each
    parent code's rows, grouped by a counting sort of the codes, ``O(m log k)`` rather than the
    ``(m, k)`` comparison matrix."""
    fast = rows_right_index(cum, parent, u)  # the same counts through bucket tables
    if fast is not None:
        return fast
    k = cum.shape[0]
    small = parent.astype(np.int16) if k <= np.iinfo(np.int16).max else parent
    order = np.argsort(small, kind="stable")  # a radix sort of 16-bit codes
    bounds = np.concatenate(([0], np.cumsum(np.bincount(parent, minlength=k))))
    out = np.empty(len(u), dtype=np.int64)
    for p in range(k):  # the parent's codes (public)
        rows = order[bounds[p] : bounds[p + 1]]
        if len(rows):
            out[rows] = np.searchsorted(cum[p], u[rows], side="right")
    return out


def sure_threshold(table: np.ndarray, variance: float) -> float:
    r"""The soft threshold of a noisy table's counts that minimises Stein's unbiased estimate
    of its squared error (SureShrink, Donoho and Johnstone 1995): over ``tau`` in ``{0} u
    {|t_i|}``, ``d v - 2 v #{i: |t_i| <= tau} + sum_i min(|t_i|, tau)^2`` for the ``d`` cells
    ``t_i`` and the noise's (public) variance ``v``.  Post-processing: the released counts and
    a public number.  A table of a few large cells among many empty ones (a near-function:
    diamonds' ``x``-``y``) gets a threshold of a few noise scales; a table of many cells
    above the noise (weak dependence) a threshold near 0, which keeps its counts.

    >>> sure_threshold(np.array([1000.0] + [2.0, -3.0, 1.0, 0.5, -1.0, 2.5, -2.0, 1.5] * 3), 4.0)
    3.0
    >>> sure_threshold(np.array([50.0, 60.0, 40.0, 55.0]), 4.0)
    0.0
    """
    a = np.sort(np.abs(np.asarray(table, dtype=np.float64).reshape(-1)))
    d, v = len(a), float(variance)
    if d == 0 or v <= 0:
        return 0.0
    k = np.arange(1, d + 1)
    risk = d * v - 2 * v * k + np.cumsum(a * a) + (d - k) * a * a
    best = int(np.argmin(risk))
    return float(a[best]) if risk[best] < d * v else 0.0


def sample_tree(
    coding: PairCoding,
    marginals: TableMarginals,
    edges: Sequence[tuple[int, int]],
    tables: Sequence[np.ndarray],
    m: int,
    rng: RandomSource,
    within: str = "latent",
    pattern: np.ndarray | None = None,
    scale: float = 0.0,
) -> np.ndarray:
    r"""``m`` encoded points drawn from the tree model (post-processing of DP releases): the root
    (the column with the most edges) with its DP marginal's counts by largest remainder in random
    order, then every column given its parent by the conditional law of the edge's noisy table,
    its counts soft-thresholded at the table's :func:`sure_threshold` for the noise variance
    ``2 scale^2`` (``scale`` the Laplace scale of the tables' noise variance, public; 0: no
    threshold).  The simplex projection alone keeps about half the empty cells of a row at a
    noise scale each: 8.4% of diamonds' rows drawn at eps 1 had ``|x - y| > 0.3`` mm (the
    real rows 0.04%).

    **Missingness** (``pattern``, the noisy counts of :func:`make_pattern_counts`): a tree
    carries the missingness of two columns together only along an edge joining them; the
    pattern carries it for all of :func:`pattern_columns` at once.  A column of the pattern
    drawn after others of it is missing with the probability combining its tree conditional
    (given its parent's code) and the pattern law (:func:`pattern_law`) given the flags drawn
    so far (:func:`pattern_missing_probability`); where present, its code is drawn from its
    conditional law restricted to its present codes.

    **Inside bins** (``within="latent"``, the default): along an edge of two numeric columns a
    value's position between its bin's edges follows its parent's grade (its rank, the bin's
    share of the parent's DP marginal, and its position inside it): the child's normal score
    is drawn from ``N(r z_parent, 1 - r^2)`` truncated to the child's drawn bin, ``r`` the
    edge's :func:`latent_correlation` (the normal behind the released table, fitted with a
    share of independent mass for the noise left after the threshold), so a near-function
    (diamonds' ``x``-``y``: ``r`` 0.9988 against the copula's 0.980) keeps its order inside
    the cells; :func:`latent_position`.  An edge with a column of fewer than
    :data:`LATENT_MIN_BINS` bins takes the copula.  ``within="copula"`` (before): the child's
    relative position inside its bin is
    ``Phi(r Phi^{-1}(u_parent) + sqrt(1 - r^2) Z)``, the Gaussian copula
    whose Spearman correlation is the edge's between-bin one (:func:`grade_correlation` of the
    released table, ``r = 2 sin(pi rho_s / 6)``).  Positions drawn independently remove all
    dependence inside the cells, which is most of a Pearson correlation when a column's top or
    bottom bin spans much of its range (heavy tails); the copula assumes the dependence inside
    a cell is like the dependence between cells.  ``within="uniform"``: independent positions."""
    if within not in WITHIN_KINDS:
        raise ValueError(f"within must be one of {WITHIN_KINDS}, got {within!r}")
    k = len(coding.plans)
    probs = [coding.marginal(marginals, c) for c in range(k)]
    adj: dict[int, list[tuple[int, int]]] = {c: [] for c in range(k)}
    for t, (i, j) in enumerate(edges):
        adj[i].append((j, t))
        adj[j].append((i, t))
    root = max(range(k), key=lambda c: (len(adj[c]), -c))
    codes = np.zeros((m, k), dtype=np.int64, order="F")  # columns contiguous (read by column)
    counts = largest_remainder(probs[root], m)
    codes[:, root] = np.repeat(np.arange(len(counts)), counts)[rng.permutation(m)]
    law = None
    place: dict[int, int] = {}  # a pattern column's axis in the pattern law
    if pattern is not None:
        cols = pattern_columns(coding)
        law = pattern_law(pattern, np.array([probs[c][-1] for c in cols])).reshape((2,) * len(cols))
        place = {c: a for a, c in enumerate(cols)}
    seen = {root}
    queue = [root]
    n = marginals.size
    # positions inside bins, independent unless an edge couples them (stored by column)
    pos = np.asfortranarray(rng.uniform((m, k)))
    while queue:  # breadth first over the columns (public)
        a = queue.pop(0)
        score = None  # the parent's normal scores, computed once for all its children
        for b, t in adj[a]:
            if b in seen:
                continue
            i, _ = edges[t]
            tab = tables[t] if i == a else tables[t].T
            floor = sure_threshold(np.asarray(tab), 2.0 * scale * scale) if scale > 0 else 0.0
            cond = _conditional(np.asarray(tab), probs[a], probs[b], n, floor)
            drawn = [c for c in place if c in seen]
            if law is None or b not in place or not drawn:
                cum = np.cumsum(cond, axis=1)
                cum[:, -1] = 1.0
                u = rng.uniform(m)
                codes[:, b] = np.minimum(_inverse_cdf(cum, codes[:, a], u), cond.shape[1] - 1)
            else:
                flags = codes[:, drawn] == np.array([coding.sizes[c] - 1 for c in drawn])
                tree = cond[codes[:, a], -1]
                prob = pattern_missing_probability(
                    law, [place[c] for c in drawn], flags, place[b], tree
                )
                miss = rng.uniform(m) < prob
                cum = np.cumsum(_present_rows(cond, probs[b]), axis=1)
                cum[:, -1] = 1.0
                u = rng.uniform(m)
                top = cond.shape[1] - 2  # the last present code
                codes[:, b] = np.minimum(_inverse_cdf(cum, codes[:, a], u), top)
                codes[miss, b] = cond.shape[1] - 1
            ea, eb = coding.edges[a], coding.edges[b]
            fine = (
                ea is not None and eb is not None and min(len(ea), len(eb)) - 1 >= LATENT_MIN_BINS
            )
            if within == "latent" and fine:
                assert ea is not None and eb is not None
                na, nb = len(ea) - 1, len(eb) - 1
                rho = latent_correlation((probs[a][:, None] * cond)[:na, :nb])
                pos[:, b] = latent_position(
                    rho,
                    bin_grades(probs[a], na, codes[:, a], pos[:, a]),
                    *bin_bounds(probs[b], nb, codes[:, b]),
                    pos[:, b],
                )
            elif within in ("copula", "latent") and ea is not None and eb is not None:
                na, nb = len(ea) - 1, len(eb) - 1
                rho = grade_correlation((probs[a][:, None] * cond)[:na, :nb])
                r = 2.0 * np.sin(np.pi * rho / 6.0)
                r = float(np.clip(r, -0.999, 0.999))
                if score is None:
                    score = special.ndtri(np.clip(pos[:, a], 1e-12, 1 - 1e-12))
                z = r * score + np.sqrt(1 - r * r) * special.ndtri(
                    np.clip(pos[:, b], 1e-12, 1 - 1e-12)
                )
                pos[:, b] = special.ndtr(z)
            seen.add(b)
            queue.append(b)
    for c in range(k):  # a column no edge reaches (not with k - 1 rounds): its marginal
        if c not in seen:
            cnt = largest_remainder(probs[c], m)
            codes[:, c] = np.repeat(np.arange(len(cnt)), cnt)[rng.permutation(m)]
    return coding.place(codes, rng, pos)


def tree_template(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    n: int,
    bins: int,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
) -> Measurement:
    """A :func:`make_pair_tree` built from the schema alone (uniform codes): its map is the
    released one's (the map does not depend on the codes)."""

    plans = column_plans(enc)
    edges: list[np.ndarray | None] = []
    sizes = []
    for p in plans:
        if p.kind == "category":
            edges.append(None)
            sizes.append(p.cells)
        else:
            edges.append(np.linspace(0.0, 1.0, bins + 1))
            sizes.append(bins + (1 if p.missing_axis is not None else 0))
    coding = PairCoding(plans, tuple(edges), tuple(sizes))
    return make_pair_tree(
        input_domain, input_metric, coding, None, epsilon_select, epsilon_counts, noise
    )


@dataclass(frozen=True)
class FirstLookNoise:
    """Per column, the noise of the first look's coarsest released level (public: the schema,
    ``n`` and the budget): ``nodes`` counts over the column's present range (its categories for
    a categorical column) with noise variance ``var`` each, and ``missing_var`` the variance of
    its missing count (0 if not nullable)."""

    nodes: tuple[int, ...]
    var: tuple[float, ...]
    missing_var: tuple[float, ...]


def combine_margins(
    coding: PairCoding,
    marginals: TableMarginals,
    edges: Sequence[tuple[int, int]],
    tables: Sequence[np.ndarray],
    count_scale: float,
    noise: FirstLookNoise,
    count_noise: str = "laplace",
) -> TableMarginals:
    r"""The first look's marginals combined with the 1-way margins of the noisy pair tables
    (post-processing of DP releases: no privacy cost).

    Per column ``c`` and code ``b``: the first look's count ``n p_b`` (its variance: the coarsest
    level's per node, times the nodes the code spans, at least one) and, from every released
    table holding ``c``, the table's sum over the other column (variance ``2 s^2`` times the
    other column's codes, ``s`` the tables' discrete Laplace scale; ``s^2`` with
    ``count_noise="gaussian"``, :func:`~opendp_wasserstein.tables.marginals.noise_variance`),
    averaged by inverse variance
    and projected onto the simplex of mass ``n``.  A numeric column's leaf masses are then moved
    code by code onto the combined masses, keeping the first look's shape inside each code
    (its CDF rescaled between consecutive code edges), so every quantile edge keeps its place
    and the column's missing share is the combined one."""
    n = float(marginals.size)
    two_s2 = noise_variance(count_scale, count_noise)
    masses = list(marginals.masses)
    missing = list(marginals.missing)
    for c, p in enumerate(coding.plans):  # columns (public)
        first = coding.marginal(marginals, c) * n
        e = coding.edges[c]
        if e is None:
            v_first = np.full(len(first), noise.var[c])
        else:
            span = np.maximum(np.diff(e) * noise.nodes[c], 1.0) * noise.var[c]
            v_first = np.append(span, noise.missing_var[c]) if p.missing_axis is not None else span
        num = first / v_first
        den = 1.0 / v_first
        for (i, j), t in zip(edges, tables, strict=True):  # the k - 1 tables (public)
            if c not in (i, j):
                continue
            tab = np.asarray(t, dtype=np.float64)
            other = coding.sizes[j] if c == i else coding.sizes[i]
            x = tab.sum(axis=1) if c == i else tab.sum(axis=0)
            num = num + x / (other * two_s2)
            den = den + 1.0 / (other * two_s2)
        comb = project_groups(num / den, np.zeros(len(num), dtype=np.int64), np.array([n])) / n
        if e is None:
            masses[c] = comb
            continue
        miss = float(comb[-1]) if p.missing_axis is not None else 0.0
        present = comb[: len(e) - 1]
        if not present.sum() > 0:
            continue
        g = np.concatenate(([0.0], np.cumsum(present / present.sum())))
        x, f = marginals.cdf_knots(c)
        leaf = np.linspace(0.0, 1.0, len(marginals.masses[c]) + 1)
        f_leaf = np.interp(leaf, x, f)
        f_edge = np.interp(e, x, f)
        b = np.clip(np.searchsorted(e, leaf, side="right") - 1, 0, len(e) - 2)
        width = f_edge[b + 1] - f_edge[b]
        frac = np.where(
            width > 0,
            (f_leaf - f_edge[b]) / np.where(width > 0, width, 1.0),
            (leaf - e[b]) / np.maximum(e[b + 1] - e[b], 1e-300),
        )
        f_new = g[b] + np.clip(frac, 0.0, 1.0) * (g[b + 1] - g[b])
        f_new[0], f_new[-1] = 0.0, 1.0
        masses[c] = np.clip(np.diff(np.maximum.accumulate(f_new)), 0.0, None)
        missing[c] = miss
    return TableMarginals(marginals.plans, tuple(masses), tuple(missing), marginals.size)
