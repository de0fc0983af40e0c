"""Adapters between user tables and the columnar form of :mod:`~opendp_wasserstein.tables.encoding`.

Accepted: a pandas ``DataFrame``, a Polars ``DataFrame`` or ``LazyFrame`` (collected), a pyarrow
``Table`` and a 2-D numpy array (its columns are the schema's columns, in order).
:func:`read_table` returns the columns under the schema and a :class:`FrameInfo`;
:func:`write_table` turns decoded columns back into the **same** type with the same column names,
in dtypes of the same kinds whose every other part comes from the schema
(:mod:`~opendp_wasserstein.tables.dtypes`):

* a categorical dtype (pandas ``category``, Arrow dictionary, Polars ``Enum``/``Categorical``)
  comes back over the **declared** categories in the schema's order (a Polars ``Categorical``
  as the ``Enum`` of them), never over the labels the input's dtype lists;
* a column whose dtype cannot hold a missing value (numpy-backed integers or ``bool`` in
  pandas) becomes the pandas nullable dtype (``Int64``, ``boolean``) when the schema declares it
  nullable, whatever the release holds, so the output dtype never depends on the data;
  numbers keep their dtype when it holds every value of the schema, else become int64/float64;
* dates come back as dates and datetimes as datetimes in microseconds (UTC if aware).

No metadata (Arrow schema or field metadata, the pandas index or ``attrs``) is copied.

How values are read never depends on their content beyond the rules of the encoding: a value
that cannot be read as the column's type (text in a numeric column, say) counts as missing.
Only the *dtypes* (public metadata) can make :func:`read_table` refuse a table, and its errors
name the column, never a value.  The input is never modified.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from opendp_wasserstein.core.optional import import_optional, lazy_module
from opendp_wasserstein.tables.dtypes import (
    natural_dtype,
    natural_numpy_dtype,
    public_dtype,
    public_numpy_dtype,
)
from opendp_wasserstein.tables.encoding import RawColumn
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

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")  # imported on first use: a numeric release never reads it

__all__ = [
    "FrameInfo",
    "FRAME_KINDS",
    "read_table",
    "table_info",
    "select_columns",
    "write_table",
    "natural_frame_info",
    "frame_kind",
    "column_names",
]

_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


@dataclass(frozen=True)
class FrameInfo:
    """What is needed to rebuild a table of the input's type (public: names and dtypes only).

    :param kind: ``"pandas"``, ``"polars"``, ``"polars-lazy"``, ``"arrow"`` or ``"numpy"``
    :param names: the column names, in the input's order
    :param dtypes: the output dtype per column (library objects): from :func:`read_table`, the
        input's dtype in its public form (:func:`~opendp_wasserstein.tables.dtypes.public_dtype`:
        its kind, with categories, dictionary, time unit and zone from the schema), never the
        input's dtype itself
    """

    kind: str
    names: tuple[str, ...]
    dtypes: tuple[Any, ...]


def frame_kind(data: Any) -> str:
    """The adapter for ``data``, or a ``TypeError`` naming the accepted types."""
    mod = type(data).__module__.split(".")[0]
    name = type(data).__name__
    if mod == "pandas" and name == "DataFrame":
        return "pandas"
    if mod == "polars" and name == "DataFrame":
        return "polars"
    if mod == "polars" and name == "LazyFrame":
        return "polars-lazy"
    if mod == "pyarrow" and name == "Table":
        return "arrow"
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ValueError(
                f"a numpy table must be 2-D (rows x columns), got {data.ndim} dimension(s)"
            )
        return "numpy"
    raise TypeError(
        "data must be a pandas DataFrame, a Polars DataFrame or LazyFrame, a pyarrow Table or a "
        f"2-D numpy array, got {type(data).__name__}"
    )


def column_names(data: Any, schema: Schema | None = None) -> tuple[str, ...]:
    """The table's column names (a numpy array's are the schema's, positionally)."""
    kind = frame_kind(data)
    if kind == "pandas":
        names = tuple(str(c) for c in data.columns)
        if len(set(names)) != len(names):
            raise SchemaError("the table has duplicate column names")
        return names
    if kind == "polars":
        return tuple(data.columns)
    if kind == "polars-lazy":
        return tuple(data.collect_schema().names())
    if kind == "arrow":
        names = tuple(data.column_names)
        if len(set(names)) != len(names):
            raise SchemaError("the table has duplicate column names")
        return names
    if schema is None:
        raise SchemaError("a numpy table needs a schema to name its columns")
    if data.shape[1] != len(schema):
        raise SchemaError(
            f"the numpy table has {data.shape[1]} columns but the schema lists "
            f"{len(schema)}: {list(schema.names)}"
        )
    return schema.names


