"""The network of noisy 2- and 3-way tables: exact maps (pure DP and zCDP), the score's
sensitivity by enumeration, the public sizes, the candidates, the seeded sampler and a 3-way
relation a tree cannot hold."""

import itertools
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein import synthesize
from opendp_wasserstein.combinators import make_approx_dp, rho_for_approx_dp
from opendp_wasserstein.core.exact import round_down, round_up, sqrt_up
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.tables import (
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
    make_table_encoding,
    table_domain,
)
from opendp_wasserstein.tables.marginals import TableMarginals, column_plans
from opendp_wasserstein.tables.network import (
    NETWORK_MIN_BINS,
    NETWORK_NOISE_PENALTY,
    NETWORK_SURE_MIN_BINS,
    Clique,
    NetworkCoding,
    _sure_clique,
    candidates,
    clique_penalty,
    conditional_rows,
    make_clique_counts,
    make_clique_scores,
    make_network,
    network_bins,
    network_cells,
    network_codings,
    network_column_bins,
    network_template,
    sample_network,
)
from opendp_wasserstein.tables.pairs import (
    PairCoding,
    pair_count_scale,
    pair_score_sensitivity,
    tree_template,
    zcdp_selection,
)
from opendp_wasserstein.tables.pipeline import (
    NETWORK_MAX_NEPS_PURE,
    NETWORK_MIN_NEPS_ZCDP,
    PAIRS_MIN_NEPS,
    PAIRS_MIN_NEPS_ZCDP,
    SMALL_JOINT_ZCDP,
    SMALL_MARGINAL_SHARE,
    StructuredOptions,
    joint_kind,
    make_structured_synthesis,
    structured_zcdp,
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


def _pair_coding(bins):
    edges, sizes = [], []
    for p in PLANS:
        if p.kind == "category":
            edges.append(None)
            sizes.append(p.cells)
        else:
            edges.append(np.linspace(0, 1, bins + 1))
            sizes.append(bins + (1 if p.missing_axis is not None else 0))
    return PairCoding(PLANS, tuple(edges), tuple(sizes))


def _coding(max_cells=64):
    return NetworkCoding(_pair_coding(4), _pair_coding(2), max_cells)


def _uniform_marginals(n):
    masses = tuple(
        np.full(
            p.cells if p.kind == "category" else 16, 1.0 / (p.cells if p.kind == "category" else 16)
        )
        for p in PLANS
    )
    missing = tuple(0.25 if p.missing_axis is not None else 0.0 for p in PLANS)
    return TableMarginals(PLANS, masses, missing, n)


def _domain(n, d=ENC.dimension):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float, nan=False)


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


def test_network_sizes_are_public_functions_at_their_bounds():
    # s = 2 (k - 1) / eps = 4 at k = 3, eps 1: cells = floor(n / (2 * 4))
    assert network_cells(800, 1.0, 3) == 100
    assert network_cells(799, 1.0, 3) == 99
    assert network_cells(10, 1.0, 3) == 8
    # the cube root: 125 cells -> 5 bins, 124 -> 4
    assert network_bins(1000, 1.0, 3) == 5
    assert network_bins(992, 1.0, 3) == 4
    # the floor: 3 bins (NETWORK_MIN_BINS), whatever the cells
    assert network_bins(10, 1.0, 3) == NETWORK_MIN_BINS == 3


def test_nullable_coarse_bins_leave_room_for_the_missing_code():
    # 125 cells: (4 + 1)^3 = 125 fits, (5 + 1)^3 does not; 124 cells: (3 + 1)^3 = 64 fits,
    # (4 + 1)^3 = 125 does not; 63 cells: 3 - 1 = 2 bins, raised to the floor of 3
    assert network_bins(1000, 1.0, 3, missing=True) == 4
    assert network_bins(992, 1.0, 3, missing=True) == 3
    assert network_bins(504, 1.0, 3, missing=True) == 3
    assert network_bins(10, 1.0, 3, missing=True) == 3
    # per column from the schema's nullability: x nullable, c categorical (unused), k not
    assert network_column_bins(PLANS, 1000, 1.0) == (4, 5, 5)
    assert network_column_bins(PLANS, 992, 1.0) == (3, 4, 4)


def test_three_nullable_columns_make_a_two_parent_candidate_at_the_cell_bound():
    """Three nullable numeric columns at 125 cells: 4 bins + missing each, 5^3 = 125 cells, so
    the two-parent clique is a candidate; one cell fewer (124: 3 bins + missing, 64 cells) it
    still is, at 63 it is not (the floor's 3 bins), and under the old rule (5 bins + missing,
    216 cells at 125) it never was."""
    schema = Schema({c: FloatColumn(bounds=(0.0, 1.0), nullable=True) for c in "abc"})
    plans = column_plans(TableEncoding(schema))
    marg = TableMarginals(plans, (np.full(16, 1 / 16),) * 3, (0.1,) * 3, 1000)
    for n, sizes in ((1000, 5), (992, 4)):
        coding = network_codings(marg, n, 1.0)
        assert coding.coarse.sizes == (sizes,) * 3
        assert coding.max_cells == n // 8
        assert Clique(2, (0, 1)) in candidates(coding, [0, 1], 3)
    # 63 cells: the floor's 3 bins + missing, 64 cells, do not fit: no two-parent clique
    small = network_codings(marg, 504, 1.0)
    assert small.coarse.sizes == (4, 4, 4)
    assert small.max_cells == 63
    assert Clique(2, (0, 1)) not in candidates(small, [0, 1], 3)
    assert Clique(2, (0,)) in candidates(small, [0, 1], 3)
    old = NetworkCoding.from_marginals(marg, 5, 5, 125)
    assert old.coarse.sizes == (6, 6, 6)
    assert Clique(2, (0, 1)) not in candidates(old, [0, 1], 3)


