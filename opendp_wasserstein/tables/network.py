r"""A degree-2 Bayesian network of noisy 2- and 3-way tables (PrivBayes-style joint release).

A tree of pairs (:mod:`~opendp_wasserstein.tables.pairs`) cannot carry a relation that needs
three columns at once (a column that is the ratio of two others); PrivBayes (Zhang et al. 2017)
and AIM measure 3-way marginals.  This module releases a network in which every column after the
first two has one or two parents, on the pair tree's public-after-DP codes
(:class:`~opendp_wasserstein.tables.pairs.PairCoding`) at two resolutions:

* **fine codes** (:func:`~opendp_wasserstein.tables.pairs.pair_bins` bins per numeric column)
  for a table of a child and one parent;
* **coarse codes** (:func:`network_bins` bins per numeric column, the cube root of
  :func:`network_cells`, less one for a nullable column so that three nullable columns' bins
  and missing codes fit it together, at least :data:`NETWORK_MIN_BINS`) for a table of a
  child and two parents, whose size must be at most :func:`network_cells` (a public function
  of ``n``, the counts' budget and ``k``: the tables' cells then hold, on average,
  :data:`NETWORK_CELL_NOISE` noise scales of rows).

**The structure** (:func:`make_network`): ``k - 1`` rounds of the exponential mechanism.  The
first chooses a pair of columns (both join the network); every later round chooses a column
not yet in the network and its parents among the columns in it (one parent at fine codes, or
two at coarse codes when the table fits :func:`network_cells`), the candidate of the largest
score ``||C_{P,c} - C_P C_c^T / n||_1`` (the ``l1`` distance of the parents-by-child count
table to the product of its margins, :func:`make_clique_scores`; the parents' joint code is one
categorical column, so the sensitivity is the pair score's, ``6 + 4/n``,
:func:`~opendp_wasserstein.tables.pairs.pair_score_sensitivity`).  The candidate set of a round
is a function of the earlier rounds' releases and of public values.

**The measurements**: each chosen clique's count table (:func:`make_clique_counts`, ``l1``
stability 2 per replacement) ``>>`` OpenDP's ``then_laplace``, at the pair tree's scale; with
two nullable numeric columns or more, the pair tree's missingness pattern table
(:func:`~opendp_wasserstein.tables.pairs.make_pattern_counts` at
:data:`~opendp_wasserstein.tables.pairs.PATTERN_SCALE` times that scale, the fine codes'
:func:`~opendp_wasserstein.tables.pairs.pair_tables`).

**In zCDP** (``noise="gaussian"``, the release under ``delta``): the pair tree's zCDP parts
unchanged: every round OpenDP's ``make_noisy_max`` in ``zero_concentrated_divergence``
(:func:`~opendp_wasserstein.tables.pairs.zcdp_selection`, at the score's sensitivity), every
table ``make_clique_counts(..., "l2")`` (``l2`` stability ``sqrt(2)`` per replacement, rounded
up) ``>>`` OpenDP's ``then_gaussian`` at
:func:`~opendp_wasserstein.tables.pairs.pair_count_scale`; the sizes' rule reads the Gaussian's
``sigma / sqrt 2`` (the Laplace scale of the same variance), as
:func:`~opendp_wasserstein.tables.pairs.pair_bins` does.

**Post-processing** (:func:`sample_network`): the columns drawn in the order chosen, the first
from its DP marginal, every other from the conditional law of its table given its parents' codes
(computed from the values already drawn); a 3-way table's rows shrink toward the mean of its two
2-way conditionals (the table summed over one parent) in proportion to the noise
(:func:`conditional_rows`), those of a clique of numeric columns of at least
:data:`NETWORK_SURE_MIN_BINS` bins each soft-thresholded at the table's SURE threshold; positions
inside bins follow a Gaussian copula with the numeric parent of the largest released rank
correlation; a pattern column's missingness combines its clique's conditional with the
pattern law given the flags drawn so far, as the pair tree's; the pipeline calibrates every
column to the DP marginals.

**Privacy map.**  The pair tree's: ``(k - 1) epsilon_round`` for the rounds plus ``(k - 1) 2 /
s`` for the counts and ``2 / (4 s)`` for the pattern table if any (in zCDP: ``(k - 1)`` times
OpenDP's noisy-max map plus ``(k - 1)`` times its Gaussian map ``(sqrt(2) / sigma)^2 / 2`` plus
the pattern's at ``4 sigma``), summed over the rationals and rounded up;
neither the candidate sets, the chosen cliques nor the codes change it
(:doc:`/proofs/table_marginals`), so the pipeline fits the budget to the map of a template
built from the schema alone (:func:`network_template`, :func:`fit_network`: the pair tree's
split and search, :func:`~opendp_wasserstein.tables.pipeline.fit_pairs`; the two maps are
equal at the same budgets).
"""

from __future__ import annotations

