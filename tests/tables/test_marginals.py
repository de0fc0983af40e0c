"""The private first look: exact maps, the exact law on neighbours, the post-processing."""

from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import (
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
)
from opendp_wasserstein.tables.marginals import (
    BRANCHING,
    QuantileMaps,
    TableMarginals,
    column_leaves,
    column_plans,
    column_trees,
    level_scales,
    level_scales_zcdp,
    make_level_counts,
    make_quantile_encoding,
    make_table_marginals,
    noise_variance,
    project_groups,
    shrink_children,
    tree_estimate,
    tree_levels,
)

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "k": IntColumn(bounds=(0, 4)),
        "c": CategoricalColumn(categories=("a", "b", "c")),
    }
)
ENC = TableEncoding(SCHEMA)


def _points(n: int, seed: int = 0) -> np.ndarray:
    from opendp_wasserstein.tables import RawColumn

    rng = np.random.default_rng(seed)
    cols = {
        "x": RawColumn(rng.uniform(0, 10, n), rng.uniform(size=n) < 0.2),
        "k": RawColumn(rng.integers(0, 5, n).astype(float), np.zeros(n, bool)),
        "c": RawColumn(rng.integers(0, 3, n), np.zeros(n, bool)),
    }
    return ENC.encode(cols)


def _domain(n: int | None) -> dp.Domain:
    return dp.numpy.array2_domain(num_columns=ENC.dimension, size=n, T=float, nan=False)


def test_levels_and_leaves_are_public_functions():
    plans = column_plans(ENC)
    assert [p.kind for p in plans] == ["numeric", "numeric", "category"]
    assert plans[0].axes == (0, 1)
    assert plans[0].missing_axis == 0
    assert column_leaves(plans[1], SCHEMA["k"], 100, 1.0) == 5  # one leaf per int value
    wide = IntColumn(bounds=(0, 999))
    assert column_leaves(plans[1], wide, 300, 1.0) == 32  # one flat level from n eps 256
    assert column_leaves(plans[1], wide, 512, 1.0) == 256
    assert column_leaves(plans[1], wide, 200, 1.0) == 16
    assert column_leaves(plans[1], wide, 10**6, 1.0) == 1000
    assert column_leaves(plans[0], SCHEMA["x"], 10, 0.1) == 16
    assert column_leaves(plans[0], SCHEMA["x"], 10**6, 1.0) == 4096
    assert column_leaves(plans[0], SCHEMA["x"], 255, 1.0) == 16
    assert column_leaves(plans[0], SCHEMA["x"], 256, 1.0) == 32
    assert column_leaves(plans[0], SCHEMA["x"], 511, 1.0) == 32
    assert column_leaves(plans[0], SCHEMA["x"], 512, 1.0) == 256
    assert column_leaves(plans[0], SCHEMA["x"], 4095, 1.0) == 256
    assert column_leaves(plans[0], SCHEMA["x"], 4096, 1.0) == 4096
    assert column_leaves(plans[0], SCHEMA["x"], 400, 1.0, max_levels=1) == 16
    assert column_leaves(plans[1], IntColumn(bounds=(0, 40)), 600, 1.0) == 41
    assert column_leaves(plans[1], IntColumn(bounds=(0, 72)), 400, 1.0) == 73
    assert column_leaves(plans[1], IntColumn(bounds=(0, 255)), 400, 1.0) == 256
    assert column_leaves(plans[1], IntColumn(bounds=(0, 256)), 400, 1.0) == 32
    assert tree_levels(32, "numeric") == (32,)
    assert tree_levels(4096, "numeric") == (4096, 256, 16)
    assert tree_levels(300, "numeric") == (300, 19)
    assert tree_levels(73, "numeric") == (73,)
    assert tree_levels(256, "numeric") == (256, 16)
    assert tree_levels(7, "category") == (7,)


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_level_counts_stability_is_exact_and_tight(metric, unit):
    x = _points(50)
    plan = column_plans(ENC)[0]
    t = make_level_counts(_domain(50 if unit == 1 else None), metric, plan, 16, 0)
    assert t.map(unit) == 2
    assert t.map(3 * unit) == 6
    # a replacement that moves a record from a value cell to "missing": l1 change exactly 2
    y = x.copy()
    row = int(np.flatnonzero(x[:, 0] < 0.5)[0])
    y[row, 0], y[row, 1] = 0.75, 0.5
    assert np.abs(np.subtract(t(x), t(y))).sum() == 2
    assert sum(t(x)) == 50  # every record counted once


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_marginals_map_is_the_sum_of_the_levels(metric, unit):
    n, eps = 200, 0.6
    meas = make_table_marginals(_domain(n), metric, ENC, eps)
    per_column = Fraction(eps) / 3
    expected = Fraction(0)
    for p in column_plans(ENC):
        levels = tree_levels(column_leaves(p, SCHEMA[p.name], n, float(per_column)), p.kind)
        expected += sum(2 / Fraction(sc) for sc in level_scales(float(per_column), len(levels)))
    got = Fraction(meas.map(unit))
    assert expected <= got <= expected * (1 + Fraction(1, 10**12))
    assert got <= Fraction(eps) * (1 + Fraction(1, 10**12))
    assert meas.check(unit, meas.map(unit))
    assert not meas.check(unit, float(np.nextafter(meas.map(unit), 0)))
    assert meas.map(2 * unit) >= 2 * float(expected)


