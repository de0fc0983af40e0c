"""``python -m opendp_wasserstein.cli``: the ``opendp-wasserstein`` program."""

import sys

from opendp_wasserstein.cli import console_main

sys.exit(console_main())
