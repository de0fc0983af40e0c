"""The tree of noisy 2-way marginals: exact maps, the score's sensitivity by enumeration, the
public rule, reproducibility, and outputs within the declared categories and bounds."""

import itertools
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein import synthesize
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import (
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
)
from opendp_wasserstein.tables.calibration import calibrate
from opendp_wasserstein.tables.frames import read_table
from opendp_wasserstein.tables.marginals import TableMarginals, column_plans
from opendp_wasserstein.tables.pairs import (
    PAIR_BINS_MAX,
    FirstLookNoise,
    PairCoding,
    _conditional,
    combine_margins,
    make_pair_counts,
    make_pair_scores,
    make_pair_tree,
    pair_bins,
    pair_count_scale,
    pair_score_sensitivity,
    sample_tree,
    sure_threshold,
    tree_template,
    value_leaves,
    zcdp_selection,
)
from opendp_wasserstein.tables.pipeline import (
    NETWORK_MAX_NEPS_PURE,
    PAIRS_MIN_NEPS,
    StructuredOptions,
    joint_kind,
    make_structured_synthesis,
)

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "c": CategoricalColumn(categories=("a", "b", "c")),
        "k": IntColumn(bounds=(0, 9)),
    }
)
ENC = TableEncoding(SCHEMA)
PLANS = column_plans(ENC)


def _coding(bins=4):
    edges, sizes = [], []
    for p in PLANS:
        if p.kind == "category":
            edges.append(None)
            sizes.append(p.cells)
        else:
            edges.append(np.linspace(0, 1, bins + 1))
            sizes.append(bins + (1 if p.missing_axis is not None else 0))
    return PairCoding(PLANS, tuple(edges), tuple(sizes))


def _uniform_marginals(n):
    masses, missing = [], []
    for p in PLANS:
        masses.append(
            np.full(
                p.cells if p.kind == "category" else 16,
                1.0 / (p.cells if p.kind == "category" else 16),
            )
        )
        missing.append(0.25 if p.missing_axis is not None else 0.0)
    return TableMarginals(PLANS, tuple(masses), tuple(missing), n)


def _domain(n):
    return dp.numpy.array2_domain(num_columns=ENC.dimension, size=n, T=float, nan=False)


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    return pd.DataFrame(
        {
            "x": np.where(rng.uniform(size=n) < 0.2, np.nan, np.clip(5 + 2 * z, 0, 10)),
            "c": np.where(z > 0.5, "a", np.where(z > -0.5, "b", "c")).astype(object),
            "k": np.clip(np.round(4.5 + 2 * z + rng.normal(0, 0.5, n)), 0, 9).astype(np.int64),
        }
    )


def test_pair_bins_is_the_largest_with_enough_rows_per_cell():
    # n / B^2 >= 4 s, s = 2 (k - 1) / eps: n = 10^4, eps 1, k = 3 -> s = 4, B <= sqrt(625) = 25 ->
    # 16
    assert pair_bins(10**4, 1.0, 3) == PAIR_BINS_MAX
    # n = 1600, eps 1, k = 3: B^2 <= 1600 / 16 = 100 -> B = 10 (at the bound), 1599 -> 9
    assert pair_bins(1600, 1.0, 3) == 10
    assert pair_bins(1599, 1.0, 3) == 9
    assert pair_bins(10, 0.1, 8) == 2


def test_the_public_rule_at_its_threshold():
    opts = StructuredOptions()
    k = 5
    n = int(PAIRS_MIN_NEPS * k)
    assert joint_kind(opts, n, 1.0, k) == "network"  # pure DP: the network up to 1000
    assert joint_kind(opts, n - 1, 1.0, k) == "copula"  # the copula below, from 100
    assert joint_kind(opts, int(NETWORK_MAX_NEPS_PURE * k), 1.0, k) == "pairs"
    assert joint_kind(StructuredOptions(joint="tree"), 10, 1.0, k) == "tree"
    assert joint_kind(StructuredOptions(joint="always"), 10, 1.0, k) == "tree"
    assert joint_kind(StructuredOptions(joint="pairs"), 10, 1.0, k) == "pairs"
    assert joint_kind(StructuredOptions(joint="never"), 10**9, 1.0, k) == "independent"
    assert joint_kind(opts, 10**9, 1.0, 1) == "independent"


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_pair_counts_stability_is_exact(metric, unit):
    t = make_pair_counts(_domain(50), metric, _coding(), 0, 1)
    assert t.map(unit) == 2
    assert t.map(3 * unit) == 6


def test_pair_score_sensitivity_exact_and_map():
    assert pair_score_sensitivity(50) == Fraction(6) + Fraction(4, 50)
    t = make_pair_scores(_domain(50), dp.change_one_distance(), _coding(), [(0, 1), (1, 2)])
    assert t.map(1) == round_up(Fraction(6) + Fraction(4, 50))
    assert t.map(2) == round_up(2 * (Fraction(6) + Fraction(4, 50)))


