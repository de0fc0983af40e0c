"""Options and the public shape of the data to the certified Measurement of a release.

:func:`synthesis_measurement` and :func:`selection_measurement` build, from a checked options
object (:mod:`opendp_wasserstein.release.options`) and public values only (``d``, the public
``n`` or None, the public box, a public split order), the one OpenDP Measurement that the
in-memory release (:mod:`opendp_wasserstein.release.in_memory`) calls and that a Dask release
(:mod:`opendp_wasserstein.distributed`) plans; its ``map`` certifies the release.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from opendp.mod import Measurement, assert_features

from opendp_wasserstein.combinators import make_approx_dp, rho_for_approx_dp
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.core.parameters import ScaleLimitError
from opendp_wasserstein.hierarchy.cells import max_depth
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements import (
    make_adaptive_pruned_pmm,
    make_nn_histogram,
    make_noisy_size_then,
    make_pmm,
    make_privtree,
    make_pruned_pmm,
    make_tree_em,
    make_tree_projection,
)
from opendp_wasserstein.release.options import (
    DEFAULT_SELECT_FRACTION,
    DEFAULT_SELECT_FRACTION_ZCDP,
    DEFAULT_SIZE_FRACTION,
    PRIVTREE_SPLITS_PER_COORDINATE,
    SelectionOptions,
    SynthesisOptions,
)
from opendp_wasserstein.schedules.pure import ambient_depth, paper_schedule
from opendp_wasserstein.schedules.zcdp import zcdp_schedule

__all__ = ["synthesis_measurement", "selection_measurement", "split_budget", "require_contrib"]


def require_contrib() -> None:
    """Refuse to run unless the caller enabled OpenDP's ``"contrib"`` feature.

    The constructors a release builds require it, as OpenDP's own extras do; the package never
    changes the caller's OpenDP features (``dp.enable_features("contrib")`` is the caller's call).
    """
    assert_features("contrib")


def split_budget(total: float, share: float) -> tuple[float, float]:
    """``(a, b)``: ``a = fl(share * total)`` and ``b`` the smallest float with ``a + b >= total``
    exactly.  The exact ``a + b`` is then below the float after ``total``, so the adaptive map,
    which rounds the exact sum down, certifies exactly ``total``: never more."""
    a = share * total
    return a, round_up(Fraction(total) - Fraction(a))


def _too_small(e: ScaleLimitError, mechanism: str) -> Exception:
    """A scale limit reached while building the measurement, as the user sees it: the DP count's
    own error, or "epsilon is too small" for the mechanism."""
    if str(e).startswith("epsilon_size"):
        return e
    return ValueError(
        f"epsilon is too small for mechanism={mechanism!r}: its noise scales would pass 2^52 "
        "(exact integer noise)"
    )


def synthesis_measurement(
    options: SynthesisOptions,
    *,
    d: int,
    n: int | None,
    box: Box,
    order: SplitOrder | None = None,
) -> tuple[Measurement, float | None]:
    """The certified measurement of a synthetic-data release, and with ``options.delta`` the
    ``rho`` of its zCDP variant (else None).

    :param options: the checked options
    :param d: the number of columns
    :param n: the public number of rows, or None when the size is private
    :param box: the public box
    :param order: a public split order over the ``d`` columns, or None (cyclic)
    :raises ValueError: the budget is too small for the mechanism (its message names it)
    """
    require_contrib()
    try:
        if options.delta is not None:
            assert n is not None  # SynthesisOptions refuses delta with a private size
            return _approx_measurement(options, d, n, box, order)
        return _pure_measurement(options, d, n, box, order), None
    except ScaleLimitError as e:
        raise _too_small(e, options.mechanism) from None


def _approx_measurement(
    options: SynthesisOptions, d: int, n: int, box: Box, order: SplitOrder | None
) -> tuple[Measurement, float]:
    """The ``(eps, delta)`` measurement (public size) and its ``rho``: the zCDP variant at ``rho =
    rho_for_approx_dp(eps, delta)`` converted by OpenDP
    (:func:`~opendp_wasserstein.combinators.make_approx_dp`)."""
    assert options.delta is not None
    eps, delta = options.epsilon, options.delta
    consistency, threshold = options.post
    zcdp = dp.zero_concentrated_divergence()
    rho = rho_for_approx_dp(eps, delta)
    domain = dp.numpy.array2_domain(num_columns=d, size=n, nan=False, T=float)
    metric = dp.change_one_distance()
    bounds = {"lower": box.lower, "upper": box.upper}
    placement = options.placement
    if options.mechanism == "adaptive":
        share = (
            DEFAULT_SELECT_FRACTION_ZCDP
            if options.epsilon_select is None
            else options.epsilon_select / eps
        )
        rho_sel, rho_main = split_budget(rho, share)
        meas = make_adaptive_pruned_pmm(
            domain,
            metric,
            rho_sel,
            rho_main,
            bounds=bounds,
            placement=placement,
            output_measure=zcdp,
            consistency=consistency,
            threshold=threshold,
            score=options.resolved_score,
            split_order=order,
        )
    else:
        r = ambient_depth(eps, n) if options.depth is None else options.depth
        if order is not None:
            r = min(r, order.max_depth)
        scales = zcdp_schedule(d, rho, r, s=d)
        axes = None if order is None else order.axes_to(r)
        if options.mechanism == "pruned":
            meas = make_pruned_pmm(
                domain,
                metric,
                r,
                scales,
                bounds=bounds,
                placement=placement,
                output_measure=zcdp,
                consistency=consistency,
                threshold=threshold,
                axes=axes,
            )
        else:
            meas = make_pmm(
                domain,
                metric,
                r,
                scales,
                bounds=bounds,
                placement=placement,
                output_measure=zcdp,
                axes=axes,
            )
    return make_approx_dp(meas, delta), rho


def _pure_measurement(
    options: SynthesisOptions, d: int, n: int | None, box: Box, order: SplitOrder | None
) -> Measurement:
    """The pure-DP measurement: ``epsilon`` per replacement with a public ``n``, per added or
    removed record without (``n`` None)."""
    eps, mechanism, depth, placement = (
        options.epsilon,
        options.mechanism,
        options.depth,
        options.placement,
    )
    domain = dp.numpy.array2_domain(num_columns=d, size=n, nan=False, T=float)
    metric = dp.change_one_distance() if n is not None else dp.symmetric_distance()
    bounds = {"lower": box.lower, "upper": box.upper}
    sel_share = (
        DEFAULT_SELECT_FRACTION if options.epsilon_select is None else options.epsilon_select / eps
    )
    consistency, threshold = options.post
    score = options.resolved_score

    def make(*args: Any, **kwargs: Any) -> Measurement:
        if mechanism == "pruned":
            kwargs.update(consistency=consistency, threshold=threshold)
            return make_pruned_pmm(*args, **kwargs)
        return make_pmm(*args, **kwargs)

    def schedule(levels_eps: float, r: int) -> tuple[float, ...]:
        """The paper's s = d schedule spending ``levels_eps`` per replacement on levels >= 1."""
        return paper_schedule(d, levels_eps, r, s=d)

    def axes(r: int) -> Any:
        return None if order is None else order.axes_to(r)

    def fit(r: int) -> int:
        """The ambient depth, within what the split order supports."""
        return r if order is None else min(r, order.max_depth)

    if mechanism == "privtree":
        # half the budget per added or removed record to the structure, half to the leaf counts;
        # a replacement costs twice a record
        record_eps = Fraction(eps) / 2 if n is not None else Fraction(eps)
        cap = min(max_depth(d), PRIVTREE_SPLITS_PER_COORDINATE * d)
        if order is not None:
            cap = min(cap, order.max_depth)
        return make_privtree(
            domain,
            metric,
            round_down(record_eps / 2),
            round_down(record_eps / 2),
            cap,
            bounds=bounds,
            placement=placement,
            axes=axes(cap),
        )
    if n is not None:  # public size: epsilon per replacement (change_one d_in = 1)
        if mechanism == "adaptive":
            eps_sel, eps_main = split_budget(eps, sel_share)
            return make_adaptive_pruned_pmm(
                domain,
                metric,
                eps_sel,
                eps_main,
                bounds=bounds,
                placement=placement,
                split_order=order,
                consistency=consistency,
                threshold=threshold,
                score=score,
            )
        r = fit(ambient_depth(eps, n)) if depth is None else depth
        return make(
            domain, metric, r, schedule(eps, r), bounds=bounds, placement=placement, axes=axes(r)
        )

    # private size: epsilon per added or removed record (symmetric d_in = 1)
    if mechanism != "adaptive" and depth is not None:
        # the noisy root count sets the number of rows: sigma_0 takes 2/3, the levels 1/3
        root_eps = round_down(Fraction(eps) * 2 / 3)
        sigma0 = round_up(1 / Fraction(root_eps))
        levels_half = round_down(Fraction(eps) - 1 / Fraction(sigma0))
        scales = (sigma0, *schedule(2 * levels_half, depth)[1:])
        return make(
            domain, metric, depth, scales, bounds=bounds, placement=placement, axes=axes(depth)
        )
    size_eps = DEFAULT_SIZE_FRACTION * eps if options.epsilon_size is None else options.epsilon_size
    # what make_noisy_size_then's count (OpenDP's make_laplace) certifies for one record
    count_scale = round_up(1 / Fraction(size_eps))
    count_cost = Fraction(
        dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), count_scale).map(
            1
        )
    )
    rest = round_down(Fraction(eps) - count_cost)  # what one added record may cost after the count
    if rest <= 0:
        raise ValueError("epsilon_size leaves nothing for the synthesis")
    if mechanism == "adaptive":
        # one added record costs eps_sel + eps_main / 2 (the selection moves by a whole record)
        eps_sel, half_main = split_budget(rest, sel_share)
        eps_main = 2 * half_main

        def build(n_hat: int) -> Measurement:
            return make_adaptive_pruned_pmm(
                domain,
                metric,
                eps_sel,
                eps_main,
                bounds=bounds,
                placement=placement,
                size=n_hat,
                split_order=order,
                consistency=consistency,
                threshold=threshold,
                score=score,
            )

        per_record = Fraction(round_down(Fraction(eps_sel) + Fraction(half_main)))
    else:

        def build(n_hat: int) -> Measurement:
            r = fit(ambient_depth(2 * rest, n_hat)) if depth is None else depth
            scales = (math.inf, *schedule(2 * rest, r)[1:])
            return make(
                domain,
                metric,
                r,
                scales,
                bounds=bounds,
                placement=placement,
                output_size=n_hat,
                axes=axes(r),
            )

        per_record = Fraction(rest)
    build(
        1
    )  # the smallest depth, so the smallest scales: an epsilon too small fails here, not at release
    return make_noisy_size_then(
        domain, metric, size_eps, build, bound=lambda d_in: round_up(int(d_in) * per_record)
    )


def selection_measurement(
    options: SelectionOptions, *, p: int, n: int | None, candidates: Any, m: int
) -> Measurement:
    """The certified measurement of a selection from public candidates: ``n`` public
    (change-one, ``epsilon`` per replacement) or ``None`` (symmetric distance, ``epsilon`` per
    added or removed record)."""
    require_contrib()
    eps, mechanism, metric = options.epsilon, options.mechanism, options.metric
    if n is not None:
        domain = dp.numpy.array2_domain(num_columns=p, size=n, nan=False, T=float)
        metric_in = dp.change_one_distance()
        eps_unit = eps  # per replacement
    else:
        domain = dp.numpy.array2_domain(num_columns=p, nan=False, T=float)
        metric_in = dp.symmetric_distance()
        eps_unit = 2 * eps  # the constructors spend epsilon per replacement, map(2)
    if mechanism == "tree-em":
        return make_tree_em(domain, metric_in, candidates, m, eps, metric=metric)
    if mechanism == "projection":
        return make_tree_projection(
            domain, metric_in, candidates, m, min(eps_unit, 1e100), metric=metric
        )
    return make_nn_histogram(domain, metric_in, candidates, m, min(eps_unit, 1e100), metric=metric)
