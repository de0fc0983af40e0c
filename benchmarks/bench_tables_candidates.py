"""Why Adaptive Pruned-PMM loses to independent marginals on small real tables (printed figures).

For each real table (``_tables_data``) and epsilon: the evaluation's noise floor (W1 and TVDs
between the two halves of the training rows, and between training and held-out rows), the
independent-marginals baseline of ``bench_tables_real.py``, and every default candidate of the
adaptive mechanism (``split_order_candidates`` at ``epsilon_main = 0.8 epsilon``) run as a fixed
Pruned-PMM *without* the selection (an oracle view: the best row is what a perfect selection could
reach), plus equal-sigma schedules at a few depths; then the adaptive release itself (selection
included, ``epsilon_select = 0.2 epsilon``) with the default candidates and with the paper's
equal-sigma (``s = 1``) schedule added at every candidate depth.  Means over ``--seeds`` seeded
(non-private) runs.
``python benchmarks/bench_tables_candidates.py [--tables seattle-weather] [--epsilons 1]``
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import opendp.prelude as dp
from _tables_data import NAMES, load
from bench_tables_real import Codes, run_marginals, split

from opendp_wasserstein.evaluation import marginal_tvd, table_w1
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pruned_pmm
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import (
    ScheduleCandidate,
    profile_schedule,
    split_order_candidates,
)
from opendp_wasserstein.tables import TableEncoding, read_table, write_table


def scores(t, real, synthetic) -> tuple[float, float, float]:
    return (
        table_w1(real, synthetic, t.schema, max_points=2000).value,
        marginal_tvd(real, synthetic, t.schema, way=1).mean,
        marginal_tvd(real, synthetic, t.schema, way=2).mean,
    )


def fmt(w1_tvd: Any) -> str:
    w1, t1, t2 = (float(v) for v in w1_tvd)
    return f"W1 {w1:.3f}  TVD1 {t1:.3f}  TVD2 {t2:.3f}"


def run_fixed(
    t: Any,
    train: Any,
    case: tuple[Any, Any, Any, Any, Any],
    depth: int,
    scales: tuple[float, ...],
    seeds: int,
) -> np.ndarray:
    """Pruned-PMM with a fixed depth and schedule on the table's split order, mean scores."""
    enc, info, pts, order, dom = case
    m = make_pruned_pmm(
        dom, dp.change_one_distance(), depth, scales, axes=order.axes_to(depth), placement="uniform"
    )
    out = []
    for s in range(seeds):
        with reproducible(s):
            out.append(scores(t, train, write_table(enc.decode(m(pts)), t.schema, info)))
    return np.mean(out, axis=0)


def with_equal_sigma(
    cands: tuple[ScheduleCandidate, ...], eps_main: float
) -> tuple[ScheduleCandidate, ...]:
    """The candidates plus the paper's equal-sigma schedule at each of their depths."""
    out = list(cands)
    for r in sorted({c.depth for c in cands}):
        sc = profile_schedule(np.ones(r), eps_main)
        if all((c.depth, c.scales) != (r, sc) for c in out):
            out.append(ScheduleCandidate(1, r, sc))
    return tuple(out)


def run_adaptive(
    t: Any, train: Any, case: tuple[Any, Any, Any, Any, Any], eps: float, cands: Any, seeds: int
) -> np.ndarray:
    enc, info, pts, order, dom = case
    m = make_adaptive_pruned_pmm(
        dom,
        dp.change_one_distance(),
        0.2 * eps,
        0.8 * eps,
        placement="uniform",
        candidates=cands,
        split_order=order,
    )
    out = []
    for s in range(seeds):
        with reproducible(s):
            out.append(scores(t, train, write_table(enc.decode(m(pts)), t.schema, info)))
    return np.mean(out, axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(NAMES))
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--split-order", default="discrete-first", choices=["discrete-first", "cyclic"])
    args = ap.parse_args()
    dp.enable_features("contrib")
    for name in args.tables.split(","):
        t = load(name)
        train, test = split(t)
        enc = TableEncoding(t.schema)
        cols, info = read_table(train, t.schema)
        pts = enc.encode(cols)
        n, D = pts.shape
        order = enc.split_order(args.split_order)
        rng = np.random.default_rng(0)
        halves = []
        for _ in range(args.seeds):
            idx = rng.permutation(n)
            halves.append(scores(t, train.iloc[idx[: n // 2]], train.iloc[idx[n // 2 :]]))
        print(f"{name}: n = {n}, D = {D}, split order {args.split_order}")
        print(f"  floor, two halves of the training rows   {fmt(np.mean(halves, axis=0))}")
        print(f"  floor, training vs held-out rows         {fmt(scores(t, train, test))}")
        dom = dp.numpy.array2_domain(num_columns=D, size=n, T=float)
        codes = Codes(t, 16)
        for eps in [float(e) for e in args.epsilons.split(",")]:
            eps_main = 0.8 * eps

            case = (enc, info, pts, order, dom)

            marg = np.mean(
                [
                    scores(t, train, run_marginals(codes, train, eps, s)[0])
                    for s in range(args.seeds)
                ],
                axis=0,
            )
            print(f"  eps {eps:g}: independent marginals        {fmt(marg)}")
            for c in split_order_candidates(order, n, eps_main):
                res = run_fixed(t, train, case, c.depth, c.scales, args.seeds)
                print(
                    f"    candidate s={c.s} depth {c.depth:2d} (sigma_1 {c.scales[1]:7.1f})  "
                    f"{fmt(res)}"
                )
            for r in (6, 9, 12, 15, 18, 22):
                if r <= order.max_depth:
                    sc = profile_schedule(np.ones(r), eps_main)
                    print(
                        f"    equal sigma, depth {r:2d} (sigma {sc[1]:6.1f})      "
                        f"{fmt(run_fixed(t, train, case, r, sc, args.seeds))}"
                    )
            default = split_order_candidates(order, n, eps_main)
            print(
                "    adaptive, default candidates             "
                f"{fmt(run_adaptive(t, train, case, eps, default, args.seeds))}"
            )
            extra = with_equal_sigma(default, eps_main)
            print(
                "    adaptive, + equal-sigma candidates       "
                f"{fmt(run_adaptive(t, train, case, eps, extra, args.seeds))}"
            )


if __name__ == "__main__":
    main()
