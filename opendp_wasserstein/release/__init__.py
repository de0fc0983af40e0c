"""The high-level release shared by the front doors (:mod:`opendp_wasserstein.api`, the tables
front end, Dask): checked option objects (:mod:`.options`), the certified measurement built
from them and public values (:mod:`.measurement`), the in-memory release (:mod:`.in_memory`)
and what a release reports (:mod:`.reports`)."""