def test_pair_score_sensitivity_holds_on_every_replacement_of_small_tables():
    """Every table of n = 4 records over a 2 x 3 code grid, every replacement of one record:
    the score moves by at most 6 + 4/n (exact enumeration)."""
    schema = Schema(
        {
            "a": CategoricalColumn(categories=("p", "q")),
            "b": CategoricalColumn(categories=("r", "s", "t")),
        }
    )
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    coding = PairCoding(plans, (None, None), (2, 3))
    n = 4
    pa = enc._cell_points(2)
    pb = enc._cell_points(3)
    cells = [(pa[i], pb[j]) for i in range(2) for j in range(3)]
    scores = make_pair_scores(
        dp.numpy.array2_domain(num_columns=2, size=n, T=float, nan=False),
        dp.change_one_distance(),
        coding,
        [(0, 1)],
    )
    bound = float(pair_score_sensitivity(n))
    worst = 0.0
    for rows in itertools.combinations_with_replacement(range(6), n):
        x = np.array([cells[r] for r in rows])
        s0 = scores(x)[0]
        for pos, new in itertools.product(range(n), range(6)):
            y = x.copy()
            y[pos] = cells[new]
            worst = max(worst, abs(scores(y)[0] - s0))
    assert worst <= bound
    assert worst > 0


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_pair_tree_map_is_exact_and_within_its_budget(metric, unit):
    n, e_sel, e_cnt = 500, 0.3, 0.6
    coding = _coding()
    meas = make_pair_tree(_domain(n), metric, coding, _uniform_marginals(n), e_sel, e_cnt)
    k = 3
    eps_round = round_down(Fraction(e_sel) / (k - 1))
    sens = round_up(pair_score_sensitivity(n))
    sel_scale = round_up(2 * Fraction(sens) / Fraction(eps_round))
    cnt_scale = round_up(Fraction(2 * (k - 1)) / Fraction(e_cnt))
    expect = round_up(
        (k - 1) * Fraction(round_up(2 * Fraction(sens) / Fraction(sel_scale)))
        + (k - 1) * Fraction(round_up(Fraction(2) / Fraction(cnt_scale)))
    )
    got = meas.map(unit)
    assert got == expect
    assert got <= (e_sel + e_cnt) * (1 + 1e-12)
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))
    # the template's map is the released measurement's
    assert tree_template(_domain(n), metric, ENC, n, 4, e_sel, e_cnt).map(unit) == got


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_structured_pairs_map_never_above_epsilon(metric, unit):
    meas = make_structured_synthesis(
        _domain(3000), metric, ENC, 1.0, StructuredOptions(joint="pairs")
    )
    got = meas.map(unit)
    assert 1.0 * (1 - 1e-9) <= got <= 1.0
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))


def test_pairs_release_is_reproducible_with_a_seed_and_keeps_dependence():
    df = _frame(4000)
    with reproducible(7):
        a, ra = synthesize(df, 2.0, schema=SCHEMA, structured=StructuredOptions(joint="pairs"))
    with reproducible(7):
        b, _ = synthesize(df, 2.0, schema=SCHEMA, structured=StructuredOptions(joint="pairs"))
    with reproducible(8):
        c, _ = synthesize(df, 2.0, schema=SCHEMA, structured=StructuredOptions(joint="pairs"))
    assert a.equals(b)
    assert not a.equals(c)
    assert ra.details["joint_kind"] == "pairs"
    assert ra.epsilon <= 2.0
    assert len(ra.details["pair_edges"]) == 2
    real = df["x"].corr(df["k"], method="spearman")
    assert real > 0.8
    assert a["x"].corr(a["k"], method="spearman") > 0.5
    assert set(a["c"]) <= {"a", "b", "c"}


@pytest.mark.parametrize("joint", ["tree", "never"])
def test_other_structured_paths_are_reproducible(joint):
    df = _frame(2000, 1)
    with reproducible(3):
        a, _ = synthesize(df, 1.0, schema=SCHEMA, structured=StructuredOptions(joint=joint))
    with reproducible(3):
        b, _ = synthesize(df, 1.0, schema=SCHEMA, structured=StructuredOptions(joint=joint))
    assert a.equals(b)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    m=st.integers(1, 60),
    bins=st.integers(2, 8),
    noise=st.lists(st.integers(-50, 50), min_size=64, max_size=64),
)
def test_sampled_and_calibrated_points_decode_within_the_schema(seed, m, bins, noise):
    """Any noisy tables (negative counts included): the sampled, calibrated points are in the
    cube and decode to declared categories, values within the bounds, nulls only where allowed."""
    coding = _coding(bins)
    marg = _uniform_marginals(100)
    edges = [(0, 1), (1, 2)]
    rng = RandomSource(seed)
    tables = []
    pos = 0
    for i, j in edges:
        size = coding.sizes[i] * coding.sizes[j]
        vals = np.resize(np.asarray(noise), size + pos)[pos : pos + size]
        pos = (pos + size) % 64
        tables.append(vals.reshape(coding.sizes[i], coding.sizes[j]))
    y = sample_tree(coding, marg, edges, tables, m, rng)
    assert y.shape == (m, ENC.dimension)
    assert np.all((y >= 0) & (y <= 1))
    out = calibrate(y, ENC, marg, rng)
    cols = ENC.decode(out)
    x = np.asarray(cols["x"].values, dtype=float)[~np.asarray(cols["x"].missing)]
    assert np.all((x >= 0) & (x <= 10))
    k = np.asarray(cols["k"].values)
    assert np.all((k >= 0) & (k <= 9))
    assert not np.asarray(cols["k"].missing).any()
    assert set(np.asarray(cols["c"].values).tolist()) <= {0, 1, 2}


def test_conditional_rows_drop_cells_below_the_floor():
    """A diagonal row of 100 with noise cells of 3 and 7: the projection onto the row's mass
    (110: threshold 0) keeps them all; a floor of 5 counts drops the 3 and lowers the rest by
    5 (``max(t - max(tau, floor), 0)``); a floor above every cell leaves the row empty, which
    takes the child's law."""
    tab = np.array([[100.0, 3.0, 7.0], [7.0, 100.0, 3.0]])
    mass = np.array([0.5, 0.5])
    child = np.array([0.2, 0.3, 0.5])
    plain = _conditional(tab, mass, child, 220)
    np.testing.assert_allclose(plain[0], [100 / 110, 3 / 110, 7 / 110], atol=1e-12)
    np.testing.assert_allclose(_conditional(tab, mass, child, 220, 0.0), plain, atol=0)
    cut = _conditional(tab, mass, child, 220, 5.0)
    np.testing.assert_allclose(cut[0], [95 / 97, 0.0, 2 / 97], atol=1e-12)
    np.testing.assert_allclose(cut[1], [2 / 97, 95 / 97, 0.0], atol=1e-12)
    # the row's own threshold wins when above the floor: mass 50 -> tau = (110 - 50) / 3 = 20
    np.testing.assert_allclose(
        _conditional(tab, np.array([50 / 220, 0.5]), child, 220, 5.0)[0], [1.0, 0.0, 0.0]
    )
    np.testing.assert_allclose(_conditional(tab, mass, child, 220, 100.0)[0], child, atol=1e-12)


