"""The comparable split is exact over the whole int64 range (no wrap-around)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.hierarchy.traversal import comparable_split

I64 = 2**63 - 1
# mostly small values, with the int64 extremes that made M * a and a + b wrap around
counts = st.one_of(
    st.integers(0, 1000), st.integers(0, I64), st.sampled_from([I64, I64 - 1, 2**62, 2**31])
)
triples = st.lists(st.tuples(counts, counts, counts), min_size=1, max_size=20)


def expected(m: int, a: int, b: int) -> int:
    return m * a // (a + b) if a + b > 0 else m // 2


@settings(max_examples=300, deadline=None)
@given(triples)
def test_comparable_split_is_exact_and_comparable(rows):
    mass, a, b = (np.array(col, dtype=np.int64) for col in zip(*rows, strict=True))
    m0 = comparable_split(mass, a, b)
    assert m0.dtype == np.int64
    assert m0.tolist() == [expected(*r) for r in rows]
    for (m, x, y), lower in zip(rows, m0.tolist(), strict=True):
        assert 0 <= lower <= m
        if x + y > 0:  # (lower, m - lower) is comparable to (x, y)
            assert (lower <= x and m - lower <= y) or (lower >= x and m - lower >= y)


def test_huge_noisy_counts_keep_the_mass():
    """The cause of a flaky release-size test: counts near 2^63 overflowed M * a."""
    mass = np.array([5, 5, 5, 3])
    a = np.array([I64, 2**62 + 1, 2**61, 0])
    b = np.array([I64, 2**62 + 3, 7, I64])
    m0 = comparable_split(mass, a, b)
    assert m0.tolist() == [2, 2, 4, 0]
    assert mass.tolist() == [5, 5, 5, 3]
    assert a[0] == I64  # inputs untouched
