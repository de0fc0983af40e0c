r"""Calibration of a synthetic table to the DP marginals: post-processing, no privacy cost.

Both inputs are DP releases (the joint synthetic points and the first look,
:class:`~opendp_wasserstein.tables.marginals.TableMarginals`), so whatever this module does with
them is post-processing.

* **Numeric columns: rank matching.**  Within each numeric column, the synthetic values'
  ranks (ties broken at random) are mapped onto the DP marginal's quantiles: the row of rank
  ``i`` of ``m`` present rows gets the released quantile at ``(i + 1/2) / m``
  (:meth:`~opendp_wasserstein.tables.marginals.TableMarginals.quantiles`).  The column's 1-way
  marginal becomes the DP release's (up to the ``1/m`` grid), and every joint rank relation of
  the synthetic rows is kept (a monotone map of each column).  Quantiles lie in ``[0, 1]``, so
  the values decode within the public bounds.
* **Atoms of a float column at a fine release: at the roundest value of their cell.**  Where
  the released leaves are fine (at least :data:`ATOM_MIN_LEAVES` over the bounds) and one leaf
  holds more than :data:`ATOM_RATIO` times the mass of each of its neighbours (a spike: the
  data's values repeat there, as values recorded at a fixed precision do), the rows the rank
  matching puts in that leaf all get one value: the roundest number inside it (fewest
  significant decimal digits, :func:`roundest_values`), where a recorded value most likely is,
  instead of values spread across the leaf (which put part of an atom at ``58.0`` below
  ``58.0``).  A row moves by less than a leaf's width (``1 / ATOM_MIN_LEAVES`` of the bounds at
  most); the ranks' order is kept (ties within the leaf).  Public: the schema and the release.
* **Categorical columns and is-missing indicators: fewest re-labels.**  The target counts are
  the released frequencies times ``m``, rounded by largest remainder; a category holding more
  rows than its target gives up the surplus (rows chosen at random), and those rows take the
  categories short of their targets.  This is the least number of changed labels that reaches
  the target counts.  A row made missing gets the value coordinate ``1/2`` (the encoding's);
  a row made present gets a value by the rank matching that follows.

Every output point decodes to a declared category, a value within the bounds and a null only in
a nullable column (the points stay in ``[0, 1]^D`` on the encoding's cells).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.tables.encoding import TableEncoding, category_boundaries
from opendp_wasserstein.tables.marginals import TableMarginals
from opendp_wasserstein.tables.schema import FloatColumn

__all__ = [
    "calibrate",
    "largest_remainder",
    "roundest_values",
    "atom_cells",
    "CALIBRATE_KINDS",
    "ATOM_MIN_LEAVES",
    "ATOM_RATIO",
]

#: a float column's atoms are placed at one value only when its release has at least this many
#: leaves (a row then moves by at most this share of the column's range)
ATOM_MIN_LEAVES = 1024

#: a leaf is an atom when its mass is more than this many times each neighbour's
ATOM_RATIO = 4.0

#: what :func:`calibrate` may match: numeric columns, categorical columns, is-missing indicators
CALIBRATE_KINDS = ("numeric", "category", "missing")


def largest_remainder(frequencies: np.ndarray, m: int) -> np.ndarray:
    """Integer counts summing to ``m`` closest to ``frequencies * m`` (largest remainder)."""
    f = np.clip(np.asarray(frequencies, dtype=np.float64), 0.0, None)
    f = f / f.sum() if f.sum() > 0 else np.full(len(f), 1.0 / len(f))
    raw = f * m
    out = np.floor(raw).astype(np.int64)
    short = int(m - out.sum())
    if short > 0:
        out[np.argsort(-(raw - out), kind="stable")[:short]] += 1
    return out


def _argsort(x: np.ndarray) -> np.ndarray:
    """``np.argsort(x, kind="stable")``, by the faster unstable sort when ``x`` has no tie (the
    sorting permutation of distinct keys is unique, so both sorts give it)."""
    order = np.argsort(x)
    s = x[order]
    if len(s) > 1 and (np.any(s[1:] == s[:-1]) or np.isnan(s[-1])):
        return np.argsort(x, kind="stable")
    return order


def _smallest(rows: np.ndarray, key: np.ndarray, s: int) -> np.ndarray:
    """``rows[_argsort(key[rows])[:s]]``: the ``s`` rows of the smallest keys in the order of
    (key, position), by a partition around the ``s``-th smallest key (``O(len(rows))``) and a
    sort of those ``s`` alone.  Keys equal to the ``s``-th are taken in position order, as the
    stable sort takes them."""
    if s >= len(rows):
        return rows[_argsort(key[rows])]
    k = key[rows]
    v = np.partition(k, s - 1)[s - 1]  # the s-th smallest key
    below = np.flatnonzero(k < v)
    at = np.flatnonzero(k == v)[: s - len(below)]  # positions ascending: the stable order
    pick = np.concatenate([below, at])
    pick.sort()  # position order, so the stable sort of their keys breaks ties as before
    return rows[pick[_argsort(k[pick])]]


def _relabel(codes: np.ndarray, target: np.ndarray, rng: RandomSource) -> np.ndarray:
    """``codes`` with the fewest entries changed so that their counts are ``target``."""
    k = len(target)
    counts = np.bincount(codes, minlength=k)
    surplus = counts - target
    if not np.any(surplus):
        return codes
    out = codes.copy()
    key = rng.uniform(len(codes))
    freed: list[np.ndarray] = []
    for c in np.flatnonzero(surplus > 0):  # a loop over categories (public), not rows
        freed.append(_smallest(np.flatnonzero(codes == c), key, int(surplus[c])))
    free = np.concatenate(freed)
    free = free[_argsort(key[free])]
    new = np.repeat(np.flatnonzero(surplus < 0), -surplus[surplus < 0])
    out[free] = new
    return out


def _rank_order(u: np.ndarray, key: np.ndarray) -> np.ndarray:
    """``np.lexsort((key, u))``: ``u``'s order, ties broken by ``key`` (then by position).
    One unstable sort of ``u`` (without ties the one sorting permutation), then only the runs
    of equal ``u`` (NaNs, sorted last, are one run) re-sorted by ``(key, position)``: the
    calibration's ties are the few rows made present at ``1/2``, so this is about a third of
    the time of ``lexsort``'s two-key sort of every row."""
    order = np.argsort(u)  # unstable: without ties the one sorting permutation
    if len(order) < 2:
        return order
    s = u[order]
    eq = s[1:] == s[:-1]
    if np.isnan(s[-1]):  # NaNs sort last and tie with each other, as in lexsort
        nan = np.isnan(s)
        eq |= nan[1:] & nan[:-1]
    if not eq.any():
        return order
    tied = np.zeros(len(s), dtype=bool)
    tied[1:] = eq
    tied[:-1] |= eq
    run = np.concatenate(([0], np.cumsum(~eq)))  # the run of equal values of each position
    at = np.flatnonzero(tied)
    rows = order[at]
    order[at] = rows[np.lexsort((rows, key[rows], run[at]))]
    return order


