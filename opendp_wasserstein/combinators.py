r"""Approximate DP, ``(epsilon, delta)``, from the zCDP measurements through OpenDP's combinators.

Every zCDP measurement of the package (``output_measure=dp.zero_concentrated_divergence()``) can
be stated in ``(epsilon, delta)`` by OpenDP itself: ``dp.c.make_zCDP_to_approxDP`` turns the
``rho`` of its map into a privacy profile ``delta(epsilon)``, and ``dp.c.make_fix_delta`` fixes
``delta``.  Nothing here adds a privacy argument of its own:

- :func:`make_approx_dp` is exactly that two-step chain;
- :func:`rho_for_approx_dp` inverts OpenDP's conversion: the largest float ``rho`` whose
  conversion at ``delta`` gives at most ``epsilon`` (bisection, every candidate evaluated by
  OpenDP's own map).

:example:

>>> import numpy as np, opendp.prelude as dp
>>> from opendp_wasserstein.combinators import make_approx_dp, rho_for_approx_dp
>>> from opendp_wasserstein.measurements import make_pruned_pmm
>>> from opendp_wasserstein.schedules.zcdp import zcdp_schedule
>>> dp.enable_features("contrib")
>>> rho = rho_for_approx_dp(1.0, 1e-9)
>>> round(rho, 5)
0.01497
>>> meas = make_pruned_pmm(dp.numpy.array2_domain(num_columns=2, size=1000, T=float),
...                        dp.symmetric_distance(), depth=10, scales=zcdp_schedule(2, rho, 10, 2),
...                        output_measure=dp.zero_concentrated_divergence())
>>> eps, delta = make_approx_dp(meas, 1e-9).map(2)
>>> eps <= 1.0, delta
(True, 1e-09)
"""

from __future__ import annotations

import functools
import math

import numpy as np
from opendp.mod import Measurement

from opendp_wasserstein._compat import make_measurement
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.parameters import check_delta, check_epsilon

__all__ = ["make_approx_dp", "rho_for_approx_dp"]


def make_approx_dp(measurement: Measurement, delta: float) -> Measurement:
    """A zCDP measurement restated in ``(epsilon, delta)`` by OpenDP:
    ``make_fix_delta(make_zCDP_to_approxDP(measurement), delta)``.

    :param measurement: a measurement into ``zero_concentrated_divergence()``
    :param delta: the ``delta`` to fix, in ``(0, 1)``
    :return: a measurement into ``Approximate(MaxDivergence)`` whose map returns
        ``(epsilon, delta)``
    """
    if measurement.output_measure != dp.zero_concentrated_divergence():
        raise ValueError(
            "measurement must have output_measure dp.zero_concentrated_divergence(), "
            f"got {measurement.output_measure}"
        )
    d = check_delta(delta)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measurement), d)


def _epsilon_of(rho: float, delta: float) -> float:
    """OpenDP's epsilon at ``delta`` for a measurement whose zCDP map is ``rho``."""
    probe = make_measurement(
        dp.atom_domain(T=float, nan=False),
        dp.absolute_distance(T=float),
        dp.zero_concentrated_divergence(),
        lambda x: x,
        lambda d_in: rho,
    )
    eps, _ = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(probe), delta).map(1.0)
    return float(eps)


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _from_bits(b: int) -> float:
    return float(np.int64(b).view(np.float64))


def rho_for_approx_dp(epsilon: float, delta: float) -> float:
    """The largest float ``rho`` such that OpenDP converts ``rho``-zCDP to ``(epsilon', delta)``
    with ``epsilon' <= epsilon``.

    A zCDP measurement whose map is at most this ``rho`` is therefore ``(epsilon, delta)``-DP
    through :func:`make_approx_dp` (OpenDP's conversion is monotone in ``rho``).

    :param epsilon: the target epsilon
    :param delta: the target delta, in ``(0, 1)``
    """
    return _rho_for_approx_dp(check_epsilon(epsilon), check_delta(delta))


@functools.lru_cache(maxsize=256)
def _rho_for_approx_dp(eps: float, d: float) -> float:
    """:func:`rho_for_approx_dp` on checked floats, memoised (a pure function of public values:
    the bisection makes about a hundred calls into OpenDP's conversion)."""
    lo, hi = 0.0, max(eps, 1e-300)  # rho <= epsilon always suffices? checked below
    while _epsilon_of(hi, d) <= eps:  # widen until infeasible
        lo, hi = hi, hi * 2.0
        if not math.isfinite(hi):  # pragma: no cover
            return lo
    if lo == 0.0:
        lo = hi
        while _epsilon_of(lo, d) > eps:
            lo *= 0.5
            if lo < 1e-300:
                raise ValueError("no rho reaches this (epsilon, delta)")
    lo_b, hi_b = _bits(lo), _bits(hi)  # lo feasible, hi infeasible
    while hi_b - lo_b > 1:
        mid = (lo_b + hi_b) // 2
        if _epsilon_of(_from_bits(mid), d) <= eps:
            lo_b = mid
        else:
            hi_b = mid
    return _from_bits(lo_b)
