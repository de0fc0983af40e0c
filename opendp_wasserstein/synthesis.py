"""Synthesis: place ``m_theta`` points in every leaf cell (a data-independent rule)."""

from __future__ import annotations

import numpy as np

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.box import Box
from opendp_wasserstein.consistency import LeafMasses
from opendp_wasserstein.hierarchy import coord_bits_at_level

__all__ = ["PLACEMENTS", "check_placement", "place_points"]

PLACEMENTS = ("center", "uniform")


def check_placement(placement: str) -> str:
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    return placement


def place_points(leaves: LeafMasses, box: Box, placement: str, rng: RandomSource) -> np.ndarray:
    """``leaves.masses[i]`` points in leaf cell ``i``, at its centre or uniform in it, mapped into
    ``box``, rows in random order.  Returns an (m, d) float array."""
    d = box.dim
    bits = coord_bits_at_level(leaves.depth, d)
    width = np.ldexp(1.0, -bits)  # cell side per coordinate, exact
    cells = np.repeat(leaves.cells, leaves.masses, axis=0)
    if placement == "center":
        u = (cells + 0.5) * width
    else:
        u = (cells + rng.uniform(cells.shape)) * width
    if u.shape[0] > 1:
        u = u[rng.permutation(u.shape[0])]
    return box.from_unit(u)
