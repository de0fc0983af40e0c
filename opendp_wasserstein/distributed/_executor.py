"""The executor of distributed releases: one measurement, its plan, one atomic output."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from opendp_wasserstein import runtime
from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.core.plan import (
    AdaptivePlan,
    HistogramPlan,
    NoisySizePlan,
    PmmPlan,
    plan_of,
)
from opendp_wasserstein.distributed._histogram import run_histogram
from opendp_wasserstein.distributed._output import ParquetSink
from opendp_wasserstein.distributed._pmm import (
    Driver,
    default_parts,
    public_parts,
    run_adaptive,
    run_pmm,
)
from opendp_wasserstein.distributed._source import blocks_of, parquet_files
from opendp_wasserstein.release.progress import default_progress

__all__ = [
    "release_on_dask",
    "DistributedRelease",
    "local_client",
    "local_client_in_background",
    "default_progress",
]


@dataclass(frozen=True)
class DistributedRelease:
    """What a distributed release produced.

    :param path: the output directory of Parquet parts (synthetic rows), or None
    :param rows: the number of rows released (synthesis)
    :param parts: the number of Parquet parts
    :param info: what the in-memory release records in
        :func:`opendp_wasserstein.runtime.diagnostics` (public after the release)
    :param value: the release itself when it is small (the public-candidate mechanisms), else None
    """

    path: str | None
    rows: int
    parts: int
    info: dict[str, Any] = field(default_factory=dict)
    value: Any = None

    def read(self) -> np.ndarray:
        """The released rows as one array (small releases and tests: it reads every part)."""
        if self.path is None:
            raise ValueError("this release wrote no rows")
        tables = [pq.read_table(f) for f in parquet_files(self.path)]
        if not tables:  # pragma: no cover - every release writes at least one part
            return np.zeros((0, 0))
        return np.vstack(
            [np.column_stack([t.column(c).to_numpy() for c in t.column_names]) for t in tables]
        )


#: the worker processes' environment overrides (None: unset) of :func:`local_client`
WORKER_ENVIRON: dict[str, str | None] = {"MALLOC_TRIM_THRESHOLD_": None}


@contextmanager
def local_client(
    workers: int = 2, threads: int = 1, processes: bool = True, memory_limit: str | None = None
) -> Iterator[Any]:
    """A :class:`distributed.Client` on a fresh ``LocalCluster``, closed on exit.

    The worker processes start without Dask's default ``MALLOC_TRIM_THRESHOLD_=65536``
    (:data:`WORKER_ENVIRON`): setting that glibc threshold at all turns off glibc's dynamic
    ``mmap`` threshold, so every temporary array over 128 kB is a fresh ``mmap`` whose pages
    fault in on first touch; the releases' vectorised passes over a part allocate such arrays
    level after level, and measured the same numpy pass (60 ``flatnonzero`` over 10^6 uint16)
    took 218-304 ms on a worker with it against 39-45 ms in the driver, 42-67 ms on a worker
    without it."""
    dask_distributed = import_optional("distributed", "a Dask cluster")
    Client, LocalCluster = dask_distributed.Client, dask_distributed.LocalCluster
    dask = import_optional("dask", "a Dask cluster")
    kwargs: dict[str, Any] = {
        "n_workers": workers,
        "threads_per_worker": threads,
        "processes": processes,
        "dashboard_address": None,
    }
    if memory_limit is not None:
        kwargs["memory_limit"] = memory_limit
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {})) | WORKER_ENVIRON
    # an earlier nanny of this process left its variables in os.environ, which the workers
    # inherit: the unset ones are out of it while the workers start
    saved = {
        k: os.environ.pop(k) for k, v in WORKER_ENVIRON.items() if v is None and k in os.environ
    }
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            cluster = LocalCluster(**kwargs)  # the nannies spawn their workers here
    finally:
        os.environ.update(saved)
    with cluster, Client(cluster) as client:
        yield client


@contextmanager
def local_client_in_background(
    workers: int = 2, threads: int = 1, processes: bool = True, memory_limit: str | None = None
) -> Iterator[Future[Any]]:
    """:func:`local_client` started in a thread: a :class:`concurrent.futures.Future` of the
    client, to pass as ``client=`` to a release, which builds its measurement and reads the
    footers while the workers start (a 2-worker cluster takes seconds) and waits for the client
    only when its first task is due.  On exit the cluster is closed once it has started (an
    error before the release used it still waits for the start, then closes it)."""
    opened: Future[Any] = Future()
    done = threading.Event()

    def start() -> None:
        try:
            with local_client(workers, threads, processes, memory_limit) as client:
                opened.set_result(client)
                done.wait()
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            if not opened.done():
                opened.set_exception(e)

    thread = threading.Thread(target=start, name="opendp-wasserstein-cluster", daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        done.set()
        thread.join()


@contextmanager
def _client(client: Any) -> Iterator[Any]:
    """``client``; the client of a Future of one (:func:`local_client_in_background`), waited
    for here; None: a 2-worker :func:`local_client` for the call."""
    if isinstance(client, Future):
        yield client.result()
        return
    if client is not None:
        yield client
        return
    with local_client() as c:
        yield c


def _size_is_private(plan: Any) -> bool:
    """Whether the plan's input size is private (no public ``size``, or a DP count first)."""
    if isinstance(plan, NoisySizePlan):
        return True
    inner = plan.scores if isinstance(plan, AdaptivePlan) else plan
    return getattr(inner, "size", None) is None


