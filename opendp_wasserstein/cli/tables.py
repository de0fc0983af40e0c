"""The command-line pieces for tables: ``schema`` and the table paths of ``synth`` and ``select``.

The ``schema`` subcommand and the table options of ``synth`` and ``select`` are declared in the
standard-library parser (:mod:`opendp_wasserstein_cli.parser`); :func:`run_schema`,
:func:`run_synth_table` and :func:`run_select_table` carry them out.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from opendp_wasserstein.api import select_candidates, synthesize
from opendp_wasserstein.cli._common import CliError, progress, seeded, tree_em_features, unit
from opendp_wasserstein.release.reports import SynthesisReport
from opendp_wasserstein.tables.drafting import RELIABLE_N_EPSILON, draft_schema
from opendp_wasserstein.tables.io import (
    atomic_output,
    detect_delimiter,
    file_format,
    read_file,
    write_file,
)
from opendp_wasserstein.tables.pipeline import StructuredOptions
from opendp_wasserstein.tables.release import check_derived
from opendp_wasserstein.tables.schema import Schema
from opendp_wasserstein_cli.parser import DERIVED_FLAG

__all__ = [
    "run_schema",
    "run_synth_table",
    "run_select_table",
    "DERIVED_FLAG",
]


def _columns(text: str | None) -> list[str] | None:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


def _check_derived(schema: Any, names: list[str], accept: bool) -> list[str]:

    try:
        return check_derived(schema.select(names), accept, DERIVED_FLAG)
    except ValueError as e:
        raise _fail(str(e)) from None


#: the release's option names as the flags of ``synth`` (public names, never data)
_FLAGS = {
    "epsilon_select": "--epsilon-select",
    "split_order": "--split-order",
    "consistency": "--consistency",
    "threshold": "--threshold",
    "score": "--score",
    "delta": "--delta",
}


def _as_flags(msg: str) -> str:
    """A release's error with its option names written as the command line's flags."""
    for name, flag in _FLAGS.items():
        msg = re.sub(rf"(?<![\w-]){name}(?!\w)", flag, msg)
    return msg


def _fail(msg: str) -> Exception:

    return CliError(msg)


def _numeric_looking(names: list[str]) -> int:
    """How many header fields read as numbers (a file without a header row?)."""
    count = 0
    for n in names:
        try:
            float(n)
        except ValueError:
            continue
        count += 1
    return count


def run_schema(args: argparse.Namespace) -> dict[str, Any]:

    eps = args.estimate_bounds
    if eps is not None and not (math.isfinite(eps) and eps > 0):
        raise _fail("--estimate-bounds must be finite and > 0")
    if args.max_categories < 1:
        raise _fail("--max-categories must be at least 1")
    nullable = _columns(args.nullable) or []
    table = read_file(args.input, delimiter=args.delimiter, columns=_columns(args.columns))
    numeric_names = _numeric_looking(list(table.column_names))
    if numeric_names:  # counted, never quoted: without a header row they are a record's values
        raise _fail(
            f"{numeric_names} of the {table.num_columns} header field(s) of {args.input!r} "
            "read as numbers: "
            "is the header row missing? The schema names its columns after the header "
            "(rename such columns)"
        )
    absent = [c for c in nullable if c not in table.column_names]
    if absent:
        raise _fail(f"--nullable column(s) {absent} are not in the header of {args.input!r}")
    # a text file has no types: the reader inferred them from the values
    inferred = file_format(args.input) != "parquet"
    report = draft_schema(
        table,
        max_categories=args.max_categories,
        epsilon=eps,
        types_from_data=inferred,
        nullable=nullable,
    )
    text = report.dumps()
    if args.output:
        with atomic_output(args.output) as tmp, open(tmp, "w") as f:
            f.write(text)
    derived = [n for n, e in report.entries if e.get("derived_from_data")]
    summary = {
        "command": "schema",
        "input": args.input,
        "output": args.output,
        "columns": report.columns,
        "to_fill": report.to_fill,
        "skipped": report.skipped,
        "data_derived": derived,
        "epsilon_spent": report.epsilon_spent,
        "nullable": [n for n, e in report.entries if e.get("nullable")],
        "dp_counts": report.dp_counts,
        "unreliable_bounds": report.unreliable,
    }
    if not (args.quiet or args.json):
        if not args.output:
            sys.stdout.write(text)
        for name, why in report.skipped.items():
            print(f"left out column {name!r}: {why}", file=sys.stderr)
        for name, why in report.to_fill.items():
            print(f"column {name!r} left to fill in (null): {why}", file=sys.stderr)
        for name, why in report.unreliable.items():
            print(
                f"WARNING: the bounds of column {name!r} are unreliable (need n x epsilon "
                "per quantile >= "
                f"{RELIABLE_N_EPSILON}): {why}",
                file=sys.stderr,
            )
        if derived:
            print(
                f"NOT PRIVATE: the bounds/categories of {derived} were read off the data "
                + (
                    "(with --estimate-bounds on a text file: their types, inferred from the "
                    "values) "
                    if eps is not None and inferred
                    else ""
                )
                + "(marked derived_from_data). Replace them with public knowledge and delete "
                "the marks, "
                f"or pass {DERIVED_FLAG} to synth"
                + ("" if eps is not None else ", or draft again with --estimate-bounds EPS"),
                file=sys.stderr,
            )
        if eps is not None:
            print(
                f"bounds estimated privately: epsilon {report.epsilon_spent} (per replaced "
                "record), recorded in the schema; "
                "no column is nullable unless --nullable names it (a missing value elsewhere "
                "is imputed)",
                file=sys.stderr,
            )
        if args.output:
            print(f"wrote {args.output}", file=sys.stderr)
    return summary


def _release_columns(
    schema: Any, header: list[str], path: str, what: str, chosen: list[str] | None
) -> list[str]:
    """The columns a table command releases: those of ``--columns`` (each in the schema), or else
    the file's header, which must then hold exactly the schema's columns (as the Python API's
    ``synthesize``/``select_candidates`` require).  Schema names and ``--columns`` names are
    public and named; a header field that is not in the schema is counted, never quoted (in a
    file without a header row, the header is the first record)."""
    expected = f"the schema's columns are {list(schema.names)}"
    if chosen:
        unknown = [c for c in chosen if c not in schema]
        if unknown:
            raise _fail(f"--columns {unknown} are not in the schema; {expected}")
        return list(chosen)
    why, shared = schema.header_mismatch(
        header, "header field(s)", "(a file without a header row?)"
    )
    if not why:
        return list(header)
    hint = (
        f"; pass --columns {','.join(shared)} to release the columns it shares with the schema"
        if shared
        else ""
    )
    raise _fail(
        f"the header of the {what} file {path!r} does not match the schema: "
        f"{'; '.join(why)}; {expected}{hint}"
    )


def _refuse_missing(table: Any, names: list[str], path: str) -> None:
    """``--bounds`` declares numeric columns, whose domain (as for an array in Python,
    ``array2_domain(nan=False)``) holds no missing value and no NaN: one is refused, naming the
    column and never a row or a value (docs/tables.rst, "Missing and non-finite values");
    ``+-inf`` is clamped to the box.  With ``--schema`` a missing value is imputed instead (or is
    a value of a nullable column)."""

    for name in names:
        col = table.column(name)
        nan = pa.types.is_floating(col.type) and bool(pc.any(pc.is_nan(col)).as_py())
        if col.null_count or nan:
            raise _fail(
                f"column {name!r} of input file {path!r} has missing or NaN values: with "
                "--bounds the "
                "columns are numbers (impute first, or use --schema, which imputes them or "
                "declares "
                "the column nullable)"
            )


def run_synth_table(args: argparse.Namespace) -> dict[str, Any]:

    if args.schema and args.bounds:
        raise _fail("give either --schema or --bounds, not both")
    columns = _columns(args.columns)
    schema = Schema.from_json(args.schema or args.bounds, columns=columns)
    used = columns if columns else None
    table = read_file(args.input, delimiter=args.delimiter, columns=used, schema=schema)
    names = _release_columns(schema, list(table.column_names), args.input, "input", columns)
    if not args.schema:
        _refuse_missing(table, names, args.input)
    derived = _check_derived(schema, names, args.accept_data_derived_schema)

    private_size = bool(getattr(args, "private_size", False))
    delta = getattr(args, "delta", None)
    share = getattr(args, "marginal_share", None)
    tree_flags = {
        "--epsilon-select": args.epsilon_select,
        "--split-order": args.split_order,
        "--consistency": args.consistency,
        "--score": args.score,
    }
    given = [k for k, v in tree_flags.items() if v is not None]
    if args.placement != "uniform":
        given.append("--placement")
    if private_size:
        given.append("--private-size")
    mechanism = args.mechanism or ("adaptive" if given or not args.schema else "structured")
    joint = getattr(args, "joint", None)
    if share is not None and mechanism != "structured":
        raise _fail("--marginal-share applies only to --mechanism structured")
    if joint is not None and mechanism != "structured":
        raise _fail("--joint applies only to --mechanism structured")
    if mechanism == "structured":
        if given:
            raise _fail(
                f"{', '.join(given)} apply to the one-tree mechanisms (--mechanism adaptive, "
                "pruned, "
                "pmm, privtree), not to --mechanism structured"
            )

        try:
            given_opts: dict[str, Any] = {} if share is None else {"marginal_share": share}
            options = StructuredOptions(**given_opts, **({} if joint is None else {"joint": joint}))
        except ValueError as e:
            raise _fail(f"--{str(e).replace('_', '-')}") from None
        kwargs: dict[str, Any] = {"structured": options, "delta": delta}
    else:
        kwargs = {
            "epsilon_select": args.epsilon_select,
            "placement": args.placement,
            "public_size": not private_size,
            "split_order": args.split_order,
            "consistency": args.consistency,
            "score": args.score,
            "delta": delta,
        }
    # the command's bar over reading, the release and writing (as for arrays); none with a
    # private size, whose timing follows n
    steps = progress(3, args.quiet or args.json or private_size, "synth")
    steps.update(1)
    with seeded(args.seed):
        try:
            out, report = synthesize(
                table,
                args.epsilon,
                schema=schema,
                columns=names,
                mechanism=mechanism,
                accept_data_derived_schema=bool(derived),  # checked above, by name
                progress=False,
                **kwargs,
            )
        except ValueError as e:  # an option refused by the release: named as the flag
            steps.close()
            raise _fail(_as_flags(str(e))) from None
    steps.update(1)
    delim = None
    if file_format(args.output) == "csv" and file_format(args.input) == "csv":
        delim = args.delimiter or detect_delimiter(args.input)
    write_file(out, args.output, delimiter=delim)
    steps.update(1)
    steps.close()
    summary = {
        "command": "synth",
        "input": args.input,
        "output": args.output,
        "rows_in": None if private_size else table.num_rows,  # nothing read off a private n
        "rows_out": report.size,
        "columns": names,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "epsilon_release": report.details["epsilon_release"],
        "epsilon_schema": report.details["epsilon_schema"],
        "depth": report.depth,
        "schedule": list(report.scales),
        "visited_nodes": report.visited_nodes,
        "data_derived_schema": derived,
        "split_order": report.details["split_order"],
        "delta_certified": report.delta,
        "quality": report.details.get("quality"),
        "details": {k: v for k, v in report.details.items() if k != "active_nodes"},
    }
    if not (args.quiet or args.json):
        print_table_summary(report, derived, unit(private_size))
        print(f"wrote {report.size} synthetic rows to {args.output}")
    return summary


def print_table_summary(report: SynthesisReport, derived: Sequence[str], unit_name: str) -> None:
    """Print the summary of a table release (``synth --schema``, in memory or on Dask): the
    certified budget, a warning for data-derived bounds, the joint release, its quality figure
    (no privacy cost) with the worst columns, and the warning naming the option to change when
    the quality is poor.  Every line reads the report, public after the release.

    :param report: the release's report
    :param derived: the columns whose bounds or categories were read off the data
    :param unit_name: the privacy unit, as :func:`~opendp_wasserstein.cli._common.unit` names it
    """
    details = report.details
    extra = (
        f" (release {details['epsilon_release']} + schema bounds {details['epsilon_schema']})"
        if details["epsilon_schema"]
        else ""
    )
    pair = (
        f"{report.epsilon}, delta {report.delta}"
        if report.delta is not None
        else f"{report.epsilon}"
    )
    print(f"certified epsilon ({unit_name}): {pair}{extra}")
    if derived:
        print(
            f"WARNING: bounds/categories of {derived} were read off the data; this "
            "release is not private with respect to them",
            file=sys.stderr,
        )
    if report.mechanism == "structured" and details.get("joint_kind") != "tree":
        # the pair tree, the network and independent columns grow no hierarchy: no depth,
        # noisy nodes or schedule to show
        print(f"mechanism structured: {details['split_order']}")
    else:
        print(
            f"mechanism {report.mechanism}: depth {report.depth}, {report.visited_nodes} "
            f"noisy nodes, split order {details['split_order']}"
        )
        print(f"schedule sigma_0..sigma_r: {', '.join(f'{s:.4g}' for s in report.scales)}")
    if details.get("quality") is not None:
        print(
            "quality (no privacy cost): the joint release's 1-way marginals are "
            f"{details['quality']:.3f} TVD from the DP marginals, mean over columns (0 is best; "
            f"worst: {', '.join(details['quality_worst'])})"
        )
    elif report.mechanism == "structured" and details.get("copula_pairs"):
        print(
            "quality: every column drawn from its DP marginal, the numeric columns joined by "
            "a Gaussian copula of noisy pair counts (n * epsilon too small for joint tables)"
        )
    elif report.mechanism == "structured":
        print(
            "quality: columns released independently from their DP marginals (n * "
            "epsilon too small for joint structure)"
        )
    if details.get("quality_poor"):
        print(f"WARNING: {details['quality_warning']}", file=sys.stderr)


def run_select_table(args: argparse.Namespace) -> dict[str, Any]:
    """``select --schema``: candidate rows (matched by column name) chosen under the table metric.

    The output holds the chosen candidate rows, in the candidate file's column order (the used
    columns), with a ``multiplicity`` column, in the format of its extension (CSV with the
    candidate file's delimiter, TSV or Parquet).
    """

    if args.m < 1:
        raise _fail("-m must be at least 1")
    if args.metric is not None:
        raise _fail("with --schema the metric is the table metric; --metric does not apply")
    columns = _columns(args.columns)
    schema = Schema.from_json(args.schema, columns=columns)
    data = read_file(args.data, delimiter=args.delimiter, columns=columns, schema=schema)
    names = _release_columns(schema, list(data.column_names), args.data, "data", columns)
    cand = read_file(args.candidates, delimiter=args.delimiter, columns=None, schema=schema)
    absent = [c for c in names if c not in cand.column_names]
    if absent:
        raise _fail(
            f"column(s) {absent} of the data are not in the candidates file; its columns are "
            f"{cand.column_names}"
        )
    extra = [c for c in cand.column_names if c not in names]
    if extra and not columns:
        raise _fail(
            f"the candidates file has column(s) {extra} that the data has not (use --columns "
            "to pick a subset)"
        )
    cand_order = [c for c in cand.column_names if c in names]
    cand = cand.select(cand_order)
    derived = _check_derived(schema, names, args.accept_data_derived_schema)

    tree_em_features(args)

    steps = progress(3, args.quiet or args.json or args.private_size, "select")
    steps.update(1)
    with seeded(args.seed):
        counts, report = select_candidates(
            data,
            cand,
            args.m,
            args.epsilon,
            mechanism=args.mechanism,
            schema=schema,
            columns=names,
            public_size=not args.private_size,
            accept_data_derived_schema=bool(derived),  # checked above
            progress=False,
        )
    steps.update(1)

    chosen = np.flatnonzero(counts)
    out = cand.take(pa.array(chosen)).append_column(
        "multiplicity", pa.array(counts[chosen], type=pa.int64())
    )
    delim = None
    if file_format(args.output) == "csv" and file_format(args.candidates) == "csv":
        delim = args.delimiter or detect_delimiter(args.candidates)
    write_file(out, args.output, delimiter=delim)
    steps.update(1)
    steps.close()
    summary = {
        "command": "select",
        "data": args.data,
        "candidates": args.candidates,
        "output": args.output,
        "columns": names,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "m": report.m,
        "k": report.k,
        "distinct_chosen": int(chosen.size),
        "data_derived_schema": derived,
    }
    if not (args.quiet or args.json):
        print(f"certified epsilon ({unit(args.private_size)}): {report.epsilon}")
        if derived:
            print(
                f"WARNING: bounds/categories of {derived} were read off the data; this "
                "release is not private with respect to them",
                file=sys.stderr,
            )
        print(
            f"mechanism {report.mechanism}: {report.m} points on {chosen.size} of {report.k} "
            "candidates (table metric)"
        )
        print(f"wrote {args.output}")
    return summary


def dumps(summary: dict[str, Any]) -> str:  # pragma: no cover - convenience
    return json.dumps(summary)
