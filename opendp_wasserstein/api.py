"""High-level API for people who do not compose OpenDP objects by hand.

Every function here builds the package's OpenDP measurements and calls them; the reported
epsilon is what the measurement's own privacy map certifies.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import opendp.prelude as dp
from opendp.mod import Measurement, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein.core.box import Box, as_box
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.core.parameters import ScaleLimitError, check_epsilon
from opendp_wasserstein.hierarchy.least_squares import check_postprocessing

__all__ = [
    "SynthesisReport",
    "synthesize",
    "MECHANISMS",
    "DEFAULT_SELECT_FRACTION",
    "DEFAULT_CONSISTENCY",
    "DEFAULT_SIZE_FRACTION",
    "DEFAULT_SELECT_FRACTION_ZCDP",
    "SelectionReport",
    "select_candidates",
    "SELECTION_MECHANISMS",
]

MECHANISMS = ("adaptive", "pruned", "pmm", "privtree")

#: the mechanisms :func:`synthesize` takes with a ``schema``: ``"structured"`` (the default: the
#: DP first look, quantile encoding, chosen Gower split orders, calibration;
#: :mod:`opendp_wasserstein.tables.pipeline`) or one tree over the table's hierarchy
TABLE_MECHANISMS = ("structured", *MECHANISMS)

#: PrivTree's public depth cap in :func:`synthesize`: 20 splits per coordinate (its split rule
#: stops far above this on data; the cap does not depend on the data or on ``n``)
PRIVTREE_SPLITS_PER_COORDINATE = 20

#: the post-processing of the pruned traversal :func:`synthesize` uses by default: least squares
#: with the 3-standard-error suppression (measured better than the paper's split on every data
#: set of ``benchmarks/bench_postprocessing.py``); the constructors keep the paper's rule
DEFAULT_CONSISTENCY = "least_squares"

#: the adaptive selection's score in :func:`synthesize`: the capped-count estimate, measured
#: closer to the best candidate than the paper's bound on every data set of
#: ``benchmarks/bench_selection.py``; the constructors keep the paper's score by default
DEFAULT_SCORE = "capped"

#: the share of epsilon spent on private schedule selection by default in ``synthesize``
DEFAULT_SELECT_FRACTION = 0.2

#: the share of epsilon spent on a DP count when the size is private, by default
DEFAULT_SIZE_FRACTION = 0.1

#: with ``delta``: the share of ``rho`` spent on the adaptive selection, by default (its
#: exponential mechanism costs ``eps_EM^2 / 8``, so 10% of ``rho`` buys ``eps_EM = sqrt(0.8 rho)``)
DEFAULT_SELECT_FRACTION_ZCDP = 0.1


@dataclass(frozen=True)
class SynthesisReport:
    """What :func:`synthesize` did, all of it public after the release.

    :param mechanism: ``"adaptive"``, ``"pruned"`` or ``"pmm"``
    :param epsilon: the privacy loss certified by ``measurement.map`` for one replacement
        (``change_one_distance`` d_in = 1) -- or, without a public size, for one added or
        removed record (``symmetric_distance`` d_in = 1)
    :param depth: the hierarchy depth used
    :param scales: the noise schedule ``sigma_0 .. sigma_depth``
    :param visited_nodes: noisy nodes drawn
    :param size: rows released
    :param seconds: wall-clock time of the release; None when the size is private (the time
        grows with ``n``).  A timing, covered by no proof: keep it with the curator, do not
        publish it (:doc:`/randomness`)
    :param details: mechanism-specific public details (e.g. the selected candidate)
    :param delta: with ``synthesize(..., delta=...)``: the ``delta`` certified with ``epsilon``
        (the release is ``(epsilon, delta)``-DP); ``None`` for pure DP
    """

    mechanism: str
    epsilon: float
    depth: int
    scales: tuple[float, ...]
    visited_nodes: int
    size: int
    seconds: float | None
    details: dict[str, Any] = field(default_factory=dict)
    delta: float | None = None


def _as_data(x: Any, name: str = "X", public_size: bool = True) -> np.ndarray:
    """A float copy of 2-D real data; messages name ``name`` and never quote a value.

    Only what is public or outside the input domain is refused: the type, the number of
    dimensions and columns, an empty array when the size is public (``n`` is then public and
    must be at least 1), and NaN (the high-level functions release on NaN-free arrays,
    ``array2_domain(nan=False)``, and make no claim outside their domain).  An empty array with a
    private size is data like any other, and ``+-inf`` is clamped to the box like every other
    value outside it (selection: tied with every candidate): neither raises, so whether a
    call succeeds does not depend on one record."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be a 2-D array of real numbers, got dtype {x.dtype}")
        arr = x
    else:
        try:
            arr = np.array(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a 2-D array of real numbers") from None
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-dimensional (rows x columns), got {arr.ndim} dimensions")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if public_size and arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row (the size is public: public_size=True)")
    arr = arr.astype(np.float64, copy=True)
    if np.isnan(arr).any():
        raise ValueError(
            f"{name} must not contain NaN: the input domain is NaN-free arrays (array2_domain(nan=False)); "
            "impute first, or release with a schema, which handles missing values"
        )
    return arr


