"""Post-processing of Pruned-PMM's noisy counts: the paper's split vs least squares, with
suppression.

Every configuration post-processes the *same* noisy counts of a release (same privacy cost,
same map): ``synthesize(..., consistency=, threshold=)`` under ``runtime.reproducible(seed)``,
so for one seed the configurations differ only in post-processing (paired comparison;
reproducible runs are not private, which is fine for figures).

Configurations (``--configs``, ``consistency:threshold``):

- ``paper:0``: Algorithm 2 of the paper (the default before this benchmark);
- ``paper:t``: the paper's split, a noisy count ``<= t sigma_j`` read as 0;
- ``least_squares:t``: generalised least squares over every visited level
  (:mod:`opendp_wasserstein.hierarchy.least_squares`), a child whose estimate is ``<= t`` standard
  errors read as empty.

Data (all public): the nine 2-D shapes (``evaluation.SHAPES``, n = 30000); the airports of
``vega_datasets.data.airports()`` (3376 rows, longitude/latitude; local, never downloaded) in
two public boxes, ``airports_world`` (lon [-180, 180], lat [-90, 90]) and ``airports_us``
(lon [-180, -60], lat [15, 75]; the 3 airports outside it are dropped, a public rule), each
rescaled to the unit square; the 10-D closed curve (``_common.sample_curve``, n = 30000).

Scores, box-normalised (the unit cube): W1 with the l_inf ground metric (``w1_estimate``:
exact when both sets have at most ``--sample`` points, else the mean of ``--repeats`` exact
W1 between subsamples of the data, the same subsamples for every configuration and seed and
as in ``bench_peers.py``, whose MST figures are thus scored alike; exact for the airports,
``--exact-up-to``); ``far``: the share of
synthetic points farther than 0.05 (l_inf) from every real point (``scipy.spatial.cKDTree``).
The MST column is copied from ``--mst-csv`` (a ``bench_peers.py`` CSV) when given.

``python benchmarks/bench_postprocessing.py [--quick] [--out out]`` (needs ``'.[bench]'``).
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import numpy as np
import opendp.prelude as dp
from _common import fmt, machine_note, sample_curve, write_csv

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import SHAPES, sample_shape, w1_estimate
from opendp_wasserstein.runtime import reproducible

BOXES = {
    "airports_world": ((-180.0, -90.0), (180.0, 90.0)),
    "airports_us": ((-180.0, 15.0), (-60.0, 75.0)),
}
FAR = 0.05
DEFAULT_CONFIGS = ["paper:0", "paper:2", "least_squares:0", "least_squares:3"]
FIELDS = [
    "dataset",
    "d",
    "n",
    "mechanism",
    "eps",
    "seed",
    "consistency",
    "threshold",
    "w1",
    "w1_floor",
    "far",
    "depth",
    "s",
    "seconds",
]


def airports(box: str) -> np.ndarray:
    """The airports' (longitude, latitude) inside the public box, rescaled to ``[0, 1]^2``."""
    from vega_datasets import data

    a = data.airports()
    x = a[["longitude", "latitude"]].to_numpy(dtype=np.float64)
    lo, hi = (np.asarray(v) for v in BOXES[box])
    x = x[np.all((x >= lo) & (x <= hi), axis=1)]
    return (x - lo) / (hi - lo)


#: bench_peers.py's dataset order: a dataset's data seed and W1 subsample seed (1000 + index)
#: are the same there and here, so MST's figures are scored on the same data and subsamples
PEER_ORDER = [*SHAPES, "curve10", "subspace10"]


def w1_seed(name: str) -> int:
    return 1000 + PEER_ORDER.index(name) if name in PEER_ORDER else 2000 + list(BOXES).index(name)


def load(name: str, n: int) -> np.ndarray:
    if name in SHAPES:
        return sample_shape(name, n, seed=PEER_ORDER.index(name))
    if name in BOXES:
        return airports(name)
    if name == "curve10":
        return sample_curve(n, 10, seed=100)
    raise ValueError(f"unknown dataset {name!r}")


def far_share(x: np.ndarray, y: np.ndarray) -> float:
    from scipy.spatial import cKDTree

    dist, _ = cKDTree(x).query(y, p=np.inf, distance_upper_bound=2 * FAR)
    return float(np.mean(dist > FAR))


def parse_config(c: str) -> tuple[str, float]:
    cons, _, t = c.partition(":")
    return cons, float(t or 0.0)


def read_mst(path: str | None) -> dict[str, float]:
    if not path:
        return {}
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["mechanism"] == "mst" and r.get("w1"):
                out[r["dataset"]] = float(r["w1"])
    return out


