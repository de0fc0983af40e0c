"""Layer 4, continued: exact output laws of PrivTree, the NN histogram and the post-processors.

Each law is computed from the package's own code that runs (the measurement's function, with its
noise source replaced by a table of noise values and the probability of every entry computed in
rational interval arithmetic), on every data set of a tiny grid and every neighbouring pair, and
checked against ``e^map``; the certified loss is printed next to the map.  The post-processors'
check is the push-forward: the release's law is computed through the post-processor on every
noise value of a window (the rest is unaccounted mass ``delta``, bounded exactly), and the
post-processed output is checked to be a function of the released noisy statistics alone (no
two data sets or noise values giving the same statistic give different outputs).
"""

from __future__ import annotations

import itertools
import math
import types
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest

from tests.formal import bounded as B
from tests.formal import package as pkg

dp.enable_features("contrib", "idealized-numerics")

SYM, CO = dp.symmetric_distance(), dp.change_one_distance()
DELTA_MAX = Fraction(1, 10**6)


def dom(d, n):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def report(name, claim, worst):
    ratio = worst / claim if claim else float("nan")
    print(
        f"[bounded] {name}: map {claim:.6g}, worst exact loss {worst:.6g} ({ratio:.3f} of the map)"
    )


def pairs_of(pts, n, n_max=2):
    """Every neighbouring pair: replacements with a public size ``n``, else additions and
    removals of one row to data sets of 0 .. ``n_max - 1`` rows."""
    return B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, n_max)


def d_in_of(metric, n):
    return (2 if metric == SYM else 1) if n is not None else 1


# ---------------------------------------------------------------------------------------------
# PrivTree: the structure's law exactly (every split decision's probability in closed form), the
# leaf counts' LapZ noise, and the released points through the whole function


class _PrivTreeRun:
    """Runs make_privtree's function with table noise: the split decisions from ``decisions``
    (a node missing from it does not split), the leaf counts' noise from ``counts``; records
    the leaves ``grow`` returned."""

    def __init__(self, monkeypatch):
        self.leaves = None
        self.decisions = self.counts = None
        real_grow = pkg.privtree_module.grow

        def grow(*args, **kwargs):
            self.leaves = real_grow(*args, **kwargs)
            return self.leaves

        mod = pkg.privtree_module

        def key_of(_src):
            return types.SimpleNamespace(
                derive=lambda ns: self.decisions if ns == mod._DECISIONS else self.counts
            )

        monkeypatch.setattr(mod, "grow", grow)
        monkeypatch.setattr(mod, "KeyedNodeNoise", types.SimpleNamespace(from_random_source=key_of))

    def __call__(self, meas, x, decisions, counts=None):
        self.decisions = B.TableNoise(decisions, default=-(2**20))
        self.counts = B.TableNoise(counts or {}, default=0)
        out = meas(x)
        leaves = frozenset(
            (int(lvl), tuple(int(v) for v in c)) for lvl, cells, _ in self.leaves for c in cells
        )
        leaf_counts = {
            (int(lvl), tuple(int(v) for v in c)): int(k)
            for lvl, cells, cnt in self.leaves
            for c, k in zip(cells, cnt, strict=True)
        }
        return out, leaves, leaf_counts


def _privtree_structures(run, meas, x):
    """``[(decision table, leaves, exact leaf counts, P(structure))]``: every structure the
    package's ``grow`` can return on ``x``.  Each visited node's decision is a threshold in its
    noise (the package splits iff ``biased + Z > theta``); the threshold is found by bisection
    on the code itself, and ``P(Z >= t)`` is exact for LapZ."""
    out = []

    def rec(table, prob):
        _, leaves, counts = run(meas, x, table)
        asked = run.decisions.asked
        todo = [k for k in asked if k not in table]
        if not todo:  # the leaves drew their count noise at the scales in run.counts.asked
            out.append((table, leaves, counts, prob, dict(run.counts.asked)))
            return
        node, scale = todo[0], asked[todo[0]]

        def splits(z):
            _, lv, _ = run(meas, x, {**table, node: z})
            return node not in lv

        lo, hi = -(2**12), 2**12
        assert not splits(lo)
        assert splits(hi)
        while hi - lo > 1:  # splits(hi) and not splits(lo)
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if splits(mid) else (mid, hi)
        p_split = B.lapz_at_least(hi, scale)
        rec({**table, node: hi}, prob * p_split)
        rec({**table, node: lo}, prob * B.complement(p_split))

    rec({}, B.ONE)
    return out


