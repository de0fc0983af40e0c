"""One noise kernel per family, Laplace and Gaussian as thin shells (OpenDP's make_noise)."""

from __future__ import annotations

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein.measurements import (
    make_pruned_tree_gaussian,
    make_pruned_tree_laplace,
    make_tree_count_gaussian,
    make_tree_count_laplace,
    make_tree_gaussian,
    make_tree_laplace,
)
from opendp_wasserstein.measurements._tree_count_noise import make_tree_count_noise
from opendp_wasserstein.measurements._tree_noise import make_pruned_tree_noise, make_tree_noise
from opendp_wasserstein.public_candidates.trees import Tree
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.transformations import (
    candidate_index_domain,
    make_dyadic_counts,
    make_tree_counts,
)

X = np.random.default_rng(0).uniform(size=(100, 2))
TREE = Tree(parent=[-1, 0, 0, 1, 1], weight=[0, 1.0, 2.0, 0.5, 0.5])


def counts(metric: str):  # type: ignore[no-untyped-def]
    dp.enable_features("contrib")
    return make_dyadic_counts(
        dp.numpy.array2_domain(num_columns=2, size=100, T=float),
        dp.symmetric_distance(),
        depth=3,
        scales=[1.0, 4.0, 4.0, 4.0],
        output_metric=metric,
    )


@pytest.mark.parametrize(
    ("shell", "kernel", "distribution", "metric"),
    [
        (make_tree_laplace, make_tree_noise, "laplace", "l1"),
        (make_tree_gaussian, make_tree_noise, "gaussian", "l2sq"),
        (make_pruned_tree_laplace, make_pruned_tree_noise, "laplace", "l1"),
        (make_pruned_tree_gaussian, make_pruned_tree_noise, "gaussian", "l2sq"),
    ],
)
def test_the_shells_are_the_kernel(shell, kernel, distribution, metric):
    """Same map, same output measure and, in a reproducible run, the same release."""
    t = counts(metric)
    a = t >> shell(t.output_domain, t.output_metric)
    b = t >> kernel(t.output_domain, t.output_metric, distribution)
    assert a.map(2) == b.map(2)
    assert a.output_measure == b.output_measure
    with reproducible(4):
        ra = a(X)
    with reproducible(4):
        rb = b(X)
    assert repr(ra) == repr(rb)


def test_a_shell_refuses_the_other_distributions_metric():
    t = counts("l1")
    with pytest.raises(ValueError, match="expected a WeightedL2SqDistance"):
        make_tree_gaussian(t.output_domain, t.output_metric)
    t2 = counts("l2sq")
    with pytest.raises(ValueError, match="expected a WeightedL1Distance"):
        make_pruned_tree_laplace(t2.output_domain, t2.output_metric)


@pytest.mark.parametrize(
    ("shell", "distribution", "metric"),
    [(make_tree_count_laplace, "laplace", "l1"), (make_tree_count_gaussian, "gaussian", "l2sq")],
)
def test_the_tree_count_shells_are_the_kernel(shell, distribution, metric):
    dp.enable_features("contrib")
    t = make_tree_counts(
        candidate_index_domain(3, 30),
        dp.symmetric_distance(),
        TREE,
        [1.0, 2.0, 4.0],
        output_metric=metric,
    )
    a = t >> shell(t.output_domain, t.output_metric)
    b = t >> make_tree_count_noise(t.output_domain, t.output_metric, distribution)
    assert a.map(2) == b.map(2)
    idx = np.arange(30) % 3
    with reproducible(5):
        ra = a(idx)
    with reproducible(5):
        rb = b(idx)
    assert ra.noisy.tolist() == rb.noisy.tolist()
