"""(epsilon, delta) from the zCDP measurements, through OpenDP's own conversion combinators."""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.combinators import _epsilon_of, make_approx_dp, rho_for_approx_dp
from opendp_wasserstein.measurements import make_pruned_pmm, make_tree_projection


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-9), (0.3, 1e-6), (4.0, 1e-12)])
def test_rho_for_approx_dp_is_the_largest_feasible_float(eps: float, delta: float) -> None:
    rho = rho_for_approx_dp(eps, delta)
    assert _epsilon_of(rho, delta) <= eps
    assert _epsilon_of(math.nextafter(rho, math.inf), delta) > eps
    assert rho < eps * eps / 2  # (eps, delta) with tiny delta is far weaker than eps-DP's eps^2/2


def test_converted_measurement_meets_the_target() -> None:
    rho = rho_for_approx_dp(1.0, 1e-9)
    C = np.random.default_rng(0).uniform(size=(20, 2))  # public candidates (test data)
    meas = make_tree_projection(
        dp.numpy.array2_domain(num_columns=2, size=300, T=float),
        dp.symmetric_distance(),
        C,
        30,
        rho,
        output_measure=dp.zero_concentrated_divergence(),
    )
    approx = make_approx_dp(meas, 1e-9)
    eps, delta = approx.map(2)
    assert eps <= 1.0
    assert eps == pytest.approx(1.0, rel=1e-12)
    assert delta == 1e-9
    assert int(approx(np.random.default_rng(1).uniform(size=(300, 2))).sum()) == 30


def test_bad_arguments() -> None:
    pure = make_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=10, T=float),
        dp.symmetric_distance(),
        2,
        [1.0] * 3,
    )
    with pytest.raises(ValueError, match="zero_concentrated"):
        make_approx_dp(pure, 1e-9)
    for bad in (0.0, 1.0, -1e-9, math.nan):
        with pytest.raises(ValueError, match="delta"):
            rho_for_approx_dp(1.0, bad)
    with pytest.raises(TypeError, match="delta"):
        rho_for_approx_dp(1.0, "1e-9")
    with pytest.raises(ValueError, match="epsilon"):
        rho_for_approx_dp(0.0, 1e-9)
