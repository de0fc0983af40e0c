"""A table under a :class:`~opendp_wasserstein.tables.schema.Schema` as points of the unit cube.

Every column becomes one or two coordinates ("axes") in ``[0, 1]``, so the package's dyadic
hierarchy applies unchanged:

* **float** ``[lo, hi]``: ``u = (x - lo) / (hi - lo)``, clamped; decoded ``lo + u (hi - lo)``.
* **int** ``[lo, hi]``: the ``hi - lo + 1`` integers get equal cells,
  ``u = (x - lo + 1/2) / (hi - lo + 1)``; decoded ``floor(lo + u (hi - lo + 1))`` clipped to
  ``hi``, so every integer is equally likely under uniform placement in a cell.
* **datetime** ``[lo, hi]``: microseconds since the epoch, scaled like a float column;
  decoded by flooring to the microsecond (the frame adapter floors dates to the day).
* **categorical** over ``K`` categories (``K + 1`` with the missing category, last, when
  nullable) and **bool** (``K = 2``): category ``i`` owns an interval that is one node of a
  balanced binary tree of dyadic intervals (a node over ``k`` categories gives its lower half to
  the first ``floor(k / 2)`` of them), so dyadic bisection of the axis *is* that tree: ``K = 3``
  gives ``[0, 1/2), [1/2, 3/4), [3/4, 1)``.  A record sits at the midpoint of its category's
  interval; *any* ``u`` decodes by interval lookup, so every synthetic point decodes to a
  declared category.
* a **nullable numeric** column adds a two-category "is missing" axis before its value axis
  (``[0, 1/2)`` present, ``[1/2, 1)`` missing); a missing record has value coordinate ``1/2``.

Values that do not fit are handled the same way for every record, never by an error: numbers
outside the bounds are clamped (``-inf``/``inf`` too); a missing value in a column not declared
nullable is imputed at the midpoint of its bounds (categorical and bool: the fallback); a value
outside the declared categories goes to the column's fallback.

**The table metric** on encoded points: ``|u - v|`` on the axes of float, int and datetime
columns (so numeric columns are scaled by their bounds; an int column by ``hi - lo + 1``), the
discrete metric (0 if the same category, else 1) on categorical, bool and "is missing" axes, and
the maximum over axes.  Its diameter is 1, like ``l_inf`` on the unit cube.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.tables.schema import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    Schema,
    SchemaError,
)

__all__ = [
    "RawColumn",
    "Axis",
    "TableEncoding",
    "category_boundaries",
    "right_index",
    "rows_right_index",
    "SPLIT_ORDERS",
]

#: the split orders :meth:`TableEncoding.split_order` offers
SPLIT_ORDERS = ("discrete-first", "cyclic")


@dataclass(frozen=True, eq=False)
class RawColumn:
    """One column in the adapters' common form.

    :param values: float64 for float and int columns; int64 microseconds since the epoch for
        datetime columns; int64 category indices for categorical and bool columns, ``-1`` for a
        value outside the declared categories.  Entries under ``missing`` are ignored.
    :param missing: bool, True where the value is null (or could not be read as the column type)
    """

    values: np.ndarray
    missing: np.ndarray


@dataclass(frozen=True)
class Axis:
    """One coordinate of the encoding.

    :param column: the schema column it belongs to
    :param role: ``"value"`` (numeric), ``"missing"`` (the is-missing indicator of a nullable
        numeric column) or ``"category"``
    :param cells: number of categories on a discrete axis; ``0`` on a numeric axis
    """

    column: str
    role: str
    cells: int = 0

    @property
    def discrete(self) -> bool:
        """True for axes under the discrete (0/1) metric."""
        return self.cells > 0

    @property
    def levels(self) -> int:
        """Bisections that resolve every category: ``ceil(log2 cells)`` (0 on numeric axes)."""
        return math.ceil(math.log2(self.cells)) if self.cells > 1 else 0


def category_boundaries(k: int) -> np.ndarray:
    """``k + 1`` increasing dyadic boundaries: category ``i`` owns ``[b[i], b[i+1])``.

    >>> category_boundaries(3).tolist()
    [0.0, 0.5, 0.75, 1.0]
    >>> category_boundaries(4).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    out = np.empty(k + 1)
    out[0], out[k] = 0.0, 1.0
    stack = [(0, k, 0.0, 1.0)]  # categories [a, b) own [lo, hi)
    while stack:  # one entry per tree node over the category list (public, not data)
        a, b, lo, hi = stack.pop()
        if b - a <= 1:
            continue
        mid_cat = a + (b - a) // 2
        mid = (lo + hi) / 2
        out[mid_cat] = mid
        stack.append((a, mid_cat, lo, mid))
        stack.append((mid_cat, b, mid, hi))
    return out


