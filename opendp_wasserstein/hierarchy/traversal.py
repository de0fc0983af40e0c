"""From noisy counts to consistent leaf masses: the traversals and corrections of the PMM family.

- :func:`pruned_traversal`: Algorithms 1 and 2 of Zare Moayedi et al. (2026), top-down, level by
  level: the two children of every node with positive corrected mass get their noisy counts, the
  zero-respecting rule splits the parent's mass, children with zero mass are never expanded.
  It reads the exact counts only to add noise to them, inside the measurement
  :func:`~opendp_wasserstein.measurements.make_pruned_tree_laplace`; what it returns,
  :class:`LeafMasses`, is a function of the noisy counts and of independent coins alone.
- :func:`full_consistency`: the full-tree PMM correction of He, Vershynin and Zhu (COLT 2023), a
  comparable split at every node, applied to a released
  :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree` (post-processing).

All integer arithmetic is exact: products that could pass 2^63 fall back to Python integers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from opendp_wasserstein.hierarchy.cells import CountTree, axis_of_level, coord_bits_at_level
from opendp_wasserstein.hierarchy.least_squares import (
    VisitedLevel,
    check_consistency,
    least_squares_masses,
    noise_variance,
)
from opendp_wasserstein.noise.node_noise import NodeNoise, add_noise

__all__ = [
    "LeafMasses",
    "root_mass",
    "comparable_split",
    "zero_respecting_split",
    "child_cells",
    "pruned_traversal",
    "Counter",
    "Frontier",
    "tree_counter",
    "traversal_root",
    "expand_levels",
    "noise_draw",
    "full_consistency",
    "prefix_cells",
]

_INT64_MAX = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class LeafMasses:
    """Consistent non-negative masses on leaf cells of depth ``depth`` (a release: public).

    :param cells: per-coordinate cell indices of the leaves with positive mass, shape (k, d)
    :param masses: their masses (positive integers), shape (k,)
    :param depth: the leaf level
    :param visited: the number of noisy nodes that were drawn
    :param active: the number of nodes with positive mass at each level ``0 .. depth``
    :param scales: the noise scales ``sigma_0 .. sigma_depth`` (public parameters)
    """

    cells: np.ndarray
    masses: np.ndarray
    depth: int
    visited: int
    active: tuple[int, ...]
    scales: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for arr in (self.cells, self.masses):
            arr.setflags(write=False)

    @property
    def total(self) -> int:
        return int(self.masses.sum())


def root_mass(noisy_root: int | None, size: int | None) -> int:
    """The root mass: the public size ``n`` if known, else ``max(1, n'_root)``."""
    if size is not None:
        return int(size)
    if noisy_root is None:  # pragma: no cover - constructors refuse this combination
        raise ValueError("the root mass needs a public size or a noisy root count")
    return max(1, int(noisy_root))


def comparable_split(mass: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``m0 = floor(M a / (a + b))`` (``a + b > 0``, else ``floor(M / 2)``), exactly.

    The pair ``(m0, M - m0)`` is comparable to ``(a, b)`` (both entries <= or both >=), for
    ``M <= a + b`` and ``M >= a + b`` alike.  Inputs are non-negative int64 (any values below
    2^63): the entries where ``a + b`` or ``M a`` would overflow int64 are computed over Python
    integers, all others in int64, vectorised, so the split is exact at every scale.

    :example:

    >>> comparable_split(np.array([10, 7, 4]), np.array([1, 0, 0]), np.array([3, 5, 0])).tolist()
    [2, 0, 2]
    >>> big = np.array([2**62 + 2**61])
    >>> comparable_split(np.array([5]), big, big).tolist()
    [2]
    """
    mass = np.asarray(mass, dtype=np.int64)
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if mass.size == 0:
        return np.zeros(0, dtype=np.int64)
    # all in int64 when the largest sum and product fit (three reductions, the usual case: the
    # entries then take the same int64 path as below, with no wide entry)
    top_m, top_a, top_b = int(mass.max()), int(a.max()), int(b.max())
    if top_a + top_b <= _INT64_MAX and max(top_m, 1) * top_a <= _INT64_MAX:
        total = a + b
        m0 = np.multiply(mass, a)
        m0 //= np.maximum(total, 1)
        zero = (total <= 0).nonzero()[0]  # 1-D: as np.flatnonzero, without its wrappers
        if zero.size:
            m0[zero] = mass[zero] // 2
        return m0
    wide = (a > _INT64_MAX - b) | (a > _INT64_MAX // np.maximum(mass, 1))
    narrow_a, narrow_b = (np.where(wide, 0, a), np.where(wide, 0, b)) if wide.any() else (a, b)
    total = narrow_a + narrow_b  # no wrap-around: the wide entries are zeroed here
    safe = np.where(total > 0, total, 1)
    m0 = np.where(total > 0, (mass * narrow_a) // safe, mass // 2)
    if wide.any():  # a > 0 there, so a + b > 0
        idx = np.flatnonzero(wide)
        m0[idx] = [
            m * x // (x + y)
            for m, x, y in zip(mass[idx].tolist(), a[idx].tolist(), b[idx].tolist(), strict=True)
        ]
    return m0


def zero_respecting_split(
    mass: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    coins: np.ndarray,
    both: np.ndarray | None = None,
) -> np.ndarray:
    """Algorithm 2: the lower child's share of parent mass ``M > 0`` given truncated noisy counts
    ``a, b >= 0``.  Both zero: the child picked by the node's fair coin takes ``M`` (``coins``
    holds one bit per node whose children are both zero, in order); exactly one zero: the other
    takes ``M``; otherwise the comparable floor split.  ``both``: the positions where ``a`` and
    ``b`` are both zero, if the caller has them already."""
    m0 = comparable_split(mass, a, b)  # already M when b == 0 < a, and 0 when a == 0 < b
    if both is None:
        both = np.flatnonzero((a == 0) & (b == 0))
    if both.size:
        m0[both] = np.where(coins == 1, mass[both], 0)
    return m0


def child_cells(cells: np.ndarray, level: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """The cells of the two children of level-``level`` cells (rows 2i, 2i+1 for parent i); the
    split is along ``axes[level]`` (default cyclic, ``level mod d``)."""
    k, d = cells.shape
    c = axis_of_level(level, d, axes)
    out = np.empty((k, 2, d), dtype=cells.dtype)
    out[:, 0] = cells
    out[:, 1] = cells
    out = out.reshape(2 * k, d)
    col = out[:, c]
    col *= 2
    col[1::2] += 1
    return out


def noise_draw(noise: NodeNoise, distribution: str) -> Any:
    """The draw method of ``noise`` for ``distribution``: ``"laplace"`` or ``"gaussian"``."""
    if distribution == "laplace":
        return noise.laplace
    if distribution == "gaussian":
        return noise.gaussian
    raise ValueError(f"distribution must be 'laplace' or 'gaussian', got {distribution!r}")


#: ``counter(level, state) -> (child_counts, child_state)``: the exact counts of the two children
#: of every node of ``level`` (shape (k, 2), lower half of the split coordinate first) and the
#: children's state arrays (rows 2i, 2i+1 for node i), from the nodes' state arrays
Counter = Callable[[int, tuple[np.ndarray, ...]], tuple[np.ndarray, tuple[np.ndarray, ...]]]


def tree_counter(counts: CountTree) -> Counter:
    """The :data:`Counter` of an exact count tree: a node's state is its range ``[lo, hi)`` of
    the tree's sorted points (the root: ``[0, n)``)."""

    def counter(
        level: int, state: tuple[np.ndarray, ...]
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        c_lo, c_hi = counts.children(level, *state)
        return (c_hi - c_lo).reshape(-1, 2), (c_lo, c_hi)

    return counter


@dataclass
class Frontier:
    """The active nodes of one level of a pruned traversal (in progress; not a release).

    :param level: their level
    :param cells: their per-coordinate cell indices, shape (k, d)
    :param mass: their corrected masses (positive), shape (k,)
    :param state: the :data:`Counter` state arrays of the nodes
    :param visited: noisy nodes drawn so far
    :param active: active nodes at each level up to ``level``
    :param root_noisy: the root's noisy count when it was released, else None
    """

    level: int
    cells: np.ndarray
    mass: np.ndarray
    state: tuple[np.ndarray, ...]
    visited: int
    active: list[int]
    root_noisy: int | None = None


def traversal_root(
    n: int,
    d: int,
    scales: tuple[float, ...],
    size: int | None,
    noise: NodeNoise,
    state: tuple[np.ndarray, ...],
    distribution: str = "laplace",
) -> Frontier:
    """The root of Algorithm 1: mass ``size`` if public, else ``max(1, n + noise(sigma_0))``."""
    draw = noise_draw(noise, distribution)
    cells = np.zeros((1, d), dtype=np.int64)
    visited = 0
    noisy_root = None
    if size is None:
        noisy_root = int(add_noise(np.array([n]), draw(0, cells, scales[0]))[0])
        visited = 1
    mass = np.array([root_mass(noisy_root, size)], dtype=np.int64)
    return Frontier(0, cells, mass, state, visited, [1], noisy_root)


def expand_levels(
    front: Frontier,
    stop: int,
    counter: Counter,
    scales: tuple[float, ...],
    noise: NodeNoise,
    threshold: float = 0.0,
    distribution: str = "laplace",
    axes: Sequence[int] | None = None,
    record: list[VisitedLevel] | None = None,
) -> Frontier:
    """Algorithms 1-2 from ``front.level`` down to level ``stop``: the children of every active
    node get their noisy counts, the zero-respecting rule splits the parent's mass, children
    with zero mass are dropped.  Every node's values depend only on the node, its parent's mass
    and the node-addressed noise, so expanding the subtrees of a frontier separately (in any
    grouping or order) gives the same leaves.  With ``record`` (a list), each level's visited
    nodes (noisy counts before truncation, and the masses given) are appended to it, for the
    least-squares post-processing (:mod:`opendp_wasserstein.hierarchy.least_squares`)."""
    draw = noise_draw(noise, distribution)
    cells, mass, state = front.cells, front.mass, front.state
    visited, active = front.visited, list(front.active)
    for level in range(front.level, stop):
        child_counts, kid_state = counter(level, state)
        kids = child_cells(cells, level, axes)
        noisy = add_noise(child_counts.reshape(-1), draw(level + 1, kids, scales[level + 1]))
        visited += int(noisy.size)
        cut = threshold * scales[level + 1]
        raw = noisy
        if cut == 0:  # the paper's rule: truncation at 0
            noisy = np.maximum(noisy, 0)
        else:
            noisy = np.where(noisy > cut, noisy, 0)
        pairs = noisy.reshape(-1, 2)
        low, high = pairs[:, 0], pairs[:, 1]
        both = ((low == 0) & (high == 0)).nonzero()[0]
        coins = (
            noise.coins(level, cells.take(both, axis=0))
            if both.size
            else np.zeros(0, dtype=np.int64)
        )
        m0 = zero_respecting_split(mass, low, high, coins, both)
        pair_mass = np.empty((mass.size, 2), dtype=np.int64)
        pair_mass[:, 0] = m0
        np.subtract(mass, m0, out=pair_mass[:, 1])
        child_mass = pair_mass.reshape(-1)
        if record is not None:
            record.append(VisitedLevel(raw, child_mass))
        keep = (child_mass > 0).nonzero()[0]
        cells, mass = kids.take(keep, axis=0), child_mass.take(keep)
        state = tuple(arr.take(keep) for arr in kid_state)
        active.append(int(mass.size))
    return Frontier(stop, cells, mass, state, visited, active, front.root_noisy)


def pruned_traversal(
    counts: CountTree,
    scales: tuple[float, ...],
    size: int | None,
    noise: NodeNoise,
    threshold: float = 0.0,
    distribution: str = "laplace",
    consistency: str = "paper",
) -> LeafMasses:
    """Algorithms 1-2 on the exact count tree ``counts``: noise only the children of active nodes.

    :param counts: the exact counts (private; only read to add noise)
    :param scales: ``sigma_0 .. sigma_depth``; ``sigma_0 = inf`` when the root is not released
    :param size: the public root mass, or None to use ``max(1, n + noise(sigma_0))``
    :param noise: the noise and coins of the nodes
    :param threshold: ``"paper"``: a noisy count at most ``threshold * sigma_j`` is read as 0 by
        the split (0, the paper's rule, truncates at 0 only); ``"least_squares"``: a node whose
        estimate is at most ``threshold`` standard errors is read as empty.  A post-processing
        choice that suppresses the mass noise puts into empty cells
    :param distribution: ``"laplace"`` (``LapZ(sigma_j)``, pure DP) or ``"gaussian"``
        (``N_Z(0, sigma_j^2)``, zCDP)
    :param consistency: ``"paper"`` (Algorithm 2) or ``"least_squares"`` (the traversal visits
        the paper's nodes, then
        :func:`~opendp_wasserstein.hierarchy.least_squares.least_squares_masses` re-splits the
        masses from the least-squares estimates of all visited levels)
    :return: the consistent leaf masses (a function of the noisy counts and the coins only)
    """
    check_consistency(consistency)
    root_state = (np.zeros(1, dtype=np.int64), np.full(1, counts.n, dtype=np.int64))
    front = traversal_root(counts.n, counts.d, scales, size, noise, root_state, distribution)
    if consistency == "paper":
        front = expand_levels(
            front,
            counts.depth,
            tree_counter(counts),
            scales,
            noise,
            threshold,
            distribution,
            counts.axes,
        )
        return LeafMasses(
            front.cells, front.mass, counts.depth, front.visited, tuple(front.active), tuple(scales)
        )
    record: list[VisitedLevel] = []
    front = expand_levels(
        front,
        counts.depth,
        tree_counter(counts),
        scales,
        noise,
        0.0,
        distribution,
        counts.axes,
        record,
    )
    return least_squares_leaves(front, record, scales, size, threshold, distribution, counts.depth)


def least_squares_leaves(
    front: Frontier,
    record: list[VisitedLevel],
    scales: Sequence[float],
    size: int | None,
    threshold: float,
    distribution: str,
    depth: int,
) -> LeafMasses:
    """The leaves of a finished traversal re-split by least squares (post-processing of the
    recorded noisy counts and the paper's masses)."""
    variances = tuple(noise_variance(s, distribution) for s in scales)
    _, mass = least_squares_masses(record, variances, front.root_noisy, size, threshold)
    keep = mass > 0
    active = tuple([1] + [int(np.count_nonzero(lv.paper > 0)) for lv in record])
    return LeafMasses(front.cells[keep], mass[keep], depth, front.visited, active, tuple(scales))


def prefix_cells(
    prefix: np.ndarray, level: int, d: int, axes: Sequence[int] | None = None
) -> np.ndarray:
    """Per-coordinate cell indices of level-``level`` cells given by their Morton prefixes.

    Bit ``level - 1 - j`` of the prefix (counting from the least significant) is the bit chosen
    at level ``j``, on coordinate ``axes[j]`` (default ``j mod d``).  One vectorised pass per level.
    """
    prefix = np.asarray(prefix, dtype=np.int64)
    cells = np.zeros((prefix.size, d), dtype=np.int64)
    for j in range(level):
        c = axis_of_level(j, d, axes)
        cells[:, c] = 2 * cells[:, c] + ((prefix >> (level - 1 - j)) & 1)
    return cells


def full_consistency(
    levels: tuple[np.ndarray, ...],
    d: int,
    size: int | None,
    visited: int,
    scales: tuple[float, ...] = (),
    axes: Sequence[int] | None = None,
) -> LeafMasses:
    """PMM (He et al.): a comparable split of every node's mass between its two noisy children.

    :param levels: noisy counts of every node, level ``j`` in Morton-prefix order (``2^j``)
    :param d: the dimension
    :param size: the public root mass, or None for ``max(1, noisy root)``
    :param visited: the number of noisy nodes released (reported)
    :param axes: the split order (default cyclic)
    """
    depth = len(levels) - 1
    mass = np.array([root_mass(int(levels[0][0]), size)], dtype=np.int64)
    for level in range(depth):
        counts = np.maximum(levels[level + 1], 0).reshape(-1, 2)
        m0 = comparable_split(mass, counts[:, 0], counts[:, 1])
        mass = np.stack([m0, mass - m0], axis=1).reshape(-1)
    keep = np.flatnonzero(mass > 0)
    active = tuple(2**j for j in range(depth + 1))
    return LeafMasses(
        prefix_cells(keep, depth, d, axes), mass[keep], depth, visited, active, tuple(scales)
    )


def cell_bits(depth: int, d: int, axes: Sequence[int] | None = None) -> np.ndarray:
    """Bits per coordinate of a level-``depth`` cell index (cell side ``2^-bits``)."""
    return coord_bits_at_level(depth, d, axes)
