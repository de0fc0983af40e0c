"""Public candidate sets: validation and the nearest-candidate projection.

A candidate set ``C`` is a public ``(k, p)`` float array: ``k >= 1`` distinct rows with finite
entries.  The projection sends every data row to one of its nearest candidates in the ground
metric (``"l1"``, ``"l2"`` or ``"linf"``; the table metric is ``"linf"`` on the one-hot
embedding).  It is computed with scipy's KD-tree (:class:`scipy.spatial.cKDTree`), in chunks of
rows, so ``n = 10^6`` rows against ``k = 10^5`` candidates needs only ``O(k + chunk)`` memory.

**Ties are exact and spread evenly** (:class:`NearestCandidates`; proof:
``docs/proofs/tree_projection.rst``, "Ties").  The *tie set* ``T(x)`` of a row is the set of
candidates at exactly the smallest real distance (the data and the candidates are floats, i.e.
exact dyadic rationals, and the comparison is exact: the KD-tree's float distances only collect
the candidates within a proven rounding error of the smallest one, which are then compared in
exact arithmetic).  A row with a non-finite coordinate is equally far from every candidate,
``T(x) = C``.  The ``g`` rows that share a tie set of ``t`` candidates are dealt round-robin
over it: every member gets ``floor(g/t)`` or ``ceil(g/t)`` of them, within one of the even split
``g/t``.  Which members get the ``g mod t`` extra ones is fixed by the candidates' *values*
(their lexicographic order, rotated by a hash of the tie set), never by their row numbers, so a
permutation of the candidates permutes the projected histogram and nothing else.  Adding one
row to the data adds one unit to one candidate of the histogram, so the projection has the
stability of a row-wise map (``d_out = d_in``) and every count built on it stays an integer.

Everything here is data-independent except :meth:`NearestCandidates.query`, whose error
messages name only the parameter.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from opendp_wasserstein.core.optional import lazy_module

if TYPE_CHECKING:
    from scipy import spatial
else:
    spatial = lazy_module("scipy.spatial")  # imported on first use: 0.36 s of start-up

__all__ = [
    "GROUND_METRICS",
    "Tally",
    "check_candidates",
    "check_candidate_dims",
    "check_multiset_size",
    "check_ground_metric",
    "NearestCandidates",
]

#: the supported ground metrics and their Minkowski exponents (cKDTree's ``p``)
GROUND_METRICS: dict[str, float] = {"l1": 1.0, "l2": 2.0, "linf": math.inf}

#: rows per KD-tree query (bounds the memory of one query to a few MB)
DEFAULT_CHUNK = 1 << 16

#: at most this many (row, candidate) entries in one re-query or exact comparison of tied rows
PAIR_BUDGET = 1 << 20

#: the key of the tie set of every candidate
ALL = b"*"


def check_ground_metric(metric: Any, name: str = "metric") -> str:
    """One of ``"l1"``, ``"l2"``, ``"linf"``, or a ``ValueError`` naming ``name``."""
    if not isinstance(metric, str) or metric not in GROUND_METRICS:
        raise ValueError(f"{name} must be one of {tuple(GROUND_METRICS)}, got {metric!r}")
    return metric


def check_multiset_size(m: Any, name: str = "m") -> int:
    """The output size ``m``: an integer ``>= 1``."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"{name} must be >= 1, got {m}")
    return int(m)


#: candidate entries are bounded so that no distance overflows, and distinct candidates must be
#: farther apart than this (relative to their magnitude) so that no distance is subnormal
CANDIDATE_MAX, CANDIDATE_MIN_GAP = 1e150, 1e-150


