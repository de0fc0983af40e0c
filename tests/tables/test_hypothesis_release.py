"""Hypothesis, end to end: random schemas and frames through ``synthesize`` and
``select_candidates``.

The frames (``tests/tables/test_frames.py::schema_and_frame``) hold nulls, values outside the
declared categories (empty strings among them), extreme numbers (``inf``, ``nan``, ``+-2^62``)
and dates far outside their bounds; here each column is further cast to one of the dtypes a real
frame may carry it in (float32/float64; int8..int64, unsigned, nullable Int64; object, pandas
``string`` and ``category``, Polars ``Categorical``/``Enum``, Arrow dictionaries; naive and
time-zone-aware datetimes, dates; numpy and nullable booleans), and the frame comes as pandas,
Polars eager or lazy, pyarrow or numpy.  A release must come back as the same type with the same
column names and dtypes, hold only declared labels, nulls only in nullable columns, numbers inside
their bounds, and leave the input untouched.  Errors name the column and never quote a value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)
from tests.tables.test_frames import _check_output, _collect, _dtypes, schema_and_frame

pl = pytest.importorskip("polars")

#: a warning raised while a table is read depends on the private values (a leak through stderr),
#: and one while a release is decoded would be noise: neither may happen, so any RuntimeWarning
#: (numpy's "overflow encountered in cast" among them) fails these tests.  The frames' own
#: dtype casts (``_recast``) skip dtypes that cannot hold the values and cast float32 under
#: ``np.errstate(over="ignore")`` (an overflow to inf is a wanted input).
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

SECRET = "SECRET-5d1e"
_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _recast(draw, series: pd.Series, spec) -> pd.Series:
    """``series`` in another dtype a frame may hold that column in (values kept)."""
    has_null = bool(series.isna().any())
    if isinstance(spec, FloatColumn):
        dtype = draw(st.sampled_from(["float64", "float32"]))
        with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes inf: wanted
            return series.astype(dtype)
    if isinstance(spec, IntColumn):
        options = (
            ["Int64", "Int32"]
            if has_null
            else ["Int64", "int64", "int32", "int16", "int8", "uint8", "uint32"]
        )
        values = series.astype("float64")
        for dtype in draw(st.permutations(options)):
            info = np.iinfo(dtype.lower())
            if not values.dropna().between(info.min, info.max).all():
                continue  # a cast that would overflow (pandas warns); this dtype cannot hold it
            try:
                out = series.astype(dtype)
            except (TypeError, ValueError, OverflowError):
                continue
            if (out.astype("float64").fillna(-0.5) == series.astype("float64").fillna(-0.5)).all():
                return out
        return series
    if isinstance(spec, CategoricalColumn):
        if series.dtype == object:
            return series.astype(draw(st.sampled_from(["object", "string", "category"])))
        return series.astype(draw(st.sampled_from(["Int64", "category"])))
    if isinstance(spec, DatetimeColumn):
        choice = draw(st.sampled_from(["naive", "utc", "tz", "ns"]))
        if choice == "utc":
            return series.dt.tz_localize("UTC")
        if choice == "tz":
            return series.dt.tz_localize("Europe/Zurich", ambiguous="NaT", nonexistent="NaT")
        if choice == "ns":
            return series.astype("datetime64[ns]")
        return series
    if isinstance(spec, BoolColumn) and not has_null:
        return series.astype(draw(st.sampled_from(["boolean", "bool"])))
    return series


@st.composite
def recast_frame(draw):
    schema, df = draw(schema_and_frame())
    for name, spec in schema.items():
        df[name] = _recast(draw, df[name], spec)
    return schema, df


def _as_kind(draw, df: pd.DataFrame, schema: Schema, kind: str):
    if kind == "pandas":
        return df
    if kind == "arrow":
        t = pa.Table.from_pandas(df, preserve_index=False)
        if draw(st.booleans()):  # dictionary-encoded text columns
            for i, f in enumerate(t.schema):
                if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
                    t = t.set_column(i, f.name, t.column(i).dictionary_encode())
        return t
    if kind in ("polars", "polars-lazy"):
        p = pl.from_pandas(df)
        for name, spec in schema.items():
            if (
                name in p.columns
                and isinstance(spec, CategoricalColumn)
                and p.schema[name] in (pl.String, pl.Categorical)
            ):
                if draw(
                    st.booleans()
                ):  # an Enum of the declared labels and whatever else the data holds
                    seen = p[name].drop_nulls().unique(maintain_order=True).to_list()
                    labels = list(dict.fromkeys([*map(str, spec.categories), *seen]))
                    p = p.with_columns(pl.col(name).cast(pl.Enum(labels)))
        return p.lazy() if kind == "polars-lazy" else p
    return df.to_numpy(dtype=object)


def _snapshot(x):
    x = _collect(x)
    if isinstance(x, pd.DataFrame):
        return x.copy(deep=True)
    if isinstance(x, pl.DataFrame):
        return x.clone()
    if isinstance(x, np.ndarray):
        return x.copy()
    return x  # pyarrow tables are immutable


def _unchanged(x, before) -> bool:
    x = _collect(x)
    if isinstance(x, pd.DataFrame):
        pd.testing.assert_frame_equal(x, before)
        return True
    if isinstance(x, pl.DataFrame):
        return x.equals(before)
    if isinstance(x, np.ndarray):
        return bool(pd.DataFrame(x).equals(pd.DataFrame(before)))
    return x is before


def _to_pandas(out):
    o = _collect(out)
    if isinstance(o, pd.DataFrame):
        return o
    if isinstance(o, np.ndarray):
        return pd.DataFrame(o)
    return o.to_pandas()


@_SETTINGS
@given(
    recast_frame(),
    st.sampled_from(["pandas", "polars", "polars-lazy", "arrow", "numpy"]),
    st.sampled_from(["adaptive", "pruned", "pmm"]),
    st.data(),
)
def test_synthesize_random_schemas_and_frames(sf, kind, mechanism, data):
    schema, df = sf
    x = _as_kind(data.draw, df, schema, kind)
    before = _snapshot(x)
    with reproducible(0):
        out, report = synthesize(x, 1.0, schema=schema, mechanism=mechanism)
    assert report.epsilon == 1.0
    assert type(_collect(out)) is type(_collect(x))
    assert _unchanged(x, before)
    if kind == "numpy":
        assert out.shape == x.shape
        assert out.dtype == x.dtype
        o = pd.DataFrame(out, columns=list(schema.names))
    else:
        got, want = _dtypes(out), _dtypes(x)
        assert len(got) == len(want)
        for g, w, (_, spec) in zip(got, want, schema.items(), strict=True):
            # the same kind of dtype (its categories, time unit and zone come from the schema:
            # tests/tables/test_neighbour_dtypes.py); pandas upgrades to a nullable dtype where
            # nulls are declared; an all-null column's "null" type cannot hold labels; an int
            # dtype too narrow for the declared bounds widens (a function of the schema only)
            assert (
                _family(g) == _family(w)
                or kind == "pandas"
                or str(w).lower() == "null"
                or _widened(g, w, spec)
            ), (g, w)
        o = _to_pandas(out)
        assert list(o.columns) == list(schema.names)
    assert len(o) == len(df)
    _check_output(o, _in_dtype(schema, o))


def _int_range(dtype) -> tuple[int, int] | None:
    """The values a Polars or Arrow integer dtype holds, ``None`` for any other dtype."""
    s = str(dtype).lower()
    if not s.startswith(("int", "uint")):
        return None
    info = np.iinfo(s)
    return int(info.min), int(info.max)


def _widened(got, want, spec) -> bool:
    """An integer input dtype that cannot hold the column's declared bounds came back as a wider
    integer dtype that can: the schema decides it, never the data."""
    w, g = _int_range(want), _int_range(got)
    if w is None or g is None or not isinstance(spec, IntColumn):
        return False
    lo, hi = spec.bounds
    return not (w[0] <= lo and hi <= w[1]) and g[0] <= lo and hi <= g[1]


def _family(dtype) -> str:
    """The kind of a Polars or Arrow dtype, all that a release keeps of it (a Polars
    ``Categorical`` comes back as the ``Enum`` of the declared labels)."""
    s = str(dtype).lower()
    if isinstance(dtype, pa.DataType):
        if pa.types.is_timestamp(dtype):
            return "timestamp-aware" if dtype.tz else "timestamp"
        return "dictionary" if pa.types.is_dictionary(dtype) else s
    if isinstance(dtype, pl.Datetime):
        return "timestamp-aware" if dtype.time_zone else "timestamp"
    if isinstance(dtype, (pl.Enum, pl.Categorical)):
        return "categorical"
    return s


def _in_dtype(schema: Schema, o: pd.DataFrame) -> Schema:
    """The schema with float bounds as the output column's dtype represents them: rounding to
    the nearest float32 is monotone, so a value inside the bounds stays inside their rounded
    values (bounds such as ``(37181969, 37181970)`` hold no float32 at all)."""
    specs = {}
    for name, spec in schema.items():
        if isinstance(spec, FloatColumn) and o[name].dtype == np.float32:
            lo, hi = (float(np.float32(b)) for b in spec.bounds)
            spec = FloatColumn(
                bounds=(lo, max(hi, np.nextafter(lo, np.inf))), nullable=spec.nullable
            )
        specs[name] = spec
    return Schema(specs)


@_SETTINGS
@given(recast_frame(), st.sampled_from(["pandas", "polars", "arrow"]), st.data())
def test_select_candidates_random_schemas_and_frames(sf, kind, data):
    schema, df = sf
    x = _as_kind(data.draw, df, schema, kind)
    cands = _as_kind(data.draw, df.iloc[::-1].reset_index(drop=True), schema, kind)
    with reproducible(0):
        try:
            counts, report = select_candidates(x, cands, 5, 1.0, schema=schema)
        except ValueError as e:  # two candidate rows encoding to one point: refused by row number
            assert "row" in str(e)
            return
    assert counts.sum() == 5
    assert len(counts) == len(df)


def _values_of(df: pd.DataFrame) -> set[str]:
    out = set()
    for v in df.to_numpy(dtype=object).ravel():
        s = str(v)
        if (
            len(s) >= 4
            and v is not None
            and s not in ("None", "nan", "NaT", "<NA>", "True", "False")
        ):
            out.add(s)
    return out


@_SETTINGS
@given(recast_frame(), st.sampled_from(["pandas", "polars", "arrow", "numpy"]), st.data())
def test_errors_name_the_column_never_a_value(sf, kind, data):
    """Every refusal of a table (a column not in the schema, a schema column missing from the
    table, a candidate table without a column, a numpy dtype that cannot hold a column) names
    the column and quotes no value of the data."""
    schema, df = sf
    names = list(schema.names)
    case = data.draw(st.sampled_from(["extra", "missing", "candidates", "numpy-dtype"]))
    values = _values_of(df) | {SECRET}
    col = names[0]
    if case == "extra":
        bad = df.assign(**{"zz_extra": [SECRET] * len(df)})
        # the table's own names are counted, never quoted (a header may be a record)
        x, call, named = (
            _as_kind(data.draw, bad, schema, kind),
            "synth",
            "not columns of the schema",
        )
        if kind == "numpy":  # a numpy table is positional: the error is about the count
            named = "columns"
    elif case == "missing" and len(names) > 1:
        x, call, named = _as_kind(data.draw, df.drop(columns=[col]), schema, kind), "synth", col
        if kind == "numpy":  # a numpy table is positional: the error is about the count
            named = "columns"
    elif case == "candidates" and len(names) > 1 and kind != "numpy":
        x, call, named = _as_kind(data.draw, df, schema, kind), "select", col
    else:
        num = next(
            (
                n
                for n, s in schema.items()
                if isinstance(s, CategoricalColumn) and isinstance(s.categories[0], str)
            ),
            None,
        )
        if num is None:
            return
        arr = np.zeros((len(df), len(names)))  # a float array cannot hold text labels (nor bools)
        x, call, named = arr, "synth", None
    with pytest.raises((SchemaError, ValueError, TypeError)) as e:
        if call == "synth":
            synthesize(x, 1.0, schema=schema)
        else:
            cands = _as_kind(data.draw, df.drop(columns=[col]), schema, kind)
            select_candidates(x, cands, 3, 1.0, schema=schema)
    msg = str(e.value)
    if named is None:  # the first column the array's dtype cannot hold
        assert any(repr(n) in msg for n in names)
    else:
        assert named in msg or repr(named) in msg
    assert "zz_extra" not in msg
    for v in values - set(names):
        assert v not in msg, "an error quotes a data value"


def test_int32_column_widens_when_its_bounds_do_not_fit():
    """The case Hypothesis found: a Polars Int32 column declared on [2^31 - 1, 2^31] comes back as
    Int64 (the schema's bounds decide it, the data's values do not), inside the bounds."""
    pl = pytest.importorskip("polars")
    schema = Schema(
        {
            "a": IntColumn(bounds=(2**31 - 1, 2**31), nullable=True),
            "b": FloatColumn(bounds=(0.0, 1.0)),
        }
    )
    df = pl.DataFrame(
        {"a": [None] + [0] * 11, "b": [0.0] * 12}, schema={"a": pl.Int32, "b": pl.Float64}
    )
    with reproducible(0):
        out, _ = synthesize(df, 1.0, schema=schema)
    assert out.schema["a"] == pl.Int64
    assert _widened(out.schema["a"], df.schema["a"], schema.items()[0][1])
    values = out["a"].drop_nulls().to_numpy()
    assert values.min() >= 2**31 - 1
    assert values.max() <= 2**31
    assert not _widened(pl.Int64, pl.Int32, IntColumn(bounds=(0, 10)))
