"""The public-candidate mechanisms on a Dask cluster: tree projection, Tree-EM, NN histogram.

Each block's rows are sent to their nearest candidates on the worker that reads the block (the
candidates' KD-tree is broadcast once), and only a
:class:`~opendp_wasserstein.public_candidates.sets.Tally` per block (the ``k``-bin histogram of its
rows with one nearest candidate, and the number of rows of each tie set) is reduced to the driver,
which deals the ties over the whole data as the in-memory projection does: every one of these
measurements reads its input only through that histogram (``pi#D``).  The driver then applies the
measurement's own closure to it (:class:`~opendp_wasserstein.core.plan.HistogramPlan`): the same law
as the in-memory release, the same output inside :func:`opendp_wasserstein.runtime.reproducible`
where the mechanism's noise is the package's own (tree projection, Tree-EM; the NN histogram's noise
is OpenDP's ``make_laplace``, which cannot be seeded).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from opendp_wasserstein.core.plan import HistogramPlan
from opendp_wasserstein.distributed._pmm import Driver, rows_of
from opendp_wasserstein.public_candidates.sets import Tally

__all__ = ["run_histogram", "histogram_task"]


def histogram_task(block: Any, d: int, nan: bool, nearest: Any) -> tuple[int, Tally]:
    """Rows and the :class:`~opendp_wasserstein.public_candidates.sets.Tally` of one block: the
    histogram of its rows with one nearest candidate and the size of each of its tie sets (the ties
    are dealt on the driver, over the whole data, as the in-memory projection deals them)."""
    x = rows_of(block, d, nan)
    return int(x.shape[0]), nearest.tally(x)


def run_histogram(plan: HistogramPlan, drv: Driver) -> tuple[Any, dict[str, Any]]:
    """Reduce the histogram on the cluster, finish on the driver."""
    # a fresh key (hash=False): a content-hashed key is shared by two releases with the same
    # candidates, and a second scatter racing the release of the first one's key leaves its
    # tasks with a lost dependency (seen as FutureCancelledError in CI)
    nearest = drv.client.scatter(plan.nearest, broadcast=True, hash=False)
    futures = [
        drv.client.submit(histogram_task, b, plan.d, plan.nan, nearest, pure=False)
        for b in drv.blocks
    ]
    n, total = 0, Tally(np.zeros(plan.nearest.k, dtype=np.int64))
    for rows, tally in drv.run(futures, "project"):
        n += rows
        total = total.merge(tally)
    if plan.size is not None and n != plan.size:
        raise ValueError(f"data must have exactly {plan.size} rows (the domain's public size)")
    # (not the number of blocks: it grows with n, which may be private)
    h = plan.nearest.histogram(total)  # the histogram of project_rows on all the rows
    return plan.finish(h), {"candidates": int(h.size)}
