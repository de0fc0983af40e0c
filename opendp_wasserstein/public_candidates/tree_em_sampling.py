r"""Exact sampling from the tree exponential mechanism over size-``m`` multisets (Tree-EM).

Given a tree ``T`` on ``k`` candidates, the data's leaf counts ``A`` (``n`` points) and a size
``m``, a multiset ``S`` with leaf counts ``c`` (``c_v`` its count below node ``v``) has tree
1-Wasserstein distance ``W1_T(A/n, c/m) = sum_v w_v |A_v/n - c_v/m|`` to the data, and Tree-EM
samples

.. math:: P(S) \propto \exp(-\alpha\, W1_T(A/n, c/m)), \qquad \alpha = \epsilon n / (2
   \operatorname{diam}(T))

over all ``C(k + m - 1, m)`` multisets, exactly, by dynamic programming (Zare Moayedi et al.,
*Private selection from public candidates with Wasserstein guarantees*):

- the tree is made binary: chains of single-child nodes are merged (their subtree masses are
  equal, so their weights add) and a node with ``d > 2`` children becomes a balanced binary
  tree of zero-weight auxiliary nodes (a zero weight contributes nothing to the score);
- bottom-up, ``F_v(c)`` is the log of the sum, over the configurations of ``v``'s subtree with
  ``c`` points, of the exponentiated scores of the edges below ``v``: ``F_leaf = 0``,
  ``G_u(c) = F_u(c) - alpha w_u |A_u/n - c/m|`` and ``F_v = G_left (+) G_right`` with the
  log-sum-exp convolution ``(f (+) g)(c) = log sum_{t <= c} exp(f(t) + g(c - t))``, stabilised
  by the maximum of every anti-diagonal; ``log Z = F_root(m)``;
- top-down, the root holds ``m`` and a node holding ``c`` sends ``t`` to its left child with
  probability ``exp(G_left(t) + G_right(c - t) - F_v(c))``, by inverse CDF on uniforms from the
  :class:`~opendp_wasserstein.noise._source.RandomSource`.

Every height of the binary tree is one batched (vectorised) convolution, every depth one batched
categorical draw: ``O(k m^2)`` time, ``O(k m)`` memory (the ``G`` tables), and ``O(height)``
Python iterations.

**Floating point.** The distribution is exact in real arithmetic; the implementation computes
the scores, the log-sum-exp recursion and the inverse-CDF draws in float64 (relative errors
about ``1e-13`` in the probabilities), and the uniforms are multiples of ``2^-53``.  These are
the places floats enter the privacy argument; a later version should gate this mechanism behind
OpenDP's ``"honest-but-curious"``/idealised-numerics feature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.trees import Tree

__all__ = [
    "BinaryTree",
    "binarize",
    "tree_em_tables",
    "tree_em_log_partition",
    "tree_em_log_probability",
    "sample_tree_em",
]

#: elements per batched temporary array (about 16 MB of float64)
_BLOCK = 1 << 21


@dataclass(frozen=True)
class BinaryTree:
    """A full binary tree (every internal node has two children) equivalent to a :class:`Tree`
    for tree W1: ``left``/``right`` are -1 at leaves, ``candidate`` is -1 at internal nodes.
    Nodes are numbered so that parents come before children."""

    parent: np.ndarray
    left: np.ndarray
    right: np.ndarray
    weight: np.ndarray
    candidate: np.ndarray
    leaf_of: np.ndarray  # node of candidate i
    height: np.ndarray  # edges to the deepest leaf below
    depth: np.ndarray


def binarize(tree: Tree) -> BinaryTree:
    """Merge single-child chains and split nodes of degree ``> 2`` with zero-weight nodes."""
    parent: list[int] = []
    weight: list[float] = []
    candidate: list[int] = []

    def add(par: int, w: float) -> int:
        parent.append(par)
        weight.append(w)
        candidate.append(-1)
        return len(parent) - 1

    tw = tree.weight
    # stack items: (original node, new parent, weight carried from above)
    stack: list[tuple[int, int, float]] = [(0, -1, 0.0)]
    while stack:
        v, par, w = stack.pop()
        w += float(tw[v])
        while tree.degree[v] == 1:
            v = int(tree.child_ids[tree.child_ptr[v]])
            w += float(tw[v])
        if par < 0:
            w = 0.0  # the root: a single-child chain below it has mass 1 against m/m
        nid = add(par, w)
        if tree.degree[v] == 0:
            candidate[nid] = int(tree.leaf_index[v])
            continue
        # a balanced binary split of the children, auxiliary nodes weigh 0
        groups: list[tuple[list[int], int]] = [(tree.children(v).tolist(), nid)]
        while groups:
            items, at = groups.pop()
            half = len(items) // 2
            for part in (items[:half], items[half:]):
                if len(part) == 1:
                    stack.append((part[0], at, 0.0))
                else:
                    groups.append((part, add(at, 0.0)))
    par_a = np.asarray(parent, dtype=np.int64)
    N = par_a.size
    left = np.full(N, -1, dtype=np.int64)
    right = np.full(N, -1, dtype=np.int64)
    kids = np.arange(1, N)
    order = np.argsort(par_a[1:], kind="stable")
    kids = kids[order]
    left[par_a[kids[0::2]]] = kids[0::2]
    right[par_a[kids[1::2]]] = kids[1::2]
    cand = np.asarray(candidate, dtype=np.int64)
    leaf_of = np.empty(tree.k, dtype=np.int64)
    leaf_of[cand[cand >= 0]] = np.flatnonzero(cand >= 0)
    depth = np.zeros(N, dtype=np.int64)
    for v in range(1, N):  # parents come before children
        depth[v] = depth[par_a[v]] + 1
    height = np.zeros(N, dtype=np.int64)
    for v in range(N - 1, 0, -1):
        p = par_a[v]
        if height[v] + 1 > height[p]:
            height[p] = height[v] + 1
    return BinaryTree(par_a, left, right, np.asarray(weight), cand, leaf_of, height, depth)


def _lse_convolve(f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Row-wise ``out[b, c] = log sum_{t <= c} exp(f[b, t] + g[b, c - t])``, stabilised by the
    maximum of every anti-diagonal.  ``g[b, c - t]`` is read through a strided (Toeplitz) view
    and rows are processed in blocks so that only ``t <= c`` (about half the square) is formed.
    """
    B, M1 = f.shape
    m = M1 - 1
    gpad = np.concatenate((np.full((B, m), -np.inf), g), axis=1)[:, ::-1]
    W = sliding_window_view(gpad, M1, axis=1)[:, ::-1, :]  # W[b, c, t] = g[b, c - t] or -inf
    out = np.empty((B, M1))
    rb = M1 if M1 <= 256 else 128
    for c0 in range(0, M1, rb):
        c1 = min(M1, c0 + rb)
        step = max(1, _BLOCK // ((c1 - c0) * c1))
        for s in range(0, B, step):
            S = W[s : s + step, c0:c1, :c1] + f[s : s + step, None, :c1]
            mx = S.max(axis=2)
            S -= mx[:, :, None]
            np.exp(S, out=S)
            out[s : s + step, c0:c1] = mx + np.log(S.sum(axis=2))
    return out


def _edge_terms(
    bt: BinaryTree, counts: np.ndarray, n: int, m: int, epsilon: float, diam: float
) -> np.ndarray:
    """``-alpha w_v |A_v/n - c/m|`` for every node and ``c = 0..m`` (rows), as
    ``-(epsilon w_v / (2 diam m)) |A_v m - c n|`` with the integer part exact."""
    N = bt.parent.size
    A = np.zeros(N, dtype=np.int64)
    A[bt.leaf_of] = counts
    # subtree counts, one vectorised pass per depth, deepest first
    by_depth = np.argsort(bt.depth, kind="stable")
    starts = np.searchsorted(bt.depth[by_depth], np.arange(int(bt.depth.max()) + 2))
    for dep in range(int(bt.depth.max()), 0, -1):
        nodes = by_depth[starts[dep] : starts[dep + 1]]
        np.add.at(A, bt.parent[nodes], A[nodes])
    if diam <= 0.0:
        return np.zeros((N, m + 1))
    coef = epsilon * bt.weight / (2.0 * diam * m)
    gap = np.abs(
        A[:, None].astype(np.float64) * m - np.arange(m + 1, dtype=np.float64)[None, :] * n
    )
    return -coef[:, None] * gap


def tree_em_tables(
    tree: Tree | BinaryTree,
    counts: np.ndarray,
    n: int,
    m: int,
    epsilon: float,
    diam: float | None = None,
) -> tuple[BinaryTree, np.ndarray]:
    """The binary tree and the ``G`` table (``N x (m + 1)``) of the recursion; ``G[root]`` is
    ``F_root`` (the root has no edge), so ``log Z = G[0, m]``.

    :param tree: the tree (or its :func:`binarize` form)
    :param counts: the data's count at every candidate (``k`` ints summing to ``n``)
    :param n: the number of records
    :param m: the multiset size
    :param epsilon: the privacy parameter
    :param diam: the tree diameter used for the sensitivity; default ``tree.diameter()``
    """
    if isinstance(tree, Tree):
        if diam is None:
            diam = tree.diameter()
        bt = binarize(tree)
    else:
        bt = tree
        if diam is None:
            raise ValueError("diam is needed with a BinaryTree")
    counts = np.asarray(counts, dtype=np.int64)
    G = _edge_terms(bt, counts, n, m, epsilon, diam)
    internal = np.flatnonzero(bt.left >= 0)
    if internal.size:
        h = bt.height[internal]
        order = internal[np.argsort(h, kind="stable")]
        bounds = np.searchsorted(bt.height[order], np.arange(1, int(h.max()) + 2))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            nodes = order[a:b]
            G[nodes] += _lse_convolve(G[bt.left[nodes]], G[bt.right[nodes]])
    return bt, G


def tree_em_log_partition(tree: Tree, counts: np.ndarray, n: int, m: int, epsilon: float) -> float:
    """``log Z = log sum_S exp(-alpha W1_T(A/n, S/m))`` over all size-``m`` multisets."""
    _, G = tree_em_tables(tree, counts, n, m, epsilon)
    return float(G[0, m])


def tree_em_log_probability(
    tree: Tree, counts: np.ndarray, n: int, m: int, epsilon: float, multiset: np.ndarray
) -> float:
    """``log P(S)`` under Tree-EM for the multiset with leaf counts ``multiset``."""
    diam = tree.diameter()
    mult = np.asarray(multiset, dtype=np.int64)
    if mult.shape != (tree.k,) or mult.sum() != m or np.any(mult < 0):
        raise ValueError(f"multiset must be {tree.k} non-negative counts summing to m = {m}")
    score = 0.0
    if diam > 0:
        a = tree.subtree_sums(np.asarray(counts, dtype=np.int64)).astype(np.float64)
        c = tree.subtree_sums(mult).astype(np.float64)
        score = -epsilon / (2.0 * diam * m) * float(np.sum(tree.weight * np.abs(a * m - c * n)))
    return score - tree_em_log_partition(tree, counts, n, m, epsilon)


def _categorical(logw: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Row-wise inverse-CDF draw from unnormalised log-weights (``-inf`` allowed)."""
    mx = logw.max(axis=1, keepdims=True)
    w = np.exp(logw - mx)
    cdf = np.cumsum(w, axis=1)
    target = u * cdf[:, -1]
    idx = (cdf <= target[:, None]).sum(axis=1)
    # u * total may round up to total: never return past the last positive weight
    last = logw.shape[1] - 1 - np.argmax((w > 0)[:, ::-1], axis=1)
    return np.minimum(idx, last)


def sample_tree_em(
    tree: Tree,
    counts: np.ndarray,
    m: int,
    epsilon: float,
    rng: RandomSource,
    n: int | None = None,
    draws: int | None = None,
) -> np.ndarray:
    """A Tree-EM draw: ``k`` multiplicities (int64) summing to ``m``.

    :param tree: the public tree on the ``k`` candidates
    :param counts: the data's count at every candidate (``k`` non-negative ints)
    :param m: the multiset size
    :param epsilon: the privacy parameter of one replacement
    :param rng: the randomness (uniforms for the inverse-CDF draws)
    :param n: the (public) number of records; default ``counts.sum()``
    :param draws: ``None`` for one draw (shape ``(k,)``), else that many independent draws
        (shape ``(draws, k)``) from one set of tables; every draw is a release of its own
        (``draws`` epsilon-DP releases compose), this is for tests and simulations
    """
    counts = np.asarray(counts, dtype=np.int64)
    if n is None:
        n = int(counts.sum())
    R = 1 if draws is None else int(draws)
    if R < 1:
        raise ValueError("draws must be >= 1")
    bt, G = tree_em_tables(tree, counts, n, m, epsilon)
    N = bt.parent.size
    c = np.zeros((N, R), dtype=np.int64)
    c[0] = m
    internal = np.flatnonzero(bt.left >= 0)
    if internal.size:
        d = bt.depth[internal]
        order = internal[np.argsort(d, kind="stable")]
        bounds = np.searchsorted(bt.depth[order], np.arange(0, int(d.max()) + 2))
        t_all = np.arange(m + 1)
        step = max(1, _BLOCK // ((m + 1) * R))
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            nodes = order[a:b]
            for s in range(0, nodes.size, step):
                v = nodes[s : s + step]
                cv = c[v].reshape(-1)  # (nodes x draws), node-major
                rows = np.repeat(v, R)
                gl = G[bt.left[rows]]
                gr = G[bt.right[rows]]
                rest = cv[:, None] - t_all[None, :]
                valid = rest >= 0
                logw = np.where(
                    valid, gl + np.take_along_axis(gr, np.maximum(rest, 0), axis=1), -np.inf
                )
                t = _categorical(logw, rng.uniform(cv.size)).reshape(v.size, R)
                c[bt.left[v]] = t
                c[bt.right[v]] = c[v] - t
    leaves = bt.candidate >= 0
    out = np.zeros((R, tree.k), dtype=np.int64)
    out[:, bt.candidate[leaves]] = c[leaves].T
    return out[0] if draws is None else out
