import json

import pytest

from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)

ISSUE_SCHEMA = {
    "columns": {
        "income": {"type": "float", "bounds": [0, 500000], "nullable": True},
        "age": {"type": "int", "bounds": [0, 120]},
        "region": {"type": "categorical", "categories": ["north", "east", "south", "west"]},
        "visit": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]},
        "smoker": {"type": "bool"},
    }
}


def test_issue_schema_parses_and_round_trips():
    s = Schema.from_json(ISSUE_SCHEMA)
    assert s.names == ("income", "age", "region", "visit", "smoker")
    assert s["income"] == FloatColumn(bounds=(0.0, 500000.0), nullable=True)
    assert s["age"] == IntColumn(bounds=(0, 120))
    assert s["region"].categories == ("north", "east", "south", "west")
    assert s["visit"].lower_us < s["visit"].upper_us
    assert s["visit"].date_only
    assert isinstance(s["smoker"], BoolColumn)
    assert Schema.from_json(s.to_json()) == s
    assert Schema.from_json(s.dumps()) == s
    assert Schema.from_json(json.dumps(ISSUE_SCHEMA)) == s
    assert hash(s) == hash(Schema.from_json(s.to_json()))


def test_schema_from_file(tmp_path):
    p = tmp_path / "schema.json"
    p.write_text(json.dumps(ISSUE_SCHEMA))
    assert Schema.from_json(str(p)).names[0] == "income"
    with pytest.raises(SchemaError, match="cannot read schema file"):
        Schema.from_json(str(tmp_path / "nope.json"))


def test_old_bounds_json_is_a_float_schema():
    s = Schema.from_json({"height": [100, 220], "weight": [30, 200]})
    assert s == Schema.from_bounds({"height": [100, 220], "weight": [30, 200]})
    assert s["height"] == FloatColumn(bounds=(100.0, 220.0))
    assert s.to_json() == {
        "columns": {
            "height": {"type": "float", "bounds": [100.0, 220.0]},
            "weight": {"type": "float", "bounds": [30.0, 200.0]},
        }
    }


def test_datetime_bounds_normalised():
    import datetime as dt

    a = Schema({"t": DatetimeColumn(bounds=(dt.date(2015, 1, 1), dt.datetime(2016, 1, 1, 12)))})
    assert a["t"].bounds == ("2015-01-01", "2016-01-01T12:00:00")
    assert not a["t"].date_only
    assert Schema.from_json(a.to_json()) == a


@pytest.mark.parametrize(
    "entry, fragment",
    [
        ({"type": "float", "bounds": [1, 1]}, "lower < upper"),
        ({"type": "float", "bounds": [0, float("inf")]}, "finite"),
        ({"type": "float", "bounds": [0]}, "bounds must be"),
        ({"type": "float", "bounds": ["a", 1]}, "must be a number"),
        ({"type": "int", "bounds": [0, 1.5]}, "integer"),
        ({"type": "int", "bounds": [0, 2**60]}, "integer"),
        ({"type": "datetime", "bounds": ["2015-13-01", "2016-01-01"]}, "ISO"),
        ({"type": "categorical", "categories": []}, "non-empty"),
        ({"type": "categorical", "categories": ["a", "a"]}, "distinct"),
        ({"type": "categorical", "categories": ["a", 1]}, "all strings or all integers"),
        ({"type": "categorical", "categories": ["a"], "fallback": "b"}, "fallback"),
        ({"type": "categorical", "categories": ["a"], "fallback": "null"}, "nullable"),
        ({"type": "text"}, "type must be one of"),
        ({"type": "bool", "nullable": "yes"}, "nullable must be true or false"),
        ({"type": "bool", "color": 1}, "unknown field"),
    ],
)
def test_bad_entries_name_the_column(entry, fragment):
    with pytest.raises(SchemaError, match=fragment) as e:
        Schema.from_json({"columns": {"my_col": entry}})
    assert "my_col" in str(e.value)


def test_fallback_codes():
    assert CategoricalColumn(categories=("a", "b")).fallback_code() == 0
    assert CategoricalColumn(categories=("a", "b"), nullable=True).fallback_code() == -1
    assert CategoricalColumn(categories=("a", "b"), fallback="b").fallback_code() == 1
    assert (
        CategoricalColumn(categories=("a", "b"), fallback="null", nullable=True).fallback_code()
        == -1
    )
    # "null" that is itself a category means that category
    assert CategoricalColumn(categories=("x", "null"), fallback="null").fallback_code() == 1


def test_names_checks_list_the_schema():
    s = Schema.from_json(ISSUE_SCHEMA)
    with pytest.raises(SchemaError) as e:
        s.check_names(["age", "zip"])
    assert "'zip'" in str(e.value)
    assert "'income'" in str(e.value)
    assert s.select(["age", "region"]).names == ("age", "region")


