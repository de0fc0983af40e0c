"""Calibration to the DP marginals (Hypothesis: any input stays declared), and the quality
figure."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    FloatColumn,
    IntColumn,
    Schema,
    TableEncoding,
)
from opendp_wasserstein.tables.calibration import (
    ATOM_MIN_LEAVES,
    ATOM_RATIO,
    _relabel,
    atom_cells,
    calibrate,
    largest_remainder,
    roundest_values,
)
from opendp_wasserstein.tables.marginals import TableMarginals, column_plans
from opendp_wasserstein.tables.quality import (
    agreement_counts,
    agreement_from_counts,
    marginal_agreement,
    quality_edges,
)

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(-5.0, 5.0), nullable=True),
        "k": IntColumn(bounds=(1, 6)),
        "c": CategoricalColumn(categories=("a", "b", "c"), nullable=True),
        "b": BoolColumn(),
    }
)
ENC = TableEncoding(SCHEMA)
PLANS = column_plans(ENC)


def _marginals(masses, missing):
    return TableMarginals(
        PLANS, tuple(np.asarray(m, float) / np.sum(m) for m in masses), tuple(missing), 100
    )


def _simplex(k):
    return arrays(np.float64, k, elements=st.floats(0, 1)).filter(lambda v: v.sum() > 1e-3)


@settings(max_examples=60, deadline=None)
@given(
    points=st.integers(1, 60).flatmap(
        lambda m: arrays(
            np.float64,
            (m, ENC.dimension),
            elements=st.one_of(st.floats(-3, 3), st.just(float("nan"))),
        )
    ),
    mx=_simplex(16),
    mk=_simplex(6),
    mc=_simplex(4),
    mb=_simplex(2),
    miss=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_calibrated_points_decode_to_declared_values(points, mx, mk, mc, mb, miss, seed):
    tm = _marginals([mx, mk, mc, mb], [miss, 0.0, 0.0, 0.0])
    before = points.copy()
    out = calibrate(points, ENC, tm, RandomSource(seed))
    np.testing.assert_array_equal(points, before)  # the input is not modified
    assert out.shape == points.shape
    assert np.all((out >= 0) & (out <= 1))
    cols = ENC.decode(out)
    assert np.all(
        (cols["x"].values[~cols["x"].missing] >= -5) & (cols["x"].values[~cols["x"].missing] <= 5)
    )
    assert np.all((cols["k"].values >= 1) & (cols["k"].values <= 6))
    assert not cols["k"].missing.any()
    assert not cols["b"].missing.any()
    assert set(cols["c"].values.tolist()) <= {0, 1, 2}
    assert set(cols["b"].values.tolist()) <= {0, 1}
    m = len(points)
    # categorical counts are the largest-remainder targets
    codes_c = np.where(cols["c"].missing, 3, cols["c"].values)
    np.testing.assert_array_equal(
        np.bincount(codes_c, minlength=4), largest_remainder(tm.masses[2], m)
    )
    np.testing.assert_array_equal(
        np.bincount(cols["b"].values, minlength=2), largest_remainder(tm.masses[3], m)
    )
    assert cols["x"].missing.sum() == largest_remainder(np.array([1 - miss, miss]), m)[1]


def test_rank_matching_keeps_the_joint_ranks_and_hits_the_quantiles():
    rng = np.random.default_rng(0)
    m = 2000
    p = rng.uniform(size=(m, ENC.dimension))
    p[:, 0] = 0.25  # all present
    p[:, 2] = p[:, 1] ** 2  # k follows x monotonically
    tm = _marginals([np.r_[np.ones(8), np.zeros(8)], np.ones(6), np.ones(4), np.ones(2)], [0.0] * 4)
    out = calibrate(p, ENC, tm, RandomSource(1), kinds=("numeric",))
    assert np.all(np.argsort(out[:, 1], kind="stable") == np.argsort(p[:, 1], kind="stable"))
    assert out[:, 1].max() <= 0.5  # the released mass sits in the lower half only
    hist = np.histogram(out[:, 1], bins=8, range=(0, 0.5))[0]
    assert np.abs(hist - m / 8).max() <= 1
    assert np.corrcoef(out[:, 1], out[:, 2])[0, 1] > 0.95


def test_relabel_changes_the_fewest_rows():
    codes = np.array([0, 0, 0, 0, 1, 2, 2])
    target = np.array([2, 2, 3])
    new = _relabel(codes, target, RandomSource(0))
    assert np.bincount(new, minlength=3).tolist() == [2, 2, 3]
    assert (new != codes).sum() == 2  # the surplus of category 0


def test_quality_is_zero_on_matching_and_large_on_flat():
    m = 4000
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(m, ENC.dimension))
    tm = _marginals(
        [np.r_[np.ones(4), np.zeros(12)], np.ones(6), np.ones(4), np.ones(2)], [0.3, 0, 0, 0]
    )
    good = calibrate(p, ENC, tm, RandomSource(0))
    a = marginal_agreement(good, ENC, tm)
    assert a.mean < 0.02
    assert set(a.columns) == {"x", "k", "c", "b"}
    bad = marginal_agreement(p, ENC, tm)  # x uniform over its range, 50% missing
    assert bad.tvd[0] > 0.5
    assert bad.worst(1) == ("x",)
    # the figure of blocks of rows from their summed counts is the figure of all the rows
    parts = [agreement_counts(p[lo:hi], ENC, tm) for lo, hi in [(0, 1000), (1000, 4000)]]
    summed = [a + b for a, b in zip(*parts, strict=True)]
    assert [c.tolist() for c in summed] == [c.tolist() for c in agreement_counts(p, ENC, tm)]
    assert agreement_from_counts(summed, tm) == bad
    bins = len(quality_edges(tm, 0)) - 1  # x's mass in 4 of 16 cells: merged bins
    assert agreement_counts(p[:0], ENC, tm)[0].tolist() == [0] * (bins + 1)


def test_quality_reads_whole_cells_not_the_spread_inside_an_atom():
    """A column whose released mass sits on two cells (atoms: prices in cents, small counts):
    rows on one point inside each of those cells agree fully (the release says nothing inside
    a cell, its quantiles there are interpolated, and the calibration moves rows
    monotonically); rows moved to another cell do not.
    With the joint release's codes as ``edges``, the codes cut inside a cell are merged to
    whole cells."""
    m = 3000
    rng = np.random.default_rng(1)
    x_mass = np.zeros(16)
    x_mass[[5, 11]] = [0.7, 0.3]
    tm = _marginals([x_mass, np.ones(6), np.ones(4), np.ones(2)], [0.0] * 4)
    p = calibrate(rng.uniform(size=(m, ENC.dimension)), ENC, tm, RandomSource(2))
    cell = np.where(rng.uniform(size=m) < 0.7, 5, 11)
    p[:, PLANS[0].value_axis] = (cell + 0.45) / 16  # one point inside each cell, as atoms are
    np.testing.assert_allclose(quality_edges(tm, 0), [0.0, 5 / 16, 6 / 16, 11 / 16, 12 / 16, 1.0])
    assert marginal_agreement(p, ENC, tm).tvd[0] < 0.03
    codes = [np.array([0.0, 5.3 / 16, 5.6 / 16, 11.4 / 16, 1.0]), None, None, None]
    np.testing.assert_allclose(quality_edges(tm, 0, codes), [0.0, 5 / 16, 6 / 16, 11 / 16, 1.0])
    assert marginal_agreement(p, ENC, tm, codes).tvd[0] < 0.03
    moved = p.copy()
    moved[: m // 2, PLANS[0].value_axis] = 0.5  # half the rows in cell 8, which holds nothing
    assert marginal_agreement(moved, ENC, tm).tvd[0] > 0.4
    assert marginal_agreement(moved, ENC, tm, codes).tvd[0] > 0.4


def test_calibrate_refuses_unknown_kinds():
    tm = _marginals([np.ones(16), np.ones(6), np.ones(4), np.ones(2)], [0.0] * 4)
    with pytest.raises(ValueError, match="kinds"):
        calibrate(np.zeros((2, ENC.dimension)), ENC, tm, RandomSource(0), kinds=("nope",))


@pytest.mark.parametrize(
    "u",
    [
        np.random.default_rng(0).uniform(size=1000),
        np.round(np.random.default_rng(1).uniform(size=1000), 2),  # ties
        np.array([0.5, -0.0, 0.0, 0.25]),  # a signed zero ties with zero
        np.array([0.5, np.nan, 0.1, np.nan]),  # NaNs: ordered by the key, as lexsort does
        np.array([0.3]),
        np.array([], dtype=float),
    ],
    ids=["continuous", "ties", "zeros", "nan", "one", "empty"],
)
def test_rank_order_is_lexsort(u):
    from opendp_wasserstein.tables.calibration import _rank_order

    key = np.random.default_rng(2).uniform(size=len(u))
    assert np.array_equal(_rank_order(u, key), np.lexsort((key, u)))
    coarse = np.floor(key * 3)  # ties in the key too: then by position, as lexsort
    assert np.array_equal(_rank_order(u, coarse), np.lexsort((coarse, u)))


class _CoarseKeys:
    """A source whose uniforms tie often (multiples of 1/8 below 3/8, or fine)."""

    def __init__(self, seed: int, top: int) -> None:
        self.gen = np.random.default_rng(seed)
        self.top = top

    def uniform(self, m: int) -> np.ndarray:
        return self.gen.integers(0, self.top, m) / 8.0


@pytest.mark.parametrize("top", [3, 10**9], ids=["tied-keys", "distinct-keys"])
def test_relabel_by_partition_is_the_stable_sort_relabel(top):
    """The rows freed by a partition around the surplus-th key are those of the stable sort of
    all the category's keys, in the same order (ties by position)."""

    def reference(codes, target, rng):
        surplus = np.bincount(codes, minlength=len(target)) - target
        if not np.any(surplus):
            return codes
        out, key = codes.copy(), rng.uniform(len(codes))
        freed = [
            rows[np.argsort(key[rows], kind="stable")[: surplus[c]]]
            for c in np.flatnonzero(surplus > 0)
            for rows in [np.flatnonzero(codes == c)]
        ]
        free = np.concatenate(freed)
        free = free[np.argsort(key[free], kind="stable")]
        out[free] = np.repeat(np.flatnonzero(surplus < 0), -surplus[surplus < 0])
        return out

    gen = np.random.default_rng(5)
    for trial in range(200):
        n, k = int(gen.integers(1, 300)), int(gen.integers(1, 6))
        codes = gen.integers(0, k, n)
        target = np.bincount(gen.integers(0, k, n), minlength=k)
        got = _relabel(codes, target, _CoarseKeys(trial, top))  # type: ignore[arg-type]
        assert np.array_equal(got, reference(codes, target, _CoarseKeys(trial, top))), trial


