"""The PMM family on a Dask cluster: Pruned-PMM, PMM and Adaptive Pruned-PMM.

The plan (``r`` the depth, ``j0`` the split level, ``P`` the number of parts):

1. **Count** (one task per input block, or with a public size that fits
   :data:`HOLD_BYTES_PER_WORKER` one per group of blocks that keeps its rows on its worker for
   step 3, :class:`HeldRows`): the level-``j0`` Morton prefix of every row, its histogram
   (``2^j0`` counts) and the number of rows; the driver sums them.
2. **Top of the tree** (driver): the root mass and Algorithms 1-2 for levels ``< j0`` with the
   traversal code of the in-memory path
   (:func:`~opendp_wasserstein.hierarchy.traversal.expand_levels`), its exact counts read off the
   histogram: the active level-``j0`` cells and their masses.
3. **Partition** (one task per block): every row goes to the part that owns its level-``j0``
   cell; parts own contiguous ranges of cells, cut so that they hold about as many rows.
4. **Subtrees** (one task per part): the count tree of the part's rows, then Algorithms 1-2
   below its active level-``j0`` cells from their masses, then the synthesis of its leaves,
   written as one Parquet part.  The adaptive mechanism first reduces the parts' statistic of
   levels ``>= j0`` (every level-``j`` cell, ``j >= j0``, lies in one part;
   :func:`part_statistic`) for the scores, selects on the driver, then expands the chosen
   release on the same trees, cut on exact counts and never rebuilt (:func:`expand_task`), and
   writes its parts on the noisy cuts (:func:`write_task`): the same number of tasks whatever
   the cuts.
   Least squares (:mod:`opendp_wasserstein.hierarchy.least_squares`) splits step 4 in two passes:
   the parts expand by the paper's rule and run the bottom-up of their subtrees
   (:func:`forest_task`), the driver combines their roots' children sums with its own levels
   and runs the top-down with the integer split to level ``j0``, then the parts run it in their
   subtrees from their roots' estimates, variances and masses (:func:`descend_task`).

Every node's noisy count and coin are node-addressed
(:class:`~opendp_wasserstein.noise.node_randomness.KeyedNodeNoise`, one key per release), and a
node's corrected mass depends only on its parent's mass and its own and its sibling's noisy counts,
so the leaves are exactly those of the in-memory traversal under the same key.  The points
(post-processing) come from the release's one
:class:`~opendp_wasserstein.hierarchy.placement.PlacementStream`, addressed by the index of a point
in the leaf order of the whole release: a part starts at the total mass of the parts before it,
known on the driver from the level-``j0`` masses.  The full-tree PMM reduces the level-``r``
histogram instead (its ``2^r`` nodes are on the driver in memory too) and writes the leaves'
points in parallel.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opendp_wasserstein import runtime
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.core.plan import AdaptivePlan, PmmPlan, ScoresPlan
from opendp_wasserstein.distributed._output import PartWriter
from opendp_wasserstein.distributed._source import (
    ArrayBlock,
    DelayedBlock,
    PublishedBlock,
    QuietRows,
    read_block,
)
from opendp_wasserstein.hierarchy.cells import (
    CountTree,
    capped_sums_of_counts,
    check_axes,
    imbalance_of_counts,
    row_codes,
)
from opendp_wasserstein.hierarchy.least_squares import (
    Forest,
    VisitedLevel,
    descend,
    forest,
    noise_variance,
    top_masses,
)
from opendp_wasserstein.hierarchy.placement import PlacementStream, place_points
from opendp_wasserstein.hierarchy.traversal import (
    Frontier,
    LeafMasses,
    expand_levels,
    full_consistency,
    least_squares_leaves,
    noise_draw,
    prefix_cells,
    traversal_root,
    tree_counter,
)
from opendp_wasserstein.noise._source import NOISE_STREAM, PLACEMENT_STREAM, as_random_source
from opendp_wasserstein.noise.node_noise import add_noise
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise

__all__ = ["run_pmm", "run_adaptive", "split_level"]

Axes = tuple[int, ...] | None

#: the split level holds at least this many level-j0 cells per part (balance), at most 2^MAX
CELLS_PER_PART = 64
MAX_SPLIT_LEVEL = 20
#: rows per part when the driver's leaves are written in parallel
ROWS_PER_PART = 1 << 22
#: the blocks are cut by part in at least this many groups (two per worker on large clusters):
#: groups x parts pieces move between workers, each a task
SPLIT_GROUPS = 16


# --------------------------------------------------------------------------------------------
# worker tasks (module-level functions of picklable arguments)
# --------------------------------------------------------------------------------------------


def rows_of(block: Any, d: int, nan: bool) -> np.ndarray:
    """The rows of a block, checked as the in-memory path checks its array (messages name the
    parameter, never a value)."""
    try:
        x = read_block(block)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"data must be numeric ({type(err).__name__} while reading a block)"
        ) from None
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"data must have {d} columns")
    if not nan and bool(np.isnan(x).any()):
        raise ValueError("data must not contain NaN: the input domain has nan=False")
    return x


def level_prefix(x: np.ndarray, box: Box, level: int, axes: Axes = None) -> np.ndarray:
    """The level-``level`` Morton prefix of every row (int64); the first ``level`` bits of the code
    at any depth ``>= level`` (split order ``axes``, None: cyclic)."""
    if level == 0:
        return np.zeros(x.shape[0], dtype=np.int64)
    word = row_codes(
        x, box, level, [0], axes=None if axes is None else check_axes(axes, x.shape[1], level)
    )[0]
    return (word >> np.uint64(64 - level)).astype(np.int64)


def count_task(
    block: Any, d: int, nan: bool, box: Box, level: int, axes: Axes = None
) -> tuple[int, np.ndarray]:
    """Rows and histogram of the level-``level`` prefixes of one block (dense, ``2^level``)."""
    x = rows_of(block, d, nan)
    return int(x.shape[0]), np.bincount(level_prefix(x, box, level, axes), minlength=1 << level)


def rows_task(block: Any, d: int, nan: bool) -> int:
    """The number of rows of one block (checked as every other task checks them)."""
    return int(rows_of(block, d, nan).shape[0])


def sparse_count_task(
    block: Any, d: int, nan: bool, box: Box, level: int, axes: Axes = None
) -> tuple[int, np.ndarray, np.ndarray]:
    """Rows and the occupied level-``level`` prefixes with their counts (sorted)."""
    x = rows_of(block, d, nan)
    cells, counts = np.unique(level_prefix(x, box, level, axes), return_counts=True)
    return int(x.shape[0]), cells, counts


def part_of_cells(bounds: np.ndarray, level: int) -> np.ndarray:
    """The part of every level-``level`` cell (uint16): part ``q`` owns cells ``bounds[q] ..
    bounds[q + 1] - 1``."""
    if bounds.size > 1 << 16:  # pragma: no cover - at most 2^20 cells, 64 a part
        raise ValueError("at most 2^16 parts")
    sizes = np.diff(np.append(bounds, 1 << level))
    return np.repeat(np.arange(bounds.size, dtype=np.uint16), sizes)


def split_task(
    blocks: list[Any],
    d: int,
    nan: bool,
    box: Box,
    level: int,
    bounds: np.ndarray,
    axes: Axes = None,
) -> tuple[np.ndarray, ...]:
    """The rows of a group of blocks cut by part: part ``q`` owns level-``level`` cells
    ``bounds[q] .. bounds[q + 1] - 1``."""
    out: list[list[np.ndarray]] = [[] for _ in range(bounds.size)]
    owner = part_of_cells(bounds, level)
    for block in blocks:
        x = rows_of(block, d, nan)
        dest = owner[level_prefix(x, box, level, axes)]
        # a counting sort: numpy's stable sort of 16-bit keys is a radix sort (no n log n)
        order = np.argsort(dest, kind="stable")
        cuts = np.cumsum(np.bincount(dest, minlength=bounds.size))[:-1]
        for q, piece in enumerate(np.split(x[order], cuts)):
            if piece.size:
                out[q].append(piece)
        del x, order, dest
    return tuple(np.concatenate(p) if p else np.zeros((0, d)) for p in out)


#: the count pass keeps the rows (:class:`HeldRows`) only when the public size says they take at
#: most this many bytes a worker (``n (8 d + 4) / workers``); above it, or with a private size,
#: the partition reads the source again.  Measured at 10^8 x 3 on 2 workers: held rows took the
#: workers' peaks from 2.2 to 2.5 GB (the pieces and the trees coexist when the rows are cut)
HOLD_BYTES_PER_WORKER = 1 << 28


def holds(size: int | None, d: int, workers: int) -> bool:
    """Whether the count pass keeps the rows: a public ``size`` whose rows take at most
    :data:`HOLD_BYTES_PER_WORKER` a worker (a function of public values only)."""
    return size is not None and size * (8 * d + 4) <= HOLD_BYTES_PER_WORKER * max(1, workers)


class HeldRows:
    """A group of blocks' rows (input order) with their level-``j0`` prefixes, held on the
    worker that read them from the count pass to the partition, so that the source is read
    once.  ``__sizeof__`` is the arrays' (Dask's memory accounting: it can spill them), and the
    ``repr`` quotes nothing (Dask logs messages at DEBUG level)."""

    __slots__ = ("rows", "prefix")

    def __init__(self, rows: np.ndarray, prefix: np.ndarray) -> None:
        self.rows = rows
        self.prefix = prefix

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + int(self.rows.nbytes + self.prefix.nbytes)

    def __repr__(self) -> str:
        return "HeldRows(...)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (HeldRows, (self.rows, self.prefix))


def hold_task(
    blocks: list[Any], d: int, nan: bool, box: Box, level: int, axes: Axes = None
) -> HeldRows:
    """The count pass of a group of blocks: its rows, checked, and their level-``level``
    prefixes (uint32: ``level <= 20``), kept on the worker."""
    xs = [rows_of(block, d, nan) for block in blocks]
    x = np.concatenate(xs) if xs else np.zeros((0, d))
    del xs
    return HeldRows(x, level_prefix(x, box, level, axes).astype(np.uint32))


def held_count_task(held: HeldRows, level: int) -> tuple[int, np.ndarray]:
    """Rows and the level-``level`` histogram of a held group (dense, ``2^level``)."""
    return int(held.rows.shape[0]), np.bincount(held.prefix, minlength=1 << level)


def held_split_task(held: HeldRows, level: int, bounds: np.ndarray) -> tuple[np.ndarray, ...]:
    """A held group's rows cut by part (:func:`split_task` without reading the source again)."""
    dest = part_of_cells(bounds, level)[held.prefix]
    order = np.argsort(dest, kind="stable")  # a radix sort of 16-bit keys
    cuts = np.cumsum(np.bincount(dest, minlength=bounds.size))[:-1]
    del dest
    return tuple(np.split(held.rows[order], cuts))


