"""Issue 10: every measurement the package exports releases nothing but what its proof releases.

Fixed-size releases (noisy trees, leaf masses, multiplicities, a selected index) pickle to the
same number of bytes whatever ``n`` is; synthetic-data releases are a bare float array of
their own.  No array reachable from a release equals the data, its grid codes or its counts.
"""

import math
import pickle

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein import measurements as M
from opendp_wasserstein.hierarchy.cells import grid_codes
from opendp_wasserstein.public_candidates.trees import quadtree
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import ambient_depth, paper_schedule
from opendp_wasserstein.transformations import (
    candidate_index_domain,
    make_dyadic_counts,
    make_tree_counts,
    tree_level_scales,
)

C = np.array([[0.1, 0.1], [0.5, 0.5], [0.9, 0.2], [0.3, 0.8]])
TREE = quadtree(C, bounds=(0.0, 1.0), seed=0)


def arr_dom(n):
    return dp.numpy.array2_domain(num_columns=2, size=n, T=float)


def fixed_size_release(name, n):
    """(measurement, data) for the fixed-size releases, on n identical rows."""
    x = np.full((n, 2), 0.3)
    sym = dp.symmetric_distance()
    if name == "tree_laplace":
        t = make_dyadic_counts(arr_dom(n), sym, 5, [1.0] + [1e-3] * 5)
        return t >> M.make_tree_laplace(t.output_domain, t.output_metric), x
    if name == "pruned_tree_laplace":
        t = make_dyadic_counts(arr_dom(n), sym, 5, [1.0] + [1e-3] * 5)
        return t >> M.make_pruned_tree_laplace(t.output_domain, t.output_metric), x
    if name == "tree_count_laplace":
        t = make_tree_counts(
            candidate_index_domain(len(C), n), sym, TREE, tree_level_scales(TREE, 1.0)
        )
        return t >> M.make_tree_count_laplace(t.output_domain, t.output_metric), np.zeros(
            n, dtype=np.int64
        )
    if name == "tree_projection":
        return M.make_tree_projection(arr_dom(n), sym, C, 10, 1.0, tree=TREE), x
    if name == "tree_em":
        return M.make_tree_em(arr_dom(n), sym, C, 10, 1.0, tree=TREE), x
    if name == "nn_histogram":
        return M.make_nn_histogram(arr_dom(n), sym, C, 10, 1.0), x
    if name in ("tree_gaussian", "pruned_tree_gaussian"):
        t = make_dyadic_counts(arr_dom(n), sym, 5, [1.0] + [1e-3] * 5, output_metric="l2sq")
        mk = M.make_tree_gaussian if name == "tree_gaussian" else M.make_pruned_tree_gaussian
        return t >> mk(t.output_domain, t.output_metric), x
    if name == "tree_count_gaussian":
        t = make_tree_counts(
            candidate_index_domain(len(C), n),
            sym,
            TREE,
            tree_level_scales(TREE, 1.0),
            output_metric="l2sq",
        )
        return t >> M.make_tree_count_gaussian(t.output_domain, t.output_metric), np.zeros(
            n, dtype=np.int64
        )
    if name == "exponential_selection":
        dom = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3)
        return M.make_exponential_selection(dom, dp.linf_distance(T=float), 1.0, 1.0), [
            float(n),
            0.0,
            1.0,
        ]
    raise AssertionError(name)


FIXED = [
    "tree_laplace",
    "pruned_tree_laplace",
    "tree_count_laplace",
    "tree_projection",
    "tree_em",
    "nn_histogram",
    "exponential_selection",
    "tree_gaussian",
    "pruned_tree_gaussian",
    "tree_count_gaussian",
]


@pytest.mark.parametrize("name", FIXED)
def test_fixed_size_release_does_not_grow_with_n(name):
    sizes = []
    for n in (10**3, 10**5):
        meas, data = fixed_size_release(name, n)
        if name == "nn_histogram":  # OpenDP's own noise: cannot be seeded, the shape is fixed
            release = meas(data)
        else:
            with reproducible(1):
                release = meas(data)
        sizes.append(len(pickle.dumps(release)))
    assert sizes[0] == sizes[1]


def _synthesizers(n):
    sym = dp.symmetric_distance()
    dom_unsized = dp.numpy.array2_domain(num_columns=2, T=float)

    def build(n_hat):
        depth = ambient_depth(0.9, n_hat)
        return M.make_pruned_pmm(
            dom_unsized,
            sym,
            depth,
            (math.inf, *paper_schedule(2, 0.9, depth)[1:]),
            output_size=n_hat,
        )

    return {
        "pruned_pmm": M.make_pruned_pmm(arr_dom(n), sym, 8, paper_schedule(2, 1.0, 8)),
        "pmm": M.make_pmm(arr_dom(n), sym, 6, paper_schedule(2, 1.0, 6)),
        "adaptive_pruned_pmm": M.make_adaptive_pruned_pmm(
            arr_dom(n), dp.change_one_distance(), 0.2, 0.8
        ),
        "noisy_size_then": M.make_noisy_size_then(
            dom_unsized, sym, 0.1, build, lambda d_in: d_in * 0.45
        ),
        "privtree": M.make_privtree(arr_dom(n), sym, 0.5, 0.5, 16),
    }


SYNTH = ["pruned_pmm", "pmm", "adaptive_pruned_pmm", "noisy_size_then", "privtree"]


@pytest.mark.parametrize("name", SYNTH)
def test_synthetic_release_is_a_bare_array_of_its_own(name):
    n = 500
    x = np.random.default_rng(0).uniform(size=(n, 2))
    with reproducible(2):
        y = _synthesizers(n)[name](x)
    assert type(y) is np.ndarray
    assert y.dtype == np.float64
    assert y.ndim == 2
    assert y.shape[1] == 2
    assert not np.shares_memory(y, x)
    rows = {tuple(r) for r in np.round(x, 15)}
    assert not any(tuple(r) in rows for r in np.round(y, 15))  # no input row is copied out


def test_every_exported_measurement_is_covered():
    exported = {n.removeprefix("make_") for n in M.__all__ if n.startswith("make_")}
    exported -= {"tree_multiset"}  # a post-processor (Function), not a measurement
    assert exported == set(FIXED) | set(SYNTH)


@pytest.mark.parametrize("name", [*FIXED[:2], "tree_gaussian", "pruned_tree_gaussian"])
def test_no_reachable_array_is_the_data_or_its_codes(name):
    x = np.random.default_rng(3).uniform(size=(200, 2))
    meas, _ = fixed_size_release(name, 200)
    release = meas(x)
    grid = np.sort(grid_codes(x, 5), axis=0)
    for value in vars(release).values():
        for arr in value if isinstance(value, tuple) else (value,):
            if isinstance(arr, np.ndarray):
                assert not np.shares_memory(arr, x)
                assert not (arr.shape == grid.shape and np.array_equal(np.sort(arr, axis=0), grid))
