"""Real tables: a public schema, DataFrame/Arrow/numpy adapters, the unit-cube encoding, files.

:mod:`~opendp_wasserstein.tables.schema` declares what the mechanisms may know about each
column; :mod:`~opendp_wasserstein.tables.frames` reads pandas, Polars, pyarrow and numpy tables
and writes the same type back; :mod:`~opendp_wasserstein.tables.encoding` maps a table into
``[0, 1]^D`` so that the dyadic hierarchy applies; :mod:`~opendp_wasserstein.tables.domain` and
:mod:`~opendp_wasserstein.tables.transformation` make that an OpenDP domain and transformation;
:mod:`~opendp_wasserstein.tables.measurement` builds the table releases as OpenDP chains;
:mod:`~opendp_wasserstein.tables.io` reads and writes CSV, TSV and Parquet files.
"""

from opendp_wasserstein.tables.domain import TableDomain, table_domain
from opendp_wasserstein.tables.encoding import Axis, RawColumn, TableEncoding, category_boundaries
from opendp_wasserstein.tables.frames import (
    FrameInfo,
    column_names,
    frame_kind,
    natural_frame_info,
    read_table,
    write_table,
)
from opendp_wasserstein.tables.measurement import (
    make_table_selection,
    make_table_synthesis,
    then_table_selection,
    then_table_synthesis,
)
from opendp_wasserstein.tables.schema import (
    NULL_FALLBACK,
    BoolColumn,
    CategoricalColumn,
    ColumnSpec,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)
from opendp_wasserstein.tables.transformation import (
    decode_points,
    make_table_decoding,
    make_table_encoding,
    then_table_encoding,
)

__all__ = [
    "Axis",
    "BoolColumn",
    "CategoricalColumn",
    "ColumnSpec",
    "DatetimeColumn",
    "FloatColumn",
    "FrameInfo",
    "IntColumn",
    "NULL_FALLBACK",
    "RawColumn",
    "Schema",
    "SchemaError",
    "TableEncoding",
    "TableDomain",
    "table_domain",
    "make_table_encoding",
    "then_table_encoding",
    "make_table_decoding",
    "decode_points",
    "make_table_synthesis",
    "then_table_synthesis",
    "make_table_selection",
    "then_table_selection",
    "natural_frame_info",
    "category_boundaries",
    "column_names",
    "frame_kind",
    "read_table",
    "write_table",
]
