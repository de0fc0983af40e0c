"""The dtypes of a release: a function of the public schema and the *kind* of the input's dtypes.

A frame's dtypes are not all public.  Parts of a dtype are computed from the values by the
library that built it: ``astype("category")`` lists the labels the data holds (a record's
undeclared ``'Secret-Label-of-Alice'`` among them), so does a Polars ``Enum`` built from
``unique()``; the index width of pandas category codes and of the Arrow dictionary made from
them grows with the number of labels (``int8`` up to 126, then ``int16``); ``pd.to_datetime``
picks nanoseconds when one value has them, and a fixed-offset time zone from the values'
offsets; a Polars ``Categorical``'s codes come from a process-wide table of every string cast
so far.  A release that copied such a dtype would carry the data into its own dtype, its Parquet
schema and its pickle, whatever its values.

:func:`public_dtype` keeps of an input dtype only its **kind**, the choice a caller makes when
building the frame, and takes everything else from the schema:

* categorical (pandas ``CategoricalDtype``, Arrow or pandas-Arrow ``dictionary``, Polars
  ``Enum``/``Categorical``): the schema's categories in the schema's order -- pandas
  ``CategoricalDtype(categories, ordered=<the input's flag>)``, an Arrow dictionary whose
  index is the narrowest signed integer holding the number of declared categories
  (:func:`dictionary_index_type`) and whose value type is the input's text type, and a Polars
  ``Enum`` of the declared categories (for a ``Categorical`` too, whose process-wide codes are
  not a function of the schema);
* text (object, pandas ``string``/``str`` of either storage, Arrow ``string``/``large_string``/
  ``string_view``, Polars ``String``): kept; a numpy ``<U``/``S`` array (whose width numpy takes
  from the longest value) gets the width of the longest declared label;
* integers and floats: kept when they hold every value the schema allows (the bounds, the
  integers of a float column's bounds, the labels), else the natural type (``int64`` /
  ``float64``), never narrowed or widened by the values; pandas numpy integers and booleans of a
  nullable column become the nullable dtype of the same width (``Int8``, ``boolean``);
* dates stay dates (Arrow ``date32``/``date64``, Polars ``Date``, numpy ``datetime64[D]``,
  pandas objects when the bounds are dates); timestamps come in **microseconds**, the schema's
  resolution, and a time-zone-aware input comes back aware **in UTC** (the zone is dropped:
  instants are unchanged, convert for display yourself);
* anything else (a dtype that cannot hold the column's values, a categorical dtype on a numeric
  column, decimals, an all-null type): the natural dtype of :func:`natural_dtype`.

Arrow schema and field metadata, the pandas index and ``attrs`` are never copied.  What stays of
the caller's frame is its container type, its column order and the dtype kinds above: those the
caller must choose without looking at the values (see ``docs/tables.rst``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from opendp_wasserstein.core.optional import import_optional, lazy_module
from opendp_wasserstein.tables.schema import (
    BoolColumn,
    CategoricalColumn,
    ColumnSpec,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
)

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")  # imported on first use: a numeric release never reads it

__all__ = [
    "public_dtype",
    "public_numpy_dtype",
    "natural_dtype",
    "natural_numpy_dtype",
    "dictionary_index_type",
]

_FLOAT_MAX = {32: float(np.finfo(np.float32).max), 64: math.inf}


def _str_labels(spec: ColumnSpec) -> bool:
    return isinstance(spec, CategoricalColumn) and isinstance(spec.categories[0], str)


def _int_range(spec: ColumnSpec) -> tuple[int, int] | None:
    """The integers a column's values take when held in an integer dtype (None: not numbers)."""
    if isinstance(spec, IntColumn):
        return spec.lower, spec.upper
    if isinstance(spec, FloatColumn):  # rounded into the integers of the bounds (frames._rounded)
        return math.floor(spec.lower), math.ceil(spec.upper)
    if isinstance(spec, BoolColumn):
        return 0, 1
    if isinstance(spec, CategoricalColumn) and not _str_labels(spec):
        return int(min(spec.categories)), int(max(spec.categories))
    return None


def _holds_int(signed: bool, bits: int, spec: ColumnSpec) -> bool:
    r = _int_range(spec)
    if r is None:
        return False
    lo, hi = r
    if signed:
        return -(2 ** (bits - 1)) <= lo and hi < 2 ** (bits - 1)
    return lo >= 0 and hi < 2**bits


def _holds_float(bits: int, spec: ColumnSpec) -> bool:
    r = _int_range(spec)
    return r is not None and bits in _FLOAT_MAX and max(abs(r[0]), abs(r[1])) <= _FLOAT_MAX[bits]


def dictionary_index_type(k: int) -> Any:
    """The index type of a dictionary over ``k`` declared categories: the narrowest signed
    integer holding ``k - 1`` (``int8`` up to 128 categories), a function of the schema alone."""

    return pa.int8() if k <= 128 else pa.int16() if k <= 2**15 else pa.int32()