def test_pair_coding_takes_one_bin_count_per_column():
    marg = _uniform_marginals(100)
    one = PairCoding.from_marginals(marg, 4)
    per = PairCoding.from_marginals(marg, (4, 99, 2))
    assert per.sizes == (5, 3, 2)
    assert per.edges[0] is not None
    np.testing.assert_array_equal(per.edges[0], one.edges[0])
    assert per.edges[1] is None
    np.testing.assert_allclose(per.edges[2], [0.0, 0.5, 1.0], atol=1e-15)
    with pytest.raises(ValueError, match="one per column"):
        PairCoding.from_marginals(marg, (4, 2))


def test_gaussian_network_sizes_read_the_laplace_scale_of_the_same_variance():
    # rho 0.5 over k - 1 = 2 tables: sigma = sqrt(2 / 0.5) = 2, s = sigma / sqrt(2) = sqrt(2):
    # cells = floor(n / (2 sqrt(2))): 2829 / 2.8284 = 1000.2 -> 1000, 2828 -> 999.85 -> 999
    assert pair_count_scale(2, 0.5, "gaussian") == 2.0
    assert network_cells(2829, 0.5, 3, "gaussian") == 1000
    assert network_cells(2828, 0.5, 3, "gaussian") == 999
    assert network_cells(10, 0.5, 3, "gaussian") == 8
    # the cube root: 1000 cells -> 10 bins, 999 -> 9
    assert network_bins(2829, 0.5, 3, "gaussian") == 10
    assert network_bins(2828, 0.5, 3, "gaussian") == 9
    # the Laplace rule at rho read as an epsilon differs: s = 2 * 2 / 0.5 = 8, 2829 / 16 -> 176
    assert network_cells(2829, 0.5, 3) == 176


def test_candidates_first_pairs_then_parents_within_the_cells():
    coding = _coding(max_cells=16)
    first = candidates(coding, [], 3)
    assert first == [Clique(1, (0,)), Clique(2, (0,)), Clique(2, (1,))]
    # x coarse has 3 codes (2 bins and missing), c 3 categories, k 2 bins: 3 * 3 * 2 = 18 > 16
    later = candidates(coding, [0, 1], 3)
    assert later == [Clique(2, (0,)), Clique(2, (1,))]
    wide = candidates(_coding(max_cells=18), [0, 1], 3)
    assert wide == [Clique(2, (0,)), Clique(2, (1,)), Clique(2, (0, 1))]


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_clique_counts_stability_is_exact(metric, unit):
    t = make_clique_counts(_domain(50), metric, _pair_coding(2), Clique(2, (0, 1)))
    assert t.map(unit) == 2
    assert t.map(3 * unit) == 6


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_clique_counts_l2_stability_is_exact(metric, unit):
    t = make_clique_counts(_domain(50), metric, _pair_coding(2), Clique(2, (0, 1)), "l2")
    assert t.output_metric == dp.l2_distance(T=float)
    assert t.map(unit) == 1.4142135623730951
    assert Fraction(t.map(unit)) ** 2 >= 2
    assert Fraction(float(np.nextafter(t.map(unit), 0))) ** 2 < 2
    assert t.map(3 * unit) == sqrt_up(18)
    with pytest.raises(ValueError, match="output_metric"):
        make_clique_counts(_domain(50), metric, _pair_coding(2), Clique(2, (0, 1)), "linf")


def test_clique_counts_are_the_three_way_histogram():
    x = np.random.default_rng(1).uniform(size=(200, ENC.dimension))
    coding = _pair_coding(2)
    t = make_clique_counts(_domain(200), dp.change_one_distance(), coding, Clique(2, (0, 1)))
    got = np.asarray(t(x)).reshape(3, 3, 2)
    codes = [coding.codes(x, c) for c in range(3)]
    want = np.zeros((3, 3, 2), dtype=np.int64)
    np.add.at(want, (codes[0], codes[1], codes[2]), 1)
    assert np.array_equal(got, want)


def test_clique_score_map_is_exact():
    t = make_clique_scores(
        _domain(50), dp.change_one_distance(), _coding(), [Clique(2, (0, 1)), Clique(1, (0,))]
    )
    assert t.map(1) == round_up(Fraction(6) + Fraction(4, 50))
    assert t.map(2) == round_up(2 * (Fraction(6) + Fraction(4, 50)))


def test_clique_penalty_is_the_released_tables_expected_noise_and_zero_in_zcdp():
    coding = _coding()  # fine: x 5 codes (4 bins + missing), c 3, k 4; coarse: x 3, c 3, k 2
    assert NETWORK_NOISE_PENALTY == 1.0
    assert clique_penalty(coding, Clique(2, (0,)), 4.0) == 5 * 4 * 4.0
    assert clique_penalty(coding, Clique(2, (0, 1)), 4.0) == 3 * 3 * 2 * 4.0
    assert clique_penalty(coding, Clique(2, (0, 1)), 4.0, "gaussian") == 0.0


