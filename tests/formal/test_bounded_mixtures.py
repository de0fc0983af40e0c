"""Layer 4, continued: exact laws of the composed measurements (a selection or a noisy size,
then a measurement chosen from it), and the Renyi divergence of the whole Gaussian noisy trees.

* ``make_adaptive_pruned_pmm``: the release's law is the mixture ``P(a, o | x) = P(select a | x)
  P_a(o | x)``; the selection probabilities are the exponential mechanism's on the package's own
  scores ``t_scores(x)`` at the scale the constructor's selection uses (read from its plan's
  ``choose_from_scores``), in interval arithmetic; ``P_a`` is the chosen candidate's
  Pruned-PMM law (:func:`tests.formal.bounded.pruned_law`) at the scales of the constructor's
  own ``mains[a]``.  The outcome is keyed by ``(a, leaf masses)``: the released points are a
  function of it (post-processing), so a certificate on it bounds the release.
* ``make_noisy_size_then``: ``P(k, o | x) = P(n_hat = k | x) P_{build(k)}(o | x)`` with
  ``n_hat = max(1, n + LapZ(scale))`` at the scale of the constructor's own ``noisy_size``, on a
  window of ``k`` (the rest bounded exactly), and ``build(k)`` a Pruned-PMM releasing ``k`` rows
  (so that ``o`` determines ``k``: the keyed law is the release's).
* ``make_pruned_tree_gaussian`` / ``make_tree_count_gaussian``: ``exp((alpha - 1) D_alpha)`` of
  the whole noisy tree (a product over the nodes: independent noise) for integer ``alpha``, with
  each node's ``sigma`` the one the code asks its sampler for, against ``exp((alpha - 1) alpha
  rho)``.
"""

from __future__ import annotations

import inspect
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
DELTA_MAX = Fraction(1, 10**6)


def dom(d, n):
    return dp.numpy.array2_domain(num_columns=d, size=n, T=float)


def report(name, claim, worst):
    ratio = worst / claim if claim else float("nan")
    print(
        f"[bounded] {name}: map {claim:.6g}, worst exact loss {worst:.6g} ({ratio:.3f} of the map)"
    )


def _pairs(pts, n, n_max=2):
    return B.replacement_pairs(pts, n) if n is not None else B.add_remove_pairs(pts, n_max)


def _d_in(metric, n):
    return (2 if metric == SYM else 1) if n is not None else 1


# ---------------------------------------------------------------------------------------------
# Adaptive Pruned-PMM: the mixture over the selected candidate

_PRUNED: dict = {}


def _pruned_law(t, x, scales, size, W):
    """:func:`tests.formal.bounded.pruned_law` of ``t(x)``, memoised across the checks."""
    key = (x.tobytes(), x.shape, scales, size, W)
    if key not in _PRUNED:
        _PRUNED[key] = B.pruned_law(t(x), scales, size, W)
    return _PRUNED[key]


def _selection_law(scores, scale) -> list[B.Iv]:
    """``P(a) = exp(-B_a / scale) / sum_b exp(-B_b / scale)`` (the exponential mechanism on the
    utilities ``-B_a / scale``), each weight ``exp(-(B_a - min B) / scale)`` bracketed."""
    u = [Fraction(float(s)) for s in scores]
    lo = min(u)
    ws = [B.exp_iv((a - lo) / Fraction(scale)) for a in u]  # 1 / weight
    inv = [B.Iv(B._down(1 / w.hi), B._up(1 / w.lo)) for w in ws]
    tot_lo, tot_hi = sum(w.lo for w in inv), sum(w.hi for w in inv)
    return [B.Iv(B._down(w.lo / tot_hi), B._up(w.hi / tot_lo)) for w in inv]


def _permute_and_flip_law(scores, scale) -> list[B.Iv]:
    """McKenna-Sheldon's law: a uniform order, ``a`` accepted w.p. ``p_a = exp(-(B_a - min B) /
    scale)`` (the best always), the first accepted released: ``P(a) = (1/k!) sum_order p_a
    prod_{b before a} (1 - p_b)``, over every order."""
    u = [Fraction(float(s)) for s in scores]
    lo = min(u)
    ps = []
    for a in u:
        w = B.exp_iv((a - lo) / Fraction(scale))
        ps.append(B.Iv(B._down(1 / w.hi), B._up(1 / w.lo)))
    k = len(u)
    perms = list(itertools.permutations(range(k)))
    out = [B.ZERO] * k
    for order in perms:
        reach = B.ONE
        for a in order:
            out[a] = out[a] + reach * ps[a] * B.Iv.exact(Fraction(1, len(perms)))
            reach = reach * B.complement(ps[a])
    return out


