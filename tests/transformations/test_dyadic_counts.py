import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.transformations import make_dyadic_counts, then_dyadic_counts

SCALES = [2.0, 3.0, 5.0, 7.0]  # sigma_0..sigma_3


def dom(size=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=size, T=float)


def exact(value: Fraction) -> float:
    f = float(value)
    return f if Fraction(f) >= value else math.nextafter(f, math.inf)


LEVELS = Fraction(1, 3) + Fraction(1, 5) + Fraction(1, 7)


def test_sized_symmetric_map_excludes_root():
    t = make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES)
    assert t.map(2) == exact(2 * LEVELS)
    assert t.map(4) == exact(4 * LEVELS)
    assert t.check(2, exact(2 * LEVELS))
    assert not t.check(2, math.nextafter(exact(2 * LEVELS), 0))


def test_unsized_symmetric_map_charges_root():
    t = make_dyadic_counts(dom(None), dp.symmetric_distance(), 3, SCALES)
    assert t.map(1) == exact(Fraction(1, 2) + LEVELS)
    assert t.map(2) == exact(2 * (Fraction(1, 2) + LEVELS))


def test_change_one_map():
    t = make_dyadic_counts(dom(10), dp.change_one_distance(), 3, SCALES)
    assert t.map(1) == exact(2 * LEVELS)
    assert t.map(3) == exact(6 * LEVELS)
    assert t.check(1, exact(2 * LEVELS))
    assert not t.check(1, math.nextafter(exact(2 * LEVELS), 0))


def test_change_one_needs_size():
    with pytest.raises(ValueError, match="input_metric"):
        make_dyadic_counts(dom(None), dp.change_one_distance(), 3, SCALES)