def test_roundest_values_are_the_fewest_digit_numbers_inside():
    lo = np.array([57.988, 0.2995, -3.7, 0.0, 1234.5, 7.77, 99.2, -0.004])
    hi = np.array([58.003, 0.3004, -3.2, 0.01, 1299.0, 7.78, 101.0, -0.001])
    got = roundest_values(lo, hi)
    np.testing.assert_array_equal(got, [58.0, 0.3, -3.7, 0.0, 1240.0, 7.77, 100.0, -0.004])
    # the float nearest the decimal, as parsed from text
    assert roundest_values(np.array([0.29]), np.array([0.2999]))[0] == float("0.29")
    assert roundest_values(np.array([]), np.array([])).shape == (0,)


def test_atom_cells_at_the_ratio_and_only_at_fine_leaves():
    m = np.full(ATOM_MIN_LEAVES, 1.0)
    m[10] = ATOM_RATIO  # exactly the ratio times its neighbours: not an atom
    m[20] = float(np.nextafter(ATOM_RATIO, np.inf))  # just above: an atom
    m[30:33] = [0.0, 0.5, 0.0]  # a small mass between empty leaves: an atom
    got = atom_cells(m)
    assert np.flatnonzero(got).tolist() == [20, 31]
    assert not atom_cells(m[:-1]).any()  # fewer leaves than ATOM_MIN_LEAVES: none
    assert atom_cells(np.r_[5.0, np.ones(ATOM_MIN_LEAVES - 1)])[0]  # at the bound: 0 outside


