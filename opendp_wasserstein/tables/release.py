"""Releases on tables: a synthetic table, and a private choice among public candidate rows.

:func:`synthesize_table` and :func:`select_table_candidates` check the table's columns against
the schema (names and dtypes only: no value is read), keep the chosen columns, build the OpenDP
chain of :mod:`~opendp_wasserstein.tables.measurement` (``make_table_encoding >> <the mechanism
on the encoded points> >> decoding``, or ``>> <the selection>`` in the one-hot embedding, where
``l_inf`` is the table metric) on ``table_domain(schema, n)`` and call it once; the release's
certified privacy loss is the chain's ``map(1)``.

**The schema's budget.**  A schema whose bounds were estimated privately (``schema`` with
``--estimate-bounds``) records the loss of that earlier release in ``epsilon_spent`` (per
replaced record; its measurements run under ``symmetric_distance``, so it is also a bound per
added or removed record).  The report's ``epsilon`` is the sequential composition of the two
releases: the chain's map plus ``epsilon_spent``, summed over the rationals and rounded up
(basic composition of pure DP; with ``delta`` the ``delta`` is the chain's alone, the schema's
release being pure).  The sum is written out, not built with an OpenDP combinator: the earlier
release ran before this one, in another call (often another process, on the file as it was),
so there is no measurement of it to compose, only its certified ``epsilon_spent``; a
composition combinator would have to invoke both.  The report keeps both parts
(``details["epsilon_release"]``, the chain's map, and ``details["epsilon_schema"]``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from opendp_wasserstein import runtime
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.release.options import check_public_size
from opendp_wasserstein.release.progress import check_progress, default_progress, progress_bar
from opendp_wasserstein.release.reports import SelectionReport, SynthesisReport, synthesis_report
from opendp_wasserstein.tables.domain import table_domain, table_rows
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import column_names, select_columns, table_info
from opendp_wasserstein.tables.measurement import make_table_selection, table_synthesis
from opendp_wasserstein.tables.schema import Schema
from opendp_wasserstein.tables.transformation import unsealed

__all__ = ["synthesize_table", "select_table_candidates"]


def check_derived(
    schema: Schema, accept: bool, flag: str = "accept_data_derived_schema=True"
) -> list[str]:
    """The columns of ``schema`` whose bounds or categories were read off the data (not private);
    refused unless the caller accepts them explicitly (``flag``: how, named in the message; the
    command line passes ``--accept-data-derived-schema``)."""
    derived = list(schema.data_derived_columns())
    if derived and not accept:
        raise ValueError(
            f"schema: the bounds or categories of column(s) {derived} were read off the data "
            "(derived_from_data: true) and are not private: replace them with public values and "
            f"delete the marks, or pass {flag} (the release is then not private with respect to "
            "them)"
        )
    return derived


def _prepare(
    data: Any, schema: Schema, columns: Sequence[str] | None, accept: bool, public: bool
) -> tuple[Any, Schema, Any, Any]:
    """The table restricted to the released columns, their schema, its public frame info and the
    table domain (sized when ``public``): names and dtypes checked, no value read."""
    if not isinstance(schema, Schema):
        raise TypeError(
            "schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)"
        )
    info = table_info(data, schema, columns)
    sub = schema.select(list(info.names))
    check_derived(sub, accept)
    x = select_columns(data, schema, info.names)
    size = None
    if public:
        size = table_rows(x)
        if size < 1:
            raise ValueError(
                "the table must have at least one row (the size is public: public_size=True)"
            )
    return x, sub, info, table_domain(sub, size)


def _bar(progress: Any, public: bool, x: Any, desc: str) -> Any:
    """The release's bar over its three stages (data checked, chain built, released), as for
    the array releases, made once the chain is built (a refused option leaves no bar):
    :func:`~opendp_wasserstein.release.progress.default_progress` decides on the row count only
    when the size is public (with a private size no bar is shown and the row count is not read
    here)."""
    rows = table_rows(x) if public else None
    steps = progress_bar(3, not default_progress(check_progress(progress), not public, rows), desc)
    steps.update(2)
    return steps


def _total(release: Any, schema: Schema) -> float:
    """The loss of the release composed with the schema's earlier one (module docstring)."""
    return round_up(Fraction(release) + Fraction(schema.epsilon_spent))