def _release_names(
    names: Sequence[str], schema: Schema, columns: Sequence[str] | None
) -> tuple[str, ...]:
    """The columns to read: ``columns`` (each in the schema and in the table), or else the
    table's own names, which must then be exactly the schema's columns.

    The schema's names and ``columns`` are public (the caller's) and are named in errors; a
    table's own column name that is not in the schema is counted, **never quoted**: a header
    may be a record (a CSV read without a header row), so quoting it would print a record's
    values.  The diagnosis is :meth:`Schema.header_mismatch`, shared with the command line.
    """
    expected = f"the schema's columns are {list(schema.names)}"
    if columns is not None:
        unknown = [c for c in columns if c not in schema]
        if unknown:
            raise SchemaError(f"columns {list(unknown)} are not in the schema; {expected}")
        absent = [c for c in columns if c not in names]
        if absent:
            raise SchemaError(
                f"columns {list(absent)} are not columns of the table (of its {len(names)} columns)"
            )
        return tuple(columns)
    why, shared = schema.header_mismatch(
        names,
        "column name(s)",
        "(not shown: a header read from a file without a header row is a record)",
    )
    if not why:
        return tuple(names)
    hint = (
        f"; pass columns={shared} to release the columns it shares with the schema"
        if shared
        else ""
    )
    raise SchemaError(
        f"the table's columns do not match the schema: {'; '.join(why)}; {expected}{hint}"
    )


def table_info(data: Any, schema: Schema, columns: Sequence[str] | None = None) -> FrameInfo:
    """How to rebuild a table of ``data``'s type, read off its metadata alone (no value is read).

    The column names are checked as :func:`read_table` checks them (``columns``, or else the
    table's own names, which must then be exactly the schema's; a numpy array's dtype must hold
    every column), and the dtypes are the public forms of the input's.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param schema: the public schema; every used column must be in it
    :param columns: use only these columns (default: all of the table's columns)
    :return: a :class:`FrameInfo` whose ``names`` are the columns to read, in order
    """
    kind = frame_kind(data)
    names = _release_names(column_names(data, schema), schema, columns)
    if kind == "pandas":
        dtypes = [data[name].dtype for name in names]
    elif kind == "polars":
        dtypes = [data.schema[name] for name in names]
    elif kind == "polars-lazy":
        lazy = data.collect_schema()
        dtypes = [lazy[name] for name in names]
    elif kind == "arrow":
        dtypes = [data.schema.field(name).type for name in names]
    else:
        for name in names:
            _check_numpy_dtype(data.dtype, name, schema[name])
        dtypes = [data.dtype] * len(names)
    # the input's dtypes may hold data (a category list, a dictionary width): keep their kinds only
    return _public_info(FrameInfo(kind, tuple(names), tuple(dtypes)), schema)


def select_columns(data: Any, schema: Schema, names: Sequence[str]) -> Any:
    """``data`` with only the columns ``names``, in that order (the same object when it has them
    already): a projection by public names, row-wise, so a table of the domain of
    ``schema.select(names)``.  ``names`` must have been checked (:func:`table_info`); a numpy
    array's columns are the schema's, by position.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param schema: the public schema ``data`` is read under
    :param names: the columns to keep
    """
    kind = frame_kind(data)
    names = list(names)
    if kind == "numpy":
        every = list(schema.names)
    elif kind == "polars-lazy":
        every = list(data.collect_schema().names())
    else:
        every = list(column_names(data, schema))
    if every == names:
        return data
    index = [every.index(n) for n in names]
    if kind == "pandas":
        return data.iloc[:, index]
    if kind in ("polars", "polars-lazy"):
        pl = import_optional("polars", "a Polars table")
        # by position: a name such as "*" or "^a$" would be read as a pattern by pl.col
        return data.select(pl.nth(index))
    if kind == "arrow":
        return data.select(index)
    return data[:, index]


