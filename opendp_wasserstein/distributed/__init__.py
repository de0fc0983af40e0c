"""Distributed execution of the package's mechanisms on Dask (optional extra ``dask``).

Importing this package does not import Dask; a release does (a missing extra is named).
:func:`synthesize_on_dask` and :func:`select_on_dask` are the front ends (the in-memory
release's options and measurement; ``synthesize_on_dask(..., schema=...)`` the structured table
release, :mod:`opendp_wasserstein.distributed._tables`), :func:`release_on_dask` the executor of
any measurement with a plan.
"""

from opendp_wasserstein.distributed._executor import (
    DistributedRelease,
    local_client,
    local_client_in_background,
    release_on_dask,
)
from opendp_wasserstein.distributed._front import select_on_dask, synthesize_on_dask

__all__ = [
    "release_on_dask",
    "synthesize_on_dask",
    "select_on_dask",
    "DistributedRelease",
    "local_client",
    "local_client_in_background",
]