def synthesize_table(
    data: Any,
    epsilon: float,
    schema: Schema,
    columns: Sequence[str] | None = None,
    accept_data_derived_schema: bool = False,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """A private synthetic table of the same type, names and dtypes as ``data``.

    The release is one call of the chain
    :func:`~opendp_wasserstein.tables.measurement.make_table_synthesis` on
    ``table_domain(schema, n)`` (``n = len(data)``, public; ``None`` with ``public_size=False``)
    under ``change_one_distance`` (``symmetric_distance`` without a public size), and the
    report's ``details["epsilon_release"]`` is its ``map(1)``.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param epsilon: the release's budget per replaced record (per added or removed record with
        ``public_size=False``)
    :param schema: the public schema (columns of ``data`` not in it are refused by name)
    :param columns: use only these columns
    :param accept_data_derived_schema: release even if the schema has bounds or categories read
        off the data (``derived_from_data``; not private): refused by default
    :param kwargs: ``structured`` (True or a
        :class:`~opendp_wasserstein.tables.pipeline.StructuredOptions`: the structured release;
        with ``delta`` its discrete Gaussian, zCDP variant restated in ``(epsilon, delta)``),
        else ``mechanism``, ``public_size``, ``delta``, ``split_order`` (``"discrete-first"``,
        the default, or ``"cyclic"``) and the one-tree options of
        :func:`~opendp_wasserstein.synthesize` (``epsilon_select``, ``depth``, ``placement``,
        ``epsilon_size``, ``consistency``, ``threshold``, ``score``), and ``progress`` (None, the
        default, True or False: a bar over the release's stages, as for
        :func:`~opendp_wasserstein.synthesize`; never with a private size)
    :return: the synthetic table and the :class:`~opendp_wasserstein.api.SynthesisReport`,
        whose ``epsilon`` is the chain's map composed with the schema's ``epsilon_spent``
        (``details["epsilon_release"]`` and ``details["epsilon_schema"]``: the two parts)
    """
    structured = kwargs.pop("structured", None)
    progress = check_progress(kwargs.pop("progress", None))
    if structured is not None and structured is not False:
        options = None if structured is True else structured
        return _structured(
            data, epsilon, schema, columns, accept_data_derived_schema, options, kwargs, progress
        )
    mechanism = kwargs.pop("mechanism", None) or "adaptive"
    public = check_public_size(kwargs.pop("public_size", True))
    delta = kwargs.pop("delta", None)
    order = kwargs.pop("split_order", None)
    options = {k: v for k, v in kwargs.items() if v is not None}
    x, sub, info, domain = _prepare(data, schema, columns, accept_data_derived_schema, public)
    metric = dp.change_one_distance() if public else dp.symmetric_distance()
    meas, rho = table_synthesis(domain, metric, epsilon, mechanism, delta, options, order, info)
    steps = _bar(progress, public, x, "synth")
    t0 = time.perf_counter()
    with runtime.diagnostics() as records:
        out = unsealed(meas(x))
    seconds = time.perf_counter() - t0
    steps.update(1)
    steps.close()
    certified_delta = None
    if delta is not None:
        certified, certified_delta = meas.map(1)
    else:
        certified = meas.map(1)
    recorded: dict[str, Any] = {}
    for r in records:
        recorded |= r
    report = synthesis_report(
        mechanism,
        certified,
        recorded,
        table_rows(out),
        seconds if public else None,
        certified_delta,
        rho,
    )
    details = {
        **report.details,
        "epsilon_release": certified,
        "epsilon_schema": schema.epsilon_spent,
        "axes": [f"{a.column}:{a.role}" for a in TableEncoding(sub).axes],
        "split_order": "discrete-first" if order is None else order,
    }
    return out, replace(report, epsilon=_total(certified, schema), details=details)


def _structured(
    data: Any,
    epsilon: float,
    schema: Schema,
    columns: Sequence[str] | None,
    accept: bool,
    options: Any,
    kwargs: dict[str, Any],
    progress: bool | None = None,
) -> tuple[Any, Any]:
    """The structured release (:mod:`~opendp_wasserstein.tables.pipeline`) as one chain; with
    ``delta`` in ``kwargs`` its zCDP variant restated in ``(epsilon, delta)`` (the report's
    ``delta`` and ``details["rho"]``)."""

    unknown = {
        k: v
        for k, v in kwargs.items()
        if v is not None and k not in ("mechanism", "public_size", "placement", "delta")
    }
    if unknown:
        raise ValueError(
            f"option(s) {sorted(unknown)} do not apply to the structured table release"
        )
    if kwargs.get("mechanism", "adaptive") != "adaptive":
        raise ValueError(
            "the structured table release is adaptive: pass structured=False for other mechanisms"
        )
    if kwargs.get("public_size", True) is not True:
        raise ValueError("the structured table release needs public_size=True")
    delta = kwargs.get("delta")
    x, sub, info, domain = _prepare(data, schema, columns, accept, True)
    meas, rho = table_synthesis(
        domain, dp.change_one_distance(), epsilon, "structured", delta, options=options, kind=info
    )
    steps = _bar(progress, True, x, "synth")
    t0 = time.perf_counter()
    with runtime.diagnostics() as records:
        out = unsealed(meas(x))
    seconds = time.perf_counter() - t0
    steps.update(1)
    steps.close()
    details: dict[str, Any] = {}
    for r in records:
        details |= r
    certified_delta = None
    if delta is not None:
        certified, certified_delta = meas.map(1)
        details["rho"] = rho
    else:
        certified = meas.map(1)
    details |= {
        "epsilon_release": certified,
        "epsilon_schema": schema.epsilon_spent,
        "axes": [f"{a.column}:{a.role}" for a in TableEncoding(sub).axes],
        "split_order": (
            f"gower family (order {details.get('order_index', 0)} of "
            f"{details.get('num_orders', 1)})"
            if details.get("joint_kind") == "tree"
            else "tree of 2-way marginals"
            if details.get("joint_kind") == "pairs"
            else "network of 2- and 3-way tables"
            if details.get("joint_kind") == "network"
            else "gaussian copula of pair counts"
            if details.get("joint_kind") == "copula" and details.get("copula_pairs")
            else "independent columns"
        ),
    }
    if details.get("quality_poor"):
        warnings.warn(str(details["quality_warning"]), UserWarning, stacklevel=3)
    report = SynthesisReport(
        mechanism="structured",
        epsilon=_total(certified, schema),
        delta=certified_delta,
        depth=int(details.pop("depth", 0)),
        scales=tuple(details.pop("scales", ())),
        visited_nodes=int(details.pop("visited_nodes", 0)),
        size=table_rows(out),
        seconds=seconds,
        details=details,
    )
    return out, report


def select_table_candidates(
    data: Any,
    candidates: Any,
    m: int,
    epsilon: float,
    schema: Schema,
    columns: Sequence[str] | None = None,
    accept_data_derived_schema: bool = False,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """Privately choose ``m`` of the public candidate rows close in W1 (table metric) to ``data``.

    Data and candidates are read under ``schema`` and matched by column name (the candidates'
    columns may come in any order; with ``columns``, only those are used from both).  The
    release is one call of the chain
    :func:`~opendp_wasserstein.tables.measurement.make_table_selection` (the encoding into the
    one-hot embedding, where ``l_inf`` is the table metric, then the selection), and the
    report's epsilon is its ``map(1)`` composed with the schema's ``epsilon_spent``.  Two
    candidate rows that encode to the same point (say two values clamped to the same bound)
    are refused by their row numbers (the candidates are public), and so are a missing value in
    a column that is not nullable and a NaN or infinite number in a candidate row (the data's
    are imputed and clamped: docs/tables.rst, "Missing and non-finite values").

    :param data: the sensitive table (pandas/Polars/pyarrow/numpy; not modified)
    :param candidates: the public candidate table, a supported type with the same columns
    :param m: the multiset size
    :param epsilon: the release's budget (see :func:`opendp_wasserstein.api.select_candidates`)
    :param schema: the public schema
    :param columns: use only these columns of both tables
    :param accept_data_derived_schema: as for :func:`synthesize_table`
    :param kwargs: ``mechanism`` (``"projection"``, ``"tree-em"``, ``"nn"``), ``public_size``
        and ``progress`` (as for :func:`synthesize_table`)
    :return: one int64 multiplicity per candidate row (summing to ``m``) and the
        :class:`~opendp_wasserstein.api.SelectionReport`, whose ``epsilon`` includes the
        schema's ``epsilon_spent``
    """
    unknown = sorted(k for k in kwargs if k not in ("mechanism", "public_size", "progress"))
    if unknown:
        raise TypeError(f"select_table_candidates got unexpected option(s) {unknown}")
    mechanism = kwargs.get("mechanism") or "projection"
    public = check_public_size(kwargs.get("public_size", True))
    x, _sub, info, domain = _prepare(data, schema, columns, accept_data_derived_schema, public)
    names = list(info.names)
    cand_names = column_names(candidates, schema)
    absent = [c for c in names if c not in cand_names]
    if absent:
        raise ValueError(
            f"candidates: column(s) {absent} of the data are not in the candidate table; "
            f"its columns are {list(cand_names)}"
        )
    extra = [c for c in cand_names if c not in names]
    if extra and columns is None:
        raise ValueError(
            f"candidates: column(s) {extra} are not in the data (pass columns=... to use a subset)"
        )
    cand_info = table_info(candidates, schema, names)
    cands = select_columns(candidates, schema, cand_info.names)
    metric = dp.change_one_distance() if public else dp.symmetric_distance()
    meas = make_table_selection(domain, metric, cands, m, epsilon, mechanism)
    steps = _bar(kwargs.get("progress"), public, x, "select")
    t0 = time.perf_counter()
    counts = np.asarray(meas(x), dtype=np.int64)
    seconds = time.perf_counter() - t0
    steps.update(1)
    steps.close()
    certified = meas.map(1)
    return counts, SelectionReport(
        mechanism,
        _total(certified, schema),
        int(m),
        int(counts.size),
        seconds if public else None,
    )
