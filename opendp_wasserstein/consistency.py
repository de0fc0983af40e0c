"""Consistency corrections that turn a noisy count tree into consistent leaf masses.

Both are post-processing of the noisy tree (they read noisy counts and use auxiliary
randomness independent of the data) and are vectorised over whole levels.

- :func:`pruned_correction`: Algorithms 1 and 2 of Zare Moayedi et al. (2026): the
  zero-respecting correction applied top-down, expanding only children with positive mass.
- :func:`full_correction`: the full-tree PMM of He, Vershynin and Zhu (COLT 2023): a
  comparable split at every node, all ``2^depth`` leaves materialised.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.noisy_tree import NoisyCountTree

__all__ = ["LeafMasses", "comparable_split", "zero_respecting_split", "pruned_correction", "full_correction"]


@dataclass(frozen=True)
class LeafMasses:
    """Consistent non-negative masses on leaf cells of depth ``depth``.

    :param cells: per-coordinate cell indices of the leaves with positive mass, shape (k, d)
    :param masses: their masses (positive integers), shape (k,)
    :param depth: the leaf level
    :param visited: the number of noisy nodes that were drawn
    :param active: the number of nodes with positive mass at each level ``0 .. depth``
    """

    cells: np.ndarray
    masses: np.ndarray
    depth: int
    visited: int
    active: tuple[int, ...]

    @property
    def total(self) -> int:
        return int(self.masses.sum())


def root_mass(noisy_root: int, size: int | None) -> int:
    """The root mass: the public size ``n`` if known, else ``max(1, n'_root)``."""
    if size is not None:
        return int(size)
    return max(1, int(noisy_root))


def comparable_split(mass: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``m0 = floor(M a / (a + b))`` (``a + b > 0``): the pair ``(m0, M - m0)`` is comparable to
    ``(a, b)`` (both entries <= or both >=), for ``M <= a + b`` and ``M >= a + b`` alike."""
    total = a + b
    safe = np.where(total > 0, total, 1)
    return np.where(total > 0, (mass * a) // safe, mass // 2)


def zero_respecting_split(
    mass: np.ndarray, a: np.ndarray, b: np.ndarray, rng: RandomSource
) -> np.ndarray:
    """Algorithm 2: the lower child's share of parent mass ``M > 0`` given truncated noisy
    counts ``a, b >= 0``.  Both zero: one child chosen uniformly at random takes ``M``;
    exactly one zero: the other takes ``M``; otherwise the comparable floor split."""
    m0 = comparable_split(mass, a, b)  # already M when b == 0 < a, and 0 when a == 0 < b
    both = (a == 0) & (b == 0)
    if np.any(both):
        coin = rng.bits(int(both.sum()))
        m0[both] = np.where(coin == 1, mass[both], 0)
    return m0


def pruned_correction(noisy: NoisyCountTree, size: int | None, rng: RandomSource) -> LeafMasses:
    """Algorithm 1 (Pruned-PMM): top-down, level by level, only active nodes are expanded."""
    handles = np.zeros(1, dtype=np.int64)
    mass = np.array([root_mass(noisy.root(), size)], dtype=np.int64)
    active = [1]
    for level in range(noisy.depth):
        ch, counts = noisy.children(level, handles)
        counts = np.maximum(counts, 0)
        m0 = zero_respecting_split(mass, counts[:, 0], counts[:, 1], rng)
        child_mass = np.stack([m0, mass - m0], axis=1).reshape(-1)
        keep = child_mass > 0
        handles = ch.reshape(-1)[keep]
        mass = child_mass[keep]
        active.append(int(handles.size))
        noisy.forget(level)  # never revisited: memory stays O(widest level), not O(n r)
    return LeafMasses(noisy.cells(noisy.depth, handles), mass, noisy.depth, noisy.visited, tuple(active))


def full_correction(noisy: NoisyCountTree, size: int | None) -> LeafMasses:
    """PMM (He et al.): every node of every level is expanded and split comparably."""
    handles = np.zeros(1, dtype=np.int64)
    mass = np.array([root_mass(noisy.root(), size)], dtype=np.int64)
    for level in range(noisy.depth):
        ch, counts = noisy.children(level, handles)
        counts = np.maximum(counts, 0)
        m0 = comparable_split(mass, counts[:, 0], counts[:, 1])
        handles = ch.reshape(-1)
        mass = np.stack([m0, mass - m0], axis=1).reshape(-1)
    keep = mass > 0
    active = tuple(2**j for j in range(noisy.depth + 1))
    return LeafMasses(noisy.cells(noisy.depth, handles[keep]), mass[keep], noisy.depth, noisy.visited, active)
