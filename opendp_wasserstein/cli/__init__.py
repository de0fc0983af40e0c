"""The ``opendp-wasserstein`` command line."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from opendp_wasserstein._version import __version__
from opendp_wasserstein.cli import dask as distributed_cli
from opendp_wasserstein.cli import tables as tables_cli
from opendp_wasserstein.cli._common import SEED_HELP, CliError
from opendp_wasserstein.cli.arrays import run_select, run_synth
from opendp_wasserstein.cli.dask import run_select as run_select_dask
from opendp_wasserstein.cli.dask import run_synth as run_synth_dask
from opendp_wasserstein.cli.demo import run_demo
from opendp_wasserstein.cli.tables import run_schema, run_select_table, run_synth_table
from opendp_wasserstein.core import dp
from opendp_wasserstein.evaluation.shapes import SHAPES
from opendp_wasserstein.tables.io import check_not_an_input, output_format

__all__ = ["main", "console_main", "run_demo"]


OUTPUT_FLAG = "-o/--output"


def check_paths(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, an output that is one of the command's inputs (the same
    file, or a hard or symbolic link to it) or, for a table file, whose extension names no format
    the package writes.  Only paths and inodes are looked at, never the files' contents."""

    if args.command == "demo" or getattr(args, "output", None) is None:
        return
    inputs: dict[str, str | None] = {}
    if args.command in ("synth", "schema"):
        inputs["input"] = args.input
    else:
        inputs["data"], inputs["candidates file"] = args.data, args.candidates
    inputs["--schema file"] = getattr(args, "schema", None)
    inputs["--bounds file"] = getattr(args, "bounds", None)
    dask_dir = args.command == "synth" and getattr(args, "scheduler", None)
    try:
        if args.command != "schema" and not dask_dir:
            output_format(args.output, OUTPUT_FLAG)
        check_not_an_input(args.output, inputs, OUTPUT_FLAG)
    except ValueError as e:
        raise CliError(str(e)) from None


def _version() -> str:

    try:
        opendp_version = version("opendp")
    except PackageNotFoundError:  # pragma: no cover - opendp is a dependency
        opendp_version = "unknown"
    return f"%(prog)s {__version__} (opendp {opendp_version})"