@given(
    t=st.lists(st.integers(-60, 400), min_size=12, max_size=12),
    floor=st.floats(0.0, 200.0),
)
@settings(max_examples=200, deadline=None)
def test_conditional_rows_with_a_floor_are_laws_inside_the_projections_support(t, floor):
    """Any noisy 3 x 4 table and floor: every row is a probability vector; floor 0 is the
    projection; above 0 a cell is positive only where the projection without the floor is and
    the noisy count exceeds the floor (or the row is empty and takes the child's law)."""
    tab = np.asarray(t, dtype=np.float64).reshape(3, 4)
    mass = np.array([0.2, 0.3, 0.5])
    child = np.array([0.1, 0.2, 0.3, 0.4])
    plain = _conditional(tab, mass, child, 1000)
    cut = _conditional(tab, mass, child, 1000, floor)
    assert np.all(cut >= 0)
    np.testing.assert_allclose(cut.sum(axis=1), 1.0, atol=1e-12)
    if floor == 0:
        np.testing.assert_array_equal(cut, plain)
        return
    kept = (plain > 0) & (tab > floor)
    empty = ~kept.any(axis=1)
    np.testing.assert_allclose(cut[empty], np.broadcast_to(child, cut[empty].shape), atol=1e-12)
    assert np.all(cut[~empty][~kept[~empty]] == 0.0)


def test_sample_tree_threshold_keeps_a_diagonal_table_diagonal():
    """A diagonal 4 x 4 table of 910 a cell with every off-diagonal cell at 30, rows of the
    parent's mass 1000: without a scale 9% of the rows leave the diagonal (90 of 1000 a row);
    at the tables' Laplace scale 20 (variance 800) the table's SURE threshold is 30 and none
    do."""
    coding = _coding(4)
    marg = _uniform_marginals(4000)
    k, x = 2, 0
    tab = np.full((coding.sizes[k], coding.sizes[x]), 30, dtype=np.int64)
    tab[np.arange(4), np.arange(4)] = 910
    tab[:, 4] = 0  # x never missing
    ctab = np.full((coding.sizes[1], coding.sizes[k]), 100, dtype=np.int64)
    edges, tables = [(k, x), (1, k)], [tab, ctab]
    assert sure_threshold(tab, 2 * 20.0**2) == 30.0
    off = {}
    for scale in (0.0, 20.0):
        y = sample_tree(coding, marg, edges, tables, 4000, RandomSource(3), scale=scale)
        bx = np.floor(y[:, PLANS[x].value_axis] * 4)
        bk = np.floor(y[:, PLANS[k].value_axis] * 4)
        off[scale] = float(np.mean(bx != bk))
    assert off[0.0] > 0.06
    assert off[20.0] == 0.0


def _sure_risk(t, v, tau):
    a = np.abs(np.asarray(t, dtype=np.float64))
    return len(a) * v - 2 * v * np.sum(a <= tau) + np.sum(np.minimum(a, tau) ** 2)


@given(
    t=st.lists(st.integers(-100, 3000), min_size=1, max_size=40),
    v=st.floats(0.5, 5000.0),
)
@settings(max_examples=200, deadline=None)
def test_sure_threshold_minimises_the_risk_estimate_over_its_candidates(t, v):
    """Any table and variance: the threshold is 0 or one of the cells' absolute counts, and no
    candidate has a smaller SURE than it."""
    tau = sure_threshold(np.asarray(t, dtype=np.float64), v)
    cands = [0.0] + sorted({abs(float(x)) for x in t})
    assert tau in cands
    best = min(_sure_risk(t, v, c) for c in cands)
    assert _sure_risk(t, v, tau) <= best + 1e-9 * max(1.0, abs(best), len(t) * v)


def test_sure_threshold_is_large_for_sparse_tables_and_zero_for_dense_ones():
    rng = np.random.default_rng(0)
    noise = rng.laplace(0, 20, size=(15, 15))
    sparse = np.diag(np.full(15, 2900.0)) + noise
    dense = np.full((15, 15), 400.0) + noise
    assert sure_threshold(sparse, 800.0) > 20
    assert sure_threshold(dense, 800.0) == 0.0
    assert sure_threshold(np.zeros(0), 800.0) == 0.0
    assert sure_threshold(sparse, 0.0) == 0.0


def test_grade_correlation_exact_values():
    from opendp_wasserstein.tables.pairs import grade_correlation

    assert grade_correlation(np.eye(2) / 2) == pytest.approx(1.0)
    assert grade_correlation(np.eye(3)[::-1]) == pytest.approx(-1.0)
    assert grade_correlation(np.outer([0.2, 0.8], [0.5, 0.3, 0.2])) == pytest.approx(0.0)
    assert grade_correlation(np.array([[1.0, 0.0]])) == 0.0  # one row: no correlation
    assert grade_correlation(np.zeros((2, 2))) == 0.0


def test_copula_placement_keeps_dependence_inside_bins():
    """Along a numeric-numeric edge whose released table is diagonal, the copula placement makes
    the values correlate inside their bins too; uniform placement leaves only the bins'."""
    coding = _coding(4)
    marg = _uniform_marginals(4000)
    x, k = 0, 2  # x (nullable float: 4 bins and a missing code) and k (int: 4 bins)
    tab = np.zeros((coding.sizes[x], coding.sizes[k]), dtype=np.int64)
    tab[np.arange(4), np.arange(4)] = 750
    tab[4, :] = 250  # missing x: k uniform
    ctab = np.full((coding.sizes[0], coding.sizes[1]), 100, dtype=np.int64)
    edges, tables = [(x, k), (x, 1)], [tab, ctab]
    within_r = {}
    for within in ("copula", "uniform", "latent"):
        y = sample_tree(coding, marg, edges, tables, 4000, RandomSource(5), within=within)
        present = y[:, PLANS[x].axes[PLANS[x].missing_axis]] < 0.5
        ux, uk = y[present, PLANS[x].value_axis] * 4 % 1, y[present, PLANS[k].value_axis] * 4 % 1
        same = np.floor(y[present, PLANS[x].value_axis] * 4) == np.floor(
            y[present, PLANS[k].value_axis] * 4
        )
        within_r[within] = np.corrcoef(ux[same], uk[same])[0, 1]
    assert within_r["copula"] > 0.8
    assert within_r["latent"] > 0.99  # 4 bins: below LATENT_MIN_BINS, the copula's placement
    assert abs(within_r["uniform"]) < 0.1
    with pytest.raises(ValueError, match="within"):
        sample_tree(coding, marg, edges, tables, 10, RandomSource(5), within="nope")