from collections.abc import Sequence
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
from opendp_wasserstein.core.exact import round_down, round_up
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
from opendp_wasserstein.tables.calibration import largest_remainder
from opendp_wasserstein.tables.encoding import TableEncoding, category_boundaries
from opendp_wasserstein.tables.marginals import (
    ColumnPlan,
    TableMarginals,
    check_noise,
    column_plans,
    make_cell_counts,
    project_groups,
)
from opendp_wasserstein.tables.pairs import (
    PAIR_BINS_MAX,
    PATTERN_SCALE,
    FirstLookNoise,
    PairCoding,
    _present_rows,
    combine_margins,
    grade_correlation,
    make_pattern_counts,
    noisy_counts,
    pair_bins,
    pair_count_scale,
    pair_score_sensitivity,
    pair_tables,
    pattern_columns,
    pattern_law,
    pattern_missing_probability,
    sure_threshold,
    zcdp_selection,
)

if TYPE_CHECKING:
    from scipy import special
else:
    special = lazy_module("scipy.special")  # imported on first use: 0.2 s of start-up

__all__ = [
    "NetworkCoding",
    "Clique",
    "network_cells",
    "network_bins",
    "network_column_bins",
    "make_clique_counts",
    "make_clique_scores",
    "make_network",
    "network_template",
    "fit_network",
    "sample_network",
    "network_release",
    "network_points",
    "conditional_rows",
    "NETWORK_CELL_NOISE",
    "NETWORK_MIN_BINS",
    "NETWORK_NOISE_PENALTY",
    "NETWORK_SURE_MIN_BINS",
    "clique_penalty",
]

#: :func:`network_cells` keeps ``n / cells`` at least this many times the counts' noise scale
NETWORK_CELL_NOISE = 2.0

#: the fewest coarse bins of a numeric column (:func:`network_bins`): a 3-way table at 2 bins
#: a column halves each of its columns, and the round's coarse score prefers it to a 2-way
#: table released at the fine codes.  Measured (txhousing, pure eps 0.5, nullable columns at 2
#: bins + missing, 3 seeds): 2-way TVD 0.245 -> 0.259, correlations 0.169 -> 0.191, Gower W1
#: 0.109 -> 0.116 against none of their 3-way tables (docs/tables_compare.rst)
NETWORK_MIN_BINS = 3

#: score every candidate after the first round at the coarse codes (comparable scores)
NETWORK_SCORE_COARSE = True

#: under pure DP (Laplace tables) a candidate's selection score is its dependence less this
#: many times the expected ``l1`` noise of the table it would release (its cells times the
#: tables' Laplace scale, :func:`clique_penalty`: public), so a round prefers a table whose
#: dependence stands above its noise (AIM's rule, McKenna et al. 2022, in ``l1``).  Measured
#: (``bench_tables_compare``, pure, the network against the pair tree): docs/tables_compare.rst
NETWORK_NOISE_PENALTY = 1.0

#: the fewest bins of every column of a clique of numeric columns only whose rows
#: :func:`sample_network` soft-thresholds at the table's
#: :func:`~opendp_wasserstein.tables.pairs.sure_threshold` (a clique with a categorical column
#: keeps its counts: txhousing eps 1 with ``delta``, ``city``-``median``, model 0.449 -> 0.418
#: over 6 seeds with it, 0.478 without)
NETWORK_SURE_MIN_BINS = 8


def _count_scale(columns: int, epsilon_counts: float, noise: str = "laplace") -> float:
    """The Laplace scale of each table's noise, or (``noise="gaussian"``) the Laplace scale of
    the Gaussian's variance, ``sigma / sqrt 2`` (:func:`~opendp_wasserstein.tables.pairs.pair_bins`'
    rule)."""
    k = max(2, int(columns))
    s = float(pair_count_scale(k - 1, epsilon_counts, noise))
    return s / float(np.sqrt(2.0)) if check_noise(noise) == "gaussian" else s


def network_cells(n: int, epsilon_counts: float, columns: int, noise: str = "laplace") -> int:
    """The most cells of a 3-way table, from public values: ``floor(n / (NETWORK_CELL_NOISE
    s))`` with ``s = 2 (k - 1) / epsilon_counts`` the scale of each table's noise, at least 8;
    with ``noise="gaussian"`` ``epsilon_counts`` is a ``rho`` and ``s = sigma / sqrt 2``
    (``sigma`` of :func:`~opendp_wasserstein.tables.pairs.pair_count_scale`)."""
    s = _count_scale(columns, epsilon_counts, noise)
    return max(8, int(np.floor(max(n, 1) / (NETWORK_CELL_NOISE * s))))


def network_bins(
    n: int, epsilon_counts: float, columns: int, noise: str = "laplace", missing: bool = False
) -> int:
    """The coarse bins of a numeric column (its codes in a 3-way table): the largest ``b``
    whose ``(b + missing)^3`` is at most :func:`network_cells` (the cube root, less one for a
    nullable column, whose missing rows take one more code: three such columns then fit the
    cells together), in ``[NETWORK_MIN_BINS, PAIR_BINS_MAX]``; ``missing`` is the schema's
    (public).  Below the floor the column's 3-way tables do not fit the cells, so it only
    joins 2-way tables."""
    c = network_cells(n, epsilon_counts, columns, noise)
    b = int(np.floor(c ** (1.0 / 3.0) + 1e-9)) - (1 if missing else 0)
    return int(np.clip(b, NETWORK_MIN_BINS, PAIR_BINS_MAX))


