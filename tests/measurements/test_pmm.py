import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.hierarchy.traversal import comparable_split, zero_respecting_split
from opendp_wasserstein.measurements import make_pmm, make_pruned_pmm, then_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible, sampler
from opendp_wasserstein.schedules.pure import budget_of, paper_schedule
from opendp_wasserstein.transformations import make_row_count

from .exact_pmm import counts_of, leaf_law


def dom(n=None, d=2):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm])
@pytest.mark.parametrize("eps", [1.0, 0.3, 2.5])
def test_map_equals_epsilon_with_paper_schedule(mk, eps):
    sigma = paper_schedule(2, eps, 10, 2)
    sym = mk(dom(100), dp.symmetric_distance(), 10, sigma)
    assert sym.map(2) == eps
    assert sym.check(2, eps)
    assert not sym.check(2, math.nextafter(eps, 0))
    one = mk(dom(100), dp.change_one_distance(), 10, sigma)
    assert one.map(1) == eps
    assert one.check(1, eps)
    assert not one.check(1, math.nextafter(eps, 0))
    exact3 = 6 * sum(Fraction(1) / Fraction(s) for s in sigma[1:])
    assert one.map(3) == round_up(exact3)
    assert one.map(3) == pytest.approx(3 * eps, rel=1e-15)


def test_unsized_map_charges_root():
    sigma = paper_schedule(2, 1.0, 6)  # sigma_0 = 1
    m = make_pruned_pmm(dom(None), dp.symmetric_distance(), 6, sigma)
    assert m.map(1) == 0.5 + 1.0  # d_in/sigma_0 + d_in * (eps/2)
    assert m.map(2) == 3.0


def test_hand_computed_map():
    m = make_pruned_pmm(dom(8), dp.change_one_distance(), 2, [9.0, 4.0, 8.0])
    assert m.map(1) == 2 * (1 / 4 + 1 / 8)  # 0.75, exact in binary


@pytest.mark.parametrize("pruned", [True, False])
def test_exact_privacy_ratio_depth_two(pruned):
    """The exact leaf-mass laws on neighbouring 3-point datasets differ by at most e^eps."""
    eps = 1.0
    scales = paper_schedule(2, eps, 2)
    x = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])
    neighbours = [x.copy() for _ in range(3)]
    neighbours[0][0] = [0.9, 0.9]  # to the far corner, across both splits
    neighbours[1][1] = [0.6, 0.6]  # into an empty cell
    neighbours[2][2] = [0.3, 0.3]  # across the root split
    base = leaf_law(*counts_of(x), 3, scales, pruned)
    for xn in neighbours:
        other = leaf_law(*counts_of(xn), 3, scales, pruned)
        assert set(base) == set(other)
        worst = max(max(base[o] / other[o], other[o] / base[o]) for o in base)
        assert worst <= math.exp(eps) * (1 + 1e-9)
        assert worst > math.exp(eps * 0.3)  # the bound is not vacuous here


@pytest.mark.parametrize("pruned", [True, False])
@pytest.mark.slow
def test_implementation_matches_exact_law(pruned):
    """Chi-square of the released leaf masses against the exact law (depth 2, n = 3)."""
    scales = paper_schedule(2, 1.0, 2)
    x = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])
    law = leaf_law(*counts_of(x), 3, scales, pruned)
    mk = make_pruned_pmm if pruned else make_pmm
    runs = 4000
    observed: dict[tuple[int, ...], int] = {o: 0 for o in law}
    meas = mk(dom(3), dp.symmetric_distance(), 2, scales)
    for seed in range(runs):
        with reproducible(seed):
            y = meas(x)
        cx = (y[:, 0] > 0.5).astype(int) * 2 + (y[:, 1] > 0.5).astype(int)
        observed[tuple(np.bincount(cx, minlength=4).tolist())] += 1
    keys = sorted(law, key=lambda o: -law[o])
    exp = np.array([law[o] * runs for o in keys])
    obs = np.array([observed[o] for o in keys])
    big = exp >= 5
    f_obs, f_exp = obs[big], exp[big]
    if exp[~big].sum() > 0:
        f_obs, f_exp = np.append(f_obs, obs[~big].sum()), np.append(f_exp, exp[~big].sum())
    f_exp *= f_obs.sum() / f_exp.sum()
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-4


def test_visited_nodes_bound_and_size():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2000, 2)) * 0.3
    r = 12
    meas = make_pruned_pmm(dom(2000), dp.symmetric_distance(), r, paper_schedule(2, 1.0, r))
    with reproducible(1), diagnostics() as records:
        y = meas(x)
    (info,) = records
    m = y.shape[0]
    assert m == 2000  # public size is the root mass
    assert info["visited_nodes"] <= 2 * m * r  # the root is not noised when n is public
    assert info["visited_nodes"] == 2 * sum(info["active_nodes"][:-1])
    assert np.all((y >= 0) & (y <= 1))


