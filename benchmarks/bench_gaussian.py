"""Throughput of the exact discrete Gaussian samplers: ``fast`` (vectorised) vs OpenDP.

Prints samples per second, one core, for several constant scales (secure source, i.e.
``os.urandom`` in bulk, and a seeded PCG64 source) against OpenDP's integer ``make_gaussian``
(``T="i64"``, its own CSPRNG), for mixed per-element scales, and the latency of small calls;
also how many random bytes a draw uses.  Timings are the best of ``--repeats`` runs.
``python benchmarks/bench_gaussian.py [--n 1000000] [--quick] [--csv out.csv]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

import numpy as np
import opendp.prelude as dp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import write_csv  # noqa: E402

from opendp_wasserstein.noise._fast_gaussian import fast_discrete_gaussian  # noqa: E402
from opendp_wasserstein.noise._source import RandomSource  # noqa: E402

SCALES = (0.3, 1.0, 3.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6)


class _MeteredSource(RandomSource):
    """A secure source that counts the bytes it hands out."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = 0

    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        out = super().uint64(size)
        self.bytes_read += out.nbytes
        return out


def best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def opendp_gaussian(scale: float, n: int) -> np.ndarray:
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64"), scale=scale
    )
    return np.asarray(meas([0] * n), dtype=np.int64)


def constant_scales(n: int, n_opendp: int, repeats: int, scales: tuple[float, ...]) -> list[dict]:
    print(f"\nconstant scale, n = {n:,} per call (OpenDP: {n_opendp:,})")
    print(
        f"{'scale':>10} {'fast secure':>13} {'fast seeded':>13} {'OpenDP':>13} "
        f"{'speed-up':>9} {'bytes/draw':>11}"
    )
    secure, seeded = RandomSource(), RandomSource(0)
    rows = []
    for scale in scales:
        sc = np.full(n, scale)
        t_sec = best_time(lambda sc=sc: fast_discrete_gaussian(sc, secure), repeats)
        t_seed = best_time(lambda sc=sc: fast_discrete_gaussian(sc, seeded), repeats)
        t_odp = best_time(lambda s=scale: opendp_gaussian(s, n_opendp), 1) if n_opendp else 0.0
        metered = _MeteredSource()
        fast_discrete_gaussian(sc, metered)
        fast_rate, seed_rate = n / t_sec, n / t_seed
        odp_rate = n_opendp / t_odp if n_opendp else float("nan")
        print(
            f"{scale:>10g} {fast_rate / 1e6:>9.2f} M/s {seed_rate / 1e6:>9.2f} M/s "
            f"{odp_rate / 1e6:>9.3f} M/s {fast_rate / odp_rate:>8.0f}x "
            f"{metered.bytes_read / n:>11.1f}"
        )
        rows.append(
            {
                "layout": "constant",
                "scale": scale,
                "fast_secure_per_s": fast_rate,
                "fast_seeded_per_s": seed_rate,
                "opendp_per_s": odp_rate,
                "bytes_per_draw": metered.bytes_read / n,
            }
        )
    return rows


def mixed_scales(n: int, repeats: int) -> list[dict]:
    print(f"\nper-element scales, about {n:,} elements per call, secure source")
    gen = np.random.default_rng(0)  # builds the scale layouts only, never used for noise
    depth = max(1, int(np.log2(n)) - 1)
    levels = np.concatenate([np.full(2**j, 1.3**j) for j in range(depth + 1)])
    eight = np.array([0.3, 1.0, 2.5, 17.0, 100.0, 1e3, 1e4, 1e6])
    layouts = {
        "tree levels in order (runs)": levels,
        "8 scales interleaved": eight[gen.integers(0, 8, n)],
        "all distinct, log-uniform [0.1, 1e6]": np.exp(gen.uniform(np.log(0.1), np.log(1e6), n)),
    }
    secure = RandomSource()
    rows = []
    for name, sc in layouts.items():
        t = best_time(lambda sc=sc: fast_discrete_gaussian(sc, secure), repeats)
        print(f"  {name:<40} {sc.size / t / 1e6:8.2f} M/s")
        rows.append(
            {
                "layout": name,
                "scale": "",
                "fast_secure_per_s": sc.size / t,
                "fast_seeded_per_s": "",
                "opendp_per_s": "",
                "bytes_per_draw": "",
            }
        )
    return rows


def small_calls(repeats: int) -> None:
    print("\nsmall calls (latency per call, scale 3, secure source)")
    secure = RandomSource()
    for size in (1, 16, 256, 4096):
        sc = np.full(size, 3.0)
        calls = 20

        def fast(sc: np.ndarray = sc, calls: int = calls) -> None:
            for _ in range(calls):
                fast_discrete_gaussian(sc, secure)

        def odp(size: int = size, calls: int = calls) -> None:
            for _ in range(calls):
                opendp_gaussian(3.0, size)

        t_fast = best_time(fast, repeats) / calls
        t_odp = best_time(odp, 1) / calls
        print(f"  size {size:>5}: fast {t_fast * 1e6:9.0f} us   OpenDP {t_odp * 1e6:9.0f} us")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=1_000_000, help="draws per call")
    p.add_argument("--n-opendp", type=int, default=20_000, help="draws per OpenDP call (0: skip)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="n = 200000, 2 repeats, 4 scales")
    p.add_argument("--csv", default=None, help="also write the figures to this CSV file")
    args = p.parse_args(argv)
    scales = SCALES
    if args.quick:
        args.n, args.repeats, args.n_opendp = 200_000, 2, 5_000
        scales = (0.3, 3.0, 1e3, 1e6)
    dp.enable_features("contrib")
    rows = constant_scales(args.n, args.n_opendp, args.repeats, scales)
    rows += mixed_scales(args.n, args.repeats)
    small_calls(args.repeats)
    if args.csv:
        write_csv(args.csv, rows, list(rows[0]))


if __name__ == "__main__":
    main()
