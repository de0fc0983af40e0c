import math

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.measurements import (
    make_adaptive_pruned_pmm,
    make_pruned_pmm,
    make_tree_projection,
)
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import paper_schedule
from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
    decode_points,
    make_table_decoding,
    make_table_encoding,
    read_table,
    table_domain,
    then_table_encoding,
)

pl = pytest.importorskip("polars")

SECRET = "SECRET-91c2"

SCHEMA = Schema(
    {
        "income": FloatColumn(bounds=(0.0, 1000.0), nullable=True),
        "age": IntColumn(bounds=(0, 120)),
        "region": CategoricalColumn(categories=("north", "east", "south")),
        "visit": DatetimeColumn(bounds=("2015-01-01", "2016-01-01")),
        "smoker": BoolColumn(),
    }
)


def _df(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "income": np.where(rng.uniform(size=n) < 0.1, np.nan, rng.uniform(0, 900, n)),
            "age": rng.integers(18, 90, n),
            "region": rng.choice(["north", "east", "south"], n),
            "visit": pd.to_datetime("2015-01-01")
            + pd.to_timedelta(rng.integers(0, 365, n), unit="D"),
            "smoker": rng.uniform(size=n) < 0.3,
        }
    )


@pytest.mark.parametrize("metric", [dp.symmetric_distance(), dp.change_one_distance()])
def test_stability_is_the_identity(metric):
    t = make_table_encoding(table_domain(SCHEMA, size=200), metric)
    assert t.map(1) == 1
    assert t.map(7) == 7
    assert t.check(3, 3)
    assert not t.check(3, 2)
    with pytest.raises(ValueError):
        t.map(-1)


def test_output_domain_and_metric():
    t = make_table_encoding(table_domain(SCHEMA, size=200), dp.change_one_distance())
    assert t.output_domain == dp.numpy.array2_domain(num_columns=6, size=200, T=float, nan=False)
    assert t.output_metric == dp.change_one_distance()
    t1 = make_table_encoding(table_domain(SCHEMA), dp.symmetric_distance(), embedding="one_hot")
    assert t1.output_domain == dp.numpy.array2_domain(
        num_columns=1 + 2 + 1 + 3 + 1 + 2, T=float, nan=False
    )


def test_change_one_needs_a_size_and_embedding_is_checked():
    with pytest.raises(ValueError, match="sized"):
        make_table_encoding(table_domain(SCHEMA), dp.change_one_distance())
    with pytest.raises(ValueError, match="embedding"):
        make_table_encoding(table_domain(SCHEMA), dp.symmetric_distance(), embedding="dense")
    with pytest.raises(ValueError, match="table_domain"):
        make_table_encoding(dp.numpy.array2_domain(num_columns=2, T=float), dp.symmetric_distance())


def test_encoding_is_row_wise_and_does_not_modify_the_input():
    df = _df()
    before = df.copy()
    t = make_table_encoding(table_domain(SCHEMA), dp.symmetric_distance())
    full = t(df)
    assert np.array_equal(full, TableEncoding(SCHEMA).encode(read_table(df, SCHEMA)[0]))
    # each output row depends on its input row only: dropping / replacing a row changes that row
    # alone
    assert np.array_equal(t(df.iloc[5:]), full[5:])
    other = df.copy()
    other.iloc[3] = [2000.0, 500, SECRET, pd.Timestamp("1999-01-01"), False]
    changed = t(other)
    assert np.array_equal(np.delete(changed, 3, axis=0), np.delete(full, 3, axis=0))
    pd.testing.assert_frame_equal(df, before)
    # column order of the table does not matter: the schema orders the axes
    assert np.array_equal(t(df[list(reversed(df.columns))]), full)


def test_errors_name_columns_and_the_size_never_values():
    t = make_table_encoding(table_domain(SCHEMA, size=200), dp.change_one_distance())
    df = _df()
    # errors raised inside a release come back as OpenDP errors carrying the message
    with pytest.raises(Exception, match="not columns of the schema") as e:
        t(df.assign(extra=SECRET))
    assert "'extra'" not in str(e.value)  # a frame's own names are counted, never quoted
    assert SECRET not in str(e.value)
    with pytest.raises(Exception, match="'smoker'"):
        t(df.drop(columns=["smoker"]))
    with pytest.raises(Exception, match="exactly 200 rows"):
        t(df.iloc[:10])


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars-lazy", "arrow", "numpy"])
def test_chain_with_pruned_pmm_and_decoding(kind):
    df = _df(300)
    dom = table_domain(SCHEMA, size=300)
    t = make_table_encoding(dom, dp.change_one_distance())
    d = t.output_domain.descriptor.num_columns
    meas = (
        t
        >> make_pruned_pmm(t.output_domain, t.output_metric, 8, paper_schedule(d, 1.0, 8))
        >> make_table_decoding(dom, kind)
    )
    assert meas.map(1) == 1.0
    with reproducible(3):
        out = meas(df)
    # OpenDP's measurement_invoke would store the input table on a frame that takes attributes
    assert not hasattr(out, "__opendp_dict__")
    frame = out.collect() if kind == "polars-lazy" else out
    if kind == "pandas":
        assert list(frame.columns) == list(SCHEMA.names)
        assert [str(t) for t in frame.dtypes] == [
            "float64",
            "int64",
            "object",
            "datetime64[us]",
            "bool",
        ]
        assert set(frame["region"]) <= {"north", "east", "south"}
        assert frame["age"].between(0, 120).all()
        assert frame["age"].notna().all()
    elif kind == "arrow":
        assert frame.column_names == list(SCHEMA.names)
        assert [str(t) for t in frame.schema.types] == [
            "double",
            "int64",
            "string",
            "date32[day]",
            "bool",
        ]
    elif kind in ("polars", "polars-lazy"):
        assert frame.columns == list(SCHEMA.names)
        assert [str(t) for t in frame.dtypes] == ["Float64", "Int64", "String", "Date", "Boolean"]
        assert frame["region"].null_count() == 0
    else:
        assert frame.shape == (300, 5)
        assert frame.dtype == object