PRIVTREE_CASES = [  # (d, max_depth, n, metric, epsilon_tree, epsilon_counts, theta)
    (1, 2, None, SYM, 1.0, 1.0, 0),
    (1, 2, 2, SYM, 0.5, 2.0, 0),
    pytest.param((1, 2, 2, CO, 1.0, 1.0, 1), marks=pytest.mark.formal_long),
    pytest.param((2, 2, 2, SYM, 1.0, 1.0, 0), marks=pytest.mark.formal_long),
]


@pytest.mark.parametrize("case", PRIVTREE_CASES, ids=str)
def test_privtree_structure_and_counts_exact_law(case, monkeypatch):
    """The law of what PrivTree releases before its placement, the structure ``S`` and the noisy
    leaf counts ``r``: ``P_x(S, r) = P_x(S) prod_v LapZ(r_v - c_v(x))``, so the loss between
    ``x`` and ``x'`` is ``max_S log(P_x(S) / P_x'(S)) + sum_v |c_v(x) - c_v(x')| / sigma_v``
    exactly (attained), over the whole infinite support, with ``sigma_v`` the scale the code
    draws leaf ``v``'s count at; checked against ``e^map``."""
    d, depth, n, metric, e_tree, e_counts, theta = case
    meas = pkg.M.make_privtree(
        dom(d, n), metric, e_tree, e_counts, depth, placement="center", theta=theta
    )
    claim = meas.map(d_in_of(metric, n))
    e_claim = B.exp_iv(Fraction(claim))
    run = _PrivTreeRun(monkeypatch)
    laws = {}
    worst = -math.inf
    for x, y in pairs_of(B.grid_points(d, depth), n, 3):
        for z in (x, y):
            if z.tobytes() not in laws:
                laws[z.tobytes()] = {s[1]: s for s in _privtree_structures(run, meas, z)}
        lx, ly = laws[x.tobytes()], laws[y.tobytes()]
        assert set(lx) == set(ly)  # every structure has positive probability on both
        total = sum((s[3].lo for s in lx.values()), Fraction(0))
        assert 1 - Fraction(1, 10**30) <= total <= 1  # the structures' law sums to 1
        for S, (_, _, cx, px, sx) in lx.items():
            cy, py, sy = ly[S][2], ly[S][3], ly[S][4]
            assert sx == sy
            assert set(sx) == S
            counts_loss = sum(Fraction(abs(cx[v] - cy[v])) / Fraction(sx[v]) for v in S)
            # P_x(S) e^{counts loss} <= e^map P_y(S): the supremum over the noisy counts
            assert px.hi * B.exp_iv(counts_loss).hi <= e_claim.lo * py.lo
            worst = max(worst, B._log_ratio(px.lo, py.hi) + float(counts_loss))
    report(f"privtree structure + leaf counts {case}", claim, worst)
    assert worst <= claim


PRIVTREE_PUSH_CASES = [
    (1, 1, 2, SYM, 1.0, 2.0, 9),
    pytest.param((1, 1, None, SYM, 1.0, 2.0, 9), marks=pytest.mark.formal_long),
]


