"""Distributed execution of the package's mechanisms on Dask (optional extra ``dask``).

Importing this package does not import Dask; :func:`release_on_dask` and the entry points do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["release_on_dask", "synthesize_on_dask", "select_on_dask", "DistributedRelease", "local_client"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from opendp_wasserstein.distributed import _executor as _run

        return getattr(_run, name)
    raise AttributeError(name)
