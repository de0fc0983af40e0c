"""The occupancy transformation: occupied-cell counts of every level of the dyadic hierarchy."""

from __future__ import annotations

from typing import Any

import numpy as np
from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    replacements,
    validate_data,
)
from opendp_wasserstein.hierarchy.cells import check_axes, count_tree
from opendp_wasserstein.transformations._dyadic_counts import check_depth

__all__ = ["make_occupancy", "then_occupancy", "occupancy_stability"]


def occupancy_stability(metric_kind: str, size: int | None) -> Any:
    """``d_in -> max_j |O_j(X) - O_j(X')|``.

    Adding or removing one record moves every ``O_j`` by at most 1.  Under
    ``symmetric_distance`` on a sized domain the ``d_in`` changes are ``d_in / 2`` removals and
    as many additions, so ``O_j`` moves by at most ``d_in / 2`` (each removal can only lower it
    and each addition only raise it); without a public size by at most ``d_in``.  Under
    ``change_one_distance`` each replacement moves it by at most 1.
    """

    def stability_map(d_in: int) -> int:
        r = replacements(metric_kind, d_in)  # validates d_in
        if size is None and metric_kind == "symmetric":
            return int(d_in)
        return int(r)  # floor: a sized symmetric distance is even

    return stability_map


def make_occupancy(
    input_domain: Domain, input_metric: Metric, depth: int, bounds: Any = None, axes: Any = None
) -> Transformation:
    r"""Construct a Transformation from data to the occupied-cell counts ``O_0 .. O_{depth-1}``.

    ``O_j`` is the number of level-``j`` cells of the dyadic hierarchy (split order ``axes``,
    default cyclic) of the box holding
    at least one (clamped) row.  All levels come from one sort of the Morton codes and the
    common-prefix lengths of neighbours, ``O(n log n + n depth / 64)``, exact for depths beyond
    64 bits (Zare Moayedi et al. 2026, Appendix A.9).  The output is an int64 numpy vector in
    ``linf_distance``; see :func:`occupancy_stability` for the map.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)

    **Proof Definition:** :doc:`/proofs/occupancy_scores`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param depth: number of levels ``L`` (the output has ``L`` entries, levels ``0 .. L-1``)
    :param bounds: the public box; default the unit cube
    :param axes: the public split order (default cyclic), as in ``make_dyadic_counts``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_occupancy
    >>> dp.enable_features("contrib")
    >>> t = make_occupancy(dp.numpy.array2_domain(num_columns=1, size=3, T=float),
    ...                    dp.change_one_distance(), depth=3)
    >>> t(np.array([[0.1], [0.2], [0.9]])).tolist(), t.map(1)
    ([1, 2, 2], 1)
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)
    depth = check_depth(depth, d)
    box = as_box(bounds, d)
    order = check_axes(axes, d, depth)
    nan_ok = domain_allows_nan(input_domain)

    def function(x: np.ndarray) -> np.ndarray:
        x = validate_data(x, d, n, nan=nan_ok)
        return count_tree(x, depth, box, axes=order).occupancy()[:depth]

    return make_transformation(
        input_domain,
        input_metric,
        dp.numpy.arrayd_domain(shape=(depth,), T="i64"),
        dp.linf_distance(T="i64"),
        function,
        occupancy_stability(kind, n),
    )


then_occupancy = to_then(make_occupancy)
register(make_occupancy)
