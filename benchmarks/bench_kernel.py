"""The single-machine kernel of the PMM family: time against the codes-plus-sort floor, memory
against the input.

1. **Time** (issue 12: at most 4x): Adaptive Pruned-PMM (``epsilon_select = 0.2``,
   ``epsilon_main = 0.8``, change-one, bounds ``(0, 1)``) on ``--n`` rows (default ``10^6``) of
   dimension ``--d`` (default 3) against the *floor*: ``grid_codes`` + ``morton_words`` at the
   largest candidate depth ``L`` plus one ``np.sort`` of the first code word, in the same run.
   Both are the minimum over ``--runs`` runs (other load on a shared machine only slows a run).
   Also the count tree alone (built once per release).
2. **Memory** (issue 12: at most 2x the input): one release on ``--mem-n`` rows (default
   ``10^7``) of dimension ``--mem-d`` (default 10), in a fresh subprocess: the peak of the
   memory the release allocates (``tracemalloc``; numpy reports its buffers) over the input
   array's size, and the process's peak RSS growth during the release (``ru_maxrss``) over it,
   plus the time of an untraced release.

Data: the smooth closed curve of ``_common.sample_curve`` (``--data curve``, intrinsic dimension 1,
many shared code prefixes) or uniform (``--data uniform``).  ``--quick``: ``n = 10^5`` and
``mem-n = 10^6``.  ``python benchmarks/bench_kernel.py [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import opendp.prelude as dp
from _common import machine_note, make_data

from opendp_wasserstein.core.box import as_box
from opendp_wasserstein.hierarchy.cells import build_count_tree, grid_codes, morton_words
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
from opendp_wasserstein.runtime import diagnostics
from opendp_wasserstein.schedules.pure import max_candidate_depth

EPS_SELECT, EPS_MAIN = 0.2, 0.8


def adaptive(n: int, d: int, placement: str):  # type: ignore[no-untyped-def]
    return make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=d, size=n, T=float), dp.change_one_distance(),
        EPS_SELECT, EPS_MAIN, bounds=(0.0, 1.0), placement=placement,
    )


def best(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    out = float("inf")
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def timing(n: int, d: int, data: str, runs: int) -> None:
    x = make_data(data, n, d, 0)
    L = max_candidate_depth(d, n, EPS_MAIN)

    def floor() -> None:
        np.sort(morton_words(grid_codes(x, L), L)[0])

    box = as_box((0.0, 1.0), d)
    t_floor = best(floor, runs)
    t_tree = best(lambda: build_count_tree(x, L, box), runs)
    print(f"\n1. time: adaptive Pruned-PMM, n = {n:,}, d = {d}, L = {L}, data = {data}")
    print(f"   floor (codes at L + one sort)   {t_floor:8.3f} s")
    print(f"   count tree at L (once/release)  {t_tree:8.3f} s   {t_tree / t_floor:5.1f}x floor")
    for placement in ("center", "uniform"):
        meas = adaptive(n, d, placement)
        with diagnostics() as info:
            t = best(lambda meas=meas: meas(x), runs)
        last = info[-1]
        print(
            f"   release, placement={placement:<8} {t:8.3f} s   {t / t_floor:5.1f}x floor"
            f"   (chosen depth {last['depth']}, {last['visited_nodes']:,} noisy nodes)"
        )


def memory_child(n: int, d: int, data: str) -> None:
    """Runs in a fresh process: one traced release, one untraced; prints a JSON line."""
    x = make_data(data, n, d, 0)
    meas = adaptive(n, d, "center")
    gc.collect()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    meas(x)
    seconds = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    gc.collect()
    tracemalloc.start()
    meas(x)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(json.dumps({"input": x.nbytes, "traced_peak": peak, "rss_growth": rss1 - rss0,
                      "rss_before": rss0, "seconds": seconds}))


def memory(n: int, d: int, data: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, "bench_kernel.py"), "--child", str(n), str(d), data]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    r = json.loads(res.stdout.strip().splitlines()[-1])
    mb = 2.0**20
    print(f"\n2. memory: adaptive Pruned-PMM, n = {n:,}, d = {d}, data = {data} (fresh process)")
    print(f"   input array                     {r['input'] / mb:8.0f} MB")
    print(f"   release allocations, peak       {r['traced_peak'] / mb:8.0f} MB   "
          f"{r['traced_peak'] / r['input']:5.2f}x input   (tracemalloc)")
    print(f"   process RSS growth, peak        {r['rss_growth'] / mb:8.0f} MB   "
          f"{r['rss_growth'] / r['input']:5.2f}x input   (ru_maxrss; before: {r['rss_before'] / mb:.0f} MB)")
    print(f"   time (untraced)                 {r['seconds']:8.1f} s")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        dp.enable_features("contrib")
        memory_child(int(argv[1]), int(argv[2]), argv[3])
        return
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=float, default=1e6)
    p.add_argument("--d", type=int, default=3)
    p.add_argument("--mem-n", type=float, default=1e7)
    p.add_argument("--mem-d", type=int, default=10)
    p.add_argument("--data", choices=("curve", "uniform"), default="curve")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.mem_n, a.runs = 1e5, 1e6, 2
    dp.enable_features("contrib")
    print(machine_note())
    timing(int(a.n), a.d, a.data, a.runs)
    memory(int(a.mem_n), a.mem_d, a.data)


if __name__ == "__main__":
    main()