def test_exact_law_ratio_on_neighbours_is_within_the_map():
    """Discrete Laplace on count vectors: the largest log-likelihood ratio of any output between
    neighbours is ``||c - c'||_1 / scale``; over every replacement of one row of a tiny table it
    never exceeds the level's map."""
    n = 6
    x = _points(n, seed=3)
    plan = column_plans(ENC)[2]
    scale = level_scales(0.5, 1)[0]
    meas = make_level_counts(_domain(n), dp.change_one_distance(), plan, 3, 0) >> dp.m.then_laplace(
        scale
    )
    t = make_level_counts(_domain(n), dp.change_one_distance(), plan, 3, 0)
    c = np.array(t(x))
    worst = Fraction(0)
    for row in range(n):
        for code in range(3):
            y = x.copy()
            y[row, ENC.dimension - 1] = (
                ENC._boundaries[3][code] + ENC._boundaries[3][code + 1]
            ) / 2
            ratio = Fraction(int(np.abs(c - np.array(t(y))).sum())) / Fraction(scale)
            worst = max(worst, ratio)
    assert worst == 2 / Fraction(scale)  # some replacement reaches the bound
    assert worst <= Fraction(meas.map(1))
    # the pmf OpenDP samples is the discrete Laplace: chi-square on 20,000 draws of one count
    draws = np.array([meas(x)[0] for _ in range(4000)]) - c[0]
    ks = np.arange(-6, 7)
    p = np.exp(-np.abs(ks) / scale)
    p = p / np.exp(-np.abs(np.arange(-400, 401)) / scale).sum()
    observed = np.array([(draws == k).sum() for k in ks])
    expected = 4000 * p
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert chi2 < 60  # 13 cells; p-value far below 1e-6 beyond this


def test_project_groups_is_the_simplex_projection():
    v = np.array([3.0, -1.0, 2.0, 5.0, 5.0, 5.0, -2.0])
    g = np.array([0, 0, 0, 1, 1, 1, 1])
    out = project_groups(v, g, np.array([4.0, 3.0]))
    np.testing.assert_allclose(out, [2.5, 0.0, 1.5, 1.0, 1.0, 1.0, 0.0])
    rng = np.random.default_rng(0)
    for _ in range(20):
        v = rng.normal(size=9) * 5
        out = project_groups(v, np.zeros(9, np.int64), np.array([7.0]))
        assert out.min() >= 0
        assert abs(out.sum() - 7.0) < 1e-9
        # KKT: positive entries share one shift theta, zeroed ones are below it
        theta = (v - out)[out > 0]
        assert np.ptp(theta) < 1e-9
        assert np.all(v[out == 0] <= theta[0] + 1e-9)