def read_table(
    data: Any, schema: Schema, columns: Sequence[str] | None = None
) -> tuple[dict[str, RawColumn], FrameInfo]:
    """The columns of ``data`` under ``schema``, and how to rebuild the same type.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param schema: the public schema; every used column must be in it
    :param columns: use only these columns (default: all of the table's columns)
    :return: ``({name: RawColumn}, FrameInfo)``; the returned columns are in ``columns`` order,
        the info's dtypes are the public forms of the input's (a function of the schema and of
        the dtypes' kinds only: :func:`table_info`)
    """

    info = table_info(data, schema, columns)
    kind, names = info.kind, info.names
    if kind == "polars-lazy":
        pl = import_optional("polars", "a Polars table")

        every = list(data.collect_schema().names())
        # by position: a name such as "*" or "^a$" would be read as a pattern by pl.col
        data = data.select(pl.nth([every.index(n) for n in names])).collect()
    out: dict[str, RawColumn] = {}
    for name in names:
        spec = schema[name]
        if kind == "pandas":
            series = data[name]
        elif kind in ("polars", "polars-lazy"):
            # (Polars cannot export a name holding NUL)
            series = data.get_column(name).alias("column").to_pandas()
        elif kind == "arrow":
            col = data.column(name)
            if isinstance(spec, (FloatColumn, IntColumn)):
                number = _read_arrow_number(col)
            elif isinstance(spec, BoolColumn):
                number = _read_arrow_bool(col)
            elif isinstance(spec, CategoricalColumn):
                number = _read_arrow_category(col, spec)
            else:
                number = None
            if number is not None:
                out[name] = number
                continue
            series = _arrow_to_pandas(col)
        else:
            series = pd.Series(data[:, schema.names.index(name)])
        out[name] = _read_column(series, name, spec)
    return out, info


def _check_numpy_dtype(dtype: np.dtype, name: str, spec: ColumnSpec) -> None:
    kind = dtype.kind
    ok = {
        FloatColumn: "fiubO",
        IntColumn: "fiubO",
        DatetimeColumn: "MO",
        BoolColumn: "biuO",
        CategoricalColumn: "iuOUS"
        if isinstance(spec, CategoricalColumn) and isinstance(spec.categories[0], (int, np.integer))
        else "OUS",
    }[type(spec)]
    if kind not in ok:
        raise SchemaError(
            f"column {name!r}: a numpy array of dtype {dtype} cannot hold a {spec.type} column"
        )
    if spec.nullable and kind in "iubUS":
        raise SchemaError(
            f"column {name!r} is nullable but a numpy array of dtype {dtype} cannot hold "
            "missing values; use a float or object array"
        )


