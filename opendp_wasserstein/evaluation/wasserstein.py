"""Exact and subsampled 1-Wasserstein distances between point sets, for evaluation.

This module measures the quality of synthetic data; it is **not** a privacy mechanism.  Its
only randomness (subsampling in :func:`w1_estimate`) comes from
``np.random.default_rng(seed)`` and never from numpy's global random state.

The 1-Wasserstein distance between the empirical measures
:math:`\\mu = \\sum_i a_i \\delta_{x_i}` and :math:`\\nu = \\sum_j b_j \\delta_{y_j}` is

.. math:: W_1(\\mu, \\nu) = \\min_{\\pi \\in \\Pi(a, b)} \\sum_{i,j} \\pi_{ij} \\, \\|x_i - y_j\\|,

computed exactly as a linear programme (network simplex, :func:`ot.emd2` from POT) on the full
cost matrix.  The ground metric is :math:`\\ell_\\infty` by default (the package's guarantees are
stated for it), or :math:`\\ell_1` / :math:`\\ell_2`.  For one-dimensional data all three metrics
coincide and the closed form (:func:`scipy.stats.wasserstein_distance`, via quantile functions)
is used at any size.

The exact programme needs an ``n x m`` cost matrix and super-quadratic time, so above
``max_points`` points :func:`w1` falls back to the mean of exact distances between random
subsamples (:func:`w1_estimate`).  Such an estimate is biased **upwards**: two samples of the same
distribution are at positive distance.  :func:`w1_estimate` therefore also reports that
``noise_floor`` and should be preferred when the numbers are to be published.

POT (package ``POT``, module ``ot``) is an optional dependency.  Without it, the exact distance is
still available for one-dimensional data and for uniformly weighted sets of equal size (where
an optimal plan is a permutation, found by :func:`scipy.optimize.linear_sum_assignment`);
other cases raise :class:`ImportError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.stats import wasserstein_distance

from opendp_wasserstein.core.optional import import_optional

__all__ = ["METRICS", "W1Estimate", "w1", "w1_estimate"]

#: Accepted ground metrics and the matching :func:`scipy.spatial.distance.cdist` names.
METRICS: dict[str, str] = {"linf": "chebyshev", "l1": "cityblock", "l2": "euclidean"}

SeedLike = int | np.random.Generator | None

# the network simplex stops after this many iterations; far above what 10^4 points need
_EMD_MAX_ITER = 1_000_000_000


@dataclass(frozen=True)
class W1Estimate:
    """A 1-Wasserstein distance, exact or estimated from subsamples.

    :param value: the exact W1 when ``exact``; otherwise the mean over ``repeats`` of the exact W1
        between independent random subsamples (without replacement, at most ``sample_size`` points
        each) of the two sets.
    :param std_error: standard error of ``value`` over the repeats (sample standard deviation
        divided by :math:`\\sqrt{\\text{repeats}}`); ``0.0`` when ``exact``, ``nan`` when
        ``repeats == 1``.
    :param noise_floor: mean exact W1 between two independent subsamples, of the same sizes, of a
        single set (``x``, or ``y`` if only ``y`` was subsampled): what subsampling alone
        contributes to ``value``.  Report it next to ``value``; ``0.0`` when ``exact``.
    :param sample_size: the requested maximum subsample size.
    :param repeats: number of subsample pairs averaged (``1`` when ``exact``).
    :param exact: True if no subsampling was needed, in which case ``value`` is the exact W1.
    """

    value: float
    std_error: float
    noise_floor: float
    sample_size: int
    repeats: int
    exact: bool


# ----------------------------------------------------------------------------------------------
# validation


def _as_points(a: Any, name: str) -> np.ndarray:
    """A read-only float64 view (or copy) of a 2-D, non-empty, finite array of real numbers."""
    try:
        arr = np.asarray(a)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name} must be array-like, got {type(a).__name__}") from exc
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_points, n_dims), got {arr.ndim} dimension(s)"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    return arr


def _as_weights(w: Any, n: int, name: str) -> np.ndarray | None:
    """``None``, or probability weights (summing to one) of length ``n``."""
    if w is None:
        return None
    arr = np.asarray(w)
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of length {n}, got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite and non-negative")
    total = float(arr.sum())
    if total <= 0:
        raise ValueError(f"{name} must have a positive sum")
    return arr / total


def _check_metric(metric: Any) -> str:
    if not isinstance(metric, str) or metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    return metric


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    xa = _as_points(x, "x")
    ya = _as_points(y, "y")
    if xa.shape[1] != ya.shape[1]:
        raise ValueError(
            f"x and y must have the same number of columns, got {xa.shape[1]} and {ya.shape[1]}"
        )
    return xa, ya


# ----------------------------------------------------------------------------------------------
# exact computation (inputs already validated)


def _import_ot() -> ModuleType:
    return import_optional("ot", "the exact W1")


def _exact(
    x: np.ndarray,
    y: np.ndarray,
    metric: str,
    a: np.ndarray | None = None,
    b: np.ndarray | None = None,
) -> float:
    """Exact W1 between validated point sets with optional normalised weights."""
    if x.shape[1] == 1:
        # all l_p metrics agree on the line; closed form via quantile functions
        return float(wasserstein_distance(x[:, 0], y[:, 0], a, b))
    cost = cdist(x, y, metric=METRICS[metric])
    n, m = cost.shape
    try:
        ot = _import_ot()
    except ImportError:
        if a is None and b is None and n == m:
            # uniform weights, equal sizes: an optimal plan is a permutation (Birkhoff)
            rows, cols = linear_sum_assignment(cost)
            return float(cost[rows, cols].mean())
        raise ImportError(
            "the exact W1 between weighted or unequal-size point sets in d >= 2 needs POT: "
            "pip install POT"
        ) from None
    a_ = np.full(n, 1.0 / n) if a is None else a
    b_ = np.full(m, 1.0 / m) if b is None else b
    value, log = ot.emd2(a_, b_, cost, numItermax=_EMD_MAX_ITER, log=True)
    if int(log.get("result_code", 1)) != 1:  # pragma: no cover - defensive
        raise RuntimeError(f"ot.emd2 did not reach an optimal plan: {log.get('warning')}")
    return max(float(value), 0.0)


# ----------------------------------------------------------------------------------------------
# public API


def w1(
    x: Any,
    y: Any,
    metric: str = "linf",
    max_points: int = 4000,
    seed: SeedLike = None,
    weights_x: Any = None,
    weights_y: Any = None,
) -> float:
    """The 1-Wasserstein distance between the empirical measures of two point sets.

    Exact when both sets have at most ``max_points`` points (optimal transport on the full cost
    matrix with :func:`ot.emd2`), and for one-dimensional data at any size (closed form).
    Otherwise the returned number is ``w1_estimate(x, y, metric, sample_size=max_points,
    seed=seed).value``: the mean exact W1 between random subsamples, which is biased upwards by
    the subsampling (see :class:`W1Estimate`); call :func:`w1_estimate` directly to obtain the
    noise floor and standard error that should accompany such a number.

    :param x: points of the first set, array of shape ``(n, d)``; not modified.
    :param y: points of the second set, array of shape ``(m, d)``; not modified.
    :param metric: ground metric: ``"linf"`` (Chebyshev, default), ``"l1"`` or ``"l2"``.
    :param max_points: largest set size for which the exact distance is computed in ``d >= 2``.
    :param seed: seed (or :class:`numpy.random.Generator`) for the subsampling, used only when a
        set has more than ``max_points`` points.
    :param weights_x: optional non-negative weights of the points of ``x`` (normalised to sum to
        one); uniform when ``None``.
    :param weights_y: optional non-negative weights of the points of ``y``; uniform when ``None``.
    :returns: the distance, a non-negative float.
    :raises ValueError: for invalid inputs, or weights given with a set larger than
        ``max_points`` in ``d >= 2`` (weighted subsampling is not supported).
    :raises ImportError: if POT is needed (see the module docstring) but not installed.
    """
    xa, ya = _check_pair(x, y)
    metric = _check_metric(metric)
    max_points = _check_positive_int(max_points, "max_points")
    a = _as_weights(weights_x, xa.shape[0], "weights_x")
    b = _as_weights(weights_y, ya.shape[0], "weights_y")
    if xa.shape[1] == 1 or (xa.shape[0] <= max_points and ya.shape[0] <= max_points):
        return _exact(xa, ya, metric, a, b)
    if a is not None or b is not None:
        raise ValueError(
            f"weights_x/weights_y are only supported for exact computation: reduce the sets to at "
            f"most max_points={max_points} points or raise max_points"
        )
    return w1_estimate(xa, ya, metric=metric, sample_size=max_points, seed=seed).value


def w1_estimate(
    x: Any,
    y: Any,
    metric: str = "linf",
    sample_size: int = 4000,
    repeats: int = 5,
    seed: SeedLike = None,
    on_step: Callable[[int, int], None] | None = None,
) -> W1Estimate:
    """The 1-Wasserstein distance between large point sets, estimated from subsamples.

    If both sets have at most ``sample_size`` points, or the data are one-dimensional, the exact
    distance is returned (``exact=True``, ``std_error = noise_floor = 0``).  Otherwise, for each
    of ``repeats`` rounds, each set larger than ``sample_size`` is replaced by a uniformly random
    subsample of ``sample_size`` of its points (without replacement; a set already small enough is
    used whole) and the exact W1 between the two is computed; ``value`` is the mean.

    Because two samples of one distribution are at positive W1 distance, ``value`` overestimates
    the distance between the full sets.  ``noise_floor`` measures this: in each round it is the
    exact W1 between two independent subsamples of ``x`` of the size used for ``x`` (of ``y`` if
    only ``y`` had to be subsampled).  A ``value`` close to ``noise_floor`` means the sets cannot be
    told apart at this sample size.

    :param x: points of the first (reference) set, array of shape ``(n, d)``; not modified.
    :param y: points of the second set, array of shape ``(m, d)``; not modified.
    :param metric: ground metric: ``"linf"`` (Chebyshev, default), ``"l1"`` or ``"l2"``.
    :param sample_size: size of each subsample (and the largest size computed exactly).
    :param repeats: number of independent subsample pairs to average.
    :param seed: seed (or :class:`numpy.random.Generator`) for the subsampling.
    :param on_step: called as ``on_step(done, total)`` after each exact transport problem is
        solved (``total`` is ``2 * repeats``, or 1 when the distance is exact), e.g. to show
        progress; it does not change the result.
    :returns: a :class:`W1Estimate`.
    :raises ValueError: for invalid inputs.
    :raises ImportError: if POT is needed (see the module docstring) but not installed.
    """
    xa, ya = _check_pair(x, y)
    metric = _check_metric(metric)
    sample_size = _check_positive_int(sample_size, "sample_size")
    repeats = _check_positive_int(repeats, "repeats")
    n, m = xa.shape[0], ya.shape[0]
    if xa.shape[1] == 1 or (n <= sample_size and m <= sample_size):
        value = _exact(xa, ya, metric)
        if on_step is not None:
            on_step(1, 1)
        return W1Estimate(
            value=value,
            std_error=0.0,
            noise_floor=0.0,
            sample_size=sample_size,
            repeats=1,
            exact=True,
        )
    rng = np.random.default_rng(seed)
    # the floor is measured on x (the reference) if it is subsampled, else on y
    floor_set = xa if n > sample_size else ya

    def draw(points: np.ndarray) -> np.ndarray:
        if points.shape[0] <= sample_size:
            return points
        return points[rng.choice(points.shape[0], size=sample_size, replace=False)]

    values = np.empty(repeats)
    floors = np.empty(repeats)
    for r in range(repeats):  # a handful of repeats; each call is vectorised
        values[r] = _exact(draw(xa), draw(ya), metric)
        if on_step is not None:
            on_step(2 * r + 1, 2 * repeats)
        floors[r] = _exact(draw(floor_set), draw(floor_set), metric)
        if on_step is not None:
            on_step(2 * r + 2, 2 * repeats)
    std_error = float(values.std(ddof=1) / math.sqrt(repeats)) if repeats > 1 else float("nan")
    return W1Estimate(
        value=float(values.mean()),
        std_error=std_error,
        noise_floor=float(floors.mean()),
        sample_size=sample_size,
        repeats=repeats,
        exact=False,
    )
