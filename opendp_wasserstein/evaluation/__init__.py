"""Evaluation helpers: 2-D test shapes and exact / subsampled 1-Wasserstein distances.

Nothing here is a privacy mechanism: the shapes are public test data and the distances measure
the utility of a release (including for mixed-type tables, :mod:`.tables`).  POT
(``pip install POT``) is needed for exact W1 in two or more dimensions except between uniformly
weighted sets of equal size; OR-Tools (``pip install ortools``) for the whole-set W1 on a grid
(:mod:`.grid_transport`).
"""

from opendp_wasserstein.evaluation import shapes
from opendp_wasserstein.evaluation.grid_transport import GRID_METRICS, GridW1, w1_grid
from opendp_wasserstein.evaluation.shapes import *  # noqa: F403 (the names of shapes.__all__)
from opendp_wasserstein.evaluation.tables import (
    ClassifierScore,
    CorrelationError,
    MarginalTVD,
    ModelScore,
    classifier_score,
    correlation_error,
    gower_distance,
    gower_w1,
    marginal_tvd,
    model_score,
    table_w1,
)
from opendp_wasserstein.evaluation.wasserstein import METRICS, W1Estimate, w1, w1_estimate

__all__ = [
    "GRID_METRICS",
    "GridW1",
    "w1_grid",
    "ClassifierScore",
    "CorrelationError",
    "MarginalTVD",
    "ModelScore",
    "classifier_score",
    "correlation_error",
    "gower_distance",
    "gower_w1",
    "marginal_tvd",
    "model_score",
    "table_w1",
    "METRICS",
    "W1Estimate",
    "w1",
    "w1_estimate",
    *shapes.__all__,
]
