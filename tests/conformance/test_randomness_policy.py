"""The randomness policy of the package.

The releases come from the registry (``tests/conformance/registry.py``: every constructor's pipeline
and its variants) and its table of randomised API functions, so a new mechanism is covered by its
entry.

(a) no code under ``opendp_wasserstein/`` uses numpy's global random state or the ``random``
    module (``np.random.default_rng`` only in ``evaluation/``, which makes public test data);
(b) every release runs with numpy's global-state functions and ``random`` replaced by
    functions that raise, secure and reproducible alike;
(c) the default is secure: releases differ, and the package's bits come from ``os.urandom``;
(d) inside ``runtime.reproducible(seed)`` a release is reproduced exactly, for every entry whose
    randomness is the package's, and different seeds give different releases; the releases
    drawing from OpenDP's CSPRNG are the documented exceptions;
(e) no constructor takes ``seed``, ``backend`` or ``diagnostics`` (they are run-time options of
    :mod:`opendp_wasserstein.runtime`), and the docs of every way to seed a release say that it
    is not private.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import json
import os
import pathlib
import random
import re
import sys

import numpy as np
import pytest

import opendp_wasserstein
from opendp_wasserstein import runtime
from opendp_wasserstein.cli import main
from opendp_wasserstein.noise._source import RandomSource, as_random_source
from tests.conformance import registry

PACKAGE = pathlib.Path(opendp_wasserstein.__file__).parent
ALLOWED_NP_RANDOM = {"Generator", "PCG64", "SeedSequence"}
EVALUATION_ONLY = {"default_rng"}

#: reviewed exceptions to (a): (file relative to the package, numpy.random attribute) -> reason
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


# ---------------------------------------------------------------------------------------------
# (a) static scan


def _scan(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, what)`` for every use of numpy's random module outside the allowed names, and
    every use of the ``random`` standard module, in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    numpy_names, np_random_names, found = set(), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "random" or a.name.startswith("random."):
                    found.append((node.lineno, "import random"))
                elif a.name == "numpy":
                    numpy_names.add(a.asname or "numpy")
                elif a.name == "numpy.random":
                    if a.asname:
                        np_random_names.add(a.asname)
                    else:
                        numpy_names.add("numpy")
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if mod == "random" or mod.startswith("random."):
                found.append((node.lineno, f"from {mod} import ..."))
            elif mod == "numpy":
                for a in node.names:
                    if a.name == "random":
                        np_random_names.add(a.asname or "random")
            elif mod == "numpy.random":
                for a in node.names:
                    if a.name not in ALLOWED_NP_RANDOM:
                        found.append((node.lineno, a.name))
    for node in ast.walk(tree):
        attr = None
        if isinstance(node, ast.Attribute):
            v = node.value
            if (
                isinstance(v, ast.Attribute)
                and v.attr == "random"
                and isinstance(v.value, ast.Name)
                and v.value.id in numpy_names
            ):
                attr = node.attr
            elif isinstance(v, ast.Name) and v.id in np_random_names:
                attr = node.attr
        if attr is not None and attr not in ALLOWED_NP_RANDOM:
            found.append((node.lineno, attr))
    # ``np.random`` used as a value (passed around, aliased) is a use of the global module too
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "random"
            and isinstance(node.value, ast.Name)
            and node.value.id in numpy_names
            and not isinstance(parents.get(node), ast.Attribute)
        ):
            found.append((node.lineno, "np.random (the module itself)"))
    return sorted(set(found))


def package_random_uses() -> dict[tuple[str, str], list[int]]:
    uses: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, what in _scan(path):
            if rel.startswith("evaluation/") and what in EVALUATION_ONLY:
                continue
            uses.setdefault((rel, what), []).append(line)
    return uses


def test_scanner_finds_what_it_should(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import numpy as np\nimport numpy\nimport random\nfrom numpy.random import "
        "default_rng, PCG64\n"
        "from numpy import random as npr\nimport numpy.random as nr\n"
        "a = np.random.rand(3)\nb = numpy.random.laplace()\nc = npr.choice([1])\nd = nr.seed(0)\n"
        "e = np.random.Generator(np.random.PCG64(np.random.SeedSequence(1)))\nf = np.random\n"
        "g = np.random.default_rng(0)\n"
    )
    what = {w for _, w in _scan(src)}
    assert what == {
        "import random",
        "default_rng",
        "rand",
        "laplace",
        "choice",
        "seed",
        "np.random (the module itself)",
    }


def test_no_global_random_state_in_the_package():
    assert len(list(PACKAGE.rglob("*.py"))) > 20  # the scan looks at the package
    uses = package_random_uses()
    unexpected = {k: v for k, v in uses.items() if k not in KNOWN_EXCEPTIONS}
    assert not unexpected, (
        f"numpy global random state / stdlib random used in the package: {unexpected}"
    )


def test_seeded_path_uses_only_generator_pcg64_seedsequence():
    rng = RandomSource(5)
    assert isinstance(rng._gen, np.random.Generator)
    assert isinstance(rng._gen.bit_generator, np.random.PCG64)


# ---------------------------------------------------------------------------------------------
# (b) global-state functions replaced by functions that raise

GLOBAL_NUMPY = [
    "random",
    "rand",
    "randn",
    "randint",
    "random_integers",
    "random_sample",
    "ranf",
    "sample",
    "choice",
    "bytes",
    "laplace",
    "geometric",
    "uniform",
    "normal",
    "standard_normal",
    "exponential",
    "gumbel",
    "binomial",
    "poisson",
    "shuffle",
    "permutation",
    "seed",
    "get_state",
    "set_state",
    "RandomState",
    "default_rng",
]
GLOBAL_STDLIB = [
    "random",
    "randint",
    "randrange",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "uniform",
    "gauss",
    "getrandbits",
    "seed",
    "randbytes",
    "SystemRandom",
]


def _forbid(monkeypatch):
    calls: list[str] = []
    for name in GLOBAL_NUMPY:
        if not hasattr(np.random, name):
            continue
        original = getattr(np.random, name)

        def raiser(*args, _name=name, _orig=original, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            # default_rng is allowed for public test data: evaluation/ and the tests themselves
            if _name == "default_rng" and (
                caller.startswith("opendp_wasserstein.evaluation") or caller.startswith("tests")
            ):
                return _orig(*args, **kwargs)
            calls.append(f"numpy.random.{_name} from {caller}")
            raise AssertionError(f"numpy.random.{_name} called from {caller}")

        monkeypatch.setattr(np.random, name, raiser)
    for name in GLOBAL_STDLIB:
        if hasattr(random, name):

            def stdlib_raiser(*args, _name=name, **kwargs):
                calls.append(f"random.{_name}")
                raise AssertionError(f"random.{_name} called")

            monkeypatch.setattr(random, name, stdlib_raiser)
    return calls


X = registry.rows(None)
X60 = np.random.default_rng(4).uniform(size=(60, 2))


#: every release of every randomised entry, and the randomised API functions:
#: label -> (release thunk, reproducible inside runtime.reproducible, reads os.urandom by default)
def _all_releases() -> dict[str, tuple]:
    out = {}
    for rel in registry.releases(randomised=True):
        out[rel.label] = (rel, rel.entry.seedable, rel.entry.randomness == "package")
    for label, (thunk, seedable) in registry.API_RELEASES.items():
        out[label] = (thunk, seedable, not label.endswith("[nn]"))
    return out


RELEASES = _all_releases()
SEEDABLE = [k for k, (_, s, _) in RELEASES.items() if s]
NOT_SEEDABLE = [k for k, (_, s, _) in RELEASES.items() if not s]
URANDOM = [k for k, (_, _, u) in RELEASES.items() if u]


def _release(label):
    thunk = RELEASES[label][0]
    return thunk()


def test_the_release_table_covers_the_registry():
    randomised = {e.short for e in registry.ENTRIES if e.randomness != "none"}
    assert randomised <= {label.split("[")[0] for label in RELEASES}
    # the documented exceptions to (d): OpenDP's CSPRNG
    assert set(NOT_SEEDABLE) == {
        "exponential_selection",
        "exponential_selection[permute_and_flip]",
        "nn_histogram",
        "nn_histogram[unsized]",
        "nn_histogram[zcdp]",
        "select_candidates[nn]",
    }
    assert {"synthesize[adaptive, private size]", "noisy_size_then[unsized]"} <= set(SEEDABLE)


@pytest.mark.parametrize("reproducible", [False, True], ids=["secure", "reproducible"])
def test_every_release_runs_without_global_random_state(monkeypatch, reproducible):
    calls = _forbid(monkeypatch)
    with pytest.raises(AssertionError):
        np.random.rand(2)  # noqa: NPY002 - the patch is active
    calls.clear()
    for label in RELEASES:
        if reproducible and label not in SEEDABLE:
            continue
        with runtime.reproducible(7) if reproducible else contextlib.nullcontext():
            out = _release(label)
        assert out is not None, label
    assert calls == []


def test_cli_runs_without_global_random_state(monkeypatch, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{u},{v}\n" for u, v in X60))
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    calls = _forbid(monkeypatch)
    for seed in ([], ["--seed", "3"]):
        assert (
            main(
                [
                    "synth",
                    str(src),
                    "-o",
                    str(tmp_path / "o.csv"),
                    "--bounds",
                    str(bounds),
                    "--epsilon",
                    "1",
                    "--quiet",
                    *seed,
                ]
            )
            == 0
        )
    assert calls == []


# ---------------------------------------------------------------------------------------------
# (c) secure by default


def _same(a, b) -> bool:
    if hasattr(
        a, "__dataclass_fields__"
    ):  # NoisyTree, LeafMasses, NoisyTreeCounts: compare the arrays
        return repr(a) == repr(b)
    try:
        return np.array_equal(np.asarray(a), np.asarray(b))
    except ValueError:  # pragma: no cover - ragged
        return repr(a) == repr(b)


#: draws until two releases differ: for every release here the most likely output has
#: probability below 0.6, so 30 equal draws happen with probability below 0.6^29 < 1e-6
MAX_DRAWS = 30


@pytest.mark.parametrize("label", list(RELEASES))
def test_secure_releases_differ(label):
    first = _release(label)
    for _ in range(MAX_DRAWS - 1):
        if not _same(first, _release(label)):
            return
    pytest.fail(f"{label}: {MAX_DRAWS} secure releases were all equal")


def test_random_source_reads_os_urandom(monkeypatch):
    calls = []
    real = os.urandom

    def counting(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    rng = RandomSource()
    assert rng.secure
    assert as_random_source(None).secure
    rng.uint64(5)
    assert calls == [40]
    rng.uniform(3), rng.bits(2), rng.integers(7, size=4), rng.permutation(6)
    assert len(calls) >= 5
    # a derived stream of a secure source is secure
    n = len(calls)
    rng.derive(3).uint64(1)
    assert len(calls) == n + 1
    # a seeded source never reads it
    n = len(calls)
    RandomSource(1).uint64(100), RandomSource(1).derive(2).uniform(10)
    assert len(calls) == n
    # inside runtime.reproducible the default source is seeded; outside it is secure again
    with runtime.reproducible(3):
        assert not as_random_source().secure
        assert as_random_source().seed == 3
    assert as_random_source().secure


@pytest.mark.parametrize("label", URANDOM)
def test_default_releases_read_os_urandom_and_reproducible_ones_do_not(monkeypatch, label):
    calls = []
    real = os.urandom
    monkeypatch.setattr(os, "urandom", lambda n: calls.append(n) or real(n))
    _release(label)
    assert calls, f"{label}: no os.urandom read on a default (secure) release"
    calls.clear()
    with runtime.reproducible(0):
        _release(label)
    assert not calls, f"{label}: a release inside runtime.reproducible read os.urandom"


# ---------------------------------------------------------------------------------------------
# (d) runtime.reproducible reproduces releases


@pytest.mark.parametrize("label", SEEDABLE)
def test_reproducible_reproduces_and_different_seeds_differ(label):
    with runtime.reproducible(0):
        a = _release(label)
    with runtime.reproducible(0):
        b = _release(label)
    assert _same(a, b), f"{label}: the same seed gave different releases"
    others = []
    for seed in range(1, 11):  # deterministic; ten seeds all equal to seed 0 would be a bug
        with runtime.reproducible(seed):
            others.append(_release(label))
    assert not all(_same(a, o) for o in others), f"{label}: seeds 0..10 gave the same release"


@pytest.mark.parametrize("label", NOT_SEEDABLE)
def test_the_documented_exceptions_are_not_reproducible(label):
    """The registry's flags are truthful both ways: inside ``runtime.reproducible`` these
    releases still draw from OpenDP's CSPRNG (30 equal draws: probability below 1e-6)."""
    with runtime.reproducible(0):
        first = _release(label)
        for _ in range(MAX_DRAWS - 1):
            if not _same(first, _release(label)):
                return
    pytest.fail(f"{label}: reproducible inside runtime.reproducible: mark its entry 'package'")


