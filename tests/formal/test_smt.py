"""Layer 3: the float glue, by z3 (formal/smt/glue.py) and by properties of the real functions."""

from __future__ import annotations

import importlib.util
import math
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.formal import package as pkg
from tests.formal.extracted import FORMAL

z3 = pytest.importorskip("z3")  # the dev extra installs z3-solver


def _glue():
    spec = importlib.util.spec_from_file_location("formal_smt_glue", FORMAL / "smt" / "glue.py")
    assert spec is not None
    assert spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


GLUE = _glue()


@pytest.mark.parametrize("check", GLUE.CHECKS, ids=lambda c: c.name)
def test_smt_check_is_proved(check):
    result, seconds = GLUE.run(check, timeout_ms=60_000)
    assert result == "unsat", f"{check.name}: z3 says {result} after {seconds:.1f} s"


def test_a_false_claim_is_refuted():
    """The encoding can fail: ``RU(x) <= x`` (rounding the wrong way) is satisfiable-refuted."""
    x, s = z3.Reals("x s")
    solver = z3.Solver()
    solver.add(x > 0, s >= 2 / x, 2 / s < x)  # a scale below 2/x would overspend
    assert solver.check() == z3.sat


rationals = st.fractions(
    min_value=Fraction(-10) ** 300, max_value=Fraction(10) ** 300, max_denominator=10**400
)


@settings(max_examples=300, deadline=None)
@given(rationals)
def test_round_up_and_down_are_the_directed_roundings(q):
    up, down = pkg.round_up(q), pkg.round_down(q)
    assert Fraction(up) >= q
    assert Fraction(math.nextafter(up, -math.inf)) < q
    assert Fraction(down) <= q
    assert Fraction(math.nextafter(down, math.inf)) > q


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-12, max_value=1e12), st.floats(min_value=1e-6, max_value=1 - 1e-6))
def test_api_split_never_certifies_more_than_its_total(total, share):
    a, b = pkg.api_split(total, share)
    assert pkg.round_down(Fraction(a) + Fraction(b)) <= total


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(min_value=0.5, max_value=1e6), min_size=2, max_size=12),
    st.floats(min_value=1e-3, max_value=10.0),
    st.data(),
)
def test_tighten_budget_meets_its_postcondition(scales, eps, data):
    charged = list(range(1, len(scales)))
    adjust = data.draw(st.sampled_from(charged))
    # a schedule roughly spending eps, as the callers pass
    total = pkg.spent(scales, charged)
    scaled = [scales[0], *[float(s * total / Fraction(eps)) for s in scales[1:]]]
    before = list(scaled)
    out = pkg.tighten_budget(scaled, charged, eps, adjust)
    assert scaled == before  # the input is not modified
    exact = pkg.spent(out, charged)
    assert exact <= Fraction(eps)  # never above the budget
    assert pkg.round_up(exact) <= eps
    assert out[0] == scaled[0]  # the root scale is not touched
