"""Where the noise and the tie-breaking coins of a tree traversal come from.

A traversal asks for the noise of a batch of nodes of one level (and for the coins of the
nodes whose children are both empty) through a :class:`NodeNoise`.  The privacy argument only
needs every node's noise to be an independent ``LapZ(sigma_level)`` draw (``N_Z(0,
sigma_level^2)`` for the zCDP measurements, :meth:`NodeNoise.gaussian`), fixed once drawn, and
the coins to be independent fair bits; :class:`PooledNoise` provides that from one random source.
A node-addressed implementation (noise a function of a secret release key and the node's
identity, so that any worker or retry draws the same value) fits the same interface.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian, sample_discrete_laplace

__all__ = ["NodeNoise", "PooledNoise", "NOISE_LIMIT", "add_noise"]

#: noisy counts are clamped to ``[-2^61, 2^61]`` (with scales <= 2^52 a draw reaches it with
#: probability below ``e^-511``), so that every count, mass and split stays an exact int64
NOISE_LIMIT = 2**61


def add_noise(counts: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``clamp(counts + noise, -2^61, 2^61)``, exactly and without int64 overflow.

    Clamping the noisy count is post-processing of the exact noisy count.  It is computed as
    ``clamp(counts + clamp(noise, +-2^62), +-2^61)``, which is the same value whenever
    ``|counts| <= 2^60`` (a larger draw puts either expression at the clamp).
    """
    z = np.minimum(np.asarray(noise, dtype=np.int64), 2**62)  # clamps without np.clip's
    np.maximum(z, -(2**62), out=z)  # per-call overhead (once per level of a traversal)
    out = np.add(np.asarray(counts, dtype=np.int64), z)
    np.minimum(out, NOISE_LIMIT, out=out)
    np.maximum(out, -NOISE_LIMIT, out=out)
    return out


class NodeNoise(Protocol):
    """Noise and coins for nodes given by their level and per-coordinate cell indices."""

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        """One ``LapZ(scale)`` draw per row of ``cells`` (shape (k, d)), as int64."""
        ...

    def gaussian(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        """One ``N_Z(0, scale^2)`` draw per row of ``cells`` (shape (k, d)), as int64."""
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
        self._pools: dict[tuple[str, float], np.ndarray] = {}
        self._drawn: dict[tuple[str, float], int] = {}

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        return self._draw("laplace", int(cells.shape[0]), scale)

    def gaussian(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        return self._draw("gaussian", int(cells.shape[0]), scale)

    def _draw(self, kind: str, size: int, scale: float) -> np.ndarray:
        key = (kind, scale)
        pool = self._pools.get(key, np.zeros(0, dtype=np.int64))
        if pool.size < size:
            want = max(size - pool.size, 4096, 2 * self._drawn.get(key, 0))
            sampler = sample_discrete_laplace if kind == "laplace" else sample_discrete_gaussian
            fresh = sampler(np.full(want, scale), self._rng, self._backend)
            pool = np.concatenate([pool, fresh])
            self._drawn[key] = self._drawn.get(key, 0) + want
        self._pools[key] = pool[size:]
        return pool[:size]

    def coins(self, level: int, cells: np.ndarray) -> np.ndarray:
        return self._coins.bits(int(cells.shape[0]))
