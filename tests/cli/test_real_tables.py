"""The command line on real mixed tables (issue 11, "what must be true when done").

``opendp-wasserstein synth table.csv -o out.csv --epsilon 1 --schema schema.json`` and the same
with ``.parquet``, on tables that ship inside installable packages (palmer penguins: categories,
a nullable categorical, floats with a few missing values imputed, an int column; vega cars: ints,
floats with missing values, a datetime, a categorical), with their hand-written public schemas
(``benchmarks/_tables_data.py``).  The output file has the same header, dtypes that round-trip
through the file, labels only from the declared categories, and nulls only where declared; both
split orders work.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from opendp_wasserstein.cli import main
from opendp_wasserstein.tables.io import read_file, write_file
from opendp_wasserstein.tables.schema import Schema

pytest.importorskip("palmerpenguins")
pytest.importorskip("vega_datasets")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _tables_data import load  # noqa: E402


@pytest.fixture(scope="module", params=["penguins", "cars"])
def real(request, tmp_path_factory):
    t = load(request.param)
    tmp = tmp_path_factory.mktemp(request.param)
    table = pa.Table.from_pandas(t.data, preserve_index=False)
    write_file(table, str(tmp / "table.csv"))
    write_file(table, str(tmp / "table.parquet"))
    (tmp / "schema.json").write_text(t.schema.dumps())
    return tmp, t


@pytest.mark.parametrize("split_order", [None, "cyclic"])
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_synth_on_a_real_mixed_table(real, fmt, split_order, capsys):
    tmp, t = real
    src = tmp / f"table.{fmt}"
    out = tmp / f"out-{split_order}.{fmt}"
    args = [
        "synth",
        str(src),
        "-o",
        str(out),
        "--epsilon",
        "1",
        "--schema",
        str(tmp / "schema.json"),
        "--json",
        "--seed",
        "3",
    ]
    if split_order:
        args += ["--split-order", split_order]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert (
        1.0 - 1e-12 <= summary["epsilon_certified"] <= 1.0
    )  # the first look's float sums: a few ulps short
    if split_order:  # a one-tree option: the adaptive mechanism on the table's hierarchy
        assert summary["split_order"] == split_order
        assert summary["mechanism"] == "adaptive"
    else:  # the default: the structured release (small tables: independent DP columns)
        assert summary["mechanism"] == "structured"
        assert summary["split_order"] in ("independent columns",) or summary[
            "split_order"
        ].startswith("gower")
    schema = Schema.from_json(str(tmp / "schema.json"))
    original, back = read_file(str(src), schema=schema), read_file(str(out), schema=schema)
    # the same header, and dtypes that round-trip through the file (read with the schema: a
    # type inferred from the values would depend on the data)
    assert back.column_names == original.column_names
    if fmt == "csv":
        assert out.read_text().splitlines()[0] == src.read_text().splitlines()[0]
    assert back.schema.types == original.schema.types
    assert back.num_rows == original.num_rows
    for name, spec in t.schema.items():
        col = back.column(name)
        if spec.type == "categorical":  # labels only from the declared categories
            assert set(col.drop_null().to_pylist()) <= set(spec.categories)
        if not spec.nullable:  # nulls only where declared
            assert col.null_count == 0, name
        if spec.type in ("int", "float"):
            lo, hi = spec.bounds
            assert pc.min(col).as_py() >= lo
            assert pc.max(col).as_py() <= hi


def test_split_order_is_refused_with_the_scheduler(real, capsys):
    tmp, _ = real
    rc = main(
        [
            "synth",
            str(tmp / "table.parquet"),
            "-o",
            str(tmp / "o"),
            "--epsilon",
            "1",
            "--bounds",
            str(tmp / "b.json"),
            "--split-order",
            "cyclic",
            "--scheduler",
            "local:1",
        ]
    )
    assert rc == 2
    assert "--split-order" in capsys.readouterr().err


def test_synth_columns_subset_of_a_real_table(real, capsys):
    tmp, t = real
    names = list(t.schema.names)
    subset = [names[-1], names[0]]  # any order, by name
    out = tmp / "subset.csv"
    rc = main(
        [
            "synth",
            str(tmp / "table.csv"),
            "-o",
            str(out),
            "--epsilon",
            "1",
            "--schema",
            str(tmp / "schema.json"),
            "--columns",
            ",".join(subset),
            "--quiet",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    assert read_file(str(out)).column_names == subset
    rc = main(
        [
            "synth",
            str(tmp / "table.csv"),
            "-o",
            str(tmp / "bad.csv"),
            "--epsilon",
            "1",
            "--schema",
            str(tmp / "schema.json"),
            "--columns",
            "no_such_column",
            "--quiet",
        ]
    )
    assert rc == 2
    assert "'no_such_column'" in capsys.readouterr().err
    assert not (tmp / "bad.csv").exists()


def test_output_types_do_not_depend_on_the_values_of_a_text_file(tmp_path, capsys):
    """Neighbouring CSV files, one whose float column holds only whole numbers (a reader infers
    integers) and one with a single 2.5 (inferred float), or whose int column has one unreadable
    value (inferred text), or one timestamp among dates: the released file has the schema's
    types and the same header in every case."""
    schema = {
        "columns": {
            "g": {"type": "float", "bounds": [0, 10]},
            "k": {"type": "int", "bounds": [0, 9], "nullable": True},
            "when": {"type": "datetime", "bounds": ["2020-01-01", "2021-01-01"]},
        }
    }
    (tmp_path / "s.json").write_text(json.dumps(schema))
    rows = [(str(i % 10), str(i % 7), f"2020-0{1 + i % 9}-1{i % 10}") for i in range(200)]
    variants = {
        "whole": rows,
        "half": [("2.5", rows[0][1], rows[0][2]), *rows[1:]],
        "text": [(rows[0][0], "x", rows[0][2]), *rows[1:]],
        "time": [(rows[0][0], rows[0][1], "2020-03-04 05:06:07"), *rows[1:]],
    }
    outs = {}
    for name, body in variants.items():
        src = tmp_path / f"{name}.csv"
        src.write_text("g,k,when\n" + "".join(",".join(r) + "\n" for r in body))
        assert (
            read_file(str(src)).schema.types != read_file(str(tmp_path / "whole.csv")).schema.types
            or name == "whole"
        )
        out = tmp_path / f"{name}-out.csv"
        assert (
            main(
                [
                    "synth",
                    str(src),
                    "-o",
                    str(out),
                    "--epsilon",
                    "1",
                    "--schema",
                    str(tmp_path / "s.json"),
                    "--json",
                    "--seed",
                    "5",
                ]
            )
            == 0
        ), capsys.readouterr().err
        capsys.readouterr()
        back = read_file(str(out), schema=Schema.from_json(str(tmp_path / "s.json")))
        assert back.schema.types == [pa.float64(), pa.int64(), pa.date32()]
        outs[name] = out.read_text().splitlines()[0]
    assert len(set(outs.values())) == 1
