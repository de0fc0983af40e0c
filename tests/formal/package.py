"""The ONE place the formal suite reaches into the package.

Every constructor comes from the public faces (:mod:`opendp_wasserstein.measurements`,
:mod:`~opendp_wasserstein.transformations`, :mod:`~opendp_wasserstein.postprocessing`); the few
helpers a check needs beyond them (the exact rounding, the score table, the traversal the
bounded checks drive) are imported here and nowhere else in ``tests/formal``, so that a move of
the package's modules is a one-line fix in this file.
"""

from __future__ import annotations

from opendp_wasserstein import measurements as M  # noqa: F401  (re-exported)
from opendp_wasserstein import postprocessing as P  # noqa: F401
from opendp_wasserstein import transformations as T  # noqa: F401
from opendp_wasserstein.core.exact import round_down, round_up, spent, tighten_budget  # noqa: F401
from opendp_wasserstein.core.plan import plan_of  # noqa: F401
from opendp_wasserstein.hierarchy.cells import count_tree  # noqa: F401, E402
from opendp_wasserstein.hierarchy.traversal import (  # noqa: F401, E402
    Frontier,
    expand_levels,
    tree_counter,
    zero_respecting_split,
)
from opendp_wasserstein.measurements import _adaptive as adaptive_module  # noqa: F401
from opendp_wasserstein.measurements import _nn_histogram as nn_module  # noqa: F401
from opendp_wasserstein.measurements import _privtree as privtree_module  # noqa: F401
from opendp_wasserstein.measurements import _tree_count_noise as tree_count_noise_module  # noqa
from opendp_wasserstein.measurements import _tree_noise as tree_noise_module  # noqa: F401
from opendp_wasserstein.measurements import _tree_projection as tree_projection_module  # noqa: F401
from opendp_wasserstein.measurements._nn_histogram import largest_remainder  # noqa: F401
from opendp_wasserstein.measurements._privtree import grow, privtree_parameters  # noqa: F401
from opendp_wasserstein.public_candidates.trees import Tree, frt_tree  # noqa: F401
from opendp_wasserstein.release.measurement import split_budget as api_split  # noqa: F401, E402
from opendp_wasserstein.runtime import reproducible  # noqa: F401
from opendp_wasserstein.schedules.pure import (  # noqa: F401
    ScheduleCandidate,
    paper_schedule,
    standard_candidates,
)
from opendp_wasserstein.transformations._schedule_scores import scores_setup  # noqa: F401
