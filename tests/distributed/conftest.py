"""Fixtures for the distributed tests: a real 2-worker LocalCluster (processes) shared by the
module, and an inline client that runs the same tasks synchronously in the test process (for
statistical tests that need thousands of releases)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("distributed")


class _Done:
    """A finished 'future' of the inline client."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def release(self) -> None:
        pass


class InlineClient:
    """Runs every task at once in this process (the executor's client interface, no Dask)."""

    def submit(self, fn: Any, *args: Any, pure: bool = True, **kwargs: Any) -> _Done:
        def resolve(a: Any) -> Any:  # futures as arguments, also inside lists (as Dask does)
            if isinstance(a, _Done):
                return a.value
            return [resolve(b) for b in a] if isinstance(a, list) else a

        return _Done(fn(*(resolve(a) for a in args), **kwargs))

    def compute(self, delayed: Any) -> Any:  # a list gives a list, as Dask does
        if isinstance(delayed, list):
            return [_Done(d.compute(scheduler="sync")) for d in delayed]
        return _Done(delayed.compute(scheduler="sync"))

    def scatter(self, value: Any, broadcast: bool = False, hash: bool = True) -> _Done:
        return _Done(value)

    def gather(self, futures: list[_Done]) -> list[Any]:
        return [f.value for f in futures]


@pytest.fixture
def inline() -> InlineClient:
    return InlineClient()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Any]:
    """A 2-worker LocalCluster with worker processes (so a worker can really die); a task whose
    worker dies twice is failed (``allowed-failures: 1``)."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc:
            with Client(lc) as client:
                yield client


@pytest.fixture
def killable_cluster() -> Iterator[Any]:
    """A cluster of its own for a test that kills workers: a killed worker restarts in the
    background and loses the data it held (scattered inputs cannot be recomputed), which must
    not reach the other tests that share :func:`cluster`."""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc:
            with Client(lc) as client:
                yield client


def sorted_rows(a: np.ndarray) -> np.ndarray:
    """Rows in lexicographic order (a release is a multiset of rows)."""
    return a[np.lexsort(a.T[::-1])] if a.size else a