def _adaptive_check(
    n,
    metric,
    cands,
    eps_sel,
    eps_main,
    W,
    scale_factor=1.0,
    selection="exponential",
    size=None,
    monkeypatch=None,
):
    """Certify the adaptive release's mixture law on every pair; ``scale_factor`` scales the
    selection's scale (a planted bug when below 1: the code would select at it, claiming the
    same map).  Without a public ``n``, ``size`` is the public estimate the release uses
    (the root unnoised; pairs are additions and removals).  With ``monkeypatch`` (and the
    exponential mechanism), the release itself is run on every data set (a seeded run) and the
    utilities it hands its sampler are required to be ``-t_scores(x) / scale`` exactly."""
    d = 1
    meas = pkg.M.make_adaptive_pruned_pmm(
        dom(d, n),
        metric,
        eps_sel,
        eps_main,
        candidates=cands,
        score="paper",
        selection=selection,
        size=size,
    )
    plan = pkg.plan_of(meas)
    scale = inspect.getclosurevars(plan.choose_from_scores).nonlocals["scale"]
    assert inspect.getclosurevars(plan.choose_from_scores).nonlocals["selection"] == selection
    t_scores = pkg.T.make_schedule_scores(
        dom(d, n), metric, cands, eps_main, score="paper", size=size
    )
    root = n if n is not None else size
    scales = [tuple(c.scales) if n is not None else (math.inf, *c.scales[1:]) for c in cands]
    counts = []
    for c, sc, main in zip(cands, scales, plan.mains, strict=True):  # the stages the release runs
        assert (main.depth, main.scales, main.threshold, main.root_size) == (c.depth, sc, 0.0, root)
        counts.append(pkg.T.make_dyadic_counts(dom(d, n), metric, c.depth, sc))
    claim = meas.map(_d_in(metric, n))
    laws: dict[bytes, tuple[dict, Fraction]] = {}
    sels: dict[bytes, list[B.Iv]] = {}

    def law(x):
        key = x.tobytes()
        if key not in laws:
            if monkeypatch is not None and selection == "exponential":
                fed = []
                monkeypatch.setattr(
                    pkg.adaptive_module, "softmax_choice", lambda z, _rng: fed.append(z) or 0
                )
                with pkg.reproducible(0):
                    meas(x)
                want = -np.asarray(t_scores(x)) / scale
                assert len(fed) == 1, (fed, want)
                assert np.array_equal(fed[0], want), (fed, want)
            rule = _selection_law if selection == "exponential" else _permute_and_flip_law
            sel = sels[key] = rule(t_scores(x), scale * scale_factor)
            out: dict = {}
            tail = Fraction(0)
            for a, (sc, t) in enumerate(zip(scales, counts, strict=True)):
                w = W if W is not None else B.window_for(max(sc[1:]), 1e-9)
                pa, ta = _pruned_law(t, x, sc, root, w)
                tail += sel[a].hi * ta
                for o, p in pa.items():
                    out[(a, o)] = sel[a] * p
            laws[key] = (out, tail)
        return laws[key]

    worst, worst_delta, worst_sel = -math.inf, Fraction(0), -math.inf
    for x, y in _pairs(B.grid_points(d, max(c.depth for c in cands)), n):
        (px, tx), (py, ty) = law(x), law(y)
        cert = B.certify(px, tx, py, claim, p2_tail=ty)
        worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
        for a, b in zip(sels[x.tobytes()], sels[y.tobytes()], strict=True):
            worst_sel = max(worst_sel, B._log_ratio(a.lo, b.hi))
    print(f"[bounded] adaptive: the selection alone, worst loss {worst_sel:.6g}")
    return claim, worst, worst_delta


ADAPTIVE_CANDS = (  # each spends epsilon_main = 8 per replacement: 2 sum_j 1 / sigma_j
    pkg.ScheduleCandidate(1, 1, (1.0, 0.25)),
    pkg.ScheduleCandidate(1, 2, (1.0, 0.5, 0.5)),
)


@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
def test_adaptive_pruned_pmm_mixture_law(selection, monkeypatch):
    claim, worst, delta = _adaptive_check(
        2, SYM, ADAPTIVE_CANDS, 4.0, 8.0, W=10, selection=selection, monkeypatch=monkeypatch
    )
    report(f"adaptive Pruned-PMM ({selection} mixture, n=2, 2 candidates)", claim, worst)
    assert delta <= DELTA_MAX, f"certificate failed: delta <= {float(delta):.3g}"
    assert worst <= claim


