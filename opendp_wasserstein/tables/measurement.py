r"""The table releases as OpenDP chains, each certified by one map.

:func:`make_table_synthesis` is ``make_table_encoding >> <a synthesis on the encoded points> >>
make_table_decoding``: the structured release
(:func:`~opendp_wasserstein.tables.pipeline.make_structured_synthesis`) or one of the one-tree
mechanisms of :func:`~opendp_wasserstein.release.measurement.synthesis_measurement` (Adaptive
Pruned-PMM, Pruned-PMM, PMM, PrivTree; pure DP, or ``(epsilon, delta)`` through the zCDP variant
and OpenDP's ``make_zCDP_to_approxDP`` + ``make_fix_delta``) on the table's split order.
:func:`make_table_selection` is ``make_table_encoding(embedding="one_hot") >> <a selection from
the public candidate rows>`` under ``l_inf``, the table metric on the embedding.  The high-level
front doors (:func:`~opendp_wasserstein.tables.release.synthesize_table`,
:func:`~opendp_wasserstein.tables.release.select_table_candidates`) build these chains, call
them, and report their ``map(1)``.

**Privacy map** (:doc:`/proofs/table_release`): the encoding is row-wise (``d_out = d_in``, under
``symmetric_distance`` and, sized, ``change_one_distance``); on a sized domain under
``symmetric_distance`` a one-tree mechanism, built for ``change_one_distance``, is reached
through the identity with ``d_out = d_in // 2`` (two data sets of ``n`` rows at symmetric
distance ``d_in`` differ by at most ``d_in // 2`` replacements); the decoding is
post-processing.  OpenDP's chaining composes the maps: the chain's ``map`` is the mechanism's
map at the encoding's ``d_out``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.combinators import make_approx_dp
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_metric
from opendp_wasserstein.release.measurement import selection_measurement, synthesis_measurement
from opendp_wasserstein.release.options import (
    MECHANISMS,
    SELECTION_MECHANISMS,
    SelectionOptions,
    SynthesisOptions,
    as_bounds,
)
from opendp_wasserstein.tables.domain import check_table_domain
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import FrameInfo, read_table
from opendp_wasserstein.tables.pipeline import (
    StructuredOptions,
    make_structured_synthesis,
    structured_zcdp,
)
from opendp_wasserstein.tables.schema import Schema
from opendp_wasserstein.tables.transformation import make_table_decoding, make_table_encoding

__all__ = [
    "SYNTHESIS_MECHANISMS",
    "SPLIT_ORDERS",
    "make_table_synthesis",
    "then_table_synthesis",
    "make_table_selection",
    "then_table_selection",
    "table_synthesis",
    "encode_candidates",
]

#: the mechanisms of :func:`make_table_synthesis`: ``"structured"`` (the default) and the
#: one-tree mechanisms on the table's hierarchy
SYNTHESIS_MECHANISMS = ("structured", *MECHANISMS)

#: the split orders of the one-tree mechanisms (:meth:`TableEncoding.split_order`)
SPLIT_ORDERS = ("discrete-first", "cyclic")

#: the fields of :class:`~opendp_wasserstein.release.options.SynthesisOptions` a one-tree
#: mechanism takes in ``options`` (the others are parameters of the constructor or the domain's)
_TREE_FIELDS = (
    "epsilon_select",
    "depth",
    "placement",
    "epsilon_size",
    "consistency",
    "threshold",
    "score",
)


def _to_replacements(domain: Domain) -> Transformation:
    """The identity from ``symmetric_distance`` to ``change_one_distance`` on a sized domain:
    two data sets of ``n`` rows at symmetric distance ``d_in`` differ by ``d_in // 2``
    replacements at most (their symmetric difference is even)."""

    def stability(d_in: Any) -> int:
        if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)) or d_in < 0:
            raise ValueError("d_in must be a non-negative integer")
        return int(d_in) // 2

    return make_transformation(
        domain,
        dp.symmetric_distance(),
        domain,
        dp.change_one_distance(),
        lambda x: x,
        stability,
    )


def _tree_options(options: Any) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            "options of a one-tree mechanism must be a mapping of "
            f"{list(_TREE_FIELDS)} (a StructuredOptions is for mechanism='structured')"
        )
    unknown = sorted(str(k) for k in options if k not in _TREE_FIELDS)
    if unknown:
        raise ValueError(
            f"options: {unknown} are not options of the one-tree mechanisms {list(_TREE_FIELDS)}"
        )
    return dict(options)


def table_synthesis(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    mechanism: str = "structured",
    delta: float | None = None,
    options: Any = None,
    split_order: str | None = None,
    kind: str | FrameInfo = "pandas",
) -> tuple[Measurement, float | None]:
    """:func:`make_table_synthesis`, and with ``delta`` the ``rho`` of the zCDP variant (else
    None): what the front door reports besides the map."""
    assert_features("contrib")
    desc = check_table_domain(input_domain)
    size = desc.size
    check_metric(input_metric, size)
    if mechanism not in SYNTHESIS_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SYNTHESIS_MECHANISMS}, got {mechanism!r}")
    enc = TableEncoding(desc.schema)
    encoding = make_table_encoding(input_domain, input_metric)
    decoding = make_table_decoding(input_domain, kind)
    if mechanism == "structured":
        if split_order is not None:
            raise ValueError(
                "split_order applies to the one-tree mechanisms: the structured release chooses "
                "its orders (StructuredOptions.alphas)"
            )
        if options is not None and not isinstance(options, StructuredOptions):
            raise TypeError("options of mechanism='structured' must be a StructuredOptions")
        if size is None:
            raise ValueError(
                "mechanism='structured' needs a sized input_domain (a public number of rows); "
                "use mechanism='adaptive' for a private size"
            )
        if delta is not None:  # the zCDP release, restated in (epsilon, delta) by OpenDP
            zcdp, rho_zcdp = structured_zcdp(
                encoding.output_domain, encoding.output_metric, enc, epsilon, delta, options
            )
            return encoding >> make_approx_dp(zcdp, delta) >> decoding, rho_zcdp
        inner = make_structured_synthesis(
            encoding.output_domain, encoding.output_metric, enc, epsilon, options
        )
        return encoding >> inner >> decoding, None
    order = "discrete-first" if split_order is None else split_order
    if order not in SPLIT_ORDERS:
        raise ValueError(f"split_order must be one of {SPLIT_ORDERS}, got {split_order!r}")
    opts = SynthesisOptions(
        epsilon=epsilon,
        mechanism=mechanism,
        delta=delta,
        public_size=size is not None,
        **_tree_options(options),
    )
    inner, rho = synthesis_measurement(
        opts,
        d=enc.dimension,
        n=size,
        box=as_bounds((0.0, 1.0), enc.dimension),
        order=enc.split_order(order),
    )
    if size is not None and input_metric == dp.symmetric_distance():
        inner = _to_replacements(encoding.output_domain) >> inner
    return encoding >> inner >> decoding, rho


def make_table_synthesis(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    mechanism: str = "structured",
    delta: float | None = None,
    options: Any = None,
    split_order: str | None = None,
    kind: str | FrameInfo = "pandas",
) -> Measurement:
    r"""Construct the synthetic-table release: ``make_table_encoding >> synthesis >> decoding``.

    **Proof Definition:** :doc:`/proofs/table_release`

    With ``mechanism="structured"`` the synthesis is
    :func:`~opendp_wasserstein.tables.pipeline.make_structured_synthesis` (a DP first look at
    every column, then the pair tree, the joint hierarchy or independent columns; sized domain;
    pure DP, or with ``delta`` its zCDP variant, discrete Gaussian noise, at ``rho =
    rho_for_approx_dp(epsilon, delta)`` converted by OpenDP); otherwise the one-tree mechanism
    of :func:`opendp_wasserstein.synthesize` of that name on the table's split order
    (``epsilon`` per replacement on a sized domain, per added or removed record without a size;
    with ``delta`` the zCDP variant at ``rho = rho_for_approx_dp(epsilon, delta)`` converted by
    OpenDP, sized domains only).

    :param input_domain: :func:`~opendp_wasserstein.tables.table_domain` ``(schema, size)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param epsilon: the budget: per replacement (``change_one_distance`` d_in = 1, or
        ``symmetric_distance`` d_in = 2) on a sized domain, per added or removed record
        (``symmetric_distance`` d_in = 1) without a size
    :param mechanism: one of :data:`SYNTHESIS_MECHANISMS` (default ``"structured"``)
    :param delta: ``None`` (pure DP) or a ``delta`` in ``(0, 1)``: ``(epsilon, delta)``-DP,
        mechanisms ``"structured"`` (not with ``joint="tree"``), ``"adaptive"``, ``"pruned"``,
        ``"pmm"`` on a sized domain
    :param options: ``"structured"``: a
        :class:`~opendp_wasserstein.tables.pipeline.StructuredOptions` (default its defaults);
        the one-tree mechanisms: a mapping of ``epsilon_select``, ``depth``, ``placement``,
        ``epsilon_size``, ``consistency``, ``threshold``, ``score`` (the parameters of
        :func:`opendp_wasserstein.synthesize` of the same names)
    :param split_order: the one-tree mechanisms: ``"discrete-first"`` (default) or ``"cyclic"``
    :param kind: the output type (:func:`~opendp_wasserstein.tables.make_table_decoding`):
        ``"pandas"`` (default), ``"polars"``, ``"polars-lazy"``, ``"arrow"``, ``"numpy"``, or a
        :class:`~opendp_wasserstein.tables.FrameInfo`
    :return: a Measurement from tables of the domain to a synthetic table; ``max_divergence``
        (``approximate(max_divergence)`` with ``delta``)

    :example:

    >>> import numpy as np, pandas as pd, opendp.prelude as dp
    >>> from opendp_wasserstein.tables import Schema, table_domain, make_table_synthesis
    >>> dp.enable_features("contrib")
    >>> schema = Schema.from_json({"columns": {
    ...     "age": {"type": "int", "bounds": [0, 100]},
    ...     "region": {"type": "categorical", "categories": ["n", "e", "s", "w"]}}})
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.integers(20, 70, 500), "region": rng.choice(["n", "e"], 500)})
    >>> meas = make_table_synthesis(table_domain(schema, size=500), dp.change_one_distance(), 1.0)
    >>> meas.map(1) <= 1.0
    True
    >>> out = meas(df)
    >>> list(out.columns), len(out)
    (['age', 'region'], 500)
    >>> approx = make_table_synthesis(
    ...     table_domain(schema, size=500), dp.change_one_distance(), 1.0, "adaptive", delta=1e-9)
    >>> approx.map(1)
    (1.0, 1e-09)
    """
    return table_synthesis(
        input_domain, input_metric, epsilon, mechanism, delta, options, split_order, kind
    )[0]


then_table_synthesis = to_then(make_table_synthesis)
register(make_table_synthesis)


def check_public_candidates(cols: Mapping[str, Any], schema: Schema) -> None:
    """Candidate rows are public, so bad values are refused by row number (the data's are
    imputed or clamped instead, a fixed map for every record): a missing value in a column that
    is not nullable, and a NaN or infinite number."""

    for name, col in cols.items():
        spec = schema[name]
        missing = np.asarray(col.missing, dtype=bool)
        if missing.any() and not spec.nullable:
            rows = np.flatnonzero(missing)[:5].tolist()
            raise ValueError(
                f"candidates: column {name!r} is not nullable but has missing values (rows {rows})"
            )
        values = np.asarray(col.values)
        if values.dtype.kind == "f":
            bad = ~np.isfinite(values) & ~missing
            if bad.any():
                rows = np.flatnonzero(bad)[:5].tolist()
                raise ValueError(
                    f"candidates: column {name!r} has NaN or infinite values (rows {rows}); "
                    "candidates must be finite"
                )


def encode_candidates(schema: Schema, candidates: Any) -> np.ndarray:
    """The public candidate table in the one-hot embedding of ``schema``'s encoding (the
    candidates have exactly the schema's columns, in any order; bad values refused by row)."""
    cols, _ = read_table(candidates, schema)
    check_public_candidates(cols, schema)
    enc = TableEncoding(schema)
    return enc.embed(enc.encode(cols))


