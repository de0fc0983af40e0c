import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from opendp_wasserstein import select_candidates
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
    read_table,
)

pl = pytest.importorskip("polars")

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 100.0)),
        "k": IntColumn(bounds=(0, 9)),
        "c": CategoricalColumn(categories=("a", "b", "c"), nullable=True),
        "b": BoolColumn(),
    }
)

CANDIDATES = pd.DataFrame(
    {
        "x": [10.0, 10.0, 90.0, 50.0],
        "k": [1, 1, 8, 5],
        "c": ["a", "b", "c", None],
        "b": [True, True, False, False],
    }
)


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    pick = rng.choice(4, n, p=[0.5, 0.3, 0.15, 0.05])
    df = CANDIDATES.iloc[pick].reset_index(drop=True).copy()
    df["x"] = np.clip(df["x"] + rng.normal(0, 3, n), 0, 100)
    return df


def test_nearest_candidate_is_nearest_under_the_table_metric():
    # candidate 0 and 1 differ only in the category: a record of category "b" near x = 10 is
    # nearer candidate 1 (distance 0.0x) than candidate 0 (distance 1), whatever l2 says
    enc = TableEncoding(SCHEMA)
    data = pd.DataFrame({"x": [11.0], "k": [1], "c": ["b"], "b": [True]})
    p = enc.embed(enc.encode(read_table(data, SCHEMA)[0]))
    c = enc.embed(enc.encode(read_table(CANDIDATES, SCHEMA)[0]))
    dist = np.abs(p - c).max(axis=1)
    assert dist.argmin() == 1
    assert dist[0] == 1.0


def test_counts_follow_the_data_and_report():
    df = _data()
    with reproducible(0):
        counts, report = select_candidates(df, CANDIDATES, m=100, epsilon=2.0, schema=SCHEMA)
    assert counts.dtype == np.int64
    assert counts.shape == (4,)
    assert counts.sum() == 100
    assert report.epsilon == 2.0
    assert report.k == 4
    assert report.m == 100
    assert counts[0] > counts[2] > 0  # 50% vs 15% of the data


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "reordered"])
def test_candidates_matched_by_column_name(kind):
    df = _data(500)
    cands = {
        "pandas": CANDIDATES,
        "polars": pl.from_pandas(CANDIDATES),
        "arrow": pa.Table.from_pandas(CANDIDATES, preserve_index=False),
        "reordered": CANDIDATES[["b", "c", "x", "k"]],
    }[kind]
    with reproducible(7):
        base, _ = select_candidates(df, CANDIDATES, 40, 1.0, schema=SCHEMA)
    with reproducible(7):
        other, _ = select_candidates(df, cands, 40, 1.0, schema=SCHEMA)
    assert np.array_equal(base, other)


def test_columns_subset_and_errors():
    df = _data(300)
    with reproducible(1):
        counts, _ = select_candidates(
            df, CANDIDATES[["x", "c"]].drop_duplicates(), 10, 1.0, schema=SCHEMA, columns=["x", "c"]
        )
    assert counts.sum() == 10
    with pytest.raises(ValueError, match=r"\['b'\]"):
        select_candidates(df, CANDIDATES.drop(columns=["b"]), 10, 1.0, schema=SCHEMA)
    with pytest.raises(ValueError, match="'extra'"):
        select_candidates(df, CANDIDATES.assign(extra=1), 10, 1.0, schema=SCHEMA)
    with pytest.raises(ValueError, match="table metric"):
        select_candidates(df, CANDIDATES, 10, 1.0, schema=SCHEMA, metric="l2")
    with pytest.raises(ValueError, match="columns applies only with a schema"):
        select_candidates(np.zeros((3, 2)), np.eye(2), 2, 1.0, columns=["x"])
    # two candidate rows that encode to the same point (x clamped to 100 both)
    dup = pd.concat([CANDIDATES, CANDIDATES.iloc[[2]].assign(x=500.0)], ignore_index=True)
    dup.loc[2, "x"] = 100.0
    with pytest.raises(ValueError, match="distinct"):
        select_candidates(df, dup, 10, 1.0, schema=SCHEMA)


def test_private_size_and_schema_epsilon_are_composed():
    df = _data(300)
    spent = Schema(list(SCHEMA.items()), epsilon_spent=0.5)
    with reproducible(0):
        counts, report = select_candidates(df, CANDIDATES, 10, 1.0, schema=spent, public_size=False)
    assert counts.sum() == 10
    assert report.epsilon == 1.5
    assert report.seconds is None


def test_input_tables_are_not_modified():
    df = _data(200)
    before, cbefore = df.copy(), CANDIDATES.copy()
    with reproducible(0):
        select_candidates(df, CANDIDATES, 5, 1.0, schema=SCHEMA, mechanism="nn")
    pd.testing.assert_frame_equal(df, before)
    pd.testing.assert_frame_equal(CANDIDATES, cbefore)


@pytest.mark.parametrize("order", ["discrete-first", "cyclic"])
def test_synthesize_with_a_split_order(order):
    from opendp_wasserstein import synthesize
    from opendp_wasserstein.runtime import diagnostics

    df = _data(3000)
    with reproducible(5), diagnostics():
        out, report = synthesize(df, 1.0, schema=SCHEMA, split_order=order)
    assert report.details["split_order"] == order
    assert report.epsilon == 1.0
    assert list(out.columns) == list(SCHEMA.names)
    assert len(out) == 3000
    with pytest.raises(ValueError, match="order"):
        synthesize(df, 1.0, schema=SCHEMA, split_order="random")


