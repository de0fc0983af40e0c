import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opendp.mod import OpenDPException

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.release.measurement import synthesis_measurement
from opendp_wasserstein.release.options import SynthesisOptions
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import ambient_depth


def _synthesis_measurement(
    d, n, eps, box, mechanism, depth=None, placement="center", epsilon_size=None, delta=None
):
    """The measurement synthesize() releases with, the constructors' post-processing and score
    (their maps are those of every choice)."""
    paper = (
        {"consistency": "paper", "threshold": 0.0} if mechanism in ("adaptive", "pruned") else {}
    )
    if mechanism == "adaptive":
        paper["score"] = "paper"
    opts = SynthesisOptions(
        epsilon=eps,
        mechanism=mechanism,
        depth=depth,
        placement=placement,
        public_size=n is not None,
        epsilon_size=epsilon_size,
        delta=delta,
        **paper,
    )
    return synthesis_measurement(opts, d=d, n=n, box=box)


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
@pytest.mark.parametrize("eps", [1.0, 0.3, 0.7])
def test_synthesize_certifies_epsilon(mechanism, eps):
    x = np.random.default_rng(0).uniform(-1, 1, size=(2000, 3))
    keep = x.copy()
    with reproducible(1):
        y, report = synthesize(x, eps, bounds=(-1, 1), mechanism=mechanism)
    assert np.array_equal(x, keep)
    assert report.epsilon == eps
    assert y.shape == (2000, 3)
    assert np.all((y >= -1) & (y <= 1))
    assert report.visited_nodes >= 1
    assert report.depth >= 1
    assert len(report.scales) == report.depth + 1


@pytest.mark.parametrize("call", ["synthesize", "select_candidates"])
def test_the_api_requires_contrib_and_changes_no_feature(call):
    """The caller enables OpenDP's "contrib" (as in any OpenDP program); without it the API
    refuses, naming the feature, and leaves the caller's features as they were."""
    from opendp_wasserstein._compat import feature_enabled

    x = np.random.default_rng(0).uniform(size=(100, 2))
    dp.disable_features("contrib")
    try:
        with pytest.raises(OpenDPException, match="contrib"):
            if call == "synthesize":
                synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned")
            else:
                select_candidates(x, x[:5], 3, 1.0)
        assert not feature_enabled("contrib")
    finally:
        dp.enable_features("contrib")


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
def test_synthesize_private_size(mechanism):
    x = np.random.default_rng(0).uniform(size=(500, 2))
    with reproducible(2):
        y, report = synthesize(x, 1.0, bounds=(0, 1), mechanism=mechanism, public_size=False)
    assert report.epsilon <= 1.0
    assert report.epsilon == pytest.approx(1.0, rel=1e-12)
    assert y.shape == (report.details["size_estimate"], 2)
    with reproducible(2):
        y2, report2 = synthesize(
            x, 1.0, bounds=(0, 1), mechanism="pruned", public_size=False, depth=7
        )
    assert report2.depth == 7
    assert report2.epsilon <= 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e3), st.sampled_from(["adaptive", "pruned"]), st.booleans())
def test_synthesis_never_certifies_above_the_request(eps, mechanism, public):
    """The measurement synthesize() would release with is certified at most epsilon (issue 10)."""
    meas, _ = _synthesis_measurement(
        2, 300 if public else None, eps, Box((0.0, 0.0), (1.0, 1.0)), mechanism
    )
    assert meas.map(1) <= eps
    assert Fraction(meas.map(1)) <= Fraction(eps)


def test_adaptive_split_never_overspends_on_1000_requests():
    rng = np.random.default_rng(7)
    box = Box((0.0,), (1.0,))
    for eps in np.exp(rng.uniform(np.log(1e-2), np.log(1e2), size=1000)):
        meas, _ = _synthesis_measurement(1, 50, float(eps), box, "adaptive")
        assert meas.map(1) <= eps


# --- issue 10: nothing public is computed from a private n --------------------------------------

X4 = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3], [0.6, 0.6]])
X5 = np.vstack([X4, [[0.9, 0.9]]])


def _public_view(x, seed, **kw):
    with reproducible(seed):
        y, report = synthesize(
            x, 1.0, bounds=(0, 1), mechanism="pruned", public_size=False, placement="center", **kw
        )
    return report.depth, len(y), tuple(sorted(map(tuple, np.round(y, 12))))