def _bounds(bounds: Any, d: int) -> Box:
    """The public box: ``(lower, upper)``, a Box, ``{"lower", "upper"}``, or one ``(low, high)``
    per column as a mapping ``{column index: (low, high)}`` covering every column."""
    if bounds is None:
        raise ValueError("bounds are required: give the public (lower, upper) box; they must not be inferred from the data")
    if isinstance(bounds, dict) and set(bounds) != {"lower", "upper"}:
        if set(bounds) != set(range(d)):
            raise ValueError(f"bounds as a per-column mapping must have the keys 0 .. {d - 1}")
        try:
            pairs = [tuple(bounds[j]) for j in range(d)]
            lower, upper = [p[0] for p in pairs], [p[1] for p in pairs]
        except (TypeError, IndexError):
            raise ValueError("bounds: each column needs a (low, high) pair") from None
        return as_box({"lower": lower, "upper": upper}, d)
    return as_box(bounds, d)


def _require_contrib() -> None:
    """Refuse to run unless the caller enabled OpenDP's ``"contrib"`` feature.

    The constructors this API builds require it, as OpenDP's own extras do; the package never
    changes the caller's OpenDP features (``dp.enable_features("contrib")`` is the caller's call).
    """
    assert_features("contrib")


def _check_public_size(public_size: Any) -> None:
    """``public_size`` is a flag: a truthy string such as ``"no"`` must not make ``n`` public."""
    if not isinstance(public_size, (bool, np.bool_)):
        raise TypeError(f"public_size must be True or False, got {type(public_size).__name__}")


def _split(total: float, share: float) -> tuple[float, float]:
    """``(a, b)``: ``a = fl(share * total)`` and ``b`` the smallest float with ``a + b >= total``
    exactly.  The exact ``a + b`` is then below the float after ``total``, so the adaptive map,
    which rounds the exact sum down, certifies exactly ``total``: never more."""
    a = share * total
    return a, round_up(Fraction(total) - Fraction(a))


def _check_options(
    eps: float, mechanism: str, epsilon_select: Any, depth: Any, epsilon_size: Any, public_size: Any
) -> None:
    """The budget shares and the depth of :func:`synthesize` (in memory and on Dask) fit the
    mechanism, the size flag and ``eps``."""
    if epsilon_select is not None:
        check_epsilon(epsilon_select, "epsilon_select")
        if mechanism != "adaptive":
            raise ValueError("epsilon_select applies only to mechanism='adaptive'")
        if epsilon_select >= eps:
            raise ValueError("epsilon_select must be smaller than epsilon")
    if depth is not None and mechanism in ("adaptive", "privtree"):
        raise ValueError(f"depth applies only to mechanism='pruned' or 'pmm' ({mechanism} chooses it)")
    if epsilon_size is not None and mechanism == "privtree":
        raise ValueError("epsilon_size does not apply to mechanism='privtree' (it needs no count of the rows)")
    if epsilon_size is not None:
        check_epsilon(epsilon_size, "epsilon_size")
        if public_size:
            raise ValueError("epsilon_size applies only with public_size=False")
        if epsilon_size >= eps:
            raise ValueError("epsilon_size must be smaller than epsilon")


def _check_score_option(score: Any, mechanism: str) -> str:
    """The adaptive selection's score of :func:`synthesize` (default :data:`DEFAULT_SCORE`)."""
    from opendp_wasserstein.transformations._schedule_scores import check_score

    if score is None:
        return DEFAULT_SCORE
    if mechanism != "adaptive":
        raise ValueError("score applies only to mechanism='adaptive'")
    return check_score(score)


