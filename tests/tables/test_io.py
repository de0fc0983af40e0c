import pyarrow as pa
import pytest

from opendp_wasserstein.tables import CategoricalColumn, Schema, SchemaError
from opendp_wasserstein.tables.io import (
    TableFileError,
    atomic_output,
    check_not_an_input,
    detect_delimiter,
    file_format,
    output_format,
    read_file,
    write_file,
)

SECRET = "SECRET-7f3a"


@pytest.mark.parametrize("delim", [",", ";", "\t", "|"])
def test_delimiter_detected(tmp_path, delim):
    p = tmp_path / "t.csv"
    p.write_text(delim.join(["a", "b", "c"]) + "\n" + delim.join(["1", "x y", "2015-01-02"]) + "\n")
    assert detect_delimiter(str(p)) == delim
    t = read_file(str(p))
    assert t.column_names == ["a", "b", "c"]
    assert t.column("a").to_pylist() == [1]


def test_forced_delimiter_and_tsv_by_extension(tmp_path):
    p = tmp_path / "t.tsv"
    p.write_text("a\tb\n1\t2\n")
    assert read_file(str(p)).column_names == ["a", "b"]
    q = tmp_path / "t.txt"
    q.write_text("a;b,c\n1;2,3\n")
    assert read_file(str(q), delimiter=";").column_names == ["a", "b,c"]
    with pytest.raises(TableFileError, match="single character"):
        read_file(str(q), delimiter=";;")


