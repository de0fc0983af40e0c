"""Adversarial and malformed inputs: every constructor, every release, ``synthesize``,
``select_candidates``, the run-time options and the CLI.

The constructors, their valid arguments, the parameters they validate and their releases come
from the registry (``tests/conformance/registry.py``): a new constructor is covered by adding its
entry. Every malformed input gets a clear error naming the parameter, or a documented behaviour that
is tested here (clamping into the box, the upper child on a split plane, integer arrays in
``synthesize``).  Error messages and exception types never depend on private data values: two
datasets of the same shape and dtype with different bad values give the identical error.
Errors raised inside a release (``meas(x)``) arrive as ``dp.OpenDPException`` whose message
contains ours.  Hypothesis checks the invariants of releases: size, bounds, inputs untouched
(derandomised, so the suite is deterministic).
"""

from __future__ import annotations

import inspect
import json
import math
import re

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opendp_wasserstein import (
    measurements,
    postprocessing,
    runtime,
    select_candidates,
    synthesize,
    transformations,
)
from opendp_wasserstein.cli import main
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.core.parameters import EPS_MIN, SCALE_MAX
from opendp_wasserstein.measurements import (
    make_adaptive_pruned_pmm,
    make_exponential_selection,
    make_pmm,
    make_pruned_pmm,
    make_tree_em,
    make_tree_laplace,
    make_tree_projection,
)
from opendp_wasserstein.schedules.pure import paper_schedule
from opendp_wasserstein.transformations import make_dyadic_counts
from tests.conformance import registry
from tests.conformance.registry import C3, CO, LINF, NAN, ROOTLESS, S2, SYM, VEC4, X5, dom

INF = float("inf")
NOISELESS = [1e-3] * 3  # LapZ(1e-3) is 0 except with probability ~ e^-1000: the exact counts


def _centres(y):
    return sorted(map(tuple, np.asarray(y).tolist()))


def _search(pattern, text):
    return re.search(pattern, text) is not None


def case(id_, thunk, exc, match, marks=()):
    return pytest.param(thunk, exc, match, id=id_, marks=marks)


# ---------------------------------------------------------------------------------------------
# the registry covers every constructor and every parameter


def _exported_constructors():
    found = {}
    for mod in (measurements, transformations, postprocessing):
        for name in mod.__all__:
            if name.startswith("make_"):
                found[name] = getattr(mod, name)
    return found


def test_registry_covers_every_constructor():
    exported = _exported_constructors()
    names = [e.name for e in registry.ENTRIES]
    assert len(names) == len(set(names))
    assert set(names) == set(exported), (
        f"missing from tests/conformance/registry.py: {sorted(set(exported) - set(names))}; "
        f"not exported: {sorted(set(names) - set(exported))}"
    )
    for e in registry.ENTRIES:
        assert e.constructor is exported[e.name]
        assert e.kind in ("transformation", "measurement", "postprocessor")
        assert e.randomness in ("package", "opendp", "none")
        assert e.output in ("points", "multiset", "count", "index", "other")


@pytest.mark.parametrize("e", registry.ENTRIES, ids=lambda e: e.short)
def test_every_parameter_is_validated_or_explained(e):
    params = set(inspect.signature(e.constructor).parameters)
    validated = {k for r in e.rejects for k in r.overrides}
    assert validated <= params, f"{e.name}: rejects name unknown parameters {validated - params}"
    assert set(e.unvalidated) <= params
    missing = params - validated - set(e.unvalidated)
    assert not missing, (
        f"{e.name}: no malformed-input case for {sorted(missing)} (add a Reject or explain "
        "in unvalidated)"
    )


@pytest.mark.parametrize("e", registry.ENTRIES, ids=lambda e: e.short)
def test_valid_arguments_build_and_release(e):
    for rel in e.releases():
        out = rel()
        assert out is not None, rel.label
        if e.output == "points":
            y = np.asarray(out)
            assert y.ndim == 2, rel.label
            assert y.shape[1] == 2, rel.label
            assert np.all((y >= 0) & (y <= 1)), rel.label
        elif e.output == "multiset":
            assert int(np.sum(out)) == 3, rel.label
            assert np.all(np.asarray(out) >= 0), rel.label


# ---------------------------------------------------------------------------------------------
# constructors: every reject of every entry


@pytest.mark.parametrize(
    "e,reject",
    [pytest.param(e, r, id=f"{e.short}:{r.id}") for e, r in registry.constructor_cases()],
)
def test_constructor_rejects(e, reject):
    with pytest.raises(reject.exc, match=reject.match):
        e.build(reject.n, **reject.overrides)


def test_reject_ids_are_unique():
    ids = [(e.name, r.id) for e, r in registry.constructor_cases()]
    assert len(ids) == len(set(ids))


def test_subnormal_scale_gives_a_usable_map_or_a_clear_error():
    try:
        meas = make_pruned_pmm(dom(), CO, 2, [1.0, 4.0, 5e-324])
    except ValueError as e:
        assert "scales" in str(e)
        return
    assert meas.map(1) == math.inf


# ---------------------------------------------------------------------------------------------
# the 2^52 cap of exact integer noise

SCALED = [e for e in registry.ENTRIES if e.scale_overrides is not None]
ABOVE = math.nextafter(SCALE_MAX, math.inf)


def _takes_scales(e) -> bool:
    """A ``scales`` parameter, or an input metric carrying the scales (the noise measurements)."""
    if "scales" in inspect.signature(e.constructor).parameters:
        return True
    metric = e.args(registry.N).get("input_metric")
    return type(getattr(metric, "descriptor", None)).__name__ == "WeightedL1Distance"


def test_every_constructor_taking_scales_has_a_scale_case():
    takes = {e.name for e in registry.ENTRIES if _takes_scales(e)}
    assert takes <= {e.name for e in SCALED}
    assert {
        "make_dyadic_counts",
        "make_pruned_pmm",
        "make_pmm",
        "make_tree_counts",
        "make_tree_laplace",
        "make_pruned_tree_laplace",
        "make_tree_count_laplace",
        "make_adaptive_pruned_pmm",
    } <= {e.name for e in SCALED}


@pytest.mark.parametrize("e", SCALED, ids=lambda e: e.short)
def test_scales_above_2_52_refused_at_construction(e):
    """Every constructor that takes noise scales accepts 2^52 and refuses the next float,
    when it is built (not when it releases), with a message naming the cap."""
    e.build(**e.scale_overrides(SCALE_MAX))
    with pytest.raises(ValueError, match="2\\^52"):
        e.build(**e.scale_overrides(ABOVE))


