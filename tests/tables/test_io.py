import pyarrow as pa
import pytest

from opendp_wasserstein.tables import CategoricalColumn, Schema, SchemaError
from opendp_wasserstein.tables.io import (
    TableFileError,
    detect_delimiter,
    file_format,
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
    s = Schema({"code": CategoricalColumn(categories=("01", "2")), "x": CategoricalColumn(categories=("a",))})
    t = read_file(str(p), schema=s)
    assert t.column("code").to_pylist() == ["01", "2"]
    assert t.column("x").to_pylist() == ["1.5", None]


@pytest.mark.parametrize("name", ["out.csv", "out.tsv", "out.parquet", "out.pq"])
def test_write_read_round_trip_types(tmp_path, name):
    import datetime as dt

    t = pa.table({
        "i": pa.array([1, None], type=pa.int64()),
        "f": pa.array([1.5, 2.0]),
        "s": pa.array(["a", None]),
        "d": pa.array([dt.date(2015, 1, 2), None], type=pa.date32()),
        "ts": pa.array([dt.datetime(2015, 1, 2, 3, 4, 5), None], type=pa.timestamp("us")),
        "b": pa.array([True, None]),
    })
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
    with pytest.raises(SchemaError, match="'zz'.*'a', 'b'"):
        read_file(str(p), columns=["zz"])
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