def _noise(var=100.0, nodes=16, missing_var=50.0):
    return FirstLookNoise(
        tuple(nodes if p.kind != "category" else p.cells for p in PLANS),
        tuple(var for _ in PLANS),
        tuple(missing_var if p.missing_axis is not None else 0.0 for p in PLANS),
    )


def test_combine_margins_is_the_inverse_variance_mean():
    """Column c (3 categories, in tables (0, 1) and (1, 2)): first look n/3 each at variance
    100; the tables' margins at variance 2 s^2 times the other column's codes; the combined
    count is the exact inverse-variance mean (here already on the simplex)."""
    n = 300
    coding = _coding(4)
    marg = _uniform_marginals(n)
    t01 = np.zeros((5, 3))
    t01[0] = [120, 90, 90]  # margin of c from (x, c): (120, 90, 90), variance 5 * 2 * 4^2
    t12 = np.zeros((3, 4))
    t12[:, 0] = [60, 120, 120]  # margin of c from (c, k): (60, 120, 120), variance 4 * 32
    out = combine_margins(coding, marg, [(0, 1), (1, 2)], [t01, t12], 4.0, _noise())
    w = np.array([1 / 100, 1 / 160, 1 / 128])
    est = (w[0] * 100 + w[1] * np.array([120, 90, 90]) + w[2] * np.array([60, 120, 120])) / w.sum()
    np.testing.assert_allclose(out.masses[1] * n, est)
    assert out.masses[1].sum() == pytest.approx(1.0)


def test_combine_margins_without_noise_keeps_the_truth():
    """Tables whose margins agree with the first look leave every marginal as it was."""
    n = 400
    coding = _coding(4)
    marg = _uniform_marginals(n)
    first = [coding.marginal(marg, c) * n for c in range(3)]
    t01 = np.outer(first[0], first[1]) / n
    t12 = np.outer(first[1], first[2]) / n
    out = combine_margins(coding, marg, [(0, 1), (1, 2)], [t01, t12], 3.0, _noise())
    for a, b in zip(out.masses, marg.masses, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(out.missing, marg.missing, atol=1e-12)


def _spiky_int():
    """96 records: ``k`` is 4 in 60 of them and each other value 0-9 in 4; the first look is
    exact (one leaf per value of ``k``, 16 cells of ``x``, all present)."""
    k = np.concatenate([np.full(60, 4), np.repeat([0, 1, 2, 3, 5, 6, 7, 8, 9], 4)])
    pts = np.zeros((len(k), ENC.dimension))
    px, pc, pk = PLANS
    pts[:, px.axes[px.missing_axis]] = 0.25
    pts[:, px.value_axis] = (np.arange(len(k)) % 16 + 0.5) / 16
    pts[:, pc.value_axis] = 0.25  # category "a"
    pts[:, pk.value_axis] = (k + 0.5) / 10
    masses = (np.full(16, 1 / 16), np.array([1.0, 0.0, 0.0]), np.bincount(k, minlength=10) / 96)
    return pts, TableMarginals(PLANS, masses, (0.0, 0.0, 0.0), len(k))


def test_value_leaves_the_public_rule():
    """An int column is its values' leaves only when it has one leaf per integer."""
    _, marg = _spiky_int()
    assert value_leaves(ENC, marg) == (False, False, True)
    assert value_leaves(ENC, _uniform_marginals(96)) == (False, False, False)  # 16 leaves


def test_int_codes_cut_at_the_leaf_edges_never_inside_a_value():
    """Quantiles 1/4, 1/2, 3/4 all fall inside value 4's cell ``[0.4, 0.5)`` (CDF 16/96 to
    76/96): with the encoding they move to its nearest edges, so value 4 is one code."""
    _, marg = _spiky_int()
    np.testing.assert_allclose(
        PairCoding.from_marginals(marg, 4, ENC).edges[2], [0.0, 0.4, 0.5, 1.0], atol=1e-15
    )
    q = (np.array([24, 48, 72]) - 16) / 60  # the old cuts, inside the cell
    np.testing.assert_allclose(
        PairCoding.from_marginals(marg, 4).edges[2], np.r_[0.0, (4 + q) / 10, 1.0], atol=1e-15
    )


def test_exact_tables_leave_an_exact_spiky_int_marginal_unchanged():
    """Noiseless first look and table: combining keeps ``k``'s marginal with the codes cut at
    leaf edges; with cuts inside value 4's cell (every record at its centre) it moved value 4's
    mass onto its neighbours."""
    pts, marg = _spiky_int()
    dom = dp.numpy.array2_domain(num_columns=ENC.dimension, size=96, T=float, nan=False)
    for enc, same in ((ENC, True), (None, False)):
        coding = PairCoding.from_marginals(marg, 4, enc)
        counts = make_pair_counts(dom, dp.change_one_distance(), coding, 1, 2)
        tab = np.asarray(counts(pts), dtype=np.float64).reshape(3, -1)
        out = combine_margins(coding, marg, [(1, 2)], [tab], 1.0, _noise(1.0, 10))
        assert np.allclose(out.masses[2], marg.masses[2], atol=1e-12) == same


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    bins=st.integers(2, 8),
    scale=st.floats(0.5, 50.0),
    noise=st.lists(st.integers(-80, 80), min_size=64, max_size=64),
)
def test_combined_margins_are_distributions_and_decode_within_the_schema(seed, bins, scale, noise):
    """Any noisy tables: the combined marginals are probability vectors (missing share in
    [0, 1]) on the first look's cells, and the release drawn and calibrated from them decodes
    to declared categories, values within the bounds, nulls only where allowed."""
    coding = _coding(bins)
    marg = _uniform_marginals(100)
    edges = [(0, 1), (1, 2)]
    tables = []
    pos = 0
    for i, j in edges:
        size = coding.sizes[i] * coding.sizes[j]
        vals = np.resize(np.asarray(noise), size + pos)[pos : pos + size]
        pos = (pos + size) % 64
        tables.append(vals.reshape(coding.sizes[i], coding.sizes[j]))
    out = combine_margins(coding, marg, edges, tables, scale, _noise())
    for a, b in zip(out.masses, marg.masses, strict=True):
        assert a.shape == b.shape
        assert np.all(a >= 0)
        assert a.sum() == pytest.approx(1.0)
    assert all(0.0 <= m <= 1.0 for m in out.missing)
    assert out.missing[2] == 0.0
    rng = RandomSource(seed)
    y = calibrate(sample_tree(coding, out, edges, tables, 50, rng), ENC, out, rng)
    cols = ENC.decode(y)
    x = np.asarray(cols["x"].values, dtype=float)[~np.asarray(cols["x"].missing)]
    assert np.all((x >= 0) & (x <= 10))
    k = np.asarray(cols["k"].values)
    assert np.all((k >= 0) & (k <= 9))
    assert set(np.asarray(cols["c"].values).tolist()) <= {0, 1, 2}


