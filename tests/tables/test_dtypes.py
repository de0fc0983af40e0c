"""A release's dtypes are a function of the schema and of the *kind* of the input's dtypes.

Issue 20, item 1: a pandas column made with ``astype("category")`` lists the data's own labels,
and the synthetic frame used to copy that dtype, so one record's undeclared label
(``'Secret-Label-of-Alice'``) reached the output's dtype, its Parquet file and its pickle.  The
neighbour tests here build every input's dtypes *from the data* (category lists, Polars ``Enum``
and ``Categorical``, Arrow dictionaries and their index widths, time units inferred by
``pd.to_datetime``, Arrow schema metadata) and check that the output's schema -- dtypes,
category lists, Arrow types and metadata, also after a Parquet round trip -- is the same for X
and for X plus one record, whatever that record holds.
"""

from __future__ import annotations

import io
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from opendp_wasserstein.tables import Schema, TableEncoding, read_table, write_table
from opendp_wasserstein.tables.release import synthesize_table

pl = pytest.importorskip("polars")

SECRET = "Secret-Label-of-Alice"
DECLARED = ["north", "east", "south"]


def _schema(nullable: bool) -> Schema:
    """Undeclared labels go to missing (nullable) or to the first category (not nullable)."""
    return Schema.from_json(
        {
            "columns": {
                "region": {"type": "categorical", "categories": DECLARED, "nullable": nullable},
                "age": {"type": "int", "bounds": [0, 120]},
                "x": {"type": "float", "bounds": [0, 10]},
                "t": {"type": "datetime", "bounds": ["2015-01-01T00:00:00", "2016-01-01T00:00:00"]},
                "smoker": {"type": "bool"},
            }
        }
    )


def _frame(extra: bool, many: bool) -> pd.DataFrame:
    """X (``extra=False``) or X plus one record holding an undeclared label and a timestamp
    with nanoseconds.  With ``many``, X already holds 123 undeclared labels (126 in all), so the
    extra label moves pandas' category codes from int8 to int16."""
    rng = np.random.default_rng(7)
    n = 30
    region = list(rng.choice(DECLARED, n)) + ([f"other-{i}" for i in range(123)] if many else [])
    times = ["2015-03-01 10:00:00"] * len(region)
    if extra:
        region.append(SECRET)
        times.append("2015-03-01 10:00:00.000000001")
    m = len(region)
    return pd.DataFrame(
        {
            "region": pd.Series(region, dtype=object),
            "age": rng.integers(18, 90, m),
            "x": rng.uniform(0, 10, m),
            "t": pd.to_datetime(times, format="ISO8601"),  # the unit is inferred from the values
            "smoker": rng.uniform(size=m) < 0.3,
        }
    )