@pytest.mark.formal_long
@pytest.mark.parametrize("case", [(2, CO, None), (None, SYM, 2)], ids=["change-one", "unsized"])
def test_adaptive_pruned_pmm_mixture_law_full(case, monkeypatch):
    n, metric, size = case
    claim, worst, delta = _adaptive_check(
        n, metric, ADAPTIVE_CANDS, 4.0, 8.0, W=10, size=size, monkeypatch=monkeypatch
    )
    report(f"adaptive Pruned-PMM (mixture, n={n}, size={size})", claim, worst)
    assert delta <= DELTA_MAX
    assert worst <= claim


ADAPTIVE_CANDS_3 = (*ADAPTIVE_CANDS, pkg.ScheduleCandidate(1, 2, (1.0, 0.3125, 1.25)))


@pytest.mark.formal_long
@pytest.mark.parametrize("selection", ["exponential", "permute_and_flip"])
def test_adaptive_pruned_pmm_mixture_law_three_candidates(selection, monkeypatch):
    """Three candidates (the third spends 8 as 16/5 + 4/5), each candidate's window from its
    own largest scale."""
    claim, worst, delta = _adaptive_check(
        2, SYM, ADAPTIVE_CANDS_3, 4.0, 8.0, W=None, selection=selection, monkeypatch=monkeypatch
    )
    report(f"adaptive Pruned-PMM ({selection} mixture, n=2, 3 candidates)", claim, worst)
    assert delta <= DELTA_MAX
    assert worst <= claim


@pytest.mark.parametrize("factor", [0.5, 0.25])
def test_adaptive_mixture_planted_selection_scale(factor):
    """Mutants: the selection drawn at ``factor`` times the constructor's scale, the same map.
    A quarter fails the check.  A half passes it, and must: the paper's scores move in one
    direction on every pair (a replacement changes the occupancy ``O_j`` by ``+1`` on a run of
    levels or by ``-1`` on one, never both; the weights are positive), so the exponential
    mechanism's loss is at most ``Delta / scale = epsilon_select / 2``, and the map's factor 2
    is slack that no exact law on these grids can expose."""
    claim, worst, delta = _adaptive_check(
        2, SYM, ADAPTIVE_CANDS, 4.0, 8.0, W=10, scale_factor=factor
    )
    print(f"[mutant] adaptive, selection scale x{factor}: loss {worst:.6g}, map {claim:.6g}")
    if factor == 0.25:
        assert delta > DELTA_MAX
        assert worst > claim
    else:
        assert delta <= DELTA_MAX
        assert worst <= claim


# ---------------------------------------------------------------------------------------------
# the noisy size, then a measurement built from it


def _size_law(n: int, scale: float, K: int) -> tuple[dict[int, B.Iv], Fraction]:
    """``n_hat = max(1, n + Z)``, ``Z ~ LapZ(scale)``: ``P(n_hat = 1) = P(Z <= 1 - n)``,
    ``P(n_hat = k) = P(Z = k - n)`` for ``2 <= k <= K``, and the mass above ``K``."""
    law = {1: B.complement(B.lapz_at_least(2 - n, scale))}
    for k in range(2, K + 1):
        law[k] = B.lapz_pmf(k - n, scale)
    return law, B.lapz_at_least(K + 1 - n, scale).hi


def _noisy_size_check(eps_size, inner_scale, K, W, count_factor=1.0):
    """Certify ``make_noisy_size_then(eps_size, build)`` with ``build(k)`` a depth-1 Pruned-PMM
    releasing ``k`` rows (the root unnoised), on every add/remove pair of data sets of 0 .. 2
    rows of a 2-cell grid; ``count_factor`` scales the count's scale (a planted bug when below
    1: the code would draw the count at it, claiming the same map)."""
    d, depth = 1, 1
    scales = (math.inf, inner_scale)
    domain = dom(d, None)

    def build(k):
        return pkg.M.make_pruned_pmm(domain, SYM, depth, scales, output_size=k)

    unit = build(1).map(1)  # the levels, whatever k is (the root is not released)
    meas = pkg.M.make_noisy_size_then(domain, SYM, eps_size, build, lambda d_in: d_in * unit)
    plan = pkg.plan_of(meas)
    count_scale = inspect.getclosurevars(plan.noisy_size).nonlocals["count_scale"]
    t = pkg.T.make_dyadic_counts(domain, SYM, depth, scales)
    claim = meas.map(1)
    laws: dict[bytes, tuple[dict, Fraction]] = {}

    def law(x):
        key = (x.shape, x.tobytes())
        if key not in laws:
            sizes, tail = _size_law(x.shape[0], count_scale * count_factor, K)
            out: dict = {}
            for k, pk in sizes.items():
                main = pkg.plan_of(plan.inner(k))  # the measurement the release builds for k
                assert (main.depth, main.scales, main.root_size) == (depth, scales, k)
                pa, ta = _pruned_law(t, x, scales, k, W)
                tail += pk.hi * ta
                for o, p in pa.items():
                    out[(k, o)] = pk * p
            laws[key] = (out, tail)
        return laws[key]

    worst, worst_delta = -math.inf, Fraction(0)
    for x, y in B.add_remove_pairs(B.grid_points(d, depth), 3):
        (px, tx), (py, ty) = law(x), law(y)
        cert = B.certify(px, tx, py, claim, p2_tail=ty)
        worst, worst_delta = max(worst, cert.certified_loss), max(worst_delta, cert.delta)
    return claim, worst, worst_delta