def release_on_dask(
    meas: Any,
    source: Any,
    out: str | os.PathLike[str] | None,
    client: Any = None,
    columns: Sequence[str] | None = None,
    parts: int | None = None,
    rows_per_block: int | None = None,
    overwrite: bool = False,
    progress: bool | None = None,
    _hook: Any = None,
) -> DistributedRelease:
    """Run the release of ``meas`` on a Dask cluster: the same measurement, an execution plan.

    ``meas`` is a Measurement built by :func:`~opendp_wasserstein.measurements.make_pruned_pmm`,
    :func:`~opendp_wasserstein.measurements.make_pmm`,
    :func:`~opendp_wasserstein.measurements.make_adaptive_pruned_pmm`,
    :func:`~opendp_wasserstein.measurements.make_tree_projection`,
    :func:`~opendp_wasserstein.measurements.make_tree_em` or
    :func:`~opendp_wasserstein.measurements.make_nn_histogram`; its ``map`` certifies the
    distributed release, whose law is that of ``meas(X)`` on the rows of ``source`` (with the same
    node-addressed keys, inside :func:`opendp_wasserstein.runtime.reproducible`, the same rows,
    in another order).  Synthetic rows are written by the workers as Parquet parts into a
    temporary directory renamed to ``out`` when the whole release has succeeded; a failed release
    leaves nothing.

    :param meas: the measurement (its input domain fixes ``d`` and, if sized, ``n``)
    :param source: a Parquet file or directory, a Dask DataFrame or Array, or a numpy array (a
        numpy array is published on the scheduler in chunks, never sent in a task graph; with a
        private size in :data:`~opendp_wasserstein.distributed._source.ARRAY_CHUNKS` chunks
        whatever its length, and a Parquet source is read one row group per task)
    :param out: the output directory (synthesis; must not exist unless ``overwrite``)
    :param client: a :class:`distributed.Client`, or a :class:`concurrent.futures.Future` of
        one (:func:`local_client_in_background`: waited for when the first task is due); default
        a 2-worker ``LocalCluster`` for the call
    :param columns: the source columns, in order (default all)
    :param parts: the number of output parts (default with a public size: one per 2^20 rows,
        at least two per worker, at most one per input block (:func:`~._pmm.public_parts`);
        when the size is private, since the number of blocks may follow the source's layout:
        one per 2^22 rows of the DP count, or with no DP count (a fixed depth),
        ``max(16, 2 x workers)``)
    :param rows_per_block: rows per input block (public size only; default: a Parquet source
        one block per row group of at least 2^16 rows, a numpy array blocks of 2^21 rows:
        :func:`~opendp_wasserstein.distributed._source.blocks_of`)
    :param overwrite: replace an existing ``out``
    :param progress: show a progress bar per pass, moving per task (``tqdm``); None (default):
        when standard error is a terminal; never with a private size (the bars count input
        blocks, whose number may follow the source's layout): :func:`default_progress`
    :return: a :class:`DistributedRelease`
    """
    plan = plan_of(meas)
    d = plan.scores.d if isinstance(plan, AdaptivePlan) else plan.d
    private = _size_is_private(plan)
    # with a private size, the number of blocks (tasks of a pass) is independent of n
    blocks, names = blocks_of(source, d, columns, rows_per_block, private_size=private)
    progress = default_progress(progress, private)
    if isinstance(plan, HistogramPlan):
        with _client(client) as c:
            drv = Driver(c, blocks, progress, _hook)
            try:
                value, info = run_histogram(plan, drv)
            finally:
                drv.close()
        runtime.record(info)
        return DistributedRelease(None, 0, 0, info, value)
    if out is None:
        raise ValueError("out (the output directory) is required for a synthesis")
    sink = ParquetSink(out, names, overwrite)
    try:
        with _client(client) as c:
            drv = Driver(c, blocks, progress, _hook)
            try:
                info = _synthesis(plan, drv, sink, parts)
            finally:
                drv.close()
        path = sink.commit()
    except BaseException:
        sink.abort()
        raise
    runtime.record(info)
    return DistributedRelease(path, int(info["size"]), int(info["parts"]), info)


def _synthesis(plan: Any, drv: Any, sink: ParquetSink, parts: int | None) -> dict[str, Any]:
    """The synthesis plans on the driver's blocks (a DP count first when the plan has one)."""
    first: dict[str, Any] = {}
    if isinstance(plan, NoisySizePlan):
        # the DP row count (a sum over the blocks, then the in-memory closure's noise),
        # then the plan of the measurement built for n_hat
        with runtime.capture() as sizes:  # folded into the one record below
            n_hat = plan.noisy_size(drv.rows(plan.d, plan.nan))
            inner = plan.inner(n_hat)
        for r in sizes:
            first |= r
        plan = plan_of(inner)
        # the number of input blocks may grow with the private n: the default number of
        # parts (files written) comes from the DP count instead
        parts = parts or default_parts(n_hat)
    elif parts is None and _size_is_private(plan):
        parts = drv.split_groups()  # a private size and no DP count: a public number
    elif parts is None:  # a public size: parts of at least 2^20 rows, at most one per block
        size = plan.scores.size if isinstance(plan, AdaptivePlan) else plan.size
        if size is not None:
            parts = public_parts(size, drv.parts, drv.workers())
    if isinstance(plan, PmmPlan):
        return first | run_pmm(plan, drv, sink.writer, parts)
    if isinstance(plan, AdaptivePlan):
        return first | run_adaptive(plan, drv, sink.writer, parts)
    raise TypeError(
        "make_noisy_size_then built a measurement with no synthesis plan"
    )  # pragma: no cover