@pytest.mark.parametrize("combine", [True, False])
def test_combining_is_post_processing_the_map_is_unchanged(combine):
    meas = make_structured_synthesis(
        _domain(3000),
        dp.change_one_distance(),
        ENC,
        1.0,
        StructuredOptions(joint="pairs", combine=combine),
    )
    ref = make_structured_synthesis(
        _domain(3000), dp.change_one_distance(), ENC, 1.0, StructuredOptions(joint="pairs")
    )
    assert meas.map(1) == ref.map(1)
    assert meas.check(1, 1.0)
    assert not meas.check(1, float(np.nextafter(meas.map(1), 0)))


# ---------------------------------------------------------------------------------------------
# the pair tree in zCDP (discrete Gaussian tables, OpenDP's zCDP noisy max)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_pair_counts_l2_stability_is_exact(metric, unit):
    t = make_pair_counts(_domain(50), metric, _coding(), 0, 1, "l2")
    assert t.output_metric == dp.l2_distance(T=float)
    assert t.map(unit) == 1.4142135623730951
    assert t.map(3 * unit) == sqrt_up(18)


def test_pair_count_scale_of_each_law():
    assert pair_count_scale(2, 0.5) == 8.0
    sigma = pair_count_scale(2, 0.5, "gaussian")  # sqrt(2 / 0.5) = 2
    assert sigma == 2.0
    s = pair_count_scale(3, 0.1, "gaussian")
    assert Fraction(s) ** 2 >= Fraction(3) / Fraction(0.1)
    assert Fraction(float(np.nextafter(s, 0))) ** 2 < Fraction(3) / Fraction(0.1)


def test_gaussian_pair_bins_use_the_laplace_rule_at_the_same_variance():
    # rho 0.02 over k - 1 = 2 tables: sigma = 10, Laplace-equivalent s = 10 / sqrt(2);
    # n / B^2 >= 4 s: n = 10^4 -> B <= sqrt(10^4 / 28.28) = 18.8 -> 16; n = 2000 -> 8.4 -> 8
    assert pair_bins(10**4, 0.02, 3, "gaussian") == PAIR_BINS_MAX
    assert pair_bins(2000, 0.02, 3, "gaussian") == 8
    assert pair_bins(2000, 0.02, 3, "gaussian") != pair_bins(2000, 0.02, 3)


def test_zcdp_selection_map_is_within_rho_and_its_law_is_the_softmax():
    sens = round_up(pair_score_sensitivity(500))
    meas, scale = zcdp_selection(3, 0.05, sens)
    assert meas.output_measure == dp.zero_concentrated_divergence()
    got = meas.map(sens)
    assert Fraction(got) <= Fraction(0.05)
    assert Fraction(got) >= Fraction(0.05) * (1 - Fraction(1, 10**12))
    assert scale == pytest.approx(sens / np.sqrt(0.1), rel=1e-12)
    # OpenDP's map is (d / scale)^2 / 2: a pure exponential mechanism at this scale would cost
    # eps = 2 sens / scale, eps^2 / 2 after make_pureDP_to_zCDP, four times as much
    eps = 2 * sens / scale
    assert eps * eps / 2 == pytest.approx(4 * got, rel=1e-9)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_gaussian_pair_tree_map_is_exact_and_within_its_budget(metric, unit):
    n, r_sel, r_cnt = 500, 0.01, 0.02
    coding = _coding()
    meas = make_pair_tree(
        _domain(n), metric, coding, _uniform_marginals(n), r_sel, r_cnt, "gaussian"
    )
    assert meas.output_measure == dp.zero_concentrated_divergence()
    k = 3
    sens = round_up(pair_score_sensitivity(n))
    sel, _ = zcdp_selection(3, round_down(Fraction(r_sel) / (k - 1)), sens)
    count = make_pair_counts(_domain(n), metric, coding, 0, 1, "l2") >> dp.m.then_gaussian(
        pair_count_scale(k - 1, r_cnt, "gaussian")
    )
    per_round = Fraction(sel.map(sens))  # one replacement moves a score by sens
    expect = round_up((k - 1) * per_round + (k - 1) * Fraction(count.map(unit)))
    got = meas.map(unit)
    assert got == expect
    assert Fraction(got) <= (Fraction(r_sel) + Fraction(r_cnt)) * (1 + Fraction(1, 10**12))
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))
    assert tree_template(_domain(n), metric, ENC, n, 4, r_sel, r_cnt, "gaussian").map(unit) == got


