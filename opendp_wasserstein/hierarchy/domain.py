"""The dyadic counts domain: lazy count trees of the hierarchy of a public box."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opendp.mod import Domain

from opendp_wasserstein._compat import extrinsic_domain
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.hierarchy.cells import CountTree, check_axes

__all__ = ["DyadicCountsDomain", "dyadic_counts_domain"]


@dataclass(frozen=True)
class DyadicCountsDomain:
    """Lazy count trees of the dyadic hierarchy of ``[lower, upper]`` to ``depth``.

    ``axes`` is the public split order (``axes[j]`` the coordinate split at level ``j``), or
    None for the cyclic order ``j mod num_columns``.
    """

    depth: int
    num_columns: int
    size: int | None
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    axes: tuple[int, ...] | None = None


def dyadic_counts_domain(
    depth: int, num_columns: int, size: int | None, box: Box, axes: Sequence[int] | None = None
) -> Domain:
    """The domain of :class:`~opendp_wasserstein.hierarchy.cells.CountTree` values (split order
    ``axes``, checked by :func:`~opendp_wasserstein.hierarchy.cells.check_axes`; default cyclic)."""
    order = check_axes(axes, num_columns, depth)
    desc = DyadicCountsDomain(depth, num_columns, size, box.lower, box.upper, order)
    ident = (
        f"DyadicCountsDomain(depth={depth}, num_columns={num_columns}, size={size}, "
        f"lower={box.lower!r}, upper={box.upper!r}, axes={order!r})"
    )

    def member(x: Any) -> bool:
        return (
            isinstance(x, CountTree) and x.depth == depth and x.d == num_columns and x.axes == order
        )

    return extrinsic_domain(ident, member, desc)
