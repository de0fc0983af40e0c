"""Least-squares consistency on the pruned tree: post-processing of released noisy counts.

Hay, Rastogi, Miklau, Suciu (VLDB 2010) replace the noisy counts of a complete tree by the
closest consistent counts in least squares, in two linear passes; Cormode et al. (ICDE 2012)
carry this to per-level noise.  Here it runs on the tree a pruned traversal has visited, with
the noise variance of each level:

- **what is estimated**: the count ``x_v`` of every visited node; the unknowns are the counts of
  the visited tree's leaves (nodes of depth ``r``, and nodes the traversal did not expand) and a
  visited node's count is the sum of its visited children's.  Every visited node ``v`` of level
  ``j`` has one observation, its noisy count ``y_v = x_v + noise`` with variance ``V_j`` (discrete
  Laplace of scale ``s``: ``2 e^{-1/s} / (1 - e^{-1/s})^2``; discrete Gaussian ``N_Z(0,
  sigma^2)``: at most ``sigma^2``, used as is); a public root mass is an exact observation.
- **bottom-up**: ``z_v`` is the best linear unbiased estimate of ``x_v`` from the observations of
  ``v``'s subtree, ``W_v`` its variance: at a leaf ``z_v = y_v, W_v = V_j``; at an expanded node
  the inverse-variance mean of ``y_v`` (variance ``V_j``) and the children's ``z`` summed
  (variance ``sum W_c``).
- **top-down**: the root's estimate ``h_root`` is the public mass (variance 0) or ``z_root``; a
  child's is ``h_c = z_c + W_c / sum W * (h_v - sum z)``, the residual of its parent shared in
  proportion to the children's variances, with variance ``P_c = W_c - (W_c / sum W)^2 (sum W -
  P_v)``.  This is the generalised least-squares solution (the tests compare it with a dense
  weighted solve).

**From estimates to masses.**  The integer masses are then split top-down as in the paper
(Algorithm 2), with the estimates in place of the noisy counts: a node's mass ``M`` goes to its
two children in proportion to ``max(h_c, 0)`` (floor for the lower child, the rest to the upper),
a child is read as empty (weight 0) when the traversal did not expand it (the paper gave it mass
0) or when both ``h_c <= threshold * sqrt(P_c)`` (a one-sided test of ``x_c > 0`` fails;
``threshold = 0`` only drops negative estimates) and ``h_c <= SHARE * M`` (the child would hold
at most a tenth of the parent's mass, so reading a real child as empty moves little mass), and
when both weights are 0 the paper's own split of ``M`` is used.  So the masses are non-negative
integers summing to the root mass and a node without paper mass has no mass here either; the leaves
are a subset of the paper's.

Which nodes are visited is decided by the paper's rule during the traversal (the least squares
need the whole visited tree, deepest level first, so they cannot steer the traversal); they run
once the traversal is done, on its noisy counts only, so they are post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from opendp_wasserstein.core.parameters import check_threshold

__all__ = [
    "CONSISTENCIES",
    "check_consistency",
    "check_postprocessing",
    "DEFAULT_THRESHOLDS",
    "SHARE",
    "VisitedLevel",
    "noise_variance",
    "TreeEstimates",
    "gls_estimates",
    "least_squares_masses",
    "Forest",
    "forest",
    "descend",
    "top_masses",
]

#: the post-processing rules of the pruned traversal: the paper's (Algorithm 2), or least squares
CONSISTENCIES = ("paper", "least_squares")


#: a child holding more than this share of its parent's mass is never read as empty by the
#: threshold test: reading a real child as empty moves at most this share of the parent's mass,
#: by at most the parent's diameter (measured in ``benchmarks/bench_postprocessing.py``)
SHARE = 0.1

#: the suppression threshold of each rule when none is given: the paper's truncation at 0, and
#: for least squares a one-sided test at 3 standard errors (measured in
#: ``benchmarks/bench_postprocessing.py``)
DEFAULT_THRESHOLDS = {"paper": 0.0, "least_squares": 3.0}


def check_consistency(consistency: str) -> str:
    """``consistency`` if it is one of :data:`CONSISTENCIES`, else a ValueError naming it."""
    if not isinstance(consistency, str) or consistency not in CONSISTENCIES:
        raise ValueError(f"consistency must be one of {CONSISTENCIES}, got {consistency!r}")
    return consistency


def check_postprocessing(consistency: str, threshold: float | None) -> tuple[str, float]:
    """The checked ``(consistency, threshold)``; ``threshold=None`` is the rule's default
    (:data:`DEFAULT_THRESHOLDS`).

    :example:

    >>> check_postprocessing("least_squares", None), check_postprocessing("paper", 2)
    (('least_squares', 3.0), ('paper', 2.0))
    """
    consistency = check_consistency(consistency)
    if threshold is None:
        return consistency, DEFAULT_THRESHOLDS[consistency]
    return consistency, check_threshold(threshold)


@dataclass(frozen=True)
class VisitedLevel:
    """The visited nodes of one level ``j >= 1`` of a pruned traversal (not a release on its own).

    Children come in pairs: rows ``2i, 2i+1`` are the two children of the ``i``-th expanded node
    of level ``j - 1`` (in traversal order).

    :param noisy: their noisy counts (before truncation), int64
    :param paper: the masses the paper's rule gave them (int64, >= 0); the nodes with positive
        paper mass are the ones expanded, in order
    """

    noisy: np.ndarray
    paper: np.ndarray


def noise_variance(scale: float, distribution: str = "laplace") -> float:
    """The variance of one node's noise: ``LapZ(s)``: ``2 e^{-1/s} / (1 - e^{-1/s})^2``;
    ``N_Z(0, s^2)``: ``s^2`` (an upper bound, within ``1e-6`` of it for ``s >= 1``); ``inf`` for
    ``s = inf`` (not observed).

    :example:

    >>> round(noise_variance(1.0), 6)   # 2 e^-1 / (1 - e^-1)^2
    1.841347
    >>> noise_variance(float("inf"))
    inf
    """
    s = float(scale)
    if math.isinf(s):
        return math.inf
    if distribution == "gaussian":
        return s * s
    q = math.exp(-1.0 / s)
    return 2.0 * q / (-math.expm1(-1.0 / s)) ** 2


@dataclass(frozen=True)
class TreeEstimates:
    """Least-squares estimates of the visited nodes' counts (float64), level by level.

    :param root: the root's estimate ``h_0``
    :param levels: ``levels[j - 1]`` holds the estimates ``h_v`` of the visited nodes of level
        ``j`` in the order of :class:`VisitedLevel`
    :param errors: their standard errors ``sqrt(P_v)``, same layout
    """

    root: float
    levels: tuple[np.ndarray, ...]
    errors: tuple[np.ndarray, ...]


def _pairs(x: np.ndarray) -> np.ndarray:
    return x.reshape(-1, 2).sum(axis=1)


def _bottom_up(
    levels: list[VisitedLevel] | tuple[VisitedLevel, ...],
    variances: tuple[float, ...],
    top: int = 0,
    below: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``z_v`` and ``W_v`` of every visited node of levels ``top + 1 .. top + len(levels)`` (index
    ``j - top`` for level ``j``).  ``below``: the sums ``(sum z, sum W)`` over the two children of
    every expanded node of the deepest level, when the tree goes on below it (a forest whose
    bottom-up ran elsewhere, :func:`forest`)."""
    r = len(levels)
    z: list[np.ndarray] = [np.zeros(0)] * (r + 1)
    w: list[np.ndarray] = [np.zeros(0)] * (r + 1)
    for i in range(r, 0, -1):
        j = top + i
        lv = levels[i - 1]
        zj = lv.noisy.astype(np.float64)
        wj = np.full(zj.size, variances[j])
        sums = (_pairs(z[i + 1]), _pairs(w[i + 1])) if i < r else below
        if sums is not None:
            exp = np.flatnonzero(lv.paper > 0)
            zs, wsum = sums
            v = variances[j]
            zj[exp] = (zj[exp] * wsum + zs * v) / (wsum + v)
            wj[exp] = wsum * v / (wsum + v)
        z[i], w[i] = zj, wj
    return z, w


