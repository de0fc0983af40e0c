"""The ``opendp-wasserstein`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "run_demo"]


class CliError(Exception):
    """An error reported as one line and exit code 2."""


def run_demo(
    n: int = 30000,
    epsilon: float = 1.0,
    out: str = "demo.png",
    seed: int | None = None,
    shape: str = "two_moons",
    quiet: bool = False,
) -> dict[str, Any]:
    """Synthesise private data for an embedded 2-D shape and report eps, W1 and time.

    :param n: number of original points
    :param epsilon: the total privacy budget (one replacement)
    :param out: where to write the PNG of original vs synthetic (``""`` for none)
    :param seed: **not private**: reproducible data and release, for figures only
    :param shape: one of :data:`opendp_wasserstein.evaluation.SHAPES`
    :return: a summary dict (also printed unless ``quiet``)
    """
    import opendp.prelude as dp

    from opendp_wasserstein.evaluation import make_shape, w1_estimate
    from opendp_wasserstein.measurements import make_pruned_pmm
    from opendp_wasserstein.schedules import ambient_depth, paper_schedule

    dp.enable_features("contrib")
    x = make_shape(shape, n, seed=seed)
    depth = ambient_depth(epsilon, n)
    meas = make_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=n, T=float),
        dp.change_one_distance(),
        depth=depth,
        scales=paper_schedule(2, epsilon, depth, s=1),
        placement="uniform",
        seed=seed,
        diagnostics=True,
    )
    t0 = time.perf_counter()
    y, info = meas(x)
    seconds = time.perf_counter() - t0
    est = w1_estimate(x, y, metric="linf", seed=0 if seed is None else seed)
    summary = {
        "mechanism": "pruned-pmm",
        "shape": shape,
        "n": n,
        "epsilon_certified": meas.map(1),
        "depth": depth,
        "synthetic_size": int(y.shape[0]),
        "visited_nodes": info["visited_nodes"],
        "w1_linf": est.value,
        "w1_noise_floor": est.noise_floor,
        "seconds": seconds,
        "png": out or None,
    }
    if out:
        _plot_pair(x, y, out, f"{shape}: original (n={n}) vs Pruned-PMM, eps={meas.map(1):g}")
    if not quiet:
        print(f"certified epsilon (meas.map(1), one replacement): {summary['epsilon_certified']}")
        print(f"depth {depth}, {info['visited_nodes']} noisy nodes visited, {y.shape[0]} synthetic points")
        print(f"W1 (l_inf) to the original: {est.value:.5f}  (subsampling floor {est.noise_floor:.5f})")
        print(f"release time: {seconds:.3f} s")
        if out:
            print(f"wrote {out}")
    return summary


def _plot_pair(x: Any, y: Any, out: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5), sharex=True, sharey=True)
    for ax, pts, name in ((axes[0], x, "original"), (axes[1], y, "synthetic (private)")):
        k = min(len(pts), 20000)
        ax.scatter(pts[:k, 0], pts[:k, 1], s=1, alpha=0.4)
        ax.set_title(name)
        ax.set_aspect("equal")
    fig.suptitle(title)
    tmp = out + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, out)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="opendp-wasserstein", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="synthesise private two-moons data and plot it")
    demo.add_argument("--n", type=int, default=30000)
    demo.add_argument("--epsilon", type=float, default=1.0)
    demo.add_argument("--shape", default="two_moons")
    demo.add_argument("-o", "--out", default="demo.png", help="PNG path ('' for none)")
    demo.add_argument("--seed", type=int, default=None, help="NOT private: reproducible figures only")
    demo.add_argument("--json", action="store_true", help="print a JSON summary")
    demo.add_argument("--quiet", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "demo":
            if args.n < 2:
                raise CliError("--n must be at least 2")
            if not args.epsilon > 0 or args.epsilon == float("inf"):
                raise CliError("--epsilon must be finite and > 0")
            summary = run_demo(args.n, args.epsilon, args.out, args.seed, args.shape, args.quiet or args.json)
            if args.json:
                print(json.dumps(summary))
        return 0
    except (CliError, ValueError, TypeError, OSError) as e:
        print(f"opendp-wasserstein: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
