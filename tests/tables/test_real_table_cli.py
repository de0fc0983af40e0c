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
    args = ["synth", str(src), "-o", str(out), "--epsilon", "1", "--schema", str(tmp / "schema.json"),
            "--json", "--seed", "3"]
    if split_order:
        args += ["--split-order", split_order]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert summary["epsilon_certified"] == 1.0
    assert summary["split_order"] == (split_order or "discrete-first")
    original, back = read_file(str(src)), read_file(str(out))
    # the same header, and dtypes that round-trip through the file
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
    rc = main(["synth", str(tmp / "table.parquet"), "-o", str(tmp / "o"), "--epsilon", "1",
               "--bounds", str(tmp / "b.json"), "--split-order", "cyclic", "--scheduler", "local:1"])
    assert rc == 2
    assert "--split-order" in capsys.readouterr().err


def test_synth_columns_subset_of_a_real_table(real, capsys):
    tmp, t = real
    names = list(t.schema.names)
    subset = [names[-1], names[0]]  # any order, by name
    out = tmp / "subset.csv"
    rc = main(["synth", str(tmp / "table.csv"), "-o", str(out), "--epsilon", "1", "--schema", str(tmp / "schema.json"),
               "--columns", ",".join(subset), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    assert read_file(str(out)).column_names == subset
    rc = main(["synth", str(tmp / "table.csv"), "-o", str(tmp / "bad.csv"), "--epsilon", "1", "--schema",
               str(tmp / "schema.json"), "--columns", "no_such_column", "--quiet"])
    assert rc == 2
    assert "'no_such_column'" in capsys.readouterr().err
    assert not (tmp / "bad.csv").exists()