def _too_small(e: ScaleLimitError, mechanism: str) -> Exception:
    """A scale limit reached while building :func:`synthesize`'s measurement, as the user sees it:
    the DP count's own error, or "epsilon is too small" for the mechanism."""
    if str(e).startswith("epsilon_size"):
        return e
    return ValueError(
        f"epsilon is too small for mechanism={mechanism!r}: its noise scales would pass 2^52 (exact integer noise)"
    )


def synthesize(
    X: Any,
    epsilon: float,
    bounds: Any = None,
    mechanism: str | None = None,
    epsilon_select: float | None = None,
    depth: int | None = None,
    placement: str = "uniform",
    public_size: bool = True,
    epsilon_size: float | None = None,
    schema: Any = None,
    columns: Any = None,
    split_order: Any = None,
    consistency: str | None = None,
    threshold: float | None = None,
    delta: float | None = None,
    score: str | None = None,
    accept_data_derived_schema: bool = False,
    structured: Any = None,
) -> tuple[Any, SynthesisReport]:
    """Release a differentially private synthetic copy of ``X`` with small W1 distance.

    With ``public_size=True`` (the default) ``n = len(X)`` is public and ``epsilon`` is the loss
    of replacing one record.  With ``public_size=False`` ``n`` is private and ``epsilon`` is the
    loss of adding or removing one record; nothing that shapes the release is computed from
    ``n``: either ``depth`` is given (``"pruned"``/``"pmm"``; the noisy root count sets the number
    of rows), or a share ``epsilon_size`` is spent on a DP count ``n_hat`` (OpenDP's
    ``make_laplace``) from which the depth or the candidate set is chosen, and ``n_hat`` rows are
    released.  Either way the reported epsilon is the certified map of the whole release.

    With ``delta`` the release is ``(epsilon, delta)``-DP instead (one replacement, public size):
    the discrete Gaussian (zCDP) variant of the mechanism runs at ``rho =
    rho_for_approx_dp(epsilon, delta)``, the largest ``rho`` that OpenDP's
    ``make_zCDP_to_approxDP`` + ``make_fix_delta`` turn into at most ``epsilon`` at ``delta``
    (:mod:`opendp_wasserstein.combinators`), and the report's ``(epsilon, delta)`` is the map of
    that converted measurement.  ``"adaptive"`` spends ``epsilon_select / epsilon`` of ``rho``
    on the selection (default 10%, :data:`DEFAULT_SELECT_FRACTION_ZCDP`) with the zCDP
    candidates; ``"pruned"`` and ``"pmm"`` use the ambient depth ``ceil(log2(epsilon n))`` with
    the zCDP-optimal schedule at ``s = d``.  See ``docs/zcdp.rst``.

    Reproducible (non-private) runs: call inside :func:`opendp_wasserstein.runtime.reproducible`.
    Like OpenDP's own constructors, it requires ``dp.enable_features("contrib")``.

    :param X: the sensitive data, ``n x d`` real numbers (not modified); values outside
        ``bounds`` (``+-inf`` too) are clamped to the box, NaN is refused (outside the input
        domain: impute first or give a ``schema``), and with ``public_size=False`` an empty
        array is released like any other data set
    :param epsilon: the total privacy budget (see above for the unit)
    :param bounds: the public box: ``(lower, upper)`` (scalars or length-d), a
        :class:`~opendp_wasserstein.core.box.Box`, ``{"lower": ..., "upper": ...}`` or one
        ``(low, high)`` per column as ``{0: (low, high), 1: ...}``; rows outside are clamped.
        Required, never inferred from the data.  An ambiguous pair is refused.
    :param mechanism: with a ``schema``, ``"structured"`` (the default with a public size, pure
        DP, uniform placement and none of the one-tree options ``epsilon_select``, ``depth``,
        ``epsilon_size``, ``split_order``, ``consistency``, ``threshold``, ``score``:
        :mod:`opendp_wasserstein.tables.pipeline`, options in ``structured``) or one of the
        following on the table's one hierarchy (``"adaptive"`` when the default does not apply); ``"adaptive"`` (the default otherwise:
        Adaptive Pruned-PMM), ``"pruned"`` (Pruned-PMM at
        the ambient depth ``ceil(log2(eps n))`` with the paper's ``s = d`` schedule), ``"pmm"``
        (the full-tree baseline, same depth and schedule) or ``"privtree"``
        (:func:`~opendp_wasserstein.measurements.make_privtree`, local adaptivity: half of the
        budget of a record to the tree, half to the leaf counts, at most
        :data:`PRIVTREE_SPLITS_PER_COORDINATE` splits per coordinate; pure DP, in memory only)
    :param epsilon_select: adaptive only: the selection budget (default 20% of ``epsilon``)
    :param depth: pruned/pmm only: the depth (default the ambient rule, on ``n`` or ``n_hat``)
    :param placement: ``"uniform"`` (default) or ``"center"`` within leaf cells
    :param public_size: whether ``n = len(X)`` is public (default True)
    :param epsilon_size: private size only: the budget of the DP count (default 10% of
        ``epsilon``; not used by pruned/pmm when ``depth`` is given)
    :param schema: a :class:`~opendp_wasserstein.tables.Schema` (or a path or dict that
        :meth:`~opendp_wasserstein.tables.Schema.from_json` reads): ``X`` is then a table
        (pandas, Polars eager or lazy, pyarrow, or a 2-D numpy array) of mixed columns and the
        result is the same type with the same column names and dtypes; ``bounds`` is not used
    :param columns: with ``schema``: use only these columns of ``X``
    :param split_order: the public order in which the hierarchy splits the coordinates: with a
        ``schema``, ``"discrete-first"`` (default: categorical, bool and is-missing axes first,
        then numeric ones cyclically) or ``"cyclic"``; without one, a
        :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder` over the ``d`` columns of ``X``
        (default: the cyclic order)
    :param consistency: adaptive/pruned: how the noisy counts become leaf masses (free
        post-processing): ``"paper"`` (Algorithm 2) or ``"least_squares"`` (generalised least
        squares over every visited level, :mod:`opendp_wasserstein.hierarchy.least_squares`); default
        :data:`DEFAULT_CONSISTENCY`
    :param threshold: adaptive/pruned: suppress noise-made mass in empty cells: with
        ``"paper"`` a noisy count at most ``threshold * sigma_j`` counts as 0 (default 0), with
        ``"least_squares"`` an estimate at most ``threshold`` standard errors (default 3)
    :param delta: ``None`` (default: pure ``epsilon``-DP) or a ``delta`` in ``(0, 1)``: an
        ``(epsilon, delta)``-DP release through the zCDP variant and OpenDP's conversion (see
        above); needs ``public_size=True``; with a ``schema`` it runs on the table's hierarchy
        (``mechanism="adaptive"``, ``"pruned"`` or ``"pmm"``: the structured release is pure DP)
    :param score: adaptive only: the selection's score, ``"capped"`` (default,
        :data:`DEFAULT_SCORE`: the capped-count estimate, a selection that finds the good
        candidate) or ``"paper"`` (the paper's bound ``B_a``); the privacy map is the same
        (:func:`~opendp_wasserstein.transformations.make_schedule_scores`)
    :param accept_data_derived_schema: with ``schema``: release even if some bounds or categories
        were read off the data (``derived_from_data``: not private); refused by default
    :param structured: with ``schema`` and ``mechanism="structured"``: a
        :class:`~opendp_wasserstein.tables.pipeline.StructuredOptions` (default: its defaults)
    :return: the synthetic array (or table) and a :class:`SynthesisReport`

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein import synthesize
    >>> dp.enable_features("contrib")
    >>> X = np.random.default_rng(0).uniform(size=(1000, 2))
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1))
    >>> Y.shape[1], report.epsilon
    (2, 1.0)
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1), public_size=False)
    >>> report.epsilon <= 1.0, report.details["size_estimate"] == len(Y)
    (True, True)
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1), delta=1e-9)
    >>> report.epsilon <= 1.0, report.delta, report.details["rho"] > 0
    (True, 1e-09, True)
    """
    _check_public_size(public_size)
    if delta is not None:
        from opendp_wasserstein.combinators import _check_delta

        delta = _check_delta(delta)
        if not public_size:
            raise ValueError("delta needs public_size=True (the zCDP variants are calibrated to a public size)")
    if schema is not None:
        from opendp_wasserstein.tables import Schema
        from opendp_wasserstein.tables.release import synthesize_table

        if bounds is not None:
            raise ValueError("give either bounds or schema, not both (a schema holds the bounds)")
        schema = schema if isinstance(schema, Schema) else Schema.from_json(schema)
        tree_options = {"epsilon_select": epsilon_select, "depth": depth, "epsilon_size": epsilon_size,
                        "split_order": split_order, "consistency": consistency, "threshold": threshold,
                        "score": score, "delta": delta}
        given = sorted(k for k, v in tree_options.items() if v is not None)
        if mechanism is None:
            # the structured release needs a public size and is pure DP, and has none of the
            # one-tree options; otherwise one tree (Adaptive Pruned-PMM) as before
            mechanism = "structured" if public_size and not given and placement == "uniform" else "adaptive"
        if mechanism not in TABLE_MECHANISMS:
            raise ValueError(f"mechanism must be one of {TABLE_MECHANISMS} with a schema, got {mechanism!r}")
        if mechanism == "structured":
            if given:
                raise ValueError(
                    f"option(s) {given} apply to the one-tree table mechanisms, not to mechanism='structured' "
                    "(its options are structured=StructuredOptions(...)); pass mechanism='adaptive' for them"
                )
            if not public_size:
                raise ValueError("mechanism='structured' needs public_size=True; pass mechanism='adaptive' for a private size")
            if placement != "uniform":
                raise ValueError("mechanism='structured' places points uniformly: leave placement unset")
            return synthesize_table(
                X, epsilon, schema, columns, accept_data_derived_schema=accept_data_derived_schema,
                structured=True if structured is None else structured,
            )
        if structured is not None:
            raise ValueError("structured applies only to mechanism='structured'")
        return synthesize_table(
            X, epsilon, schema, columns, mechanism=mechanism, epsilon_select=epsilon_select,
            depth=depth, placement=placement, public_size=public_size, epsilon_size=epsilon_size,
            split_order=split_order, consistency=consistency, threshold=threshold, score=score,
            accept_data_derived_schema=accept_data_derived_schema, delta=delta,
        )
    if accept_data_derived_schema:
        raise ValueError("accept_data_derived_schema applies only with a schema")
    if structured is not None:
        raise ValueError("structured applies only with a schema")
    mechanism = "adaptive" if mechanism is None else mechanism
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if mechanism in ("pmm", "privtree") and (consistency, threshold) != (None, None):
        raise ValueError("consistency and threshold apply only to mechanism='adaptive' or 'pruned'")
    if mechanism == "privtree" and delta is not None:
        raise ValueError("mechanism='privtree' is released in pure DP only: leave delta unset")
    post = check_postprocessing(DEFAULT_CONSISTENCY if consistency is None else consistency, threshold)
    score = _check_score_option(score, mechanism)
    eps = check_epsilon(epsilon)
    x = _as_data(X, public_size=bool(public_size))
    n, d = x.shape
    box = _bounds(bounds, d)
    from opendp_wasserstein.transformations._schedule_scores import check_split_order

    order = check_split_order(split_order, d)
    _check_options(eps, mechanism, epsilon_select, depth, epsilon_size, public_size)
    _require_contrib()
    try:
        if delta is not None:
            meas, rho = _approx_measurement(
                d, n, eps, delta, box, mechanism, epsilon_select, depth, placement, post, score, order
            )
        else:
            meas = _synthesis_measurement(
                d, n if public_size else None, eps, box, mechanism, epsilon_select, depth, placement, epsilon_size,
                order, post, score,
            )
    except ScaleLimitError as e:
        raise _too_small(e, mechanism) from None
    t0 = time.perf_counter()
    with runtime.diagnostics() as records:
        y = meas(x)
    seconds = time.perf_counter() - t0
    certified_delta = None
    if delta is not None:
        certified, certified_delta = meas.map(1)
    else:
        certified = meas.map(1)
    info: dict[str, Any] = {}
    for r in records:
        info |= r
    details = {k: v for k, v in info.items() if k not in {"depth", "visited_nodes", "scales"}}
    if delta is not None:
        details["rho"] = rho
    report = SynthesisReport(
        mechanism=mechanism,
        epsilon=certified,
        delta=certified_delta,
        depth=int(info["depth"]),
        scales=tuple(info.get("scales", ())),
        visited_nodes=int(info["visited_nodes"]),
        size=int(y.shape[0]),
        seconds=seconds if public_size else None,
        details=details,
    )
    return y, report