def test_an_atom_leaf_decodes_to_its_roundest_value_and_ranks_keep_their_order():
    schema = Schema({"x": FloatColumn(bounds=(-5.0, 5.0))})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    leaves = ATOM_MIN_LEAVES
    mass = np.full(leaves, 1.0)
    at = int(np.floor((1.0 + 5.0) / 10.0 * leaves))  # the leaf holding x = 1.0
    mass[at] = 200.0
    tm = TableMarginals(plans, (mass / mass.sum(),), (0.0,), 1000)
    u = np.random.default_rng(0).uniform(size=(3000, 1))
    out = calibrate(u, enc, tm, RandomSource(0))
    x = enc.decode(out)["x"].values
    inside = (out[:, 0] >= at / leaves) & (out[:, 0] <= (at + 1) / leaves)
    assert inside.sum() > 400
    assert set(x[inside].tolist()) == {1.0}  # decodes to 1.0 exactly
    order = np.argsort(u[:, 0])
    assert np.all(np.diff(out[order, 0]) >= 0)  # the ranks' order is kept (ties in the atom)
    # the other leaves are spread as before: no other repeated value
    assert len(np.unique(x[~inside])) == (~inside).sum()
    # fewer leaves than ATOM_MIN_LEAVES: every value spread inside its leaf, as before
    coarse = TableMarginals(plans, (np.full(16, 1 / 16),), (0.0,), 1000)
    spread = calibrate(u, enc, coarse, RandomSource(0))
    assert len(np.unique(spread[:, 0])) == len(u)