def test_reproducible_diagnostics_reproduce():
    meas = registry.entry("make_adaptive_pruned_pmm").build(
        60, epsilon_select=0.5, epsilon_main=0.5
    )
    runs = []
    for _ in range(2):
        with runtime.reproducible(11), runtime.diagnostics() as info:
            y = meas(X60)
        runs.append((y, info))
    (y1, i1), (y2, i2) = runs
    assert np.array_equal(y1, y2)
    assert i1 == i2
    assert len(i1) == 1
    assert "s" in i1[0]


def test_reproducible_holds_only_inside_its_block():
    meas = registry.entry("make_pruned_pmm").build(
        60, depth=6, scales=registry.paper_schedule(2, 1.0, 6), placement="uniform"
    )
    with runtime.reproducible(5):
        a = meas(X60)
    b = meas(X60)  # secure again
    with runtime.reproducible(5):
        c = meas(X60)
    assert np.array_equal(a, c)
    assert not np.array_equal(a, b)


def test_cli_seed_reproduces(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{u},{v}\n" for u, v in X60))
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    outs = []
    for i, seed in enumerate(("5", "5", "6")):
        out = tmp_path / f"o{i}.csv"
        assert (
            main(
                [
                    "synth",
                    str(src),
                    "-o",
                    str(out),
                    "--bounds",
                    str(bounds),
                    "--epsilon",
                    "1",
                    "--quiet",
                    "--seed",
                    seed,
                ]
            )
            == 0
        )
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    assert outs[0] != outs[2]


# ---------------------------------------------------------------------------------------------
# (e) no seed/backend/diagnostics parameter; every way to seed says it is not private

RUNTIME_OPTIONS = {"seed", "backend", "diagnostics", "rng", "random_state"}


def _public_callables():
    from opendp_wasserstein import api, measurements, postprocessing, transformations

    found = []
    for mod in (measurements, transformations, postprocessing, api):
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if callable(obj) and (
                name.startswith(("make_", "then_")) or name in ("synthesize", "select_candidates")
            ):
                found.append((f"{mod.__name__.split('.')[-1]}.{name}", obj))
    return found


PUBLIC = _public_callables()


def test_no_constructor_takes_runtime_options():
    assert len(PUBLIC) >= 2 * len(registry.ENTRIES) - 6  # make_ and then_ of (almost) every entry
    for e in registry.ENTRIES:
        assert not RUNTIME_OPTIONS & set(inspect.signature(e.constructor).parameters), e.name
    offenders = {
        name: sorted(RUNTIME_OPTIONS & set(inspect.signature(obj).parameters))
        for name, obj in PUBLIC
    }
    assert not {k: v for k, v in offenders.items() if v}, (
        "seed/backend/diagnostics are run-time options (opendp_wasserstein.runtime), not parameters"
    )


def _normalised_doc(obj) -> str:
    return re.sub(r"\s+", " ", (inspect.getdoc(obj) or "").replace("*", "")).lower()


def test_runtime_reproducible_is_documented_as_not_private():
    assert "not private" in _normalised_doc(runtime.reproducible)
    assert "not private" in _normalised_doc(runtime)
    assert re.search("not private|non-private", _normalised_doc(RandomSource))
    # the sampler option cannot make a release reproducible, and says so
    assert "cannot be combined with" in _normalised_doc(runtime.sampler)


def test_every_remaining_seed_parameter_is_documented_as_not_private():
    """Only public-data helpers still take a seed (trees built from public candidates, the demo
    and the CLI's --seed); each says that a seeded run is not private."""
    from opendp_wasserstein import cli
    from opendp_wasserstein.cli import _common, arrays, dask, demo, tables
    from opendp_wasserstein.public_candidates import trees

    found = []
    public = [(name, getattr(trees, name)) for name in trees.__all__]
    public += [
        (name, obj)
        for mod in (cli, _common, arrays, dask, demo, tables)
        for name, obj in vars(mod).items()
        if inspect.isfunction(obj) and obj.__module__ == mod.__name__ and not name.startswith("_")
    ]
    for name, obj in public:
        if inspect.isfunction(obj) and "seed" in inspect.signature(obj).parameters:
            found.append((name, obj))
    names = {n for n, _ in found}
    assert {"frt_tree", "quadtree", "run_demo"} <= names
    for name, obj in found:
        if name == "distortion":  # seeds public sample pairs of an evaluation, not a release
            continue
        assert "not private" in _normalised_doc(obj), (
            f"{name}: its seed must be documented as not private"
        )
    parser_help = " ".join(
        a.help or ""
        for sub in cli._parser()._subparsers._group_actions[0].choices.values()
        for a in sub._actions
        if "--seed" in a.option_strings
    )
    assert parser_help.lower().count("not private") == 3
