"""The partition step of the distributed PMM family: the package's task graph against Dask's P2P
shuffle.

Step 3 of the plan (:mod:`opendp_wasserstein.distributed._pmm`) sends every row to the part that
owns its level-``j0`` cell and builds each part's count tree.  Two ways to move the rows are
timed on the same input, on a fresh 2-worker ``LocalCluster`` each (``--memory-limit`` each,
default 4 GB), the first ``--n`` rows (default ``10^7``) of the Parquet data of
``bench_distributed.py`` (written there; ``--data``):

* ``tasks`` (the package's, :meth:`~opendp_wasserstein.distributed._pmm.Driver.trees`): 16 split
  tasks over groups of blocks, each returning its rows cut by part, then one small task per
  (group, part) piece and one tree task per part;
* ``p2p``: ``dask.dataframe.read_parquet``, a ``_partitions`` column (the owning part, the same
  cut) added per partition, Dask's peer-to-peer shuffle (``P2PShuffle``, the expression
  ``DataFrame.shuffle(method="p2p")`` lowers to, fed the part number directly so part ``q`` is
  output partition ``q``), then one tree task per output partition.

Both start after the same count pass (the level-``j0`` histogram and the part bounds, timed
once) and stop when every part's tree is in worker memory.  Printed: seconds for count and
partition-plus-trees, and the peak RSS of the driver and of each worker.  The machine is shared
(2 cores, other jobs running): read the times as +-30%.

``python benchmarks/bench_partition.py [--n 1e7] [--methods tasks p2p]``
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
from _common import machine_note

HERE = os.path.dirname(os.path.abspath(__file__))


def _with_parts(df: Any, box: Any, level: int, bounds: np.ndarray, cols: list[str]) -> Any:
    from opendp_wasserstein.distributed._pmm import level_prefix

    x = df[cols].to_numpy(dtype=np.float64)
    out = df[cols].copy()
    out["_partitions"] = np.searchsorted(bounds, level_prefix(x, box, level), side="right") - 1
    return out


def _tree_of_frame(df: Any, d: int, box: Any, depth: int, cols: list[str]) -> Any:
    from opendp_wasserstein.hierarchy.cells import CountTree

    return CountTree(df[cols].to_numpy(dtype=np.float64), depth, box, keep_input=False)


def child(a: argparse.Namespace) -> None:
    import dask
    import dask.dataframe as dd
    from distributed import wait

    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.distributed._executor import local_client
    from opendp_wasserstein.distributed._pmm import Driver, part_bounds, split_level
    from opendp_wasserstein.distributed._source import blocks_of
    from opendp_wasserstein.schedules.pure import max_candidate_depth

    files = sorted(f for f in os.listdir(a.data) if f.endswith(".parquet"))[
        : a.n // a.rows_per_file
    ]
    src = a.out + ".src"
    os.makedirs(src, exist_ok=True)
    for f in files:
        os.symlink(os.path.join(a.data, f), os.path.join(src, f))
    d, box = a.d, as_box((0.0, 1.0), a.d)
    depth = max_candidate_depth(d, a.n, 0.8)  # the adaptive mechanism's tree depth L
    try:
        with local_client(workers=a.workers, memory_limit=a.memory_limit) as client:
            blocks, names = blocks_of(src, d)
            drv = Driver(client, blocks, False)
            parts = drv.parts
            j0 = split_level(parts, depth)
            t0 = time.perf_counter()
            n, h = drv.count(d, True, box, j0)
            bounds = part_bounds(h, parts)
            t_count = time.perf_counter() - t0
            t0 = time.perf_counter()
            if a.method == "tasks":
                trees = drv.trees(d, True, box, j0, bounds, depth)
                wait(trees)
            else:
                from dask.dataframe.dask_expr import new_collection
                from dask.dataframe.dask_expr._shuffle import P2PShuffle

                df = dd.read_parquet(src, columns=names)
                meta = df._meta.assign(_partitions=np.zeros(0, dtype=np.int64))
                tagged = df.map_partitions(_with_parts, box, j0, bounds, names, meta=meta)
                shuffled = new_collection(
                    P2PShuffle(tagged.expr, "_partitions", parts, True, {}, None)
                )
                with dask.config.set({"dataframe.shuffle.method": "p2p"}):
                    trees = [
                        client.compute(dask.delayed(_tree_of_frame)(p, d, box, depth, names))
                        for p in shuffled.to_delayed()
                    ]
                    wait(trees)
            t_part = time.perf_counter() - t0
            rows = sum(client.gather(client.map(lambda t: t.n, trees, pure=False)))
            workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        json.dumps(
            {
                "method": a.method,
                "n": n,
                "rows_in_trees": int(rows),
                "parts": parts,
                "j0": j0,
                "count": t_count,
                "partition": t_part,
                "driver_rss": driver,
                "worker_rss": sorted(workers.values()),
            }
        )
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=float, default=1e7)
    p.add_argument("--d", type=int, default=3)
    p.add_argument("--rows-per-file", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--memory-limit", default="4GB")
    p.add_argument("--methods", nargs="+", choices=["tasks", "p2p"], default=["tasks", "p2p"])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--data", default="/tmp/odpw_bench")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--method", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.n = int(a.n)
    if a.child:
        child(a)
        return
    sys.path.insert(0, HERE)
    from bench_distributed import write_data

    data = f"{a.data}_d{a.d}_{a.rows_per_file}"
    print(machine_note())
    write_data(data, a.n, a.d, a.rows_per_file)
    print(
        f"partition step, n = {a.n:,}, d = {a.d}, LocalCluster {a.workers} workers x 1 thread, "
        f"memory limit {a.memory_limit} each"
    )
    print(
        f"{'method':>7} {'count s':>8} {'partition+trees s':>18} {'driver MB':>10} "
        f"{'workers MB':>12} {'parts':>6}"
    )
    for _ in range(a.repeats):
        for method in a.methods:
            out = os.path.join(os.path.dirname(data), f".odpw_part_{os.getpid()}_{method}")
            cmd = [
                sys.executable,
                os.path.join(HERE, "bench_partition.py"),
                "--child",
                "--method",
                method,
                "--n",
                str(a.n),
                "--d",
                str(a.d),
                "--rows-per-file",
                str(a.rows_per_file),
                "--workers",
                str(a.workers),
                "--memory-limit",
                a.memory_limit,
                "--data",
                data,
                "--out",
                out,
            ]
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode:
                err = res.stderr.strip().splitlines()
                print(f"{method:>7} failed: {err[-1] if err else res.returncode}")
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            assert r["rows_in_trees"] == r["n"], "every row must reach one tree"
            wmb = "/".join(f"{w / 2**20:.0f}" for w in r["worker_rss"])
            print(
                f"{method:>7} {r['count']:>8.1f} {r['partition']:>18.1f} "
                f"{r['driver_rss'] / 2**20:>10.0f} "
                f"{wmb:>12} {r['parts']:>6}"
            )


if __name__ == "__main__":
    main()
