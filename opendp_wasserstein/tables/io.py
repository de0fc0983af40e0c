"""Reading and writing table files: CSV (delimiter detected or given), TSV and Parquet.

The format follows the extension: ``.parquet``/``.pq`` is Parquet, ``.tsv``/``.tab`` is
tab-separated; an input with any other extension is read as delimited text whose delimiter (one
of ``, ; TAB |``) is detected from the header line unless given, while an output must end in
one of :data:`OUTPUT_EXTENSIONS` (``.csv`` is comma-separated unless told otherwise): a name
such as ``out.xlsx`` is refused, never given CSV text.  Files are read into a
:class:`pyarrow.Table` (types inferred; with a schema, every declared column in its schema
type, never a type inferred from the values: :func:`typed_by_schema`).

Outputs are written atomically (:func:`atomic_output`): into a hidden temporary file beside the
output, renamed into place when complete, so an output is never half-written.  The file is
created with mode ``0666`` less the umask, as every Unix tool creates files.  A failure, an
interrupt (Ctrl-C) or a ``SIGTERM`` to the command line removes the temporary file; a process
killed outright (``SIGKILL``, a power cut) leaves it, named ``.NAME.tmp-HOST-PID-XXXX``, and the
next write of the same output on the same host removes it once process ``PID`` is gone.
Floats are written as the shortest decimal that reads back as the same float64 (a synthetic
value is drawn uniformly inside a cell, so it usually needs 16 or 17 significant digits); round
them afterwards if fewer are wanted (post-processing: no privacy cost).

An empty field, ``NA``, ``NaN``, ``null`` and the like read as missing.  Errors name the file and
the column, never a value.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import secrets
import socket
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from opendp_wasserstein.tables.frames import natural_frame_info, read_table, write_table
from opendp_wasserstein.tables.schema import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)

__all__ = [
    "read_file",
    "typed_by_schema",
    "write_file",
    "file_format",
    "output_format",
    "detect_delimiter",
    "atomic_output",
    "check_not_an_input",
    "OUTPUT_EXTENSIONS",
    "TableFileError",
]

_DELIMITERS = ",;\t|"
#: the extensions an output may have, and the format each writes
OUTPUT_EXTENSIONS: dict[str, str] = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


class TableFileError(ValueError):
    """A table file cannot be read or written; the message names the file, not its contents."""


def file_format(path: str) -> str:
    """``"parquet"``, ``"tsv"`` or ``"csv"`` by the file's extension."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext in (".parquet", ".pq"):
        return "parquet"
    if ext in (".tsv", ".tab"):
        return "tsv"
    return "csv"


