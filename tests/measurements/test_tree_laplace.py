import math

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from opendp_wasserstein._random import RandomSource
from opendp_wasserstein.consistency import full_correction, pruned_correction
from opendp_wasserstein.measurements import make_tree_laplace, then_tree_laplace
from opendp_wasserstein.transformations import make_dyadic_counts

DOM = dp.numpy.array2_domain(num_columns=2, size=50, T=float)
X = np.random.default_rng(0).uniform(size=(50, 2))


def counts(depth=4, scales=None):
    return make_dyadic_counts(DOM, dp.symmetric_distance(), depth, scales or [2.0] * (depth + 1))


def lapz_pmf(z, scale):
    a = math.exp(-1 / scale)
    return (1 - a) / (1 + a) * np.exp(-np.abs(z) / scale)


def test_map_is_identity_on_l1s():
    t = counts()
    m = make_tree_laplace(t.output_domain, t.output_metric)
    assert m.map(0.75) == 0.75
    assert m.check(0.75, 0.75) and not m.check(0.75, math.nextafter(0.75, 0))
    chain = t >> m
    assert chain.map(2) == t.map(2) == 2 * 4 * 0.5


def test_then_and_domain_checks():
    t = counts()
    chain = t >> then_tree_laplace(seed=1)
    assert chain.map(2) == 4.0
    with pytest.raises(ValueError, match="domain"):
        make_tree_laplace(DOM, t.output_metric)
    other = counts(depth=3)
    with pytest.raises(ValueError, match="scales"):
        make_tree_laplace(t.output_domain, other.output_metric)
    with pytest.raises(ValueError, match="backend"):
        make_tree_laplace(t.output_domain, t.output_metric, backend="gauss")


def test_lazy_noise_is_fixed_once_drawn():
    t = counts()
    noisy = make_tree_laplace(t.output_domain, t.output_metric)(t(X))
    ch1, c1 = noisy.children(0, np.array([0]))
    ch2, c2 = noisy.children(0, np.array([0, 0]))
    assert np.array_equal(c1[0], c2[0]) and np.array_equal(c2[0], c2[1])
    visited = noisy.visited
    noisy.children(1, ch1[0])
    noisy.children(1, ch1[0])
    assert noisy.visited == visited + 4
    with pytest.raises(IndexError):
        noisy.children(2, np.array([99]))
    with pytest.raises(ValueError, match="level"):
        noisy.children(4, np.array([0]))


@pytest.mark.parametrize("backend,scale,runs", [("fast", 3.0, 20000), ("opendp", 1.7, 3000)])
def test_node_noise_follows_lapz(backend, scale, runs):
    """Chi-square of the drawn noise (noisy - exact count) at a level against the LapZ pmf."""
    t = counts(depth=6, scales=[1.0] + [scale] * 6)
    tree = t(X)
    m = make_tree_laplace(t.output_domain, t.output_metric, backend=backend)
    noise = []
    while len(noise) < runs:
        noisy = m(tree)
        handles = np.zeros(1, dtype=np.int64)
        for level in range(5):  # every node of levels 1..5
            ch, _ = noisy.children(level, handles)
            handles = ch.reshape(-1)
        lvl = noisy._levels[5]
        noise.extend((lvl.noisy - (lvl.hi - lvl.lo)).tolist())
    z = np.array(noise)
    support = np.arange(-12, 13)
    obs = np.array([np.sum(z == v) for v in support] + [np.sum(np.abs(z) > 12)])
    p = lapz_pmf(support, scale)
    exp = np.append(p, 1 - p.sum()) * z.size
    assert stats.chisquare(obs, exp).pvalue > 1e-4


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 3), st.integers(1, 9), st.sampled_from([0.5, 2.0, 30.0]))
def test_corrections_consistent_on_whole_trees(seed, d, depth, scale):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    x = rng.uniform(size=(n, d)) ** 2
    domain = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
    t = make_dyadic_counts(domain, dp.symmetric_distance(), depth, [scale] * (depth + 1))
    m = make_tree_laplace(t.output_domain, t.output_metric, seed=seed)
    leaves = pruned_correction(m(t(x)), n, RandomSource(seed))
    assert leaves.total == n and np.all(leaves.masses > 0)
    assert leaves.visited <= 1 + 2 * n * depth
    assert len(np.unique(leaves.cells, axis=0)) == len(leaves.cells)
    assert np.all(leaves.cells >= 0)
    full = full_correction(m(t(x)), n)
    assert full.total == n and np.all(full.masses > 0)
