import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats
from scipy.special import logsumexp

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import make_tree_em, then_tree_em
from opendp_wasserstein.public_candidates.trees import Tree, frt_tree
from opendp_wasserstein.runtime import reproducible

# candidates on a line; the tree: root -> {node 1 -> {leaf 3, leaf 4}, leaf 2}
# leaves in id order (2, 3, 4) are candidates 0, 1, 2
TREE = Tree([-1, 0, 0, 1, 1], [0, 2.0, 3.0, 0.5, 0.5])
C = np.array([[5.0], [0.0], [1.0]])


def dom(n=3, d=1):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def exact_output_law(x, m, eps, tree=TREE, cand=C):
    """Brute force over all multisets, from the data: project, count, score, normalise."""
    idx = np.argmin(np.abs(x[:, None, 0] - cand[None, :, 0]), axis=1)
    n = x.shape[0]
    a = tree.subtree_sums(np.bincount(idx, minlength=tree.k)) / n
    diam = tree.diameter()
    scores = {}
    for comb in itertools.combinations_with_replacement(range(tree.k), m):
        c = np.bincount(comb, minlength=tree.k)
        w1 = float(np.sum(tree.weight * np.abs(a - tree.subtree_sums(c) / m)))
        scores[tuple(c.tolist())] = -eps * n * w1 / (2 * diam)
    lz = logsumexp(list(scores.values()))
    return {c: math.exp(s - lz) for c, s in scores.items()}


@pytest.mark.parametrize("eps", [1.0, 0.3, 2.5, 0.7])
def test_map_is_exact(eps):
    sym = make_tree_em(dom(10), dp.symmetric_distance(), C, 3, eps, tree=TREE)
    assert sym.map(2) == eps
    assert sym.check(2, eps)
    assert not sym.check(2, math.nextafter(eps, 0))
    assert sym.map(4) == round_up(Fraction(eps) * 2)
    assert sym.map(3) == round_up(Fraction(eps) * Fraction(3, 2))
    one = make_tree_em(dom(10), dp.change_one_distance(), C, 3, eps, tree=TREE)
    assert one.map(1) == eps
    assert one.check(1, eps)
    assert not one.check(1, math.nextafter(eps, 0))
    assert one.map(3) == round_up(Fraction(eps) * 3)


def test_privacy_ratio_of_exact_laws_on_neighbours():
    """The exact output laws on replacement neighbours differ by at most e^eps (and the bound
    is nearly attained: the sensitivity diam(T)/n is reached when a record crosses the tree)."""
    eps = 1.0
    x = np.array([[0.1], [0.9], [4.0]])
    base = exact_output_law(x, 3, eps)
    worst_overall = 0.0
    for i in range(3):
        for new in ([5.2], [-0.3], [1.4], [2.9]):
            xn = x.copy()
            xn[i] = new
            other = exact_output_law(xn, 3, eps)
            assert set(other) == set(base)
            worst = max(max(base[c] / other[c], other[c] / base[c]) for c in base)
            assert worst <= math.exp(eps) * (1 + 1e-12)
            worst_overall = max(worst_overall, worst)
    assert worst_overall > math.exp(0.5 * eps)


def test_release_matches_exact_law():
    """Chi-square of the full pipeline (projection, counts, sampler) against enumeration."""
    x = np.array([[0.1], [0.9], [4.0]])
    law = exact_output_law(x, 3, 2.0)
    meas = make_tree_em(dom(3), dp.change_one_distance(), C, 3, 2.0, tree=TREE)  # secure
    runs = 1000
    observed: dict = {}
    for _ in range(runs):
        out = meas(x)
        assert out.dtype == np.int64
        assert out.shape == (3,)
        assert out.sum() == 3
        observed[tuple(out.tolist())] = observed.get(tuple(out.tolist()), 0) + 1
    keys = sorted(law, key=lambda c: -law[c])
    exp = np.array([law[c] * runs for c in keys])
    obs = np.array([observed.get(c, 0) for c in keys])
    assert obs.sum() == runs
    big = exp >= 5
    f_obs, f_exp = np.append(obs[big], obs[~big].sum()), np.append(exp[big], exp[~big].sum())
    if f_exp[-1] == 0:
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
    assert stats.chisquare(f_obs, f_exp * runs / f_exp.sum()).pvalue > 1e-4