def output_format(path: str, what: str = "output") -> str:
    """The format of an output file by its extension, one of :data:`OUTPUT_EXTENSIONS`; any
    other extension (``.xlsx``, none) is refused, naming the allowed ones."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in OUTPUT_EXTENSIONS:
        allowed = ", ".join(OUTPUT_EXTENSIONS)
        raise TableFileError(
            f"{what} {str(path)!r}: {'extension ' + repr(ext) if ext else 'no extension'} is "
            "not a table "
            f"format this package writes; use one of {allowed}"
        )
    return OUTPUT_EXTENSIONS[ext]


def check_not_an_input(output: str, inputs: Mapping[str, str | None], what: str = "output") -> None:
    """Refuse an ``output`` that would replace one of ``inputs`` (``{description: path}``): the same
    path, a symbolic link to it, or a hard link to the same file (same device and inode); and an
    output inside an input directory (a Parquet dataset: the next read of that directory would
    take the output for data).  Only the file system is looked at (paths, inodes), never the
    files' contents.
    """
    out_real = os.path.realpath(output)
    for desc, path in inputs.items():
        if path is None:
            continue
        in_real = os.path.realpath(path)
        same = out_real == in_real
        if not same and os.path.exists(output) and os.path.exists(path):
            try:
                same = os.path.samefile(output, path)
            except OSError:  # pragma: no cover - a race with a deletion
                same = False
        if same:
            raise TableFileError(
                f"{what} {str(output)!r} is the {desc} {str(path)!r} (the same file): it would be "
                f"overwritten; choose another {what}"
            )
        if os.path.isdir(path) and os.path.commonpath([out_real, in_real]) == in_real:
            raise TableFileError(
                f"{what} {str(output)!r} is inside the {desc} directory {str(path)!r}: the "
                "next read of "
                f"that directory would take the output for data; choose a directory outside it"
            )


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:64] or "host"


def _temporary_pattern(path: str) -> re.Pattern[str]:
    """The names of the temporaries of ``path`` (of any process): ``.NAME.tmp-HOST-PID-XXXX``."""
    base = re.escape(os.path.basename(os.path.abspath(path)))
    return re.compile(rf"^\.{base}\.tmp-(?P<host>[A-Za-z0-9._]+)-(?P<pid>\d+)-[0-9a-f]{{16}}$")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, say: alive
        return True
    return True


def _remove_stale(path: str) -> None:
    """Remove the temporaries of ``path`` left by a process of this host that is gone (killed
    outright while writing); those of a running process (another write of the same output) stay."""
    directory = os.path.dirname(os.path.abspath(path))
    pattern, host = _temporary_pattern(path), _host()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = pattern.match(name)
        if (
            m
            and m.group("host") == host
            and int(m.group("pid")) != os.getpid()
            and not _alive(int(m.group("pid")))
        ):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """A temporary path beside ``path`` to write an output to: renamed to ``path`` when the block
    ends normally, removed when it raises (an error, ``KeyboardInterrupt``, or the exception the
    command line raises on ``SIGTERM``).  The file is created with mode ``0666`` less the umask.
    Stale temporaries of the same output left by a killed process of this host are removed first.
    """
    directory, base = os.path.split(os.path.abspath(path))
    _remove_stale(path)
    tmp = os.path.join(directory, f".{base}.tmp-{_host()}-{os.getpid()}-{secrets.token_hex(8)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
    except OSError as e:
        raise TableFileError(f"cannot write file {path!r}: {e.strerror or e}") from None
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def detect_delimiter(path: str) -> str:
    """The delimiter of a text table, from its header line (``,`` if nothing else fits)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            header = f.readline()
    except OSError as e:
        raise TableFileError(f"cannot read file {path!r}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise TableFileError(f"cannot read file {path!r}: not UTF-8 text") from None
    try:
        return csv.Sniffer().sniff(header, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        counts = {d: header.count(d) for d in _DELIMITERS}
        best = max(counts, key=lambda d: counts[d])
        return best if counts[best] > 0 else ","


def _check_delimiter(delimiter: str) -> str:
    if delimiter in ("\\t", "tab", "TAB"):
        return "\t"
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise TableFileError("delimiter must be a single character (e.g. ',' ';' '|' or '\\t')")
    return delimiter


def _arrow_type(spec: Any) -> Any:
    """The read type of a declared text column: text, always.  An inferred type depends on every
    value of the column (one word makes a numeric column text, ``true`` reads as 1 in a numeric
    column until then), so one record would change how all the others are read; read as text,
    each value is converted on its own (:func:`typed_by_schema`)."""
    return pa.string()


def read_file(
    path: str,
    delimiter: str | None = None,
    columns: Sequence[str] | None = None,
    schema: Schema | None = None,
) -> Any:
    """A :class:`pyarrow.Table` from a CSV, TSV or Parquet file.

    :param path: the file; its extension picks the format
    :param delimiter: force the delimiter of a text file (default: detected)
    :param columns: read only these columns (names checked against the header)
    :param schema: fix the read types of declared text columns (categorical labels stay text)
    :return: the table, columns in ``columns`` order if given
    """
    fmt = file_format(path)
    if not os.path.exists(path):
        raise TableFileError(f"cannot read file {path!r}: no such file")
    if fmt == "parquet":
        try:
            names = pq.read_schema(path).names
        except (OSError, pa.ArrowInvalid) as e:
            raise TableFileError(f"cannot read Parquet file {path!r}: {type(e).__name__}") from None
        _check_columns(columns, names, path)
        table = pq.read_table(path, columns=list(columns) if columns else None)
        return table if schema is None else typed_by_schema(table, schema)
    delim = (
        _check_delimiter(delimiter)
        if delimiter is not None
        else ("\t" if fmt == "tsv" else detect_delimiter(path))
    )
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        header_row = next(csv.reader(f, delimiter=delim), [])
    names = [h.strip() for h in header_row]
    if not names or not any(names):
        raise TableFileError(f"file {path!r} is empty (a header row is required)")
    if len(set(names)) != len(names):
        raise TableFileError(f"file {path!r} has duplicate column names")
    _check_columns(columns, names, path)
    types = {}
    if schema is not None:
        for n in names:
            if n in schema:
                t = _arrow_type(schema[n])
                if t is not None:
                    types[n] = t
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pacsv.ParseOptions(delimiter=delim, newlines_in_values=False),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                include_columns=list(columns) if columns else None,
                strings_can_be_null=True,
                quoted_strings_can_be_null=True,
                timestamp_parsers=[pacsv.ISO8601, "%Y-%m-%d"],
            ),
        )
    except pa.ArrowInvalid as e:
        # pyarrow's messages can quote a row: report only what kind of problem it was
        msg = str(e)
        kind = (
            "a row has the wrong number of fields"
            if "columns" in msg
            else "it is not a well-formed delimited file"
        )
        raise TableFileError(
            f"cannot read file {path!r}: {kind} (delimiter {delim!r}; force another with "
            "--delimiter)"
        ) from None
    except UnicodeDecodeError:
        raise TableFileError(f"cannot read file {path!r}: not UTF-8 text") from None
    # text carries microseconds at most: read timestamps as timestamp[us] (as they were written)
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.unit == "ns":
            table = table.set_column(
                i, f.name, table.column(i).cast(pa.timestamp("us", tz=f.type.tz))
            )
    return table if schema is None else typed_by_schema(table, schema)