def network_column_bins(
    plans: Sequence[ColumnPlan],
    n: int,
    epsilon_counts: float,
    noise: str = "laplace",
) -> tuple[int, ...]:
    """Per column, its coarse bins (:func:`network_bins`, ``missing`` when the column is
    nullable: public, the schema); a categorical column's entry is unused (its categories)."""
    k = len(plans)
    return tuple(
        network_bins(n, epsilon_counts, k, noise, p.missing_axis is not None) for p in plans
    )


@dataclass(frozen=True, eq=False)
class NetworkCoding:
    """The codes of the network (public: the schema and the DP first look).

    :param fine: the codes of a 2-way table (:class:`~opendp_wasserstein.tables.pairs.PairCoding`)
    :param coarse: the codes of a 3-way table
    :param max_cells: the most cells of a 3-way table (:func:`network_cells`)
    """

    fine: PairCoding
    coarse: PairCoding
    max_cells: int

    @classmethod
    def from_marginals(
        cls,
        marginals: TableMarginals,
        fine_bins: int,
        coarse_bins: int | Sequence[int],
        max_cells: int,
        enc: TableEncoding | None = None,
    ) -> NetworkCoding:
        """Both codings cut at the DP quantiles; with ``enc``, an int column of one leaf per
        value at its leaf edges (:meth:`~opendp_wasserstein.tables.pairs.PairCoding.from_marginals`:
        a value is never split between two codes)."""
        return cls(
            PairCoding.from_marginals(marginals, fine_bins, enc),
            PairCoding.from_marginals(marginals, coarse_bins, enc),
            int(max_cells),
        )

    def level(self, parents: int) -> PairCoding:
        """The coding of a table with ``parents`` parents."""
        return self.fine if parents < 2 else self.coarse


@dataclass(frozen=True)
class Clique:
    """A child and its parents (column indices); its table is parents-major, child last."""

    child: int
    parents: tuple[int, ...]

    @property
    def columns(self) -> tuple[int, ...]:
        """The table's columns in order: the parents, then the child."""
        return (*self.parents, self.child)


def _joint_codes(coding: PairCoding, codes: dict[int, np.ndarray], cols: Sequence[int]) -> Any:
    out = np.zeros(len(codes[cols[0]]), dtype=np.int64)
    for c in cols:  # at most 3 columns (public)
        out = out * coding.sizes[c] + codes[c]
    return out


def _cells(coding: PairCoding, cols: Sequence[int]) -> int:
    return int(np.prod([coding.sizes[c] for c in cols]))


def make_clique_counts(
    input_domain: Domain,
    input_metric: Metric,
    coding: PairCoding,
    clique: Clique,
    output_metric: str = "l1",
) -> Transformation:
    r"""The count table of a clique's columns (row-major over ``clique.columns``) as an ``i64``
    vector in ``l1_distance``: every record is in exactly one cell, so stability ``2 d_in``
    under ``change_one_distance``, ``d_in`` under ``symmetric_distance``.  With
    ``output_metric="l2"``: in ``l2_distance(T=float)``, stability ``sqrt(2)`` per replacement,
    rounded up (:func:`~opendp_wasserstein.tables.marginals.l2_count_stability`, as
    :func:`~opendp_wasserstein.tables.pairs.make_pair_counts`)."""
    cols = clique.columns

    def cells(x: np.ndarray) -> np.ndarray:
        return _joint_codes(coding, {c: coding.codes(x, c) for c in cols}, cols)

    return make_cell_counts(input_domain, input_metric, _cells(coding, cols), cells, output_metric)


def make_clique_scores(
    input_domain: Domain,
    input_metric: Metric,
    coding: NetworkCoding,
    cliques: Sequence[Clique],
    coarse: bool = False,
    penalties: Sequence[float] | None = None,
) -> Transformation:
    r"""Per clique, ``||C_{P,c} - C_P C_c^T / n||_1`` (its count table against the product of
    the parents' joint counts and the child's, at the clique's coding), less the clique's public
    ``penalties`` when given (:func:`clique_penalty`): a float vector in ``linf_distance``,
    stability ``round_up(r (6 + 4/n))`` for ``r`` replacements (the parents' joint code is one
    column: :func:`~opendp_wasserstein.tables.pairs.pair_score_sensitivity`; a constant of the
    candidate, the same for every data set, moves no difference of two data sets' scores)."""
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_clique_scores needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    if not cliques:
        raise ValueError("cliques must not be empty")
    pen = [0.0] * len(cliques) if penalties is None else [float(v) for v in penalties]
    if len(pen) != len(cliques) or not all(np.isfinite(pen)):
        raise ValueError("penalties must be one finite number per clique")
    sens = pair_score_sensitivity(n)

    def function(x: np.ndarray) -> list[float]:
        x = validate_data(x, d, n, nan=False)
        codes: dict[int, dict[int, np.ndarray]] = {1: {}, 2: {}}
        out = []
        for q, c0 in zip(cliques, pen, strict=True):  # candidates (public)
            lv = 2 if coarse else min(2, len(q.parents))
            cd = coding.level(lv)
            have = codes[lv]
            for c in q.columns:
                if c not in have:
                    have[c] = cd.codes(x, c)
            kp = _cells(cd, q.parents)
            kc = cd.sizes[q.child]
            pc = _joint_codes(cd, have, q.parents)
            t = np.bincount(pc * kc + have[q.child], minlength=kp * kc).astype(np.float64)
            a = np.bincount(pc, minlength=kp).astype(np.float64)
            b = np.bincount(have[q.child], minlength=kc).astype(np.float64)
            out.append(float(np.abs(t - np.outer(a, b).reshape(-1) / n).sum()) - c0)
        return out

    def stability(d_in: Any) -> float:
        return round_up(replacements(kind, d_in) * sens)

    return make_transformation(
        input_domain,
        input_metric,
        dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(cliques)),
        dp.linf_distance(T=float),
        function,
        stability,
    )


