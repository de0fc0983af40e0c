import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist

from opendp_wasserstein.candidates import NearestCandidates, check_candidates, check_multiset_size
from opendp_wasserstein.transformations import (
    candidate_index_domain,
    make_nearest_candidate,
    then_nearest_candidate,
)

CDIST = {"l1": "cityblock", "l2": "euclidean", "linf": "chebyshev"}


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def brute_nearest(x, c, metric):
    D = cdist(x, c, CDIST[metric])
    return np.argmin(D, axis=1)  # argmin returns the first (lowest-index) minimum


@pytest.mark.parametrize("metric", ["l1", "l2", "linf"])
def test_matches_brute_force_with_many_ties(metric):
    """Integer lattice data and candidates: exact distance ties everywhere, lowest index wins."""
    rng = np.random.default_rng(0)
    c = np.unique(rng.integers(0, 6, size=(40, 2)).astype(float), axis=0)
    c = c[rng.permutation(c.shape[0])]  # indices unrelated to position
    x = rng.integers(-1, 7, size=(3000, 2)).astype(float)
    got = NearestCandidates(c, metric).query(x)
    assert np.array_equal(got, brute_nearest(x, c, metric))
    # same through the transformation
    t = make_nearest_candidate(dom(3000), dp.symmetric_distance(), c, metric)
    assert np.array_equal(np.asarray(t(x)), got)


LATTICE = st.sampled_from([0.0, 1.0, 2.0])


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 30), st.integers(1, 4), st.sampled_from(["l1", "l2", "linf"]))
def test_property_nearest_and_lowest_index(data, k, p, metric):
    """Lattice candidates (distinct, in drawn order) and lattice or half-lattice points: ties."""
    c = data.draw(arrays(np.float64, (k, p), elements=LATTICE, unique=False), label="candidates")
    _, first = np.unique(c, axis=0, return_index=True)
    c = c[np.sort(first)]  # distinct candidates, in the order drawn
    n = data.draw(st.integers(1, 50), label="n")
    x = data.draw(arrays(np.float64, (n, p), elements=st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])), label="x")
    assert np.array_equal(NearestCandidates(c, metric).query(x), brute_nearest(x, c, metric))


def test_chunking_gives_the_same_answer():
    rng = np.random.default_rng(1)
    c = rng.uniform(size=(100, 3))
    x = rng.uniform(size=(1001, 3))
    assert np.array_equal(NearestCandidates(c, chunk=7).query(x), NearestCandidates(c).query(x))


def test_transformation_map_and_domains():
    c = [[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]]
    t = make_nearest_candidate(dom(4), dp.symmetric_distance(), c)
    assert t.map(2) == 2
    assert t.map(7) == 7
    assert t.check(2, 2)
    assert not t.check(2, 1)
    assert str(t.output_domain) == str(candidate_index_domain(3, 4))
    assert "bounds=[0, 2]" in str(t.output_domain)
    assert "size=4" in str(t.output_domain)
    assert str(t.output_metric) == "SymmetricDistance()"
    one = make_nearest_candidate(dom(4), dp.change_one_distance(), c, "linf")
    assert one.map(1) == 1
    assert str(one.output_metric) == "ChangeOneDistance()"
    unsized = make_nearest_candidate(dom(None), dp.symmetric_distance(), c)
    assert "size" not in str(unsized.output_domain)
    x = np.array([[0.1, 0.1], [1.9, 0.2], [1.0, 0.9], [0.5, 0.5]])
    assert list(t(x)) == [0, 2, 1, 0]  # [0.5, 0.5] ties 0 and 1: the lower index
    assert list(unsized(x[:3])) == [0, 2, 1]


def test_composes_with_opendp_count_by_categories():
    c = np.array([[0.0], [1.0], [2.0]])
    t = make_nearest_candidate(dom(5, 1), dp.symmetric_distance(), c) >> dp.t.then_count_by_categories(
        categories=[0, 1, 2], null_category=False
    )
    assert t(np.array([[0.1], [0.2], [1.1], [2.4], [1.9]])) == [2, 1, 2]
    assert t.map(2) == 2


