"""``python -m opendp_wasserstein_cli``: the ``opendp-wasserstein`` program, started as the
console script starts it."""

import sys

from opendp_wasserstein_cli import console_main

if __name__ == "__main__":
    sys.exit(console_main())
