"""``python -m opendp_wasserstein``: the ``opendp-wasserstein`` program (after the package's
import; the console script answers ``--help`` and ``--version`` without it)."""

import sys

from opendp_wasserstein.cli import console_main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages) runs nothing
    sys.exit(console_main())