def test_then_partial():
    t = (dom(3), dp.symmetric_distance()) >> then_nearest_candidate([[0.0, 0.0], [1.0, 0.0]], metric="l1")
    assert list(t(np.array([[0.9, 5.0], [0.2, 0.0], [0.5, 0.0]]))) == [1, 0, 0]


def test_input_is_not_modified():
    x = np.random.default_rng(0).uniform(size=(20, 2))
    keep = x.copy()
    make_nearest_candidate(dom(20), dp.symmetric_distance(), np.eye(2))(x)
    assert np.array_equal(x, keep)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"candidates": np.zeros((0, 2))}, "k >= 1"),
        ({"candidates": [[0.0, 1.0], [0.0, 1.0]]}, "distinct"),
        ({"candidates": [[0.0, np.inf], [0.0, 1.0]]}, "finite"),
        ({"candidates": [[0.0, np.nan]]}, "finite"),
        ({"candidates": [[0.0, 1.0, 2.0]]}, "2 columns"),
        ({"candidates": [0.0, 1.0]}, "2-dimensional"),
        ({"candidates": "abc"}, "numeric"),
        ({"metric": "cosine"}, "metric"),
    ],
)
def test_bad_parameters(kwargs, match):
    args = {"candidates": [[0.0, 0.0], [1.0, 1.0]]} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_nearest_candidate(dom(5), dp.symmetric_distance(), **args)


def test_bad_domain_and_metric():
    with pytest.raises(ValueError, match="input_metric"):
        make_nearest_candidate(dom(None), dp.change_one_distance(), [[0.0, 0.0]])
    with pytest.raises(ValueError, match="input_domain"):
        make_nearest_candidate(dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance(), [[0.0]])


@pytest.mark.parametrize(
    "x,match",
    [
        (np.zeros((5, 3)), "columns"),
        (np.zeros((4, 2)), "rows"),
    ],
)
def test_bad_data_at_release(x, match):
    t = make_nearest_candidate(dom(5), dp.symmetric_distance(), [[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(dp.OpenDPException, match=match):
        t(x)


def test_error_messages_do_not_leak_values():
    secret = 123456.789
    strict = dp.numpy.array2_domain(num_columns=2, size=2, nan=False, T=float)
    t = make_nearest_candidate(strict, dp.symmetric_distance(), [[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(dp.OpenDPException) as info:
        t(np.array([[secret, np.nan], [0.0, 0.0]]))
    assert "123456" not in str(info.value)


def test_candidate_helpers():
    c = check_candidates([[1, 2], [3, 4]])
    assert c.dtype == np.float64
    assert not c.flags.writeable
    assert check_multiset_size(3) == 3
    with pytest.raises(ValueError, match="m must be >= 1"):
        check_multiset_size(0)
    with pytest.raises(TypeError, match="m must be an integer"):
        check_multiset_size(2.5)
    with pytest.raises(ValueError, match="rows 0 and 2"):
        check_candidates([[1.0], [2.0], [1.0]])


def test_large_projection_is_chunked():
    """n = 200000 rows against k = 20000 candidates (the benchmark runs 10^6 x 10^5)."""
    rng = np.random.default_rng(2)
    c = rng.uniform(size=(20000, 2))
    x = rng.uniform(size=(200000, 2))
    idx = NearestCandidates(c).query(x)
    assert idx.shape == (200000,)
    assert idx.min() >= 0
    assert idx.max() < 20000
    sub = rng.choice(200000, 500, replace=False)
    assert np.array_equal(idx[sub], brute_nearest(x[sub], c, "l2"))


def test_non_finite_rows_go_to_candidate_zero_or_are_refused():
    cands = [[5.0, 5.0], [0.0, 0.0], [1.0, 1.0]]
    t = make_nearest_candidate(dom(3), dp.symmetric_distance(), cands)
    assert list(t(np.array([[np.nan, 0.0], [np.inf, 1.0], [0.9, 0.9]]))) == [0, 0, 2]
    strict = make_nearest_candidate(
        dp.numpy.array2_domain(num_columns=2, size=3, nan=False, T=float), dp.symmetric_distance(), cands
    )
    with pytest.raises(dp.OpenDPException, match="nan=False"):
        strict(np.array([[np.nan, 0.0], [0.0, 1.0], [0.9, 0.9]]))
