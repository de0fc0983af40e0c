"""Where the noise and the tie-breaking coins of a tree traversal come from.

A traversal asks for the noise of a batch of nodes of one level (and for the coins of the
nodes whose children are both empty) through a :class:`NodeNoise`.  The privacy argument only
needs every node's noise to be an independent ``LapZ(sigma_level)`` draw, fixed once drawn, and
the coins to be independent fair bits; :class:`PooledNoise` provides that from one random source.
A node-addressed implementation (noise a function of a secret release key and the node's
identity, so that any worker or retry draws the same value) fits the same interface.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.samplers import sample_discrete_laplace

__all__ = ["NodeNoise", "PooledNoise", "NOISE_LIMIT"]

#: noise draws stay below this in magnitude, so noisy counts stay below ``2^62`` (which needs
#: scales <= 2^52: the chance that LapZ(2^52) exceeds 2^61 is about exp(-512)); a draw beyond
#: it is refused, never wrapped
NOISE_LIMIT = 2**61


class NodeNoise(Protocol):
    """Noise and coins for nodes given by their level and per-coordinate cell indices."""

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        """One ``LapZ(scale)`` draw per row of ``cells`` (shape (k, d)), as int64."""
        ...

    def coins(self, level: int, cells: np.ndarray) -> np.ndarray:
        """One fair bit (int64 0/1) per row of ``cells``."""
        ...


class PooledNoise:
    """Independent draws from one :class:`RandomSource`, in the order they are asked for.

    Levels that share a scale draw from one pool of i.i.d. values refilled in bulk (each value
    is used once), so a schedule with one level scale costs a few sampler calls per release
    rather than one per level.  The node identities are not used: each node is asked for once.

    :param rng: the source of the noise
    :param coins: the source of the tie-breaking coins (independent of ``rng``)
    :param backend: the discrete Laplace back-end, or None for the run-time default
    """

    def __init__(self, rng: RandomSource, coins: RandomSource, backend: str | None = None) -> None:
        self._rng = rng
        self._coins = coins
        self._backend = backend
        self._pools: dict[float, np.ndarray] = {}
        self._drawn: dict[float, int] = {}

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        size = int(cells.shape[0])
        pool = self._pools.get(scale, np.zeros(0, dtype=np.int64))
        if pool.size < size:
            want = max(size - pool.size, 4096, 2 * self._drawn.get(scale, 0))
            fresh = sample_discrete_laplace(np.full(want, scale), self._rng, self._backend)
            if fresh.size and int(np.abs(fresh).max()) > NOISE_LIMIT:  # pragma: no cover - p < e^-500
                raise OverflowError("a noise draw exceeded 2^61; scales must be at most 2^52")
            pool = np.concatenate([pool, fresh])
            self._drawn[scale] = self._drawn.get(scale, 0) + want
        self._pools[scale] = pool[size:]
        return pool[:size]

    def coins(self, level: int, cells: np.ndarray) -> np.ndarray:
        return self._coins.bits(int(cells.shape[0]))
