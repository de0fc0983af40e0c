"""PrivTree (local adaptivity) against Adaptive Pruned-PMM (one depth for the whole space), same
budget.

``python benchmarks/bench_privtree.py [--quick] [--out out/privtree] [--runs 3]``

Issue 13, item 3: does a PrivTree-style split rule, which refines a cell while its biased noisy
count passes a threshold, measure better than the adaptive mechanism?  Both in pure DP at
eps = 1 per replaced record: ``make_privtree`` with ``epsilon_tree = epsilon_counts = 0.25`` per
added or removed record (``--tree-share`` changes the split; 0.5 per record = 1 per replacement)
and ``max_depth = d ceil(log2 n) + d`` (public), against ``synthesize`` (the adaptive mechanism
with its defaults), both with uniform placement.  W1 (l_inf) on the same two 2000-point data
subsamples for every release, ``--runs`` seeded releases each (``runtime.reproducible``: NOT
private, a benchmark), and the wall time of a release.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import opendp.prelude as dp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import machine_note, sample_curve, write_csv  # noqa: E402

from opendp_wasserstein import runtime, synthesize  # noqa: E402
from opendp_wasserstein.evaluation import SHAPES, sample_shape, w1  # noqa: E402
from opendp_wasserstein.hierarchy.cells import max_depth  # noqa: E402
from opendp_wasserstein.measurements import make_privtree  # noqa: E402


def datasets(n: int, quick: bool) -> dict[str, np.ndarray]:
    if quick:
        return {
            "two_moons": sample_shape("two_moons", n, seed=1),
            "curve (d=4)": sample_curve(n, 4, seed=100),
        }
    out = {name: sample_shape(name, n, seed=1) for name in SHAPES}
    try:
        import vega_datasets

        a = vega_datasets.data.airports()[["longitude", "latitude"]].to_numpy()
        out["airports (globe box)"] = (a - [-180.0, -90.0]) / [360.0, 180.0]
    except ImportError:  # pragma: no cover - the bench extra
        pass
    t = np.random.default_rng(23).uniform(size=n)
    out["helix (d=3)"] = np.stack(
        [0.5 + 0.3 * np.cos(4 * np.pi * t), 0.5 + 0.3 * np.sin(4 * np.pi * t), 0.1 + 0.8 * t], 1
    )
    out["curve (d=4)"] = sample_curve(n, 4, seed=100)
    out["curve (d=10)"] = sample_curve(n, 10, seed=100)
    return out


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--quick", action="store_true", help="two small data sets, one run (a smoke run)"
    )
    p.add_argument("--out", default=os.path.join("out", "privtree"))
    p.add_argument("--n", type=int, default=30000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--tree-share",
        type=float,
        default=0.5,
        help="PrivTree's share of its budget for the structure",
    )
    a = p.parse_args(argv)
    dp.enable_features("contrib")
    n_rows, runs = (2000, 1) if a.quick else (a.n, a.runs)
    print(machine_note())
    rows = []
    for name, x in datasets(n_rows, a.quick).items():
        n, d = x.shape
        gen = np.random.default_rng(5)  # public evaluation randomness
        subs = [x[gen.choice(n, min(n, 2000), replace=False)] for _ in range(2)]

        def score(y: np.ndarray, seed: int, subs: list[np.ndarray] = subs) -> float:
            g = np.random.default_rng(seed)
            return float(
                np.mean(
                    [
                        w1(s, y[g.choice(len(y), min(len(y), 2000), replace=False)], metric="linf")
                        for s in subs
                    ]
                )
            )

        depth = min(max_depth(d), d * math.ceil(math.log2(n)) + d)
        tree = make_privtree(
            dp.numpy.array2_domain(num_columns=d, size=n, T=float),
            dp.change_one_distance(),
            0.5 * a.tree_share,
            0.5 * (1 - a.tree_share),
            depth,
        )
        assert tree.map(1) <= 1.0
        for method in ("privtree", "adaptive"):
            w, secs = [], []
            for r in range(runs):
                t0 = time.perf_counter()
                with runtime.reproducible(r):  # NOT private: a benchmark
                    y = (
                        tree(x)
                        if method == "privtree"
                        else synthesize(x, 1.0, bounds=(0.0, 1.0))[0]
                    )
                secs.append(time.perf_counter() - t0)
                w.append(score(y, r))
            rows.append(
                {
                    "dataset": name,
                    "n": n,
                    "d": d,
                    "method": method,
                    "w1": float(np.mean(w)),
                    "w1_min": min(w),
                    "w1_max": max(w),
                    "seconds": float(np.median(secs)),
                }
            )
        pt, ad = rows[-2], rows[-1]
        print(
            f"{name:>22}: privtree {pt['w1']:.4f} ({pt['seconds']:.3f} s)  adaptive {ad['w1']:.4f} "
            f"({ad['seconds']:.3f} s)  ratio {pt['w1'] / ad['w1']:.2f}",
            flush=True,
        )
    write_csv(os.path.join(a.out, "bench_privtree.csv"), rows)
    ratios = [rows[i]["w1"] / rows[i + 1]["w1"] for i in range(0, len(rows), 2)]
    print(
        f"privtree / adaptive W1: median {np.median(ratios):.2f}, range "
        f"{min(ratios):.2f}-{max(ratios):.2f}; "
        f"privtree better on {sum(r < 1 for r in ratios)} of {len(ratios)}"
    )
    return rows


if __name__ == "__main__":
    main()