def _temporal_us(col: Any) -> np.ndarray:
    """An Arrow date or timestamp column as ``datetime64[us]`` (NaT where null), computed on the
    integers: ``to_pandas`` goes through Python dates and raises on a value outside years
    1-9999 (``year 0 is out of range``), so one such record would fail the whole read.  Values
    beyond ``datetime64[us]`` (about 290 000 years) are clipped there; the schema's bounds clamp
    them later like any value."""

    t = col.type
    null = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=bool)
    limit = np.iinfo(np.int64).max // 1_000_000 - 1  # seconds representable in microseconds
    if pa.types.is_date32(t):
        raw = pc.fill_null(col.cast(pa.int32()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        us = raw * 86_400_000_000  # |days| < 2^31: fits
    else:
        unit = "ms" if pa.types.is_date64(t) else t.unit
        raw = pc.fill_null(col.cast(pa.int64()), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        per_s = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
        if per_s >= 1_000_000:
            us = np.floor_divide(raw, per_s // 1_000_000)
        else:
            us = np.clip(raw, -limit * per_s, limit * per_s) * (1_000_000 // per_s)
    out = us.view("datetime64[us]").copy()
    out[null] = np.datetime64("NaT")
    return out


def _is_temporal(t: Any) -> bool:

    return bool(pa.types.is_date(t) or pa.types.is_timestamp(t))


def _read_arrow_number(col: Any) -> RawColumn | None:
    """An Arrow column of a numeric schema column read without pandas, where that gives the same
    values and missing mask as :func:`_arrow_to_pandas` then :func:`_read_column` (a null or a
    NaN is missing; integers convert to float64 as numpy converts them); None where it may not,
    to be read through pandas.  Pandas is a third of a small ``synth``'s start-up, and a CSV's
    columns are read as text (:func:`~opendp_wasserstein.tables.io.typed_by_schema`).

    Integer and floating columns convert directly.  A text column is parsed by Arrow's cast,
    which takes a subset of what ``pandas.to_numeric`` takes (no padding blanks, no ``snan``)
    and parses it to the same correctly rounded double; what it refuses goes to pandas, record
    by record as before.  The one difference on what both take is a zero's sign: pandas reads
    a column of integers as int64, so ``-0`` becomes ``0.0`` there, ``-0.0`` here, and a column
    holding a negative zero goes to pandas too.  Whether this path is taken depends on the
    data, but its result never does: the same columns either way, and no time, message or
    output tells the two apart beyond the time of the read, which was data-dependent before.
    """

    t = col.type
    try:
        if pa.types.is_integer(t) or pa.types.is_floating(t):  # int64 -> float64 as numpy's
            values = _float64_values(pc.cast(col, pa.float64(), safe=False))
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            values = _float64_values(pc.cast(col, pa.float64()))
            if np.signbit(values[values == 0]).any():
                return None
        else:
            return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return RawColumn(values, np.isnan(values))


def _float64_values(col: Any) -> np.ndarray:
    """A float64 Arrow column as a new numpy array, NaN where null, read from its buffers (the
    Arrow columnar format: a validity bitmap, then the values): ``to_numpy`` and ``fill_null``
    import pandas."""

    parts = [np.empty(0)]
    for chunk in col.chunks:
        validity, data = chunk.buffers()[:2]
        n, offset = len(chunk), chunk.offset
        vals = np.frombuffer(data, dtype=np.float64, count=n, offset=8 * offset).copy()
        if validity is not None and chunk.null_count:
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            vals[~bits[offset : offset + n].astype(bool)] = np.nan
        parts.append(vals)
    return np.concatenate(parts)


def _bits(buf: Any, offset: int, n: int) -> np.ndarray:
    """Bits ``offset .. offset + n - 1`` of an Arrow bitmap (validity or boolean values)."""
    return np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")[offset : offset + n]


def _int_codes(col: Any) -> tuple[np.ndarray, np.ndarray]:
    """An int32 or boolean Arrow column as ``(int64 values, null mask)``, ``-1`` where null,
    read from its buffers (as :func:`_float64_values`)."""
    values, nulls = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=bool)]
    for chunk in col.chunks:
        validity, data = chunk.buffers()[:2]
        n, offset = len(chunk), chunk.offset
        if pa.types.is_boolean(chunk.type):
            vals = _bits(data, offset, n).astype(np.int64)
        else:
            vals = np.frombuffer(data, dtype=np.int32, count=n, offset=4 * offset).astype(np.int64)
        null = np.zeros(n, dtype=bool)
        if validity is not None and chunk.null_count:
            null = ~_bits(validity, offset, n).astype(bool)
            vals[null] = -1
        values.append(vals)
        nulls.append(null)
    return np.concatenate(values), np.concatenate(nulls)


def _read_arrow_bool(col: Any) -> RawColumn | None:
    """An Arrow boolean column as :func:`_read_column` reads it through pandas (``True`` 1,
    ``False`` 0, a null missing with code ``-1``), from its bitmaps; None for any other type."""
    if not pa.types.is_boolean(col.type):
        return None
    codes, null = _int_codes(col)
    return RawColumn(codes, null)


def _read_arrow_category(col: Any, spec: CategoricalColumn) -> RawColumn | None:
    """A text Arrow column of a categorical column with text labels as :func:`_read_column`
    reads it through pandas: each value's index in the declared list (Arrow's ``index_in``, an
    exact match of the UTF-8 bytes, which is Python's equality of valid text), ``-1`` outside
    it; a null missing with code ``-1``.  None (read through pandas) for other types, other
    labels, or text that is not valid UTF-8 (which pandas reads value by value)."""
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        return None
    if not all(isinstance(c, str) for c in spec.categories):
        return None
    try:
        col.validate(full=True)  # valid UTF-8 (and offsets)
        labels = pa.array(list(spec.categories), type=col.type)
        idx = pc.index_in(col, value_set=labels)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeEncodeError):
        return None
    codes, _ = _int_codes(idx)
    return RawColumn(codes, np.asarray(_int_codes(pc.is_null(col))[0], dtype=bool))


def _arrow_to_pandas(col: Any) -> Any:
    """A pyarrow column as a pandas Series; date and timestamp columns through
    :func:`_temporal_us` (never through Python dates)."""

    return pd.Series(_temporal_us(col)) if _is_temporal(col.type) else col.to_pandas()


def _readable(v: Any) -> Any:
    """``v``, or None (unreadable, so missing) if it cannot be looked up or held as text: an
    unhashable object (a list, a set, an array) or a string that is not valid Unicode (a lone
    surrogate).  Decided for each value on its own."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return v
    try:
        hash(v)
    except TypeError:
        return None
    return v


def _readable_values(values: np.ndarray) -> np.ndarray:
    """:func:`_readable` of every value of an object array.  A column of text (and missing
    values: what a CSV or a pandas table of labels holds) is checked once per distinct string,
    the unreadable ones set to None where they occur: the same result as value by value, with
    no Python loop over the rows (a 336,776-row table of two label columns: 2.3 s of CPU in
    the per-value loop).  Any other object column goes value by value."""
    if pd.api.types.infer_dtype(values, skipna=True) == "string":
        bad = [u for u in pd.unique(values) if isinstance(u, str) and _readable(u) is None]
        out = values.copy()
        if bad:
            out[pd.Series(values, dtype=object).isin(bad).to_numpy()] = None
        return out
    return np.fromiter((_readable(v) for v in values), dtype=object, count=len(values))


def _read_column(series: Any, name: str, spec: ColumnSpec) -> RawColumn:

    if series.dtype == object:
        series = pd.Series(_readable_values(series.to_numpy()), dtype=object)

    if isinstance(series.dtype, pd.ArrowDtype) and _is_temporal(series.dtype.pyarrow_dtype):
        series = _arrow_to_pandas(pa.array(series))

    missing = series.isna().to_numpy(dtype=bool)
    if isinstance(spec, (FloatColumn, IntColumn)):
        if pd.api.types.is_bool_dtype(series.dtype):
            values = series.astype("float64").to_numpy(dtype=np.float64, na_value=np.nan)
        elif pd.api.types.is_numeric_dtype(series.dtype):
            values = series.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            values = pd.to_numeric(series.astype(object), errors="coerce").to_numpy(
                dtype=np.float64, na_value=np.nan
            )
        missing = missing | np.isnan(values)
        return RawColumn(values, missing)
    if isinstance(spec, DatetimeColumn):
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        if not pd.api.types.is_datetime64_dtype(series.dtype):
            series = pd.to_datetime(
                series.astype(object), errors="coerce", utc=True, format="mixed"
            ).dt.tz_localize(None)
        arr = series.to_numpy(dtype="datetime64[us]")
        nat = np.isnat(arr)
        values = np.where(nat, 0, arr.astype(np.int64))
        return RawColumn(values, missing | nat)
    if isinstance(spec, BoolColumn):
        if pd.api.types.is_bool_dtype(series.dtype) and not missing.any():
            codes = series.to_numpy(dtype=bool).astype(np.int64)
        else:
            codes = _bool_codes(series)
        return RawColumn(codes, missing)
    # categorical: index into the declared list, -1 outside it
    index = pd.Index(list(spec.categories), dtype=object)
    if isinstance(series.dtype, pd.CategoricalDtype):
        cats = series.cat.categories
        mapped = index.get_indexer(pd.Index(cats, dtype=object))
        raw = series.cat.codes.to_numpy()
        codes = np.where(raw >= 0, mapped[np.clip(raw, 0, None)] if len(mapped) else -1, -1)
    else:
        vals = series.astype(object).to_numpy()
        if isinstance(spec.categories[0], (int, np.integer)):
            vals = _intlike(vals)
        codes = index.get_indexer(vals)
    return RawColumn(np.asarray(codes, dtype=np.int64), missing)


def _intlike(vals: np.ndarray) -> np.ndarray:
    """Integer-valued floats and integer strings as ints (for integer category lists)."""

    num = pd.to_numeric(pd.Series(vals, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    ok = np.isfinite(num) & (np.floor(num) == num) & (np.abs(num) < 2**53)
    out = np.full(len(vals), None, dtype=object)
    out[ok] = num[ok].astype(np.int64)
    return out


def _bool_codes(series: Any) -> np.ndarray:

    vals = pd.Series(series.astype(object).to_numpy(), dtype=object)
    text = vals.map(
        lambda v: (
            str(v).strip().lower()
            if isinstance(v, (str, bool, np.bool_, int, np.integer, float, np.floating))
            else ""
        )
    )
    codes = np.full(len(vals), -1, dtype=np.int64)
    t = text.to_numpy(dtype=object)
    codes[np.isin(t, list(_TRUE | {"1.0"}))] = 1
    codes[np.isin(t, list(_FALSE | {"0.0"}))] = 0
    return codes


# ---------------------------------------------------------------------------------------- write


def _public_info(info: FrameInfo, schema: Schema) -> FrameInfo:
    """``info`` with each dtype replaced by its public form
    (:mod:`~opendp_wasserstein.tables.dtypes`): a function of the schema and the dtype's kind, never
    of what a library read off the values."""
    if info.kind == "numpy":
        dtype = public_numpy_dtype(
            info.dtypes[0] if info.dtypes else np.dtype(object), [schema[n] for n in info.names]
        )
        return FrameInfo(info.kind, info.names, (dtype,) * len(info.names))
    return FrameInfo(
        info.kind,
        info.names,
        tuple(
            public_dtype(info.kind, d, schema[n])
            for n, d in zip(info.names, info.dtypes, strict=True)
        ),
    )


def _from_numpy(values: np.ndarray, t: Any, mask: np.ndarray) -> Any:
    """A pyarrow array of the fixed-width type ``t`` (or ``bool``) from a numpy array of its
    width, null where ``mask``: built from buffers (the Arrow columnar format), as
    ``pa.array(values, type=t, mask=mask)`` builds it but without importing pandas, which
    ``pa.array`` does to check its argument's type (a third of a small ``synth``'s start-up)."""

    if pa.types.is_boolean(t):
        data = pa.py_buffer(np.packbits(np.asarray(values, dtype=bool), bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(values))
    nulls = int(np.count_nonzero(mask))
    validity = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(t, len(values), [validity, data], null_count=nulls)


def _arrow_column(col: RawColumn, spec: ColumnSpec, want_date: bool, aware: bool = False) -> Any:
    """A pyarrow array of the column's natural type, nulls where missing (timestamps in
    microseconds, in UTC when ``aware``)."""

    mask = np.asarray(col.missing, dtype=bool)
    if isinstance(spec, FloatColumn):
        return _from_numpy(np.asarray(col.values, dtype=np.float64), pa.float64(), mask)
    if isinstance(spec, IntColumn):
        # decoded values are integers in bounds already; values read from a file may not be
        # (io.typed_by_schema): rounded, +-inf and huge values kept on their side of int64
        v = np.asarray(col.values, dtype=np.float64)
        v = np.clip(np.rint(np.where(np.isnan(v), 0.0, v)), -(2.0**62), 2.0**62)
        return _from_numpy(v.astype(np.int64), pa.int64(), mask)
    if isinstance(spec, DatetimeColumn):
        us = np.asarray(col.values, dtype=np.int64)
        if want_date:
            days = np.floor_divide(us, 86_400_000_000).astype(np.int32)
            return _from_numpy(days, pa.date32(), mask)
        return _from_numpy(us, pa.timestamp("us", tz="UTC" if aware else None), mask)
    if isinstance(spec, BoolColumn):
        return _from_numpy(np.asarray(col.values, dtype=np.int64) == 1, pa.bool_(), mask)
    labels = np.asarray(list(spec.categories), dtype=object)
    codes = np.asarray(col.values, dtype=np.int64)
    if isinstance(spec.categories[0], str):
        return pa.DictionaryArray.from_arrays(
            pa.array(codes.astype(np.int32), mask=mask), pa.array(labels.tolist(), type=pa.string())
        ).cast(pa.string())
    return pa.array(labels[codes].astype(np.int64), mask=mask)


def _arrow_of(col: RawColumn, spec: ColumnSpec, t: Any) -> Any:
    """The column as a pyarrow array of exactly type ``t`` (a public type: it holds every value
    the schema allows).  A dictionary's values are the declared categories, in order."""

    if pa.types.is_dictionary(t) and isinstance(spec, (CategoricalColumn, BoolColumn)):
        mask = np.asarray(col.missing, dtype=bool)
        codes = np.where(mask, 0, np.asarray(col.values, dtype=np.int64))
        labels = pa.array(list(spec.categories), type=t.value_type)
        return pa.DictionaryArray.from_arrays(
            pa.array(codes, type=t.index_type, mask=mask), labels, ordered=t.ordered
        )
    is_ts = pa.types.is_timestamp(t)
    arr = _arrow_column(col, spec, want_date=pa.types.is_date(t), aware=bool(is_ts and t.tz))
    return arr if arr.type == t else arr.cast(t)


