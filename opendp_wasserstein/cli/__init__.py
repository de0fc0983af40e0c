"""The ``opendp-wasserstein`` command line.

The parser is :func:`opendp_wasserstein_cli.parser.build_parser` (standard library only, so that
the console script, :mod:`opendp_wasserstein_cli`, answers ``--help`` and ``--version`` without
importing this package); :func:`main` runs a command, importing the module of its subcommand
(``arrays``, ``tables``, ``dask`` or ``demo``) only when that subcommand runs.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opendp_wasserstein.cli._common import CliError
from opendp_wasserstein.core import dp
from opendp_wasserstein.tables.io import check_not_an_input, output_format
from opendp_wasserstein_cli.parser import build_parser as _parser

__all__ = ["main", "console_main", "run_demo"]


def __getattr__(name: str) -> Any:
    """``run_demo``, imported on first use (the demo's module loads the evaluation tools)."""
    if name == "run_demo":
        from opendp_wasserstein.cli.demo import run_demo

        return run_demo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def _synth(args: argparse.Namespace) -> dict[str, Any]:
    """``synth``: in memory (arrays or tables) or on Dask, each path's module imported here."""
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise CliError("--epsilon must be finite and > 0")
    if args.delta is not None:
        if not (math.isfinite(args.delta) and 0 < args.delta < 1):
            raise CliError("--delta must be in (0, 1)")
        if (args.scheduler and not args.schema) or args.private_size:
            raise CliError(
                "--delta needs a public row count; it is not supported with --private-size, nor "
                "with --scheduler for arrays (--bounds; with --schema it is)"
            )
        if args.mechanism == "privtree" or (args.mechanism == "structured" and not args.schema):
            raise CliError(
                f"--mechanism {args.mechanism} is pure DP only: leave --delta unset, or use "
                "--mechanism adaptive, pruned or pmm"
            )
    if args.scheduler:  # --delta only with --schema (refused above)
        from opendp_wasserstein.cli.dask import run_synth as run_synth_dask

        return run_synth_dask(args)
    if args.schema or (args.bounds and args.delta is None):
        from opendp_wasserstein.cli.tables import run_synth_table

        return run_synth_table(args)
    from opendp_wasserstein.cli.arrays import run_synth

    return run_synth(args)


def _select(args: argparse.Namespace) -> dict[str, Any]:
    """``select``: numeric files, tables (``--schema``) or Dask (``--scheduler``)."""
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise CliError("--epsilon must be finite and > 0")
    if args.scheduler:
        from opendp_wasserstein.cli.dask import run_select as run_select_dask

        return run_select_dask(args)
    if args.schema:
        from opendp_wasserstein.cli.tables import run_select_table

        return run_select_table(args)
    if args.columns or args.delimiter:
        raise CliError("--columns and --delimiter apply to select only with --schema")
    from opendp_wasserstein.cli.arrays import run_select

    return run_select(args)


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
            from opendp_wasserstein.cli.demo import run_demo

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
            summary = _synth(args)
        elif args.command == "schema":
            from opendp_wasserstein.cli.tables import run_schema

            summary = run_schema(args)
        elif args.command == "select":
            summary = _select(args)
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
