"""Layer 2: every map the package computes equals ``round_up`` of the extracted Coq map, exactly.

The Coq definitions (formal/theories/Maps.v) carry soundness theorems: their value is the
exponent of the proved bound.  Hypothesis draws domains (dimension, public size or not),
metrics, depths, float scales over the whole accepted range, infinite roots and distances; the
Python map must equal ``round_up`` of the extracted exact rational on every draw.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.formal import package as pkg

dp.enable_features("contrib", "idealized-numerics")

#: examples per property: the per-change tier (CI) draws 25, ``FORMAL_EXAMPLES=300`` the long tier
EXAMPLES = int(os.environ.get("FORMAL_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

scale = st.one_of(
    st.floats(min_value=1e-100, max_value=2.0**52, allow_nan=False, allow_infinity=False),
    st.sampled_from([1.0, 2.0, 4.0, 0.5, 3.0, 1e-100, 2.0**52, 0.1]),
)
eps = st.one_of(st.floats(min_value=1e-6, max_value=1e3), st.sampled_from([1.0, 0.5, 0.1, 2.0]))


@st.composite
def setting(draw: st.DrawFn, allow_unsized: bool = True) -> tuple[int, int | None, bool]:
    """``(d, n, symmetric)``: dimension, public size (None: private) and metric."""
    d = draw(st.integers(1, 3))
    n = (
        draw(st.one_of(st.none(), st.integers(1, 200)))
        if allow_unsized
        else draw(st.integers(1, 200))
    )
    sym = True if n is None else draw(st.booleans())
    return d, n, sym


def domain(d: int, n: int | None):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def metric(sym: bool):
    return dp.symmetric_distance() if sym else dp.change_one_distance()


@SETTINGS
@given(setting(), st.integers(1, 6), st.data())
def test_dyadic_counts_l1_and_the_pmm_family(maps, s, depth, data):
    d, n, sym = s
    root = data.draw(st.one_of(st.just(math.inf), scale))
    levels = data.draw(st.lists(scale, min_size=depth, max_size=depth))
    d_in = data.draw(st.integers(0, 40))
    scales = [root, *levels]
    exact = maps.hier_l1(sym, n is not None, root, levels, d_in)
    t = pkg.T.make_dyadic_counts(domain(d, n), metric(sym), depth, scales)
    assert t.map(d_in) == pkg.round_up(exact)
    size = 7 if n is None and math.isinf(root) else None
    assert pkg.M.make_pruned_pmm(domain(d, n), metric(sym), depth, scales, output_size=size).map(
        d_in
    ) == pkg.round_up(exact)
    if depth <= 4:
        assert pkg.M.make_pmm(domain(d, n), metric(sym), depth, scales, output_size=size).map(
            d_in
        ) == pkg.round_up(exact)


@SETTINGS
@given(setting(), st.integers(1, 5), st.data())
def test_dyadic_counts_l2sq_and_gaussian(maps, s, depth, data):
    d, n, sym = s
    root = data.draw(st.one_of(st.just(math.inf), scale))
    levels = data.draw(st.lists(scale, min_size=depth, max_size=depth))
    d_in = data.draw(st.integers(0, 40))
    exact = maps.hier_l2(sym, n is not None, root, levels, d_in)
    t = pkg.T.make_dyadic_counts(
        domain(d, n), metric(sym), depth, [root, *levels], output_metric="l2sq"
    )
    assert t.map(d_in) == pkg.round_up(exact)
    g = pkg.M.make_tree_gaussian(t.output_domain, t.output_metric)
    out = t.map(d_in)
    assert g.map(out) == pkg.round_up(maps.zcdp(out))


def random_tree(rng: np.random.Generator, nodes: int):
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, nodes)]
    weight = [0.0] + [float(rng.uniform(0.1, 2.0)) for _ in range(1, nodes)]
    return pkg.Tree(parent=parent, weight=weight)


@SETTINGS
@given(setting(), st.integers(2, 14), st.integers(0, 2**32 - 1), st.data())
def test_tree_counts_l1_l2sq_and_projection(maps, s, nodes, seed, data):
    d, n, sym = s
    tree = random_tree(np.random.default_rng(seed), nodes)
    h = tree.height
    scales = data.draw(st.lists(scale, min_size=h + 1, max_size=h + 1))
    d_in = data.draw(st.integers(0, 30))
    k = tree.k
    cands = np.arange(k, dtype=float)[:, None] * np.ones((1, d))
    near = pkg.T.make_nearest_candidate(domain(d, n), metric(sym), cands)
    assert near.map(d_in) == maps.identity(d_in)
    t1 = pkg.T.make_tree_counts(near.output_domain, near.output_metric, tree, scales)
    assert t1.map(d_in) == pkg.round_up(
        maps.hier_l1(sym, n is not None, scales[0], scales[1:], d_in)
    )
    t2 = pkg.T.make_tree_counts(
        near.output_domain, near.output_metric, tree, scales, output_metric="l2sq"
    )
    exact = maps.tree_l2(
        sym, n is not None, d_in, tree.parent.tolist(), tree.leaves.tolist(), scales
    )
    assert t2.map(d_in) == pkg.round_up(exact)
    lap = pkg.M.make_tree_count_laplace(t1.output_domain, t1.output_metric)
    assert lap.map(t1.map(d_in)) == pkg.round_up(maps.identity(t1.map(d_in)))


@SETTINGS
@given(
    st.integers(2, 6),
    eps,
    st.floats(min_value=1e-6, max_value=1e3),
    st.floats(min_value=0.0, max_value=1e3),
)
def test_exponential_selection(maps, k, epsilon, sensitivity, d_in):
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=k)
    m = pkg.M.make_exponential_selection(vec, dp.linf_distance(T=float), epsilon, sensitivity)
    beta = pkg.round_up(2 * Fraction(sensitivity) / Fraction(epsilon))  # the page's calibration
    assert m.map(d_in) == pkg.round_up(maps.expsel(beta, d_in))
    assert m.map(sensitivity) <= epsilon  # the postcondition (Mechanisms.selection_calibration)


@SETTINGS
@given(setting(allow_unsized=False), eps, st.integers(0, 30))
def test_tree_em(maps, s, epsilon, d_in):
    d, n, sym = s
    cands = np.array([[0.0] * d, [1.0] * d, [0.5] * d])
    m = pkg.M.make_tree_em(domain(d, n), metric(sym), cands, 3, epsilon)
    assert m.map(d_in) == pkg.round_up(maps.tree_em(epsilon, sym, d_in))


@SETTINGS
@given(setting(), eps, eps, st.integers(0, 30))
def test_privtree(maps, s, e_tree, e_counts, d_in):
    d, n, sym = s
    m = pkg.M.make_privtree(domain(d, n), metric(sym), e_tree, e_counts, 4)
    lam, _, sc = pkg.privtree_parameters(e_tree, e_counts)
    assert m.map(d_in) == pkg.round_up(maps.privtree(lam, sc, sym, n is not None, d_in))


@SETTINGS
@given(st.integers(1, 3), eps, st.integers(0, 30), st.floats(min_value=0.0, max_value=10.0))
def test_noisy_size_then(maps, d, eps_size, d_in, per_record):
    dom = domain(d, None)

    def build(k):
        return pkg.M.make_pruned_pmm(
            dom, dp.symmetric_distance(), 1, (math.inf, 4.0), output_size=k
        )

    def bound(x):
        return pkg.round_up(Fraction(x) * Fraction(1, 4) + Fraction(per_record) * 0)

    m = pkg.M.make_noisy_size_then(dom, dp.symmetric_distance(), eps_size, build, bound)
    count = pkg.T.make_row_count(dom, dp.symmetric_distance()) >> dp.m.then_laplace(
        scale=pkg.round_up(1 / Fraction(eps_size))
    )
    assert m.map(d_in) == pkg.round_up(maps.noisy_size(count.map(d_in), bound(d_in)))
    assert count.map(d_in) >= maps.identity(
        Fraction(d_in) / Fraction(pkg.round_up(1 / Fraction(eps_size)))
    )


@SETTINGS
@given(setting(), st.integers(1, 8), st.integers(0, 40))
def test_occupancy_row_count(maps, s, depth, d_in):
    d, n, sym = s
    t = pkg.T.make_occupancy(domain(d, n), metric(sym), depth)
    assert t.map(d_in) == maps.occupancy(sym, n is not None, d_in)
    if n is None:
        assert pkg.T.make_row_count(domain(d, None), metric(True)).map(d_in) == maps.identity(d_in)


def adaptive_calibration(sens: float, cands, eps_sel: float, eps_main: float, sized: bool) -> float:
    """The selection scale of docs/proofs/adaptive_pruned_pmm.rst (T, eps'_sel, beta)."""
    main = max(2 * sum((1 / Fraction(x) for x in c.scales[1:]), Fraction(0)) for c in cands)
    if sized:
        total = pkg.round_down(Fraction(eps_sel) + Fraction(eps_main))
        sel = Fraction(total) - main
    else:
        total = pkg.round_down(Fraction(eps_sel) + Fraction(eps_main) / 2)
        sel = Fraction(total) - main / 2
    return pkg.round_up(2 * Fraction(sens) / Fraction(pkg.round_down(sel)))


@settings(
    max_examples=max(5, EXAMPLES // 3), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    setting(),
    st.floats(min_value=0.05, max_value=4.0),
    st.floats(min_value=0.05, max_value=4.0),
    st.sampled_from(["paper", "capped"]),
    st.sampled_from(["center", "uniform"]),
    st.integers(0, 12),
)
def test_adaptive_and_schedule_scores(maps, s, eps_sel, eps_main, score, placement, d_in):
    d, n, sym = s
    norm = n if n is not None else 50
    size = None if n is not None else norm
    cands = pkg.standard_candidates(d, norm, eps_main)
    m = pkg.M.make_adaptive_pruned_pmm(
        domain(d, n),
        metric(sym),
        eps_sel,
        eps_main,
        size=size,
        score=score,
        placement=placement,
        candidates=cands,
    )
    t = pkg.T.make_schedule_scores(
        domain(d, n), metric(sym), cands, eps_main, size=size, score=score, placement=placement
    )
    setup = pkg.scores_setup(cands, d, n, norm, eps_main, 1.0, None, False, score, placement)
    table = setup.table
    top = float(n if setup.cap is None else setup.cap)
    caps = table.caps
    rows = [
        (
            float(table.const[i]),
            [float(w) for w in table.weights[i]],
            [] if caps is None else [float(c) for c in caps[:, i]],
        )
        for i in range(len(cands))
    ]
    exact_sens = maps.score(caps is not None, n is None, setup.L, setup.J, top, rows)
    assert table.sensitivity == pkg.round_up(exact_sens)
    assert t.map(d_in) == pkg.round_up(
        maps.identity(Fraction(d_in) / 2 if (n is not None and sym) else d_in)
        * Fraction(table.sensitivity)
    )
    unit = 2 if (n is not None and sym) else 1
    sens = t.map(unit)
    beta = adaptive_calibration(sens, cands, eps_sel, eps_main, n is not None)
    exact = maps.adaptive(sym, n is not None, sens, beta, d_in, [c.scales[1:] for c in cands])
    assert m.map(d_in) == pkg.round_up(exact)
    # the budget split: one unit never certifies more than the exact total
    # (Mechanisms.adaptive_budget)
    total = Fraction(eps_sel) + (Fraction(eps_main) if n is not None else Fraction(eps_main) / 2)
    assert Fraction(m.map(unit)) <= total
