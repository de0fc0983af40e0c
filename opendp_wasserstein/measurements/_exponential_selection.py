"""Private selection of the lowest score: the exponential mechanism, exactly, or
permute-and-flip."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._compat import make_measurement, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.parameters import check_epsilon

__all__ = ["SELECTIONS", "make_exponential_selection", "then_exponential_selection"]

SELECTIONS = ("exponential", "permute_and_flip")


def make_exponential_selection(
    input_domain: Domain,
    input_metric: Metric,
    epsilon: float,
    sensitivity: float,
    selection: str = "exponential",
    negate: bool = True,
) -> Measurement:
    r"""Construct a Measurement releasing the index of a low (``negate=True``) score, pure eps-DP.

    ``selection="exponential"`` releases ``a`` with probability exactly proportional to
    ``exp(-epsilon * B_a / (2 * sensitivity))``: OpenDP's ``make_noisy_max`` with
    ``zero_concentrated_divergence()`` adds Gumbel noise, and the Gumbel-max trick makes its
    output exactly the softmax of ``score / scale`` with ``scale = 2 * sensitivity / epsilon``.
    That is the exponential mechanism (McSherry and Talwar 2007), which is pure DP with
    ``eps = 2 d_in / scale`` for scores that may move in both directions; this measurement
    certifies that in ``max_divergence`` (OpenDP's own map would only state zCDP).

    ``selection="permute_and_flip"`` is OpenDP's ``make_noisy_max`` with ``max_divergence()``
    (exponential noise = permute-and-flip, McKenna and Sheldon 2020): the same privacy, never
    worse in expected score; its map is OpenDP's.

    Required features: ``contrib``

    **Citations:**

    * McSherry, Talwar, *Mechanism Design via Differential Privacy*, FOCS 2007

    **Proof Definition:** :doc:`/proofs/exponential_selection`

    :param input_domain: ``dp.vector_domain(dp.atom_domain(T=float, nan=False), size=k)``
    :param input_metric: ``dp.linf_distance(T=float)``
    :param epsilon: the privacy loss when the scores move by ``sensitivity`` in l_inf
    :param sensitivity: the l_inf score sensitivity the scale is calibrated to
    :param selection: ``"exponential"`` (default) or ``"permute_and_flip"``
    :param negate: select low scores (default) rather than high ones

    :example:

    >>> import opendp.prelude as dp
    >>> from opendp_wasserstein.measurements import make_exponential_selection
    >>> dp.enable_features("contrib")
    >>> m = make_exponential_selection(
    ...     dp.vector_domain(dp.atom_domain(T=float, nan=False), size=3),
    ...     dp.linf_distance(T=float), epsilon=1.0, sensitivity=0.5)
    >>> m.map(0.5)
    1.0
    >>> m([10.0, 0.0, 10.0])  # almost surely the smallest
    1
    """
    assert_features("contrib")
    eps = check_epsilon(epsilon)
    delta = check_epsilon(sensitivity, "sensitivity")
    if selection not in SELECTIONS:
        raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if not isinstance(negate, (bool, np.bool_)):
        raise TypeError(f"negate must be True or False, got {type(negate).__name__}")
    negate = bool(negate)
    if input_metric != dp.linf_distance(T=float):
        raise ValueError(f"input_metric must be dp.linf_distance(T=float), got {input_metric}")
    scale = round_up(2 * Fraction(delta) / Fraction(eps))  # >= 2 Delta / eps: never above eps
    if selection == "permute_and_flip":
        return dp.m.make_noisy_max(input_domain, input_metric, dp.max_divergence(), scale, negate)
    inner = dp.m.make_noisy_max(
        input_domain, input_metric, dp.zero_concentrated_divergence(), scale, negate
    )

    def privacy_map(d_in: Any) -> float:
        d = Fraction(float(d_in))
        if d < 0:
            raise ValueError("d_in must be non-negative")
        return round_up(2 * d / Fraction(scale))

    def function(scores: Any) -> int:
        return int(inner(np.asarray(scores, dtype=np.float64).tolist()))

    return make_measurement(input_domain, input_metric, dp.max_divergence(), function, privacy_map)


then_exponential_selection = to_then(make_exponential_selection)
register(make_exponential_selection)