TINY = [e for e in registry.ENTRIES if e.tiny_epsilon is not None]


@pytest.mark.parametrize("e", TINY, ids=lambda e: e.short)
def test_tiny_epsilon_refused_naming_it(e):
    """An epsilon inside [1e-100, 1e100] whose noise scale would pass 2^52 is refused at
    construction, and the message names that epsilon (not an internal 'scales')."""
    param, overrides = e.tiny_epsilon
    with pytest.raises(ValueError, match=f"^{param} is too small.*2\\^52"):
        e.build(**overrides)


def test_integer_noise_constructors_with_an_epsilon_are_all_listed():
    """Every constructor deriving integer-noise scales from an epsilon says so in the registry;
    the float samplers (the selection, Tree-EM) accept the smallest epsilon."""
    assert {e.name for e in TINY} == {
        "make_adaptive_pruned_pmm",
        "make_tree_projection",
        "make_nn_histogram",
        "make_noisy_size_then",
        "make_privtree",
    }
    for name in ("make_exponential_selection", "make_tree_em"):
        e = registry.entry(name)
        meas = e.build(epsilon=EPS_MIN)
        assert meas.map(1) <= 2 * EPS_MIN
        e.pipeline(meas, registry.N)(e.data(registry.N))


def test_synthesize_and_select_name_a_tiny_epsilon():
    for mechanism in ("adaptive", "pruned", "pmm"):
        for public_size in (True, False):
            with pytest.raises(ValueError, match="^epsilon is too small.*2\\^52"):
                synthesize(X5, 1e-60, (0, 1), mechanism=mechanism, public_size=public_size)
    with pytest.raises(ValueError, match="^epsilon_size is too small"):
        synthesize(X5, 1.0, (0, 1), mechanism="pruned", public_size=False, epsilon_size=1e-60)
    for mechanism in ("projection", "nn"):
        with pytest.raises(ValueError, match="^epsilon is too small.*2\\^52"):
            select_candidates(X5, C3, 3, 1e-60, mechanism=mechanism)


# ---------------------------------------------------------------------------------------------
# output_size and sigma_0 = inf (private size)

OUTPUT_SIZED = [
    e for e in registry.ENTRIES if "output_size" in inspect.signature(e.constructor).parameters
]


def test_output_size_constructors():
    assert {e.name for e in OUTPUT_SIZED} == {
        "make_pruned_pmm",
        "make_pmm",
        "make_pruned_tree_laplace",
        "make_pruned_tree_gaussian",
        "make_full_consistency",
    }
    for e in OUTPUT_SIZED:
        ids = {r.id.split("-output-size")[0] for r in e.rejects if "output_size" in r.overrides}
        assert ids, f"{e.name}: no malformed output_size case"
        assert "output_size" in e.variants, f"{e.name}: no valid output_size release"


@pytest.mark.parametrize("e", OUTPUT_SIZED, ids=lambda e: e.short)
@pytest.mark.parametrize("size", [1, 4, 9, np.int64(4)], ids=["1", "4", "9", "np.int64"])
def test_output_size_sets_the_number_of_rows(e, size):
    n, overrides = e.variants["output_size"]
    with runtime.reproducible(3):
        out = e.pipeline(e.build(n, **(dict(overrides) | {"output_size": size})), n)(
            registry.rows(n)
        )
    total = out.total if hasattr(out, "total") else np.asarray(out).shape[0]
    assert total == int(size)


def test_output_size_messages_name_the_parameter_for_every_bad_value():
    """Same type for every malformed value; the message names output_size and quotes only the
    (public) argument."""
    for e in OUTPUT_SIZED:
        n, overrides = e.variants["output_size"]
        errs = set()
        for bad in (0, -3, 2.5, True, "3", None if e.name != "make_full_consistency" else 0):
            if bad is None:
                continue
            with pytest.raises(ValueError) as info:
                e.build(n, **(dict(overrides) | {"output_size": bad}))
            errs.add(type(info.value))
            assert str(info.value).startswith("output_size must be an integer >= 1, got ")
        assert errs == {ValueError}


def test_rootless_tree_without_output_size_fails_naming_it():
    """make_full_consistency cannot see the scales: a noisy tree without a root count and no
    output_size is refused at release, naming output_size (a public configuration error)."""
    t = make_dyadic_counts(dom(None), SYM, 2, ROOTLESS)
    meas = (
        t
        >> make_tree_laplace(t.output_domain, t.output_metric)
        >> postprocessing.make_full_consistency(t.output_domain)
    )
    with pytest.raises(dp.OpenDPException, match="output_size"):
        meas(X5)


def test_rootless_schedule_needs_output_size_for_every_private_size_mechanism():
    for mk in (make_pruned_pmm, make_pmm):
        with pytest.raises(ValueError, match="output_size is required"):
            mk(dom(None), SYM, 2, ROOTLESS)
        # with a public size sigma_0 = inf is fine: the root is the public n
        assert mk(dom(), CO, 2, ROOTLESS)(X5).shape == (5, 2)
    with pytest.raises(ValueError, match="output_size is required"):
        t = make_dyadic_counts(dom(None), SYM, 2, ROOTLESS)
        measurements.make_pruned_tree_laplace(t.output_domain, t.output_metric)


# ---------------------------------------------------------------------------------------------
# run-time options: argument errors


@pytest.mark.parametrize(
    "seed,exc,match",
    [
        (-1, ValueError, "seed must be >= 0"),
        (1.5, TypeError, "seed must be an int, got float"),
        (True, TypeError, "seed must be an int, got bool"),
        ("1", TypeError, "seed must be an int, got str"),
        (None, TypeError, "seed must be an int, got NoneType"),
        (np.float64(2.0), TypeError, "seed must be an int"),
    ],
)
def test_reproducible_rejects(seed, exc, match):
    with pytest.raises(exc, match=match):
        with runtime.reproducible(seed):
            pass  # pragma: no cover - never entered


def test_reproducible_accepts_numpy_integers_and_restores_the_secure_default():
    from opendp_wasserstein.noise._source import as_random_source

    with runtime.reproducible(np.int64(4)):
        assert not as_random_source().secure
        with runtime.reproducible(5):
            assert as_random_source().seed == 5
        assert as_random_source().seed == 4
    assert as_random_source().secure
    with pytest.raises(RuntimeError):
        with runtime.reproducible(1):
            raise RuntimeError("inside")
    assert as_random_source().secure  # restored after an exception too


