"""Drafting a schema from a table file, with data-derived marks or DP-estimated bounds.

:func:`draft_schema` drafts **every** column of the table, whatever its values: the draft's
column set is the table's (only a column of a type no schema column holds, in a file that
carries its types, such as Parquet, is skipped, on its public type).  Each column's type
follows the file's types.  Without a budget every bound, category list and nullable flag it
writes is read off the data, which is **not private**: every column carries
``derived_from_data: true`` and a release refuses them until a person replaces them (or says so
explicitly).  A text column with more than ``max_categories`` distinct values (an identifier,
free text) or none at all is drafted as a categorical column whose ``categories`` are left
``null``, to be filled in with a public list (or the column deleted): one record never decides
whether a column is in the draft, and no draft lists thousands of the data's identifiers.

With ``epsilon`` the bounds of numeric and datetime columns are found instead with OpenDP's
private quantile (:func:`opendp.measurements.make_private_quantile`) at the 5% and 95%
quantiles over a public grid of candidates, widened by a quarter of their distance on each
side (not below 0 when the lower estimate is not negative: post-processing), and the schema
records the spent ``epsilon_spent`` so that a release built on it reports the sum.  The budget
is split evenly over those columns; of each column's share, :data:`COUNT_SHARE` buys an OpenDP
Laplace count of its values and the rest is split over its two quantiles.  The quantile score
cannot tell apart candidates that all lie below (or above) the data, so the estimate is
reliable only when the column has enough values for its budget: roughly
``n * epsilon_per_quantile >= 500`` (:data:`RELIABLE_N_EPSILON`; e.g. 5000 rows at 0.1 per
quantile).  The DP count (never the exact ``n``) is what the draft checks against that rule:
a column that fails it is reported in :attr:`DraftReport.unreliable`, with the epsilon that
would meet it.  Every message of a draft with ``epsilon`` derives from those DP outputs, the
public budget and the file's public column names and types only (category lists, still read
off the data, stay marked).

**Nullable.**  A draft with ``epsilon`` marks no column nullable: whether a column has missing
values is a fact about the data, which the DP outputs do not tell.  Declare a column nullable
with ``nullable=[...]`` (``schema --nullable a,b``) or by writing ``"nullable": true`` in the
schema; a missing value in a column that is not nullable is imputed (the midpoint of a numeric
column's bounds, a categorical column's fallback).  Without ``epsilon`` the draft marks the
columns that hold missing values nullable (read off the data, like everything in that draft).
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from opendp_wasserstein.core import dp
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.tables.schema import (
    BoolColumn,
    CategoricalColumn,
    ColumnSpec,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)

__all__ = [
    "draft_schema",
    "DraftReport",
    "numeric_candidates",
    "datetime_candidates",
    "make_bounds_quantile",
    "make_bounds_count",
    "COUNT_SHARE",
    "RELIABLE_N_EPSILON",
]

_DAY_US = 86_400_000_000
QUANTILES = (0.05, 0.95)
#: the estimated [q05, q95] interval is widened by this share of its width on each side
WIDEN = 0.25
#: the share of each estimated column's budget spent on the DP count of its values
COUNT_SHARE = Fraction(1, 10)
#: a column's bounds estimate is reliable when (its DP count) x (epsilon per quantile) reaches this
RELIABLE_N_EPSILON = 500


def numeric_candidates(integer: bool = False) -> list[float]:
    """The public grid for numeric bounds: 0 and +-10^(k/16) for k = -96..192 (1e-6 .. 1e12).

    Neighbouring candidates are 15% apart: the quantile score cannot tell apart candidates
    that lie below (or above) all the data, so the grid must be fine enough that one lies near
    the quantile, where the score is far better."""
    mags = 10.0 ** (np.arange(-96, 193) / 16.0)
    grid = np.concatenate([-mags[::-1], [0.0], mags])
    if integer:
        grid = np.unique(np.round(grid))
    return [float(v) for v in grid]


def datetime_candidates() -> list[float]:
    """The public grid for datetime bounds: the first of every month, 1900-01 .. 2100-01 (us)."""
    out = []
    for year in range(1900, 2101):
        for month in range(1, 13):
            if year == 2100 and month > 1:
                break
            out.append(float((_dt.date(year, month, 1) - _dt.date(1970, 1, 1)).days * _DAY_US))
    return out


def make_bounds_quantile(candidates: list[float], alpha: float, epsilon: float) -> Any:
    """OpenDP's private quantile over ``candidates`` whose map is at most ``epsilon`` for one
    replaced record (symmetric distance 2 on the column's non-missing values)."""
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(
            domain,
            dp.symmetric_distance(),
            dp.max_divergence(),
            candidates=candidates,
            alpha=alpha,
            scale=scale,
        )

    return _fit(make, float(make(1.0).map(2)) / epsilon, epsilon)


def make_bounds_count(epsilon: float) -> Any:
    """OpenDP's count of a column's (non-missing) values with Laplace noise whose map is at most
    ``epsilon`` for one replaced record (symmetric distance 2, as for the quantiles)."""

    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))

    def make(scale: float) -> Any:
        return dp.t.make_count(domain, dp.symmetric_distance()) >> dp.m.then_laplace(scale)

    return _fit(make, 2.0 / epsilon, epsilon)


