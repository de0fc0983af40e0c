"""The ``opendp-wasserstein`` command line's argument parser, built from the standard library only.

Every help text is a plain string and every choice a literal, so building the parser (and
answering ``--help`` or ``--version``) imports neither numpy nor OpenDP nor the package
:mod:`opendp_wasserstein` (whose import registers every constructor with OpenDP and takes about
a second).  ``tests/cli/test_startup.py`` checks the literals against the package (the demo's
shapes, the version) and that ``--help`` and ``--version`` import none of those modules.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

__all__ = [
    "build_parser",
    "add_schema_command",
    "add_synth_table_options",
    "add_select_table_options",
    "add_distributed_options",
    "package_version",
    "SEED_HELP",
    "DERIVED_FLAG",
    "SHAPE_NAMES",
    "DESCRIPTION",
]

_VERSION_LINE = re.compile(r"""^__version__ = ["']([^"']+)["']$""", re.MULTILINE)

DESCRIPTION = "The ``opendp-wasserstein`` command line."

SEED_HELP = "NOT private: makes the output reproducible, for tests and figures only"

DERIVED_FLAG = "--accept-data-derived-schema"

#: the keys of :data:`opendp_wasserstein.evaluation.shapes.SHAPES`, in order (a test checks it)
SHAPE_NAMES = (
    "two_moons",
    "spiral",
    "annulus",
    "s_curve",
    "pinwheel",
    "figure_eight",
    "four_blobs",
    "checkerboard",
    "cross",
)


def package_version() -> str:
    """``opendp_wasserstein.__version__``, read from ``opendp_wasserstein/_version.py`` without
    importing the package (``importlib.util.find_spec`` locates a top-level package without
    running its ``__init__``); the installed distribution's metadata where that file cannot be
    read."""

    spec = importlib.util.find_spec("opendp_wasserstein")
    if spec is not None and spec.origin:
        try:
            with open(os.path.join(os.path.dirname(spec.origin), "_version.py")) as f:
                found = _VERSION_LINE.search(f.read())
        except OSError:  # pragma: no cover - a zipped install
            found = None
        if found:
            return found.group(1)
    return _distribution_version("opendp-wasserstein")  # pragma: no cover


def _distribution_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version  # only for --version

    try:
        return version(name)
    except PackageNotFoundError:  # pragma: no cover - opendp is a dependency
        return "unknown"


def _version_text(prog: str) -> str:
    return f"{prog} {package_version()} (opendp {_distribution_version('opendp')})"


class _Version(argparse.Action):
    """``--version``: like argparse's ``version`` action, with the text found only when asked
    (the installed distributions are looked up then, not each time the parser is built)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(_version_text(parser.prog), file=sys.stdout)
        parser.exit()


def add_schema_command(sub: Any) -> None:
    """Add the ``schema`` subcommand (carried out by :mod:`opendp_wasserstein.cli.tables`)."""
    sc = sub.add_parser(
        "schema", help="draft a schema (types, bounds, categories) from a table file"
    )
    sc.add_argument("input", help="CSV (delimiter detected), TSV or Parquet file with a header")
    sc.add_argument(
        "-o", "--output", default=None, help="write the schema JSON here (default: print it)"
    )
    sc.add_argument("--columns", help="comma-separated subset of columns (default all)")
    sc.add_argument(
        "--delimiter", default=None, help="force the delimiter of a text file (e.g. ';' or '\\t')"
    )
    sc.add_argument(
        "--max-categories",
        type=int,
        default=50,
        help="a text column with more distinct values (an identifier?) is drafted with its "
        "categories left null, to fill in with a public list (default 50); no column is ever "
        "left out for its values",
    )
    sc.add_argument(
        "--estimate-bounds",
        type=float,
        default=None,
        metavar="EPS",
        help="find numeric and datetime bounds with OpenDP's private quantile at this total "
        "epsilon (recorded in the schema and added to the epsilon of any release that uses it; a "
        "DP count of each column's values, bought with a tenth of its share, says whether the "
        "estimate is reliable)",
    )
    sc.add_argument(
        "--nullable",
        default=None,
        metavar="COLUMNS",
        help="comma-separated columns to declare nullable (a public choice); with "
        "--estimate-bounds no other column is nullable, without it also those that hold missing "
        "values",
    )
    sc.add_argument("--json", action="store_true", help="print a machine-readable JSON summary")
    sc.add_argument("--quiet", action="store_true", help="print nothing but errors")


