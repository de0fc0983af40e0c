"""Drafting a schema (:mod:`opendp_wasserstein.tables.drafting`): what a draft contains must not
hang on one record (issue 20, items 3, 4 and 9)."""

import datetime as dt
import json
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from opendp_wasserstein.tables import Schema, SchemaError
from opendp_wasserstein.tables.drafting import (
    COUNT_SHARE,
    RELIABLE_N_EPSILON,
    draft_schema,
    make_bounds_count,
)


def _labels(k, n=300, seed=0):
    """``n`` rows whose text column holds ``k`` distinct labels (50 and 51: one record apart)."""
    rng = np.random.default_rng(seed)
    labels = [f"L{i % 50}" for i in range(n)]
    if k == 51:
        labels[0] = "Secret-Label-of-Alice"
    return pa.table(
        {
            "year": pa.array(rng.integers(1990, 2020, n)),
            "label": pa.array(labels),
            "smoker": pa.array(rng.uniform(size=n) < 0.3),
        }
    )


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_50_and_51_labels_draft_the_same_columns(epsilon):
    """Item 3: a text column with more than max_categories labels was left out, so one record
    decided whether the column was in the schema.  Now it is drafted either way."""
    a, b = draft_schema(_labels(50), epsilon=epsilon), draft_schema(_labels(51), epsilon=epsilon)
    assert a.columns == b.columns == ["year", "label", "smoker"]
    assert [list(json.loads(r.dumps())["columns"]) for r in (a, b)] == [a.columns, b.columns]
    assert a.skipped == b.skipped == {}
    # 50: the labels, read off the data and marked; 51: left to fill in, marked, no label listed
    assert a.schema["label"].derived_from_data
    entry = dict(b.entries)["label"]
    assert entry == {"type": "categorical", "categories": None, "derived_from_data": True}
    assert "Secret-Label-of-Alice" not in b.dumps()
    assert "label" in b.to_fill
    assert "label" not in b.schema
    with pytest.raises(SchemaError, match="column 'label': categories are left to fill in"):
        Schema.from_json(b.dumps())


def test_columns_without_values_are_drafted_to_fill_in():
    """A column with no values (all missing) was left out: one record with a value put it back."""
    t = pa.table(
        {
            "x": pa.array([1.5, 2.5, 3.0]),
            "t": pa.array([None, None, None], pa.string()),
            "f": pa.array([None, None, None], pa.float64()),
            "n": pa.array([None, None, None], pa.null()),
        }
    )
    rep = draft_schema(t, types_from_data=True)  # a text file: the null-typed column is text
    assert rep.columns == ["x", "t", "f", "n"]
    assert dict(rep.entries)["f"] == {
        "type": "float",
        "bounds": None,
        "nullable": True,
        "derived_from_data": True,
    }
    assert dict(rep.entries)["t"]["categories"] is None
    assert set(rep.to_fill) == {"t", "f", "n"}
    # a Parquet file's types are public: a null-typed column is skipped on its type alone
    assert draft_schema(t).skipped == {"n": "unsupported type null"}


def test_a_text_file_column_of_another_inferred_type_is_drafted_as_text():
    t = pa.table(
        {"at": pa.array([dt.time(12, 30), dt.time(13, 0)], pa.time32("s")), "x": pa.array([1, 2])}
    )
    rep = draft_schema(t, types_from_data=True)
    assert rep.columns == ["at", "x"]
    assert rep.schema["at"].categories == ("12:30:00", "13:00:00")
    assert draft_schema(t).skipped == {"at": "unsupported type time32[s]"}


def test_every_column_of_a_draft_without_epsilon_is_marked():
    """The bool column's nullable flag was read off the data: marked like the others (an
    unmarked draft would be released without the flag, or refused, on one record's null)."""
    rep = draft_schema(_labels(50))
    assert rep.schema.data_derived_columns() == ["year", "label", "smoker"]
    with_null = _labels(50).set_column(2, "smoker", pa.array([None] + [True] * 299))
    assert draft_schema(with_null).schema["smoker"].nullable
    assert draft_schema(with_null).schema.data_derived_columns() == ["year", "label", "smoker"]


