"""Real data: private synthetic copies of scikit-learn's bundled handwritten digits.

The 1797 images are 8 x 8 = 64 pixel intensities in the public range [0, 16].  We release a
synthetic dataset with Adaptive Pruned-PMM and with full PMM at eps = 1, and compare W1 (l_inf
ground metric, exact) to the original against two references: a uniform sample of the box (what
knowing only the bounds gives) and the original's own 50/50 split (sampling noise).  A PNG shows
the mean image and a few synthetic rows.  Needs scikit-learn (a dev extra).

Run: ``python examples/real_data_digits.py [--out out]``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein import synthesize
from opendp_wasserstein.evaluation import w1


def _seeded(seed: int | None) -> Any:
    """``reproducible(seed)`` (NOT private: a reproducible example), or the secure default."""
    from contextlib import nullcontext

    from opendp_wasserstein.runtime import reproducible

    return nullcontext() if seed is None else reproducible(seed)


def main(argv: list[str] | None = None) -> dict:
    dp.enable_features("contrib")  # a program of its own, as any OpenDP program
    from sklearn.datasets import load_digits

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0, help="NOT private: reproducible figure")
    p.add_argument("--out", default="out")
    a = p.parse_args(argv)
    x = load_digits().data.astype(float)
    n, d = x.shape
    rng = np.random.default_rng(a.seed)
    results = {}
    for mechanism in ("adaptive", "pmm"):
        with _seeded(a.seed):
            y, report = synthesize(x, a.epsilon, bounds=(0.0, 16.0), mechanism=mechanism)
        results[mechanism] = (y, report)
        print(
            f"{mechanism:>8}: eps {report.epsilon}, depth {report.depth}, "
            f"{report.visited_nodes} nodes, "
            f"W1 {w1(x, y):.3f}, {report.seconds:.2f} s"
        )
    uniform = rng.uniform(0, 16, size=(n, d))
    half = rng.permutation(n)
    print(f"{'uniform':>8}: W1 {w1(x, uniform):.3f} (bounds only)")
    print(
        f"{'split':>8}: W1 {w1(x[half[: n // 2]], x[half[n // 2 :]]):.3f} (two halves of the data)"
    )
    os.makedirs(a.out, exist_ok=True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    y = results["adaptive"][0]
    fig, axes = plt.subplots(2, 6, figsize=(10, 3.6))
    axes[0, 0].imshow(x.mean(0).reshape(8, 8), cmap="gray_r")
    axes[0, 0].set_title("mean (orig)")
    axes[1, 0].imshow(y.mean(0).reshape(8, 8), cmap="gray_r")
    axes[1, 0].set_title("mean (synth)")
    for j in range(1, 6):
        axes[0, j].imshow(x[j * 97].reshape(8, 8), cmap="gray_r")
        axes[1, j].imshow(y[j * 97].reshape(8, 8), cmap="gray_r")
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(f"digits: original (top) vs Adaptive Pruned-PMM (bottom), eps = {a.epsilon}")
    path = os.path.join(a.out, "digits.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")

    # 64 dimensions is far too many for 1797 points at eps = 1 (the W1 above is close to what the
    # bounds alone give).  A public 2-D view: PCA fitted on a public part (the first 500 images),
    # the private rest projected onto it, bounds taken from the public part with a margin.
    from sklearn.decomposition import PCA

    public, private = x[:500], x[500:]
    pca = PCA(n_components=2).fit(public)
    z_pub, z = pca.transform(public), pca.transform(private)
    margin = 0.1 * (z_pub.max(0) - z_pub.min(0))
    lo, hi = z_pub.min(0) - margin, z_pub.max(0) + margin
    with _seeded(a.seed):
        yz, report = synthesize(
            z, a.epsilon, bounds={"lower": lo, "upper": hi}, mechanism="adaptive"
        )
    uz = rng.uniform(lo, hi, size=z.shape)
    hz = rng.permutation(len(z))
    print(
        f"public-PCA 2-D view: adaptive W1 {w1(z, yz):.3f} (s = {report.details.get('s')}, "
        f"depth {report.depth}), "
        f"uniform {w1(z, uz):.3f}, halves {w1(z[hz[: len(z) // 2]], z[hz[len(z) // 2 :]]):.3f}"
    )
    results["pca2"] = (yz, report)
    return {k: v[1] for k, v in results.items()}


if __name__ == "__main__":
    main()
