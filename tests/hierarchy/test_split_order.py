import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.hierarchy.split_order import SplitOrder, category_levels
from opendp_wasserstein.tables import category_boundaries


def brute_diameters(order: SplitOrder, depth: int) -> list[float]:
    """The largest cell diameter of every level under the table metric, by enumerating cells."""
    out = []
    for j in range(depth + 1):
        b = order.splits(j)
        worst = 0.0
        for idx in itertools.product(*[range(2 ** int(k)) for k in b]):
            side = []
            for c, (i, k) in enumerate(zip(idx, b, strict=True)):
                lo, hi = i / 2.0**k, (i + 1) / 2.0**k
                if order.cells[c] == 0:
                    side.append(hi - lo)
                else:
                    bounds = category_boundaries(order.cells[c])
                    inside = [
                        a < hi and lo < z for a, z in zip(bounds[:-1], bounds[1:], strict=True)
                    ]
                    side.append(1.0 if sum(inside) > 1 else 0.0)
            worst = max(worst, max(side))
        out.append(worst)
    return out


def test_cyclic_order():
    order = SplitOrder.cyclic(3)
    assert order.max_depth == 156
    assert order.axes[:7] == (0, 1, 2, 0, 1, 2, 0)
    assert order.axes_to(10) is None  # the cyclic order: counts constructors' default
    assert order.diameters(7) == (1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25)
    assert order.numeric == (0, 1, 2)


def test_discrete_first_order():
    order = SplitOrder.discrete_first(cells=(0, 5, 2, 0, 1), first=(2,), max_splits=3)
    # the bool (coordinate 2) first, then the 5 categories (3 levels), then 0 and 3 cyclically;
    # the single-category coordinate 4 is never split
    assert order.axes == (2, 1, 1, 1, 0, 3, 0, 3, 0, 3)
    assert order.growth(10) == ("discrete",) * 4 + ("numeric",) * 6
    assert order.axes_to(5) == (2, 1, 1, 1, 0)
    assert order.diameters(10)[3:] == (1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125)


@pytest.mark.parametrize(
    "order",
    [
        SplitOrder.discrete_first(cells=(0, 3, 0), max_splits=4),
        SplitOrder.cyclic(cells=(3, 0, 2)),
        SplitOrder.discrete_first(cells=(5, 2)),
        SplitOrder((1, 0, 0, 1, 0, 1), cells=(0, 6)),
    ],
)
def test_diameters_match_enumerated_cells(order):
    depth = min(order.max_depth, 9)
    assert list(order.diameters(depth)) == brute_diameters(order, depth)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=3), st.data())
def test_discrete_first_is_pointwise_smallest(cells, data):
    """At every level the discrete-first profile is at most that of a random order."""
    first = SplitOrder.discrete_first(cells, max_splits=3)
    depth = first.max_depth
    d = len(cells)
    other = tuple(data.draw(st.lists(st.integers(0, d - 1), min_size=depth, max_size=depth)))
    if max(np.bincount(other, minlength=d)) > 52:
        return
    rand = SplitOrder(other, tuple(cells))
    assert all(a <= b for a, b in zip(first.diameters(depth), rand.diameters(depth), strict=True))


def test_category_levels():
    assert [category_levels(k) for k in (0, 1, 2, 3, 4, 5, 8, 9)] == [0, 0, 1, 2, 2, 3, 3, 4]


def test_validation():
    with pytest.raises(ValueError, match="cells"):
        SplitOrder((0,), ())
    with pytest.raises(ValueError, match="cells"):
        SplitOrder((0,), (-1,))
    with pytest.raises(ValueError, match="axes"):
        SplitOrder((), (0,))
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        SplitOrder((0, 2), (0, 0))
    with pytest.raises(ValueError, match="depth"):
        SplitOrder.cyclic(2).axes_to(105)
    with pytest.raises(ValueError, match="max_splits"):
        SplitOrder.discrete_first((0,), max_splits=60)
    assert SplitOrder((0,), (0,)) == SplitOrder([0], [0])  # normalised to tuples
