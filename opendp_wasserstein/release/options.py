"""The options of a high-level release: frozen, keyword-only objects, checked once when built.

:func:`~opendp_wasserstein.synthesize` (arrays and tables) and
:func:`~opendp_wasserstein.distributed.synthesize_on_dask` build one :class:`SynthesisOptions`;
:func:`~opendp_wasserstein.select_candidates` and
:func:`~opendp_wasserstein.distributed.select_on_dask` one :class:`SelectionOptions`.  Every check
of an option alone, or of options together, runs in ``__post_init__`` (as OpenDP's ``mbi``
algorithm objects check theirs), so an object that exists is valid and no front end checks it
again; what needs the data's shape (the bounds, a split order) is checked where the measurement
is built (:mod:`opendp_wasserstein.release.measurement`).  Every check reads the options only:
none depends on the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opendp_wasserstein.core.box import Box, as_box
from opendp_wasserstein.core.parameters import check_delta, check_epsilon
from opendp_wasserstein.hierarchy.least_squares import check_postprocessing
from opendp_wasserstein.release.progress import check_progress
from opendp_wasserstein.transformations._schedule_scores import check_score

__all__ = [
    "SynthesisOptions",
    "SelectionOptions",
    "MECHANISMS",
    "SELECTION_MECHANISMS",
    "PRIVTREE_SPLITS_PER_COORDINATE",
    "DEFAULT_CONSISTENCY",
    "DEFAULT_SCORE",
    "DEFAULT_SELECT_FRACTION",
    "DEFAULT_SIZE_FRACTION",
    "DEFAULT_SELECT_FRACTION_ZCDP",
    "check_public_size",
    "as_bounds",
]

MECHANISMS = ("adaptive", "pruned", "pmm", "privtree")

SELECTION_MECHANISMS = ("projection", "tree-em", "nn")

#: PrivTree's public depth cap in :func:`~opendp_wasserstein.synthesize`: 20 splits per coordinate
#: (its split rule stops far above this on data; the cap does not depend on the data or on ``n``)
PRIVTREE_SPLITS_PER_COORDINATE = 20

#: the post-processing of the pruned traversal :func:`~opendp_wasserstein.synthesize` uses by
#: default: least squares with the 3-standard-error suppression (measured better than the paper's
#: split on every data set of ``benchmarks/bench_postprocessing.py``); the constructors keep the
#: paper's rule
DEFAULT_CONSISTENCY = "least_squares"

#: the adaptive selection's score in :func:`~opendp_wasserstein.synthesize`: the capped-count
#: estimate, measured closer to the best candidate than the paper's bound on every data set of
#: ``benchmarks/bench_selection.py``; the constructors keep the paper's score by default
DEFAULT_SCORE = "capped"

#: the share of epsilon spent on private schedule selection by default
DEFAULT_SELECT_FRACTION = 0.2

#: the share of epsilon spent on a DP count when the size is private, by default
DEFAULT_SIZE_FRACTION = 0.1

#: with ``delta``: the share of ``rho`` spent on the adaptive selection, by default (its
#: exponential mechanism costs ``eps_EM^2 / 8``, so 10% of ``rho`` buys ``eps_EM = sqrt(0.8 rho)``)
DEFAULT_SELECT_FRACTION_ZCDP = 0.1


def check_public_size(public_size: Any) -> bool:
    """``public_size`` is a flag: a truthy string such as ``"no"`` must not make ``n`` public."""
    if not isinstance(public_size, (bool, np.bool_)):
        raise TypeError(f"public_size must be True or False, got {type(public_size).__name__}")
    return bool(public_size)


def as_bounds(bounds: Any, d: int) -> Box:
    """The public box: ``(lower, upper)``, a Box, ``{"lower", "upper"}``, or one ``(low, high)``
    per column as a mapping ``{column index: (low, high)}`` covering every column."""
    if bounds is None:
        raise ValueError(
            "bounds are required: give the public (lower, upper) box; they must not be "
            "inferred from the data"
        )
    if isinstance(bounds, dict) and set(bounds) != {"lower", "upper"}:
        if set(bounds) != set(range(d)):
            raise ValueError(f"bounds as a per-column mapping must have the keys 0 .. {d - 1}")
        try:
            pairs = [tuple(bounds[j]) for j in range(d)]
            lower, upper = [p[0] for p in pairs], [p[1] for p in pairs]
        except (TypeError, IndexError):
            raise ValueError("bounds: each column needs a (low, high) pair") from None
        return as_box({"lower": lower, "upper": upper}, d)
    return as_box(bounds, d)


@dataclass(frozen=True, kw_only=True)
class SynthesisOptions:
    """What a synthetic-data release may be asked for, checked once (the fields are the
    parameters of :func:`~opendp_wasserstein.synthesize` of the same names).

    :param epsilon: the total budget (per replacement with a public size, per added or removed
        record without)
    :param mechanism: one of :data:`MECHANISMS`
    :param epsilon_select: adaptive only: the selection's share (default
        :data:`DEFAULT_SELECT_FRACTION` of ``epsilon``; with ``delta`` of ``rho``)
    :param depth: pruned/pmm only: the depth (default the ambient rule)
    :param placement: ``"uniform"`` or ``"center"`` within leaf cells
    :param public_size: whether ``n`` is public
    :param epsilon_size: private size only: the DP count's budget
    :param consistency: adaptive/pruned: ``"paper"`` or ``"least_squares"`` (default
        :data:`DEFAULT_CONSISTENCY`)
    :param threshold: adaptive/pruned: the suppression threshold of ``consistency``
    :param delta: ``None`` (pure DP) or ``delta`` in ``(0, 1)``: ``(epsilon, delta)``-DP through
        the zCDP variant (public size only)
    :param score: adaptive only: ``"capped"`` (default, :data:`DEFAULT_SCORE`) or ``"paper"``
    :param progress: the in-memory release's progress bar: None (default:
        :func:`~opendp_wasserstein.release.progress.default_progress`), True or False

    :example:

    >>> from opendp_wasserstein.release.options import SynthesisOptions
    >>> opts = SynthesisOptions(epsilon=1.0, mechanism="pruned", depth=8)
    >>> opts.post, opts.resolved_score
    (('least_squares', 3.0), 'capped')
    >>> SynthesisOptions(epsilon=1.0, mechanism="pmm", consistency="paper")
    Traceback (most recent call last):
    ValueError: consistency and threshold apply only to mechanism='adaptive' or 'pruned'
    """

    epsilon: float
    mechanism: str = "adaptive"
    epsilon_select: float | None = None
    depth: int | None = None
    placement: str = "uniform"
    public_size: bool = True
    epsilon_size: float | None = None
    consistency: str | None = None
    threshold: float | None = None
    delta: float | None = None
    score: str | None = None
    progress: bool | None = None
    #: the pruned traversal's checked ``(consistency, threshold)``
    post: tuple[str, float] = field(init=False)
    #: the checked score (:data:`DEFAULT_SCORE` when ``score`` is None)
    resolved_score: str = field(init=False)

    def __post_init__(self) -> None:
        public = check_public_size(self.public_size)
        check_progress(self.progress)
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))
            if not public:
                raise ValueError(
                    "delta needs public_size=True (the zCDP variants are calibrated to a "
                    "public size)"
                )
        mechanism = self.mechanism
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
        if mechanism in ("pmm", "privtree") and (self.consistency, self.threshold) != (None, None):
            raise ValueError(
                "consistency and threshold apply only to mechanism='adaptive' or 'pruned'"
            )
        if mechanism == "privtree" and self.delta is not None:
            raise ValueError("mechanism='privtree' is released in pure DP only: leave delta unset")
        consistency = DEFAULT_CONSISTENCY if self.consistency is None else self.consistency
        object.__setattr__(self, "post", check_postprocessing(consistency, self.threshold))
        if self.score is None:
            score = DEFAULT_SCORE
        elif mechanism != "adaptive":
            raise ValueError("score applies only to mechanism='adaptive'")
        else:
            score = check_score(self.score)
        object.__setattr__(self, "resolved_score", score)
        eps = check_epsilon(self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        self._check_shares(eps, public)

    def _check_shares(self, eps: float, public: bool) -> None:
        """The budget shares and the depth fit the mechanism, the size flag and ``epsilon``."""
        mechanism = self.mechanism
        if self.epsilon_select is not None:
            check_epsilon(self.epsilon_select, "epsilon_select")
            if mechanism != "adaptive":
                raise ValueError("epsilon_select applies only to mechanism='adaptive'")
            if self.epsilon_select >= eps:
                raise ValueError("epsilon_select must be smaller than epsilon")
        if self.depth is not None and mechanism in ("adaptive", "privtree"):
            raise ValueError(
                f"depth applies only to mechanism='pruned' or 'pmm' ({mechanism} chooses it)"
            )
        if self.epsilon_size is not None and mechanism == "privtree":
            raise ValueError(
                "epsilon_size does not apply to mechanism='privtree' (it needs no count of "
                "the rows)"
            )
        if self.epsilon_size is not None:
            check_epsilon(self.epsilon_size, "epsilon_size")
            if public:
                raise ValueError("epsilon_size applies only with public_size=False")
            if self.epsilon_size >= eps:
                raise ValueError("epsilon_size must be smaller than epsilon")


@dataclass(frozen=True, kw_only=True)
class SelectionOptions:
    """What a selection from public candidates may be asked for, checked once (the fields are
    the parameters of :func:`~opendp_wasserstein.select_candidates` of the same names).

    :param epsilon: the budget (per replacement with a public size, per added or removed record
        without)
    :param mechanism: one of :data:`SELECTION_MECHANISMS`
    :param metric: the ground metric, ``"l2"``, ``"l1"`` or ``"linf"``
    :param public_size: whether ``n`` is public (Tree-EM needs it)
    :param progress: the in-memory release's progress bar, as in :class:`SynthesisOptions`

    :example:

    >>> from opendp_wasserstein.release.options import SelectionOptions
    >>> SelectionOptions(epsilon=1.0, mechanism="tree-em", public_size=False)
    Traceback (most recent call last):
    ValueError: mechanism='tree-em' needs public_size=True (its score is normalised by n)
    """

    epsilon: float
    mechanism: str = "projection"
    metric: str = "l2"
    public_size: bool = True
    progress: bool | None = None

    def __post_init__(self) -> None:
        check_progress(self.progress)
        if self.mechanism not in SELECTION_MECHANISMS:
            raise ValueError(
                f"mechanism must be one of {SELECTION_MECHANISMS}, got {self.mechanism!r}"
            )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if not check_public_size(self.public_size) and self.mechanism == "tree-em":
            raise ValueError(
                "mechanism='tree-em' needs public_size=True (its score is normalised by n)"
            )