def main(argv: list[str] | None = None) -> None:
    dp.enable_features("contrib")  # a program of its own, as any OpenDP program
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=30000)
    p.add_argument(
        "--datasets", nargs="+", default=[*SHAPES, "airports_world", "airports_us", "curve10"]
    )
    p.add_argument("--mechanisms", nargs="+", default=["adaptive", "pruned"])
    p.add_argument("--eps", nargs="+", type=float, default=[0.5, 1.0, 4.0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS)
    p.add_argument("--sample", type=int, default=2000, help="w1_estimate sample_size")
    p.add_argument("--repeats", type=int, default=2, help="w1_estimate repeats")
    p.add_argument(
        "--exact-up-to", type=int, default=4000, help="exact W1 for data of at most this many rows"
    )
    p.add_argument("--mst-csv", default=None, help="a bench_peers.py CSV with MST rows")
    p.add_argument("--out", default="out")
    p.add_argument(
        "--quick", action="store_true", help="n = 3000, 2 shapes + airports, eps 1, 1 seed"
    )
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.datasets, a.eps, a.seeds, a.sample, a.repeats = (
            3000,
            ["two_moons", "cross", "airports_world"],
            [1.0],
            1,
            500,
            1,
        )
    configs = [parse_config(c) for c in a.configs]
    mst = read_mst(a.mst_csv)
    print(
        f"bench_postprocessing: n = {a.n} (shapes, curve10), seeds {a.seeds}, W1 l_inf on "
        f"{a.repeats} x {a.sample}-point subsamples (exact below), far = share > {FAR} from "
        "every real point"
    )
    print(f"machine: {machine_note()}  (shared machine: timings are noisy)", flush=True)
    rows: list[dict] = []
    for name in a.datasets:
        x = load(name, a.n)
        n, d = x.shape
        for mech in a.mechanisms:
            for eps in a.eps:
                for seed in range(a.seeds):
                    for cons, t in configs:
                        t0 = time.perf_counter()
                        with reproducible(seed):
                            y, rep = synthesize(
                                x,
                                eps,
                                bounds=(0.0, 1.0),
                                mechanism=mech,
                                consistency=cons,
                                threshold=t,
                            )
                        secs = time.perf_counter() - t0
                        sample = n if n <= a.exact_up_to else a.sample  # small data: exact W1
                        est = w1_estimate(
                            x,
                            y,
                            metric="linf",
                            sample_size=sample,
                            repeats=a.repeats,
                            seed=w1_seed(name),
                        )
                        rows.append(
                            {
                                "dataset": name,
                                "d": d,
                                "n": n,
                                "mechanism": mech,
                                "eps": eps,
                                "seed": seed,
                                "consistency": cons,
                                "threshold": t,
                                "w1": est.value,
                                "w1_floor": est.noise_floor,
                                "far": far_share(x, y),
                                "depth": rep.depth,
                                "s": rep.details.get("s", ""),
                                "seconds": secs,
                            }
                        )
                summarise(
                    [r for r in rows if r["dataset"] == name and r["mechanism"] == mech],
                    a.configs,
                    mst,
                )
        write_csv(os.path.join(a.out, "bench_postprocessing.csv"), rows, FIELDS)
    print_table(rows, a.configs, mst)


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def summarise(rows: list[dict], configs: list[str], mst: dict[str, float]) -> None:
    if not rows:
        return
    name, mech = rows[0]["dataset"], rows[0]["mechanism"]
    for eps in sorted({r["eps"] for r in rows}):
        cells = []
        for c in configs:
            cons, t = parse_config(c)
            sel = [
                r
                for r in rows
                if r["eps"] == eps and r["consistency"] == cons and r["threshold"] == t
            ]
            cells.append(f"{c} {_mean(sel, 'w1'):.4f}/{100 * _mean(sel, 'far'):.2f}%")
        print(f"  {name:>14} {mech:>8} eps={eps:<4g} " + "  ".join(cells), flush=True)


def print_table(rows: list[dict], configs: list[str], mst: dict[str, float]) -> None:
    """Mean W1 (and far share) over the seeds, per dataset, mechanism and epsilon."""
    keys = list(dict.fromkeys((r["dataset"], r["mechanism"], r["eps"]) for r in rows))
    for title, key, spec, scale in (
        ("W1 (l_inf, box-normalised; mean over seeds)", "w1", ".4f", 1.0),
        ("far share, % of synthetic points > 0.05 from every real point", "far", ".2f", 100.0),
    ):
        print(f"\n{title}")
        head = f"{'dataset':>14} {'mech':>8} {'eps':>4} " + " ".join(f"{c:>16}" for c in configs)
        print(head + (f" {'MST(eps 1)':>10}" if key == "w1" and mst else ""))
        for name, mech, eps in keys:
            cells = []
            for c in configs:
                cons, t = parse_config(c)
                sel = [
                    r
                    for r in rows
                    if (r["dataset"], r["mechanism"], r["eps"]) == (name, mech, eps)
                    and r["consistency"] == cons
                    and r["threshold"] == t
                ]
                cells.append(fmt(scale * _mean(sel, key), spec, 16))
            extra = f" {fmt(mst.get(name), '.4f', 10)}" if key == "w1" and mst else ""
            print(f"{name:>14} {mech:>8} {eps:>4g} " + " ".join(cells) + extra)


if __name__ == "__main__":
    main()