def _cat(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(region=df["region"].astype("category"))


def _arrow_dict_series(s: pd.Series) -> pd.Series:
    arr = pa.array(s.astype("category"))  # index width from the number of the data's labels
    return pd.Series(pd.arrays.ArrowExtensionArray(arr))


#: ways a caller builds a frame whose dtypes come from the data
VARIANTS = {
    "pandas-object": lambda df: df,
    "pandas-category": _cat,
    "pandas-string[pyarrow]": lambda df: df.assign(region=df["region"].astype("string[pyarrow]")),
    "pandas-ArrowDtype-dictionary": lambda df: df.assign(region=_arrow_dict_series(df["region"])),
    "pandas-arrow-backed": lambda df: pd.DataFrame(
        {c: pd.Series(pd.arrays.ArrowExtensionArray(pa.array(_cat(df)[c]))) for c in df.columns}
    ),
    "polars-utf8": lambda df: pl.from_pandas(df),
    "polars-categorical": lambda df: pl.from_pandas(df).with_columns(
        pl.col("region").cast(pl.Categorical)
    ),
    "polars-enum": lambda df: pl.from_pandas(df).with_columns(
        pl.col("region").cast(pl.Enum(sorted(set(df["region"]))))
    ),
    "polars-lazy-enum": lambda df: (
        pl.from_pandas(df)
        .with_columns(pl.col("region").cast(pl.Enum(sorted(set(df["region"])))))
        .lazy()
    ),
    "arrow-from-pandas": lambda df: pa.Table.from_pandas(
        _cat(df)
    ),  # dictionary + pandas metadata (n)
    "arrow-dictionary-encode": lambda df: pa.Table.from_pandas(df, preserve_index=False).set_column(
        0,
        "region",
        pa.Table.from_pandas(df, preserve_index=False).column("region").dictionary_encode(),
    ),
}


def _parquet(out) -> bytes:
    buf = io.BytesIO()
    if isinstance(out, pd.DataFrame):
        out.to_parquet(buf, index=False)  # (a RangeIndex would record the output's row count)
    elif isinstance(out, pl.LazyFrame):
        out.collect().write_parquet(buf)
    elif isinstance(out, pl.DataFrame):
        out.write_parquet(buf)
    else:
        pq.write_table(out, buf)
    return buf.getvalue()


def _signature(out) -> tuple:
    """Everything of the output's schema: dtypes (with their category lists), Arrow types and
    schema and field metadata, and the schema of its Parquet file."""
    if isinstance(out, pd.DataFrame):
        own = [
            (repr(t), list(t.categories) if isinstance(t, pd.CategoricalDtype) else None)
            for t in out.dtypes
        ]
        own.append(
            (type(out.index).__name__, out.index.name, out.index.dtype)
        )  # not its length: the row count
    elif isinstance(out, (pl.DataFrame, pl.LazyFrame)):
        schema = out.collect_schema()
        own = [
            (repr(t), list(t.categories) if isinstance(t, pl.Enum) else None)
            for t in schema.dtypes()
        ]
    else:
        own = [
            out.schema.to_string(show_schema_metadata=True, show_field_metadata=True),
            out.schema.metadata,
        ]
    if isinstance(out, pd.DataFrame):
        # an object column has no type: pyarrow infers its Parquet type from the released values
        # (all missing: "null"), a function of the release only (docs/tables.rst)
        out = out.drop(columns=[c for c in out.columns if out[c].dtype == object])
    back = pq.read_schema(io.BytesIO(_parquet(out)))
    return (
        tuple(map(str, own)),
        back.to_string(show_schema_metadata=True, show_field_metadata=True),
        back.metadata,
    )


@pytest.mark.parametrize("many", [False, True])
@pytest.mark.parametrize("nullable", [True, False])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_output_schema_is_the_same_for_neighbours(variant, nullable, many):
    schema = _schema(nullable)
    build = VARIANTS[variant]
    x, x1 = build(_frame(False, many)), build(_frame(True, many))
    out, _ = synthesize_table(x, 1.0, schema)
    out1, _ = synthesize_table(x1, 1.0, schema)
    assert _signature(out) == _signature(out1)
    for o in (out, out1):
        blob = _parquet(o) + pickle.dumps(o.collect() if isinstance(o, pl.LazyFrame) else o)
        assert SECRET.encode() not in blob
        assert b"other-1" not in blob


def _region_dtype(out):
    if isinstance(out, pd.DataFrame):
        return out["region"].dtype
    if isinstance(out, pl.DataFrame):
        return out.schema["region"]
    return out.schema.field("region").type


@pytest.mark.parametrize(
    "variant",
    ["pandas-category", "polars-enum", "pandas-ArrowDtype-dictionary", "arrow-from-pandas"],
)
def test_secret_label_of_alice_is_not_in_the_output(variant):
    """The reproducer of issue 20: her undeclared label is in the input's dtype; the output's
    dtype lists the declared categories, in the schema's order, and nothing else; her label is
    in neither the output's Parquet bytes nor its pickle."""
    schema = _schema(nullable=True)
    x1 = VARIANTS[variant](_frame(True, many=False))
    assert SECRET.encode() in pickle.dumps(x1) or variant.startswith(("pandas-Arrow", "arrow"))
    out, _ = synthesize_table(x1, 1.0, schema)
    dtype = _region_dtype(out)
    assert SECRET not in repr(dtype)
    if isinstance(dtype, pd.CategoricalDtype):
        assert list(dtype.categories) == DECLARED
    elif isinstance(dtype, pl.Enum):
        assert dtype.categories.to_list() == DECLARED
    else:
        t = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else dtype
        assert t.index_type == pa.int8()  # 3 declared labels, however many the data holds
    assert SECRET.encode() not in _parquet(out)
    assert SECRET.encode() not in pickle.dumps(out)


def test_arrow_dictionary_holds_the_declared_categories_in_order():
    schema = _schema(nullable=True)
    out, _ = synthesize_table(
        VARIANTS["arrow-dictionary-encode"](_frame(True, many=True)), 1.0, schema
    )
    col = out.column("region").combine_chunks()
    assert col.type == pa.dictionary(
        pa.int8(), pa.string()
    )  # dictionary_encode: int32 indices, the data's order
    assert col.dictionary.to_pylist() == DECLARED
    assert out.schema.metadata is None
    back = pq.read_table(io.BytesIO(_parquet(out))).column("region").combine_chunks()
    assert back.dictionary.to_pylist() == DECLARED


def test_polars_categorical_comes_back_as_the_enum_of_the_declared_labels():
    """A Categorical's physical codes come from a process-wide table of every string cast so
    far (the data's labels among them), so the release is the Enum of the declared labels, with
    codes the schema's indices whatever the process cast before."""
    pl.Series([SECRET, "south", "other-1"]).cast(pl.Categorical)  # the process has seen these first
    schema = _schema(nullable=True)
    x = VARIANTS["polars-categorical"](_frame(True, many=False))
    out, _ = synthesize_table(x, 1.0, schema)
    assert out.schema["region"] == pl.Enum(DECLARED)
    s = out["region"]
    present = s.is_not_null()
    codes = s.to_physical().filter(present).to_list()
    assert codes == [DECLARED.index(v) for v in s.filter(present).to_list()]


def test_pandas_index_and_arrow_metadata_are_not_copied():
    schema = _schema(nullable=True)
    df = _frame(False, many=False)
    df.index = pd.Index([f"patient-{i}" for i in range(len(df))], name="id")
    df.attrs["source"] = "ward 7"
    out, _ = synthesize_table(df, 1.0, schema)
    assert isinstance(out.index, pd.RangeIndex)
    assert out.attrs == {}
    tbl = pa.Table.from_pandas(df).replace_schema_metadata(
        {b"owner": b"ward 7", **pa.Table.from_pandas(df).schema.metadata}
    )
    tbl = tbl.drop_columns(["id"])
    field = tbl.schema.field("x").with_metadata({b"note": b"ward 7"})
    tbl = tbl.cast(tbl.schema.set(tbl.schema.get_field_index("x"), field))
    out_t, _ = synthesize_table(tbl, 1.0, schema)
    assert out_t.schema.metadata is None
    assert all(f.metadata is None for f in out_t.schema)
    assert b"ward 7" not in _parquet(out_t)


# --------------------------------------------------------------------- the write layer, direct


def _round_trip(data, schema):
    cols, info = read_table(data, schema)
    enc = TableEncoding(schema)
    return write_table(enc.decode(enc.encode(cols)), schema, info)


def test_numpy_text_width_is_the_longest_declared_label():
    """numpy sizes a text array by its longest value: ``<U21`` when her label is there."""
    schema = Schema.from_json(
        {"columns": {"region": {"type": "categorical", "categories": DECLARED}}}
    )
    x = np.array([["north"], ["east"]])
    x1 = np.array([["north"], ["east"], [SECRET]])
    assert x.dtype != x1.dtype
    out, out1 = _round_trip(x, schema), _round_trip(x1, schema)
    assert out.dtype == out1.dtype == np.dtype("<U5")
    assert out1[:, 0].tolist() == ["north", "east", "north"]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_numpy_datetimes_come_back_in_microseconds_dates_as_dates(unit):
    schema = Schema.from_json(
        {"columns": {"t": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]}}}
    )
    x = np.array([["2015-03-01T10:00:00"]], dtype=f"datetime64[{unit}]")
    assert _round_trip(x, schema).dtype == np.dtype("datetime64[us]")
    d = np.array([["2015-03-01"]], dtype="datetime64[D]")
    assert _round_trip(d, schema).dtype == np.dtype("datetime64[D]")


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "numpy"])
def test_an_integer_dtype_too_narrow_for_the_bounds_is_not_kept(kind):
    """The output's width is kept only when it holds every value of the schema, decided on the
    bounds (the width pandas or Polars narrowed to from the values is not a bound): an int8
    column with bounds [0, 1000] comes back as int64, with its values, never wrapped."""
    schema = Schema.from_json({"columns": {"a": {"type": "int", "bounds": [0, 1000]}}})
    vals = np.array([5, 100, 120], dtype=np.int8)
    data = {
        "pandas": lambda: pd.DataFrame({"a": vals}),
        "polars": lambda: pl.DataFrame({"a": vals}),
        "arrow": lambda: pa.table({"a": vals}),
        "numpy": lambda: vals.reshape(-1, 1),
    }[kind]()
    enc = TableEncoding(schema)
    cols, info = read_table(data, schema)
    high = enc.encode(
        {"a": type(cols["a"])(np.array([999.0, 1000.0, 500.0]), np.zeros(3, dtype=bool))}
    )
    out = write_table(enc.decode(high), schema, info)
    got = {
        "pandas": lambda: out["a"].to_numpy(),
        "polars": lambda: out["a"].to_numpy(),
        "arrow": lambda: out.column("a").to_numpy(),
        "numpy": lambda: out[:, 0],
    }[kind]()
    assert got.dtype == np.dtype(np.int64)
    assert got.tolist() == [999, 1000, 500]
    narrow = Schema.from_json({"columns": {"a": {"type": "int", "bounds": [0, 120]}}})
    back = _round_trip(data, narrow)
    got = {
        "pandas": lambda: back["a"].to_numpy(),
        "polars": lambda: back["a"].to_numpy(),
        "arrow": lambda: back.column("a").to_numpy(),
        "numpy": lambda: back[:, 0],
    }[kind]()
    assert got.dtype == np.dtype(np.int8)  # the caller's width, when it holds the bounds


