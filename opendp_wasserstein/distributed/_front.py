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

from opendp_wasserstein.distributed._executor import (
    DistributedRelease,
    default_progress,
    release_on_dask,
)
from opendp_wasserstein.distributed._source import source_shape
from opendp_wasserstein.distributed._tables import synthesize_table_on_dask
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
    progress: bool | None = None,
    consistency: str | None = None,
    threshold: float | None = None,
    score: str | None = None,
    schema: Any = None,
    structured: Any = None,
    accept_data_derived_schema: bool = False,
    delta: float | None = None,
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

    **Tables** (``schema``, a :class:`~opendp_wasserstein.tables.Schema`): the structured
    release of :func:`~opendp_wasserstein.tables.synthesize_table` (``structured``, a
    :class:`~opendp_wasserstein.tables.pipeline.StructuredOptions`, default the defaults) on a
    Parquet source read under the schema on the workers, written as Parquet parts of the same
    column types as an in-memory release of the same file; under the same key
    (:func:`opendp_wasserstein.runtime.reproducible`) the same rows as in memory
    (:mod:`opendp_wasserstein.distributed._tables`).  ``bounds`` and the one-tree options do not
    apply; the size is public (the Parquet footers), as in memory.  With ``delta`` the release
    is the in-memory one's ``(epsilon, delta)`` variant (discrete Gaussian noise in zCDP), the
    same rows under the same key; arrays on Dask are pure DP only (``delta`` is refused).

    ``progress``: a bar per pass that moves per part; ``None`` (default) shows it when standard
    error is a terminal and the size is public (never with a private size: the bars count input
    blocks, whose number may follow the source's layout).

    :return: the :class:`DistributedRelease` and a :class:`~opendp_wasserstein.api.SynthesisReport`
    """
    if schema is not None:
        return _synthesize_table(
            source,
            epsilon,
            out,
            bounds,
            schema,
            structured,
            client=client,
            columns=columns,
            parts=parts,
            overwrite=overwrite,
            progress=default_progress(progress, not public_size),
            accept=accept_data_derived_schema,
            given={
                "mechanism": mechanism not in ("adaptive", "structured"),
                "epsilon_select": epsilon_select is not None,
                "depth": depth is not None,
                "placement": placement != "uniform",
                "epsilon_size": epsilon_size is not None,
                "consistency": consistency is not None,
                "threshold": threshold is not None,
                "score": score is not None,
            },
            public_size=public_size,
            delta=delta,
        )
    if structured is not None:
        raise ValueError("structured applies to tables: pass schema=...")
    if delta is not None:
        raise ValueError(
            "delta: synthesize_on_dask releases arrays in pure DP only; use synthesize(..., "
            "delta=...) in memory, or schema=... for the structured table release"
        )
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
        progress=default_progress(progress, not opts.public_size),
    )
    seconds = time.perf_counter() - t0
    report = synthesis_report(
        mechanism, meas.map(1), rel.info, rel.rows, seconds if opts.public_size else None
    )
    return rel, report


def _synthesize_table(
    source: Any,
    epsilon: float,
    out: str | os.PathLike[str],
    bounds: Any,
    schema: Any,
    structured: Any,
    *,
    client: Any,
    columns: Sequence[str] | None,
    parts: int | None,
    overwrite: bool,
    progress: bool,
    accept: bool,
    given: dict[str, bool],
    public_size: bool,
    delta: float | None = None,
) -> tuple[DistributedRelease, SynthesisReport]:
    """:func:`synthesize_on_dask` with a schema: the structured table release."""
    if bounds is not None:
        raise ValueError("give either bounds (numeric columns) or schema (tables), not both")
    if not public_size:
        raise ValueError("the structured table release needs public_size=True (as in memory)")
    extra = sorted(k for k, v in given.items() if v)
    if extra:
        raise ValueError(
            f"option(s) {extra} do not apply to the structured table release (schema=...)"
        )
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError("with schema=..., source must be a Parquet file or directory path")
    rows, written, report = synthesize_table_on_dask(
        source,
        epsilon,
        out,
        schema,
        client,
        columns=columns,
        options=structured,
        parts=parts,
        overwrite=overwrite,
        accept_data_derived_schema=accept,
        progress=progress,
        delta=delta,
    )
    path = os.path.abspath(os.fspath(out))
    return DistributedRelease(path, rows, written, dict(report.details)), report


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
    progress: bool | None = None,
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
    rel = release_on_dask(
        meas,
        source,
        None,
        client=client,
        columns=columns,
        progress=default_progress(progress, not opts.public_size),
    )
    seconds = time.perf_counter() - t0
    certified = meas.map(1)
    counts = np.asarray(rel.value, dtype=np.int64)
    return counts, SelectionReport(
        mechanism, certified, int(m), int(counts.size), seconds if opts.public_size else None
    )
