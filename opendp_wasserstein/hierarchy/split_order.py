r"""Public split orders of the dyadic hierarchy, and the diameter profile of their levels.

A :class:`SplitOrder` says which coordinate each level of the hierarchy of ``[0, 1]^d`` splits
(``axes[j]`` at level ``j``) and, for the metric, which coordinates are *discrete*: a
coordinate with ``cells[c] = K >= 1`` holds one of ``K`` categories, laid out as in
:func:`~opendp_wasserstein.tables.category_boundaries` (dyadic bisection of the axis is a
balanced binary tree over the categories, all resolved after ``ceil(log2 K)`` splits), under the
discrete 0/1 metric; a coordinate with ``cells[c] = 0`` is numeric, under ``|u - v|``.  The
metric is the maximum over coordinates: the **table metric** of
:mod:`~opendp_wasserstein.tables.encoding` (with no discrete coordinate, ``l_inf``).

**Diameter profile.**  A level-``j`` cell is a product of intervals, ``b_c(j)`` bisections of
coordinate ``c``.  Its diameter under the metric is at most

.. math::

   \mathrm{diam}_j = \max_c \begin{cases} 2^{-b_c(j)} & c \text{ numeric} \\
   1 & c \text{ discrete and } b_c(j) < \lceil \log_2 K_c \rceil \\
   0 & c \text{ discrete and } b_c(j) \ge \lceil \log_2 K_c \rceil \end{cases}

(a numeric side of length ``2^-b`` gives ``|u - v| < 2^-b``; a discrete side is inside one
category exactly when all its categories are resolved, which for some cell of the level fails
until ``ceil(log2 K)`` splits), and ``0`` with no coordinate contributing.  The profile is a
function of the public order alone.  The cyclic order on ``[0, 1]^d`` has
``diam_j = 2^-floor(j/d)``.

**Discrete first.**  The table metric stays 1 on a cell until every discrete coordinate in it
is resolved, so the order that makes ``diam_j`` fall fastest splits the discrete coordinates
first (``ceil(log2 K)`` levels each, and never again: a resolved category gains nothing from
further splits), then the numeric ones cyclically: :meth:`SplitOrder.discrete_first`.  For every
``j`` its ``diam_j`` is the smallest any order reaches (``diam_j < 1`` needs all discrete
levels, and the remaining levels are spread evenly over the numeric coordinates).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opendp_wasserstein.hierarchy.cells import MAX_BITS_PER_COORD, check_axes

__all__ = ["SplitOrder", "category_levels", "METRICS"]

#: the metrics a split order's diameter profile can be for: ``"max"`` (the table metric, the
#: maximum over coordinates) and ``"gower"`` (the mean over columns of each column's distance)
METRICS = ("max", "gower")


def category_levels(cells: int) -> int:
    """``ceil(log2 K)``: the bisections that resolve ``K`` categories (0 for a numeric axis)."""
    return math.ceil(math.log2(cells)) if cells > 1 else 0


@dataclass(frozen=True)
class SplitOrder:
    """A public split order and the metric's discrete coordinates (see the module docstring).

    :param axes: ``axes[j]``, the coordinate split at level ``j``; its length is the deepest
        depth the order supports (no coordinate more than 52 times)
    :param cells: per coordinate, the number of categories of a discrete coordinate, 0 for a
        numeric one
    :param groups: per coordinate, the table column it belongs to (``0 .. k-1``; default: one
        column per coordinate), read by the Gower profile
    :param metric: ``"max"`` (default: the table metric, the maximum over coordinates) or
        ``"gower"``: the mean over the ``k`` columns of each column's distance, a column's
        distance being the largest over its coordinates (a nullable numeric column: 1 if the
        is-missing indicators differ, else the numeric distance); see :doc:`/proofs/gower`

    :example:

    >>> from opendp_wasserstein.hierarchy.split_order import SplitOrder
    >>> order = SplitOrder.discrete_first(cells=(0, 3, 0), max_splits=2)
    >>> order.axes     # the 3 categories of coordinate 1 first, then 0 and 2 cyclically
    (1, 1, 0, 2, 0, 2)
    >>> order.diameters(6)
    (1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.25)
    """

    axes: tuple[int, ...]
    cells: tuple[int, ...]
    groups: tuple[int, ...] | None = None
    metric: str = "max"

    def __post_init__(self) -> None:
        cells = tuple(self.cells)
        if not cells:
            raise ValueError("cells must give one entry per coordinate")
        for k in cells:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
                raise ValueError("cells must be non-negative integers (0: numeric coordinate)")
        axes = tuple(self.axes)
        if not axes:
            raise ValueError("axes must give at least one level")
        check_axes(axes, len(cells), len(axes))
        object.__setattr__(self, "axes", tuple(int(a) for a in axes))
        object.__setattr__(self, "cells", tuple(int(k) for k in cells))
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {self.metric!r}")
        if self.groups is not None:
            groups = tuple(int(g) for g in self.groups)
            if (
                len(groups) != len(cells)
                or min(groups) < 0
                or set(groups) != set(range(max(groups) + 1))
            ):
                raise ValueError(
                    "groups must give one column index per coordinate, numbered 0 .. k-1"
                )
            object.__setattr__(self, "groups", groups)

    @property
    def d(self) -> int:
        """The number of coordinates."""
        return len(self.cells)

    @property
    def max_depth(self) -> int:
        """The deepest depth the order supports."""
        return len(self.axes)

    @property
    def numeric(self) -> tuple[int, ...]:
        """The numeric coordinates."""
        return tuple(c for c, k in enumerate(self.cells) if k == 0)

    def axes_to(self, depth: int) -> tuple[int, ...] | None:
        """``axes[:depth]`` in the form the counts constructors take (None when cyclic)."""
        if not 1 <= depth <= self.max_depth:
            raise ValueError(
                f"depth must be in [1, {self.max_depth}] for this split order, got {depth}"
            )
        return check_axes(self.axes, self.d, depth)

    def splits(self, depth: int) -> np.ndarray:
        """``b_c(depth)``: the splits of every coordinate above level ``depth``."""
        return np.bincount(np.asarray(self.axes[:depth], dtype=np.int64), minlength=self.d)

    def diameters(self, depth: int) -> tuple[float, ...]:
        """``diam_0 .. diam_depth``: bounds on the diameters of the levels' cells (module
        docstring)."""
        if not 0 <= depth <= self.max_depth:
            raise ValueError(f"depth must be in [0, {self.max_depth}], got {depth}")
        levels = np.array([category_levels(k) for k in self.cells])
        discrete = np.array([k > 0 for k in self.cells])
        b = np.zeros(self.d, dtype=np.int64)
        groups = np.asarray(
            self.groups if self.groups is not None else range(self.d), dtype=np.int64
        )
        k = int(groups.max()) + 1
        out = []
        for j in range(depth + 1):  # one pass per level (public)
            side = np.where(discrete, (b < levels).astype(np.float64), np.ldexp(1.0, -b))
            if self.metric == "max":
                out.append(float(side.max()))
            else:  # gower: the mean over columns of each column's largest side
                per_column = np.zeros(k)
                np.maximum.at(per_column, groups, side)
                out.append(float(per_column.mean()))
            if j < depth:
                b[self.axes[j]] += 1
        return tuple(out)

    def growth(self, depth: int) -> tuple[str, ...]:
        """What each level ``0 .. depth-1`` splits: ``"discrete"`` (an unresolved discrete
        coordinate), ``"numeric"``, or ``"resolved"`` (a discrete coordinate already resolved)."""
        levels = [category_levels(k) for k in self.cells]
        b = [0] * self.d
        out = []
        for j in range(depth):
            c = self.axes[j]
            if self.cells[c] == 0:
                out.append("numeric")
            elif b[c] < levels[c]:
                out.append("discrete")
            else:
                out.append("resolved")
            b[c] += 1
        return tuple(out)

    @classmethod
    def cyclic(cls, d: int | None = None, cells: Sequence[int] | None = None) -> SplitOrder:
        """The cyclic order ``j mod d`` to depth ``52 d`` (``cells`` default: all numeric)."""
        cells = tuple(cells) if cells is not None else (0,) * _check_d(d)
        if d is not None and len(cells) != d:
            raise ValueError("cells must have d entries")
        dd = len(cells)
        return cls(tuple(j % dd for j in range(MAX_BITS_PER_COORD * dd)), cells)

    @classmethod
    def discrete_first(
        cls, cells: Sequence[int], first: Sequence[int] = (), max_splits: int = MAX_BITS_PER_COORD
    ) -> SplitOrder:
        """Discrete coordinates first, ``ceil(log2 K)`` levels each, then numeric cyclically.

        :param cells: per coordinate, categories of a discrete one or 0
        :param first: discrete coordinates to split before the others (e.g. is-missing
            indicators); the rest follow in coordinate order
        :param max_splits: splits per numeric coordinate (default 52, the grid's resolution)
        """
        cells = tuple(int(k) for k in cells)
        d = len(cells)
        discrete = [c for c in range(d) if cells[c] > 1]
        head = [int(c) for c in first if int(c) in discrete]
        order = head + [c for c in discrete if c not in head]
        axes = [c for c in order for _ in range(category_levels(cells[c]))]
        numeric = [c for c in range(d) if cells[c] == 0]
        if not isinstance(max_splits, int) or not 1 <= max_splits <= MAX_BITS_PER_COORD:
            raise ValueError(f"max_splits must be an integer in [1, {MAX_BITS_PER_COORD}]")
        axes += [c for _ in range(max_splits) for c in numeric]
        if not axes:  # only single-category coordinates: one (redundant) level
            axes = [0]
        return cls(tuple(axes), cells)


def _check_d(d: Any) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    return int(d)