def test_private_size_depth_has_overlapping_laws_on_neighbours():
    depths4 = [_public_view(X4, s)[0] for s in range(150)]
    depths5 = [_public_view(X5, s)[0] for s in range(150)]
    assert len(set(depths4)) > 1  # the depth is random: it comes from the noisy count
    common = set(depths4) & set(depths5)
    assert sum(d in common for d in depths4) >= 140
    assert sum(d in common for d in depths5) >= 140


def test_private_size_depth_law_is_exactly_eps_size_private():
    """The depth is a function of n_hat = max(1, n + LapZ(1/eps_size)) alone: its exact law on
    n = 4 and n = 5 differs by at most e^eps_size (here eps_size = 0.1)."""
    eps, eps_size = 1.0, 0.1
    from opendp_wasserstein.core.exact import round_up

    meas, _ = _synthesis_measurement(2, None, eps, Box((0.0, 0.0), (1.0, 1.0)), "pruned")
    assert meas.map(1) <= eps
    scale = round_up(1 / Fraction(eps_size))
    count = dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), scale)
    rest = float(Fraction(eps) - Fraction(count.map(1)))
    a = math.exp(-1 / scale)
    zs = np.arange(-2000, 2001)
    pz = (1 - a) / (1 + a) * a ** np.abs(zs)

    def depth_law(n):
        law: dict[int, float] = {}
        for z, p in zip(zs, pz, strict=True):
            r = ambient_depth(2 * rest, max(1, n + int(z)))
            law[r] = law.get(r, 0.0) + p
        return law

    l4, l5 = depth_law(4), depth_law(5)
    assert set(l4) == set(l5)
    worst = max(max(l4[r] / l5[r], l5[r] / l4[r]) for r in l4 if min(l4[r], l5[r]) > 1e-12)
    assert worst <= math.exp(eps_size) * (1 + 1e-9)
    # the implementation draws exactly this law (seeded, 400 releases, chi-square)
    from scipy import stats

    obs: dict[int, int] = {}
    for s in range(400):
        r = _public_view(X4, s)[0]
        obs[r] = obs.get(r, 0) + 1
    keys = sorted(k for k in l4 if l4[k] * 400 >= 5)
    f_obs = np.array([obs.get(k, 0) for k in keys] + [400 - sum(obs.get(k, 0) for k in keys)])
    f_exp = np.array([l4[k] * 400 for k in keys] + [400 * (1 - sum(l4[k] for k in keys))])
    if f_exp[-1] < 1e-9:
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
    assert stats.chisquare(f_obs, f_exp * f_obs.sum() / f_exp.sum()).pvalue > 1e-6


def test_private_size_points_share_a_support():
    """With centre placement the points lie on the grid of the chosen depth; neighbours must not
    land on disjoint grids (they did when the depth was read off n)."""
    grid4 = {_public_view(X4, s)[0] for s in range(60)}
    grid5 = {_public_view(X5, s)[0] for s in range(60)}
    assert grid4 & grid5


def test_report_holds_only_public_fields_when_n_is_private():
    with reproducible(0):
        y, report = synthesize(X5, 1.0, bounds=(0, 1), public_size=False)
    assert report.size == len(y) == report.details["size_estimate"]
    assert "n" not in report.details


# --- bounds --------------------------------------------------------------------------------------


