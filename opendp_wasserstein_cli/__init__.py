"""The launcher of the ``opendp-wasserstein`` program (the console script's entry point).

It ships in the ``opendp-wasserstein`` distribution beside :mod:`opendp_wasserstein` and stands
outside it on purpose: importing anything inside the package runs the package's ``__init__``,
which imports and registers every constructor with OpenDP's Context API (numpy, scipy, pandas,
OpenDP; about a second).  :func:`console_main` parses the command line with the
standard-library parser of :mod:`opendp_wasserstein_cli.parser`, so ``--help``, ``--version`` and
a usage error are answered without that import; any other command is handed to
:func:`opendp_wasserstein.cli.console_main`, which imports what the subcommand needs.

Before that import, :func:`defer_sklearn_extra` makes OpenDP's ``opendp.extras.sklearn`` a lazy
module (the standard library's documented :class:`importlib.util.LazyLoader`): ``opendp.prelude``,
which OpenDP's own ``array2_domain`` imports, imports that extra, and the extra imports
scikit-learn whenever it is installed (about 60% of a small ``synth``'s start-up, measured with
``python -X importtime``); no command of the program uses it, and an attribute access still loads
it in full.  The program only: importing :mod:`opendp_wasserstein` as a library changes nothing.

The command line's code and its Python API (:func:`opendp_wasserstein.cli.main`) are in
:mod:`opendp_wasserstein.cli`; this module holds no behaviour of its own beyond the early exit.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

from opendp_wasserstein_cli.parser import build_parser

__all__ = ["console_main", "defer_sklearn_extra"]

#: OpenDP's extra that ``opendp.prelude`` imports and the program never uses
SKLEARN_EXTRA = "opendp.extras.sklearn"


def defer_sklearn_extra() -> bool:
    """Make :data:`SKLEARN_EXTRA` a lazy module (loaded on its first attribute access), unless it
    is already imported or cannot be found; whether it was deferred."""
    if SKLEARN_EXTRA in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec(SKLEARN_EXTRA)
    except ImportError:  # pragma: no cover - OpenDP without its extras
        return False
    if spec is None or spec.loader is None:  # pragma: no cover
        return False
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[SKLEARN_EXTRA] = module
    spec.loader.exec_module(module)
    # bound on its package too, so `from opendp.extras import sklearn` takes it as it is (an
    # import of a name only in sys.modules reads the module's __spec__, which would load it)
    parent, _, child = SKLEARN_EXTRA.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return True


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
    defer_sklearn_extra()
    try:  # the package's import: every constructor registered with OpenDP
        from opendp_wasserstein.cli import console_main as run
    except KeyboardInterrupt:
        print("opendp-wasserstein: interrupted", file=sys.stderr)
        return 130
    return run(args)
