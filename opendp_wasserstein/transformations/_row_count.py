"""The number of rows, as a stable transformation (for a DP count when the size is private)."""

from __future__ import annotations

from typing import Any

from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    validate_data,
)

__all__ = ["make_row_count", "then_row_count"]


def make_row_count(input_domain: Domain, input_metric: Metric) -> Transformation:
    """Construct a Transformation from a 2-D array to its number of rows (an ``i64``).

    Stability map ``d_in -> d_in`` into ``absolute_distance``: adding or removing ``d_in`` rows
    moves the count by at most ``d_in``.  Only for domains without a public size (with one, the
    count is a constant and this transformation is pointless).

    Required features: ``contrib``

    **Proof Definition:** :doc:`/proofs/noisy_size`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, T=float)`` without ``size``
    :param input_metric: ``dp.symmetric_distance()``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_row_count
    >>> dp.enable_features("contrib")
    >>> t = make_row_count(dp.numpy.array2_domain(num_columns=2, T=float), dp.symmetric_distance())
    >>> meas = t >> dp.m.then_laplace(scale=10.0)
    >>> meas.map(1)
    0.1
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    if n is not None:
        raise ValueError("input_domain has a public size: there is nothing to count")
    check_metric(input_metric, n)
    nan_ok = domain_allows_nan(input_domain)

    def function(x: Any) -> int:
        # the same release-time checks as every other constructor on this domain (type, dtype,
        # shape; never the values), so a malformed array is refused rather than counted
        return int(validate_data(x, d, None, nan=nan_ok).shape[0])

    def stability_map(d_in: int) -> int:
        if isinstance(d_in, bool) or not isinstance(d_in, int) or d_in < 0:
            raise ValueError("d_in must be a non-negative integer")
        return d_in

    return make_transformation(
        input_domain,
        input_metric,
        dp.atom_domain(T="i64"),
        dp.absolute_distance(T="i64"),
        function,
        stability_map,
    )


then_row_count = to_then(make_row_count)
register(make_row_count)
