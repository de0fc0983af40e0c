"""Evaluation helpers: 2-D test shapes and exact / subsampled 1-Wasserstein distances.

Nothing here is a privacy mechanism: the shapes are public test data and the distances measure
the utility of a release (including for mixed-type tables, :mod:`.tables`).  POT (``pip install POT``) is needed for exact W1 in two or more
dimensions except between uniformly weighted sets of equal size.
"""

from opendp_wasserstein.evaluation.shapes import (
    SHAPES,
    SUBSPACE_FILL,
    make_annulus,
    make_checkerboard,
    make_cross,
    make_figure_eight,
    make_four_blobs,
    make_pinwheel,
    make_s_curve,
    make_shape,
    make_spiral,
    make_subspace,
    make_two_moons,
)
from opendp_wasserstein.evaluation.tables import (
    ClassifierScore,
    MarginalTVD,
    classifier_score,
    marginal_tvd,
    table_w1,
)
from opendp_wasserstein.evaluation.wasserstein import METRICS, W1Estimate, w1, w1_estimate

__all__ = [
    "ClassifierScore",
    "MarginalTVD",
    "classifier_score",
    "marginal_tvd",
    "table_w1",
    "METRICS",
    "SHAPES",
    "SUBSPACE_FILL",
    "W1Estimate",
    "make_annulus",
    "make_checkerboard",
    "make_cross",
    "make_figure_eight",
    "make_four_blobs",
    "make_pinwheel",
    "make_s_curve",
    "make_shape",
    "make_spiral",
    "make_subspace",
    "make_two_moons",
    "w1",
    "w1_estimate",
]