def trim_heap() -> None:
    """Give the C heap's free memory back to the system (glibc's ``malloc_trim``; nothing
    elsewhere).  The workers of :func:`~._executor.local_client` keep glibc's dynamic ``mmap``
    threshold, so arrays of up to 32 MB come from the heap, and what the pieces and the trees'
    temporaries freed would otherwise stay in the worker's RSS while the next trees are built."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def tree_task(d: int, box: Box, depth: int, axes: Axes, *pieces: np.ndarray) -> CountTree:
    """The count tree of a part's rows (its pieces from every block)."""
    trim_heap()  # the pieces of the trees built before this one
    x = np.concatenate(pieces) if pieces else np.zeros((0, d))
    return CountTree(x, depth, box, axes=axes, keep_input=False)


def occupancy_task(tree: CountTree, start: int, stop: int) -> np.ndarray:
    """The part's occupancy of levels ``start .. stop - 1``."""
    return tree.occupancy()[start:stop]


def part_statistic(
    tree: CountTree, caps: np.ndarray, start: int, resolution: tuple[int, int] | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`~opendp_wasserstein.hierarchy.cells.capped_level_sums` of levels ``start .. L - 1``
    and, with ``resolution = (first, J)``,
    :func:`~opendp_wasserstein.hierarchy.cells.level_imbalance` of levels
    ``max(first, start) .. J - 1`` (0 elsewhere): the same exact int64 values.

    One descent visits the cells of more than ``t = min(caps) >= 1`` rows, level by level,
    vectorised over the level (:meth:`CountTree.split`): ``T[j, a] = n - sum (c_v - min(c_v,
    caps[j, a]))`` over them, as in :func:`capped_level_sums`.  The imbalance is ``I_j = n - 2
    sum min(left, right)`` over the splits of level ``j`` (the pairs of neighbours whose common
    prefix is ``j`` bits, :func:`level_imbalance`): the splits of the visited cells are read
    off the descent; the others lie in cells of at most ``t`` rows, so their smaller child,
    the distance to the nearest pair with a common prefix of at most ``j`` bits on either side,
    is found in at most ``t / 2`` vectorised steps over all of them at once.  The levels are
    public (``L``, ``J``, ``t``); the number of cells per level is not, and only sets the
    work."""
    caps = np.asarray(caps, dtype=np.int64)
    L = caps.shape[0]
    first, J = resolution if resolution is not None else (0, 0)
    first = max(first, start)
    stat = np.zeros((L, caps.shape[1]), dtype=np.int64)
    imbalance = np.zeros(J, dtype=np.int64) if resolution is not None else None
    n = tree.n
    stop = max(L, J)
    if n == 0 or stop <= start:
        return stat[start:], None if imbalance is None else imbalance[start:]
    t = int(caps.min())
    smaller = np.zeros(max(J, 1), dtype=np.int64)  # sum of min(left, right) per level
    big_splits = []  # the pairs that split a visited cell at a level in first .. J - 1
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, n, dtype=np.int64)
    for j in range(stop):  # a loop over the (public) levels; each level is vectorised
        if start <= j < L:
            c = hi - lo
            stat[j] = n - (int(c.sum()) - capped_sums_of_counts(c, caps[j]))
        if j == stop - 1 or j >= tree.depth:
            break
        mid = tree.split(j, lo, hi)
        if imbalance is not None and first <= j < J:
            inside = (mid > lo) & (mid < hi)
            smaller[j] = int(np.minimum(mid - lo, hi - mid)[inside].sum())
            big_splits.append(mid[inside] - 1)
        kids_lo = np.empty(2 * lo.size, dtype=np.int64)
        kids_hi = np.empty(2 * lo.size, dtype=np.int64)
        kids_lo[0::2], kids_lo[1::2] = lo, mid
        kids_hi[0::2], kids_hi[1::2] = mid, hi
        keep = kids_hi - kids_lo > t
        lo, hi = kids_lo[keep], kids_hi[keep]
    if imbalance is None or first >= J:
        return stat[start:], None if imbalance is None else imbalance[start:]
    lcp = tree.lcp  # pair p: rows p and p + 1
    split = np.flatnonzero((lcp >= first) & (lcp < J))
    if big_splits:
        big = np.zeros(lcp.size, dtype=bool)
        big[np.concatenate(big_splits)] = True
        split = split[~big[split]]
        del big
    # lcp with a pair of common prefix -1 at both ends (the ends of the rows)
    padded = np.concatenate(([-1], lcp.astype(np.int32), [-1]))
    level = lcp[split].astype(np.int32)
    k = 0
    while split.size:  # at most t / 2 steps: a cell of c <= t rows has a child of <= c / 2
        k += 1
        hit = (padded[split + 1 - k] <= level) | (padded[split + 1 + k] <= level)
        smaller += k * np.bincount(level[hit], minlength=smaller.size)[: smaller.size]
        split, level = split[~hit], level[~hit]
    imbalance[first:J] = n - 2 * smaller[first:J]
    return stat[start:], imbalance[start:]


def capped_task(
    tree: CountTree, caps: np.ndarray, start: int, resolution: tuple[int, int] | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """The part's capped sums of levels ``start .. L - 1`` (``caps`` of shape ``(L, k)``) and,
    with ``resolution = (first, J)``, its imbalance of levels ``start .. J - 1`` (0 below
    ``first``): :func:`part_statistic`.  The tree's positions grouped by lcp, which the
    descent built for every level (8 bytes a row), are dropped after it: the release reads
    only the levels above its depth and groups those again (a few per cent of the rows), so
    the trees held between the selection and the release keep 18 bytes a row, not 26."""
    out = part_statistic(tree, caps, start, resolution)
    tree._grouped_cache.clear()
    trim_heap()
    return out


def score_statistic(
    sp: ScoresPlan, drv: Driver, n: int, h: np.ndarray, j0: int, trees: list[Any]
) -> np.ndarray:
    """The scores' statistic of the whole data: levels above ``j0`` read off the level-``j0``
    histogram ``h``, the deeper ones reduced from the parts' trees (each such cell lies in one
    part).  The occupancy, or with ``sp.caps`` the capped sums (and with ``sp.resolution`` the
    imbalance after them), as the in-memory tree gives."""
    top = min(j0, sp.L)  # = j0: the split level is at most the deepest candidate depth
    if sp.caps is None:
        stat = np.zeros(sp.L, dtype=np.int64)
        for j in range(top):
            stat[j] = np.count_nonzero(h.reshape(1 << j, -1).sum(axis=1)) if j else int(n > 0)
        if top < sp.L:
            for part in drv.run(
                [drv.client.submit(occupancy_task, t, top, sp.L, pure=False) for t in trees],
                "occupancy",
            ):
                stat[top:] += part
        return stat
    stat = np.zeros(sp.caps.shape, dtype=np.int64)
    for j in range(top):
        stat[j] = capped_sums_of_counts(h.reshape(1 << j, -1).sum(axis=1), sp.caps[j])
    first, J = sp.resolution if sp.resolution is not None else (0, 0)
    imbalance = np.zeros(J, dtype=np.int64)
    for j in range(
        first, min(top, J)
    ):  # the children of a level-j cell, j < j0, are histogram cells
        imbalance[j] = imbalance_of_counts(h.reshape(1 << (j + 1), -1).sum(axis=1))
    if top < max(sp.L, J):
        tasks = [
            drv.client.submit(capped_task, t, sp.caps, top, sp.resolution, pure=False)
            for t in trees
        ]
        for sums, imb in drv.run(tasks, "occupancy"):
            stat[top:] += sums
            if imb is not None:
                imbalance[top:] += imb
    if sp.resolution is None:
        return stat
    return np.vstack((stat, np.repeat(imbalance[:, None], sp.caps.shape[1], axis=1)))


@dataclass(frozen=True)
class Release:
    """What every part task of one release shares (public values and the release's keys)."""

    d: int
    box: Box
    depth: int
    scales: tuple[float, ...]
    placement: str
    noise: KeyedNodeNoise
    stream: PlacementStream
    writer: PartWriter
    axes: Axes = None
    distribution: str = "laplace"
    consistency: str = "paper"
    threshold: float = 0.0

    @property
    def cut(self) -> float:
        """The threshold of the traversal itself (the paper's rule; least squares re-split
        after)."""
        return self.threshold if self.consistency == "paper" else 0.0

    @property
    def variances(self) -> tuple[float, ...]:
        return tuple(noise_variance(s, self.distribution) for s in self.scales)


@dataclass(frozen=True)
class Subtrees:
    """The active level-``level`` cells a part expands: cells, masses and Morton prefixes;
    ``start`` is the index of the part's first point in the leaf order of the whole release."""

    q: int
    level: int
    cells: np.ndarray
    mass: np.ndarray
    prefix: np.ndarray
    start: int = 0


def _expand(
    tree: CountTree, job: Subtrees, rel: Release, record: list[VisitedLevel] | None
) -> Frontier:
    """Algorithms 1-2 below the part's active cells (the paper's rule decides what is visited)."""
    t = tree if tree.depth == rel.depth else tree.truncated(rel.depth)
    if job.level:
        local = (t._words[0] >> np.uint64(64 - job.level)).astype(np.int64)
    else:
        local = np.zeros(t.n, dtype=np.int64)
    lo = np.searchsorted(local, job.prefix, side="left")
    hi = np.searchsorted(local, job.prefix, side="right")
    front = Frontier(job.level, job.cells, job.mass, (lo, hi), 0, [])
    return expand_levels(
        front,
        rel.depth,
        tree_counter(t),
        rel.scales,
        rel.noise,
        rel.cut,
        rel.distribution,
        rel.axes,
        record,
    )


def traverse_task(tree: CountTree, job: Subtrees, rel: Release, hook: Any = None) -> dict[str, Any]:
    """Algorithms 1-2 below the part's active cells, then the synthesis of its leaves (one part)."""
    if hook is not None:
        hook(job.q)
    front = _expand(tree, job, rel, None)
    leaves = LeafMasses(
        front.cells, front.mass, rel.depth, front.visited, tuple(front.active), rel.scales
    )
    written = _write_leaves(leaves, rel, job.q, job.start)
    return {
        "rows": written,
        "visited": front.visited,
        "active": front.active,
        "leaves": int(leaves.masses.size),
    }


@dataclass(frozen=True)
class PartForest:
    """A part's visited subtrees between the two least-squares passes (kept on its worker)."""

    q: int
    front: Frontier
    forest: Forest


def forest_task(tree: CountTree, job: Subtrees, rel: Release, hook: Any = None) -> PartForest:
    """Least squares, first pass of a part: its subtrees expanded by the paper's rule, then the
    bottom-up of their visited nodes."""
    if hook is not None:
        hook(job.q)
    record: list[VisitedLevel] = []
    front = _expand(tree, job, rel, record)
    return PartForest(job.q, front, forest(record, rel.variances, job.level))


def root_sums_task(part: PartForest) -> tuple[np.ndarray, np.ndarray]:
    """What the driver's bottom-up needs of a part: the children sums of its roots."""
    return part.forest.root_sums()


def descend_task(
    part: PartForest,
    h: np.ndarray,
    p: np.ndarray,
    mass: np.ndarray,
    start: int,
    rel: Release,
    hook: Any = None,
) -> dict[str, Any]:
    """Least squares, second pass of a part: the top-down and the integer split in its subtrees
    from its roots' estimates, variances and masses, then the synthesis of its leaves."""
    if hook is not None:
        hook(part.q)
    front = part.front
    leaf_mass, _, _ = descend(part.forest, h, p, mass, rel.threshold)
    keep = leaf_mass > 0
    leaves = LeafMasses(
        front.cells[keep],
        leaf_mass[keep],
        rel.depth,
        front.visited,
        tuple(front.active),
        rel.scales,
    )
    written = _write_leaves(leaves, rel, part.q, start)
    return {
        "rows": written,
        "visited": front.visited,
        "active": front.active,
        "leaves": int(leaves.masses.size),
    }


def synth_task(
    cells: np.ndarray, masses: np.ndarray, rel: Release, q: int, start: int, hook: Any = None
) -> dict[str, Any]:
    """Write the points of driver-held leaves ``cells`` (one part; ``start``: its first point's
    index in the leaf order of the release)."""
    if hook is not None:
        hook(q)
    leaves = LeafMasses(cells, masses, rel.depth, 0, (), rel.scales)
    return {
        "rows": _write_leaves(leaves, rel, q, start),
        "visited": 0,
        "active": [],
        "leaves": int(masses.size),
    }


@dataclass(frozen=True)
class PartLeaves:
    """A tree's leaves with positive mass, in leaf order, and what it records (kept on its
    worker until the parts that write them have read them)."""

    cells: np.ndarray
    masses: np.ndarray
    summary: dict[str, Any]


def expand_task(tree: CountTree, job: Subtrees, rel: Release, hook: Any = None) -> PartLeaves:
    """Algorithms 1-2 below the tree's active cells: its leaves, not written (the adaptive
    release's trees are cut on exact counts; :func:`write_task` writes by the noisy cuts)."""
    if hook is not None:
        hook(job.q)
    front = _expand(tree, job, rel, None)
    keep = front.mass > 0
    return PartLeaves(
        front.cells[keep],
        front.mass[keep],
        {"visited": front.visited, "active": front.active, "leaves": int(front.mass.size)},
    )


def descend_leaves_task(
    part: PartForest,
    h: np.ndarray,
    p: np.ndarray,
    mass: np.ndarray,
    rel: Release,
    hook: Any = None,
) -> PartLeaves:
    """Least squares, second pass of a tree (:func:`descend_task`), its leaves not written."""
    if hook is not None:
        hook(part.q)
    front = part.front
    leaf_mass, _, _ = descend(part.forest, h, p, mass, rel.threshold)
    keep = leaf_mass > 0
    return PartLeaves(
        front.cells[keep],
        leaf_mass[keep],
        {"visited": front.visited, "active": front.active, "leaves": int(keep.sum())},
    )


def write_task(
    q: int,
    lo: int,
    hi: int,
    starts: list[int],
    rel: Release,
    own: PartLeaves,
    *sources: PartLeaves,
    hook: Any = None,
) -> dict[str, Any]:
    """Part ``q`` of the output: the points ``lo .. hi - 1`` of the leaf order of the release,
    from the leaves of the trees ``sources`` (their first points at ``starts``), with what tree
    ``q`` (``own``) records.  Every leaf lies in one level-``j0`` cell and both cuts are
    between such cells, so a part takes whole leaves."""
    if hook is not None:
        hook(q)
    cells, masses = [], []
    for first, src in zip(starts, sources, strict=True):
        ends = first + np.cumsum(src.masses)
        a, b = np.searchsorted(ends, [lo, hi], side="right")
        cells.append(src.cells[a:b])
        masses.append(src.masses[a:b])
    d = own.cells.shape[1] if own.cells.ndim == 2 else rel.d
    leaves = LeafMasses(
        np.concatenate(cells) if cells else np.zeros((0, d), dtype=np.int64),
        np.concatenate(masses) if masses else np.zeros(0, dtype=np.int64),
        rel.depth,
        0,
        (),
        rel.scales,
    )
    return {"rows": _write_leaves(leaves, rel, q, lo)} | own.summary


def _write_leaves(leaves: LeafMasses, rel: Release, q: int, start: int) -> int:
    if leaves.total == 0:
        return rel.writer(q, np.zeros((0, rel.d)))
    points = place_points(
        leaves,
        rel.box,
        rel.placement,
        as_random_source(),
        rel.axes,
        stream=rel.stream,
        start=start,
        part=q,
    )
    return rel.writer(q, points)


# --------------------------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------------------------


def default_parts(n_hat: int) -> int:
    """Output parts for a release whose size is private: one per :data:`ROWS_PER_PART` rows of
    the DP count ``n_hat`` (with a public size the default is :func:`public_parts`)."""
    return max(1, -(-int(n_hat) // ROWS_PER_PART))


#: with a public size, the default output parts hold at least this many rows each (never more
#: parts than input blocks, at least two per worker when the blocks allow): measured on 2
#: workers, 10^7 rows read as 40 row groups took 81.6 s in 40 parts, 17.3-24.7 s in 10 parts
MIN_ROWS_PER_PART = 1 << 20


def public_parts(n: int, blocks: int, workers: int) -> int:
    """The default number of output parts of a release whose size ``n`` is public: one per
    :data:`MIN_ROWS_PER_PART` rows, at least two per worker, at most one per input block."""
    want = max(-(-int(n) // MIN_ROWS_PER_PART), 2 * max(1, workers))
    return max(1, min(int(blocks), want))


def split_level(parts: int, depth: int) -> int:
    """``j0``: at least :data:`CELLS_PER_PART` level-``j0`` cells per part, at most the depth."""
    want = math.ceil(math.log2(max(2, CELLS_PER_PART * parts)))
    return int(min(depth, MAX_SPLIT_LEVEL, max(1, want)))


def hist_counter(
    h: np.ndarray, top: int
) -> Callable[[int, tuple[np.ndarray, ...]], tuple[np.ndarray, tuple[np.ndarray, ...]]]:
    """The traversal counter of a level-``top`` histogram: a node's state is its Morton prefix."""
    aggregated: dict[int, np.ndarray] = {top: h}

    def level_counts(level: int) -> np.ndarray:
        if level not in aggregated:
            aggregated[level] = h.reshape(1 << level, -1).sum(axis=1)
        return aggregated[level]

    def counter(
        level: int, state: tuple[np.ndarray, ...]
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        (prefix,) = state
        kids = np.stack([2 * prefix, 2 * prefix + 1], axis=1).reshape(-1)
        return level_counts(level + 1)[kids].reshape(-1, 2), (kids,)

    return counter


def part_bounds(h: np.ndarray, parts: int) -> np.ndarray:
    """First level-``j0`` cell of every part: contiguous ranges holding about ``sum(h) / parts``
    of the masses ``h``.  Called on the *noisy* level-``j0`` masses of the release (its frontier),
    never on the exact counts when the cuts shape the output: each part writes its own output
    file, so its row count and value range would show exact quantiles of the data."""
    cum = np.cumsum(h)
    n = int(cum[-1]) if cum.size else 0
    targets = (np.arange(1, parts) * n) // parts
    cuts = np.searchsorted(cum, targets, side="right") if n else np.zeros(parts - 1, dtype=np.int64)
    return np.concatenate(([0], np.maximum.accumulate(np.minimum(cuts, h.size)))).astype(np.int64)


def noisy_part_bounds(front: Frontier, j0: int, parts: int) -> np.ndarray:
    """:func:`part_bounds` of the frontier's noisy level-``j0`` masses: a function of the
    release's noisy counts only (post-processing), so the output files' sizes and ranges are too."""
    (prefix,) = front.state
    h = np.zeros(1 << j0, dtype=np.int64)
    h[prefix] = front.mass
    return part_bounds(h, parts)


class Driver:
    """Runs tasks on a Dask client with an optional progress bar; keeps no rows.

    The chunks of a numpy source (:class:`~opendp_wasserstein.distributed._source.ArrayBlock`)
    are published on the scheduler here, once per release, under fresh names, and the tasks
    read them from there (:class:`~opendp_wasserstein.distributed._source.PublishedBlock`): no
    task graph holds a row, so the size of every graph sent to the scheduler is independent of
    ``n`` (Dask warns of a graph over ``distributed.admin.large-graph-warning-threshold``,
    10 MB, and a numpy source in the graph crossed it at 625,000 rows of ``d = 2``), and a
    task re-run after a worker was lost reads its chunk again.  :meth:`close` unpublishes them.
    A client that cannot publish (the in-process test client: no graph) takes the rows as
    they are.
    """

    def __init__(
        self, client: Any, blocks: Sequence[Any], progress: bool, hook: Any = None
    ) -> None:
        self.client = client
        self.hook = hook
        self.progress = progress
        self._blocks: list[Any] = list(blocks)
        self._published: list[str] = []
        held = [i for i, b in enumerate(self._blocks) if isinstance(b, ArrayBlock)]
        if held and hasattr(client, "publish_dataset"):
            # fresh names: a name derived from the content would name the data
            tag = uuid.uuid4().hex
            names = [f"opendp-wasserstein-rows-{tag}-{k}" for k in range(len(held))]
            client.publish_dataset(
                **{nm: QuietRows(self._blocks[i].rows) for nm, i in zip(names, held, strict=True)}
            )
            self._published = names
            for nm, i in zip(names, held, strict=True):
                self._blocks[i] = PublishedBlock(nm)

    def close(self) -> None:
        """Unpublish the chunks of a numpy source."""
        if self._published:
            self.client.unpublish_dataset(self._published)
            self._published = []

    @property
    def blocks(self) -> list[Any]:
        """Task arguments for the blocks: a reader, or (a Dask collection's partition) a fresh
        future of it, so that nothing stays in memory between the passes.
        The partitions of a pass are computed as one graph (sent once per pass)."""
        delayed = [i for i, b in enumerate(self._blocks) if isinstance(b, DelayedBlock)]
        out = list(self._blocks)
        if delayed:
            for i, future in zip(
                delayed, self.client.compute([out[i].part for i in delayed]), strict=True
            ):
                out[i] = future
        return out

    @property
    def parts(self) -> int:
        return len(self._blocks)

    def workers(self) -> int:
        """The number of workers of the cluster (0 for a client that has none)."""
        info = getattr(self.client, "scheduler_info", None)
        return len(info().get("workers", {})) if callable(info) else 0

    def split_groups(self) -> int:
        """How many groups of blocks are cut by part: :data:`SPLIT_GROUPS`, or two per worker."""
        return max(SPLIT_GROUPS, 2 * self.workers())

    def run(self, futures: list[Any], label: str) -> list[Any]:
        """Results of ``futures`` in order (a bar over them on a terminal)."""
        if self.progress:
            try:
                tqdm = import_optional("tqdm", "a progress bar").tqdm
            except ImportError:  # pragma: no cover - the progress extra is missing
                return self.client.gather(futures)
            as_completed = import_optional("distributed", "a Dask cluster").as_completed
            bar = tqdm(total=len(futures), desc=label, unit="part")
            for _ in as_completed(futures):
                bar.update(1)
            bar.close()
        return self.client.gather(futures)

    def count(
        self, plan_d: int, nan: bool, box: Box, level: int, axes: Axes = None
    ) -> tuple[int, np.ndarray]:
        futures = [
            self.client.submit(count_task, b, plan_d, nan, box, level, axes, pure=False)
            for b in self.blocks
        ]
        return self._sum_counts(futures, level)

    def hold(
        self, plan_d: int, nan: bool, box: Box, level: int, axes: Axes = None
    ) -> tuple[int, np.ndarray, list[Any]]:
        """The count pass that keeps the rows: ``n``, the level-``level`` histogram and the
        futures of the groups' :class:`HeldRows` (:meth:`split_groups` groups of blocks, a
        public number), for :meth:`trees_of_held`."""
        held = [
            self.client.submit(hold_task, group, plan_d, nan, box, level, axes, pure=False)
            for group in self._block_groups()
        ]
        futures = [self.client.submit(held_count_task, f, level, pure=False) for f in held]
        n, h = self._sum_counts(futures, level)
        return n, h, held

    def _sum_counts(self, futures: list[Any], level: int) -> tuple[int, np.ndarray]:
        """The count pass's ``(rows, level histogram)`` of every task, summed."""
        n, h = 0, np.zeros(1 << level, dtype=np.int64)
        for rows, hist in self.run(futures, "count"):
            n += rows
            h += hist
        return n, h

    def trees_of_held(
        self,
        held: list[Any],
        d: int,
        box: Box,
        level: int,
        bounds: np.ndarray,
        depth: int,
        axes: Axes = None,
    ) -> list[Any]:
        """Futures of the parts' count trees from held groups (:meth:`hold`); the caller drops
        ``held`` after, so that each group is freed once it is cut."""
        pieces = [self.client.submit(held_split_task, f, level, bounds, pure=False) for f in held]
        return self._trees_of_pieces(pieces, bounds.size, d, box, depth, axes)

    def rows(self, plan_d: int, nan: bool) -> int:
        """The number of rows of the source (a sum over the blocks)."""
        futures = [self.client.submit(rows_task, b, plan_d, nan, pure=False) for b in self.blocks]
        return int(sum(self.run(futures, "rows")))

    def sparse_count(
        self, plan_d: int, nan: bool, box: Box, level: int, axes: Axes = None
    ) -> tuple[int, np.ndarray]:
        futures = [
            self.client.submit(sparse_count_task, b, plan_d, nan, box, level, axes, pure=False)
            for b in self.blocks
        ]
        n, h = 0, np.zeros(1 << level, dtype=np.int64)
        for rows, cells, counts in self.run(futures, "count"):
            n += rows
            np.add.at(h, cells, counts)
        return n, h

    def trees(
        self,
        d: int,
        nan: bool,
        box: Box,
        level: int,
        bounds: np.ndarray,
        depth: int,
        axes: Axes = None,
    ) -> list[Any]:
        """Futures of the parts' count trees (kept on the workers)."""
        pieces = [
            self.client.submit(split_task, group, d, nan, box, level, bounds, axes, pure=False)
            for group in self._block_groups()
        ]
        return self._trees_of_pieces(pieces, bounds.size, d, box, depth, axes)

    def _block_groups(self) -> list[list[Any]]:
        """The source's blocks in :meth:`split_groups` consecutive groups (public: from the
        number of blocks and workers), the inputs of one hold or split task each."""
        blocks = self.blocks
        groups = np.array_split(np.arange(len(blocks)), min(len(blocks), self.split_groups()))
        return [[blocks[i] for i in g] for g in groups]

    def _trees_of_pieces(
        self, pieces: list[Any], parts: int, d: int, box: Box, depth: int, axes: Axes
    ) -> list[Any]:
        """One count-tree task per part, from piece ``q`` of every split (held or read)."""
        trees = []
        for q in range(parts):
            mine = [self.client.submit(_piece, p, q, pure=False) for p in pieces]
            trees.append(self.client.submit(tree_task, d, box, depth, axes, *mine, pure=False))
        return trees


def _piece(pieces: tuple[np.ndarray, ...], q: int) -> np.ndarray:
    return pieces[q]


def _check_size(plan: PmmPlan | Any, n: int) -> None:
    if plan.size is not None and n != plan.size:
        raise ValueError(f"data must have exactly {plan.size} rows (the domain's public size)")


def _keys(plan: PmmPlan) -> tuple[KeyedNodeNoise, PlacementStream]:
    """The release's node noise and placement stream, drawn as the in-memory path draws them
    (so a reproducible run gives the same keys)."""
    if runtime.current_sampler() == "opendp":
        raise ValueError(
            "runtime.sampler('opendp') cannot run distributed: its noise is not node-addressed"
        )
    noise = KeyedNodeNoise.from_random_source(as_random_source().derive(NOISE_STREAM))
    stream = PlacementStream.from_random_source(as_random_source().derive(PLACEMENT_STREAM))
    return noise, stream


def _top(
    plan: PmmPlan,
    n: int,
    h: np.ndarray,
    j0: int,
    noise: KeyedNodeNoise,
    record: list[VisitedLevel] | None = None,
) -> Frontier:
    """Algorithms 1-2 for the levels above ``min(j0, depth)`` from the level-``j0`` histogram
    (``record``: the visited levels are appended to it, for least squares)."""
    front = traversal_root(
        n,
        plan.d,
        plan.scales,
        plan.root_size,
        noise,
        (np.zeros(1, dtype=np.int64),),
        plan.distribution,
    )
    cut = plan.threshold if plan.consistency == "paper" else 0.0
    return expand_levels(
        front,
        min(j0, plan.depth),
        hist_counter(h, j0),
        plan.scales,
        noise,
        cut,
        plan.distribution,
        plan.axes,
        record,
    )


def _jobs(front: Frontier, bounds: np.ndarray) -> list[Subtrees]:
    (prefix,) = front.state
    dest = np.searchsorted(bounds, prefix, side="right") - 1
    cut = np.searchsorted(dest, np.arange(bounds.size + 1))
    # a subtree's leaves keep its mass (Algorithm 2 splits a mass between the two children)
    starts = np.concatenate(([0], np.cumsum(front.mass)))[cut].tolist()
    return [
        Subtrees(
            q,
            front.level,
            front.cells[cut[q] : cut[q + 1]],
            front.mass[cut[q] : cut[q + 1]],
            prefix[cut[q] : cut[q + 1]],
            int(starts[q]),
        )
        for q in range(bounds.size)
    ]


def _write_driver_leaves(drv: Driver, leaves: LeafMasses, rel: Release) -> list[dict[str, Any]]:
    """Write leaves held by the driver in parallel parts of about :data:`ROWS_PER_PART` rows."""
    ends = np.cumsum(leaves.masses)
    total = int(ends[-1]) if ends.size else 0
    parts = max(1, -(-total // ROWS_PER_PART))
    cuts = np.concatenate(
        (
            [0],
            np.searchsorted(ends, (np.arange(1, parts) * total) // parts, side="right"),
            [ends.size],
        )
    )
    first = np.concatenate(([0], ends))
    futures = [
        drv.client.submit(
            synth_task,
            leaves.cells[a:b],
            leaves.masses[a:b],
            rel,
            q,
            int(first[a]),
            drv.hook,
            pure=False,
        )
        for q, (a, b) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))
    ]
    return drv.run(futures, "write")


def _finish(
    plan: PmmPlan, summaries: list[dict[str, Any]], top: Frontier | None, visited: int
) -> dict[str, Any]:
    rows = sum(s["rows"] for s in summaries)
    if top is not None:
        active = list(top.active)
        deeper = [s["active"] for s in summaries if s["active"]]
        for j in range(plan.depth - top.level):
            active.append(sum(a[j] for a in deeper if j < len(a)))
        visited = top.visited + sum(s["visited"] for s in summaries)
    else:
        active = [2**j for j in range(plan.depth + 1)]
    return {
        "depth": plan.depth,
        "scales": plan.scales,
        "visited_nodes": visited,
        "active_nodes": tuple(active),
        "leaves": sum(s["leaves"] for s in summaries),
        "size": rows,
        "parts": len(summaries),
    }


def _release(plan: PmmPlan, writer: PartWriter) -> Release:
    noise, stream = _keys(plan)
    if isinstance(writer, PartWriter) and plan.placement == "uniform":
        # uniform points are distinct floats: plain, uncompressed (centres repeat: a dictionary)
        writer = dataclasses.replace(writer, dictionary=False, compression="none")
    return Release(
        d=plan.d,
        box=plan.box,
        depth=plan.depth,
        scales=plan.scales,
        placement=plan.placement,
        noise=noise,
        stream=stream,
        writer=writer,
        axes=plan.axes,
        distribution=plan.distribution,
        consistency=plan.consistency,
        threshold=plan.threshold if plan.pruned else 0.0,
    )


def run_pmm(
    plan: PmmPlan, drv: Driver, writer: PartWriter, parts: int | None = None
) -> dict[str, Any]:
    """Pruned-PMM or PMM on the driver's blocks; returns what the in-memory release records."""
    rel = _release(plan, writer)
    if not plan.pruned:
        return _run_full(plan, drv, rel, rel.noise)
    parts = parts or drv.parts
    j0 = split_level(parts, plan.depth)
    if not holds(plan.size, plan.d, drv.workers()):  # read the source again for the trees
        n, h = drv.count(plan.d, plan.nan, plan.box, j0, plan.axes)
        _check_size(plan, n)
        return _pruned(
            plan,
            drv,
            rel,
            n,
            h,
            j0,
            parts,
            lambda b: drv.trees(plan.d, plan.nan, plan.box, j0, b, plan.depth, plan.axes),
        )
    n, h, held = drv.hold(plan.d, plan.nan, plan.box, j0, plan.axes)
    _check_size(plan, n)

    def build(bounds: np.ndarray) -> list[Any]:
        trees = drv.trees_of_held(held, plan.d, plan.box, j0, bounds, plan.depth, plan.axes)
        held.clear()  # each group is freed once it is cut
        return trees

    return _pruned(plan, drv, rel, n, h, j0, parts, build)


def _pruned(
    plan: PmmPlan,
    drv: Driver,
    rel: Release,
    n: int,
    h: np.ndarray,
    j0: int,
    parts: int,
    build: Callable[[np.ndarray], list[Any]],
    built: tuple[np.ndarray, list[Any]] | None = None,
) -> dict[str, Any]:
    """Pruned-PMM from the level-``j0`` histogram: the top levels on the driver, the subtrees
    on the parts' trees, with the plan's post-processing.

    The parts are cut on the frontier's *noisy* masses (:func:`noisy_part_bounds`), and
    ``build(bounds)`` makes their trees; ``built``: trees already made on other cuts (the
    adaptive selection's, cut on exact counts to balance its work), reused only when the cuts are
    the same and released otherwise.  Which cuts the trees had changes the work, never the
    output."""
    lsq = plan.consistency == "least_squares"
    record: list[VisitedLevel] | None = [] if lsq else None
    front = _top(plan, n, h, j0, rel.noise, record)
    # None: the whole traversal fits above the split level (the driver writes the leaves)
    bounds = noisy_part_bounds(front, j0, parts) if front.level < plan.depth else None
    if built is not None and bounds is None:
        for t in built[1]:
            t.release()
        built = None
    if bounds is None:
        if record is not None:
            leaves = least_squares_leaves(
                front,
                record,
                plan.scales,
                plan.root_size,
                plan.threshold,
                plan.distribution,
                plan.depth,
            )
        else:
            leaves = LeafMasses(
                front.cells, front.mass, plan.depth, front.visited, tuple(front.active), plan.scales
            )
        return _finish(plan, _write_driver_leaves(drv, leaves, rel), front, 0)
    if built is not None:
        return _on_built(plan, drv, rel, front, record, bounds, *built)
    jobs = _jobs(front, bounds)
    part_trees = build(bounds)
    if record is None:
        futures = [
            drv.client.submit(traverse_task, t, job, rel, drv.hook, pure=False)
            for t, job in zip(part_trees, jobs, strict=True)
        ]
        return _finish(plan, drv.run(futures, "subtrees"), front, 0)
    # least squares: bottom-up in the parts, the top levels on the driver, top-down in the parts
    forests = [
        drv.client.submit(forest_task, t, job, rel, drv.hook, pure=False)
        for t, job in zip(part_trees, jobs, strict=True)
    ]
    sums = drv.run([drv.client.submit(root_sums_task, f, pure=False) for f in forests], "bottom-up")
    below = (np.concatenate([s[0] for s in sums]), np.concatenate([s[1] for s in sums]))
    _, mass, hh, pp = top_masses(
        record, rel.variances, front.root_noisy, plan.root_size, plan.threshold, below=below
    )
    cut = np.concatenate(([0], np.cumsum([job.cells.shape[0] for job in jobs])))
    starts = np.concatenate(([0], np.cumsum(mass)))[cut].tolist()
    futures = [
        drv.client.submit(
            descend_task, f, hh[a:b], pp[a:b], mass[a:b], int(starts[q]), rel, drv.hook, pure=False
        )
        for q, (f, a, b) in enumerate(
            zip(forests, cut[:-1].tolist(), cut[1:].tolist(), strict=True)
        )
    ]
    return _finish(plan, drv.run(futures, "subtrees"), front, 0)


def _on_built(
    plan: PmmPlan,
    drv: Driver,
    rel: Release,
    front: Frontier,
    record: list[VisitedLevel] | None,
    bounds: np.ndarray,
    tree_bounds: np.ndarray,
    trees: list[Any],
) -> dict[str, Any]:
    """The subtrees on trees already built on other cuts (the adaptive selection's, on exact
    counts), never rebuilt: one expand task per tree (least squares: its two passes) keeps its
    leaves on its worker, then one write task per part of the noisy cuts ``bounds`` takes the
    leaves of its range from the trees that hold them.  The number of tasks is the same
    whatever the two cuts are (``3 P``, least squares ``4 P``, ``P`` the parts); which trees a
    part reads from depends on both cuts, as the trees' work did."""
    jobs = _jobs(front, tree_bounds)
    if record is None:
        leaves = [
            drv.client.submit(expand_task, t, job, rel, drv.hook, pure=False)
            for t, job in zip(trees, jobs, strict=True)
        ]
        mass = front.mass
    else:
        forests = [
            drv.client.submit(forest_task, t, job, rel, drv.hook, pure=False)
            for t, job in zip(trees, jobs, strict=True)
        ]
        sums = drv.run(
            [drv.client.submit(root_sums_task, f, pure=False) for f in forests], "bottom-up"
        )
        below = (np.concatenate([s[0] for s in sums]), np.concatenate([s[1] for s in sums]))
        _, mass, hh, pp = top_masses(
            record, rel.variances, front.root_noisy, plan.root_size, plan.threshold, below=below
        )
        cut = np.concatenate(([0], np.cumsum([job.cells.shape[0] for job in jobs])))
        leaves = [
            drv.client.submit(
                descend_leaves_task, f, hh[a:b], pp[a:b], mass[a:b], rel, drv.hook, pure=False
            )
            for f, a, b in zip(forests, cut[:-1].tolist(), cut[1:].tolist(), strict=True)
        ]
    # the first point of every tree and of every part in the leaf order of the release
    first = np.concatenate(([0], np.cumsum(mass)))
    tree_start = first[_front_cuts(front, tree_bounds)].tolist()
    part_start = first[_front_cuts(front, bounds)].tolist()
    futures = []
    for q in range(bounds.size):
        lo, hi = part_start[q], part_start[q + 1]
        src = [
            t
            for t in range(len(trees))
            if tree_start[t] < hi and tree_start[t + 1] > lo  # its points overlap the part's
        ]
        futures.append(
            drv.client.submit(
                write_task,
                q,
                int(lo),
                int(hi),
                [int(tree_start[t]) for t in src],
                rel,
                leaves[q],
                *[leaves[t] for t in src],
                hook=drv.hook,
                pure=False,
            )
        )
    return _finish(plan, drv.run(futures, "subtrees"), front, 0)


def _front_cuts(front: Frontier, bounds: np.ndarray) -> np.ndarray:
    """Where the parts cut on ``bounds`` start in the frontier's cells (and its end)."""
    (prefix,) = front.state
    dest = np.searchsorted(bounds, prefix, side="right") - 1
    return np.searchsorted(dest, np.arange(bounds.size + 1))


def _run_full(plan: PmmPlan, drv: Driver, rel: Release, noise: KeyedNodeNoise) -> dict[str, Any]:
    """The full-tree PMM: the level-``r`` histogram reduced to the driver, noised and corrected
    there as in memory (:func:`~opendp_wasserstein.hierarchy.noisy_tree.draw_full_tree`), points in
    parallel."""
    r, d = plan.depth, plan.d
    n, h = drv.sparse_count(d, plan.nan, plan.box, r, plan.axes)
    _check_size(plan, n)
    cells0 = np.zeros((1, d), dtype=np.int64)
    root = np.zeros(1, dtype=np.int64)
    draw = noise_draw(noise, plan.distribution)
    if plan.release_root:
        root = add_noise(np.array([n]), draw(0, cells0, plan.scales[0]))
    levels = [root.astype(np.int64)]
    for j in range(1, r + 1):
        exact = h.reshape(1 << j, -1).sum(axis=1)
        cells = prefix_cells(np.arange(1 << j), j, d, plan.axes)
        levels.append(add_noise(exact, draw(j, cells, plan.scales[j])))
    nodes = int(sum(a.size for a in levels)) - (0 if plan.release_root else 1)
    leaves = full_consistency(tuple(levels), d, plan.root_size, nodes, plan.scales, plan.axes)
    summaries = _write_driver_leaves(drv, leaves, rel)
    return _finish(plan, summaries, None, nodes)


def run_adaptive(
    plan: AdaptivePlan, drv: Driver, writer: PartWriter, parts: int | None = None
) -> dict[str, Any]:
    """Adaptive Pruned-PMM: the occupancy reduced from the parts' trees, the selection on the
    driver (the in-memory closure), then the chosen Pruned-PMM on the same trees."""
    sp = plan.scores
    parts = parts or drv.parts
    j0 = split_level(parts, sp.L)
    if holds(sp.size, sp.d, drv.workers()):
        n, h, held = drv.hold(sp.d, sp.nan, sp.box, j0, sp.axes)
        _check_size(sp, n)
        bounds = part_bounds(h, parts)  # exact cuts balance the score pass (output: noisy cuts)
        trees = drv.trees_of_held(held, sp.d, sp.box, j0, bounds, sp.depth, sp.axes)
        del held  # each group is freed once it is cut
    else:  # read the source again for the trees
        n, h = drv.count(sp.d, sp.nan, sp.box, j0, sp.axes)
        _check_size(sp, n)
        bounds = part_bounds(h, parts)
        trees = drv.trees(sp.d, sp.nan, sp.box, j0, bounds, sp.depth, sp.axes)
    a = plan.choose_from_scores(sp.scores_of_occupancy(score_statistic(sp, drv, n, h, j0, trees)))
    main = plan.mains[a]
    rel = _release(main, writer)
    info = _pruned(
        main,
        drv,
        rel,
        n,
        h,
        j0,
        parts,
        lambda b: trees,  # never called: the trees are built (and kept whatever the cuts)
        (bounds, trees),
    )
    with runtime.capture() as sink:  # run_pmm's caller records the result once
        plan.record(a, info)
    return sink[-1] if sink else info