def test_penalised_clique_scores_are_shifted_by_the_public_penalty_at_the_same_map():
    n = 60
    x = np.random.default_rng(3).uniform(size=(n, ENC.dimension))
    cl = [Clique(2, (0, 1)), Clique(1, (0,)), Clique(2, (1,))]
    plain = make_clique_scores(_domain(n), dp.change_one_distance(), _coding(), cl, True)
    pen = [clique_penalty(_coding(), q, 4.0) for q in cl]
    t = make_clique_scores(_domain(n), dp.change_one_distance(), _coding(), cl, True, pen)
    assert t(x) == [a - b for a, b in zip(plain(x), pen, strict=True)]
    bound = round_up(Fraction(6) + Fraction(4, n))
    assert t.map(1) == plain.map(1) == bound
    assert t.check(1, bound)
    assert not t.check(1, float(np.nextafter(bound, 0)))
    with pytest.raises(ValueError, match="penalties"):
        make_clique_scores(_domain(n), dp.change_one_distance(), _coding(), cl, True, pen[:2])
    with pytest.raises(ValueError, match="penalties"):
        make_clique_scores(
            _domain(n), dp.change_one_distance(), _coding(), cl, True, [0.0, np.inf, 0.0]
        )


def test_penalised_selection_exact_law_on_every_replacement_of_small_tables():
    """The pure network's round: the exponential mechanism on the penalised scores.  On every
    table of n = 3 records over a 2 x 2 x 2 grid and every replacement of one record, the
    exact law of the choice (the softmax of ``(score - penalty) / scale`` at the round's scale
    ``2 Delta / eps``, computed in closed form) moves by at most ``e^eps`` per candidate: a
    public penalty keeps the round's map."""
    schema = Schema({v: CategoricalColumn(categories=("p", "q")) for v in ("a", "b", "c")})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    pc = PairCoding(plans, (None, None, None), (2, 2, 2))
    coding = NetworkCoding(pc, pc, 8)
    n, eps = 3, 0.5
    cl = [Clique(2, (0, 1)), Clique(1, (0,)), Clique(2, (1,))]
    pen = [clique_penalty(coding, q, 3.0) for q in cl]
    assert pen == [24.0, 12.0, 12.0]
    scores = make_clique_scores(_domain(n, 3), dp.change_one_distance(), coding, cl, False, pen)
    scale = 2 * float(pair_score_sensitivity(n)) / eps
    pts = enc._cell_points(2)
    cells = [(pts[i], pts[j], pts[h]) for i in range(2) for j in range(2) for h in range(2)]

    def law(x):
        u = np.asarray(scores(x)) / scale
        w = np.exp(u - u.max())
        return w / w.sum()

    worst = 0.0
    for rows in itertools.combinations_with_replacement(range(8), n):
        x = np.array([cells[r] for r in rows])
        p = law(x)
        for pos, new in itertools.product(range(n), range(8)):
            y = x.copy()
            y[pos] = cells[new]
            worst = max(worst, float(np.max(np.abs(np.log(law(y)) - np.log(p)))))
    assert 0 < worst <= eps * (1 + 1e-9)


def test_two_parent_score_sensitivity_holds_on_every_replacement_of_small_tables():
    """Every table of n = 3 records over a 2 x 2 x 2 code grid, every replacement of one
    record: the score of the clique (child c, parents a and b) moves by at most 6 + 4/n."""
    schema = Schema({v: CategoricalColumn(categories=("p", "q")) for v in ("a", "b", "c")})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    pc = PairCoding(plans, (None, None, None), (2, 2, 2))
    coding = NetworkCoding(pc, pc, 8)
    n = 3
    pts = enc._cell_points(2)
    cells = [(pts[i], pts[j], pts[h]) for i in range(2) for j in range(2) for h in range(2)]
    scores = make_clique_scores(
        _domain(n, 3), dp.change_one_distance(), coding, [Clique(2, (0, 1))]
    )
    bound = float(pair_score_sensitivity(n))
    worst = 0.0
    for rows in itertools.combinations_with_replacement(range(8), n):
        x = np.array([cells[r] for r in rows])
        s0 = scores(x)[0]
        for pos, new in itertools.product(range(n), range(8)):
            y = x.copy()
            y[pos] = cells[new]
            worst = max(worst, abs(scores(y)[0] - s0))
    assert worst <= bound
    assert worst > 0


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_network_map_is_exact_and_the_pair_trees(metric, unit):
    n, e_sel, e_cnt = 500, 0.3, 0.6
    meas = make_network(_domain(n), metric, _coding(), _uniform_marginals(n), e_sel, e_cnt)
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
    assert network_template(_domain(n), metric, ENC, e_sel, e_cnt).map(unit) == got
    assert tree_template(_domain(n), metric, ENC, n, 4, e_sel, e_cnt).map(unit) == got


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_gaussian_network_map_is_exact_and_the_pair_trees(metric, unit):
    n, r_sel, r_cnt = 500, 0.01, 0.02
    meas = make_network(
        _domain(n), metric, _coding(), _uniform_marginals(n), r_sel, r_cnt, "gaussian"
    )
    assert meas.output_measure == dp.zero_concentrated_divergence()
    k = 3
    sens = round_up(pair_score_sensitivity(n))
    rho_round = round_down(Fraction(r_sel) / (k - 1))
    sel, scale = zcdp_selection(3, rho_round, sens)
    sigma = pair_count_scale(k - 1, r_cnt, "gaussian")
    count = make_clique_counts(
        _domain(n), metric, _pair_coding(4), Clique(2, (0, 1)), "l2"
    ) >> dp.m.then_gaussian(sigma)
    # OpenDP's maps: the noisy max (sens / scale)^2 / 2, the Gaussian (sqrt(2) / sigma)^2 / 2
    per_round = Fraction(sel.map(sens))
    per_table = Fraction(count.map(unit))
    assert per_round <= Fraction(rho_round)
    assert per_table == pytest.approx((2 / sigma**2) / 2, rel=1e-12)
    expect = round_up((k - 1) * per_round + (k - 1) * per_table)
    got = meas.map(unit)
    assert got == expect
    assert Fraction(got) <= (Fraction(r_sel) + Fraction(r_cnt)) * (1 + Fraction(1, 10**12))
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))
    assert meas.map(2 * unit) >= 4 * got * (1 - 1e-12)  # zCDP: rho grows as the square
    assert network_template(_domain(n), metric, ENC, r_sel, r_cnt, "gaussian").map(unit) == got
    assert tree_template(_domain(n), metric, ENC, n, 4, r_sel, r_cnt, "gaussian").map(unit) == got


