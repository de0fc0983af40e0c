"""Transformations (the package's ``dp.t``): stable maps from data to what gets noised."""

from opendp_wasserstein.schedules.tree import tree_level_scales
from opendp_wasserstein.transformations._dyadic_counts import make_dyadic_counts, then_dyadic_counts
from opendp_wasserstein.transformations._nearest_candidate import (
    candidate_index_domain,
    make_nearest_candidate,
    then_nearest_candidate,
)
from opendp_wasserstein.transformations._occupancy import make_occupancy, then_occupancy
from opendp_wasserstein.transformations._row_count import make_row_count, then_row_count
from opendp_wasserstein.transformations._schedule_scores import (
    make_schedule_scores,
    then_schedule_scores,
)
from opendp_wasserstein.transformations._tree_counts import (
    make_tree_counts,
    then_tree_counts,
    tree_counts_domain,
)

__all__ = [
    "make_row_count",
    "then_row_count",
    "make_occupancy",
    "then_occupancy",
    "make_schedule_scores",
    "then_schedule_scores",
    "make_dyadic_counts",
    "then_dyadic_counts",
    "make_nearest_candidate",
    "then_nearest_candidate",
    "candidate_index_domain",
    "make_tree_counts",
    "then_tree_counts",
    "tree_counts_domain",
    "tree_level_scales",
]