def natural_dtype(kind: str, spec: ColumnSpec) -> Any:
    """The column's natural dtype in a table of ``kind`` (``"pandas"``, ``"polars"``,
    ``"polars-lazy"`` or ``"arrow"``): float64, int64 (pandas ``Int64`` when nullable), dates
    when the bounds fall on midnight (pandas: ``datetime64[us]``) and ``timestamp[us]``
    otherwise, booleans (pandas ``boolean`` when nullable), and text (or int64) labels."""
    str_labels = _str_labels(spec)
    is_date = isinstance(spec, DatetimeColumn) and spec.date_only
    if kind == "arrow":
        return (
            pa.float64()
            if isinstance(spec, FloatColumn)
            else pa.date32()
            if is_date
            else pa.timestamp("us")
            if isinstance(spec, DatetimeColumn)
            else pa.bool_()
            if isinstance(spec, BoolColumn)
            else pa.string()
            if str_labels
            else pa.int64()
        )
    if kind in ("polars", "polars-lazy"):
        pl = import_optional("polars", "a Polars table")

        return (
            pl.Float64()
            if isinstance(spec, FloatColumn)
            else pl.Date()
            if is_date
            else pl.Datetime("us")
            if isinstance(spec, DatetimeColumn)
            else pl.Boolean()
            if isinstance(spec, BoolColumn)
            else pl.String()
            if str_labels
            else pl.Int64()
        )
    if kind == "pandas":
        if isinstance(spec, FloatColumn):
            return np.dtype(np.float64)
        if isinstance(spec, DatetimeColumn):
            return np.dtype("datetime64[us]")
        if isinstance(spec, BoolColumn):
            return pd.BooleanDtype() if spec.nullable else np.dtype(bool)
        if str_labels:
            return np.dtype(object)
        return pd.Int64Dtype() if spec.nullable else np.dtype(np.int64)
    raise ValueError(f"no natural dtype for a table of kind {kind!r}")


def natural_numpy_dtype(specs: Iterable[ColumnSpec]) -> np.dtype:
    """A numpy table's natural dtype: float64 if every column is a non-nullable float column,
    else object."""
    floats = all(isinstance(s, FloatColumn) and not s.nullable for s in specs)
    return np.dtype(np.float64) if floats else np.dtype(object)


def public_dtype(kind: str, dtype: Any, spec: ColumnSpec) -> Any:
    """The output dtype of a column whose input dtype is ``dtype`` in a table of ``kind``: the
    dtype's kind with every data-derived part replaced by the schema's (module docstring).

    Idempotent, and equal for two input dtypes that differ only in what a library reads off the
    values (their category lists, dictionary index width, time unit or time zone).
    """
    if kind == "arrow":
        return _arrow(dtype, spec)
    if kind in ("polars", "polars-lazy"):
        return _polars(dtype, spec)
    if kind == "pandas":
        return _pandas(dtype, spec)
    raise ValueError(f"public_dtype takes a pandas, Polars or Arrow table kind, got {kind!r}")


def _is_text(t: Any) -> bool:

    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _arrow(t: Any, spec: ColumnSpec) -> Any:

    nat = natural_dtype("arrow", spec)
    if not isinstance(t, pa.DataType):
        return nat
    if isinstance(spec, DatetimeColumn):
        if pa.types.is_date(t):
            return t
        if pa.types.is_timestamp(t):
            return pa.timestamp("us", tz="UTC" if t.tz else None)
        return nat
    if pa.types.is_dictionary(t):
        if not isinstance(spec, (CategoricalColumn, BoolColumn)):
            return nat
        return pa.dictionary(
            dictionary_index_type(len(spec.categories)), _arrow(t.value_type, spec), t.ordered
        )
    if _str_labels(spec):
        return t if _is_text(t) else nat
    if pa.types.is_boolean(t):
        return t if isinstance(spec, BoolColumn) else nat
    if pa.types.is_integer(t):
        return t if _holds_int(pa.types.is_signed_integer(t), t.bit_width, spec) else nat
    if pa.types.is_floating(t):
        return t if _holds_float(t.bit_width, spec) else nat
    return nat


def _polars(dtype: Any, spec: ColumnSpec) -> Any:
    pl = import_optional("polars", "a Polars table")

    if isinstance(dtype, type) and issubclass(dtype, pl.DataType):
        try:
            dtype = dtype()  # a class such as pl.Int64
        except TypeError:  # a class that needs parameters (pl.Enum)
            return natural_dtype("polars", spec)
    nat = natural_dtype("polars", spec)
    if not isinstance(dtype, pl.DataType):
        return nat
    if isinstance(spec, DatetimeColumn):
        if isinstance(dtype, pl.Date):
            return pl.Date()
        if isinstance(dtype, pl.Datetime):
            return pl.Datetime("us", "UTC" if dtype.time_zone else None)
        return nat
    if isinstance(dtype, (pl.Enum, pl.Categorical)):
        # an Enum of the declared labels: a Categorical's codes come from a process-wide table
        # holding every string the process has cast (the data's labels among them)
        return (
            pl.Enum(list(spec.categories))
            if isinstance(spec, CategoricalColumn) and _str_labels(spec)
            else nat
        )
    if _str_labels(spec):
        return dtype if isinstance(dtype, pl.String) else nat
    if isinstance(dtype, pl.Boolean):
        return dtype if isinstance(spec, BoolColumn) else nat
    if dtype.is_integer():
        return (
            dtype
            if _holds_int(dtype.is_signed_integer(), int(re.sub(r"\D", "", str(dtype))), spec)
            else nat
        )
    if dtype.is_float():
        return dtype if _holds_float(int(re.sub(r"\D", "", str(dtype)) or 0), spec) else nat
    return nat


