"""The full noisy count tree: the release of
:func:`~opendp_wasserstein.measurements.make_tree_laplace`.

The privacy argument (Zare Moayedi et al. 2026, Appendix A.3) adds independent noise
``lambda_theta ~ LapZ(sigma_|theta|)`` at every node of the complete depth-``r`` tree and
releases ``n_theta + lambda_theta``.  :class:`NoisyTree` is exactly that vector, and nothing
else: per level, the noisy counts of all ``2^j`` cells in Morton-prefix order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from opendp_wasserstein.hierarchy.cells import CountTree
from opendp_wasserstein.hierarchy.traversal import child_cells, noise_draw
from opendp_wasserstein.noise.node_noise import NodeNoise, add_noise

__all__ = ["NoisyTree", "draw_full_tree"]


@dataclass(frozen=True)
class NoisyTree:
    """Noisy counts of every node of the complete dyadic tree (a release: public).

    :param levels: ``levels[j][p]`` is the noisy count of the level-``j`` cell with Morton prefix
        ``p`` (``2^j`` entries, int64, read-only); ``levels[0]`` is the root (absent, ``None``-free
        but meaningless, when the root is not released: see ``root_released``)
    :param d: the dimension
    :param scales: the noise scales ``sigma_0 .. sigma_depth``
    :param root_released: whether ``levels[0]`` holds a noisy root count
    """

    levels: tuple[np.ndarray, ...]
    d: int
    scales: tuple[float, ...]
    root_released: bool

    def __post_init__(self) -> None:
        for arr in self.levels:
            arr.setflags(write=False)

    @property
    def depth(self) -> int:
        return len(self.levels) - 1

    @property
    def nodes(self) -> int:
        """The number of noisy counts released."""
        return int(sum(a.size for a in self.levels)) - (0 if self.root_released else 1)


def draw_full_tree(
    counts: CountTree,
    scales: tuple[float, ...],
    noise: NodeNoise,
    release_root: bool,
    distribution: str = "laplace",
) -> NoisyTree:
    """Noise every node of the complete tree of ``counts`` (exact counts, read only here).

    :param counts: the exact count tree
    :param scales: ``sigma_0 .. sigma_depth``
    :param noise: the noise source
    :param release_root: whether to noise and release the root count (when the size is private)
    :param distribution: ``"laplace"`` or ``"gaussian"`` (``N_Z(0, sigma_j^2)``)
    """
    draw = noise_draw(noise, distribution)
    d = counts.d
    cells = np.zeros((1, d), dtype=np.int64)
    root = np.zeros(1, dtype=np.int64)
    if release_root:
        root = add_noise(np.array([counts.n]), draw(0, cells, scales[0]))
    levels = [root.astype(np.int64)]
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, counts.n, dtype=np.int64)
    for level in range(counts.depth):
        lo, hi = counts.children(level, lo, hi)
        cells = child_cells(cells, level, counts.axes)
        levels.append(add_noise(hi - lo, draw(level + 1, cells, scales[level + 1])))
    return NoisyTree(tuple(levels), d, tuple(scales), release_root)
