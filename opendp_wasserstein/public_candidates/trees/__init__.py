"""Tree metrics on public candidate sets (Zare Moayedi et al., *Private selection from public
candidates with Wasserstein guarantees*; Fakcharoenphol, Rao, Talwar 2004; Indyk 2004).

A :class:`Tree` is given by ``parent`` and ``weight`` arrays: node 0 is the root
(``parent[0] = -1``), ``weight[i]`` is the weight of the edge from node ``i`` to its parent, and
the leaves (nodes without children), taken in increasing node id, are the candidates
``0 .. k-1``.  The tree metric ``d_T`` between two candidates is the weight of the path between
their leaves, and the 1-Wasserstein distance between two measures on the leaves has the closed
form ``W1_T(mu, nu) = sum_v w_v |mu(T_v) - nu(T_v)|`` (``T_v`` the leaves below ``v``).

Two builders read only public candidates (no privacy cost):

- :func:`frt_tree`, the FRT / HST embedding of a general metric: a random permutation and a
  random radius ``beta`` carve balls of radius ``beta 2^i delta / 2`` at every scale ``i``;
  dominating (``d_T >= d`` on the candidates) with ``E[d_T / d] = O(log k)``;
- :func:`quadtree`, a randomly shifted quadtree for ``l_p`` data in a public box; dominating,
  expected distortion ``O(p log(aspect ratio))``.

Both produce compressed trees (chains of single-child nodes merged, weights summed: leaf
distances are unchanged), so leaves sit at different depths.  Internal nodes are numbered
first (parents before children), then the leaves, leaf ``I + i`` for candidate ``i``.

:func:`closest_multiset` solves ``min_c sum_v w_v |c_v - t_v|`` over size-``m`` multisets on the
leaves (``c_v`` its count in ``T_v``) by a min-plus dynamic programme with convex piecewise-
linear node costs; it is the postprocessor of the hierarchical tree projection.
"""

from __future__ import annotations

from opendp_wasserstein.public_candidates.trees._distortion import distortion
from opendp_wasserstein.public_candidates.trees._frt import TREE_STREAM, frt_tree, resolve_tree
from opendp_wasserstein.public_candidates.trees._multiset import closest_multiset, multiset_cost
from opendp_wasserstein.public_candidates.trees._quadtree import quadtree
from opendp_wasserstein.public_candidates.trees._tree import Tree, tree_w1

__all__ = [
    "Tree",
    "tree_w1",
    "distortion",
    "TREE_STREAM",
    "frt_tree",
    "resolve_tree",
    "quadtree",
    "multiset_cost",
    "closest_multiset",
]
