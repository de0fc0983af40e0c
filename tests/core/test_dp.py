"""``core.dp``: OpenDP's public API without ``opendp.prelude``."""

import subprocess
import sys

import opendp.prelude as prelude

from opendp_wasserstein.core import dp


def test_every_name_is_the_preludes_own_object():
    for name in dp.__all__:
        assert getattr(dp, name) is getattr(prelude, name), name


def test_importing_the_package_loads_neither_the_prelude_nor_scikit_learn():
    code = (
        "import sys, opendp_wasserstein; "
        "print(sorted(m for m in ('opendp.prelude', 'sklearn', 'opendp.extras.sklearn') if m "
        "in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.strip() == "[]"
