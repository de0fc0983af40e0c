import datetime as dt
import io
import json
import re

import numpy as np
import pyarrow as pa
import pytest

from opendp_wasserstein.cli import main
from opendp_wasserstein.combinators import rho_for_approx_dp
from opendp_wasserstein.tables import Schema
from opendp_wasserstein.tables.drafting import draft_schema
from opendp_wasserstein.tables.io import read_file, write_file


def _mixed(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    income = rng.lognormal(10, 0.5, n)
    income_mask = rng.uniform(size=n) < 0.1
    return pa.table(
        {
            "age": pa.array(rng.integers(18, 90, n)),
            "income": pa.array(income, mask=income_mask),
            "region": pa.array(
                rng.choice(["north", "east", "south", "west"], n, p=[0.4, 0.3, 0.2, 0.1])
            ),
            "visit": pa.array(
                [dt.date(2015, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 365, n)],
                type=pa.date32(),
            ),
            "smoker": pa.array(rng.uniform(size=n) < 0.2),
        }
    )


@pytest.fixture
def files(tmp_path):
    t = _mixed()
    csv_path = tmp_path / "table.csv"
    # a ';'-delimited CSV, as a European spreadsheet writes it
    write_file(t, str(csv_path), delimiter=";")
    pq_path = tmp_path / "table.parquet"
    write_file(t, str(pq_path))
    return tmp_path, csv_path, pq_path, t


def _synth(src, out, schema_path, *extra, accept=True):
    """``synth SRC -o OUT --epsilon 1 --schema SCHEMA [--accept-data-derived-schema] EXTRA...``:
    the program's exit status."""
    args = ["synth", str(src), "-o", str(out), "--epsilon", "1", "--schema", str(schema_path)]
    return main(args + (["--accept-data-derived-schema"] if accept else []) + list(extra))


def _draft(tmp_path, src, extra=()):
    out = tmp_path / "schema.json"
    assert main(["schema", str(src), "-o", str(out), "--quiet", *extra]) == 0
    return out, Schema.from_json(str(out))


def test_schema_command_marks_data_derived(files, capsys):
    tmp, csv_path, _, _ = files
    path, schema = _draft(tmp, csv_path)
    assert schema.names == ("age", "income", "region", "visit", "smoker")
    # every column: smoker's nullable flag (false: it has no missing values) was read off the data
    # too
    assert set(schema.data_derived_columns()) == {"age", "income", "region", "visit", "smoker"}
    assert schema["income"].nullable
    assert schema["region"].categories == ("east", "north", "south", "west")
    assert json.loads(path.read_text())["columns"]["age"]["derived_from_data"] is True


def test_synth_refuses_marked_schema_unless_flag(files, capsys):
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    out = tmp / "out.csv"
    rc = _synth(csv_path, out, schema_path, accept=False)
    err = capsys.readouterr().err
    assert rc == 2
    assert "--accept-data-derived-schema" in err
    assert "'region'" in err
    assert not out.exists()


@pytest.mark.parametrize("out_name", ["out.csv", "out.parquet", "out.tsv"])
@pytest.mark.parametrize("src", ["csv", "parquet"])
def test_synth_table_round_trip(files, capsys, out_name, src):
    tmp, csv_path, pq_path, original = files
    schema_path, schema = _draft(tmp, csv_path)
    out = tmp / out_name
    inp = csv_path if src == "csv" else pq_path
    rc = _synth(inp, out, schema_path, "--json")
    assert rc == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    # the structured release composes two maps rounded up: at most the budget, within ulps of it
    assert summary["epsilon_certified"] <= 1.0
    assert summary["epsilon_certified"] >= 1.0 - 1e-12
    assert summary["data_derived_schema"]
    back = read_file(str(out))
    assert back.column_names == original.column_names
    assert back.schema.types == original.schema.types  # dtypes round-trip through the file
    if out_name == "out.csv" and src == "csv":
        assert out.read_text().splitlines()[0] == "age;income;region;visit;smoker"  # same delimiter
    assert set(back.column("region").drop_null().to_pylist()) <= set(schema["region"].categories)
    for name in ("age", "region", "visit", "smoker"):
        assert back.column(name).null_count == 0  # nulls only where declared
    lo, hi = schema["age"].bounds
    ages = back.column("age").to_numpy()
    assert ages.min() >= lo
    assert ages.max() <= hi


def test_estimate_bounds_is_composed_into_the_certificate(tmp_path, capsys):
    t = _mixed(n=20000, seed=1)
    src = tmp_path / "big.parquet"
    write_file(t, str(src))
    schema_path, schema = _draft(tmp_path, src, ["--estimate-bounds", "2"])
    assert schema.epsilon_spent == pytest.approx(2.0, rel=1e-9)
    assert schema.epsilon_spent <= 2.0 + 1e-12
    assert schema.data_derived_columns() == ["region"]  # categories still read off the data
    # the DP outputs do not say whether a column has missing values: nullable only where asked
    assert not any(schema[n].nullable for n in schema.names)
    assert not schema["age"].derived_from_data
    # the user reviews the categories and removes the mark
    spec = json.loads(schema_path.read_text())
    del spec["columns"]["region"]["derived_from_data"]
    schema_path.write_text(json.dumps(spec))
    out = tmp_path / "o.parquet"
    assert _synth(src, out, schema_path, "--json", accept=False) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_release"] == 1.0
    assert summary["epsilon_certified"] >= 1.0 + schema.epsilon_spent
    assert summary["epsilon_certified"] == pytest.approx(1.0 + schema.epsilon_spent)


def test_estimate_bounds_on_a_text_file_marks_the_inferred_types(tmp_path, capsys):
    """A text file's column types are inferred from its values (one 2.5 makes an int column
    float), so even with private bounds the drafted columns stay marked until reviewed."""
    t = _mixed(n=5000, seed=2)
    src = tmp_path / "t.csv"
    write_file(t, str(src))
    out = tmp_path / "schema.json"
    assert main(["schema", str(src), "-o", str(out), "--estimate-bounds", "2"]) == 0
    assert "age" in Schema.from_json(str(out)).data_derived_columns()
    assert "types, inferred from the values" in capsys.readouterr().err


def test_draft_private_bounds_cover_the_bulk():
    # 20000 rows at 0.5 per quantile: a far-off candidate has probability far below 1e-6
    rng = np.random.default_rng(2)
    t = pa.table({"age": pa.array(rng.integers(18, 90, 20000))})
    rep = draft_schema(t, epsilon=2.0)
    lo, hi = rep.schema["age"].bounds
    assert 0 <= lo <= 25
    assert 85 <= hi <= 140


def test_schema_command_leaves_identifiers_to_fill_in(tmp_path, capsys):
    p = tmp_path / "ids.csv"
    p.write_text("id,x\n" + "".join(f"k{i},{i}\n" for i in range(60)))
    assert main(["schema", str(p)]) == 0
    io = capsys.readouterr()
    draft = json.loads(io.out)
    assert list(draft["columns"]) == ["id", "x"]  # drafted, never left out
    assert draft["columns"]["id"] == {
        "type": "categorical",
        "categories": None,
        "derived_from_data": True,
    }
    assert "k1" not in io.out + io.err
    assert "column 'id' left to fill in" in io.err
    assert "NOT PRIVATE" in io.err


def test_bounds_inputs_with_missing_or_text_are_refused_as_arrays_are(tmp_path, capsys):
    """``--bounds`` declares numeric columns: a missing, NaN or text cell is outside that domain
    and refused, naming the column only, as ``synthesize`` refuses NaN in an array (issue 20,
    item 11; they used to be imputed here and refused there).  ``+-inf`` is clamped."""
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"height": [100, 220], "weight": [30, 200]}))
    out = tmp_path / "o.csv"
    for body, col in (
        ("150,60\nnan,70\n171,61\n", "height"),
        ("150,60\n170,abc\n", "weight"),
        ("150,60\n,70\n", "height"),
    ):
        p = tmp_path / "in.csv"
        p.write_text("height,weight\n" + body)
        assert (
            main(["synth", str(p), "-o", str(out), "--epsilon", "1", "--bounds", str(b), "--quiet"])
            == 2
        )
        err = capsys.readouterr().err
        assert f"column '{col}'" in err
        assert "missing or NaN" in err
        assert "abc" not in err
        assert "170" not in err
    p.write_text("height,weight\n150,60\ninf,70\n170,-inf\n")
    assert (
        main(["synth", str(p), "-o", str(out), "--epsilon", "1", "--bounds", str(b), "--quiet"])
        == 0
    )
    assert out.read_text().splitlines()[0] == "height,weight"