def test_gaussian_pair_tree_is_reproducible_and_keeps_dependence():
    n = 4000
    df = _frame(n)
    cols, _ = read_table(df, SCHEMA)
    enc_points = ENC.encode(cols)
    marg = _uniform_marginals(n)
    coding = _coding(4)
    meas = make_pair_tree(_domain(n), dp.change_one_distance(), coding, marg, 0.05, 0.1, "gaussian")
    with reproducible(5):
        edges, tables, pattern = meas(enc_points)
    with reproducible(5):
        edges2, tables2, pattern2 = meas(enc_points)
    assert pattern is None
    assert pattern2 is None  # one nullable column: no pattern table
    assert edges == edges2
    for a, b in zip(tables, tables2, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(edges) == 2
    assert (0, 2) in edges  # x and k are the dependent pair
    secure_edges, secure_tables, _ = meas(enc_points)
    assert len(secure_edges) == 2
    assert secure_tables[0].dtype == np.int64


def test_combine_margins_weighs_gaussian_tables_by_s_squared():
    """The inverse-variance weights depend on the ratio of the variances only: Gaussian tables
    at scale s (variance s^2) against a first look at variance v weigh as Laplace tables at the
    same s (variance 2 s^2) against 2 v."""
    n = 300
    coding = _coding(4)
    marg = _uniform_marginals(n)
    t01 = np.zeros((5, 3))
    t01[0] = [120, 90, 90]
    t12 = np.zeros((3, 4))
    t12[:, 0] = [60, 120, 120]
    g = combine_margins(
        coding, marg, [(0, 1), (1, 2)], [t01, t12], 4.0, _noise(100.0, 16, 50.0), "gaussian"
    )
    lap = combine_margins(coding, marg, [(0, 1), (1, 2)], [t01, t12], 4.0, _noise(200.0, 16, 100.0))
    for a, b in zip(g.masses, lap.masses, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    w = np.array([1 / 100, 1 / 80, 1 / 64])  # Gaussian: variance 16 times the other's codes
    est = (w[0] * 100 + w[1] * np.array([120, 90, 90]) + w[2] * np.array([60, 120, 120])) / w.sum()
    np.testing.assert_allclose(g.masses[1] * n, est)


# ----------------------------------------------------------------------------------------------
# the missingness pattern table (two nullable numeric columns or more)

SCHEMA2 = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "c": CategoricalColumn(categories=("a", "b", "c")),
        "y": FloatColumn(bounds=(0.0, 10.0), nullable=True),
    }
)
ENC2 = TableEncoding(SCHEMA2)
PLANS2 = column_plans(ENC2)


def _coding2(bins=4):
    edges = tuple(None if p.kind == "category" else np.linspace(0, 1, bins + 1) for p in PLANS2)
    sizes = tuple(p.cells if p.kind == "category" else bins + 1 for p in PLANS2)
    return PairCoding(PLANS2, edges, sizes)


def _marginals2(n, miss=0.3):
    masses = tuple(np.full(p.cells or 16, 1.0 / (p.cells or 16)) for p in PLANS2)
    missing = tuple(miss if p.missing_axis is not None else 0.0 for p in PLANS2)
    return TableMarginals(PLANS2, masses, missing, n)


def _domain2(n):
    return dp.numpy.array2_domain(num_columns=ENC2.dimension, size=n, T=float, nan=False)


def _frame2(n, seed=0):
    """x and y missing together in 30% of the rows, c independent of both flags."""
    rng = np.random.default_rng(seed)
    gone = rng.uniform(size=n) < 0.3
    z = rng.uniform(0, 10, n)
    return pd.DataFrame(
        {
            "x": np.where(gone, np.nan, z),
            "c": rng.choice(["a", "b", "c"], n).astype(object),
            "y": np.where(gone, np.nan, np.clip(z + rng.normal(0, 1, n), 0, 10)),
        }
    )


def test_pattern_columns_the_public_rule():
    from opendp_wasserstein.tables.pairs import PATTERN_MAX_COLUMNS, pair_tables, pattern_columns

    assert pattern_columns(_coding()) == ()  # one nullable column: its codes hold its share
    assert pair_tables(_coding()) == 2
    assert pair_tables(_coding(), "gaussian") == 2
    assert pattern_columns(_coding2()) == (0, 2)
    # k - 1 pair tables and the pattern table at 4 times their scale: a quarter of a table's
    # budget under Laplace noise (2 / s), a sixteenth in zCDP (1 / sigma^2)
    assert pair_tables(_coding2()) == Fraction(9, 4)
    assert pair_tables(_coding2(), "gaussian") == Fraction(33, 16)
    many = Schema({f"v{i}": FloatColumn(bounds=(0.0, 1.0), nullable=True) for i in range(12)})
    plans = column_plans(TableEncoding(many))
    coding = PairCoding(plans, tuple(np.linspace(0, 1, 3) for _ in plans), (3,) * 12)
    assert pattern_columns(coding) == tuple(range(PATTERN_MAX_COLUMNS))


def test_pattern_counts_exact_values_and_stability():
    from opendp_wasserstein.tables.pairs import make_pattern_counts

    df = pd.DataFrame(
        {
            "x": [1.0, np.nan, np.nan, 2.0, 3.0],
            "c": ["a", "b", "c", "a", "b"],
            "y": [np.nan, np.nan, 4.0, 5.0, 6.0],
        }
    )
    cols, _ = read_table(df, SCHEMA2)
    pts = ENC2.encode(cols)
    # patterns (x missing, y missing) as bits, x the most significant: 01, 11, 10, 00, 00
    t = make_pattern_counts(_domain2(5), dp.change_one_distance(), _coding2())
    assert t(pts) == [2, 1, 1, 1]
    assert t.map(1) == 2
    assert t.map(3) == 6
    sym = make_pattern_counts(_domain2(5), dp.symmetric_distance(), _coding2())
    assert sym.map(2) == 2
    l2 = make_pattern_counts(_domain2(5), dp.change_one_distance(), _coding2(), "l2")
    assert l2.map(1) == sqrt_up(Fraction(2))
    with pytest.raises(ValueError, match="fewer than two nullable"):
        make_pattern_counts(_domain(5), dp.change_one_distance(), _coding())


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_pair_tree_map_with_the_pattern_table_is_exact(metric, unit):
    """k - 1 rounds, k - 1 pair tables at s = 2 (k - 1 + 1/4) / eps_cnt and the pattern table
    at 4 s."""
    n, e_sel, e_cnt = 500, 0.3, 0.6
    meas = make_pair_tree(_domain2(n), metric, _coding2(), _marginals2(n), e_sel, e_cnt)
    k = 3
    eps_round = round_down(Fraction(e_sel) / (k - 1))
    sens = round_up(pair_score_sensitivity(n))
    sel_scale = round_up(2 * Fraction(sens) / Fraction(eps_round))
    cnt_scale = round_up(Fraction(2) * Fraction(9, 4) / Fraction(e_cnt))
    expect = round_up(
        (k - 1) * Fraction(round_up(2 * Fraction(sens) / Fraction(sel_scale)))
        + (k - 1) * Fraction(round_up(Fraction(2) / Fraction(cnt_scale)))
        + Fraction(round_up(Fraction(2) / Fraction(4 * cnt_scale)))
    )
    got = meas.map(unit)
    assert got == expect
    assert got <= (e_sel + e_cnt) * (1 + 1e-12)
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))
    assert tree_template(_domain2(n), metric, ENC2, n, 4, e_sel, e_cnt).map(unit) == got


