"""Planted bugs: each mutant, applied by monkeypatching the package, must fail at least one of
the formal checks (and the honest code must pass the same check)."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import opendp.prelude as dp

from tests.formal import bounded as B
from tests.formal import package as pkg

dp.enable_features("contrib", "idealized-numerics")

SYM, CO = dp.symmetric_distance(), dp.change_one_distance()
CASES = [
    (1, None, True, 2.0, [4.0, 4.0], 1),
    (2, None, True, 1.0, [3.0, 5.0, 7.0], 3),
    (2, 10, False, 1.0, [4.0, 2.0], 1),
    (1, 10, True, math.inf, [4.0], 2),
    (3, 7, False, 1.0, [1.5, 2.5], 4),
]


def module_of(fn):
    return sys.modules[fn.__module__]


def dyadic_mismatches(maps) -> list:
    """The diff check of test_extracted_maps on fixed cases: (case, python, extracted)."""
    out = []
    for d, n, sym, root, levels, d_in in CASES:
        dom = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
        t = pkg.T.make_dyadic_counts(dom, SYM if sym else CO, len(levels), [root, *levels])
        exact = pkg.round_up(maps.hier_l1(sym, n is not None, root, levels, d_in))
        if t.map(d_in) != exact:
            out.append(((d, n, sym, d_in), t.map(d_in), exact))
    return out


def test_honest_maps_pass(maps):
    assert dyadic_mismatches(maps) == []


def test_mutant_root_not_charged(maps, monkeypatch):
    mod = module_of(pkg.T.make_dyadic_counts)
    honest = mod.dyadic_counts_stability

    def root_never_charged(metric_kind, size, scales):
        return honest(metric_kind, 1, scales)  # as if the size were public: the root is free

    monkeypatch.setattr(mod, "dyadic_counts_stability", root_never_charged)
    assert dyadic_mismatches(maps), "the extracted-map check missed an uncharged root"


def test_mutant_change_one_as_half_a_replacement(maps, monkeypatch):
    mod = module_of(pkg.T.make_dyadic_counts)
    honest = mod.replacements

    def half(metric_kind, d_in):
        r = honest(metric_kind, d_in)
        return r / 2 if metric_kind == "change_one" else r

    monkeypatch.setattr(mod, "replacements", half)
    assert dyadic_mismatches(maps), (
        "the extracted-map check missed change-one charged as half a replacement"
    )


def test_mutant_selection_scale_rounded_to_nearest(monkeypatch):
    """``beta = fl(2 Delta / eps)`` (to nearest) instead of rounded up: for some (eps, Delta)
    the map of one sensitivity exceeds epsilon (the postcondition Mechanisms.selection_calibration
    states), which the check below finds."""
    mod = module_of(pkg.M.make_exponential_selection)
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3)

    def violations():
        bad = 0
        for i in range(1, 200):
            eps, sens = 1.0 / (3 * i + 1), 0.1 * i + 0.07
            m = pkg.M.make_exponential_selection(vec, dp.linf_distance(T=float), eps, sens)
            bad += m.map(sens) > eps
        return bad

    assert violations() == 0
    monkeypatch.setattr(mod, "round_up", lambda q: float(Fraction(q)))
    assert violations() > 0, "no check caught the selection scale rounded to nearest"


def test_mutant_halved_noise_scale_same_claim(monkeypatch):
    """The noise drawn at half the scale while the map stays the same: the bounded check of the
    Pruned-PMM law finds an outcome whose certified loss (a lower bound) is above the map."""
    d, depth, n = 1, 2, 2
    scales = (1.0, 0.7, 0.7)
    dom = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
    t = pkg.T.make_dyadic_counts(dom, SYM, depth, scales)
    claim = (t >> pkg.M.make_pruned_tree_laplace(t.output_domain, t.output_metric)).map(2)
    # the hardest pair of the grid for the honest code (certified loss 4.16 of a map of 5.71)
    x, y = B.grid_points(d, depth)[[1, 2]], B.grid_points(d, depth)[[3, 2]]

    def cert():
        px, tx = B.pruned_law(t(x), scales, n, 12)
        py, ty = B.pruned_law(t(y), scales, n, 12)
        return B.certify(px, tx, py, claim, p2_tail=ty)

    honest_cert = cert()
    assert honest_cert.delta <= Fraction(1, 10**6)
    assert honest_cert.certified_loss <= claim
    mod = module_of(pkg.expand_levels)
    honest = mod.noise_draw

    def halved(noise, distribution):
        draw = honest(noise, distribution)
        return lambda level, cells, scale: draw(level, cells, scale / 2)

    monkeypatch.setattr(mod, "noise_draw", halved)
    # an outcome whose probability ratio is, rigorously, above e^map (the map is refuted)
    assert cert().certified_loss > claim, "the bounded check missed the halved noise scale"