MIXED = Schema.from_json(
    {
        "columns": {
            "income": {"type": "float", "bounds": [0, 1000], "nullable": True},
            "age": {"type": "int", "bounds": [0, 120]},
            "region": {"type": "categorical", "categories": ["north", "east", "south"]},
            "visit": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]},
            "smoker": {"type": "bool"},
        }
    }
)


def _mixed_frame(n=400, seed=0):
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


@pytest.mark.parametrize("kind", ["pandas", "polars", "polars-lazy", "arrow", "numpy"])
@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm", "privtree"])
def test_synthesize_returns_the_same_type_names_and_dtypes(kind, mechanism):
    from opendp_wasserstein import synthesize

    df = _mixed_frame()
    data = {
        "pandas": lambda: df,
        "polars": lambda: pl.from_pandas(df),
        "polars-lazy": lambda: pl.from_pandas(df).lazy(),
        "arrow": lambda: pa.Table.from_pandas(df, preserve_index=False),
        "numpy": lambda: df.to_numpy(dtype=object),
    }[kind]()
    with reproducible(5):
        out, report = synthesize(data, 1.0, schema=MIXED, mechanism=mechanism)
    assert report.epsilon == 1.0
    assert type(out) is type(data) or (
        kind.startswith("polars") and type(out).__name__ == type(data).__name__
    )
    if kind == "pandas":
        assert list(out.columns) == list(df.columns)
        assert list(out.dtypes) == list(df.dtypes)
    elif kind == "polars":
        assert out.columns == data.columns
        assert out.dtypes == data.dtypes
    elif kind == "polars-lazy":
        assert out.collect_schema() == data.collect_schema()
    elif kind == "arrow":
        assert out.schema == data.schema
    else:
        assert out.dtype == data.dtype
        assert out.shape == data.shape


def test_a_data_derived_schema_is_refused_unless_accepted():
    """Bounds or categories read off the data are not private: the Python API refuses them as
    the command line does, and releases only when told to accept them."""
    from opendp_wasserstein import synthesize

    schema = Schema.from_json(
        {
            "columns": {
                "a": {"type": "float", "bounds": [0, 10], "derived_from_data": True},
                "c": {"type": "categorical", "categories": ["x", "y"]},
            }
        }
    )
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": ["x", "y", "x"]})
    cand = pd.DataFrame({"a": [0.0, 5.0], "c": ["x", "y"]})
    with pytest.raises(ValueError, match=r"column\(s\) \['a'\] were read off the data"):
        synthesize(df, 1.0, schema=schema)
    with pytest.raises(ValueError, match="accept_data_derived_schema"):
        select_candidates(df, cand, 2, 1.0, schema=schema)
    out, _ = synthesize(df, 1.0, schema=schema, accept_data_derived_schema=True)
    assert list(out.columns) == ["a", "c"]
    counts, _ = select_candidates(df, cand, 2, 1.0, schema=schema, accept_data_derived_schema=True)
    assert counts.sum() == 2
    with pytest.raises(ValueError, match="only with a schema"):
        synthesize(np.zeros((3, 1)), 1.0, bounds=(0, 1), accept_data_derived_schema=True)


class _Stream:
    """Standard error that says it is a terminal and keeps what is written."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None: ...


def _bars(monkeypatch):
    """Spy on the table release's bars and on the rule's arguments."""
    import sys

    from opendp_wasserstein.release import progress
    from opendp_wasserstein.tables import release

    stream = _Stream()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "LONG_RELEASE_ROWS", 100)  # a long release, made small
    calls: list[tuple] = []
    bars: list = []

    def rule(given, private, rows=None):
        calls.append((given, private, rows))
        return progress.default_progress(given, private, rows)

    def keep(total, quiet, desc):
        bars.append(progress.progress_bar(total, quiet, desc))
        return bars[-1]

    monkeypatch.setattr(release, "default_progress", rule)
    monkeypatch.setattr(release, "progress_bar", keep)
    return stream, calls, bars


@pytest.mark.parametrize("mechanism", [None, "adaptive"])
def test_a_long_public_table_release_on_a_terminal_shows_its_stages(monkeypatch, mechanism):
    pytest.importorskip("tqdm")
    from opendp_wasserstein import synthesize

    stream, calls, bars = _bars(monkeypatch)
    with reproducible(2):
        synthesize(_data(300), 1.0, schema=SCHEMA, mechanism=mechanism)
    assert calls == [(None, False, 300)]
    assert "synth" in stream.text
    assert [(b.n, b.total) for b in bars] == [(3, 3)]  # data checked, chain built, released


def test_a_table_selection_shows_its_stages(monkeypatch):
    pytest.importorskip("tqdm")
    stream, calls, bars = _bars(monkeypatch)
    with reproducible(2):
        select_candidates(_data(300), CANDIDATES, 5, 1.0, schema=SCHEMA)
    assert calls == [(None, False, 300)]
    assert "select" in stream.text
    assert [(b.n, b.total) for b in bars] == [(3, 3)]


@pytest.mark.parametrize("given", [None, True])
def test_a_private_size_table_release_never_shows_a_bar_nor_reads_n(monkeypatch, given):
    from opendp_wasserstein import synthesize

    stream, calls, _ = _bars(monkeypatch)
    with reproducible(2):
        synthesize(
            _data(300), 1.0, schema=SCHEMA, mechanism="adaptive", public_size=False, progress=given
        )
    assert calls == [(given, True, None)]
    assert stream.text == ""