@pytest.mark.parametrize("case", PRIVTREE_PUSH_CASES, ids=str)
def test_privtree_released_points_exact_law(case, monkeypatch):
    """The law of the released points (centre placement, as a multiset) through make_privtree's
    whole function, on every structure and every leaf-count noise value of a window: checked
    against ``e^map`` with the window's exact tail as ``delta``; and the points are a function
    of (structure, noisy leaf counts), the push-forward."""
    d, depth, n, metric, e_tree, e_counts, W = case
    meas = pkg.M.make_privtree(dom(d, n), metric, e_tree, e_counts, depth, placement="center")
    claim = meas.map(d_in_of(metric, n))
    run = _PrivTreeRun(monkeypatch)
    stat_to_out: dict = {}
    laws = {}

    def law(x):
        out_law: dict = {}
        tail = Fraction(0)
        for table, leaves, counts, p_s, _ in _privtree_structures(run, meas, x):
            _, _, _ = run(meas, x, table)  # which leaves draw count noise, at which scale
            asked = dict(run.counts.asked)
            keys = sorted(asked)
            windows = [B.lapz_window(asked[k], W) for k in keys]
            tail += p_s.hi * sum(t for _, t in windows)
            for combo in itertools.product(*(w for w, _ in windows)):
                noise = {k: z for k, (z, _) in zip(keys, combo, strict=True)}
                out, lv, _ = run(meas, x, table, noise)
                assert lv == leaves
                key = B.points_key(out)
                stat = (leaves, tuple(counts[k] + noise[k] for k in keys))
                assert stat_to_out.setdefault(stat, key) == key  # a function of the release
                p = p_s
                for _, pz in combo:
                    p = p * pz
                B.add_to(out_law, key, p)
        return out_law, tail

    worst, worst_delta = -math.inf, Fraction(0)
    for x, y in pairs_of(B.grid_points(d, depth), n, 2):
        for z in (x, y):
            if z.tobytes() not in laws:
                laws[z.tobytes()] = law(z)
        (px, tx), (py, ty) = laws[x.tobytes()], laws[y.tobytes()]
        cert = B.certify(px, tx, py, claim, p2_tail=ty)
        worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
    report(f"privtree released points {case}", claim, worst)
    assert worst_delta <= DELTA_MAX, float(worst_delta)
    assert worst <= claim


# ---------------------------------------------------------------------------------------------
# the nearest-neighbour histogram: OpenDP's count and Laplace, then the package's rounding


def test_nn_histogram_exact_law():
    """make_nn_histogram's release: the package's nearest-candidate histogram (ties dealt), LapZ
    at the scale the constructor calibrates (OpenDP's discrete Laplace, a trusted sampler) on a
    window, then the package's largest_remainder with every tie-break permutation (uniform):
    the multiset's law on every pair, against ``e^map``."""
    cands = np.array([[0.0], [1.0]])
    pts = np.array([[0.0], [0.5], [1.0]])  # 0.5 is tied: dealt round-robin
    eps, m, W = 2.0, 3, 16
    perms = list(itertools.permutations(range(len(cands))))
    for n, metric in ((2, SYM), (2, CO), (None, SYM)):
        meas = pkg.M.make_nn_histogram(dom(1, n), metric, cands, m, eps)
        d_in = d_in_of(metric, n)
        near = pkg.T.make_nearest_candidate(dom(1, n), metric, cands)
        # the constructor's own calibration of OpenDP's scale, on its own chain
        chain = near >> dp.t.then_metric_unbounded() if metric == CO else near
        chain = chain >> dp.t.then_count_by_categories(
            categories=list(range(len(cands))), null_category=False, TOA="i64"
        )

        def lap(s, chain=chain):
            return chain >> dp.m.then_laplace(scale=s)

        scale = pkg.nn_module._noise_scale(lap, d_in, eps, 2.0 / eps)
        assert (lap(scale) >> pkg.nn_module.make_largest_remainder(m)).map(d_in) == meas.map(d_in)
        claim = meas.map(d_in)
        window, tail1 = B.lapz_window(scale, W)
        laws = {}

        def law(x, window=window, near=near):
            h = np.bincount(np.asarray(near(x), dtype=np.int64), minlength=len(cands))
            out: dict = {}
            for combo in itertools.product(window, repeat=len(cands)):
                raw = h + np.array([z for z, _ in combo])
                p = B.ONE
                for _, pz in combo:
                    p = p * pz
                for perm in perms:
                    key = tuple(pkg.largest_remainder(raw, m, B.FixedPermutation(perm)).tolist())
                    B.add_to(out, key, p * B.Iv.exact(Fraction(1, len(perms))))
            return out

        worst, worst_delta = -math.inf, Fraction(0)
        for x, y in pairs_of(pts, n, 2):
            for z in (x, y):
                if z.tobytes() not in laws:
                    laws[z.tobytes()] = law(z)
            tail = len(cands) * tail1
            cert = B.certify(laws[x.tobytes()], tail, laws[y.tobytes()], claim, p2_tail=tail)
            worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
        report(f"nn histogram n={n} {metric}", claim, worst)
        assert worst_delta <= DELTA_MAX, float(worst_delta)
        assert worst <= claim