def test_tree_estimate_is_consistent_and_exact_without_noise():
    counts = np.arange(256, dtype=float)
    levels = [counts, np.bincount(np.arange(256) // BRANCHING, weights=counts)]
    est = tree_estimate(levels, counts.sum())
    np.testing.assert_allclose(est, counts)
    noisy = [lv + np.random.default_rng(1).normal(0, 30, len(lv)) for lv in levels]
    est = tree_estimate(noisy, counts.sum())
    assert est.min() >= 0
    assert abs(est.sum() - counts.sum()) < 1e-6


def test_table_marginals_and_quantile_maps():
    n = 3000
    x = _points(n)
    meas = make_table_marginals(_domain(n), dp.change_one_distance(), ENC, 4.0)
    with reproducible(0):
        tm = TableMarginals.from_release(ENC, meas(x), n, 4.0)
    assert abs(tm.missing[0] - 0.2) < 0.05
    np.testing.assert_allclose(tm.masses[2], [1 / 3] * 3, atol=0.05)
    for m in tm.masses:
        assert m.min() >= 0
        assert abs(m.sum() - 1) < 1e-9
    maps = QuantileMaps.from_marginals(tm)
    assert maps.axes == (1, 2)
    y = maps.forward(x)
    np.testing.assert_allclose(maps.inverse(y), x, atol=1e-9)
    assert y.min() >= 0
    assert y.max() <= 1
    t = make_quantile_encoding(_domain(n), dp.change_one_distance(), maps)
    assert t.map(1) == 1
    assert t.map(5) == 5
    np.testing.assert_allclose(t(x), y)
    q = tm.quantiles(1, np.array([0.0, 0.5, 1.0]))
    assert q[0] >= 0
    assert q[-1] <= 1
    assert q[0] <= q[1] <= q[2]


def test_marginals_refuse_unsized_domain_and_wrong_width():
    with pytest.raises(ValueError, match="public n"):
        make_table_marginals(_domain(None), dp.symmetric_distance(), ENC, 1.0)
    bad = dp.numpy.array2_domain(num_columns=2, size=10, T=float, nan=False)
    with pytest.raises(ValueError, match="columns"):
        make_table_marginals(bad, dp.change_one_distance(), ENC, 1.0)


def test_tree_estimate_splits_a_node_by_the_simplex_projection():
    """The down pass projects a node's children onto the simplex of its mass: an atom beside 15
    noisy empty cells keeps 98.125 of its 100 rows (a split in proportion to the clipped counts
    would keep 100 * 100 / 130 = 76.9)."""
    fine = np.array([100.0] + [2.0] * 15 + [0.0] * 16)
    est = tree_estimate([fine, np.array([100.0, 0.0])], 100.0)
    # up: the top node 100 * 16/17 + 130 / 17 = 101.76..., projected onto mass 100: (100, 0);
    # down: theta = (130 - 100) / 16 = 1.875 on the first group, the second group is empty
    assert np.allclose(est, [98.125] + [0.125] * 15 + [0.0] * 16)
    assert est.sum() == pytest.approx(100.0)


def test_quantiles_are_the_inverse_cdf_and_skip_empty_cells():
    plans = column_plans(ENC)
    c = next(i for i, p in enumerate(plans) if p.kind == "numeric")
    masses = [
        np.full(p.cells, 1.0 / p.cells) if p.kind == "category" else np.full(4, 0.25) for p in plans
    ]
    masses[c] = np.array([0.5, 0.0, 0.0, 0.5])
    tm = TableMarginals(plans, tuple(masses), tuple(0.0 for _ in plans), 100)
    q = tm.quantiles(c, np.array([0.0, 0.25, 0.5, 0.75, 1.0]))
    assert np.allclose(q, [0.0, 0.125, 0.75, 0.875, 1.0])
    dense = tm.quantiles(c, np.linspace(0, 1, 1001))
    assert not np.any((dense > 0.25) & (dense < 0.75))  # never inside the empty cells


def test_shrink_children_evens_out_noise_and_keeps_an_atom():
    """Children whose spread is no larger than their noise are split evenly (lambda = 0); an
    atom far above the noise keeps lambda = 1 - (p - 3) var / S, exactly."""
    parent = np.zeros(16, dtype=np.int64)
    flat = np.array([1.0, -1.0] * 8)  # S = 16 <= 13 * var: lambda 0
    np.testing.assert_allclose(
        shrink_children(flat, np.full(16, 4.0), parent, np.array([32.0])), np.full(16, 2.0)
    )
    atom = np.array([160.0] + [0.0] * 15)  # mean 10, S = 150^2 + 15 * 10^2 = 24000
    out = shrink_children(atom, np.full(16, 24000.0 / 26.0), parent, np.array([160.0]))
    lam = 1.0 - 13.0 * (24000.0 / 26.0) / 24000.0  # = 1/2
    np.testing.assert_allclose(out, 10.0 + lam * (atom - 10.0))
    small = np.array([5.0, 0.0, 1.0])  # groups of at most 3 are kept
    out = shrink_children(small, np.full(3, 100.0), np.zeros(3, dtype=np.int64), np.array([6.0]))
    np.testing.assert_allclose(out, small)


def test_tree_estimate_shrinks_the_top_level_only_when_asked():
    noisy = np.array([30.0, -10.0, 25.0, 5.0, -12.0, 22.0])
    plain = tree_estimate([noisy], 60.0, [200.0])
    shrunk = tree_estimate([noisy], 60.0, [200.0], shrink_top=True)
    assert shrunk.sum() == pytest.approx(60.0)
    assert shrunk.min() >= 0
    # one group of 6: lambda = 1 - (6 - 3) 200 / S, S = 1678 the squared deviations from 10
    lam = 1 - 3 * 200 / 1678
    expect = project_groups(10.0 + lam * (noisy - 10.0), np.zeros(6, np.int64), np.array([60.0]))
    np.testing.assert_allclose(shrunk, expect)
    assert np.ptp(shrunk) < np.ptp(plain)


def test_categorical_columns_are_shrunk_toward_the_even_split():
    one = Schema({"c": CategoricalColumn(categories=("a", "b", "c", "d", "e"))})
    enc = TableEncoding(one)
    release = [[40, -6, 30, 8, 28]]
    m = TableMarginals.from_release(enc, release, 100, 1.0)
    z = np.array(release[0], dtype=float)
    expect = (
        tree_estimate(
            [z], 100.0, [noise_variance(level_scales(1.0, 1)[0], "laplace")], shrink_top=True
        )
        / 100.0
    )
    np.testing.assert_allclose(m.masses[0], expect)
    assert not np.allclose(m.masses[0], tree_estimate([z], 100.0, [8.0]) / 100.0)


def test_tree_estimate_with_shrink_keeps_the_mass_and_an_atom():
    rng = np.random.default_rng(3)
    fine = np.zeros(256)
    fine[37] = 500.0
    fine[208:224] = 20.0
    levels = [fine + rng.laplace(0, 8, 256), np.bincount(np.arange(256) // 16, weights=fine)]
    est = tree_estimate(levels, fine.sum(), [128.0, 2.0], shrink=True)
    assert est.min() >= 0
    assert est.sum() == pytest.approx(fine.sum())
    assert est[37] > 450
    # the flat group: an even split, not a few noisy cells holding it
    assert np.ptp(est[208:224]) < 10


# ---------------------------------------------------------------------------------------------
# the first look in zCDP (discrete Gaussian; the structured release with delta)


@pytest.mark.parametrize(
    "metric, sized, unit, expect",
    [
        (dp.change_one_distance(), True, 1, 1.4142135623730951),
        (dp.change_one_distance(), True, 3, 4.242640687119286),
        (dp.symmetric_distance(), True, 2, 1.4142135623730951),
        (dp.symmetric_distance(), True, 3, 1.4142135623730951),
        (dp.symmetric_distance(), False, 3, 3.0),
    ],
)
def test_level_counts_l2_stability_is_sqrt2_per_replacement_rounded_up(metric, sized, unit, expect):
    plan = column_plans(ENC)[0]
    t = make_level_counts(_domain(50 if sized else None), metric, plan, 16, 0, "l2")
    assert t.output_metric == dp.l2_distance(T=float)
    got = t.map(unit)
    assert got == expect
    m = unit if metric == dp.change_one_distance() else unit // 2
    if sized:
        assert Fraction(got) ** 2 >= 2 * m * m
        assert Fraction(float(np.nextafter(got, 0))) ** 2 < 2 * m * m
    # a replacement moves two counts by one: l2 change exactly sqrt(2)
    x = _points(50)
    y = x.copy()
    row = int(np.flatnonzero(x[:, 0] < 0.5)[0])
    y[row, 0], y[row, 1] = 0.75, 0.5
    assert np.square(np.subtract(t(x), t(y))).sum() == 2


def test_level_counts_refuse_an_unknown_metric():
    with pytest.raises(ValueError, match="output_metric must be 'l1' or 'l2'"):
        make_level_counts(_domain(50), dp.change_one_distance(), column_plans(ENC)[0], 16, 0, "l3")


def test_gaussian_level_map_is_opendps_exact_value():
    t = make_level_counts(_domain(50), dp.change_one_distance(), column_plans(ENC)[0], 16, 0, "l2")
    meas = t >> dp.m.then_gaussian(2.0)
    assert meas.output_measure == dp.zero_concentrated_divergence()
    # (sqrt(2) rounded up / 2)^2 / 2 in OpenDP's float arithmetic, rounded up: 1/4 and 1 ulp
    assert meas.map(1) == 0.25000000000000006
    assert meas.check(1, 0.25000000000000006)
    assert not meas.check(1, 0.25)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_level_scales_zcdp_spend_the_shares_of_rho_rounded_up(levels):
    rho = 0.01
    sc = level_scales_zcdp(rho, levels)
    assert len(sc) == levels
    shares = [Fraction(1)] if levels == 1 else [Fraction(1, 4 * (levels - 1))] * (levels - 1)
    if levels > 1:
        shares.append(Fraction(3, 4))
    for s, share in zip(sc, shares, strict=True):
        need = 1 / (share * Fraction(rho))  # sigma^2 >= 1 / (share rho): the smallest float
        assert Fraction(s) ** 2 >= need
        assert Fraction(float(np.nextafter(s, 0))) ** 2 < need
    assert sum(1 / Fraction(s) ** 2 for s in sc) <= Fraction(rho)


def test_noise_variance_of_each_law():
    assert noise_variance(3.0, "laplace") == 18.0
    assert noise_variance(3.0, "gaussian") == 9.0
    with pytest.raises(ValueError, match="noise must be one of"):
        noise_variance(3.0, "cauchy")


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_gaussian_marginals_map_is_the_sum_of_the_levels_rho(metric, unit):
    n, rho = 200, 0.05
    meas = make_table_marginals(_domain(n), metric, ENC, rho, noise="gaussian")
    assert meas.output_measure == dp.zero_concentrated_divergence()
    expected = Fraction(0)
    for _p, _leaves, _levels, scales in column_trees(ENC, n, rho, noise="gaussian"):
        expected += sum(1 / Fraction(sc) ** 2 for sc in scales)
    got = Fraction(meas.map(unit))
    assert expected <= got <= expected * (1 + Fraction(1, 10**12))
    assert got <= Fraction(rho) * (1 + Fraction(1, 10**12))
    assert meas.check(unit, meas.map(unit))
    assert not meas.check(unit, float(np.nextafter(meas.map(unit), 0)))
    # two replacements: four times (zCDP is quadratic in the l2 distance)
    assert Fraction(meas.map(2 * unit)) >= 4 * expected


def test_gaussian_trees_read_the_leaves_at_sqrt_8_rho():
    n, rho = 3000, 0.02
    per_column = float(Fraction(rho) / 3)
    for (p, leaves, _lv, _sc), (_q, pure_leaves, _l2, _s2) in zip(
        column_trees(ENC, n, rho, noise="gaussian"),
        column_trees(ENC, n, float(np.sqrt(8.0 * per_column)) * 3),
        strict=True,
    ):
        assert leaves == column_leaves(p, SCHEMA[p.name], n, float(np.sqrt(8.0 * per_column)))
        assert leaves == pure_leaves


def test_gaussian_release_is_post_processed_with_the_gaussian_variance():
    n, rho = 3000, 0.05
    x = _points(n)
    meas = make_table_marginals(_domain(n), dp.change_one_distance(), ENC, rho, noise="gaussian")
    with reproducible(0):
        release = meas(x)
    with reproducible(0):
        again = meas(x)
    assert release == again
    tm = TableMarginals.from_release(ENC, release, n, rho, noise="gaussian")
    pos = 0
    for c, (p, _leaves, levels, scales) in enumerate(column_trees(ENC, n, rho, noise="gaussian")):
        noisy = [np.asarray(release[pos + j], dtype=np.float64) for j in range(len(levels))]
        pos += len(levels)
        miss = 0.0
        if p.missing_axis is not None:
            miss = float(np.clip(np.mean([v[-1] for v in noisy]) / n, 0.0, 1.0))
            noisy = [v[:-1] for v in noisy]
        present = max(n * (1.0 - miss), 1.0)
        var = [sc * sc for sc in scales]  # the Gaussian's variance, not 2 s^2
        expect = tree_estimate(noisy, present, var, shrink=True) / present
        np.testing.assert_array_equal(tm.masses[c], expect)
    assert abs(tm.missing[0] - 0.2) < 0.05


def test_int_column_of_73_values_spends_its_budget_on_its_leaves():
    """An int column of 73 values at ``n eps / k >= 256``: one level of 73 per-value leaves (no
    top level of 5 nodes), discrete Laplace at ``2 / (eps / k)``; the map is exact."""
    schema = Schema({"t": IntColumn(bounds=(0, 72)), "c": CategoricalColumn(categories=("a", "b"))})
    enc = TableEncoding(schema)
    n, eps = 4000, 1.0
    trees = dict((p.name, (leaves, sizes, sc)) for p, leaves, sizes, sc in _trees(enc, n, eps))
    assert trees["t"][0] == 73
    assert trees["t"][1] == (73,)
    assert trees["t"][2] == level_scales(0.5, 1)
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=n, T=float, nan=False)
    meas = make_table_marginals(dom, dp.change_one_distance(), enc, eps)
    assert Fraction(meas.map(1)) <= Fraction(eps)
    assert meas.check(1, meas.map(1))
    assert not meas.check(1, float(np.nextafter(meas.map(1), 0)))


def test_int_column_atoms_stay_on_their_values():
    """Seeded: a 73-value int column with atoms at 12, 24, 36, 48, 60 (800 rows each) keeps
    at least 90% of its released mass on the atoms at ``n eps / k = 2000`` (the former 5-node
    top level read the values from a level at a quarter of the budget)."""
    from opendp_wasserstein.tables import RawColumn

    schema = Schema({"t": IntColumn(bounds=(0, 72)), "c": CategoricalColumn(categories=("a", "b"))})
    enc = TableEncoding(schema)
    n, eps = 4000, 1.0
    vals = np.repeat([12.0, 24.0, 36.0, 48.0, 60.0], n // 5)
    pts = enc.encode(
        {
            "t": RawColumn(vals, np.zeros(n, bool)),
            "c": RawColumn(np.zeros(n, dtype=np.int64), np.zeros(n, bool)),
        }
    )
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=n, T=float, nan=False)
    meas = make_table_marginals(dom, dp.change_one_distance(), enc, eps)
    with reproducible(3):
        m = TableMarginals.from_release(enc, meas(pts), n, eps)
    assert float(m.masses[0][[12, 24, 36, 48, 60]].sum()) >= 0.9


def _trees(enc, n, eps):
    from opendp_wasserstein.tables.marginals import column_trees

    return column_trees(enc, n, eps)