def _parser() -> argparse.ArgumentParser:

    p = argparse.ArgumentParser(prog="opendp-wasserstein", description=__doc__)
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="synthesise private two-moons data and plot it",
        description="Synthesise a private copy of an embedded 2-D shape, print the certified "
        "epsilon, the W1 distance to the original and the time, and plot both.",
    )
    demo.add_argument(
        "--n", type=int, default=30000, help="number of original points (default %(default)s)"
    )
    demo.add_argument(
        "--epsilon",
        type=float,
        default=1.0,
        help="privacy budget per replaced record (default %(default)s)",
    )
    demo.add_argument(
        "--shape",
        choices=list(SHAPES),
        default="two_moons",
        metavar="SHAPE",
        help=f"the embedded 2-D shape: {', '.join(SHAPES)} (default %(default)s)",
    )
    demo.add_argument(
        "--mechanism",
        choices=["adaptive", "pruned", "pmm", "privtree"],
        default="adaptive",
        help="Adaptive Pruned-PMM, Pruned-PMM, full PMM or PrivTree (default %(default)s)",
    )
    demo.add_argument(
        "-o", "--out", default="demo.png", help="PNG path, '' for none (default %(default)s)"
    )
    demo.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    demo.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    demo.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    syn = sub.add_parser(
        "synth",
        help="turn a table file into a private synthetic table file",
        description="Release a private synthetic copy of a table file.  Its public description is "
        "required: --bounds (numeric columns; rows outside the box are clamped) or --schema (any "
        "column types).",
    )
    syn.add_argument(
        "input",
        help="input CSV/TSV/Parquet with a header; with --bounds numeric columns, with --schema "
        "any",
    )
    syn.add_argument("-o", "--output", required=True, help="output CSV (written atomically)")
    syn.add_argument(
        "--epsilon", type=float, required=True, help="total privacy budget per replaced record"
    )
    source = syn.add_mutually_exclusive_group(required=True)  # shown as required in the usage
    source.add_argument(
        "--bounds",
        metavar="BOUNDS.json",
        help='JSON file mapping each column to [lower, upper], e.g. {"age": [0, 120]}; '
        "public and never inferred from the data",
    )

    tables_cli.add_synth_options(syn, source)  # --schema right after --bounds: one usage group
    syn.add_argument(
        "--mechanism",
        choices=["structured", "adaptive", "pruned", "pmm", "privtree"],
        default=None,
        help="with --schema: structured (the default with a public row count and pure DP: a DP "
        "first look at every column, quantile encoding, chosen split orders, calibration) or one "
        "tree over the table's hierarchy; Adaptive Pruned-PMM (the default otherwise), "
        "Pruned-PMM, full PMM or PrivTree",
    )
    syn.add_argument(
        "--epsilon-select",
        type=float,
        default=None,
        help="adaptive: selection budget (default 20%% of epsilon)",
    )
    syn.add_argument(
        "--placement",
        choices=["uniform", "center"],
        default="uniform",
        help="synthetic points uniform in their cell or at its centre (default %(default)s)",
    )
    syn.add_argument(
        "--consistency",
        choices=["least_squares", "paper"],
        default=None,
        help="adaptive/pruned: how the noisy counts become leaf masses: least squares over every "
        "level with the suppression of empty cells (the default) or the paper's parent/children "
        "split; post-processing, no privacy cost",
    )
    syn.add_argument(
        "--score",
        choices=["capped", "paper"],
        default=None,
        help="adaptive: the selection's score: the capped-count estimate (the default, a sharp "
        "selection) or the paper's bound; the privacy cost is the same",
    )
    syn.add_argument(
        "--delta",
        type=float,
        default=None,
        help="release (epsilon, delta)-DP through the zCDP variant and OpenDP's conversion "
        "(public row count; with --schema on the table's one hierarchy, --mechanism adaptive, "
        "pruned or pmm; default: pure epsilon-DP)",
    )
    syn.add_argument("--columns", help="comma-separated subset of columns (default all)")
    syn.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    syn.add_argument(
        "--private-size",
        action="store_true",
        help="treat the number of rows as private: epsilon is then per added/removed record and a "
        "share of it buys a DP row count (default: the row count is public)",
    )
    syn.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    syn.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    distributed_cli.add_options(syn)
    tables_cli.register(sub)
    sel = sub.add_parser(
        "select",
        help="privately choose m public candidates close in W1 to the data",
        description="Release a private size-m multiset of public candidates close in W1 to the "
        "sensitive data.",
    )
    sel.add_argument(
        "data",
        help="sensitive data CSV (header row, numeric columns; with --schema CSV/TSV/Parquet, any "
        "columns)",
    )
    sel.add_argument("candidates", help="public candidates file with the same columns")
    sel.add_argument("-m", type=int, required=True, help="the multiset size")
    sel.add_argument(
        "--epsilon", type=float, required=True, help="total privacy budget per replaced record"
    )
    sel.add_argument(
        "--mechanism",
        choices=["projection", "tree-em", "nn"],
        default="projection",
        help="hierarchical tree projection, Tree-EM or the nearest-neighbour histogram "
        "(default %(default)s)",
    )
    sel.add_argument(
        "--metric",
        choices=["l2", "l1", "linf"],
        default=None,
        help="ground metric (default l2; with --schema the table metric)",
    )
    sel.add_argument(
        "--idealized-numerics",
        action="store_true",
        help="allow tree-em's float64 sampler (OpenDP's 'idealized-numerics' feature)",
    )
    sel.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file (CSV; with --schema CSV/TSV/Parquet): chosen candidates and "
        "multiplicities",
    )
    sel.add_argument("--seed", type=int, default=None, help=SEED_HELP)
    sel.add_argument(
        "--private-size",
        action="store_true",
        help="treat the number of rows as private (not with tree-em): epsilon is then per "
        "added/removed record",
    )
    sel.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    sel.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    tables_cli.add_select_options(sel)
    distributed_cli.add_options(sel)
    return p


