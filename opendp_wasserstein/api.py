"""The front door for people who do not compose OpenDP objects by hand.

:func:`synthesize` and :func:`select_candidates` take an array, or a table with a public
schema, and dispatch: arrays to the in-memory release (:mod:`opendp_wasserstein.release`),
tables to the tables front end (:mod:`opendp_wasserstein.tables.release`), which encodes them
and calls the same release.  Every option is checked once, by the option object the release
builds (:mod:`opendp_wasserstein.release.options`); the reported epsilon is what the
measurement's own privacy map certifies.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opendp_wasserstein.release.in_memory import select_array_candidates, synthesize_array
from opendp_wasserstein.release.options import (
    DEFAULT_CONSISTENCY,
    DEFAULT_SCORE,
    DEFAULT_SELECT_FRACTION,
    DEFAULT_SELECT_FRACTION_ZCDP,
    DEFAULT_SIZE_FRACTION,
    MECHANISMS,
    PRIVTREE_SPLITS_PER_COORDINATE,
    SELECTION_MECHANISMS,
    check_public_size,
)
from opendp_wasserstein.release.progress import check_progress
from opendp_wasserstein.release.reports import SelectionReport, SynthesisReport
from opendp_wasserstein.tables.measurement import SYNTHESIS_MECHANISMS
from opendp_wasserstein.tables.release import select_table_candidates, synthesize_table
from opendp_wasserstein.tables.schema import Schema

__all__ = [
    "SynthesisReport",
    "synthesize",
    "MECHANISMS",
    "TABLE_MECHANISMS",
    "DEFAULT_SELECT_FRACTION",
    "DEFAULT_CONSISTENCY",
    "DEFAULT_SCORE",
    "DEFAULT_SIZE_FRACTION",
    "DEFAULT_SELECT_FRACTION_ZCDP",
    "PRIVTREE_SPLITS_PER_COORDINATE",
    "SelectionReport",
    "select_candidates",
    "SELECTION_MECHANISMS",
]


#: the mechanisms :func:`synthesize` takes with a ``schema``: ``"structured"`` (the default: the
#: DP first look, quantile encoding, chosen Gower split orders, calibration;
#: :mod:`opendp_wasserstein.tables.pipeline`) or one tree over the table's hierarchy
TABLE_MECHANISMS = SYNTHESIS_MECHANISMS

#: the options of the one-tree mechanisms, which mechanism="structured" does not take
_TREE_OPTIONS = (
    "epsilon_select",
    "depth",
    "epsilon_size",
    "split_order",
    "consistency",
    "threshold",
    "score",
)


def _schema(schema: Any) -> Schema:
    return schema if isinstance(schema, Schema) else Schema.from_json(schema)


def synthesize(
    X: Any,
    epsilon: float,
    bounds: Any = None,
    *,
    mechanism: str | None = None,
    epsilon_select: float | None = None,
    depth: int | None = None,
    placement: str = "uniform",
    public_size: bool = True,
    epsilon_size: float | None = None,
    schema: Any = None,
    columns: Any = None,
    split_order: Any = None,
    consistency: str | None = None,
    threshold: float | None = None,
    delta: float | None = None,
    score: str | None = None,
    accept_data_derived_schema: bool = False,
    structured: Any = None,
    progress: bool | None = None,
) -> tuple[Any, SynthesisReport]:
    """Release a differentially private synthetic copy of ``X`` with small W1 distance.

    With ``public_size=True`` (the default) ``n = len(X)`` is public and ``epsilon`` is the loss
    of replacing one record.  With ``public_size=False`` ``n`` is private and ``epsilon`` is the
    loss of adding or removing one record; nothing that shapes the release is computed from
    ``n``: either ``depth`` is given (``"pruned"``/``"pmm"``; the noisy root count sets the number
    of rows), or a share ``epsilon_size`` is spent on a DP count ``n_hat`` (OpenDP's
    ``make_laplace``) from which the depth or the candidate set is chosen, and ``n_hat`` rows are
    released.  Either way the reported epsilon is the certified map of the whole release.

    With ``delta`` the release is ``(epsilon, delta)``-DP instead (one replacement, public size):
    the discrete Gaussian (zCDP) variant of the mechanism runs at ``rho =
    rho_for_approx_dp(epsilon, delta)``, the largest ``rho`` that OpenDP's
    ``make_zCDP_to_approxDP`` + ``make_fix_delta`` turn into at most ``epsilon`` at ``delta``
    (:mod:`opendp_wasserstein.combinators`), and the report's ``(epsilon, delta)`` is the map of
    that converted measurement.  ``"adaptive"`` spends ``epsilon_select / epsilon`` of ``rho``
    on the selection (default 10%, :data:`DEFAULT_SELECT_FRACTION_ZCDP`) with the zCDP
    candidates; ``"pruned"`` and ``"pmm"`` use the ambient depth ``ceil(log2(epsilon n))`` with
    the zCDP-optimal schedule at ``s = d``.  See ``docs/zcdp.rst``.

    Reproducible (non-private) runs: call inside :func:`opendp_wasserstein.runtime.reproducible`.
    Like OpenDP's own constructors, it requires ``dp.enable_features("contrib")``.

    :param X: the sensitive data, ``n x d`` real numbers (not modified); values outside
        ``bounds`` (``+-inf`` too) are clamped to the box, NaN is refused (outside the input
        domain: impute first or give a ``schema``), and with ``public_size=False`` an empty
        array is released like any other data set
    :param epsilon: the total privacy budget (see above for the unit)
    :param bounds: the public box: ``(lower, upper)`` (scalars or length-d), a
        :class:`~opendp_wasserstein.core.box.Box`, ``{"lower": ..., "upper": ...}`` or one
        ``(low, high)`` per column as ``{0: (low, high), 1: ...}``; rows outside are clamped.
        Required, never inferred from the data.  An ambiguous pair is refused.
    :param mechanism: with a ``schema``, ``"structured"`` (the default with a public size,
        uniform placement and none of the one-tree options ``epsilon_select``, ``depth``,
        ``epsilon_size``, ``split_order``, ``consistency``, ``threshold``, ``score``; pure DP, or
        with ``delta`` discrete Gaussian noise in zCDP:
        :mod:`opendp_wasserstein.tables.pipeline`, options in ``structured``) or one of the
        following on the table's one hierarchy (``"adaptive"`` when the default does not apply);
        ``"adaptive"`` (the default otherwise: Adaptive Pruned-PMM), ``"pruned"`` (Pruned-PMM at
        the ambient depth ``ceil(log2(eps n))`` with the paper's ``s = d`` schedule), ``"pmm"``
        (the full-tree baseline, same depth and schedule) or ``"privtree"``
        (:func:`~opendp_wasserstein.measurements.make_privtree`, local adaptivity: half of the
        budget of a record to the tree, half to the leaf counts, at most
        :data:`PRIVTREE_SPLITS_PER_COORDINATE` splits per coordinate; pure DP, in memory only)
    :param epsilon_select: adaptive only: the selection budget (default 20% of ``epsilon``)
    :param depth: pruned/pmm only: the depth (default the ambient rule, on ``n`` or ``n_hat``)
    :param placement: ``"uniform"`` (default) or ``"center"`` within leaf cells
    :param public_size: whether ``n = len(X)`` is public (default True)
    :param epsilon_size: private size only: the budget of the DP count (default 10% of
        ``epsilon``; not used by pruned/pmm when ``depth`` is given)
    :param schema: a :class:`~opendp_wasserstein.tables.Schema` (or a path or dict that
        :meth:`~opendp_wasserstein.tables.Schema.from_json` reads): ``X`` is then a table
        (pandas, Polars eager or lazy, pyarrow, or a 2-D numpy array) of mixed columns and the
        result is the same type with the same column names and dtypes; ``bounds`` is not used
    :param columns: with ``schema``: use only these columns of ``X``
    :param split_order: the public order in which the hierarchy splits the coordinates: with a
        ``schema``, ``"discrete-first"`` (default: categorical, bool and is-missing axes first,
        then numeric ones cyclically) or ``"cyclic"``; without one, a
        :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder` over the ``d`` columns of
        ``X`` (default: the cyclic order)
    :param consistency: adaptive/pruned: how the noisy counts become leaf masses (free
        post-processing): ``"paper"`` (Algorithm 2) or ``"least_squares"`` (generalised least
        squares over every visited level, :mod:`opendp_wasserstein.hierarchy.least_squares`);
        default :data:`DEFAULT_CONSISTENCY`
    :param threshold: adaptive/pruned: suppress noise-made mass in empty cells: with
        ``"paper"`` a noisy count at most ``threshold * sigma_j`` counts as 0 (default 0), with
        ``"least_squares"`` an estimate at most ``threshold`` standard errors (default 3)
    :param delta: ``None`` (default: pure ``epsilon``-DP) or a ``delta`` in ``(0, 1)``: an
        ``(epsilon, delta)``-DP release through the zCDP variant and OpenDP's conversion (see
        above); needs ``public_size=True``; with a ``schema`` the structured release runs with
        discrete Gaussian noise on its first look and pair tables and its pair choices in zCDP
        (:func:`~opendp_wasserstein.tables.pipeline.make_structured_synthesis`), or
        ``mechanism="adaptive"``, ``"pruned"`` or ``"pmm"`` on the table's hierarchy
    :param score: adaptive only: the selection's score, ``"capped"`` (default,
        :data:`DEFAULT_SCORE`: the capped-count estimate, a selection that finds the good
        candidate) or ``"paper"`` (the paper's bound ``B_a``); the privacy map is the same
        (:func:`~opendp_wasserstein.transformations.make_schedule_scores`)
    :param accept_data_derived_schema: with ``schema``: release even if some bounds or categories
        were read off the data (``derived_from_data``: not private); refused by default
    :param structured: with ``schema`` and ``mechanism="structured"``: a
        :class:`~opendp_wasserstein.tables.pipeline.StructuredOptions` (default: its defaults)
    :param progress: a progress bar on standard error over the release's stages (data checked,
        measurement built, released; ``tqdm``): None (default) shows it when standard error is a
        terminal, the size is public and ``len(X) >=``
        :data:`~opendp_wasserstein.release.progress.LONG_RELEASE_ROWS`; never with a private
        size (``n`` is then not read for the choice); with a ``schema`` the same rule on the
        table's row count
    :return: the synthetic array (or table) and a :class:`SynthesisReport`

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein import synthesize
    >>> dp.enable_features("contrib")
    >>> X = np.random.default_rng(0).uniform(size=(1000, 2))
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1))
    >>> Y.shape[1], report.epsilon
    (2, 1.0)
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1), public_size=False)
    >>> report.epsilon <= 1.0, report.details["size_estimate"] == len(Y)
    (True, True)
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1), delta=1e-9)
    >>> report.epsilon <= 1.0, report.delta, report.details["rho"] > 0
    (True, 1e-09, True)
    """
    if schema is not None:
        check_progress(progress)
        public = check_public_size(public_size)  # the structured default depends on it
        if bounds is not None:
            raise ValueError("give either bounds or schema, not both (a schema holds the bounds)")
        tree_options = dict(
            epsilon_select=epsilon_select,
            depth=depth,
            epsilon_size=epsilon_size,
            split_order=split_order,
            consistency=consistency,
            threshold=threshold,
            score=score,
            delta=delta,
        )
        given = sorted(k for k, v in tree_options.items() if v is not None and k != "delta")
        if mechanism is None:
            # the structured release needs a public size (pure DP, or zCDP with delta) and has
            # none of the one-tree options; otherwise one tree (Adaptive Pruned-PMM)
            mechanism = (
                "structured" if public and not given and placement == "uniform" else "adaptive"
            )
        if mechanism not in TABLE_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {TABLE_MECHANISMS} with a schema, got {mechanism!r}"
            )
        if mechanism == "structured":
            if given:
                raise ValueError(
                    f"option(s) {given} apply to the one-tree table mechanisms, not to "
                    "mechanism='structured' "
                    "(its options are structured=StructuredOptions(...)); pass "
                    "mechanism='adaptive' for them"
                )
            if not public:
                raise ValueError(
                    "mechanism='structured' needs public_size=True; pass "
                    "mechanism='adaptive' for a private size"
                )
            if placement != "uniform":
                raise ValueError(
                    "mechanism='structured' places points uniformly: leave placement unset"
                )
            return synthesize_table(  # type: ignore[no-any-return]
                X,
                epsilon,
                _schema(schema),
                columns,
                accept_data_derived_schema=accept_data_derived_schema,
                structured=True if structured is None else structured,
                progress=progress,
                delta=delta,
            )
        if structured is not None:
            raise ValueError("structured applies only to mechanism='structured'")
        return synthesize_table(  # type: ignore[no-any-return]
            X,
            epsilon,
            _schema(schema),
            columns,
            mechanism=mechanism,
            placement=placement,
            public_size=public,
            accept_data_derived_schema=accept_data_derived_schema,
            progress=progress,
            **tree_options,
        )
    if accept_data_derived_schema:
        raise ValueError("accept_data_derived_schema applies only with a schema")
    if structured is not None:
        raise ValueError("structured applies only with a schema")
    return synthesize_array(
        X,
        epsilon,
        bounds,
        split_order=split_order,
        mechanism="adaptive" if mechanism is None else mechanism,
        epsilon_select=epsilon_select,
        depth=depth,
        placement=placement,
        public_size=public_size,
        epsilon_size=epsilon_size,
        consistency=consistency,
        threshold=threshold,
        delta=delta,
        score=score,
        progress=progress,
    )


def select_candidates(
    D: Any,
    C: Any,
    m: int,
    epsilon: float,
    *,
    mechanism: str = "projection",
    metric: str | None = None,
    public_size: bool = True,
    schema: Any = None,
    columns: Any = None,
    accept_data_derived_schema: bool = False,
    progress: bool | None = None,
) -> tuple[np.ndarray, SelectionReport]:
    """Privately choose a size-``m`` multiset of public candidates ``C`` close in W1 to ``D``.

    With ``public_size=True`` (default) ``n = len(D)`` is public and ``epsilon`` is the loss of
    replacing one record.  With ``public_size=False`` ``epsilon`` is the loss of adding or
    removing one record and nothing is computed from ``n``: the projection charges and noises the
    root count and normalises by it; the NN histogram's rounding never needs ``n``; Tree-EM needs
    a public size and is refused.  It requires ``dp.enable_features("contrib")``.  Reproducible
    (non-private) runs: call inside :func:`opendp_wasserstein.runtime.reproducible`.

    :param D: the sensitive data, ``n x p`` real numbers (not modified); NaN is refused
        (outside the input domain), a row with ``+-inf`` is equally far from every candidate
        and is dealt over all of them like any tie (docs/tables.rst, "Missing and non-finite
        values"), and with ``public_size=False`` an empty array is data too
    :param C: the public candidates, ``k x p`` distinct finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy budget per replacement
    :param mechanism: ``"projection"`` (default: hierarchical tree projection, exact
        arithmetic), ``"tree-em"`` (Tree-EM; its float64 sampler needs OpenDP's
        ``"idealized-numerics"`` feature, which you must enable yourself with
        ``dp.enable_features("idealized-numerics")``) or ``"nn"`` (nearest-neighbour histogram)
    :param metric: ``"l2"`` (default), ``"l1"`` or ``"linf"``; with a schema the table metric
        (``None`` or ``"table"``)
    :param public_size: whether ``n = len(D)`` is public (default True)
    :param schema: a :class:`~opendp_wasserstein.tables.Schema` (or what
        :meth:`~opendp_wasserstein.tables.Schema.from_json` reads): ``D`` and ``C`` are then
        tables of any supported type (pandas, Polars, pyarrow, numpy), ``C`` matched to ``D``
        by column name, and the nearest candidate is the nearest under the table metric
        (:func:`~opendp_wasserstein.tables.release.select_table_candidates`)
    :param columns: with ``schema``: use only these columns of ``D`` and ``C``
    :param accept_data_derived_schema: with ``schema``: as for :func:`synthesize`
    :param progress: the progress bar, as for :func:`synthesize` (rule on ``len(D)``)
    :return: ``k`` int64 multiplicities summing to ``m`` (one per candidate row), and a
        :class:`SelectionReport`

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein import select_candidates
    >>> dp.enable_features("contrib")
    >>> D = np.random.default_rng(0).normal(size=(500, 2))
    >>> C = np.array([[0.0, 0.0], [3.0, 3.0], [-3.0, 3.0]])
    >>> counts, report = select_candidates(D, C, m=20, epsilon=1.0)
    >>> int(counts.sum()), report.epsilon
    (20, 1.0)
    """
    if schema is not None:
        check_progress(progress)
        if metric not in (None, "table"):
            raise ValueError(
                "with a schema the metric is the table metric: leave metric unset (or 'table')"
            )
        return select_table_candidates(  # type: ignore[no-any-return]
            D,
            C,
            m,
            epsilon,
            _schema(schema),
            columns,
            accept_data_derived_schema,
            mechanism=mechanism,
            public_size=public_size,
            progress=progress,
        )
    if accept_data_derived_schema:
        raise ValueError("accept_data_derived_schema applies only with a schema")
    if columns is not None:
        raise ValueError("columns applies only with a schema")
    metric = "l2" if metric is None else metric
    return select_array_candidates(
        D,
        C,
        m,
        epsilon,
        mechanism=mechanism,
        metric=metric,
        public_size=public_size,
        progress=progress,
    )