def test_sensitivity_bound_attained_on_neighbours():
    """Moving one point to a far corner changes every level by exactly 2 (sized)."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 0.4, size=(20, 2))
    x2 = x.copy()
    x2[0] = [0.95, 0.95]
    t = make_dyadic_counts(dom(20), dp.symmetric_distance(), 3, SCALES)
    a, b = t(x), t(x2)
    total = Fraction(0)
    for level in range(4):
        ca = count_vector(a, level)
        cb = count_vector(b, level)
        total += Fraction(int(np.abs(ca - cb).sum())) / Fraction(SCALES[level])
    assert exact(total) == t.map(2)


def count_vector(tree, level):
    d = tree.d
    from opendp_wasserstein.hierarchy.cells import coord_bits_at_level

    b = coord_bits_at_level(level, d)
    cells = tree.grid >> (tree.bits - b)
    flat = cells[:, 0] * (2 ** int(b[1])) + cells[:, 1]
    return np.bincount(flat, minlength=2 ** int(b.sum()))


def test_clamps_rows_outside_the_box_and_does_not_modify_input():
    x = np.array([[-5.0, 0.2], [3.0, 9.0], [0.5, 0.5]])
    keep = x.copy()
    t = make_dyadic_counts(dom(3), dp.symmetric_distance(), 2, [1.0, 1.0, 1.0], bounds=(0.0, 1.0))
    tree = t(x)
    assert np.array_equal(x, keep)
    assert tree.grid.min() >= 0
    assert tree.grid.max() <= 1


def test_bounds_rescale():
    t = make_dyadic_counts(
        dom(2), dp.symmetric_distance(), 2, [1.0, 1.0, 1.0], bounds=([10, -1], [20, 1])
    )
    tree = t(np.array([[12.0, -0.5], [19.0, 0.5]]))
    assert sorted(map(tuple, tree.grid.tolist())) == [(0, 0), (1, 1)]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"depth": 0}, "depth"),
        ({"depth": 2.5}, "depth"),
        ({"depth": 1000}, "depth"),
        ({"scales": [1.0, 1.0]}, "scales"),
        ({"scales": [1.0, 0.0, 1.0, 1.0]}, "scales"),
        ({"scales": [1.0, -1.0, 1.0, 1.0]}, "scales"),
        ({"scales": [1.0, float("nan"), 1.0, 1.0]}, "scales"),
        ({"bounds": (1.0, 0.0)}, "bounds"),
        ({"bounds": ([0, 0], [1, 0])}, "bounds"),
        ({"bounds": (0.0, float("inf"))}, "bounds"),
        ({"bounds": ([0, 0, 0], [1, 1, 1])}, "bounds"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"depth": 3, "scales": SCALES} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_dyadic_counts(dom(5), dp.symmetric_distance(), **args)


@pytest.mark.parametrize(
    "x,match",
    [
        (np.zeros((5, 3)), "columns"),
        (np.zeros((4, 2)), "rows"),
        (np.zeros(5), "2-dimensional"),
    ],
)
def test_bad_data(x, match):
    t = make_dyadic_counts(dom(5), dp.symmetric_distance(), 3, SCALES)
    # raised in the release callback, surfaced by OpenDP with the message intact
    with pytest.raises(dp.OpenDPException, match=match):
        t(x)


def test_nan_and_inf_handling_follows_the_domain():
    """inf is clamped to the box face, NaN imputed at the lower face when the domain admits NaN
    (the default), and refused -- data outside the domain -- when it has nan=False.  Neither the
    message nor the type depends on where the NaN is or what the other values are."""
    t = make_dyadic_counts(dom(3), dp.symmetric_distance(), 2, [1.0, 1.0, 1.0])
    tree = t(np.array([[np.inf, -np.inf], [np.nan, 0.9], [0.1, np.nan]]))
    assert sorted(map(tuple, tree.grid.tolist())) == [(0, 0), (0, 1), (1, 0)]
    strict = make_dyadic_counts(
        dp.numpy.array2_domain(num_columns=2, size=3, nan=False, T=float),
        dp.symmetric_distance(),
        2,
        [1.0] * 3,
    )
    messages = set()
    for x in (
        np.array([[np.nan, 0.1], [0.2, 0.3], [0.4, 0.5]]),
        np.array([[0.9, 0.8], [0.7, np.nan], [5.0, -3.0]]),
    ):
        with pytest.raises(dp.OpenDPException) as info:
            strict(x)
        messages.add([line for line in str(info.value).splitlines() if "Error" in line][-1])
    assert len(messages) == 1
    assert "nan=False" in messages.pop()


def test_empty_data_on_unsized_domain():
    t = make_dyadic_counts(dom(None), dp.symmetric_distance(), 3, SCALES)
    tree = t(np.zeros((0, 2)))
    assert tree.n == 0
    assert tree.occupancy().tolist() == [0, 0, 0, 0]


def test_then_partial():
    t = (dom(4), dp.symmetric_distance()) >> then_dyadic_counts(3, SCALES)
    assert t.map(2) == exact(2 * LEVELS)


def test_output_identifiers_carry_parameters():
    t = make_dyadic_counts(dom(4), dp.symmetric_distance(), 3, SCALES, bounds=(0, 2))
    s = str(t.output_domain)
    assert "depth=3" in s
    assert "size=4" in s
    assert "upper=(2.0, 2.0)" in s
    assert "(2.0, 3.0, 5.0, 7.0)" in str(t.output_metric)


# ---------------------------------------------------------------------------------------------
# output_metric="l2sq": the weighted squared l2 distance (discrete Gaussian noise, zCDP)

SQ = Fraction(1, 9) + Fraction(1, 25) + Fraction(1, 49)  # sum_{j >= 1} 1/sigma_j^2


def test_l2sq_sized_symmetric_map_is_quadratic_in_replacements():
    t = make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES, output_metric="l2sq")
    assert "WeightedL2SqDistance" in str(t.output_metric)
    assert t.map(0) == 0.0
    assert t.map(1) == 0.0  # equal sizes: an odd distance is one less
    for m in (1, 2, 3):
        assert t.map(2 * m) == exact(2 * m * m * SQ)
        assert t.map(2 * m + 1) == exact(2 * m * m * SQ)
    assert t.check(2, exact(2 * SQ))
    assert not t.check(2, math.nextafter(exact(2 * SQ), 0))
    assert t.check(4, exact(8 * SQ))
    assert not t.check(4, math.nextafter(exact(8 * SQ), 0))


def test_l2sq_change_one_map():
    t = make_dyadic_counts(dom(10), dp.change_one_distance(), 3, SCALES, output_metric="l2sq")
    assert t.map(1) == exact(2 * SQ)
    assert t.map(3) == exact(18 * SQ)
    assert t.check(1, exact(2 * SQ))
    assert not t.check(1, math.nextafter(exact(2 * SQ), 0))


def test_l2sq_unsized_map_charges_root():
    t = make_dyadic_counts(dom(None), dp.symmetric_distance(), 3, SCALES, output_metric="l2sq")
    per = Fraction(1, 4) + SQ
    assert t.map(1) == exact(per)
    assert t.map(2) == exact(4 * per)
    assert t.map(3) == exact(9 * per)
    assert t.check(3, exact(9 * per))
    assert not t.check(3, math.nextafter(exact(9 * per), 0))


def _l2sq_between(t, a, b):
    total = Fraction(0)
    for level in range(4):
        diff = count_vector(t(a), level) - count_vector(t(b), level)
        total += Fraction(int((diff * diff).sum())) / Fraction(SCALES[level]) ** 2
    return total


def test_l2sq_bound_attained_by_m_copies():
    """m copies of one point replaced by m copies of a point in the other level-1 cell (sized),
    or k copies of one point added (unsized), attain the map exactly."""
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 0.4, size=(20, 2))
    x[:3] = [0.1, 0.1]
    t = make_dyadic_counts(dom(20), dp.symmetric_distance(), 3, SCALES, output_metric="l2sq")
    for m in (1, 2, 3):
        x2 = x.copy()
        x2[:m] = [0.95, 0.95]
        assert exact(_l2sq_between(t, x, x2)) == t.map(2 * m)
    tu = make_dyadic_counts(dom(None), dp.symmetric_distance(), 3, SCALES, output_metric="l2sq")
    for k in (1, 2, 3):
        grown = np.vstack([x, np.full((k, 2), 0.95)])
        assert exact(_l2sq_between(tu, x, grown)) == tu.map(k)


def test_l2sq_never_exceeded_on_random_neighbours():
    rng = np.random.default_rng(5)
    t = make_dyadic_counts(dom(12), dp.change_one_distance(), 3, SCALES, output_metric="l2sq")
    for _ in range(40):
        x = rng.uniform(size=(12, 2))
        m = int(rng.integers(1, 4))
        x2 = x.copy()
        x2[rng.choice(12, m, replace=False)] = rng.uniform(size=(m, 2))
        assert _l2sq_between(t, x, x2) <= Fraction(t.map(m))


def test_bad_output_metric():
    with pytest.raises(ValueError, match="output_metric"):
        make_dyadic_counts(dom(5), dp.symmetric_distance(), 3, SCALES, output_metric="l2")


# a general split order: same maps, the order in the descriptor


@pytest.mark.parametrize("axes", [(1, 1, 0), (1, 0, 0), (0, 1, 0, 1)])
def test_split_order_keeps_the_maps_exactly(axes):
    for metric, n, d_in, want in [
        (dp.symmetric_distance(), 10, 2, exact(2 * LEVELS)),
        (dp.change_one_distance(), 10, 1, exact(2 * LEVELS)),
        (dp.symmetric_distance(), None, 1, exact(Fraction(1, 2) + LEVELS)),
    ]:
        t = make_dyadic_counts(dom(n), metric, 3, SCALES, axes=axes)
        assert t.map(d_in) == want
        assert t.check(d_in, want)
        assert not t.check(d_in, math.nextafter(want, 0))


def test_split_order_in_the_descriptor():
    t = make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES, axes=(1, 1, 0))
    assert t.output_domain.descriptor.axes == (1, 1, 0)
    assert "axes=(1, 1, 0)" in str(t.output_domain)
    cyc = make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES, axes=(0, 1, 0, 1))
    assert cyc.output_domain.descriptor.axes is None  # the cyclic order, normalised
    assert (
        cyc.output_domain
        == make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES).output_domain
    )
    assert t.output_domain != cyc.output_domain
    with pytest.raises(ValueError, match="axes"):
        make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES, axes=(0, 1))
    with pytest.raises(ValueError, match="axes"):
        make_dyadic_counts(dom(10), dp.symmetric_distance(), 3, SCALES, axes=(0, 2, 1))


def test_split_order_sensitivity_attained_on_neighbours():
    """Moving one point across every split of the general order changes each level by exactly 2."""
    axes = (1, 1, 0)
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 0.2, size=(20, 2))
    x2 = x.copy()
    x2[0] = [0.95, 0.95]
    t = make_dyadic_counts(dom(20), dp.symmetric_distance(), 3, SCALES, axes=axes)
    a, b = t(x), t(x2)
    from opendp_wasserstein.hierarchy.cells import coord_bits_at_level

    total = Fraction(0)
    for level in range(4):
        bits = coord_bits_at_level(level, 2, axes)
        ca = a.grid >> (a.bits - bits)
        cb = b.grid >> (b.bits - bits)
        ua, na = np.unique(ca, axis=0, return_counts=True)
        ub, nb = np.unique(cb, axis=0, return_counts=True)
        da = {tuple(k): v for k, v in zip(ua.tolist(), na, strict=True)}
        db = {tuple(k): v for k, v in zip(ub.tolist(), nb, strict=True)}
        moved = sum(abs(int(da.get(k, 0)) - int(db.get(k, 0))) for k in set(da) | set(db))
        assert moved == (2 if level else 0)
        total += Fraction(moved) / Fraction(SCALES[level])
    assert exact(total) == t.map(2)