def test_schema_keeps_digit_labels_as_text(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("code,x\n01,1.5\n2,\n")
    s = Schema(
        {
            "code": CategoricalColumn(categories=("01", "2")),
            "x": CategoricalColumn(categories=("a",)),
        }
    )
    t = read_file(str(p), schema=s)
    assert t.column("code").to_pylist() == ["01", "2"]
    assert t.column("x").to_pylist() == ["1.5", None]


@pytest.mark.parametrize("name", ["out.csv", "out.tsv", "out.parquet", "out.pq"])
def test_write_read_round_trip_types(tmp_path, name):
    import datetime as dt

    t = pa.table(
        {
            "i": pa.array([1, None], type=pa.int64()),
            "f": pa.array([1.5, 2.0]),
            "s": pa.array(["a", None]),
            "d": pa.array([dt.date(2015, 1, 2), None], type=pa.date32()),
            "ts": pa.array([dt.datetime(2015, 1, 2, 3, 4, 5), None], type=pa.timestamp("us")),
            "b": pa.array([True, None]),
        }
    )
    path = str(tmp_path / name)
    write_file(t, path)
    back = read_file(path)
    assert back.schema.types == t.schema.types
    assert back.to_pylist() == t.to_pylist()
    assert file_format(path) in ("csv", "tsv", "parquet")


def test_errors_name_file_and_column_not_values(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(f"a,b\n1,{SECRET}\n2,{SECRET},3\n")
    with pytest.raises(TableFileError) as e:
        read_file(str(p))
    assert SECRET not in str(e.value)
    assert "t.csv" in str(e.value)
    with pytest.raises(SchemaError, match="'zz'.* not in the header of file") as e:
        read_file(str(p), columns=["zz"])
    assert "'a'" not in str(
        e.value
    )  # the header is not listed: without a header row it is a record
    with pytest.raises(TableFileError, match="no such file"):
        read_file(str(tmp_path / "none.csv"))
    e2 = tmp_path / "empty.csv"
    e2.write_text("")
    with pytest.raises(TableFileError, match="empty"):
        read_file(str(e2))
    d = tmp_path / "dup.csv"
    d.write_text("a,a\n1,2\n")
    with pytest.raises(TableFileError, match="duplicate"):
        read_file(str(d))


def test_write_is_atomic_on_failure(tmp_path):
    with pytest.raises(TableFileError):
        write_file(pa.table({"a": [1]}), str(tmp_path / "nodir" / "x.csv"))
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# A record is read on its own: one added record changes neither how the others are read nor the
# output types, and no value makes the whole read fail.

TOKEN_SPECS = {
    "float": {"type": "float", "bounds": [0, 100], "nullable": True},
    "int": {"type": "int", "bounds": [0, 100], "nullable": True},
    "bool": {"type": "bool", "nullable": True},
    "icat": {"type": "categorical", "categories": [0, 1, 2], "nullable": True},
    "dt": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"], "nullable": True},
}
TOKENS = [
    "true",
    "false",
    "1",
    "0",
    "01",
    "1.0",
    "1e0",
    "+1",
    "0x10",
    "2015-03-01",
    "1.5",
    "TRUE",
    "-0",
    "0000-01-01",
    "2015-05-05T10:00:00.123456789",
]


def _read_first(tmp_path, col, values):
    from opendp_wasserstein.tables.frames import read_table

    p = tmp_path / f"{col}.csv"
    p.write_text(col + "\n" + "".join(v + "\n" for v in values))
    schema = Schema.from_json({"columns": {col: TOKEN_SPECS[col]}})
    table = read_file(str(p), schema=schema)
    cols, _ = read_table(table, schema)
    c = cols[col]
    return (None if c.missing[0] else c.values[0].item()), str(table.schema.field(col).type)


@pytest.mark.parametrize("col", sorted(TOKEN_SPECS))
def test_a_value_reads_the_same_whatever_the_other_records(tmp_path, col):
    for tok in TOKENS:
        alone = _read_first(tmp_path, col, [tok, "1"])
        with_text = _read_first(tmp_path, col, [tok, "1", "zzz"])
        assert alone == with_text, (col, tok)


def test_out_of_range_dates_and_nanoseconds_do_not_fail_the_read(tmp_path):
    """Year 0, ``-0`` and a nanosecond timestamp are read (clamped later by the bounds) by the
    command line, and from Arrow and Arrow-backed pandas columns."""
    import json

    import numpy as np
    import pandas as pd

    from opendp_wasserstein import synthesize
    from opendp_wasserstein.cli import main

    spec = {
        "columns": {
            "x": {"type": "float", "bounds": [0, 100]},
            "d": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"], "nullable": True},
        }
    }
    (tmp_path / "s.json").write_text(json.dumps(spec))
    for extra in ("50,-0", "50,0000-01-01", "50,2015-05-05T10:00:00.123456789", "50,99999-01-01"):
        p = tmp_path / "d.csv"
        p.write_text("x,d\n10,2015-03-01\n20,2015-04-01\n" + extra + "\n")
        assert (
            main(
                [
                    "synth",
                    str(p),
                    "-o",
                    str(tmp_path / "o.csv"),
                    "--epsilon",
                    "1",
                    "--schema",
                    str(tmp_path / "s.json"),
                    "--quiet",
                ]
            )
            == 0
        ), extra
    days = pa.array([16500, -800_000, 2_000_000_000, None], type=pa.date32())
    table = pa.table({"x": [1.0, 2.0, 3.0, 4.0], "d": days})
    out, _ = synthesize(table, 1.0, schema=spec)
    assert out.num_rows == 4
    frame = pd.DataFrame(
        {"x": [1.0, 2.0, 3.0, 4.0], "d": pd.array(days, dtype=pd.ArrowDtype(pa.date32()))}
    )
    out, _ = synthesize(frame, 1.0, schema=spec)
    assert np.all(pd.to_datetime(out["d"].dropna().astype(str)) >= pd.Timestamp("2015-01-01"))


def test_integer_labels_come_out_as_int64_whatever_the_labels_read(tmp_path):
    from opendp_wasserstein import synthesize

    spec = {
        "columns": {
            "c": {"type": "categorical", "categories": [0, 1, 2]},
            "x": {"type": "float", "bounds": [0, 1]},
        }
    }
    types = set()
    for last in ("2", "x", "1.5"):
        p = tmp_path / "c.csv"
        p.write_text("c,x\n0,0.5\n1,0.2\n" + last + ",0.1\n")
        out, _ = synthesize(read_file(str(p), schema=Schema.from_json(spec)), 1.0, schema=spec)
        types.add(str(out.schema.field("c").type))
    assert types == {"int64"}


# ---------------------------------------------------------------------------------------------
# writing (issue 20, items 6 and 13)


@pytest.mark.parametrize("name", ["x.xlsx", "x", "x.json", "x.csv.bak"])
def test_write_file_refuses_an_extension_it_does_not_write(tmp_path, name):
    with pytest.raises(TableFileError, match=r"\.csv, \.tsv, \.tab, \.parquet, \.pq"):
        write_file(pa.table({"a": [1]}), str(tmp_path / name))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name,fmt",
    [
        ("x.csv", "csv"),
        ("X.CSV", "csv"),
        ("x.tsv", "tsv"),
        ("x.tab", "tsv"),
        ("x.parquet", "parquet"),
        ("x.pq", "parquet"),
    ],
)
def test_output_format(name, fmt):
    assert output_format(name) == fmt


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_write_file_creates_0666_less_the_umask(tmp_path, umask):
    import os
    import stat

    old = os.umask(umask)
    try:
        for name in ("x.csv", "x.parquet"):
            write_file(pa.table({"a": [1.5]}), str(tmp_path / name))
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~umask
    finally:
        os.umask(old)


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    """A process killed outright (SIGKILL) leaves its temporary; the next write of the same
    output removes it once that process is gone, and leaves a running process's alone."""
    import os
    import socket
    import subprocess
    import sys

    from opendp_wasserstein.tables.io import _host

    out = tmp_path / "out.csv"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f".out.csv.tmp-{_host()}-{dead_pid}-{'0' * 16}"
    stale.write_text("half a table")
    running = (
        tmp_path / f".out.csv.tmp-{_host()}-{os.getppid()}-{'1' * 16}"
    )  # pytest's parent: alive
    running.write_text("being written")
    other_host = tmp_path / f".out.csv.tmp-not{socket.gethostname()[:8]}x-{dead_pid}-{'2' * 16}"
    other_host.write_text("another machine's")
    other_output = tmp_path / f".other.csv.tmp-{_host()}-{dead_pid}-{'3' * 16}"
    other_output.write_text("another output's")
    write_file(pa.table({"a": [1]}), str(out))
    assert out.read_text().splitlines() == ["a", "1"]
    assert not stale.exists()
    assert running.exists()
    assert other_host.exists()
    assert other_output.exists()


def test_atomic_output_removes_its_temporary_on_any_exception(tmp_path):
    out = tmp_path / "o.csv"
    for exc in (ValueError, KeyboardInterrupt):
        with pytest.raises(exc), atomic_output(str(out)) as tmp:
            open(tmp, "w").write("part")
            raise exc()
        assert list(tmp_path.iterdir()) == []


def test_check_not_an_input(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    (tmp_path / "soft.csv").symlink_to(data)
    (tmp_path / "hard.csv").hardlink_to(data)
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "nowhere.csv")
    for out in ("data.csv", "soft.csv", "hard.csv", "./data.csv", "sub/../data.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(TableFileError, match="-o/--output .* is the input .*data.csv"):
            check_not_an_input(str(tmp_path / out), {"input": str(data)}, "-o/--output")
    check_not_an_input(str(tmp_path / "new.csv"), {"input": str(data), "--schema file": None})
    check_not_an_input(str(tmp_path / "dangling.csv"), {"input": str(data)})
    # a Parquet dataset directory: an output inside it would be read as data next time
    ds = tmp_path / "ds"
    ds.mkdir()
    with pytest.raises(TableFileError, match="inside the data directory"):
        check_not_an_input(str(ds / "out"), {"data": str(ds)})
    with pytest.raises(TableFileError, match="is the data"):
        check_not_an_input(str(ds), {"data": str(ds)})
