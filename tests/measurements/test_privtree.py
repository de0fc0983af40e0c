"""PrivTree with exact discrete noise (``make_privtree``): maps, the exact privacy ratio of the
tree structure on tiny inputs, the law of the split decisions, the release."""

import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.hierarchy.cells import CountTree
from opendp_wasserstein.measurements import make_privtree
from opendp_wasserstein.measurements._privtree import grow, privtree_parameters, split_probability
from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise
from opendp_wasserstein.runtime import diagnostics, reproducible


def dom(n=None, d=1):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def test_parameters_spend_the_budgets():
    lam, delta, sigma_c = privtree_parameters(0.3, 0.2)
    assert Fraction(3) / Fraction(lam) <= Fraction(0.3)
    assert 1 / Fraction(sigma_c) <= Fraction(0.2)
    assert delta == math.ceil(lam * math.log(2))
    assert math.exp(-delta / lam) <= 0.5  # the bias halves the tail per level (proof, Lemma 2)


def test_maps_exact():
    lam, _, sigma_c = privtree_parameters(0.25, 0.25)
    per_record = Fraction(3) / Fraction(lam) + 1 / Fraction(sigma_c)
    unsized = make_privtree(dom(None, 2), dp.symmetric_distance(), 0.25, 0.25, 10)
    assert unsized.map(1) == round_up(per_record) == 0.5
    assert unsized.map(3) == round_up(3 * per_record)
    sized = make_privtree(dom(100, 2), dp.change_one_distance(), 0.25, 0.25, 10)
    assert sized.map(1) == 1.0
    assert sized.check(1, 1.0)
    assert not sized.check(1, math.nextafter(1.0, 0))
    assert make_privtree(dom(100, 2), dp.symmetric_distance(), 0.25, 0.25, 10).map(2) == 1.0


def tree_probabilities(x, depth, lam, delta, theta):
    """The exact law of the PrivTree structure of 1-D data ``x`` (levels 0 .. depth): every tree
    as a frozenset of split cells (level, index), with its probability."""
    x = np.asarray(x, dtype=np.float64)

    def count(level, idx):
        lo, hi = idx / 2**level, (idx + 1) / 2**level
        return int(((x >= lo) & ((x < hi) | ((hi == 1.0) & (x == 1.0)))).sum())

    def p_split(level, idx):
        b = max(count(level, idx) - level * delta, theta - delta)
        return float(split_probability(np.array([b]), theta, lam)[0])

    def trees(level, idx):
        """[(split cells, probability)] of the subtree at (level, idx)."""
        if level == depth:
            return [(frozenset(), 1.0)]
        p = p_split(level, idx)
        out = [(frozenset(), 1.0 - p)]
        for (a, pa), (b, pb) in itertools.product(
            trees(level + 1, 2 * idx), trees(level + 1, 2 * idx + 1)
        ):
            out.append((a | b | {(level, idx)}, p * pa * pb))
        return out

    law = dict(trees(0, 0))
    assert math.isclose(sum(law.values()), 1.0, rel_tol=1e-12)
    return law


@pytest.mark.parametrize("eps_tree,theta", [(1.5, 0), (1.5, 2), (0.6, 0), (3.0, -1)])
def test_structure_privacy_ratio_is_within_3_over_lambda(eps_tree, theta):
    """Neighbours D and D + {y}: for every tree, |ln P(T | D) - ln P(T | D')| <= 3 / lambda.
    Counts near the threshold on a whole path are where the bound is approached."""
    lam, delta, _ = privtree_parameters(eps_tree, 1.0)
    rng = np.random.default_rng(int(eps_tree * 10) + theta)
    worst = 0.0
    for trial in range(60):
        n = int(rng.integers(0, 3 * delta + 8))
        # clustered data, so the counts along a path stay near theta + l delta
        x = np.clip(rng.normal(rng.uniform(), 0.05, size=n), 0, 1)
        y = float(np.clip(rng.normal(x.mean() if n else 0.5, 0.05), 0, 1))
        p = tree_probabilities(x, 3, lam, delta, theta)
        q = tree_probabilities(np.append(x, y), 3, lam, delta, theta)
        assert p.keys() == q.keys()
        loss = max(abs(math.log(p[t]) - math.log(q[t])) for t in p)
        worst = max(worst, loss)
        assert loss <= 3 / lam * (1 + 1e-12), (trial, loss, 3 / lam)
    assert worst > 1 / lam  # the bound is not vacuous: more than one level's worth is reached