#: the table types :func:`natural_frame_info` can describe
FRAME_KINDS = ("pandas", "polars", "polars-lazy", "arrow", "numpy")


def natural_frame_info(schema: Schema, kind: str = "pandas") -> FrameInfo:
    """A :class:`FrameInfo` for writing a table of ``kind`` from the schema alone (no input table).

    Each column gets its type's natural dtype
    (:func:`~opendp_wasserstein.tables.dtypes.natural_dtype`): float64, int64 (pandas ``Int64`` when
    nullable), dates (``date32``/``Date``; pandas ``datetime64[us]``) for datetime columns whose
    bounds fall on midnight and ``timestamp[us]`` otherwise, booleans (pandas ``boolean`` when
    nullable), and strings (or int64) for categorical labels.  A numpy table is an object array
    (float64 if every column is a non-nullable float column).

    >>> from opendp_wasserstein.tables import Schema, IntColumn, BoolColumn
    >>> schema = Schema({"a": IntColumn(bounds=(0, 9)), "b": BoolColumn()})
    >>> natural_frame_info(schema, "arrow").dtypes
    (DataType(int64), DataType(bool))
    """
    if kind not in FRAME_KINDS:
        raise ValueError(f"kind must be one of {FRAME_KINDS}, got {kind!r}")
    names = tuple(schema.names)
    if kind == "numpy":
        return FrameInfo(
            kind, names, (natural_numpy_dtype(s for _, s in schema.items()),) * len(names)
        )
    return FrameInfo(kind, names, tuple(natural_dtype(kind, spec) for _, spec in schema.items()))


