from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import cdist

from opendp_wasserstein.public_candidates.sets import (
    NearestCandidates,
    check_candidates,
    check_multiset_size,
)
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


def exact_distance(a, b, metric):
    diff = [Fraction(float(u)) - Fraction(float(v)) for u, v in zip(a, b, strict=True)]
    if metric == "l1":
        return sum(abs(t) for t in diff)
    if metric == "l2":
        return sum(t * t for t in diff)  # squared: the same order
    return max(abs(t) for t in diff)


def exact_tie_sets(x, c, metric):
    """The exact set of nearest candidates of every row (Fractions; a non-finite row: all)."""
    out = []
    for row in np.asarray(x, dtype=float):
        if not np.all(np.isfinite(row)):
            out.append(frozenset(range(len(c))))
            continue
        d = [exact_distance(row, cc, metric) for cc in c]
        out.append(frozenset(i for i, v in enumerate(d) if v == min(d)))
    return out


def check_projection(x, c, metric, chunk=None):
    """Every row goes to one of its exact nearest candidates, and the rows of one tie set are
    spread over it within one of the even split; the histogram of ``query`` is the one of
    ``tally``."""
    nc = (
        NearestCandidates(c, metric) if chunk is None else NearestCandidates(c, metric, chunk=chunk)
    )
    got = nc.query(x)
    sets = exact_tie_sets(x, c, metric)
    assert all(int(g) in t for g, t in zip(got, sets, strict=True))
    for t in set(sets):
        rows = [i for i, s in enumerate(sets) if s == t]
        share = np.bincount(got[rows], minlength=len(c))[sorted(t)]
        assert share.sum() == len(rows)
        assert share.max() - share.min() <= 1, (t, share)
        assert share.min() == len(rows) // len(t)
    assert np.array_equal(np.bincount(got, minlength=len(c)), nc.histogram(nc.tally(x)))
    return got


@pytest.mark.parametrize("metric", ["l1", "l2", "linf"])
def test_exact_nearest_with_many_ties(metric):
    """Integer lattice data and candidates: exact distance ties everywhere, spread evenly."""
    rng = np.random.default_rng(0)
    c = np.unique(rng.integers(0, 6, size=(40, 2)).astype(float), axis=0)
    c = c[rng.permutation(c.shape[0])]  # indices unrelated to position
    x = rng.integers(-1, 7, size=(600, 2)).astype(float)
    got = check_projection(x, c, metric)
    # the rows with one nearest candidate agree with the brute force
    sets = exact_tie_sets(x, c, metric)
    one = np.array([len(t) == 1 for t in sets])
    assert np.array_equal(got[one], brute_nearest(x[one], c, metric))
    t = make_nearest_candidate(dom(600), dp.symmetric_distance(), c, metric)
    assert np.array_equal(np.asarray(t(x)), got)


LATTICE = st.sampled_from([0.0, 1.0, 2.0])


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 30), st.integers(1, 4), st.sampled_from(["l1", "l2", "linf"]))
def test_property_exact_ties_spread_and_permutation(data, k, p, metric):
    """Lattice candidates (distinct, in drawn order) and lattice or half-lattice points: ties.
    Permuting the candidates permutes the histogram (issue 20, item 8)."""
    c = data.draw(arrays(np.float64, (k, p), elements=LATTICE, unique=False), label="candidates")
    _, first = np.unique(c, axis=0, return_index=True)
    c = c[np.sort(first)]  # distinct candidates, in the order drawn
    n = data.draw(st.integers(1, 50), label="n")
    x = data.draw(
        arrays(np.float64, (n, p), elements=st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 2.5])),
        label="x",
    )
    got = check_projection(x, c, metric, chunk=data.draw(st.integers(1, 60), label="chunk"))
    perm = np.random.default_rng(n).permutation(c.shape[0])
    h = np.bincount(got, minlength=c.shape[0])
    h_perm = np.bincount(NearestCandidates(c[perm], metric).query(x), minlength=c.shape[0])
    assert np.array_equal(h_perm, h[perm])