@pytest.mark.parametrize("name", ["numpy", "", None, "OpenDP", 1])
def test_sampler_rejects(name):
    with pytest.raises(ValueError, match="sampler must be one of \\('fast', 'opendp'\\)"):
        with runtime.sampler(name):
            pass  # pragma: no cover - never entered


def test_opendp_sampler_cannot_be_made_reproducible():
    meas = registry.entry("make_pruned_pmm").releases()[0].build()
    with runtime.sampler("opendp"):
        assert meas(X5).shape == (5, 2)
        with runtime.reproducible(1), pytest.raises(dp.OpenDPException, match="cannot be seeded"):
            meas(X5)
    assert runtime.current_sampler() == "fast"


def test_diagnostics_take_no_arguments_and_collect_one_dict_per_release():
    with pytest.raises(TypeError):
        runtime.diagnostics(True)
    meas = registry.entry("make_pruned_pmm").releases()[0].build()
    with runtime.diagnostics() as info:
        meas(X5), meas(X5)
    assert len(info) == 2
    assert all(i["depth"] == 2 for i in info)
    with runtime.diagnostics() as outer:
        with runtime.diagnostics() as inner:
            meas(X5)
    assert len(inner) == 1
    assert outer == inner  # nested blocks each see what ran inside them (issue 20, item 14)


# ---------------------------------------------------------------------------------------------
# releases: meas(x) with malformed data, for every release of every entry taking an array

ARRAY_RELEASES = registry.releases(array_input=True)


def _rid(rel):
    return rel.label


def _with(value, at=(1, 1), base=X5):
    x = base.copy()
    x[at] = value
    return x


#: errors that depend only on the type, dtype and shape (public facts), for every release
BAD_DATA = {
    "int-dtype": (np.ones((5, 2), dtype=np.int64), "must have a float dtype, got int64"),
    "bool-dtype": (np.ones((5, 2), dtype=bool), "must have a float dtype, got bool"),
    "complex-dtype": (np.ones((5, 2), dtype=complex), "must have a float dtype, got complex128"),
    "object-dtype": (X5.astype(object), "must have a float dtype, got object"),
    "list": (X5.tolist(), "must be a numpy ndarray"),
    "1d": (X5[:, 0].copy(), "must be a 2-dimensional array, got 1 dimensions"),
    "3d": (X5[None].copy(), "must be a 2-dimensional array, got 3 dimensions"),
    "empty": (np.zeros((0, 2)), "must have exactly 5 rows"),  # private size: valid, see below
    "wrong-rows": (X5[:4].copy(), "must have exactly 5 rows"),  # private size: valid, see below
    "wrong-columns": (np.zeros((5, 3)), "must have 2 columns, got 3"),
}


@pytest.mark.parametrize("bad", list(BAD_DATA))
@pytest.mark.parametrize("rel", ARRAY_RELEASES, ids=_rid)
def test_release_rejects_malformed_data(rel, bad):
    meas = rel.build()
    x, match = BAD_DATA[bad]
    if rel.n is None and bad in ("empty", "wrong-rows"):
        # no public size: any number of rows is valid
        with runtime.reproducible(0):
            out = meas(x)
        if rel.entry.output == "points":
            y = np.asarray(out)
            assert y.shape[0] >= 1
            assert y.shape[1] == 2
            assert np.all((y >= 0) & (y <= 1))
        return
    with pytest.raises(dp.OpenDPException) as info:
        meas(x)
    assert _search("data " + match, str(info.value)), str(info.value)


NONFINITE = {
    "nan": _with(NAN),
    "plus-inf": _with(INF),
    "minus-inf": _with(-INF),
    "huge": _with(1e308),
    "all-nan": np.full((5, 2), NAN),
}


@pytest.mark.parametrize("name", list(NONFINITE))
@pytest.mark.parametrize("rel", ARRAY_RELEASES, ids=_rid)
def test_nonfinite_values_are_mapped_row_wise(rel, name):
    """Documented behaviour: on the default domain (NaN admitted) +-inf and out-of-box values
    are clamped to the box faces, NaN imputed at the lower face (``validate_data``,
    ``Box.to_unit``); a row with a NaN or infinite coordinate goes to candidate 0
    (``make_nearest_candidate``).  Fixed row-wise maps: no error depends on the values."""
    out = rel.build()(NONFINITE[name])
    if rel.entry.output == "points":
        y = np.asarray(out)
        assert y.shape[1] == 2
        assert np.all(np.isfinite(y))
        assert np.all((y >= 0) & (y <= 1))
        if rel.n is not None:
            assert y.shape[0] == 5
    elif rel.entry.output == "multiset":
        assert np.asarray(out).shape == (3,)
        assert int(np.sum(out)) == 3


def test_nan_goes_to_the_lower_face_and_inf_to_the_faces():
    x = np.array([[NAN, 0.9], [INF, -INF], [-INF, NAN]])
    with runtime.reproducible(0):
        y = make_pmm(dom(3), CO, 2, NOISELESS, placement="center")(x)
    assert _centres(y) == _centres([[0.25, 0.75], [0.75, 0.25], [0.25, 0.25]])


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm], ids=["pruned", "pmm"])
def test_nan_refused_when_the_domain_excludes_it(mk):
    """With ``array2_domain(nan=False)`` NaN data is outside the input domain and refused, with
    the same message wherever the NaN is; infinities are still clamped."""
    meas = mk(dom(5, nan=False), CO, 2, S2)
    errs = []
    for at in ((0, 0), (4, 1)):
        with pytest.raises(dp.OpenDPException, match="must not contain NaN") as info:
            meas(_with(NAN, at))
        errs.append(str(info.value))
    assert errs[0] == errs[1]
    assert meas(_with(INF)).shape == (5, 2)