def write_table(columns: Mapping[str, RawColumn], schema: Schema, info: FrameInfo) -> Any:
    """Decoded columns as a table of ``info``'s type and column names, in the public form of its
    dtypes (:mod:`~opendp_wasserstein.tables.dtypes`: the dtypes' kinds, with categories,
    dictionaries, time units and zones from the schema), without metadata or index."""

    info = _public_info(info, schema)
    columns = {
        name: _rounded(columns[name], schema[name])
        if isinstance(schema[name], FloatColumn) and _integer_dtype(info.kind, dtype)
        else columns[name]
        for name, dtype in zip(info.names, info.dtypes, strict=True)
    }
    if info.kind == "numpy":
        return _numpy_table(columns, schema, info)
    if info.kind == "arrow":
        out = [
            _arrow_of(columns[name], schema[name], t)
            for name, t in zip(info.names, info.dtypes, strict=True)
        ]
        return pa.Table.from_arrays(
            out,
            schema=pa.schema([pa.field(n, a.type) for n, a in zip(info.names, out, strict=True)]),
        )
    if info.kind in ("polars", "polars-lazy"):
        pl = import_optional("polars", "a Polars table")

        series = []
        for name, t in zip(info.names, info.dtypes, strict=True):
            spec = schema[name]
            want_date = isinstance(spec, DatetimeColumn) and isinstance(t, pl.Date)
            aware = isinstance(t, pl.Datetime) and t.time_zone is not None
            series.append(
                pl.Series(name, _arrow_column(columns[name], spec, want_date, aware)).cast(t)
            )
        df = pl.DataFrame(series)
        return df.lazy() if info.kind == "polars-lazy" else df

    data = {
        name: _pandas_series(columns[name], t, schema[name], pd)
        for name, t in zip(info.names, info.dtypes, strict=True)
    }
    return pd.DataFrame(data, columns=list(info.names))


