"""``opendp-wasserstein demo``: a private copy of an embedded 2-D shape, its W1, a figure."""

from __future__ import annotations

import os
from typing import Any

from opendp_wasserstein.api import synthesize
from opendp_wasserstein.cli._common import progress, seeded
from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.evaluation import sample_shape, w1_estimate, w1_grid

__all__ = ["run_demo", "DEMO_GRID_BITS"]

#: the demo's W1: all points on a 2**bits grid per axis (``evaluation.w1_grid``; ~2 s at 30000
#: points)
DEMO_GRID_BITS = 8


def run_demo(
    n: int = 30000,
    epsilon: float = 1.0,
    out: str = "demo.png",
    seed: int | None = None,
    shape: str = "two_moons",
    quiet: bool = False,
    mechanism: str = "adaptive",
) -> dict[str, Any]:
    """Synthesise private data for an embedded 2-D shape and report eps, W1 and time.

    :param n: number of original points
    :param epsilon: the total privacy budget (one replacement)
    :param out: where to write the PNG of original vs synthetic (``""`` for none)
    :param seed: **not private**: reproducible data and release, for figures only
    :param shape: one of :data:`opendp_wasserstein.evaluation.SHAPES`
    :param mechanism: ``"adaptive"`` (default), ``"pruned"``, ``"pmm"`` or ``"privtree"``
    :return: a summary dict (also printed unless ``quiet``)
    """

    x = sample_shape(shape, n, seed=seed)
    with seeded(seed):
        y, report = synthesize(x, epsilon, bounds=(0.0, 1.0), mechanism=mechanism)
    bar = progress(1, quiet, "W1 evaluation")  # most of the demo's time; a bar on a terminal only
    try:  # all points of both sets on a 256^2 grid: exact transport, a proven binning bound
        grid = w1_grid(x, y, bits=DEMO_GRID_BITS, bounds=(0.0, 1.0))
        bar.step(1, 1)
        w1_value, w1_note = (
            grid.value,
            f"all points on a {2**DEMO_GRID_BITS}^2 grid, binning error <= {grid.error_bound:.5f}",
        )
        floor, bound = 0.0, grid.error_bound
    except ImportError:  # without OR-Tools: subsamples, whose floor is reported with them
        est = w1_estimate(x, y, metric="linf", seed=0 if seed is None else seed, on_step=bar.step)
        w1_value, w1_note = (
            est.value,
            f"subsampling floor {est.noise_floor:.5f}; pip install ortools for all points",
        )
        floor, bound = est.noise_floor, None
    bar.close()
    summary = {
        "mechanism": mechanism,
        "shape": shape,
        "n": n,
        "epsilon_certified": report.epsilon,
        "depth": report.depth,
        "model_dimension": report.details.get("s"),
        "synthetic_size": report.size,
        "visited_nodes": report.visited_nodes,
        "w1_linf": w1_value,
        "w1_noise_floor": floor,
        "w1_error_bound": bound,
        "seconds": report.seconds,
        "png": out or None,
    }
    if out:
        _plot_pair(
            x, y, out, f"{shape}: original (n={n}) vs {mechanism} synthetic, eps={report.epsilon:g}"
        )
    if not quiet:
        print(f"certified epsilon (meas.map, one replacement): {report.epsilon}")
        extra = f" (model dimension s = {report.details['s']})" if "s" in report.details else ""
        print(
            f"{mechanism}: depth {report.depth}{extra}, {report.visited_nodes} noisy nodes "
            f"visited, {report.size} synthetic points"
        )
        print(f"W1 (l_inf) to the original: {w1_value:.5f}  ({w1_note})")
        print(f"release time: {report.seconds:.3f} s")
        if out:
            print(f"wrote {out}")
    return summary


def _plot_pair(x: Any, y: Any, out: str, title: str) -> None:
    matplotlib = import_optional("matplotlib", "the demo figure")

    matplotlib.use("Agg")
    plt = import_optional("matplotlib.pyplot", "the demo figure")

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
