"""Out-of-core releases on a Dask ``LocalCluster``: time, rows/s, peak memory of driver and workers.

A synthetic data set of ``--max-n`` rows (default ``10^8``) of dimension ``--d`` (default 3) is
written once as Parquet, ``--rows-per-file`` rows a file (default ``10^6``; a clustered mixture
of Gaussians clipped to the unit cube, generated file by file, seeded).  For every ``n`` in
``--ns`` (default ``10^6, 10^7, 10^8``) the first ``n / rows-per-file`` files are released by
``--mechanism`` (default ``adaptive``; ``pruned`` uses the ambient depth) through
:func:`~opendp_wasserstein.distributed.synthesize_on_dask` on a fresh ``LocalCluster`` of
``--workers`` worker processes (default 2, one thread each, ``--memory-limit`` each, default
4 GB), in a fresh driver process, and the output (Parquet parts) is deleted afterwards.

Printed per ``n``: seconds, rows/s, the driver's peak RSS (``ru_maxrss`` of the driver process,
which also runs the scheduler) and each worker's peak RSS (``ru_maxrss`` of the worker
processes), the chosen depth and the number of noisy nodes; the scheduler's measured cost per
task (``--sched-tasks`` trivial tasks, default 3000, submitted one by one and gathered on the same
cluster after the release); then, with two sizes or more, the per-row cost and an extrapolation
to ``10^10`` rows on 100 workers with its assumptions, its scheduler time from the measured cost.

``--kind mixed`` (or ``both``): a mixed table of ``--columns`` columns (default 12: categorical,
bool, int, nullable float in turn, dependent through a latent factor), released by the
structured table release (:func:`~opendp_wasserstein.distributed.synthesize_on_dask` with
``schema``: the first look and the tree of 2-way marginals from per-part counts, the rows drawn,
calibrated, decoded and written on the workers in blocks of ``2^20``), the same release as in
memory under the same key.  Each file is written in row
groups of ``--row-group`` rows (default ``2^18``); the number of input parts (tasks of a pass)
is printed.

``python benchmarks/bench_distributed.py [--quick] [--kind numeric|mixed|both] [--ns 1e6 1e7]
[--data /tmp/odpw_bench]`` (``--quick``: ``5 10^4`` and ``10^5`` rows in files of ``5 10^4``).
The exit status is 1 if any release failed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import machine_note

HERE = os.path.dirname(os.path.abspath(__file__))


def write_data(root: str, n: int, d: int, per_file: int, row_group: int = 1 << 18) -> None:
    """Files ``part-00000.parquet ...`` of ``per_file`` rows each (skipped when present)."""
    os.makedirs(root, exist_ok=True)
    centers = np.random.default_rng(12345).uniform(0.15, 0.85, size=(8, d))  # data only
    for i in range(n // per_file):
        path = os.path.join(root, f"part-{i:05d}.parquet")
        if os.path.exists(path):
            continue
        gen = np.random.default_rng(1000 + i)  # data only, never a mechanism's randomness
        x = centers[gen.integers(0, len(centers), per_file)] + 0.05 * gen.standard_normal(
            (per_file, d)
        )
        np.clip(x, 0.0, 1.0, out=x)
        tmp = path + ".tmp"
        pq.write_table(
            pa.table({f"x{j}": x[:, j] for j in range(d)}), tmp, row_group_size=row_group
        )
        os.replace(tmp, path)


MIXED_CATEGORIES = ("a", "b", "c", "d", "e", "f")


def mixed_schema(k: int) -> dict:
    """The public schema of the mixed table: column ``j`` categorical, bool, int or nullable
    float by ``j % 4``."""
    cols: dict[str, dict] = {}
    for j in range(k):
        kind = j % 4
        if kind == 0:
            cols[f"c{j}"] = {"type": "categorical", "categories": list(MIXED_CATEGORIES)}
        elif kind == 1:
            cols[f"c{j}"] = {"type": "bool"}
        elif kind == 2:
            cols[f"c{j}"] = {"type": "int", "bounds": [0, 100]}
        else:
            cols[f"c{j}"] = {"type": "float", "bounds": [0.0, 1000.0], "nullable": True}
    return {"columns": cols}


def write_mixed(root: str, n: int, k: int, per_file: int, row_group: int) -> None:
    """Files of the mixed table (skipped when present); columns depend on a latent factor."""
    os.makedirs(root, exist_ok=True)
    for i in range(n // per_file):
        path = os.path.join(root, f"part-{i:05d}.parquet")
        if os.path.exists(path):
            continue
        gen = np.random.default_rng(2000 + i)  # data only, never a mechanism's randomness
        z = gen.standard_normal(per_file)
        cols = {}
        for j in range(k):
            u = 0.7 * z + 0.7 * gen.standard_normal(per_file)
            kind = j % 4
            if kind == 0:
                idx = np.clip(((u + 2.5) * 1.2).astype(np.int64), 0, len(MIXED_CATEGORIES) - 1)
                cols[f"c{j}"] = pa.array(np.asarray(MIXED_CATEGORIES, dtype=object)[idx])
            elif kind == 1:
                cols[f"c{j}"] = pa.array(u > 0.3)
            elif kind == 2:
                cols[f"c{j}"] = pa.array(np.clip(50 + 15 * u, 0, 100).astype(np.int64))
            else:
                v = np.clip(np.exp(5 + 0.6 * u), 0, 1000)
                cols[f"c{j}"] = pa.array(v, mask=gen.uniform(size=per_file) < 0.05)
        tmp = path + ".tmp"
        pq.write_table(pa.table(cols), tmp, row_group_size=row_group)
        os.replace(tmp, path)


def scheduler_ms_per_task(client: Any, tasks: int) -> float:
    """Milliseconds per task of the scheduler round trip on ``client``: ``tasks`` trivial tasks
    (``abs(i)``) submitted one by one as the release's driver does (``client.submit(...,
    pure=False)``), then gathered; after a warm-up of 100 such tasks."""
    warm = [client.submit(abs, -i, pure=False) for i in range(100)]
    client.gather(warm)
    t0 = time.perf_counter()
    futures = [client.submit(abs, -i, pure=False) for i in range(tasks)]
    client.gather(futures)
    return (time.perf_counter() - t0) * 1e3 / tasks


def child(args: argparse.Namespace) -> None:
    """One release in this (fresh) process; prints one JSON line."""
    import opendp.prelude as dp

    from opendp_wasserstein.distributed import synthesize_on_dask
    from opendp_wasserstein.distributed._executor import local_client

    dp.enable_features("contrib")
    files = sorted(f for f in os.listdir(args.data) if f.endswith(".parquet"))[
        : args.n // args.rows_per_file
    ]
    src = os.path.join(args.out + ".src")
    os.makedirs(src, exist_ok=True)
    for f in files:  # the first n rows as a directory of links
        os.symlink(os.path.join(args.data, f), os.path.join(src, f))
    out = args.out
    try:
        with local_client(workers=args.workers, memory_limit=args.memory_limit) as client:
            t0 = time.perf_counter()
            if args.kind == "mixed":
                from opendp_wasserstein.tables import Schema

                rel, report = synthesize_on_dask(
                    src,
                    1.0,
                    out,
                    schema=Schema.from_json(mixed_schema(args.columns)),
                    client=client,
                    progress=False,
                )
            else:
                rel, report = synthesize_on_dask(
                    src,
                    1.0,
                    out,
                    bounds=(0.0, 1.0),
                    mechanism=args.mechanism,
                    placement="uniform",
                    client=client,
                    progress=False,
                )
            seconds = time.perf_counter() - t0
            sched_ms = scheduler_ms_per_task(client, args.sched_tasks)
            workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(src, ignore_errors=True)
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "n": args.n,
                "seconds": seconds,
                "rows": rel.rows,
                "parts": rel.parts,
                "driver_rss": driver,
                "worker_rss": sorted(workers.values()),
                "depth": report.depth,
                "visited": report.visited_nodes,
                "joint": report.details.get("joint_kind", ""),
                "sched_ms": sched_ms,
                "sched_tasks": args.sched_tasks,
            }
        )
    )


def run_kind(a: argparse.Namespace, kind: str, ns: list[int]) -> int:
    """The releases of one kind of data for every ``n``; the number that failed."""
    if kind == "mixed":
        data = f"{a.data}_mixed{a.columns}_{a.rows_per_file}_{a.row_group}"
        print(f"\ndata: {max(ns):,} rows x {a.columns} mixed columns under {data}")
        write_mixed(data, max(ns), a.columns, a.rows_per_file, a.row_group)
        label = "structured table release"
    else:
        data = f"{a.data}_d{a.d}_{a.rows_per_file}_{a.row_group}"
        print(f"\ndata: {max(ns):,} rows x {a.d} in files of {a.rows_per_file:,} rows under {data}")
        write_data(data, max(ns), a.d, a.rows_per_file, a.row_group)
        label = a.mechanism
    print(
        f"{label}, LocalCluster {a.workers} workers x 1 thread, memory limit {a.memory_limit} each"
    )
    print(
        f"{'n':>12} {'seconds':>9} {'rows/s':>11} {'parts':>6} {'driver MB':>10} "
        f"{'workers MB':>16} {'depth':>6} {'noisy nodes':>12}"
    )
    rows, failed = [], 0
    for n in ns:
        out = os.path.join(os.path.dirname(data), f".odpw_out_{os.getpid()}_{n}")
        cmd = [
            sys.executable,
            os.path.join(HERE, "bench_distributed.py"),
            "--child",
            "--kind",
            kind,
            "--columns",
            str(a.columns),
            "--n",
            str(n),
            "--out",
            out,
            "--data",
            data,
            "--rows-per-file",
            str(a.rows_per_file),
            "--workers",
            str(a.workers),
            "--memory-limit",
            a.memory_limit,
            "--mechanism",
            a.mechanism,
            "--d",
            str(a.d),
            "--sched-tasks",
            str(a.sched_tasks),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode:
            err = res.stderr.strip()
            print(f"{n:>12,} failed: {err.splitlines()[-1] if err else res.returncode}")
            failed += 1
            continue
        r = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(r)
        wmb = "/".join(f"{w / 2**20:.0f}" for w in r["worker_rss"])
        depth = r["joint"] if kind == "mixed" else r["depth"]
        print(
            f"{n:>12,} {r['seconds']:>9.1f} {n / r['seconds']:>11,.0f} {r['parts']:>6} "
            f"{r['driver_rss'] / 2**20:>10.0f} {wmb:>16} {depth:>6} {r['visited']:>12,}"
        )
    if rows:
        sched_ms = float(np.median([r["sched_ms"] for r in rows]))
        each = ", ".join(f"{r['sched_ms']:.3f}" for r in rows)
        print(
            f"\nscheduler: {sched_ms:.3f} ms per task (median over {len(rows)} cluster(s): "
            f"{each}; {a.sched_tasks:,} trivial tasks "
            f"submitted one by one and gathered on the same {a.workers}-worker LocalCluster, "
            "after each release)"
        )
    if kind == "numeric" and len(rows) < 2:
        print("extrapolation to 10^10 rows: needs two sizes in --ns (the marginal cost per row)")
    if kind == "numeric" and len(rows) >= 2:
        a_, b_ = rows[-2], rows[-1]
        per_row = (b_["seconds"] - a_["seconds"]) / (b_["n"] - a_["n"])  # marginal cost, 2 workers
        fixed = b_["seconds"] - per_row * b_["n"]
        print(
            f"\nmarginal cost {per_row * 1e9:.0f} ns/row on {a.workers} workers "
            f"({per_row * a.workers * 1e9:.0f} ns per row per worker), fixed {fixed:.1f} s"
        )
        n10, w10 = 10**10, 100
        parts10, groups10 = n10 // 10**7, 2 * w10  # parts of 1e7 rows, two split groups per worker
        compute = per_row * a.workers * n10 / w10
        network = n10 * a.d * 8 / 1e9 / w10  # GB per worker at 1 GB/s
        tasks = 2 * n10 // a.rows_per_file + groups10 * parts10 + 3 * parts10
        sched = tasks * sched_ms * 1e-3
        total = compute + network + sched + fixed
        print(
            f"extrapolation, 10^10 rows on {w10} workers: ~{total / 60:.0f} min = "
            f"{compute / 60:.0f} min of per-row work (this machine's per-worker cost, linear "
            "in n / workers) "
            f"+ {network:.0f} s moving {n10 * a.d * 8 / 1e9:,.0f} GB once at 1 GB/s per worker "
            f"+ {sched / 60:.1f} min of scheduler time for {tasks:,} tasks at the measured "
            f"{sched_ms:.3f} ms each "
            f"({parts10:,} parts of 10^7 rows, {groups10} split groups, input files of "
            f"{a.rows_per_file:,} rows) "
            f"+ {fixed:.0f} s fixed.  Assumed: the scheduler's cost per task measured here on "
            f"{a.workers} local workers holds on {w10} (one scheduler; not measured at that "
            "scale), workers like these cores with >= 4 GB each "
            f"(a part's rows and tree: ~0.5 GB), a shared file system or object store, and the "
            f"driver's memory is the level-j0 histogram (<= 2^20 counts)"
        )
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ns", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    p.add_argument("--d", type=int, default=3)
    p.add_argument("--rows-per-file", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="4GB")
    p.add_argument("--mechanism", choices=["adaptive", "pruned"], default="adaptive")
    p.add_argument("--data", default="/tmp/odpw_bench")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--kind", choices=["numeric", "mixed", "both"], default="numeric")
    p.add_argument("--columns", type=int, default=12, help="columns of the mixed table")
    p.add_argument("--row-group", type=int, default=1 << 18, help="rows per Parquet row group")
    p.add_argument(
        "--sched-tasks",
        type=int,
        default=3000,
        help="trivial tasks timed on each cluster for the scheduler's cost per task",
    )
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a)
        return 0
    if a.quick:
        a.ns, a.rows_per_file = [5e4, 1e5], 50_000
    ns = [int(n) for n in a.ns]
    print(machine_note())
    failed = 0
    for kind in ("numeric", "mixed") if a.kind == "both" else (a.kind,):
        failed += run_kind(a, kind, ns)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
