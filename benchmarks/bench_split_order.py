"""Split order of the table hierarchy: discrete axes first vs the cyclic order (printed figures).

For each table (the shipped real ones of ``_tables_data`` and a synthetic mixed table with
dependent columns at larger ``n``), Adaptive Pruned-PMM at ``epsilon`` releases a synthetic
table with the table's ``"discrete-first"`` split order and with the ``"cyclic"`` one, over
``--seeds`` reproducible runs; both use the split order's own diameter profile in the scores
and its candidates.  Scores: W1 under the table metric (``evaluation.table_w1``: exact up to
2000 rows, else the mean over 3 subsample pairs of 2000, with its noise floor) and the mean
1-way and 2-way marginal TVD.  Same data for both orders; seeds are for the release only (NOT
private runs, for the figures).

``python benchmarks/bench_split_order.py [--epsilon 1] [--seeds 5] [--n 20000] [--out out]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import opendp.prelude as dp
from _common import write_csv
from _tables_data import NAMES, load, mixed_synthetic

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import marginal_tvd, table_w1
from opendp_wasserstein.runtime import diagnostics, reproducible

FIELDS = [
    "table",
    "n",
    "order",
    "seed",
    "epsilon",
    "w1",
    "w1_floor",
    "tvd1",
    "tvd2",
    "depth",
    "s",
    "seconds",
]


def run(tables, epsilon: float, seeds: int) -> list[dict]:
    rows = []
    for t in tables:
        for order in ("discrete-first", "cyclic"):
            for seed in range(seeds):
                with reproducible(seed), diagnostics():
                    t0 = time.perf_counter()
                    out, report = synthesize(t.data, epsilon, schema=t.schema, split_order=order)
                    secs = time.perf_counter() - t0
                w = table_w1(t.data, out, t.schema, max_points=2000, repeats=3, seed=seed)
                rows.append(
                    {
                        "table": t.name,
                        "n": len(t.data),
                        "order": order,
                        "seed": seed,
                        "epsilon": epsilon,
                        "w1": w.value,
                        "w1_floor": w.noise_floor,
                        "tvd1": marginal_tvd(t.data, out, t.schema, way=1).mean,
                        "tvd2": marginal_tvd(t.data, out, t.schema, way=2).mean,
                        "depth": report.depth,
                        "s": report.details.get("s"),
                        "seconds": secs,
                    }
                )
    return rows


def summarise(rows: list[dict]) -> list[str]:
    lines = [
        f"{'table':>16} {'order':>15} {'W1 (table metric)':>22} {'floor':>7} "
        f"{'TVD 1-way':>10} {'TVD 2-way':>10} {'depths':>12}"
    ]
    keys = sorted(
        {(r["table"], r["order"]) for r in rows}, key=lambda k: (k[0], k[1] != "discrete-first")
    )
    for table, order in keys:
        rs = [r for r in rows if r["table"] == table and r["order"] == order]
        w = np.array([r["w1"] for r in rs])
        se = w.std(ddof=1) / np.sqrt(len(w)) if len(w) > 1 else float("nan")
        depths = sorted({r["depth"] for r in rs})
        lines.append(
            f"{table:>16} {order:>15} {w.mean():>14.4f} +- {se:.4f} {rs[0]['w1_floor']:>7.4f} "
            f"{np.mean([r['tvd1'] for r in rs]):>10.4f} "
            f"{np.mean([r['tvd2'] for r in rs]):>10.4f} {str(depths):>12}"
        )
    return lines


def main() -> None:
    dp.enable_features("contrib")  # a program of its own, as any OpenDP program
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--n", type=int, default=20000, help="rows of the synthetic mixed table")
    ap.add_argument("--out", default="bench_out")
    ap.add_argument("--quick", action="store_true", help="2 seeds, the synthetic table at n = 3000")
    args = ap.parse_args()
    seeds = 2 if args.quick else args.seeds
    tables = [mixed_synthetic(3000 if args.quick else args.n)]
    for name in NAMES:
        try:
            tables.append(load(name))
        except ImportError as e:  # the bench extra is not installed
            print(f"skipping {name}: {e}")
    rows = run(tables, args.epsilon, seeds)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench_split_order.csv")
    write_csv(path, rows, FIELDS)
    print(f"Adaptive Pruned-PMM, epsilon = {args.epsilon}, {seeds} seeds (mean +- standard error)")
    print("\n".join(summarise(rows)))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
