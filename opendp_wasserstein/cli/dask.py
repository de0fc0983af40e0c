"""``--scheduler``: the ``synth`` and ``select`` commands on a Dask cluster.

The command ::

    opendp-wasserstein synth data.parquet -o out_dir/ --epsilon 1 --bounds b.json \\
        --scheduler local:2

reads a Parquet file or directory on the workers and writes the synthetic rows as Parquet parts
into ``out_dir/`` (atomically: a temporary directory renamed when the release has succeeded).
``--scheduler tcp://host:8786`` uses a running Dask scheduler; ``local:N`` starts ``N`` local
worker processes for the call.  ``select`` reads its data the same way (the candidates and the
output are small files on the driver; the output is CSV, TSV or Parquet by its extension).  An
output that is an input, or inside an input directory, is refused.  A progress bar per pass,
moving per part, is shown on a terminal.  With ``--schema`` (instead of ``--bounds``) the input
is a table read under the schema on the workers and released by the structured release of
``synth --schema`` (:func:`opendp_wasserstein.distributed.synthesize_on_dask` with ``schema``):
under the same ``--seed`` the same rows as in memory, written as Parquet parts.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from opendp_wasserstein.cli._common import (
    CliError,
    read_bounds,
    read_numeric_csv,
    seeded,
    selection_summary,
    tree_em_features,
    unit,
    write_numeric,
)
from opendp_wasserstein.cli.tables import _check_derived, _release_columns, print_table_summary
from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.distributed import local_client, select_on_dask, synthesize_on_dask
from opendp_wasserstein.distributed._source import parquet_files
from opendp_wasserstein.tables.pipeline import StructuredOptions
from opendp_wasserstein.tables.schema import Schema

__all__ = ["run_synth", "run_synth_table", "run_select", "client_for"]


@contextmanager
def client_for(scheduler: str, memory_limit: str | None = None) -> Iterator[Any]:
    """A Dask client for ``--scheduler``: ``local`` / ``local:N`` or a scheduler address."""

    try:
        Client = import_optional("distributed", "--scheduler").Client
    except ImportError as e:  # pragma: no cover - the dask extra is missing (the message names it)
        raise CliError(str(e)) from None

    if scheduler == "local" or scheduler.startswith("local:"):
        text = scheduler.partition(":")[2] or "2"
        if not text.isdigit() or int(text) < 1:
            raise CliError("--scheduler local:N needs a positive number of workers N")
        # started before the release (in the background it did not pay on 2 cores:
        # docs/distributed.rst, local_client_in_background)
        with local_client(workers=int(text), memory_limit=memory_limit) as client:
            yield client
        return
    with Client(scheduler) as client:
        yield client


def _show_progress(args: argparse.Namespace) -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return not (args.quiet or args.json) and callable(isatty) and bool(isatty())


def _columns(args: argparse.Namespace) -> list[str] | None:
    return [c.strip() for c in args.columns.split(",")] if getattr(args, "columns", None) else None


def run_synth(args: argparse.Namespace) -> dict[str, Any]:
    """``synth --scheduler``: Parquet in, Parquet parts out."""

    if getattr(args, "schema", None):
        return run_synth_table(args)
    if getattr(args, "split_order", None):
        raise CliError(
            "--split-order applies to in-memory releases; with --scheduler the hierarchy "
            "splits the (numeric) columns cyclically"
        )
    if args.bounds is None:
        raise CliError(
            "--bounds BOUNDS.json is required: bounds are public and never inferred from the data"
        )
    try:
        header = _columns(args) or list(
            pq.ParquetFile(parquet_files(args.input)[0]).schema_arrow.names
        )
    except (OSError, ValueError) as e:
        raise CliError(
            f"cannot read the Parquet input {args.input!r}: {str(e).splitlines()[0]}"
        ) from None
    lower, upper = read_bounds(args.bounds, header, subset=bool(_columns(args)))
    if os.path.exists(args.output):
        raise CliError(f"output {args.output!r} exists: choose a new directory")
    if args.mechanism == "structured":
        raise CliError(
            "--mechanism structured releases tables in memory (--schema); not with --scheduler"
        )
    with client_for(args.scheduler, args.memory_limit) as client, seeded(args.seed):
        rel, report = synthesize_on_dask(
            args.input,
            args.epsilon,
            args.output,
            {"lower": lower, "upper": upper},
            mechanism=args.mechanism or "adaptive",
            epsilon_select=args.epsilon_select,
            placement=args.placement,
            public_size=not args.private_size,
            client=client,
            columns=header,
            parts=args.parts,
            progress=_show_progress(args),
            consistency=args.consistency,
            score=args.score,
        )
    summary = {
        "command": "synth",
        "input": args.input,
        "output": rel.path,
        "scheduler": args.scheduler,
        "rows_out": rel.rows,
        "parts": rel.parts,
        "columns": header,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "depth": report.depth,
        "schedule": list(report.scales),
        "visited_nodes": report.visited_nodes,
        "details": {k: v for k, v in report.details.items() if k != "active_nodes"},
    }
    if not (args.quiet or args.json):
        unit_name = unit(args.private_size)
        print(f"certified epsilon (measurement map, {unit_name}): {report.epsilon}")
        extra = f", model dimension s = {report.details['s']}" if "s" in report.details else ""
        print(
            f"mechanism {report.mechanism}: depth {report.depth}{extra}, "
            f"{report.visited_nodes} noisy nodes"
        )
        print(f"wrote {rel.rows} synthetic rows in {rel.parts} Parquet parts to {rel.path}")
    return summary


def run_synth_table(args: argparse.Namespace) -> dict[str, Any]:
    """``synth --schema --scheduler``: the structured table release on Dask (the in-memory
    release of ``synth --schema``, :func:`synthesize_on_dask` with ``schema``)."""

    if args.bounds:
        raise CliError("give either --schema or --bounds, not both")
    if args.mechanism not in (None, "structured"):
        raise CliError(
            f"--mechanism {args.mechanism} with --schema runs in memory; with --scheduler a "
            "table is released by the structured release (leave --mechanism unset)"
        )
    flags = {
        "--epsilon-select": args.epsilon_select,
        "--split-order": getattr(args, "split_order", None),
        "--consistency": args.consistency,
        "--score": args.score,
        "--private-size": args.private_size or None,
        "--placement": None if args.placement == "uniform" else args.placement,
    }
    given = [k for k, v in flags.items() if v is not None]
    if given:
        raise CliError(
            f"{', '.join(given)} apply to the one-tree mechanisms, not to the structured table "
            "release that --schema runs with --scheduler"
        )
    schema = Schema.from_json(args.schema, columns=_columns(args))
    try:
        header = list(pq.ParquetFile(parquet_files(args.input)[0]).schema_arrow.names)
    except (OSError, ValueError) as e:
        raise CliError(
            f"cannot read the Parquet input {args.input!r}: {str(e).splitlines()[0]}"
        ) from None
    if os.path.exists(args.output):
        raise CliError(f"output {args.output!r} exists: choose a new directory")
    chosen = _columns(args)
    names = _release_columns(schema, header, args.input, "input", chosen)
    derived = _check_derived(schema, names, args.accept_data_derived_schema)
    share = getattr(args, "marginal_share", None)
    joint = getattr(args, "joint", None)
    try:
        options = StructuredOptions(
            **({} if share is None else {"marginal_share": share}),
            **({} if joint is None else {"joint": joint}),
        )
    except ValueError as e:
        raise CliError(f"--{str(e).replace('_', '-')}") from None
    with client_for(args.scheduler, args.memory_limit) as client, seeded(args.seed):
        rel, report = synthesize_on_dask(
            args.input,
            args.epsilon,
            args.output,
            schema=schema,
            structured=options,
            client=client,
            columns=names,
            parts=args.parts,
            progress=_show_progress(args),
            accept_data_derived_schema=bool(derived),  # checked above, by name
            delta=args.delta,
        )
    summary = {
        "command": "synth",
        "input": args.input,
        "output": rel.path,
        "scheduler": args.scheduler,
        "rows_in": rel.rows,
        "rows_out": rel.rows,
        "parts": rel.parts,
        "columns": names,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "epsilon_release": report.details["epsilon_release"],
        "epsilon_schema": report.details["epsilon_schema"],
        "data_derived_schema": derived,
        "split_order": report.details["split_order"],
        "delta_certified": report.delta,
        "quality": report.details.get("quality"),
        "details": dict(report.details),
    }
    if not (args.quiet or args.json):
        print_table_summary(report, derived, unit(False))
        print(f"wrote {rel.rows} synthetic rows in {rel.parts} Parquet parts to {rel.path}")
    return summary


def run_select(args: argparse.Namespace) -> dict[str, Any]:
    """``select --scheduler``: Parquet data on the workers, candidates and output on the driver."""

    if args.m < 1:
        raise CliError("-m must be at least 1")
    c_header, c = read_numeric_csv(args.candidates, None, "candidates")
    try:
        header = list(pq.ParquetFile(parquet_files(args.data)[0]).schema_arrow.names)
    except (OSError, ValueError) as e:
        raise CliError(
            f"cannot read the Parquet data {args.data!r}: {str(e).splitlines()[0]}"
        ) from None
    if not set(c_header) <= set(header):  # the candidates are public: their names are named
        raise CliError(
            f"candidates column(s) {[c for c in c_header if c not in header]} are not "
            f"columns of the data {args.data!r}"
        )

    tree_em_features(args)
    with client_for(args.scheduler, args.memory_limit) as client, seeded(args.seed):
        counts, report = select_on_dask(
            args.data,
            c,
            args.m,
            args.epsilon,
            mechanism=args.mechanism,
            metric=args.metric or "l2",
            public_size=not args.private_size,
            client=client,
            columns=c_header,
            progress=_show_progress(args),
        )
    chosen = np.flatnonzero(counts)
    write_numeric(args.output, c_header, c[chosen], counts[chosen])
    return selection_summary(args, report, chosen, scheduler=args.scheduler)
