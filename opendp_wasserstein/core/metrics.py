"""The package's user domains and metrics, and how to read a descriptor back.

OpenDP compares user domains and metrics by identifier only, so every descriptor here is a
frozen dataclass whose every field appears in the identifier string.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opendp.mod import Domain, Metric

from opendp_wasserstein._compat import extrinsic_distance
from opendp_wasserstein.core import dp

__all__ = [
    "WeightedL1Distance",
    "weighted_l1_distance",
    "WeightedL2SqDistance",
    "weighted_l2sq_distance",
    "descriptor_of",
]

# ---------------------------------------------------------------------------------------------
# weighted l1 metric on hierarchical counts


@dataclass(frozen=True)
class WeightedL1Distance:
    """``l1(s)``: ``d(u, v) = sum_j sum_{nodes at level j} |u - v| / scales[j]``."""

    scales: tuple[float, ...]


def weighted_l1_distance(scales: Sequence[float]) -> Metric:
    """The weighted l1 metric ``l1(s)`` on hierarchical counts, one scale per level.

    :param scales: the level scales ``s_0 .. s_L`` (``s_j`` weights every node of level j)
    """
    desc = WeightedL1Distance(tuple(float(s) for s in scales))
    return extrinsic_distance(f"WeightedL1Distance(scales={desc.scales!r})", desc)


@dataclass(frozen=True)
class WeightedL2SqDistance:
    """``l2sq(s)``: ``d(u, v) = sum_j sum_{nodes at level j} (u - v)^2 / scales[j]^2``.

    The weighted *squared* l2 distance: the quantity whose half is the zero-concentrated
    privacy loss of adding ``N_Z(0, scales[j]^2)`` to every node of level ``j``.
    """

    scales: tuple[float, ...]


def weighted_l2sq_distance(scales: Sequence[float]) -> Metric:
    """The weighted squared l2 distance ``l2sq(s)`` on hierarchical counts, one scale per level.

    :param scales: the level scales ``s_0 .. s_L`` (``1/s_j^2`` weights every node of level j)

    :example:

    >>> from opendp_wasserstein.core.metrics import weighted_l2sq_distance
    >>> weighted_l2sq_distance([1.0, 2.0])
    WeightedL2SqDistance(scales=(1.0, 2.0))
    """
    desc = WeightedL2SqDistance(tuple(float(s) for s in scales))
    return extrinsic_distance(f"WeightedL2SqDistance(scales={desc.scales!r})", desc)


def descriptor_of(domain: Domain, kind: type) -> Any:
    """The descriptor of a user domain/metric, checked to be of ``kind``."""
    desc = getattr(domain, "descriptor", None)
    if not isinstance(desc, kind):
        raise ValueError(f"expected a {kind.__name__} domain or metric, got {domain}")
    return desc


_ = dp  # keep the prelude import: it registers the numpy extras