def check_candidates(candidates: Any, name: str = "candidates") -> np.ndarray:
    """A read-only ``(k, p)`` float64 copy of a public candidate set.

    :raises ValueError: not two-dimensional, no rows (``k = 0``), no columns, non-finite
        entries, or two equal rows (duplicates make the nearest candidate ambiguous and the
        candidate metric degenerate)
    """
    try:
        arr = np.array(candidates, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array of shape (k, p)") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-dimensional array of shape (k, p), got {arr.ndim} dimensions"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least one row (k >= 1), got k = 0")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or infinite entries)")
    if np.abs(arr).max() > CANDIDATE_MAX:
        raise ValueError(
            f"{name} must have entries of magnitude <= {CANDIDATE_MAX:g} (distances must not "
            "overflow)"
        )
    if arr.shape[0] > 1:
        order = np.lexsort(arr.T[::-1])
        srt = arr[order]
        same = np.all(srt[1:] == srt[:-1], axis=1)
        if np.any(same):
            first = int(np.flatnonzero(same)[0])
            i, j = sorted((int(order[first]), int(order[first + 1])))
            raise ValueError(f"{name} must be distinct: rows {i} and {j} are equal")
        # tree builders divide by distances: distinct rows must not be subnormally close
        nearest_gap = spatial.cKDTree(arr).query(arr, k=2, p=np.inf)[0][:, 1]
        if nearest_gap.min() < CANDIDATE_MIN_GAP * max(1.0, float(np.abs(arr).max())):
            raise ValueError(
                f"{name} must not hold rows closer than {CANDIDATE_MIN_GAP:g} (relative) to "
                "each other"
            )
    arr = np.ascontiguousarray(arr)
    arr.setflags(write=False)
    return arr


def check_candidate_dims(candidates: np.ndarray, d: int, name: str = "candidates") -> None:
    """The candidates must have the data's ``d`` columns."""
    if candidates.shape[1] != d:
        raise ValueError(
            f"{name} must have {d} columns (the input_domain's num_columns), got "
            f"{candidates.shape[1]}"
        )


