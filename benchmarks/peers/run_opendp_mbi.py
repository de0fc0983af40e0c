"""Run OpenDP's own ``opendp.extras.mbi`` AIM or MST on a table of integer codes.

Executed with its own interpreter (``benchmarks/.venv-opendp-mbi/bin/python``, made by
``benchmarks/peers/setup.sh``: ``opendp[mbi]`` pins mbi 1.1.0 and polars 1.36.1, which this
package's environment need not have).

The caller (``benchmarks/bench_tables_compare.py``) codes every column from the PUBLIC schema,
exactly as for smartnoise (``run_smartnoise_codes.py``): a category's index, a numeric column's
bin of its public bounds, an extra code for missing values, so column ``j`` holds ``0 ..
cardinality_j - 1``.  Every column's keys are passed to ``contingency_table`` (the whole
domain is public), so no budget goes to discovering keys and the release is zCDP.

Privacy: one record added or removed (``dp.unit_of(contributions=1)``), zCDP at the largest
``rho`` that OpenDP's ``make_zCDP_to_approxDP`` + ``make_fix_delta`` turn into at most
``epsilon`` at ``delta`` (bisection on a Gaussian mechanism's map, which is ``rho`` exactly), so
the release is ``(epsilon, delta)``-DP with OpenDP's own conversion.

Prints ONE JSON line on stdout: ``{"synth", "n", "columns", "epsilon", "delta", "rho",
"rho_retries", "fit_seconds", "sample_seconds", "seconds", "cpu_seconds",
"versions"}``; ``seconds`` covers the release and the sampling (not reading or writing the CSVs,
not the interpreter start-up).

``python run_opendp_mbi.py --synth aim --input codes.csv --output out.csv --epsilon 1
--cardinalities 3,3,20,20,2``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from importlib.metadata import version

import numpy as np


def rho_for(epsilon: float, delta: float) -> float:
    """The largest rho (to 1e-12 relative) whose OpenDP (epsilon, delta) conversion is <=
    epsilon."""
    import opendp.prelude as dp

    def eps_of(rho: float) -> float:
        m = dp.m.make_gaussian(
            dp.atom_domain(T=float, nan=False),
            dp.absolute_distance(T=float),
            scale=math.sqrt(1.0 / (2.0 * rho)),
        )
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(m), delta).map(1.0)[0]

    lo, hi = 0.0, epsilon  # eps_of(rho) > rho, so rho < epsilon
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid == lo or mid == hi or hi - lo <= 1e-12 * hi:
            break
        if eps_of(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    assert lo > 0 and eps_of(lo) <= epsilon
    return lo


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--synth", choices=("mst", "aim"), required=True)
    p.add_argument(
        "--input", required=True, help="CSV of integer codes, no header, one row per record"
    )
    p.add_argument("--output", required=True)
    p.add_argument(
        "--cardinalities", required=True, help="comma-separated number of codes per column (public)"
    )
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-9)
    a = p.parse_args(argv)

    cards = [int(c) for c in a.cardinalities.split(",")]
    codes = np.loadtxt(a.input, delimiter=",", ndmin=2, dtype=np.int64)
    n, d = codes.shape
    if d != len(cards) or codes.min() < 0 or np.any(codes.max(axis=0) >= np.array(cards)):
        raise SystemExit("codes do not match the cardinalities")
    with contextlib.redirect_stdout(sys.stderr):
        import opendp.prelude as dp
        import polars as pl

        dp.enable_features("contrib")
        rho = rho_for(a.epsilon, a.delta)
        cols = [f"c{j}" for j in range(d)]
        data = pl.LazyFrame(
            {c: codes[:, j] for j, c in enumerate(cols)}, schema={c: pl.Int64 for c in cols}
        )
        algorithm = dp.mbi.AIM() if a.synth == "aim" else dp.mbi.MST()
        retries = 0
        while True:
            # opendp 0.16's MST selection splits its budget into k equal float shares
            # (prior(d / k)) and can ask an adaptive compositor for one ulp more than it has left
            # ("insufficient budget for query: x > x - ulp"): retry with a slightly smaller rho,
            # still within the budget (reported as "rho_retries").  Whether it happens depends
            # on rho and the number of columns only, never on the data, and nothing of a failed
            # attempt is released; the times are those of the attempt that succeeded.
            c0 = time.process_time()
            t0 = time.perf_counter()
            context = dp.Context.compositor(
                data=data,
                privacy_unit=dp.unit_of(contributions=1),
                privacy_loss=dp.loss_of(rho=rho),
            )
            try:
                table = (
                    context.query(rho=rho)
                    .select(*cols)
                    .contingency_table(
                        keys={c: list(range(k)) for c, k in zip(cols, cards, strict=True)},
                        algorithm=algorithm,
                    )
                    .release()
                )
                break
            except Exception as e:
                if "insufficient budget" not in str(e) or retries >= 8:
                    raise
                retries += 1
                rho = rho * (1 - 2.0**-30 * 3**retries)
        t1 = time.perf_counter()
        out = table.synthesize(rows=n)
        t2 = time.perf_counter()
        c1 = time.process_time()
    y = np.column_stack([out[c].to_numpy() for c in cols]).astype(np.float64)
    if np.isnan(y).any():  # the null key (never produced by our codes) -> the column's first code
        y = np.where(np.isnan(y), 0, y)
    y = y.astype(np.int64)
    if len(y) != n:  # "round" synthesis can miss n by a few rows: resample rows to n (not private)
        y = y[np.random.default_rng(0).choice(len(y), size=n, replace=len(y) < n)]
    np.savetxt(a.output, y, delimiter=",", fmt="%d")
    print(
        json.dumps(
            {
                "synth": a.synth,
                "n": n,
                "columns": d,
                "epsilon": a.epsilon,
                "delta": a.delta,
                "rho": rho,
                "rho_retries": retries,
                "fit_seconds": t1 - t0,
                "sample_seconds": t2 - t1,
                "cpu_seconds": c1 - c0,
                "seconds": t2 - t0,
                "versions": {k: version(k) for k in ("opendp", "mbi", "polars")},
            }
        )
    )


if __name__ == "__main__":
    main()
