"""The ``opendp-wasserstein`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

#: the demo's W1: all points on a 2**bits grid per axis (``evaluation.w1_grid``; ~2 s at 30000 points)
DEMO_GRID_BITS = 8

__all__ = ["main", "console_main", "run_demo"]


class CliError(Exception):
    """An error reported as one line and exit code 2."""


def run_demo(
    n: int = 30000,
    epsilon: float = 1.0,
    out: str = "demo.png",
    seed: int | None = None,
    shape: str = "two_moons",
    quiet: bool = False,
    mechanism: str = "adaptive",
) -> dict[str, Any]:
    """Synthesise private data for an embedded 2-D shape and report eps, W1 and time.

    :param n: number of original points
    :param epsilon: the total privacy budget (one replacement)
    :param out: where to write the PNG of original vs synthetic (``""`` for none)
    :param seed: **not private**: reproducible data and release, for figures only
    :param shape: one of :data:`opendp_wasserstein.evaluation.SHAPES`
    :param mechanism: ``"adaptive"`` (default), ``"pruned"``, ``"pmm"`` or ``"privtree"``
    :return: a summary dict (also printed unless ``quiet``)
    """
    from opendp_wasserstein.api import synthesize
    from opendp_wasserstein.evaluation import sample_shape, w1_estimate, w1_grid

    x = sample_shape(shape, n, seed=seed)
    with _seeded(seed):
        y, report = synthesize(x, epsilon, bounds=(0.0, 1.0), mechanism=mechanism)
    bar = _progress(1, quiet, "W1 evaluation")  # most of the demo's time; a bar on a terminal only
    try:  # all points of both sets on a 256^2 grid: exact transport, a proven binning bound
        grid = w1_grid(x, y, bits=DEMO_GRID_BITS, bounds=(0.0, 1.0))
        bar.step(1, 1)
        w1_value, w1_note = grid.value, f"all points on a {2 ** DEMO_GRID_BITS}^2 grid, binning error <= {grid.error_bound:.5f}"
        floor, bound = 0.0, grid.error_bound
    except ImportError:  # without OR-Tools: subsamples, whose floor is reported with them
        est = w1_estimate(x, y, metric="linf", seed=0 if seed is None else seed, on_step=bar.step)
        w1_value, w1_note = est.value, f"subsampling floor {est.noise_floor:.5f}; pip install ortools for all points"
        floor, bound = est.noise_floor, None
    bar.close()
    summary = {
        "mechanism": mechanism,
        "shape": shape,
        "n": n,
        "epsilon_certified": report.epsilon,
        "depth": report.depth,
        "model_dimension": report.details.get("s"),
        "synthetic_size": report.size,
        "visited_nodes": report.visited_nodes,
        "w1_linf": w1_value,
        "w1_noise_floor": floor,
        "w1_error_bound": bound,
        "seconds": report.seconds,
        "png": out or None,
    }
    if out:
        _plot_pair(x, y, out, f"{shape}: original (n={n}) vs {mechanism} synthetic, eps={report.epsilon:g}")
    if not quiet:
        print(f"certified epsilon (meas.map, one replacement): {report.epsilon}")
        extra = f" (model dimension s = {report.details['s']})" if "s" in report.details else ""
        print(f"{mechanism}: depth {report.depth}{extra}, {report.visited_nodes} noisy nodes visited, {report.size} synthetic points")
        print(f"W1 (l_inf) to the original: {w1_value:.5f}  ({w1_note})")
        print(f"release time: {report.seconds:.3f} s")
        if out:
            print(f"wrote {out}")
    return summary


def _plot_pair(x: Any, y: Any, out: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5), sharex=True, sharey=True)
    for ax, pts, name in ((axes[0], x, "original"), (axes[1], y, "synthetic (private)")):
        k = min(len(pts), 20000)
        ax.scatter(pts[:k, 0], pts[:k, 1], s=1, alpha=0.4)
        ax.set_title(name)
        ax.set_aspect("equal")
    fig.suptitle(title)
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)


def read_numeric_csv(
    path: str, columns: Sequence[str] | None = None, name: str = "input", sensitive: bool = False,
    private_size: bool = False,
) -> tuple[list[str], Any]:
    """Read a CSV with a header row into (header, float array); errors name the column, not values.

    ``sensitive``: the file holds the private data, so only what is outside the release's input
    domain is refused (a missing or NaN value, a non-numeric cell); ``+-inf`` is read and then
    clamped to the box like any value outside it, and with ``private_size`` a file with no data
    rows is data too (the empty data set is a neighbour of every one-row data set).  Public
    files (candidates) must hold finite numbers and at least one row."""
    import csv

    import numpy as np

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
            raise CliError(f"column {col!r} of {name} file {path!r} has missing or NaN values (impute first, or use --schema)")
        if not sensitive and not np.all(np.isfinite(out[:, j])):
            raise CliError(f"column {col!r} of {name} file {path!r} has missing, NaN or infinite values")
    return wanted, out


def write_numeric(path: str, header: Sequence[str], values: Any, multiplicity: Any = None) -> None:
    """Write numeric rows (and an optional ``multiplicity`` column) to ``path`` in the format of
    its extension, atomically (:func:`~opendp_wasserstein.tables.io.write_file`)."""
    import pyarrow as pa

    from opendp_wasserstein.tables.io import write_file

    values = np.asarray(values, dtype=np.float64).reshape(-1, len(header))
    cols = {name: pa.array(values[:, j]) for j, name in enumerate(header)}
    if multiplicity is not None:
        cols["multiplicity"] = pa.array(np.asarray(multiplicity, dtype=np.int64))
    write_file(pa.table(cols), path)


OUTPUT_FLAG = "-o/--output"


def check_paths(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, an output that is one of the command's inputs (the same
    file, or a hard or symbolic link to it) or, for a table file, whose extension names no format
    the package writes.  Only paths and inodes are looked at, never the files' contents."""
    from opendp_wasserstein.tables.io import check_not_an_input, output_format

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