def test_ambiguous_bounds_are_refused_never_guessed():
    x = np.random.default_rng(0).uniform(size=(50, 2)) * [10, 20]
    with pytest.raises(ValueError, match="ambiguous"):
        synthesize(x, 1.0, bounds=[(0, 10), (5, 20)])
    for ok in (
        {"lower": [0, 5], "upper": [10, 20]},
        Box((0.0, 5.0), (10.0, 20.0)),
        {0: (0, 10), 1: (5, 20)},
    ):
        y, _ = synthesize(x, 1.0, bounds=ok, mechanism="pruned")
        assert y.shape == (50, 2)
    # one reading only is a valid box: no ambiguity
    y, _ = synthesize(x, 1.0, bounds=([0, 0], [10, 20]), mechanism="pruned")
    assert y.shape == (50, 2)
    # per column: a (low, high) pair per column index
    y, _ = synthesize(x, 1.0, bounds={0: (0, 10), 1: (0, 20)}, mechanism="pruned")
    assert np.all(y[:, 1] <= 20)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"bounds": None}, "bounds"),
        ({"bounds": {0: (0, 1)}}, "per-column"),
        ({"epsilon": 0}, "epsilon"),
        ({"mechanism": "mst"}, "mechanism"),
        ({"epsilon_select": 2.0}, "epsilon_select"),
        ({"epsilon_select": 0.1, "mechanism": "pruned"}, "epsilon_select"),
        ({"depth": 5}, "depth"),
        ({"epsilon_size": 0.1}, "epsilon_size"),
        ({"epsilon_size": 2.0, "public_size": False}, "epsilon_size"),
        ({"X": np.zeros(5)}, "2-dimensional"),
        ({"X": np.array([[np.nan, 1.0]])}, "NaN"),
        ({"X": np.zeros((0, 2))}, "at least one row"),
        ({"X": np.array([["a", "b"]])}, "real numbers"),
    ],
)
def test_synthesize_errors(kwargs, match):
    args = {"X": np.zeros((10, 2)), "epsilon": 1.0, "bounds": (0, 1)} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        synthesize(**args)


# Neighbouring data sets (one record added, removed or replaced) inside the input domain:
# whether the call succeeds must not depend on that record.  An empty data set with a private
# size is a neighbour of every one-row data set, and +-inf is clamped to the box like any
# other value outside it.
NEIGHBOURS = [
    (np.zeros((0, 2)), np.full((1, 2), 0.5), False),
    (np.array([[0.5, 0.5], [np.inf, 0.2]]), np.array([[0.5, 0.5], [0.9, 0.2]]), True),
    (np.array([[0.5, 0.5], [-np.inf, np.inf]]), np.array([[0.5, 0.5], [0.9, 0.2]]), False),
]


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm", "privtree"])
@pytest.mark.parametrize("x,neighbour,public_size", NEIGHBOURS)
def test_synthesize_succeeds_on_both_neighbours(mechanism, x, neighbour, public_size):
    for data in (x, neighbour):
        keep = data.copy()
        y, report = synthesize(
            data, 1.0, bounds=(0, 1), mechanism=mechanism, public_size=public_size
        )
        assert np.array_equal(data, keep)
        assert np.all((y >= 0) & (y <= 1))
        assert report.epsilon <= 1.0


def test_synthesize_clamps_infinite_values_to_the_box():
    x = np.array([[np.inf, -np.inf]] * 200)
    with reproducible(0):
        y, _ = synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned", depth=2)
    # every record sits in the corner cell (1, 0) of the box: most of the release does too
    assert np.mean((y[:, 0] >= 0.5) & (y[:, 1] < 0.5)) > 0.9


@pytest.mark.parametrize("mechanism", ["projection", "nn"])
@pytest.mark.parametrize("x,neighbour,public_size", NEIGHBOURS)
def test_select_candidates_succeeds_on_both_neighbours(mechanism, x, neighbour, public_size):
    C = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    for data in (x, neighbour):
        counts, report = select_candidates(
            data, C, 5, 1.0, mechanism=mechanism, public_size=public_size
        )
        assert counts.sum() == 5
        assert report.epsilon <= 1.0


