"""The zCDP variants (``output_measure=dp.zero_concentrated_divergence()``) of Pruned-PMM, PMM,
the tree projection and the NN histogram: exact maps, check() at the bound, the exact Renyi
divergence of Pruned-PMM's released leaf masses on a tiny input, the released law against the
exact one, (eps, delta) through OpenDP's combinators, and OpenDP's Context API in zCDP."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import (
    make_nn_histogram,
    make_pmm,
    make_pruned_pmm,
    make_tree_projection,
)
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.zcdp import zcdp_budget, zcdp_schedule

from . import exact_pmm
from .exact_pmm import counts_of, leaf_law

ZCDP = dp.zero_concentrated_divergence()


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm])
@pytest.mark.parametrize("rho", [0.5, 0.07, 3.0])
def test_map_equals_rho_with_zcdp_schedule(mk, rho: float) -> None:
    sigma = zcdp_schedule(2, rho, 10, 2)
    sym = mk(dom(100), dp.symmetric_distance(), 10, sigma, output_measure=ZCDP)
    assert str(sym.output_measure) == "ZeroConcentratedDivergence"
    assert sym.map(2) == rho
    assert sym.map(3) == rho
    assert sym.check(2, rho)
    assert not sym.check(2, math.nextafter(rho, 0))
    one = mk(dom(100), dp.change_one_distance(), 10, sigma, output_measure=ZCDP)
    assert one.map(1) == rho
    assert one.check(1, rho)
    assert not one.check(1, math.nextafter(rho, 0))
    assert one.map(3) == round_up(9 * zcdp_budget(sigma))  # quadratic group privacy


def test_hand_computed_maps() -> None:
    scales = [2.0, 3.0, 5.0]  # w = 1/4, 1/9, 1/25
    sized = make_pruned_pmm(dom(8), dp.change_one_distance(), 2, scales, output_measure=ZCDP)
    assert sized.map(1) == round_up(Fraction(1, 9) + Fraction(1, 25))
    assert sized.map(2) == round_up(4 * (Fraction(1, 9) + Fraction(1, 25)))
    unsized = make_pruned_pmm(dom(None), dp.symmetric_distance(), 2, scales, output_measure=ZCDP)
    per = Fraction(1, 4) + Fraction(1, 9) + Fraction(1, 25)
    assert unsized.map(1) == round_up(per / 2)
    assert unsized.map(2) == round_up(4 * per / 2)
    no_root = make_pruned_pmm(
        dom(None),
        dp.symmetric_distance(),
        2,
        [math.inf, 3.0, 5.0],
        output_size=8,
        output_measure=ZCDP,
    )
    assert no_root.map(1) == round_up((Fraction(1, 9) + Fraction(1, 25)) / 2)


def _dg_pmf(scale: float) -> tuple[np.ndarray, np.ndarray]:
    z = np.arange(-exact_pmm.Z, exact_pmm.Z + 1)
    w = np.exp(-(z.astype(np.float64) ** 2) / (2 * scale * scale))
    return z, w / w.sum()


def _renyi(p: dict, q: dict, alpha: float) -> float:
    keys = [o for o in p if p[o] > 0]
    return math.log(sum(p[o] ** alpha * q[o] ** (1 - alpha) for o in keys)) / (alpha - 1)


@pytest.mark.parametrize("pruned", [True, False])
def test_renyi_divergence_of_released_leaf_masses(
    monkeypatch: pytest.MonkeyPatch, pruned: bool
) -> None:
    """Exact law of the depth-2 leaf masses (n = 3) with discrete Gaussian noise: for one
    replacement, D_alpha <= alpha * map at every order, and not vacuous."""
    monkeypatch.setattr(exact_pmm, "lapz_pmf", _dg_pmf)
    scales = zcdp_schedule(2, 0.5, 2, 1)
    rho = make_pruned_pmm(dom(3), dp.symmetric_distance(), 2, scales, output_measure=ZCDP).map(2)
    x = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])
    neighbours = [x.copy() for _ in range(3)]
    neighbours[0][0] = [0.9, 0.9]
    neighbours[1][1] = [0.6, 0.6]
    neighbours[2][2] = [0.3, 0.3]
    base = leaf_law(*counts_of(x), 3, scales, pruned)
    largest = 0.0
    for xn in neighbours:
        other = leaf_law(*counts_of(xn), 3, scales, pruned)
        for alpha in (1.5, 2.0, 5.0, 20.0):
            for p, q in ((base, other), (other, base)):
                dv = _renyi(p, q, alpha)
                assert dv <= alpha * rho * (1 + 1e-9)
                largest = max(largest, dv / (alpha * rho))
    assert largest > 0.05  # the bound is not vacuous here


def test_implementation_matches_exact_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chi-square of Gaussian Pruned-PMM's released leaf masses against the exact law."""
    monkeypatch.setattr(exact_pmm, "lapz_pmf", _dg_pmf)
    scales = [1.0, 1.5, 1.5]  # one level scale: one noise pool per release (fast)
    x = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])
    law = leaf_law(*counts_of(x), 3, scales, True)
    meas = make_pruned_pmm(dom(3), dp.symmetric_distance(), 2, scales, output_measure=ZCDP)
    runs = 600
    observed: dict[tuple[int, ...], int] = {o: 0 for o in law}
    for seed in range(runs):
        with reproducible(seed):
            y = meas(x)
        cx = (y[:, 0] > 0.5).astype(int) * 2 + (y[:, 1] > 0.5).astype(int)
        observed[tuple(np.bincount(cx, minlength=4).tolist())] += 1
    keys = sorted(law, key=lambda o: -law[o])
    exp = np.array([law[o] * runs for o in keys])
    obs = np.array([observed[o] for o in keys])
    big = exp >= 5
    f_obs, f_exp = obs[big], exp[big]
    if exp[~big].sum() > 0:
        f_obs, f_exp = np.append(f_obs, obs[~big].sum()), np.append(f_exp, exp[~big].sum())
    f_exp *= f_obs.sum() / f_exp.sum()
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-4