def add_synth_table_options(syn: Any, source: Any = None) -> None:
    """Add the table options of ``synth``; ``--schema`` goes into ``source`` (the required
    either-``--bounds``-or-``--schema`` group) when given."""
    (syn if source is None else source).add_argument(
        "--schema",
        metavar="SCHEMA.json",
        help="schema JSON (see the 'schema' command); mixed column types, nulls",
    )
    syn.add_argument(
        "--delimiter",
        default=None,
        help="force the input's delimiter (default: detected; output uses the same)",
    )
    syn.add_argument(
        "--split-order",
        choices=["discrete-first", "cyclic"],
        default=None,
        help="the order in which the hierarchy splits the columns: discrete-first (default: "
        "is-missing, categorical and bool columns first, then numeric ones cyclically; the cell "
        "diameter falls fastest) or cyclic (one column after the other); public, no privacy cost",
    )
    syn.add_argument(
        "--marginal-share",
        type=float,
        default=None,
        help="structured: the share of epsilon for the DP first look at every column (default: "
        "0.9 before the copula, 0.8 below n * epsilon / columns = 400 where another joint "
        "release runs there, 0.6 at 400, "
        "falling to 0.4 from 1600); a larger share gives "
        "better 1-way marginals, a smaller one more joint structure",
    )
    syn.add_argument(
        "--joint",
        choices=["auto", "pairs", "network", "copula", "tree", "never"],
        default=None,
        help="structured: the joint release after the first look: auto (default: the tree of noisy "
        "2-way marginals, pairs, or the network, when n * epsilon / columns >= 400, with --delta "
        "the network from 180 and the copula from 100, without it the copula from 100, else "
        "never), pairs (a tree of "
        "noisy 2-way marginals chosen by the exponential mechanism), network (a degree-2 network "
        "of noisy 2- and 3-way tables), copula (a Gaussian copula of the numeric "
        "columns from one noisy count per pair, the first look at 90%% of epsilon), tree (the "
        "joint hierarchy) "
        "or never (columns released independently, the whole budget on the first look); public, "
        "no privacy cost",
    )
    syn.add_argument(
        DERIVED_FLAG,
        action="store_true",
        help="release even though the schema still has bounds or categories read off the data "
        "(derived_from_data: true); those are NOT private",
    )


def add_select_table_options(sel: Any) -> None:
    """Add the table options of ``select``."""
    sel.add_argument(
        "--schema",
        help="schema JSON: data and candidates are then tables of any column types, "
        "matched by column name, and the nearest candidate is taken under the table metric",
    )
    sel.add_argument(
        "--columns", help="with --schema: comma-separated subset of columns of both files"
    )
    sel.add_argument(
        "--delimiter", default=None, help="force the delimiter of text inputs (default: detected)"
    )
    sel.add_argument(
        DERIVED_FLAG,
        action="store_true",
        help="release even though the schema still has bounds or categories read off the data",
    )


def add_distributed_options(parser: argparse.ArgumentParser) -> None:
    """The distributed options of a command (carried out by :mod:`opendp_wasserstein.cli.dask`)."""
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on Dask: 'local:N' (N local worker processes) or a scheduler address such as "
        "tcp://host:8786; the input is then a Parquet file or directory (read by the workers) "
        "and, for synth, -o names the output directory of Parquet parts",
    )
    parser.add_argument(
        "--parts",
        type=int,
        default=None,
        help="with --scheduler: output parts (default: one per 2^20 rows, at least two per "
        "worker, at most one per input block; with --private-size a public number: one per 2^22 "
        "rows of the DP count, or max(16, 2 x workers))",
    )
    parser.add_argument(
        "--memory-limit",
        default=None,
        metavar="BYTES",
        help="with --scheduler local:N: memory limit per worker, e.g. 4GB",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand (``demo``, ``synth``, ``schema``, ``select``)."""

    p = argparse.ArgumentParser(prog="opendp-wasserstein", description=DESCRIPTION)
    p.add_argument("--version", action=_Version, help="show program's version number and exit")
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
        choices=list(SHAPE_NAMES),
        default="two_moons",
        metavar="SHAPE",
        help=f"the embedded 2-D shape: {', '.join(SHAPE_NAMES)} (default %(default)s)",
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

    add_synth_table_options(syn, source)  # --schema right after --bounds: one usage group
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
        "(public row count; with --schema the structured release with discrete Gaussian noise, "
        "or --mechanism adaptive, pruned or pmm on the table's one hierarchy; default: pure "
        "epsilon-DP)",
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
    add_distributed_options(syn)
    add_schema_command(sub)
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
    add_select_table_options(sel)
    add_distributed_options(sel)
    return p
