"""What every subcommand of the command line shares: its error, its file readers and writers,
``--seed``, the unit of the certified epsilon and the progress bar (the parser, ``--seed``'s help
included, is :mod:`opendp_wasserstein_cli.parser`).

Each subcommand module imports what its release needs; ``--help`` and ``--version`` never get
here (the console script answers them before the package is imported).
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import pyarrow as pa
from opendp.mod import OpenDPException, assert_features

from opendp_wasserstein.release.progress import NoProgress
from opendp_wasserstein.release.progress import progress_bar as progress
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables.io import write_file

__all__ = [
    "CliError",
    "read_numeric_csv",
    "write_numeric",
    "read_bounds",
    "seeded",
    "unit",
    "tree_em_features",
    "NoProgress",
    "progress",
]


class CliError(Exception):
    """An error reported as one line and exit code 2."""


def read_numeric_csv(
    path: str,
    columns: Sequence[str] | None = None,
    name: str = "input",
    sensitive: bool = False,
    private_size: bool = False,
) -> tuple[list[str], Any]:
    """Read a CSV with a header row into (header, float array); errors name the column, not values.

    ``sensitive``: the file holds the private data, so only what is outside the release's input
    domain is refused (a missing or NaN value, a non-numeric cell); ``+-inf`` is read and then
    clamped to the box like any value outside it, and with ``private_size`` a file with no data
    rows is data too (the empty data set is a neighbour of every one-row data set).  Public
    files (candidates) must hold finite numbers and at least one row."""

    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise CliError(f"cannot read {name} file {path!r}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise CliError(f"cannot read {name} file {path!r}: not a text CSV file") from None
    if not rows or not rows[0]:
        raise CliError(f"{name} file {path!r} is empty (a header row is required)")
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        raise CliError(f"{name} file {path!r} has duplicate column names")
    # only a line with nothing on it is skipped: a record whose cells are all empty (",") is a
    # record with missing values, refused like one with a single missing value
    body = [r for r in rows[1:] if r]
    if not body and not (sensitive and private_size):
        raise CliError(f"{name} file {path!r} has no data rows")
    wanted = list(header) if not columns else list(columns)
    missing = [c for c in wanted if c not in header]
    if missing:
        raise CliError(f"column(s) {missing} not in {name} file {path!r}")
    idx = [header.index(c) for c in wanted]
    out = np.empty((len(body), len(idx)))
    for j, (col, i) in enumerate(zip(wanted, idx, strict=True)):
        try:
            out[:, j] = [float(r[i]) if i < len(r) and r[i].strip() else float("nan") for r in body]
        except ValueError:
            raise CliError(f"column {col!r} of {name} file {path!r} is not numeric") from None
        if sensitive and np.isnan(out[:, j]).any():
            raise CliError(
                f"column {col!r} of {name} file {path!r} has missing or NaN values (impute "
                "first, or use --schema)"
            )
        if not sensitive and not np.all(np.isfinite(out[:, j])):
            raise CliError(
                f"column {col!r} of {name} file {path!r} has missing, NaN or infinite values"
            )
    return wanted, out


def write_numeric(path: str, header: Sequence[str], values: Any, multiplicity: Any = None) -> None:
    """Write numeric rows (and an optional ``multiplicity`` column) to ``path`` in the format of
    its extension, atomically (:func:`~opendp_wasserstein.tables.io.write_file`)."""

    values = np.asarray(values, dtype=np.float64).reshape(-1, len(header))
    cols = {name: pa.array(values[:, j]) for j, name in enumerate(header)}
    if multiplicity is not None:
        cols["multiplicity"] = pa.array(np.asarray(multiplicity, dtype=np.int64))
    write_file(pa.table(cols), path)


def read_bounds(
    path: str, columns: Sequence[str], subset: bool = False
) -> tuple[list[float], list[float]]:
    """The bounds of ``columns`` from a bounds file (``{"column": [lower, upper]}``).

    ``columns`` is the input's header (or, with ``subset``, the columns the user chose with
    ``--columns``).  Without ``subset`` the bounds must name exactly the header's columns: a
    bounded column missing from the input is refused by name (the bounds are public), and a
    header field without bounds is counted, never quoted (in a file without a header row, the
    header is a record)."""
    try:
        with open(path) as f:
            spec = json.load(f)
    except OSError as e:
        raise CliError(f"cannot read bounds file {path!r}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise CliError(f"bounds file {path!r} is not valid JSON: {e.msg}") from None
    if not isinstance(spec, dict):
        raise CliError(
            'bounds file must map each column name to [lower, upper], e.g. {"x": [0, 1]}'
        )
    unbounded = [c for c in columns if c not in spec]
    if unbounded and subset:
        raise CliError(
            f"bounds file has no [lower, upper] for column(s) {unbounded} (bounds are public "
            "and never inferred from the data)"
        )
    if unbounded:
        known = [c for c in columns if c in spec]
        raise CliError(
            f"the bounds file has no [lower, upper] for {len(unbounded)} of the input's "
            f"{len(columns)} "
            "header field(s) (a file without a header row?); bounds are public and never "
            "inferred from "
            + (
                f"the data: add them, or pass --columns {','.join(known)}"
                if known
                else "the data: add them"
            )
        )
    absent = [c for c in spec if c not in columns]
    if absent and not subset:
        raise CliError(
            f"bounds file column(s) {absent} are not in the input's header; pass --columns "
            "to release a subset"
        )
    lower, upper = [], []
    for c in columns:
        b = spec[c]
        if not (
            isinstance(b, list)
            and len(b) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)
        ):
            raise CliError(f"bounds for column {c!r} must be [lower, upper] numbers")
        lo, hi = float(b[0]), float(b[1])
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise CliError(f"bounds for column {c!r} must be finite with lower < upper")
        lower.append(lo)
        upper.append(hi)
    return lower, upper


def seeded(seed: int | None) -> Any:
    """``runtime.reproducible(seed)`` for ``--seed`` (NOT private), else no change."""

    return nullcontext() if seed is None else reproducible(seed)


def selection_summary(
    args: argparse.Namespace, report: Any, chosen: np.ndarray, **extra: Any
) -> dict[str, Any]:
    """The ``select`` summary of a numeric release (in memory or on Dask, ``extra`` keys after
    the files), printed unless ``--quiet`` or ``--json``."""
    summary = {
        "command": "select",
        "data": args.data,
        "candidates": args.candidates,
        "output": args.output,
        **extra,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "m": report.m,
        "k": report.k,
        "distinct_chosen": int(chosen.size),
    }
    if not (args.quiet or args.json):
        print(f"certified epsilon (measurement map, {unit(args.private_size)}): {report.epsilon}")
        print(
            f"mechanism {report.mechanism}: {report.m} points on {chosen.size} of {report.k} "
            "candidates"
        )
        print(f"wrote {args.output}")
    return summary


def unit(private_size: bool) -> str:
    """What ``epsilon`` is certified for: one replacement (public size) or one added or removed
    record (private size; a replacement then costs twice as much)."""
    return "one added or removed record" if private_size else "one replacement"


def tree_em_features(args: argparse.Namespace) -> None:
    """``select --mechanism tree-em`` samples in float64: it runs only with the explicit
    ``--idealized-numerics`` flag, and only where OpenDP's feature of that name is enabled (the
    program :func:`console_main` enables it when the flag is given; a Python caller of
    :func:`main` enables it itself)."""

    if args.mechanism == "tree-em":
        if not args.idealized_numerics:
            raise CliError(
                "--mechanism tree-em samples in float64 and needs --idealized-numerics "
                "(OpenDP's 'idealized-numerics' feature) to acknowledge that"
            )
        try:
            assert_features("idealized-numerics")
        except OpenDPException:
            raise CliError(
                "--idealized-numerics: enable OpenDP's 'idealized-numerics' feature first "
                "(dp.enable_features); only the opendp-wasserstein program enables it for you"
            ) from None
