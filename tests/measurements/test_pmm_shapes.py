"""The paper's Figure 3 claim at depth 15: pruning keeps PMM's accuracy on the nine 2-D shapes."""

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.evaluation import SHAPES, sample_shape, w1
from opendp_wasserstein.measurements import make_pmm, make_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import paper_schedule


def _w1_of_subsamples(x, y, size, seed):
    """``w1_estimate(x, y, sample_size=size, repeats=1, seed=seed).value`` (the same subsamples,
    the same number) without the estimate's noise floor, a second transport problem this test
    does not read."""
    rng = np.random.default_rng(seed)
    xs = x[rng.choice(len(x), size, replace=False)] if len(x) > size else x
    ys = y[rng.choice(len(y), size, replace=False)] if len(y) > size else y
    return w1(xs, ys, metric="linf", max_points=size)


@pytest.mark.slow
def test_pruned_and_full_pmm_have_the_same_w1_on_the_shapes():
    n, depth = 30000, 15  # r = ceil(log2(eps n)) at eps = 1
    domain = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    scales = paper_schedule(2, 1.0, depth)
    ratios, visited = [], []
    for i, name in enumerate(SHAPES):
        x = sample_shape(name, n, seed=i)
        w = {}
        for label, mk in (("pruned", make_pruned_pmm), ("full", make_pmm)):
            meas = mk(domain, dp.change_one_distance(), depth, scales)
            assert meas.map(1) == 1.0
            with reproducible(100 + i), diagnostics() as records:
                y = meas(x)
            info = records[0]
            w[label] = _w1_of_subsamples(x, y, 2000, seed=i)
            visited.append((label, info["visited_nodes"]))
        ratios.append(w["pruned"] / w["full"])
    ratios = np.array(ratios)
    assert 0.9 <= ratios.mean() <= 1.1, ratios
    assert np.all((ratios > 0.7) & (ratios < 1.4)), ratios
    full = [v for label, v in visited if label == "full"]
    pruned = [v for label, v in visited if label == "pruned"]
    assert all(v == 2 ** (depth + 1) - 2 for v in full)  # every node but the public root
    assert max(pruned) < 2 ** (depth + 1) - 2