def _root(
    z1: np.ndarray,
    w1: np.ndarray,
    variances: tuple[float, ...],
    root_noisy: int | None,
    root_mass: int | None,
) -> tuple[float, float]:
    """The root's estimate and variance: the public mass (variance 0), else the inverse-variance
    mean of the noisy root and the children's sum."""
    s, ws = float(z1.sum()), float(w1.sum())
    if root_mass is not None:
        return float(root_mass), 0.0
    if root_noisy is None or math.isinf(
        variances[0]
    ):  # pragma: no cover - constructors refuse this
        return s, ws
    v0 = variances[0]
    return (root_noisy * ws + s * v0) / (ws + v0), ws * v0 / (ws + v0)


def _top_down(
    levels: list[VisitedLevel] | tuple[VisitedLevel, ...],
    z: list[np.ndarray],
    w: list[np.ndarray],
    h_parent: np.ndarray,
    p_parent: np.ndarray,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(h, P)`` of the visited nodes of the levels below the expanded nodes whose estimates
    and variances are ``h_parent, p_parent``, one level at a time."""
    for j in range(1, len(levels) + 1):
        wz = w[j].reshape(-1, 2)
        ws_pair = wz.sum(axis=1)
        share = wz / ws_pair[:, None]
        resid = h_parent - _pairs(z[j])
        h = (z[j].reshape(-1, 2) + share * resid[:, None]).reshape(-1)
        p = np.maximum(wz - share**2 * (ws_pair - p_parent)[:, None], 0.0).reshape(-1)
        yield h, p
        exp = np.flatnonzero(levels[j - 1].paper > 0)
        h_parent, p_parent = h[exp], p[exp]


def gls_estimates(
    levels: list[VisitedLevel],
    variances: tuple[float, ...],
    root_noisy: int | None,
    root_mass: int | None,
) -> TreeEstimates:
    """The generalised least-squares counts of the visited tree (see the module docstring).

    :param levels: the visited levels ``1 .. r``
    :param variances: ``V_0 .. V_r``, the noise variance of each level
    :param root_noisy: the root's noisy count, or None when it is not released
    :param root_mass: the public root mass, or None (the root is then estimated)
    """
    z, w = _bottom_up(levels, variances)
    h0, p0 = _root(z[1], w[1], variances, root_noisy, root_mass)
    hs, ps = zip(*_top_down(levels, z, w, np.array([h0]), np.array([p0])), strict=True)
    return TreeEstimates(h0, tuple(hs), tuple(np.sqrt(p) for p in ps))


@dataclass(frozen=True)
class Forest:
    """The visited subtrees below the expanded nodes of level ``top`` (their roots) with the
    bottom-up values of their nodes: what a part of a distributed release holds between the
    two passes (not a release on its own).

    :param top: the level of the roots
    :param levels: the visited levels ``top + 1 ..`` (as :class:`VisitedLevel`, children of the
        roots first)
    :param z: ``z[i]`` the bottom-up estimates of level ``top + i`` (``z[0]`` unused)
    :param w: their variances ``W``, same layout
    """

    top: int
    levels: tuple[VisitedLevel, ...]
    z: tuple[np.ndarray, ...]
    w: tuple[np.ndarray, ...]

    def root_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sum z, sum W)`` over the two children of every root: what the bottom-up above the
        roots needs from this forest (``below`` of :func:`forest`)."""
        return _pairs(self.z[1]), _pairs(self.w[1])


def forest(
    levels: list[VisitedLevel] | tuple[VisitedLevel, ...],
    variances: tuple[float, ...],
    top: int = 0,
    below: tuple[np.ndarray, np.ndarray] | None = None,
) -> Forest:
    """The bottom-up pass on the visited levels ``top + 1 .. top + len(levels)`` (``below``: the
    :meth:`Forest.root_sums` of the forests under the deepest level's expanded nodes, in order)."""
    z, w = _bottom_up(levels, variances, top, below)
    return Forest(top, tuple(levels), tuple(z), tuple(w))


def descend(
    f: Forest,
    h: np.ndarray,
    p: np.ndarray,
    mass: np.ndarray,
    threshold: float = 0.0,
    share: float = SHARE,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The top-down pass and the integer split on a forest, from its roots' estimates ``h``,
    variances ``p`` and integer masses ``mass``.

    :return: ``(mass, h, P)`` of the deepest level's nodes the paper's rule gave positive mass
        (in order; some masses may be 0 here)
    """
    for lv, (hc, pc) in zip(f.levels, _top_down(f.levels, list(f.z), list(f.w), h, p), strict=True):
        e = np.sqrt(pc)
        parent = np.repeat(mass, 2).astype(np.float64)
        keep = (lv.paper > 0) & ((hc > threshold * e) | (hc > share * parent))
        weight = np.where(keep, np.maximum(hc, 0.0), 0.0).reshape(-1, 2)
        paper = lv.paper.reshape(-1, 2).astype(np.float64)
        empty = weight.sum(axis=1) <= 0
        weight[empty] = paper[empty]  # both read as empty: the paper's own split
        m0 = _split(mass, weight[:, 0], weight[:, 1])
        child = np.stack([m0, mass - m0], axis=1).reshape(-1)
        exp = lv.paper > 0
        mass, h, p = child[exp], hc[exp], pc[exp]
    return mass, h, p


def top_masses(
    levels: list[VisitedLevel],
    variances: tuple[float, ...],
    root_noisy: int | None,
    root_mass: int | None,
    threshold: float = 0.0,
    share: float = SHARE,
    below: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The root mass and ``(mass, h, P)`` of the expanded nodes of the deepest of the visited
    levels ``1 .. len(levels)`` (``below``: the children sums of those nodes when the tree goes
    on below them, see :func:`forest`)."""
    f = forest(levels, variances, 0, below)
    h0, p0 = _root(f.z[1], f.w[1], variances, root_noisy, root_mass)
    total = int(root_mass) if root_mass is not None else max(1, int(round(h0)))
    mass, h, p = descend(
        f, np.array([h0]), np.array([p0]), np.array([total], dtype=np.int64), threshold, share
    )
    return total, mass, h, p


def _split(mass: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``floor(M a / (a + b))`` in ``[0, M]`` for float weights ``a, b >= 0``, ``a + b > 0``."""
    frac = a / (a + b)
    m0 = np.floor(mass.astype(np.float64) * frac)
    return np.clip(m0, 0, mass.astype(np.float64)).astype(np.int64)


def least_squares_masses(
    levels: list[VisitedLevel],
    variances: tuple[float, ...],
    root_noisy: int | None,
    root_mass: int | None,
    threshold: float = 0.0,
    share: float = SHARE,
) -> tuple[int, np.ndarray]:
    """Integer masses from the least-squares estimates (see the module docstring).

    :param levels: the visited levels ``1 .. r``
    :param variances: ``V_0 .. V_r``
    :param root_noisy: the root's noisy count, or None
    :param root_mass: the public root mass, or None: then ``max(1, round(h_0))``
    :param threshold: a child with ``h_c <= threshold * sqrt(P_c)`` and ``h_c <= share * M``
        (``M`` its parent's mass) is read as empty
    :param share: see ``threshold`` (default :data:`SHARE`)
    :return: the root mass and the masses of the level-``r`` nodes the paper's rule gave positive
        mass (in traversal order; some may be 0 here)
    """
    total, mass, _, _ = top_masses(levels, variances, root_noisy, root_mass, threshold, share)
    return total, mass