def typed_by_schema(table: Any, schema: Schema) -> Any:
    """``table`` with its declared numeric, datetime and bool columns in the schema's types.

    A text file has no types: a reader infers them from the values (a column of whole numbers
    reads as integers, one unreadable value makes it text), so the inferred type depends on the
    data, and a release that takes its output types from its input would carry that bit.  Here
    each declared column is converted record by record (:func:`~.frames.read_table`: unreadable
    values become missing, the same way for every record) into its schema type
    (:func:`~.frames.natural_frame_info`): float64, int64, date32/timestamp[us], bool, and int64
    for categorical columns with integer labels (read as text, each label matched on its own).
    Categorical columns with text labels are left as read (as text).
    """

    def converted(spec: Any) -> bool:
        if isinstance(spec, CategoricalColumn):
            return not isinstance(spec.categories[0], str)
        return isinstance(spec, (FloatColumn, IntColumn, DatetimeColumn, BoolColumn))

    declared = [n for n in table.column_names if n in schema and converted(schema[n])]
    if not declared:
        return table
    sub = schema.select(declared)
    cols, _ = read_table(table.select(declared), sub)
    typed = write_table(cols, sub, natural_frame_info(sub, "arrow"))
    for name in declared:
        table = table.set_column(table.column_names.index(name), name, typed.column(name))
    return table


def _check_columns(columns: Sequence[str] | None, names: Sequence[str], path: str) -> None:
    if columns:
        absent = [c for c in columns if c not in names]
        if absent:
            # the header is not listed: in a file without a header row it is the first record
            raise SchemaError(f"column(s) {absent} are not in the header of file {path!r}")


def write_file(table: Any, path: str, delimiter: str | None = None) -> None:
    """Write a pyarrow Table (or anything :func:`pyarrow.table` takes) atomically by extension
    (:func:`output_format`: an unknown extension is refused; :func:`atomic_output`)."""
    fmt = output_format(path)
    if not isinstance(table, pa.Table):
        table = pa.table(table)
    with atomic_output(path) as tmp:
        if fmt == "parquet":
            pq.write_table(table, tmp)
        else:
            delim = (
                "\t" if fmt == "tsv" and delimiter is None else _check_delimiter(delimiter or ",")
            )
            with open(
                tmp, "w", newline="", encoding="utf-8"
            ) as f:  # the header as the csv module writes it
                csv.writer(f, delimiter=delim).writerow(table.column_names)
            with open(tmp, "ab") as fb:
                pacsv.write_csv(
                    table,
                    fb,
                    write_options=pacsv.WriteOptions(delimiter=delim, include_header=False),
                )
