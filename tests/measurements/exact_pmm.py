"""Exact output distributions of depth-2 Pruned-PMM and PMM on tiny sized datasets.

The noisy tree's pmf is a product of discrete Laplace pmfs; every split depends on one noisy
sibling pair, so the distribution of the leaf masses is a product of per-node split laws,
each an explicit sum over a truncated noise grid (the truncated mass is below 1e-25).
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

Z = 250


def lapz_pmf(scale: float) -> tuple[np.ndarray, np.ndarray]:
    z = np.arange(-Z, Z + 1)
    p = (1 - np.exp(-1 / scale)) / (1 + np.exp(-1 / scale)) * np.exp(-np.abs(z) / scale)
    return z, p


def split_law(mass: int, c0: int, c1: int, scale: float, pruned: bool) -> dict[int, float]:
    """P(lower child's corrected mass = m0) for parent mass ``mass`` and exact counts c0, c1."""
    if mass == 0:
        return {0: 1.0}
    z, p = lapz_pmf(scale)
    a = np.maximum(c0 + z, 0)[:, None]
    b = np.maximum(c1 + z, 0)[None, :]
    w = p[:, None] * p[None, :]
    tot = a + b
    m0 = np.where(tot > 0, (mass * a) // np.where(tot > 0, tot, 1), mass // 2)
    law: dict[int, float] = defaultdict(float)
    both = (a == 0) & (b == 0)
    for v in range(mass + 1):
        law[v] += float(w[(m0 == v) & ~both].sum())
    pb = float(w[both].sum())
    if pruned:
        law[mass] += pb / 2
        law[0] += pb / 2
    else:
        law[mass // 2] += pb
    return dict(law)


def leaf_law(
    counts1: tuple[int, int], counts2: tuple[int, int, int, int], n: int, scales, pruned: bool
):
    """Law of the 4 leaf masses of a depth-2 tree with public size n."""
    out: dict[tuple[int, ...], float] = defaultdict(float)
    root = split_law(n, counts1[0], counts1[1], scales[1], pruned)
    for m0, p0 in root.items():
        left = split_law(m0, counts2[0], counts2[1], scales[2], pruned)
        right = split_law(n - m0, counts2[2], counts2[3], scales[2], pruned)
        for (l0, pl), (r0, pr) in itertools.product(left.items(), right.items()):
            out[(l0, m0 - l0, r0, n - m0 - r0)] += p0 * pl * pr
    return dict(out)


def counts_of(u: np.ndarray) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """Level-1 and level-2 counts of 2-D points (level 1 splits x, level 2 splits y)."""
    x_hi = u[:, 0] >= 0.5
    y_hi = u[:, 1] >= 0.5
    c1 = (int((~x_hi).sum()), int(x_hi.sum()))
    c2 = (
        int((~x_hi & ~y_hi).sum()),
        int((~x_hi & y_hi).sum()),
        int((x_hi & ~y_hi).sum()),
        int((x_hi & y_hi).sum()),
    )
    return c1, c2


# ---------------------------------------------------------------------------------------------
# any depth and split order: the law of the leaf masses from the exact counts of every level


def level_counts(cells_by_level: list[np.ndarray], depth: int) -> list[np.ndarray]:
    """Exact counts of every node of levels ``0 .. depth`` in Morton-prefix order, from each
    point's Morton prefix at every level (``cells_by_level[j][i]``: point i's level-j prefix)."""
    return [np.bincount(cells_by_level[j], minlength=2**j) for j in range(depth + 1)]


def morton_prefixes(u: np.ndarray, axes: tuple[int, ...]) -> list[np.ndarray]:
    """Each point's Morton prefix at every level ``0 .. len(axes)`` for the split order ``axes``
    (bisecting the coordinates directly; a point on a split plane goes up)."""
    n, d = u.shape
    lo, hi = np.zeros((n, d)), np.ones((n, d))
    prefix = np.zeros(n, dtype=np.int64)
    out = [prefix.copy()]
    for c in axes:
        mid = (lo[:, c] + hi[:, c]) / 2
        up = u[:, c] >= mid
        prefix = 2 * prefix + up
        lo[:, c] = np.where(up, mid, lo[:, c])
        hi[:, c] = np.where(up, hi[:, c], mid)
        out.append(prefix.copy())
    return out


def tree_law(
    counts: list[np.ndarray], n: int, scales, pruned: bool
) -> dict[tuple[int, ...], float]:
    """Law of the ``2^depth`` leaf masses (Morton-prefix order) of a depth-``len(counts) - 1``
    release with public size ``n``: a product of per-node split laws, level by level."""
    cache: dict[tuple[int, int, int, int], dict[int, float]] = {}

    def node(mass: int, c0: int, c1: int, j: int) -> dict[int, float]:
        key = (mass, c0, c1, j)
        if key not in cache:
            cache[key] = split_law(mass, c0, c1, scales[j], pruned)
        return cache[key]

    law: dict[tuple[int, ...], float] = {(n,): 1.0}
    for j in range(1, len(counts)):
        nxt: dict[tuple[int, ...], float] = defaultdict(float)
        c = counts[j]
        for masses, p in law.items():
            parts = [
                node(m, int(c[2 * i]), int(c[2 * i + 1]), j).items() for i, m in enumerate(masses)
            ]
            for combo in itertools.product(*parts):
                q = p
                kids: list[int] = []
                for (m0, pr), m in zip(combo, masses, strict=True):
                    q *= pr
                    kids += [m0, m - m0]
                if q > 0:
                    nxt[tuple(kids)] += q
        law = dict(nxt)
    return law
