"""Run smartnoise-synth's MST or AIM on a table of integer codes with public cardinalities.

Executed with the peers' own interpreter (``benchmarks/.venv-peers/bin/python``, made by
``benchmarks/peers/setup.sh``), never with the package's: smartnoise-synth pins an older opendp.

The caller (``benchmarks/bench_tables_real.py``) codes every column itself from the PUBLIC
schema (a categorical column's category index, a numeric column's bin over its public bounds, an
extra code for missing values when the column is nullable), so column ``j`` holds integers
``0 .. cardinality_j - 1``.  The label transformer of every column is fitted on a PUBLIC frame
holding every code (the domain is public and complete; fitting on the private data would leak
which codes occur).  MST or AIM (epsilon, delta) synthesises ``n`` rows of codes.

Writes the synthetic codes as CSV (no header) and prints ONE JSON line on stdout:
``{"synth", "n", "columns", "epsilon", "delta", "fit_seconds", "sample_seconds", "seconds",
"cpu_seconds", "versions"}``.  Anything the synthesizers print goes to stderr.

``python run_smartnoise_codes.py --synth mst --input codes.csv --output out.csv --epsilon 1
--cardinalities 3,3,20,20,2``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from importlib.metadata import version

import numpy as np
import pandas as pd


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
    p.add_argument("--delta", type=float, default=1e-9, help="smartnoise-synth's default")
    a = p.parse_args(argv)

    cards = [int(c) for c in a.cardinalities.split(",")]
    codes = np.loadtxt(a.input, delimiter=",", ndmin=2, dtype=np.int64)
    n, d = codes.shape
    if d != len(cards) or codes.min() < 0 or np.any(codes.max(axis=0) >= np.array(cards)):
        raise SystemExit("codes do not match the cardinalities")
    with contextlib.redirect_stdout(sys.stderr):  # AIM prints to stdout; keep stdout for the JSON
        from snsynth import Synthesizer
        from snsynth.transform import LabelTransformer
        from snsynth.transform.table import TableTransformer

        c0 = time.process_time()
        t0 = time.perf_counter()
        cols = [f"c{j}" for j in range(d)]
        top = max(cards)
        public = pd.DataFrame({c: np.arange(top) % k for c, k in zip(cols, cards, strict=True)})
        tt = TableTransformer([LabelTransformer(nullable=False) for _ in cols])
        tt.fit(public)
        assert tt.cardinality == cards, (tt.cardinality, cards)
        synth = Synthesizer.create(a.synth, epsilon=a.epsilon, delta=a.delta, verbose=False)
        t1 = time.perf_counter()
        synth.fit(pd.DataFrame(codes, columns=cols), transformer=tt, preprocessor_eps=0.0)
        t2 = time.perf_counter()
        out = synth.sample(n)
        t3 = time.perf_counter()
        c1 = time.process_time()
    y = np.asarray(out, dtype=np.int64).reshape(n, d)
    np.savetxt(a.output, y, delimiter=",", fmt="%d")
    print(
        json.dumps(
            {
                "synth": a.synth,
                "n": n,
                "columns": d,
                "epsilon": a.epsilon,
                "delta": a.delta,
                "fit_seconds": t2 - t1,
                "sample_seconds": t3 - t2,
                "cpu_seconds": c1 - c0,
                "seconds": t3 - t0,
                "versions": {k: version(k) for k in ("smartnoise-synth", "opendp", "mbi")},
            }
        )
    )


if __name__ == "__main__":
    main()
