"""Throughput of the exact discrete Laplace samplers: ``fast`` (vectorised) vs OpenDP.

Prints samples per second, one core, for several constant scales (secure source, i.e.
``os.urandom`` in bulk, and a seeded PCG64 source), for mixed per-element scale layouts, and the
latency of small calls; also how many random bytes a draw uses and what share of the time goes
to reading them.  Timings are the best of ``--repeats`` runs (other load on the machine only
makes a run slower).  ``python benchmarks/bench_laplace.py [--n 1000000] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.noise._fast_laplace import fast_discrete_laplace
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.samplers import opendp_discrete_laplace

SCALES = (0.1, 0.3, 1.0, 3.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6)


class _MeteredSource(RandomSource):
    """A secure source that counts the bytes it hands out and the time spent reading them."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read = 0
        self.seconds = 0.0

    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        t0 = time.perf_counter()
        out = super().uint64(size)
        self.seconds += time.perf_counter() - t0
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


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1e6:8.2f} M/s"


def constant_scales(n: int, n_opendp: int, repeats: int, scales: tuple[float, ...]) -> None:
    print(f"\nconstant scale, n = {n:,} per call (OpenDP: {n_opendp:,})")
    header = f"{'scale':>10} {'fast secure':>13} {'fast seeded':>13} {'OpenDP':>13} {'speed-up':>9}"
    print(header + f" {'bytes/draw':>11} {'urandom share':>14}")
    secure, seeded = RandomSource(), RandomSource(0)
    for scale in scales:
        sc = np.full(n, scale)
        t_sec = best_time(lambda sc=sc: fast_discrete_laplace(sc, secure), repeats)
        t_seed = best_time(lambda sc=sc: fast_discrete_laplace(sc, seeded), repeats)
        sc_o = np.full(n_opendp, scale)
        t_odp = best_time(lambda sc_o=sc_o: opendp_discrete_laplace(sc_o), 1) if n_opendp else 0
        metered = _MeteredSource()
        t0 = time.perf_counter()
        fast_discrete_laplace(sc, metered)
        total = time.perf_counter() - t0
        odp = rate(n_opendp, t_odp) if n_opendp else f"{'-':>12}"
        speed = f"{(n / t_sec) / (n_opendp / t_odp):8.0f}x" if n_opendp else f"{'-':>9}"
        print(
            f"{scale:>10g} {rate(n, t_sec):>13} {rate(n, t_seed):>13} {odp:>13} {speed:>9}"
            f" {metered.bytes_read / n:>11.1f} {metered.seconds / total:>13.0%}"
        )


def mixed_scales(n: int, repeats: int) -> None:
    print(f"\nper-element scales, about {n:,} elements per call, secure source")
    gen = np.random.default_rng(0)  # builds the scale layouts only, never used for noise
    depth = max(1, int(np.log2(n)) - 1)
    levels = np.concatenate([np.full(2**j, 1.3**j) for j in range(depth + 1)])
    eight = np.array([0.3, 1.0, 2.5, 17.0, 100.0, 1e3, 1e4, 1e6])
    layouts = {
        "tree levels in order (runs)": levels,
        "8 scales interleaved": eight[gen.integers(0, 8, n)],
        "all distinct, log-uniform [0.1, 1e6]": np.exp(gen.uniform(np.log(0.1), np.log(1e6), n)),
        "all distinct, log-uniform [1, 1e6]": np.exp(gen.uniform(0.0, np.log(1e6), n)),
    }
    secure = RandomSource()
    for name, sc in layouts.items():
        t = best_time(lambda sc=sc: fast_discrete_laplace(sc, secure), repeats)
        print(f"  {name:<40} {rate(sc.size, t)}")


def small_calls(repeats: int, calls: int = 20) -> None:
    print("\nsmall calls (latency per call, scale 3, secure source)")
    secure = RandomSource()
    for size in (1, 16, 256, 4096):
        sc = np.full(size, 3.0)

        def fast(sc: np.ndarray = sc, calls: int = calls) -> None:
            for _ in range(calls):
                fast_discrete_laplace(sc, secure)

        def odp(sc: np.ndarray = sc, calls: int = calls) -> None:
            for _ in range(calls):
                opendp_discrete_laplace(sc)

        t_fast = best_time(fast, repeats) / calls
        t_odp = best_time(odp, 1) / calls
        print(f"  size {size:>5}: fast {t_fast * 1e6:9.0f} us   OpenDP {t_odp * 1e6:9.0f} us")


def urandom_rate() -> None:
    nbytes = 1 << 24
    t = best_time(lambda: os.urandom(nbytes), 3)
    print(f"os.urandom: {nbytes / t / 1e6:.0f} MB/s")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=1_000_000, help="draws per call")
    p.add_argument("--n-opendp", type=int, default=20_000, help="draws per OpenDP call (0: skip)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument(
        "--quick", action="store_true", help="n = 50000, 2 repeats, 5 scales, 5 small calls"
    )
    args = p.parse_args(argv)
    scales = SCALES
    if args.quick:
        args.n, args.repeats, args.n_opendp = 50_000, 2, 1_000
        scales = (0.1, 1.0, 10.0, 1e3, 1e6)
    dp.enable_features("contrib")
    urandom_rate()
    constant_scales(args.n, args.n_opendp, args.repeats, scales)
    mixed_scales(args.n, args.repeats)
    small_calls(args.repeats, 5 if args.quick else 20)


if __name__ == "__main__":
    main()
