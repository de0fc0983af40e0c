"""Inputs of a distributed release: row blocks read by the workers, never by the driver.

A source is turned into a list of :class:`Block` readers: small picklable objects that a worker
calls to get one block of rows as a float64 ``(rows, d)`` array.  Supported sources:

- a Parquet file or a directory of Parquet files (read by row groups with ``pyarrow``; the
  driver only reads the footers);
- a Dask DataFrame (its partitions) or a Dask Array chunked along rows only;
- a numpy array (in memory: split into chunks that the executor publishes on the scheduler,
  read from there by the tasks, so that the rows never travel in a task graph; for tests and
  small data).

Blocks are read on the workers, each more than once (a count pass and a partition pass), so
the driver never holds rows and nothing needs to fit in the cluster's memory at once.

With a private size, the number of blocks (so of tasks) must not follow ``n``: a numpy array is
cut into :data:`ARRAY_CHUNKS` chunks whatever its length, and a Parquet source into one block
per row group (its layout, never its row counts); a Dask collection keeps its partitions.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from opendp_wasserstein.core.optional import import_optional

__all__ = [
    "Block",
    "ParquetBlock",
    "ArrayBlock",
    "DelayedBlock",
    "blocks_of",
    "parquet_files",
    "ARRAY_CHUNKS",
    "ROWS_PER_BLOCK",
    "PARQUET_ROWS_PER_BLOCK",
    "QuietRows",
    "PublishedBlock",
]

#: rows per block of a numpy source (public size)
ROWS_PER_BLOCK = 1 << 21
#: a Parquet block holds consecutive row groups of one file until it has at least this many
#: rows (row groups are never split): a file of ``k`` row groups of at least this many rows is
#: read by ``k`` tasks, smaller row groups are read a few at a time
PARQUET_ROWS_PER_BLOCK = 1 << 16
#: the number of chunks of a numpy source when the size is private (a constant: the number of
#: tasks of a pass, and of published chunks, is then independent of n)
ARRAY_CHUNKS = 16


class Block:
    """One block of input rows: ``block()`` returns a float64 ``(rows, d)`` array."""

    def __call__(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def _as_rows(table: Any, columns: Sequence[str]) -> np.ndarray:
    """A pyarrow table to a float64 ``(rows, d)`` array (nulls become NaN)."""

    out = np.empty((table.num_rows, len(columns)), dtype=np.float64)
    for i, name in enumerate(columns):
        col = table.column(name)
        t = col.type
        # refused by its type (public), never by its values: a text column of numbers that one
        # word would make unreadable is refused whatever it holds
        if not (
            pa.types.is_integer(t)
            or pa.types.is_floating(t)
            or pa.types.is_boolean(t)
            or pa.types.is_decimal(t)
            or pa.types.is_null(t)
        ):
            raise TypeError(f"column {name!r} of the source must be numeric (its type is {t})")
        try:
            out[:, i] = col.to_numpy(zero_copy_only=False).astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"column {name!r} of the source must be numeric") from None
    return out


@dataclass(frozen=True)
class ParquetBlock(Block):
    """Row groups ``row_groups`` of the Parquet file ``path``, columns ``columns`` in order."""

    path: str
    row_groups: tuple[int, ...]
    columns: tuple[str, ...]

    def __call__(self) -> np.ndarray:
        table = pq.ParquetFile(self.path).read_row_groups(
            list(self.row_groups), columns=list(self.columns)
        )
        return _as_rows(table, self.columns)


@dataclass(frozen=True)
class ArrayBlock(Block):
    """Rows of a numpy source held by the driver: the executor publishes ``rows`` on the
    scheduler and the tasks read a :class:`PublishedBlock` instead, so the rows are never part
    of a task graph (the in-process test client takes this block as it is)."""

    rows: np.ndarray

    def __call__(self) -> np.ndarray:
        return np.asarray(self.rows, dtype=np.float64)


class QuietRows(Block):
    """A chunk of a numpy source as it travels to the scheduler and the workers.

    Its ``repr`` shows neither a value nor the shape: distributed logs every message a server
    receives at DEBUG level (``distributed.core``, "Message from ..."), data included, and a
    numpy array's ``repr`` quotes its first and last rows.  ``__sizeof__`` is the array's, for
    Dask's memory accounting.
    """

    __slots__ = ("rows",)

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def __call__(self) -> np.ndarray:
        return np.asarray(self.rows, dtype=np.float64)

    def __repr__(self) -> str:
        return "QuietRows(...)"

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + int(self.rows.nbytes)

    def __reduce__(self) -> tuple[Any, ...]:
        return (QuietRows, (self.rows,))


@dataclass(frozen=True)
class PublishedBlock(Block):
    """A chunk of a numpy source published on the scheduler under ``name``
    (:meth:`distributed.Client.publish_dataset`, by the executor): the task fetches it from
    there.  The task graph holds the name only, and a task re-run after a worker was lost
    fetches the chunk again (data scattered to a worker would be lost with it)."""

    name: str

    def __call__(self) -> np.ndarray:
        get_client = import_optional("distributed", "a numpy source on Dask").get_client

        return np.asarray(get_client().get_dataset(self.name)(), dtype=np.float64)


@dataclass(frozen=True)
class DelayedBlock(Block):
    """A partition of a Dask collection: ``key`` is a Dask delayed object computed by the task."""

    part: Any
    columns: tuple[str, ...] | None

    def __call__(self) -> np.ndarray:  # pragma: no cover - the executor computes ``part`` itself
        raise RuntimeError("DelayedBlock is resolved by the executor")


def parquet_files(path: str) -> list[str]:
    """The Parquet files of a file or directory path (sorted, hidden and ``_`` files skipped)."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise FileNotFoundError(f"source {path!r} is neither a Parquet file nor a directory")
    found = []
    for root, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        found += [
            os.path.join(root, f)
            for f in sorted(files)
            if not f.startswith((".", "_")) and f.endswith(".parquet")
        ]
    if not found:
        raise FileNotFoundError(f"source directory {path!r} holds no .parquet files")
    return found