def read_bounds(path: str, columns: Sequence[str], subset: bool = False) -> tuple[list[float], list[float]]:
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
        raise CliError('bounds file must map each column name to [lower, upper], e.g. {"x": [0, 1]}')
    unbounded = [c for c in columns if c not in spec]
    if unbounded and subset:
        raise CliError(f"bounds file has no [lower, upper] for column(s) {unbounded} (bounds are public and never inferred from the data)")
    if unbounded:
        known = [c for c in columns if c in spec]
        raise CliError(
            f"the bounds file has no [lower, upper] for {len(unbounded)} of the input's {len(columns)} "
            "header field(s) (a file without a header row?); bounds are public and never inferred from "
            + (f"the data: add them, or pass --columns {','.join(known)}" if known else "the data: add them")
        )
    absent = [c for c in spec if c not in columns]
    if absent and not subset:
        raise CliError(f"bounds file column(s) {absent} are not in the input's header; pass --columns to release a subset")
    lower, upper = [], []
    for c in columns:
        b = spec[c]
        if not (isinstance(b, list) and len(b) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)):
            raise CliError(f"bounds for column {c!r} must be [lower, upper] numbers")
        lo, hi = float(b[0]), float(b[1])
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
            raise CliError(f"bounds for column {c!r} must be finite with lower < upper")
        lower.append(lo)
        upper.append(hi)
    return lower, upper


def _seeded(seed: int | None) -> Any:
    """``runtime.reproducible(seed)`` for ``--seed`` (NOT private), else no change."""
    from contextlib import nullcontext

    from opendp_wasserstein.runtime import reproducible

    return nullcontext() if seed is None else reproducible(seed)


def run_synth(args: argparse.Namespace) -> dict[str, Any]:
    from opendp_wasserstein.api import synthesize

    columns = [c.strip() for c in args.columns.split(",")] if args.columns else None
    steps = _progress(3, args.quiet or args.json, "synth")
    header, x = read_numeric_csv(args.input, columns, sensitive=True, private_size=args.private_size)
    steps.update(1)
    if args.bounds is None:
        raise CliError("--bounds BOUNDS.json is required: bounds are public and never inferred from the data")
    lower, upper = read_bounds(args.bounds, header, subset=bool(columns))
    with _seeded(args.seed):
        y, report = synthesize(
            x, args.epsilon, {"lower": lower, "upper": upper}, mechanism=args.mechanism,
            epsilon_select=args.epsilon_select, placement=args.placement,
            public_size=not args.private_size, delta=args.delta, consistency=args.consistency,
            score=args.score,
        )
    steps.update(1)
    write_numeric(args.output, header, y)
    steps.update(1)
    steps.close()
    summary = {
        "command": "synth", "input": args.input, "output": args.output,
        "rows_in": None if args.private_size else int(x.shape[0]),
        "rows_out": report.size, "columns": header, "mechanism": report.mechanism,
        "epsilon_certified": report.epsilon, "delta_certified": report.delta, "depth": report.depth,
        "schedule": list(report.scales), "visited_nodes": report.visited_nodes,
        "details": {k: v for k, v in report.details.items() if k != "active_nodes"},
    }
    if not (args.quiet or args.json):
        unit = _unit(args.private_size)
        pair = f"{report.epsilon}, delta {report.delta}" if report.delta is not None else f"{report.epsilon}"
        print(f"certified epsilon (measurement map, {unit}): {pair}")
        extra = f", model dimension s = {report.details['s']}" if "s" in report.details else ""
        print(f"mechanism {report.mechanism}: depth {report.depth}{extra}, {report.visited_nodes} noisy nodes")
        print(f"schedule sigma_0..sigma_r: {', '.join(f'{s:.4g}' for s in report.scales)}")
        print(f"wrote {report.size} synthetic rows to {args.output}")
    return summary


