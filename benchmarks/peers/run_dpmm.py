"""Run the ``dpmm`` package's MST, AIM or PrivBayes pipeline on a table with a public domain.

Executed with dpmm's own interpreter (``benchmarks/.venv-dpmm/bin/python``, made by
``benchmarks/peers/setup.sh``), never with the package's: dpmm pins its own numpy / pandas.

The caller (``benchmarks/bench_tables_compare.py``) writes the table one column per axis of the
package's public table encoding, so nothing about the layout depends on the data:

* a numeric axis (float, int, datetime) as its coordinate in ``[0, 1]`` (the value scaled by
  the PUBLIC bounds), declared to dpmm with the domain ``lower = 0, upper = 1``, so dpmm's own
  binning (``priv-tree``: PrivTree splits at midpoints, Laplace-noised counts) runs inside the
  public bounds and never estimates bounds from the data;
* a discrete axis (a category, a bool, the "is missing" indicator of a nullable numeric column)
  as the string of its code ``0 .. K-1``, declared with ALL ``K`` codes as its categories.

So the frame dpmm sees has no missing values: dpmm's own missing-value handling (an extra
column only when the data have missing values, filled with a value sampled from the data,
uncharged) never runs.  Its binning budget is charged: the pipeline runs with
``epsilon = (1 - proc_share) * eps`` for the model and ``proc_epsilon = proc_share * eps`` for
the binning (dpmm's ``proc_epsilon`` is absolute and comes on top of ``epsilon``), so the whole
release is ``(eps, delta)``-DP by basic composition.  dpmm also drops a column that is constant
in the data (data-dependent and uncharged); the runner reports any it dropped in
``"static_columns"`` so the caller can flag the run.

Prints ONE JSON line on stdout: ``{"synth", "n", "columns", "epsilon", "delta", "proc_epsilon",
"fit_seconds", "sample_seconds", "seconds", "cpu_seconds", "static_columns", "n_bins",
"versions"}``; ``seconds``
covers fit and sample (not reading or writing the CSVs, not the interpreter start-up).

``python run_dpmm.py --synth mst --input x.csv --spec spec.json --output y.csv --epsilon 1``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import time
from importlib.metadata import version

import pandas as pd


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--synth", choices=("mst", "aim", "privbayes"), required=True)
    p.add_argument("--input", required=True, help="CSV with a header, one column per axis")
    p.add_argument(
        "--spec",
        required=True,
        help='JSON {"columns": {name: {"kind": "numeric"} | {"kind": "categorical", "categories": '
        "[...]}}}",
    )
    p.add_argument("--output", required=True)
    p.add_argument("--epsilon", type=float, default=1.0, help="the whole release's epsilon")
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument(
        "--proc-share", type=float, default=0.1, help="share of epsilon for dpmm's private binning"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="dpmm's RandomState (figures only, not private)"
    )
    a = p.parse_args(argv)
    if not 0.0 < a.proc_share < 1.0:
        raise SystemExit("--proc-share must be in (0, 1)")

    with open(a.spec) as f:
        spec = json.load(f)["columns"]
    df = pd.read_csv(a.input, dtype={c: str for c, s in spec.items() if s["kind"] == "categorical"})
    if list(df.columns) != list(spec):
        raise SystemExit("the input's columns do not match the spec")
    domain: dict[str, dict] = {}
    for c, s in spec.items():
        if s["kind"] == "numeric":
            df[c] = df[c].astype("float64")
            domain[c] = {"lower": 0.0, "upper": 1.0}
        else:
            domain[c] = {"categories": [str(k) for k in s["categories"]]}
    if df.isna().any().any():
        raise SystemExit("the input must have no missing values (the caller codes them)")
    n = len(df)
    logging.getLogger("dpmm").setLevel(logging.ERROR)
    with contextlib.redirect_stdout(sys.stderr):
        from dpmm.pipelines import AIMPipeline, MSTPipeline, PrivBayesPipeline

        cls = {"mst": MSTPipeline, "aim": AIMPipeline, "privbayes": PrivBayesPipeline}[a.synth]
        pipe = cls(
            epsilon=a.epsilon * (1 - a.proc_share),
            delta=a.delta,
            proc_epsilon=a.epsilon * a.proc_share,
            n_jobs=1,
        )
        c0 = time.process_time()
        t0 = time.perf_counter()
        pipe.fit(df, domain=domain, random_state=a.seed)
        t1 = time.perf_counter()
        out = pipe.generate(n_records=n, random_state=a.seed)
        t2 = time.perf_counter()
        c1 = time.process_time()
    out = out[list(spec)]
    out.to_csv(a.output, index=False)
    proc = pipe.proc
    print(
        json.dumps(
            {
                "synth": a.synth,
                "n": n,
                "columns": len(spec),
                "epsilon": a.epsilon,
                "delta": a.delta,
                "proc_epsilon": a.epsilon * a.proc_share,
                "fit_seconds": t1 - t0,
                "sample_seconds": t2 - t1,
                "cpu_seconds": c1 - c0,
                "seconds": t2 - t0,
                "static_columns": sorted(proc.static_columns) if proc is not None else [],
                "n_bins": {k: int(v) for k, v in proc.n_bins.items()} if proc is not None else {},
                "versions": {k: version(k) for k in ("dpmm", "numpy", "pandas")},
            }
        )
    )


if __name__ == "__main__":
    main()
