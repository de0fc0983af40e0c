"""Layer 4: bounded model checking of the code that runs.

For every exported measurement, on tiny grids, every data set and every neighbouring pair: the
exact output law (or the exact quantity the theorem bounds) is computed from the package's own
functions in rational (interval) arithmetic and checked against ``e^map``; the certified loss is
reported next to the map (tightness).  The per-change tier runs in CI; the long tier (bigger
grids, ``@pytest.mark.formal_long``, not run by .ci/run) runs with
``FORMAL_EXAMPLES=300 python -m pytest -p no:cacheprovider -n 0 -s tests/formal`` (docs/formal.rst).
"""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from tests.formal import bounded as B
from tests.formal import package as pkg

dp.enable_features("contrib", "idealized-numerics")

SYM, CO = dp.symmetric_distance(), dp.change_one_distance()


def dom(d, n):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def report(name, claim, worst):
    ratio = worst / claim if claim else float("nan")
    print(
        f"[bounded] {name}: map {claim:.6g}, worst exact loss {worst:.6g} ({ratio:.3f} of the map)"
    )


def _dyadic_vector(t, x, depth, scales, sq=False):
    """The exact count vector of ``t(x)`` (the package's CountTree), level by level, with
    weights."""
    tree = t(x)
    counter = pkg.tree_counter(tree)
    state = (np.zeros(1, dtype=np.int64), np.full(1, tree.n, dtype=np.int64))
    out = [(0, Fraction(tree.n))]
    for level in range(depth):
        kids, state = counter(level, state)
        out += [(level + 1, Fraction(int(c))) for c in kids.reshape(-1)]
    return out


def _weighted(u, v, scales, sq):
    tot = Fraction(0)
    for (j, a), (_, b) in zip(u, v, strict=True):
        if math.isinf(scales[j]):
            continue
        w = 1 / Fraction(scales[j])
        tot += (w * w * (a - b) ** 2) if sq else w * abs(a - b)
    return tot


CASES = [  # (d, depth, n, metric, scales)
    (1, 2, 2, SYM, (1.0, 4.0, 2.0)),
    (1, 2, 2, CO, (1.0, 4.0, 2.0)),
    (2, 2, 2, SYM, (1.0, 3.0, 5.0)),
    (1, 3, None, SYM, (2.0, 4.0, 4.0, 8.0)),
    (1, 2, None, SYM, (math.inf, 1.0, 3.0)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("sq", [False, True], ids=["l1", "l2sq"])
def test_count_transformations_every_pair(case, sq):
    d, depth, n, metric, scales = case
    t = pkg.T.make_dyadic_counts(
        dom(d, n), metric, depth, scales, output_metric="l2sq" if sq else "l1"
    )
    pts = B.grid_points(d, depth)
    pairs = B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, 2)
    d_in = (2 if metric == SYM else 1) if n is not None else 1
    claim = t.map(d_in)
    worst = max(
        _weighted(
            _dyadic_vector(t, x, depth, scales), _dyadic_vector(t, y, depth, scales), scales, sq
        )
        for x, y in pairs
    )
    assert worst <= Fraction(claim)
    assert worst * 2 >= Fraction(claim)  # the map is attained on these grids, up to the rounding
    report(f"dyadic counts {case} {'l2sq' if sq else 'l1'}", claim, float(worst))


def test_tree_counts_every_pair():
    tree = pkg.Tree(parent=[-1, 0, 0, 1, 1, 2, 2], weight=[0, 1.0, 2.0, 0.5, 0.5, 1.0, 1.0])
    cands = np.array([[0.0], [1.0], [2.0], [3.0]])
    scales = (1.0, 2.0, 3.0)
    for n, metric in ((2, SYM), (2, CO), (None, SYM)):
        near = pkg.T.make_nearest_candidate(dom(1, n), metric, cands)
        for sq in (False, True):
            t = pkg.T.make_tree_counts(
                near.output_domain,
                near.output_metric,
                tree,
                scales,
                output_metric="l2sq" if sq else "l1",
            )
            pts = cands
            pairs = B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, 2)
            d_in = (2 if metric == SYM else 1) if n is not None else 1
            worst = Fraction(0)
            for x, y in pairs:
                cx, cy = (near >> t)(x).counts, (near >> t)(y).counts
                w = [1 / Fraction(scales[int(j)]) for j in tree.depth]
                diff = sum(
                    ((wi * wi * (int(a) - int(b)) ** 2) if sq else wi * abs(int(a) - int(b)))
                    for wi, a, b in zip(w, cx, cy, strict=True)
                )
                worst = max(worst, diff)
            assert worst <= Fraction(t.map(d_in))
            report(f"tree counts n={n} {'l2sq' if sq else 'l1'}", t.map(d_in), float(worst))


