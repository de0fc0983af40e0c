"""Hypothesis strategies that draw the real inputs (trees, point sets, counts), so that a failing
example shrinks to a small tree, few points and simple values rather than to a seed."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from opendp_wasserstein.public_candidates.trees import Tree

#: edge weights that make ties and exact sums likely
SIMPLE_WEIGHTS = st.sampled_from([0.25, 0.5, 1.0, 2.0, 3.0])

#: coordinates in [0, 1]: dyadic values (cell faces, split planes, the ends) and any float
UNIT_COORDINATES = st.one_of(
    st.integers(0, 2**10).map(lambda k: k / 2**10),
    st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False),
)


@st.composite
def trees(
    draw: st.DrawFn, max_nodes: int = 9, weights: st.SearchStrategy[float] = SIMPLE_WEIGHTS
) -> Tree:
    """A rooted tree with 2..``max_nodes`` nodes: node ``i``'s parent is any earlier node.

    Shrinks towards two nodes, a star (every parent 0) and the smallest weight.
    """
    n = draw(st.integers(2, max_nodes))
    parent = [-1] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    weight = [draw(weights) for _ in range(n)]
    return Tree(parent, weight)


def float_vectors(size: int, lo: float, hi: float) -> st.SearchStrategy[np.ndarray]:
    """Float64 vectors of ``size`` entries in ``[lo, hi]``, with zeros likely."""
    values = st.one_of(st.just(0.0), st.floats(lo, hi, allow_nan=False, allow_infinity=False))
    return arrays(np.float64, size, elements=values)


def unit_points(n: int, d: int) -> st.SearchStrategy[np.ndarray]:
    """``(n, d)`` float64 points in the unit box, dyadic coordinates likely (duplicates too)."""
    return arrays(np.float64, (n, d), elements=UNIT_COORDINATES)


@st.composite
def replacements(draw: st.DrawFn, max_n: int = 60, max_d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """A data set in ``[0, 1]^d`` and a neighbour: one row replaced by a new point, another row
    of the data set, or a corner of the box."""
    d = draw(st.integers(1, max_d))
    n = draw(st.integers(2, max_n))
    x = draw(unit_points(n, d))
    i = draw(st.integers(0, n - 1))
    new_row = draw(
        st.one_of(
            unit_points(1, d).map(lambda a: a[0]),
            st.integers(0, n - 1).map(lambda j: x[j].copy()),
            st.sampled_from([np.zeros(d), np.ones(d)]),
        )
    )
    neighbour = x.copy()
    neighbour[i] = new_row
    return x, neighbour
