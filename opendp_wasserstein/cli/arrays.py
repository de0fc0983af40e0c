"""``synth`` and ``select`` on numeric CSV files with ``--bounds`` (the array release)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from opendp_wasserstein.api import select_candidates, synthesize
from opendp_wasserstein.cli._common import (
    CliError,
    progress,
    read_bounds,
    read_numeric_csv,
    seeded,
    selection_summary,
    tree_em_features,
    unit,
    write_numeric,
)

__all__ = ["run_synth", "run_select"]


def run_synth(args: argparse.Namespace) -> dict[str, Any]:

    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    steps = progress(3, args.quiet or args.json, "synth")
    header, x = read_numeric_csv(
        args.input, columns, sensitive=True, private_size=args.private_size
    )
    steps.update(1)
    if args.bounds is None:
        raise CliError(
            "--bounds BOUNDS.json is required: bounds are public and never inferred from the data"
        )
    lower, upper = read_bounds(args.bounds, header, subset=bool(columns))
    with seeded(args.seed):
        y, report = synthesize(
            x,
            args.epsilon,
            {"lower": lower, "upper": upper},
            mechanism=args.mechanism,
            epsilon_select=args.epsilon_select,
            placement=args.placement,
            public_size=not args.private_size,
            delta=args.delta,
            consistency=args.consistency,
            score=args.score,
            progress=False,  # the command's own bar covers reading, the release and writing
        )
    steps.update(1)
    write_numeric(args.output, header, y)
    steps.update(1)
    steps.close()
    summary = {
        "command": "synth",
        "input": args.input,
        "output": args.output,
        "rows_in": None if args.private_size else int(x.shape[0]),
        "rows_out": report.size,
        "columns": header,
        "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon,
        "delta_certified": report.delta,
        "depth": report.depth,
        "schedule": list(report.scales),
        "visited_nodes": report.visited_nodes,
        "details": {k: v for k, v in report.details.items() if k != "active_nodes"},
    }
    if not (args.quiet or args.json):
        unit_name = unit(args.private_size)
        pair = (
            f"{report.epsilon}, delta {report.delta}"
            if report.delta is not None
            else f"{report.epsilon}"
        )
        print(f"certified epsilon (measurement map, {unit_name}): {pair}")
        extra = f", model dimension s = {report.details['s']}" if "s" in report.details else ""
        print(
            f"mechanism {report.mechanism}: depth {report.depth}{extra}, "
            f"{report.visited_nodes} noisy nodes"
        )
        print(f"schedule sigma_0..sigma_r: {', '.join(f'{s:.4g}' for s in report.scales)}")
        print(f"wrote {report.size} synthetic rows to {args.output}")
    return summary


def run_select(args: argparse.Namespace) -> dict[str, Any]:

    if args.m < 1:
        raise CliError("-m must be at least 1")
    steps = progress(3, args.quiet or args.json, "select")
    header, x = read_numeric_csv(
        args.data, None, "data", sensitive=True, private_size=args.private_size
    )
    c_header, c = read_numeric_csv(args.candidates, None, "candidates")
    if c_header != header:  # the candidates are public: their header is named, the data's is not
        unmatched = sum(h not in c_header for h in header)
        lacking = [h for h in c_header if h not in header]
        if unmatched:
            how = (
                f"{unmatched} of its {len(header)} header field(s) are not among them (a file "
                "without a header row?)"
            )
        elif lacking:
            how = f"it lacks {lacking}"
        else:
            how = "it has them in another order"
        raise CliError(
            f"the data file's header must be the candidates file's columns {c_header}: {how}"
        )
    steps.update(1)
    tree_em_features(args)
    with seeded(args.seed):
        counts, report = select_candidates(
            x,
            c,
            args.m,
            args.epsilon,
            mechanism=args.mechanism,
            metric=args.metric or "l2",
            public_size=not args.private_size,
            progress=False,  # the command's own bar covers reading, the release and writing
        )
    steps.update(1)
    chosen = np.flatnonzero(counts)
    write_numeric(args.output, header, c[chosen], counts[chosen])
    steps.update(1)
    steps.close()
    return selection_summary(args, report, chosen)