def _pandas(dtype: Any, spec: ColumnSpec) -> Any:

    nat = natural_dtype("pandas", spec)
    try:
        dtype = pd.api.types.pandas_dtype(dtype)
    except (TypeError, ValueError):
        return nat
    if isinstance(dtype, pd.ArrowDtype):
        return pd.ArrowDtype(_arrow(dtype.pyarrow_dtype, spec))
    if isinstance(dtype, pd.CategoricalDtype):
        if isinstance(spec, (CategoricalColumn, BoolColumn)):
            return pd.CategoricalDtype(list(spec.categories), ordered=bool(dtype.ordered))
        return nat
    if isinstance(spec, DatetimeColumn):
        if isinstance(dtype, pd.DatetimeTZDtype):
            return pd.DatetimeTZDtype("us", "UTC")
        if isinstance(dtype, np.dtype) and dtype.kind in "MO":
            return np.dtype("datetime64[us]") if dtype.kind == "M" else dtype
        return nat
    if isinstance(dtype, pd.StringDtype):
        return dtype if _str_labels(spec) else nat
    if isinstance(dtype, pd.BooleanDtype):
        return dtype if isinstance(spec, BoolColumn) else nat
    if isinstance(dtype, np.dtype):
        if dtype.kind == "O":
            return dtype
        if dtype.kind == "b":
            if not isinstance(spec, BoolColumn):
                return nat
            return pd.BooleanDtype() if spec.nullable else dtype
        if dtype.kind in "iu":
            if not _holds_int(dtype.kind == "i", 8 * dtype.itemsize, spec):
                return nat
            return (
                pd.api.types.pandas_dtype(
                    ("Int" if dtype.kind == "i" else "UInt") + str(8 * dtype.itemsize)
                )
                if spec.nullable
                else dtype
            )
        if dtype.kind == "f":
            return dtype if _holds_float(8 * dtype.itemsize, spec) else nat
        return nat
    if pd.api.types.is_integer_dtype(dtype):  # nullable Int8 ... UInt64
        np_dt = np.dtype(dtype.numpy_dtype)
        if _holds_int(np_dt.kind == "i", 8 * np_dt.itemsize, spec):
            return dtype
        return pd.Int64Dtype() if _holds_int(True, 64, spec) else nat
    if pd.api.types.is_float_dtype(dtype):  # nullable Float32, Float64
        return dtype if _holds_float(8 * np.dtype(dtype.numpy_dtype).itemsize, spec) else nat
    return nat


def public_numpy_dtype(dtype: Any, specs: Iterable[ColumnSpec]) -> np.dtype:
    """The output dtype of a numpy table whose input dtype is ``dtype`` (one for all columns),
    by the rules of :func:`public_dtype`; a text array's width is the longest declared label's."""
    specs = list(specs)
    nat = natural_numpy_dtype(specs)
    dtype = np.dtype(dtype)
    k, bits = dtype.kind, 8 * dtype.itemsize
    if k == "O":
        return dtype
    if k == "f":
        return (
            dtype
            if all(isinstance(s, (FloatColumn, IntColumn)) and _holds_float(bits, s) for s in specs)
            else nat
        )
    if k in "iu":
        if all(_holds_int(k == "i", bits, s) for s in specs):
            return dtype
        return np.dtype(np.int64) if all(_holds_int(True, 64, s) for s in specs) else nat
    if k == "b":
        ok = all(
            isinstance(s, BoolColumn)
            or (isinstance(s, (IntColumn, CategoricalColumn)) and _holds_int(False, 1, s))
            for s in specs
        )
        return dtype if ok else nat
    if k == "M":
        if not all(isinstance(s, DatetimeColumn) for s in specs):
            return nat
        return dtype if dtype == np.dtype("datetime64[D]") else np.dtype("datetime64[us]")
    if k in "US":
        cats = [s for s in specs if isinstance(s, CategoricalColumn)]
        if len(cats) != len(specs) or not specs:
            return nat
        labels = [str(c) for s in cats for c in s.categories]
        width = max(len(c.encode("utf-8")) if k == "S" else len(c) for c in labels)
        return np.dtype(f"{k}{max(width, 1)}")
    return nat
