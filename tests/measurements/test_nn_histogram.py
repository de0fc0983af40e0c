import math

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.measurements import largest_remainder, make_nn_histogram, then_nn_histogram

CAND = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])


def dom(n=100, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


@pytest.mark.parametrize("eps", [1.0, 0.3, 2.5, 0.7, 0.1])
def test_map_is_exact(eps):
    sym = make_nn_histogram(dom(), dp.symmetric_distance(), CAND, 10, eps)
    assert sym.map(2) == eps
    assert sym.check(2, eps)
    assert not sym.check(2, math.nextafter(eps, 0))
    one = make_nn_histogram(dom(), dp.change_one_distance(), CAND, 10, eps)
    assert one.map(1) == eps
    assert one.check(1, eps)
    assert not one.check(1, math.nextafter(eps, 0))
    unsized = make_nn_histogram(dom(None), dp.symmetric_distance(), CAND, 10, eps)
    assert unsized.map(2) == eps
    assert unsized.check(2, eps)
    assert not unsized.check(2, math.nextafter(eps, 0))


def test_sensitivity_of_the_counts_is_attained():
    """One replacement moves the count vector by exactly 2 in l1 (one bin -1, another +1)."""
    chain = dp.t.make_count_by_categories(
        dp.vector_domain(dp.atom_domain(bounds=(0, 3), T="i64"), size=4),
        dp.symmetric_distance(),
        categories=[0, 1, 2, 3],
        null_category=False,
        MO="L1Distance<i64>",
        TOA="i64",
    )
    a, b = np.array(chain([0, 0, 1, 2])), np.array(chain([0, 3, 1, 2]))
    assert np.abs(a - b).sum() == 2 == chain.map(2)


def test_release_sums_to_m_and_tracks_the_data():
    rng = np.random.default_rng(0)
    x = CAND[np.repeat([0, 1, 3], [60, 30, 10])] + rng.normal(scale=0.01, size=(100, 2))
    out = make_nn_histogram(dom(), dp.symmetric_distance(), CAND, 10, 1e6)(x)
    assert out.dtype == np.int64
    assert out.tolist() == [6, 3, 0, 1]
    for metric in ("l1", "linf"):
        meas = make_nn_histogram(dom(), dp.change_one_distance(), CAND, 7, 1.0, metric=metric)
        r = meas(x)
        assert r.sum() == 7
        assert np.all(r >= 0)
    unsized = make_nn_histogram(dom(None), dp.symmetric_distance(), CAND, 5, 1.0)
    assert unsized(x[:20]).sum() == 5


def test_then_partial():
    m = (dom(), dp.symmetric_distance()) >> then_nn_histogram(CAND, 10, 1.0)
    assert m.map(2) == 1.0


def test_largest_remainder_examples():
    assert largest_remainder([5, -2, 3, 1], 4).tolist() == [2, 0, 1, 1]
    assert largest_remainder([1, 1, 1], 2).tolist() == [1, 1, 0]  # ties to the lowest index
    assert largest_remainder([-5, -1, 0], 4).tolist() == [2, 1, 1]  # all clamped: uniform
    assert largest_remainder([0, 7, 0], 3).tolist() == [0, 3, 0]
    assert largest_remainder([10**12, 1], 10**6).tolist() == [10**6, 0]


def test_largest_remainder_sums_huge_counts_exactly():
    """Counts whose int64 sum would wrap (3 * 2^62 + 1 > 2^63): the total is added exactly."""
    assert largest_remainder([2**62, 2**62, 2**62, 1], 3).tolist() == [1, 1, 1, 0]
    assert largest_remainder([2**62, 2**61, 2**62, 0], 5).tolist() == [2, 1, 2, 0]
    assert int(largest_remainder([2**60] * 20 + [3], 7).sum()) == 7


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-50, 10**6), min_size=1, max_size=40), st.integers(1, 10**5))
def test_largest_remainder_properties(counts, m):
    out = largest_remainder(counts, m)
    z = np.maximum(np.array(counts), 0)
    if z.sum() == 0:
        z = np.ones_like(z)
    quota = m * z / z.sum()
    assert out.sum() == m
    assert np.all(out >= 0)
    assert np.all(np.abs(out - quota) < 1 + 1e-9)  # every bin within one of its quota
    assert np.all(out[z == 0] == 0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"m": 0}, "m must be >= 1"),
        ({"candidates": np.zeros((0, 2))}, "k >= 1"),
        ({"candidates": [[0.0, np.inf]]}, "finite"),
        ({"candidates": [[0.0, 0.0], [0.0, 0.0]]}, "distinct"),
        ({"candidates": [[0.0], [1.0]]}, "2 columns"),
        ({"epsilon": 0}, "epsilon"),
        ({"metric": "hamming"}, "metric"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"candidates": CAND, "m": 5, "epsilon": 1.0} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_nn_histogram(dom(), dp.symmetric_distance(), **args)


def test_bad_data_at_release():
    meas = make_nn_histogram(dom(), dp.symmetric_distance(), CAND, 5, 1.0)
    with pytest.raises(dp.OpenDPException, match="rows"):
        meas(np.zeros((3, 2)))