def test_noisy_size_then_pruned_pmm_exact_law():
    claim, worst, delta = _noisy_size_check(2.0, 0.5, K=9, W=8)
    report("noisy size then Pruned-PMM (mixture over n_hat)", claim, worst)
    assert delta <= DELTA_MAX, f"certificate failed: delta <= {float(delta):.3g}"
    assert worst <= claim


@pytest.mark.formal_long
def test_noisy_size_then_pruned_pmm_exact_law_full():
    claim, worst, delta = _noisy_size_check(1.0, 0.5, K=24, W=9)
    report("noisy size (eps 1) then Pruned-PMM (mixture over n_hat)", claim, worst)
    assert delta <= DELTA_MAX
    assert worst <= claim


def test_noisy_size_catches_a_halved_count_scale():
    """Mutant: the count drawn at half its scale, the same map: fails."""
    claim, worst, delta = _noisy_size_check(2.0, 0.5, K=9, W=8, count_factor=0.5)
    print(f"[mutant] noisy size, halved count scale: loss {worst:.6g}, map {claim:.6g}")
    assert delta > DELTA_MAX
    assert worst > claim


# ---------------------------------------------------------------------------------------------
# the Gaussian trees: Renyi divergence of the whole noisy tree at the scales the code asks for

ALPHAS = (2, 3, 4)


class _RecordingNoise:
    """Node noise that records ``(level, cell) -> scale`` and reads every child as positive
    (``big``), so that the pruned traversal reaches every node of the tree; coins are 0."""

    def __init__(self, big: int = 2**10) -> None:
        self.asked: dict[tuple[int, tuple[int, ...]], float] = {}
        self.big = big

    def gaussian(self, level, cells, scale):
        for c in np.asarray(cells):
            self.asked[(int(level), tuple(int(v) for v in c))] = float(scale)
        return np.full(len(cells), self.big, dtype=np.int64)

    laplace = gaussian

    def coins(self, level, cells):
        return np.zeros(len(cells), dtype=np.int64)


def _renyi_worst(pairs_counts, sigmas, rho, sigma_factor=1.0):
    """``max over pairs and alpha of log(prod_v S_alpha(u_v, v_v, sigma_v)) / ((alpha - 1)
    alpha)`` (an upper bound of ``D_alpha / alpha``), asserting ``prod <= exp((alpha - 1)
    alpha rho)`` unless ``sigma_factor`` plants a bug (then the failures are counted)."""
    worst, failures = 0.0, 0
    for u, v in pairs_counts:
        for alpha in ALPHAS:
            prod = Fraction(1)
            for a, b, s in zip(u, v, sigmas, strict=True):
                prod *= B.dgauss_renyi(int(a), int(b), s * sigma_factor, alpha, W=60)
            bound = B.exp_iv((alpha - 1) * alpha * Fraction(rho)).lo
            if sigma_factor == 1.0:
                assert prod <= bound
            failures += prod > bound
            worst = max(worst, B._log_ratio(prod, Fraction(1)) / ((alpha - 1) * alpha))
    return worst, failures