def test_gaussian_network_release_is_reproducible_and_keeps_dependence():
    n = 4000
    x = np.random.default_rng(2).uniform(size=(n, ENC.dimension))
    x[:, PLANS[2].value_axis] = x[:, PLANS[0].value_axis]  # k follows x
    meas = make_network(
        _domain(n),
        dp.change_one_distance(),
        _coding(),
        _uniform_marginals(n),
        0.05,
        0.1,
        "gaussian",
    )
    with reproducible(5):
        cliques, tables, _ = meas(x)
    with reproducible(5):
        cliques2, tables2, _ = meas(x)
    assert cliques == cliques2
    for a, b in zip(tables, tables2, strict=True):
        np.testing.assert_array_equal(a, b)
    assert len(cliques) == 2
    assert set(cliques[0].columns) == {0, 2}  # the dependent pair comes first
    secure_cliques, secure_tables, _ = meas(x)  # OpenDP's noisy max and then_gaussian
    assert len(secure_cliques) == 2
    assert set(secure_cliques[0].columns) == {0, 2}
    assert secure_tables[0].dtype == np.int64
    assert secure_tables[0].shape == tuple(_coding().fine.sizes[c] for c in (0, 2))


def test_network_template_cannot_be_invoked():
    t = network_template(_domain(20), dp.change_one_distance(), ENC, 0.3, 0.6)
    with pytest.raises(Exception, match="cannot be invoked"):
        t(np.full((20, ENC.dimension), 0.5))


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_structured_network_map_never_above_epsilon(metric, unit):
    meas = make_structured_synthesis(
        _domain(3000), metric, ENC, 1.0, StructuredOptions(joint="network")
    )
    got = meas.map(unit)
    assert 1.0 * (1 - 1e-9) <= got <= 1.0
    assert meas.check(unit, got)
    assert not meas.check(unit, float(np.nextafter(got, 0)))
    pairs = make_structured_synthesis(
        _domain(3000), metric, ENC, 1.0, StructuredOptions(joint="pairs")
    )
    assert got == pairs.map(unit)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_structured_network_with_delta_is_opendps_conversion_of_the_zcdp_map(metric, unit):
    eps, delta, n = 1.0, 1e-9, 3000
    opts = StructuredOptions(joint="network")
    meas = make_structured_synthesis(_domain(n), metric, ENC, eps, opts, delta=delta)
    assert meas.output_measure == dp.approximate(dp.max_divergence())
    zcdp, rho = structured_zcdp(_domain(n), metric, ENC, eps, delta, opts)
    assert rho == rho_for_approx_dp(eps, delta)
    assert zcdp.output_measure == dp.zero_concentrated_divergence()
    got_rho = zcdp.map(unit)
    assert got_rho <= rho
    assert got_rho >= rho * (1 - 1e-9)
    # the pair tree's budgets: the same zCDP map, so the same certificate
    pairs, _ = structured_zcdp(
        _domain(n), metric, ENC, eps, delta, StructuredOptions(joint="pairs")
    )
    assert got_rho == pairs.map(unit)
    got_eps, got_delta = meas.map(unit)
    assert got_delta == delta
    assert got_eps <= eps
    assert (got_eps, got_delta) == make_approx_dp(zcdp, delta).map(unit)
    assert meas.check(unit, (got_eps, delta))
    assert not meas.check(unit, (float(np.nextafter(got_eps, 0)), delta))


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_small_table_with_delta_is_the_network_at_the_small_share_and_its_exact_map(metric, unit):
    """Below ``PAIRS_MIN_NEPS``, from ``PAIRS_MIN_NEPS_ZCDP`` (public ``n eps / k``), the
    default release with ``delta`` is the network with the first look at
    ``SMALL_MARGINAL_SHARE`` of ``rho``: the same zCDP map as asking for it, at most ``rho``,
    its first look's at most the share, and OpenDP's conversion certifies ``(eps', delta)``
    with ``eps' <= eps``, exact (false just below)."""
    eps, delta = 1.0, 1e-9
    n = int(np.ceil(PAIRS_MIN_NEPS_ZCDP * len(SCHEMA) / eps))  # the threshold itself
    auto, rho = structured_zcdp(_domain(n), metric, ENC, eps, delta)
    forced, _ = structured_zcdp(
        _domain(n),
        metric,
        ENC,
        eps,
        delta,
        StructuredOptions(joint=SMALL_JOINT_ZCDP, marginal_share=float(SMALL_MARGINAL_SHARE)),
    )
    got = auto.map(unit)
    assert got == forced.map(unit)
    assert rho * (1 - 1e-9) <= got <= rho
    meas = make_structured_synthesis(_domain(n), metric, ENC, eps, None, delta=delta)
    got_eps, got_delta = meas.map(unit)
    assert got_delta == delta
    assert got_eps <= eps
    assert meas.check(unit, (got_eps, delta))
    assert not meas.check(unit, (float(np.nextafter(got_eps, 0)), delta))
    x = make_table_encoding(table_domain(SCHEMA, size=n), dp.change_one_distance())(_frame(n))
    with reproducible(3), diagnostics() as rec:
        auto(x)
    info = [r for r in rec if r.get("structured")][-1]
    assert info["joint_kind"] == SMALL_JOINT_ZCDP
    assert info["rho_marginals"] <= float(SMALL_MARGINAL_SHARE) * rho
    assert info["rho_marginals"] >= float(SMALL_MARGINAL_SHARE) * rho * (1 - 1e-9)