def _fit(make: Any, scale: float, epsilon: float) -> Any:
    """``make(scale')`` for the least float ``scale' >= scale`` found (one float at a time, then
    faster) whose map at symmetric distance 2 is at most ``epsilon``: rounding may put the first
    try just above."""
    meas = make(scale)
    step = 0
    while meas.map(2) > epsilon:
        scale = float(np.nextafter(scale, np.inf)) if step < 64 else scale * (1 + 1e-12)
        step += 1
        meas = make(scale)
    return meas


@dataclass(frozen=True)
class DraftReport:
    """What :func:`draft_schema` did.

    :param schema: the drafted columns that have nothing left to fill in, in the table's order
        (``None`` if every drafted column has something left to fill in)
    :param to_fill: ``{column: what to fill in}`` for the drafted columns whose ``bounds`` or
        ``categories`` are left ``null`` (they are in :meth:`dumps`, not in ``schema``)
    :param skipped: ``{column: reason}`` for columns of a type no schema column holds, in a file
        that carries its types (the reason is the public type)
    :param epsilon_spent: the privacy loss of the DP counts and estimated bounds (per replaced
        record)
    :param dp_counts: with ``epsilon``: the DP count of each estimated column's values
    :param unreliable: with ``epsilon``: ``{column: why}`` for the columns whose DP count says
        their bounds estimate is unreliable (``n * epsilon_per_quantile`` below
        :data:`RELIABLE_N_EPSILON`), naming the epsilon that would meet the rule
    :param entries: the JSON entry of every drafted column, in the table's order
    """

    schema: Schema | None
    to_fill: dict[str, str]
    skipped: dict[str, str]
    epsilon_spent: float
    dp_counts: dict[str, int] = field(default_factory=dict)
    unreliable: dict[str, str] = field(default_factory=dict)
    entries: tuple[tuple[str, dict[str, Any]], ...] = ()

    @property
    def columns(self) -> list[str]:
        """Every drafted column (``schema``'s and ``to_fill``'s), in the table's order."""
        return [n for n, _ in self.entries]

    def dumps(self) -> str:
        """The JSON text of the draft, one column per line, with ``null`` where something is left
        to fill in (:meth:`Schema.from_json` refuses it, naming the column, until it is filled)."""
        cols = ",\n".join(f"  {json.dumps(n)}: {json.dumps(e)}" for n, e in self.entries)
        extra = (
            f',\n"epsilon_spent": {json.dumps(self.epsilon_spent)}' if self.epsilon_spent else ""
        )
        return '{"columns": {\n' + cols + "\n}" + extra + "}\n"


def _is_type(t: Any, name: str) -> bool:
    return bool(getattr(pa.types, f"is_{name}")(t))


def _is_text(t: Any) -> bool:
    return _is_type(t, "string") or _is_type(t, "large_string") or _is_type(t, "dictionary")


def _is_numeric(t: Any) -> bool:
    temporal = _is_type(t, "temporal") and not (_is_type(t, "time") or _is_type(t, "duration"))
    return _is_type(t, "integer") or _is_type(t, "floating") or temporal