def _pruned_gaussian_case(metric, n, monkeypatch):
    d, depth, scales = 1, 2, (1.0, 1.5, 2.0)
    t = pkg.T.make_dyadic_counts(dom(d, n), metric, depth, scales, output_metric="l2sq")
    meas = t >> pkg.M.make_pruned_tree_gaussian(t.output_domain, t.output_metric)
    rho = meas.map(_d_in(metric, n))
    rec = _RecordingNoise()
    monkeypatch.setattr(pkg.tree_noise_module, "_release_noise", lambda _dist: rec)
    pairs = B.replacement_pairs(B.grid_points(d, depth), n)
    meas(pairs[0][0])  # the release, run once with the recording noise: every node reached
    nodes = sorted(rec.asked)
    assert [lv for lv, _ in nodes] == [lv for lv in range(1, depth + 1) for _ in range(2**lv)]
    sigmas = [rec.asked[k] for k in nodes]  # the scale of each node, as the code asks for it

    def counts(x):  # the exact count of each node, in the order of ``nodes``
        tree = t(x)
        counter = pkg.tree_counter(tree)
        state = (np.zeros(1, dtype=np.int64), np.full(1, tree.n, dtype=np.int64))
        out = []
        for level in range(depth):
            kids, state = counter(level, state)
            out += [int(c) for c in np.asarray(kids).reshape(-1)]
        return out

    return rho, [(counts(x), counts(y)) for x, y in pairs], sigmas


@pytest.mark.parametrize("metric", [SYM, CO], ids=["symmetric", "change-one"])
def test_pruned_tree_gaussian_renyi_whole_tree(metric, monkeypatch):
    """make_pruned_tree_gaussian: its release is a function of the complete noisy tree (and
    coins), so ``D_alpha(release) <= sum_v D_alpha(node v)``; every node's ``sigma`` is the one
    the release asks its noise for (recorded on a run that reaches every node)."""
    rho, pc, sigmas = _pruned_gaussian_case(metric, 2, monkeypatch)
    worst, _ = _renyi_worst(pc, sigmas, rho)
    name = "symmetric" if metric == SYM else "change-one"
    report(f"pruned tree gaussian (Renyi D_alpha/alpha, alpha 2..4, {name})", rho, worst)


def test_pruned_tree_gaussian_catches_a_halved_sigma(monkeypatch):
    rho, pc, sigmas = _pruned_gaussian_case(SYM, 2, monkeypatch)
    worst, failures = _renyi_worst(pc, sigmas, rho, sigma_factor=0.5)
    print(f"[mutant] pruned tree gaussian, sigma / 2: D_alpha/alpha {worst:.6g} > rho {rho:.6g}")
    assert failures > 0


def _tree_count_gaussian_case(metric, n, monkeypatch):
    tree = pkg.Tree(parent=[-1, 0, 0, 1, 1, 2, 2], weight=[0, 1.0, 2.0, 0.5, 0.5, 1.0, 1.0])
    cands = np.array([[0.0], [1.0], [2.0], [3.0]])
    asked = []

    def sampler(node_scales, _rng):
        asked.append(np.asarray(node_scales, dtype=float).copy())
        return np.zeros(len(node_scales), dtype=np.int64)

    monkeypatch.setattr(pkg.tree_count_noise_module, "sample_discrete_gaussian", sampler)
    near = pkg.T.make_nearest_candidate(dom(1, n), metric, cands)
    t = pkg.T.make_tree_counts(
        near.output_domain, near.output_metric, tree, (1.0, 1.5, 2.0), output_metric="l2sq"
    )
    meas = near >> t >> pkg.M.make_tree_count_gaussian(t.output_domain, t.output_metric)
    rho = meas.map(_d_in(metric, n))
    pairs = B.replacement_pairs(cands, n) if n is not None else B.add_remove_pairs(cands, 2)
    meas(pairs[0][0])  # the release, run once: the scale of every node as the code asks for it
    (sigmas,) = asked
    assert len(sigmas) == len(tree.depth)
    pc = [((near >> t)(x).counts, (near >> t)(y).counts) for x, y in pairs]
    return rho, pc, [float(s) for s in sigmas]


@pytest.mark.parametrize("case", [(2, SYM), (2, CO), (None, SYM)], ids=str)
def test_tree_count_gaussian_renyi_whole_tree(case, monkeypatch):
    """make_tree_count_gaussian: every node of the public tree noised independently at the
    sigma the release hands its sampler; the whole tree's Renyi sum on every pair."""
    n, metric = case
    rho, pc, sigmas = _tree_count_gaussian_case(metric, n, monkeypatch)
    worst, _ = _renyi_worst(pc, sigmas, rho)
    report(f"tree count gaussian (Renyi D_alpha/alpha, alpha 2..4, n={n})", rho, worst)


def test_tree_count_gaussian_catches_a_halved_sigma(monkeypatch):
    rho, pc, sigmas = _tree_count_gaussian_case(SYM, 2, monkeypatch)
    worst, failures = _renyi_worst(pc, sigmas, rho, sigma_factor=0.5)
    print(f"[mutant] tree count gaussian, sigma / 2: D_alpha/alpha {worst:.6g} > rho {rho:.6g}")
    assert failures > 0