def test_small_table_with_delta_is_the_forced_network_row_for_row_and_pure_is_the_copula():
    df = _frame(int(np.ceil(2 * PAIRS_MIN_NEPS_ZCDP * len(SCHEMA))))  # n eps / k = 360 at eps 1
    with reproducible(7):
        a, ra = synthesize(df, 1.0, schema=SCHEMA, delta=1e-9)
    opts = StructuredOptions(joint=SMALL_JOINT_ZCDP, marginal_share=float(SMALL_MARGINAL_SHARE))
    with reproducible(7):
        b, rb = synthesize(df, 1.0, schema=SCHEMA, delta=1e-9, structured=opts)
    with reproducible(7):
        _, rp = synthesize(df, 1.0, schema=SCHEMA)
    assert a.equals(b)
    assert ra.details["joint_kind"] == SMALL_JOINT_ZCDP
    assert (ra.epsilon, ra.delta) == (rb.epsilon, rb.delta)
    assert ra.epsilon <= 1.0
    assert rp.details["joint_kind"] == "copula"  # pure DP there: the copula


def test_network_release_with_delta_is_gaussian_reproducible_and_keeps_dependence():
    df = _frame(4000)
    opts = StructuredOptions(joint="network")
    with reproducible(7):
        a, ra = synthesize(df, 2.0, schema=SCHEMA, structured=opts, delta=1e-9)
    with reproducible(7):
        b, _ = synthesize(df, 2.0, schema=SCHEMA, structured=opts, delta=1e-9)
    with reproducible(7):
        pure, _ = synthesize(df, 2.0, schema=SCHEMA, structured=opts)
    assert a.equals(b)
    assert not a.equals(pure)
    assert ra.details["joint_kind"] == "network"
    assert ra.details["noise"] == "gaussian"
    assert ra.delta == 1e-9
    assert ra.epsilon <= 2.0
    assert ra.details["rho"] == rho_for_approx_dp(2.0, 1e-9)
    assert len(ra.details["network_cliques"]) == 2
    assert a["x"].corr(a["k"], method="spearman") > 0.5
    assert set(a["c"]) <= {"a", "b", "c"}
    assert a["k"].between(0, 9).all()


def test_network_is_an_option_and_auto_keeps_the_pair_tree_on_large_pure_releases():
    assert joint_kind(StructuredOptions(joint="network"), 10, 1.0, 3) == "network"
    assert joint_kind(StructuredOptions(), 10**6, 1.0, 3) == "pairs"


def test_auto_runs_the_network_under_zcdp_from_its_public_threshold():
    """``joint="auto"`` with the discrete Gaussian (a release with ``delta``): the copula
    below ``PAIRS_MIN_NEPS_ZCDP`` per column (test_copula: from ``COPULA_MIN_NEPS_ZCDP``,
    independent columns below), the small tables' network
    (``SMALL_JOINT_ZCDP``) up to ``PAIRS_MIN_NEPS``, the pair tree from there, the network from
    ``NETWORK_MIN_NEPS_ZCDP``."""
    o, k = StructuredOptions(), 3
    at = int(NETWORK_MIN_NEPS_ZCDP * k)
    small, switch = int(PAIRS_MIN_NEPS_ZCDP * k), int(PAIRS_MIN_NEPS * k)
    assert joint_kind(o, at, 1.0, k, "gaussian") == "network"
    assert joint_kind(o, at - 1, 1.0, k, "gaussian") == "pairs"
    assert joint_kind(o, switch, 1.0, k, "gaussian") == "pairs"
    assert joint_kind(o, switch - 1, 1.0, k, "gaussian") == SMALL_JOINT_ZCDP
    assert joint_kind(o, small, 1.0, k, "gaussian") == SMALL_JOINT_ZCDP
    assert joint_kind(o, small - 1, 1.0, k, "gaussian") == "copula"
    assert joint_kind(o, 10**9, 1.0, k, "gaussian") == "network"
    # pure DP: the copula there (from COPULA_MIN_NEPS), not the network
    assert joint_kind(o, switch - 1, 1.0, k) == "copula"
    assert joint_kind(o, small, 1.0, k) == "copula"
    assert joint_kind(StructuredOptions(joint="pairs"), 10**9, 1.0, k, "gaussian") == "pairs"