SAME_SHAPE_BAD_PAIRS = {
    "nan-at-two-positions": (_with(NAN, (0, 0)), _with(NAN, (4, 1))),
    "nan-vs-inf": (_with(NAN, (2, 0)), _with(INF, (3, 1))),
    "inf-vs-minus-inf": (_with(INF, (0, 1)), _with(-INF, (1, 0))),
    "nan-among-different-values": (_with(NAN, (1, 1), X5 * 1234.5), _with(NAN, (1, 1), X5 - 77.0)),
    "finite-vs-nan": (X5.copy(), _with(NAN, (2, 1))),
    "int-arrays-different-values": (np.arange(10).reshape(5, 2), np.full((5, 2), 987654)),
    "object-arrays-different-values": (X5.astype(object), (X5 * 3).astype(object)),
    "wrong-columns-different-values": (np.zeros((5, 3)), np.full((5, 3), NAN)),
    "wrong-rows-different-values": (np.zeros((4, 2)), np.full((4, 2), 987654.0)),
}

_NONFINITE_PAIRS = {
    "nan-at-two-positions",
    "nan-vs-inf",
    "inf-vs-minus-inf",
    "nan-among-different-values",
    "finite-vs-nan",
}


def _outcome(meas, x):
    try:
        meas(x)
    except Exception as e:  # noqa: BLE001 - the type is part of what is compared
        return type(e), str(e)
    return None, "released"


@pytest.mark.parametrize("pair", list(SAME_SHAPE_BAD_PAIRS))
@pytest.mark.parametrize("rel", ARRAY_RELEASES, ids=_rid)
def test_release_outcome_does_not_depend_on_data_values(rel, pair):
    """Same shape and dtype, different (bad) values: the same exception type and message, or
    a release in both cases; no data value is ever quoted."""
    meas = rel.build()
    a, b = (_outcome(meas, x) for x in SAME_SHAPE_BAD_PAIRS[pair])
    assert a == b
    assert "1234" not in a[1]
    assert "987654" not in a[1]
    assert "77" not in a[1]
    if pair in _NONFINITE_PAIRS or (pair.startswith("wrong-rows") and rel.n is None):
        assert a == (None, "released")


def test_selection_scores_nan_error_is_position_independent():
    """Documented behaviour: NaN scores are refused by OpenDP's noisy max (same error wherever
    the NaN is); infinite scores are valid and select (or avoid) that index."""
    m = make_exponential_selection(VEC4, LINF, 1.0, 1.0)
    errs = []
    for scores in ([NAN, 0.0, 1.0, 2.0], [0.0, 1.0, 2.0, NAN]):
        with pytest.raises(dp.OpenDPException) as info:
            m(scores)
        errs.append(str(info.value))
    assert errs[0] == errs[1]
    assert m([0.0, -INF, 1.0, 2.0]) == 1
    assert m([INF, INF, 0.0, INF]) == 2


@pytest.mark.parametrize("name", ["make_tree_laplace", "make_pruned_tree_laplace"])
def test_tree_laplace_refuses_an_input_that_is_not_the_domains_count_tree(name):
    """Called directly, the noise measurements take the CountTree of their domain; anything
    else (a raw array, another depth) is refused by type and depth, never by value."""
    e = registry.entry(name)
    meas = e.build()
    deeper = make_dyadic_counts(dom(), CO, 3, paper_schedule(2, 1.0, 3))
    errs = []
    for bad in (X5.copy(), X5 * 7.0, deeper(X5), deeper(_with(0.9, (0, 0)))):
        with pytest.raises(
            dp.OpenDPException, match="data must be the CountTree of the input domain"
        ) as info:
            meas(bad)
        errs.append(str(info.value).strip().splitlines()[-1])
    assert len(set(errs)) == 1
    wrong_n = make_dyadic_counts(dom(4), CO, 2, S2)(X5[:4].copy())
    with pytest.raises(dp.OpenDPException, match="must count exactly 5 rows"):
        meas(wrong_n)


# ---------------------------------------------------------------------------------------------
# valid edge cases: documented behaviour


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm], ids=["pruned", "pmm"])
def test_split_planes_go_to_the_upper_child_and_faces_to_the_edge_cells(mk):
    """1-D box [-2, 6], depth 2: cells [-2,0), [0,2), [2,4), [4,6].  Points on the split planes
    2 (level 1) and 0, 4 (level 2) go to the upper cell; the faces -2 and 6 to the edge cells;
    rows outside are clamped onto the faces."""
    x = np.array([[-2.0], [0.0], [2.0], [4.0], [6.0], [-100.0], [1e308], [-1e308]])
    meas = mk(dom(8, 1), CO, 2, NOISELESS, bounds=(-2.0, 6.0), placement="center")
    with runtime.reproducible(0):
        y = meas(x)
    assert _centres(y) == _centres([[-1.0], [1.0], [3.0], [5.0], [5.0], [-1.0], [5.0], [-1.0]])
    assert np.all((y >= -2.0) & (y <= 6.0))


def test_split_planes_in_two_dimensions():
    x = np.array([[0.5, 0.5], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.5], [0.5, 0.0]])
    with runtime.reproducible(0):
        y = make_pruned_pmm(dom(6), CO, 2, NOISELESS, placement="center")(x)
    expected = [[0.75, 0.75], [0.25, 0.25], [0.75, 0.75], [0.25, 0.75], [0.75, 0.75], [0.75, 0.25]]
    assert _centres(y) == _centres(expected)


SIZED_RELEASES = [r for r in ARRAY_RELEASES if r.n is not None]
EDGE_DATA = {
    "huge": np.array([[1e308, -1e308]] * 5),
    "subnormal": np.full((5, 2), 5e-324),
    "duplicate-rows": np.repeat(X5[:1], 5, axis=0),
    "on-faces": np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]),
    "on-a-far-candidate": np.array([[1e200, 1e200]] + [[0.3, 0.3]] * 4),
}


def _check_output(rel, out, n):
    if rel.entry.output == "points":
        y = np.asarray(out)
        assert y.shape == (n, 2)
        assert np.all((y >= 0.0) & (y <= 1.0))
    elif rel.entry.output == "multiset":
        assert np.asarray(out).shape == (3,)
        assert int(np.sum(out)) == 3
        assert np.all(np.asarray(out) >= 0)
    elif rel.entry.output == "index":
        idx = np.asarray(out)
        assert idx.shape == (n,)
        assert idx.min() >= 0
        assert idx.max() < 3


@pytest.mark.parametrize("name", list(EDGE_DATA))
@pytest.mark.parametrize("rel", SIZED_RELEASES, ids=_rid)
def test_valid_edge_data_releases_inside_bounds(rel, name):
    """Huge values (distances that overflow go to candidate 0), subnormals, duplicates, points
    on the faces: valid data, released like any other."""
    _check_output(rel, rel.build()(EDGE_DATA[name].copy()), 5)


