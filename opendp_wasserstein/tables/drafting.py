"""Drafting a schema from a table file, with data-derived marks or DP-estimated bounds.

:func:`draft_schema` guesses each column's type from the file's types.  Without a budget every
bound, category list and nullable flag it writes is read off the data, which is **not private**:
those columns carry ``derived_from_data: true`` and a release refuses them until a person
replaces them (or says so explicitly).  With ``epsilon`` the bounds of numeric and datetime
columns are found instead with OpenDP's private quantile mechanism
(:func:`opendp.measurements.make_private_quantile`) at the 5% and 95% quantiles over a public
grid of candidates, widened by a quarter of their distance on each side (not below 0 when the
lower estimate is not negative: post-processing), those columns are declared nullable (a public choice, not read off the
data), and the schema records the spent ``epsilon_spent`` so that a release built on it reports
the sum.  Category lists are still read off the data and stay marked.

The quantile score cannot tell apart candidates that all lie below (or above) the data, so the
estimate is reliable only when the column has enough rows for its budget: roughly
``n * epsilon_per_quantile >= 500`` (e.g. 5000 rows at 0.1 per quantile).  Review the bounds.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

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

__all__ = ["draft_schema", "DraftReport", "numeric_candidates", "datetime_candidates", "make_bounds_quantile"]

_DAY_US = 86_400_000_000
QUANTILES = (0.05, 0.95)
#: the estimated [q05, q95] interval is widened by this share of its width on each side
WIDEN = 0.25


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
    import opendp.prelude as dp

    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(domain, dp.symmetric_distance(), dp.max_divergence(), candidates=candidates, alpha=alpha, scale=scale)

    scale = float(make(1.0).map(2)) / epsilon
    meas = make(scale)
    while meas.map(2) > epsilon:  # rounding: move the scale up until the map fits
        scale = float(np.nextafter(scale, np.inf)) * (1 + 1e-12)
        meas = make(scale)
    return meas


@dataclass(frozen=True)
class DraftReport:
    """What :func:`draft_schema` did.

    :param schema: the drafted schema
    :param skipped: ``{column: reason}`` for columns left out
    :param epsilon_spent: the privacy loss of the estimated bounds (per replaced record)
    """

    schema: Schema
    skipped: dict[str, str]
    epsilon_spent: float


def _is_type(t: Any, name: str) -> bool:
    import pyarrow as pa

    return bool(getattr(pa.types, f"is_{name}")(t))


def draft_schema(
    table: Any, max_categories: int = 50, epsilon: float | None = None, types_from_data: bool = False
) -> DraftReport:
    """A draft schema for a :class:`pyarrow.Table` (e.g. from :func:`~opendp_wasserstein.tables.io.read_file`).

    :param table: the data (read, never modified)
    :param max_categories: a text column with more distinct values is left out (an identifier,
        say); add it by hand with a public category list to use it
    :param epsilon: if given, numeric and datetime bounds are estimated privately with this
        total budget (split evenly over those columns and their two quantiles)
    :param types_from_data: the table's column types were inferred from its values (a text
        file: one ``2.5`` makes an integer column float, one word makes it text), so they are not
        private either: with ``epsilon``, the columns whose bounds are private are still marked
        ``derived_from_data`` (for their type) until a person reviews them
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(table, pa.Table):
        raise TypeError("table must be a pyarrow Table")
    specs: list[tuple[str, ColumnSpec]] = []
    skipped: dict[str, str] = {}
    numeric = [f.name for f in table.schema if _is_type(f.type, "integer") or _is_type(f.type, "floating") or _is_type(f.type, "temporal")]
    numeric = [n for n in numeric if not _is_type(table.schema.field(n).type, "time") and not _is_type(table.schema.field(n).type, "duration")]
    eps_each = None
    spent = Fraction(0)
    if epsilon is not None:
        if not (epsilon > 0 and np.isfinite(epsilon)):
            raise ValueError("epsilon must be finite and > 0")
        if numeric:
            eps_each = epsilon / (2 * len(numeric))
    for field in table.schema:
        name, t = field.name, field.type
        col = table.column(name)
        has_nulls = col.null_count > 0
        if name in numeric:
            integer = _is_type(t, "integer")
            temporal = _is_type(t, "temporal")
            if temporal:
                values = pc.cast(col.drop_null(), pa.timestamp("us")).cast(pa.int64()).to_numpy().astype(np.float64) if not _is_type(t, "date") else (col.drop_null().cast(pa.int32()).to_numpy().astype(np.float64) * _DAY_US)
            else:
                values = col.drop_null().to_numpy().astype(np.float64)
                values = values[np.isfinite(values)] if not integer else values
            if eps_each is not None:
                grid = datetime_candidates() if temporal else numeric_candidates(integer)
                est = []
                for alpha in QUANTILES:
                    meas = make_bounds_quantile(grid, alpha, eps_each)
                    spent += Fraction(meas.map(2))
                    est.append(float(meas(values.tolist())))
                lo, hi = min(est), max(est)
                if lo >= hi:
                    above = [g for g in grid if g > lo]
                    hi = above[0] if above else lo + 1.0
                width = hi - lo
                lo, hi = (max(lo - WIDEN * width, 0.0) if lo >= 0 else lo - WIDEN * width), hi + WIDEN * width
                nullable, derived = True, types_from_data
            else:
                if len(values) == 0:
                    skipped[name] = "no values to read bounds from"
                    continue
                lo, hi = float(values.min()), float(values.max())
                if lo >= hi:
                    hi = lo + (_DAY_US if temporal else 1.0)
                nullable, derived = has_nulls, True
            if temporal:
                lo_i, hi_i = int(lo), int(hi)
                if _is_type(t, "date"):
                    lo_i, hi_i = lo_i // _DAY_US * _DAY_US, -(-hi_i // _DAY_US) * _DAY_US
                epoch = _dt.datetime(1970, 1, 1)
                b = (epoch + _dt.timedelta(microseconds=lo_i), epoch + _dt.timedelta(microseconds=hi_i))
                specs.append((name, DatetimeColumn(bounds=b, nullable=nullable, derived_from_data=derived)))
            elif integer:
                specs.append((name, IntColumn(bounds=(int(np.floor(lo)), int(np.ceil(hi))), nullable=nullable, derived_from_data=derived)))
            else:
                specs.append((name, FloatColumn(bounds=(lo, hi), nullable=nullable, derived_from_data=derived)))
        elif _is_type(t, "boolean"):
            if eps_each is not None or epsilon is not None:
                specs.append((name, BoolColumn(nullable=True, derived_from_data=types_from_data)))
            else:
                specs.append((name, BoolColumn(nullable=has_nulls, derived_from_data=has_nulls)))
        elif _is_type(t, "string") or _is_type(t, "large_string") or _is_type(t, "dictionary"):
            distinct = pc.unique(col.drop_null().cast(pa.string()))
            if len(distinct) > max_categories:
                skipped[name] = f"more than {max_categories} distinct values (an identifier?); add it with a public category list to use it"
                continue
            if len(distinct) == 0:
                skipped[name] = "no values to read categories from"
                continue
            cats = tuple(sorted(str(v) for v in distinct.to_pylist()))
            specs.append((name, CategoricalColumn(categories=cats, nullable=has_nulls, derived_from_data=True)))
        else:
            skipped[name] = f"unsupported type {t}"
    if not specs:
        raise SchemaError("no column of the table could be drafted")
    from opendp_wasserstein.exact import round_up

    eps_total = round_up(spent) if spent else 0.0
    return DraftReport(Schema(specs, epsilon_spent=eps_total), skipped, eps_total)