@pytest.mark.parametrize("seed", range(5))
def test_atom_values_stay_in_their_leaf_and_the_bounds(seed):
    """Random spiky masses over ATOM_MIN_LEAVES leaves of odd bounds: every row of an atom leaf
    decodes to one value inside the leaf's value interval and the bounds, one value per leaf."""
    rng = np.random.default_rng(seed)
    schema = Schema({"x": FloatColumn(bounds=(-3.7, 1234.5), nullable=True)})
    enc = TableEncoding(schema)
    plans = column_plans(enc)
    leaves = ATOM_MIN_LEAVES
    mass = rng.uniform(size=leaves) * (rng.uniform(size=leaves) < 0.3)
    mass[rng.choice(leaves, 40, replace=False)] = 50.0
    tm = TableMarginals(plans, (mass / mass.sum(),), (0.1,), 1000)
    pts = rng.uniform(size=(5000, enc.dimension))
    out = calibrate(pts, enc, tm, RandomSource(seed))
    assert np.all((out >= 0) & (out <= 1))
    col = enc.decode(out)["x"]
    present = ~col.missing
    v = col.values[present]
    assert np.all((v >= -3.7) & (v <= 1234.5))
    u = out[present, plans[0].value_axis]
    cell = np.minimum(np.floor(u * leaves).astype(np.int64), leaves - 1)
    atoms = atom_cells(tm.masses[0])
    width = (1234.5 + 3.7) / leaves
    assert atoms[cell].sum() > 1000  # most rows sit in the 40 spikes
    for c in np.unique(cell[atoms[cell]]):  # the atom leaves hit (a few dozen)
        vals = np.unique(v[cell == c])
        assert len(vals) == 1
        lo = -3.7 + c * width
        assert lo - 1e-9 <= vals[0] <= lo + width + 1e-9


def test_calibrate_in_place_is_the_copy():
    m = 3000
    p = np.random.default_rng(4).uniform(size=(m, ENC.dimension))
    p[::17, 0] = np.nan
    tm = _marginals(
        [np.r_[np.ones(4), np.zeros(12)], np.ones(6), np.ones(4), np.ones(2)], [0.3, 0, 0, 0]
    )
    want = calibrate(p, ENC, tm, RandomSource(5))
    assert np.isnan(p[0, 0])  # not modified by default
    got = calibrate(p, ENC, tm, RandomSource(5), copy=False)
    assert got is p
    assert np.array_equal(got, want)