def test_unsized_root_mass_is_noisy_and_positive():
    x = np.full((50, 2), 0.25)
    meas = make_pruned_pmm(dom(None), dp.symmetric_distance(), 4, paper_schedule(2, 1.0, 4))
    sizes = set()
    for seed in range(20):
        with reproducible(seed), diagnostics() as records:
            y = meas(x)
        assert y.shape[0] >= 1
        assert records[0]["visited_nodes"] == 1 + 2 * sum(records[0]["active_nodes"][:-1])
        sizes.add(y.shape[0])
    assert len(sizes) > 1  # the noisy root count, not n, sets the size


def test_full_pmm_visits_every_node():
    x = np.full((50, 2), 0.25)
    meas = make_pmm(dom(50), dp.symmetric_distance(), 6, paper_schedule(2, 1.0, 6))
    with reproducible(0), diagnostics() as records:
        y = meas(x)
    assert records[0]["visited_nodes"] == 2**7 - 2  # every node but the public root
    assert y.shape == (50, 2)


def test_placements_and_bounds():
    x = np.array([[10.0, -3.0], [11.0, -2.0], [19.0, 0.0]])
    for placement in ("center", "uniform"):
        meas = make_pruned_pmm(
            dom(3),
            dp.symmetric_distance(),
            6,
            paper_schedule(2, 1.0, 6),
            bounds={"lower": [10, -3], "upper": [20, 1]},
            placement=placement,
        )
        with reproducible(4):
            y = meas(x)
        assert y.shape == (3, 2)
        assert np.all(y >= [10, -3])
        assert np.all(y <= [20, 1])
    with pytest.raises(ValueError, match="placement"):
        make_pruned_pmm(
            dom(3), dp.symmetric_distance(), 6, paper_schedule(2, 1.0, 6), placement="corner"
        )


def test_center_placement_hits_cell_centres():
    x = np.full((40, 1), 0.3)
    meas = make_pruned_pmm(dom(40, d=1), dp.symmetric_distance(), 3, paper_schedule(1, 1.0, 3))
    y = meas(x)
    assert set(np.round(y[:, 0] * 16).astype(int).tolist()) <= {1, 3, 5, 7, 9, 11, 13, 15}


def test_seed_reproduces_and_input_untouched():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=(300, 2))
    keep = x.copy()
    m1 = make_pruned_pmm(
        dom(300), dp.symmetric_distance(), 10, paper_schedule(2, 1.0, 10), placement="uniform"
    )
    with reproducible(42):
        a = m1(x)
    with reproducible(42):
        b = m1(x)
    assert np.array_equal(a, b)
    assert np.array_equal(x, keep)
    with reproducible(43):
        c = m1(x)
    assert not np.array_equal(a, c)


def test_secure_default_differs_between_releases():
    x = np.random.default_rng(5).uniform(size=(300, 2))
    m = make_pruned_pmm(
        dom(300), dp.symmetric_distance(), 10, paper_schedule(2, 1.0, 10), placement="uniform"
    )
    assert not np.array_equal(m(x), m(x))


def test_opendp_backend_runs():
    x = np.random.default_rng(5).uniform(size=(100, 2))
    m = make_pruned_pmm(dom(100), dp.symmetric_distance(), 5, paper_schedule(2, 1.0, 5))
    with sampler("opendp"):
        assert m(x).shape == (100, 2)
    with pytest.raises(ValueError, match="sampler"), sampler("numpy"):
        pass


def test_composes_with_opendp_count():
    d_unsized = dom(None)
    count = make_row_count(d_unsized, dp.symmetric_distance()) >> dp.m.then_laplace(scale=2.0)
    pmm = make_pruned_pmm(d_unsized, dp.symmetric_distance(), 6, paper_schedule(2, 1.0, 6))
    comp = dp.c.make_composition([pmm, count])
    expected = pmm.map(1) + count.map(1)
    assert comp.map(1) == pytest.approx(expected, rel=1e-12)
    assert comp.map(1) >= expected
    x = np.random.default_rng(0).uniform(size=(64, 2))
    synth, noisy_count = comp(x)
    assert synth.shape[1] == 2
    assert isinstance(noisy_count, int)


def test_binary_search_for_scale_multiplier():
    """Find the schedule multiplier c with map(2) <= 0.5 for sigma = c * paper_schedule(eps=1)."""
    base = np.array(paper_schedule(2, 1.0, 8))

    def chain(c: float):
        return make_pruned_pmm(dom(100), dp.symmetric_distance(), 8, base * c)

    meas = dp.binary_search_chain(chain, d_in=2, d_out=0.5)
    assert meas.map(2) <= 0.5
    assert meas.map(2) == pytest.approx(0.5, rel=1e-6)