def candidates(coding: NetworkCoding, inside: Sequence[int], k: int) -> list[Clique]:
    """A round's candidates (public: the earlier rounds' choices and the codes' sizes): with no
    column inside, every pair (the larger index as child); else every column outside with one
    parent inside, or two inside when the coarse table has at most ``max_cells`` cells."""
    ins = sorted(inside)
    if not ins:
        return [Clique(j, (i,)) for i in range(k) for j in range(i + 1, k)]
    out = []
    for c in (c for c in range(k) if c not in set(ins)):  # columns (public)
        out += [Clique(c, (p,)) for p in ins]
        out += [
            Clique(c, (p, q))
            for a, p in enumerate(ins)
            for q in ins[a + 1 :]
            if _cells(coding.coarse, (p, q, c)) <= coding.max_cells
        ]
    return out


def clique_penalty(
    coding: NetworkCoding, clique: Clique, count_scale: float, noise: str = "laplace"
) -> float:
    """The public penalty of a candidate's selection score (:data:`NETWORK_NOISE_PENALTY` times
    the cells of the table it would release, at its coding, times the tables' noise scale
    ``count_scale``: about that table's expected ``l1`` noise); 0 in zCDP (``noise="gaussian"``:
    the release with ``delta`` keeps the unpenalised scores)."""
    if check_noise(noise) == "gaussian":
        return 0.0
    cd = coding.level(len(clique.parents))
    return float(NETWORK_NOISE_PENALTY * float(count_scale) * _cells(cd, clique.columns))


