"""Pruned-PMM vs full PMM over depth (the paper's Figure 3): runtime, visited nodes, W1 ratio.

n = 30000, d = 2, eps = 1 (change-one), the nine 2-D shapes, depths 10..24 (full PMM is
skipped past ``--max-full-depth``: it materialises 2^(depth+1) - 1 nodes).  Prints a table
and writes ``bench_depth.csv`` to ``--out``.  ``python benchmarks/bench_depth.py --quick``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import tracemalloc

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.evaluation import SHAPES, sample_shape, w1_estimate
from opendp_wasserstein.measurements import make_pmm, make_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import paper_schedule


def measure(meas, x, seed):
    """Time one release (untraced), then trace a second release for its peak memory."""
    t0 = time.perf_counter()
    with reproducible(seed), diagnostics() as records:  # NOT private: a benchmark
        y = meas(x)
    info = records[-1]
    secs = time.perf_counter() - t0
    tracemalloc.start()
    meas(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return y, info, secs, peak


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=30000)
    p.add_argument("--depths", type=int, nargs="+", default=list(range(10, 25, 2)))
    p.add_argument("--max-full-depth", type=int, default=22)
    p.add_argument("--shapes", nargs="+", default=list(SHAPES))
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--sample", type=int, default=2000)
    p.add_argument("--out", default="out")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.depths, a.shapes, a.runs, a.sample = 5000, [10, 14], ["two_moons", "cross"], 1, 500
    dp.enable_features("contrib")
    domain = dp.numpy.array2_domain(num_columns=2, size=a.n, T=float)
    rows = []
    print(f"{'depth':>5} {'mech':>7} {'seconds':>9} {'peak MB':>8} {'visited':>9} {'W1':>8}")
    for depth in a.depths:
        scales = paper_schedule(2, 1.0, depth)
        for mech, mk in (("pruned", make_pruned_pmm), ("full", make_pmm)):
            if mech == "full" and depth > a.max_full_depth:
                continue
            secs, peaks, vis, w1s = [], [], [], []
            for i, shape in enumerate(a.shapes):
                x = sample_shape(shape, a.n, seed=i)
                for run in range(a.runs):
                    meas = mk(domain, dp.change_one_distance(), depth, scales)
                    y, info, s, peak = measure(meas, x, 1000 * run + i)
                    secs.append(s)
                    peaks.append(peak / 2**20)
                    vis.append(info["visited_nodes"])
                    w1s.append(w1_estimate(x, y, sample_size=a.sample, repeats=1, seed=run).value)
            row = {
                "depth": depth,
                "mechanism": mech,
                "seconds": float(np.mean(secs)),
                "peak_mb": float(np.mean(peaks)),
                "visited": float(np.mean(vis)),
                "w1": float(np.mean(w1s)),
            }
            rows.append(row)
            print(
                f"{depth:>5} {mech:>7} {row['seconds']:>9.4f} {row['peak_mb']:>8.1f} "
                f"{row['visited']:>9.0f} {row['w1']:>8.4f}",
                flush=True,
            )
    print("\ndepth  speed-up (full/pruned)  W1 ratio (pruned/full)")
    for depth in a.depths:
        pr = [r for r in rows if r["depth"] == depth and r["mechanism"] == "pruned"]
        fu = [r for r in rows if r["depth"] == depth and r["mechanism"] == "full"]
        if pr and fu:
            print(
                f"{depth:>5}  {fu[0]['seconds'] / pr[0]['seconds']:>22.1f}  "
                f"{pr[0]['w1'] / fu[0]['w1']:>22.3f}"
            )
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "bench_depth.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