def _integer_dtype(kind: str, dtype: Any) -> bool:
    """Whether ``dtype`` (of a frame of ``kind``) is an integer type."""
    if kind == "arrow":
        return bool(pa.types.is_integer(dtype))
    if kind in ("polars", "polars-lazy"):
        return bool(dtype.is_integer())
    try:
        return np.dtype(dtype).kind in "iu"
    except TypeError:  # a pandas extension dtype (Int64, int8[pyarrow], ...)
        return str(dtype).lower().startswith(("int", "uint"))


def _rounded(col: RawColumn, spec: Any) -> RawColumn:
    """A float column held in an integer dtype (e.g. a CSV column of whole numbers declared
    ``float``) comes back in that dtype: its values rounded to the nearest integer, kept inside
    the integers of the bounds when there are any."""
    vals = np.rint(np.asarray(col.values, dtype=np.float64))
    lo, hi = math.ceil(spec.bounds[0]), math.floor(spec.bounds[1])
    if lo <= hi:
        vals = np.clip(vals, lo, hi)
    return replace(col, values=vals)


def _pandas_series(col: RawColumn, t: Any, spec: ColumnSpec, pd: Any) -> Any:
    if isinstance(t, pd.ArrowDtype):
        return pd.Series(pd.arrays.ArrowExtensionArray(_arrow_of(col, spec, t.pyarrow_dtype)))
    if isinstance(
        t, pd.CategoricalDtype
    ):  # the declared categories, in order: codes are the release's
        codes = np.where(
            np.asarray(col.missing, dtype=bool), -1, np.asarray(col.values, dtype=np.int64)
        )
        return pd.Series(pd.Categorical.from_codes(codes, dtype=t))
    want_date = isinstance(spec, DatetimeColumn) and t == np.dtype(object) and spec.date_only
    arr = _arrow_column(col, spec, want_date, aware=isinstance(t, pd.DatetimeTZDtype))
    if isinstance(spec, DatetimeColumn) and t == np.dtype(object):  # Python dates / datetimes
        s = pd.Series(arr.to_pylist(), dtype=object)
        return s.where(s.notna(), None)
    return arr.to_pandas().astype(t)


