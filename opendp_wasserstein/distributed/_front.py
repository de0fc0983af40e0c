"""The front ends of distributed releases: the options and measurement of the in-memory release,
executed on a Dask cluster (:func:`~opendp_wasserstein.distributed.release_on_dask`).

:func:`synthesize_on_dask` and :func:`select_on_dask` build the same option objects and the same
certified measurement as :func:`~opendp_wasserstein.synthesize` and
:func:`~opendp_wasserstein.select_candidates` for the same arguments
(:mod:`opendp_wasserstein.release`), then hand it to the executor.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from opendp_wasserstein.distributed._executor import DistributedRelease, release_on_dask
from opendp_wasserstein.distributed._source import source_shape
from opendp_wasserstein.release.measurement import selection_measurement, synthesis_measurement
from opendp_wasserstein.release.options import SelectionOptions, SynthesisOptions, as_bounds
from opendp_wasserstein.release.reports import SelectionReport, SynthesisReport, synthesis_report

__all__ = ["synthesize_on_dask", "select_on_dask"]


def synthesize_on_dask(
    source: Any,
    epsilon: float,
    out: str | os.PathLike[str],
    bounds: Any = None,
    *,
    mechanism: str = "adaptive",
    epsilon_select: float | None = None,
    depth: int | None = None,
    placement: str = "uniform",
    public_size: bool = True,
    epsilon_size: float | None = None,
    client: Any = None,
    columns: Sequence[str] | None = None,
    parts: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
    consistency: str | None = None,
    threshold: float | None = None,
    score: str | None = None,
) -> tuple[DistributedRelease, SynthesisReport]:
    """:func:`opendp_wasserstein.synthesize` on a Dask cluster, output written as Parquet.

    The measurement is the one :func:`~opendp_wasserstein.synthesize` builds for the same
    arguments (``consistency``, ``threshold`` and ``score`` as there: least squares and the capped
    score by default, :data:`~opendp_wasserstein.api.DEFAULT_CONSISTENCY`), run by
    :func:`release_on_dask`.  With ``public_size=True`` (default) ``n`` is the source's row count
    (Parquet footers), public.  With ``public_size=False`` nothing reads ``n`` but the measurement:
    either ``depth`` is given (``"pruned"``/``"pmm"``: the noisy root sets the number of rows) or
    the share ``epsilon_size`` buys the DP count ``n_hat`` of
    :func:`~opendp_wasserstein.measurements.make_noisy_size_then`, summed over the parts and noised
    on the driver by the in-memory closure, and the depth or candidates are chosen from ``n_hat``,
    as in memory.

    :return: the :class:`DistributedRelease` and a :class:`~opendp_wasserstein.api.SynthesisReport`
    """
    opts = SynthesisOptions(
        epsilon=epsilon,
        mechanism=mechanism,
        epsilon_select=epsilon_select,
        depth=depth,
        placement=placement,
        public_size=public_size,
        epsilon_size=epsilon_size,
        consistency=consistency,
        threshold=threshold,
        score=score,
    )
    if mechanism == "privtree":
        raise ValueError(
            "mechanism='privtree' has no Dask plan: use synthesize in memory, or "
            "adaptive/pruned/pmm"
        )
    n, d = source_shape(source, columns, count=opts.public_size)
    meas, _ = synthesis_measurement(opts, d=d, n=n, box=as_bounds(bounds, d))
    t0 = time.perf_counter()
    rel = release_on_dask(
        meas,
        source,
        out,
        client=client,
        columns=columns,
        parts=parts,
        overwrite=overwrite,
        progress=progress,
    )
    seconds = time.perf_counter() - t0
    report = synthesis_report(
        mechanism, meas.map(1), rel.info, rel.rows, seconds if opts.public_size else None
    )
    return rel, report


def select_on_dask(
    source: Any,
    candidates: Any,
    m: int,
    epsilon: float,
    *,
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
    opts = SelectionOptions(
        epsilon=epsilon, mechanism=mechanism, metric=metric, public_size=public_size
    )
    n, p = source_shape(source, columns, count=opts.public_size)  # n is read only when public
    meas = selection_measurement(opts, p=p, n=n, candidates=candidates, m=m)
    t0 = time.perf_counter()
    rel = release_on_dask(meas, source, None, client=client, columns=columns, progress=progress)
    seconds = time.perf_counter() - t0
    certified = meas.map(1)
    counts = np.asarray(rel.value, dtype=np.int64)
    return counts, SelectionReport(
        mechanism, certified, int(m), int(counts.size), seconds if opts.public_size else None
    )