@pytest.mark.parametrize("rel", SIZED_RELEASES, ids=_rid)
def test_one_row(rel):
    _check_output(rel, rel.build(1)(np.array([[0.3, 0.9]])), 1)


@pytest.mark.parametrize("rel", ARRAY_RELEASES, ids=_rid)
def test_read_only_input_is_accepted_and_untouched(rel):
    x = _with(NAN, (3, 0), X5 * 2 - 0.5)  # values outside the box and a NaN: clamping paths
    keep = x.copy()
    x.setflags(write=False)
    rel.build()(x)
    assert np.array_equal(x, keep, equal_nan=True)
    assert not x.flags.writeable


def test_synthesize_read_only_input_is_accepted_and_untouched():
    x = X5 * 3 - 1
    keep = x.copy()
    x.setflags(write=False)
    for mechanism in ("adaptive", "pruned", "pmm"):
        for public_size in (True, False):
            with runtime.reproducible(0):
                y, _ = synthesize(x, 1.0, (0, 1), mechanism=mechanism, public_size=public_size)
            assert np.array_equal(x, keep)
            assert y.shape[1] == 2
            assert np.all((y >= 0) & (y <= 1))
            assert y.shape[0] == 5 or not public_size


# ---------------------------------------------------------------------------------------------
# synthesize


SYNTH_CASES = [
    case(
        "X-nan", lambda: synthesize(_with(NAN), 1.0, (0, 1)), ValueError, "X must not contain NaN"
    ),
    case(
        "X-bool",
        lambda: synthesize(np.ones((5, 2), bool), 1.0, (0, 1)),
        TypeError,
        "X must be a 2-D array of real",
    ),
    case(
        "X-complex",
        lambda: synthesize(np.ones((5, 2), complex), 1.0, (0, 1)),
        TypeError,
        "X must be",
    ),
    case("X-object", lambda: synthesize(X5.astype(object), 1.0, (0, 1)), TypeError, "X must be"),
    case(
        "X-strings-array",
        lambda: synthesize(np.array([["a", "b"]]), 1.0, (0, 1)),
        TypeError,
        "X must be",
    ),
    case("X-1d", lambda: synthesize(X5[:, 0], 1.0, (0, 1)), ValueError, "X must be 2-dimensional"),
    case("X-3d", lambda: synthesize(X5[None], 1.0, (0, 1)), ValueError, "X must be 2-dimensional"),
    case(
        "X-empty",
        lambda: synthesize(np.zeros((0, 2)), 1.0, (0, 1)),
        ValueError,
        "X must have at least one row",
    ),
    case(
        "X-no-columns",
        lambda: synthesize(np.zeros((5, 0)), 1.0, (0, 1)),
        ValueError,
        "X must have at least one column",
    ),
    case(
        "X-list-with-text",
        lambda: synthesize([[0.1, "secret"]], 1.0, (0, 1)),
        TypeError,
        "X must be",
    ),
    case("bounds-none", lambda: synthesize(X5, 1.0, None), ValueError, "bounds are required"),
    case("bounds-equal", lambda: synthesize(X5, 1.0, (1, 1)), ValueError, "bounds"),
    case("bounds-nan", lambda: synthesize(X5, 1.0, (0, NAN)), ValueError, "bounds must be finite"),
    case(
        "bounds-width-overflows", lambda: synthesize(X5, 1.0, (-1e308, 1e308)), ValueError, "bounds"
    ),
    case(
        "bounds-dimension",
        lambda: synthesize(X5, 1.0, ([0, 0, 0], [1, 1, 1])),
        ValueError,
        "bounds",
    ),
    case(
        "bounds-ambiguous-2x2", lambda: synthesize(X5, 1.0, ([0, 1], [0, 1])), ValueError, "bounds"
    ),
    case(
        "bounds-mapping-missing-column",
        lambda: synthesize(X5, 1.0, {0: (0, 1)}),
        ValueError,
        "keys 0 .. 1",
    ),
    case(
        "bounds-mapping-not-pairs", lambda: synthesize(X5, 1.0, {0: 1, 1: 2}), ValueError, "bounds"
    ),
    case(
        "bounds-mapping-wrong-keys",
        lambda: synthesize(X5, 1.0, {"lower": [0, 0], "high": [1, 1]}),
        ValueError,
        "bounds",
    ),
    case("eps-0", lambda: synthesize(X5, 0.0, (0, 1)), ValueError, "epsilon"),
    case("eps-negative", lambda: synthesize(X5, -1.0, (0, 1)), ValueError, "epsilon"),
    case("eps-nan", lambda: synthesize(X5, NAN, (0, 1)), ValueError, "epsilon"),
    case("eps-inf", lambda: synthesize(X5, INF, (0, 1)), ValueError, "epsilon"),
    case("eps-huge", lambda: synthesize(X5, 1e308, (0, 1)), ValueError, "epsilon"),
    case("eps-tiny", lambda: synthesize(X5, 1e-60, (0, 1)), ValueError, "epsilon is too small"),
    case(
        "eps-select-too-big",
        lambda: synthesize(X5, 1.0, (0, 1), epsilon_select=1.0),
        ValueError,
        "epsilon_select",
    ),
    case(
        "eps-select-nan",
        lambda: synthesize(X5, 1.0, (0, 1), epsilon_select=NAN),
        ValueError,
        "epsilon_select",
    ),
    case(
        "eps-select-not-adaptive",
        lambda: synthesize(X5, 1.0, (0, 1), mechanism="pmm", epsilon_select=0.1),
        ValueError,
        "epsilon_select applies only",
    ),
    case(
        "eps-size-with-public-size",
        lambda: synthesize(X5, 1.0, (0, 1), epsilon_size=0.1),
        ValueError,
        "epsilon_size applies only with public_size=False",
    ),
    case(
        "eps-size-too-big",
        lambda: synthesize(X5, 1.0, (0, 1), public_size=False, epsilon_size=1.0),
        ValueError,
        "epsilon_size must be smaller than epsilon",
    ),
    case(
        "eps-size-nan",
        lambda: synthesize(X5, 1.0, (0, 1), public_size=False, epsilon_size=NAN),
        ValueError,
        "epsilon_size",
    ),
    case(
        "public-size-text",
        lambda: synthesize(X5, 1.0, (0, 1), public_size="no"),
        TypeError,
        "public_size must be True or False, got str",
    ),
    case(
        "public-size-none",
        lambda: synthesize(X5, 1.0, (0, 1), public_size=None),
        TypeError,
        "public_size",
    ),
    case(
        "mechanism", lambda: synthesize(X5, 1.0, (0, 1), mechanism="mst"), ValueError, "mechanism"
    ),
    case(
        "depth-0",
        lambda: synthesize(X5, 1.0, (0, 1), mechanism="pruned", depth=0),
        ValueError,
        "depth",
    ),
    case(
        "depth-above-max",
        lambda: synthesize(X5, 1.0, (0, 1), mechanism="pmm", depth=105),
        ValueError,
        "depth",
    ),
    case(
        "depth-adaptive",
        lambda: synthesize(X5, 1.0, (0, 1), depth=3),
        ValueError,
        "depth applies only",
    ),
    case(
        "placement", lambda: synthesize(X5, 1.0, (0, 1), placement="edge"), ValueError, "placement"
    ),
    case("no-seed-parameter", lambda: synthesize(X5, 1.0, (0, 1), seed=2), TypeError, "seed"),
]


