"""Chaining opendp-wasserstein with OpenDP itself.

1. Sequential composition of a Pruned-PMM release with an OpenDP noisy count.
2. ``dp.binary_search_chain``: the schedule multiplier that meets a target epsilon.
3. The Context API: every constructor of the package is registered with it on import (as
   OpenDP's own extras are), so a ``dp.Context`` that tracks the budget can query them.

Run: ``python examples/chaining_with_opendp.py``.
"""

from __future__ import annotations

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein.evaluation import sample_shape, w1
from opendp_wasserstein.measurements import make_pruned_pmm
from opendp_wasserstein.schedules.pure import paper_schedule
from opendp_wasserstein.transformations import make_row_count


def main(n: int = 4000, seed: int = 0) -> dict:
    dp.enable_features("contrib")
    x = sample_shape("spiral", n, seed=seed)
    out: dict = {}

    # 1. composition: synthetic data and a noisy count, n not public
    domain = dp.numpy.array2_domain(num_columns=2, T=float)
    metric = dp.symmetric_distance()
    synth = make_pruned_pmm(domain, metric, depth=12, scales=paper_schedule(2, 0.5, 12))
    count = make_row_count(domain, metric) >> dp.m.then_laplace(scale=4.0)
    both = dp.c.make_composition([synth, count])
    y, noisy_n = both(x)
    out["composition_epsilon"] = both.map(1)
    print(f"composition: eps = {both.map(1):.4f} for one added/removed record; noisy n = {noisy_n}")
    print(f"  synthetic rows {len(y)}, W1 to the data {w1(x, y[: min(len(y), 4000)]):.4f}")

    # 2. binary search: the smallest multiplier c of a base schedule with map(2) <= 0.7
    sized = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    base = np.array(paper_schedule(2, 1.0, 12))
    meas = dp.binary_search_chain(
        lambda c: make_pruned_pmm(sized, metric, 12, base * c), d_in=2, d_out=0.7
    )
    out["binary_search_epsilon"] = meas.map(2)
    print(f"binary search: multiplier found, map(2) = {meas.map(2):.6f} <= 0.7")

    # 3. the Context API (the constructors are registered when the package is imported)
    context = dp.Context.compositor(
        data=x,
        privacy_unit=dp.unit_of(contributions=2),  # one replacement on a sized domain
        privacy_loss=dp.loss_of(epsilon=2.0),
        split_evenly_over=2,
        domain=sized,
    )
    q1 = context.query().pruned_pmm(depth=10, scales=paper_schedule(2, 1.0, 10))
    q2 = context.query().adaptive_pruned_pmm(epsilon_select=0.2, epsilon_main=0.8)
    y1, y2 = q1.release(), q2.release()
    print(
        f"context API: two releases of {len(y1)} and {len(y2)} rows, W1 {w1(x, y1):.4f} and "
        f"{w1(x, y2):.4f}"
    )
    return out


if __name__ == "__main__":
    main()