def run_select(args: argparse.Namespace) -> dict[str, Any]:

    from opendp_wasserstein.api import select_candidates

    if args.m < 1:
        raise CliError("-m must be at least 1")
    steps = _progress(3, args.quiet or args.json, "select")
    header, x = read_numeric_csv(args.data, None, "data", sensitive=True, private_size=args.private_size)
    c_header, c = read_numeric_csv(args.candidates, None, "candidates")
    if c_header != header:  # the candidates are public: their header is named, the data's is not
        unmatched = sum(h not in c_header for h in header)
        lacking = [h for h in c_header if h not in header]
        if unmatched:
            how = f"{unmatched} of its {len(header)} header field(s) are not among them (a file without a header row?)"
        elif lacking:
            how = f"it lacks {lacking}"
        else:
            how = "it has them in another order"
        raise CliError(f"the data file's header must be the candidates file's columns {c_header}: {how}")
    steps.update(1)
    _tree_em_features(args)
    with _seeded(args.seed):
        counts, report = select_candidates(
            x, c, args.m, args.epsilon, mechanism=args.mechanism, metric=args.metric or "l2",
            public_size=not args.private_size,
        )
    steps.update(1)
    chosen = np.flatnonzero(counts)
    write_numeric(args.output, header, c[chosen], counts[chosen])
    steps.update(1)
    steps.close()
    summary = {
        "command": "select", "data": args.data, "candidates": args.candidates, "output": args.output,
        "mechanism": report.mechanism, "epsilon_certified": report.epsilon, "m": report.m,
        "k": report.k, "distinct_chosen": int(chosen.size),
    }
    if not (args.quiet or args.json):
        print(f"certified epsilon (measurement map, {_unit(args.private_size)}): {report.epsilon}")
        print(f"mechanism {report.mechanism}: {report.m} points on {chosen.size} of {report.k} candidates")
        print(f"wrote {args.output}")
    return summary


def _unit(private_size: bool) -> str:
    """What ``epsilon`` is certified for: one replacement (public size) or one added or removed
    record (private size; a replacement then costs twice as much)."""
    return "one added or removed record" if private_size else "one replacement"


class _NoProgress:
    """Stands in for a progress bar where none is shown."""

    total: int | None = None

    def update(self, k: int = 1) -> None: ...

    def step(self, done: int, total: int) -> None: ...

    def close(self) -> None: ...


def _progress(total: int, quiet: bool, desc: str) -> Any:
    """A progress bar on standard error, shown only on a terminal and only if tqdm is installed.

    Nothing is shown when ``quiet``, when standard error is not a terminal (pipes, files, CI
    logs) or when tqdm (the ``progress`` extra) is missing.  The bar has ``update(k)``,
    ``step(done, total)`` (for steps whose count is known only as they run) and ``close()``.
    """
    stream = sys.stderr
    isatty = getattr(stream, "isatty", None)
    if quiet or not (callable(isatty) and isatty()):
        return _NoProgress()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoProgress()

    class _Bar(tqdm):  # type: ignore[misc,valid-type]
        def step(self, done: int, total: int) -> None:
            self.total = total
            self.update(done - self.n)

    return _Bar(total=total, desc=desc, file=stream, leave=False)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from opendp_wasserstein import __version__

    try:
        opendp_version = version("opendp")
    except PackageNotFoundError:  # pragma: no cover - opendp is a dependency
        opendp_version = "unknown"
    return f"%(prog)s {__version__} (opendp {opendp_version})"


