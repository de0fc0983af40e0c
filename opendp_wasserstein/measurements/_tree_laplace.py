"""The discrete Laplace measurement on hierarchical counts in ``l1(s)``."""

from __future__ import annotations

from typing import Any

from opendp._internal import _make_measurement
from opendp.extras._utilities import to_then
from opendp.measures import max_divergence
from opendp.mod import Domain, Measurement, Metric, assert_features

from opendp_wasserstein._random import NOISE_STREAM, as_random_source
from opendp_wasserstein.domains import DyadicCountsDomain, WeightedL1Distance, descriptor_of
from opendp_wasserstein.noisy_tree import NoisyCountTree
from opendp_wasserstein.samplers import BACKENDS

__all__ = ["make_tree_laplace", "then_tree_laplace"]


def _identity_map(d_in: Any) -> float:
    d = float(d_in)
    if not d >= 0.0:
        raise ValueError("d_in must be a non-negative l1(s) distance")
    return d


def make_tree_laplace(
    input_domain: Domain,
    input_metric: Metric,
    backend: str = "fast",
    seed: int | None = None,
) -> Measurement:
    r"""Construct a Measurement adding ``LapZ(sigma_j)`` to every node of level ``j``.

    The release is a :class:`~opendp_wasserstein.noisy_tree.NoisyCountTree`: node noise is
    drawn the first time the node is asked for and then fixed, which has the law of drawing the
    whole noisy tree in advance.  Privacy map ``d_in -> d_in`` in ``max_divergence``: for
    ``F(X) + lambda`` with independent ``lambda_i ~ LapZ(s_i)`` the privacy loss is
    ``||F(X) - F(X')||_{l1(s)}`` (Zare Moayedi et al. 2026, Lemma in Appendix A.3).

    :param input_domain: a dyadic counts domain (the output of ``make_dyadic_counts``)
    :param input_metric: ``l1(s)`` (``weighted_l1_distance``) with one scale per level
    :param backend: discrete Laplace sampler, ``"fast"`` (default, exact vectorised) or
        ``"opendp"`` (OpenDP's ``make_laplace``, ``T="i64"``, one call per level batch)
    :param seed: **not private** -- a seed for reproducible tests and figures only; default
        ``None`` draws from the operating system's CSPRNG

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_laplace
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.symmetric_distance(), depth=3, scales=[1.0, 6.0, 6.0, 6.0])
    >>> meas = t >> make_tree_laplace(t.output_domain, t.output_metric)
    >>> meas.map(2)
    1.0
    >>> noisy = meas(np.random.default_rng(0).uniform(size=(100, 2)))
    >>> handles, counts = noisy.children(0, np.array([0]))  # the root's two noisy children
    >>> counts.shape
    (1, 2)
    """
    assert_features("contrib")
    dom = descriptor_of(input_domain, DyadicCountsDomain)
    met = descriptor_of(input_metric, WeightedL1Distance)
    if len(met.scales) != dom.depth + 1:
        raise ValueError(
            f"input_metric must have {dom.depth + 1} scales (one per level), got {len(met.scales)}"
        )
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "fast" and max(met.scales) > 2.0**52:
        raise ValueError("scales must be at most 2^52 with backend='fast' (use backend='opendp')")
    as_random_source(seed)  # validate now, draw fresh per release

    def function(counts: Any) -> NoisyCountTree:
        return NoisyCountTree(counts, met.scales, as_random_source(seed).derive(NOISE_STREAM), backend)

    return _make_measurement(input_domain, input_metric, max_divergence(), function, _identity_map)


then_tree_laplace = to_then(make_tree_laplace)