@pytest.mark.parametrize("thunk,exc,match", SYNTH_CASES)
def test_synthesize_rejects(thunk, exc, match):
    with pytest.raises(exc, match=match):
        thunk()


def test_synthesize_accepts_every_documented_bounds_form():
    forms = [
        (0, 1),
        ([0, 0], [1, 1]),
        {"lower": [0, 0], "upper": [1, 1]},
        {0: (0, 1), 1: (0, 1)},
        Box((0.0, 0.0), (1.0, 1.0)),
    ]
    outs = []
    for bounds in forms:
        with runtime.reproducible(1):
            outs.append(synthesize(X5, 1.0, bounds, mechanism="pruned")[0])
    assert all(np.array_equal(outs[0], o) for o in outs)


SELECT_CASES = [
    case("m-0", lambda: select_candidates(X5, C3, 0, 1.0), ValueError, "m must be >= 1"),
    case("m-float", lambda: select_candidates(X5, C3, 2.5, 1.0), TypeError, "m must be an integer"),
    case("k-0", lambda: select_candidates(X5, np.zeros((0, 2)), 3, 1.0), ValueError, "candidates"),
    case(
        "duplicate-candidates",
        lambda: select_candidates(X5, [[0, 0], [0, 0]], 3, 1.0),
        ValueError,
        "distinct",
    ),
    case(
        "nan-candidate",
        lambda: select_candidates(X5, [[0, NAN], [1, 1]], 3, 1.0),
        ValueError,
        "candidates must be finite",
    ),
    case(
        "candidate-dims",
        lambda: select_candidates(X5, [[0.0], [1.0]], 3, 1.0),
        ValueError,
        "candidates must have 2 columns",
    ),
    case("eps-0", lambda: select_candidates(X5, C3, 3, 0.0), ValueError, "epsilon"),
    case("eps-nan", lambda: select_candidates(X5, C3, 3, NAN), ValueError, "epsilon"),
    case(
        "eps-tiny", lambda: select_candidates(X5, C3, 3, 1e-60), ValueError, "epsilon is too small"
    ),
    case(
        "mechanism",
        lambda: select_candidates(X5, C3, 3, 1.0, mechanism="mst"),
        ValueError,
        "mechanism",
    ),
    case(
        "ground-metric",
        lambda: select_candidates(X5, C3, 3, 1.0, metric="cosine"),
        ValueError,
        "metric",
    ),
    case(
        "tree-em-private-size",
        lambda: select_candidates(X5, C3, 3, 1.0, mechanism="tree-em", public_size=False),
        ValueError,
        "public_size=True",
    ),
    case(
        "public-size-text",
        lambda: select_candidates(X5, C3, 3, 1.0, public_size="False"),
        TypeError,
        "public_size",
    ),
    case("no-seed-parameter", lambda: select_candidates(X5, C3, 3, 1.0, seed=1), TypeError, "seed"),
    case("D-1d", lambda: select_candidates(X5[:, 0], C3, 3, 1.0), ValueError, "2-dimensional"),
    case(
        "D-bool",
        lambda: select_candidates(np.ones((5, 2), bool), C3, 3, 1.0),
        TypeError,
        "real numbers",
    ),
]


@pytest.mark.parametrize("thunk,exc,match", SELECT_CASES)
def test_select_candidates_rejects(thunk, exc, match):
    with pytest.raises(exc, match=match):
        thunk()


@pytest.mark.parametrize("public_size", [True, False], ids=["public-size", "private-size"])
@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
def test_synthesize_error_does_not_depend_on_data_values(mechanism, public_size):
    """``synthesize`` releases on NaN-free arrays (``array2_domain(nan=False)``): NaN anywhere is
    the same error whatever the other values; +-inf is inside the domain (clamped to the box),
    so arrays that differ only there are both released."""
    for pair in ("nan-at-two-positions", "nan-among-different-values"):
        errs = []
        for x in SAME_SHAPE_BAD_PAIRS[pair]:
            with pytest.raises(ValueError) as info:
                synthesize(x, 1.0, (0, 1), mechanism=mechanism, public_size=public_size)
            errs.append(str(info.value))
        assert errs[0] == errs[1]
        assert "NaN" in errs[0]
    for x in SAME_SHAPE_BAD_PAIRS["inf-vs-minus-inf"]:
        y, report = synthesize(x, 1.0, (0, 1), mechanism=mechanism, public_size=public_size)
        assert np.all((y >= 0) & (y <= 1))


def test_synthesize_integer_arrays_are_documented_valid():
    with runtime.reproducible(0):
        y, rep = synthesize(np.arange(20).reshape(10, 2) % 3, 1.0, (0, 2))
    assert y.shape == (10, 2)
    assert np.all((y >= 0) & (y <= 2))
    assert rep.epsilon == 1.0


# ---------------------------------------------------------------------------------------------
# the CLI


@pytest.fixture
def files(tmp_path):
    def write(name, text):
        p = tmp_path / name
        p.write_text(text)
        return str(p)

    rows = "".join(f"{a},{b}\n" for a, b in np.random.default_rng(1).uniform(size=(30, 2)))
    return {
        "write": write,
        "ok": write("ok.csv", "a,b\n" + rows),
        "bounds": write("b.json", json.dumps({"a": [0, 1], "b": [0, 1]})),
        "out": str(tmp_path / "out.csv"),
        "tmp": tmp_path,
    }


