"""``python -m opendp_wasserstein.cli``: the ``opendp-wasserstein`` program."""

import sys

from opendp_wasserstein.cli import console_main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages) runs nothing
    sys.exit(console_main())
