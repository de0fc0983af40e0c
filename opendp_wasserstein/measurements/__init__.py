"""Measurements (the package's ``dp.m``): every release with its privacy map."""

from opendp_wasserstein.measurements._adaptive import (
    make_adaptive_pruned_pmm,
    then_adaptive_pruned_pmm,
)
from opendp_wasserstein.measurements._exponential_selection import (
    make_exponential_selection,
    then_exponential_selection,
)
from opendp_wasserstein.measurements._pmm import (
    make_pmm,
    make_pruned_pmm,
    then_pmm,
    then_pruned_pmm,
)
from opendp_wasserstein.measurements._tree_laplace import make_tree_laplace, then_tree_laplace

__all__ = [
    "make_adaptive_pruned_pmm",
    "then_adaptive_pruned_pmm",
    "make_exponential_selection",
    "then_exponential_selection",
    "make_tree_laplace",
    "then_tree_laplace",
    "make_pruned_pmm",
    "then_pruned_pmm",
    "make_pmm",
    "then_pmm",
]