def _approx_measurement(
    d: int,
    n: int,
    eps: float,
    delta: float,
    box: Box,
    mechanism: str,
    epsilon_select: float | None,
    depth: int | None,
    placement: str,
    post: tuple[str, float] = ("paper", 0.0),
    score: str = "paper",
    order: Any = None,
) -> tuple[Measurement, float]:
    """The ``(eps, delta)`` measurement of :func:`synthesize` (public size) and its ``rho``: the
    zCDP variant at ``rho = rho_for_approx_dp(eps, delta)`` converted by OpenDP
    (:func:`~opendp_wasserstein.combinators.make_approx_dp`).  Built from public values only;
    ``post``: the pruned traversal's ``(consistency, threshold)`` (adaptive and pruned)."""
    from opendp_wasserstein.combinators import make_approx_dp, rho_for_approx_dp
    from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pmm, make_pruned_pmm
    from opendp_wasserstein.schedules.pure import ambient_depth
    from opendp_wasserstein.schedules.zcdp import zcdp_schedule

    zcdp = dp.zero_concentrated_divergence()
    rho = rho_for_approx_dp(eps, delta)
    domain = dp.numpy.array2_domain(num_columns=d, size=n, nan=False, T=float)
    metric = dp.change_one_distance()
    bounds = {"lower": box.lower, "upper": box.upper}
    if mechanism == "adaptive":
        share = DEFAULT_SELECT_FRACTION_ZCDP if epsilon_select is None else epsilon_select / eps
        rho_sel, rho_main = _split(rho, share)
        meas = make_adaptive_pruned_pmm(
            domain, metric, rho_sel, rho_main, bounds=bounds, placement=placement, output_measure=zcdp,
            consistency=post[0], threshold=post[1], score=score, split_order=order,
        )
    else:
        r = ambient_depth(eps, n) if depth is None else depth
        if order is not None:
            r = min(r, order.max_depth)
        scales = zcdp_schedule(d, rho, r, s=d)
        axes = None if order is None else order.axes_to(r)
        if mechanism == "pruned":
            meas = make_pruned_pmm(domain, metric, r, scales, bounds=bounds, placement=placement, output_measure=zcdp,
                                   consistency=post[0], threshold=post[1], axes=axes)
        else:
            meas = make_pmm(domain, metric, r, scales, bounds=bounds, placement=placement, output_measure=zcdp,
                            axes=axes)
    return make_approx_dp(meas, delta), rho


