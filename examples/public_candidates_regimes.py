"""The three regimes of private selection from public candidates: Tree-EM, hierarchical tree
projection (HTP) and the nearest-neighbour (NN) histogram baseline, at equal epsilon.

Each mechanism releases a size-``m`` multiset on the public candidates ``C``; the score is the
exact 1-Wasserstein distance (l2 ground metric, POT's network simplex) between the private data
``D`` and the released multiset.  Every multiset on ``C`` is at least the *projection floor*
``mean_x d(x, C)`` from ``D``, so the plot shows the excess ``W1 - floor`` (the part the
mechanisms control).  Tree-EM and HTP share one fresh FRT tree per repetition.

Families of settings (one panel each):

- ``m``: the output size, 2-D Gaussian-mixture data, ``k = 500`` uniform candidates;
- ``eps_n``: the privacy level ``eps * n`` at ``k = 2000``, ``m = 10``;
- ``k``: the number of candidates at ``m = 10``, ``eps = 0.2``;
- ``clustering``: how clustered ``D`` is relative to ``C``: the data are 5 Gaussian clusters
  centred on 5 of ``k = 200`` candidates, with a spread from ``10^-4`` (all mass on those 5
  candidates) to 0.3 (spread over the square);
- ``structure``: how much geometry the candidates have: the data sit on 10 of 100 candidates
  drawn in ``R^p``; as ``p`` grows the candidates become nearly equidistant (no tree helps);
- ``digits``: real data, scikit-learn's bundled digits (64-D, pixel values / 16): candidates
  from one part of the images, private data from the rest, over ``eps``.

The script prints, for every setting, the mean excess of each method and the winner, then the
regimes found (settings where each method beats the other two).  Writes
``public_candidates_regimes.csv`` (one row per release), ``public_candidates_summary.csv``
(one row per setting) and ``public_candidates_regimes.png`` to ``--out`` (default ``out/``).
``--quick`` runs a small version in well under 30 s (a smoke test).

Seeds make the trees, Tree-EM and HTP reproducible; **seeded releases are not private** (they
are for figures only).  The NN baseline draws OpenDP's CSPRNG noise and is not reproducible.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.evaluation import w1
from opendp_wasserstein.measurements import make_nn_histogram, make_tree_em, make_tree_projection
from opendp_wasserstein.public_candidates.sets import NearestCandidates
from opendp_wasserstein.public_candidates.trees import frt_tree
from opendp_wasserstein.runtime import reproducible

METHODS = ("tree_em", "tree_projection", "nn_histogram")
COLORS = {"tree_em": "tab:blue", "tree_projection": "tab:orange", "nn_histogram": "tab:green"}


@dataclass
class Setting:
    family: str
    param: str
    value: float
    data: np.ndarray
    candidates: np.ndarray
    m: int
    epsilon: float


def _mixture(
    n: int, p: int, rng: np.random.Generator, clusters: int = 4, sd: float = 0.05
) -> np.ndarray:
    centres = rng.uniform(0.2, 0.8, size=(clusters, p))
    x = centres[rng.integers(0, clusters, n)] + rng.normal(scale=sd, size=(n, p))
    return np.clip(x, 0.0, 1.0)


def _settings(quick: bool, seed: int) -> list[Setting]:
    rng = np.random.default_rng(seed)
    n = 400 if quick else 2000
    out: list[Setting] = []
    data2 = _mixture(n, 2, rng)

    ms = [5, 50, 400] if quick else [2, 5, 10, 20, 50, 100, 200, 500, 1000]
    cand = rng.uniform(size=(200 if quick else 500, 2))
    for m in ms:
        out.append(Setting("m", "m", m, data2, cand, m, 0.5))

    cand = rng.uniform(size=(500 if quick else 2000, 2))
    epss = [0.05, 0.5, 5.0] if quick else [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    for eps in epss:
        out.append(Setting("eps_n", "eps * n", eps * n, data2, cand, 10, eps))

    ks = [50, 500, 2000] if quick else [50, 100, 200, 500, 1000, 2000, 5000]
    for k in ks:
        out.append(Setting("k", "k", k, data2, rng.uniform(size=(k, 2)), 10, 0.2))

    cand = rng.uniform(size=(200, 2))
    on = rng.choice(200, 5, replace=False)
    for sd in [1e-3, 0.03, 0.3] if quick else [1e-4, 1e-3, 0.01, 0.03, 0.1, 0.3]:
        x = np.clip(cand[on][rng.integers(0, 5, n)] + rng.normal(scale=sd, size=(n, 2)), 0.0, 1.0)
        out.append(Setting("clustering", "spread (sd) around 5 candidates", sd, x, cand, 50, 0.2))

    ps = [2, 10, 40] if quick else [2, 5, 10, 20, 40]
    for p in ps:
        cand_p = rng.normal(size=(100, p))
        on = rng.choice(100, 10, replace=False)
        x = cand_p[on][rng.integers(0, 10, n)] + rng.normal(scale=0.01, size=(n, p))
        out.append(Setting("structure", "dimension p", p, x, cand_p, 50, 0.1))

    from sklearn.datasets import load_digits

    digits = load_digits().data.astype(np.float64) / 16.0
    perm = rng.permutation(digits.shape[0])
    k_dig = 150 if quick else 300
    cand_d = digits[perm[:k_dig]]
    _, first = np.unique(cand_d, axis=0, return_index=True)
    cand_d = cand_d[np.sort(first)]  # the candidate set must be distinct
    priv = digits[perm[k_dig:]]
    if quick:
        priv = priv[:n]
    for eps in [0.05, 1.0] if quick else [0.02, 0.05, 0.2, 1.0, 5.0]:
        out.append(Setting("digits", "eps (digits, m = 20)", eps, priv, cand_d, 20, eps))
    return out


def _seeded(
    meas: Callable[[np.ndarray], np.ndarray], seed: int
) -> Callable[[np.ndarray], np.ndarray]:
    """Release inside ``reproducible(seed)``: NOT private, for a reproducible figure."""

    def release(x: np.ndarray) -> np.ndarray:
        with reproducible(seed):
            return meas(x)

    return release


def _mechanisms(s: Setting, tree: Any, seed: int) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    n, p = s.data.shape
    dom = dp.numpy.array2_domain(num_columns=p, size=n, T=float)
    sym = dp.symmetric_distance()
    return {
        "tree_em": _seeded(make_tree_em(dom, sym, s.candidates, s.m, s.epsilon, tree=tree), seed),
        "tree_projection": _seeded(
            make_tree_projection(dom, sym, s.candidates, s.m, s.epsilon, tree=tree), seed
        ),
        "nn_histogram": make_nn_histogram(dom, sym, s.candidates, s.m, s.epsilon),
    }


def run(quick: bool, reps: int, seed: int, out: str) -> tuple[list[dict], list[dict]]:
    dp.enable_features("contrib", "idealized-numerics")
    rows: list[dict] = []
    summary: list[dict] = []
    for s in _settings(quick, seed):
        n, p = s.data.shape
        nearest = NearestCandidates(s.candidates)
        idx = nearest.query(s.data)
        floor = float(np.mean(np.linalg.norm(s.data - s.candidates[idx], axis=1)))
        means: dict[str, list[float]] = {mth: [] for mth in METHODS}
        for rep in range(reps):
            rseed = seed + 7919 * rep + 1
            tree = frt_tree(s.candidates, "l2", seed=rseed)
            for name, meas in _mechanisms(s, tree, rseed).items():
                t0 = time.perf_counter()
                counts = np.asarray(meas(s.data))
                secs = time.perf_counter() - t0
                sup = np.flatnonzero(counts)
                dist = w1(
                    s.data, s.candidates[sup], metric="l2", weights_y=counts[sup], max_points=10**6
                )
                means[name].append(dist - floor)
                rows.append(
                    {
                        "family": s.family,
                        "param": s.param,
                        "value": s.value,
                        "method": name,
                        "rep": rep,
                        "w1": dist,
                        "excess": dist - floor,
                        "floor": floor,
                        "seconds": secs,
                        "n": n,
                        "k": s.candidates.shape[0],
                        "m": s.m,
                        "epsilon": s.epsilon,
                        "p": p,
                    }
                )
        avg = {mth: float(np.mean(v)) for mth, v in means.items()}
        sem = {
            mth: float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0
            for mth, v in means.items()
        }
        ranked = sorted(METHODS, key=lambda mth: avg[mth])
        winner = ranked[0]
        margin = (avg[ranked[1]] - avg[winner]) / max(avg[ranked[1]], 1e-12)
        summary.append(
            {
                "family": s.family,
                "param": s.param,
                "value": s.value,
                "n": n,
                "k": s.candidates.shape[0],
                "m": s.m,
                "epsilon": s.epsilon,
                "floor": floor,
                "winner": winner,
                "margin": margin,
                **{f"excess_{mth}": avg[mth] for mth in METHODS},
                **{f"sem_{mth}": sem[mth] for mth in METHODS},
            }
        )
        print(
            f"{s.family:>9s} {s.param}={s.value:<8g} k={s.candidates.shape[0]:<5d} "
            f"m={s.m:<5d} eps={s.epsilon:<5g} "
            + "  ".join(f"{mth} {avg[mth]:.4f}" for mth in METHODS)
            + f"  -> {winner} (by {100 * margin:.0f}%)",
            flush=True,
        )
    os.makedirs(out, exist_ok=True)
    for name, table in (
        ("public_candidates_regimes.csv", rows),
        ("public_candidates_summary.csv", summary),
    ):
        with open(os.path.join(out, name), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    return rows, summary


def report(summary: list[dict]) -> dict[str, list[dict]]:
    """The regimes: for every method, the settings where it beats the other two."""
    regimes: dict[str, list[dict]] = {
        mth: [r for r in summary if r["winner"] == mth] for mth in METHODS
    }
    print("\nRegimes found (mean excess W1 over the projection floor; winner beats both others):")
    for mth in METHODS:
        won = regimes[mth]
        if not won:
            print(f"  {mth}: wins nowhere in this grid")
            continue
        best = max(won, key=lambda r: r["margin"])
        where = ", ".join(f"{r['family']}:{r['value']:g}" for r in won)
        print(
            f"  {mth}: wins {len(won)} settings ({where}); clearest at {best['family']} "
            f"{best['param']} = {best['value']:g} (k={best['k']}, m={best['m']}, "
            f"eps={best['epsilon']:g}), "
            f"{100 * best['margin']:.0f}% below the runner-up"
        )
    return regimes


def plot(summary: list[dict], out: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    families = list(dict.fromkeys(r["family"] for r in summary))
    cols = 3
    rows_ = -(-len(families) // cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(4.6 * cols, 3.8 * rows_), squeeze=False)
    for ax in axes.flat[len(families) :]:
        ax.set_visible(False)
    for ax, fam in zip(axes.flat, families, strict=False):
        rs = [r for r in summary if r["family"] == fam]
        x = np.array([r["value"] for r in rs], dtype=float)
        for mth in METHODS:
            y = np.array([r[f"excess_{mth}"] for r in rs])
            e = np.array([r[f"sem_{mth}"] for r in rs])
            ax.errorbar(
                x,
                np.maximum(y, 1e-4),
                yerr=e,
                marker="o",
                ms=4,
                capsize=2,
                color=COLORS[mth],
                label=mth,
            )
        for r in rs:  # the winner of every setting, along the bottom
            ax.plot(
                [r["value"]],
                [0.03],
                marker="s",
                ms=8,
                color=COLORS[r["winner"]],
                transform=ax.get_xaxis_transform(),
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(rs[0]["param"])
        ks = sorted({r["k"] for r in rs})
        ms_ = sorted({r["m"] for r in rs})
        epss = sorted({r["epsilon"] for r in rs})
        desc = [
            f"k={ks[0]}" if len(ks) == 1 else "",
            f"m={ms_[0]}" if len(ms_) == 1 else "",
            f"eps={epss[0]:g}" if len(epss) == 1 else "",
            f"n={rs[0]['n']}",
        ]
        ax.set_title(f"{fam}: " + ", ".join(d for d in desc if d), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylabel("W1(D, S) - projection floor", fontsize=8)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(
        "Private selection from public candidates: squares mark the winner of each setting",
        fontsize=10,
    )
    fig.tight_layout()
    path = os.path.join(out, "public_candidates_regimes.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Tree-EM vs tree projection vs NN histogram: the three regimes"
    )
    parser.add_argument("--out", default="out", help="output directory (default: out/)")
    parser.add_argument("--quick", action="store_true", help="a small smoke version (< 30 s)")
    parser.add_argument(
        "--reps", type=int, default=None, help="repetitions per setting (default 8; 1 with --quick)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for data, trees and mechanisms (NOT private)"
    )
    args = parser.parse_args(argv)
    reps = args.reps if args.reps is not None else (1 if args.quick else 8)
    t0 = time.perf_counter()
    _, summary = run(args.quick, reps, args.seed, args.out)
    report(summary)
    path = plot(summary, args.out)
    print(f"\nwrote {path} and the CSVs in {args.out}/ in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
