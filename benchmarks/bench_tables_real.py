"""Real mixed tables: Adaptive Pruned-PMM vs smartnoise MST / AIM and independent marginals.

Tables (``_tables_data``, shipped in installable packages, never downloaded; ``pip install -e
'.[bench]'``): palmer penguins (344 rows, 8 columns), vega cars (406 x 8), vega seattle-weather
(1461 x 6), each with a hand-written public schema.  Every table is split 70 / 30 at random
(seed 0, public): releases are made from the training part; W1 and the marginal TVDs compare a
release with the training part, the classifier score trains on the release and tests on the
held-out part.

Mechanisms, at ``epsilon`` in {0.5, 1, 4} per replaced record (the size is public):

- ``adaptive``: this package's default, ``synthesize(table, eps, schema=...)`` (the structured
  release: a DP first look at every column, quantile encoding, Gower split orders chosen by the
  exponential mechanism, calibration; independent DP columns for small ``n * eps``); pure eps-DP.
- ``marginals``: independent 1-way marginals, OpenDP only: every column coded from the public
  schema (category index, or one of ``--bins`` equal-width bins of the public bounds, an extra
  code for missing), ``make_count_by_categories >> make_laplace`` per column at ``eps / D``
  (``D`` columns; each column's ``map(2)``, one replacement, is at most ``eps / D``), negative
  counts set to 0, each column sampled independently, numeric codes placed uniformly in their
  bin; pure eps-DP.
- ``mst``, ``aim``: smartnoise-synth on the same codes (``benchmarks/peers/run_smartnoise_codes.py``
  in its own environment, ``benchmarks/peers/setup.sh``; ``--peer-python``), decoded the same
  way; (eps, delta)-DP with ``delta = 1e-9``, a weaker guarantee.

Scores: ``w1`` (W1 under the table metric, exact), ``tvd1`` / ``tvd2`` (mean total variation
distance of the 1-way / 2-way marginals, numeric columns in 10 bins), ``clf`` (balanced
accuracy of a gradient-boosting classifier of the table's target, trained on the release,
tested on the held-out rows; ``clf_real``: trained on the training rows), ``seconds`` (wall
clock of the release: ours and the marginals in-process, the peers as the whole subprocess,
``fit_seconds`` their fit alone).  Means over ``--seeds`` runs (``--peer-seeds`` for the peers;
seeds drive the releases, NOT private, for the figures).  The machine has 2 cores and is
shared: times are noisy.

``python benchmarks/bench_tables_real.py [--quick] [--skip-peers] [--out bench_out]``
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import opendp.prelude as dp
import pandas as pd
from _common import PeerError, run_runner, write_csv
from _tables_data import NAMES, RealTable, load

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import classifier_score, marginal_tvd, table_w1
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import TableEncoding, read_table, write_table
from opendp_wasserstein.tables.frames import FrameInfo

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "peers", "run_smartnoise_codes.py")
DEFAULT_PEER_PYTHON = os.path.join(HERE, ".venv-peers", "bin", "python")
MECHS = ("adaptive", "marginals", "mst", "aim")
EPSILONS = (0.5, 1.0, 4.0)
FIELDS = [
    "table",
    "n_train",
    "mechanism",
    "epsilon",
    "seed",
    "status",
    "note",
    "privacy",
    "w1",
    "tvd1",
    "tvd2",
    "clf",
    "clf_real",
    "clf_majority",
    "seconds",
    "fit_seconds",
    "depth",
]


# ----------------------------------------------------------------------------------------------
# the public coding of a table: one integer code per column


class Codes:
    """Columns coded from the public schema (category, or bin of the public bounds; missing
    last)."""

    def __init__(self, t: RealTable, bins: int) -> None:
        self.enc = TableEncoding(t.schema)
        self.schema = t.schema
        self.cards: list[int] = []
        self.plan: list[tuple[str, int, int | None]] = []  # (kind, value axis, missing axis)
        j = 0
        for _name, _spec in t.schema.items():
            axis = self.enc.axes[j]
            if axis.role == "category":
                self.plan.append(("category", j, None))
                self.cards.append(axis.cells)
                j += 1
                continue
            miss = None
            if axis.role == "missing":
                miss, j = j, j + 1
            b = bins
            lo_hi = getattr(_spec, "bounds", None)
            if _spec.type == "int" and lo_hi is not None:
                b = min(bins, int(lo_hi[1]) - int(lo_hi[0]) + 1)
            self.plan.append(("numeric", j, miss))
            self.cards.append(b + (1 if miss is not None else 0))
            j += 1

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        p = self.enc.encode(read_table(df, self.schema)[0])
        out = np.empty((len(p), len(self.plan)), dtype=np.int64)
        for k, (kind, j, miss) in enumerate(self.plan):
            if kind == "category":
                out[:, k] = self.enc._lookup(p[:, j], self.enc.axes[j].cells)
                continue
            b = self.cards[k] - (1 if miss is not None else 0)
            code = np.clip(np.floor(p[:, j] * b).astype(np.int64), 0, b - 1)
            out[:, k] = np.where(p[:, miss] >= 0.5, b, code) if miss is not None else code
        return out

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        p = np.empty((len(codes), self.enc.dimension))
        for k, (kind, j, miss) in enumerate(self.plan):
            c = codes[:, k]
            if kind == "category":
                b = self.enc._boundaries[self.enc.axes[j].cells]
                p[:, j] = (b[c] + b[c + 1]) / 2
                continue
            b = self.cards[k] - (1 if miss is not None else 0)
            u = (np.minimum(c, b - 1) + rng.uniform(size=len(c))) / b
            if miss is not None:
                p[:, miss] = np.where(c == b, 0.75, 0.25)
                u = np.where(c == b, 0.5, u)
            p[:, j] = u
        info = FrameInfo("pandas", tuple(self.schema.names), tuple(self._dtypes()))
        return write_table(self.enc.decode(p), self.schema, info)

    def _dtypes(self) -> list[Any]:
        out = []
        for _, spec in self.schema.items():
            out.append(
                {
                    "float": np.dtype(np.float64),
                    "int": np.dtype(np.int64),
                    "datetime": np.dtype("datetime64[us]"),
                    "bool": np.dtype(bool),
                }.get(spec.type, np.dtype(object))
            )
        return out


# ----------------------------------------------------------------------------------------------
# mechanisms


def run_adaptive(
    t: RealTable, train: pd.DataFrame, eps: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    with reproducible(seed):
        t0 = time.perf_counter()
        out, report = synthesize(train, eps, schema=t.schema)
        secs = time.perf_counter() - t0
    assert report.epsilon <= eps
    return out, {"seconds": secs, "depth": report.depth, "privacy": f"pure eps={report.epsilon:g}"}


def run_marginals(
    codes: Codes, train: pd.DataFrame, eps: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    """Independent noisy 1-way marginals through OpenDP (see the module docstring)."""
    t0 = time.perf_counter()
    x = codes.encode(train)
    n, D = x.shape
    scale = 2.0 * D / eps
    rng = np.random.default_rng(seed)
    out = np.empty_like(x)
    spent = 0.0
    with reproducible(seed):  # OpenDP's own noise is secure either way; the sampling uses rng
        for k, card in enumerate(codes.cards):
            meas = dp.t.make_count_by_categories(
                dp.vector_domain(dp.atom_domain(T="i64")),
                dp.symmetric_distance(),
                categories=list(range(card)),
                null_category=False,
            ) >> dp.m.then_laplace(scale)
            spent += meas.map(2)  # one replacement: symmetric distance 2
            counts = np.maximum(np.asarray(meas(x[:, k].tolist()), dtype=np.float64), 0.0)
            prob = counts / counts.sum() if counts.sum() > 0 else np.full(card, 1.0 / card)
            out[:, k] = rng.choice(card, size=n, p=prob)
    assert spent <= eps * (1 + 1e-9), spent
    table = codes.decode(out, rng)
    return table, {"seconds": time.perf_counter() - t0, "privacy": f"pure eps={spent:.4g}"}


def gaussian_marginals(
    cards: list[int], eps: float, delta: float, bisections: int = 40
) -> tuple[dp.Measurement, float]:
    """The ``(eps, delta)`` release of every column's counts through OpenDP, and its scale.

    One measurement on the whole coded table (a string of comma-separated codes, one line a
    row): per column ``make_split_dataframe >> make_select_column >> then_count_by_categories``
    (L2, all codes of the column) ``>> then_gaussian(scale)``, the ``D`` columns composed in zCDP
    by ``make_composition`` and converted by ``make_zCDP_to_approxDP`` + ``make_fix_delta``; the
    scale (the same in every column) is the smallest one found by bisection whose map at
    ``d_in = 2`` (one replacement) is at most ``(eps, delta)``.  Only public values (the codes'
    cardinalities, eps, delta) enter the search.

    :param cards: the number of codes of each column.
    :param eps: the target epsilon.
    :param delta: the target delta.
    :param bisections: bisection steps on the log of the scale after bracketing.
    :return: the measurement (its ``map(2)`` is at most ``(eps, delta)``) and its scale.
    """
    names = [f"c{k}" for k in range(len(cards))]
    with warnings.catch_warnings():  # the dataframe transformations are deprecated, not gone
        warnings.simplefilter("ignore", DeprecationWarning)
        frame = dp.t.make_split_dataframe(",", names)
        counts = [
            frame
            >> dp.t.make_select_column(name, str)
            >> dp.t.then_count_by_categories(
                categories=[str(c) for c in range(card)],
                null_category=False,
                MO="L2Distance<i64>",
                TOA="i64",
            )
            for name, card in zip(names, cards, strict=True)
        ]

    def chain(scale: float) -> dp.Measurement:
        zcdp = dp.c.make_composition([c >> dp.m.then_gaussian(scale) for c in counts])
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta)

    def fits(scale: float) -> bool:
        e, d = chain(scale).map(2)
        return bool(e <= eps and d <= delta)

    hi = 2.0 * len(cards) / eps  # the Laplace scale of the pure baseline: a first guess
    while not fits(hi):
        hi *= 2.0
    lo = hi / 2.0
    while fits(lo):
        lo, hi = lo / 2.0, lo
    for _ in range(bisections):  # invariant: hi fits, lo does not
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return chain(hi), hi


def run_marginals_delta(
    codes: Codes, train: pd.DataFrame, eps: float, delta: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    """Independent noisy 1-way marginals at ``(eps, delta)`` through OpenDP: the coding of
    :func:`run_marginals`, every column's counts from :func:`gaussian_marginals` (discrete
    Gaussian, zCDP composed and converted by OpenDP), negative counts set to 0, each column
    sampled independently."""
    t0 = time.perf_counter()
    x = codes.encode(train)
    n, _ = x.shape
    meas, scale = gaussian_marginals(codes.cards, eps, delta)
    spent_eps, spent_delta = meas.map(2)  # one replacement: symmetric distance 2
    assert spent_eps <= eps and spent_delta <= delta, (spent_eps, spent_delta)
    data = "\n".join(",".join(map(str, r)) for r in x.tolist())
    rng = np.random.default_rng(seed)
    out = np.empty_like(x)
    with reproducible(seed):  # OpenDP's own noise is secure either way; the sampling uses rng
        released = meas(data)
    for k, (card, noisy) in enumerate(zip(codes.cards, released, strict=True)):
        c = np.maximum(np.asarray(noisy, dtype=np.float64), 0.0)
        prob = c / c.sum() if c.sum() > 0 else np.full(card, 1.0 / card)
        out[:, k] = rng.choice(card, size=n, p=prob)
    table = codes.decode(out, rng)
    return table, {
        "seconds": time.perf_counter() - t0,
        "privacy": f"(eps={spent_eps:.4g}, delta={spent_delta:g}); Gaussian scale {scale:.4g}",
    }


def run_peer(
    python: str,
    synth: str,
    codes: Codes,
    train: pd.DataFrame,
    eps: float,
    seed: int,
    timeout: float,
) -> tuple[pd.DataFrame, dict]:
    x = codes.encode(train)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        inp, outp = os.path.join(tmp, "x.csv"), os.path.join(tmp, "y.csv")
        np.savetxt(inp, x, delimiter=",", fmt="%d")
        cmd = [
            python,
            RUNNER,
            "--synth",
            synth,
            "--input",
            inp,
            "--output",
            outp,
            "--epsilon",
            repr(eps),
            "--cardinalities",
            ",".join(map(str, codes.cards)),
        ]
        info, wall = run_runner(cmd, timeout)
        y = np.loadtxt(outp, delimiter=",", ndmin=2, dtype=np.int64)
    table = codes.decode(y, np.random.default_rng(seed))
    return table, {
        "seconds": wall,
        "fit_seconds": info["fit_seconds"],
        "privacy": f"(eps={eps:g}, delta={info['delta']:g})",
    }


def peer_unavailable(python: str) -> str:
    if not os.path.exists(python):
        return f"peers venv missing ({python}): run bash benchmarks/peers/setup.sh"
    proc = subprocess.run(
        [python, "-c", "import snsynth.mst, snsynth.aim"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return "" if proc.returncode == 0 else "import snsynth failed"


# ----------------------------------------------------------------------------------------------


def score(t: RealTable, train: pd.DataFrame, test: pd.DataFrame, synthetic: pd.DataFrame) -> dict:
    clf = classifier_score(synthetic, test, t.target, t.schema, train_real=train)
    return {
        "w1": table_w1(train, synthetic, t.schema, max_points=2000).value,
        "tvd1": marginal_tvd(train, synthetic, t.schema, way=1).mean,
        "tvd2": marginal_tvd(train, synthetic, t.schema, way=2).mean,
        "clf": clf.synthetic,
        "clf_real": clf.real,
        "clf_majority": clf.majority,
    }


def split(t: RealTable) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(t.data))
    cut = int(0.7 * len(idx))
    return t.data.iloc[idx[:cut]].reset_index(drop=True), t.data.iloc[idx[cut:]].reset_index(
        drop=True
    )


def summary_table(rows: list[dict]) -> list[str]:
    head = (
        f"| {'table':<15} | {'eps':>4} | {'mechanism':<9} | {'W1 (table)':>10} | "
        f"{'TVD 1-way':>9} | {'TVD 2-way':>9} | {'classifier':>10} | {'time (s)':>8} |"
    )
    lines = [head, "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"]
    keys = []
    for r in rows:
        k = (r["table"], r["epsilon"], r["mechanism"])
        if k not in keys:
            keys.append(k)
    for table, eps, mech in keys:
        rs = [
            r
            for r in rows
            if (r["table"], r["epsilon"], r["mechanism"]) == (table, eps, mech)
            and r["status"] == "ok"
        ]
        if not rs:
            note = next(
                r["note"]
                for r in rows
                if (r["table"], r["epsilon"], r["mechanism"]) == (table, eps, mech)
            )
            lines.append(
                f"| {table:<15} | {eps:>4g} | {mech:<9} | {'—':>10} | {'—':>9} | {'—':>9} | "
                f"{'—':>10} | {'—':>8} | {note}"
            )
            continue

        def m(key: str, rs: list = rs) -> float:
            return float(np.mean([float(r[key]) for r in rs]))

        lines.append(
            f"| {table:<15} | {eps:>4g} | {mech:<9} | {m('w1'):>10.3f} | {m('tvd1'):>9.3f} | "
            f"{m('tvd2'):>9.3f} | {m('clf'):>10.3f} | {m('seconds'):>8.2f} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(NAMES))
    ap.add_argument("--epsilons", default=",".join(map(str, EPSILONS)))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--peer-seeds", type=int, default=1)
    ap.add_argument(
        "--bins", type=int, default=16, help="bins per numeric column for the coded mechanisms"
    )
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--mechanisms", default=",".join(MECHS), help=f"a subset of {','.join(MECHS)}")
    ap.add_argument("--peer-python", default=DEFAULT_PEER_PYTHON)
    ap.add_argument("--peer-timeout", type=float, default=1800)
    ap.add_argument("--quick", action="store_true", help="one table, eps = 1, one seed, no peers")
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args()
    dp.enable_features("contrib")
    tables = args.tables.split(",")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    seeds, peer_seeds = args.seeds, args.peer_seeds
    if args.quick:
        tables, epsilons, seeds, peer_seeds, args.skip_peers = tables[:1], [1.0], 1, 1, True
    peer_why = "skipped (--skip-peers)" if args.skip_peers else peer_unavailable(args.peer_python)
    rows: list[dict] = []
    for name in tables:
        t = load(name)
        train, test = split(t)
        codes = Codes(t, args.bins)
        for eps in epsilons:
            for mech in [m for m in MECHS if m in args.mechanisms.split(",")]:
                for seed in range(peer_seeds if mech in ("mst", "aim") else seeds):
                    row: dict[str, Any] = {
                        "table": name,
                        "n_train": len(train),
                        "mechanism": mech,
                        "epsilon": eps,
                        "seed": seed,
                        "status": "ok",
                        "note": "",
                    }
                    try:
                        if mech == "adaptive":
                            synth, info = run_adaptive(t, train, eps, seed)
                        elif mech == "marginals":
                            synth, info = run_marginals(codes, train, eps, seed)
                        elif peer_why:
                            raise PeerError(peer_why)
                        else:
                            synth, info = run_peer(
                                args.peer_python, mech, codes, train, eps, seed, args.peer_timeout
                            )
                        row |= info | score(t, train, test, synth)
                    except PeerError as e:
                        row |= {
                            "status": "skipped" if args.skip_peers else "failed",
                            "note": str(e),
                        }
                    rows.append(row)
                    print(
                        f"{name} eps={eps:g} {mech} seed={seed}: "
                        + (
                            f"W1 {row['w1']:.3f} TVD1 {row['tvd1']:.3f} TVD2 "
                            f"{row['tvd2']:.3f} clf {row['clf']:.3f} {row['seconds']:.1f}s"
                            if row["status"] == "ok"
                            else row["note"]
                        ),
                        flush=True,
                    )
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "bench_tables_real.csv")
    write_csv(path, rows, FIELDS)
    print()
    print("\n".join(summary_table(rows)))
    reals = {r["table"]: (r["clf_real"], r["clf_majority"]) for r in rows if r["status"] == "ok"}
    for name, (real, maj) in reals.items():
        print(
            f"{name}: classifier trained on the real training rows {float(real):.3f}, "
            f"majority class {float(maj):.3f}"
        )
    print(f"wrote {path}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