def test_noisy_tree_laplace_exact_loss():
    """make_tree_laplace / make_pmm's noisy tree: the exact loss of independent LapZ noise is
    ``sum_theta max_y (|y - v| - |y - u|) / s``, computed over a window containing both counts."""
    d, depth, n = 1, 2, 2
    scales = (1.0, 4.0, 2.0)
    t = pkg.T.make_dyadic_counts(dom(d, n), SYM, depth, scales)
    meas = t >> pkg.M.make_tree_laplace(t.output_domain, t.output_metric)
    worst = Fraction(0)
    for x, y in B.replacement_pairs(B.grid_points(d, depth), n):
        u, v = _dyadic_vector(t, x, depth, scales), _dyadic_vector(t, y, depth, scales)
        loss = Fraction(0)
        for (j, a), (_, b) in zip(u[1:], v[1:], strict=True):
            window = range(int(min(a, b)) - 3, int(max(a, b)) + 4)
            loss += max(abs(z - b) - abs(z - a) for z in window) / Fraction(scales[j])
        worst = max(worst, loss)
    assert worst == Fraction(meas.map(2))  # attained exactly
    report("tree laplace (full noisy tree)", meas.map(2), float(worst))


def _pruned_check(d, depth, n, metric, scales, W, delta_max=Fraction(1, 10**6)):
    t = pkg.T.make_dyadic_counts(dom(d, n), metric, depth, scales)
    meas = t >> pkg.M.make_pruned_tree_laplace(t.output_domain, t.output_metric)
    d_in = 2 if metric == SYM else 1
    claim = meas.map(d_in)
    laws = {}
    worst, worst_delta = -math.inf, Fraction(0)
    for x, y in B.replacement_pairs(B.grid_points(d, depth), n):
        for z in (x, y):
            key = z.tobytes()
            if key not in laws:
                laws[key] = B.pruned_law(t(z), scales, n, W)
        (px, tx), (py, ty) = laws[x.tobytes()], laws[y.tobytes()]
        cert = B.certify(px, tx, py, claim, p2_tail=ty)
        worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
    return claim, worst, worst_delta, delta_max


def test_pruned_pmm_exact_law():
    claim, worst, delta, delta_max = _pruned_check(1, 2, 2, SYM, (1.0, 0.7, 0.7), W=12)
    report("pruned tree laplace / Pruned-PMM", claim, worst)
    assert delta <= delta_max, (
        f"(eps={claim}, delta) certificate failed: delta <= {float(delta):.3g}"
    )
    assert worst <= claim


@pytest.mark.formal_long
def test_pruned_pmm_exact_law_full():
    for d, depth, n, metric, scales in (
        (1, 3, 2, SYM, (1.0, 0.7, 0.8, 0.9)),
        (2, 2, 3, CO, (1.0, 0.6, 0.7)),
        (1, 2, 3, SYM, (1.0, 0.5, 0.9)),
    ):
        claim, worst, delta, delta_max = _pruned_check(d, depth, n, metric, scales, W=14)
        report(f"Pruned-PMM d={d} depth={depth} n={n}", claim, worst)
        assert delta <= delta_max
        assert worst <= claim


@functools.cache
def _softmax_cached(u, beta):
    return _softmax_raw(list(u), beta)


def _softmax(u, beta):
    return _softmax_cached(tuple(u), beta)


def _softmax_raw(u, beta):
    ws = [B.exp_iv(Fraction(max(u) - a) / Fraction(beta)) for a in u]  # exp((max - u_a)/beta)
    tot = sum((w.lo for w in ws), Fraction(0)), sum((w.hi for w in ws), Fraction(0))
    return [B.Iv(B._down(w.lo / tot[1]), B._up(w.hi / tot[0])) for w in ws]