def test_split_decisions_follow_their_exact_law():
    """The release's trees (node-keyed exact noise, 4000 seeded keys) against the exact law."""
    lam, delta, _ = privtree_parameters(1.5, 1.0)
    x = np.array([0.1, 0.12, 0.13, 0.6, 0.9, 0.92])
    law = tree_probabilities(x, 2, lam, delta, 0)
    tree = CountTree(x[:, None], 2)
    seen = {}
    for s in range(4000):
        leaves = grow(tree, 2, lam, delta, 0, KeyedNodeNoise(s.to_bytes(32, "little")))
        split = set()
        for level, cells, _ in leaves:  # a leaf at level l: its ancestors split
            for idx in cells[:, 0].tolist():
                split |= {(lv, idx >> (level - lv)) for lv in range(level)}
        key = frozenset(split)
        seen[key] = seen.get(key, 0) + 1
    keys = sorted(law, key=lambda t: sorted(t))
    expected = np.array([law[k] for k in keys]) * 4000
    observed = np.array([seen.get(k, 0) for k in keys])
    assert sum(seen.values()) == observed.sum()  # no tree outside the law's support
    keep = expected >= 5
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    rest_o, rest_e = observed[~keep].sum(), expected[~keep].sum()
    if rest_e > 0:
        chi2 += (rest_o - rest_e) ** 2 / rest_e
    dof = int(keep.sum()) - (0 if rest_e > 0 else 1)
    assert stats.chi2.sf(chi2, dof) > 1e-6


def test_release_shape_size_and_box():
    x = np.random.default_rng(0).uniform(-1, 3, size=(2000, 2))
    meas = make_privtree(dom(2000, 2), dp.change_one_distance(), 0.5, 0.5, 16, bounds=(-1.0, 3.0))
    with reproducible(3), diagnostics() as records:
        y = meas(x)
    assert y.shape == (2000, 2)
    assert y.min() >= -1.0
    assert y.max() <= 3.0
    assert records[-1]["leaves"] >= 1
    unsized = make_privtree(
        dom(None, 2), dp.symmetric_distance(), 0.5, 0.5, 16, bounds=(-1.0, 3.0), placement="center"
    )
    with reproducible(3):
        z = unsized(x)
    assert z.shape[1] == 2
    assert abs(len(z) - 2000) < 200  # the noisy leaf counts, summed
    with reproducible(3):
        assert np.array_equal(meas(x), y)  # seeded: reproducible (not private)


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="epsilon_tree"):
        make_privtree(dom(10), dp.change_one_distance(), 0.0, 0.5, 5)
    with pytest.raises(ValueError, match="epsilon_counts"):
        make_privtree(dom(10), dp.change_one_distance(), 0.5, -1.0, 5)
    with pytest.raises(ValueError, match="max_depth"):
        make_privtree(dom(10), dp.change_one_distance(), 0.5, 0.5, 0)
    with pytest.raises(TypeError, match="max_depth"):
        make_privtree(dom(10), dp.change_one_distance(), 0.5, 0.5, 2.5)
    with pytest.raises(ValueError, match="theta"):
        make_privtree(dom(10), dp.change_one_distance(), 0.5, 0.5, 5, theta=0.5)
    with pytest.raises(ValueError, match="placement"):
        make_privtree(dom(10), dp.change_one_distance(), 0.5, 0.5, 5, placement="edge")