_SEED_HELP = "NOT private: makes the output reproducible, for tests and figures only"


def _parser() -> argparse.ArgumentParser:
    from opendp_wasserstein.cli import dask as distributed_cli
    from opendp_wasserstein.evaluation.shapes import SHAPES

    p = argparse.ArgumentParser(prog="opendp-wasserstein", description=__doc__)
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="synthesise private two-moons data and plot it",
        description="Synthesise a private copy of an embedded 2-D shape, print the certified "
        "epsilon, the W1 distance to the original and the time, and plot both.",
    )
    demo.add_argument("--n", type=int, default=30000, help="number of original points (default %(default)s)")
    demo.add_argument("--epsilon", type=float, default=1.0, help="privacy budget per replaced record (default %(default)s)")
    demo.add_argument("--shape", choices=list(SHAPES), default="two_moons", metavar="SHAPE",
                      help=f"the embedded 2-D shape: {', '.join(SHAPES)} (default %(default)s)")
    demo.add_argument("--mechanism", choices=["adaptive", "pruned", "pmm", "privtree"], default="adaptive",
                      help="Adaptive Pruned-PMM, Pruned-PMM, full PMM or PrivTree (default %(default)s)")
    demo.add_argument("-o", "--out", default="demo.png", help="PNG path, '' for none (default %(default)s)")
    demo.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    demo.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    demo.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    syn = sub.add_parser(
        "synth", help="turn a table file into a private synthetic table file",
        description="Release a private synthetic copy of a table file.  Its public description is "
        "required: --bounds (numeric columns; rows outside the box are clamped) or --schema (any "
        "column types).",
    )
    syn.add_argument("input", help="input CSV/TSV/Parquet with a header; with --bounds numeric columns, with --schema any")
    syn.add_argument("-o", "--output", required=True, help="output CSV (written atomically)")
    syn.add_argument("--epsilon", type=float, required=True, help="total privacy budget per replaced record")
    source = syn.add_mutually_exclusive_group(required=True)  # shown as required in the usage
    source.add_argument("--bounds", metavar="BOUNDS.json",
                     help='JSON file mapping each column to [lower, upper], e.g. {"age": [0, 120]}; '
                     "public and never inferred from the data")
    from opendp_wasserstein.cli import tables as tables_cli

    tables_cli.add_synth_options(syn, source)  # --schema right after --bounds: one usage group
    syn.add_argument("--mechanism", choices=["structured", "adaptive", "pruned", "pmm", "privtree"], default=None,
                     help="with --schema: structured (the default with a public row count and pure DP: a DP "
                     "first look at every column, quantile encoding, chosen split orders, calibration) or one "
                     "tree over the table's hierarchy; Adaptive Pruned-PMM (the default otherwise), "
                     "Pruned-PMM, full PMM or PrivTree")
    syn.add_argument("--epsilon-select", type=float, default=None, help="adaptive: selection budget (default 20%% of epsilon)")
    syn.add_argument("--placement", choices=["uniform", "center"], default="uniform",
                     help="synthetic points uniform in their cell or at its centre (default %(default)s)")
    syn.add_argument(
        "--consistency", choices=["least_squares", "paper"], default=None,
        help="adaptive/pruned: how the noisy counts become leaf masses: least squares over every "
        "level with the suppression of empty cells (the default) or the paper's parent/children "
        "split; post-processing, no privacy cost",
    )
    syn.add_argument(
        "--score", choices=["capped", "paper"], default=None,
        help="adaptive: the selection's score: the capped-count estimate (the default, a sharp "
        "selection) or the paper's bound; the privacy cost is the same",
    )
    syn.add_argument("--delta", type=float, default=None,
                     help="release (epsilon, delta)-DP through the zCDP variant and OpenDP's conversion "
                     "(public row count; with --schema on the table's one hierarchy, --mechanism adaptive, "
                     "pruned or pmm; default: pure epsilon-DP)")
    syn.add_argument("--columns", help="comma-separated subset of columns (default all)")
    syn.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    syn.add_argument(
        "--private-size", action="store_true",
        help="treat the number of rows as private: epsilon is then per added/removed record and a "
        "share of it buys a DP row count (default: the row count is public)",
    )
    syn.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    syn.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    distributed_cli.add_options(syn)
    tables_cli.register(sub)
    sel = sub.add_parser(
        "select", help="privately choose m public candidates close in W1 to the data",
        description="Release a private size-m multiset of public candidates close in W1 to the "
        "sensitive data.",
    )
    sel.add_argument("data", help="sensitive data CSV (header row, numeric columns; with --schema CSV/TSV/Parquet, any columns)")
    sel.add_argument("candidates", help="public candidates file with the same columns")
    sel.add_argument("-m", type=int, required=True, help="the multiset size")
    sel.add_argument("--epsilon", type=float, required=True, help="total privacy budget per replaced record")
    sel.add_argument("--mechanism", choices=["projection", "tree-em", "nn"], default="projection",
                     help="hierarchical tree projection, Tree-EM or the nearest-neighbour histogram "
                     "(default %(default)s)")
    sel.add_argument("--metric", choices=["l2", "l1", "linf"], default=None, help="ground metric (default l2; with --schema the table metric)")
    sel.add_argument("--idealized-numerics", action="store_true",
                     help="allow tree-em's float64 sampler (OpenDP's 'idealized-numerics' feature)")
    sel.add_argument("-o", "--output", required=True, help="output file (CSV; with --schema CSV/TSV/Parquet): chosen candidates and multiplicities")
    sel.add_argument("--seed", type=int, default=None, help=_SEED_HELP)
    sel.add_argument(
        "--private-size", action="store_true",
        help="treat the number of rows as private (not with tree-em): epsilon is then per added/removed record",
    )
    sel.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    sel.add_argument("--quiet", action="store_true", help="print nothing and show no progress")
    tables_cli.add_select_options(sel)
    distributed_cli.add_options(sel)
    return p


