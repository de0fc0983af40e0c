"""The launcher of the ``opendp-wasserstein`` program (the console script's entry point).

It ships in the ``opendp-wasserstein`` distribution beside :mod:`opendp_wasserstein` and stands
outside it on purpose: importing anything inside the package runs the package's ``__init__``,
which imports and registers every constructor with OpenDP's Context API (numpy, scipy, pandas,
OpenDP; about a second).  :func:`console_main` parses the command line with the
standard-library parser of :mod:`opendp_wasserstein_cli.parser`, so ``--help``, ``--version`` and
a usage error are answered without that import; any other command is handed to
:func:`opendp_wasserstein.cli.console_main`, which imports what the subcommand needs.

The command line's code and its Python API (:func:`opendp_wasserstein.cli.main`) are in
:mod:`opendp_wasserstein.cli`; this module holds no behaviour of its own beyond the early exit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from opendp_wasserstein_cli.parser import build_parser

__all__ = ["console_main"]


def console_main(argv: Sequence[str] | None = None) -> int:
    """The ``opendp-wasserstein`` program: the exit status of
    :func:`opendp_wasserstein.cli.console_main` on ``argv`` (default ``sys.argv[1:]``), or of
    argparse where the parser itself ends the run (``--help`` and ``--version``: 0, a usage error:
    2, as :func:`opendp_wasserstein.cli.main` returns them)."""

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        build_parser().parse_args(args)
    except SystemExit as e:  # --help, --version, or a usage error already printed by argparse
        return e.code if isinstance(e.code, int) else 2
    try:  # the package's import: every constructor registered with OpenDP
        from opendp_wasserstein.cli import console_main as run
    except KeyboardInterrupt:
        print("opendp-wasserstein: interrupted", file=sys.stderr)
        return 130
    return run(args)