def test_auto_runs_the_network_under_pure_dp_below_its_public_threshold():
    """Pure DP: the copula below ``PAIRS_MIN_NEPS`` per column (test_copula: from
    ``COPULA_MIN_NEPS``), the network from there, the pair tree from
    ``NETWORK_MAX_NEPS_PURE``."""
    o, k = StructuredOptions(), 3
    lo, hi = int(PAIRS_MIN_NEPS * k), int(NETWORK_MAX_NEPS_PURE * k)
    assert joint_kind(o, lo - 1, 1.0, k) == "copula"
    assert joint_kind(o, lo, 1.0, k) == "network"
    assert joint_kind(o, hi - 1, 1.0, k) == "network"
    assert joint_kind(o, hi, 1.0, k) == "pairs"
    assert joint_kind(StructuredOptions(joint="pairs"), lo, 1.0, k) == "pairs"


def test_auto_with_delta_is_the_network_release_and_certificate():
    """At ``n eps / k >= NETWORK_MIN_NEPS_ZCDP`` the default release with ``delta`` is the
    ``joint="network"`` release, row for row under a seed, with its certificate."""
    df = _frame(4000)  # 3 columns: n eps / k = 2667 at eps 2
    with reproducible(7):
        a, ra = synthesize(df, 2.0, schema=SCHEMA, delta=1e-9)
    with reproducible(7):
        b, rb = synthesize(
            df, 2.0, schema=SCHEMA, delta=1e-9, structured=StructuredOptions(joint="network")
        )
    with reproducible(7):
        _, rp = synthesize(df, 2.0, schema=SCHEMA)
    assert a.equals(b)
    assert ra.details["joint_kind"] == "network"
    assert (ra.epsilon, ra.delta) == (rb.epsilon, rb.delta)
    assert rp.details["joint_kind"] == "pairs"


def test_conditional_rows_exact_values():
    table = np.array([[6.0, 2.0], [-1.0, -1.0]])
    prior = np.array([[0.5, 0.5], [0.25, 0.75]])
    got = conditional_rows(table, np.array([8.0, 0.0]), prior, 2.0)
    # row 0: projected (6, 2), mixed with 2 * (0.5, 0.5): (7, 3) / 10; row 1: empty, the prior
    assert np.allclose(got, [[0.7, 0.3], [0.25, 0.75]])


def test_network_release_is_reproducible_with_a_seed_and_keeps_dependence():
    df = _frame(4000)
    opts = StructuredOptions(joint="network")
    with reproducible(7):
        a, ra = synthesize(df, 2.0, schema=SCHEMA, structured=opts)
    with reproducible(7):
        b, _ = synthesize(df, 2.0, schema=SCHEMA, structured=opts)
    with reproducible(8):
        c, _ = synthesize(df, 2.0, schema=SCHEMA, structured=opts)
    assert a.equals(b)
    assert not a.equals(c)
    assert ra.details["joint_kind"] == "network"
    assert ra.epsilon <= 2.0
    assert len(ra.details["network_cliques"]) == 2
    assert df["x"].corr(df["k"], method="spearman") > 0.8
    assert a["x"].corr(a["k"], method="spearman") > 0.5
    assert set(a["c"]) <= {"a", "b", "c"}
    assert a["k"].between(0, 9).all()
    assert a["x"].dropna().between(0.0, 10.0).all()


