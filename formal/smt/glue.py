"""SMT checks of the float glue (layer 3), with z3.

Each check is a small lemma whose negation z3 must find unsatisfiable:

* ``round_up`` / ``round_down`` (the package's algorithm: the round-to-nearest conversion that
  CPython's ``float(Fraction)`` performs, then one ``math.nextafter`` step when it landed on the
  wrong side) return the smallest float >= (largest float <=) their argument: two bit-level
  lemmas about ``nextafter`` in the theory of floating point, then the argument in linear real
  arithmetic from the nearness of the conversion (a single-shot encoding with a real-to-float
  conversion did not finish in 120 s: split into small lemmas, each is proved in seconds);
* every budget split of the package certifies at most its total, from those two properties
  (``x <= RU(x)``, ``RU(x) <= g`` for every float ``g >= x``, and dually);
* ``tighten_budget``'s solve step never overspends: ``rest + 2 / RU(2 / (eps - rest)) <= eps``.

Run ``python formal/smt/glue.py`` for the table of checks and timings; ``tests/formal/test_smt.py``
runs them in CI.  The link from these models to the Python code is stated per check (and the
model's assumption, CPython's correctly rounded ``Fraction.__float__``, is in ASSUMPTIONS.md).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import z3

F64 = z3.Float64()
MAX = (2 - 2**-52) * 2**1023


def _next(f: z3.FPRef, up: bool) -> z3.FPRef:
    """``math.nextafter(f, +-inf)`` for a finite ``f``, on the bit pattern."""
    bits = z3.fpToIEEEBV(f)
    tiny = z3.fpBVToFP(z3.BitVecVal(1, 64), F64)
    step = z3.If(z3.fpIsPositive(f) == up, bits + 1, bits - 1)
    return z3.If(z3.fpIsZero(f), tiny if up else -tiny, z3.fpBVToFP(step, F64))


def round_up_model(q: z3.ArithRef) -> z3.FPRef:
    """``exact.round_up``: ``f = float(q)`` (round to nearest, even), then ``nextafter(f, inf)``
    when ``Fraction(f) < q``."""
    f = z3.fpToFP(z3.RNE(), q, F64)
    return z3.If(z3.fpToReal(f) < q, _next(f, True), f)


def round_down_model(q: z3.ArithRef) -> z3.FPRef:
    f = z3.fpToFP(z3.RNE(), q, F64)
    return z3.If(z3.fpToReal(f) > q, _next(f, False), f)


@dataclass(frozen=True)
class Check:
    name: str
    covers: str
    build: Callable[[], list[z3.BoolRef]]  # the negated claim's constraints


def _finite_range(q: z3.ArithRef) -> list[z3.BoolRef]:
    return [q <= MAX, q >= -MAX]


def _next_above() -> list[z3.BoolRef]:
    """``nextafter(f, inf) > f`` for every finite float ``f`` below the largest (bit level)."""
    f = z3.FP("f", F64)
    return [z3.Not(z3.fpIsInf(f)), z3.Not(z3.fpIsNaN(f)), z3.fpLT(f, z3.FPVal(MAX, F64)),
            z3.Not(z3.fpLT(f, _next(f, True)))]


def _next_adjacent() -> list[z3.BoolRef]:
    """No float lies strictly between ``f`` and ``nextafter(f, inf)`` (bit level)."""
    f, g = z3.FPs("f g", F64)
    n = _next(f, True)
    return [z3.Not(z3.fpIsInf(f)), z3.Not(z3.fpIsNaN(f)), z3.fpLT(f, z3.FPVal(MAX, F64)),
            z3.Not(z3.fpIsNaN(g)), z3.fpLT(f, g), z3.fpLT(g, n)]


def _next_below() -> list[z3.BoolRef]:
    f = z3.FP("f", F64)
    return [z3.Not(z3.fpIsInf(f)), z3.Not(z3.fpIsNaN(f)), z3.fpGT(f, z3.FPVal(-MAX, F64)),
            z3.Not(z3.fpGT(f, _next(f, False)))]


def _next_adjacent_below() -> list[z3.BoolRef]:
    f, g = z3.FPs("f g", F64)
    n = _next(f, False)
    return [z3.Not(z3.fpIsInf(f)), z3.Not(z3.fpIsNaN(f)), z3.fpGT(f, z3.FPVal(-MAX, F64)),
            z3.Not(z3.fpIsNaN(g)), z3.fpGT(f, g), z3.fpGT(g, n)]


def _round_up_smallest() -> list[z3.BoolRef]:
    """``round_up(q)`` is the smallest float >= q.  Values as reals: ``f = float(q)`` is a
    nearest float to ``q`` (CPython's correctly rounded conversion, instantiated at the two
    floats the argument needs), ``n = nextafter(f, inf)`` is above ``f`` with no float between
    (the two bit-level lemmas), ``g`` any float >= q; the claim: ``r >= q`` and ``r <= g``."""
    q, f, n, g = z3.Reals("q f n g")
    r = z3.If(f < q, n, f)
    near = lambda h: z3.Abs(h - q) >= z3.Abs(f - q)  # noqa: E731
    return [near(g), near(n), f < n, z3.Implies(f < g, n <= g), g >= q,
            z3.Or(r < q, r > g)]


def _round_down_largest() -> list[z3.BoolRef]:
    q, f, n, g = z3.Reals("q f n g")
    r = z3.If(f > q, n, f)
    near = lambda h: z3.Abs(h - q) >= z3.Abs(f - q)  # noqa: E731
    return [near(g), near(n), f > n, z3.Implies(f > g, n >= g), g <= q,
            z3.Or(r > q, r < g)]


# --- the budget splits, over the reals with the directed-rounding properties proved above.
# RU, RD are uninterpreted; a float is a real the checks may compare with RU/RD results.

def _directed(name: str):
    ru = z3.Function(f"RU_{name}", z3.RealSort(), z3.RealSort())
    rd = z3.Function(f"RD_{name}", z3.RealSort(), z3.RealSort())
    return ru, rd


def _adaptive_split(sized: bool) -> list[z3.BoolRef]:
    """make_adaptive_pruned_pmm: ``T = RD(e_sel + e_main [/ 2])``, ``eps' = RD(T - U/c)``,
    ``beta = RU(2 Delta / eps')``; one unit certifies ``RU(2 Delta / beta + U / c) <= T``."""
    e1, e2, U, D = z3.Reals("e_sel e_main U Delta")
    T, eps_p, beta, cert = z3.Reals("T eps_prime beta cert")
    c = 1 if sized else 2
    exact_total = e1 + e2 if sized else e1 + e2 / 2
    exact = 2 * D / beta + U / c
    return [e1 > 0, e2 > 0, U > 0, D > 0,
            T <= exact_total, T - U / c > 0,          # T = RD(total) (checked > 0 by the code)
            eps_p <= T - U / c, eps_p > 0,            # eps' = RD(T - U/c)
            beta >= 2 * D / eps_p,                     # beta = RU(2 Delta / eps')
            cert >= exact,                             # cert = RU(exact) ...
            z3.Implies(T >= exact, cert <= T),         # ... the smallest float above: T is a float
            z3.Not(z3.And(cert <= T, T <= exact_total))]


# Not in CHECKS: bit-blasting the float multiply and the two directed operations ran this
# machine's solver out of memory (the process was killed in seconds); release.measurement.split_budget is checked by
# a property test on the real function instead (tests/formal/test_smt.py).
def _api_split() -> list[z3.BoolRef]:
    """release.measurement.split_budget: ``a = fl(share * total)``, ``b = RU(total - a)``; the adaptive map rounds
    ``a + b`` down: ``RD(a + b) <= total``.  An exact difference or sum rounded in one
    direction is IEEE's subtraction / addition in that rounding mode, so the check is pure
    floating point."""
    total, share = z3.FPs("total share", F64)
    a = z3.fpMul(z3.RNE(), share, total)
    b = z3.fpSub(z3.RTP(), total, a)
    s = z3.fpAdd(z3.RTN(), a, b)
    return [z3.fpIsNormal(total), z3.fpGT(total, z3.FPVal(0.0, F64)), z3.fpLT(total, z3.FPVal(1e100, F64)),
            z3.fpGT(share, z3.FPVal(0.0, F64)), z3.fpLT(share, z3.FPVal(1.0, F64)),
            z3.Not(z3.fpIsInf(a)), z3.fpGT(s, total)]


def _privtree_split() -> list[z3.BoolRef]:
    """api (privtree): ``e = RD(r/2)`` for both halves, ``lambda = RU(3/e)``,
    ``sigma_c = RU(1/e)``: ``3/lambda + 1/sigma_c <= r``."""
    r, e, lam, sc = z3.Reals("r e lam sc")
    return [r > 0, e > 0, e <= r / 2, lam >= 3 / e, sc >= 1 / e, 3 / lam + 1 / sc > r]


def _noisy_size_split() -> list[z3.BoolRef]:
    """api (private size): ``rest = RD(eps - count)``; the noisy-size map of one record,
    ``RU(count + RU(rest))`` with ``rest`` a float, is at most ``eps``."""
    eps, count, rest, cert = z3.Reals("eps count rest cert")
    return [eps > 0, count > 0, rest > 0, rest <= eps - count,
            cert >= count + rest, z3.Implies(eps >= count + rest, cert <= eps), cert > eps]


def _root_split() -> list[z3.BoolRef]:
    """api (private size, fixed depth): ``root = RD(2 eps/3)``, ``sigma_0 = RU(1/root)``,
    ``half = RD(eps - 1/sigma_0)``; one record costs ``1/sigma_0 + half <= eps``."""
    eps, root, s0, half = z3.Reals("eps root s0 half")
    return [eps > 0, root > 0, root <= 2 * eps / 3, s0 >= 1 / root, half <= eps - 1 / s0, 1 / s0 + half > eps]


def _tighten_step() -> list[z3.BoolRef]:
    """exact.tighten_budget: ``cand = RU(2 / (eps - rest))`` for ``rest < eps`` gives
    ``rest + 2 / cand <= eps`` (the accepted candidates are checked exactly by the code)."""
    eps, rest, cand = z3.Reals("eps rest cand")
    return [eps > 0, rest >= 0, rest < eps, cand >= 2 / (eps - rest), rest + 2 / cand > eps]


def _tighten_final() -> list[z3.BoolRef]:
    """The fall-back of tighten_budget and the tree / paper schedules alike: a scale re-solved
    by ``RU`` never raises the budget: ``2 / RU(2 / x) <= x`` for ``x > 0``."""
    x, s = z3.Reals("x s")
    return [x > 0, s >= 2 / x, 2 / s > x]


CHECKS: tuple[Check, ...] = (
    Check("nextafter(f, inf) > f", "exact.round_up (math.nextafter)", _next_above),
    Check("no float between f and nextafter(f, inf)", "exact.round_up (math.nextafter)", _next_adjacent),
    Check("nextafter(f, -inf) < f", "exact.round_down (math.nextafter)", _next_below),
    Check("no float between nextafter(f, -inf) and f", "exact.round_down (math.nextafter)", _next_adjacent_below),
    Check("round_up(q) is the smallest float >= q", "exact.round_up", _round_up_smallest),
    Check("round_down(q) is the largest float <= q", "exact.round_down", _round_down_largest),
    Check("adaptive split, public size: certified <= e_sel + e_main", "make_adaptive_pruned_pmm", lambda: _adaptive_split(True)),
    Check("adaptive split, private size: certified <= e_sel + e_main/2", "make_adaptive_pruned_pmm", lambda: _adaptive_split(False)),
    Check("privtree halves: 3/lambda + 1/sigma_c <= r", "api.synthesize(privtree), privtree_parameters", _privtree_split),
    Check("noisy size: RU(count + rest) <= eps", "api.synthesize(private size), make_noisy_size_then", _noisy_size_split),
    Check("root split: 1/sigma_0 + half <= eps", "api.synthesize(private size, depth)", _root_split),
    Check("tighten_budget step: rest + 2/RU(2/(eps-rest)) <= eps", "exact.tighten_budget", _tighten_step),
    Check("re-solved scale: 2/RU(2/x) <= x", "exact.tighten_budget, schedules", _tighten_final),
)


def run(check: Check, timeout_ms: int = 120_000) -> tuple[str, float]:
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*check.build())
    t = time.perf_counter()
    res = s.check()
    return str(res), time.perf_counter() - t


if __name__ == "__main__":
    bad = 0
    for c in CHECKS:
        res, dt = run(c)
        ok = res == "unsat"
        bad += not ok
        print(f"{'proved' if ok else res:8s} {dt:7.2f} s  {c.name}  [{c.covers}]")
    sys.exit(1 if bad else 0)