def _synthesis_measurement(
    d: int,
    n: int | None,
    eps: float,
    box: Box,
    mechanism: str,
    epsilon_select: float | None,
    depth: int | None,
    placement: str,
    epsilon_size: float | None,
    order: Any = None,
    post: tuple[str, float] = ("paper", 0.0),
    score: str = "paper",
) -> Measurement:
    """The certified measurement :func:`synthesize` releases with.  Built from public values
    only: ``n`` is None when the size is private.  ``order``: a public split order or None;
    ``post``: the pruned traversal's ``(consistency, threshold)``."""
    from opendp_wasserstein.hierarchy.cells import max_depth
    from opendp_wasserstein.measurements import (
        make_adaptive_pruned_pmm,
        make_noisy_size_then,
        make_pmm,
        make_privtree,
        make_pruned_pmm,
    )
    from opendp_wasserstein.schedules.pure import ambient_depth, paper_schedule

    domain = dp.numpy.array2_domain(num_columns=d, size=n, nan=False, T=float)
    metric = dp.change_one_distance() if n is not None else dp.symmetric_distance()
    bounds = {"lower": box.lower, "upper": box.upper}
    sel_share = DEFAULT_SELECT_FRACTION if epsilon_select is None else epsilon_select / eps
    consistency, threshold = post

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
            domain, metric, round_down(record_eps / 2), round_down(record_eps / 2), cap,
            bounds=bounds, placement=placement, axes=axes(cap),
        )
    if n is not None:  # public size: epsilon per replacement (change_one d_in = 1)
        if mechanism == "adaptive":
            eps_sel, eps_main = _split(eps, sel_share)
            return make_adaptive_pruned_pmm(
                domain, metric, eps_sel, eps_main, bounds=bounds, placement=placement, split_order=order,
                consistency=consistency, threshold=threshold, score=score,
            )
        r = fit(ambient_depth(eps, n)) if depth is None else depth
        return make(domain, metric, r, schedule(eps, r), bounds=bounds, placement=placement, axes=axes(r))

    # private size: epsilon per added or removed record (symmetric d_in = 1)
    if mechanism != "adaptive" and depth is not None:
        # the noisy root count sets the number of rows: sigma_0 takes 2/3, the levels 1/3
        root_eps = round_down(Fraction(eps) * 2 / 3)
        sigma0 = round_up(1 / Fraction(root_eps))
        levels_half = round_down(Fraction(eps) - 1 / Fraction(sigma0))
        scales = (sigma0, *schedule(2 * levels_half, depth)[1:])
        return make(domain, metric, depth, scales, bounds=bounds, placement=placement, axes=axes(depth))
    size_eps = DEFAULT_SIZE_FRACTION * eps if epsilon_size is None else epsilon_size
    # what make_noisy_size_then's count (OpenDP's make_laplace) certifies for one record
    count_scale = round_up(1 / Fraction(size_eps))
    count_cost = Fraction(dp.m.make_laplace(dp.atom_domain(T="i64"), dp.absolute_distance(T="i64"), count_scale).map(1))
    rest = round_down(Fraction(eps) - count_cost)  # what one added record may cost after the count
    if rest <= 0:
        raise ValueError("epsilon_size leaves nothing for the synthesis")
    if mechanism == "adaptive":
        # one added record costs eps_sel + eps_main / 2 (the selection moves by a whole record)
        eps_sel, half_main = _split(rest, sel_share)
        eps_main = 2 * half_main

        def build(n_hat: int) -> Measurement:
            return make_adaptive_pruned_pmm(
                domain, metric, eps_sel, eps_main, bounds=bounds, placement=placement, size=n_hat,
                split_order=order, consistency=consistency, threshold=threshold, score=score,
            )

        per_record = Fraction(round_down(Fraction(eps_sel) + Fraction(half_main)))
    else:

        def build(n_hat: int) -> Measurement:
            r = fit(ambient_depth(2 * rest, n_hat)) if depth is None else depth
            scales = (math.inf, *schedule(2 * rest, r)[1:])
            return make(domain, metric, r, scales, bounds=bounds, placement=placement, output_size=n_hat, axes=axes(r))

        per_record = Fraction(rest)
    build(1)  # the smallest depth, so the smallest scales: an epsilon too small fails here, not at release
    return make_noisy_size_then(
        domain, metric, size_eps, build, bound=lambda d_in: round_up(int(d_in) * per_record)
    )


