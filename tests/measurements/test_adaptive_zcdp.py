"""Adaptive Pruned-PMM in zCDP: exact composed maps, the zCDP candidates, the selection's law in
reproducible runs, and the private-size branch."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.core.exact import inverse_squares, round_up
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import standard_candidates
from opendp_wasserstein.schedules.zcdp import zcdp_candidates
from opendp_wasserstein.transformations import make_schedule_scores

ZCDP = dp.zero_concentrated_divergence()


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


@pytest.mark.parametrize("rho_sel,rho_main", [(0.05, 0.45), (0.013, 0.3), (0.2, 2.0)])
def test_map_is_the_sum_of_budgets(rho_sel: float, rho_main: float) -> None:
    total = 0.0
    for metric, one in ((dp.symmetric_distance(), 2), (dp.change_one_distance(), 1)):
        meas = make_adaptive_pruned_pmm(dom(3000), metric, rho_sel, rho_main, output_measure=ZCDP)
        assert str(meas.output_measure) == "ZeroConcentratedDivergence"
        total = meas.map(one)
        exact = Fraction(rho_sel) + Fraction(rho_main)
        assert Fraction(total) <= Fraction(rho_sel + rho_main)  # never above the float sum
        assert total >= math.nextafter(float(exact), 0)
        assert total == round_up(Fraction(total))
        assert meas.check(one, total)
        assert not meas.check(one, math.nextafter(total, 0))
        # two replacements: both parts are quadratic
        assert meas.map(2 * one) == pytest.approx(4 * total, rel=1e-9)
        assert meas.map(2 * one) <= 4 * total * (1 + 1e-12)


def test_private_size_branch() -> None:
    meas = make_adaptive_pruned_pmm(
        dom(None), dp.symmetric_distance(), 0.1, 0.4, size=5000, output_measure=ZCDP
    )
    assert meas.map(1) == pytest.approx(0.1 + 0.4 / 2, rel=1e-15)
    assert meas.map(1) <= 0.30000000000000004
    assert meas.map(3) == pytest.approx(9 * meas.map(1), rel=1e-9)
    x = np.random.default_rng(0).uniform(size=(4800, 2))
    assert meas(x).shape == (5000, 2)


def test_candidates_spend_rho_main_exactly() -> None:
    cands = zcdp_candidates(3, 20000, 0.37)
    assert [c.s for c in cands] == [1, 2, 3]
    for c in cands:
        assert round_up(sum(inverse_squares(c.scales[1:]), Fraction(0))) == 0.37
    # pure-DP candidates are refused in zCDP (they spend 2 sum 1/sigma, not sum 1/sigma^2)
    with pytest.raises(ValueError, match="candidates"):
        make_adaptive_pruned_pmm(
            dom(20000, 3),
            dp.symmetric_distance(),
            0.1,
            0.37,
            candidates=standard_candidates(3, 20000, 0.37),
            output_measure=ZCDP,
        )
    with pytest.raises(ValueError, match="exponential"):
        make_adaptive_pruned_pmm(
            dom(100),
            dp.symmetric_distance(),
            0.1,
            0.4,
            selection="permute_and_flip",
            output_measure=ZCDP,
        )


def test_scores_in_zcdp_use_the_root_scale() -> None:
    cands = zcdp_candidates(2, 1000, 0.5)
    t = make_schedule_scores(dom(1000), dp.change_one_distance(), cands, 0.5, output_measure=ZCDP)
    x = np.random.default_rng(1).uniform(size=(1000, 2))
    scores = np.asarray(t(x))
    assert scores.shape == (2,)
    assert np.all(scores > 0)
    with pytest.raises(ValueError, match="candidates"):  # zCDP candidates are not pure-DP ones
        make_schedule_scores(dom(1000), dp.change_one_distance(), cands, 0.5)


def test_release_and_diagnostics() -> None:
    x = np.concatenate(
        [np.random.default_rng(2).uniform(size=(1500, 1)).repeat(2, axis=1)]
    )  # a curve
    meas = make_adaptive_pruned_pmm(
        dom(1500), dp.symmetric_distance(), 0.05, 0.45, output_measure=ZCDP
    )
    with reproducible(4), diagnostics() as info:
        a = meas(x)
    with reproducible(4):
        b = meas(x)
    assert a.shape == (1500, 2)
    assert np.array_equal(a, b)
    rec = info[-1]
    assert rec["rho_select"] == 0.05
    assert rec["rho_main"] == 0.45
    assert rec["num_candidates"] == 2
    assert rec["s"] in (1, 2)
    y = meas(x)  # secure run: OpenDP's Gumbel noisy max
    assert y.shape == (1500, 2)


# ---------------------------------------------------------------------------------------------
# a public split order (a table's hierarchy) in zCDP


def _order():
    from opendp_wasserstein.hierarchy.split_order import SplitOrder

    return SplitOrder.discrete_first(cells=(3, 0, 0))


@pytest.mark.parametrize("rho_sel,rho_main", [(0.05, 0.45), (0.2, 2.0)])
def test_split_order_keeps_the_zcdp_map(rho_sel: float, rho_main: float) -> None:
    meas = make_adaptive_pruned_pmm(
        dom(2000, 3),
        dp.change_one_distance(),
        rho_sel,
        rho_main,
        output_measure=ZCDP,
        split_order=_order(),
    )
    total = meas.map(1)
    assert Fraction(total) <= Fraction(rho_sel + rho_main)
    assert total >= math.nextafter(float(Fraction(rho_sel) + Fraction(rho_main)), 0)
    assert meas.check(1, total)
    assert not meas.check(1, math.nextafter(total, 0))
    unsized = make_adaptive_pruned_pmm(
        dom(None, 3),
        dp.symmetric_distance(),
        0.1,
        0.4,
        size=2000,
        output_measure=ZCDP,
        split_order=_order(),
    )
    assert unsized.map(1) == pytest.approx(0.1 + 0.4 / 2, rel=1e-15)


def test_zcdp_split_order_candidates_spend_rho_main_exactly() -> None:
    from opendp_wasserstein.schedules.pure import split_order_candidates
    from opendp_wasserstein.schedules.zcdp import zcdp_profile_schedule, zcdp_split_order_candidates

    cands = zcdp_split_order_candidates(_order(), 2000, 0.3)
    pure = split_order_candidates(_order(), 2000, math.sqrt(8 * 0.3))
    assert [(c.s, c.depth) for c in cands] == [(c.s, c.depth) for c in pure]
    for c in cands:
        assert round_up(sum(inverse_squares(c.scales[1:]), Fraction(0))) == 0.3
    # the Hölder optimum: sigma_j proportional to w_j^(-1/3)
    sigma = zcdp_profile_schedule([8.0, 1.0], 1.0)
    assert sigma[2] / sigma[1] == pytest.approx(2.0, rel=1e-6)
    assert round_up(sum(inverse_squares(sigma[1:]), Fraction(0))) == 1.0


def test_zcdp_split_order_release_uses_its_hierarchy() -> None:
    from opendp_wasserstein.schedules.zcdp import zcdp_split_order_candidates

    rng = np.random.default_rng(0)
    x = np.column_stack(
        [rng.choice([0.25, 0.625, 0.875], 2000), rng.uniform(size=2000), rng.uniform(size=2000)]
    )
    meas = make_adaptive_pruned_pmm(
        dom(2000, 3),
        dp.change_one_distance(),
        0.05,
        0.45,
        placement="center",
        output_measure=ZCDP,
        split_order=_order(),
    )
    cands = zcdp_split_order_candidates(_order(), 2000, 0.45)
    with reproducible(4), diagnostics() as info:
        y = meas(x)
    rec = info[-1]
    assert (rec["s"], rec["depth"]) in {(c.s, c.depth) for c in cands}
    assert rec["depth"] >= 2  # the categorical axis (two levels, first) is resolved
    assert set(np.unique(y[:, 0])) <= {0.125, 0.375, 0.625, 0.875}
