"""The lazily sampled noisy count tree released by the tree Laplace measurement.

The privacy argument (Zare Moayedi et al. 2026, Appendix A.3) imagines independent noise
``lambda_theta ~ LapZ(sigma_|theta|)`` drawn in advance at every node of the complete depth-r
tree; the release is the whole noisy vector ``n_theta + lambda_theta``.  This object draws a
node's noise the first time it is asked for and then keeps it, which is the same distribution
over every answer the caller can obtain.  It answers only noisy counts and public cell
identities; the exact counts stay inside.

Nodes of a level are addressed by *handles*: the index of the node among the nodes of that
level materialised so far.  Handles depend only on the order of the caller's (public) queries.
"""

from __future__ import annotations

import numpy as np

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.hierarchy import CountTree, coord_bits_at_level
from opendp_wasserstein.samplers import sample_discrete_laplace

__all__ = ["NoisyCountTree"]


class _Level:
    __slots__ = ("cells", "lo", "hi", "noisy", "first_child")

    def __init__(self, d: int) -> None:
        self.cells = np.zeros((0, d), dtype=np.int64)
        self.lo = np.zeros(0, dtype=np.int64)
        self.hi = np.zeros(0, dtype=np.int64)
        self.noisy = np.zeros(0, dtype=np.int64)
        self.first_child = np.zeros(0, dtype=np.int64)


class NoisyCountTree:
    """Noisy counts ``n_theta + LapZ(scales[|theta|])`` of a dyadic count tree, drawn lazily.

    :param counts: the exact count tree (kept private)
    :param scales: the level noise scales ``sigma_0 .. sigma_depth``
    :param rng: the randomness for the noise
    :param backend: the discrete Laplace back-end (``"fast"`` or ``"opendp"``)
    """

    def __init__(
        self, counts: CountTree, scales: tuple[float, ...], rng: RandomSource, backend: str
    ) -> None:
        self.depth = counts.depth
        self.d = counts.d
        self.scales = tuple(scales)
        self._counts = counts
        self._rng = rng
        self._backend = backend
        self._levels = [_Level(self.d) for _ in range(self.depth + 1)]
        self._forgotten = 0
        self._gone: set[int] = set()
        self._pools: dict[float, np.ndarray] = {}
        self._drawn: dict[float, int] = {}
        root = self._levels[0]
        root.cells = np.zeros((1, self.d), dtype=np.int64)
        root.lo = np.zeros(1, dtype=np.int64)
        root.hi = np.full(1, counts.n, dtype=np.int64)
        root.noisy = counts.n + self._noise(0, 1)
        root.first_child = np.full(1, -1, dtype=np.int64)

    def _noise(self, level: int, size: int) -> np.ndarray:
        """``size`` fresh LapZ(sigma_level) draws.  Levels that share a scale share a pool
        of i.i.d. draws, refilled in bulk (each draw is used once), so a schedule with one
        level scale costs a few sampler calls per release instead of one per level."""
        scale = self.scales[level]
        pool = self._pools.get(scale, np.zeros(0, dtype=np.int64))
        if pool.size < size:
            want = max(size - pool.size, 4096, 2 * self._drawn.get(scale, 0))
            fresh = sample_discrete_laplace(np.full(want, scale), self._rng, self._backend)
            pool = np.concatenate([pool, fresh])
            self._drawn[scale] = self._drawn.get(scale, 0) + want
        self._pools[scale] = pool[size:]
        return pool[:size]

    @property
    def visited(self) -> int:
        """The number of nodes whose noisy count has been drawn."""
        return self._forgotten + int(sum(level.noisy.size for level in self._levels))

    def forget(self, level: int) -> None:
        """Free the nodes of ``level`` (a caller that will not revisit them saves memory).

        Their noise stays drawn and counted in :attr:`visited`; asking for them again raises.
        """
        lvl = self._levels[level]
        self._forgotten += int(lvl.noisy.size)
        self._levels[level] = _Level(self.d)
        self._levels[level].first_child = np.zeros(0, dtype=np.int64)
        self._gone.add(level)

    def root(self) -> int:
        """The noisy root count ``n + LapZ(sigma_0)``."""
        return int(self._levels[0].noisy[0])

    def cells(self, level: int, handles: np.ndarray) -> np.ndarray:
        """Per-coordinate cell indices (public) of the given nodes of ``level``, shape (k, d)."""
        return self._levels[level].cells[handles]

    def children(self, level: int, handles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two children of nodes ``handles`` of ``level``.

        :return: ``(child_handles, noisy_counts)``, both shape (k, 2): column 0 is the lower
            half of the split coordinate, column 1 the upper half.
        """
        if not 0 <= level < self.depth:
            raise ValueError(f"level must be in [0, {self.depth}), got {level}")
        if level in self._gone:
            raise ValueError(f"level {level} was forgotten and cannot be asked again")
        handles = np.asarray(handles, dtype=np.int64)
        parent = self._levels[level]
        if handles.size and (handles.min() < 0 or handles.max() >= parent.noisy.size):
            raise IndexError("handles must address nodes already materialised at this level")
        pending = handles[parent.first_child[handles] < 0]
        if pending.size:  # distinct, increasing, without hashing: a mask over the level
            mask = np.zeros(parent.noisy.size, dtype=bool)
            mask[pending] = True
            new = np.flatnonzero(mask)
        else:
            new = pending
        if new.size:
            self._expand(level, new)
        first = parent.first_child[handles]
        child = self._levels[level + 1]
        ch = np.stack([first, first + 1], axis=1)
        return ch, child.noisy[ch]

    def _expand(self, level: int, new: np.ndarray) -> None:
        parent = self._levels[level]
        child = self._levels[level + 1]
        lo, hi = parent.lo[new], parent.hi[new]
        mid = self._counts.split(level, lo, hi)
        k = new.size
        c = level % self.d
        cells = np.repeat(parent.cells[new], 2, axis=0)
        cells[:, c] *= 2
        cells[1::2, c] += 1
        c_lo = np.empty(2 * k, dtype=np.int64)
        c_hi = np.empty(2 * k, dtype=np.int64)
        c_lo[0::2], c_hi[0::2] = lo, mid
        c_lo[1::2], c_hi[1::2] = mid, hi
        start = child.noisy.size
        parent.first_child[new] = start + 2 * np.arange(k)
        child.cells = np.concatenate([child.cells, cells])
        child.lo = np.concatenate([child.lo, c_lo])
        child.hi = np.concatenate([child.hi, c_hi])
        child.noisy = np.concatenate([child.noisy, (c_hi - c_lo) + self._noise(level + 1, 2 * k)])
        child.first_child = np.concatenate([child.first_child, np.full(2 * k, -1, dtype=np.int64)])

    def cell_bits(self, level: int) -> np.ndarray:
        """Bits per coordinate of a level-``level`` cell index (cell side is ``2^-bits``)."""
        return coord_bits_at_level(level, self.d)