SELECTION_MECHANISMS = ("projection", "tree-em", "nn")


@dataclass(frozen=True)
class SelectionReport:
    """What :func:`select_candidates` did (public after the release).

    :param mechanism: ``"projection"``, ``"tree-em"`` or ``"nn"``
    :param epsilon: the loss certified by ``measurement.map`` for one replacement
        (``change_one_distance`` d_in = 1) -- or, without a public size, for one added or
        removed record (``symmetric_distance`` d_in = 1; a replacement costs twice that)
    :param m: the multiset size
    :param k: the number of candidates
    :param seconds: wall-clock time of the release; None when the size is private
    """

    mechanism: str
    epsilon: float
    m: int
    k: int
    seconds: float | None


def _check_selection(epsilon: float, mechanism: str, public_size: Any) -> float:
    """The checked budget of a selection (and its mechanism and size flag)."""
    if mechanism not in SELECTION_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SELECTION_MECHANISMS}, got {mechanism!r}")
    eps = check_epsilon(epsilon)
    _check_public_size(public_size)
    return eps


def _check_tree_em_size(mechanism: str, public_size: Any) -> None:
    if not public_size and mechanism == "tree-em":
        raise ValueError("mechanism='tree-em' needs public_size=True (its score is normalised by n)")


def _selection_measurement(
    p: int, n: int | None, eps: float, mechanism: str, C: Any, m: int, metric: str
) -> Measurement:
    """The measurement :func:`select_candidates` releases (in memory and on Dask): ``n`` public
    (change-one, ``epsilon`` per replacement) or ``None`` (symmetric distance, ``epsilon`` per
    added or removed record)."""
    from opendp_wasserstein.measurements import (
        make_nn_histogram,
        make_tree_em,
        make_tree_projection,
    )

    _require_contrib()
    if n is not None:
        domain = dp.numpy.array2_domain(num_columns=p, size=n, nan=False, T=float)
        metric_in = dp.change_one_distance()
        eps_unit = eps  # per replacement
    else:
        domain = dp.numpy.array2_domain(num_columns=p, nan=False, T=float)
        metric_in = dp.symmetric_distance()
        eps_unit = 2 * eps  # the constructors spend epsilon per replacement, map(2)
    if mechanism == "tree-em":
        return make_tree_em(domain, metric_in, C, m, eps, metric=metric)
    if mechanism == "projection":
        return make_tree_projection(domain, metric_in, C, m, min(eps_unit, 1e100), metric=metric)
    return make_nn_histogram(domain, metric_in, C, m, min(eps_unit, 1e100), metric=metric)