def roundest_values(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per interval ``[lo, hi]`` (``lo <= hi``, finite), its roundest number: the multiple
    ``k 10^p`` inside it of the largest power ``p`` (the fewest significant decimal digits), the
    smallest such multiple; computed as ``k / 10^-p`` for ``p < 0``, the float nearest the
    decimal (what parsing its text gives).  A loop over the powers of ten, vectorised over the
    intervals.

    >>> roundest_values(np.array([57.988, 0.2995, -3.7]), np.array([58.003, 0.3004, -3.2]))
    array([58. ,  0.3, -3.7])
    """
    a = np.asarray(lo, dtype=np.float64)
    b = np.asarray(hi, dtype=np.float64)
    out = a.copy()
    todo = np.ones(len(a), dtype=bool)
    if not len(a):
        return out
    top = int(np.floor(np.log10(max(float(np.max(np.abs(np.concatenate([a, b])))), 1e-300))))
    width = np.maximum(b - a, 0.0)
    low = int(np.floor(np.log10(max(float(np.min(width[width > 0], initial=1.0)), 1e-300)))) - 1
    for p in range(top + 1, max(low, -300) - 1, -1):  # powers of ten (public), not rows
        if not todo.any():
            break
        if p >= 0:
            unit = float(10**p)
            r = np.ceil(a / unit) * unit
        else:
            unit = float(10 ** (-p))
            r = np.ceil(a * unit) / unit
            r = np.where(r < a, np.ceil(a * unit + 1) / unit, r)
        hit = todo & (r >= a) & (r <= b)
        out[hit] = r[hit]
        todo &= ~hit
    return out


def atom_cells(masses: np.ndarray) -> np.ndarray:
    """The leaves of a released marginal that are atoms: mass above :data:`ATOM_RATIO` times
    each neighbour's (a missing neighbour at the bounds counts as 0); none below
    :data:`ATOM_MIN_LEAVES` leaves."""
    m = np.clip(np.asarray(masses, dtype=np.float64), 0.0, None)
    if len(m) < ATOM_MIN_LEAVES:
        return np.zeros(len(m), dtype=bool)
    left = np.concatenate(([0.0], m[:-1]))
    right = np.concatenate((m[1:], [0.0]))
    return (m > 0) & (m > ATOM_RATIO * np.maximum(left, right))  # type: ignore[no-any-return]


def _atom_values(spec: FloatColumn, cells: np.ndarray, leaves: int) -> np.ndarray:
    """The encoded coordinates of the roundest values of the leaves ``cells`` of a float
    column's ``leaves``: inside each leaf, decoding (``lo + u (hi - lo)``) to the value itself."""
    lo, hi = float(spec.lower), float(spec.upper)
    span = hi - lo
    a = lo + cells / leaves * span
    b = lo + (cells + 1) / leaves * span
    r = roundest_values(a, np.minimum(b, hi))
    u = (r - lo) / span
    for _ in range(4):  # the float round trip: nudge u until it decodes to r (a few ulps)
        d = lo + u * span
        u = np.where(d < r, np.nextafter(u, 2.0), np.where(d > r, np.nextafter(u, -1.0), u))
    return np.clip(u, cells / leaves, (cells + 1) / leaves)  # type: ignore[no-any-return]


def _rank_match(
    u: np.ndarray,
    marginals: TableMarginals,
    c: int,
    rng: RandomSource,
    spec: object = None,
) -> np.ndarray:
    """``u``'s ranks (random ties) mapped onto column ``c``'s released quantiles; with a
    :class:`~opendp_wasserstein.tables.schema.FloatColumn` ``spec``, the values in an atom leaf
    (:func:`atom_cells`) at the leaf's roundest value (:func:`_atom_values`)."""
    m = len(u)
    if m == 0:
        return u
    order = _rank_order(u, rng.uniform(m))
    out = np.empty(m)
    out[order] = marginals.quantiles(c, (np.arange(m) + 0.5) / m)
    if isinstance(spec, FloatColumn):
        atoms = atom_cells(marginals.masses[c])
        if atoms.any():
            leaves = len(atoms)
            cell = np.clip(np.floor(out * leaves).astype(np.int64), 0, leaves - 1)
            hit = atoms[cell]
            at = np.flatnonzero(atoms)
            where = np.full(leaves, np.nan)
            where[at] = _atom_values(spec, at.astype(np.float64), leaves)
            out[hit] = where[cell[hit]]
    return out


def calibrate(
    points: np.ndarray,
    enc: TableEncoding,
    marginals: TableMarginals,
    rng: RandomSource,
    kinds: Sequence[str] = CALIBRATE_KINDS,
    copy: bool = True,
) -> np.ndarray:
    """The synthetic points (encoded, in the table's cube) matched to the DP marginals.

    :param points: ``(m, D)`` synthetic points of the encoding (a DP release; not modified
        unless ``copy=False``; clipped into the cube, NaN read as 1/2 as the decoding does)
    :param enc: the encoding
    :param marginals: the DP first look
    :param rng: the randomness of the tie-breaks and re-labels
    :param kinds: which of :data:`CALIBRATE_KINDS` to match
    :param copy: ``False``: a float64 ``points`` is calibrated in place and returned (the
        caller's draw, read no more: no copy of the block)
    :return: a new ``(m, D)`` array (``points`` itself with ``copy=False`` and float64 input)
    """
    bad = [k for k in kinds if k not in CALIBRATE_KINDS]
    if bad:
        raise ValueError(f"kinds must be among {CALIBRATE_KINDS}, got {bad}")
    out = np.array(points, dtype=np.float64, copy=True) if copy else np.asarray(points, np.float64)
    np.copyto(out, 0.5, where=np.isnan(out))
    np.clip(out, 0.0, 1.0, out=out)  # +-inf to 1 and 0, as nan_to_num then clip
    m = out.shape[0]
    for c, (p, freq, miss) in enumerate(
        zip(marginals.plans, marginals.masses, marginals.missing, strict=True)
    ):
        if p.kind == "category":
            if "category" in kinds and m:
                b = category_boundaries(p.cells)
                codes = enc._lookup(out[:, p.value_axis], p.cells)
                new = _relabel(codes, largest_remainder(freq, m), rng)
                changed = new != codes
                out[changed, p.value_axis] = ((b[:-1] + b[1:]) / 2)[new[changed]]
            continue
        if p.missing_axis is not None:
            ma = p.axes[p.missing_axis]
            codes = (out[:, ma] >= 0.5).astype(np.int64)
            if "missing" in kinds and m:
                new = _relabel(codes, largest_remainder(np.array([1.0 - miss, miss]), m), rng)
                out[:, ma] = np.where(new == 1, 0.75, 0.25)
                out[new == 1, p.value_axis] = 0.5
                codes = new
            present = codes == 0
        else:
            present = np.ones(m, dtype=bool)
        if "numeric" in kinds:
            out[present, p.value_axis] = _rank_match(
                out[present, p.value_axis], marginals, c, rng, enc.schema[p.name]
            )
    return out
