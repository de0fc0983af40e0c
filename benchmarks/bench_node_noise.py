"""Throughput of node-addressed noise against the pooled exact sampler.

For each scale, ``--n`` draws (default ``10^6``) of ``LapZ(scale)``:

- **pooled**: :func:`~opendp_wasserstein.noise._fast_laplace.fast_discrete_laplace`, one stream of
  ``os.urandom`` bytes shared by all draws (what
  :class:`~opendp_wasserstein.noise.node_noise.PooledNoise` uses; not node-addressed);
- **keyed d=3 / d=10**:
  :meth:`KeyedNodeNoise.laplace <opendp_wasserstein.noise.node_randomness.KeyedNodeNoise.laplace>`
  on ``n`` distinct level-40 cells of dimension 3 or 10: the CBC-MAC of every node id
  (``ceil(d/2) + 1`` AES blocks) and the exact per-node-stream sampler.

Also the coins and uniform placement of ``n`` nodes / points.  Rates are millions per second,
the best of ``--repeats`` runs (other load only slows a run).
``python benchmarks/bench_node_noise.py [--n 1000000] [--quick]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from _common import machine_note

from opendp_wasserstein.noise._fast_laplace import fast_discrete_laplace
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise

SCALES = (0.3, 1.0, 3.0, 10.0, 100.0, 1e3, 1e4, 1e6)


def best(fn: Callable[[], object], repeats: int) -> float:
    fn()
    out = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="n = 30000, 1 repeat, 4 scales")
    a = p.parse_args(argv)
    scales = SCALES
    if a.quick:
        a.n, a.repeats, scales = 30_000, 1, (0.3, 3.0, 100.0, 1e4)
    n = a.n
    gen = np.random.default_rng(0)  # node ids only
    cells3 = gen.integers(0, 2**14, size=(n, 3))
    cells10 = gen.integers(0, 2**4, size=(n, 10))
    noise = KeyedNodeNoise.fresh()
    src = RandomSource()
    print(machine_note())
    print(f"\nLapZ(scale), n = {n:,} per call, M draws/s (best of {a.repeats})")
    print(f"{'scale':>10} {'pooled':>9} {'keyed d=3':>10} {'keyed d=10':>11} {'keyed/pooled':>13}")
    for s in scales:
        t_pool = best(lambda s=s: fast_discrete_laplace(np.full(n, s), src), a.repeats)
        t_k3 = best(lambda s=s: noise.laplace(40, cells3, s), a.repeats)
        t_k10 = best(lambda s=s: noise.laplace(40, cells10, s), a.repeats)
        print(
            f"{s:>10g} {n / t_pool / 1e6:>9.2f} {n / t_k3 / 1e6:>10.2f} {n / t_k10 / 1e6:>11.2f}"
            f" {t_pool / t_k3:>12.2f}x"
        )
    t_coin = best(lambda: noise.coins(40, cells3), a.repeats)
    counts = np.ones(n, dtype=np.int64)
    t_uni = best(lambda: noise.uniform(40, cells3, counts, 3), a.repeats)
    print(f"\ncoins, d = 3:                {n / t_coin / 1e6:8.2f} M nodes/s")
    print(f"uniform points in [0,1)^3:   {n / t_uni / 1e6:8.2f} M points/s (one per node)")


if __name__ == "__main__":
    main()