def _tree_em_features(args: argparse.Namespace) -> None:
    """``select --mechanism tree-em`` samples in float64: it runs only with the explicit
    ``--idealized-numerics`` flag, and only where OpenDP's feature of that name is enabled (the
    program :func:`console_main` enables it when the flag is given; a Python caller of
    :func:`main` enables it itself)."""
    from opendp.mod import OpenDPException, assert_features

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


def console_main(argv: Sequence[str] | None = None) -> int:
    """The ``opendp-wasserstein`` program.  The program opts its own process into OpenDP's
    ``"contrib"`` feature, which the package's constructors require, and into
    ``"idealized-numerics"`` when the command line says ``--idealized-numerics``; a Python caller
    of :func:`main` enables them itself, as in any OpenDP program (the package never changes the
    caller's features)."""
    import opendp.prelude as dp

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
    import signal
    import threading

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
        import signal

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
            summary = run_demo(args.n, args.epsilon, args.out, args.seed, args.shape, args.quiet or args.json, args.mechanism)
        elif args.command == "synth":
            if not np.isfinite(args.epsilon) or args.epsilon <= 0:
                raise CliError("--epsilon must be finite and > 0")
            if args.delta is not None:
                if not (np.isfinite(args.delta) and 0 < args.delta < 1):
                    raise CliError("--delta must be in (0, 1)")
                if args.scheduler or args.private_size:
                    raise CliError("--delta needs a public row count; it is not supported with --scheduler or --private-size")
                if args.mechanism in ("structured", "privtree"):
                    raise CliError(f"--mechanism {args.mechanism} is pure DP only: leave --delta unset, or use "
                                   "--mechanism adaptive, pruned or pmm")
                if args.schema:
                    from opendp_wasserstein.cli.tables import run_synth_table

                    summary = run_synth_table(args)
                else:
                    summary = run_synth(args)
            elif args.scheduler:
                from opendp_wasserstein.cli.dask import run_synth as run_synth_dask

                summary = run_synth_dask(args)
            elif args.schema or args.bounds:
                from opendp_wasserstein.cli.tables import run_synth_table

                summary = run_synth_table(args)
            else:
                summary = run_synth(args)
        elif args.command == "schema":
            from opendp_wasserstein.cli.tables import run_schema

            summary = run_schema(args)
        elif args.command == "select":
            if not np.isfinite(args.epsilon) or args.epsilon <= 0:
                raise CliError("--epsilon must be finite and > 0")
            if args.scheduler:
                from opendp_wasserstein.cli.dask import run_select as run_select_dask

                summary = run_select_dask(args)
            elif args.schema:
                from opendp_wasserstein.cli.tables import run_select_table

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
        print(f"opendp-wasserstein: error: {lines[-1] if lines else type(e).__name__}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
