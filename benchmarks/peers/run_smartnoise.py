"""Run smartnoise-synth's MST or AIM on continuous data through a public 32-bin grid.

Executed with the peers' own interpreter (``benchmarks/.venv-peers/bin/python``, made by
``benchmarks/peers/setup.sh``), never with the package's: smartnoise-synth pins an older opendp.

1. Every column is cut into ``--bins`` equal-width bins over the PUBLIC bounds ``[lo, hi]``
   (values outside are clamped), giving integer bin indices ``0 .. bins-1``.
2. The per-column label transformer is fitted on a PUBLIC frame holding every index ``0 ..
   bins-1`` (so the categorical domain is public and complete; fitting it on the private data
   would leak which bins are occupied and spend no budget for it).
3. MST or AIM (epsilon, delta) synthesises ``n`` rows of bin indices.
4. Each synthetic index is mapped to a point uniform in its bin (fresh numpy randomness).

Writes the synthetic CSV (no header, like the input) and prints ONE JSON line on stdout:
``{"synth": ..., "n": ..., "d": ..., "epsilon": ..., "delta": ..., "bins": ..., "fit_seconds": ...,
"sample_seconds": ..., "seconds": ..., "versions": {...}}``; ``seconds`` covers binning, fit,
sample and un-binning (not reading or writing the CSVs, not the interpreter start-up).
Anything the synthesizers print goes to stderr.

``python run_smartnoise.py --synth mst --input x.csv --output y.csv --epsilon 1 --lo 0 --hi 1``
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
    p.add_argument("--input", required=True, help="CSV of floats, no header, one row per record")
    p.add_argument("--output", required=True)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-9, help="smartnoise-synth's default")
    p.add_argument("--bins", type=int, default=32)
    p.add_argument("--lo", type=float, default=0.0, help="public lower bound (every column)")
    p.add_argument("--hi", type=float, default=1.0, help="public upper bound (every column)")
    p.add_argument(
        "--seed", type=int, default=None, help="un-binning randomness only (not private)"
    )
    a = p.parse_args(argv)

    x = np.loadtxt(a.input, delimiter=",", ndmin=2)
    n, d = x.shape
    with contextlib.redirect_stdout(sys.stderr):  # AIM prints to stdout; keep stdout for the JSON
        from snsynth import Synthesizer
        from snsynth.transform import LabelTransformer
        from snsynth.transform.table import TableTransformer

        t0 = time.perf_counter()
        width = (a.hi - a.lo) / a.bins
        idx = np.clip(np.floor((x - a.lo) / width), 0, a.bins - 1).astype(np.int64)
        cols = [f"c{j}" for j in range(d)]
        public = pd.DataFrame({c: np.arange(a.bins) for c in cols})
        tt = TableTransformer([LabelTransformer(nullable=False) for _ in cols])
        tt.fit(public)
        assert tt.cardinality == [a.bins] * d, tt.cardinality
        synth = Synthesizer.create(a.synth, epsilon=a.epsilon, delta=a.delta, verbose=False)
        t1 = time.perf_counter()
        synth.fit(pd.DataFrame(idx, columns=cols), transformer=tt, preprocessor_eps=0.0)
        t2 = time.perf_counter()
        out = synth.sample(n)
        t3 = time.perf_counter()
        sidx = np.asarray(out, dtype=np.float64).reshape(n, d)
        rng = np.random.default_rng(a.seed)
        y = a.lo + (sidx + rng.uniform(size=(n, d))) * width
        t4 = time.perf_counter()
    np.savetxt(a.output, y, delimiter=",", fmt="%.9g")
    print(
        json.dumps(
            {
                "synth": a.synth,
                "n": n,
                "d": d,
                "epsilon": a.epsilon,
                "delta": a.delta,
                "bins": a.bins,
                "fit_seconds": t2 - t1,
                "sample_seconds": t3 - t2,
                "seconds": t4 - t0,
                "versions": {k: version(k) for k in ("smartnoise-synth", "opendp", "mbi")},
            }
        )
    )


if __name__ == "__main__":
    main()