def make_network(
    input_domain: Domain,
    input_metric: Metric,
    coding: NetworkCoding,
    marginals: TableMarginals | None,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
) -> Measurement:
    r"""Construct the network of noisy 2- and 3-way tables (module docstring).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, size=n, T=float)``: encoded
        points with a public size
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param coding: the public codes (:meth:`NetworkCoding.from_marginals`)
    :param marginals: the DP first look; None only for a template (invoking it raises)
    :param epsilon_select: the budget of the ``k - 1`` rounds of selection, shared equally
    :param epsilon_counts: the budget of the ``k - 1`` count tables, shared equally, and of
        the missingness pattern table (with two nullable numeric columns or more) at
        :data:`~opendp_wasserstein.tables.pairs.PATTERN_SCALE` times their scale
        (:func:`~opendp_wasserstein.tables.pairs.pair_tables`)
    :param noise: ``"laplace"`` (default: pure DP) or ``"gaussian"``: the two budgets are zCDP
        ``rho``, every round :func:`~opendp_wasserstein.tables.pairs.zcdp_selection` (OpenDP's
        zCDP noisy max), every table ``make_clique_counts(..., "l2") >> then_gaussian`` at
        :func:`~opendp_wasserstein.tables.pairs.pair_count_scale`; the measurement is in
        ``zero_concentrated_divergence``
    :return: a Measurement releasing ``(cliques, tables, pattern)``: the chosen cliques in the
        order chosen, their noisy count tables (int64 arrays, one axis per column of
        ``clique.columns``) and the noisy pattern counts (``2^m`` int64, or None when
        :func:`~opendp_wasserstein.tables.pairs.pattern_columns` is empty); map at most
        ``epsilon_select + epsilon_counts`` per replacement
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_network needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    e_sel = check_epsilon(epsilon_select, "epsilon_select")
    e_cnt = check_epsilon(epsilon_counts, "epsilon_counts")
    k = len(coding.fine.plans)
    if k < 2:
        raise ValueError("make_network needs at least two columns")
    rounds = k - 1
    gauss = check_noise(noise) == "gaussian"
    measure = dp.zero_concentrated_divergence() if gauss else dp.max_divergence()
    eps_round = round_down(Fraction(e_sel) / rounds)
    sel_sens = round_up(pair_score_sensitivity(n))
    with_pattern = bool(pattern_columns(coding.fine))
    count_scale = pair_count_scale(pair_tables(coding.fine, noise), e_cnt, noise)
    pattern_scale = PATTERN_SCALE * count_scale  # exact: a power of 2
    metric = "l2" if gauss else "l1"
    then = dp.m.then_gaussian if gauss else dp.m.then_laplace
    if gauss:  # the map of OpenDP's zCDP noisy max does not depend on the candidates' number
        select_template, sel_scale = zcdp_selection(1, eps_round, sel_sens)
    else:
        sel_scale = round_up(2 * Fraction(sel_sens) / Fraction(eps_round))
        vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=1)
        select_template = make_exponential_selection(
            vec, dp.linf_distance(T=float), eps_round, sel_sens
        )
    count_template = make_clique_counts(
        input_domain, input_metric, coding.fine, Clique(1, (0,)), metric
    ) >> then(count_scale)
    pattern_template = (
        make_pattern_counts(input_domain, input_metric, coding.fine, metric) >> then(pattern_scale)
        if with_pattern
        else None
    )

    def round_map(d_in: Any) -> Fraction:
        return Fraction(
            select_template.map(round_up(replacements(kind, d_in) * Fraction(sel_sens)))
        )

    def function(
        x: np.ndarray,
    ) -> tuple[list[Clique], list[np.ndarray], np.ndarray | None]:
        if marginals is None:
            raise ValueError("make_network: a template (marginals=None) cannot be invoked")
        x = validate_data(x, d, n, nan=False)
        src = as_random_source()
        sel_rng, noise_rng = src.derive(SELECTION_STREAM + 48), src.derive(NOISE_STREAM + 48)
        inside: list[int] = []
        chosen: list[Clique] = []
        for _ in range(rounds):  # k - 1 rounds (public)
            cand = candidates(coding, inside, k)
            scores = make_clique_scores(
                input_domain,
                input_metric,
                coding,
                cand,
                NETWORK_SCORE_COARSE and bool(inside),
                None if gauss else [clique_penalty(coding, q, count_scale, noise) for q in cand],
            )
            if src.secure and gauss:
                g = dp.m.make_noisy_max(
                    scores.output_domain, scores.output_metric, measure, sel_scale, negate=False
                )
                a = int((scores >> g)(x))
            elif src.secure:
                v = make_exponential_selection(
                    scores.output_domain, scores.output_metric, eps_round, sel_sens, negate=False
                )
                a = int((scores >> v)(x))
            else:  # reproducible (NOT private) runs: the same law from the seeded stream
                a = softmax_choice(np.asarray(scores(x)) / float(sel_scale), sel_rng)
            q = cand[a]
            chosen.append(q)
            inside += [c for c in q.columns if c not in inside]
        tables = []
        for q in chosen:
            cd = coding.level(len(q.parents))
            counts = make_clique_counts(input_domain, input_metric, cd, q, metric)
            t = noisy_counts(counts, x, count_scale, gauss, src, noise_rng)
            tables.append(t.reshape([cd.sizes[c] for c in q.columns]))
        pattern = None
        if with_pattern:  # after the tables: their draws are the pattern-free network's
            counts = make_pattern_counts(input_domain, input_metric, coding.fine, metric)
            pattern = noisy_counts(counts, x, pattern_scale, gauss, src, noise_rng)
        names = [p.name for p in coding.fine.plans]
        runtime.record(
            {
                "network_cliques": [
                    (names[q.child], tuple(names[p] for p in q.parents)) for q in chosen
                ],
                "network_scale": float(count_scale),
                "network_pattern": [
                    coding.fine.plans[c].name for c in pattern_columns(coding.fine)
                ],
            }
        )
        return chosen, tables, pattern

    def privacy_map(d_in: Any) -> float:
        per_count = Fraction(count_template.map(d_in))
        total = rounds * round_map(d_in) + rounds * per_count
        if pattern_template is not None:
            total += Fraction(pattern_template.map(d_in))
        return round_up(total)

    return make_measurement(input_domain, input_metric, measure, function, privacy_map)


def _uniform_coding(enc: TableEncoding, bins: int) -> PairCoding:
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
    return PairCoding(plans, tuple(edges), tuple(sizes))


def network_template(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
) -> Measurement:
    """A :func:`make_network` built from the schema alone (uniform codes): its map is the
    released one's (the map does not depend on the codes)."""
    c = _uniform_coding(enc, 2)
    coding = NetworkCoding(c, c, 8)
    return make_network(
        input_domain, input_metric, coding, None, epsilon_select, epsilon_counts, noise
    )