def make_table_selection(
    input_domain: Domain,
    input_metric: Metric,
    candidates: Any,
    m: int,
    epsilon: float,
    mechanism: str = "projection",
) -> Measurement:
    r"""Construct the selection from public candidate rows:
    ``make_table_encoding(embedding="one_hot") >> selection`` under ``l_inf`` (the table metric).

    **Proof Definition:** :doc:`/proofs/table_release`

    The selection is the mechanism of :func:`opendp_wasserstein.select_candidates` of that name
    (:func:`~opendp_wasserstein.measurements.make_tree_projection`,
    :func:`~opendp_wasserstein.measurements.make_tree_em`,
    :func:`~opendp_wasserstein.measurements.make_nn_histogram`) on the embedded candidates.

    :param input_domain: :func:`~opendp_wasserstein.tables.table_domain` ``(schema, size)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param candidates: the public candidate table (a supported type) with exactly the schema's
        columns, in any order; a missing value in a column that is not nullable, a NaN or
        infinite number, or two rows that encode to one point are refused by row number
    :param m: the multiset size
    :param epsilon: the budget: per replacement on a sized domain (``change_one_distance``
        d_in = 1, ``symmetric_distance`` d_in = 2), per added or removed record without a size
    :param mechanism: one of ``"projection"`` (default), ``"tree-em"`` (sized only), ``"nn"``
    :return: a Measurement from tables of the domain to one multiplicity per candidate row
        (summing to ``m``)

    :example:

    >>> import numpy as np, pandas as pd, opendp.prelude as dp
    >>> from opendp_wasserstein.tables import Schema, table_domain, make_table_selection
    >>> dp.enable_features("contrib")
    >>> schema = Schema.from_json({"columns": {
    ...     "age": {"type": "int", "bounds": [0, 100]},
    ...     "region": {"type": "categorical", "categories": ["n", "e"]}}})
    >>> df = pd.DataFrame({"age": [30, 31, 60] * 100, "region": ["n", "n", "e"] * 100})
    >>> cands = pd.DataFrame({"region": ["n", "e"], "age": [30, 60]})
    >>> meas = make_table_selection(
    ...     table_domain(schema, size=300), dp.change_one_distance(), cands, 10, 1.0)
    >>> meas.map(1)
    1.0
    >>> int(sum(meas(df)))
    10
    """
    assert_features("contrib")
    desc = check_table_domain(input_domain)
    size = desc.size
    check_metric(input_metric, size)
    if mechanism not in SELECTION_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SELECTION_MECHANISMS}, got {mechanism!r}")
    opts = SelectionOptions(
        epsilon=epsilon, mechanism=mechanism, metric="linf", public_size=size is not None
    )
    points = encode_candidates(desc.schema, candidates)
    encoding = make_table_encoding(input_domain, input_metric, embedding="one_hot")
    inner = selection_measurement(opts, p=points.shape[1], n=size, candidates=points, m=m)
    if size is not None and input_metric == dp.symmetric_distance():
        inner = _to_replacements(encoding.output_domain) >> inner
    return encoding >> inner


then_table_selection = to_then(make_table_selection)
register(make_table_selection)