def _parquet_blocks(
    path: str,
    columns: Sequence[str] | None,
    d: int,
    rows_per_block: int,
    private_size: bool = False,
) -> tuple[list[Block], list[str]]:
    files = parquet_files(path)
    schema = pq.ParquetFile(files[0]).schema_arrow
    names = list(schema.names) if columns is None else list(columns)
    missing = [c for c in names if c not in schema.names]
    if missing:
        raise ValueError(f"columns {missing} are not in the source")
    if len(names) != d:
        raise ValueError(
            f"the source has {len(names)} columns, the measurement expects {d} (pass columns=)"
        )
    blocks: list[Block] = []
    for f in files:
        meta = pq.ParquetFile(f).metadata
        group: list[int] = []
        rows = 0
        for g in range(meta.num_row_groups):
            group.append(g)
            rows += meta.row_group(g).num_rows
            # a private size: one block per row group (the footers' row counts are the data's)
            if private_size or rows >= rows_per_block:
                blocks.append(ParquetBlock(f, tuple(group), tuple(names)))
                group, rows = [], 0
        if group or not blocks:
            blocks.append(ParquetBlock(f, tuple(group), tuple(names)))
    return blocks, names


def blocks_of(
    source: Any,
    d: int,
    columns: Sequence[str] | None = None,
    rows_per_block: int | None = None,
    private_size: bool = False,
) -> tuple[list[Block], list[str]]:
    """The blocks of ``source`` and the output column names.

    :param source: a Parquet path, a Dask DataFrame or Array, or a numpy ``(n, d)`` array
    :param d: the number of columns the measurement expects
    :param columns: the source columns to use, in order (default: all)
    :param rows_per_block: a Parquet block holds consecutive row groups of one file until it has
        this many rows (row groups are never split; default :data:`PARQUET_ROWS_PER_BLOCK`: one
        block per row group of at least that many rows); a numpy array is cut into blocks of
        this many rows (default :data:`ROWS_PER_BLOCK`); not used when ``private_size``
    :param private_size: the release's ``n`` is private: the number of blocks must not depend on
        it (a numpy array gives :data:`ARRAY_CHUNKS` blocks, a Parquet source one per row group)
    """
    if isinstance(source, (str, os.PathLike)):
        per = PARQUET_ROWS_PER_BLOCK if rows_per_block is None else rows_per_block
        return _parquet_blocks(os.fspath(source), columns, d, per, private_size)
    if isinstance(source, np.ndarray):
        if source.ndim != 2 or source.shape[1] != d:
            raise ValueError(f"source must be a 2-dimensional array with {d} columns")
        if source.dtype.kind != "f":
            raise TypeError(f"source must have a float dtype, got {source.dtype}")
        names = [f"x{i}" for i in range(d)] if columns is None else list(columns)
        if private_size:  # a fixed number of chunks (some empty when n < ARRAY_CHUNKS)
            return [ArrayBlock(c) for c in np.array_split(source, ARRAY_CHUNKS)], names
        step = max(1, int(ROWS_PER_BLOCK if rows_per_block is None else rows_per_block))
        parts: list[Block] = [
            ArrayBlock(source[i : i + step]) for i in range(0, source.shape[0], step)
        ]
        return parts or [ArrayBlock(source[:0])], names
    try:
        da = import_optional("dask.array")
        dd = import_optional("dask.dataframe")
    except ImportError as e:  # pragma: no cover - the dask extra is missing (the message names it)
        raise TypeError(f"source must be a Parquet path or a numpy array ({e})") from None
    if isinstance(source, dd.DataFrame):
        names = list(source.columns) if columns is None else list(columns)
        if len(names) != d:
            raise ValueError(
                f"the source has {len(names)} columns, the measurement expects {d} (pass columns=)"
            )
        return [DelayedBlock(p, tuple(names)) for p in source[names].to_delayed()], names
    if isinstance(source, da.Array):
        if source.ndim != 2 or source.shape[1] != d or len(source.chunks[1]) != 1:
            raise ValueError(
                f"source must be a 2-dimensional Dask array with {d} columns in one chunk"
            )
        names = [f"x{i}" for i in range(d)] if columns is None else list(columns)
        return [DelayedBlock(p, None) for p in source.to_delayed()[:, 0]], names
    raise TypeError("source must be a Parquet path, a Dask DataFrame or Array, or a numpy array")


