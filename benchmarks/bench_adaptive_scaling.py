"""Adaptive Pruned-PMM from n = 1e3 to 1e7 against the codes-plus-sort floor.

For each ``d`` in ``--dims`` (default 2, 3, 10) and ``n`` in ``--ns`` (default 1e3 .. 1e7), on
``--data`` (default ``curve``: the smooth closed curve of ``_common.sample_curve``, intrinsic
dimension 1, in ``[0.1, 0.9]^d``; ``uniform``: uniform on ``[0, 1]^d``):

- **mechanism**: ``make_adaptive_pruned_pmm`` on ``array2_domain(size=n)`` with
  ``change_one_distance``, ``epsilon_select = 0.2``, ``epsilon_main = 0.8`` (``map(1) == 1``),
  the standard candidates, bounds ``(0, 1)``, uniform placement.  ``seconds`` is one release
  (construction, which is data independent, is ``build_s``); ``--runs`` releases are timed and
  the minimum is reported (``median_s`` beside it).
- **floor**: on the same data, ``grid_codes`` + ``morton_words`` at the largest candidate
  depth ``L = max_candidate_depth(d, n, 0.8)`` (what the selection step must compute at
  least) plus ONE ``np.sort`` of ``n`` uint64 keys (the first Morton word); minimum over
  ``--runs``.  ``ratio = seconds / floor_s``: how far the whole release is from "compute the
  codes and sort them once".
- **memory**: ``peak_mb`` is ``tracemalloc``'s peak over a separate, untimed release (numpy
  reports its buffers to tracemalloc), i.e. the memory the release allocates on top of the
  input (``data_mb``); ``floor_peak_mb`` the same for the floor.  A separate run, because
  tracing slows allocation-heavy code; not ``ru_maxrss``, which is a process-wide high-water
  mark and so says nothing about a run that follows a larger one.
- ``visited`` noisy nodes, the selected candidate ``(s, depth)``, ``L`` and the number of
  64-bit Morton words ``W``.

Cells are skipped, with the reason in the CSV (``status``), above ``--max-n`` (or
``--max-n-high-d`` for ``d >= 10``), when the memory extrapolated from the previous ``n`` would
exceed 60% of MemAvailable, or when the time extrapolated from the previous ``n`` would exceed
``--cell-budget`` seconds.  The target cell (``--target-n``, ``--target-d``) is also profiled
with cProfile (top functions printed and written to ``adaptive_profile.txt``).

Timings are wall-clock on whatever else the machine is doing: the minimum over runs estimates
the unloaded time, but on a shared machine both columns move by tens of percent.

``python benchmarks/bench_adaptive_scaling.py [--quick] [--max-n 1e6] [--out out]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import math
import os
import pstats
import time
import tracemalloc

import numpy as np
import opendp.prelude as dp
from _common import fmt, machine_note, make_data, mem_available_bytes, write_csv

from opendp_wasserstein.hierarchy.cells import grid_codes, morton_words
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
from opendp_wasserstein.runtime import diagnostics
from opendp_wasserstein.schedules.pure import max_candidate_depth

EPS_SELECT, EPS_MAIN = 0.2, 0.8

FIELDS = [
    "data",
    "d",
    "n",
    "status",
    "note",
    "L",
    "W",
    "seconds",
    "median_s",
    "build_s",
    "floor_s",
    "codes_s",
    "sort_s",
    "ratio",
    "peak_mb",
    "floor_peak_mb",
    "data_mb",
    "visited",
    "s",
    "depth",
    "runs",
]


def floor_once(x: np.ndarray, L: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    words = morton_words(grid_codes(x, L), L)
    t1 = time.perf_counter()
    np.sort(words[0])
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def traced_peak(fn) -> float:  # type: ignore[no-untyped-def]
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def runs_for(n: int, runs: int) -> int:
    """Fewer repeats at large n (each is long and the relative noise is smaller)."""
    if n >= 10**7:
        return 1
    if n >= 10**6:
        return min(runs, 2)
    return runs


def measure_cell(kind: str, n: int, d: int, runs: int, trace: bool, seed: int) -> dict:
    x = make_data(kind, n, d, seed)
    L = max_candidate_depth(d, n, EPS_MAIN)
    k = runs_for(n, runs)
    codes, sorts = zip(*(floor_once(x, L) for _ in range(k)), strict=True)
    t0 = time.perf_counter()
    meas = make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=d, size=n, T=float),
        dp.change_one_distance(),
        EPS_SELECT,
        EPS_MAIN,
        bounds=(0.0, 1.0),
        placement="uniform",
    )
    build = time.perf_counter() - t0
    assert meas.map(1) == EPS_SELECT + EPS_MAIN
    secs, infos = [], []
    for _ in range(k):
        t0 = time.perf_counter()
        with diagnostics() as records:
            y = meas(x)
        secs.append(time.perf_counter() - t0)
        infos.append(records[-1])
        assert y.shape == (n, d)
        del y
    best = int(np.argmin(secs))
    floor = min(c + s for c, s in zip(codes, sorts, strict=True))
    row = {
        "data": kind,
        "d": d,
        "n": n,
        "status": "ok",
        "note": "",
        "L": L,
        "W": -(-L // 64),
        "seconds": secs[best],
        "median_s": float(np.median(secs)),
        "build_s": build,
        "floor_s": floor,
        "codes_s": min(codes),
        "sort_s": min(sorts),
        "ratio": secs[best] / floor,
        "peak_mb": None,
        "floor_peak_mb": None,
        "data_mb": x.nbytes / 2**20,
        "visited": int(infos[best]["visited_nodes"]),
        "s": int(infos[best]["s"]),
        "depth": int(infos[best]["depth"]),
        "runs": k,
    }
    if trace:
        row["floor_peak_mb"] = traced_peak(lambda: floor_once(x, L))
        row["peak_mb"] = traced_peak(lambda: meas(x))
    return row


def profile_cell(kind: str, n: int, d: int, seed: int, out: str) -> str:
    x = make_data(kind, n, d, seed)
    meas = make_adaptive_pruned_pmm(
        dp.numpy.array2_domain(num_columns=d, size=n, T=float),
        dp.change_one_distance(),
        EPS_SELECT,
        EPS_MAIN,
        bounds=(0.0, 1.0),
        placement="uniform",
    )
    meas(x)  # warm-up
    prof = cProfile.Profile()
    prof.enable()
    meas(x)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs().sort_stats("cumulative")
    st.print_stats(22)
    text = (
        f"cProfile of one Adaptive Pruned-PMM release, data={kind}, n={n}, d={d}\n" + buf.getvalue()
    )
    with open(os.path.join(out, "adaptive_profile.txt"), "w") as f:
        f.write(text)
    return text


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[2, 3, 10])
    p.add_argument("--ns", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6, 1e7])
    p.add_argument("--data", choices=("curve", "uniform"), default="curve")
    p.add_argument("--max-n", type=float, default=1e7, help="skip larger n")
    p.add_argument("--max-n-high-d", type=float, default=1e7, help="skip larger n when d >= 10")
    p.add_argument(
        "--cell-budget",
        type=float,
        default=300.0,
        help="skip a cell whose extrapolated time (all its runs) exceeds this many seconds",
    )
    p.add_argument("--runs", type=int, default=3, help="timed runs per cell (fewer at n >= 1e6)")
    p.add_argument("--no-trace", action="store_true", help="skip the tracemalloc runs")
    p.add_argument("--target-n", type=float, default=1e6)
    p.add_argument("--target-d", type=int, default=3)
    p.add_argument("--target-ratio", type=float, default=10.0)
    p.add_argument("--no-profile", action="store_true")
    p.add_argument("--seed", type=int, default=0, help="test data only")
    p.add_argument("--out", default="out")
    p.add_argument(
        "--quick", action="store_true", help="n <= 1e4, 1 run, no profile (target not measured)"
    )
    a = p.parse_args(argv)
    if a.quick:
        a.ns, a.runs, a.no_profile = [1e3, 1e4], 1, True
    dp.enable_features("contrib")
    os.makedirs(a.out, exist_ok=True)
    ns = sorted({int(v) for v in a.ns})
    print(
        "Adaptive Pruned-PMM (eps 0.2 select + 0.8 main, change-one) vs codes+sort floor, "
        f"data={a.data}"
    )
    print(f"machine: {machine_note()}  (shared machine: timings are noisy)")
    head = (
        f"{'d':>3} {'n':>9} {'L':>4} {'W':>2} {'seconds':>9} {'floor s':>9} {'ratio':>6} "
        f"{'peak MB':>8} {'floor MB':>8} {'data MB':>8} {'visited':>8} {'s':>3} {'depth':>5}  note"
    )
    print(head, flush=True)
    rows: list[dict] = []
    for d in a.dims:
        prev: dict | None = None
        for n in ns:
            cap = a.max_n_high_d if d >= 10 else a.max_n
            reason = ""
            if n > cap:
                reason = (
                    f"skipped: n > cap {cap:.0e} ({'--max-n-high-d' if d >= 10 else '--max-n'})"
                )
            elif prev is not None and prev["status"] == "ok":
                scale = n / prev["n"] * math.log2(n) / math.log2(prev["n"])
                k = runs_for(n, a.runs)
                est_t = scale * (
                    (prev["seconds"] + prev["floor_s"]) * k
                    + (0 if a.no_trace else 2 * prev["seconds"])
                )
                est_mem = (prev["peak_mb"] or 0.0) * n / prev["n"] * 2**20 + 8 * n * d * 2
                avail = mem_available_bytes()
                if est_t > a.cell_budget:
                    reason = (
                        f"skipped: extrapolated {est_t:.0f} s > --cell-budget {a.cell_budget:.0f} s"
                    )
                elif avail is not None and est_mem > 0.6 * avail:
                    reason = (
                        f"skipped: extrapolated {est_mem / 2**30:.1f} GiB > 60% of MemAvailable "
                        f"{avail / 2**30:.1f} GiB"
                    )
            if reason:
                row = {"data": a.data, "d": d, "n": n, "status": "skipped", "note": reason}
            else:
                try:
                    row = measure_cell(a.data, n, d, a.runs, not a.no_trace, a.seed)
                except MemoryError as e:
                    row = {
                        "data": a.data,
                        "d": d,
                        "n": n,
                        "status": "failed",
                        "note": f"MemoryError {e}",
                    }
                gc.collect()
            rows.append(row)
            prev = row if row["status"] == "ok" else prev
            print(
                f"{d:>3} {n:>9.0e} {fmt(row.get('L'), 'd', 4)} {fmt(row.get('W'), 'd', 2)} "
                f"{fmt(row.get('seconds'), '.3f')} {fmt(row.get('floor_s'), '.3f')} "
                f"{fmt(row.get('ratio'), '.1f', 6)} "
                f"{fmt(row.get('peak_mb'), '.0f', 8)} {fmt(row.get('floor_peak_mb'), '.0f', 8)} "
                f"{fmt(row.get('data_mb'), '.0f', 8)} {fmt(row.get('visited'), 'd', 8)} "
                f"{fmt(row.get('s'), 'd', 3)} "
                f"{fmt(row.get('depth'), 'd', 5)}  {row.get('note', '')}",
                flush=True,
            )
    write_csv(os.path.join(a.out, "bench_adaptive_scaling.csv"), rows, FIELDS)
    tgt = [
        r
        for r in rows
        if r["d"] == a.target_d and r["n"] == int(a.target_n) and r["status"] == "ok"
    ]
    if tgt:
        r = tgt[0]
        verdict = "met" if r["ratio"] <= a.target_ratio else "MISSED"
        print(
            f"\ntarget: n = {int(a.target_n):.0e}, d = {a.target_d}: {r['seconds']:.3f} s = "
            f"{r['ratio']:.1f} x the floor ({r['floor_s']:.3f} s); goal <= "
            f"{a.target_ratio:g} x: {verdict}"
        )
    else:
        print(f"\ntarget cell n = {int(a.target_n):.0e}, d = {a.target_d} not measured")
    if (
        not a.no_profile
        and a.target_d in a.dims
        and int(a.target_n) <= min(a.max_n, a.max_n_high_d if a.target_d >= 10 else a.max_n)
    ):
        print("\n" + profile_cell(a.data, int(a.target_n), a.target_d, a.seed, a.out))


if __name__ == "__main__":
    main()
