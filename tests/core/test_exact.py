"""Exact arithmetic for the maps: the square root rounded up."""

from fractions import Fraction

import numpy as np
import pytest

from opendp_wasserstein.core.exact import sqrt_up


@pytest.mark.parametrize(
    "q", [Fraction(2), Fraction(18), Fraction(1, 3), Fraction(9, 4), Fraction(10**30 + 1)]
)
def test_sqrt_up_is_the_smallest_float_whose_square_is_at_least_q(q):
    x = sqrt_up(q)
    assert Fraction(x) ** 2 >= q
    assert Fraction(float(np.nextafter(x, 0))) ** 2 < q


def test_sqrt_up_exact_values_and_refusal():
    assert sqrt_up(0) == 0.0
    assert sqrt_up(4) == 2.0
    assert sqrt_up(2) == 1.4142135623730951
    with pytest.raises(ValueError, match="non-negative"):
        sqrt_up(-1)
