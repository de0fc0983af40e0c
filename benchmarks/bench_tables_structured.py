"""The structured table release against the one-tree release and independent marginals.

Tables: palmer penguins, vega cars, vega seattle-weather (``_tables_data``) and two synthetic
mixed tables with strong numeric correlations, skewed columns in loose public bounds, a long-tail
categorical column and a nullable column (``big_mixed``, 30,000 and 5,000 rows).  Each is split
70 / 30 at random (seed 0).  Mechanisms at ``epsilon`` per replaced record (public size):

- ``structured``: ``synthesize(table, eps, schema=...)``, the default (the DP first look,
  quantile encoding, Gower split-order family, calibration; ``--options`` sets its options);
- ``tree``: the one-tree release (``mechanism="adaptive"``: discrete-first, the previous default);
- ``marginals``: independent noisy 1-way marginals through OpenDP (``bench_tables_real``).

Scores against the training rows: ``tvd1`` / ``tvd2`` (mean 1-way / 2-way TVD, numeric columns
in 10 bins of the public bounds), ``corr`` (mean absolute error of the numeric columns'
Pearson correlation matrix, off the diagonal), ``gower`` (W1 under the Gower metric on 1,000-row
subsamples, numeric distances scaled by the public range, mean over 2 pairs), ``clf`` (balanced
accuracy, train on the release, test on the held-out rows), ``seconds``.  Means over
``--seeds`` seeded (non-private) runs, for the figures.

``python benchmarks/bench_tables_structured.py [--tables ...] [--epsilons 1,4] [--seeds 2]``
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np
import opendp.prelude as dp
import pandas as pd
from _tables_data import RealTable, load
from bench_tables_real import Codes, run_marginals, split

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import classifier_score, marginal_tvd
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import Schema, TableEncoding, read_table
from opendp_wasserstein.tables.pipeline import StructuredOptions


def big_mixed(n: int = 30000, seed: int = 0) -> RealTable:
    """A synthetic mixed table: correlated skewed numerics in loose bounds, categories, nulls."""
    rng = np.random.default_rng(seed)
    region = rng.choice(list("abcdef"), n, p=[0.35, 0.25, 0.15, 0.12, 0.08, 0.05])
    occ = rng.choice([f"o{i}" for i in range(20)], n, p=np.r_[0.3, 0.2, 0.1, np.full(17, 0.4 / 17)])
    flag = rng.uniform(size=n) < 0.3
    age = np.clip(rng.normal(40 + 5 * (region == "a"), 12, n), 16, 95).round()
    z = rng.normal(size=n)
    income = np.exp(10 + 0.015 * (age - 40) + 0.5 * z + 0.3 * flag)
    spend = income * np.exp(rng.normal(-1.2, 0.15, n))
    weight = np.clip(0.2 + np.exp(rng.normal(-0.3 + 0.4 * z, 0.3)), 0, 6)
    hours = np.where(
        rng.uniform(size=n) < 0.5, 40, np.clip(rng.normal(35 + 3 * z, 10, n), 0, 99)
    ).round()
    score = np.where(rng.uniform(size=n) < 0.2, np.nan, 50 + 10 * z + rng.normal(0, 5, n))
    df = pd.DataFrame(
        {
            "region": region.astype(object),
            "occupation": occ.astype(object),
            "flag": flag,
            "age": age.astype(np.int64),
            "income": income,
            "spend": spend,
            "weight": weight,
            "hours": hours.astype(np.int64),
            "score": score,
        }
    )
    schema = Schema.from_json(
        {
            "columns": {
                "region": {"type": "categorical", "categories": list("abcdef")},
                "occupation": {"type": "categorical", "categories": [f"o{i}" for i in range(20)]},
                "flag": {"type": "bool"},
                "age": {"type": "int", "bounds": [0, 120]},
                "income": {"type": "float", "bounds": [0, 1000000]},
                "spend": {"type": "float", "bounds": [0, 500000]},
                "weight": {"type": "float", "bounds": [0, 6]},
                "hours": {"type": "int", "bounds": [0, 168]},
                "score": {"type": "float", "bounds": [0, 100], "nullable": True},
            }
        }
    )
    return RealTable(f"mixed-{n // 1000}k", df, schema, "region", "synthetic")


def numeric_matrix(t: RealTable, df: pd.DataFrame) -> np.ndarray:
    cols = [c for c, s in t.schema.items() if s.type in ("float", "int", "datetime")]
    out = []
    for c in cols:
        v = df[c]
        if t.schema[c].type == "datetime":
            v = pd.to_datetime(v).astype("int64")
        out.append(pd.to_numeric(v, errors="coerce").to_numpy(dtype=float))
    return np.stack(out, axis=1)


def corr_mae(t: RealTable, real: pd.DataFrame, syn: pd.DataFrame) -> float:
    a, b = numeric_matrix(t, real), numeric_matrix(t, syn)
    if a.shape[1] < 2:
        return float("nan")
    ca = pd.DataFrame(a).corr().to_numpy()
    cb = pd.DataFrame(b).corr().to_numpy()
    iu = np.triu_indices(a.shape[1], 1)
    return float(np.nanmean(np.abs(np.nan_to_num(ca[iu]) - np.nan_to_num(cb[iu]))))


def gower_w1(
    t: RealTable, real: pd.DataFrame, syn: pd.DataFrame, m: int = 1000, reps: int = 2
) -> float:
    import ot

    enc = TableEncoding(t.schema)
    pa = enc.encode(read_table(real, t.schema)[0])
    pb = enc.encode(read_table(syn, t.schema)[0])
    groups = []
    j = 0
    for _ in t.schema.names:
        a = enc.axes[j]
        if a.role == "missing":
            groups.append((j, j + 1))
            j += 2
        else:
            groups.append((j,))
            j += 1

    def cost(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        c = np.zeros((len(x), len(y)))
        for g in groups:
            a = enc.axes[g[-1]]
            if a.discrete:
                cx, cy = enc._lookup(x[:, g[-1]], a.cells), enc._lookup(y[:, g[-1]], a.cells)
                c += cx[:, None] != cy[None, :]
            else:
                d = np.abs(x[:, g[-1]][:, None] - y[:, g[-1]][None, :])
                if len(g) == 2:
                    mx, my = x[:, g[0]] >= 0.5, y[:, g[0]] >= 0.5
                    diff = mx[:, None] != my[None, :]
                    both = mx[:, None] & my[None, :]
                    d = np.where(diff, 1.0, np.where(both, 0.0, d))
                c += d
        return c / len(groups)

    rng = np.random.default_rng(0)
    vals = []
    for _ in range(reps):
        x = pa[rng.choice(len(pa), min(m, len(pa)), replace=False)]
        y = pb[rng.choice(len(pb), min(m, len(pb)), replace=False)]
        vals.append(
            ot.emd2(
                np.full(len(x), 1 / len(x)),
                np.full(len(y), 1 / len(y)),
                cost(x, y),
                numItermax=10**7,
            )
        )
    return float(np.mean(vals))


def run(
    mech: str, t: RealTable, train: pd.DataFrame, eps: float, seed: int, opts: Any
) -> tuple[pd.DataFrame, dict]:
    if mech == "marginals":
        return run_marginals(Codes(t, 16), train, eps, seed)
    with reproducible(seed):
        t0 = time.perf_counter()
        if mech == "structured":
            out, report = synthesize(train, eps, schema=t.schema, structured=opts)
        else:  # the one-tree release (the previous default)
            out, report = synthesize(train, eps, schema=t.schema, mechanism="adaptive")
        secs = time.perf_counter() - t0
    assert report.epsilon <= eps, report.epsilon
    return out, {
        "seconds": secs,
        "depth": report.depth,
        "quality": report.details.get("quality", float("nan")),
        "joint": report.details.get("joint", True),
    }


def score(
    t: RealTable, train: pd.DataFrame, test: pd.DataFrame, syn: pd.DataFrame, clf: bool
) -> dict:
    out = {
        "tvd1": marginal_tvd(train, syn, t.schema, way=1).mean,
        "tvd2": marginal_tvd(train, syn, t.schema, way=2).mean,
        "corr": corr_mae(t, train, syn),
        "gower": gower_w1(t, train, syn),
    }
    if clf:
        out["clf"] = classifier_score(syn, test, t.target, t.schema, train_real=train).synthetic
    return out


def get_table(name: str) -> RealTable:
    if name.startswith("mixed-"):
        return big_mixed(int(name.split("-")[1].rstrip("k")) * 1000)
    return load(name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="penguins,cars,seattle-weather,mixed-5k,mixed-30k")
    ap.add_argument("--epsilons", default="1,4")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--mechanisms", default="structured,tree,marginals")
    ap.add_argument(
        "--options", default="", help="StructuredOptions as key=value;key=value (python literals)"
    )
    ap.add_argument("--no-clf", action="store_true")
    ap.add_argument(
        "--quick", action="store_true", help="penguins and a 3,000-row mixed table, eps 4, one seed"
    )
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args()
    if args.quick:
        args.tables, args.epsilons, args.seeds, args.no_clf = "penguins,mixed-3k", "4", 1, True
    dp.enable_features("contrib")
    kw: dict[str, Any] = {}
    for item in filter(None, args.options.split(";")):
        k, v = item.split("=", 1)
        kw[k] = eval(v)  # noqa: S307 - a benchmark's own command line
    opts = StructuredOptions(**kw) if kw else True
    rows = []
    for name in args.tables.split(","):
        t = get_table(name)
        train, test = split(t)
        for eps in [float(e) for e in args.epsilons.split(",")]:
            for mech in args.mechanisms.split(","):
                rs = []
                for seed in range(args.seeds):
                    syn, info = run(mech, t, train, eps, seed, opts)
                    rs.append(info | score(t, train, test, syn, not args.no_clf))
                keys = [
                    k
                    for k in ("tvd1", "tvd2", "corr", "gower", "clf", "quality", "depth", "seconds")
                    if k in rs[0]
                ]
                mean = {k: float(np.nanmean([float(r[k]) for r in rs])) for k in keys}
                rows.append({"table": name, "eps": eps, "mech": mech} | mean)
                print(
                    f"{name:16s} eps={eps:<4g} {mech:10s} "
                    + " ".join(f"{k} {v:.3f}" for k, v in mean.items()),
                    flush=True,
                )
    os.makedirs(args.out, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(args.out, "bench_tables_structured.csv"), index=False)


if __name__ == "__main__":
    main()