def test_ties_are_exact_not_float():
    """Float distances that round to the same value are not ties, and exact ties that floating
    point separates are ties."""
    # l1 / linf in one dimension: 0.75 - 1e-20 and 0.75 - 2e-20 both round to 0.75
    c = np.array([[1e-20], [2e-20]])
    for metric in ("l1", "l2", "linf"):
        assert NearestCandidates(c, metric).query(np.array([[0.75]] * 4)).tolist() == [1, 1, 1, 1]
    # l2: (3u, 4u) and (5u, 0) are at exactly the same distance 5u from 0, but the float sums
    # of squares differ (u has a long mantissa)
    u = 572254185072261 * 2.0**-49  # a 50-bit mantissa: 3u, 4u and 5u are exact floats
    c2 = np.array([[3 * u, 4 * u], [5 * u, 0.0], [40.0, 40.0]])
    assert all(Fraction(j * u) == j * Fraction(u) for j in (3, 4, 5))
    a, b = (3 * u) ** 2 + (4 * u) ** 2, (5 * u) ** 2
    assert a != b  # floating point separates them
    got = NearestCandidates(c2, "l2").query(np.zeros((10, 2)))
    assert np.bincount(got, minlength=3).tolist() == [5, 5, 0]


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
    got = list(t(x))
    assert got[:3] == [0, 2, 1]
    assert got[3] in (0, 1)
    assert list(unsized(x[:3])) == [0, 2, 1]


def test_composes_with_opendp_count_by_categories():
    c = np.array([[0.0], [1.0], [2.0]])
    t = make_nearest_candidate(
        dom(5, 1), dp.symmetric_distance(), c
    ) >> dp.t.then_count_by_categories(categories=[0, 1, 2], null_category=False)
    assert t(np.array([[0.1], [0.2], [1.1], [2.4], [1.9]])) == [2, 1, 2]
    assert t.map(2) == 2


def test_then_partial():
    t = (dom(3), dp.symmetric_distance()) >> then_nearest_candidate(
        [[0.0, 0.0], [1.0, 0.0]], metric="l1"
    )
    got = list(t(np.array([[0.9, 5.0], [0.2, 0.0], [0.5, 0.0]])))
    assert got[:2] == [1, 0]
    assert got[2] in (0, 1)


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
        make_nearest_candidate(
            dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance(), [[0.0]]
        )


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


def test_non_finite_rows_are_spread_over_every_candidate_or_refused():
    """A row with a NaN or infinite coordinate is equally far from every candidate: its tie set
    is the whole set (it used to go to candidate 0)."""
    cands = [[5.0, 5.0], [0.0, 0.0], [1.0, 1.0]]
    t = make_nearest_candidate(dom(7), dp.symmetric_distance(), cands)
    bad = [
        [np.nan, 0.0],
        [np.inf, 1.0],
        [0.0, -np.inf],
        [np.nan, np.nan],
        [np.inf, np.inf],
        [-np.inf, 2.0],
    ]
    got = np.asarray(t(np.array([*bad, [0.9, 0.9]])))
    assert got[-1] == 2
    assert np.bincount(got[:6], minlength=3).tolist() == [2, 2, 2]
    strict = make_nearest_candidate(
        dp.numpy.array2_domain(num_columns=2, size=3, nan=False, T=float),
        dp.symmetric_distance(),
        cands,
    )
    with pytest.raises(dp.OpenDPException, match="nan=False"):
        strict(np.array([[np.nan, 0.0], [0.0, 1.0], [0.9, 0.9]]))


@pytest.mark.parametrize("metric", ["l1", "l2"])
def test_a_record_of_extreme_magnitude_raises_no_numpy_warning(metric):
    """Whether numpy warns (overflow in the exact-distance test) must not depend on a record:
    a record near the float limit is projected like any other, silently."""
    import warnings

    c = np.array([[0.0, 0.0], [1.0, 1.0], [1e150, -1e150]])
    t = make_nearest_candidate(dom(), dp.symmetric_distance(), c, metric=metric)
    for x in (np.array([[0.5, 0.5], [0.2, 0.9]]), np.array([[0.5, 0.5], [1.7e308, -1.7e308]])):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            idx = t(x)
        assert len(idx) == 2