_DAY_US = 86_400_000_000

#: the buckets of :func:`right_index`'s table: ``[b / G, (b + 1) / G)`` for ``G = 2^12``
_RIGHT_BUCKETS = 1 << 12


def _buckets(edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The look-up table of :func:`right_index` for sorted ``edges``: for each bucket ``b`` of
    the ``2^12`` (and ``b = G`` for ``x = 1``), ``#(edges <= b / G)`` and whether an edge lies
    strictly inside it (``#(edges < (b + 1) / G)`` differs: its points need a search)."""
    g = _RIGHT_BUCKETS
    grid = np.arange(g + 1, dtype=np.float64) / g
    lo = np.searchsorted(edges, grid, side="right")  # bucket b: #(edges <= b / G); b = G: x = 1
    hi = np.append(np.searchsorted(edges, grid[1:], side="left"), lo[-1])  # < (b + 1) / G
    return lo, lo != hi


def right_index(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``np.searchsorted(edges, x, side="right")`` (int64) for a short sorted ``edges`` and
    many ``x``, mostly in ``[0, 1]``: the unit interval cut into ``2^12`` buckets, each bucket
    whose answer is the same for all its points (no edge strictly inside it) answered by a
    table, the rest (and any ``x`` outside ``[0, 1]`` or NaN) by ``searchsorted``.  Exact:
    ``x * 2^12`` and ``b / 2^12`` are exact, and a point of bucket ``b`` has between
    ``#(edges <= b / G)`` and ``#(edges < (b + 1) / G)`` edges at or below it.  A binary search
    per point costs about four times the table's few passes.

    >>> e = np.array([0.0, 0.3, 0.5, 1.0])
    >>> x = np.array([0.0, 0.29, 0.3, 0.7, 1.0, -1.0, np.nan])
    >>> bool(np.array_equal(right_index(e, x), np.searchsorted(e, x, side="right")))
    True
    """
    e = np.asarray(edges, dtype=np.float64)
    v = np.asarray(x, dtype=np.float64)
    g = _RIGHT_BUCKETS
    lo, amb_b = _buckets(e)
    inside = bool(v.size) and 0.0 <= float(v.min()) and float(v.max()) <= 1.0  # NaN: False
    if inside:
        b = (v * g).astype(np.int32)  # (floor: v >= 0) int32: a third of int64's cost here
        out = lo[b]
        amb = np.flatnonzero(amb_b[b])
    else:
        ok = (v >= 0.0) & (v <= 1.0)
        b = np.where(ok, v * g, 0.0).astype(np.int32)
        out = lo[b]
        amb = np.flatnonzero(amb_b[b] | ~ok)
    if amb.size:
        out[amb] = np.searchsorted(e, v[amb], side="right")
    return out.astype(np.int64, copy=False)


def rows_right_index(table: np.ndarray, rows: np.ndarray, x: np.ndarray) -> np.ndarray | None:
    """``np.searchsorted(table[rows[i]], x[i], side="right")`` for every ``i`` (int64), for
    points ``x`` in ``[0, 1)``: the :func:`right_index` buckets of every row of a short
    ``(k, w)`` ``table`` in one look-up table, a binary search only for the points in a bucket
    holding an entry of their row.  Every search agrees when each row's entries ``<= v`` form a
    prefix for every ``v < 1``: every row nondecreasing, except that the last entry may be
    anything at least 1 (a cumulative law whose last entry is set to 1).  ``None`` when a row is
    not of that form or a point is outside ``[0, 1)`` (the caller searches row by row).

    >>> cum = np.array([[0.2, 0.5, 1.0], [0.0, 0.9, 1.0]])
    >>> rows_right_index(cum, np.array([0, 1, 1, 0]), np.array([0.3, 0.3, 0.0, 0.99])).tolist()
    [1, 1, 1, 2]
    """
    t = np.asarray(table, dtype=np.float64)
    v = np.asarray(x, dtype=np.float64)
    k, w = t.shape
    if not (v.size and 0.0 <= float(v.min()) and float(v.max()) < 1.0):  # NaN: refused
        return None
    if w > 1:
        body, last = t[:, :-1], t[:, -1]
        if not np.all(body[:, 1:] >= body[:, :-1]):
            return None
        if not np.all((last >= 1.0) | (last >= body[:, -1])):
            return None
    g = _RIGHT_BUCKETS
    lo = np.empty((k, g), dtype=np.int64)
    amb_b = np.empty((k, g), dtype=bool)
    for p in range(k):  # the table's rows (public: the model's codes)
        row_lo, row_amb = _buckets(t[p])
        lo[p], amb_b[p] = row_lo[:g], row_amb[:g]  # points below 1: buckets 0 .. G - 1
    r = np.asarray(rows)
    if k * g < 2**31:
        flat = r.astype(np.int32) * np.int32(g)
    else:  # pragma: no cover - tables of over 2^19 rows
        flat = r.astype(np.int64) * g
    flat += (v * g).astype(np.int32)  # floor: v >= 0
    out = lo.reshape(-1)[flat]
    amb = np.flatnonzero(amb_b.reshape(-1)[flat])
    if amb.size:
        ra = r[amb]
        for p in np.unique(ra).tolist():  # rows of the table that hold such points (public)
            at = amb[ra == p]
            out[at] = np.searchsorted(t[p], v[at], side="right")
    return out


class TableEncoding:
    """The encoding of a schema's columns into ``[0, 1]^D`` (see the module docstring).

    :param schema: the public schema

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.tables import Schema, IntColumn, CategoricalColumn, RawColumn
    >>> enc = TableEncoding(Schema({"age": IntColumn(bounds=(0, 3)),
    ...                             "c": CategoricalColumn(categories=("a", "b", "c"))}))
    >>> [a.role for a in enc.axes], enc.dimension
    (['value', 'category'], 2)
    >>> cols = {"age": RawColumn(np.array([0.0, 3.0]), np.zeros(2, bool)),
    ...         "c": RawColumn(np.array([0, 2]), np.zeros(2, bool))}
    >>> enc.encode(cols).tolist()
    [[0.125, 0.25], [0.875, 0.875]]
    >>> back = enc.decode(enc.encode(cols))
    >>> back["age"].values.tolist(), back["c"].values.tolist()
    ([0, 3], [0, 2])
    """

    def __init__(self, schema: Schema) -> None:
        if not isinstance(schema, Schema):
            raise TypeError("schema must be a Schema")
        self.schema = schema
        axes: list[Axis] = []
        for name, spec in schema.items():
            if isinstance(spec, (CategoricalColumn, BoolColumn)):
                axes.append(Axis(name, "category", len(spec.categories) + int(spec.nullable)))
            else:
                if spec.nullable:
                    axes.append(Axis(name, "missing", 2))
                axes.append(Axis(name, "value"))
        self.axes: tuple[Axis, ...] = tuple(axes)

    @property
    def dimension(self) -> int:
        """The number of axes ``D``."""
        return len(self.axes)

    @cached_property
    def _boundaries(self) -> dict[int, np.ndarray]:
        return {a.cells: category_boundaries(a.cells) for a in self.axes if a.discrete}

    def _cell_points(self, cells: int) -> np.ndarray:
        b = self._boundaries[cells]
        return (b[:-1] + b[1:]) / 2

    def _lookup(self, u: np.ndarray, cells: int) -> np.ndarray:
        b = self._boundaries[cells]
        return np.clip(right_index(b, u) - 1, 0, cells - 1)

    # ------------------------------------------------------------------ encode
    def encode(self, columns: Mapping[str, RawColumn], order: str = "C") -> np.ndarray:
        """Points in ``[0, 1]^D``, one row per record (the input is not modified).

        :param order: the memory layout of the result, ``"C"`` (rows contiguous, default) or
            ``"F"`` (columns contiguous: each axis is written and read as one run, ten times
            faster to build for a block of ``2^18`` rows; the same values)
        """
        if order not in ("C", "F"):
            raise ValueError("order must be 'C' or 'F'")
        missing_names = [n for n in self.schema.names if n not in columns]
        if missing_names:
            raise SchemaError(f"schema column(s) {missing_names} are not in the table")
        n = None
        for name in self.schema.names:
            col = columns[name]
            if n is None:
                n = len(col.values)
            if len(col.values) != n or len(col.missing) != n:
                raise SchemaError(f"column {name!r} has a different length from the others")
        out = np.empty((n or 0, self.dimension), order="F" if order == "F" else "C")
        j = 0
        for name, spec in self.schema.items():
            col = columns[name]
            miss = np.asarray(col.missing, dtype=bool)
            if isinstance(spec, (CategoricalColumn, BoolColumn)):
                lut, at_missing = self._category_points(spec, self.axes[j].cells)
                # codes below 0 read lut[0] (the code -1's point), at least k lut[k + 1]
                idx = np.clip(np.asarray(col.values, dtype=np.int64), -1, len(lut) - 2)
                idx += 1
                np.take(lut, idx, out=out[:, j])
                np.copyto(out[:, j], at_missing, where=miss)
                j += 1
                continue
            if spec.nullable:
                out[:, j] = np.where(miss, 0.75, 0.25)
                j += 1
            self._unit_into(spec, np.asarray(col.values), out[:, j])
            np.copyto(out[:, j], 0.5, where=miss)  # imputed at the midpoint of the bounds
            j += 1
        return out

    def _category_points(
        self, spec: CategoricalColumn | BoolColumn, cells: int
    ) -> tuple[np.ndarray, float]:
        """The encoded point of every code a record can carry and of a missing record: entry
        ``c + 1`` for code ``c`` in ``-1 .. k`` (``-1`` stands for every negative code, ``k``
        for every code at least ``k``), by the rules of the module docstring (a value outside
        the list to the fallback; missing to the missing cell, last, or to the fallback)."""
        k = len(spec.categories)

        def final(codes: np.ndarray, miss: np.ndarray) -> np.ndarray:
            codes = np.where((codes < 0) | (codes >= k), spec.fallback_code(), codes)
            if spec.nullable:
                return np.where(miss | (codes < 0), k, codes)  # missing: the last cell
            return np.where(miss | (codes < 0), spec.fallback_code(), codes)

        points = self._cell_points(cells)
        rep = np.arange(-1, k + 1, dtype=np.int64)
        lut = points[final(rep, np.zeros(k + 2, dtype=bool))]
        return lut, float(points[final(rep[:1], np.ones(1, dtype=bool))][0])

    @staticmethod
    def _unit_into(
        spec: FloatColumn | IntColumn | DatetimeColumn, values: np.ndarray, dest: np.ndarray
    ) -> None:
        """The unit coordinates of ``values`` written into ``dest`` (a float64 view), the
        operations of the module docstring in place: NaN (entries under a missing mask, never
        read) to 1/2, then clipped into ``[0, 1]``."""
        with np.errstate(invalid="ignore", over="ignore"):
            if isinstance(spec, FloatColumn):
                lo, hi = spec.lower, spec.upper
                np.clip(np.asarray(values, dtype=np.float64), lo, hi, out=dest)
                dest -= lo
                dest /= hi - lo
            elif isinstance(spec, IntColumn):
                lo_i, hi_i = spec.lower, spec.upper
                np.clip(np.asarray(values, dtype=np.float64), lo_i, hi_i, out=dest)
                dest += 0.5
                np.floor(dest, out=dest)
                dest -= lo_i
                dest += 0.5
                dest /= hi_i - lo_i + 1.0
            else:
                lo_t, hi_t = spec.lower_us, spec.upper_us
                t = np.clip(np.asarray(values, dtype=np.int64), lo_t, hi_t)
                dest[:] = (t - lo_t).astype(np.float64) / float(hi_t - lo_t)
        np.copyto(dest, 0.5, where=np.isnan(dest))
        np.clip(dest, 0.0, 1.0, out=dest)  # +-inf to 1 and 0, as nan_to_num then clip

    # ------------------------------------------------------------------ decode
    def decode(self, points: np.ndarray) -> dict[str, RawColumn]:
        """Columns of the schema from any points of ``[0, 1]^D`` (clipped into the cube).

        Categorical and bool values come back as category indices in range, int columns as
        int64 in bounds, datetimes as int64 microseconds in bounds, floats as float64 in bounds;
        ``missing`` is only ever True in a nullable column.
        """
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != self.dimension:
            raise ValueError(f"points must have shape (n, {self.dimension})")

        def axis(j: int) -> np.ndarray:
            # axis j as nan_to_num(nan=0.5) then clip into [0, 1] gives it, one new array
            u = np.clip(p[:, j], 0.0, 1.0)  # +-inf to 1 and 0, NaN kept
            np.copyto(u, 0.5, where=np.isnan(u))
            return u

        out: dict[str, RawColumn] = {}
        n = p.shape[0]
        j = 0
        for name, spec in self.schema.items():
            if isinstance(spec, (CategoricalColumn, BoolColumn)):
                k = len(spec.categories)
                codes = self._lookup(axis(j), self.axes[j].cells)
                if spec.nullable:
                    miss = codes == k
                    codes[miss] = 0
                else:
                    miss = np.zeros(n, dtype=bool)
                out[name] = RawColumn(codes, miss)
                j += 1
                continue
            if spec.nullable:
                miss = axis(j) >= 0.5
                j += 1
            else:
                miss = np.zeros(n, dtype=bool)
            u = axis(j)  # a new array: the values are computed in it
            j += 1
            values: np.ndarray
            if isinstance(spec, FloatColumn):
                u *= spec.upper - spec.lower
                u += spec.lower
                values = np.clip(u, spec.lower, spec.upper, out=u)
            elif isinstance(spec, IntColumn):
                u *= spec.upper - spec.lower + 1.0
                u += spec.lower
                np.floor(u, out=u)
                values = np.clip(u, spec.lower, spec.upper, out=u).astype(np.int64)
            else:
                lo_t, hi_t = spec.lower_us, spec.upper_us
                off = np.floor(u * float(hi_t - lo_t))
                values = np.clip(lo_t + off.astype(np.int64), lo_t, hi_t)
            out[name] = RawColumn(values, miss)
        return out

    # ------------------------------------------------------------------ metric
    def metric_view(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(numeric, discrete)``: the numeric axes as they are and the discrete axes as
        category indices, for computing the table metric
        ``max(max_numeric |u - v|, 1 if any discrete index differs)``."""
        p = np.asarray(points, dtype=np.float64)
        num = [j for j, a in enumerate(self.axes) if not a.discrete]
        disc = [self._lookup(p[:, j], a.cells) for j, a in enumerate(self.axes) if a.discrete]
        d = np.stack(disc, axis=1) if disc else np.zeros((p.shape[0], 0), dtype=np.int64)
        return p[:, num], d

    def split_order(self, order: str = "discrete-first") -> SplitOrder:
        """The public split order of the hierarchy over the encoding, with its discrete axes.

        ``"discrete-first"`` (default): the is-missing indicators, then the categorical and bool
        axes (``ceil(log2 K)`` levels each, in column order), then the numeric axes cyclically;
        ``"cyclic"``: level ``j`` splits axis ``j mod D`` (the hierarchy of points).  Either way
        each discrete axis has ``cells`` categories under the 0/1 metric, so
        :meth:`~opendp_wasserstein.hierarchy.split_order.SplitOrder.diameters` is the diameter
        profile under the table metric.

        >>> from opendp_wasserstein.tables import Schema, FloatColumn, CategoricalColumn
        >>> enc = TableEncoding(Schema({"x": FloatColumn(bounds=(0, 1), nullable=True),
        ...                             "c": CategoricalColumn(categories=("a", "b", "c"))}))
        >>> enc.split_order().axes[:6]   # missing indicator, the 3 categories, then x
        (0, 2, 2, 1, 1, 1)
        """
        cells = tuple(a.cells if a.discrete else 0 for a in self.axes)
        if order == "cyclic":
            return SplitOrder.cyclic(cells=cells)
        if order != "discrete-first":
            raise ValueError(f"order must be one of {SPLIT_ORDERS}, got {order!r}")
        first = [j for j, a in enumerate(self.axes) if a.role == "missing"]
        return SplitOrder.discrete_first(cells, first=first)

    @property
    def embedding_dimension(self) -> int:
        """Columns of :meth:`embed`: one per numeric axis, ``cells`` per discrete axis."""
        return sum(a.cells if a.discrete else 1 for a in self.axes)

    def embed(self, points: np.ndarray) -> np.ndarray:
        """The one-hot embedding: ``l_inf`` between embedded points is the table metric.

        Numeric axes are kept as they are; a discrete axis with ``K`` cells becomes ``K``
        columns, the indicator of the point's category.  Two points of different categories
        are then 1 apart in ``l_inf`` (and never more: every column is in ``[0, 1]``), two of
        the same category 0 apart on that block, so ``max`` over columns is
        ``max(max_numeric |u - v|, 1 if any category differs)``.  Row-wise.

        >>> from opendp_wasserstein.tables import Schema, FloatColumn, CategoricalColumn
        >>> enc = TableEncoding(Schema({"x": FloatColumn(bounds=(0, 10)),
        ...                             "c": CategoricalColumn(categories=("a", "b", "c"))}))
        >>> enc.embed(np.array([[0.25, 0.6], [0.5, 0.9]])).tolist()
        [[0.25, 0.0, 1.0, 0.0], [0.5, 0.0, 0.0, 1.0]]
        """
        p = np.clip(np.nan_to_num(np.asarray(points, dtype=np.float64), nan=0.5), 0.0, 1.0)
        if p.ndim != 2 or p.shape[1] != self.dimension:
            raise ValueError(f"points must have shape (n, {self.dimension})")
        out = np.zeros((p.shape[0], self.embedding_dimension))
        col = 0
        for j, a in enumerate(self.axes):
            if a.discrete:
                codes = self._lookup(p[:, j], a.cells)
                out[np.arange(p.shape[0]), col + codes] = 1.0
                col += a.cells
            else:
                out[:, col] = p[:, j]
                col += 1
        return out

    def distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The table metric between encoded points ``a[i]`` and ``b[i]`` (row-wise).

        >>> from opendp_wasserstein.tables import Schema, FloatColumn, BoolColumn
        >>> enc = TableEncoding(Schema({"x": FloatColumn(bounds=(0, 10)), "b": BoolColumn()}))
        >>> enc.distance(np.array([[0.25, 0.25], [0.25, 0.25]]),
        ...              np.array([[0.5, 0.25], [0.5, 0.75]])).tolist()
        [0.25, 1.0]
        """
        na, da = self.metric_view(a)
        nb, db = self.metric_view(b)
        dist = np.abs(na - nb).max(axis=1) if na.shape[1] else np.zeros(len(na))
        if da.shape[1]:
            dist = np.where((da != db).any(axis=1), 1.0, dist)
        return dist