def fit_network(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon: float,
    marg_map: Any,
    unit: int,
    select_share: Fraction,
    noise: str = "laplace",
) -> tuple[float, float, Measurement]:
    """The network's budgets (the rest of ``epsilon`` after the first look's map ``marg_map``,
    the share ``select_share`` of it on the choices, as the pair tree's) and template at the
    largest rest whose exact sum with ``marg_map`` is at most ``epsilon``: the rest itself,
    then lowered by a relative ``2^-52``, twice that, and so on (the float rounding of its
    ``2 (k - 1)`` maps; ``noise="gaussian"``: the same in zCDP, ``epsilon`` and maps ``rho``)."""
    shrink = Fraction(0)
    for _ in range(60):
        rest = (Fraction(epsilon) - Fraction(marg_map)) * (1 - shrink)
        e_sel = round_down(rest * select_share)
        e_cnt = round_down(rest - Fraction(e_sel))
        template = network_template(input_domain, input_metric, enc, e_sel, e_cnt, noise)
        if Fraction(marg_map) + Fraction(template.map(unit)) <= Fraction(epsilon):
            return e_sel, e_cnt, template
        shrink = Fraction(1, 2**52) if shrink == 0 else 2 * shrink
    raise ValueError("epsilon is too small to represent the network's budget")  # pragma: no cover


def network_codings(
    marginals: TableMarginals,
    n: int,
    epsilon_counts: float,
    noise: str = "laplace",
    enc: TableEncoding | None = None,
) -> NetworkCoding:
    """The network's codes from the DP first look and public values (``noise``: the tables'
    law, ``epsilon_counts`` a ``rho`` when Gaussian; ``enc``: the leaf-edge cuts of
    :meth:`NetworkCoding.from_marginals`)."""
    k = len(marginals.plans)
    return NetworkCoding.from_marginals(
        marginals,
        pair_bins(n, epsilon_counts, k, noise),
        network_column_bins(marginals.plans, n, epsilon_counts, noise),
        network_cells(n, epsilon_counts, k, noise),
        enc,
    )


def conditional_rows(
    table: np.ndarray, mass: np.ndarray, prior: np.ndarray, lam: float, floor: float = 0.0
) -> Any:
    """Rows ``P(child | parents = a)`` from a noisy table (``(A, K)``, parents' joint code on
    rows): row ``a`` projected onto the simplex of mass ``mass[a]`` (the parents' rows), then
    mixed with the row ``prior[a]`` at weight ``lam`` (rows of little mass follow the prior)."""
    ka, kb = table.shape
    groups = np.repeat(np.arange(ka), kb)
    h = project_groups(
        table.reshape(-1).astype(np.float64), groups, np.clip(mass, 0.0, None)
    ).reshape(ka, kb)
    if floor > 0:
        h = np.minimum(h, np.clip(np.asarray(table, dtype=np.float64) - floor, 0.0, None))
    s = h.sum(axis=1, keepdims=True)
    out = (h + lam * prior) / (s + lam)
    return out / out.sum(axis=1, keepdims=True)


def _place_column(
    coding: PairCoding, c: int, code: np.ndarray, u: np.ndarray, out: np.ndarray
) -> None:
    """Write column ``c``'s encoded values of its codes into ``out`` (as
    :meth:`~opendp_wasserstein.tables.pairs.PairCoding.place`, one column)."""
    p = coding.plans[c]
    e = coding.edges[c]
    if e is None:
        b = category_boundaries(p.cells)
        out[:, p.value_axis] = ((b[:-1] + b[1:]) / 2)[code]
        return
    nb = len(e) - 1
    cb = np.minimum(code, nb - 1)
    out[:, p.value_axis] = e[cb] + np.clip(u, 0.0, 1.0) * (e[cb + 1] - e[cb])
    if p.missing_axis is not None:
        miss = code == nb
        out[:, p.axes[p.missing_axis]] = np.where(miss, 0.75, 0.25)
        out[miss, p.value_axis] = 0.5


def _relative(coding: PairCoding, c: int, code: np.ndarray, out: np.ndarray) -> Any:
    """Column ``c``'s relative position inside its bin of ``coding`` (1/2 when missing)."""
    e = coding.edges[c]
    assert e is not None
    nb = len(e) - 1
    cb = np.minimum(code, nb - 1)
    w = e[cb + 1] - e[cb]
    x = out[:, coding.plans[c].value_axis]
    r = np.where(w > 0, (x - e[cb]) / np.where(w > 0, w, 1.0), 0.5)
    return np.where(code == nb, 0.5, np.clip(r, 0.0, 1.0))


def _missing_axis(coding: PairCoding, c: int) -> int:
    """Column ``c``'s is-missing axis in the encoding (a nullable numeric column)."""
    p = coding.plans[c]
    assert p.missing_axis is not None
    return p.axes[p.missing_axis]


def _bins(coding: PairCoding, c: int) -> int:
    """Column ``c``'s bins at ``coding`` (0 for a categorical column)."""
    e = coding.edges[c]
    return 0 if e is None else len(e) - 1


def _sure_clique(coding: PairCoding, q: Clique) -> bool:
    """Whether :func:`sample_network` soft-thresholds a clique's tables (public: the codes):
    every column numeric with at least :data:`NETWORK_SURE_MIN_BINS` bins."""
    return all(_bins(coding, c) >= max(NETWORK_SURE_MIN_BINS, 1) for c in q.columns)