CLI_ERRORS = [
    ("empty-file", "", None, [], "empty"),
    ("header-only", "a,b\n", None, [], "at least one row"),
    ("duplicate-columns", "a,a\n0.1,0.2\n", None, [], "duplicate column"),
    ("bounds-equal", None, {"a": [1, 1], "b": [0, 1]}, [], "column 'a'.*lower < upper"),
    ("bounds-reversed", None, {"a": [1, 0], "b": [0, 1]}, [], "column 'a'.*bounds"),
    ("bounds-infinite", None, '{"a": [0, Infinity], "b": [0, 1]}', [], "column 'a'.*finite"),
    ("bounds-nan", None, '{"a": [NaN, 1], "b": [0, 1]}', [], "column 'a'.*finite"),
    (
        "bounds-width-overflows",
        None,
        {"a": [-1e308, 1e308], "b": [0, 1]},
        [],
        "column 'a'.*finite width",
    ),
    (
        "bounds-missing-column",
        None,
        {"a": [0, 1]},
        [],
        "1 of its 2 header field\\(s\\) are not columns of the schema",
    ),
    (
        "bounds-extra-column",
        None,
        {"a": [0, 1], "b": [0, 1], "c": [0, 1]},
        [],
        "schema column\\(s\\) \\['c'\\] are not in it",
    ),
    ("bounds-text", None, {"a": ["0", 1], "b": [0, 1]}, [], "column 'a'.*bound"),
    ("eps-0", None, None, ["--epsilon", "0"], "--epsilon"),
    ("eps-negative", None, None, ["--epsilon", "-1"], "--epsilon"),
    ("eps-nan", None, None, ["--epsilon", "nan"], "--epsilon"),
    ("eps-inf", None, None, ["--epsilon", "inf"], "--epsilon"),
    ("eps-select-too-big", None, None, ["--epsilon-select", "1"], "--epsilon-select"),
    ("seed-negative", None, None, ["--seed", "-1"], "seed"),
]


# values that do not fit are handled per record (missing or unreadable: imputed at the midpoint,
# infinite: clamped), never by an error that would depend on the data (issue 11)
CLI_IMPUTED = [
    ("inf-value", "a,b\n0.1,inf\n0.2,0.3\n"),
    ("overflowing-value", "a,b\n0.1,1e400\n0.2,0.3\n"),
]


@pytest.mark.parametrize("name,csv", CLI_IMPUTED, ids=[c[0] for c in CLI_IMPUTED])
def test_cli_imputes_values_that_do_not_fit(files, capsys, name, csv):
    src = files["write"]("in.csv", csv)
    assert (
        main(
            [
                "synth",
                src,
                "-o",
                files["out"],
                "--bounds",
                files["bounds"],
                "--epsilon",
                "1",
                "--quiet",
            ]
        )
        == 0
    )
    assert open(files["out"]).read().splitlines()[0] == "a,b"
    assert "secret" not in capsys.readouterr().err