@pytest.mark.parametrize("out_name", ["chosen.csv", "chosen.parquet"])
def test_select_with_schema_matches_candidates_by_name(files, capsys, out_name):
    tmp, csv_path, pq_path, original = files
    schema_path, schema = _draft(tmp, csv_path)
    # public candidates: 30 rows of the same columns, in another column order, as a ';' CSV
    cand = _mixed(n=30, seed=9).select(["smoker", "region", "visit", "income", "age"])
    cand_path = tmp / "cands.csv"
    write_file(cand, str(cand_path), delimiter=";")
    out = tmp / out_name
    rc = main(
        [
            "select",
            str(pq_path),
            str(cand_path),
            "-m",
            "50",
            "--epsilon",
            "1",
            "--schema",
            str(schema_path),
            "--accept-data-derived-schema",
            "--json",
            "-o",
            str(out),
            "--seed",
            "3",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert summary["k"] == 30
    back = read_file(str(out))
    assert back.column_names == [*cand.column_names, "multiplicity"]
    assert back.column("multiplicity").to_numpy().sum() == 50
    assert back.schema.field("age").type == pa.int64()
    assert back.schema.field("smoker").type == pa.bool_()


def test_select_with_schema_refuses_mismatched_columns(files, capsys):
    tmp, csv_path, pq_path, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    cand_path = tmp / "cands.csv"
    write_file(_mixed(n=10, seed=9).select(["age", "region"]), str(cand_path))
    rc = main(
        [
            "select",
            str(pq_path),
            str(cand_path),
            "-m",
            "5",
            "--epsilon",
            "1",
            "--schema",
            str(schema_path),
            "--accept-data-derived-schema",
            "-o",
            str(tmp / "o.csv"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2
    assert "'income'" in err
    assert "candidates" in err
    # the marks are enforced as for synth
    rc = main(
        [
            "select",
            str(pq_path),
            str(cand_path),
            "-m",
            "5",
            "--epsilon",
            "1",
            "--schema",
            str(schema_path),
            "--columns",
            "age,region",
            "-o",
            str(tmp / "o.csv"),
        ]
    )
    assert rc == 2
    assert "--accept-data-derived-schema" in capsys.readouterr().err
    rc = main(
        [
            "select",
            str(pq_path),
            str(cand_path),
            "-m",
            "5",
            "--epsilon",
            "1",
            "--schema",
            str(schema_path),
            "--columns",
            "age,region",
            "--accept-data-derived-schema",
            "-o",
            str(tmp / "o.csv"),
            "--quiet",
        ]
    )
    assert rc == 0
    rc = main(
        [
            "select",
            str(csv_path),
            str(cand_path),
            "-m",
            "5",
            "--epsilon",
            "1",
            "--columns",
            "age",
            "-o",
            str(tmp / "o.csv"),
        ]
    )
    assert rc == 2
    assert "--schema" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# issue 20: what the commands show besides the release, and the traps of a new user


def _labelled(tmp_path, k, name):
    """A 300-row CSV whose text column holds k distinct labels (50 and 51: one record apart)."""
    rng = np.random.default_rng(0)
    labels = [f"L{i % 50}" for i in range(300)]
    if k == 51:
        labels[0] = "Secret-Label-of-Alice"
    p = tmp_path / name
    write_file(
        pa.table(
            {
                "year": pa.array(rng.integers(1990, 2020, 300)),
                "label": pa.array(labels),
                "price": pa.array(rng.normal(10, 2, 300)),
            }
        ),
        str(p),
    )
    return p


@pytest.mark.parametrize("extra", [[], ["--estimate-bounds", "1"]])
def test_schema_command_drafts_the_same_columns_for_50_and_51_labels(tmp_path, capsys, extra):
    """Item 3: one record (the 51st label) left the column out of the schema."""
    drafts = []
    for k in (50, 51):
        out = tmp_path / f"s{k}.json"
        assert (
            main(
                [
                    "schema",
                    str(_labelled(tmp_path, k, f"d{k}.csv")),
                    "-o",
                    str(out),
                    "--json",
                    *extra,
                ]
            )
            == 0
        )
        summary = json.loads(capsys.readouterr().out)
        drafts.append(json.loads(out.read_text()))
        assert summary["columns"] == ["year", "label", "price"]
        assert summary["skipped"] == {}
    assert [list(d["columns"]) for d in drafts] == [["year", "label", "price"]] * 2
    assert drafts[1]["columns"]["label"]["categories"] is None
    assert "Secret-Label-of-Alice" not in json.dumps(drafts[1])


def test_schema_estimate_bounds_warns_on_a_small_table_from_its_dp_count(tmp_path, capsys):
    """Item 9: 300 rows at epsilon 1 wrote absurd bounds with no warning and marked every numeric
    column nullable.  The warning comes from the DP counts (reported) and the public budget."""
    src = _labelled(tmp_path, 50, "d.csv")
    out = tmp_path / "s.json"
    assert (
        main(["schema", str(src), "-o", str(out), "--estimate-bounds", "1", "--nullable", "price"])
        == 0
    )
    err = capsys.readouterr().err
    assert "WARNING: the bounds of column 'year' are unreliable" in err
    assert "WARNING: the bounds of column 'price' are unreliable" in err
    assert "DP count of values is" in err
    draft = json.loads(out.read_text())["columns"]
    assert "nullable" not in draft["year"]  # never nullable unless asked
    assert draft["price"]["nullable"] is True
    assert main(["schema", str(src), "-o", str(out), "--estimate-bounds", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["unreliable_bounds"]) == {"year", "price"}
    for name in ("year", "price"):
        assert f"is {summary['dp_counts'][name]}," in summary["unreliable_bounds"][name]
    assert summary["nullable"] == []
    assert main(["schema", str(src), "--nullable", "nope", "--quiet"]) == 2
    assert "['nope']" in capsys.readouterr().err


def test_schema_refused_field_round_trip_of_a_drafted_file(tmp_path, capsys):
    """Item 4: the schema command writes only fields the reader acts on (epsilon_spent included)."""
    t = _mixed(n=20000, seed=1)
    src = tmp_path / "big.parquet"
    write_file(t, str(src))
    path, schema = _draft(tmp_path, src, ["--estimate-bounds", "2"])
    assert Schema.from_json(path.read_text()) == schema
    assert schema.epsilon_spent == json.loads(path.read_text())["epsilon_spent"]


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink", "relative"])
def test_an_output_that_is_the_input_is_refused(files, capsys, link, monkeypatch):
    """Item 6: ``synth data.csv -o data.csv`` overwrote the private input (exit 0)."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    before = csv_path.read_bytes()
    out = {
        "same": csv_path,
        "symlink": tmp / "link.csv",
        "hardlink": tmp / "hard.csv",
        "relative": "table.csv",
    }[link]
    if link == "symlink":
        out.symlink_to(csv_path)
    elif link == "hardlink":
        out.hardlink_to(csv_path)
    monkeypatch.chdir(tmp)
    rc = _synth(csv_path, out, schema_path, "--quiet")
    err = capsys.readouterr().err
    assert rc == 2
    assert "-o/--output" in err
    assert "is the input" in err
    assert len(err.strip().splitlines()) == 1
    assert csv_path.read_bytes() == before


def test_select_and_schema_refuse_an_output_that_is_an_input(files, capsys):
    tmp, csv_path, pq_path, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    cand_path = tmp / "cands.csv"
    write_file(_mixed(n=30, seed=9), str(cand_path))
    before = {p: p.read_bytes() for p in (csv_path, cand_path, schema_path)}
    for out, what in (
        (csv_path, "the data"),
        (cand_path, "the candidates file"),
        (schema_path, "the --schema file"),
    ):
        rc = main(
            [
                "select",
                str(csv_path),
                str(cand_path),
                "-m",
                "5",
                "--epsilon",
                "1",
                "--schema",
                str(schema_path),
                "--accept-data-derived-schema",
                "-o",
                str(out),
                "--quiet",
            ]
        )
        err = capsys.readouterr().err
        assert rc == 2, err
        assert "-o/--output" in err
        if out.suffix == ".csv":
            assert f"is {what}" in err
    assert main(["schema", str(csv_path), "-o", str(csv_path), "--quiet"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in before} == before


def test_a_file_without_a_header_row_is_refused_without_quoting_a_record(tmp_path, capsys):
    """Item 7: a headerless CSV made synth/select quote the first record's values."""
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps(
            {
                "columns": {
                    "displ": {"type": "float", "bounds": [0, 10]},
                    "cyl": {"type": "int", "bounds": [2, 16]},
                    "cty": {"type": "int", "bounds": [5, 50]},
                    "kind": {"type": "categorical", "categories": ["compact", "suv"]},
                }
            }
        )
    )
    data = tmp_path / "noheader.csv"
    data.write_text("1.8,4,29,compact\n2.0,6,18,suv\n3.1,8,21,suv\n")
    cands = tmp_path / "c.csv"
    cands.write_text("displ,cyl,cty,kind\n2.0,4,20,compact\n3.0,6,15,suv\n")
    runs = [
        [
            "synth",
            str(data),
            "-o",
            str(tmp_path / "o.csv"),
            "--epsilon",
            "1",
            "--schema",
            str(schema),
        ],
        [
            "select",
            str(data),
            str(cands),
            "-m",
            "3",
            "--epsilon",
            "1",
            "--schema",
            str(schema),
            "-o",
            str(tmp_path / "o.csv"),
        ],
    ]
    for argv in runs:
        assert main(argv) == 2
        err = capsys.readouterr().err
        for value in ("1.8", "'4'", "29", "compact"):
            assert value not in err, err
        assert "does not match the schema" in err
        assert "4 of its 4 header field(s) are not columns of the schema" in err
        assert "['displ', 'cyl', 'cty', 'kind']" in err  # the schema's names are public


def test_the_header_must_hold_the_schemas_columns_unless_columns_says_otherwise(files, capsys):
    """Item 10: a schema column missing from the data was accepted by the CLI (and refused by
    the API); a data column missing from the schema did not say what to do.  Now both are
    refused, naming the schema's columns and the --columns that would do."""
    tmp, csv_path, pq_path, _ = files
    schema_path, schema = _draft(tmp, csv_path)
    narrow = tmp / "narrow.csv"
    write_file(_mixed(n=200).select(["age", "region"]), str(narrow))
    base = [
        "--epsilon",
        "1",
        "--schema",
        str(schema_path),
        "--accept-data-derived-schema",
        "--quiet",
    ]
    out = tmp / "o.csv"
    assert main(["synth", str(narrow), "-o", str(out), *base]) == 2
    err = capsys.readouterr().err
    assert "schema column(s) ['income', 'visit', 'smoker'] are not in it" in err
    assert "--columns age,region" in err
    assert not out.exists()
    assert main(["synth", str(narrow), "-o", str(out), *base, "--columns", "age,region"]) == 0
    # the other way: the data has a column the schema lacks
    spec = json.loads(schema_path.read_text())
    del spec["columns"]["income"]
    small = tmp / "small.json"
    small.write_text(json.dumps(spec))
    assert _synth(csv_path, out, small, "--quiet") == 2
    err = capsys.readouterr().err
    assert "1 of its 5 header field(s) are not columns of the schema" in err
    assert "--columns age,region,visit,smoker" in err
    # the same rule as the Python API
    from opendp_wasserstein.api import synthesize

    with pytest.raises(ValueError, match="income"):
        synthesize(
            read_file(str(narrow), schema=schema),
            1.0,
            schema=schema,
            accept_data_derived_schema=True,
        )
    # select follows it too
    cand_path = tmp / "cands.csv"
    write_file(_mixed(n=30, seed=9).select(["age", "region"]), str(cand_path))
    assert main(["select", str(narrow), str(cand_path), "-m", "5", "-o", str(out), *base]) == 2
    assert "schema column(s) ['income', 'visit', 'smoker'] are not in it" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["out.xlsx", "out", "out.json", "out.csv.gz"])
def test_an_output_extension_the_package_does_not_write_is_refused(files, capsys, name):
    """Item 13: ``-o out.xlsx`` wrote CSV text under that name."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    rc = _synth(csv_path, tmp / name, schema_path)
    err = capsys.readouterr().err
    assert rc == 2
    assert "-o/--output" in err
    assert ".csv, .tsv, .tab, .parquet, .pq" in err
    assert not (tmp / name).exists()


def test_outputs_respect_the_umask(files, capsys):
    """Item 13: outputs were written with mode 0600 whatever the umask."""
    import os
    import stat

    tmp, csv_path, _, _ = files
    old = os.umask(0o022)
    try:
        schema_path, _ = _draft(tmp, csv_path)
        out = tmp / "o.parquet"
        assert _synth(csv_path, out, schema_path, "--quiet") == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
        assert stat.S_IMODE(schema_path.stat().st_mode) == 0o644
        os.umask(0o027)
        assert _synth(csv_path, out, schema_path, "--quiet") == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_floats_are_written_with_the_shortest_round_trip_digits(files, capsys):
    """Item 13 (documented): a float is written as the shortest decimal that reads back as the
    same float64, never padded to 17 digits."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    out = tmp / "o.csv"
    assert _synth(csv_path, out, schema_path, "--quiet") == 0
    lines = out.read_text().splitlines()
    col = lines[0].split(";").index("income")
    fields = [r.split(";")[col] for r in lines[1:] if r.split(";")[col]]
    assert fields
    for f in fields:
        assert repr(float(f)) == f or len(f) <= len(repr(float(f)))
        assert float(repr(float(f))) == float(f)


def test_schema_refuses_a_header_that_reads_as_numbers(tmp_path, capsys):
    """Item 7 for ``schema``: a headerless file would name the draft's columns after its first
    record; a header with fields that read as numbers is refused, counting them, quoting none."""
    p = tmp_path / "noheader.csv"
    p.write_text("1.8125,29.5,compact\n2.0,18.25,suv\n")
    out = tmp_path / "s.json"
    assert main(["schema", str(p), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "2 of the 3 header field(s)" in err
    assert "is the header row missing?" in err
    assert "1.8125" not in err
    assert "compact" not in err
    assert not out.exists()
    p.write_text("height,weight,kind\n1.8125,29.5,compact\n")
    assert main(["schema", str(p), "-o", str(out), "--quiet"]) == 0


def _synth_table(tmp, csv_path, schema_path, extra):
    return _synth(csv_path, tmp / "out.parquet", schema_path, "--json", "--seed", "3", *extra)


@pytest.mark.parametrize("mechanism", [None, "structured", "adaptive", "pruned", "pmm"])
def test_synth_schema_with_delta_certifies_the_pair(files, capsys, mechanism):
    """``--delta`` with ``--schema`` (issue 22, item 7): the structured release with discrete
    Gaussian noise by default, or a one-tree chain's zCDP variant, converted by OpenDP; the
    certificate is the chain's map: (1.0, 1e-9) exactly for the one-tree chains, at most 1.0
    for the structured one (its first look's fit falls short by a few ulps)."""
    tmp, csv_path, _, original = files
    schema_path, _ = _draft(tmp, csv_path)
    extra = ["--delta", "1e-9"] + ([] if mechanism is None else ["--mechanism", mechanism])
    assert _synth_table(tmp, csv_path, schema_path, extra) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["mechanism"] == (mechanism or "structured")
    assert summary["delta_certified"] == 1e-9
    assert summary["details"]["rho"] == rho_for_approx_dp(1.0, 1e-9)
    if summary["mechanism"] == "structured":
        assert 1.0 - 1e-12 <= summary["epsilon_certified"] <= 1.0
        assert summary["details"]["noise"] == "gaussian"
    else:
        assert summary["epsilon_certified"] == 1.0
    assert summary["epsilon_release"] == summary["epsilon_certified"]
    out = read_file(str(tmp / "out.parquet"))
    assert out.num_rows == original.num_rows
    assert out.column_names == original.column_names


def test_synth_schema_network_with_delta_certifies_the_pair(files, capsys):
    """``--joint network --delta``: the network of 2- and 3-way tables in zCDP (discrete
    Gaussian tables, OpenDP's zCDP noisy max), converted by OpenDP."""
    tmp, csv_path, _, original = files
    schema_path, _ = _draft(tmp, csv_path)
    extra = ["--delta", "1e-9", "--joint", "network"]
    assert _synth_table(tmp, csv_path, schema_path, extra) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["delta_certified"] == 1e-9
    assert 1.0 - 1e-12 <= summary["epsilon_certified"] <= 1.0
    assert summary["details"]["noise"] == "gaussian"
    assert summary["details"]["rho"] == rho_for_approx_dp(1.0, 1e-9)
    assert summary["details"]["joint_kind"] == "network"
    out = read_file(str(tmp / "out.parquet"))
    assert out.num_rows == original.num_rows
    assert out.column_names == original.column_names


@pytest.mark.parametrize("mechanism", ["structured", "adaptive", "pruned", "pmm", "privtree"])
def test_synth_schema_every_mechanism_choice_applies(files, capsys, mechanism):
    """Every ``--mechanism`` choice of ``synth`` works with ``--schema`` (docs/tables.rst)."""
    tmp, csv_path, _, original = files
    schema_path, _ = _draft(tmp, csv_path)
    assert _synth_table(tmp, csv_path, schema_path, ["--mechanism", mechanism]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mechanism"] == mechanism
    assert 1.0 - 1e-12 <= summary["epsilon_certified"] <= 1.0
    assert summary["delta_certified"] is None
    assert read_file(str(tmp / "out.parquet")).num_rows == original.num_rows


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--delta", "1e-9", "--mechanism", "privtree"], "--mechanism privtree is pure DP"),
        (["--delta", "1e-9", "--private-size"], "--delta needs a public row count"),
        (["--mechanism", "structured", "--private-size"], "--private-size apply to the one-tree"),
        (["--mechanism", "structured", "--split-order", "cyclic"], "--split-order apply"),
        (["--mechanism", "pmm", "--marginal-share", "0.3"], "--marginal-share applies only"),
        (["--mechanism", "pmm", "--epsilon-select", "0.1"], "--epsilon-select applies only"),
    ],
)
def test_synth_schema_option_errors_name_the_option(files, capsys, extra, match):
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    assert _synth_table(tmp, csv_path, schema_path, extra) == 2
    err = capsys.readouterr().err
    assert re.search(match, err), err
    assert not (tmp / "out.parquet").exists()


class _Terminal(io.StringIO):
    """A standard error stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("extra", "shown"), [((), True), (("--quiet",), False)])
def test_table_synth_shows_its_bar_on_a_terminal(files, monkeypatch, extra, shown):
    pytest.importorskip("tqdm")
    import sys

    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    out = tmp / "out.csv"
    argv = ["synth", str(csv_path), "-o", str(out), "--epsilon", "1", "--seed", "0"]
    argv += ["--schema", str(schema_path), "--accept-data-derived-schema", *extra]
    assert main(argv) == 0
    assert ("synth:" in stream.getvalue()) is shown  # the bar's label


def test_table_synth_with_a_private_size_shows_no_bar(files, monkeypatch):
    pytest.importorskip("tqdm")
    import sys

    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    out = tmp / "out.csv"
    argv = ["synth", str(csv_path), "-o", str(out), "--epsilon", "1", "--seed", "0"]
    argv += ["--schema", str(schema_path), "--accept-data-derived-schema", "--private-size"]
    assert main(argv) == 0
    assert "synth:" not in stream.getvalue()


@pytest.mark.parametrize(
    "extra,line",
    [
        (["--joint", "pairs"], "mechanism structured: tree of 2-way marginals"),
        (["--joint", "never"], "mechanism structured: independent columns"),
        (["--joint", "copula"], "mechanism structured: gaussian copula of pair counts"),
        (["--delta", "1e-9", "--joint", "network"], "mechanism structured: network of 2- and"),
        (["--joint", "tree"], "mechanism structured: depth "),
    ],
)
def test_table_synth_summary_shows_a_hierarchy_only_when_one_was_grown(files, capsys, extra, line):
    """The printed summary of a structured release names its joint release; the depth, noisy
    nodes and noise schedule are shown for the joint hierarchy only (the pair tree, the
    network and independent columns have none: "depth 0, 0 noisy nodes" and an empty schedule
    read as if nothing had been released)."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    assert _synth(csv_path, tmp / "out.csv", schema_path, *extra) == 0
    out = capsys.readouterr().out
    assert line in out
    tree = extra == ["--joint", "tree"]
    assert ("schedule sigma_0..sigma_r: " in out) is tree
    assert ("noisy nodes" in out) is tree


@pytest.mark.parametrize(
    "extra,line",
    [
        (["--joint", "copula"], "joined by a Gaussian copula of noisy pair counts"),
        (["--joint", "never"], "quality: columns released independently"),
    ],
)
def test_table_synth_summary_quality_line_names_the_small_table_join(files, capsys, extra, line):
    """Without a joint table (no quality figure), the summary says how the columns were joined:
    the copula's release is not called independent columns, and independent columns are not
    called a copula."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    assert _synth(csv_path, tmp / "out.csv", schema_path, *extra) == 0
    out = capsys.readouterr().out
    assert line in out
    other = "Gaussian copula" if extra[-1] == "never" else "released independently"
    assert other not in out


def test_synth_columns_leave_out_a_column_the_drafted_schema_left_to_fill_in(files, capsys):
    """A drafted schema with a column left to fill in (more distinct labels than
    ``--max-categories``: an identifier?) is refused by name, the message naming ``--columns``;
    with ``--columns`` leaving that column out, the other columns are released (the column left
    out is never read, so its null categories are not an error)."""
    tmp, csv_path, _, _ = files
    schema_path = tmp / "schema.json"
    assert main(["schema", str(csv_path), "-o", str(schema_path), "--max-categories", "2"]) == 0
    text = schema_path.read_text()
    assert '"categories": null' in text  # region has more than 2 labels
    capsys.readouterr()
    assert _synth(csv_path, tmp / "all.csv", schema_path) == 2
    err = capsys.readouterr().err
    assert "'region'" in err
    assert "--columns" in err
    kept = "age,income,visit,smoker"
    assert _synth(csv_path, tmp / "some.csv", schema_path, "--columns", kept) == 0
    out = read_file(str(tmp / "some.csv"), delimiter=";")
    assert list(out.column_names) == kept.split(",")


def test_synth_joint_copula_with_delta_releases_the_zcdp_copula(files, capsys):
    """``--joint copula --delta``: the copula with discrete Gaussian counts (zCDP), written, its
    summary naming the copula."""
    tmp, csv_path, _, _ = files
    schema_path, _ = _draft(tmp, csv_path)
    out = tmp / "out.csv"
    assert _synth(csv_path, out, schema_path, "--joint", "copula", "--delta", "1e-9") == 0
    assert "joined by a Gaussian copula of noisy pair counts" in capsys.readouterr().out
    assert out.exists()
