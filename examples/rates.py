"""The rate (eps n)^(-1/k): log W1 against log(eps n) for data of packing-growth dimension k.

Issue 13, item 4.  Data: ``sample_subspace(n, d, k)``, uniform on a k-dimensional coordinate face
of [0, 1]^d (packing-growth dimension k), for k = 1, 2, 3 inside d = 4 and d = 8, n from 10^3 to
10^6, eps = 1 (pure DP, one replacement).  Mechanisms: Adaptive Pruned-PMM as the paper has it
(``adaptive``: 0.2 selection + 0.8 synthesis, the standard candidates, the paper's score and
consistency, centre placement), the same with ``synthesize``'s defaults (``adaptive-capped``:
the capped selection score over the candidates with optimising depths, least squares, uniform
placement), and the ambient-depth PMM of He et al. (depth ``ceil(log2(eps n))``, the paper's
schedule at ``s = d``).

**W1 without a sampling floor.**  n = 10^6 points cannot be compared by exact optimal transport,
and subsampling would add a floor of order m^(-1/k) that hides the rate.  Two exact bounds on
W1 (l_inf ground metric) are computed on all points instead:

* a *lower* bound: for a direction u with ||u||_1 = 1, x -> u.x is 1-Lipschitz for l_inf, so
  W1 >= W1 of the projections, an exact 1-D computation (sorted quantile functions); the
  maximum over the d coordinate axes and 16 fixed random directions;
* an *upper* bound from the dyadic grids: with the cubes of side 2^-b as the nodes of a tree
  (edge from a level-b cube to its parent of weight 2^-b, half the parent's l_inf diameter),
  every tree distance dominates the l_inf distance between different finest cubes, so
  ``W1 <= sum_{b=1}^{B} 2^-b sum_cubes |mu(c) - nu(c)| + 2^-B`` (the last term: two points in
  one finest cube are at most 2^-B apart).  B = 20 (floor 2^-20, about 1e-6; cubes are
  identified by exact multi-word keys).

The slopes of log W1 on log(eps n) are fitted by least squares over all runs, with 95%
confidence intervals (t distribution), for both bounds, next to the paper's -1/k.  Writes
``rates.csv`` (every run) and ``rates.png`` (log-log plot with the fits) and prints the slope
table.  Runs are reproducible (``runtime.reproducible``: NOT private -- a figure).

``python examples/rates.py [--out out/rates] [--quick] [--max-n 1e6] [--repeats 2]``
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time

import numpy as np
import opendp.prelude as dp
from scipy import stats

from opendp_wasserstein.evaluation import sample_subspace
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pmm
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import ambient_depth, paper_schedule

GRID_BITS = 20  # finest dyadic grid of the upper bound: side 2^-20
N_DIRECTIONS = 16  # random directions of the sliced lower bound (besides the d axes)


# ---------------------------------------------------------------------------------------------
# W1 bounds on all points


def _w1_1d(a: np.ndarray, b: np.ndarray) -> float:
    """Exact W1 between the empirical laws of two 1-D samples (sizes may differ)."""
    a, b = np.sort(a), np.sort(b)
    qa = np.arange(1, a.size + 1) / a.size
    qb = np.arange(1, b.size + 1) / b.size
    q = np.union1d(qa, qb)  # breakpoints of both quantile functions
    ia = np.searchsorted(qa, q, side="left").clip(max=a.size - 1)
    ib = np.searchsorted(qb, q, side="left").clip(max=b.size - 1)
    widths = np.diff(np.concatenate(([0.0], q)))
    return float(np.sum(widths * np.abs(a[ia] - b[ib])))


def sliced_lower_bound(x: np.ndarray, y: np.ndarray, seed: int = 0) -> float:
    """``max_u W1(u.x, u.y)`` over the axes and random ``u`` with ``||u||_1 = 1`` (<= W1 in
    l_inf)."""
    d = x.shape[1]
    gen = np.random.default_rng(seed)  # public directions, not a mechanism
    dirs = [np.eye(d)[i] for i in range(d)]
    for _ in range(N_DIRECTIONS):
        u = gen.normal(size=d)
        dirs.append(u / np.abs(u).sum())
    return max(_w1_1d(x @ u, y @ u) for u in dirs)


def _morton_words(u: np.ndarray, bits: int) -> np.ndarray:
    """Exact Morton keys of the rows of ``u`` in [0, 1]^d at ``bits`` bits per coordinate, as
    rows of uint64 words, most significant first: bit ``t`` (from the top) of every coordinate,
    then bit ``t + 1``, ... so that every dyadic cube of side ``2^-b`` is a key prefix of
    ``b d`` bits (a point on a split plane goes to the upper cube, 1 to the top cube)."""
    g = np.minimum(np.floor(u * 2.0**bits), 2.0**bits - 1).astype(np.uint64)
    n, d = g.shape
    total = bits * d
    nwords = (total + 63) // 64
    words = np.zeros((n, nwords), dtype=np.uint64)
    pos = 0
    for t in range(bits - 1, -1, -1):
        for c in range(d):
            bit = (g[:, c] >> np.uint64(t)) & np.uint64(1)
            w, off = divmod(pos, 64)
            words[:, w] |= bit << np.uint64(63 - off)
            pos += 1
    return words


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Number of significant bits of every uint64 (0 for 0), exactly (no float rounding)."""
    out = np.zeros(x.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = (x >> np.uint64(s)) != 0
        out = np.where(big, out + s, out)
        x = np.where(big, x >> np.uint64(s), x)
    return out + (x != 0)


def _common_prefix(words: np.ndarray) -> np.ndarray:
    """Common leading bits of consecutive keys (rows of ``words``, sorted)."""
    n, nwords = words.shape
    lcp = np.full(n - 1, 64 * nwords, dtype=np.int64)
    done = np.zeros(n - 1, dtype=bool)
    for w in range(nwords):
        diff = words[1:, w] ^ words[:-1, w]
        hit = ~done & (diff != 0)
        lcp[hit] = 64 * w + 64 - _bit_length(diff[hit])
        done |= hit
    return lcp


def grid_upper_bound(x: np.ndarray, y: np.ndarray, bits: int = GRID_BITS) -> float:
    """``sum_{b=1}^{bits} 2^-b sum_cubes |mu - nu| + 2^-bits`` (module docstring)."""
    pts = np.clip(np.concatenate([x, y]), 0.0, 1.0)
    weights = np.concatenate([np.full(len(x), 1.0 / len(x)), np.full(len(y), -1.0 / len(y))])
    keys = _morton_words(pts, bits)
    order = np.lexsort(keys.T[::-1])
    keys, weights = keys[order], weights[order]
    lcp = _common_prefix(keys)
    d = x.shape[1]
    total = 2.0**-bits
    for b in range(1, bits + 1):
        starts = np.concatenate(([0], np.flatnonzero(lcp < b * d) + 1))
        total += 2.0**-b * float(np.abs(np.add.reduceat(weights, starts)).sum())
    return total


# ---------------------------------------------------------------------------------------------
# the experiment

#: the mechanisms compared (see the module docstring)
MECHANISMS = ("adaptive", "adaptive-capped", "pmm")


def run(
    ns: list[int], dims: list[int], ks: list[int], repeats: int, eps: float, out: str
) -> list[dict]:
    dp.enable_features("contrib")
    rows: list[dict] = []
    for d in dims:
        for k in ks:
            for n in ns:
                domain = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
                r = ambient_depth(eps, n)
                mechs = {
                    "adaptive": make_adaptive_pruned_pmm(
                        domain, dp.change_one_distance(), 0.2 * eps, 0.8 * eps
                    ),
                    "adaptive-capped": make_adaptive_pruned_pmm(
                        domain,
                        dp.change_one_distance(),
                        0.2 * eps,
                        0.8 * eps,
                        score="capped",
                        consistency="least_squares",
                        placement="uniform",
                    ),
                    "pmm": make_pmm(
                        domain, dp.change_one_distance(), r, paper_schedule(d, eps, r, s=d)
                    ),
                }
                for rep in range(repeats):
                    seed = 100_000 * rep + 1000 * d + 10 * k + int(math.log10(n))
                    x = sample_subspace(n, d, k, seed=seed)
                    for name, meas in mechs.items():
                        t0 = time.perf_counter()
                        with reproducible(seed):  # NOT private: a figure
                            y = meas(x)
                        secs = time.perf_counter() - t0
                        lo = sliced_lower_bound(x, y)
                        hi = grid_upper_bound(x, y)
                        rows.append(
                            {
                                "d": d,
                                "k": k,
                                "n": n,
                                "eps": eps,
                                "rep": rep,
                                "mechanism": name,
                                "w1_lower": lo,
                                "w1_upper": hi,
                                "seconds": secs,
                            }
                        )
                        print(
                            f"d={d} k={k} n={n:>8} {name:>15} rep={rep}: W1 in [{lo:.3e}, "
                            f"{hi:.3e}]  ({secs:.1f} s)",
                            flush=True,
                        )
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "rates.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return rows


def fit(rows: list[dict], d: int, k: int, mech: str, col: str) -> tuple[float, float, float]:
    """Least-squares slope of log W1 on log(eps n) with its 95% confidence interval."""
    sel = [r for r in rows if r["d"] == d and r["k"] == k and r["mechanism"] == mech]
    xs = np.log([r["eps"] * r["n"] for r in sel])
    ys = np.log([r[col] for r in sel])
    if len(set(xs.tolist())) < 2:
        return math.nan, math.nan, math.nan
    res = stats.linregress(xs, ys)
    half = stats.t.ppf(0.975, max(len(xs) - 2, 1)) * res.stderr
    return float(res.slope), float(res.slope - half), float(res.slope + half)


def slope_table(rows: list[dict]) -> list[dict]:
    table = []
    for d in sorted({r["d"] for r in rows}):
        for k in sorted({r["k"] for r in rows}):
            for mech in MECHANISMS:
                entry = {"d": d, "k": k, "mechanism": mech, "paper": -1.0 / k}
                for col in ("w1_lower", "w1_upper"):
                    s, lo, hi = fit(rows, d, k, mech, col)
                    entry[f"slope_{col[3:]}"], entry[f"ci_{col[3:]}"] = s, (lo, hi)
                table.append(entry)
    print(
        f"\n{'d':>2} {'k':>2} {'mechanism':>15} {'paper -1/k':>11} "
        f"{'slope (lower bound)':>30} {'slope (upper bound)':>30}"
    )
    for e in table:
        lo, hi = e["ci_lower"], e["ci_upper"]
        print(
            f"{e['d']:>2} {e['k']:>2} {e['mechanism']:>15} {e['paper']:>11.3f} "
            f"{e['slope_lower']:>9.3f} [{lo[0]:>7.3f}, {lo[1]:>7.3f}] "
            f"{e['slope_upper']:>9.3f} [{hi[0]:>7.3f}, {hi[1]:>7.3f}]"
        )
    return table


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = sorted({r["d"] for r in rows})
    ks = sorted({r["k"] for r in rows})
    fig, axes = plt.subplots(
        len(dims), len(ks), figsize=(4 * len(ks), 3.4 * len(dims)), squeeze=False
    )
    for i, d in enumerate(dims):
        for j, k in enumerate(ks):
            ax = axes[i][j]
            for mech, colour in zip(
                MECHANISMS, ("tab:blue", "tab:green", "tab:orange"), strict=True
            ):
                sel = [r for r in rows if r["d"] == d and r["k"] == k and r["mechanism"] == mech]
                en = np.array([r["eps"] * r["n"] for r in sel])
                for col, marker in (("w1_upper", "v"), ("w1_lower", "^")):
                    ax.loglog(en, [r[col] for r in sel], marker, color=colour, alpha=0.6, ms=4)
                s, _, _ = fit(rows, d, k, mech, "w1_upper")
                ax.plot([], [], color=colour, label=f"{mech}: slope {s:.2f} (upper)")
            grid = np.array(sorted({r["eps"] * r["n"] for r in rows}))
            ref = [r["w1_upper"] for r in rows if r["d"] == d and r["k"] == k]
            if ref:
                ax.loglog(
                    grid,
                    max(ref) * (grid / grid[0]) ** (-1.0 / k),
                    "k--",
                    lw=1,
                    label=f"(eps n)^(-1/{k})",
                )
            ax.set_title(f"d = {d}, k = {k}")
            ax.set_xlabel("eps n")
            ax.set_ylabel("W1 bounds (l_inf)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="out/rates")
    p.add_argument(
        "--quick", action="store_true", help="n = 10^3, 10^4; d = 4; k = 1, 2; one repeat"
    )
    p.add_argument("--max-n", type=float, default=1e6)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--eps", type=float, default=1.0)
    args = p.parse_args(argv)
    ns = [n for n in (10**3, 10**4, 10**5, 10**6) if n <= args.max_n]
    dims, ks, repeats = [4, 8], [1, 2, 3], args.repeats
    if args.quick:
        ns, dims, ks, repeats = [10**3, 10**4], [4], [1, 2], 1
    rows = run(ns, dims, ks, repeats, args.eps, args.out)
    table = slope_table(rows)
    with open(os.path.join(args.out, "rates_slopes.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "d",
                "k",
                "mechanism",
                "paper_slope",
                "slope_lower",
                "ci_lower_lo",
                "ci_lower_hi",
                "slope_upper",
                "ci_upper_lo",
                "ci_upper_hi",
            ]
        )
        for e in table:
            w.writerow(
                [
                    e["d"],
                    e["k"],
                    e["mechanism"],
                    e["paper"],
                    e["slope_lower"],
                    *e["ci_lower"],
                    e["slope_upper"],
                    *e["ci_upper"],
                ]
            )
    plot(rows, os.path.join(args.out, "rates.png"))
    return rows


if __name__ == "__main__":
    main()