# ---------------------------------------------------------------------------------------------
# the post-processors: least squares consistency and synthesis on the full noisy tree; the tree
# multiset (HTP) on noisy tree counts, and the whole tree projection


def _full_tree_laws(monkeypatch, n, metric, scales, size=None):
    """The laws of the full noisy tree's post-processed releases, by push-forward through the
    package's make_full_consistency (least squares) and make_synthesis (centre placement)."""
    t = pkg.T.make_dyadic_counts(dom(1, n), metric, 1, scales)
    lap = t >> pkg.M.make_tree_laplace(t.output_domain, t.output_metric)
    fc = pkg.P.make_full_consistency(t.output_domain, output_size=size)
    synth = pkg.P.make_synthesis(t.output_domain, placement="center")
    to_ls, whole = lap >> fc, lap >> fc >> synth
    table = B.TableNoise({})
    monkeypatch.setattr(pkg.tree_noise_module, "_release_noise", lambda *a, **k: table)
    lap(np.zeros((n or 1, 1)))
    keys = sorted(table.asked)  # the noised nodes, with their scales
    windows = [B.lapz_window(table.asked[k], B.window_for(table.asked[k])) for k in keys]
    tail = sum((tl for _, tl in windows), Fraction(0))
    stat_ls, stat_pts = {}, {}

    def law(x):
        ls_law, pts_law = {}, {}
        for combo in itertools.product(*(w for w, _ in windows)):
            # the same table noise in every call: the release, and the chains through the
            # least squares and the synthesis
            table.table = {k: z for k, (z, _) in zip(keys, combo, strict=True)}
            stat = tuple(tuple(int(v) for v in lvl) for lvl in lap(x).levels)
            leaves = to_ls(x)
            ls = (tuple(map(tuple, leaves.cells.tolist())), tuple(int(v) for v in leaves.masses))
            pts = B.points_key(whole(x))
            assert stat_ls.setdefault(stat, ls) == ls
            assert stat_pts.setdefault(stat, pts) == pts
            p = B.ONE
            for _, pz in combo:
                p = p * pz
            B.add_to(ls_law, ls, p)
            B.add_to(pts_law, pts, p)
        return ls_law, pts_law

    return lap.map(d_in_of(metric, n)), law, tail


def _least_squares_check(monkeypatch, n, metric, scales, size):
    claim, law, tail = _full_tree_laws(monkeypatch, n, metric, scales, size)
    laws = {}
    worst = {"least squares": -math.inf, "synthesis": -math.inf}
    for x, y in pairs_of(B.grid_points(1, 1), n, 2):
        for z in (x, y):
            if z.tobytes() not in laws:
                laws[z.tobytes()] = law(z)
        for i, name in enumerate(worst):
            lx, ly = laws[x.tobytes()][i], laws[y.tobytes()][i]
            cert = B.certify(lx, tail, ly, claim, p2_tail=tail)
            assert cert.delta <= DELTA_MAX, (name, float(cert.delta))
            worst[name] = max(worst[name], cert.certified_loss)
    for name, w in worst.items():
        report(f"tree laplace >> {name} n={n} {metric} scales={scales}", claim, w)
        assert w <= claim


def test_least_squares_and_synthesis_push_forward(monkeypatch):
    """make_full_consistency (least squares) and make_synthesis after make_tree_laplace: the laws
    of the consistent leaf masses and of the points, by push-forward of every noisy tree of a
    window; each a function of the noisy tree alone; against ``e^map``."""
    _least_squares_check(monkeypatch, 2, SYM, (1.0, 0.5), None)


