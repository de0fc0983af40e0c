"""Transformations (the package's ``dp.t``): stable maps from data to what gets noised."""

from opendp_wasserstein.transformations._dyadic_counts import (
    make_dyadic_counts,
    then_dyadic_counts,
)

__all__ = ["make_dyadic_counts", "then_dyadic_counts"]