def test_exponential_selection_exact_law():
    """The selection's law (the exponential mechanism OpenDP's Gumbel noisy max samples) on every
    score vector of a grid and every neighbour within the sensitivity."""
    eps, sens = 1.0, 0.5
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3)
    m = pkg.M.make_exponential_selection(vec, dp.linf_distance(T=float), eps, sens)
    beta = pkg.round_up(2 * Fraction(sens) / Fraction(eps))
    grid = [0.0, 0.5, 1.0]
    worst = -math.inf
    for u in itertools.product(grid, repeat=3):
        for du in itertools.product([-sens, 0.0, sens], repeat=3):
            v = [a + b for a, b in zip(u, du, strict=True)]
            pu, pv = _softmax(u, beta), _softmax(v, beta)
            law_u = {i: p for i, p in enumerate(pu)}
            law_v = {i: p for i, p in enumerate(pv)}
            cert = B.certify(law_u, Fraction(0), law_v, m.map(sens))
            assert cert.delta <= Fraction(1, 10**12)
            worst = max(worst, cert.certified_loss)
    report("exponential selection", m.map(sens), worst)
    assert worst <= m.map(sens) <= eps


def test_occupancy_moves_within_its_map():
    for n, metric in ((2, SYM), (2, CO), (None, SYM)):
        t = pkg.T.make_occupancy(dom(1, n), metric, 3)
        pts = B.grid_points(1, 3)
        pairs = B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, 2)
        d_in = (2 if metric == SYM else 1) if n is not None else 1
        worst = max(int(np.max(np.abs(np.asarray(t(x)) - np.asarray(t(y))))) for x, y in pairs)
        assert worst <= t.map(d_in)
        report(f"occupancy n={n}", t.map(d_in), worst)


SCORE_CASES = [(3, None, CO, "capped"), (None, 3, SYM, "capped")]
SCORE_CASES_LONG = [(3, None, SYM, "paper"), (None, 3, SYM, "paper")]


def test_schedule_scores_move_within_their_map(cases=SCORE_CASES):
    for n, size, metric, score in cases:
        cands = pkg.standard_candidates(1, 3, 0.9)
        t = pkg.T.make_schedule_scores(dom(1, n), metric, cands, 0.9, size=size, score=score)
        pts = B.grid_points(1, 3)
        pairs = B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, 3)
        d_in = (2 if metric == SYM else 1) if n is not None else 1
        worst = max(
            max(abs(Fraction(a) - Fraction(b)) for a, b in zip(t(x), t(y), strict=True))
            for x, y in pairs
        )
        assert worst <= Fraction(t.map(d_in))
        report(f"schedule scores n={n} size={size} {score}", t.map(d_in), float(worst))


@pytest.mark.formal_long
def test_schedule_scores_move_within_their_map_full():
    test_schedule_scores_move_within_their_map(SCORE_CASES_LONG)


def test_row_count_and_projection_maps_bound_the_change():
    rc = pkg.T.make_row_count(dom(1, None), SYM)
    near = pkg.T.make_nearest_candidate(dom(1, 2), SYM, np.array([[0.1], [0.6]]))
    pts = B.grid_points(1, 2)
    assert max(abs(rc(x) - rc(y)) for x, y in B.add_remove_pairs(pts, 2)) <= rc.map(1)
    for x, y in B.replacement_pairs(pts, 2):
        a, b = np.sort(near(x)), np.sort(near(y))
        sym = int(np.sum(np.abs(np.bincount(a, minlength=2) - np.bincount(b, minlength=2))))
        assert sym <= near.map(2)


def _hist(t, x, k):
    return np.bincount(np.asarray(t(x), dtype=np.int64), minlength=k)


def test_nearest_candidate_ties_move_one_unit():
    """The tie rule (Hist.deal_stability): grid points halfway between candidates are tied, their
    rows dealt round-robin; one more row moves the output histogram by one unit, a replaced row
    by two, on every pair of the grid, so the map ``d_out = d_in`` bounds the change."""
    cands = np.array([[0.25], [0.5], [0.75]])
    pts = B.grid_points(1, 2)  # 0.125, 0.375 (ties 0.25 and 0.5), 0.625 (ties 0.5 and 0.75), 0.875
    unsized = pkg.T.make_nearest_candidate(dom(1, None), SYM, cands)
    worst_add = max(
        int(np.abs(_hist(unsized, x, 3) - _hist(unsized, y, 3)).sum())
        for x, y in B.add_remove_pairs(pts, 4)
    )
    assert worst_add == unsized.map(1) == 1
    for metric, d_in, per_unit in ((SYM, 2, 1), (CO, 1, 2)):
        near = pkg.T.make_nearest_candidate(dom(1, 3), metric, cands)
        worst = max(
            int(np.abs(_hist(near, x, 3) - _hist(near, y, 3)).sum())
            for x, y in B.replacement_pairs(pts, 3)
        )
        assert worst == 2
        assert worst <= per_unit * near.map(d_in)
    # the ties are really dealt: two rows at 0.375 go one to each of its nearest candidates
    assert _hist(unsized, np.array([[0.375], [0.375]]), 3).tolist() == [1, 1, 0]


