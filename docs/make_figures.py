"""Regenerate the figures under ``docs/_static/`` (run by hand, not by the docs build).

    python docs/make_figures.py

Every random draw here is **seeded**, so the figures are reproducible; a seeded release is
not private (see the page "Randomness and floating point").  The data are the package's public
test shape ``two_moons``.  Needs matplotlib (the ``plot`` or ``dev`` extra).
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import opendp.prelude as dp  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from opendp_wasserstein.evaluation import sample_shape, w1_estimate  # noqa: E402
from opendp_wasserstein.hierarchy.cells import build_count_tree, coord_bits_at_level  # noqa: E402
from opendp_wasserstein.measurements import make_pmm, make_pruned_pmm  # noqa: E402
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import paper_schedule  # noqa: E402

STATIC = Path(__file__).resolve().parent / "_static"
SEED = 7  # NOT private: reproducible figures only


def _save(fig: plt.Figure, name: str, dpi: int = 90) -> None:
    STATIC.mkdir(exist_ok=True)
    path = STATIC / name
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def figure_two_moons(n: int = 10000, epsilon: float = 1.0) -> None:
    """Original two moons next to PMM, Pruned-PMM (same depth and schedule) and Adaptive
    Pruned-PMM, all at the same total epsilon."""
    dp.enable_features("contrib")
    x = sample_shape("two_moons", n, seed=SEED)
    domain = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    metric = dp.symmetric_distance()
    depth = 12
    runs = [
        ("PMM", make_pmm(domain, metric, depth=depth, scales=paper_schedule(2, epsilon, depth),
                         placement="uniform")),
        ("Pruned-PMM", make_pruned_pmm(domain, metric, depth=depth,
                                       scales=paper_schedule(2, epsilon, depth),
                                       placement="uniform")),
    ]
    try:  # present once the adaptive mechanism is in the package
        from opendp_wasserstein.measurements import make_adaptive_pruned_pmm

        runs.append(("Adaptive Pruned-PMM", make_adaptive_pruned_pmm(
            domain, metric, epsilon_select=0.25 * epsilon, epsilon_main=0.75 * epsilon,
            placement="uniform")))
    except ImportError:  # pragma: no cover
        pass
    panels = [("original (sensitive)", x)]
    for name, meas in runs:
        with reproducible(SEED), diagnostics() as records:  # NOT private: a figure
            y = meas(x)
        info = records[-1]
        w = w1_estimate(x, y, metric="linf", seed=SEED).value
        title = (f"{name}, depth {info['depth']}\n"
                 f"map(2) = {meas.map(2)!r}, W1 = {w:.4f}, {info['visited_nodes']} nodes")
        panels.append((title, y))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 4.0), sharex=True, sharey=True)
    for ax, (title, pts) in zip(axes, panels, strict=True):
        ax.scatter(pts[:, 0], pts[:, 1], s=0.6, alpha=0.5, color="tab:blue", rasterized=True)
        ax.set_title(title, fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    fig.suptitle(f"two moons, n = {n}, epsilon = {epsilon:g} (seeded: not a private release)", fontsize=10)
    _save(fig, "two_moons_pmm.png")


def _cell_rects(cells: np.ndarray, level: int, d: int = 2) -> list[Rectangle]:
    bits = coord_bits_at_level(level, d)
    w = np.ldexp(1.0, -bits)
    return [Rectangle((c[0] * w[0], c[1] * w[1]), w[0], w[1]) for c in cells]


def _occupied_cells(u: np.ndarray, level: int) -> np.ndarray:
    """Per-coordinate indices of the occupied cells of ``level`` (for the figure only)."""
    bits = coord_bits_at_level(level, u.shape[1])
    g = np.minimum(np.floor(u * np.ldexp(1.0, bits)), np.ldexp(1.0, bits) - 1).astype(np.int64)
    return np.unique(g, axis=0)


def figure_hierarchy(n: int = 3000) -> None:
    """Cyclic bisection: occupied cells at levels 3, 6, 10 and the Morton (Z) order at level 6."""
    x = sample_shape("two_moons", n, seed=SEED)
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.8))
    for ax, level in zip(axes[:3], (3, 6, 10), strict=True):
        bits = coord_bits_at_level(level, 2)
        for i in range(2 ** int(bits[0]) + 1):
            ax.axvline(i * 2.0 ** -int(bits[0]), color="0.85", lw=0.5)
        for i in range(2 ** int(bits[1]) + 1):
            ax.axhline(i * 2.0 ** -int(bits[1]), color="0.85", lw=0.5)
        occ = _occupied_cells(x, level)
        for r in _cell_rects(occ, level):
            r.set_facecolor("tab:orange")
            r.set_alpha(0.45)
            r.set_edgecolor("none")
            ax.add_patch(r)
        ax.scatter(x[:, 0], x[:, 1], s=0.3, color="tab:blue", rasterized=True)
        ax.set_title(f"level {level}: {2**int(bits[0])} x {2**int(bits[1])} grid, O = {len(occ)}", fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xticks([])
        ax.set_yticks([])
    # Morton (Z) order of the level-6 cells: bit j of the code is bit j // d of coordinate j mod d
    ax = axes[3]
    level = 6
    side = 2 ** (level // 2)
    cells = np.array([(i, j) for i in range(side) for j in range(side)])
    code = np.zeros(len(cells), dtype=np.int64)
    for j in range(level):
        c, b = j % 2, level // 2 - 1 - j // 2
        code = (code << 1) | ((cells[:, c] >> b) & 1)
    order = cells[np.argsort(code)]
    centres = (order + 0.5) / side
    ax.plot(centres[:, 0], centres[:, 1], "-", color="tab:green", lw=1)
    ax.plot(centres[0, 0], centres[0, 1], "o", color="tab:green", ms=4)
    ax.set_title("Morton order of level-6 cells\n(sorted codes = depth-first tree order)", fontsize=9)
    ax.set_aspect("equal")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([])
    ax.set_yticks([])
    _save(fig, "hierarchy.png")


def figure_occupancy(n: int = 30000, epsilon: float = 1.0) -> None:
    """O_j from the lcp of sorted Morton codes, and nodes visited by PMM vs Pruned-PMM."""
    dp.enable_features("contrib")
    depth = 28
    rng = np.random.default_rng(SEED)
    datasets = {
        "uniform square (k = 2)": rng.uniform(size=(n, 2)),
        "two moons (curve, k ~ 1)": sample_shape("two_moons", n, seed=SEED),
        "four points (k = 0)": np.repeat(rng.uniform(size=(4, 2)), n // 4, axis=0),
    }
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    j = np.arange(depth + 1)
    for name, u in datasets.items():
        axes[0].semilogy(j, build_count_tree(u, depth).occupancy(), label=name)
    axes[0].semilogy(j, np.minimum(2.0**j, n), "k:", lw=1, label="min(2^j, n)")
    axes[0].set_xlabel("level j")
    axes[0].set_ylabel("occupied cells O_j")
    axes[0].set_title("occupancy, one sort of Morton codes", fontsize=9)
    axes[0].legend(fontsize=8)
    u = datasets["two moons (curve, k ~ 1)"]
    domain = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    for depth_r in (8, 12, 16, 20, 24, 28):
        meas = make_pruned_pmm(
            domain, dp.symmetric_distance(), depth=depth_r, scales=paper_schedule(2, epsilon, depth_r),
        )
        with reproducible(SEED), diagnostics() as records:
            meas(u)
        info = records[-1]
        axes[1].plot(depth_r, info["visited_nodes"], "o", color="tab:orange")
    rr = np.arange(8, 29)
    axes[1].semilogy(rr, 2.0 ** (rr + 1) - 1, "k-", lw=1, label="PMM: 2^(r+1) - 1 nodes")
    axes[1].semilogy(rr, 1 + 2 * n * rr, "k--", lw=1, label="bound 1 + 2 m r")
    axes[1].plot([], [], "o", color="tab:orange", label="Pruned-PMM: visited nodes")
    axes[1].set_xlabel("depth r")
    axes[1].set_ylabel("noisy nodes drawn")
    axes[1].set_title(f"two moons, n = {n}, epsilon = {epsilon:g}", fontsize=9)
    axes[1].legend(fontsize=8)
    _save(fig, "occupancy_nodes.png")


if __name__ == "__main__":
    figure_hierarchy()
    figure_occupancy()
    figure_two_moons()