def _draw(cond: np.ndarray, rows: np.ndarray, rng: RandomSource) -> Any:
    cum = np.cumsum(cond, axis=1)
    cum[:, -1] = 1.0
    u = rng.uniform(len(rows))
    return np.minimum((cum[rows] <= u[:, None]).sum(axis=1), cond.shape[1] - 1)


def sample_network(
    coding: NetworkCoding,
    marginals: TableMarginals,
    cliques: Sequence[Clique],
    tables: Sequence[np.ndarray],
    m: int,
    rng: RandomSource,
    count_scale: float,
    pattern: np.ndarray | None = None,
) -> np.ndarray:
    r"""``m`` encoded points drawn from the network (post-processing of DP releases).

    The first clique's parent from its DP marginal (counts by largest remainder, random order),
    then every clique's child given its parents' codes at the clique's coding (read from the
    values drawn so far): a 2-way table's rows shrink toward the child's DP marginal, a 3-way
    table's toward the mean of its two 2-way conditionals (the table summed over one parent,
    each shrunk toward the child's marginal), at weight ``count_scale`` rows
    (:func:`conditional_rows`; the parents' mass is the rows drawn, scaled to ``n``).  A
    clique of numeric columns only, each of at least :data:`NETWORK_SURE_MIN_BINS` bins at its
    coding (public), has its tables' counts (the 3-way table and its two 2-way sums)
    soft-thresholded at their :func:`~opendp_wasserstein.tables.pairs.sure_threshold` for
    the public noise variance (``2 count_scale^2``, times the cells summed), as the pair
    tree's: a near-function (diamonds' ``carat`` given ``x`` and ``y``) no longer keeps its
    empty cells at a noise scale each.  Inside a bin, a numeric child's
    position follows a Gaussian copula with its numeric parent of the largest released rank
    correlation (``r = 2 sin(pi rho_s / 6)``, as
    :func:`~opendp_wasserstein.tables.pairs.sample_tree`'s ``within="copula"``), else it is
    uniform.  The threshold draws no more random numbers: a release whose cliques have fewer bins
    is the one before, bit for bit.

    **Missingness** (``pattern``, the noisy counts of
    :func:`~opendp_wasserstein.tables.pairs.make_pattern_counts`): as
    :func:`~opendp_wasserstein.tables.pairs.sample_tree`, a child of the pattern drawn after
    others of it is missing with the probability combining its clique's conditional and the
    pattern law given the flags drawn so far
    (:func:`~opendp_wasserstein.tables.pairs.pattern_missing_probability`); where present, its
    code is drawn from its conditional restricted to its present codes."""
    k = len(coding.fine.plans)
    d = sum(len(p.axes) for p in coding.fine.plans)
    out = np.full((m, d), 0.5)
    n = float(marginals.size)
    scale = n / max(m, 1)
    lam = float(count_scale)
    done: set[int] = set()
    law = None
    place: dict[int, int] = {}  # a pattern column's axis in the pattern law
    if pattern is not None:
        cols = pattern_columns(coding.fine)
        miss = np.array([coding.fine.marginal(marginals, c)[-1] for c in cols])
        law = pattern_law(pattern, miss).reshape((2,) * len(cols))
        place = {c: a for a, c in enumerate(cols)}
    if cliques:
        root = cliques[0].parents[0]
        probs = coding.fine.marginal(marginals, root)
        cnt = largest_remainder(probs, m)
        code = np.repeat(np.arange(len(cnt)), cnt)[rng.permutation(m)]
        _place_column(coding.fine, root, code, rng.uniform(m), out)
        done.add(root)
    for q, tab in zip(cliques, tables, strict=True):  # the k - 1 cliques (public)
        cd = coding.level(len(q.parents))
        t = np.asarray(tab, dtype=np.float64)
        kc = cd.sizes[q.child]
        child = cd.marginal(marginals, q.child)
        pcodes = {p: cd.codes(out, p) for p in q.parents}
        sure = _sure_clique(cd, q)
        var = 2.0 * lam * lam
        two: list[np.ndarray] = []  # per parent, P(child | parent)
        for a, p in enumerate(q.parents):
            t2 = t.sum(axis=1 - a) if len(q.parents) == 2 else t
            mass = np.bincount(pcodes[p], minlength=cd.sizes[p]) * scale
            v2 = var * (t.size // t2.size)  # the noise of the cells summed into each
            fl = sure_threshold(t2, v2) if sure else 0.0
            two.append(conditional_rows(t2, mass, np.broadcast_to(child, t2.shape), lam, fl))
        if len(q.parents) == 1:
            cond, rows = two[0], pcodes[q.parents[0]]
        else:
            p1, p2 = q.parents
            rows = pcodes[p1] * cd.sizes[p2] + pcodes[p2]
            prior = (two[0][:, None, :] + two[1][None, :, :]).reshape(-1, kc) / 2
            mass = np.bincount(rows, minlength=prior.shape[0]) * scale
            fl = sure_threshold(t, var) if sure else 0.0
            cond = conditional_rows(t.reshape(-1, kc), mass, prior, lam, fl)
        drawn = [c for c in place if c in done]
        if law is None or q.child not in place or not drawn:
            code = _draw(cond, rows, rng)
        else:
            flags = np.stack([out[:, _missing_axis(coding.fine, c)] >= 0.5 for c in drawn], 1)
            prob = pattern_missing_probability(
                law, [place[c] for c in drawn], flags, place[q.child], cond[rows, -1]
            )
            missing = rng.uniform(m) < prob
            code = np.minimum(_draw(_present_rows(cond, child), rows, rng), kc - 2)
            code[missing] = kc - 1
        u = rng.uniform(m)
        if cd.edges[q.child] is not None:
            best, r = None, 0.0
            for a, p in enumerate(q.parents):
                if cd.edges[p] is None:
                    continue
                np_, nc = cd.sizes[p] - (cd.plans[p].missing_axis is not None), kc
                nc -= cd.plans[q.child].missing_axis is not None
                pm = np.bincount(pcodes[p], minlength=cd.sizes[p]).astype(np.float64)
                rho = grade_correlation((pm[:, None] * two[a])[:np_, :nc])
                if abs(rho) > abs(r):
                    best, r = p, rho
            if best is not None:
                rr = float(np.clip(2.0 * np.sin(np.pi * r / 6.0), -0.999, 0.999))
                up = _relative(cd, best, pcodes[best], out)
                z = rr * special.ndtri(np.clip(up, 1e-12, 1 - 1e-12)) + np.sqrt(
                    1 - rr * rr
                ) * special.ndtri(np.clip(u, 1e-12, 1 - 1e-12))
                u = special.ndtr(z)
        _place_column(cd, q.child, code, u, out)
        done |= set(q.columns)
    for c in range(k):  # a column no clique reaches (not with k - 1 rounds): its marginal
        if c not in done:
            cnt = largest_remainder(coding.fine.marginal(marginals, c), m)
            code = np.repeat(np.arange(len(cnt)), cnt)[rng.permutation(m)]
            _place_column(coding.fine, c, code, rng.uniform(m), out)
    return out


def network_release(
    input_domain: Domain,
    input_metric: Metric,
    queryable: Any,
    marginals: TableMarginals,
    n: int,
    epsilon_select: float,
    epsilon_counts: float,
    noise: FirstLookNoise | None = None,
    count_noise: str = "laplace",
    enc: TableEncoding | None = None,
) -> tuple[NetworkCoding, list[Clique], list[np.ndarray], np.ndarray | None, TableMarginals, float]:
    """The network's query of the pipeline's compositor (``queryable``) and the model its rows
    are drawn from: ``(coding, cliques, tables, pattern, targets, lam)``, the targets the first
    look combined with the margins of the released 2-way tables by inverse variance (with
    ``noise``, the first look's, public: :func:`~opendp_wasserstein.tables.pairs.combine_margins`;
    post-processing) and ``lam`` the shrinkage weight of :func:`sample_network`.
    ``count_noise="gaussian"``: the zCDP network (both budgets ``rho``), the tables' variance
    ``sigma^2`` in the combination, the shrinkage at the Laplace scale of that variance."""
    coding = network_codings(marginals, n, epsilon_counts, count_noise, enc)
    k = len(coding.fine.plans)
    cliques, tables, pattern = queryable(
        make_network(
            input_domain,
            input_metric,
            coding,
            marginals,
            epsilon_select,
            epsilon_counts,
            count_noise,
        )
    )
    if noise is not None:
        two = [(q, t) for q, t in zip(cliques, tables, strict=True) if len(q.parents) == 1]
        marginals = combine_margins(
            coding.fine,
            marginals,
            [(q.parents[0], q.child) for q, _ in two],
            [t for _, t in two],
            float(
                pair_count_scale(pair_tables(coding.fine, count_noise), epsilon_counts, count_noise)
            ),
            noise,
            count_noise,
        )
    runtime.record(
        {
            "network_bins": (int(max(coding.fine.sizes)), int(max(coding.coarse.sizes))),
            "network_cells": coding.max_cells,
        }
    )
    lam = _count_scale(k, epsilon_counts, count_noise)
    return coding, list(cliques), list(tables), pattern, marginals, lam


def network_points(
    input_domain: Domain,
    input_metric: Metric,
    queryable: Any,
    marginals: TableMarginals,
    n: int,
    epsilon_select: float,
    epsilon_counts: float,
    rng: RandomSource,
    noise: FirstLookNoise | None = None,
    count_noise: str = "laplace",
    enc: TableEncoding | None = None,
) -> tuple[np.ndarray, TableMarginals]:
    """:func:`network_release`, then ``n`` encoded points (before the calibration) drawn from
    it in one stream (:func:`sample_network`) and the 1-way targets they were drawn to."""
    coding, cliques, tables, pattern, marginals, lam = network_release(
        input_domain,
        input_metric,
        queryable,
        marginals,
        n,
        epsilon_select,
        epsilon_counts,
        noise,
        count_noise,
        enc,
    )
    points = sample_network(coding, marginals, cliques, tables, n, rng, lam, pattern)
    return points, marginals
