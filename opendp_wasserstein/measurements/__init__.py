"""Measurements (the package's ``dp.m``): every release with its privacy map."""

from opendp_wasserstein.measurements._adaptive import (
    make_adaptive_pruned_pmm,
    then_adaptive_pruned_pmm,
)
from opendp_wasserstein.measurements._exponential_selection import (
    make_exponential_selection,
    then_exponential_selection,
)
from opendp_wasserstein.measurements._nn_histogram import (
    largest_remainder,
    make_nn_histogram,
    then_nn_histogram,
)
from opendp_wasserstein.measurements._noisy_size import make_noisy_size_then, then_noisy_size_then
from opendp_wasserstein.measurements._pmm import (
    make_pmm,
    make_pruned_pmm,
    then_pmm,
    then_pruned_pmm,
)
from opendp_wasserstein.measurements._privtree import make_privtree, then_privtree
from opendp_wasserstein.measurements._tree_count_noise import (
    make_tree_count_gaussian,
    make_tree_count_laplace,
    then_tree_count_gaussian,
    then_tree_count_laplace,
)
from opendp_wasserstein.measurements._tree_em import make_tree_em, then_tree_em
from opendp_wasserstein.measurements._tree_noise import (
    make_pruned_tree_gaussian,
    make_pruned_tree_laplace,
    make_tree_gaussian,
    make_tree_laplace,
    then_pruned_tree_gaussian,
    then_pruned_tree_laplace,
    then_tree_gaussian,
    then_tree_laplace,
    zcdp_map,
)
from opendp_wasserstein.measurements._tree_projection import (
    make_tree_multiset,
    make_tree_projection,
    then_tree_projection,
)

__all__ = [
    "make_adaptive_pruned_pmm",
    "then_adaptive_pruned_pmm",
    "make_exponential_selection",
    "then_exponential_selection",
    "make_tree_laplace",
    "then_tree_laplace",
    "make_pruned_tree_laplace",
    "then_pruned_tree_laplace",
    "make_noisy_size_then",
    "then_noisy_size_then",
    "make_pruned_pmm",
    "then_pruned_pmm",
    "make_pmm",
    "then_pmm",
    "make_tree_em",
    "then_tree_em",
    "make_tree_projection",
    "then_tree_projection",
    "make_tree_count_laplace",
    "then_tree_count_laplace",
    "make_tree_multiset",
    "make_tree_count_gaussian",
    "then_tree_count_gaussian",
    "make_tree_gaussian",
    "then_tree_gaussian",
    "make_pruned_tree_gaussian",
    "then_pruned_tree_gaussian",
    "zcdp_map",
    "make_nn_histogram",
    "then_nn_histogram",
    "largest_remainder",
    "make_privtree",
    "then_privtree",
]