def test_release_rows_and_reproducibility() -> None:
    x = np.random.default_rng(0).uniform(size=(400, 2))
    meas = make_pruned_pmm(
        dom(400), dp.symmetric_distance(), 8, zcdp_schedule(2, 0.5, 8, 2), output_measure=ZCDP
    )
    with reproducible(3):
        a = meas(x)
    with reproducible(3):
        b = meas(x)
    assert a.shape == (400, 2)
    assert np.array_equal(a, b)
    full = make_pmm(
        dom(400), dp.symmetric_distance(), 6, zcdp_schedule(2, 0.5, 6, 2), output_measure=ZCDP
    )
    assert full(x).shape == (400, 2)


def test_bad_output_measure() -> None:
    with pytest.raises(ValueError, match="output_measure"):
        make_pruned_pmm(
            dom(10), dp.symmetric_distance(), 2, [1.0] * 3, output_measure=dp.approximate(ZCDP)
        )
    with pytest.raises(ValueError, match="output_measure"):
        make_tree_projection(
            dom(10),
            dp.symmetric_distance(),
            [[0.0, 0.0], [1.0, 1.0]],
            5,
            1.0,
            output_measure="zCDP",
        )


# ---------------------------------------------------------------------------------------------
# public candidates


CANDS = np.random.default_rng(5).uniform(size=(40, 2))  # public candidates (test data)


@pytest.mark.parametrize("rho", [0.5, 0.02])
def test_tree_projection_zcdp_map(rho: float) -> None:
    sym = make_tree_projection(
        dom(300), dp.symmetric_distance(), CANDS, 30, rho, output_measure=ZCDP
    )
    assert str(sym.output_measure) == "ZeroConcentratedDivergence"
    assert sym.map(2) == rho
    assert sym.check(2, rho)
    assert not sym.check(2, math.nextafter(rho, 0))
    one = make_tree_projection(
        dom(300), dp.change_one_distance(), CANDS, 30, rho, output_measure=ZCDP
    )
    assert one.map(1) == rho
    unsized = make_tree_projection(
        dom(None), dp.symmetric_distance(), CANDS, 30, rho, output_measure=ZCDP
    )
    assert unsized.map(2) == rho
    out = sym(np.random.default_rng(1).uniform(size=(300, 2)))
    assert out.shape == (40,)
    assert int(out.sum()) == 30


@pytest.mark.parametrize("sized", [True, False])
def test_nn_histogram_zcdp_map(sized: bool) -> None:
    rho = 0.5
    meas = make_nn_histogram(
        dom(300 if sized else None), dp.symmetric_distance(), CANDS, 30, rho, output_measure=ZCDP
    )
    assert str(meas.output_measure) == "ZeroConcentratedDivergence"
    assert meas.map(2) <= rho
    assert meas.map(2) == pytest.approx(rho, rel=1e-12)
    assert int(meas(np.random.default_rng(1).uniform(size=(300, 2))).sum()) == 30
    if sized:
        co = make_nn_histogram(
            dom(300), dp.change_one_distance(), CANDS, 30, rho, output_measure=ZCDP
        )
        assert co.map(1) == meas.map(2)


# ---------------------------------------------------------------------------------------------
# (eps, delta) and the Context API


def test_approximate_dp_of_pruned_pmm() -> None:
    """Pruned-PMM at rho = 1/2 converted by OpenDP gives OpenDP's (eps, delta) for rho = 1/2."""
    meas = make_pruned_pmm(
        dom(500), dp.symmetric_distance(), 9, zcdp_schedule(2, 0.5, 9, 2), output_measure=ZCDP
    )
    approx = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(meas), 1e-9)
    ref = dp.c.make_fix_delta(
        dp.c.make_zCDP_to_approxDP(
            dp.m.make_gaussian(
                dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=1.0
            )
        ),
        1e-9,
    )
    eps, delta = approx.map(2)
    assert (eps, delta) == ref.map(1)
    assert delta == 1e-9
    assert approx.check(2, (eps, 1e-9))
    assert not approx.check(2, (math.nextafter(eps, 0), 1e-9))
    assert approx(np.random.default_rng(0).uniform(size=(500, 2))).shape == (500, 2)


def test_context_api_in_zcdp() -> None:
    x = np.random.default_rng(2).uniform(size=(500, 2))
    ctx = dp.Context.compositor(
        data=x,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=0.5),
        split_evenly_over=2,
        domain=dp.numpy.array2_domain(num_columns=2, T=float),
    )
    # one added or removed row (unsized, sigma_0 = inf) costs rho_schedule / 2 = 0.25
    scales = (math.inf, *zcdp_schedule(2, 0.5, 8, 2)[1:])
    query = ctx.query().pruned_pmm(depth=8, scales=scales, output_size=500, output_measure=ZCDP)
    assert query.release().shape == (500, 2)
    assert ctx.remaining_privacy_loss() == [0.25]
