"""The randomness policy of the package.

(a) no code under ``opendp_wasserstein/`` uses numpy's global random state or the ``random``
    module (``np.random.default_rng`` only in ``evaluation/``, which makes public test data);
(b) every mechanism runs with numpy's global-state functions and ``random`` replaced by
    functions that raise;
(c) the default is secure: releases without a seed differ, and the bits come from
    ``os.urandom``;
(d) a seed reproduces a release exactly, for every seedable mechanism, and different seeds
    give different releases;
(e) every public constructor with a ``seed`` parameter says in its docstring that it is not
    private.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import pathlib
import random
import re
import sys

import numpy as np
import opendp.prelude as dp
import pytest

import opendp_wasserstein
from opendp_wasserstein import synthesize
from opendp_wasserstein._random import RandomSource, as_random_source
from opendp_wasserstein.cli import main
from opendp_wasserstein.measurements import (
    make_adaptive_pruned_pmm,
    make_exponential_selection,
    make_nn_histogram,
    make_pmm,
    make_pruned_pmm,
    make_tree_em,
    make_tree_projection,
)
from opendp_wasserstein.schedules import paper_schedule
from opendp_wasserstein.trees import frt_tree, quadtree

dp.enable_features("contrib")

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
            if isinstance(v, ast.Attribute) and v.attr == "random" and isinstance(v.value, ast.Name) and v.value.id in numpy_names:
                attr = node.attr
            elif isinstance(v, ast.Name) and v.id in np_random_names:
                attr = node.attr
        if attr is not None and attr not in ALLOWED_NP_RANDOM:
            found.append((node.lineno, attr))
    # ``np.random`` used as a value (passed around, aliased) is a use of the global module too
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute) and node.attr == "random" and isinstance(node.value, ast.Name)
            and node.value.id in numpy_names and not isinstance(parents.get(node), ast.Attribute)
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
        "import numpy as np\nimport numpy\nimport random\nfrom numpy.random import default_rng, PCG64\n"
        "from numpy import random as npr\nimport numpy.random as nr\n"
        "a = np.random.rand(3)\nb = numpy.random.laplace()\nc = npr.choice([1])\nd = nr.seed(0)\n"
        "e = np.random.Generator(np.random.PCG64(np.random.SeedSequence(1)))\nf = np.random\n"
        "g = np.random.default_rng(0)\n"
    )
    what = {w for _, w in _scan(src)}
    assert what == {"import random", "default_rng", "rand", "laplace", "choice", "seed", "np.random (the module itself)"}


def test_no_global_random_state_in_the_package():
    assert len(list(PACKAGE.rglob("*.py"))) > 20  # the scan looks at the package
    uses = package_random_uses()
    unexpected = {k: v for k, v in uses.items() if k not in KNOWN_EXCEPTIONS}
    assert not unexpected, f"numpy global random state / stdlib random used in the package: {unexpected}"


def test_seeded_path_uses_only_generator_pcg64_seedsequence():
    rng = RandomSource(5)
    assert isinstance(rng._gen, np.random.Generator)
    assert isinstance(rng._gen.bit_generator, np.random.PCG64)


# ---------------------------------------------------------------------------------------------
# (b) global-state functions replaced by functions that raise

GLOBAL_NUMPY = [
    "random", "rand", "randn", "randint", "random_integers", "random_sample", "ranf", "sample",
    "choice", "bytes", "laplace", "geometric", "uniform", "normal", "standard_normal",
    "exponential", "gumbel", "binomial", "poisson", "shuffle", "permutation", "seed",
    "get_state", "set_state", "RandomState", "default_rng",
]
GLOBAL_STDLIB = [
    "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform",
    "gauss", "getrandbits", "seed", "randbytes", "SystemRandom",
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
            if _name == "default_rng" and (caller.startswith("opendp_wasserstein.evaluation") or caller.startswith("tests")):
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


C10 = np.random.default_rng(3).uniform(size=(10, 2))
X = np.random.default_rng(4).uniform(size=(60, 2))
S6 = paper_schedule(2, 1.0, 6)


def dom(n=60, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def every_mechanism(seed):
    """One factory per mechanism; ``seed`` None (secure) or an int.  Each returns the release."""
    co = dp.change_one_distance()
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=4)
    mechs = {
        "pruned_pmm": lambda: make_pruned_pmm(dom(), co, 6, S6, placement="uniform", seed=seed)(X),
        "pruned_pmm_unsized": lambda: make_pruned_pmm(dom(None), dp.symmetric_distance(), 6, S6, placement="uniform", seed=seed)(X),
        "pmm": lambda: make_pmm(dom(), co, 6, S6, placement="uniform", seed=seed)(X),
        "adaptive_pruned_pmm": lambda: make_adaptive_pruned_pmm(dom(), co, 0.5, 0.5, placement="uniform", seed=seed)(X),
        "adaptive_permute_and_flip": lambda: make_adaptive_pruned_pmm(
            dom(), co, 0.5, 0.5, selection="permute_and_flip", placement="uniform", seed=seed)(X),
        "tree_em": lambda: make_tree_em(dom(), co, C10, 50, 0.2, seed=seed)(X),
        "tree_projection": lambda: make_tree_projection(dom(), co, C10, 50, 0.2, seed=seed)(X),
        "frt_tree": lambda: frt_tree(C10, seed=seed).digest,
        "quadtree": lambda: quadtree(C10, (0, 1), seed=seed).digest,
        "synthesize_adaptive": lambda: synthesize(X, 1.0, (0, 1), seed=seed)[0],
        "synthesize_pruned": lambda: synthesize(X, 1.0, (0, 1), mechanism="pruned", seed=seed)[0],
        "synthesize_pmm": lambda: synthesize(X, 1.0, (0, 1), mechanism="pmm", seed=seed)[0],
    }
    if seed is None:  # these draw from OpenDP's own CSPRNG and take no seed
        mechs |= {
            "pruned_pmm_opendp_backend": lambda: make_pruned_pmm(dom(), co, 6, S6, placement="uniform", backend="opendp")(X),
            "tree_projection_opendp_backend": lambda: make_tree_projection(dom(), co, C10, 50, 0.2, backend="opendp")(X),
            "nn_histogram": lambda: make_nn_histogram(dom(), co, C10, 50, 0.2)(X),
            "exponential_selection": lambda: make_exponential_selection(vec, dp.linf_distance(T=float), 1.0, 1.0)([0.0] * 4),
            "permute_and_flip": lambda: make_exponential_selection(
                vec, dp.linf_distance(T=float), 1.0, 1.0, "permute_and_flip")([0.0] * 4),
        }
    return mechs


SECURE = every_mechanism(None)
SEEDED = every_mechanism(0)


@pytest.mark.parametrize("seeded", [False, True], ids=["secure", "seeded"])
def test_every_mechanism_runs_without_global_random_state(monkeypatch, seeded):
    calls = _forbid(monkeypatch)
    with pytest.raises(AssertionError):
        np.random.rand(2)  # noqa: NPY002 - the patch is active
    calls.clear()
    for name, release in every_mechanism(7 if seeded else None).items():
        out = release()
        assert out is not None, name
    assert calls == []


def test_cli_runs_without_global_random_state(monkeypatch, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{u},{v}\n" for u, v in X))
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    calls = _forbid(monkeypatch)
    for seed in ([], ["--seed", "3"]):
        assert main(["synth", str(src), "-o", str(tmp_path / "o.csv"), "--bounds", str(bounds),
                     "--epsilon", "1", "--quiet", *seed]) == 0
    assert calls == []


# ---------------------------------------------------------------------------------------------
# (c) secure by default


def _same(a, b) -> bool:
    return np.array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("name", list(SECURE))
def test_releases_without_a_seed_differ(name):
    release = SECURE[name]
    outs = [release() for _ in range(4 if name in ("exponential_selection", "permute_and_flip") else 2)]
    if name in ("exponential_selection", "permute_and_flip"):  # 4 equal scores: 4 draws of 4 indices
        outs += [release() for _ in range(36)]
        assert len({int(o) for o in outs}) > 1
    else:
        assert not _same(outs[0], outs[1]), name


def test_random_source_reads_os_urandom(monkeypatch):
    calls = []
    real = os.urandom

    def counting(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(os, "urandom", counting)
    rng = RandomSource()
    assert rng.secure and as_random_source(None).secure
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


def test_default_releases_read_os_urandom_and_seeded_ones_do_not(monkeypatch):
    calls = []
    real = os.urandom
    monkeypatch.setattr(os, "urandom", lambda n: calls.append(n) or real(n))
    for name in ("pruned_pmm", "pmm", "adaptive_pruned_pmm", "tree_em", "tree_projection", "synthesize_pruned"):
        calls.clear()
        SECURE[name]()
        assert calls, f"{name}: no os.urandom read on a release without a seed"
        calls.clear()
        SEEDED[name]()
        assert not calls, f"{name}: a seeded release read os.urandom"


# ---------------------------------------------------------------------------------------------
# (d) seeds reproduce releases


@pytest.mark.parametrize("name", list(SEEDED))
def test_seed_reproduces_and_different_seeds_differ(name):
    a, b = SEEDED[name](), SEEDED[name]()
    assert _same(a, b), f"{name}: the same seed gave different releases"
    other = every_mechanism(1)[name]()
    assert not _same(a, other), f"{name}: seeds 0 and 1 gave the same release"


def test_seeded_adaptive_diagnostics_reproduce():
    m = make_adaptive_pruned_pmm(dom(), dp.change_one_distance(), 0.5, 0.5, seed=11, diagnostics=True)
    (y1, i1), (y2, i2) = m(X), m(X)
    assert np.array_equal(y1, y2) and i1 == i2


def test_cli_seed_reproduces(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("a,b\n" + "".join(f"{u},{v}\n" for u, v in X))
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    outs = []
    for i, seed in enumerate(("5", "5", "6")):
        out = tmp_path / f"o{i}.csv"
        assert main(["synth", str(src), "-o", str(out), "--bounds", str(bounds), "--epsilon", "1", "--quiet", "--seed", seed]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1] and outs[0] != outs[2]


# ---------------------------------------------------------------------------------------------
# (e) the seed parameter is documented as not private


def _public_constructors_with_seed():
    from opendp_wasserstein import api, cli, measurements, postprocessing, transformations, trees

    found = []
    for mod in (measurements, transformations, postprocessing, api, cli, trees):
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            constructor = name.startswith(("make_", "then_")) or name in ("synthesize", "run_demo", "frt_tree", "quadtree")
            if not (callable(obj) and constructor):
                continue
            if "seed" in inspect.signature(obj).parameters:
                found.append((f"{mod.__name__.split('.')[-1]}.{name}", obj))
    return found


SEED_DOCS = _public_constructors_with_seed()
UNDOCUMENTED: set[str] = set()  # make_pmm documented its seed since


def _normalised_doc(obj) -> str:
    return re.sub(r"\s+", " ", (inspect.getdoc(obj) or "").replace("*", "")).lower()


def test_seed_constructors_found():
    names = {n for n, _ in SEED_DOCS}
    assert {"measurements.make_pruned_pmm", "measurements.make_adaptive_pruned_pmm", "measurements.make_tree_laplace",
            "api.synthesize", "measurements.make_tree_em", "measurements.make_tree_projection"} <= names
    assert len(names) >= 15


@pytest.mark.parametrize(
    "name,obj",
    [
        pytest.param(n, o, id=n, marks=pytest.mark.xfail(strict=True, reason=(
            "BUG (docs): make_pmm's docstring only says 'Same parameters ... as make_pruned_pmm'; "
            "its seed is not documented as not private")) if n in UNDOCUMENTED else ())
        for n, o in SEED_DOCS
    ],
)
def test_seed_docstring_says_not_private(name, obj):
    doc = _normalised_doc(obj)
    assert "seed" in doc and "not private" in doc, f"{name}: the seed parameter's docstring must say 'not private'"