def draft_schema(
    table: Any,
    max_categories: int = 50,
    epsilon: float | None = None,
    types_from_data: bool = False,
    nullable: Sequence[str] = (),
) -> DraftReport:
    """A draft schema for a :class:`pyarrow.Table` (e.g. from
    :func:`~opendp_wasserstein.tables.io.read_file`).

    :param table: the data (read, never modified)
    :param max_categories: a text column with more distinct values (an identifier, say) is
        drafted with its ``categories`` left to fill in with a public list
    :param epsilon: if given, numeric and datetime bounds are estimated privately with this
        total budget (split evenly over those columns; of each share, :data:`COUNT_SHARE` buys a
        DP count of the column's values, the rest its two quantiles)
    :param types_from_data: the table's column types were inferred from its values (a text
        file: one ``2.5`` makes an integer column float, one word makes it text), so they are not
        private either: with ``epsilon``, the columns whose bounds are private are still marked
        ``derived_from_data`` (for their type) until a person reviews them; and a column of a
        type no schema column holds is drafted as text, never skipped
    :param nullable: the columns to declare nullable (a public choice); with ``epsilon`` no
        other column is nullable, without it also those that hold missing values
    """
    if not isinstance(table, pa.Table):
        raise TypeError("table must be a pyarrow Table")
    if (
        isinstance(max_categories, bool)
        or not isinstance(max_categories, int)
        or max_categories < 1
    ):
        raise ValueError("max_categories must be an integer >= 1")
    asked = [nullable] if isinstance(nullable, str) else list(nullable)
    absent = [c for c in asked if c not in table.column_names]
    if absent:
        raise SchemaError(f"nullable column(s) {absent} are not in the table")
    entries: list[tuple[str, dict[str, Any]]] = []
    specs: list[tuple[str, ColumnSpec]] = []
    to_fill: dict[str, str] = {}
    skipped: dict[str, str] = {}
    counts: dict[str, int] = {}
    unreliable: dict[str, str] = {}
    numeric = [f.name for f in table.schema if _is_numeric(f.type)]
    share = None
    spent = Fraction(0)
    if epsilon is not None:
        if not (epsilon > 0 and np.isfinite(epsilon)):
            raise ValueError("epsilon must be finite and > 0")
        if numeric:
            share = Fraction(epsilon) / len(numeric)
    private = epsilon is not None

    def add(name: str, spec: ColumnSpec) -> None:
        specs.append((name, spec))
        entries.append((name, spec.to_json()))

    def leave(name: str, entry: dict[str, Any], why: str) -> None:
        to_fill[name] = why
        entries.append((name, {k: v for k, v in entry.items() if v is not False}))

    for fld in table.schema:
        name, t = fld.name, fld.type
        col = table.column(name)
        # with epsilon nothing about missing values is known: nullable only where asked
        null = name in asked or (not private and col.null_count > 0)
        if name in numeric:
            integer = _is_type(t, "integer")
            temporal = _is_type(t, "temporal")
            kind = "datetime" if temporal else ("int" if integer else "float")
            if temporal:
                values = (
                    pc.cast(col.drop_null(), pa.timestamp("us"))
                    .cast(pa.int64())
                    .to_numpy()
                    .astype(np.float64)
                    if not _is_type(t, "date")
                    else (col.drop_null().cast(pa.int32()).to_numpy().astype(np.float64) * _DAY_US)
                )
            else:
                values = col.drop_null().to_numpy().astype(np.float64)
                values = values[np.isfinite(values)] if not integer else values
            if share is not None:
                grid = datetime_candidates() if temporal else numeric_candidates(integer)
                count = make_bounds_count(_float_down(share * COUNT_SHARE))
                spent += Fraction(count.map(2))
                n_dp = int(count(values.tolist()))
                counts[name] = n_dp
                eps_q = _float_down(share * (1 - COUNT_SHARE) / 2)
                est = []
                for alpha in QUANTILES:
                    meas = make_bounds_quantile(grid, alpha, eps_q)
                    spent += Fraction(meas.map(2))
                    est.append(float(meas(values.tolist())))
                if n_dp * eps_q < RELIABLE_N_EPSILON:
                    unreliable[name] = _unreliable(n_dp, eps_q, float(epsilon))  # type: ignore[arg-type]
                lo, hi = min(est), max(est)
                if lo >= hi:
                    above = [g for g in grid if g > lo]
                    hi = above[0] if above else lo + 1.0
                width = hi - lo
                lo, hi = (
                    (max(lo - WIDEN * width, 0.0) if lo >= 0 else lo - WIDEN * width),
                    hi + WIDEN * width,
                )
                derived = types_from_data
            else:
                if len(values) == 0:
                    leave(
                        name,
                        {"type": kind, "bounds": None, "nullable": null, "derived_from_data": True},
                        "no values to read bounds from: write public bounds",
                    )
                    continue
                lo, hi = float(values.min()), float(values.max())
                if lo >= hi:
                    hi = lo + (_DAY_US if temporal else 1.0)
                derived = True
            if temporal:
                lo_i, hi_i = int(lo), int(hi)
                if _is_type(t, "date"):
                    lo_i, hi_i = lo_i // _DAY_US * _DAY_US, -(-hi_i // _DAY_US) * _DAY_US
                epoch = _dt.datetime(1970, 1, 1)
                b = (
                    epoch + _dt.timedelta(microseconds=lo_i),
                    epoch + _dt.timedelta(microseconds=hi_i),
                )
                add(name, DatetimeColumn(bounds=b, nullable=null, derived_from_data=derived))
            elif integer:
                add(
                    name,
                    IntColumn(
                        bounds=(int(np.floor(lo)), int(np.ceil(hi))),
                        nullable=null,
                        derived_from_data=derived,
                    ),
                )
            else:
                add(name, FloatColumn(bounds=(lo, hi), nullable=null, derived_from_data=derived))
        elif _is_type(t, "boolean"):
            # without epsilon the nullable flag was read off the data: marked like everything else
            add(name, BoolColumn(nullable=null, derived_from_data=types_from_data or not private))
        elif _is_text(t) or types_from_data:
            # a text file's types are the reader's inference: a column of another type (times,
            # or a column with no values at all) is drafted as text, never left out
            try:
                labels = pc.unique(col.drop_null().cast(pa.string()))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                labels = None
            entry = {
                "type": "categorical",
                "categories": None,
                "nullable": null,
                "derived_from_data": True,
            }
            if labels is None:
                leave(name, entry, "its values cannot be read as text: write the public categories")
            elif len(labels) == 0:
                leave(name, entry, "no values to read categories from: write the public categories")
            elif len(labels) > max_categories:
                leave(
                    name,
                    entry,
                    f"more than {max_categories} distinct values (an identifier?): write a public "
                    "category list, or leave the column out (delete it, or release the others "
                    "with --columns)",
                )
            else:
                cats = tuple(sorted(str(v) for v in labels.to_pylist()))
                add(name, CategoricalColumn(categories=cats, nullable=null, derived_from_data=True))
        else:
            skipped[name] = f"unsupported type {t}"
    if not entries:
        raise SchemaError("no column of the table could be drafted")
    eps_total = round_up(spent) if spent else 0.0
    schema = Schema(specs, epsilon_spent=eps_total) if specs else None
    return DraftReport(schema, to_fill, skipped, eps_total, counts, unreliable, tuple(entries))


def _float_down(x: Fraction) -> float:
    """The largest float ``<= x``: the maps of the parts then sum to at most the budget, exactly."""
    f = float(x)
    return float(np.nextafter(f, -np.inf)) if Fraction(f) > x else f


def _unreliable(n_dp: int, eps_q: float, epsilon: float) -> str:
    """Why a column's estimate is unreliable, from its DP count and the public budget only."""
    product = n_dp * eps_q
    head = (
        f"its DP count of values is {n_dp}, and {n_dp} x {eps_q:.3g} (epsilon per quantile) = "
        f"{product:.3g} is below the {RELIABLE_N_EPSILON} a reliable estimate needs"
    )
    if n_dp <= 0:
        return head + ": too few values to estimate bounds; write public bounds"
    need = epsilon * RELIABLE_N_EPSILON / product
    return head + (
        f"; --estimate-bounds {_round_up_2(need)} would meet it (a new draft spends its "
        "epsilon again), or write public bounds"
    )


def _round_up_2(x: float) -> str:
    """``x`` rounded up to two significant digits, as text."""
    e = int(np.floor(np.log10(x))) - 1
    v = np.ceil(x / 10.0**e) * 10.0**e
    return f"{v:.{max(0, -e)}f}"
