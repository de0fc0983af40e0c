"""Gower split orders: the diameter profile, the greedy orders, the public family."""

import numpy as np
import pytest

from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.tables import CategoricalColumn, FloatColumn, Schema, TableEncoding
from opendp_wasserstein.tables.marginals import column_plans
from opendp_wasserstein.tables.orders import (
    axis_cells,
    column_groups,
    greedy_order,
    order_family,
    uniform_weights,
)

SCHEMA = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 1.0), nullable=True),
        "y": FloatColumn(bounds=(0.0, 1.0)),
        "c": CategoricalColumn(categories=tuple("abcdefgh")),
    }
)
PLANS = column_plans(TableEncoding(SCHEMA))


def test_gower_profile_is_the_mean_over_columns():
    # axes: 0 = x missing, 1 = x value, 2 = y, 3 = c (8 categories: 3 levels)
    o = SplitOrder(
        (0, 1, 2, 3, 3, 3, 1, 2), axis_cells(PLANS), groups=column_groups(PLANS), metric="gower"
    )
    diam = o.diameters(8)
    assert diam[0] == 1.0
    assert diam[1] == 1.0  # x still 1 (value unsplit), y 1, c 1
    assert diam[2] == pytest.approx((0.5 + 1 + 1) / 3)
    assert diam[3] == pytest.approx((0.5 + 0.5 + 1) / 3)
    assert diam[5] == pytest.approx((0.5 + 0.5 + 1) / 3)  # c unresolved until its third level
    assert diam[6] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert diam[8] == pytest.approx((0.25 + 0.25) / 3)
    # the max profile of the same order stays 1 until every category is resolved
    m = SplitOrder(o.axes, o.cells)
    assert m.diameters(6)[:6] == (1.0,) * 6
    assert m.diameters(8)[8] == 0.25


def test_split_order_refuses_bad_groups_and_metric():
    with pytest.raises(ValueError, match="metric"):
        SplitOrder((0,), (0,), metric="l2")
    with pytest.raises(ValueError, match="groups"):
        SplitOrder((0, 1), (0, 0), groups=(0, 2))


def test_greedy_order_interleaves_and_weighs_columns():
    w = np.array([1 / 3, 1 / 3, 0.8])
    o = greedy_order(PLANS, w, missing=[0.1, 0, 0], alpha=1.0, max_splits=4)
    assert o.metric == "gower"
    assert o.groups == column_groups(PLANS)
    # every numeric axis split max_splits times, every category level and the missing axis once
    assert np.bincount(o.axes, minlength=4).tolist() == [1, 4, 4, 3]
    # the category block (rate 0.8/3) comes after the first numeric splits (gain 1/6 each)?
    first_c = o.axes.index(3)
    assert o.axes[first_c : first_c + 3] == (3, 3, 3)  # a block is never interleaved
    # a column that carries no information comes last
    low = greedy_order(PLANS, np.array([1 / 3, 1 / 3, 1e-9]), missing=[0.1, 0, 0], max_splits=4)
    assert low.axes[-3:] == (3, 3, 3)
    # alpha favours categories
    hi = greedy_order(PLANS, w, missing=[0.1, 0, 0], alpha=8.0, max_splits=4)
    assert hi.axes.index(3) <= first_c


def test_order_family_is_distinct_and_public_shaped():
    fam = order_family(PLANS, uniform_weights(PLANS), None)
    assert len(fam) >= 2
    assert len({f.axes for f in fam}) == len(fam)
    assert all(f.metric == "gower" and f.cells == axis_cells(PLANS) for f in fam)
    with pytest.raises(ValueError, match="alpha"):
        greedy_order(PLANS, uniform_weights(PLANS), alpha=0.0)
