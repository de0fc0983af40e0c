"""Adaptive Pruned-PMM over a family of split orders: exact map, the selection's law."""

from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements._adaptive import softmax_probabilities
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.tables.joint import make_order_adaptive_pmm, table_candidates
from opendp_wasserstein.transformations import make_schedule_scores

CELLS = (0, 0, 4)
GROUPS = (0, 1, 2)
ORDERS = (
    SplitOrder(tuple([2, 2] + [0, 1] * 20), CELLS, GROUPS, "gower"),
    SplitOrder(tuple([0, 1, 2, 2] + [0, 1] * 19), CELLS, GROUPS, "gower"),
)


def _domain(n):
    return dp.numpy.array2_domain(num_columns=3, size=n, T=float, nan=False)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=(n, 3))
    x[:, 2] = (rng.integers(0, 4, n) + 0.5) / 4
    return x


@pytest.mark.parametrize(
    "metric, unit", [(dp.change_one_distance(), 1), (dp.symmetric_distance(), 2)]
)
def test_map_is_exact_and_does_not_depend_on_the_orders(metric, unit):
    eps_sel, eps_main = 0.1, 0.9
    a = make_order_adaptive_pmm(_domain(500), metric, eps_sel, eps_main, ORDERS)
    b = make_order_adaptive_pmm(_domain(500), metric, eps_sel, eps_main, ORDERS[:1])
    assert a.map(unit) == b.map(unit) == 1.0
    assert a.check(unit, 1.0)
    assert not a.check(unit, float(np.nextafter(1.0, 0)))
    assert a.map(3 * unit) == pytest.approx(3.0)
    assert Fraction(a.map(3 * unit)) >= 3 * Fraction(eps_sel + eps_main) * (1 - Fraction(1, 10**12))


def test_release_records_the_choice_and_keeps_shape():
    x = _data(500)
    meas = make_order_adaptive_pmm(_domain(500), dp.change_one_distance(), 0.1, 0.9, ORDERS)
    with reproducible(0), diagnostics() as rec:
        y = meas(x)
    assert y.shape == (500, 3)
    assert y.min() >= 0
    assert y.max() <= 1
    info = rec[-1]
    assert info["num_orders"] == 2
    assert 0 <= info["order_index"] < 2
    assert info["num_candidates"] == sum(len(table_candidates(o, 500, 0.9)) for o in ORDERS)


def test_selection_law_ratio_on_neighbours():
    """The concatenated scores move by at most the largest order's sensitivity under one
    replacement, so the exponential mechanism's probabilities on neighbours differ by at most
    ``exp(eps_sel)``: checked exactly on every replacement of one row by a few values."""
    n, eps_main, eps_sel = 40, 0.9, 0.1
    dom, metric = _domain(n), dp.change_one_distance()
    scores = [
        make_schedule_scores(
            dom,
            metric,
            table_candidates(o, n, eps_main),
            eps_main,
            1.0,
            (0, 1),
            split_order=o,
            score="capped",
            placement="uniform",
        )
        for o in ORDERS
    ]
    delta = max(t.map(1) for t in scores)
    x = _data(n, 1)
    s0 = np.concatenate([t(x) for t in scores])
    p0 = softmax_probabilities(s0, eps_sel, delta)
    rng = np.random.default_rng(2)
    for _ in range(25):
        y = x.copy()
        y[rng.integers(n)] = _data(1, int(rng.integers(1000)))[0]
        s1 = np.concatenate([t(y) for t in scores])
        assert np.abs(s1 - s0).max() <= delta
        p1 = softmax_probabilities(s1, eps_sel, delta)
        assert np.all(np.log(p0 / p1) <= eps_sel + 1e-12)


def test_refuses_no_orders_and_unsized():
    with pytest.raises(ValueError, match="at least one"):
        make_order_adaptive_pmm(_domain(100), dp.change_one_distance(), 0.1, 0.9, ())
    with pytest.raises(ValueError, match="public n"):
        make_order_adaptive_pmm(_domain(None), dp.symmetric_distance(), 0.1, 0.9, ORDERS)
