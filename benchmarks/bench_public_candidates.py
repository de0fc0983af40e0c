"""Timings of the public-candidate mechanisms and the distortion of the tree builders.

Prints (not run by the unit tests):

- Tree-EM at k = 1000 candidates, m = 1000 (and its parts: tree, log-partition, sampling);
- the hierarchical tree projection and the nearest-neighbour baseline at k = 10^5 candidates,
  n = 10^6 records (construction, which builds the FRT tree, and one release);
- the nearest-candidate projection alone at that size;
- the measured distortion ``d_T / d`` (mean, median, max over random pairs) of ``frt_tree`` and
  ``quadtree`` on uniform data for several ``k`` and dimensions.

Usage: ``python benchmarks/bench_public_candidates.py [--small]`` (``--small`` divides the
sizes by 10 for a quick look).  Seeds are for reproducibility of the benchmark only.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.measurements import make_nn_histogram, make_tree_em, make_tree_projection
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.sets import NearestCandidates
from opendp_wasserstein.public_candidates.tree_em_sampling import sample_tree_em, tree_em_tables
from opendp_wasserstein.public_candidates.trees import distortion, frt_tree, quadtree


def _timed(label: str, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    print(f"  {label:<52s} {time.perf_counter() - t0:8.2f} s", flush=True)
    return out


def bench_tree_em(k: int, m: int, n: int) -> None:
    print(f"Tree-EM: k = {k}, m = {m}, n = {n}, d = 2")
    rng = np.random.default_rng(0)
    C = rng.uniform(size=(k, 2))
    X = rng.normal(0.5, 0.15, size=(n, 2))
    tree = _timed("frt_tree", frt_tree, C, "l2", seed=1)
    print(f"  tree: {tree}")
    counts = np.bincount(NearestCandidates(C).query(X), minlength=k)
    _timed("log-partition tables (bottom-up)", tree_em_tables, tree, counts, n, m, 1.0)
    _timed("sample (tables + top-down)", sample_tree_em, tree, counts, m, 1.0, RandomSource(2), n)
    meas = _timed(
        "make_tree_em (given tree)",
        make_tree_em,
        dp.numpy.array2_domain(num_columns=2, size=n, T=float),
        dp.symmetric_distance(),
        C,
        m,
        1.0,
        tree=tree,
    )
    out = _timed("release (projection + sampling)", meas, X)
    assert int(out.sum()) == m


def bench_projection(k: int, n: int, m: int) -> None:
    print(f"Tree projection / NN baseline: k = {k}, n = {n}, m = {m}, d = 2")
    rng = np.random.default_rng(0)
    C = rng.uniform(size=(k, 2))
    X = np.clip(rng.normal(0.5, 0.2, size=(n, 2)), 0, 1)
    dom = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    nc = NearestCandidates(C)
    _timed("nearest-candidate projection alone", nc.query, X)
    tree = _timed("frt_tree", frt_tree, C, "l2", seed=1)
    print(f"  tree: {tree}")
    htp = _timed(
        "make_tree_projection (tree=None: builds an FRT)",
        make_tree_projection,
        dom,
        dp.symmetric_distance(),
        C,
        m,
        1.0,
    )
    out = _timed("tree projection release", htp, X)
    assert int(out.sum()) == m
    htp = make_tree_projection(dom, dp.symmetric_distance(), C, m, 1.0, tree=tree)
    out = _timed("tree projection release (given tree)", htp, X)
    nn = _timed("make_nn_histogram", make_nn_histogram, dom, dp.symmetric_distance(), C, m, 1.0)
    out = _timed("NN histogram release", nn, X)
    assert int(out.sum()) == m


def bench_distortion(ks: list[int], dims: list[int]) -> None:
    print("Distortion d_T / d over 20000 random pairs of uniform points (l2)")
    print(
        f"  {'builder':<10s} {'k':>7s} {'d':>3s} {'mean':>8s} {'median':>8s} {'max':>9s} "
        f"{'time s':>7s}"
    )
    for d in dims:
        for k in ks:
            pts = np.random.default_rng(k + d).uniform(size=(k, d))
            for name in ("frt", "quadtree"):
                t0 = time.perf_counter()
                tree = (
                    frt_tree(pts, "l2", seed=3)
                    if name == "frt"
                    else quadtree(pts, (0.0, 1.0), seed=3)
                )
                dt = time.perf_counter() - t0
                r = distortion(tree, pts, "l2", pairs=20000, seed=0)
                print(
                    f"  {name:<10s} {k:>7d} {d:>3d} {r['mean']:8.2f} {r['median']:8.2f} "
                    f"{r['max']:9.1f} {dt:7.2f}"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="sizes divided by 10")
    args = parser.parse_args()
    dp.enable_features("contrib", "idealized-numerics")
    f = 10 if args.small else 1
    bench_tree_em(k=1000 // f, m=1000 // f, n=100_000 // f)
    bench_projection(k=100_000 // f, n=1_000_000 // f, m=1000)
    bench_distortion([100, 1000, 10000 // f], [2, 8])


if __name__ == "__main__":
    main()
