"""Post-processing Functions: consistency corrections and synthesis, as OpenDP ``Function`` s.

Each one reads only the noisy release and public parameters, and draws auxiliary randomness
independent of the data, so chaining it after a measurement costs no privacy.
"""

from __future__ import annotations

from typing import Any

from opendp._internal import _new_pure_function
from opendp.mod import Domain, Function

from opendp_wasserstein._random import (
    CORRECTION_STREAM,
    PLACEMENT_STREAM,
    RandomSource,
    as_random_source,
)
from opendp_wasserstein.consistency import LeafMasses, full_correction, pruned_correction
from opendp_wasserstein.domains import Box, DyadicCountsDomain, descriptor_of
from opendp_wasserstein.synthesis import check_placement, place_points

__all__ = ["make_pruned_consistency", "make_full_consistency", "make_synthesis"]


def _source(seed: int | None, stream: int) -> RandomSource:
    return as_random_source(seed).derive(stream)


def make_pruned_consistency(counts_domain: Domain, seed: int | None = None) -> Function:
    """The zero-respecting correction with pruning (Algorithms 1 and 2), as a ``Function`` from
    a noisy count tree to :class:`~opendp_wasserstein.consistency.LeafMasses`.

    The root mass is the public size ``n`` when the domain has one, else ``max(1, n'_root)``.

    :param counts_domain: the dyadic counts domain the noisy tree was drawn on
    :param seed: **not private**; tie-breaking randomness for tests and figures only

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_laplace
    >>> from opendp_wasserstein.postprocessing import make_pruned_consistency, make_synthesis
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
    ...                        dp.symmetric_distance(), depth=4, scales=[1.0] + [8.0] * 4)
    >>> meas = (t >> make_tree_laplace(t.output_domain, t.output_metric)
    ...           >> make_pruned_consistency(t.output_domain)
    ...           >> make_synthesis(t.output_domain, placement="center"))
    >>> meas.map(2)
    1.0
    >>> meas(np.random.default_rng(0).uniform(size=(100, 2))).shape
    (100, 2)
    """
    dom = descriptor_of(counts_domain, DyadicCountsDomain)
    as_random_source(seed)
    return _new_pure_function(
        lambda noisy: pruned_correction(noisy, dom.size, _source(seed, CORRECTION_STREAM)),
        TO="ExtrinsicObject",
    )


def make_full_consistency(counts_domain: Domain) -> Function:
    """The full-tree PMM correction of He, Vershynin and Zhu (2023): a comparable split at
    every node and all ``2^depth`` leaves, as a ``Function`` to ``LeafMasses``.

    :param counts_domain: the dyadic counts domain the noisy tree was drawn on

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_laplace
    >>> from opendp_wasserstein.postprocessing import make_full_consistency, make_synthesis
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=1, size=20, T=float),
    ...                        dp.change_one_distance(), depth=3, scales=[1.0] + [6.0] * 3)
    >>> meas = (t >> make_tree_laplace(t.output_domain, t.output_metric)
    ...           >> make_full_consistency(t.output_domain) >> make_synthesis(t.output_domain))
    >>> meas.map(1), meas(np.full((20, 1), 0.3)).shape
    (1.0, (20, 1))
    """
    dom = descriptor_of(counts_domain, DyadicCountsDomain)
    return _new_pure_function(lambda noisy: full_correction(noisy, dom.size), TO="ExtrinsicObject")


def make_synthesis(
    counts_domain: Domain, placement: str = "center", seed: int | None = None, diagnostics: bool = False
) -> Function:
    """Synthesis from consistent leaf masses: ``m_theta`` points per leaf at the cell centre
    (``placement="center"``) or uniform in the cell (``"uniform"``), mapped into the box.

    :param counts_domain: the dyadic counts domain (gives the box and the depth)
    :param placement: ``"center"`` or ``"uniform"``
    :param seed: **not private**; placement/shuffle randomness for tests and figures only
    :param diagnostics: release ``(points, info)`` with the public traversal statistics

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_tree_laplace
    >>> from opendp_wasserstein.postprocessing import make_pruned_consistency, make_synthesis
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=50, T=float),
    ...                        dp.symmetric_distance(), depth=6, scales=[1.0] + [12.0] * 6,
    ...                        bounds=([0, 0], [10, 5]))
    >>> meas = (t >> make_tree_laplace(t.output_domain, t.output_metric)
    ...           >> make_pruned_consistency(t.output_domain)
    ...           >> make_synthesis(t.output_domain, placement="uniform", diagnostics=True))
    >>> points, info = meas(np.random.default_rng(0).uniform(size=(50, 2)) * [10, 5])
    >>> points.shape, bool(np.all(points <= [10, 5])), info["depth"]
    ((50, 2), True, 6)
    """
    dom = descriptor_of(counts_domain, DyadicCountsDomain)
    check_placement(placement)
    box = Box(dom.lower, dom.upper)
    as_random_source(seed)

    def function(leaves: LeafMasses) -> Any:
        points = place_points(leaves, box, placement, _source(seed, PLACEMENT_STREAM))
        if not diagnostics:
            return points
        return points, {
            "depth": leaves.depth,
            "visited_nodes": leaves.visited,
            "active_nodes": leaves.active,
            "leaves": int(leaves.masses.size),
            "size": int(points.shape[0]),
        }

    return _new_pure_function(function, TO="ExtrinsicObject")