def test_chain_with_adaptive_and_private_size():
    df = _df(400)
    dom = table_domain(SCHEMA)
    t = make_table_encoding(dom, dp.symmetric_distance())
    meas = (
        t
        >> make_adaptive_pruned_pmm(t.output_domain, t.output_metric, 0.25, 1.5, size=400)
        >> make_table_decoding(dom)
    )
    assert meas.map(1) == 1.0  # eps_sel + eps_main / 2 for one added or removed record
    with reproducible(0):
        out = meas(df)
    assert len(out) == 400
    assert out["income"].isna().any() in (True, False)


def test_context_api_and_decode_points():
    df = _df(300)
    dom = table_domain(SCHEMA)
    ctx = dp.Context.compositor(
        data=df,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=1,
        domain=dom,
    )
    query = (
        ctx.query()
        .table_encoding()
        .adaptive_pruned_pmm(epsilon_select=0.2, epsilon_main=1.6, size=300)
    )
    with reproducible(1):
        points = query.release()
    out = decode_points(dom, points, "arrow")
    assert out.num_rows == 300
    assert out.column_names == list(SCHEMA.names)
    with pytest.raises(ValueError, match="6"):
        decode_points(dom, points[:, :2])


def test_then_form_chains():
    dom = table_domain(SCHEMA, size=200)
    t = (dom, dp.change_one_distance()) >> then_table_encoding(embedding="one_hot")
    assert t.map(1) == 1


def test_one_hot_chain_into_tree_projection():
    df = _df(300)
    dom = table_domain(SCHEMA, size=300)
    t = make_table_encoding(dom, dp.change_one_distance(), embedding="one_hot")
    enc = TableEncoding(SCHEMA)
    cands = enc.embed(enc.encode(read_table(_df(20, seed=5).drop_duplicates(), SCHEMA)[0]))
    cands = np.unique(cands, axis=0)
    meas = t >> make_tree_projection(
        t.output_domain, t.output_metric, cands, 50, 1.0, metric="linf"
    )
    assert meas.map(1) == 1.0
    with reproducible(2):
        counts = np.asarray(meas(df))
    assert counts.sum() == 50
    assert counts.size == len(cands)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.data())
def test_one_hot_linf_is_the_table_metric(data):
    cells = data.draw(st.lists(st.integers(0, 6), min_size=1, max_size=4))
    spec = {}
    for i, k in enumerate(cells):
        spec[f"c{i}"] = (
            FloatColumn(bounds=(0, 1), nullable=data.draw(st.booleans()))
            if k == 0
            else CategoricalColumn(
                categories=tuple(f"v{j}" for j in range(k)), nullable=data.draw(st.booleans())
            )
        )
    enc = TableEncoding(Schema(spec))
    floats = st.floats(0, 1, allow_nan=False)
    a = np.array(
        data.draw(
            st.lists(
                st.lists(floats, min_size=enc.dimension, max_size=enc.dimension),
                min_size=1,
                max_size=8,
            )
        )
    )
    b = np.array(
        data.draw(
            st.lists(
                st.lists(floats, min_size=enc.dimension, max_size=enc.dimension),
                min_size=len(a),
                max_size=len(a),
            )
        )
    )
    linf = np.abs(enc.embed(a) - enc.embed(b)).max(axis=1)
    assert np.allclose(linf, enc.distance(a, b), rtol=0, atol=0)
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in linf)


def test_one_hot_on_pyarrow_input():
    df = _df(50)
    t = make_table_encoding(
        table_domain(SCHEMA, size=50), dp.change_one_distance(), embedding="one_hot"
    )
    x = t(pa.Table.from_pandas(df, preserve_index=False))
    assert x.shape == (50, 10)
    assert set(np.unique(x[:, 0:2])) == {0.0, 1.0}
    assert np.all(x[:, 0:2].sum(axis=1) == 1)
    assert np.all(x[:, 4:7].sum(axis=1) == 1)