def test_then_partial():
    m = (dom(10), dp.symmetric_distance()) >> then_pruned_pmm(4, paper_schedule(2, 1.0, 4))
    assert m.map(2) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 500), st.integers(0, 600), st.integers(0, 600), st.integers(0, 1)),
        min_size=1,
        max_size=30,
    ),
)
def test_corrections_are_consistent_nonnegative_zero_respecting_comparable(rows):
    """Each row: parent mass, the two truncated noisy counts, and that node's fair coin."""
    mass, a, b, coin = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
    both = (a == 0) & (b == 0)
    coins = coin[both]  # one coin per node whose children are both zero, in order
    m0 = zero_respecting_split(mass, a, b, coins)
    m1 = mass - m0
    assert np.all(m0 >= 0)
    assert np.all(m1 >= 0)
    # zero-respecting: exactly one zero -> that child gets nothing
    assert np.all(m0[(a == 0) & (b > 0)] == 0)
    assert np.all(m1[(b == 0) & (a > 0)] == 0)
    both = (a == 0) & (b == 0)
    assert np.all((m0[both] == 0) | (m1[both] == 0))
    # comparable to (a, b) where not both zero
    c0 = comparable_split(mass, a, b)
    c1 = mass - c0
    le = (c0 <= a) & (c1 <= b)
    ge = (c0 >= a) & (c1 >= b)
    assert np.all((le | ge)[~both])
    assert np.array_equal(m0[~both], c0[~both])


def test_budget_of_paper_schedules_is_exact():
    for d, eps, depth, s in [(2, 1.0, 15, 1), (10, 0.9, 149, 3), (3, 0.1, 40, 3), (5, 7.3, 60, 5)]:
        sigma = paper_schedule(d, eps, depth, s)
        assert len(sigma) == depth + 1
        assert sigma[0] == 1 / eps
        assert budget_of(sigma) == eps


def test_full_pmm_refuses_depths_that_exhaust_memory(monkeypatch):
    with pytest.raises(ValueError, match=r"full tree at depth 40 .*memory"):
        make_pmm(dom(100), dp.symmetric_distance(), 40, paper_schedule(2, 1.0, 40))
    monkeypatch.setenv("OPENDP_WASSERSTEIN_MEMORY_LIMIT", str(2**20))
    with pytest.raises(ValueError, match="MiB"):
        make_pmm(dom(100), dp.symmetric_distance(), 14, paper_schedule(2, 1.0, 14))
    # the pruned mechanism has no 2^depth term: deep hierarchies are fine
    x = np.random.default_rng(0).uniform(size=(100, 2))
    meas = make_pruned_pmm(dom(100), dp.symmetric_distance(), 100, paper_schedule(2, 1.0, 100))
    assert meas(x).shape == (100, 2)


def test_comparable_split_is_exact_beyond_int64_products():
    """M * a can pass 2^63 when noise is large: the split must stay exact (issue 10)."""
    mass = np.array([10**6, 7, 2**40], dtype=np.int64)
    a = np.array([2**61, 3, 2**60], dtype=np.int64)
    b = np.array([2**60, 0, 2**61 - 5], dtype=np.int64)
    got = comparable_split(mass, a, b)
    want = [int(m) * int(x) // (int(x) + int(y)) for m, x, y in zip(mass, a, b, strict=True)]
    assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 8),
    st.lists(st.floats(1e-3, 2.0**52), min_size=9, max_size=9),
    st.sampled_from(["fast", "opendp"]),
)
@pytest.mark.slow
def test_sized_releases_have_exactly_n_rows_at_every_accepted_scale(n, scales, backend):
    """Every scale the constructors accept keeps counts, noise and masses exact (issue 10)."""
    depth = 3
    sigma = scales[: depth + 1]
    x = np.linspace(0.05, 0.95, 2 * n).reshape(n, 2)
    for mk in (make_pruned_pmm, make_pmm):
        meas = mk(dom(n), dp.symmetric_distance(), depth, sigma)
        with sampler(backend):
            assert meas(x).shape == (n, 2)


def test_pruned_release_holds_only_the_synthetic_rows():
    x = np.random.default_rng(0).uniform(size=(100, 2))
    meas = make_pruned_pmm(dom(100), dp.symmetric_distance(), 8, paper_schedule(2, 1.0, 8))
    y = meas(x)
    assert type(y) is np.ndarray
    assert y.shape == (100, 2)
    assert y.base is None or not np.shares_memory(y, x)


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm])
def test_split_order_release_lies_in_its_cells(mk):
    """With axes (1, 1, 1, 0): level 3 cells are 1/8 wide in y and 1/2 in x; centre placement
    puts every point at a centre of that grid; the map is the same as with the cyclic order."""
    axes = (1, 1, 1, 0)
    scales = paper_schedule(2, 1.0, 4)
    x = np.random.default_rng(0).uniform(size=(300, 2))
    meas = mk(dom(300), dp.change_one_distance(), 4, scales, axes=axes)
    assert meas.map(1) == mk(dom(300), dp.change_one_distance(), 4, scales).map(1) == 1.0
    with reproducible(2):
        y = meas(x)
    assert y.shape == (300, 2)
    assert set(np.unique(y[:, 0])) <= {0.25, 0.75}
    assert set(np.unique(y[:, 1])) <= {(i + 0.5) / 8 for i in range(8)}