def _numpy_table(columns: Mapping[str, RawColumn], schema: Schema, info: FrameInfo) -> np.ndarray:
    dtype = info.dtypes[0]
    n = len(next(iter(columns.values())).values) if columns else 0
    out = np.empty((n, len(info.names)), dtype=dtype)
    for j, name in enumerate(info.names):
        spec = schema[name]
        col = columns[name]
        miss = np.asarray(col.missing, dtype=bool)
        if isinstance(spec, CategoricalColumn):
            vals: np.ndarray = np.asarray(list(spec.categories), dtype=object)[
                np.asarray(col.values, dtype=np.int64)
            ]
        elif isinstance(spec, BoolColumn):
            vals = np.asarray(col.values, dtype=np.int64) == 1
        elif isinstance(spec, DatetimeColumn):
            vals = np.asarray(col.values, dtype=np.int64).astype("datetime64[us]")
            if dtype.kind == "M":
                vals = vals.astype(dtype)
            elif spec.date_only:
                vals = np.array([v.item() for v in vals.astype("datetime64[D]")], dtype=object)
            else:
                vals = np.array([v.item() for v in vals], dtype=object)
        else:
            vals = np.asarray(col.values)
        if dtype.kind == "O":
            obj = np.empty(n, dtype=object)
            obj[:] = (
                [v.item() if isinstance(v, np.generic) else v for v in vals]
                if vals.dtype.kind != "O"
                else vals
            )
            obj[miss] = None
            out[:, j] = obj
        else:
            if dtype.kind == "M":
                vals = np.where(miss, np.datetime64("NaT"), vals).astype(dtype)
            elif dtype.kind == "f":
                vals = np.where(miss, np.nan, np.asarray(vals, dtype=np.float64))
            out[:, j] = vals
    return out


def _python_date(us: int) -> _dt.date:  # pragma: no cover - helper kept for symmetry
    return (_dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(us))).date()
