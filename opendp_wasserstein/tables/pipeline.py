r"""The structured table release as one OpenDP chain, certified by one map.

``make_table_encoding >> make_structured_synthesis >> decoding``, where
:func:`make_structured_synthesis`, on the encoded points, is OpenDP's
``make_adaptive_composition`` of two queries:

1. **the private first look** (:func:`~opendp_wasserstein.tables.marginals.make_table_marginals`,
   a share of ``epsilon``, :func:`first_look_share`): every column's 1-D marginal;
2. **the joint release built from it**: the quantile encoding of the numeric axes by their DP
   CDFs (:func:`~opendp_wasserstein.tables.marginals.make_quantile_encoding`, a row-wise
   transformation) ``>>`` Adaptive Pruned-PMM over a public family of Gower split orders whose
   column weights are the DP marginals' impurities
   (:func:`~opendp_wasserstein.tables.joint.make_order_adaptive_pmm`), with the rest of the budget;

then post-processing: the inverse quantile maps and the calibration of every column to the DP
marginals (:func:`~opendp_wasserstein.tables.calibration.calibrate`).  The quality figure
(:func:`~opendp_wasserstein.tables.quality.marginal_agreement`) is recorded in
:func:`opendp_wasserstein.runtime.diagnostics`.

**Output blocks** (the pair tree and independent columns): the rows are drawn and calibrated in
blocks of ``StructuredOptions.block_rows`` rows (public, default :data:`RELEASE_BLOCK_ROWS`),
block ``b`` from its own stream (:func:`draw_blocks`): the release is the concatenation of
independent samples of the block sizes from the one DP model, each calibrated to the targets
at its own size; the quality figure sums the blocks' counts.  The Dask release draws the same
blocks on its workers.  A table of one block is one sample of ``n`` rows, as before the blocks.

**The joint release** (``joint="auto"``, :func:`joint_kind`, a function of public ``n``,
``epsilon``, the schema and whether ``delta`` is given): the tree of noisy 2-way marginals
(:mod:`~opendp_wasserstein.tables.pairs`) when ``n * epsilon`` is at least
:data:`PAIRS_MIN_NEPS` per column, or the degree-2 network
(:mod:`~opendp_wasserstein.tables.network`): with ``delta`` (zCDP) from
:data:`NETWORK_MIN_NEPS_ZCDP`, and on small tables from :data:`PAIRS_MIN_NEPS_ZCDP` up to
:data:`PAIRS_MIN_NEPS` (its first look at :data:`SMALL_MARGINAL_SHARE`), under pure DP below
:data:`NETWORK_MAX_NEPS_PURE`; the joint
hierarchy (Adaptive Pruned-PMM over Gower split orders, below) on request (``joint="tree"``):
its selection, made for W1 under the whole-table metric, picks shallow trees on tables of many
columns (depth 2-3 on an 8-column, 6,900-row table at epsilon 1), which keep no pairwise
structure.

**Small tables.**  Below :data:`PAIRS_MIN_NEPS` per column the tables of a joint release would
only take budget from the marginals.  Under pure DP from :data:`COPULA_MIN_NEPS` (with
``delta``: from :data:`COPULA_MIN_NEPS_ZCDP` to :data:`PAIRS_MIN_NEPS_ZCDP`, its counts
under discrete Gaussian noise) the Gaussian
copula (:mod:`~opendp_wasserstein.tables.copula`) spends the budget's last tenth
(:data:`COPULA_MARGINAL_SHARE`) on one noisy count per pair of numeric columns and correlates
the independent join's points through the latent correlations read from them (every column
released as below); below :data:`COPULA_MIN_NEPS` (with ``delta``: below
:data:`COPULA_MIN_NEPS_ZCDP`) the whole budget goes to the first look and the columns are
joined independently (:func:`independent_join`: scrambled Halton points laid out on each
column's release, so the sample's spurious dependence between columns is a fraction of random
draws'), which is the
independent-marginals release made with the package's 1-D hierarchy: the same budget per
column as independent noisy 1-way marginals (``epsilon / k``), read on the same public tree as
the joint modes (one flat level of 16 cells, of 32 once ``n epsilon / k >= 256``, a tree of 256
leaves from 512, 4096 from 4096, or one leaf per value of an int column that has
few enough, with no coarse level of fewer than 16 nodes:
:func:`~opendp_wasserstein.tables.marginals.column_leaves`,
:func:`~opendp_wasserstein.tables.marginals.tree_levels`), the tree's levels combined by least
squares and projected onto the simplex level by level, a categorical column's counts shrunk
toward the even split first
(:func:`~opendp_wasserstein.tables.marginals.tree_estimate`), values placed by the inverse of the
released CDF, never inside a cell the release left empty.

**Under** ``(epsilon, delta)`` (``delta`` given): the same chain in zCDP
(:func:`make_structured_synthesis_zcdp`): discrete Gaussian noise (OpenDP's ``then_gaussian``)
on the first look's levels and the pair (or network) tables, the choices by OpenDP's noisy max
in zCDP,
composed by ``make_adaptive_composition`` in ``zero_concentrated_divergence`` at the largest
``rho`` that OpenDP's ``make_zCDP_to_approxDP`` + ``make_fix_delta`` turn into at most
``epsilon`` at ``delta`` (the pure release's shares, of ``rho``), then converted by them; the
post-processing uses the Gaussian's variance.  The joint hierarchy (``joint="tree"``) is pure
DP only.

**Privacy map.**  Sequential composition of the two queries: the first look's map plus the joint
release's, whose map does not depend on the marginals (the quantile encoding is 1-stable and
every order's candidates spend ``epsilon_main`` with the same selection budget), summed over the
rationals and rounded up; never above ``epsilon`` for one replacement.  At run time OpenDP's
compositor holds each query to its declared share (:doc:`/proofs/table_marginals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement
from opendp_wasserstein.combinators import make_approx_dp, rho_for_approx_dp
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_data_domain, check_metric, validate_data
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.core.parameters import check_delta, check_epsilon
from opendp_wasserstein.noise._source import PLACEMENT_STREAM, as_random_source
from opendp_wasserstein.tables.calibration import CALIBRATE_KINDS, calibrate, largest_remainder
from opendp_wasserstein.tables.copula import (
    CopulaSplits,
    copula_scale,
    copula_splits,
    correlate_axes,
    latent_correlations,
    make_copula_counts,
)
from opendp_wasserstein.tables.encoding import TableEncoding, category_boundaries
from opendp_wasserstein.tables.joint import make_order_adaptive_pmm
from opendp_wasserstein.tables.marginals import (
    MAX_LEVELS,
    QuantileMaps,
    TableMarginals,
    check_noise,
    column_plans,
    column_trees,
    make_quantile_encoding,
    make_table_marginals,
    noise_variance,
)
from opendp_wasserstein.tables.network import (
    Clique,
    NetworkCoding,
    fit_network,
    network_release,
    sample_network,
)
from opendp_wasserstein.tables.orders import ORDER_ALPHAS, order_family, uniform_weights
from opendp_wasserstein.tables.pairs import (
    WITHIN_KINDS,
    FirstLookNoise,
    PairCoding,
    combine_margins,
    make_pair_tree,
    pair_bins,
    pair_count_scale,
    pair_tables,
    sample_tree,
    tree_template,
)
from opendp_wasserstein.tables.quality import (
    QUALITY_WARNING,
    MarginalAgreement,
    agreement_counts,
    agreement_from_counts,
)

__all__ = [
    "StructuredOptions",
    "make_structured_synthesis",
    "make_structured_synthesis_zcdp",
    "DEFAULT_MARGINAL_SHARE",
    "JOINT_MIN_NEPS",
    "RELEASE_BLOCK_ROWS",
    "BlockModel",
    "release_blocks",
    "block_source",
    "draw_blocks",
]

#: the rows of one output block of the structured release (public; ``pairs`` and independent
#: columns): the rows are drawn, calibrated, scored and (on Dask) written block by block, each
#: block of its own random stream (:func:`release_blocks`, :func:`block_source`); a table of
#: fewer rows is one block, released as one sample
RELEASE_BLOCK_ROWS = 2**20

#: the share of epsilon the first look spends by default once ``n epsilon / k`` reaches
#: :data:`SHARE_FLAT_NEPS` (:func:`first_look_share`)
DEFAULT_MARGINAL_SHARE = 0.4

#: the first look's share at the switch to the pair tree (``n epsilon / k`` at
#: :data:`PAIRS_MIN_NEPS`), falling linearly in ``log(n epsilon / k)`` to
#: :data:`DEFAULT_MARGINAL_SHARE` at :data:`SHARE_FLAT_NEPS` (:func:`first_look_share`)
SWITCH_MARGINAL_SHARE = Fraction(3, 5)

#: from this ``n epsilon / k`` the first look's share is :data:`DEFAULT_MARGINAL_SHARE`
SHARE_FLAT_NEPS = 1600.0

#: the rule of the previous default (the joint hierarchy when ``n * epsilon / k`` reached it)
JOINT_MIN_NEPS = 1500.0

#: ``joint="auto"`` runs the pair tree when ``n * epsilon / k >= PAIRS_MIN_NEPS`` (``k``
#: columns), else independent columns.  Measured (``bench_tables_compare``, seeds 0-1): at
#: ``n eps / k`` of 195 (seattle-weather, eps 1) and 254 (credit, eps 1) the pair tree's 1-way
#: TVD was 1.15-1.65x the independent columns' (its first look has 40% of the budget), at 860
#: (txhousing) 0.96x with correlation error 0.22 against 0.26; the joint hierarchy lost to
#: the pair tree on 2-way TVD, correlations and models on diamonds and nyc-weather at eps 1, 4.
#: Re-measured (``bench_tables_switch``, 4 small tables, n eps / k 9-779): the pair tree's 1-way
#: TVD is worse at every point (1.03-1.80x), its 2-way TVD better from 150-300, correlations,
#: models and Gower W1 better from 40-80; kept at 400 (docs/tables_compare.rst)
PAIRS_MIN_NEPS = 400.0

#: under zCDP (a release with ``delta``), ``joint="auto"`` runs a joint release already from
#: this ``n * epsilon / k``: below :data:`PAIRS_MIN_NEPS` the network
#: (:data:`SMALL_JOINT_ZCDP`), its first look at :data:`SMALL_MARGINAL_SHARE` of the budget
#: (:func:`first_look_share`).  In zCDP the split costs the first look little (its noise's
#: standard deviation grows as ``1 / sqrt(share)``: 1.12x at 0.8) and the ``k - 1`` tables'
#: noise grows as ``sqrt(k - 1)``, not ``k - 1`` as under pure DP.  Measured (6 seeds at
#: ``(eps, 1e-9)``, eps 0.5, 1, 4, the 9 tables under 5,000 rows of ``bench_tables_compare``
#: and the held-out set, the network at share 0.8 against independent columns): from 195 up
#: (seattle-weather eps 1, salaries eps 4, ames eps 1, wage eps 1, births14 eps 4, credit eps 1)
#: no metric worse beyond 2 standard errors, 23 metric-cells better (seattle-weather eps 1
#: correlations 0.212 -> 0.126, model 0.195 -> 0.296); below, losses beyond 2 standard errors
#: appear: credit eps 0.5 (162) 1-way TVD 0.088 -> 0.094, mpg eps 0.5 (9); births14 (36, 73)
#: correlations 0.148 -> 0.164-0.169 (docs/tables_compare.rst, "Small tables with delta").
#: Pure DP keeps independent columns below :data:`PAIRS_MIN_NEPS`: every joint release
#: measured there lost the 1-way TVD beyond 2 standard errors
PAIRS_MIN_NEPS_ZCDP = 180.0

#: the joint release of ``joint="auto"`` under zCDP from :data:`PAIRS_MIN_NEPS_ZCDP` to
#: :data:`PAIRS_MIN_NEPS`
SMALL_JOINT_ZCDP = "network"

#: the first look's share below :data:`PAIRS_MIN_NEPS` (:func:`first_look_share`): a joint
#: release there runs with ``delta`` from :data:`PAIRS_MIN_NEPS_ZCDP`, or when forced
SMALL_MARGINAL_SHARE = Fraction(4, 5)

#: under zCDP (a release with ``delta``), ``joint="auto"`` runs the degree-2 network
#: (:mod:`~opendp_wasserstein.tables.network`) instead of the pair tree once ``n * epsilon / k``
#: reaches this.  Measured (``bench_tables_compare``, network against the pair tree, both at
#: ``(eps, 1e-9)``, 3-6 seeds): at ``n eps / k`` 779-43,000 the network wins or ties every metric
#: within noise (txhousing eps 1, 860: model 0.384 -> 0.460, correlations 0.174 -> 0.180;
#: diamonds eps 4: 2-way TVD 0.055 -> 0.044, correlations 0.082 -> 0.063, model 0.868 -> 0.932;
#: seattle-weather eps 4, 779: correlations 0.090 -> 0.076; credit eps 4 and nyc-weather tie);
#: at 430 (txhousing eps 0.5) it loses (correlations 0.186 -> 0.215, model 0.18 -> 0.05).  Pure
#: DP keeps the pair tree: there the network's results were mixed (txhousing eps 1: model 0.128
#: -> 0.287 but correlations 0.192 -> 0.212; diamonds eps 1: correlations 0.114 -> 0.134)
NETWORK_MIN_NEPS_ZCDP = 600.0

#: under pure DP, ``joint="auto"`` runs the degree-2 network (whose selection scores are then
#: penalised by their tables' expected noise,
#: :data:`~opendp_wasserstein.tables.network.NETWORK_NOISE_PENALTY`) instead of the pair tree
#: from :data:`PAIRS_MIN_NEPS` while ``n * epsilon / k`` is below this.  Measured
#: (``bench_tables_compare``, pure, network against pair tree, 3-6 seeds): txhousing at
#: ``n eps / k`` 430 and 860 (eps 0.5, 1): 2-way TVD 0.279 -> 0.245, 0.194 -> 0.164,
#: correlations 0.217 -> 0.169, 0.192 -> 0.134, model -0.16 -> 0.06, 0.13 -> 0.28; above, the
#: pair tree stays: credit at 1296 (eps 4) correlations 0.093 -> 0.104 (model 0.606 -> 0.651),
#: txhousing at 3440 (eps 4) 2-way TVD 0.111 -> 0.122, model 0.489 -> 0.420
NETWORK_MAX_NEPS_PURE = 1000.0

#: the share of the joint release's budget spent on its selection
DEFAULT_JOINT_SELECT_SHARE = 0.1

#: the share of the pair tree's budget spent on choosing its pairs (MST spends a third of the
#: whole budget on it)
PAIR_SELECT_SHARE = Fraction(1, 3)

#: the values of :attr:`StructuredOptions.joint`
JOINT_KINDS = ("auto", "tree", "always", "pairs", "network", "copula", "never")

#: the first look's share of the budget before the copula's pair counts (``joint="copula"``,
#: :mod:`~opendp_wasserstein.tables.copula`; :func:`first_look_share`)
COPULA_MARGINAL_SHARE = Fraction(9, 10)

#: under pure DP, ``joint="auto"`` runs the Gaussian copula of pair counts
#: (:mod:`~opendp_wasserstein.tables.copula`: the numeric columns, the posterior median, the
#: first look at :data:`COPULA_MARGINAL_SHARE`) from this ``n * epsilon / k`` up to
#: :data:`PAIRS_MIN_NEPS`; independent columns below.  Measured (``bench_tables_compare
#: --ours-only --variant``, 6 seeds, eps 0.5, 1, 4, the small compare and held-out tables, the
#: cells of independent columns; docs/tables_compare.rst, "A Gaussian copula of pair counts"):
#: from 100 the metric-cells worse than the independent-marginals baseline fall 15 -> 13
#: (compare) and 7 -> 6 (held-out), 14 metric-cells better beyond 2 standard errors
#: (correlations ames eps 1 0.410 -> 0.173, salaries eps 4 0.565 -> 0.134, cars eps 4 0.643 ->
#: 0.482), three worse, each still better than the baseline (1-way TVD cars eps 4 0.134 ->
#: 0.141, seattle-weather eps 1 0.084 -> 0.093; 2-way TVD credit eps 1 0.116 -> 0.125); below
#: 100 the copula's counts are too noisy to win and its share costs the 1-way TVD (mpg eps 1,
#: 19: 1-way, 2-way TVD and Gower W1 worse).  With delta: :data:`COPULA_MIN_NEPS_ZCDP`
COPULA_MIN_NEPS = 100.0

#: under zCDP (a release with ``delta``), ``joint="auto"`` runs the Gaussian copula of pair
#: counts (discrete Gaussian counts, ``l2`` sensitivity ``sqrt(P)``; the first look at
#: :data:`COPULA_MARGINAL_SHARE`) from this ``n * epsilon / k`` up to
#: :data:`PAIRS_MIN_NEPS_ZCDP`; independent columns below.  Measured (``bench_tables_compare
#: --ours-only --variant``, eps 0.5, 1, 4 at delta 1e-9, the small compare tables at 6 seeds
#: and held-out at 3, against the committed independent release; docs/tables_compare.rst, "The
#: copula with delta"): from 100 the metric-cells worse than ``marginals:delta``'s mean fall 8
#: -> 4, none new, 8 better beyond 2 standard errors, none worse (correlations cars eps 4 0.643
#: -> 0.265, penguins eps 4 0.398 -> 0.223, ames eps 0.5 0.411 -> 0.212); share 0.95 gained
#: less (misses 8 -> 5); from 50 seattle-weather eps 0.5 (97) lost correlations 0.212 -> 0.253
#: and births14 eps 1 (73) 0.150 -> 0.225
COPULA_MIN_NEPS_ZCDP = 100.0

#: the columns that may take part in the copula (``StructuredOptions.copula_columns``): the
#: numeric ones (default) or all
COPULA_COLUMNS = ("numeric", "all")


@dataclass(frozen=True)
class StructuredOptions:
    """The public options of :func:`make_structured_synthesis`.

    :param marginal_share: the share of epsilon for the first look, in ``(0, 1)``; ``None``
        (default): the public rule of :func:`first_look_share`
    :param select_share: the share of the joint budget for the choice of candidate, in ``(0, 1)``
    :param calibrate: which of :data:`~opendp_wasserstein.tables.calibration.CALIBRATE_KINDS`
        to match to the DP marginals (empty: none)
    :param alphas: the family's greedy orders
        (:data:`~opendp_wasserstein.tables.orders.ORDER_ALPHAS`)
    :param discrete_first: add the discrete-first order to the family (default False: measured
        worse on the correlations of the numeric columns)
    :param quantile: encode the numeric axes by their DP CDFs
    :param joint: ``"auto"`` (the public rule of :func:`joint_kind`), ``"tree"`` (the joint
        hierarchy; ``"always"`` is the same), ``"pairs"`` (the tree of noisy 2-way marginals,
        :mod:`~opendp_wasserstein.tables.pairs`), ``"network"`` (the degree-2 network of noisy
        2- and 3-way tables, :mod:`~opendp_wasserstein.tables.network`), ``"copula"`` (the
        Gaussian copula of one noisy count per pair of columns, discrete Gaussian counts with
        ``delta``, :mod:`~opendp_wasserstein.tables.copula`, its first look at
        :data:`COPULA_MARGINAL_SHARE`; ``"auto"`` chooses it under pure DP from
        :data:`COPULA_MIN_NEPS` to :data:`PAIRS_MIN_NEPS`, with ``delta`` from
        :data:`COPULA_MIN_NEPS_ZCDP` to :data:`PAIRS_MIN_NEPS_ZCDP`) or ``"never"``
        (independent columns)
    :param placement: the joint release's placement within cells
    :param consistency: the joint release's post-processing
    :param marginal_levels: the most levels of a numeric column's first-look tree, 1 to
        :data:`~opendp_wasserstein.tables.marginals.MAX_LEVELS` (default: the most; the public
        rule of :func:`~opendp_wasserstein.tables.marginals.column_leaves` picks the levels from
        ``n epsilon / k`` within that)
    :param within: the pair tree's placement inside bins
        (:data:`~opendp_wasserstein.tables.pairs.WITHIN_KINDS`, default ``"latent"``; the
        network keeps its copula)
    :param combine: the pair tree's 1-way targets combine the first look with the margins of
        the released pair tables by inverse variance
        (:func:`~opendp_wasserstein.tables.pairs.combine_margins`; post-processing)
    :param copula_columns: the columns taking part in ``joint="copula"``
        (:data:`COPULA_COLUMNS`): ``"numeric"`` (default: ``P = k'(k'-1)/2`` counts over the
        ``k'`` numeric columns) or ``"all"``
    :param block_rows: the rows of one output block (public; default
        :data:`RELEASE_BLOCK_ROWS`): the pair tree's and the independent columns' rows are
        drawn and calibrated block by block (:func:`draw_blocks`), in memory and on Dask alike
    """

    marginal_share: float | None = None
    select_share: float = DEFAULT_JOINT_SELECT_SHARE
    calibrate: tuple[str, ...] = CALIBRATE_KINDS
    alphas: tuple[float, ...] = ORDER_ALPHAS
    discrete_first: bool = False
    quantile: bool = True
    joint: str = "auto"
    placement: str = "uniform"
    consistency: str = "least_squares"
    marginal_levels: int | None = None
    within: str = "latent"
    combine: bool = True
    block_rows: int = RELEASE_BLOCK_ROWS
    copula_columns: str = "numeric"

    def __post_init__(self) -> None:
        for name in ("marginal_share", "select_share"):
            v = getattr(self, name)
            if v is None and name == "marginal_share":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
                raise ValueError(f"{name} must be a number in (0, 1), got {v!r}")
        bad = [k for k in self.calibrate if k not in CALIBRATE_KINDS]
        if bad:
            raise ValueError(f"calibrate must be among {CALIBRATE_KINDS}, got {bad}")
        if self.joint not in JOINT_KINDS:
            raise ValueError(f"joint must be one of {JOINT_KINDS}, got {self.joint!r}")
        lv = self.marginal_levels
        if lv is not None and (
            isinstance(lv, bool) or not isinstance(lv, int) or not 1 <= lv <= MAX_LEVELS
        ):
            raise ValueError(
                f"marginal_levels must be None or an int in [1, {MAX_LEVELS}], got {lv!r}"
            )
        br = self.block_rows
        if isinstance(br, bool) or not isinstance(br, int) or br < 1:
            raise ValueError(f"block_rows must be a positive int, got {br!r}")
        if self.copula_columns not in COPULA_COLUMNS:
            raise ValueError(
                f"copula_columns must be one of {COPULA_COLUMNS}, got {self.copula_columns!r}"
            )
        if self.within not in WITHIN_KINDS:
            raise ValueError(f"within must be one of {WITHIN_KINDS}, got {self.within!r}")
        if not self.alphas and not self.discrete_first:
            raise ValueError("the order family is empty: give alphas or discrete_first=True")
        object.__setattr__(self, "calibrate", tuple(self.calibrate))
        object.__setattr__(self, "alphas", tuple(float(a) for a in self.alphas))


def fit_marginals(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    target: float,
    unit: int,
    max_levels: int = 3,
    noise: str = "laplace",
) -> tuple[float, Measurement]:
    """The first look at the largest budget (at most ``target``) whose certified map is at most
    ``target``: OpenDP's composition adds the levels' float maps rounding up, which can pass the
    budget by a few ulps, so the budget is lowered by a relative ``2^-52``, then twice that, and
    so on, until it fits (the certified map then falls short of ``target`` by a few ulps).
    ``noise="gaussian"``: the same in zCDP (``target`` a ``rho``)."""
    budget = target
    step = Fraction(1, 2**52)
    for _ in range(40):
        meas = make_table_marginals(input_domain, input_metric, enc, budget, max_levels, noise)
        if Fraction(meas.map(unit)) <= Fraction(target):
            return budget, meas
        budget = round_down(Fraction(target) * (1 - step))
        step *= 2
    raise ValueError(
        "epsilon is too small to represent the first look's budget"
    )  # pragma: no cover


def joint_kind(
    options: StructuredOptions, n: int, epsilon: float, columns: int, noise: str = "laplace"
) -> str:
    """Which joint release runs: ``"tree"``, ``"pairs"``, ``"network"``, ``"copula"`` or
    ``"independent"``; a function of public values only (``n``, ``epsilon``, the schema's
    columns, the noise: the discrete Gaussian of a release with ``delta``).  ``joint="auto"``:
    under pure DP independent columns below :data:`COPULA_MIN_NEPS` per column, the Gaussian
    copula of pair counts up to :data:`PAIRS_MIN_NEPS` (with fewer than two numeric columns it
    counts nothing: independent columns at the whole budget), then the network (its scores
    penalised by their tables' noise), then the pair tree from :data:`NETWORK_MAX_NEPS_PURE`;
    under zCDP (``noise="gaussian"``) independent columns below :data:`COPULA_MIN_NEPS_ZCDP`,
    the copula (discrete Gaussian counts) up to :data:`PAIRS_MIN_NEPS_ZCDP`, the network
    (:data:`SMALL_JOINT_ZCDP`) up to :data:`PAIRS_MIN_NEPS`, the pair tree, then the network
    from :data:`NETWORK_MIN_NEPS_ZCDP`.

    >>> o = StructuredOptions()
    >>> [joint_kind(o, n, 1.0, 2, "gaussian") for n in (199, 200, 359, 360, 799, 800, 1200)]
    ['independent', 'copula', 'copula', 'network', 'network', 'pairs', 'network']
    >>> [joint_kind(o, n, 1.0, 2) for n in (199, 200, 799, 800, 1999, 2000)]
    ['independent', 'copula', 'copula', 'network', 'network', 'pairs']
    """
    if options.joint == "never" or columns < 2:
        return "independent"
    if options.joint in ("tree", "always"):
        return "tree"
    if options.joint in ("pairs", "network", "copula"):
        return options.joint
    x = n * epsilon / max(1, columns)
    if check_noise(noise) == "gaussian":
        if x < COPULA_MIN_NEPS_ZCDP:
            return "independent"
        if x < PAIRS_MIN_NEPS_ZCDP:
            return "copula"
        if x < PAIRS_MIN_NEPS:
            return SMALL_JOINT_ZCDP
        return "network" if x >= NETWORK_MIN_NEPS_ZCDP else "pairs"
    if x < COPULA_MIN_NEPS:
        return "independent"
    if x < PAIRS_MIN_NEPS:
        return "copula"
    return "network" if x < NETWORK_MAX_NEPS_PURE else "pairs"


def first_look_share(
    options: StructuredOptions, n: int, epsilon: float, columns: int, noise: str = "laplace"
) -> Fraction:
    """The first look's share of the budget when a joint release follows; a function of public
    values only (``n``, ``epsilon``, the schema's columns, the noise): ``options.marginal_share``
    when given, else :data:`COPULA_MARGINAL_SHARE` before the Gaussian copula
    (:func:`joint_kind` ``"copula"``), else :data:`SWITCH_MARGINAL_SHARE` at the switch to the
    pair tree (``n epsilon / k``
    at :data:`PAIRS_MIN_NEPS`), falling linearly in ``log(n epsilon / k)`` to
    :data:`DEFAULT_MARGINAL_SHARE` at :data:`SHARE_FLAT_NEPS` and after, rounded down to a
    multiple of ``1/1000``.

    Just above the switch the pair tree's first look, at 40%, read every column more coarsely
    than the independent release below the switch: a step in the 1-way TVD.  Measured
    (``bench_tables_compare``, share 0.5 against 0.4): seattle-weather at epsilon 4 (``n
    epsilon / k`` 779, 8 seeds) 1-way TVD 0.059 -> 0.054 (the marginals 0.055), 2-way 0.223 ->
    0.219, Gower W1 0.043 -> 0.041, correlations 0.090 -> 0.088, model 0.414 -> 0.402 (within
    noise); txhousing at epsilon 1 (860, 3 seeds) 1-way 0.052 -> 0.041, 2-way 0.209 -> 0.202,
    correlations 0.196 -> 0.192; at credit's 1296 share 0.5 and 0.6 lost correlations and models
    (0.086 -> 0.094, 0.100; 0.589 -> 0.577, 0.549), so the share is back to 0.4 by 1600.
    The rule against 0.4 (load 9-12): seattle-weather at epsilon 4 (6 seeds) 1-way 0.056 ->
    0.053, correlations 0.095 -> 0.090, model 0.409 -> 0.379 (a loss, 1.7 standard errors);
    credit at epsilon 4 (1296: 0.43) unchanged within noise; txhousing at epsilon 0.5 (430: 0.59,
    3 seeds) 1-way 0.117 -> 0.098, at epsilon 1 (860: 0.49, 8 seeds) 0.049 -> 0.042, 2-way,
    correlations and Gower W1 within noise, model 0.05 +- 0.12 -> 0.17 +- 0.08; nyc-weather at
    epsilon 0.5 (1045: 0.46, 3 seeds) 1-way 0.063 -> 0.059, 2-way 0.141 -> 0.137, correlations
    0.088 -> 0.095 and model 0.732 -> 0.713 (losses within 1-2 standard errors).

    Below the switch (a joint release there other than the copula: with ``delta`` from
    :data:`PAIRS_MIN_NEPS_ZCDP`, or forced by ``joint="pairs"`` / ``"network"``) the share is
    :data:`SMALL_MARGINAL_SHARE`:
    the joint tables are noisy there and the 1-way marginals are what the independent release
    does best (measured: docs/tables_compare.rst, "Small tables with delta").

    >>> o = StructuredOptions()
    >>> [float(first_look_share(o, n, 1.0, 1)) for n in (400, 800, 1600, 10**6)]
    [0.6, 0.5, 0.4, 0.4]
    >>> [float(first_look_share(o, n, 1.0, 1)) for n in (16, 32, 399)]
    [0.8, 0.8, 0.8]
    >>> [float(first_look_share(o, 399, 1.0, 2, noise)) for noise in ("laplace", "gaussian")]
    [0.9, 0.8]
    >>> float(first_look_share(StructuredOptions(marginal_share=0.25), 400, 1.0, 1))
    0.25
    """
    if options.marginal_share is not None:
        return Fraction(options.marginal_share)
    if joint_kind(options, n, epsilon, columns, noise) == "copula":
        return COPULA_MARGINAL_SHARE
    x = n * epsilon / max(1, columns)
    if x < PAIRS_MIN_NEPS:  # a joint release below the switch: with delta, or forced
        return SMALL_MARGINAL_SHARE
    t = float(np.clip(np.log(SHARE_FLAT_NEPS / x) / np.log(SHARE_FLAT_NEPS / PAIRS_MIN_NEPS), 0, 1))
    lo = Fraction(DEFAULT_MARGINAL_SHARE).limit_denominator(1000)
    return lo + Fraction(int(t * 1000), 1000) * (SWITCH_MARGINAL_SHARE - lo)


def uses_joint(
    options: StructuredOptions, n: int, epsilon: float, columns: int, noise: str = "laplace"
) -> bool:
    """Whether a joint release (tree, pairs, network or the copula) runs: a function of public
    values only (``noise="gaussian"``: a release with ``delta``, :func:`joint_kind`; the copula
    counts nothing when fewer than two numeric columns take part)."""
    return joint_kind(options, n, epsilon, columns, noise) != "independent"


def _pair_budgets(eps: float, marg_map: Any, shrink: Fraction = Fraction(0)) -> tuple[float, float]:
    """``(epsilon_select, epsilon_counts)`` of the pair tree: the rest of the budget after the
    first look, less a relative ``shrink``."""
    rest = (Fraction(eps) - Fraction(marg_map)) * (1 - shrink)
    e_sel = round_down(rest * PAIR_SELECT_SHARE)
    return e_sel, round_down(rest - Fraction(e_sel))


def fit_pairs(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    n: int,
    eps: float,
    marg_map: Any,
    unit: int,
    noise: str = "laplace",
) -> tuple[float, float, int, Measurement]:
    """The pair tree's budgets, bins and template at the largest rest of the budget whose exact
    sum with the first look's map is at most ``eps``: the rest itself, then lowered by a relative
    ``2^-52``, twice that, and so on (the float rounding of its ``2 (k - 1)`` maps).
    ``noise="gaussian"``: the same in zCDP (``eps`` and the maps are ``rho``)."""
    shrink = Fraction(0)
    k = len(column_plans(enc))
    for _ in range(60):
        e_sel, e_cnt = _pair_budgets(eps, marg_map, shrink)
        bins = pair_bins(n, e_cnt, k, noise)
        template = tree_template(input_domain, input_metric, enc, n, bins, e_sel, e_cnt, noise)
        if Fraction(marg_map) + Fraction(template.map(unit)) <= Fraction(eps):
            return e_sel, e_cnt, bins, template
        shrink = Fraction(1, 2**52) if shrink == 0 else 2 * shrink
    raise ValueError("epsilon is too small to represent the pair tree's budget")  # pragma: no cover


def _budgets(
    eps: float, options: StructuredOptions, joint: bool, marg_map: Any
) -> tuple[float, float]:
    """``(eps_select, eps_main)`` of the joint release from what the first look certified."""
    rest = round_down(Fraction(eps) - Fraction(marg_map))
    eps_main = round_down(Fraction(rest) * (1 - Fraction(options.select_share)))
    eps_sel = round_down(Fraction(rest) - Fraction(eps_main))
    return eps_sel, eps_main


def _joint(
    input_domain: Domain,
    input_metric: Metric,
    maps: QuantileMaps | None,
    orders: Sequence[Any],
    eps_sel: float,
    eps_main: float,
    options: StructuredOptions,
) -> Measurement:
    m = make_order_adaptive_pmm(
        input_domain,
        input_metric,
        eps_sel,
        eps_main,
        orders,
        placement=options.placement,
        consistency=options.consistency,
    )
    if maps is None:
        return m
    return make_quantile_encoding(input_domain, input_metric, maps) >> m


def first_look_noise(
    enc: TableEncoding, n: int, epsilon: float, max_levels: int, noise: str = "laplace"
) -> FirstLookNoise:
    """The noise of the first look's coarsest level per column (public: the schema, ``n``, the
    first look's budget, levels and noise; :class:`~opendp_wasserstein.tables.pairs.FirstLookNoise`,
    variances :func:`~opendp_wasserstein.tables.marginals.noise_variance`)."""
    nodes, var, miss = [], [], []
    for p, _leaves, sizes, scales in column_trees(enc, n, epsilon, max_levels, noise):
        nodes.append(int(sizes[-1]))
        var.append(noise_variance(scales[-1], noise))
        v = sum(noise_variance(sc, noise) for sc in scales) / len(scales) ** 2
        miss.append(v if p.missing_axis is not None else 0.0)
    return FirstLookNoise(tuple(nodes), tuple(var), tuple(miss))


def first_primes(k: int) -> np.ndarray:
    """The first ``k`` primes (a sieve of Eratosthenes, vectorised).

    >>> first_primes(6).tolist()
    [2, 3, 5, 7, 11, 13]
    """
    if k < 1:
        return np.zeros(0, dtype=np.int64)
    top = max(16, int(k * (np.log(k + 1) + np.log(np.log(k + 2)) + 2)))
    sieve = np.ones(top, dtype=bool)
    sieve[:2] = False
    for q in range(2, int(top**0.5) + 1):  # a loop over the sieve's primes, not over points
        if sieve[q]:
            sieve[q * q :: q] = False
    return np.flatnonzero(sieve)[:k].astype(np.int64)


def halton_points(n: int, d: int, rng: Any) -> np.ndarray:
    """``n`` points of the randomly scrambled Halton sequence in ``[0, 1)^d`` (as
    ``scipy.stats.qmc.Halton(d, scramble=True)``, without the 1-2 s import of ``scipy.stats``):
    axis ``j`` is the radical inverse of the row index in the ``j``-th prime base, each digit
    position's digits permuted at random, plus a uniform draw inside the finest cell.  Every
    axis alone is uniform; any two axes fill the square far more evenly than independent
    uniforms (their sample rank correlation is a small fraction of independent ones').  A loop
    over axes and digit positions (``log n`` per axis), vectorised over the points.

    :param n: the number of points
    :param d: the dimension
    :param rng: a :class:`~opendp_wasserstein.noise._source.RandomSource`
    :return: an ``(n, d)`` float array in ``[0, 1)``
    """
    out = np.zeros((n, d))
    index = np.arange(n, dtype=np.int64)
    for j, base in enumerate(first_primes(d).tolist()):
        i, scale = index.copy(), 1.0 / base
        while True:
            out[:, j] += scale * rng.permutation(base)[i % base]
            i //= base
            if scale * base <= 1.0 / max(n, 1) and not i.any():
                break
            scale /= base
        out[:, j] += scale * rng.uniform(n)
    return np.minimum(out, np.nextafter(1.0, 0.0))


def _codes_by_rank(u: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Codes ``0, 1, ...`` laid out along the ranks of ``u``, code ``c`` ``counts[c]`` times."""
    codes = np.empty(len(u), dtype=np.int64)
    codes[np.argsort(u, kind="stable")] = np.repeat(np.arange(len(counts)), counts)
    return codes


def independent_join(
    marginals: TableMarginals,
    enc: TableEncoding,
    n: int,
    rng: Any,
    copula_axes: Sequence[int] = (),
    copula_corr: np.ndarray | None = None,
) -> np.ndarray:
    """``n`` rows whose columns are independent with the DP marginals (post-processing).

    The rows are scrambled Halton points (:func:`halton_points`) rather than independent
    uniforms: each column is still released exactly (a categorical column's and an
    is-missing indicator's codes laid out along the ranks of their axis at the target counts
    of :func:`~opendp_wasserstein.tables.calibration.calibrate`, every numeric column rank
    matched by it), but the sample's spurious dependence between columns is a fraction of
    independent draws' (its rank correlations about ``0.02`` against ``0.06`` at 187 rows
    and 10 axes, ``0.002`` against ``0.02`` at 1,169 rows and 6): an independent release's
    pairwise tables and correlations are then the product of its marginals up to far less
    sampling noise.  The rows are returned in a random order."""
    u = halton_points(n, enc.dimension, rng)
    if copula_corr is not None:
        correlate_axes(u, copula_axes, copula_corr)
    for p, freq, miss in zip(marginals.plans, marginals.masses, marginals.missing, strict=True):
        if p.kind == "category":
            b = category_boundaries(p.cells)
            codes = _codes_by_rank(u[:, p.value_axis], largest_remainder(freq, n))
            u[:, p.value_axis] = ((b[:-1] + b[1:]) / 2)[codes]
        elif p.missing_axis is not None:
            ma = p.axes[p.missing_axis]
            codes = _codes_by_rank(u[:, ma], largest_remainder(np.array([1.0 - miss, miss]), n))
            u[:, ma] = np.where(codes == 1, 0.75, 0.25)
    return calibrate(u[rng.permutation(n)], enc, marginals, rng)


def make_structured_synthesis(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon: float,
    options: StructuredOptions | None = None,
    delta: float | None = None,
) -> Measurement:
    r"""Construct the structured release of a table's encoded points (module docstring).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, size=n, T=float)``: the
        encoded points (:func:`~opendp_wasserstein.tables.make_table_encoding`), public size
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param enc: the table's encoding (public: the schema)
    :param epsilon: the budget per replacement
    :param options: :class:`StructuredOptions` (default: the defaults)
    :param delta: ``None`` (default: pure DP, discrete Laplace) or a ``delta`` in ``(0, 1)``:
        the zCDP release of :func:`make_structured_synthesis_zcdp` at ``rho =
        rho_for_approx_dp(epsilon, delta)`` restated by OpenDP's ``make_zCDP_to_approxDP`` and
        ``make_fix_delta`` (:func:`~opendp_wasserstein.combinators.make_approx_dp`)
    :return: a Measurement releasing ``(n, D)`` encoded points of ``enc``; map at most
        ``epsilon`` per replacement (``max_divergence``), or ``(epsilon', delta)`` with
        ``epsilon' <= epsilon`` (``approximate(max_divergence)``)
    """
    if delta is None:
        return _make_structured(input_domain, input_metric, enc, epsilon, options, "laplace", None)
    meas, _rho = structured_zcdp(input_domain, input_metric, enc, epsilon, delta, options)
    return make_approx_dp(meas, delta)


def structured_zcdp(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon: float,
    delta: float,
    options: StructuredOptions | None = None,
) -> tuple[Measurement, float]:
    """The zCDP release behind ``make_structured_synthesis(..., delta=delta)`` and its ``rho``:
    :func:`make_structured_synthesis_zcdp` at the largest ``rho`` whose conversion at ``delta``
    is at most ``epsilon`` (:func:`~opendp_wasserstein.combinators.rho_for_approx_dp`), with the
    public rules (:func:`joint_kind`) read at ``epsilon``."""
    eps = check_epsilon(epsilon)
    rho = rho_for_approx_dp(eps, check_delta(delta))
    meas = _make_structured(input_domain, input_metric, enc, rho, options, "gaussian", eps)
    return meas, rho


def make_structured_synthesis_zcdp(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    rho: float,
    options: StructuredOptions | None = None,
    rule_epsilon: float | None = None,
) -> Measurement:
    r"""The structured release in zCDP: the same chain as :func:`make_structured_synthesis` with
    discrete Gaussian noise (OpenDP's ``then_gaussian``) on the first look's levels and the pair
    (or network) tables, the choices by OpenDP's noisy max in zCDP
    (:func:`~opendp_wasserstein.tables.pairs.zcdp_selection`), composed by
    ``make_adaptive_composition`` in ``zero_concentrated_divergence``; the shares of ``rho``
    are the pure release's shares of epsilon.  ``joint="tree"`` is refused (the joint hierarchy
    is pure DP here).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param rho: the zCDP budget per replacement
    :param rule_epsilon: the epsilon of the public rules (:func:`joint_kind`; default
        ``sqrt(8 rho)``); :func:`structured_zcdp` passes the target ``epsilon``
    :return: a Measurement into ``zero_concentrated_divergence()``; map at most ``rho`` per
        replacement
    """
    r = check_epsilon(rho, "rho")
    rule = float(np.sqrt(8.0 * r)) if rule_epsilon is None else check_epsilon(rule_epsilon)
    return _make_structured(input_domain, input_metric, enc, r, options, "gaussian", rule)


def _make_structured(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon: float,
    options: StructuredOptions | None,
    noise: str,
    rule_epsilon: float | None,
) -> Measurement:
    """:func:`make_structured_synthesis` (``noise="laplace"``, budget ``epsilon``) or
    :func:`make_structured_synthesis_zcdp` (``"gaussian"``, ``epsilon`` a ``rho``, the public
    rules read at ``rule_epsilon``)."""
    assert_features("contrib")
    opts = StructuredOptions() if options is None else options
    if not isinstance(opts, StructuredOptions):
        raise TypeError("options must be a StructuredOptions")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_structured_synthesis needs a sized input_domain (a public n)")
    kind = check_metric(input_metric, n)
    eps = check_epsilon(epsilon)
    gauss = check_noise(noise) == "gaussian"
    measure = dp.zero_concentrated_divergence() if gauss else dp.max_divergence()
    if d != enc.dimension:
        raise ValueError(f"input_domain has {d} columns, the encoding {enc.dimension}")
    plans = column_plans(enc)
    rule_eps = eps if rule_epsilon is None else rule_epsilon
    kind_joint = joint_kind(opts, n, rule_eps, len(plans), noise)
    if gauss and kind_joint == "tree":
        raise ValueError(
            "delta: joint='tree' (the joint hierarchy) is pure DP only: leave delta unset, or "
            "use joint='auto', 'pairs', 'network' or 'never'"
        )
    # the copula's columns (public: the schema); with fewer than two, nothing to count
    allowed = copula_allowed(plans, opts) if kind_joint == "copula" else ()
    joint = kind_joint != "independent" and (kind_joint != "copula" or len(allowed) >= 2)
    unit = 2 if kind == "symmetric" else 1
    share = first_look_share(opts, n, rule_eps, len(plans), noise)
    target = round_down(Fraction(eps) * share) if joint else eps
    levels = MAX_LEVELS if opts.marginal_levels is None else opts.marginal_levels
    marg_eps, m_marg = fit_marginals(input_domain, input_metric, enc, target, unit, levels, noise)
    marg_map = m_marg.map(unit)
    template: Measurement | None = None
    cop_scale = 0.0
    if kind_joint == "tree":
        eps_sel, eps_main = _budgets(eps, opts, joint, marg_map)
        # the joint release's map does not depend on what the first look releases: a template
        # built from the schema alone certifies it (tests check it against released ones)
        orders = order_family(plans, uniform_weights(plans), None, opts.alphas, opts.discrete_first)
        template = _joint(input_domain, input_metric, None, orders, eps_sel, eps_main, opts)
    elif kind_joint == "pairs":
        eps_sel, eps_main, bins, template = fit_pairs(
            input_domain, input_metric, enc, n, eps, marg_map, unit, noise
        )
    elif kind_joint == "network":  # the pair tree's split, fitted to the network's own map
        eps_sel, eps_main, template = fit_network(
            input_domain, input_metric, enc, eps, marg_map, unit, PAIR_SELECT_SHARE, noise
        )
    elif kind_joint == "copula" and joint:
        cop_scale, template = fit_copula(
            input_domain, input_metric, eps, marg_map, unit, plans, allowed, noise
        )
    d_mids = [marg_map] if template is None else [marg_map, template.map(unit)]
    comp = dp.c.make_adaptive_composition(input_domain, input_metric, measure, unit, d_mids)

    def function(x: np.ndarray) -> np.ndarray:
        x = validate_data(x, d, n, nan=False)
        queryable = comp(x)
        release = queryable(m_marg)
        marginals = TableMarginals.from_release(enc, release, n, marg_eps, levels, noise)
        rng = as_random_source().derive(PLACEMENT_STREAM + 16)
        info: dict[str, Any] = {
            "structured": True,
            "joint": joint,
            "joint_kind": kind_joint,
        }
        if gauss:
            info |= {"noise": "gaussian", "rho_marginals": float(marg_map)}
        else:
            info["epsilon_marginals"] = float(marg_map)
        if kind_joint == "copula":
            splits = copula_splits(marginals, allowed)
            corr = None
            if splits.pairs and template is not None:
                most = len(allowed) * (len(allowed) - 1) // 2
                scale = copula_runtime_scale(splits.pairs, most, cop_scale, noise)
                noisy = queryable(
                    make_copula_counts(input_domain, input_metric, splits, scale, noise)
                )
                corr = latent_correlations(np.asarray(noisy), splits, n, scale, noise=noise)
            model = BlockModel(enc, marginals, opts, copula_axes=splits.axes, copula_corr=corr)
            points, _ = draw_blocks(model, n, rng)
            info |= {"depth": 0, "visited_nodes": 0, "scales": ()}
            info["copula_pairs"] = splits.pairs
            runtime.record(info)
            return points
        if not joint:
            points, _ = draw_blocks(BlockModel(enc, marginals, opts), n, rng)
            info |= {"depth": 0, "visited_nodes": 0, "scales": ()}
            runtime.record(info)
            return points
        with runtime.diagnostics() as inner:
            if kind_joint == "pairs":
                coding = PairCoding.from_marginals(marginals, bins, enc)
                edges, tables, pattern = queryable(
                    make_pair_tree(
                        input_domain, input_metric, coding, marginals, eps_sel, eps_main, noise
                    )
                )
                model = pair_model(
                    enc,
                    n,
                    marg_eps,
                    levels,
                    eps_main,
                    coding,
                    marginals,
                    edges,
                    tables,
                    opts,
                    noise,
                    pattern,
                )
                blocked = draw_blocks(model, n, rng)
                info |= {"depth": 0, "visited_nodes": 0, "scales": (), "pair_bins": bins}
                orders: Sequence[Any] = ()
            elif kind_joint == "network":
                model = network_model(
                    input_domain,
                    input_metric,
                    queryable,
                    enc,
                    marginals,
                    n,
                    marg_eps,
                    levels,
                    eps_sel,
                    eps_main,
                    opts,
                    noise,
                )
                blocked = draw_blocks(model, n, rng)
                info |= {"depth": 0, "visited_nodes": 0, "scales": ()}
                orders = ()
            else:
                maps = QuantileMaps.from_marginals(marginals) if opts.quantile else None
                orders = order_family(
                    plans, marginals.gini(), marginals.missing, opts.alphas, opts.discrete_first
                )
                m_joint = _joint(input_domain, input_metric, maps, orders, eps_sel, eps_main, opts)
                y = np.asarray(queryable(m_joint), dtype=np.float64)
                if maps is not None:
                    y = maps.inverse(y)
        if kind_joint in ("pairs", "network"):
            points, counts = blocked
            assert counts is not None  # the pair tree's and the network's blocks are scored
            assert model.coding is not None
            quality = quality_info(
                agreement_from_counts(counts, model.marginals, model.coding.edges)
            )
        else:
            points, quality = finish(y, enc, marginals, rng, opts)
        for r in inner:
            info |= r
        if orders:
            o = orders[int(info.get("order_index", 0))]
            info["order_axes"] = o.axes[: int(info.get("depth", 0))]
        info |= quality
        runtime.record(info)
        return points

    def privacy_map(d_in: Any) -> float:
        total = Fraction(m_marg.map(d_in))
        if template is not None:
            total += Fraction(template.map(d_in))
        return round_up(total)

    return make_measurement(input_domain, input_metric, measure, function, privacy_map)


def copula_allowed(plans: Sequence[Any], opts: StructuredOptions) -> tuple[int, ...]:
    """The columns that may take part in the copula (public: the schema and the options)."""
    if opts.copula_columns == "numeric":
        return tuple(c for c, p in enumerate(plans) if p.kind == "numeric")
    return tuple(range(len(plans)))


def copula_runtime_scale(
    pairs: int, most: int, template_scale: float, noise: str = "laplace"
) -> float:
    """The counts' scale at ``pairs`` of the template's ``most`` pairs: the template's scale
    times ``pairs / most`` (``noise="gaussian"``: ``sigma`` times ``sqrt(pairs / most)``, the
    map ``P / (2 sigma^2)`` unchanged), raised by a relative ``2^-40`` and rounded up, so that
    OpenDP's float map stays below the template's (the declared one)."""
    if check_noise(noise) == "gaussian":
        return sqrt_up(
            Fraction(template_scale) ** 2 * Fraction(pairs, most) * (1 + Fraction(1, 2**40))
        )
    return round_up(Fraction(template_scale) * Fraction(pairs, most) * (1 + Fraction(1, 2**40)))


def fit_copula(
    input_domain: Domain,
    input_metric: Metric,
    eps: float,
    marg_map: Any,
    unit: int,
    plans: Sequence[Any],
    allowed: Sequence[int],
    noise: str = "laplace",
) -> tuple[float, Measurement | None]:
    """The copula counts' scale and template at the most pairs (``allowed``: the columns that may
    take part; the splits from the schema alone: the map does not depend on them): the rest of
    the budget after the first look, lowered by a relative ``2^-52``, twice that, and so on,
    until the exact sum of the maps is at most ``eps``; ``(0.0, None)`` with fewer than two
    columns.  The release counts at most these pairs (:func:`copula_runtime_scale`).
    ``noise="gaussian"``: the same in zCDP (``eps`` and the maps are ``rho``, the discrete
    Gaussian's ``sigma`` of :func:`~opendp_wasserstein.tables.copula.copula_scale`)."""
    k = len(allowed)
    if k < 2:
        return 0.0, None
    splits = CopulaSplits(
        tuple(allowed),
        tuple(plans[c].value_axis for c in allowed),
        (0.5,) * k,
        tuple(
            -1 if plans[c].missing_axis is None else plans[c].axes[plans[c].missing_axis]
            for c in allowed
        ),
        (0.5,) * k,
        (1.0,) * k,
    )
    rest = Fraction(eps) - Fraction(marg_map)
    step = Fraction(0)
    for _ in range(60):
        budget = round_down(rest * (1 - step))
        scale = copula_scale(splits.pairs, budget, noise)
        t = make_copula_counts(input_domain, input_metric, splits, scale, noise)
        if Fraction(marg_map) + Fraction(t.map(unit)) <= Fraction(eps):
            return scale, t
        step = Fraction(1, 2**52) if step == 0 else 2 * step
    raise ValueError("epsilon is too small to represent the copula's budget")  # pragma: no cover


def pair_model(
    enc: TableEncoding,
    n: int,
    marg_eps: float,
    levels: int,
    eps_counts: float,
    coding: PairCoding,
    marginals: TableMarginals,
    edges: Sequence[tuple[int, int]],
    tables: Sequence[np.ndarray],
    opts: StructuredOptions,
    noise: str = "laplace",
    pattern: np.ndarray | None = None,
) -> BlockModel:
    """The pair tree's model (in memory and on Dask): the first look combined with the
    released tables' margins (``opts.combine``, with the variances of ``noise``), the edges,
    their tables and the released missingness ``pattern``; :meth:`BlockModel.draw` samples rows
    along the tree."""
    scale = pair_count_scale(pair_tables(coding, noise), eps_counts, noise)
    if opts.combine:
        first = first_look_noise(enc, n, marg_eps, levels, noise)
        marginals = combine_margins(
            coding, marginals, list(edges), list(tables), scale, first, noise
        )
    return BlockModel(
        enc,
        marginals,
        opts,
        coding,
        tuple(edges),
        tuple(np.asarray(t) for t in tables),
        pattern,
        # the Laplace scale of the tables' noise variance (pair_bins' rule): sigma / sqrt 2
        scale=float(scale) / (float(np.sqrt(2.0)) if check_noise(noise) == "gaussian" else 1.0),
    )


def network_model(
    input_domain: Domain,
    input_metric: Metric,
    queryable: Any,
    enc: TableEncoding,
    marginals: TableMarginals,
    n: int,
    marg_eps: float,
    levels: int,
    eps_select: float,
    eps_counts: float,
    opts: StructuredOptions,
    noise: str = "laplace",
) -> BlockModel:
    """The network's model (in memory; on Dask ``queryable`` answers with the driver's release
    of the summed statistics): its query
    (:func:`~opendp_wasserstein.tables.network.network_release`: the cliques, their noisy
    tables, the pattern, the first look combined with the 2-way tables' margins when
    ``opts.combine``); :meth:`BlockModel.draw` samples rows through the network."""
    look = first_look_noise(enc, n, marg_eps, levels, noise) if opts.combine else None
    coding, cliques, tables, pattern, targets, lam = network_release(
        input_domain,
        input_metric,
        queryable,
        marginals,
        n,
        eps_select,
        eps_counts,
        look,
        noise,
        enc,
    )
    return BlockModel(
        enc,
        targets,
        opts,
        coding.fine,
        tables=tuple(np.asarray(t) for t in tables),
        pattern=pattern,
        network=coding,
        cliques=tuple(cliques),
        lam=float(lam),
    )


@dataclass(frozen=True)
class BlockModel:
    """What the structured release draws its rows from, after the noise (DP releases and
    public values only; picklable, sent to the Dask workers): the encoding, the 1-way targets,
    the options and, for the pair tree, its coding, edges, noisy tables and noisy missingness
    pattern (``coding=None``: independent columns, :func:`independent_join`).

    :param enc: the encoding
    :param marginals: the 1-way targets (the first look, combined for the pair tree)
    :param opts: the options (``within``, ``calibrate``)
    :param coding: the pair tree's coding, or ``None``
    :param edges: the tree's edges
    :param tables: the edges' noisy tables
    :param pattern: the noisy missingness pattern counts, or ``None``
    :param network: the network's coding (``joint="network"``: rows drawn by
        :func:`~opendp_wasserstein.tables.network.sample_network`; ``coding`` is then its fine
        coding), or ``None``
    :param cliques: the network's cliques (``tables`` their noisy tables)
    :param lam: the network's shrinkage weight
    :param scale: the Laplace scale of the pair tables' noise variance (public; the floor of
        :func:`~opendp_wasserstein.tables.pairs.sample_tree`'s conditional rows)
    """

    enc: TableEncoding
    marginals: TableMarginals
    opts: StructuredOptions
    coding: PairCoding | None = None
    edges: tuple[tuple[int, int], ...] = ()
    tables: tuple[np.ndarray, ...] = ()
    pattern: np.ndarray | None = None
    network: NetworkCoding | None = None
    cliques: tuple[Clique, ...] = ()
    lam: float = 0.0
    scale: float = 0.0
    copula_axes: tuple[int, ...] = ()
    copula_corr: np.ndarray | None = None

    def draw(self, m: int, rng: Any) -> tuple[np.ndarray, list[np.ndarray] | None]:
        """``m`` encoded rows from ``rng`` and, for the pair tree and the network, the quality
        figure's counts
        of the rows before calibration (:func:`~opendp_wasserstein.tables.quality.
        agreement_counts`), then the rows calibrated to the targets at ``m`` rows
        (largest remainder of ``m``, quantiles at ``(i + 1/2) / m``)."""
        if self.coding is None:
            return (
                independent_join(
                    self.marginals, self.enc, m, rng, self.copula_axes, self.copula_corr
                ),
                None,
            )
        if self.network is not None:
            y = sample_network(
                self.network,
                self.marginals,
                list(self.cliques),
                list(self.tables),
                m,
                rng,
                self.lam,
                self.pattern,
            )
        else:
            y = self._tree(m, rng)
        counts = agreement_counts(y, self.enc, self.marginals, self.coding.edges)
        if self.opts.calibrate:  # the draw is read no more: calibrated in place
            y = calibrate(y, self.enc, self.marginals, rng, self.opts.calibrate, copy=False)
        return y, counts

    def _tree(self, m: int, rng: Any) -> np.ndarray:
        assert self.coding is not None
        return sample_tree(
            self.coding,
            self.marginals,
            list(self.edges),
            list(self.tables),
            m,
            rng,
            self.opts.within,
            self.pattern,
            self.scale,
        )


def release_blocks(n: int, rows: int = RELEASE_BLOCK_ROWS) -> list[int]:
    """The sizes of the output blocks of ``n`` rows (public): ``rows`` each, the last the rest.

    >>> release_blocks(5, 2), release_blocks(4, 2), release_blocks(3, 8)
    ([2, 2, 1], [2, 2], [3])
    """
    full, rest = divmod(int(n), int(rows))
    return [int(rows)] * full + ([rest] if rest else [])


def block_source(rng: Any, b: int) -> Any:
    """Block ``b``'s random stream: block 0 draws from ``rng`` itself (so a table of one block
    is released as one sample from ``rng``), block ``b >= 1`` from ``rng.derive(b)``, an
    independent stream (secure stays secure)."""
    return rng if b == 0 else rng.derive(b)


def draw_blocks(model: BlockModel, n: int, rng: Any) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """The ``n`` rows of the release, block by block (:func:`release_blocks` of
    ``model.opts.block_rows``, :func:`block_source`), concatenated, and the quality figure's
    counts summed over the blocks (the pair tree; ``None`` for independent columns).  The Dask
    release draws the same blocks from the same streams on its workers."""
    pieces, total = [], None
    for b, m in enumerate(release_blocks(n, model.opts.block_rows)):  # blocks (public)
        y, counts = model.draw(m, block_source(rng, b))
        pieces.append(y)
        if counts is not None:
            total = counts if total is None else [a + c for a, c in zip(total, counts, strict=True)]
    return (pieces[0] if len(pieces) == 1 else np.concatenate(pieces)), total


def quality_info(agreement: MarginalAgreement) -> dict[str, Any]:
    """The report's quality fields of the agreement figure."""
    return {
        "quality": agreement.mean,
        "quality_columns": dict(zip(agreement.columns, agreement.tvd, strict=True)),
        "quality_worst": agreement.worst(),
        "quality_poor": agreement.mean > QUALITY_WARNING,
        "quality_warning": quality_warning(agreement.mean, agreement.worst()),
    }


def finish(
    y: np.ndarray, enc: TableEncoding, marginals: TableMarginals, rng: Any, opts: StructuredOptions
) -> tuple[np.ndarray, dict[str, Any]]:
    """The joint hierarchy's last post-processing (in memory): the
    calibration to the DP 1-way marginals and the quality figure of the drawn rows against them
    (no privacy cost)."""
    agreement = agreement_from_counts(agreement_counts(y, enc, marginals), marginals)
    points = calibrate(y, enc, marginals, rng, opts.calibrate) if opts.calibrate else y
    return points, quality_info(agreement)


def quality_warning(mean: float, worst: Sequence[str]) -> str:
    """The warning of a poor quality figure, naming the options to change."""
    return (
        f"the joint release kept the columns' distributions poorly (mean TVD {mean:.2f} to "
        "the DP marginals, "
        f"worst: {', '.join(worst)}): the calibration restores the 1-way marginals, but the "
        "joint structure is "
        "weak. Raise epsilon, release fewer columns (columns=... / --columns), or lower the "
        "first look's share "
        "(StructuredOptions(marginal_share=...) / --marginal-share)"
    )


def check_orders_alphas(alphas: Any) -> tuple[float, ...]:
    """``alphas`` as a tuple of positive floats."""
    out = tuple(float(a) for a in alphas)
    if any(not a > 0 for a in out):
        raise ValueError("alphas must be positive")
    return out