def console_main(argv: Sequence[str] | None = None) -> int:
    """The ``opendp-wasserstein`` program.  The program opts its own process into OpenDP's
    ``"contrib"`` feature, which the package's constructors require, and into
    ``"idealized-numerics"`` when the command line says ``--idealized-numerics``; a Python caller
    of :func:`main` enables them itself, as in any OpenDP program (the package never changes the
    caller's features)."""

    args = list(sys.argv[1:] if argv is None else argv)
    dp.enable_features("contrib")
    if "--idealized-numerics" in args:
        dp.enable_features("idealized-numerics")
    return main(args)


class Terminated(BaseException):
    """Raised in the main thread by a ``SIGTERM`` or ``SIGHUP`` while :func:`main` runs, so that
    every temporary output is removed on the way out (like ``KeyboardInterrupt`` for Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_raise() -> Iterator[None]:
    """While the block runs, ``SIGTERM`` and ``SIGHUP`` raise :class:`Terminated` (where their
    handler is the default one: a signal the caller ignores, as under ``nohup``, stays ignored);
    the previous handlers are restored afterwards.  Only in the main thread, where Python runs
    signal handlers."""

    installed: dict[int, Any] = {}

    def raise_terminated(signum: int, frame: Any) -> None:
        raise Terminated(signum)

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                installed[sig] = signal.signal(sig, raise_terminated)
    try:
        yield
    finally:
        for sig, old in installed.items():
            signal.signal(sig, old)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv``; the exit status: 0 done, 1 an error inside a release, 2 a
    usage or input error, 130 interrupted (Ctrl-C), 128 + N terminated by signal N (``SIGTERM``:
    143).  Every error, interrupt included, is one line on standard error; an interrupted or
    terminated run removes its temporary output (an output is renamed into place only when
    complete)."""
    try:
        with _signals_raise():
            return _main(argv)
    except KeyboardInterrupt:
        print("opendp-wasserstein: interrupted", file=sys.stderr)
        return 130
    except Terminated as t:
        print(f"opendp-wasserstein: terminated by {signal.Signals(t.signum).name}", file=sys.stderr)
        return 128 + t.signum


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed by argparse
        return e.code if isinstance(e.code, int) else 2
    try:
        check_paths(args)
        if args.command == "demo":
            if args.n < 2:
                raise CliError("--n must be at least 2")
            if not args.epsilon > 0 or args.epsilon == float("inf"):
                raise CliError("--epsilon must be finite and > 0")
            summary = run_demo(
                args.n,
                args.epsilon,
                args.out,
                args.seed,
                args.shape,
                args.quiet or args.json,
                args.mechanism,
            )
        elif args.command == "synth":
            if not np.isfinite(args.epsilon) or args.epsilon <= 0:
                raise CliError("--epsilon must be finite and > 0")
            if args.delta is not None:
                if not (np.isfinite(args.delta) and 0 < args.delta < 1):
                    raise CliError("--delta must be in (0, 1)")
                if args.scheduler or args.private_size:
                    raise CliError(
                        "--delta needs a public row count; it is not supported with "
                        "--scheduler or --private-size"
                    )
                if args.mechanism in ("structured", "privtree"):
                    raise CliError(
                        f"--mechanism {args.mechanism} is pure DP only: leave --delta unset, "
                        "or use "
                        "--mechanism adaptive, pruned or pmm"
                    )
                if args.schema:
                    summary = run_synth_table(args)
                else:
                    summary = run_synth(args)
            elif args.scheduler:
                summary = run_synth_dask(args)
            elif args.schema or args.bounds:
                summary = run_synth_table(args)
            else:
                summary = run_synth(args)
        elif args.command == "schema":
            summary = run_schema(args)
        elif args.command == "select":
            if not np.isfinite(args.epsilon) or args.epsilon <= 0:
                raise CliError("--epsilon must be finite and > 0")
            if args.scheduler:
                summary = run_select_dask(args)
            elif args.schema:
                summary = run_select_table(args)
            else:
                if args.columns or args.delimiter:
                    raise CliError("--columns and --delimiter apply to select only with --schema")
                summary = run_select(args)
        if args.json:
            print(json.dumps(summary))
        return 0
    except (CliError, ValueError, TypeError, OSError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"opendp-wasserstein: error: {msg}", file=sys.stderr)
        return 2
    except Exception as e:  # an OpenDP error from inside a release: first line only
        lines = str(e).strip().splitlines()
        print(
            f"opendp-wasserstein: error: {lines[-1] if lines else type(e).__name__}",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
