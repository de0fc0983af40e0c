"""Side by side at n = 30000, eps = 1: this package, OpenDP-only histograms, smartnoise MST/AIM.

Data: the nine 2-D shapes (``evaluation.SHAPES``) and two 1-D sets in ``[0, 1]^10``:
``curve10`` (the smooth closed curve of ``_common.sample_curve``: every coordinate a sinusoid of
one parameter, not contained in any coordinate subspace or 2-D plane) and ``subspace10``
(``sample_subspace(n, 10, 1)``: the first coordinate uniform, the other nine fixed at 0.5).

Mechanisms, every one at epsilon = 1 for one replacement (n public):

- ``pruned``: Pruned-PMM at the ambient depth ``ceil(log2(eps n))`` with the paper's schedule,
  ``s = d`` (``synthesize(mechanism="pruned")``); pure eps-DP.
- ``adaptive``: Adaptive Pruned-PMM, 0.2 selection + 0.8 main (``synthesize()``); pure eps-DP.
- ``pmm``: full-tree PMM, same depth and schedule as ``pruned``; pure eps-DP.
- ``flat_hist`` (OpenDP only): a public grid, ``b`` equal-width bins per axis, ``b = 32`` in
  2-D (1024 cells) and in 10-D the largest ``b`` with ``b^10 <= --flat-max-cells`` (``b = 4``:
  1,048,576 cells -- 32^10 = 10^15 cells cannot be enumerated).  Chain: a row-wise key map
  (``dp.t.make_user_transformation``, change-one ``k`` -> symmetric ``2k``; a user function, so
  it needs the ``honest-but-curious`` feature) ``>> make_count_by_categories`` (all cells,
  public) ``>> make_laplace`` (discrete, scale ``2/eps``); ``meas.map(1) == eps``, pure DP.
  Post-processing: clamp at 0, largest-remainder rounding to n points, each uniform in its cell.
- ``stab_hist`` (OpenDP only, 10-D): the 32-bins-per-axis grid, keeping only occupied cells:
  the same key map ``>> make_count_by`` (counts of the keys that occur) ``>>
  make_laplace_threshold`` (scale ``2/eps``, the smallest integer threshold whose delta is at
  most ``--delta``): a stability histogram, (eps, delta)-DP -- publishing the set of occupied
  keys without the threshold would not be private.  Same post-processing.
- ``mst``, ``aim``: smartnoise-synth, run by ``benchmarks/peers/run_smartnoise.py`` in its own
  virtual environment (``benchmarks/peers/setup.sh``) on 32 equal-width bins per axis over the
  public bounds, each synthetic bin index mapped to a point uniform in its bin; (eps, delta)-DP
  with ``delta = --delta`` (1e-9, smartnoise's default), i.e. a weaker guarantee than the pure
  eps-DP of the first four.

W1 is ``w1_estimate`` (l_inf ground metric) between the data and the release: the mean exact W1
between ``--repeats`` pairs of ``--sample``-point subsamples, with its standard error and noise
floor (the W1 between two subsamples of the data itself, what subsampling alone contributes).
One seed per dataset, so every mechanism is scored on the same data subsamples.

Time: ours and ``flat_hist``/``stab_hist`` are the wall clock of the whole call (measurement
construction + release + post-processing), median over ``--runs`` releases (W1 is scored on the
first).  MST/AIM run once; ``seconds`` is what the runner measured in-process (binning, fit,
sample, un-binning), ``wall_s`` the whole subprocess (interpreter and jax start-up, CSV I/O).
The machine is shared: timings are noisy (tens of percent).

If the peers' environment is missing or smartnoise fails, the MST/AIM rows say why
(``status``, ``note``) and have no numbers.

``python benchmarks/bench_peers.py [--quick] [--skip-peers] [--out out]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import opendp.prelude as dp
from _common import PeerError, fmt, machine_note, run_runner, sample_curve, write_csv

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import SHAPES, sample_shape, sample_subspace, w1_estimate
from opendp_wasserstein.measurements import largest_remainder

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "peers", "run_smartnoise.py")
DEFAULT_PEER_PYTHON = os.path.join(HERE, ".venv-peers", "bin", "python")
OURS = ("pruned", "adaptive", "pmm")
MECHS = ("pruned", "adaptive", "pmm", "flat_hist", "stab_hist", "mst", "aim")
FIELDS = [
    "dataset",
    "d",
    "n",
    "mechanism",
    "status",
    "note",
    "privacy",
    "seconds",
    "wall_s",
    "w1",
    "w1_se",
    "w1_floor",
    "w1_excess",
    "visited",
    "depth",
    "s",
    "bins",
    "cells",
    "runs",
]


# ----------------------------------------------------------------------------------------------
# OpenDP-only histogram baselines


def grid_keys(x: np.ndarray, bins: int) -> np.ndarray:
    """Row-wise cell key ``sum_c idx_c bins^c`` of the ``bins``-per-axis grid on [0, 1]^d."""
    idx = np.clip(np.floor(x * bins), 0, bins - 1).astype(np.int64)
    return idx @ (np.int64(bins) ** np.arange(x.shape[1], dtype=np.int64))


def keys_to_points(
    keys: np.ndarray, mult: np.ndarray, bins: int, d: int, rng: np.random.Generator
) -> np.ndarray:
    """``mult[i]`` points uniform in the cell ``keys[i]`` (post-processing, public randomness)."""
    k = np.repeat(keys.astype(np.int64), mult)
    idx = (k[:, None] // (np.int64(bins) ** np.arange(d, dtype=np.int64))) % bins
    return (idx + rng.uniform(size=idx.shape)) / bins


def key_map(n: int, d: int, bins: int):  # type: ignore[no-untyped-def]
    """The row-wise key map as an OpenDP Transformation (change-one k -> symmetric 2k)."""
    return dp.t.make_user_transformation(
        dp.numpy.array2_domain(num_columns=d, size=n, T=float),
        dp.change_one_distance(),
        dp.vector_domain(dp.atom_domain(T=dp.i64)),
        dp.symmetric_distance(),
        lambda x: grid_keys(np.asarray(x), bins).tolist(),
        lambda d_in: 2 * d_in,
    )


def flat_hist(x: np.ndarray, eps: float, bins: int) -> tuple[np.ndarray, dict]:
    n, d = x.shape
    cells = bins**d
    meas = (
        key_map(n, d, bins)
        >> dp.t.then_count_by_categories(categories=list(range(cells)), null_category=False)
        >> dp.m.then_laplace(scale=2.0 / eps)
    )
    assert meas.map(1) <= eps, meas.map(1)
    noisy = np.asarray(meas(x), dtype=np.int64)
    alloc = largest_remainder(noisy, n)
    nz = np.flatnonzero(alloc)
    y = keys_to_points(nz, alloc[nz], bins, d, np.random.default_rng())
    return y, {"bins": bins, "cells": cells, "privacy": f"eps={eps:g}"}


def stability_threshold(t, scale: float, delta: float) -> int:  # type: ignore[no-untyped-def]
    """The smallest integer threshold whose delta is at most ``delta`` (delta falls with it)."""

    def ok(thr: int) -> bool:
        try:
            return (t >> dp.m.then_laplace_threshold(scale=scale, threshold=thr)).map(1)[1] <= delta
        except dp.OpenDPException:  # below the l_inf sensitivity: not admissible
            return False

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = hi // 2 + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def stab_hist(x: np.ndarray, eps: float, bins: int, delta: float) -> tuple[np.ndarray, dict]:
    n, d = x.shape
    t = key_map(n, d, bins) >> dp.t.then_count_by(TV=dp.i64)
    thr = stability_threshold(t, 2.0 / eps, delta)
    meas = t >> dp.m.then_laplace_threshold(scale=2.0 / eps, threshold=thr)
    e, dl = meas.map(1)
    assert e <= eps and dl <= delta, (e, dl)
    released = meas(x)
    rng = np.random.default_rng()
    if released:
        keys = np.fromiter(released.keys(), dtype=np.int64, count=len(released))
        alloc = largest_remainder(
            np.fromiter(released.values(), dtype=np.int64, count=len(released)), n
        )
        y = keys_to_points(keys, alloc, bins, d, rng)
    else:  # nothing above the threshold: the public fallback, uniform on the cube
        y = rng.uniform(size=(n, d))
    return y, {
        "bins": bins,
        "cells": len(released),
        "privacy": f"eps={e:g},delta={dl:.1e}",
        "note": f"threshold {thr}; {len(released)} cells released",
    }


# ----------------------------------------------------------------------------------------------
# smartnoise-synth (separate interpreter)


def run_peer(
    python: str, synth: str, x: np.ndarray, eps: float, delta: float, bins: int, timeout: float
) -> tuple[np.ndarray, dict]:
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        inp, outp = os.path.join(tmp, "x.csv"), os.path.join(tmp, "y.csv")
        np.savetxt(inp, x, delimiter=",", fmt="%.17g")
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
            "--delta",
            repr(delta),
            "--bins",
            str(bins),
        ]
        info, wall = run_runner(cmd, timeout)
        y = np.loadtxt(outp, delimiter=",", ndmin=2)
    info["wall_s"] = wall
    return y, info


def peer_unavailable(python: str) -> str:
    """Why the peers cannot run here ('' if they can)."""
    if not os.path.exists(python):
        return f"peers venv missing ({python}): run bash benchmarks/peers/setup.sh"
    try:
        proc = subprocess.run(
            [python, "-c", "import snsynth.mst, snsynth.aim"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"peers python not runnable: {e}"
    if proc.returncode != 0:
        return "import snsynth failed: " + " | ".join(proc.stderr.strip().splitlines()[-2:])
    return ""


# ----------------------------------------------------------------------------------------------


def datasets(names: list[str], n: int) -> list[tuple[str, np.ndarray]]:
    out = []
    for i, name in enumerate(names):
        if name in SHAPES:
            out.append((name, sample_shape(name, n, seed=i)))
        elif name == "curve10":
            out.append((name, sample_curve(n, 10, seed=100)))
        elif name == "subspace10":
            out.append((name, sample_subspace(n, 10, 1, seed=101)))
        else:
            raise ValueError(f"unknown dataset {name!r}")
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=30000)
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-9, help="MST/AIM and stab_hist")
    p.add_argument("--datasets", nargs="+", default=[*SHAPES, "curve10", "subspace10"])
    p.add_argument("--mechanisms", nargs="+", default=list(MECHS), choices=MECHS)
    p.add_argument(
        "--bins", type=int, default=32, help="bins per axis (peers, 2-D flat, stab_hist)"
    )
    p.add_argument("--flat-max-cells", type=int, default=2**20, help="flat_hist cells in high d")
    p.add_argument("--sample", type=int, default=2000, help="w1_estimate sample_size")
    p.add_argument("--repeats", type=int, default=2, help="w1_estimate repeats")
    p.add_argument("--runs", type=int, default=3, help="timed releases of ours / OpenDP baselines")
    p.add_argument("--peer-python", default=DEFAULT_PEER_PYTHON)
    p.add_argument(
        "--peer-timeout",
        type=float,
        default=300.0,
        help="seconds per MST/AIM call; a call that exceeds it is recorded as failed (timed out)",
    )
    p.add_argument("--skip-peers", action="store_true", help="no MST/AIM (rows marked skipped)")
    p.add_argument("--out", default="out")
    p.add_argument(
        "--quick",
        action="store_true",
        help="n = 3000, 2 shapes + curve10, small W1 samples, 10-D flat grid 3^10",
    )
    a = p.parse_args(argv)
    if a.quick:
        a.n, a.datasets, a.sample, a.repeats, a.runs = (
            3000,
            ["two_moons", "cross", "curve10"],
            500,
            2,
            1,
        )
        a.flat_max_cells = 3**10
    dp.enable_features("contrib", "honest-but-curious")
    os.makedirs(a.out, exist_ok=True)
    print(
        f"bench_peers: n = {a.n}, eps = {a.eps}, W1 l_inf on {a.repeats} x {a.sample}-point "
        "subsamples"
    )
    print(f"machine: {machine_note()}  (shared machine: timings are noisy)", flush=True)
    peers = [m for m in ("mst", "aim") if m in a.mechanisms]
    why_not = "--skip-peers" if a.skip_peers else (peer_unavailable(a.peer_python) if peers else "")
    if peers and why_not:
        print(f"MST/AIM skipped: {why_not}", flush=True)
    rows: list[dict] = []
    for di, (name, x) in enumerate(datasets(a.datasets, a.n)):
        n, d = x.shape
        for mech in a.mechanisms:
            row: dict = {
                "dataset": name,
                "d": d,
                "n": n,
                "mechanism": mech,
                "status": "ok",
                "note": "",
            }
            y = None
            try:
                if mech in OURS:
                    secs = []
                    for r in range(a.runs):
                        t0 = time.perf_counter()
                        yr, rep = synthesize(x, a.eps, bounds=(0.0, 1.0), mechanism=mech)
                        secs.append(time.perf_counter() - t0)
                        if r == 0:
                            y = yr
                            row.update(
                                visited=rep.visited_nodes,
                                depth=rep.depth,
                                s=rep.details.get("s", d),
                                privacy=f"eps={rep.epsilon:g}",
                            )
                    row.update(
                        seconds=float(np.median(secs)), wall_s=float(np.median(secs)), runs=a.runs
                    )
                elif mech in ("flat_hist", "stab_hist"):
                    if mech == "stab_hist" and d < 3:
                        row.update(
                            status="n/a",
                            note="stab_hist only in high d (2-D: flat_hist covers the 32x32 grid)",
                        )
                    else:
                        if mech == "flat_hist":
                            bins = (
                                a.bins
                                if a.bins**d <= a.flat_max_cells
                                else int(a.flat_max_cells ** (1.0 / d) + 1e-9)
                            )
                        secs = []
                        runs = a.runs if bins**d <= 10**5 else 1  # a million cells: slow, time once
                        for r in range(runs):
                            t0 = time.perf_counter()
                            yr, info = (
                                flat_hist(x, a.eps, bins)
                                if mech == "flat_hist"
                                else stab_hist(x, a.eps, a.bins, a.delta)
                            )
                            secs.append(time.perf_counter() - t0)
                            if r == 0:
                                y = yr
                                row.update(info)
                        row.update(
                            seconds=float(np.median(secs)), wall_s=float(np.median(secs)), runs=runs
                        )
                else:  # mst / aim
                    if why_not:
                        row.update(status="skipped", note=why_not)
                    else:
                        y, info = run_peer(
                            a.peer_python, mech, x, a.eps, a.delta, a.bins, a.peer_timeout
                        )
                        row.update(
                            seconds=info["seconds"],
                            wall_s=info["wall_s"],
                            bins=a.bins,
                            runs=1,
                            privacy=f"eps={a.eps:g},delta={a.delta:.0e}",
                            note=(
                                "smartnoise-synth {smartnoise-synth}, opendp {opendp}, mbi {mbi}"
                            ).format(**info["versions"]),
                        )
            except PeerError as e:
                row.update(status="failed", note=str(e))
            if y is not None:
                est = w1_estimate(
                    x, y, metric="linf", sample_size=a.sample, repeats=a.repeats, seed=1000 + di
                )
                row.update(
                    w1=est.value,
                    w1_se=est.std_error,
                    w1_floor=est.noise_floor,
                    w1_excess=est.value - est.noise_floor,
                )
            rows.append(row)
            print(
                f"  {name:>12} {mech:>9} {row['status']:>7} {fmt(row.get('seconds'), '.3f')} s  "
                f"W1 {fmt(row.get('w1'), '.4f')} (floor {fmt(row.get('w1_floor'), '.4f')})  "
                f"{row.get('note', '')}",
                flush=True,
            )
        write_csv(os.path.join(a.out, "bench_peers.csv"), rows, FIELDS)  # after every dataset
    print_tables(rows, a.mechanisms)


def print_tables(rows: list[dict], mechs: list[str]) -> None:
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    get = {(r["dataset"], r["mechanism"]): r for r in rows}
    for title, key, spec in (
        ("W1 (l_inf; mean of subsample estimates)", "w1", ".4f"),
        ("seconds (ours: median of runs; MST/AIM: in-process)", "seconds", ".3f"),
    ):
        print(f"\n{title}")
        extra = f" {'floor':>8}" if key == "w1" else ""
        print(f"{'dataset':>12}{extra} " + " ".join(f"{m:>9}" for m in mechs))
        for nm in names:
            fl = next(
                (
                    get[(nm, m)].get("w1_floor")
                    for m in mechs
                    if get.get((nm, m), {}).get("w1_floor") is not None
                ),
                None,
            )
            cells = " ".join(fmt(get.get((nm, m), {}).get(key), spec) for m in mechs)
            print(f"{nm:>12}" + (f" {fmt(fl, '.4f', 8)}" if key == "w1" else "") + " " + cells)
    if "mst" in mechs:
        print("\nvs MST: W1 ratio (ours / MST; < 1 is better) and speed-up (MST s / ours s)")
        print(f"{'dataset':>12} {'W1 adapt':>9} {'W1 prune':>9} {'x adapt':>9} {'x prune':>9}")
        for nm in names:
            mst = get.get((nm, "mst"), {})
            vals: list[float | None] = []
            for key in ("w1", "seconds"):
                for m in ("adaptive", "pruned"):
                    o = get.get((nm, m), {})
                    if mst.get(key) is None or o.get(key) is None:
                        vals.append(None)
                    else:
                        vals.append(o[key] / mst[key] if key == "w1" else mst[key] / o[key])
            print(
                f"{nm:>12} {fmt(vals[0], '.3f')} {fmt(vals[1], '.3f')} {fmt(vals[2], '.0f')} "
                f"{fmt(vals[3], '.0f')}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