@pytest.mark.parametrize("epsilon", [None, 1.0])
def test_the_draft_round_trips_through_its_json(epsilon):
    """Item 4: every field the drafting writes (epsilon_spent included) is one the reader acts
    on."""
    t = pa.table(
        {
            "age": pa.array(np.arange(3000) % 90),
            "w": pa.array(np.linspace(0, 5, 3000)),
            "d": pa.array([dt.date(2015, 1, 1) + dt.timedelta(days=i % 300) for i in range(3000)]),
            "r": pa.array(["a", "b", None] * 1000),
            "s": pa.array([True, False, None] * 1000),
        }
    )
    rep = draft_schema(t, epsilon=epsilon, nullable=["r"])
    assert rep.to_fill == {}
    back = Schema.from_json(rep.dumps())
    assert back == rep.schema
    assert (
        back.epsilon_spent == rep.epsilon_spent == (0.0 if epsilon is None else back.epsilon_spent)
    )
    assert Schema.from_json(rep.schema.to_json()) == rep.schema
    if epsilon is not None:
        assert 0 < back.epsilon_spent <= epsilon


def test_with_epsilon_no_column_is_nullable_unless_asked():
    """Item 9: every numeric column was marked nullable; the DP outputs cannot say which have
    missing values, so only the columns the caller names are."""
    rng = np.random.default_rng(3)
    t = pa.table(
        {
            "a": pa.array(rng.uniform(0, 9, 2000)),
            "b": pa.array(rng.integers(0, 9, 2000)),
            "c": pa.array(rng.choice(["x", "y"], 2000)),
            "s": pa.array(rng.uniform(size=2000) < 0.5),
        }
    )
    rep = draft_schema(t, epsilon=1.0)
    assert [n for n in rep.schema.names if rep.schema[n].nullable] == []
    rep = draft_schema(t, epsilon=1.0, nullable=["b", "s"])
    assert [n for n in rep.schema.names if rep.schema[n].nullable] == ["b", "s"]
    with pytest.raises(SchemaError, match=r"\['zz'\]"):
        draft_schema(t, epsilon=1.0, nullable=["zz"])


def test_small_tables_are_reported_unreliable_from_the_dp_count():
    """Item 9: a few hundred rows at epsilon 1 gave bounds like [-2.7e10, 9.5e10] with no word.
    The DP count of each column's values (bought with COUNT_SHARE of its share) and the public
    budget decide the warning, which names n x epsilon and the epsilon that would do."""
    rep = draft_schema(_labels(50, n=300), epsilon=1.0)
    eps_q = float((1 - COUNT_SHARE) / 2)  # one numeric column: its share is the whole budget
    n_dp = rep.dp_counts["year"]
    assert abs(n_dp - 300) < 400  # Laplace scale 20: failure probability ~e^-20
    assert set(rep.unreliable) == {"year"}
    why = rep.unreliable["year"]
    assert f"DP count of values is {n_dp}," in why
    assert f"{n_dp} x {eps_q:.3g}" in why
    assert str(RELIABLE_N_EPSILON) in why
    assert "--estimate-bounds" in why
    # the exact n is not in the message unless the DP count happens to equal it
    assert (" 300 " in why) == (n_dp == 300)


def test_large_tables_are_not_reported_unreliable():
    rng = np.random.default_rng(4)
    t = pa.table(
        {"age": pa.array(rng.integers(18, 90, 20000)), "w": pa.array(rng.uniform(0, 1, 20000))}
    )
    rep = draft_schema(t, epsilon=2.0)
    assert rep.unreliable == {}
    assert set(rep.dp_counts) == {"age", "w"}


def test_the_budget_is_spent_exactly_and_never_exceeded():
    rng = np.random.default_rng(5)
    for eps in (0.3, 1.0, 2.0, 0.7):
        for k in (1, 3, 7):
            t = pa.table({f"c{i}": pa.array(rng.integers(0, 100, 200)) for i in range(k)})
            spent = draft_schema(t, epsilon=eps).epsilon_spent
            assert eps * (1 - 1e-12) <= spent <= eps


def test_the_count_measurement_map_is_exact():
    meas = make_bounds_count(0.1)
    assert Fraction(meas.map(2)) <= Fraction(0.1)
    assert meas.check(2, 0.1)
    assert not meas.check(2, float(np.nextafter(meas.map(2), 0)))
