"""The one module that uses OpenDP beyond its public API fails here, loudly, if OpenDP moves."""

import importlib
import inspect
import pkgutil

import opendp
import opendp.prelude as dp

import opendp_wasserstein
from opendp_wasserstein import _compat, measurements, tables, transformations


def test_private_opendp_names_still_exist_with_the_signatures_we_call():
    problems = _compat.check_private_api()
    assert problems == [], (
        f"OpenDP {opendp.__version__} changed private API this package relies on "
        f"(opendp_wasserstein/_compat.py): {problems}"
    )


def test_no_module_but_compat_imports_opendp_private_api():
    offenders = []
    for mod in pkgutil.walk_packages(opendp_wasserstein.__path__, "opendp_wasserstein."):
        if mod.name == "opendp_wasserstein._compat":
            continue
        source = inspect.getsource(importlib.import_module(mod.name))
        if (
            "opendp._internal" in source
            or "opendp.extras._utilities" in source
            or "opendp.context" in source
        ):
            offenders.append(mod.name)
    assert offenders == []


def test_every_constructor_is_registered_with_the_context_api():
    from opendp.context import constructors

    makes = [
        n for pkg in (measurements, transformations) for n in pkg.__all__ if n.startswith("make_")
    ]
    functions = {"make_tree_multiset"}  # a post-processing Function: the Context API takes none
    missing = [
        n for n in makes if n not in functions and n.removeprefix("make_") not in constructors
    ]
    assert missing == []


def test_registering_again_is_harmless_and_importing_changes_no_feature():
    before = {
        f for f in ("contrib", "honest-but-curious", "floating-point") if _compat.feature_enabled(f)
    }
    importlib.reload(importlib.import_module("opendp_wasserstein.measurements._pmm"))
    after = {
        f for f in ("contrib", "honest-but-curious", "floating-point") if _compat.feature_enabled(f)
    }
    assert before == after
    assert (
        dp.Context
    )  # the registered names resolve through dp.Context (doctest of make_pruned_pmm)


def test_importing_the_package_alone_registers_every_constructor():
    """``import opendp_wasserstein`` (nothing else) registers the constructors of every
    subpackage with the Context API (issue 20, item 12: they were unknown until
    ``.measurements``, ``.transformations`` and ``.tables`` were imported)."""
    import subprocess
    import sys

    names = sorted(
        n.removeprefix("make_")
        for pkg in (measurements, transformations, tables)
        for n in pkg.__all__
        if n.startswith("make_")
        and n not in ("make_tree_multiset", "make_table_decoding")  # Functions
    )
    code = (
        "import sys, opendp_wasserstein\n"
        "from opendp.context import constructors\n"
        f"missing = [n for n in {names!r} if n not in constructors]\n"
        "print(missing)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    assert "table_encoding" in names
    assert "pruned_pmm" in names
    assert "nearest_candidate" in names