def test_seed_reproduces_and_builds_a_tree():
    rng = np.random.default_rng(0)
    cand = rng.uniform(size=(40, 2))
    x = rng.normal(0.5, 0.1, size=(200, 2))
    d2 = dp.numpy.array2_domain(num_columns=2, size=200, T=float)
    with reproducible(7):
        a = make_tree_em(d2, dp.symmetric_distance(), cand, 25, 1.0)
        ra = a(x)
    with reproducible(7):
        b = make_tree_em(d2, dp.symmetric_distance(), cand, 25, 1.0)
        rb = b(x)
    assert np.array_equal(ra, rb)
    assert ra.sum() == 25
    secure = make_tree_em(d2, dp.symmetric_distance(), cand, 25, 1.0)
    draws = {tuple(secure(x).tolist()) for _ in range(5)}
    assert len(draws) > 1


def test_high_epsilon_concentrates_on_the_data():
    rng = np.random.default_rng(1)
    cand = rng.uniform(size=(30, 2))
    on = rng.choice(30, 3, replace=False)
    x = cand[np.repeat(on, [50, 30, 20])] + 1e-4
    d2 = dp.numpy.array2_domain(num_columns=2, size=100, T=float)
    tree = frt_tree(cand, seed=0)
    with reproducible(1):
        out = make_tree_em(d2, dp.symmetric_distance(), cand, 10, 1e4, tree=tree)(x)
    expected = np.zeros(30, dtype=np.int64)
    expected[on] = [5, 3, 2]
    assert np.array_equal(out, expected)


def test_then_partial_and_metrics():
    m = (dom(10), dp.symmetric_distance()) >> then_tree_em(C, 3, 1.0, tree=TREE)
    assert m.map(2) == 1.0
    for metric in ("l1", "linf"):
        meas = make_tree_em(dom(3), dp.symmetric_distance(), C, 2, 1.0, tree=TREE, metric=metric)
        assert meas(np.array([[0.1], [0.9], [4.0]])).sum() == 2


def test_unsized_domain_is_rejected():
    with pytest.raises(ValueError, match="public size"):
        make_tree_em(dom(None), dp.symmetric_distance(), C, 3, 1.0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"m": 0}, "m must be >= 1"),
        ({"m": -3}, "m must be >= 1"),
        ({"m": 2.0}, "m must be an integer"),
        ({"candidates": np.zeros((0, 1))}, "k >= 1"),
        ({"candidates": [[0.0], [np.nan]]}, "finite"),
        ({"candidates": [[0.0], [np.inf]]}, "finite"),
        ({"candidates": [[0.0], [1.0], [0.0]]}, "distinct"),
        ({"candidates": [[0.0, 1.0], [1.0, 1.0], [2.0, 2.0]]}, "1 columns"),
        ({"tree": Tree([-1, 0, 0], [0, 1.0, 1.0])}, "3 candidates but the tree has 2 leaves"),
        ({"tree": "frt"}, "tree"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"metric": "l3"}, "metric"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"candidates": C, "m": 3, "epsilon": 1.0, "tree": TREE} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        make_tree_em(dom(3), dp.symmetric_distance(), **args)


def test_bad_data_at_release():
    meas = make_tree_em(dom(3), dp.symmetric_distance(), C, 3, 1.0, tree=TREE)
    with pytest.raises(dp.OpenDPException, match="columns"):
        meas(np.zeros((3, 2)))
    with pytest.raises(dp.OpenDPException, match="rows"):
        meas(np.zeros((4, 1)))


def test_tree_em_requires_idealized_numerics():
    """Tree-EM samples its law in float64: like OpenDP's float extras it is gated."""
    import opendp.prelude as dp

    from opendp_wasserstein.measurements import make_tree_em

    dp.disable_features("idealized-numerics")
    try:
        with pytest.raises(dp.OpenDPException, match="idealized-numerics"):
            make_tree_em(
                dp.numpy.array2_domain(num_columns=1, size=5, T=float),
                dp.symmetric_distance(),
                candidates=[[0.0], [1.0]],
                m=2,
                epsilon=1.0,
            )
    finally:
        dp.enable_features("idealized-numerics")