def select_candidates(
    D: Any,
    C: Any,
    m: int,
    epsilon: float,
    mechanism: str = "projection",
    metric: str | None = None,
    public_size: bool = True,
    schema: Any = None,
    columns: Any = None,
    accept_data_derived_schema: bool = False,
) -> tuple[np.ndarray, SelectionReport]:
    """Privately choose a size-``m`` multiset of public candidates ``C`` close in W1 to ``D``.

    With ``public_size=True`` (default) ``n = len(D)`` is public and ``epsilon`` is the loss of
    replacing one record.  With ``public_size=False`` ``epsilon`` is the loss of adding or
    removing one record and nothing is computed from ``n``: the projection charges and noises the
    root count and normalises by it; the NN histogram's rounding never needs ``n``; Tree-EM needs
    a public size and is refused.  It requires ``dp.enable_features("contrib")``.  Reproducible
    (non-private) runs: call inside :func:`opendp_wasserstein.runtime.reproducible`.

    :param D: the sensitive data, ``n x p`` real numbers (not modified); NaN is refused
        (outside the input domain), a row with ``+-inf`` is equally far from every candidate
        and is dealt over all of them like any tie (docs/tables.rst, "Missing and non-finite
        values"), and with ``public_size=False`` an empty array is data too
    :param C: the public candidates, ``k x p`` distinct finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy budget per replacement
    :param mechanism: ``"projection"`` (default: hierarchical tree projection, exact
        arithmetic), ``"tree-em"`` (Tree-EM; its float64 sampler needs OpenDP's
        ``"idealized-numerics"`` feature, which you must enable yourself with
        ``dp.enable_features("idealized-numerics")``) or ``"nn"`` (nearest-neighbour histogram)
    :param metric: ``"l2"`` (default), ``"l1"`` or ``"linf"``; with a schema the table metric
        (``None`` or ``"table"``)
    :param public_size: whether ``n = len(D)`` is public (default True)
    :param schema: a :class:`~opendp_wasserstein.tables.Schema` (or what
        :meth:`~opendp_wasserstein.tables.Schema.from_json` reads): ``D`` and ``C`` are then
        tables of any supported type (pandas, Polars, pyarrow, numpy), ``C`` matched to ``D``
        by column name, and the nearest candidate is the nearest under the table metric
        (:func:`~opendp_wasserstein.tables.release.select_table_candidates`)
    :param columns: with ``schema``: use only these columns of ``D`` and ``C``
    :param accept_data_derived_schema: with ``schema``: as for :func:`synthesize`
    :return: ``k`` int64 multiplicities summing to ``m`` (one per candidate row), and a
        :class:`SelectionReport`

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein import select_candidates
    >>> dp.enable_features("contrib")
    >>> D = np.random.default_rng(0).normal(size=(500, 2))
    >>> C = np.array([[0.0, 0.0], [3.0, 3.0], [-3.0, 3.0]])
    >>> counts, report = select_candidates(D, C, m=20, epsilon=1.0)
    >>> int(counts.sum()), report.epsilon
    (20, 1.0)
    """
    if schema is not None:
        from opendp_wasserstein.tables import Schema
        from opendp_wasserstein.tables.release import select_table_candidates

        if metric not in (None, "table"):
            raise ValueError("with a schema the metric is the table metric: leave metric unset (or 'table')")
        schema = schema if isinstance(schema, Schema) else Schema.from_json(schema)
        return select_table_candidates(  # type: ignore[no-any-return]
            D, C, m, epsilon, schema, columns, accept_data_derived_schema, mechanism=mechanism, public_size=public_size
        )
    if accept_data_derived_schema:
        raise ValueError("accept_data_derived_schema applies only with a schema")
    if columns is not None:
        raise ValueError("columns applies only with a schema")
    metric = "l2" if metric is None else metric
    eps = _check_selection(epsilon, mechanism, public_size)
    x = _as_data(D, "D", public_size=bool(public_size))
    n, p = x.shape
    _check_tree_em_size(mechanism, public_size)
    meas = _selection_measurement(p, n if public_size else None, eps, mechanism, C, m, metric)
    t0 = time.perf_counter()
    counts = np.asarray(meas(x), dtype=np.int64)
    seconds = time.perf_counter() - t0
    certified = meas.map(1)
    return counts, SelectionReport(mechanism, certified, int(m), int(counts.size), seconds if public_size else None)
