"""The vocabulary every constructor speaks: boxes, data domains, metrics, parameter checks,
exact map arithmetic, resource limits and the Dask plan types.  Imports nothing above it."""
