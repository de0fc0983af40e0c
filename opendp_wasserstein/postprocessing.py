"""Post-processing Functions: the full-tree correction and the synthesis, as OpenDP ``Function`` s.

Each one reads only a release and public parameters, and draws auxiliary randomness independent
of the data, so chaining it after a measurement costs no privacy.  Neither modifies its input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opendp.mod import Domain, Function

from opendp_wasserstein import runtime
from opendp_wasserstein._compat import new_function
from opendp_wasserstein.core.box import Box
from opendp_wasserstein.core.metrics import descriptor_of
from opendp_wasserstein.hierarchy.domain import DyadicCountsDomain
from opendp_wasserstein.hierarchy.noisy_tree import NoisyTree
from opendp_wasserstein.hierarchy.placement import check_placement, place_points
from opendp_wasserstein.hierarchy.traversal import LeafMasses, full_consistency
from opendp_wasserstein.noise._source import PLACEMENT_STREAM, as_random_source

__all__ = ["make_full_consistency", "make_synthesis"]


def make_full_consistency(counts_domain: Domain, output_size: int | None = None) -> Function:
    """The full-tree PMM correction of He, Vershynin and Zhu (2023): a comparable split at
    every node and all ``2^depth`` leaves, as a ``Function`` from a
    :class:`~opendp_wasserstein.hierarchy.noisy_tree.NoisyTree` to
    :class:`~opendp_wasserstein.hierarchy.traversal.LeafMasses`.

    The root mass is the public size ``n`` when the domain has one, else ``output_size`` when
    given, else ``max(1, noisy root)``.

    **Proof Definition:** :doc:`/proofs/postprocessing`

    :param counts_domain: the dyadic counts domain the noisy tree was drawn on
    :param output_size: without a public size, the number of rows to release (public)

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
    if output_size is not None:
        if (
            isinstance(output_size, (bool, np.bool_))
            or not isinstance(output_size, (int, np.integer))
            or output_size < 1
        ):
            raise ValueError(f"output_size must be an integer >= 1, got {output_size!r}")
        if dom.size is not None:
            raise ValueError("output_size applies only when the input domain has no public size")
    size = dom.size if output_size is None else int(output_size)

    def function(noisy: NoisyTree) -> LeafMasses:
        if (
            not isinstance(noisy, NoisyTree)
            or noisy.depth != dom.depth
            or noisy.d != dom.num_columns
        ):
            raise TypeError(
                "make_full_consistency takes the NoisyTree released by make_tree_laplace"
            )
        if size is None and not noisy.root_released:
            raise ValueError("the noisy tree has no root count: give output_size")
        return full_consistency(noisy.levels, noisy.d, size, noisy.nodes, noisy.scales, dom.axes)

    return new_function(function)


def make_synthesis(counts_domain: Domain, placement: str = "center") -> Function:
    """Synthesis from consistent leaf masses: ``m_theta`` points per leaf at the cell centre
    (``placement="center"``) or uniform in the cell (``"uniform"``), mapped into the box, rows
    in random order.  Inside :func:`opendp_wasserstein.runtime.diagnostics` it records the
    public traversal statistics (depth, visited and active nodes, leaves, size).

    **Proof Definition:** :doc:`/proofs/postprocessing`

    :param counts_domain: the dyadic counts domain (gives the box and the depth)
    :param placement: ``"center"`` or ``"uniform"``

    :example:

    >>> import numpy as np, opendp.prelude as dp
    >>> from opendp_wasserstein.transformations import make_dyadic_counts
    >>> from opendp_wasserstein.measurements import make_pruned_tree_laplace
    >>> from opendp_wasserstein.postprocessing import make_synthesis
    >>> dp.enable_features("contrib")
    >>> t = make_dyadic_counts(dp.numpy.array2_domain(num_columns=2, size=50, T=float),
    ...                        dp.symmetric_distance(), depth=6, scales=[1.0] + [12.0] * 6,
    ...                        bounds=([0, 0], [10, 5]))
    >>> meas = (t >> make_pruned_tree_laplace(t.output_domain, t.output_metric)
    ...           >> make_synthesis(t.output_domain, placement="uniform"))
    >>> points = meas(np.random.default_rng(0).uniform(size=(50, 2)) * [10, 5])
    >>> points.shape, bool(np.all(points <= [10, 5]))
    ((50, 2), True)
    """
    dom = descriptor_of(counts_domain, DyadicCountsDomain)
    check_placement(placement)
    box = Box(dom.lower, dom.upper)

    def function(leaves: LeafMasses) -> Any:
        if not isinstance(leaves, LeafMasses) or leaves.depth != dom.depth:
            raise TypeError("make_synthesis takes the LeafMasses of a depth-matching release")
        points: np.ndarray = place_points(
            leaves, box, placement, as_random_source().derive(PLACEMENT_STREAM), dom.axes
        )
        runtime.record(
            {
                "depth": leaves.depth,
                "scales": leaves.scales,
                "visited_nodes": leaves.visited,
                "active_nodes": leaves.active,
                "leaves": int(leaves.masses.size),
                "size": int(points.shape[0]),
            }
        )
        return points

    return new_function(function)
