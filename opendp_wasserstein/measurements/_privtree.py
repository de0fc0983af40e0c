"""PrivTree with exact discrete noise: a data-dependent, locally adaptive hierarchy (Zhang et al.
2016).

A cell splits while its *biased* count passes a noisy threshold: with ``c(v)`` the count of cell
``v`` at level ``l(v)``, ``b(v) = max(c(v) - l(v) delta, theta - delta)`` and the cell splits iff
``b(v) + Z_v > theta``, ``Z_v ~ LapZ(lambda)`` (integer noise, pmf proportional to
``exp(-|z|/lambda)``), down to a public ``max_depth``.  The leaves' counts are then released with
``LapZ(sigma_c)`` and the synthetic points placed in the leaves.  The bias ``delta >= lambda ln 2``
makes the privacy of the structure independent of the depth: ``3/lambda`` per added or removed
record (:doc:`/proofs/privtree`), where the paper's continuous Laplace gives the same
``(2 beta - 1)/((beta - 1) lambda)`` for fanout ``beta = 2``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    replacements,
    validate_data,
)
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.parameters import SCALE_MAX, check_epsilon
from opendp_wasserstein.hierarchy.cells import check_axes, count_tree
from opendp_wasserstein.hierarchy.cells import max_depth as deepest_level
from opendp_wasserstein.hierarchy.placement import check_placement, place_points
from opendp_wasserstein.hierarchy.traversal import LeafMasses, child_cells
from opendp_wasserstein.measurements._nn_histogram import largest_remainder
from opendp_wasserstein.noise._source import NOISE_STREAM, PLACEMENT_STREAM, as_random_source
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise

__all__ = ["make_privtree", "then_privtree", "privtree_parameters", "split_probability"]

#: the namespaces of a release's key: the split decisions and the leaf counts draw independently
_DECISIONS, _LEAF_COUNTS = 1, 2


def privtree_parameters(epsilon_tree: float, epsilon_counts: float) -> tuple[float, int, float]:
    """``(lambda, delta, sigma_c)``: the decision scale ``lambda >= 3/epsilon_tree``, the integer
    bias ``delta = ceil(lambda ln 2)`` and the leaf-count scale ``sigma_c >= 1/epsilon_counts``,
    each rounded so that ``3/lambda <= epsilon_tree`` and ``1/sigma_c <= epsilon_counts``
    exactly."""
    eps_t = check_epsilon(epsilon_tree, "epsilon_tree")
    eps_c = check_epsilon(epsilon_counts, "epsilon_counts")
    lam = round_up(Fraction(3) / Fraction(eps_t))
    sigma_c = round_up(1 / Fraction(eps_c))
    if lam > SCALE_MAX:
        raise ValueError(
            "epsilon_tree is too small: the decision noise scale 3/epsilon_tree would pass 2^52"
        )
    if sigma_c > SCALE_MAX:
        raise ValueError(
            "epsilon_counts is too small: the leaf-count noise scale 1/epsilon_counts would "
            "pass 2^52"
        )
    return lam, math.ceil(lam * math.log(2.0) * (1 + 1e-12)), sigma_c


def split_probability(b: np.ndarray, theta: int, lam: float) -> np.ndarray:
    """``P(b + Z > theta)`` for ``Z ~ LapZ(lam)`` and integer ``b`` (tests and the proof):
    ``q^k / (1 + q)`` with ``k = theta - b + 1 >= 1``, else ``1 - q^(1-k) / (1 + q)``,
    ``q = e^(-1/lam)``."""
    q = math.exp(-1.0 / lam)
    k = theta - np.asarray(b, dtype=np.float64) + 1
    return np.where(k >= 1, q**k / (1 + q), 1 - q ** (1 - k) / (1 + q))


def make_privtree(
    input_domain: Domain,
    input_metric: Metric,
    epsilon_tree: float,
    epsilon_counts: float,
    max_depth: int,
    bounds: Any = None,
    placement: str = "uniform",
    theta: int = 0,
    axes: Any = None,
) -> Measurement:
    r"""Construct PrivTree (Zhang, Xiao, Xie 2016) on the dyadic hierarchy: synthetic data from a
    locally adaptive tree, pure DP with exact integer noise.

    Level by level, every cell of the current frontier draws ``Z ~ LapZ(lambda)`` and splits iff
    ``max(c - l delta, theta - delta) + Z > theta`` (``c`` its count, ``l`` its level), until
    ``max_depth``; the leaves' counts get ``LapZ(sigma_c)`` noise and the points are placed in the
    leaves, at their centres or uniformly: with a public size ``n`` points split over the leaves
    by :func:`~opendp_wasserstein.measurements.largest_remainder` of the noisy counts, else the
    noisy counts clamped at 0 (at least one point: if all are 0, one in the leaf of the largest
    noisy count).  ``lambda``, ``delta`` and ``sigma_c``: :func:`privtree_parameters`.

    Privacy map: ``d_in (3/lambda + 1/sigma_c)`` (at most ``d_in (epsilon_tree + epsilon_counts)``)
    for ``d_in`` added or removed records (``symmetric_distance`` without a size), and twice that
    per replacement (``change_one_distance``, or ``symmetric_distance`` on a sized domain with
    ``d_in = 2`` per replacement), rounded up from the exact sum (:doc:`/proofs/privtree`).

    Required features: ``contrib``

    **Citations:**

    * Zhang, Xiao, Xie, *PrivTree: A Differentially Private Algorithm for Hierarchical
      Decompositions*, SIGMOD 2016

    **Proof Definition:** :doc:`/proofs/privtree`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=d, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param epsilon_tree: the structure's budget per added or removed record (``3/lambda``)
    :param epsilon_counts: the leaf counts' budget per added or removed record (``1/sigma_c``)
    :param max_depth: the deepest level a cell may reach (public), at least 1
    :param bounds: the public box; rows outside are clamped; default the unit cube
    :param placement: ``"uniform"`` (default) or ``"center"`` within the leaves
    :param theta: the integer split threshold (public; default 0, as in the paper)
    :param axes: the split order (default cyclic)
    :return: a Measurement releasing an ``(m, d)`` float array

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_privtree
    >>> dp.enable_features("contrib")
    >>> meas = make_privtree(dp.numpy.array2_domain(num_columns=2, size=1000, T=float),
    ...                      dp.change_one_distance(), epsilon_tree=0.25, epsilon_counts=0.25,
    ...                      max_depth=20)
    >>> meas.map(1)
    1.0
    >>> meas(np.random.default_rng(0).uniform(size=(1000, 2))).shape
    (1000, 2)
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    kind = check_metric(input_metric, n)
    lam, delta, sigma_c = privtree_parameters(epsilon_tree, epsilon_counts)
    if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)):
        raise TypeError(f"max_depth must be an integer, got {type(max_depth).__name__}")
    if not 1 <= int(max_depth) <= deepest_level(d):
        raise ValueError(f"max_depth must be in [1, {deepest_level(d)}], got {max_depth}")
    depth = int(max_depth)
    if (
        isinstance(theta, bool)
        or not isinstance(theta, (int, np.integer))
        or abs(int(theta)) > 2**40
    ):
        raise ValueError(f"theta must be an integer of magnitude at most 2^40, got {theta!r}")
    theta = int(theta)
    placement = check_placement(placement)
    order = check_axes(axes, d, depth)
    box = as_box(bounds, d)
    nan_ok = domain_allows_nan(input_domain)
    per_record = Fraction(3) / Fraction(lam) + 1 / Fraction(sigma_c)

    def function(x: np.ndarray) -> np.ndarray:
        x = validate_data(x, d, n, nan=nan_ok)
        src = as_random_source()
        key = KeyedNodeNoise.from_random_source(src.derive(NOISE_STREAM))
        leaves = grow(
            count_tree(x, depth, box, axes=order), depth, lam, delta, theta, key.derive(_DECISIONS)
        )
        noise = key.derive(_LEAF_COUNTS)
        sizes = [int(c.size) for _, _, c in leaves]
        # never empty: the root is a leaf or has descendants
        raw = np.concatenate([c + noise.laplace(lvl, cells, sigma_c) for lvl, cells, c in leaves])
        if n is not None:  # n points in all, split by largest remainders
            total = largest_remainder(raw, n)
        else:
            total = np.maximum(raw, 0)
            if not total.any():  # at least one row: the leaf of the largest noisy count
                total[int(np.argmax(raw))] = 1
        rng = src.derive(PLACEMENT_STREAM)
        parts, start = [], 0
        for (lvl, cells, _), size in zip(leaves, sizes, strict=True):
            mass = total[start : start + size]
            start += size
            keep = mass > 0
            if keep.any():
                leaf = LeafMasses(cells[keep], mass[keep], lvl, 0, ())
                parts.append(
                    place_points(
                        leaf, box, placement, rng, axes=None if order is None else order[:lvl]
                    )
                )
        out = np.concatenate(parts) if parts else np.zeros((0, d))
        # a binary tree with k leaves has k - 1 inner nodes; they and the leaves above max_depth
        # drew
        k = sum(sizes)
        decisions = k - 1 + sum(int(c.size) for lvl, _, c in leaves if lvl < depth)
        runtime.record(
            {
                "leaves": k,
                "depth": max(lvl for lvl, _, _ in leaves),
                "visited_nodes": decisions + k,
                "lambda": lam,
                "delta": delta,
                "leaf_count_scale": sigma_c,
                "size": len(out),
            }
        )
        return out[rng.permutation(len(out))] if len(out) else out

    def privacy_map(d_in: int) -> float:
        units = replacements(kind, d_in) if n is not None else Fraction(int(d_in))
        # a replacement is a removal and an addition: twice the per-record loss
        factor = 2 if n is not None else 1
        return round_up(factor * units * per_record)

    return make_measurement(input_domain, input_metric, max_divergence(), function, privacy_map)


def grow(
    tree: Any, depth: int, lam: float, delta: int, theta: int, noise: KeyedNodeNoise
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The PrivTree decomposition of ``tree``'s rows: ``[(level, cells, counts)]`` of its leaves.

    Each level is vectorised over its frontier: the exact counts come from the count tree's
    split points, the decision noise from the node-keyed ``noise`` (the node's own stream)."""
    lo = np.zeros(1, dtype=np.int64)
    hi = np.full(1, tree.n, dtype=np.int64)
    cells = np.zeros((1, tree.d), dtype=np.int64)
    leaves: list[tuple[int, np.ndarray, np.ndarray]] = []
    for level in range(depth + 1):  # a loop over the (public) levels
        counts = hi - lo
        if level == depth:
            leaves.append((level, cells, counts))
            break
        biased = np.maximum(counts - level * delta, theta - delta)
        split = biased + noise.laplace(level, cells, lam) > theta
        if (~split).any():
            leaves.append((level, cells[~split], counts[~split]))
        if not split.any():
            break
        lo, hi = tree.children(level, lo[split], hi[split])
        cells = child_cells(cells[split], level, tree.axes)
    return leaves


then_privtree = to_then(make_privtree)
register(make_privtree)