def _two_diff(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a - b = s + e`` exactly, ``s = fl(a - b)`` (Knuth's TwoSum; no overflow here: the
    candidates are bounded by ``CANDIDATE_MAX``)."""
    s = a - b
    bb = s - a
    e = (a - (s - bb)) + (-b - bb)
    return s, e


def _exact_ints(v: np.ndarray) -> np.ndarray:
    """Every float of ``v`` times ``2^1126``, as an exact Python integer (object array)."""
    mant, expo = np.frexp(v)
    m = (mant * 2.0**53).astype(np.int64).astype(object)
    return m * (np.full(v.shape, 2, dtype=object) ** (expo.astype(np.int64) + 1073).astype(object))


def _row_min_mask(keys: tuple[np.ndarray, ...], ptr: np.ndarray, row_of: np.ndarray) -> np.ndarray:
    """The entries of each CSR row (``ptr``) whose key is the row's lexicographic minimum."""
    keep = np.ones(row_of.size, dtype=bool)
    for key in keys:
        big = np.where(keep, key, key.max() if key.dtype == object else np.inf)
        low = np.minimum.reduceat(big, ptr[:-1])
        keep &= key == low[row_of]
    return keep


@dataclass
class Tally:
    """The projection of some rows, before their ties are dealt: the histogram of the rows with
    one nearest candidate, and for every tie set (its key) its members and its number of rows.
    Tallies of disjoint blocks of rows add up (:meth:`merge`); :meth:`NearestCandidates.histogram`
    deals the ties of the whole."""

    single: np.ndarray
    groups: dict[bytes, list[Any]] = field(default_factory=dict)  # key -> [members, rows]

    def merge(self, other: Tally) -> Tally:
        out = Tally(self.single + other.single, {k: [v[0], v[1]] for k, v in self.groups.items()})
        for key, (members, rows) in other.groups.items():
            if key in out.groups:
                out.groups[key][1] += rows
            else:
                out.groups[key] = [members, rows]
        return out


class NearestCandidates:
    """The nearest-candidate projection onto a public candidate set, ties exact and spread
    evenly (module docstring).

    :param candidates: a ``(k, p)`` array (validated with :func:`check_candidates`)
    :param metric: ``"l1"``, ``"l2"`` (default) or ``"linf"``
    :param chunk: rows per KD-tree query
    """

    def __init__(self, candidates: Any, metric: str = "l2", chunk: int = DEFAULT_CHUNK) -> None:
        self.candidates = check_candidates(candidates)
        self.metric = check_ground_metric(metric)
        self.p = GROUND_METRICS[self.metric]
        self.k = int(self.candidates.shape[0])
        self.chunk = int(chunk)
        self._tree = spatial.cKDTree(self.candidates)
        dim = self.candidates.shape[1]
        # the KD-tree's float distance is within (dim + 2) u relative (and, for l2, an underflow
        # error far below 2^-500 sqrt(dim)) of the real one: candidates within twice that of the
        # smallest float distance may tie and are compared exactly
        self._slack = 8.0 * (dim + 4) * 2.0**-53
        self._eta = math.sqrt(dim) * 2.0**-500
        # the value order of the candidates (their rank among the sorted rows): ties are dealt
        # by it, so the row numbers of the candidates never matter
        rank = np.empty(self.k, dtype=np.int64)
        rank[np.lexsort(self.candidates.T[::-1])] = np.arange(self.k)
        self._rank = rank
        self._seq: dict[bytes, np.ndarray] = {}
        self._box = (self.candidates.min(axis=0), self.candidates.max(axis=0))

    # -- the tie sets ---------------------------------------------------------------------

    def _check(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.candidates.shape[1]:
            raise ValueError(f"data must have shape (n, {self.candidates.shape[1]})")
        return x

    def _within(self, x: np.ndarray, tol: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """CSR (``ptr``, ``members``) of the candidates at float distance ``<= tol[i]`` of every
        row ``x[i]`` (re-queried with twice as many neighbours until the farthest one returned is
        beyond ``tol``)."""
        r = x.shape[0]
        row_parts, mem_parts = [], []
        # every candidate is collected for a row so far out that its float distances overflow,
        # and (l_inf) for a row whose farthest possible float distance, to the candidates'
        # bounding box, is within tol (rounding is monotone, so no candidate's float distance
        # exceeds it): the all-ties of the table metric, with no KD-tree query
        everyone = ~np.isfinite(tol)
        if self.metric == "linf" and r:
            lo_c, hi_c = self._box
            far = np.maximum(np.abs(x - lo_c), np.abs(x - hi_c)).max(axis=1)
            everyone |= far <= tol
        huge = np.flatnonzero(everyone)
        row_parts.append(np.repeat(huge, self.k))
        mem_parts.append(np.tile(np.arange(self.k, dtype=np.int64), huge.size))
        pending = np.flatnonzero(~everyone)
        kk = min(8, self.k)
        while pending.size:
            step = max(1, PAIR_BUDGET // kk)
            still = []
            for lo in range(0, pending.size, step):
                rows = pending[lo : lo + step]
                dt, it = self._tree.query(x[rows], k=kk, p=self.p, workers=-1)
                done = (dt[:, -1] > tol[rows]) | (kk == self.k)
                inside = (dt[done] <= tol[rows[done], None]) & (it[done] < self.k)
                row_parts.append(np.repeat(rows[done], inside.sum(axis=1)))
                mem_parts.append(it[done][inside].astype(np.int64))
                still.append(rows[~done])
            pending = np.concatenate(still)
            kk = min(2 * kk, self.k)
        row_of = np.concatenate(row_parts)
        order = np.argsort(row_of, kind="stable")
        ptr = np.concatenate(([0], np.cumsum(np.bincount(row_of, minlength=r))))
        return ptr, np.concatenate(mem_parts)[order]

    def _exact_nearest(self, x: np.ndarray, ptr: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Among the collected candidates of every row (CSR), those at the exactly smallest
        distance (a mask over ``members``)."""
        r = x.shape[0]
        sizes = np.diff(ptr)
        row_of = np.repeat(np.arange(r), sizes)
        keep = np.zeros(members.size, dtype=bool)
        dim = self.candidates.shape[1]
        # whole rows in batches of at most PAIR_BUDGET (row, candidate, coordinate) entries
        bounds = [0]
        cum = ptr[1:] * dim
        while bounds[-1] < r:
            nxt = int(np.searchsorted(cum, ptr[bounds[-1]] * dim + PAIR_BUDGET, side="right"))
            bounds.append(min(r, max(nxt, bounds[-1] + 1)))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            lo, hi = int(ptr[a]), int(ptr[b])
            sub_ptr = ptr[a : b + 1] - lo
            sub_row = row_of[lo:hi] - a
            xs = x[row_of[lo:hi]]
            cs = self.candidates[members[lo:hi]]
            if self.metric == "linf":
                # |x_i - c_i| = |s + e| exactly, ordered as the pair (|s|, sign(s) e); the
                # distance is the largest coordinate in that order
                s, e = _two_diff(xs, cs)
                neg = s < 0
                a_abs, b_err = np.abs(s), np.where(neg, -e, e)
                top = a_abs.max(axis=1)
                err = np.where(a_abs == top[:, None], b_err, -np.inf).max(axis=1)
                keys: tuple[np.ndarray, ...] = (top, err)
            else:
                keep[lo:hi] = self._exact_sum_nearest(xs, cs, sub_ptr, sub_row)
                continue
            keep[lo:hi] = _row_min_mask(keys, sub_ptr, sub_row)
        return keep

    def _exact_sum_nearest(
        self, xs: np.ndarray, cs: np.ndarray, ptr: np.ndarray, row_of: np.ndarray
    ) -> np.ndarray:
        """:meth:`_exact_nearest` for l1 and l2 (squared) distances: in floats where every step
        of their computation is exact (checked by error-free transformations: integer-valued
        data, say), else in exact integer arithmetic.  Overflow in the float test is expected
        for large values (they take the integer path); numpy's warnings are silenced, since
        whether one appears would depend on a record's value."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self._exact_sum_nearest_quiet(xs, cs, ptr, row_of)

    def _exact_sum_nearest_quiet(
        self, xs: np.ndarray, cs: np.ndarray, ptr: np.ndarray, row_of: np.ndarray
    ) -> np.ndarray:
        s, e = _two_diff(xs, cs)
        exact = e == 0
        a = np.abs(s)
        if self.metric == "l1":
            terms = a
        else:  # Dekker's product: a * a is exact iff its error term is 0 (in range)
            terms = a * a
            big = a * 134217729.0
            hi = big - (big - a)
            lo = a - hi
            err = ((hi * hi - terms) + 2.0 * hi * lo) + lo * lo
            exact &= (err == 0) & ((a == 0) | ((a > 2.0**-480) & (a < 2.0**480)))
        ok = exact.all(axis=1)
        acc = terms[:, 0].copy()
        for j in range(1, terms.shape[1]):
            t = acc + terms[:, j]
            bb = t - acc
            ok &= ((acc - (t - bb)) + (terms[:, j] - bb)) == 0
            acc = t
        row_ok = np.logical_and.reduceat(ok, ptr[:-1])
        pair_ok = row_ok[row_of]
        keep = np.zeros(row_of.size, dtype=bool)
        for use, fast in ((pair_ok, True), (~pair_ok, False)):
            if not use.any():
                continue
            rows = np.flatnonzero(np.bincount(row_of[use], minlength=ptr.size - 1))
            sizes = np.diff(ptr)[rows]
            sub_ptr = np.concatenate(([0], np.cumsum(sizes)))
            sub_row = np.repeat(np.arange(rows.size), sizes)
            if fast:
                keys: tuple[np.ndarray, ...] = (acc[use],)
            else:
                diff = _exact_ints(xs[use]) - _exact_ints(cs[use])
                keys = (
                    np.abs(diff).sum(axis=1) if self.metric == "l1" else (diff * diff).sum(axis=1),
                )
            keep[use] = _row_min_mask(keys, sub_ptr, sub_row)
        return keep

    def _tie_sets(
        self, x: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[bytes, np.ndarray]]]:
        """For one chunk: ``best`` (the nearest candidate of every row with one, else -1), the
        rows with ties (increasing), the tie set of each (an index into ``sets``) and the
        distinct tie sets (key, members sorted by index)."""
        n = x.shape[0]
        best = np.full(n, -1, dtype=np.int64)
        none = np.zeros(0, dtype=np.int64)
        if self.k == 1:
            best[:] = 0
            return best, none, none, []
        finite = np.isfinite(x).all(axis=1)
        rows = np.flatnonzero(finite)
        dist, idx = self._tree.query(x[rows], k=2, p=self.p, workers=-1)
        tol = dist[:, 0] * (1.0 + self._slack) + self._eta
        alone = dist[:, 1] > tol
        best[rows[alone]] = idx[alone, 0]
        maybe = rows[~alone]
        ptr, members = self._within(x[maybe], tol[~alone])
        keep = self._exact_nearest(x[maybe], ptr, members)
        row_of = np.repeat(np.arange(maybe.size), np.diff(ptr))[keep]
        kept = members[keep]
        sizes = np.bincount(row_of, minlength=maybe.size)
        one = sizes == 1
        first = np.concatenate(([0], np.cumsum(sizes)))[:-1]
        best[maybe[one]] = kept[first[one]]
        # rows tied with every candidate (a non-finite coordinate: equally far from all)
        every = np.concatenate((maybe[sizes == self.k], np.flatnonzero(~finite)))
        part = (~one) & (sizes < self.k)
        sets: list[tuple[bytes, np.ndarray]] = []
        group_rows, group_ids = [every], [np.zeros(every.size, dtype=np.int64)]
        if every.size:
            sets.append((ALL, np.arange(self.k)))
        if part.any():
            # the tie sets of the other tied rows, padded to one width, grouped by np.unique
            sel = np.flatnonzero(part)
            on = np.isin(row_of, sel)
            r_of = np.searchsorted(sel, row_of[on])
            width = int(sizes[sel].max())
            pos = np.arange(r_of.size) - np.concatenate(([0], np.cumsum(sizes[sel])))[:-1][r_of]
            pad = np.full((sel.size, width), -1, dtype=np.int64)
            pad[r_of, pos] = kept[on]
            pad = np.sort(np.where(pad < 0, np.iinfo(np.int64).max, pad), axis=1)
            uniq, inverse = np.unique(pad, axis=0, return_inverse=True)
            base = len(sets)
            for u in uniq:
                mem = u[u != np.iinfo(np.int64).max]
                sets.append((mem.tobytes(), mem))
            group_rows.append(maybe[sel])
            group_ids.append(base + inverse.reshape(-1))
        tied = np.concatenate(group_rows)
        gid = np.concatenate(group_ids)
        order = np.argsort(tied, kind="stable")
        return best, tied[order], gid[order], sets

    def _sequence(self, key: bytes, members: np.ndarray) -> np.ndarray:
        """The order in which a tie set is dealt: its members by value (lexicographic order of
        the candidate rows), rotated by a hash of their value ranks (public; no row number)."""
        seq = self._seq.get(key)
        if seq is None:
            by_value = members[np.argsort(self._rank[members], kind="stable")]
            digest = hashlib.blake2b(self._rank[by_value].tobytes(), digest_size=8).digest()
            seq = np.roll(by_value, -(int.from_bytes(digest, "little") % by_value.size))
            seq.setflags(write=False)
            self._seq[key] = seq
        return seq

    # -- the projection -------------------------------------------------------------------

    def query(self, x: Any) -> np.ndarray:
        """One nearest candidate for every row of ``x`` (int64): the row's nearest candidate, or,
        for the ``j``-th row (in row order) of a tie set dealt in the order ``s``, ``s[j mod t]``.
        Its histogram is :meth:`histogram` of :meth:`tally` (a function of the multiset of rows)."""
        x = self._check(x)
        out = np.empty(x.shape[0], dtype=np.int64)
        dealt: dict[bytes, int] = {}
        for start in range(0, x.shape[0], self.chunk):
            best, tied, gid, sets = self._tie_sets(x[start : start + self.chunk])
            order = np.argsort(gid, kind="stable")
            bounds = np.searchsorted(gid[order], np.arange(len(sets) + 1))
            for g, (key, members) in enumerate(sets):  # a loop over tie sets, not rows
                rows = tied[order[bounds[g] : bounds[g + 1]]]
                seq = self._sequence(key, members)
                j0 = dealt.get(key, 0)
                best[rows] = seq[(j0 + np.arange(rows.size)) % seq.size]
                dealt[key] = j0 + rows.size
            out[start : start + self.chunk] = best
        return out

    def tally(self, x: Any) -> Tally:
        """The :class:`Tally` of the rows of ``x`` (what a worker of a distributed release
        sends)."""
        x = self._check(x)
        single = np.zeros(self.k, dtype=np.int64)
        groups: dict[bytes, list[Any]] = {}
        for start in range(0, x.shape[0], self.chunk):
            best, _, gid, sets = self._tie_sets(x[start : start + self.chunk])
            single += np.bincount(best[best >= 0], minlength=self.k)
            counts = np.bincount(gid, minlength=len(sets))
            for (key, members), c in zip(sets, counts.tolist(), strict=True):
                if key in groups:
                    groups[key][1] += c
                else:
                    groups[key] = [members, c]
        return Tally(single, groups)

    def histogram(self, tally: Tally) -> np.ndarray:
        """The projected histogram of a :class:`Tally`: the ``g`` rows of a tie set of ``t``
        give ``floor(g/t)`` to every member and one more to the first ``g mod t`` of its
        dealing order (the histogram of :meth:`query`)."""
        h = np.array(tally.single, dtype=np.int64, copy=True)
        for key in sorted(tally.groups):
            members, rows = tally.groups[key]
            seq = self._sequence(key, np.asarray(members, dtype=np.int64))
            h[seq] += rows // seq.size
            h[seq[: rows % seq.size]] += 1
        return h