def test_sampler_keeps_a_three_way_relation_no_pair_holds():
    """c = a xor b with a, b independent fair bits: every pair is independent, the triple is
    not.  From the exact 3-way table the seeded sampler draws rows with c = a xor b."""
    schema = Schema({v: CategoricalColumn(categories=("0", "1")) for v in ("a", "b", "c")})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    pc = PairCoding(plans, (None, None, None), (2, 2, 2))
    coding = NetworkCoding(pc, pc, 8)
    n = 4000
    half = np.array([0.5, 0.5])
    marg = TableMarginals(plans, (half, half, half), (0.0, 0.0, 0.0), n)
    t_ab = np.full((2, 2), n // 4, dtype=np.int64)
    t_abc = np.zeros((2, 2, 2), dtype=np.int64)
    for i, j in itertools.product(range(2), range(2)):
        t_abc[i, j, i ^ j] = n // 4
    cliques = [Clique(1, (0,)), Clique(2, (0, 1))]
    pts = sample_network(coding, marg, cliques, [t_ab, t_abc], n, RandomSource(3), 1.0)
    again = sample_network(coding, marg, cliques, [t_ab, t_abc], n, RandomSource(3), 1.0)
    assert np.array_equal(pts, again)
    codes = np.stack([pc.codes(pts, c) for c in range(3)], axis=1)
    xor = np.mean(codes[:, 2] == (codes[:, 0] ^ codes[:, 1]))
    assert xor > 0.99
    assert abs(np.mean(codes[:, 0]) - 0.5) < 0.01
    assert abs(np.mean(codes[:, 1]) - 0.5) < 0.05


def test_network_int_codes_cut_at_the_leaf_edges_with_the_encoding():
    """As the pair tree's codes: ``k`` is 4 in 60 of 96 records (one leaf per value), so the
    quantiles fall inside value 4's cell ``[0.4, 0.5)``; with the encoding both the fine and
    the coarse codes cut at its edges, without it inside."""
    schema = Schema({"x": FloatColumn(bounds=(0.0, 10.0)), "k": IntColumn(bounds=(0, 9))})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    counts = np.r_[4, 4, 4, 4, 60, 4, 4, 4, 4, 4] / 96
    marg = TableMarginals(plans, (np.full(16, 1 / 16), counts), (0.0, 0.0), 96)
    coding = NetworkCoding.from_marginals(marg, 4, 2, 64, enc)
    np.testing.assert_allclose(coding.fine.edges[1], [0.0, 0.4, 0.5, 1.0], atol=1e-15)
    np.testing.assert_allclose(coding.coarse.edges[1], [0.0, 0.5, 1.0], atol=1e-15)
    plain = NetworkCoding.from_marginals(marg, 4, 2, 64)
    np.testing.assert_allclose(
        plain.coarse.edges[1], [0.0, (4 + (48 - 16) / 60) / 10, 1.0], atol=1e-15
    )
    assert coding.fine.edges[0] is not None
    np.testing.assert_allclose(coding.fine.edges[0], plain.fine.edges[0], atol=0)


# two nullable numeric columns: the network measures the missingness pattern table as the pair
# tree does
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
    c = PairCoding(PLANS2, edges, sizes)
    return NetworkCoding(c, c, 10**4)


def _marginals2(n, miss=0.3):
    masses = tuple(np.full(p.cells or 16, 1.0 / (p.cells or 16)) for p in PLANS2)
    missing = tuple(miss if p.missing_axis is not None else 0.0 for p in PLANS2)
    return TableMarginals(PLANS2, masses, missing, n)


def _domain2(n):
    return dp.numpy.array2_domain(num_columns=ENC2.dimension, size=n, T=float, nan=False)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_network_map_with_the_pattern_table_is_exact_and_the_pair_trees(metric, unit):
    """k - 1 rounds, k - 1 tables at s = 2 (k - 1 + 1/4) / eps_cnt and the pattern table at
    4 s: the pair tree's map at the same budgets."""
    n, e_sel, e_cnt = 500, 0.3, 0.6
    meas = make_network(_domain2(n), metric, _coding2(), _marginals2(n), e_sel, e_cnt)
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
    assert network_template(_domain2(n), metric, ENC2, e_sel, e_cnt).map(unit) == got
    assert tree_template(_domain2(n), metric, ENC2, n, 4, e_sel, e_cnt).map(unit) == got


def test_gaussian_network_map_with_the_pattern_table_is_exact():
    from opendp_wasserstein.tables.pairs import make_pattern_counts

    n, r_sel, r_cnt = 500, 0.01, 0.02
    coding = _coding2()
    meas = make_network(
        _domain2(n), dp.change_one_distance(), coding, _marginals2(n), r_sel, r_cnt, "gaussian"
    )
    k = 3
    sens = round_up(pair_score_sensitivity(n))
    sel, _ = zcdp_selection(3, round_down(Fraction(r_sel) / (k - 1)), sens)
    sigma = pair_count_scale(Fraction(33, 16), r_cnt, "gaussian")
    dom, met = _domain2(n), dp.change_one_distance()
    count = make_clique_counts(dom, met, coding.fine, Clique(1, (0,)), "l2") >> (
        dp.m.then_gaussian(sigma)
    )
    pat = make_pattern_counts(dom, met, coding.fine, "l2") >> dp.m.then_gaussian(4 * sigma)
    expect = round_up(
        (k - 1) * Fraction(sel.map(sens)) + (k - 1) * Fraction(count.map(1)) + Fraction(pat.map(1))
    )
    got = meas.map(1)
    assert got == expect
    assert Fraction(got) <= (Fraction(r_sel) + Fraction(r_cnt)) * (1 + Fraction(1, 10**12))
    assert meas.check(1, got)
    assert not meas.check(1, float(np.nextafter(got, 0)))


def test_network_pattern_keeps_columns_missing_together():
    """x and y are missing together in 30% of the rows: the network's release, drawn with the
    pattern table, keeps them together (without it, a clique not joining x and y drew them
    independently); the pattern is reproducible under a seed."""
    n = 3000
    rng = np.random.default_rng(0)
    gone = rng.uniform(size=n) < 0.3
    z = rng.uniform(0, 10, n)
    df = pd.DataFrame(
        {
            "x": np.where(gone, np.nan, z),
            "c": rng.choice(["a", "b", "c"], n).astype(object),
            "y": np.where(gone, np.nan, np.clip(z + rng.normal(0, 1, n), 0, 10)),
        }
    )
    meas = make_network(_domain2(n), dp.change_one_distance(), _coding2(), _marginals2(n), 1, 4)
    from opendp_wasserstein.tables.frames import read_table

    cols, _ = read_table(df, SCHEMA2)
    pts = ENC2.encode(cols)
    with reproducible(3):
        cliques, tables, pattern = meas(pts)
    with reproducible(3):
        _, _, again = meas(pts)
    np.testing.assert_array_equal(pattern, again)
    assert pattern.dtype == np.int64
    assert pattern.shape == (4,)
    exact = np.bincount(2 * cols["x"].missing + cols["y"].missing, minlength=4)
    assert np.abs(pattern - exact).max() < 60
    # drawn through a clique that does not join x and y: c -> x, c -> y
    coding = _coding2()
    marg = _marginals2(n)
    star = [Clique(0, (1,)), Clique(2, (1,))]
    tabs = []
    for q in star:
        cells = cols["c"].values * 5 + np.where(
            cols[PLANS2[q.child].name].missing,
            4,
            np.minimum((np.nan_to_num(cols[PLANS2[q.child].name].values) / 2.5).astype(int), 3),
        )
        tabs.append(np.bincount(cells, minlength=15).reshape(3, 5))
    with_p = sample_network(coding, marg, star, tabs, n, RandomSource(1), 1.0, exact)
    without = sample_network(coding, marg, star, tabs, n, RandomSource(1), 1.0)
    ax = PLANS2[0].axes[PLANS2[0].missing_axis]
    ay = PLANS2[2].axes[PLANS2[2].missing_axis]
    agree_with = np.mean((with_p[:, ax] >= 0.5) == (with_p[:, ay] >= 0.5))
    agree_without = np.mean((without[:, ax] >= 0.5) == (without[:, ay] >= 0.5))
    assert agree_with > 0.97
    assert agree_without < 0.7


# --- inside bins: the latent placement and the SURE threshold on fine numeric cliques -------

SCHEMA3 = Schema(
    {
        "a": FloatColumn(bounds=(0.0, 1.0)),
        "b": FloatColumn(bounds=(0.0, 1.0)),
        "c": CategoricalColumn(categories=("p", "q")),
        "d": FloatColumn(bounds=(0.0, 1.0)),
    }
)
PLANS3 = column_plans(TableEncoding(SCHEMA3))


def _coding3(bins):
    """Columns a, b, d numeric at ``bins`` equal bins each, c categorical (2 codes)."""
    edges = [
        None if p.kind == "category" else np.linspace(0, 1, bins[i] + 1)
        for i, p in enumerate(PLANS3)
    ]
    sizes = [p.cells if p.kind == "category" else bins[i] for i, p in enumerate(PLANS3)]
    return PairCoding(PLANS3, tuple(edges), tuple(sizes))


def test_sure_rule_is_a_public_function_of_the_codes():
    """The SURE threshold: every column of the clique numeric at ``NETWORK_SURE_MIN_BINS``."""
    lo = NETWORK_SURE_MIN_BINS
    assert lo == 8
    cd = _coding3([lo, lo, 0, lo - 1])
    wide = _coding3([lo + 4, lo, 0, lo])
    assert _sure_clique(cd, Clique(1, (0,)))
    assert not _sure_clique(cd, Clique(1, (0, 2)))
    assert not _sure_clique(cd, Clique(1, (0, 3)))
    assert _sure_clique(wide, Clique(3, (0, 1)))


def test_conditional_rows_floor_drops_cells_below_it():
    """A floor of 5 counts: the 3 is dropped, the 7 lowered to 2, the 100 to 95 (the
    projection onto the row's mass 110 keeps them all), then the prior mixed in at ``lam``."""
    table = np.array([[100.0, 3.0, 7.0]])
    prior = np.array([[0.2, 0.3, 0.5]])
    got = conditional_rows(table, np.array([110.0]), prior, 3.0, 5.0)
    np.testing.assert_allclose(got[0], (np.array([95.0, 0.0, 2.0]) + 3.0 * prior[0]) / 100.0)
    np.testing.assert_allclose(
        conditional_rows(table, np.array([110.0]), prior, 3.0, 0.0),
        conditional_rows(table, np.array([110.0]), prior, 3.0),
        atol=0,
    )


@settings(max_examples=40, deadline=None)
@given(
    noise=st.lists(st.integers(-60, 60), min_size=24, max_size=24),
    mass=st.lists(st.floats(0.0, 500.0), min_size=4, max_size=4),
    floor=st.floats(0.5, 80.0),
    lam=st.floats(0.5, 50.0),
)
def test_conditional_rows_with_a_floor_are_laws(noise, mass, floor, lam):
    """Any noisy table, masses, floor and weight: every row a law (non-negative, sum 1), and a
    cell whose count is at most the floor gets only the (uniform) prior's share: the row's
    smallest value."""
    table = np.asarray(noise, dtype=np.float64).reshape(4, 6)
    prior = np.full((4, 6), 1 / 6)
    got = conditional_rows(table, np.asarray(mass), prior, lam, floor)
    assert np.all(got >= 0)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
    low = table <= floor
    least = np.broadcast_to(got.min(axis=1, keepdims=True), got.shape)
    np.testing.assert_allclose(got[low], least[low], rtol=1e-12, atol=1e-15)
