"""High-level API for people who do not compose OpenDP objects by hand.

Every function here builds the package's OpenDP measurements and calls them; the reported
epsilon is what the measurement's own privacy map certifies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.domains import as_box, check_epsilon

__all__ = [
    "SynthesisReport",
    "synthesize",
    "MECHANISMS",
    "DEFAULT_SELECT_FRACTION",
    "SelectionReport",
    "select_candidates",
    "SELECTION_MECHANISMS",
]

MECHANISMS = ("adaptive", "pruned", "pmm")

#: the share of epsilon spent on private schedule selection by default in ``synthesize``
DEFAULT_SELECT_FRACTION = 0.2


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
    :param seconds: wall-clock time of the release
    :param details: mechanism-specific public details (e.g. the selected candidate)
    """

    mechanism: str
    epsilon: float
    depth: int
    scales: tuple[float, ...]
    visited_nodes: int
    size: int
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)


def _as_data(x: Any, name: str = "X") -> np.ndarray:
    """A float copy of 2-D real data; messages name ``name`` and never quote a value."""
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
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column")
    arr = arr.astype(np.float64, copy=True)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must not contain NaN or infinite values")
    return arr


def synthesize(
    X: Any,
    epsilon: float,
    bounds: Any,
    mechanism: str = "adaptive",
    epsilon_select: float | None = None,
    depth: int | None = None,
    placement: str = "uniform",
    public_size: bool = True,
    seed: int | None = None,
) -> tuple[np.ndarray, SynthesisReport]:
    """Release a differentially private synthetic copy of ``X`` with small W1 distance.

    :param X: the sensitive data, ``n x d`` real numbers (not modified)
    :param epsilon: the total privacy budget per replacement of one record
    :param bounds: the public box ``(lower, upper)`` (scalars or length-d); rows outside are
        clamped.  Required, and never inferred from the data (that would leak it).
    :param mechanism: ``"adaptive"`` (default: Adaptive Pruned-PMM), ``"pruned"`` (Pruned-PMM at
        the ambient depth ``ceil(log2(eps n))`` with the paper's ``s = d`` schedule) or ``"pmm"``
        (the full-tree baseline, same depth and schedule)
    :param epsilon_select: adaptive only: the selection budget (default 20% of ``epsilon``)
    :param depth: pruned/pmm only: the depth (default the ambient rule)
    :param placement: ``"uniform"`` (default) or ``"center"`` within leaf cells
    :param public_size: treat ``n = len(X)`` as public (default; required by ``"adaptive"``)
    :param seed: **not private** -- reproducible output for tests and figures only
    :return: the synthetic array and a :class:`SynthesisReport`

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein import synthesize
    >>> X = np.random.default_rng(0).uniform(size=(1000, 2))
    >>> Y, report = synthesize(X, epsilon=1.0, bounds=(0, 1))
    >>> Y.shape[1], report.epsilon
    (2, 1.0)
    """
    from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pmm, make_pruned_pmm
    from opendp_wasserstein.schedules import ambient_depth, paper_schedule

    dp.enable_features("contrib")
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    eps = check_epsilon(epsilon)
    x = _as_data(X)
    n, d = x.shape
    if bounds is None:
        raise ValueError("bounds are required: give the public (lower, upper) box; they must not be inferred from the data")
    as_box(bounds, d)
    domain = dp.numpy.array2_domain(num_columns=d, size=n if public_size else None, T=float)
    metric = dp.change_one_distance() if public_size else dp.symmetric_distance()
    scales: tuple[float, ...] = ()
    if mechanism == "adaptive":
        if not public_size:
            raise ValueError("mechanism='adaptive' needs public_size=True (the candidates depend on n)")
        eps_sel = DEFAULT_SELECT_FRACTION * eps if epsilon_select is None else check_epsilon(epsilon_select, "epsilon_select")
        if eps_sel >= eps:
            raise ValueError("epsilon_select must be smaller than epsilon")
        meas = make_adaptive_pruned_pmm(
            domain, metric, eps_sel, eps - eps_sel, bounds=bounds, placement=placement, seed=seed, diagnostics=True
        )
    else:
        r = ambient_depth(eps, n) if depth is None else depth
        # with a public size the root is free: 2 sum_{j>=1} 1/sigma_j = eps per replacement;
        # without one, an added/removed record costs 1/sigma_0 + sum_{j>=1} 1/sigma_j, which is
        # 1.5 eps' for paper_schedule(eps'): spend eps' = 2 eps / 3
        scales = paper_schedule(d, eps if public_size else 2.0 * eps / 3.0, r, s=d)
        make = make_pruned_pmm if mechanism == "pruned" else make_pmm
        meas = make(domain, metric, r, scales, bounds=bounds, placement=placement, seed=seed, diagnostics=True)
    t0 = time.perf_counter()
    y, info = meas(x)
    seconds = time.perf_counter() - t0
    details = {k: v for k, v in info.items() if k not in {"depth", "visited_nodes", "scales"}}
    report = SynthesisReport(
        mechanism=mechanism,
        epsilon=meas.map(1),
        depth=int(info["depth"]),
        scales=tuple(info.get("scales", ())) or tuple(scales),
        visited_nodes=int(info["visited_nodes"]),
        size=int(y.shape[0]),
        seconds=seconds,
        details=details,
    )
    return y, report