def test_empty_data_with_a_public_size_and_nan_are_refused_by_name():
    C = np.array([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="D must have at least one row"):
        select_candidates(np.zeros((0, 2)), C, 5, 1.0)
    with pytest.raises(ValueError, match="D must not contain NaN"):
        select_candidates(np.array([[np.nan, 0.0]]), C, 5, 1.0, public_size=False)


@pytest.mark.parametrize("mechanism", ["projection", "tree-em", "nn"])
def test_select_candidates(mechanism):
    rng = np.random.default_rng(0)
    D = rng.normal(size=(400, 3))
    C = rng.normal(size=(30, 3))
    keep = D.copy()
    counts, report = select_candidates(D, C, 12, 0.5, mechanism=mechanism)
    assert np.array_equal(D, keep)
    assert counts.shape == (30,)
    assert counts.sum() == 12
    assert np.all(counts >= 0)
    assert report.epsilon == 0.5
    assert report.k == 30


@pytest.mark.parametrize("mechanism", ["projection", "nn"])
def test_select_candidates_private_size(mechanism):
    rng = np.random.default_rng(0)
    D = rng.normal(size=(400, 3))
    C = rng.normal(size=(30, 3))
    counts, report = select_candidates(D, C, 12, 0.5, mechanism=mechanism, public_size=False)
    assert counts.sum() == 12
    assert report.epsilon <= 0.5
    assert report.epsilon == pytest.approx(0.5, rel=1e-12)


def test_select_candidates_errors():
    D = np.zeros((10, 2))
    C = np.array([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="mechanism"):
        select_candidates(D, C, 3, 1.0, mechanism="mst")
    with pytest.raises(ValueError, match="m"):
        select_candidates(D, C, 0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        select_candidates(D, C, 3, 0.0)
    with pytest.raises(ValueError, match="public_size"):
        select_candidates(D, C, 3, 1.0, mechanism="tree-em", public_size=False)


def test_private_size_release_is_reproducible_and_reports_the_scales_used():
    x = np.random.default_rng(0).uniform(size=(300, 2))
    outs = []
    for _ in range(2):
        with reproducible(1):
            y, report = synthesize(x, 1.0, bounds=(0, 1), public_size=False)
        outs.append(y)
    assert np.array_equal(outs[0], outs[1])
    assert math.isinf(report.scales[0])  # the root is neither noised nor charged
    assert report.seconds is None  # timing grows with the private n


# ---------------------------------------------------------------------------------------------
# synthesize(..., delta=...): (epsilon, delta) through the zCDP variants and OpenDP's conversion


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
@pytest.mark.parametrize("eps,delta", [(1.0, 1e-9), (0.5, 1e-6), (2.0, 1e-5), (0.3, 0.01)])
def test_delta_measurement_certifies_the_request_exactly(mechanism, eps, delta):
    from opendp_wasserstein.combinators import rho_for_approx_dp

    dp.enable_features("contrib")
    meas, rho = _synthesis_measurement(
        2, 1000, eps, Box((0.0, 0.0), (1.0, 1.0)), mechanism, placement="uniform", delta=delta
    )
    assert rho == rho_for_approx_dp(eps, delta)
    assert meas.map(1) == (eps, delta)
    assert meas.check(1, (eps, delta))
    assert not meas.check(1, (float(np.nextafter(eps, 0.0)), delta))
    assert not meas.check(1, (eps, float(np.nextafter(delta, 0.0))))


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
def test_synthesize_with_delta_reports_the_pair(mechanism):
    x = np.random.default_rng(0).uniform(-1, 1, size=(1500, 2))
    keep = x.copy()
    with reproducible(3):
        y, report = synthesize(x, 1.0, bounds=(-1, 1), mechanism=mechanism, delta=1e-9)
    assert np.array_equal(x, keep)
    assert (report.epsilon, report.delta) == (1.0, 1e-9)
    assert report.details["rho"] == pytest.approx(0.014973, rel=1e-4)
    assert y.shape == (1500, 2)
    assert np.all((y >= -1) & (y <= 1))
    assert len(report.scales) == report.depth + 1


def test_synthesize_pure_reports_no_delta():
    x = np.random.default_rng(0).uniform(size=(300, 2))
    _, report = synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned")
    assert report.delta is None


def test_synthesize_delta_selection_share():
    x = np.random.default_rng(0).uniform(size=(500, 2))
    with reproducible(0):
        _, report = synthesize(x, 1.0, bounds=(0, 1), delta=1e-6, epsilon_select=0.3)
    assert (report.epsilon, report.delta) == (1.0, 1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-9, 1.5, float("nan")])
def test_synthesize_delta_out_of_range(delta):
    x = np.random.default_rng(0).uniform(size=(100, 2))
    with pytest.raises(ValueError, match="delta must be in \\(0, 1\\)"):
        synthesize(x, 1.0, bounds=(0, 1), delta=delta)


def test_synthesize_delta_not_a_number():
    x = np.random.default_rng(0).uniform(size=(100, 2))
    with pytest.raises(TypeError, match="delta must be a number"):
        synthesize(x, 1.0, bounds=(0, 1), delta="1e-9")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"public_size": False}, "delta needs public_size=True"),
    ],
)
def test_synthesize_delta_unsupported_paths(kwargs, match):
    x = np.random.default_rng(0).uniform(size=(100, 2))
    with pytest.raises(ValueError, match=match):
        synthesize(x, 1.0, bounds=(0, 1), delta=1e-9, **kwargs)