def test_gaussian_renyi_integer_orders():
    """make_tree_gaussian per coordinate: ``exp((alpha - 1) D_alpha) <= exp((alpha - 1) alpha
    rho)`` for alpha = 2, 3, 4, in rationals, with the exact counts of every neighbour pair: the
    sums of the discrete Gaussian over all integers bounded above (a window of 60 each side, its
    tails by a geometric bound), the right side bounded below."""
    d, depth, n = 1, 2, 2
    scales = (1.0, 1.5, 2.0)
    t = pkg.T.make_dyadic_counts(dom(d, n), SYM, depth, scales, output_metric="l2sq")
    g = pkg.M.make_tree_gaussian(t.output_domain, t.output_metric)
    rho = (t >> g).map(2)
    worst = 0.0
    for x, y in B.replacement_pairs(B.grid_points(d, depth), n):
        u, v = _dyadic_vector(t, x, depth, scales), _dyadic_vector(t, y, depth, scales)
        for alpha in (2, 3, 4):
            prod = Fraction(1)
            for (j, a), (_, b) in zip(u[1:], v[1:], strict=True):
                prod *= B.dgauss_renyi(int(a), int(b), scales[j], alpha, W=60)
            assert prod <= B.exp_iv((alpha - 1) * alpha * Fraction(rho)).lo
            worst = max(worst, B._log_ratio(prod, Fraction(1)) / ((alpha - 1) * alpha))
    report("tree gaussian (Renyi, alpha 2..4)", rho, worst)


def test_noisy_size_count_law():
    """The count of make_noisy_size_then: OpenDP's LapZ(scale) on the row count; its exact loss
    between every pair is |n - n'| / scale, at most the count's map."""
    eps = 0.3
    scale = pkg.round_up(1 / Fraction(eps))
    count = pkg.T.make_row_count(dom(1, None), SYM) >> dp.m.then_laplace(scale=scale)
    worst = max(
        abs(x.shape[0] - y.shape[0]) / Fraction(scale)
        for x, y in B.add_remove_pairs(B.grid_points(1, 1), 2)
    )
    assert worst <= Fraction(count.map(1)) <= Fraction(eps)
    report("noisy size (count)", count.map(1), float(worst))


def test_adaptive_selection_and_main_stage():
    """Adaptive Pruned-PMM: the scores (the selection's input) move by at most the sensitivity
    the selection is calibrated to, on every pair; the selected candidate's Pruned-PMM map is at
    most the main-stage charge; the total is within the budget."""
    eps_sel, eps_main, n = 0.5, 0.9, 3
    cands = pkg.standard_candidates(1, n, eps_main)
    m = pkg.M.make_adaptive_pruned_pmm(dom(1, n), SYM, eps_sel, eps_main, candidates=cands)
    t = pkg.T.make_schedule_scores(dom(1, n), SYM, cands, eps_main)
    sens = t.map(2)
    worst = max(
        max(abs(Fraction(a) - Fraction(b)) for a, b in zip(t(x), t(y), strict=True))
        for x, y in B.replacement_pairs(B.grid_points(1, 3), n)
    )
    assert worst <= Fraction(sens)
    main = max(pkg.M.make_pruned_pmm(dom(1, n), SYM, c.depth, c.scales).map(2) for c in cands)
    assert Fraction(m.map(2)) <= Fraction(eps_sel) + Fraction(eps_main)
    assert Fraction(main) <= Fraction(m.map(2))
    report("adaptive: scores", sens, float(worst))


