"""The public-candidate mechanisms on a Dask cluster: tree projection, Tree-EM, NN histogram.

Each block's rows are sent to their nearest candidate on the worker that reads the block (the
candidates' KD-tree is broadcast once), and only the ``k``-bin histograms of the candidate
indices are reduced to the driver: every one of these measurements reads its input only
through that histogram (``pi#D``).  The driver then applies the measurement's own closure to it
(:class:`~opendp_wasserstein.distributed._spec.HistogramPlan`): the same law as the in-memory
release, the same output inside :func:`opendp_wasserstein.runtime.reproducible` where the
mechanism's noise is the package's own (tree projection, Tree-EM; the NN histogram's noise is
OpenDP's ``make_laplace``, which cannot be seeded).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from opendp_wasserstein.distributed._pmm import Driver, rows_of
from opendp_wasserstein.distributed._spec import HistogramPlan
from opendp_wasserstein.transformations._nearest_candidate import project_rows

__all__ = ["run_histogram", "select_on_dask", "histogram_task"]


def histogram_task(block: Any, d: int, nan: bool, nearest: Any) -> tuple[int, np.ndarray]:
    """Rows and the candidate-index histogram of one block."""
    x = rows_of(block, d, nan)
    return int(x.shape[0]), np.bincount(project_rows(nearest, x), minlength=nearest.k)


def run_histogram(plan: HistogramPlan, drv: Driver) -> tuple[Any, dict[str, Any]]:
    """Reduce the histogram on the cluster, finish on the driver."""
    # a fresh key (hash=False): a content-hashed key is shared by two releases with the same
    # candidates, and a second scatter racing the release of the first one's key leaves its
    # tasks with a lost dependency (seen as FutureCancelledError in CI)
    nearest = drv.client.scatter(plan.nearest, broadcast=True, hash=False)
    futures = [drv.client.submit(histogram_task, b, plan.d, plan.nan, nearest, pure=False) for b in drv.blocks]
    n, h = 0, np.zeros(plan.nearest.k, dtype=np.int64)
    for rows, hist in drv.run(futures, "project"):
        n += rows
        h += hist
    if plan.size is not None and n != plan.size:
        raise ValueError(f"data must have exactly {plan.size} rows (the domain's public size)")
    return plan.finish(h), {"candidates": int(h.size), "blocks": len(futures)}


def select_on_dask(
    source: Any,
    candidates: Any,
    m: int,
    epsilon: float,
    mechanism: str = "projection",
    metric: str = "l2",
    public_size: bool = True,
    client: Any = None,
    columns: Sequence[str] | None = None,
    progress: bool = False,
) -> tuple[np.ndarray, Any]:
    """:func:`opendp_wasserstein.select_candidates` on a Dask cluster: the same measurement for the
    same arguments (``n`` the source's row count), projected and counted on the workers.

    :return: the ``k`` multiplicities and a :class:`~opendp_wasserstein.api.SelectionReport`
    """
    import opendp.prelude as dp

    from opendp_wasserstein.api import (
        SELECTION_MECHANISMS,
        SelectionReport,
        _check_public_size,
        _require_contrib,
    )
    from opendp_wasserstein.distributed._run import _source_shape, release_on_dask
    from opendp_wasserstein.measurements import (
        make_nn_histogram,
        make_tree_em,
        make_tree_projection,
    )
    from opendp_wasserstein.parameters import check_epsilon

    if mechanism not in SELECTION_MECHANISMS:
        raise ValueError(f"mechanism must be one of {SELECTION_MECHANISMS}, got {mechanism!r}")
    eps = check_epsilon(epsilon)
    _check_public_size(public_size)
    if not public_size and mechanism == "tree-em":
        raise ValueError("mechanism='tree-em' needs public_size=True (its score is normalised by n)")
    n, p = _source_shape(source, columns, count=bool(public_size))  # n is read only when public
    _require_contrib()
    if public_size:
        domain = dp.numpy.array2_domain(num_columns=p, size=n, T=float)
        metric_in = dp.change_one_distance()
        eps_unit = eps
    else:
        domain = dp.numpy.array2_domain(num_columns=p, T=float)
        metric_in = dp.symmetric_distance()
        eps_unit = 2 * eps
    if mechanism == "tree-em":
        meas = make_tree_em(domain, metric_in, candidates, m, eps, metric=metric)
    elif mechanism == "projection":
        meas = make_tree_projection(domain, metric_in, candidates, m, min(eps_unit, 1e100), metric=metric)
    else:
        meas = make_nn_histogram(domain, metric_in, candidates, m, min(eps_unit, 1e100), metric=metric)
    t0 = time.perf_counter()
    rel = release_on_dask(meas, source, None, client=client, columns=columns, progress=progress)
    seconds = time.perf_counter() - t0
    certified = meas.map(1)
    counts = np.asarray(rel.value, dtype=np.int64)
    return counts, SelectionReport(mechanism, certified, int(m), int(counts.size), seconds if public_size else None)