@pytest.mark.parametrize("name,csv,bounds,extra,match", CLI_ERRORS, ids=[c[0] for c in CLI_ERRORS])
def test_cli_rejects(files, capsys, name, csv, bounds, extra, match):
    src = files["ok"] if csv is None else files["write"]("in.csv", csv)
    if bounds is None:
        bpath = files["bounds"]
    else:
        bpath = files["write"]("bb.json", bounds if isinstance(bounds, str) else json.dumps(bounds))
    args = [
        "synth",
        src,
        "-o",
        files["out"],
        "--bounds",
        bpath,
        "--epsilon",
        "1",
        "--quiet",
        *extra,
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("opendp-wasserstein: error: ")
    assert len(err.strip().splitlines()) == 1
    assert _search(match, err), err
    assert not (files["tmp"] / "out.csv").exists()  # nothing half-written


@pytest.mark.parametrize(
    "name,data,cands,extra,match",
    [
        ("m-0", None, None, ["-m", "0"], "-m must be at least 1"),
        ("eps-nan", None, None, ["--epsilon", "nan"], "--epsilon"),
        ("columns-mismatch", None, "x,y\n0,0\n1,1\n", [], "columns"),
        ("duplicate-candidates", None, "a,b\n0,0\n0,0\n", [], "distinct"),
        ("nan-in-data", "a,b\n0.1,nan\n", None, [], "column 'b'.*NaN"),
        ("tree-em-without-flag", None, None, ["--mechanism", "tree-em"], "idealized-numerics"),
    ],
)
def test_cli_select_rejects(files, capsys, name, data, cands, extra, match):
    src = files["ok"] if data is None else files["write"]("d.csv", data)
    cpath = files["write"]("c.csv", cands if cands is not None else "a,b\n0,0\n1,0\n0,1\n")
    args = [
        "select",
        src,
        cpath,
        "-m",
        "3",
        "--epsilon",
        "1",
        "-o",
        files["out"],
        "--quiet",
        *extra,
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("opendp-wasserstein: error: "), err
    assert _search(match, err), err


def test_cli_huge_epsilon(files, capsys):
    rc = main(
        [
            "synth",
            files["ok"],
            "-o",
            files["out"],
            "--bounds",
            files["bounds"],
            "--epsilon",
            "1e308",
            "--quiet",
        ]
    )
    assert rc == 2
    assert "epsilon" in capsys.readouterr().err


def test_cli_error_does_not_depend_on_data_values(files, capsys):
    """NaN (or text) in different rows of column b, among different values: refused (outside the
    domain of --bounds, docs/tables.rst "Missing and non-finite values") with one message that
    names the column and no row or value, so what is printed does not depend on the data."""
    errs = []
    for text in (
        "a,b\n0.1,nan\n0.2,0.3\n",
        "a,b\n0.9,0.7\n0.4,nan\n",
        "a,b\n5,oops\n7,8\n",
        "a,b\n1,2\n3,zzz\n",
    ):
        src = files["write"]("x.csv", text)
        assert (
            main(
                [
                    "synth",
                    src,
                    "-o",
                    files["out"],
                    "--bounds",
                    files["bounds"],
                    "--epsilon",
                    "1",
                    "--quiet",
                ]
            )
            == 2
        )
        errs.append(capsys.readouterr().err)
    assert len(set(errs)) == 1, errs
    assert "column 'b'" in errs[0]


@pytest.mark.parametrize(
    "name,body",
    [
        ("huge-values", "a,b\n1e308,-1e308\n0.5,0.5\n-1e308,1e308\n"),
        ("subnormal-values", "a,b\n5e-324,5e-324\n0.5,0.5\n"),
        ("one-row", "a,b\n0.5,0.5\n"),
        ("duplicate-rows", "a,b\n" + "0.25,0.75\n" * 6),
        ("on-faces-and-planes", "a,b\n0,0\n1,1\n0.5,0.5\n0,1\n"),
    ],
)
def test_cli_valid_edge_inputs(files, name, body):
    src = files["write"]("e.csv", body)
    n = len(body.strip().splitlines()) - 1
    for mech in ("adaptive", "pruned"):
        assert (
            main(
                [
                    "synth",
                    src,
                    "-o",
                    files["out"],
                    "--bounds",
                    files["bounds"],
                    "--epsilon",
                    "1",
                    "--mechanism",
                    mech,
                    "--seed",
                    "3",
                    "--quiet",
                ]
            )
            == 0
        )
        y = np.loadtxt(files["out"], delimiter=",", skiprows=1, ndmin=2)
        assert y.shape == (n, 2)
        assert np.all((y >= 0) & (y <= 1))


# ---------------------------------------------------------------------------------------------
# properties (hypothesis, derandomised): size, bounds, inputs untouched (also read-only)


def _box(draw, d):
    lo = np.array(draw(st.lists(st.floats(-50, 50), min_size=d, max_size=d)))
    width = np.array(draw(st.lists(st.floats(1e-3, 100), min_size=d, max_size=d)))
    return lo, lo + width


@st.composite
def datasets(draw, max_n=24, max_d=3):
    d = draw(st.integers(1, max_d))
    n = draw(st.integers(1, max_n))
    lo, hi = _box(draw, d)
    mid = (lo + hi) / 2
    # values inside, outside, on the faces and on the first split plane of each coordinate
    special = st.sampled_from(["face_lo", "face_hi", "mid", "out_lo", "out_hi", "any"])
    rows = []
    for _ in range(n):
        row = []
        for c in range(d):
            kind = draw(special)
            v = {
                "face_lo": lo[c],
                "face_hi": hi[c],
                "mid": mid[c],
                "out_lo": lo[c] - draw(st.floats(0, 1e6)),
                "out_hi": hi[c] + draw(st.floats(0, 1e6)),
            }.get(kind)
            if v is None:
                v = draw(st.floats(float(lo[c]), float(hi[c])))
            row.append(float(v))
        rows.append(row)
    x = np.array(rows, dtype=np.float64)
    if draw(st.booleans()):
        x.setflags(write=False)
    return x, (lo, hi)


PROPS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _check_release(y, x, keep, lo, hi, n):
    assert np.array_equal(x, keep)
    assert y.ndim == 2
    assert y.shape[1] == x.shape[1]
    if n is not None:
        assert y.shape[0] == n
    assert y.shape[0] >= 1
    assert np.all(np.isfinite(y))
    assert np.all((y >= lo) & (y <= hi))


@PROPS
@given(
    datasets(),
    st.integers(1, 8),
    st.sampled_from(["pruned", "pmm"]),
    st.sampled_from(["center", "uniform"]),
    st.sampled_from(["public", "private", "output_size"]),
    st.integers(0, 2**31),
)
def test_property_pruned_and_pmm(data, depth, mech, placement, size, seed):
    x, (lo, hi) = data
    n, d = x.shape
    keep = x.copy()
    mk = make_pruned_pmm if mech == "pruned" else make_pmm
    scales = paper_schedule(d, 1.0, depth)
    if size == "public":
        meas, rows_out = (
            mk(
                dom(n, d), CO, depth, scales, bounds={"lower": lo, "upper": hi}, placement=placement
            ),
            n,
        )
    elif size == "private":
        meas, rows_out = (
            mk(
                dom(None, d),
                SYM,
                depth,
                scales,
                bounds={"lower": lo, "upper": hi},
                placement=placement,
            ),
            None,
        )
    else:
        m = 1 + seed % 7
        meas, rows_out = (
            mk(
                dom(None, d),
                SYM,
                depth,
                (math.inf, *scales[1:]),
                bounds={"lower": lo, "upper": hi},
                placement=placement,
                output_size=m,
            ),
            m,
        )
    with runtime.reproducible(seed):
        y = meas(x)
    _check_release(y, x, keep, lo, hi, rows_out)


@PROPS
@given(datasets(max_n=16), st.booleans(), st.integers(0, 2**31))
def test_property_adaptive(data, sized, seed):
    x, (lo, hi) = data
    n, d = x.shape
    keep = x.copy()
    if sized:
        meas = make_adaptive_pruned_pmm(
            dom(n, d), CO, 0.3, 0.7, bounds={"lower": lo, "upper": hi}, placement="uniform"
        )
    else:
        meas = make_adaptive_pruned_pmm(
            dom(None, d),
            SYM,
            0.3,
            0.7,
            bounds={"lower": lo, "upper": hi},
            placement="uniform",
            size=1 + seed % 20,
        )
    with runtime.reproducible(seed):
        y = meas(x)
    _check_release(y, x, keep, lo, hi, n if sized else 1 + seed % 20)


@PROPS
@given(
    datasets(max_n=16),
    st.sampled_from(["adaptive", "pruned", "pmm"]),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_property_synthesize(data, mechanism, public_size, seed):
    x, (lo, hi) = data
    keep = x.copy()
    with runtime.reproducible(seed):
        y, rep = synthesize(
            x, 1.0, {"lower": lo, "upper": hi}, mechanism=mechanism, public_size=public_size
        )
    _check_release(y, x, keep, lo, hi, x.shape[0] if public_size else None)
    assert rep.size == y.shape[0]
    assert rep.epsilon <= 1.0


@PROPS
@given(
    datasets(max_n=12, max_d=2),
    st.sampled_from(["tree-em", "tree-projection"]),
    st.integers(0, 2**31),
)
def test_property_public_candidates(data, mech, seed):
    x, (lo, hi) = data
    n, d = x.shape
    keep = x.copy()
    cand = np.random.default_rng(0).uniform(size=(4, d)) * (hi - lo) + lo
    mk = make_tree_em if mech == "tree-em" else make_tree_projection
    with runtime.reproducible(seed):
        out = mk(dom(n, d), CO, cand, 5, 1.0)(x)
    assert np.array_equal(x, keep)
    assert out.shape == (4,)
    assert int(out.sum()) == 5
    assert np.all(out >= 0)
