"""The in-memory release: build the certified measurement, run it under diagnostics, report.

:func:`synthesize_array` and :func:`select_array_candidates` release on numeric arrays; the
tables front end (:mod:`opendp_wasserstein.tables.release`) encodes a table to such an array and
calls them, and :func:`~opendp_wasserstein.synthesize` /
:func:`~opendp_wasserstein.select_candidates` dispatch to one or the other.  The keyword options are
checked once, by the options object they build (:mod:`opendp_wasserstein.release.options`).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from opendp_wasserstein import runtime
from opendp_wasserstein.release.measurement import selection_measurement, synthesis_measurement
from opendp_wasserstein.release.options import SelectionOptions, SynthesisOptions, as_bounds
from opendp_wasserstein.release.progress import default_progress, progress_bar
from opendp_wasserstein.release.reports import SelectionReport, SynthesisReport, synthesis_report
from opendp_wasserstein.transformations._schedule_scores import check_split_order

__all__ = ["as_data", "synthesize_array", "select_array_candidates"]


def _bar(opts: SynthesisOptions | SelectionOptions, x: np.ndarray, desc: str) -> Any:
    """The release's bar over its three stages (data checked, measurement built, released):
    :func:`~opendp_wasserstein.release.progress.default_progress` decides, on the row count only
    when it is public (with a private size no bar is shown and ``n`` is not read here)."""
    rows = int(x.shape[0]) if opts.public_size else None
    shown = default_progress(opts.progress, not opts.public_size, rows)
    steps = progress_bar(3, not shown, desc)
    steps.update(1)
    return steps


def as_data(x: Any, name: str = "X", public_size: bool = True) -> np.ndarray:
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
        raise ValueError(
            f"{name} must be 2-dimensional (rows x columns), got {arr.ndim} dimensions"
        )
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if public_size and arr.shape[0] == 0:
        raise ValueError(
            f"{name} must have at least one row (the size is public: public_size=True)"
        )
    arr = arr.astype(np.float64, copy=True)
    if np.isnan(arr).any():
        raise ValueError(
            f"{name} must not contain NaN: the input domain is NaN-free arrays "
            "(array2_domain(nan=False)); "
            "impute first, or release with a schema, which handles missing values"
        )
    return arr


def synthesize_array(
    X: Any, epsilon: float, bounds: Any = None, *, split_order: Any = None, **options: Any
) -> tuple[np.ndarray, SynthesisReport]:
    """A synthetic copy of the numeric array ``X`` and its report.

    :param X: the sensitive ``n x d`` array (not modified)
    :param epsilon: the budget
    :param bounds: the public box (:func:`~opendp_wasserstein.release.options.as_bounds`)
    :param split_order: a public :class:`~opendp_wasserstein.hierarchy.split_order.SplitOrder`
        over the ``d`` columns, or None (cyclic)
    :param options: the other fields of
        :class:`~opendp_wasserstein.release.options.SynthesisOptions`
    :return: the synthetic array and a :class:`~opendp_wasserstein.release.reports.SynthesisReport`
    """
    opts = SynthesisOptions(epsilon=epsilon, **options)
    x = as_data(X, public_size=opts.public_size)
    n, d = x.shape
    box = as_bounds(bounds, d)
    order = check_split_order(split_order, d)
    steps = _bar(opts, x, "synthesize")
    meas, rho = synthesis_measurement(
        opts, d=d, n=n if opts.public_size else None, box=box, order=order
    )
    steps.update(1)
    t0 = time.perf_counter()
    with runtime.diagnostics() as records:
        y = meas(x)
    seconds = time.perf_counter() - t0
    steps.update(1)
    steps.close()
    certified_delta = None
    if opts.delta is not None:
        certified, certified_delta = meas.map(1)
    else:
        certified = meas.map(1)
    info: dict[str, Any] = {}
    for r in records:
        info |= r
    seconds_public = seconds if opts.public_size else None
    report = synthesis_report(
        opts.mechanism, certified, info, int(y.shape[0]), seconds_public, certified_delta, rho
    )
    return y, report


def select_array_candidates(
    D: Any, C: Any, m: int, epsilon: float, **options: Any
) -> tuple[np.ndarray, SelectionReport]:
    """A private size-``m`` multiset of the candidate rows ``C`` close in W1 to the array ``D``.

    :param D: the sensitive ``n x p`` array (not modified)
    :param C: the public candidates, ``k x p``
    :param m: the multiset size
    :param epsilon: the budget
    :param options: the other fields of
        :class:`~opendp_wasserstein.release.options.SelectionOptions`
    :return: ``k`` int64 multiplicities and a
        :class:`~opendp_wasserstein.release.reports.SelectionReport`
    """
    opts = SelectionOptions(epsilon=epsilon, **options)
    x = as_data(D, "D", public_size=opts.public_size)
    n, p = x.shape
    steps = _bar(opts, x, "select")
    meas = selection_measurement(opts, p=p, n=n if opts.public_size else None, candidates=C, m=m)
    steps.update(1)
    t0 = time.perf_counter()
    counts = np.asarray(meas(x), dtype=np.int64)
    seconds = time.perf_counter() - t0
    steps.update(1)
    steps.close()
    certified = meas.map(1)
    return counts, SelectionReport(
        opts.mechanism, certified, int(m), int(counts.size), seconds if opts.public_size else None
    )