SELECTION_MECHANISMS = ("projection", "tree-em", "nn")


@dataclass(frozen=True)
class SelectionReport:
    """What :func:`select_candidates` did (public after the release).

    :param mechanism: ``"projection"``, ``"tree-em"`` or ``"nn"``
    :param epsilon: the loss certified by ``measurement.map`` for one replacement
    :param m: the multiset size
    :param k: the number of candidates
    :param seconds: wall-clock time of the release
    """

    mechanism: str
    epsilon: float
    m: int
    k: int
    seconds: float


def select_candidates(
    D: Any,
    C: Any,
    m: int,
    epsilon: float,
    mechanism: str = "projection",
    metric: str = "l2",
    seed: int | None = None,
) -> tuple[np.ndarray, SelectionReport]:
    """Privately choose a size-``m`` multiset of public candidates ``C`` close in W1 to ``D``.

    ``n = len(D)`` is treated as public; ``epsilon`` is the loss of replacing one record.

    :param D: the sensitive data, ``n x p`` real numbers (not modified)
    :param C: the public candidates, ``k x p`` distinct finite rows
    :param m: the multiset size, ``>= 1``
    :param epsilon: the privacy budget per replacement
    :param mechanism: ``"projection"`` (default: hierarchical tree projection, exact
        arithmetic), ``"tree-em"`` (Tree-EM; its float64 sampler needs OpenDP's
        ``"idealized-numerics"`` feature, which you must enable yourself with
        ``dp.enable_features("idealized-numerics")``) or ``"nn"`` (nearest-neighbour histogram)
    :param metric: ``"l2"`` (default), ``"l1"`` or ``"linf"``
    :param seed: **not private** -- reproducible tree and draws for tests only (``"nn"``
        draws from OpenDP's own CSPRNG and cannot be seeded)
    :return: ``k`` int64 multiplicities summing to ``m``, and a :class:`SelectionReport`

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein import select_candidates
    >>> D = np.random.default_rng(0).normal(size=(500, 2))
    >>> C = np.array([[0.0, 0.0], [3.0, 3.0], [-3.0, 3.0]])
    >>> counts, report = select_candidates(D, C, m=20, epsilon=1.0)
    >>> int(counts.sum()), report.epsilon
    (20, 1.0)
    """
    from opendp_wasserstein.measurements import (
        make_nn_histogram,
        make_tree_em,
        make_tree_projection,
    )

    dp.enable_features("contrib")
    if mechanism not in SELECTION_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SELECTION_MECHANISMS}, got {mechanism!r}")
    eps = check_epsilon(epsilon)
    x = _as_data(D, "D")
    n, p = x.shape
    domain = dp.numpy.array2_domain(num_columns=p, size=n, T=float)
    metric_in = dp.change_one_distance()
    if mechanism == "tree-em":
        meas = make_tree_em(domain, metric_in, C, m, eps, metric=metric, seed=seed)
    elif mechanism == "projection":
        meas = make_tree_projection(domain, metric_in, C, m, eps, metric=metric, seed=seed)
    else:
        if seed is not None:
            raise ValueError("seed: mechanism='nn' draws OpenDP's own noise and cannot be seeded")
        meas = make_nn_histogram(domain, metric_in, C, m, eps, metric=metric)
    t0 = time.perf_counter()
    counts = np.asarray(meas(x), dtype=np.int64)
    seconds = time.perf_counter() - t0
    return counts, SelectionReport(mechanism, meas.map(1), int(m), int(counts.size), seconds)