def test_gaussian_pair_tree_map_with_the_pattern_table_is_exact():
    from opendp_wasserstein.tables.pairs import make_pattern_counts

    n, r_sel, r_cnt = 500, 0.01, 0.02
    coding = _coding2()
    meas = make_pair_tree(
        _domain2(n), dp.change_one_distance(), coding, _marginals2(n), r_sel, r_cnt, "gaussian"
    )
    k = 3
    sens = round_up(pair_score_sensitivity(n))
    sel, _ = zcdp_selection(3, round_down(Fraction(r_sel) / (k - 1)), sens)
    sigma = pair_count_scale(Fraction(33, 16), r_cnt, "gaussian")
    assert sigma == sqrt_up(Fraction(33, 16) / Fraction(r_cnt))
    dom, met = _domain2(n), dp.change_one_distance()
    count = make_pair_counts(dom, met, coding, 0, 1, "l2") >> dp.m.then_gaussian(sigma)
    pat = make_pattern_counts(dom, met, coding, "l2") >> dp.m.then_gaussian(4 * sigma)
    expect = round_up(
        (k - 1) * Fraction(sel.map(sens)) + (k - 1) * Fraction(count.map(1)) + Fraction(pat.map(1))
    )
    got = meas.map(1)
    assert got == expect
    assert Fraction(got) <= (Fraction(r_sel) + Fraction(r_cnt)) * (1 + Fraction(1, 10**12))
    assert meas.check(1, got)
    assert not meas.check(1, float(np.nextafter(got, 0)))


def test_pair_tree_releases_the_pattern_and_reproduces_it():
    n = 3000
    cols, _ = read_table(_frame2(n), SCHEMA2)
    pts = ENC2.encode(cols)
    meas = make_pair_tree(_domain2(n), dp.change_one_distance(), _coding2(), _marginals2(n), 1, 4)
    with reproducible(3):
        edges, tables, pattern = meas(pts)
    with reproducible(3):
        _, _, again = meas(pts)
    np.testing.assert_array_equal(pattern, again)
    assert pattern.dtype == np.int64
    assert pattern.shape == (4,)
    exact = np.bincount(2 * cols["x"].missing + cols["y"].missing, minlength=4)
    assert exact[1] == exact[2] == 0  # x and y missing together only
    assert np.abs(pattern - exact).max() < 60  # discrete Laplace at scale 4 * 2 * (9/4) / 4
    _, _, secure = meas(pts)
    assert secure.dtype == np.int64
    assert secure.shape == (4,)


def test_pattern_law_fits_the_missing_shares():
    from opendp_wasserstein.tables.pairs import RAKE_PRIOR, pattern_law

    law = pattern_law(np.array([70, -3, 2, 30]), np.array([0.3, 0.3]))
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    g = law.reshape(2, 2)
    assert g.sum(axis=1)[1] == pytest.approx(0.3, abs=1e-3)  # x's missing share
    assert g.sum(axis=0)[1] == pytest.approx(0.3, abs=1e-12)  # y's (fitted last): exact
    assert law[3] > 0.29
    assert law[1] < 0.01
    assert law[2] < 0.01  # together, as the counts say
    # no counts: the independent law
    flat = pattern_law(np.zeros(4), np.array([0.2, 0.5]))
    np.testing.assert_allclose(flat, [0.4, 0.4, 0.1, 0.1], atol=1e-12)
    assert RAKE_PRIOR > 0
    with pytest.raises(ValueError, match="expected 2"):
        pattern_law(np.zeros(3), np.array([0.2, 0.5]))


def test_pattern_missing_probability_exact_values():
    from opendp_wasserstein.tables.pairs import pattern_missing_probability

    # x, y missing together in 30% of the rows: P(y missing | x missing) = 1, | x present = 0
    law = np.array([[0.7, 0.0], [0.0, 0.3]])
    flags = np.array([[True], [False]])
    tree = np.array([0.3, 0.3])  # the tree says nothing beyond the share
    got = pattern_missing_probability(law, [0], flags, 1, tree)
    np.testing.assert_allclose(got, [1.0, 0.0], atol=1e-12)
    # independent pattern: the tree's probability is kept
    ind = np.outer([0.5, 0.5], [0.8, 0.2])
    got = pattern_missing_probability(ind, [0], flags, 1, np.array([0.6, 0.1]))
    np.testing.assert_allclose(got, [0.6, 0.1], atol=1e-12)
    # both experts: P ~ t q / p against (1 - t)(1 - q)/(1 - p), p = 0.5, q = 0.75, t = 0.75
    law = np.array([[0.25, 0.25], [0.125, 0.375]])
    got = pattern_missing_probability(law, [0], np.array([[True]]), 1, np.array([0.75]))
    p, q, t = 0.625, 0.75, 0.75
    wm, wp = t * q / p, (1 - t) * (1 - q) / (1 - p)
    assert got[0] == pytest.approx(wm / (wm + wp), abs=1e-12)
    # a column never missing
    never = np.array([[0.5, 0.0], [0.5, 0.0]])
    assert pattern_missing_probability(never, [0], flags, 1, tree).tolist() == [0.0, 0.0]