def _dtypes_of_kind():
    """Input dtypes of each container, with the schema column they are read under."""
    cat = {"type": "categorical", "categories": DECLARED, "nullable": True}
    icat = {"type": "categorical", "categories": [3, 1, 200]}
    ts = {"type": "datetime", "bounds": ["2015-01-01T00:00:00", "2016-01-01T00:00:00"]}
    day = {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]}
    num = {"type": "int", "bounds": [0, 120], "nullable": True}
    flo = {"type": "float", "bounds": [0, 1e6]}
    b = {"type": "bool", "nullable": True}
    return [
        ("pandas", pd.CategoricalDtype(["z", "north"], ordered=True), cat),
        ("pandas", pd.CategoricalDtype([False, True]), b),
        ("pandas", pd.CategoricalDtype([1, 2]), num),
        ("pandas", pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string())), cat),
        ("pandas", pd.ArrowDtype(pa.dictionary(pa.int16(), pa.int64())), icat),
        ("pandas", pd.ArrowDtype(pa.timestamp("ns", tz="Europe/Paris")), ts),
        ("pandas", pd.ArrowDtype(pa.int8()), num),
        ("pandas", pd.StringDtype("pyarrow"), cat),
        ("pandas", pd.StringDtype("python"), cat),
        ("pandas", np.dtype(object), cat),
        ("pandas", pd.DatetimeTZDtype("ns", "Europe/Paris"), ts),
        ("pandas", np.dtype("datetime64[ns]"), ts),
        ("pandas", np.dtype(object), day),
        ("pandas", np.dtype(np.int8), num),
        ("pandas", np.dtype(np.uint8), icat),
        ("pandas", pd.Int16Dtype(), num),
        ("pandas", np.dtype(np.float32), flo),
        ("pandas", np.dtype(bool), b),
        ("arrow", pa.dictionary(pa.uint32(), pa.large_string(), ordered=True), cat),
        ("arrow", pa.string_view(), cat),
        ("arrow", pa.timestamp("s", tz="+02:00"), ts),
        ("arrow", pa.date64(), day),
        ("arrow", pa.int8(), num),
        ("arrow", pa.uint8(), icat),
        ("arrow", pa.decimal128(10, 2), flo),
        ("arrow", pa.null(), cat),
        ("polars", pl.Enum(["z", "north"]), cat),
        ("polars", pl.Categorical(), cat),
        ("polars", pl.String(), cat),
        ("polars", pl.Datetime("ns", "Europe/Paris"), ts),
        ("polars", pl.Date(), day),
        ("polars", pl.Int8(), num),
        ("polars", pl.UInt8(), icat),
        ("polars", pl.Float32(), flo),
        ("polars", pl.Null(), cat),
    ]