@pytest.mark.formal_long
@pytest.mark.parametrize(
    "case", [(2, CO, (1.0, 0.6), None), (None, SYM, (math.inf, 0.5), 2)], ids=str
)
def test_least_squares_and_synthesis_push_forward_full(case, monkeypatch):
    _least_squares_check(monkeypatch, *case)


def _projection_check(monkeypatch, n, metric, eps, pts, m=2):
    """make_tree_projection (nearest candidate, tree counts, LapZ on every node, the HTP
    multiset of make_tree_multiset): the multiset's law by push-forward of every node noise
    value of a window and every tie-break permutation (uniform).  The multiset is checked to be
    a function of (noisy counts, permutation) on every noise value with the first permutation;
    the other permutations are evaluated once per noisy count vector."""
    cands = np.array([[0.0], [1.0]])
    tree = pkg.Tree(parent=[-1, 0, 0], weight=[0, 1.0, 1.0])
    box = {"z": None, "scales": None}

    def sampler(node_scales, _src):
        box["scales"] = np.asarray(node_scales, dtype=float)
        z = box["z"]
        return np.zeros(len(node_scales), dtype=np.int64) if z is None else np.array(z)

    monkeypatch.setattr(pkg.tree_count_noise_module, "sample_discrete_laplace", sampler)
    perms = list(itertools.permutations(range(tree.num_nodes)))
    perm_box = {"perm": perms[0]}
    monkeypatch.setattr(
        pkg.tree_projection_module,
        "as_random_source",
        lambda *a, **k: B.FixedPermutation(perm_box["perm"]),
    )
    meas = pkg.M.make_tree_projection(dom(1, n), metric, cands, m, eps, tree=tree)
    near = pkg.T.make_nearest_candidate(dom(1, n), metric, cands)
    claim = meas.map(d_in_of(metric, n))
    meas(np.zeros((n or 1, 1)))  # the node scales the code draws at
    windows = [B.lapz_window(float(s), B.window_for(float(s))) for s in box["scales"]]
    tail = sum((tl for _, tl in windows), Fraction(0))
    outs: dict = {}  # (noisy counts, permutation) -> multiset
    laws = {}
    share = B.Iv.exact(Fraction(1, len(perms)))

    def law(x):
        hist = np.bincount(np.asarray(near(x), dtype=np.int64), minlength=len(cands))
        counts = tree.subtree_sums(hist)
        out: dict = {}
        for combo in itertools.product(*(w for w, _ in windows)):
            box["z"] = [z for z, _ in combo]
            p = B.ONE
            for _, pz in combo:
                p = p * pz
            stat = tuple(int(c) + z for c, z in zip(counts, box["z"], strict=True))
            for i, perm in enumerate(perms):
                if i == 0 or (stat, perm) not in outs:
                    perm_box["perm"] = perm
                    key = tuple(int(v) for v in meas(x))
                    assert outs.setdefault((stat, perm), key) == key  # a function of the release
                B.add_to(out, outs[stat, perm], p * share)
        box["z"] = None
        return out

    worst, worst_delta = -math.inf, Fraction(0)
    for x, y in pairs_of(pts, n, 2):
        for z in (x, y):
            if z.tobytes() not in laws:
                laws[z.tobytes()] = law(z)
        cert = B.certify(laws[x.tobytes()], tail, laws[y.tobytes()], claim, p2_tail=tail)
        worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
    report(f"tree projection (tree multiset) n={n} eps={eps}", claim, worst)
    assert worst_delta <= DELTA_MAX, float(worst_delta)
    assert worst <= claim


def test_tree_multiset_and_projection_push_forward(monkeypatch):
    _projection_check(monkeypatch, 2, SYM, 12.0, np.array([[0.0], [1.0]]))


@pytest.mark.formal_long
def test_tree_multiset_and_projection_push_forward_full(monkeypatch):
    _projection_check(monkeypatch, 2, SYM, 6.0, np.array([[0.0], [1.0]]))
    _projection_check(monkeypatch, 2, CO, 6.0, np.array([[0.0], [0.5], [1.0]]))
    _projection_check(monkeypatch, None, SYM, 12.0, np.array([[0.0], [0.5], [1.0]]))