def test_sample_tree_keeps_the_joint_missingness_of_the_pattern():
    """x and y joined only through c (independent of the flags): without the pattern their
    flags are drawn independently; with it they agree."""
    coding = _coding2()
    n = 4000
    marg = _marginals2(n)
    t_xc = np.full((coding.sizes[0], 3), n // 15, dtype=np.int64)  # 5 x 3 cells
    t_cy = np.full((3, coding.sizes[2]), n // 15, dtype=np.int64)
    t_xc[4, :] = t_cy[:, 4] = int(0.3 * n / 3)  # 30% missing
    edges, tables = [(0, 1), (1, 2)], [t_xc, t_cy]
    pattern = np.array([int(0.7 * n), 0, 0, int(0.3 * n)])
    agree = {}
    for with_pattern in (False, True):
        y = sample_tree(
            coding,
            marg,
            edges,
            tables,
            n,
            RandomSource(2),
            pattern=pattern if with_pattern else None,
        )
        mx = y[:, PLANS2[0].axes[0]] >= 0.5
        my = y[:, PLANS2[2].axes[0]] >= 0.5
        agree[with_pattern] = float(np.mean(mx == my))
        assert abs(my.mean() - 0.3) < 0.03
    assert agree[True] == 1.0
    assert agree[False] < 0.7  # independent flags at 30%: 0.7^2 + 0.3^2 = 0.58


def test_structured_release_with_two_nullable_columns_records_the_pattern():
    n = 3000
    df = _frame2(n)
    with reproducible(4):
        out, rep = synthesize(df, 4.0, schema=SCHEMA2, structured=StructuredOptions(joint="pairs"))
    assert rep.details["pair_pattern"] == ["x", "y"]
    assert rep.epsilon <= 4.0
    both = out["x"].isna() == out["y"].isna()
    assert both.mean() > 0.9  # the real rows: always together


def _normal_cells(r, cuts_a, cuts_b):
    from scipy.stats import multivariate_normal

    mvn = multivariate_normal(cov=[[1.0, r], [r, 1.0]])
    ca, cb = np.clip(cuts_a, -12, 12), np.clip(cuts_b, -12, 12)
    f = np.array([[mvn.cdf([a, b]) for b in cb] for a in ca])
    return np.clip(np.diff(np.diff(f, axis=0), axis=1), 0.0, None)


@pytest.mark.parametrize("r", [-0.6, 0.0, 0.5, 0.9, 0.99])
def test_latent_correlation_recovers_the_normal_behind_a_binned_table(r):
    """The table of a bivariate normal's cells (unequal margins): its correlation within 0.01,
    where the grade correlation of the bins is capped by their width."""
    from opendp_wasserstein.tables.pairs import latent_correlation

    t = _normal_cells(r, [-np.inf, -1.0, 0.0, 0.3, 1.5, np.inf], [-np.inf, -0.5, 0.5, np.inf])
    assert latent_correlation(t) == pytest.approx(r, abs=0.01)


def test_latent_correlation_degenerate_tables():
    from opendp_wasserstein.tables.pairs import latent_correlation

    assert latent_correlation(np.zeros((3, 3))) == 0.0
    assert latent_correlation(np.array([[5.0, 3.0, 2.0]])) == 0.0  # one row
    assert latent_correlation(np.outer([0.2, 0.8], [0.5, 0.3, 0.2])) == pytest.approx(0.0, abs=0.02)


@given(
    r=st.floats(-0.9999, 0.9999),
    grade=st.floats(0.0, 1.0),
    lo=st.floats(0.0, 1.0),
    width=st.floats(0.0, 1.0),
    u=st.floats(0.0, 1.0),
)
@settings(max_examples=300, deadline=None)
def test_latent_position_is_a_position_inside_the_bin(r, grade, lo, width, u):
    """Any correlation, parent grade and bin: a finite relative position in [0, 1]."""
    from opendp_wasserstein.tables.pairs import latent_position

    hi = min(1.0, lo + width)
    pos = latent_position(r, np.array([grade]), np.array([lo]), np.array([hi]), np.array([u]))
    assert np.isfinite(pos).all()
    assert ((pos >= 0.0) & (pos <= 1.0)).all()


def test_latent_position_follows_the_parent_and_ignores_a_missing_one():
    """At r near 1 and the same bins, the child's position tracks the parent's; at r = 0 it is
    the child's own uniform (the normal restricted to the bin); a missing parent (NaN): ``u``."""
    from opendp_wasserstein.tables.pairs import latent_position

    rng = np.random.default_rng(3)
    g = rng.uniform(0.25, 0.5, 2000)
    lo, hi, u = np.full(2000, 0.25), np.full(2000, 0.5), rng.uniform(size=2000)
    near = latent_position(0.9999, g, lo, hi, u)
    assert np.corrcoef(near, (g - 0.25) / 0.25)[0, 1] > 0.95
    free = latent_position(0.0, g, lo, hi, u)
    assert np.allclose(free, u, atol=1e-9)
    miss = latent_position(0.9, np.full(5, np.nan), lo[:5], hi[:5], u[:5])
    assert np.array_equal(miss, u[:5])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_codes_memo_gives_the_codings_codes_and_forgets_another_array(seed):
    """The pair tree reads codes through a :class:`CodesMemo`: per column the values of
    ``coding.codes`` on that array (so scores and count tables are unchanged, and with them the
    maps and the releases), recomputed for another array, never the previous array's."""
    from opendp_wasserstein.tables.pairs import CodesMemo, make_pair_counts

    rng = np.random.default_rng(seed)
    coding = _coding()
    n = 40
    x, y = rng.uniform(size=(n, ENC.dimension)), rng.uniform(size=(n, ENC.dimension))
    memo = CodesMemo(coding)
    for arr in (x, y, x):
        for c in range(len(PLANS)):
            assert np.array_equal(memo(arr, c), coding.codes(arr, c))
    pairs = [(0, 1), (1, 2), (0, 2)]
    dom, met = _domain(n), dp.change_one_distance()
    memo = CodesMemo(coding)
    assert make_pair_scores(dom, met, coding, pairs, memo)(y) == make_pair_scores(
        dom, met, coding, pairs
    )(y)
    for i, j in pairs:
        a = make_pair_counts(dom, met, coding, i, j, "l1", memo)(y)
        assert np.array_equal(a, make_pair_counts(dom, met, coding, i, j)(y))