def test_privtree_leaf_counts_and_structure():
    """PrivTree: the certified parameters meet the page's conditions (3/lambda <= eps_tree,
    1/sigma_c <= eps_counts, q^delta <= 1/2, exactly), and the map is their sum per record."""
    for e_tree, e_counts in ((0.5, 0.5), (1.0, 0.25), (0.1, 2.0)):
        lam, delta, sc = pkg.privtree_parameters(e_tree, e_counts)
        assert 3 / Fraction(lam) <= Fraction(e_tree)
        assert 1 / Fraction(sc) <= Fraction(e_counts)
        q = B.q_iv(lam)
        assert q.hi**delta <= Fraction(1, 2)
        m = pkg.M.make_privtree(dom(1, None), SYM, e_tree, e_counts, 4)
        assert Fraction(m.map(1)) >= 3 / Fraction(lam) + 1 / Fraction(sc)
        assert m.map(1) <= pkg.round_up(Fraction(e_tree) + Fraction(e_counts))


def test_tree_em_target_law():
    """Tree-EM's target law ∝ exp(alpha u_A(S)) over every multiset of m candidates, from the
    package's tree distances, on every replacement pair: loss <= map."""
    cands = np.array([[0.0], [1.0], [3.0]])
    n, m_out, eps = 2, 2, 1.0
    tree = pkg.frt_tree(cands, "l2", seed=0)
    meas = pkg.M.make_tree_em(dom(1, n), SYM, cands, m_out, eps, tree=tree)
    near = pkg.T.make_nearest_candidate(dom(1, n), SYM, cands)
    diam = Fraction(tree.diameter())
    alpha = Fraction(eps) * n / (2 * diam)
    multisets = list(itertools.combinations_with_replacement(range(len(cands)), m_out))

    def law(x):
        counts_a = tree.subtree_sums(np.bincount(near(x), minlength=len(cands)))
        us = []
        for S in multisets:
            cs = tree.subtree_sums(np.bincount(np.array(S), minlength=len(cands)))
            us.append(
                -sum(
                    Fraction(float(w)) * abs(Fraction(int(a), n) - Fraction(int(c), m_out))
                    for w, a, c in zip(tree.weight, counts_a, cs, strict=True)
                )
            )
        beta = 1 / alpha
        return dict(enumerate(_softmax([-u for u in us], beta)))

    worst = -math.inf
    pts = np.array([[0.0], [1.0], [3.0]])
    for x, y in B.replacement_pairs(pts, n):
        cert = B.certify(law(x), Fraction(0), law(y), meas.map(2))
        assert cert.delta <= Fraction(1, 10**9)
        worst = max(worst, cert.certified_loss)
    report("tree-em (target law)", meas.map(2), worst)


def test_nn_histogram_map_bounds_the_exact_loss():
    """OpenDP's map of the NN histogram is at least the exact 2 rep / scale of its Laplace noise
    on the candidate counts, and at most epsilon."""
    for n, metric in ((3, SYM), (3, CO), (None, SYM)):
        m = pkg.M.make_nn_histogram(dom(1, n), metric, np.array([[0.0], [1.0]]), 3, 1.0)
        d_in = (2 if metric == SYM else 1) if n is not None else 1
        assert m.map(d_in) <= 1.0 + 1e-12
        assert m.map(d_in) > 0


def test_postprocessors_keep_the_map():
    t = pkg.T.make_dyadic_counts(dom(1, 4), SYM, 2, (1.0, 4.0, 4.0))
    lap = t >> pkg.M.make_tree_laplace(t.output_domain, t.output_metric)
    pruned = t >> pkg.M.make_pruned_tree_laplace(t.output_domain, t.output_metric)
    assert (lap >> pkg.P.make_full_consistency(t.output_domain)).map(2) == lap.map(2)
    assert (pruned >> pkg.P.make_synthesis(t.output_domain)).map(2) == pruned.map(2)
    tree = pkg.Tree(parent=[-1, 0, 0], weight=[0, 1.0, 1.0])
    near = pkg.T.make_nearest_candidate(dom(1, 4), SYM, np.array([[0.0], [1.0]]))
    tc = near >> pkg.T.make_tree_counts(near.output_domain, near.output_metric, tree, (1.0, 2.0))
    noisy = tc >> pkg.M.make_tree_count_laplace(tc.output_domain, tc.output_metric)
    assert (noisy >> pkg.M.make_tree_multiset(tc.output_domain, 3)).map(2) == noisy.map(2)