def read_block(block: Any) -> np.ndarray:
    """The rows of a block (a :class:`Block`, or a computed Dask partition)."""
    if isinstance(block, Block):
        return block()
    if hasattr(block, "to_numpy"):  # a pandas DataFrame partition
        dtypes = getattr(block, "dtypes", ())
        if any(getattr(t, "kind", "O") not in "biuf" for t in dtypes):
            raise TypeError("the source's columns must be numeric (by dtype)")
        return np.asarray(block.to_numpy(dtype=np.float64, na_value=np.nan))
    return np.asarray(block, dtype=np.float64)


def source_shape(
    source: Any, columns: Sequence[str] | None, count: bool = True
) -> tuple[int | None, int]:
    """``(n, d)`` of a source: Parquet footers, a numpy shape, or one pass over a Dask collection
    (``count=False``: ``n`` is not read, None: the size is private)."""
    if isinstance(source, (str, os.PathLike)):
        files = parquet_files(os.fspath(source))
        d = (
            len(columns)
            if columns is not None
            else len(pq.ParquetFile(files[0]).schema_arrow.names)
        )
        if not count:
            return None, d
        return int(sum(pq.ParquetFile(f).metadata.num_rows for f in files)), d
    if isinstance(source, np.ndarray):
        d = int(source.shape[1]) if source.ndim == 2 else 0
        return (int(source.shape[0]) if count else None), d
    d = (
        len(columns)
        if columns is not None
        else int(source.shape[1])
        if hasattr(source, "ndim")
        else len(source.columns)
    )
    return (int(len(source)) if count else None), d
