"""The nearest-candidate projection as a stable OpenDP transformation."""

from __future__ import annotations

from typing import Any

import numpy as np
from opendp.mod import Domain, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import (
    check_data_domain,
    check_metric,
    domain_allows_nan,
    validate_data,
)
from opendp_wasserstein.public_candidates.sets import NearestCandidates, check_candidate_dims

__all__ = [
    "make_nearest_candidate",
    "then_nearest_candidate",
    "candidate_index_domain",
    "check_index_domain",
]


def candidate_index_domain(k: int, size: int | None) -> Domain:
    """``dp.vector_domain(dp.atom_domain(bounds=(0, k - 1), T="i64"), size=size)``: vectors of
    candidate indices, the output of :func:`make_nearest_candidate`."""
    return dp.vector_domain(dp.atom_domain(bounds=(0, int(k) - 1), T="i64"), size=size)


def check_index_domain(
    input_domain: Domain, k: int | None = None, name: str = "input_domain"
) -> tuple[int, int | None]:
    """Check a candidate-index domain (see :func:`candidate_index_domain`) and return
    ``(k, size)``; with ``k`` given, its bounds must be ``(0, k - 1)``."""
    element = getattr(input_domain, "element_domain", None)
    if (
        element is None
        or str(getattr(element, "carrier_type", "")) != "i64"
        or not str(input_domain.type).startswith("VectorDomain")
    ):
        raise ValueError(
            f"{name} must be a vector domain of candidate indices, "
            "dp.vector_domain(dp.atom_domain(bounds=(0, k - 1), T='i64'), size=n or None), "
            f"got {input_domain}"
        )
    bounds = input_domain.element_domain.bounds
    if bounds is None or int(bounds[0]) != 0:
        raise ValueError(f"{name} must have element bounds (0, k - 1), got {bounds}")
    kk = int(bounds[1]) + 1
    if k is not None and kk != k:
        raise ValueError(
            f"{name} has {kk} candidates (bounds (0, {kk - 1})) but the tree has {k} leaves"
        )
    size = input_domain.size
    return kk, None if size is None else int(size)


def project_rows(nearest: NearestCandidates, x: np.ndarray) -> np.ndarray:
    """One nearest candidate for every row of ``x`` (the function of
    :func:`make_nearest_candidate`): ties exact and dealt evenly over the tie set, a row with a
    NaN or infinite coordinate tied with every candidate (:class:`NearestCandidates`)."""
    return nearest.query(x)


def make_nearest_candidate(
    input_domain: Domain, input_metric: Metric, candidates: Any, metric: str = "l2"
) -> Transformation:
    r"""Construct a Transformation sending every row to the index of its nearest candidate.

    Every row goes to one of its nearest candidates in the ground metric ``metric`` (``"l1"``,
    ``"l2"``, ``"linf"``; exact comparisons), chunked so that ``n = 10^6`` rows against ``k =
    10^5`` candidates fit in memory.  **Ties** are spread, not sent to the lowest index: the
    ``g`` rows whose exact nearest candidates are the same ``t`` candidates are dealt
    round-robin over them (``floor(g/t)`` or ``ceil(g/t)`` each), in an order fixed by the
    candidates' values, so the histogram ``pi#D`` is a function of the multiset of rows and
    of the candidate *set* (a permutation of the candidates permutes it); a row with a NaN or
    infinite coordinate is tied with every candidate
    (:mod:`opendp_wasserstein.public_candidates.sets`). Adding one row adds one unit to one
    candidate of ``pi#D``, so the map is stable with ``d_out = d_in`` under ``symmetric_distance``
    and ``change_one_distance``, as a row-wise map is (proof: ``docs/proofs/tree_projection.rst``,
    "Ties").  For any multiset ``S`` on ``C``, ``W1(D, S) <= mean_x d(x, C) + W1(pi#D, S)`` and
    ``W1(D, S) >= mean_x d(x, C)``: selection reduces to the histogram ``pi#D`` on ``C``.

    Required features: ``contrib``

    **Citations:**

    * Zare Moayedi et al., *Private Selection from Public Candidates with Wasserstein Guarantees*

    **Proof Definition:** :doc:`/proofs/tree_projection`

    :param input_domain: ``dp.numpy.array2_domain(num_columns=p, size=n or None, T=float)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param candidates: the public candidates, a ``(k, p)`` array of distinct finite rows
    :param metric: the ground metric, ``"l2"`` by default
    :return: a Transformation into :func:`candidate_index_domain` ``(k, n)``, same metric

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_nearest_candidate
    >>> dp.enable_features("contrib")
    >>> t = make_nearest_candidate(
    ...     dp.numpy.array2_domain(num_columns=1, size=4, T=float), dp.symmetric_distance(),
    ...     candidates=[[0.0], [1.0], [2.0]])
    >>> t(np.array([[0.2], [1.9], [0.5], [0.5]]))  # 0.5 ties 0 and 1: one row to each
    [0, 2, 1, 0]
    >>> t.map(2)
    2
    """
    assert_features("contrib")
    d, n = check_data_domain(input_domain)
    check_metric(input_metric, n)
    nearest = NearestCandidates(candidates, metric)
    check_candidate_dims(nearest.candidates, d)

    nan_ok = domain_allows_nan(input_domain)

    def function(x: np.ndarray) -> np.ndarray:
        return project_rows(nearest, validate_data(x, d, n, nan=nan_ok))

    def stability_map(d_in: Any) -> int:
        if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)) or d_in < 0:
            raise ValueError("d_in must be a non-negative integer")
        return int(d_in)

    trans = make_transformation(
        input_domain,
        input_metric,
        candidate_index_domain(nearest.k, n),
        input_metric,
        function,
        stability_map,
    )
    trans.nearest = nearest  # the row-wise projection, for a distributed plan
    return trans


then_nearest_candidate = to_then(make_nearest_candidate)
register(make_nearest_candidate)
