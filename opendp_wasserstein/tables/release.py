"""Releases on tables: a synthetic table, and a private choice among public candidate rows.

:func:`synthesize_table` reads the table under the schema, encodes it, synthesises and decodes
back to the same type; the mechanism runs on the encoded points in ``[0, 1]^D`` (box
``(0, 1)``).  :func:`select_table_candidates` encodes data and candidate tables (candidates
matched to the data by column name) into the one-hot embedding, where ``l_inf`` is the table
metric, and runs a public-candidate mechanism there.  Encoding is row-wise (one record in, one
point out), so the certified privacy loss of a release is the one of the mechanism on the
points, plus the ``epsilon_spent`` of the schema if its bounds were estimated privately
(sequential composition).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.parameters import check_epsilon
from opendp_wasserstein.release.in_memory import select_array_candidates as select_candidates
from opendp_wasserstein.release.in_memory import synthesize_array as synthesize
from opendp_wasserstein.release.reports import SynthesisReport
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import column_names, read_table, write_table
from opendp_wasserstein.tables.pipeline import make_structured_synthesis
from opendp_wasserstein.tables.schema import Schema

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
            "(derived_from_data: true) and are not private: replace them with public values "
            "and delete "
            f"the marks, or pass {flag} (the release is then not private with respect to them)"
        )
    return derived


def _check_public_candidates(cols: dict[str, Any], schema: Schema) -> None:
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


def synthesize_table(
    data: Any,
    epsilon: float,
    schema: Schema,
    columns: Sequence[str] | None = None,
    accept_data_derived_schema: bool = False,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """A private synthetic table of the same type, names and dtypes as ``data``.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param epsilon: the release's budget per replaced record
    :param schema: the public schema (columns of ``data`` not in it are refused by name)
    :param columns: use only these columns
    :param accept_data_derived_schema: release even if the schema has bounds or categories read
        off the data (``derived_from_data``; not private): refused by default
    :param kwargs: passed to :func:`~opendp_wasserstein.release.in_memory.synthesize_array`
        (``mechanism``, ...); ``split_order`` is ``"discrete-first"`` (default) or ``"cyclic"``
        (:meth:`~opendp_wasserstein.tables.TableEncoding.split_order`)
    :return: the synthetic table and the :class:`~opendp_wasserstein.api.SynthesisReport`,
        whose ``epsilon`` includes the schema's ``epsilon_spent``
    """
    if not isinstance(schema, Schema):
        raise TypeError(
            "schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)"
        )
    cols, info = read_table(data, schema, columns)
    sub = schema.select(list(info.names))
    check_derived(sub, accept_data_derived_schema)
    enc = TableEncoding(sub)
    points = enc.encode(cols)
    structured = kwargs.pop("structured", None)
    if structured is not None and structured is not False:
        options = None if structured is True else structured
        return _structured(points, epsilon, sub, enc, info, schema, options, kwargs)
    order = kwargs.pop("split_order", None)
    split = enc.split_order("discrete-first" if order is None else order)
    synthetic, report = synthesize(points, epsilon, bounds=(0.0, 1.0), split_order=split, **kwargs)
    out = write_table(enc.decode(synthetic), sub, info)
    total = round_up(Fraction(report.epsilon) + Fraction(schema.epsilon_spent))
    details = {
        **report.details,
        "epsilon_release": report.epsilon,
        "epsilon_schema": schema.epsilon_spent,
        "axes": [f"{a.column}:{a.role}" for a in enc.axes],
        "split_order": "discrete-first" if order is None else order,
    }
    return out, replace(report, epsilon=total, details=details)


def _structured(
    points: Any,
    epsilon: float,
    sub: Schema,
    enc: TableEncoding,
    info: Any,
    schema: Schema,
    options: Any,
    kwargs: dict[str, Any],
) -> tuple[Any, Any]:
    """The structured release (:mod:`~opendp_wasserstein.tables.pipeline`) of encoded points."""

    unknown = {
        k: v
        for k, v in kwargs.items()
        if v is not None and k not in ("mechanism", "public_size", "placement")
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
    assert_features("contrib")
    eps = check_epsilon(epsilon)
    n = points.shape[0]
    if n < 1:
        raise ValueError("the table must have at least one row (the size is public)")
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=n, T=float, nan=False)
    meas = make_structured_synthesis(dom, dp.change_one_distance(), enc, eps, options)
    t0 = time.perf_counter()
    with runtime.diagnostics() as records:
        y = meas(points)
    seconds = time.perf_counter() - t0
    details: dict[str, Any] = {}
    for r in records:
        details |= r
    certified = meas.map(1)
    out = write_table(enc.decode(y), sub, info)
    total = round_up(Fraction(certified) + Fraction(schema.epsilon_spent))
    details |= {
        "epsilon_release": certified,
        "epsilon_schema": schema.epsilon_spent,
        "axes": [f"{a.column}:{a.role}" for a in enc.axes],
        "split_order": (
            f"gower family (order {details.get('order_index', 0)} of "
            f"{details.get('num_orders', 1)})"
            if details.get("joint_kind") == "tree"
            else "tree of 2-way marginals"
            if details.get("joint_kind") == "pairs"
            else "independent columns"
        ),
    }
    if details.get("quality_poor"):
        warnings.warn(str(details["quality_warning"]), UserWarning, stacklevel=3)
    report = SynthesisReport(
        mechanism="structured",
        epsilon=total,
        depth=int(details.pop("depth", 0)),
        scales=tuple(details.pop("scales", ())),
        visited_nodes=int(details.pop("visited_nodes", 0)),
        size=int(y.shape[0]),
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
    columns may come in any order; with ``columns``, only those are used from both).  Both are
    encoded and one-hot embedded (:meth:`~opendp_wasserstein.tables.TableEncoding.embed`), where
    ``l_inf`` is the table metric, so the nearest candidate of a record is the nearest under the
    table metric.  Two candidate rows that encode to the same point (say two values clamped to
    the same bound) are refused by their row numbers (the candidates are public), and so are a
    missing value in a column that is not nullable and a NaN or infinite number in a candidate
    row (the data's are imputed and clamped: docs/tables.rst, "Missing and non-finite values").

    :param data: the sensitive table (pandas/Polars/pyarrow/numpy; not modified)
    :param candidates: the public candidate table, a supported type with the same columns
    :param m: the multiset size
    :param epsilon: the release's budget (see :func:`opendp_wasserstein.api.select_candidates`)
    :param schema: the public schema
    :param columns: use only these columns of both tables
    :param accept_data_derived_schema: as for :func:`synthesize_table`
    :param kwargs: passed to :func:`~opendp_wasserstein.release.in_memory.select_array_candidates`
        (``mechanism``, ``public_size``)
    :return: one int64 multiplicity per candidate row (summing to ``m``) and the
        :class:`~opendp_wasserstein.api.SelectionReport`, whose ``epsilon`` includes the
        schema's ``epsilon_spent``
    """
    if not isinstance(schema, Schema):
        raise TypeError(
            "schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)"
        )
    cols, info = read_table(data, schema, columns)
    names = list(info.names)
    sub = schema.select(names)
    check_derived(sub, accept_data_derived_schema)
    cand_names = column_names(candidates, schema)
    absent = [c for c in names if c not in cand_names]
    if absent:
        raise ValueError(
            f"candidates: column(s) {absent} of the data are not in the candidate table; its "
            f"columns are {list(cand_names)}"
        )
    extra = [c for c in cand_names if c not in names]
    if extra and columns is None:
        raise ValueError(
            f"candidates: column(s) {extra} are not in the data (pass columns=... to use a subset)"
        )
    c_cols, _ = read_table(candidates, schema, names)
    _check_public_candidates(c_cols, sub)
    enc = TableEncoding(sub)
    points = enc.embed(enc.encode(cols))
    cand_points = enc.embed(enc.encode(c_cols))
    counts, report = select_candidates(points, cand_points, m, epsilon, metric="linf", **kwargs)
    total = round_up(Fraction(report.epsilon) + Fraction(schema.epsilon_spent))
    return counts, replace(report, epsilon=total)
