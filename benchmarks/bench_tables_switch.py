"""Where the pair tree starts to pay: ``joint="pairs"`` against ``joint="never"`` per ``n eps / k``.

``joint="auto"`` runs the tree of noisy 2-way marginals when ``n * eps / k >=
PAIRS_MIN_NEPS`` (``opendp_wasserstein.tables.pipeline``) and independent columns (the whole
budget on the first look) below.  This benchmark releases every table of
``_tables_data.COMPARE_NAMES`` (or ``--tables``) both ways at each ``--epsilons`` over
``--seeds`` seeds (NOT private: seeded figures) and scores them as ``bench_tables_compare``
does (1-way and 2-way TVD, correlation MAE, model, Gower W1), then writes
``switch.csv`` (one row per table, eps, mode: means over seeds) and ``switch.png`` (per
metric, the ratio pairs / never against ``n eps / k``, with the rule's threshold) into
``--out-dir`` (default ``docs/_static/tables_compare``).

``--delta 1e-9`` runs every release at ``(eps, delta)`` (zCDP: the discrete Gaussian, whose
joint release starts lower, ``PAIRS_MIN_NEPS_ZCDP``); ``--modes`` replaces the two forced modes
by named ``StructuredOptions`` as JSON (``'{"auto": {}, "n80": {"joint": "network",
"marginal_share": 0.8}}'``; the first mode is the reference: every other mode's metric worse than
it by more than 2 standard errors of the difference of the means is flagged ``!``, better ``+``);
``--below`` skips the cells at or above ``PAIRS_MIN_NEPS``.  ``switch.csv`` holds each mode's
mean and standard error over the seeds (``<metric>_se``); the plot needs the modes ``pairs`` and
``never``.

``python benchmarks/bench_tables_switch.py [--tables a,b] [--epsilons 0.5,1,2,4,8] [--seeds 2]``
``python benchmarks/bench_tables_switch.py --plot-only`` (redraw from ``switch.csv``)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import warnings
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

METRICS = ("tvd1", "tvd2", "corr", "model", "gower")
LOWER_IS_BETTER = {"tvd1": True, "tvd2": True, "corr": True, "model": False, "gower": True}


#: the default modes: the pair tree and independent columns, both forced
DEFAULT_MODES: dict[str, dict[str, Any]] = {
    "pairs": {"joint": "pairs"},
    "never": {"joint": "never"},
}


def mean_se(xs: list[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for one value)."""
    a = np.asarray(xs, dtype=np.float64)
    se = float(a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else 0.0
    return float(a.mean()), se


def flag(m: str, row: dict[str, Any], ref: dict[str, Any]) -> str:
    """``!`` when ``row``'s metric ``m`` is worse than ``ref``'s by more than 2 standard errors
    of the difference of the means, ``+`` when better by as much, else empty."""
    d = float(row[m]) - float(ref[m])
    sd = 2.0 * float(np.hypot(float(row[m + "_se"]), float(ref[m + "_se"])))
    worse = d > sd if LOWER_IS_BETTER[m] else d < -sd
    better = d < -sd if LOWER_IS_BETTER[m] else d > sd
    return "!" if worse else ("+" if better else "")


def measure(
    tables: list[str],
    epsilons: list[float],
    seeds: int,
    modes: dict[str, dict[str, Any]] | None = None,
    delta: float | None = None,
    below: bool = False,
) -> list[dict[str, Any]]:
    import opendp.prelude as dp
    from bench_tables_compare import TableContext

    from opendp_wasserstein import synthesize
    from opendp_wasserstein.runtime import reproducible
    from opendp_wasserstein.tables.pipeline import PAIRS_MIN_NEPS, StructuredOptions

    dp.enable_features("contrib")
    modes = DEFAULT_MODES if modes is None else modes
    extra = {} if delta is None else {"delta": delta}
    rows = []
    for name in tables:
        ctx = TableContext(name, 32, 2000)
        n, k = len(ctx.train), len(ctx.t.schema)
        for eps in epsilons:
            if below and n * eps / k >= PAIRS_MIN_NEPS:
                continue
            ref: dict[str, Any] | None = None
            for mode, options in modes.items():
                scores = []
                for seed in range(seeds):
                    with reproducible(seed), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        out, _ = synthesize(
                            ctx.train, eps, schema=ctx.t.schema,
                            structured=StructuredOptions(**options), **extra,
                        )  # fmt: skip
                    scores.append(ctx.score(out))
                row = {"table": name, "n": n, "k": k, "eps": eps, "neps_k": n * eps / k}
                row |= {"mode": mode, "delta": "" if delta is None else delta}
                for m in METRICS:
                    row[m], row[m + "_se"] = mean_se([s[m] for s in scores])
                ref = row if ref is None else ref
                print(
                    f"{name} eps={eps:g} n eps/k={row['neps_k']:.0f} {mode}: "
                    + " ".join(
                        f"{m} {row[m]:.3f}+-{row[m + '_se']:.3f}{flag(m, row, ref)}"
                        for m in METRICS
                    ),
                    flush=True,
                )
                rows.append(row)
    return rows


def plot(rows: list[dict[str, Any]], path: str, threshold: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(r["table"], float(r["eps"]), r["mode"]): r for r in rows}
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.6), sharex=True)
    tables = sorted({r["table"] for r in rows})
    for ax, m in zip(axes, METRICS, strict=True):
        for t in tables:
            pts = sorted(
                (float(p["neps_k"]), _ratio(m, float(p[m]), float(_never(by, t, p)[m])))
                for p in rows
                if p["table"] == t and p["mode"] == "pairs" and (t, float(p["eps"]), "never") in by
            )  # fmt: skip
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=t)
        ax.axhline(1.0 if LOWER_IS_BETTER[m] else 0.0, color="k", lw=0.8)
        ax.axvline(threshold, color="r", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("n eps / k")
        ax.set_title(f"{m}: pairs / never" if LOWER_IS_BETTER[m] else f"{m}: never - pairs")
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"below 1 (0 for the model): the pair tree is better; red: PAIRS_MIN_NEPS = {threshold:g}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _never(by: dict[Any, dict[str, Any]], t: str, p: dict[str, Any]) -> dict[str, Any]:
    return by[(t, float(p["eps"]), "never")]


def _ratio(m: str, pairs: float, never: float) -> float:
    """pairs / never for an error, never - pairs for the model score (R^2 can be negative)."""
    if LOWER_IS_BETTER[m]:
        return pairs / never if never > 0 else float("nan")
    return never - pairs


def main(argv: list[str] | None = None) -> int:
    from _tables_data import COMPARE_NAMES

    from opendp_wasserstein.tables.pipeline import PAIRS_MIN_NEPS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(COMPARE_NAMES))
    ap.add_argument("--epsilons", default="0.5,1,2,4,8")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument(
        "--out-dir", default=os.path.join(HERE, "..", "docs", "_static", "tables_compare")
    )
    ap.add_argument("--delta", type=float, default=None, help="release at (eps, delta)")
    ap.add_argument("--modes", default=None, help="named StructuredOptions as JSON")
    ap.add_argument("--below", action="store_true", help="only n eps / k < PAIRS_MIN_NEPS")
    ap.add_argument("--plot-only", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, "switch.csv")
    if args.plot_only:
        with open(path) as f:
            rows: list[dict[str, Any]] = list(csv.DictReader(f))
    else:
        rows = measure(
            args.tables.split(","),
            [float(e) for e in args.epsilons.split(",")],
            args.seeds,
            None if args.modes is None else json.loads(args.modes),
            args.delta,
            args.below,
        )
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    if {r["mode"] for r in rows} >= {"pairs", "never"}:
        plot(rows, os.path.join(args.out_dir, "switch.png"), PAIRS_MIN_NEPS)
    print(
        f"wrote {path}"
        + (" and switch.png" if {r["mode"] for r in rows} >= {"pairs", "never"} else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