def test_public_dtype_is_idempotent_and_keeps_only_the_kind():
    from opendp_wasserstein.tables.dtypes import public_dtype
    from opendp_wasserstein.tables.schema import _column_from_json

    expected = {  # the public form of each input dtype above, by position
        0: pd.CategoricalDtype(DECLARED, ordered=True),
        1: pd.CategoricalDtype([False, True]),
        2: pd.Int64Dtype(),  # a category list on a numeric column: the natural dtype
        3: pd.ArrowDtype(pa.dictionary(pa.int8(), pa.string())),
        4: pd.ArrowDtype(pa.dictionary(pa.int8(), pa.int64())),
        5: pd.ArrowDtype(pa.timestamp("us", tz="UTC")),
        6: pd.ArrowDtype(pa.int8()),
        7: pd.StringDtype("pyarrow"),
        8: pd.StringDtype("python"),
        9: np.dtype(object),
        10: pd.DatetimeTZDtype("us", "UTC"),
        11: np.dtype("datetime64[us]"),
        12: np.dtype(object),
        13: pd.Int8Dtype(),  # nullable: the nullable dtype of the same width
        14: np.dtype(np.uint8),
        15: pd.Int16Dtype(),
        16: np.dtype(np.float32),
        17: pd.BooleanDtype(),
        18: pa.dictionary(pa.int8(), pa.large_string(), ordered=True),
        19: pa.string_view(),
        20: pa.timestamp("us", tz="UTC"),
        21: pa.date64(),
        22: pa.int8(),
        23: pa.uint8(),
        24: pa.float64(),
        25: pa.string(),
        26: pl.Enum(DECLARED),
        27: pl.Enum(DECLARED),
        28: pl.String(),
        29: pl.Datetime("us", "UTC"),
        30: pl.Date(),
        31: pl.Int8(),
        32: pl.UInt8(),
        33: pl.Float32(),
        34: pl.String(),
    }
    cases = _dtypes_of_kind()
    assert len(cases) == len(expected)
    for i, (kind, dtype, col) in enumerate(cases):
        spec = _column_from_json("c", col)
        got = public_dtype(kind, dtype, spec)
        assert got == expected[i], (i, dtype, got)
        assert repr(got) == repr(expected[i]), (i, dtype, got)
        assert public_dtype(kind, got, spec) == got, (i, got)