def test_derived_marks_and_epsilon_spent():
    s = Schema.from_json(
        {
            "columns": {
                "a": {"type": "int", "bounds": [0, 3], "derived_from_data": True},
                "b": {"type": "bool"},
            },
            "epsilon_spent": 0.25,
        }
    )
    assert s.data_derived_columns() == ["a"]
    assert s.epsilon_spent == 0.25
    assert Schema.from_json(s.to_json()) == s
    with pytest.raises(SchemaError, match="epsilon_spent"):
        Schema({"b": BoolColumn()}, epsilon_spent=-1)


def test_top_level_errors():
    with pytest.raises(SchemaError, match="not valid JSON"):
        Schema.from_json("{not json")
    with pytest.raises(SchemaError, match="at least one column"):
        Schema({})
    with pytest.raises(SchemaError, match="unknown top-level"):
        Schema.from_json({"columns": {"a": {"type": "bool"}}, "extra": 1})
    with pytest.raises(SchemaError, match="spec must be"):
        Schema({"a": 3})


@pytest.mark.parametrize(
    "source, field, where",
    [
        # issue 20 item 4: a note the reader does not act on is refused, never dropped
        (
            {
                "columns": {
                    "income": {"type": "float", "bounds": [0, 1], "estimated_with_epsilon": 0.7}
                }
            },
            "estimated_with_epsilon",
            'columns."income"',
        ),
        ({"columns": {"a": {"type": "bool"}}, "privacy": {"epsilon": 0.7}}, "privacy", "top-level"),
        (
            {"columns": {"a": {"type": "bool"}}, "epsilon_spent": 0.1, "note": "x"},
            "note",
            "top-level",
        ),
        ({"epsilon_spent": 0.7, "colums": {"a": {"type": "bool"}}}, "colums", "top-level"),
        (
            {"columns": {"r": {"type": "categorical", "categories": ["a"], "bounds": [0, 1]}}},
            "bounds",
            'columns."r"',
        ),
        ({"columns": {"b": {"type": "bool", "fallback": "null"}}}, "fallback", 'columns."b"'),
        (
            {"columns": {"x": {"type": "int", "bounds": [0, 3], "nulable": True}}},
            "nulable",
            'columns."x"',
        ),
        (
            {
                "columns": {
                    "t": {"type": "date", "bounds": ["2015-01-01", "2016-01-01"], "tz": "UTC"}
                }
            },
            "tz",
            'columns."t"',
        ),
    ],
)
def test_every_field_not_acted_on_is_refused_naming_it_and_where(source, field, where):
    with pytest.raises(SchemaError) as e:
        Schema.from_json(source)
    assert repr(field) in str(e.value)
    assert where in str(e.value)
    with pytest.raises(SchemaError):
        Schema.from_json(json.dumps(source))


def test_every_field_written_is_read_back():
    """Everything ``to_json``/``dumps`` write is a field the reader acts on: the round trip is the
    identity for every column type and flag, and for ``epsilon_spent``."""
    s = Schema(
        {
            "f": FloatColumn(bounds=(-1.5, 2.0), nullable=True, derived_from_data=True),
            "i": IntColumn(bounds=(0, 9), derived_from_data=True),
            "t": DatetimeColumn(bounds=("2015-01-01", "2015-06-01T12:00:00"), nullable=True),
            "c": CategoricalColumn(
                categories=("x", "y"), fallback="null", nullable=True, derived_from_data=True
            ),
            "k": CategoricalColumn(categories=(3, 1), fallback=1),
            "b": BoolColumn(nullable=True, derived_from_data=True),
        },
        epsilon_spent=0.7,
    )
    for text in (s.to_json(), s.dumps(), json.dumps(s.to_json())):
        back = Schema.from_json(text)
        assert back == s
        assert back.identifier() == s.identifier()
        assert back.epsilon_spent == 0.7


@pytest.mark.parametrize(
    "entry, what",
    [
        ({"type": "categorical", "categories": None, "derived_from_data": True}, "categories"),
        ({"type": "float", "bounds": None, "derived_from_data": True}, "bounds"),
    ],
)
def test_a_draft_left_to_fill_in_is_refused_naming_the_column(entry, what):
    with pytest.raises(SchemaError, match=f"column 'id': {what} are left to fill in"):
        Schema.from_json({"columns": {"id": entry, "b": {"type": "bool"}}})


def test_from_json_reads_only_the_columns_asked_for():
    """``columns``: only those entries are read and validated (a drafted schema's column left
    to fill in can be left out), in the file's order; the old bounds form too."""
    text = json.dumps(
        {
            "columns": {
                "id": {"type": "categorical", "categories": None},
                "x": {"type": "float", "bounds": [0, 1]},
                "k": {"type": "int", "bounds": [0, 9]},
            }
        }
    )
    with pytest.raises(SchemaError, match="'id'.*--columns"):
        Schema.from_json(text)
    assert Schema.from_json(text, columns=["k", "x"]).names == ("x", "k")
    assert Schema.from_json({"x": [0, 1], "y": [2, 3]}, columns=["y"]).names == ("y",)
    with pytest.raises(SchemaError, match=r"\['z'\] are not in the schema"):
        Schema.from_json(text, columns=["x", "z"])
    with pytest.raises(SchemaError, match=r"\['z'\] are not in the schema"):
        Schema.from_json({"x": [0, 1]}, columns=["z"])
