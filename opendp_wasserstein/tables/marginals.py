r"""The private first look at a table: every column's 1-D marginal, and the public-after-DP
metadata built from it.

:func:`make_table_marginals` is one OpenDP measurement on the encoded points of a table
(:func:`~opendp_wasserstein.tables.make_table_encoding`): per column, the noisy counts of a
fixed public tree over the column's axis: a categorical column's categories; a numeric
column's equal cells of its public range (one per value for a narrow int column), then groups
of :data:`BRANCHING` of them while they number at least :data:`BRANCHING` (the root is the
public size; :func:`tree_levels`); a nullable column's
missing rows as one more count on every level.  Each level is :func:`make_level_counts` (every
record in exactly one count: ``l1`` stability 2 per replacement) ``>>`` OpenDP's
``then_laplace`` (discrete Laplace); every level of every column composed by OpenDP's
``make_composition``, whose map is the sum (:doc:`/proofs/table_marginals`).

The release is post-processed into :class:`TableMarginals` (generalised least squares on each
tree, :func:`tree_estimate`): per column the released leaf probabilities and the share of
missing rows.  Everything built from it is a function of a DP release, so it is public: the
quantile encoding (:class:`QuantileMaps`, every numeric axis mapped by its DP CDF so that each
dyadic split halves the released mass), the column weights of the split orders
(:mod:`~opendp_wasserstein.tables.orders`), the calibration targets
(:mod:`~opendp_wasserstein.tables.calibration`) and the quality figure
(:mod:`~opendp_wasserstein.tables.quality`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_measurement, make_transformation
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    validate_data,
    whole_replacements,
)
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.noise._source import NOISE_STREAM, as_random_source
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian, sample_discrete_laplace
from opendp_wasserstein.tables.encoding import TableEncoding, category_boundaries

__all__ = [
    "ColumnPlan",
    "column_plans",
    "column_leaves",
    "tree_levels",
    "column_trees",
    "make_level_counts",
    "level_scales",
    "level_scales_zcdp",
    "NOISES",
    "noise_variance",
    "make_table_marginals",
    "tree_estimate",
    "project_groups",
    "TableMarginals",
    "QuantileMaps",
    "make_quantile_encoding",
    "BRANCHING",
]

#: the branching factor of a numeric column's count tree (Qardaji, Yang, Li 2013: about 16
#: minimises the error of range counts)
BRANCHING = 16

#: the most levels of a numeric column's count tree (16^3 = 4096 leaves)
MAX_LEVELS = 3

#: the noises of the structured release: ``"laplace"`` (pure DP: discrete Laplace, budgets in
#: epsilon) and ``"gaussian"`` (zCDP: discrete Gaussian, budgets in rho)
NOISES = ("laplace", "gaussian")


def check_noise(noise: str) -> str:
    """``noise`` if it is one of :data:`NOISES`."""
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")
    return noise


def noise_variance(scale: float, noise: str) -> float:
    """The variance of one count's noise at ``scale``: ``2 s^2`` for discrete Laplace (the
    continuous law's, as the post-processing has always used), ``s^2`` for the discrete
    Gaussian (at most ``s^2``)."""
    s = float(scale)
    return 2.0 * s * s if check_noise(noise) == "laplace" else s * s


def l2_count_stability(kind: str, sized: bool, d_in: Any) -> float:
    """The ``l2`` stability of counts where every record is in exactly one entry, as a float
    never below it: a replacement moves two entries by one, ``sqrt(2)`` in ``l2``, so ``m``
    replacements ``sqrt(2) m`` (``m = d_in`` under ``change_one_distance``, ``d_in // 2`` under
    ``symmetric_distance`` on a sized domain); without a size, ``d_in`` added or removed records
    move the vector by at most ``d_in`` (``l2 <= l1``)."""
    if not sized:
        return float(_identity(d_in))
    m = whole_replacements(kind, _identity(d_in))
    return sqrt_up(2 * m * m)


@dataclass(frozen=True)
class ColumnPlan:
    """One column of the encoding.

    :param name: the column
    :param axes: its axes in the encoding (the is-missing axis first when nullable)
    :param kind: ``"numeric"`` or ``"category"``
    :param cells: categories of the category axis (0 for a numeric column)
    :param missing_axis: the position in ``axes`` of the is-missing axis, or None
    """

    name: str
    axes: tuple[int, ...]
    kind: str
    cells: int = 0
    missing_axis: int | None = None

    @property
    def value_axis(self) -> int:
        """The axis (in the encoding) holding the value or the category."""
        return self.axes[-1]


def column_plans(enc: TableEncoding) -> tuple[ColumnPlan, ...]:
    """The columns of an encoding with their axes (public: the schema alone)."""
    out: list[ColumnPlan] = []
    j = 0
    for name, _spec in enc.schema.items():
        a = enc.axes[j]
        if a.role == "category":
            out.append(ColumnPlan(name, (j,), "category", a.cells))
            j += 1
        elif a.role == "missing":
            out.append(ColumnPlan(name, (j, j + 1), "numeric", 0, 0))
            j += 2
        else:
            out.append(ColumnPlan(name, (j,), "numeric"))
            j += 1
    return tuple(out)


def _identity(d_in: Any) -> int:
    if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)) or d_in < 0:
        raise ValueError("d_in must be a non-negative integer")
    return int(d_in)


#: below this ``n epsilon / k`` a numeric column's tree is one flat level of :data:`BRANCHING`
#: cells; from it to :data:`FLAT_MAX_NEPS` one flat level of ``n epsilon / FLAT_ROWS``
#: cells rounded down to a power of 2 (32, :func:`column_leaves`)
FLAT_MIN_NEPS = 256

#: from this ``n epsilon / k`` a numeric column's tree has more than one level (the flat level
#: of 64 cells from 512 to 1024 measured better in 1-way TVD but worse in W1, 0.0117 -> 0.0147
#: at 800, and in the pair tree's models and Gower W1: seattle-weather at epsilon 4 0.439 ->
#: 0.407, 0.039 -> 0.043; credit's model 0.595 -> 0.564)
FLAT_MAX_NEPS = 512

#: a flat level's cells hold on average at least ``FLAT_ROWS / 2`` noise scales (``n / L >=
#: FLAT_ROWS / epsilon``, the scale being ``2 / epsilon``)
FLAT_ROWS = 8


def column_leaves(
    plan: ColumnPlan, spec: Any, n: int, epsilon: float, max_levels: int = MAX_LEVELS
) -> int:
    """The leaves of a column's count tree, from public values only: the categories; otherwise
    ``16^K`` equal cells of the public range, ``K = floor(log16(n eps / 16)) + 1`` within
    ``[1, max_levels]`` (a finer level once ``n eps`` reaches 256, then 4096), except that for
    ``FLAT_MIN_NEPS <= n eps < FLAT_MAX_NEPS`` (256 to 512) with ``max_levels >= 2`` the tree
    is one flat level of ``2^floor(log2(n eps / FLAT_ROWS))`` cells (32), each holding on
    average at least 4 noise scales; for an int column with at most ``16^K``
    values (at most 256 in the flat range), one leaf per value.

    The flat level replaces the tree of 256 leaves, whose 16 top cells (3/4 of the budget)
    are too coarse for a histogram and whose leaves (1/4 of it at a quarter of a row per noise
    scale) mostly noise.  Measured (1-D simulation of the 51 numeric columns of the eight
    comparison tables, 20 runs each, 1-way TVD in 20 equal bins of the public bounds; W1 of the
    CDFs): at ``n eps`` 400, TVD 0.091 -> 0.070 (the independent-marginals baseline 0.090),
    W1 0.0166 -> 0.0174.  Benchmark (``bench_tables_compare``, 5 seeds, 1-way TVD):
    seattle-weather at epsilon 4 (the pair tree, its first look at ``n eps / k`` 312) 0.083 ->
    0.057 (the independent marginals 0.053), 2-way 0.237 -> 0.222.
    An int column of 61-256 values keeps one leaf per value (64 cells over the 73 values of an
    int column straddle its integers: credit's 1-way TVD rose 0.031 -> 0.040 at epsilon 4)."""
    if plan.kind == "category":
        return plan.cells
    ne = n * epsilon
    if max_levels >= 2 and FLAT_MIN_NEPS <= ne < FLAT_MAX_NEPS:
        if spec.type == "int" and spec.upper - spec.lower + 1 <= BRANCHING**2:
            return int(spec.upper - spec.lower + 1)  # one leaf per value, as the tree would
        return 1 << (int(ne // FLAT_ROWS).bit_length() - 1)  # 2^floor(log2(n eps / 8))
    k = int(
        np.clip(
            np.floor(np.log(max(2.0, ne / BRANCHING)) / np.log(BRANCHING)) + 1,
            1,
            max_levels,
        )
    )
    if spec.type == "int" and spec.upper - spec.lower + 1 <= BRANCHING**k:
        return int(spec.upper - spec.lower + 1)
    return int(BRANCHING**k)


def tree_levels(leaves: int, kind: str) -> tuple[int, ...]:
    """The node counts of the tree's released levels, finest first: the leaves, then groups of
    :data:`BRANCHING` consecutive nodes while the groups number at least :data:`BRANCHING` (a
    categorical column: the leaves only).  The root is the public size and is not released.

    A coarser level of fewer than :data:`BRANCHING` nodes is not released: it would take
    :data:`TOP_SHARE` of the column's budget for a few wide ranges (an int column of 73 values
    had 5 top nodes of 16 values each, and its values were read from the finer level at a
    quarter of the budget); its leaves then get the whole budget.  Measured
    (``bench_tables_compare``, credit, 3,563 rows, three int columns of 61-73 values, 6 seeds):
    1-way TVD 0.076 -> 0.050 at epsilon 1, 0.046 -> 0.031 at epsilon 4; 2-way 0.163 -> 0.129,
    0.108 -> 0.085."""
    out = [int(leaves)]
    if kind == "category":
        return tuple(out)
    while -(-out[-1] // BRANCHING) >= BRANCHING:
        out.append(-(-out[-1] // BRANCHING))
    return tuple(out)


def _leaf_index(values: np.ndarray, leaves: int) -> np.ndarray:
    return np.clip(np.floor(values * leaves), 0, leaves - 1).astype(np.int64)


def make_level_counts(
    input_domain: Domain,
    input_metric: Metric,
    plan: ColumnPlan,
    leaves: int,
    level: int,
    output_metric: str = "l1",
) -> Transformation:
    r"""The counts of one level of a column's tree: a Transformation from the encoded points to
    an ``i64`` vector in ``l1_distance`` (the level's node counts, then, for a nullable numeric
    column, the count of missing rows).

    Every record is counted in exactly one entry (a node of the level, or the missing count), so
    replacing a record changes the vector by at most 2 in ``l1`` and adding or removing one by
    1: stability ``2 d_in`` under ``change_one_distance``, ``d_in`` under ``symmetric_distance``.
    With ``output_metric="l2"`` the vector is in ``l2_distance(T=float)`` (for the discrete
    Gaussian): a replacement moves two entries by one, ``sqrt(2)``, so the stability is
    ``sqrt(2) m`` for ``m`` replacements, rounded up (:func:`l2_count_stability`).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, T=float)`` (encoded points)
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param plan: the column
    :param leaves: the tree's leaves (:func:`column_leaves`)
    :param level: ``0`` (the leaves) .. ``len(tree_levels(leaves)) - 1``
    :param output_metric: ``"l1"`` (default, ``l1_distance(T="i64")``) or ``"l2"``
        (``l2_distance(T=float)``)
    """
    cells, width = level_cells(plan, leaves, level)
    return make_cell_counts(input_domain, input_metric, width, cells, output_metric)


def level_cells(
    plan: ColumnPlan, leaves: int, level: int
) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
    """The entry of :func:`make_level_counts`' vector each encoded point is counted in, and the
    vector's length: ``(cells, width)``, ``cells(x)`` an int64 array of one index in
    ``[0, width)`` per row (plain numpy: the Dask workers count with it, building no OpenDP
    object).

    :param plan: the column
    :param leaves: the tree's leaves (:func:`column_leaves`)
    :param level: ``0`` (the leaves) .. ``len(tree_levels(leaves)) - 1``
    :return: the cell function and the number of cells
    """
    sizes = tree_levels(leaves, plan.kind)
    if not 0 <= level < len(sizes):
        raise ValueError(f"level must be in [0, {len(sizes) - 1}]")
    group = BRANCHING**level
    size = sizes[level]
    width = size + (1 if plan.missing_axis is not None else 0)
    bounds = category_boundaries(plan.cells) if plan.kind == "category" else None

    def cells(x: np.ndarray) -> np.ndarray:
        if bounds is not None:
            idx = np.clip(
                np.searchsorted(bounds, x[:, plan.value_axis], side="right") - 1, 0, plan.cells - 1
            )
        else:
            idx = _leaf_index(x[:, plan.value_axis], leaves) // group
        if plan.missing_axis is not None:
            idx = np.where(x[:, plan.axes[plan.missing_axis]] >= 0.5, size, idx)
        return idx  # type: ignore[no-any-return]

    return cells, width


def make_cell_counts(
    input_domain: Domain,
    input_metric: Metric,
    size: int,
    cells: Callable[[np.ndarray], np.ndarray],
    output_metric: str = "l1",
) -> Transformation:
    r"""Counts of the encoded points by cell, where ``cells(x)`` puts every row in exactly one of
    ``size`` cells: a Transformation to an ``i64`` vector of length ``size`` in ``l1_distance``
    (``output_metric="l2"``: in ``l2_distance(T=float)``).  A replacement moves the vector by
    at most 2 in ``l1`` and an addition or removal by 1: stability ``2 d_in`` under
    ``change_one_distance``, ``d_in`` under ``symmetric_distance``; in ``l2``, ``sqrt(2)`` per
    replacement, rounded up (:func:`l2_count_stability`).  The shell of the first look's level
    counts (:func:`make_level_counts`), the pair and pattern tables
    (:func:`~opendp_wasserstein.tables.pairs.make_pair_counts`,
    :func:`~opendp_wasserstein.tables.pairs.make_pattern_counts`) and the network's clique
    tables (:func:`~opendp_wasserstein.tables.network.make_clique_counts`).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=D, T=float)`` (encoded points)
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param size: the number of cells
    :param cells: the cell of every row (int64 in ``[0, size)``)
    :param output_metric: ``"l1"`` (default, ``l1_distance(T="i64")``) or ``"l2"``
        (``l2_distance(T=float)``)
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)

    def function(x: np.ndarray) -> list[int]:
        x = validate_data(x, d, n, nan=False)
        return np.bincount(cells(x), minlength=size).tolist()  # type: ignore[no-any-return]

    def stability(d_in: Any) -> int:
        return 2 * _identity(d_in) if kind == "change_one" else _identity(d_in)

    def l2_stability(d_in: Any) -> float:
        return l2_count_stability(kind, n is not None, d_in)

    return make_count_vector(
        input_domain, input_metric, size, function, stability, l2_stability, output_metric
    )


def make_count_vector(
    input_domain: Domain,
    input_metric: Metric,
    size: int,
    function: Callable[[np.ndarray], list[int]],
    l1_stability: Callable[[Any], int],
    l2_stability: Callable[[Any], float],
    output_metric: str = "l1",
) -> Transformation:
    """The shell of the count Transformations (:func:`make_cell_counts`,
    :func:`~opendp_wasserstein.tables.copula.make_split_counts`): ``function`` into an ``i64``
    vector of length ``size``, in ``l1_distance(T="i64")`` with ``l1_stability`` or
    (``output_metric="l2"``) in ``l2_distance(T=float)`` with ``l2_stability``.

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param output_metric: ``"l1"`` (default) or ``"l2"``
    """
    if output_metric not in ("l1", "l2"):
        raise ValueError(f"output_metric must be 'l1' or 'l2', got {output_metric!r}")
    l2 = output_metric == "l2"
    return make_transformation(
        input_domain,
        input_metric,
        dp.vector_domain(dp.atom_domain(T="i64"), size=size),
        dp.l2_distance(T=float) if l2 else dp.l1_distance(T="i64"),
        function,
        l2_stability if l2 else l1_stability,
    )


#: the share of a column's budget spent on its coarsest level when it has more than one (the
#: 16 cells that the 1-way marginals are read at; the finer levels share the rest equally)
TOP_SHARE = Fraction(3, 4)


def level_scales(epsilon: float, levels: int) -> tuple[float, ...]:
    """The discrete Laplace scales of a column's ``levels`` levels, finest first: with one level
    ``2 / epsilon``; otherwise ``2 / (TOP_SHARE epsilon)`` on the coarsest and ``2 (levels - 1) /
    ((1 - TOP_SHARE) epsilon)`` on each finer one, each rounded up, so that the levels cost at
    most ``epsilon`` in all per replacement (each level's vector moves by 2 in ``l1``)."""
    eps = Fraction(epsilon)
    if levels == 1:
        return (round_up(2 / eps),)
    fine = round_up(Fraction(2 * (levels - 1)) / ((1 - TOP_SHARE) * eps))
    return (fine,) * (levels - 1) + (round_up(2 / (TOP_SHARE * eps)),)


def level_scales_zcdp(rho: float, levels: int) -> tuple[float, ...]:
    """The discrete Gaussian scales of a column's ``levels`` levels, finest first, at zCDP
    budget ``rho``: the shares of :func:`level_scales` in ``rho`` (a level at scale ``sigma``
    costs ``1 / sigma^2`` per replacement, its vector moving by ``sqrt(2)`` in ``l2``): with one
    level ``sqrt(1 / rho)``; otherwise ``sqrt(1 / (TOP_SHARE rho))`` on the coarsest and
    ``sqrt((levels - 1) / ((1 - TOP_SHARE) rho))`` on each finer one, each rounded up."""
    r = Fraction(rho)
    if levels == 1:
        return (sqrt_up(1 / r),)
    fine = sqrt_up(Fraction(levels - 1) / ((1 - TOP_SHARE) * r))
    return (fine,) * (levels - 1) + (sqrt_up(1 / (TOP_SHARE * r)),)


def column_trees(
    enc: TableEncoding, n: int, epsilon: float, max_levels: int = MAX_LEVELS, noise: str = "laplace"
) -> list[tuple[ColumnPlan, int, tuple[int, ...], tuple[float, ...]]]:
    """Per column: its plan, leaves, level sizes and noise scales (public values only).  With
    ``noise="gaussian"`` the budget ``epsilon`` is a zCDP ``rho``: the scales are
    :func:`level_scales_zcdp` of ``rho / k`` and the leaves :func:`column_leaves` at
    ``sqrt(8 rho / k)`` (the loss in epsilon of the exponential mechanism at the same zCDP
    cost, as the package's zCDP candidates use)."""
    plans = column_plans(enc)
    per_column = round_down(Fraction(epsilon) / len(plans))
    gauss = check_noise(noise) == "gaussian"
    rule = float(np.sqrt(8.0 * per_column)) if gauss else per_column
    out = []
    for p in plans:
        leaves = column_leaves(p, enc.schema[p.name], n, rule, max_levels)
        levels = tree_levels(leaves, p.kind)
        scales = (
            level_scales_zcdp(per_column, len(levels))
            if gauss
            else level_scales(per_column, len(levels))
        )
        out.append((p, leaves, levels, scales))
    return out


def make_table_marginals(
    input_domain: Domain,
    input_metric: Metric,
    enc: TableEncoding,
    epsilon: float,
    max_levels: int = MAX_LEVELS,
    noise: str = "laplace",
) -> Measurement:
    r"""Construct the private first look: every column's 1-D marginal at ``epsilon / k``.

    Each of the ``k`` columns' trees (module docstring) has ``L`` levels at the discrete Laplace
    scales of :func:`level_scales` (spending ``epsilon / k``), all composed by OpenDP's
    ``make_composition``: the map is the sum of the levels' maps, at most ``epsilon`` per
    replacement (``d_in = 1`` under ``change_one_distance``, 2 under ``symmetric_distance``).

    **Proof Definition:** :doc:`/proofs/table_marginals`

    :param input_domain: the encoded points,
        ``dp.numpy.array2_domain(num_columns=D, size=n, T=float)`` (the size must be public: it sets
        the trees)
    :param input_metric: ``dp.symmetric_distance()`` or ``dp.change_one_distance()``
    :param enc: the table's encoding (public: the schema)
    :param epsilon: the budget of the whole first look per replacement
    :param max_levels: the most levels of a numeric column's tree (1: 16 cells, as the
        independent-columns release uses: its marginals are read at that resolution)
    :param noise: ``"laplace"`` (default: ``max_divergence``, budget ``epsilon``) or
        ``"gaussian"``: ``epsilon`` is a zCDP ``rho``, every level ``make_level_counts(...,
        "l2") >> then_gaussian`` at :func:`level_scales_zcdp`, composed by ``make_composition``
        in ``zero_concentrated_divergence`` (the map: the sum of the levels' ``rho``)
    :return: a Measurement releasing the list of noisy count vectors, column by column, finest
        level first (:meth:`TableMarginals.from_release` reads it)

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.tables import Schema, FloatColumn, CategoricalColumn, TableEncoding
    >>> from opendp_wasserstein.tables.marginals import make_table_marginals
    >>> dp.enable_features("contrib")
    >>> enc = TableEncoding(Schema({"x": FloatColumn(bounds=(0, 1)),
    ...                            "c": CategoricalColumn(categories=("a", "b"))}))
    >>> dom = dp.numpy.array2_domain(num_columns=2, size=1000, T=float, nan=False)
    >>> meas = make_table_marginals(dom, dp.change_one_distance(), enc, 0.5)
    >>> meas.map(1) <= 0.5
    True
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is None:
        raise ValueError("make_table_marginals needs a sized input_domain (a public n)")
    if d != enc.dimension:
        raise ValueError(f"input_domain has {d} columns, the encoding {enc.dimension}")
    check_epsilon(epsilon)
    if check_noise(noise) == "gaussian":
        gauss = [
            (make_level_counts(input_domain, input_metric, p, leaves, j, "l2"), scales[j])
            for p, leaves, levels, scales in column_trees(enc, n, epsilon, max_levels, noise)
            for j in range(len(levels))
        ]
        return dp.c.make_composition(
            [seeded_gaussian(t, s, tag) for tag, (t, s) in enumerate(gauss)]
        )
    counts = [
        (make_level_counts(input_domain, input_metric, p, leaves, j), scales[j])
        for p, leaves, levels, scales in column_trees(enc, n, epsilon, max_levels)
        for j in range(len(levels))
    ]
    return dp.c.make_composition([seeded_laplace(t, s, tag) for tag, (t, s) in enumerate(counts)])


def seeded_laplace(counts: Transformation, scale: float, tag: int) -> Measurement:
    """``counts >> dp.m.then_laplace(scale)``: OpenDP's discrete Laplace on the CSPRNG (secure,
    the default); inside :func:`opendp_wasserstein.runtime.reproducible` the same law
    (:func:`~opendp_wasserstein.noise.samplers.sample_discrete_laplace`) drawn from the seeded
    stream ``tag`` (NOT private; tests and figures).  The map is OpenDP's map of the chain."""
    return _seeded(counts >> dp.m.then_laplace(scale), counts, scale, tag, "laplace")


def seeded_gaussian(counts: Transformation, scale: float, tag: int) -> Measurement:
    """``counts >> dp.m.then_gaussian(scale)`` (``counts`` in ``l2_distance``): OpenDP's discrete
    Gaussian on the CSPRNG (secure, the default); inside
    :func:`opendp_wasserstein.runtime.reproducible` the same law
    (:func:`~opendp_wasserstein.noise.samplers.sample_discrete_gaussian`) drawn from the seeded
    stream ``tag`` (NOT private; tests and figures).  The map is OpenDP's map of the chain, in
    ``zero_concentrated_divergence``."""
    return _seeded(counts >> dp.m.then_gaussian(scale), counts, scale, tag, "gaussian")


def _seeded(
    secure: Measurement, counts: Transformation, scale: float, tag: int, noise: str
) -> Measurement:
    """``secure`` (OpenDP's noise on ``counts``) on the CSPRNG; inside a reproducible run the
    package's sampler of the same law (``noise``) on the seeded stream ``tag``; ``secure``'s
    output measure and map."""
    sample = sample_discrete_gaussian if noise == "gaussian" else sample_discrete_laplace

    def function(x: Any) -> list[int]:
        src = as_random_source()
        if src.secure:
            return secure(x)  # type: ignore[no-any-return]
        raw = np.asarray(counts(x), dtype=np.int64)
        z = sample(
            np.full(len(raw), float(scale)), src.derive(NOISE_STREAM + 64).derive(tag), "fast"
        )
        return (raw + z).tolist()  # type: ignore[no-any-return]

    return make_measurement(
        counts.input_domain, counts.input_metric, secure.output_measure, function, secure.map
    )


def project_groups(values: np.ndarray, groups: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Each group's entries of ``values`` projected (in Euclidean distance) onto the simplex
    ``{x >= 0, sum x = total}`` of its group: ``x = max(v - theta, 0)`` with the group's
    ``theta`` (Held, Wolfe, Crowder 1974).  Vectorised over groups: ``groups`` is each entry's
    group index (non-decreasing), ``totals`` one non-negative total per group."""
    v = np.asarray(values, dtype=np.float64)
    g = np.asarray(groups, dtype=np.int64)
    t = np.asarray(totals, dtype=np.float64)
    k = len(t)
    size = np.bincount(g, minlength=k)
    width = int(size.max()) if len(size) else 0
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    pos = np.arange(len(v)) - start[g]
    mat = np.full((k, width), -np.inf)
    mat[g, pos] = v
    srt = -np.sort(-mat, axis=1)
    fin = np.isfinite(srt)
    csum = np.cumsum(np.where(fin, srt, 0.0), axis=1)
    j = np.arange(1, width + 1)
    cond = fin & (srt - (csum - t[:, None]) / j > 0)
    rho = np.where(cond.any(axis=1), width - 1 - np.argmax(cond[:, ::-1], axis=1), 0)
    theta = (csum[np.arange(k), rho] - t) / (rho + 1)
    out = np.maximum(v - theta[g], 0.0)
    empty = t <= 0
    out[empty[g]] = 0.0
    return out


def shrink_children(
    z: np.ndarray, var: np.ndarray, parent: np.ndarray, mass: np.ndarray
) -> np.ndarray:
    """Each group's children ``z`` (noise variance ``var``) shrunk toward the even split of their
    parent's ``mass`` (positive-part James-Stein, one factor per group): ``mass / p + lambda
    (z - mean z)`` with ``lambda = max(0, 1 - (p - 3) var / S)``, ``S`` the group's sum of squared
    deviations from its mean, ``p`` its size (groups of at most 3 are kept as they are).  Where
    the children's spread is no larger than their noise (a sparse fine level: a few rows per
    cell against a noise scale of many) the split stays even inside the parent, instead of the
    few largest noisy counts taking all of it; an atom (one child far above its noise) keeps
    ``lambda`` near 1.  Post-processing."""
    k = len(mass)
    size = np.bincount(parent, minlength=k).astype(np.float64)
    mean = np.bincount(parent, weights=z, minlength=k) / np.maximum(size, 1.0)
    dev = z - mean[parent]
    ss = np.bincount(parent, weights=dev * dev, minlength=k)
    v = np.bincount(parent, weights=var, minlength=k) / np.maximum(size, 1.0)
    lam = np.where(
        size > 3, np.clip(1.0 - (size - 3.0) * v / np.where(ss > 0, ss, 1.0), 0.0, 1.0), 1.0
    )
    lam = np.where((size > 3) & ~(ss > 0), 0.0, lam)
    out: np.ndarray = mass[parent] / np.maximum(size, 1.0)[parent] + lam[parent] * dev
    return out


def tree_estimate(
    noisy: Sequence[np.ndarray],
    total: float,
    variances: Sequence[float] | None = None,
    shrink: bool = False,
    shrink_top: bool = False,
) -> np.ndarray:
    """Consistent, non-negative leaf masses summing to ``total`` from a tree's noisy levels
    (finest first, groups of :data:`BRANCHING`; ``variances``: each level's noise variance,
    default equal), the root being ``total``.  A pass up combines each node's count with its
    children's sum by inverse variance (generalised least squares on the tree); then the top
    level is projected onto the simplex of mass ``total`` (:func:`project_groups`: small noisy
    counts go to 0), and top down each node's children are projected onto the simplex of the
    node's mass (the least-squares consistent split: a sparse level's noisy empty cells go to 0,
    where a split in proportion to the clipped counts would give each about half a noise scale,
    spreading an atom's mass over its empty neighbours).  With ``shrink``, each node's children
    are first shrunk toward the even split of its mass (:func:`shrink_children`), so a level whose
    counts are mostly noise does not pile the node's mass onto a few cells.  Post-processing of the
    release."""
    levels = [np.asarray(v, dtype=np.float64) for v in noisy]
    v = [1.0] * len(levels) if variances is None else [float(x) for x in variances]
    z = [levels[0]]
    var = [np.full(len(levels[0]), v[0])]
    for j in range(1, len(levels)):  # up: one vectorised step per level
        parent = np.arange(len(z[-1])) // BRANCHING
        child_sum = np.bincount(parent, weights=z[-1], minlength=len(levels[j]))
        child_var = np.bincount(parent, weights=var[-1], minlength=len(levels[j]))
        w = child_var / (v[j] + child_var)  # the weight of the node's own count
        z.append(w * levels[j] + (1.0 - w) * child_sum)
        var.append(child_var * v[j] / (v[j] + child_var))
    top = z[-1]
    if shrink_top:
        root = np.zeros(len(top), dtype=np.int64)
        top = shrink_children(top, var[-1], root, np.array([float(total)]))
    h = project_groups(top, np.zeros(len(top), dtype=np.int64), np.array([float(total)]))
    for j in range(len(levels) - 1, 0, -1):  # down
        parent = np.arange(len(z[j - 1])) // BRANCHING
        child = shrink_children(z[j - 1], var[j - 1], parent, h) if shrink else z[j - 1]
        h = project_groups(child, parent, h)
    return h


#: :meth:`TableMarginals.from_release` shrinks each node's children toward an even split of its
#: mass before the simplex projection (:func:`shrink_children`)
SHRINK = True

#: :meth:`TableMarginals.from_release` shrinks a categorical column's counts toward the even
#: split over its categories before the simplex projection (:func:`shrink_children` on the one
#: level; a numeric column's top level is not shrunk).  Measured (1-D simulation of the 20
#: categorical columns of the eight comparison tables, 20 runs each, 1-way TVD): at ``n eps``
#: 10, 17, 25, 50, 100: 0.340 -> 0.267, 0.244 -> 0.207, 0.197 -> 0.156, 0.109 -> 0.090,
#: 0.063 -> 0.047 (independent noisy marginals, clipped and sampled: 0.303, 0.235, 0.183,
#: 0.114, 0.075); on the numeric columns the same shrinkage of the top level raised the
#: CDFs' W1 (0.119 -> 0.155 at ``n eps`` 17)
SHRINK_CATEGORIES = True


@dataclass(frozen=True, eq=False)
class TableMarginals:
    """The first look's release as per-column marginals (public: a DP release).

    :param plans: the columns
    :param masses: per column, the released leaf probabilities of its present rows (summing to
        1): a numeric column's equal cells of ``[0, 1]``, a categorical column's categories
    :param missing: per column, the released share of missing rows (0 if not nullable)
    :param size: the public number of rows
    """

    plans: tuple[ColumnPlan, ...]
    masses: tuple[np.ndarray, ...]
    missing: tuple[float, ...]
    size: int

    @classmethod
    def from_release(
        cls,
        enc: TableEncoding,
        release: Sequence[Any],
        size: int,
        epsilon: float,
        max_levels: int = MAX_LEVELS,
        noise: str = "laplace",
    ) -> TableMarginals:
        """Post-process the list that :func:`make_table_marginals` (built with ``size``,
        ``epsilon``, ``max_levels`` and ``noise``) releases (the levels' noise variances:
        :func:`noise_variance`)."""
        masses, missing = [], []
        pos = 0
        for p, _leaves, levels, scales in column_trees(enc, size, epsilon, max_levels, noise):
            noisy = [np.asarray(release[pos + j], dtype=np.float64) for j in range(len(levels))]
            pos += len(levels)
            miss = 0.0
            if p.missing_axis is not None:
                miss = float(np.clip(np.mean([v[-1] for v in noisy]) / size, 0.0, 1.0))
                noisy = [v[:-1] for v in noisy]
            present = max(size * (1.0 - miss), 1.0)  # the tree's root, in rows
            var = [noise_variance(sc, noise) for sc in scales]
            top = SHRINK_CATEGORIES and p.kind == "category"
            est = tree_estimate(noisy, present, var, shrink=SHRINK, shrink_top=top)
            masses.append(est / present)
            missing.append(miss)
        return cls(column_plans(enc), tuple(masses), tuple(missing), size)

    def cdf_knots(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Column ``c``'s released CDF of its present values on ``[0, 1]``: ``(x, F(x))`` at its
        cell edges, linear in between."""
        m = self.masses[c]
        x = np.linspace(0.0, 1.0, len(m) + 1)
        f = np.concatenate(([0.0], np.cumsum(m)))
        return x, f / f[-1]

    def quantiles(self, c: int, q: np.ndarray) -> np.ndarray:
        """Column ``c``'s released quantiles at ``q`` (uniform within cells): the inverse of the
        released CDF, ``F^{-1}(q) = (i + (q - F_{i-1}) / m_i) / L`` in the cell ``i`` of ``L``
        with ``F_{i-1} <= q < F_i``, so it never lands in a cell the release left empty (an
        atom stays inside its cell; linear interpolation over the CDF's knots would spread a
        cell's mass over the empty cells before it)."""
        m = np.clip(np.asarray(self.masses[c], dtype=np.float64), 0.0, None)
        big = len(m)
        if not m.sum() > 0:
            return np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
        f = np.cumsum(m / m.sum())
        f[-1] = 1.0
        qq = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
        i = np.minimum(np.searchsorted(f, qq, side="right"), big - 1)
        i = np.where(m[i] > 0, i, np.flatnonzero(m > 0)[-1])  # q = 1: the last cell with mass
        lo = np.where(i > 0, f[np.maximum(i - 1, 0)], 0.0)
        t = np.clip((qq - lo) / (m[i] / m.sum()), 0.0, 1.0)
        return (i + t) / big  # type: ignore[no-any-return]

    def gini(self) -> np.ndarray:
        """Per column, the released chance that two random records differ in it: ``1 - sum p^2``
        for a categorical column; a numeric column in quantile scale: the expected ``|U - V|`` of
        two uniform values, ``1/3``, for its present part, plus the is-missing impurity."""
        out = []
        for p, f, m in zip(self.plans, self.masses, self.missing, strict=True):
            if p.kind == "category":
                out.append(float(1.0 - np.sum(f**2)))
            else:
                out.append((1.0 - m) ** 2 / 3.0 + 2.0 * m * (1.0 - m))
        return np.asarray(out)


#: the share of the identity mixed into each quantile map, so that it is strictly increasing
#: (every part of the public range keeps some room, also where the release put no mass)
QUANTILE_MIX = 0.01


@dataclass(frozen=True, eq=False)
class QuantileMaps:
    r"""Strictly increasing piecewise-linear maps of the numeric value axes, from DP CDFs.

    Axis ``j``'s map is ``G_j(u) = (1 - lambda) F_j(u) + lambda u`` with ``F_j`` the released
    CDF (:meth:`TableMarginals.cdf_knots`) and ``lambda`` = :data:`QUANTILE_MIX`: a bijection of
    ``[0, 1]`` with ``G(0) = 0, G(1) = 1``, built from a DP release only (public).  Under it the
    data's values spread about uniformly, so each dyadic split of the axis halves the mass.

    :param axes: the value axes mapped (columns of the encoded points)
    :param knots: per axis, ``(x, G(x))`` at its knots
    """

    axes: tuple[int, ...]
    knots: tuple[tuple[np.ndarray, np.ndarray], ...]

    @classmethod
    def from_marginals(cls, marginals: TableMarginals, mix: float = QUANTILE_MIX) -> QuantileMaps:
        """The maps of every numeric column's value axis."""
        axes, knots = [], []
        for c, p in enumerate(marginals.plans):
            if p.kind != "numeric":
                continue
            x, f = marginals.cdf_knots(c)
            y = (1.0 - mix) * f + mix * x
            y[0], y[-1] = 0.0, 1.0
            axes.append(p.value_axis)
            knots.append((x, y))
        return cls(tuple(axes), tuple(knots))

    def forward(self, points: np.ndarray) -> np.ndarray:
        """The points with every mapped axis through its ``G`` (a new array)."""
        out = np.array(points, dtype=np.float64, copy=True)
        for j, (x, y) in zip(self.axes, self.knots, strict=True):
            out[:, j] = np.interp(np.clip(out[:, j], 0.0, 1.0), x, y)
        return out

    def inverse(self, points: np.ndarray) -> np.ndarray:
        """The points with every mapped axis through ``G^{-1}`` (a new array)."""
        out = np.array(points, dtype=np.float64, copy=True)
        for j, (x, y) in zip(self.axes, self.knots, strict=True):
            out[:, j] = np.interp(np.clip(out[:, j], 0.0, 1.0), y, x)
        return out


def make_quantile_encoding(
    input_domain: Domain, input_metric: Metric, maps: QuantileMaps
) -> Transformation:
    """The row-wise transformation ``x -> G(x)`` of :class:`QuantileMaps` (public maps, built from
    a DP release): output row ``i`` is a function of input row ``i`` alone, so the stability is
    ``d_out = d_in``; the domain and the metric are kept.

    **Proof Definition:** :doc:`/proofs/table_marginals`
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    check_metric(input_metric, n)
    if maps.axes and max(maps.axes) >= d:
        raise ValueError("the quantile maps are for more columns than the input domain has")

    def function(x: np.ndarray) -> np.ndarray:
        return maps.forward(validate_data(x, d, n, nan=False))

    return make_transformation(
        input_domain, input_metric, input_domain, input_metric, function, _identity
    )