def test_synthesize_delta_with_schema_runs_on_the_tables_hierarchy():
    """``delta`` with a schema: the structured release with discrete Gaussian noise by default,
    or the zCDP one-tree mechanisms on the table's split order (the joint hierarchy of the
    structured release is pure DP and refuses it by name)."""
    import pandas as pd

    from opendp_wasserstein.hierarchy.split_order import SplitOrder
    from opendp_wasserstein.tables import Schema
    from opendp_wasserstein.tables.pipeline import StructuredOptions

    schema = Schema.from_json(
        {
            "columns": {
                "a": {"type": "float", "bounds": [0, 1]},
                "c": {"type": "categorical", "categories": ["x", "y", "z"]},
            }
        }
    )
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.uniform(size=400), "c": rng.choice(["x", "y"], 400).astype(object)})
    for mech in (None, "adaptive", "pruned", "pmm"):
        out, report = synthesize(df, 1.0, schema=schema, delta=1e-9, mechanism=mech)
        assert report.delta == 1e-9
        assert report.epsilon <= 1.0
        assert report.mechanism == (mech or "structured")
        assert set(out["c"]) <= {"x", "y", "z"}
        assert out["a"].between(0, 1).all()
    _, report = synthesize(df, 1.0, schema=schema, delta=1e-9, mechanism="structured")
    assert report.delta == 1e-9
    assert report.details["noise"] == "gaussian"
    with pytest.raises(ValueError, match="joint='tree'"):
        synthesize(df, 1.0, schema=schema, delta=1e-9, structured=StructuredOptions(joint="tree"))
    # and a split order with delta on plain arrays
    x = rng.uniform(size=(300, 2))
    _, report = synthesize(
        x, 1.0, bounds=(0, 1), delta=1e-9, split_order=SplitOrder((1, 0) * 20, (0, 0))
    )
    assert report.delta == 1e-9
    assert report.epsilon <= 1.0


def test_synthesize_score_option():
    """The adaptive selection's score: capped by default, the paper's on request, the same map;
    refused by name for the other mechanisms and for unknown values."""
    import opendp_wasserstein.api as api

    x = np.random.default_rng(0).uniform(size=(2000, 2))
    with reproducible(1):
        _, default = synthesize(x, 1.0, bounds=(0, 1))
        _, paper = synthesize(x, 1.0, bounds=(0, 1), score="paper")
        _, zcdp = synthesize(x, 1.0, bounds=(0, 1), delta=1e-9, score="paper")
    assert api.DEFAULT_SCORE == "capped"
    assert default.details["score"] == "capped"
    assert paper.details["score"] == "paper"
    assert zcdp.details["score"] == "paper"
    assert default.epsilon == paper.epsilon == 1.0
    with pytest.raises(ValueError, match="score applies only to mechanism='adaptive'"):
        synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned", score="paper")
    with pytest.raises(ValueError, match="score must be one of"):
        synthesize(x, 1.0, bounds=(0, 1), score="bound")


def test_synthesize_privtree():
    """mechanism='privtree': the certified map is the budget (public and private size), the
    release has the public size or about n rows, and the options it does not take are refused."""
    x = np.random.default_rng(1).uniform(size=(3000, 3))
    with reproducible(2):
        y, report = synthesize(x, 1.0, bounds=(0, 1), mechanism="privtree")
        z, private = synthesize(x, 1.0, bounds=(0, 1), mechanism="privtree", public_size=False)
    assert report.epsilon == 1.0
    assert private.epsilon == 1.0
    assert y.shape == (3000, 3)
    assert abs(len(z) - 3000) < 300
    assert report.details["leaves"] >= 1
    assert report.visited_nodes >= report.details["leaves"]
    for kwargs, match in [
        ({"delta": 1e-9}, "pure DP only"),
        ({"depth": 5}, "depth applies only"),
        ({"consistency": "paper"}, "consistency and threshold"),
        ({"epsilon_select": 0.1}, "epsilon_select applies only"),
        ({"public_size": False, "epsilon_size": 0.1}, "epsilon_size does not apply"),
        ({"score": "paper"}, "score applies only"),
    ]:
        with pytest.raises(ValueError, match=match):
            synthesize(x, 1.0, bounds=(0, 1), mechanism="privtree", **kwargs)
