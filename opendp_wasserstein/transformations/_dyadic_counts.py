"""The hierarchical count transformation of the dyadic hierarchy (cyclic or any public split
order)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    replacements,
    validate_data,
    whole_replacements,
)
from opendp_wasserstein.core.exact import exact_epsilon, inverse_squares, round_up
from opendp_wasserstein.core.metrics import weighted_l1_distance, weighted_l2sq_distance
from opendp_wasserstein.core.parameters import check_scales
from opendp_wasserstein.hierarchy.cells import check_axes, count_tree, max_depth
from opendp_wasserstein.hierarchy.domain import dyadic_counts_domain

__all__ = [
    "make_dyadic_counts",
    "then_dyadic_counts",
    "check_depth",
    "check_output_metric",
    "dyadic_counts_stability",
    "dyadic_counts_l2sq_stability",
]

#: the output metrics of the count transformations: ``l1(s)`` (discrete Laplace noise, pure DP)
#: and ``l2sq(s)`` (discrete Gaussian noise, zCDP)
OUTPUT_METRICS = ("l1", "l2sq")


def check_output_metric(output_metric: Any) -> str:
    """``"l1"`` or ``"l2sq"``, or a ``ValueError`` naming ``output_metric``."""
    if output_metric not in OUTPUT_METRICS:
        raise ValueError(f"output_metric must be one of {OUTPUT_METRICS}, got {output_metric!r}")
    return str(output_metric)


def check_depth(depth: Any, d: int, name: str = "depth") -> int:
    """An integer depth in ``[1, 52 d]``, or a ``ValueError`` naming ``name``."""
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(depth).__name__}")
    if not 1 <= depth <= max_depth(d):
        raise ValueError(f"{name} must be in [1, {max_depth(d)}] for d = {d}, got {depth}")
    return int(depth)


def dyadic_counts_stability(metric_kind: str, size: int | None, scales: tuple[float, ...]) -> Any:
    """The stability map ``d_in -> ||F(X) - F(X')||_{l1(s)}`` (Lemma A.3), exact, rounded up.

    Every added or removed record changes exactly one count per level by 1, so level ``j``
    moves by at most ``2 * replacements(d_in)`` in l1.  The root (level 0) moves only when the
    size is not public and the metric is ``symmetric_distance``.
    """
    root_sensitive = size is None and metric_kind == "symmetric"
    sensitive = scales if root_sensitive else scales[1:]

    def stability_map(d_in: int) -> float:
        return exact_epsilon(2 * replacements(metric_kind, d_in), sensitive)

    return stability_map


def dyadic_counts_l2sq_stability(
    metric_kind: str, size: int | None, scales: tuple[float, ...]
) -> Any:
    """The stability map ``d_in -> ||F(X) - F(X')||_{l2sq(s)}``, exact, rounded up.

    With ``w_j = 1/sigma_j^2``: ``2 m^2 sum_{j >= 1} w_j`` for ``m`` replacements (``m = d_in
    // 2`` under ``symmetric_distance`` on a sized domain, ``m = d_in`` under
    ``change_one_distance``), and ``k^2 sum_{j >= 0} w_j`` for ``k = d_in`` rows added or
    removed without a public size.  Tight: ``m`` copies of one point replaced by ``m`` copies
    of a point in the other level-1 cell (or ``k`` copies of one point added) attain it.
    Proof: ``docs/proofs/gaussian_counts.rst``.
    """
    w = inverse_squares(scales)
    if size is None and metric_kind == "symmetric":
        per_row = sum(w, Fraction(0))
        kind = "unsized"
    else:
        per_row = 2 * sum(w[1:], Fraction(0))
        kind = metric_kind

    def stability_map(d_in: int) -> float:
        m = whole_replacements(kind, d_in)
        return round_up(m * m * per_row)

    return stability_map


def make_dyadic_counts(
    input_domain: Domain,
    input_metric: Metric,
    depth: int,
    scales: Any,
    bounds: Any = None,
    output_metric: str = "l1",
    axes: Any = None,
) -> Transformation:
    r"""Construct a Transformation from a dataset in a box to its lazy dyadic count tree.

    Rows are clamped into the public box ``bounds`` (a stable row-wise map), rescaled to
    ``[0, 1]^d`` and counted in every cell of the dyadic hierarchy to ``depth``, level ``j``
    splitting coordinate ``axes[j]`` (default the cyclic order ``j mod d``) (Zare Moayedi et
    al. 2026, Section 3; He, Vershynin, Zhu 2023).  Every row lies in one cell per level
    whatever the order, so the map does not depend on it (:doc:`/proofs/split_order`).  The output
    is a :class:`~opendp_wasserstein.hierarchy.cells.CountTree` in the weighted l1 metric ``l1(s)``
    with ``s = scales``: ``d_out = sum_j (l1 change of level j) / sigma_j``.

    Stability map: ``d_in * sum_{j >= 1} 1/sigma_j`` under ``symmetric_distance`` on a sized
    domain, plus ``d_in / sigma_0`` when the size is not public; ``2 d_in sum_{j >= 1}
    1/sigma_j`` under ``change_one_distance``.  Computed over the rationals and rounded up.

    With ``output_metric="l2sq"`` the output metric is the weighted squared l2 distance
    ``l2sq(s)`` (:func:`~opendp_wasserstein.core.metrics.weighted_l2sq_distance`, for discrete
    Gaussian noise and zCDP) and the map is quadratic in the number of changed rows
    (:func:`dyadic_counts_l2sq_stability`): ``2 m^2 sum_{j >= 1} 1/sigma_j^2`` for ``m``
    replacements (``m = d_in // 2`` under ``symmetric_distance`` with a public size, ``m =
    d_in`` under ``change_one_distance``), ``d_in^2 sum_{j >= 0} 1/sigma_j^2`` without a
    public size.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi, Asadi, Yassaee, Aminian, *Geometry-Adaptive Mechanisms for Private Synthetic
      Data* (2026)
    * He, Vershynin, Zhu, *Algorithmically Effective Differentially Private Synthetic Data*, COLT
      2023

    **Proof Definition:** :doc:`/proofs/dyadic_counts`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized domain) ``dp.change_one_distance()``
    :param depth: the hierarchy depth ``r``, ``1 <= r <= 52 d``
    :param scales: the level scales ``sigma_0 .. sigma_r`` (``r + 1`` floats in ``[1e-100, 2^52]``;
        ``sigma_0 = inf`` says that the root count will not be released, so it is not charged)
    :param bounds: the public box ``(lower, upper)``, scalars or length-d; default the unit cube
    :param output_metric: ``"l1"`` (default; ``l1(s)``, for discrete Laplace noise) or
        ``"l2sq"`` (``l2sq(s)``, for discrete Gaussian noise)
    :param axes: the public split order, one coordinate per level (at least ``depth`` of them,
        none more than 52 times; e.g.
        :meth:`~opendp_wasserstein.hierarchy.split_order.SplitOrder.axes_to`), default cyclic; the
        maps do not depend on it
    :return: a Transformation into :func:`~opendp_wasserstein.hierarchy.domain.dyadic_counts_domain`

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(
    ...     dp.numpy.array2_domain(num_columns=2, size=100, T=float), dp.symmetric_distance(),
    ...     depth=2, scales=[1.0, 4.0, 4.0])
    >>> t.map(2)
    1.0
    >>> t(np.full((100, 2), 0.7)).occupancy().tolist()
    [1, 1, 1]
    >>> t2 = make_dyadic_counts(
    ...     dp.numpy.array2_domain(num_columns=2, size=100, T=float), dp.symmetric_distance(),
    ...     depth=2, scales=[1.0, 4.0, 4.0], output_metric="l2sq")
    >>> t2.map(2), t2.map(4)  # 2 m^2 (1/16 + 1/16) for m = 1, 2 replacements
    (0.25, 1.0)
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)
    depth = check_depth(depth, d)
    sigma = check_scales(scales, depth + 1, root_may_be_inf=True)
    box = as_box(bounds, d)
    order = check_axes(axes, d, depth)
    nan_ok = domain_allows_nan(input_domain)
    output_metric = check_output_metric(output_metric)

    def function(x: np.ndarray) -> Any:
        x = validate_data(x, d, n, nan=nan_ok)
        return count_tree(x, depth, box, axes=order)

    return make_transformation(
        input_domain,
        input_metric,
        dyadic_counts_domain(depth, d, n, box, order),
        weighted_l1_distance(sigma) if output_metric == "l1" else weighted_l2sq_distance(sigma),
        function,
        dyadic_counts_stability(kind, n, sigma)
        if output_metric == "l1"
        else dyadic_counts_l2sq_stability(kind, n, sigma),
    )


then_dyadic_counts = to_then(make_dyadic_counts)
register(make_dyadic_counts)
