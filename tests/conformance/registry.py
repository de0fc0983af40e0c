"""THE registry of the package's constructors: the one place the cross-cutting suites draw from.

One :class:`Entry` per exported constructor (every ``make_*`` of
:mod:`opendp_wasserstein.measurements`, :mod:`~opendp_wasserstein.transformations` and
:mod:`~opendp_wasserstein.postprocessing`) says

- how to build it on small valid inputs (:attr:`Entry.args`, for a public size ``n`` or ``None``)
  and how to release it on a small dataset (:attr:`Entry.pipeline`: the upstream
  transformations it needs, so every release starts from an ``n x d`` float array or, for the
  selection, a score vector);
- which parameters it validates (:attr:`Entry.rejects`: a bad value, the exception and the
  message, which must name the parameter) and which it deliberately does not
  (:attr:`Entry.unvalidated`, with the reason);
- how its noise scales reach the 2^52 cap of exact integer noise (:attr:`Entry.scale_overrides`,
  :attr:`Entry.tiny_epsilon`);
- where its randomness comes from (:attr:`Entry.randomness`): the package's
  :class:`~opendp_wasserstein.noise._source.RandomSource` (secure by default, reproducible inside
  :func:`opendp_wasserstein.runtime.reproducible`), OpenDP's own CSPRNG only (not
  reproducible), or none;
- its hard neighbour pairs for the privacy audit (:attr:`Entry.audits`, or :attr:`Entry.no_audit`
  with the reason).

The suites that draw from it:

- ``tests/conformance/test_malformed_inputs.py``: every reject, malformed data on every release,
  errors that never depend on data values, read-only input, the 2^52 cap, malformed ``output_size``
  ...;
- ``tests/conformance/test_randomness_policy.py``: every release without numpy's global state,
  secure by default (``os.urandom``), reproducible inside ``runtime.reproducible``, no ``seed``
  parameter;
- ``tests/conformance/audit/``: every entry's audit cases (:func:`audit_cases`).

**Adding a constructor is one edit**: an :class:`Entry` in :data:`ENTRIES`.  The suites fail
until it is there (``test_registry_covers_every_constructor``), until every parameter is either
validated or explained, and until a randomised measurement has audit cases or a reason.

Reproducible releases made here (inside ``runtime.reproducible``) are NOT private: they exist
so that the tests are deterministic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
import opendp.prelude as dp

from opendp_wasserstein import measurements as M
from opendp_wasserstein import postprocessing as P
from opendp_wasserstein import transformations as T
from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.core.metrics import weighted_l1_distance, weighted_l2sq_distance
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.public_candidates.trees import frt_tree
from opendp_wasserstein.schedules.pure import ScheduleCandidate, paper_schedule, standard_candidates
from tests.conformance.audit.harness import (
    HALVES,
    AuditCase,
    Event,
    cell_at_least,
    cell_below,
    cell_count,
    lower_half_mass,
    quadrant_masses,
    size_at_least,
)

__all__ = [
    "N",
    "X5",
    "C3",
    "S2",
    "ROOTLESS",
    "TREE3",
    "CO",
    "SYM",
    "VEC4",
    "LINF",
    "dom",
    "metric_for",
    "rows",
    "Reject",
    "Entry",
    "Release",
    "ENTRIES",
    "entry",
    "releases",
    "constructor_cases",
    "audit_cases",
    "API_RELEASES",
]

# the registry builds OpenDP objects: the tests (and benchmarks/audit.py) opt in to the features
# the constructors require, as a user would; the package itself never enables them
dp.enable_features("contrib", "idealized-numerics")

# ---------------------------------------------------------------------------------------------
# small valid inputs (public test data)

#: the public size of the small datasets
N = 5
_ROWS = np.random.default_rng(0).uniform(size=(64, 2))
#: five rows in the unit square (the default box)
X5 = _ROWS[:N].copy()
X5.setflags(write=False)
#: three public candidates
C3 = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
#: the paper's depth-2 schedule at epsilon 1: (1, 4, 4)
S2 = paper_schedule(2, 1.0, 2)
#: the same levels with sigma_0 = inf: the root count is neither released nor charged
ROOTLESS = (math.inf, *S2[1:])
#: a public FRT tree on C3, fixed for every test (built from the public candidates only)
TREE3 = frt_tree(C3, "l2", seed=0)
CO, SYM = dp.change_one_distance(), dp.symmetric_distance()
VEC4 = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=4)
LINF = dp.linf_distance(T=float)
NAN, INF = float("nan"), float("inf")
#: the zCDP output measure (discrete Gaussian noise)
ZCDP = dp.zero_concentrated_divergence()
_NO_AUDIT_ZCDP = (
    "zCDP: the audit harness bounds pure-DP privacy ratios; the Renyi divergence of the released "
    "law is checked exactly in tests/measurements/test_gaussian_counts.py and test_zcdp_variants.py"
)


def dom(n: int | None = N, d: int = 2, T: type = float, **kw: Any) -> Any:
    """``array2_domain(num_columns=d, size=n, T=T)`` (``n=None``: the size is private)."""
    return dp.numpy.array2_domain(num_columns=d, size=n, T=T, **kw)


def metric_for(n: int | None) -> Any:
    """``change_one_distance`` with a public size, ``symmetric_distance`` without."""
    return CO if n is not None else SYM


def rows(n: int | None) -> np.ndarray:
    """``n`` rows of public uniform data (5 when the size is private), a fresh writable copy."""
    return _ROWS[: N if n is None else n].copy()


def _arr(n: int | None) -> dict[str, Any]:
    return {"input_domain": dom(n), "input_metric": metric_for(n)}


def _dyadic(n: int | None, scales: Sequence[float] = S2) -> Any:
    return T.make_dyadic_counts(dom(n), metric_for(n), 2, scales)


def _nearest(n: int | None) -> Any:
    return T.make_nearest_candidate(dom(n), metric_for(n), C3)


def _tree_scales(n: int | None) -> tuple[float, ...]:
    return T.tree_level_scales(TREE3, 1.0, sized=n is not None)


def _tree_counts(n: int | None) -> Any:
    t = _nearest(n)
    return t >> T.make_tree_counts(t.output_domain, t.output_metric, TREE3, _tree_scales(n))


def _size_build(n_hat: int) -> Any:
    """``make_noisy_size_then``'s mechanism: Pruned-PMM releasing ``n_hat`` rows."""
    return M.make_pruned_pmm(dom(None), SYM, 2, ROOTLESS, output_size=n_hat)


def _size_bound(d_in: int) -> float:
    """What every ``_size_build(n_hat)`` certifies: ``d_in (1/4 + 1/4)``."""
    return 0.5 * d_in


# ---------------------------------------------------------------------------------------------
# the registry's types


@dataclass(frozen=True)
class Reject:
    """A malformed argument: ``overrides`` replace the valid arguments (built for public size
    ``n``), and the constructor must raise ``exc`` with a message matching ``match``."""

    id: str
    overrides: Mapping[str, Any]
    exc: type[BaseException]
    match: str
    n: int | None = N


def _reject(
    id_: str, exc: type[BaseException], match: str, n: int | None = N, **overrides: Any
) -> Reject:
    return Reject(id_, MappingProxyType(overrides), exc, match, n)


def _alone(built: Any, n: int | None) -> Any:
    return built


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Entry:
    """One exported constructor (see the module docstring).

    :param name: the constructor's name, e.g. ``"make_pruned_pmm"``
    :param constructor: the constructor
    :param kind: ``"transformation"``, ``"measurement"`` or ``"postprocessor"`` (a ``Function``)
    :param args: ``n -> keyword arguments`` valid for a public size ``n`` (None: private)
    :param rejects: the parameters it validates, one bad value each (or more)
    :param sizes: the public sizes it supports (``None``: private)
    :param pipeline: ``(built, n) -> callable on the data``: the upstream chain a release needs
    :param data: ``n -> a valid input`` of the pipeline
    :param output: ``"points"`` (an ``(m, d)`` array in the box), ``"multiset"`` (``k``
        multiplicities summing to ``m``), ``"count"``, ``"index"`` or ``"other"``
    :param randomness: ``"package"`` (secure releases read the package's RandomSource, and
        perhaps OpenDP's CSPRNG too; inside ``runtime.reproducible`` every draw comes from the
        seed), ``"opendp"`` (OpenDP's CSPRNG only: never reproducible) or ``"none"``
        (deterministic)
    :param unvalidated: parameters without a reject, and why
    :param scale_overrides: ``v -> overrides`` putting one integer-noise scale at ``v``
    :param tiny_epsilon: ``(parameter, overrides)``: an epsilon in range whose noise scale is
        above 2^52; the constructor must refuse it naming ``parameter``
    :param variants: extra releases, ``label -> (n, overrides)``
    :param audits: ``() -> audit cases`` (hard neighbour pairs), for randomised measurements
    :param no_audit: why a randomised measurement has no audit case of its own
    """

    name: str
    constructor: Callable[..., Any]
    kind: str
    args: Callable[[int | None], dict[str, Any]]
    rejects: tuple[Reject, ...]
    sizes: tuple[int | None, ...] = (N, None)
    pipeline: Callable[[Any, int | None], Any] = _alone
    data: Callable[[int | None], Any] = rows
    output: str = "points"
    randomness: str = "package"
    unvalidated: Mapping[str, str] = field(default_factory=_empty)
    scale_overrides: Callable[[float], dict[str, Any]] | None = None
    tiny_epsilon: tuple[str, Mapping[str, Any]] | None = None
    variants: Mapping[str, tuple[int | None, Mapping[str, Any]]] = field(default_factory=_empty)
    audits: Callable[[], list[AuditCase]] | None = None
    no_audit: str = ""

    @property
    def short(self) -> str:
        return self.name.removeprefix("make_")

    @property
    def seedable(self) -> bool:
        """Reproducible inside ``runtime.reproducible``."""
        return self.randomness == "package"

    @property
    def array_input(self) -> bool:
        """Its releases start from an ``n x d`` float array (all but the selection)."""
        return self.data is rows

    def build(self, n: int | None = N, **overrides: Any) -> Any:
        """The constructor on the valid arguments for size ``n``, with ``overrides``."""
        return self.constructor(**(self.args(n) | overrides))

    def releases(self) -> list[Release]:
        """One release per supported size, and the variants."""
        out = [
            Release(self.short if n == N else f"{self.short}[unsized]", self, n, _empty())
            for n in self.sizes
        ]
        out += [
            Release(f"{self.short}[{label}]", self, n, MappingProxyType(dict(ov)))
            for label, (n, ov) in self.variants.items()
        ]
        return out


@dataclass(frozen=True)
class Release:
    """One way to release an entry: its pipeline on the data of size ``n``."""

    label: str
    entry: Entry
    n: int | None
    overrides: Mapping[str, Any]

    def build(self, n: Any = "default") -> Any:
        """The pipeline, a callable on the data (for size ``n``; default the release's)."""
        size = self.n if n == "default" else n
        return self.entry.pipeline(self.entry.build(size, **self.overrides), size)

    def data(self) -> Any:
        return self.entry.data(self.n)

    def __call__(self, x: Any = None) -> Any:
        return self.build()(self.data() if x is None else x)


# ---------------------------------------------------------------------------------------------
# audit cases: hard neighbouring pairs, one builder per mechanism

#: three points, one in each of SW, NW, SE; NE is empty (the depth-2 cells of the unit square)
X3 = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])


def _moved(x: np.ndarray, row: int, to: Sequence[float]) -> np.ndarray:
    y = np.array(x, dtype=np.float64, copy=True)
    y[row] = to
    return y


def _exact_pmm() -> Any:
    from tests.measurements import exact_pmm

    return exact_pmm


def _pmm_audits(mech: str, mk: Callable[..., Any], pruned: bool) -> list[AuditCase]:
    """Depth 2 (exact laws known): one point moved across the root split, into an empty cell,
    to the far corner; depth 1: a lone point (PMM's 'point below the split' attains e^eps);
    a record added without a public size, the root noised and charged (Pruned-PMM) or not
    released at all (``sigma_0 = inf``, ``output_size``: the new private-size path)."""
    ex = _exact_pmm()
    s1 = paper_schedule(2, 1.0, 1)  # (1, 2)
    cases: list[AuditCase] = []
    pairs = {
        "across the root split": (_moved(X3, 2, (0.3, 0.3)), ("SE", "SW")),
        "into an empty cell": (_moved(X3, 1, (0.6, 0.6)), ("NW", "NE")),
        "to the far corner": (_moved(X3, 0, (0.9, 0.9)), ("SW", "NE")),
    }
    for name, (xb, (c_from, c_to)) in pairs.items():
        sym = pruned and name == "to the far corner"  # symmetric_distance on the sized domain
        metric = SYM if sym else CO

        def factory(metric: Any = metric) -> Any:
            return mk(dom(3), metric, 2, S2, placement="center")

        def law(x: np.ndarray) -> dict[Any, float]:
            return ex.leaf_law(*ex.counts_of(np.asarray(x)), 3, S2, pruned)

        events = (
            cell_at_least(c_from, 1),
            cell_at_least(c_to, 1),
            cell_below(c_to, 1),
            cell_at_least(c_to, 2),
        )
        cases.append(
            AuditCase(
                mech,
                f"{name} (n=3, depth 2)",
                factory,
                X3,
                xb,
                2 if sym else 1,
                "symmetric" if sym else "change_one",
                events,
                fast_runs=150,
                exact_law=law,
                outcome=quadrant_masses,
                description=f"one point moved {name}; "
                f"{'symmetric d_in=2' if sym else 'change-one d_in=1'}",
            )
        )

    def factory1() -> Any:
        return mk(dom(1), CO, 1, s1, placement="center")

    def law1(x: np.ndarray) -> dict[Any, float]:
        lower = int((np.asarray(x)[:, 0] < 0.5).sum())
        return ex.split_law(1, lower, 1 - lower, s1[1], pruned)

    cases.append(
        AuditCase(
            mech,
            "lone point across the split (n=1, depth 1)",
            factory1,
            np.array([[0.25, 0.5]]),
            np.array([[0.75, 0.5]]),
            1,
            "change_one",
            (cell_at_least("x<1/2", 1), cell_at_least("x>=1/2", 1)),
            fast_runs=200,
            exact_law=law1,
            outcome=lower_half_mass,
            description="the tight case: PMM's 'point below the split' has ratio e^eps exactly",
        )
    )
    added = np.vstack([X3, [[0.9, 0.9]]])
    if pruned:

        def factory_u() -> Any:
            return mk(dom(None), SYM, 2, S2, placement="center")

        cases.append(
            AuditCase(
                mech,
                "one record added (unsized, depth 2)",
                factory_u,
                X3,
                added,
                1,
                "symmetric",
                (size_at_least(4), size_at_least(5), cell_at_least("NE", 1)),
                fast_runs=150,
                tight=False,
                description="symmetric d_in=1, the root's noisy count is released",
            )
        )

    def factory_o() -> Any:
        return mk(dom(None), SYM, 2, ROOTLESS, placement="center", output_size=3)

    def law_o(x: np.ndarray) -> dict[Any, float]:
        return ex.leaf_law(*ex.counts_of(np.asarray(x)), 3, S2, pruned)

    cases.append(
        AuditCase(
            mech,
            "one record added into the empty cell (private size, output_size=3)",
            factory_o,
            X3,
            added,
            1,
            "symmetric",
            (cell_at_least("NE", 1), cell_below("SW", 1), cell_at_least("x>=1/2", 2)),
            fast_runs=150,
            exact_law=law_o,
            outcome=quadrant_masses,
            description="sigma_0 = inf: the root is neither noised nor charged; map(1) = 1/4 + 1/4",
        )
    )
    return cases


def _pruned_pmm_audits() -> list[AuditCase]:
    return _pmm_audits("pruned_pmm", M.make_pruned_pmm, True)


def _pmm_audits_full() -> list[AuditCase]:
    return _pmm_audits("pmm", M.make_pmm, False)


def _adaptive_audits() -> list[AuditCase]:
    """The selected candidate (recorded inside ``runtime.diagnostics``) and cell events, when one
    record moves from a crowded cell to the far corner (every occupancy O_j, j >= 1, grows), or
    is added there without a public size (``size=8``)."""
    n = 8
    xa = np.full((n, 2), 0.1)
    far = HALVES["x>=1/2"]

    def chose(s: int) -> Event:
        return Event(f"chose s={s}", lambda r: r[1]["s"] == s)

    def chose_and_far(s: int) -> Event:
        return Event(
            f"chose s={s} and #x>=1/2 >= 1",
            lambda r: r[1]["s"] == s and cell_count(r[0], *far) >= 1,
        )

    events = (chose(1), chose(2), cell_at_least("x>=1/2", 1), chose_and_far(1), chose_and_far(2))

    def factory() -> Any:
        return M.make_adaptive_pruned_pmm(dom(n), CO, 1.0, 1.0, placement="center")

    def factory_u() -> Any:
        return M.make_adaptive_pruned_pmm(dom(None), SYM, 1.0, 1.0, placement="center", size=n)

    return [
        AuditCase(
            "adaptive_pruned_pmm",
            "crowded cell -> far corner (n=8)",
            factory,
            xa,
            _moved(xa, n - 1, (0.9, 0.9)),
            1,
            "change_one",
            events,
            fast_runs=150,
            diagnostics=True,
            description="eps_select = eps_main = 1; candidates (s=1, r=6), (s=2, r=1)",
        ),
        AuditCase(
            "adaptive_pruned_pmm",
            "record added at the far corner (private size, size=8)",
            factory_u,
            xa,
            np.vstack([xa, [[0.9, 0.9]]]),
            1,
            "symmetric",
            events,
            fast_runs=100,
            diagnostics=True,
            description="one added record costs eps_select + eps_main / 2",
        ),
    ]


def _softmax_law(scores: Sequence[float], scale: float) -> dict[int, float]:
    z = -np.asarray(scores, dtype=np.float64) / scale
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    return {i: float(v) for i, v in enumerate(p)}


def _permute_and_flip_law(scores: Sequence[float], scale: float) -> dict[int, float]:
    """Permute-and-flip on ``q = -scores`` (= report-noisy-max with Exponential(scale) noise,
    Ding et al. 2021): over uniformly random orders, accept ``r`` w.p. ``exp((q_r - q*)/scale)``."""
    q = -np.asarray(scores, dtype=np.float64)
    acc = np.exp((q - q.max()) / scale)
    k = q.size
    law = dict.fromkeys(range(k), 0.0)
    perms = list(itertools.permutations(range(k)))
    for perm in perms:
        reach = 1.0
        for r in perm:
            law[r] += reach * acc[r] / len(perms)
            reach *= 1.0 - acc[r]
    return law


def _selection_audits() -> list[AuditCase]:
    """Exponential selection and permute-and-flip on 4 scores moved by the sensitivity in
    opposite directions (the worst case for the selected index)."""
    eps, sens = 1.0, 1.0
    scale = round_up(2 * Fraction(sens) / Fraction(eps))
    events = tuple(Event(f"selected {i}", lambda r, i=i: int(r) == i) for i in range(4))
    cases = []
    for selection, law in (
        ("exponential", _softmax_law),
        ("permute_and_flip", _permute_and_flip_law),
    ):

        def factory(selection: str = selection) -> Any:
            return M.make_exponential_selection(VEC4, LINF, eps, sens, selection)

        def exact(
            s: Sequence[float], law: Callable[..., dict[int, float]] = law
        ) -> dict[Any, float]:
            return dict(law(s, scale))

        cases.append(
            AuditCase(
                f"selection ({selection})",
                "scores moved by the sensitivity (k=4)",
                factory,
                [0.0, 1.0, 1.0, 1.0],
                [1.0, 0.0, 0.0, 0.0],
                sens,
                "linf",
                events,
                seedable=False,
                fast_runs=1000,
                exact_law=exact,
                outcome=int,
                description="OpenDP's CSPRNG: not reproducible",
            )
        )
    return cases


#: the public candidates of the public-candidate cases (candidate 3 loses its only supporter)
CANDIDATES = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
_PC_N, _PC_M = 6, 3
_PC_XA = np.vstack([np.repeat(CANDIDATES[:1], _PC_N - 1, axis=0), CANDIDATES[3:4]])
_PC_XB = np.repeat(CANDIDATES[:1], _PC_N, axis=0)
_PC_NAME = "only supporter of candidate 3 moved to candidate 0 (n=6, m=3)"


def _multiplicity_events() -> tuple[Event, ...]:
    k = CANDIDATES.shape[0]
    ev = tuple(Event(f"mult[{i}] >= 1", lambda r, i=i: int(r[i]) >= 1) for i in range(k))
    return (*ev, Event("mult[0] >= 3", lambda r: int(r[0]) >= 3))


def _pc_tree() -> Any:
    return frt_tree(CANDIDATES, "l2", seed=0)  # public, fixed for every run


def _tree_em_audits() -> list[AuditCase]:
    from opendp_wasserstein.public_candidates.tree_em_sampling import tree_em_log_probability

    C, k, eps = CANDIDATES, CANDIDATES.shape[0], 1.0
    tree = _pc_tree()

    def law(x: np.ndarray) -> dict[Any, float]:
        counts = np.zeros(k, dtype=np.int64)
        for row in np.asarray(x):
            counts[int(np.argmin(np.linalg.norm(C - row, axis=1)))] += 1
        out = {}
        for combo in itertools.combinations_with_replacement(range(k), _PC_M):
            mult = np.bincount(np.array(combo), minlength=k)
            out[tuple(mult.tolist())] = math.exp(
                tree_em_log_probability(tree, counts, _PC_N, _PC_M, eps, mult)
            )
        return out

    def factory() -> Any:
        return M.make_tree_em(dom(_PC_N), CO, C, _PC_M, eps, tree=tree)

    return [
        AuditCase(
            "tree_em",
            _PC_NAME,
            factory,
            _PC_XA,
            _PC_XB,
            1,
            "change_one",
            _multiplicity_events(),
            fast_runs=200,
            exact_law=law,
            outcome=lambda r: tuple(int(v) for v in r),
        )
    ]


def _tree_projection_audits() -> list[AuditCase]:
    tree = _pc_tree()

    def factory() -> Any:
        return M.make_tree_projection(dom(_PC_N), CO, CANDIDATES, _PC_M, 1.0, tree=tree)

    return [
        AuditCase(
            "tree_projection",
            _PC_NAME,
            factory,
            _PC_XA,
            _PC_XB,
            1,
            "change_one",
            _multiplicity_events(),
            fast_runs=150,
        )
    ]


def _nn_histogram_audits() -> list[AuditCase]:
    def factory() -> Any:
        return M.make_nn_histogram(dom(_PC_N), CO, CANDIDATES, _PC_M, 1.0)

    return [
        AuditCase(
            "nn_histogram",
            _PC_NAME,
            factory,
            _PC_XA,
            _PC_XB,
            1,
            "change_one",
            _multiplicity_events(),
            seedable=False,
            fast_runs=400,
            description="OpenDP's CSPRNG: not reproducible",
        )
    ]


def _noisy_size_audits() -> list[AuditCase]:
    """A DP count (OpenDP's integer Laplace, scale 1) then Pruned-PMM releasing ``n_hat`` rows
    (``sigma_0 = inf``, levels (8, 8)): one record added.  The number of rows released is
    ``max(1, n + LapZ(1))``, whose exact law attains ``e^1`` of the certified ``1 + 1/4``."""
    scales = (math.inf, 8.0, 8.0)

    def build(n_hat: int) -> Any:
        return M.make_pruned_pmm(dom(None), SYM, 2, scales, placement="center", output_size=n_hat)

    def factory() -> Any:
        return M.make_noisy_size_then(dom(None), SYM, 1.0, build, bound=lambda d_in: 0.25 * d_in)

    cap = 40  # rows >= cap are one outcome (the law's tails, truncated at |z| = 200)

    def rows_released(release: Any) -> int:
        return min(int(np.asarray(release).shape[0]), cap)

    def law(x: np.ndarray) -> dict[Any, float]:
        n, z = len(x), np.arange(-200, 201)
        p = np.exp(-np.abs(z) / 1.0)
        p /= p.sum()
        out: dict[Any, float] = {}
        for zi, pi in zip(z.tolist(), p.tolist(), strict=True):
            key = min(max(1, n + zi), cap)
            out[key] = out.get(key, 0.0) + pi
        return out

    xa = X3
    return [
        AuditCase(
            "noisy_size_then",
            "one record added (pruned_pmm on n_hat rows)",
            factory,
            xa,
            np.vstack([xa, [[0.9, 0.9]]]),
            1,
            "symmetric",
            (size_at_least(4), size_at_least(5), cell_at_least("NE", 1)),
            fast_runs=300,
            exact_law=law,
            outcome=rows_released,
            description="secure: OpenDP's count; reproducible: the same law from the seed",
        )
    ]


# ---------------------------------------------------------------------------------------------
# the entries

_SIZED_ONLY = (N,)
_UNSIZED_ONLY = (None,)
_OUTPUT_SIZE_BAD = (0, -3, 2.5, True, "3")


def _output_size_rejects(
    root_ok: Mapping[str, Any], finite_root: Mapping[str, Any] | None
) -> tuple[Reject, ...]:
    """``output_size``: malformed values, on a sized domain, with a finite sigma_0, and a
    rootless schedule without it.  ``root_ok``: the overrides of a valid rootless unsized call."""
    out = [
        _reject(
            f"output-size-{v!r}",
            ValueError,
            "output_size must be an integer >= 1",
            None,
            **root_ok,
            output_size=v,
        )
        for v in _OUTPUT_SIZE_BAD
    ]
    out.append(
        _reject(
            "output-size-on-sized-domain",
            ValueError,
            "output_size applies only when the input domain has no public size",
            output_size=5,
        )
    )
    if finite_root is not None:
        out.append(
            _reject(
                "output-size-with-finite-sigma0",
                ValueError,
                "set sigma_0 = inf",
                None,
                **finite_root,
                output_size=5,
            )
        )
        out.append(
            _reject(
                "sigma0-inf-without-output-size",
                ValueError,
                "output_size is required",
                None,
                **root_ok,
            )
        )
    return tuple(out)


def _pmm_entry(name: str, mk: Callable[..., Any], audits: Callable[[], list[AuditCase]]) -> Entry:
    short = "pruned" if name == "make_pruned_pmm" else "pmm"
    rejects = (
        _reject(
            f"{short}-bounds-lower-equals-upper",
            ValueError,
            "bounds.*lower < upper",
            bounds=(1.0, 1.0),
        ),
        _reject(
            f"{short}-bounds-lower-above-upper",
            ValueError,
            "bounds",
            bounds={"lower": [0.0, 2.0], "upper": [1.0, 1.0]},
        ),
        _reject(
            f"{short}-bounds-ambiguous-2x2", ValueError, "bounds", bounds=([0.0, 1.0], [0.0, 1.0])
        ),
        _reject(f"{short}-bounds-nan", ValueError, "bounds must be finite", bounds=(0.0, NAN)),
        _reject(
            f"{short}-bounds-nan-one-column",
            ValueError,
            "bounds",
            bounds={"lower": [0, 0], "upper": [1, NAN]},
        ),
        _reject(f"{short}-bounds-inf", ValueError, "bounds must be finite", bounds=(-INF, 1.0)),
        _reject(
            f"{short}-bounds-width-overflows",
            ValueError,
            "bounds.*finite width",
            bounds=(-1e308, 1e308),
        ),
        _reject(
            f"{short}-bounds-wrong-dimension",
            ValueError,
            "bounds must give 2",
            bounds=([0, 0, 0], [1, 1, 1]),
        ),
        _reject(
            f"{short}-bounds-not-a-pair",
            ValueError,
            "bounds must be a pair",
            bounds=(0.0, 1.0, 2.0),
        ),
        _reject(
            f"{short}-depth-0", ValueError, "depth must be in \\[1, 104\\]", depth=0, scales=[1.0]
        ),
        _reject(f"{short}-depth-negative", ValueError, "depth", depth=-3, scales=[1.0]),
        _reject(
            f"{short}-depth-above-max",
            ValueError,
            "depth must be in \\[1, 104\\]",
            depth=105,
            scales=[1.0] * 106,
        ),
        _reject(
            f"{short}-depth-above-max-1d",
            ValueError,
            "depth must be in \\[1, 52\\]",
            input_domain=dom(N, d=1),
            depth=53,
            scales=[1.0] * 54,
        ),
        _reject(f"{short}-depth-float", TypeError, "depth must be an integer", depth=2.0),
        _reject(
            f"{short}-depth-bool",
            TypeError,
            "depth must be an integer",
            depth=True,
            scales=[1.0, 2.0],
        ),
        _reject(
            f"{short}-scales-zero",
            ValueError,
            "scales must all be finite and > 0",
            scales=[1.0, 0.0, 4.0],
        ),
        _reject(f"{short}-scales-negative", ValueError, "scales", scales=[1.0, -4.0, 4.0]),
        _reject(f"{short}-scales-nan", ValueError, "scales", scales=[1.0, NAN, 4.0]),
        _reject(
            f"{short}-scales-inf-below-the-root",
            ValueError,
            "scales.*sigma_0 may be inf",
            scales=[1.0, 4.0, INF],
        ),
        _reject(
            f"{short}-scales-below-1e-100",
            ValueError,
            "scales must all be between 1e-100 and 2\\^52",
            scales=[1.0, 1e-101, 4.0],
        ),
        _reject(
            f"{short}-scales-wrong-length",
            ValueError,
            "scales must have 3 entries",
            scales=[1.0, 4.0],
        ),
        _reject(
            f"{short}-scales-2d",
            ValueError,
            "scales must be one-dimensional",
            scales=[[1.0, 4.0, 4.0]],
        ),
        _reject(f"{short}-scales-text", TypeError, "scales", scales=["a", "b", "c"]),
        _reject(
            f"{short}-domain-int",
            ValueError,
            "input_domain must have T=float",
            input_domain=dom(T=int),
        ),
        _reject(
            f"{short}-domain-no-columns",
            ValueError,
            "num_columns",
            input_domain=dp.numpy.array2_domain(size=5, T=float),
        ),
        _reject(
            f"{short}-domain-vector",
            ValueError,
            "input_domain",
            input_domain=dp.vector_domain(dp.atom_domain(T=float)),
        ),
        _reject(
            f"{short}-metric-l1", ValueError, "input_metric", input_metric=dp.l1_distance(T=float)
        ),
        _reject(
            f"{short}-change-one-unsized", ValueError, "input_metric.*sized", input_domain=dom(None)
        ),
        _reject(f"{short}-placement", ValueError, "placement", placement="corner"),
        _reject(
            f"{short}-axes-out-of-range", ValueError, "axes must hold coordinates in", axes=(0, 3)
        ),
        _reject(
            f"{short}-axes-float", ValueError, "axes must hold coordinates in", axes=(0.0, 1.0)
        ),
        *_output_size_rejects({"scales": ROOTLESS}, {"scales": S2}),
        *_output_measure_rejects(short),
        *(_postprocessing_rejects(short) if short == "pruned" else ()),
    )
    post = (
        {
            "least_squares": (N, {"consistency": "least_squares", "threshold": 2.0}),
            "least_squares-zcdp": (N, {"consistency": "least_squares", "output_measure": ZCDP}),
        }
        if short == "pruned"
        else {}
    )
    return Entry(
        name,
        mk,
        "measurement",
        lambda n: _arr(n) | {"depth": 2, "scales": S2},
        rejects,
        variants={
            "output_size": (None, {"scales": ROOTLESS, "output_size": 4}),
            "uniform": (N, {"placement": "uniform"}),
            "axes": (N, {"axes": (1, 1)}),
            "zcdp": (N, {"output_measure": ZCDP}),
            "zcdp-unsized": (None, {"output_measure": ZCDP}),
            "zcdp-output-size": (
                None,
                {"scales": ROOTLESS, "output_size": 4, "output_measure": ZCDP},
            ),
            **post,
        },
        scale_overrides=lambda v: {"scales": [1.0, 4.0, v]},
        audits=audits,
    )


def _adaptive_args(n: int | None) -> dict[str, Any]:
    return (
        _arr(n)
        | {"epsilon_select": 0.5, "epsilon_main": 0.5}
        | ({} if n is not None else {"size": N})
    )


def _scores_args(n: int | None) -> dict[str, Any]:
    extra = {} if n is not None else {"size": N}
    return (
        _arr(n) | {"candidates": standard_candidates(2, n or N, 0.5), "epsilon_main": 0.5} | extra
    )


def _public_candidate_rejects(short: str, eps_name: str = "epsilon") -> tuple[Reject, ...]:
    return (
        _reject(f"{short}-m-0", ValueError, "m must be >= 1", m=0),
        _reject(f"{short}-m-float", TypeError, "m must be an integer", m=2.0),
        _reject(f"{short}-k-0", ValueError, "candidates.*k = 0", candidates=np.zeros((0, 2))),
        _reject(
            f"{short}-duplicate-candidates",
            ValueError,
            "candidates must be distinct",
            candidates=[[0, 0], [1, 1], [0, 0]],
        ),
        _reject(
            f"{short}-nan-candidate",
            ValueError,
            "candidates must be finite",
            candidates=[[0, NAN], [1, 1]],
        ),
        _reject(
            f"{short}-inf-candidate",
            ValueError,
            "candidates must be finite",
            candidates=[[0, 0], [INF, 1]],
        ),
        _reject(
            f"{short}-candidate-dims",
            ValueError,
            "candidates must have 2 columns",
            candidates=[[0, 0, 0], [1, 1, 1]],
        ),
        _reject(
            f"{short}-candidates-1d",
            ValueError,
            "candidates must be a 2-dimensional",
            candidates=[0.0, 1.0],
        ),
        _reject(f"{short}-candidates-text", TypeError, "candidates", candidates=[["a", "b"]]),
        _reject(
            f"{short}-huge-candidates",
            ValueError,
            "candidates|points",
            candidates=[[0, 0], [1e308, 1e308], [-1e308, 0]],
        ),
        _reject(
            f"{short}-subnormal-candidates",
            ValueError,
            "candidates|points",
            candidates=[[0, 0], [5e-324, 0], [0, 5e-324]],
        ),
        _reject(f"{short}-eps-0", ValueError, eps_name, epsilon=0.0),
        _reject(f"{short}-eps-negative", ValueError, eps_name, epsilon=-1.0),
        _reject(f"{short}-eps-nan", ValueError, eps_name, epsilon=NAN),
        _reject(f"{short}-eps-inf", ValueError, eps_name, epsilon=INF),
        _reject(f"{short}-eps-subnormal", ValueError, eps_name, epsilon=5e-324),
        _reject(f"{short}-eps-text", TypeError, eps_name, epsilon="one"),
        _reject(f"{short}-ground-metric", ValueError, "metric", metric="l3"),
        _reject(
            f"{short}-domain-int",
            ValueError,
            "input_domain must have T=float",
            input_domain=dom(T=int),
        ),
        _reject(
            f"{short}-metric-l1", ValueError, "input_metric", input_metric=dp.l1_distance(T=float)
        ),
    )


def _tree_rejects(short: str) -> tuple[Reject, ...]:
    return (
        _reject(f"{short}-tree-type", TypeError, "tree", tree="frt"),
        _reject(
            f"{short}-tree-leaf-count",
            ValueError,
            "3 candidates but the tree has 4 leaves",
            tree=frt_tree(CANDIDATES, "l2", seed=0),
        ),
    )


def _dyadic_io(n: int | None, scales: Sequence[float] = S2) -> dict[str, Any]:
    t = _dyadic(n, scales)
    return {"input_domain": t.output_domain, "input_metric": t.output_metric}


def _after_dyadic(built: Any, n: int | None) -> Any:
    """``make_dyadic_counts`` with the scales of the measurement's input metric, then it."""
    return _dyadic(n, built.input_metric.descriptor.scales) >> built


def _dyadic_sq(n: int | None, scales: Sequence[float] = S2) -> Any:
    return T.make_dyadic_counts(dom(n), metric_for(n), 2, scales, output_metric="l2sq")


def _dyadic_sq_io(n: int | None, scales: Sequence[float] = S2) -> dict[str, Any]:
    t = _dyadic_sq(n, scales)
    return {"input_domain": t.output_domain, "input_metric": t.output_metric}


def _after_dyadic_sq(built: Any, n: int | None) -> Any:
    """``make_dyadic_counts(..., output_metric="l2sq")`` with the measurement's scales, then it."""
    return _dyadic_sq(n, built.input_metric.descriptor.scales) >> built


def _tree_counts_sq(n: int | None) -> Any:
    t = _nearest(n)
    return t >> T.make_tree_counts(
        t.output_domain, t.output_metric, TREE3, _tree_scales(n), output_metric="l2sq"
    )


def _tree_gaussian_rejects(short: str) -> tuple[Reject, ...]:
    return (
        _reject(
            f"{short}-metric-wrong-length",
            ValueError,
            "input_metric must have 3 scales",
            input_metric=weighted_l2sq_distance([1.0, 4.0]),
        ),
        _reject(f"{short}-domain-not-dyadic", ValueError, "DyadicCountsDomain", input_domain=dom()),
        _reject(
            f"{short}-metric-l1-of-the-counts",
            ValueError,
            "WeightedL2SqDistance",
            input_metric=weighted_l1_distance(S2),
        ),
        _reject(
            f"{short}-metric-not-weighted", ValueError, "WeightedL2SqDistance", input_metric=CO
        ),
    )


def _output_measure_rejects(short: str) -> tuple[Reject, ...]:
    return (
        _reject(
            f"{short}-output-measure-approx",
            ValueError,
            "output_measure",
            output_measure=dp.approximate(dp.max_divergence()),
        ),
        _reject(
            f"{short}-output-measure-text", ValueError, "output_measure", output_measure="zCDP"
        ),
    )


def _postprocessing_rejects(short: str) -> tuple[Reject, ...]:
    """``consistency`` and ``threshold``: the pruned traversal's post-processing choices."""
    return (
        _reject(
            f"{short}-consistency", ValueError, "consistency must be one of", consistency="hay"
        ),
        _reject(
            f"{short}-threshold-negative",
            ValueError,
            "threshold must be a finite number >= 0",
            threshold=-1.0,
        ),
        _reject(
            f"{short}-threshold-nan",
            ValueError,
            "threshold must be a finite number >= 0",
            threshold=NAN,
        ),
        _reject(
            f"{short}-threshold-inf",
            ValueError,
            "threshold must be a finite number >= 0",
            threshold=INF,
        ),
        _reject(f"{short}-threshold-text", TypeError, "threshold must be a number", threshold="2"),
    )


def _tree_laplace_rejects(short: str) -> tuple[Reject, ...]:
    return (
        _reject(
            f"{short}-metric-wrong-length",
            ValueError,
            "input_metric must have 3 scales",
            input_metric=weighted_l1_distance([1.0, 4.0]),
        ),
        _reject(f"{short}-domain-not-dyadic", ValueError, "DyadicCountsDomain", input_domain=dom()),
        _reject(f"{short}-metric-not-weighted", ValueError, "WeightedL1Distance", input_metric=CO),
    )


ENTRIES: tuple[Entry, ...] = (
    # ----- transformations
    Entry(
        "make_row_count",
        T.make_row_count,
        "transformation",
        lambda n: _arr(None),
        (
            _reject(
                "row-count-sized-domain",
                ValueError,
                "input_domain has a public size",
                input_domain=dom(N),
            ),
            _reject(
                "row-count-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(None, T=int),
            ),
            _reject(
                "row-count-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            _reject("row-count-change-one", ValueError, "input_metric.*sized", input_metric=CO),
        ),
        sizes=_UNSIZED_ONLY,
        output="count",
        randomness="none",
    ),
    Entry(
        "make_occupancy",
        T.make_occupancy,
        "transformation",
        lambda n: _arr(n) | {"depth": 2},
        (
            _reject("occupancy-depth-0", ValueError, "depth must be in", depth=0),
            _reject("occupancy-depth-float", TypeError, "depth must be an integer", depth=1.5),
            _reject("occupancy-bounds-nan", ValueError, "bounds must be finite", bounds=(0.0, NAN)),
            _reject(
                "occupancy-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "occupancy-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            _reject(
                "occupancy-axes-out-of-range",
                ValueError,
                "axes must hold coordinates in",
                axes=(0, 2),
            ),
            _reject(
                "occupancy-axes-short",
                ValueError,
                "axes must give a coordinate for each of the 2 levels",
                axes=(1,),
            ),
        ),
        output="other",
        randomness="none",
    ),
    Entry(
        "make_schedule_scores",
        T.make_schedule_scores,
        "transformation",
        _scores_args,
        (
            _reject("scores-eps-main-0", ValueError, "epsilon_main", epsilon_main=0.0),
            _reject(
                "scores-eps-main-mismatch",
                ValueError,
                "candidates: a schedule spends",
                epsilon_main=0.25,
            ),
            _reject("scores-c-abs-0", ValueError, "c_abs", c_abs=0.0),
            _reject(
                "scores-candidates-empty", ValueError, "candidates must not be empty", candidates=[]
            ),
            _reject(
                "scores-candidate-wrong-type",
                TypeError,
                "candidates",
                candidates=[(1, 1, (1.0, 4.0))],
            ),
            _reject(
                "scores-candidate-scale-above-2^52",
                ValueError,
                "candidates: level scales must be at most 2\\^52",
                candidates=[ScheduleCandidate(1, 1, (1.0, 2.0**53))],
                epsilon_main=2.0**-52,
            ),
            _reject("scores-bounds-nan", ValueError, "bounds must be finite", bounds=(NAN, 1.0)),
            _reject("scores-size-on-sized-domain", ValueError, "size applies only", size=5),
            _reject("scores-size-missing", ValueError, "size is required", None, size=None),
            _reject("scores-size-0", ValueError, "size must be an integer >= 1", None, size=0),
            _reject(
                "scores-size-float", ValueError, "size must be an integer >= 1", None, size=5.0
            ),
            _reject(
                "scores-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "scores-metric-l1", ValueError, "input_metric", input_metric=dp.l1_distance(T=float)
            ),
            *_output_measure_rejects("scores"),
            _reject(
                "scores-pure-candidates-in-zcdp",
                ValueError,
                "candidates: a schedule spends",
                output_measure=ZCDP,
            ),
            _reject(
                "scores-split-order-type", TypeError, "split_order must be", split_order=(1, 0)
            ),
            _reject(
                "scores-split-order-columns",
                ValueError,
                "split_order is for 3 columns",
                split_order=SplitOrder.cyclic(3),
            ),
            _reject(
                "scores-split-order-too-shallow",
                ValueError,
                "depth .* must be in \\[1, 1\\]",
                split_order=SplitOrder.discrete_first((2, 1)),
            ),
            _reject("scores-score-unknown", ValueError, "score must be one of", score="bound"),
            _reject("scores-score-none", ValueError, "score must be one of", score=None),
            _reject("scores-placement", ValueError, "placement must be one of", placement="edge"),
        ),
        variants={
            "capped": (N, {"score": "capped"}),
            "capped-unsized": (None, {"score": "capped"}),
            "capped-uniform": (N, {"score": "capped", "placement": "uniform"}),
            "capped-uniform-unsized": (None, {"score": "capped", "placement": "uniform"}),
        },
        output="other",
        randomness="none",
    ),
    Entry(
        "make_dyadic_counts",
        T.make_dyadic_counts,
        "transformation",
        lambda n: _arr(n) | {"depth": 2, "scales": S2},
        (
            _reject("dyadic-counts-depth-0", ValueError, "depth", depth=0, scales=[1.0]),
            _reject("dyadic-counts-depth-text", TypeError, "depth must be an integer", depth="2"),
            _reject("dyadic-counts-scales-nan", ValueError, "scales", scales=[1.0, 1.0, NAN]),
            _reject(
                "dyadic-counts-scales-length",
                ValueError,
                "scales must have 3 entries",
                scales=[1.0, 1.0],
            ),
            _reject("dyadic-counts-bounds", ValueError, "bounds", bounds=(2.0, 1.0)),
            _reject(
                "dyadic-counts-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "dyadic-counts-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            _reject("dyadic-counts-output-metric", ValueError, "output_metric", output_metric="l2"),
            _reject(
                "dyadic-counts-axes-out-of-range",
                ValueError,
                "axes must hold coordinates in",
                axes=(0, -1),
            ),
            _reject(
                "dyadic-counts-axes-short", ValueError, "axes must give a coordinate", axes=(1,)
            ),
            _reject("dyadic-counts-axes-text", TypeError, "axes must be a sequence", axes="01"),
        ),
        output="other",
        randomness="none",
        scale_overrides=lambda v: {"scales": [1.0, 4.0, v]},
    ),
    Entry(
        "make_nearest_candidate",
        T.make_nearest_candidate,
        "transformation",
        lambda n: _arr(n) | {"candidates": C3},
        (
            _reject(
                "nearest-candidate-dims",
                ValueError,
                "candidates must have 2 columns",
                candidates=[[0.0], [1.0]],
            ),
            _reject(
                "nearest-candidate-duplicates",
                ValueError,
                "candidates must be distinct",
                candidates=[[0, 1], [0, 1]],
            ),
            _reject(
                "nearest-candidate-nan",
                ValueError,
                "candidates must be finite",
                candidates=[[NAN, 1], [0, 1]],
            ),
            _reject("nearest-candidate-metric", ValueError, "metric", metric="cosine"),
            _reject(
                "nearest-candidate-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "nearest-candidate-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
        ),
        output="index",
        randomness="none",
    ),
    Entry(
        "make_tree_counts",
        T.make_tree_counts,
        "transformation",
        lambda n: {
            "input_domain": _nearest(n).output_domain,
            "input_metric": _nearest(n).output_metric,
            "tree": TREE3,
            "scales": _tree_scales(n),
        },
        (
            _reject(
                "tree-counts-tree-type",
                TypeError,
                "tree must be an opendp_wasserstein.public_candidates.trees.Tree",
                tree=C3,
            ),
            _reject("tree-counts-scales-length", ValueError, "scales must have", scales=[1.0]),
            _reject(
                "tree-counts-scales-nan", ValueError, "scales", scales=[NAN] * (TREE3.height + 1)
            ),
            _reject(
                "tree-counts-domain-not-indices", ValueError, "input_domain", input_domain=dom()
            ),
            _reject(
                "tree-counts-leaf-count",
                ValueError,
                "input_domain",
                tree=frt_tree(CANDIDATES, "l2", seed=0),
                scales=[1.0] * (frt_tree(CANDIDATES, "l2", seed=0).height + 1),
            ),
            _reject(
                "tree-counts-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            _reject("tree-counts-output-metric", ValueError, "output_metric", output_metric="L2"),
        ),
        pipeline=lambda built, n: _nearest(n) >> built,
        output="other",
        randomness="none",
        scale_overrides=lambda v: {"scales": [1.0] * TREE3.height + [v]},
    ),
    # ----- measurements
    Entry(
        "make_tree_laplace",
        M.make_tree_laplace,
        "measurement",
        lambda n: _dyadic_io(n),
        _tree_laplace_rejects("tree-laplace"),
        pipeline=_after_dyadic,
        output="other",
        scale_overrides=lambda v: {"input_metric": weighted_l1_distance([1.0, 4.0, v])},
        no_audit="its release (the noisy tree) is what make_pmm post-processes: audited through "
        "make_pmm",
    ),
    Entry(
        "make_pruned_tree_laplace",
        M.make_pruned_tree_laplace,
        "measurement",
        lambda n: _dyadic_io(n),
        (
            *_tree_laplace_rejects("pruned-tree-laplace"),
            *_output_size_rejects(_dyadic_io(None, ROOTLESS), _dyadic_io(None)),
            *_postprocessing_rejects("pruned-tree-laplace"),
        ),
        pipeline=_after_dyadic,
        output="other",
        variants={
            "output_size": (None, {**_dyadic_io(None, ROOTLESS), "output_size": 4}),
            "least_squares": (N, {"consistency": "least_squares", "threshold": 2.0}),
            "least_squares-output-size": (
                None,
                {**_dyadic_io(None, ROOTLESS), "output_size": 4, "consistency": "least_squares"},
            ),
            "least_squares-noisy-root": (None, {"consistency": "least_squares"}),
        },
        scale_overrides=lambda v: {"input_metric": weighted_l1_distance([1.0, 4.0, v])},
        no_audit=(
            "make_pruned_pmm is this release placed in the cells: audited through make_pruned_pmm"
        ),
    ),
    Entry(
        "make_tree_gaussian",
        M.make_tree_gaussian,
        "measurement",
        lambda n: _dyadic_sq_io(n),
        _tree_gaussian_rejects("tree-gaussian"),
        pipeline=_after_dyadic_sq,
        output="other",
        scale_overrides=lambda v: {"input_metric": weighted_l2sq_distance([1.0, 4.0, v])},
        no_audit=_NO_AUDIT_ZCDP,
    ),
    Entry(
        "make_pruned_tree_gaussian",
        M.make_pruned_tree_gaussian,
        "measurement",
        lambda n: _dyadic_sq_io(n),
        (
            *_tree_gaussian_rejects("pruned-tree-gaussian"),
            *[
                _reject(f"pruned-tree-gaussian-{r.id}", r.exc, r.match, r.n, **r.overrides)
                for r in _output_size_rejects(_dyadic_sq_io(None, ROOTLESS), _dyadic_sq_io(None))
            ],
            *_postprocessing_rejects("pruned-tree-gaussian"),
        ),
        pipeline=_after_dyadic_sq,
        output="other",
        variants={
            "output_size": (None, {**_dyadic_sq_io(None, ROOTLESS), "output_size": 4}),
            "least_squares": (N, {"consistency": "least_squares", "threshold": 2.0}),
        },
        scale_overrides=lambda v: {"input_metric": weighted_l2sq_distance([1.0, 4.0, v])},
        no_audit=_NO_AUDIT_ZCDP,
    ),
    Entry(
        "make_noisy_size_then",
        M.make_noisy_size_then,
        "measurement",
        lambda n: _arr(None) | {"epsilon_size": 0.5, "build": _size_build, "bound": _size_bound},
        (
            _reject("noisy-size-eps-0", ValueError, "epsilon_size", epsilon_size=0.0),
            _reject("noisy-size-eps-nan", ValueError, "epsilon_size", epsilon_size=NAN),
            _reject("noisy-size-eps-text", TypeError, "epsilon_size", epsilon_size="half"),
            _reject(
                "noisy-size-sized-domain",
                ValueError,
                "input_domain has a public size",
                input_domain=dom(N),
            ),
            _reject(
                "noisy-size-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(None, T=int),
            ),
            _reject(
                "noisy-size-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            _reject(
                "noisy-size-build-not-callable",
                TypeError,
                "build and bound must be callables",
                build=None,
            ),
            _reject(
                "noisy-size-bound-not-callable",
                TypeError,
                "build and bound must be callables",
                bound=0.5,
            ),
        ),
        sizes=_UNSIZED_ONLY,
        tiny_epsilon=("epsilon_size", {"epsilon_size": 1e-60}),
        audits=_noisy_size_audits,
    ),
    _pmm_entry("make_pruned_pmm", M.make_pruned_pmm, _pruned_pmm_audits),
    _pmm_entry("make_pmm", M.make_pmm, _pmm_audits_full),
    Entry(
        "make_adaptive_pruned_pmm",
        M.make_adaptive_pruned_pmm,
        "measurement",
        _adaptive_args,
        (
            _reject("adaptive-eps-select-0", ValueError, "epsilon_select", epsilon_select=0.0),
            _reject(
                "adaptive-eps-select-negative", ValueError, "epsilon_select", epsilon_select=-0.5
            ),
            _reject("adaptive-eps-select-nan", ValueError, "epsilon_select", epsilon_select=NAN),
            _reject("adaptive-eps-select-bool", ValueError, "epsilon_select", epsilon_select=True),
            _reject("adaptive-eps-main-inf", ValueError, "epsilon_main", epsilon_main=INF),
            _reject(
                "adaptive-eps-main-negative-inf", ValueError, "epsilon_main", epsilon_main=-INF
            ),
            _reject("adaptive-eps-main-text", TypeError, "epsilon_main", epsilon_main="one"),
            _reject("adaptive-eps-main-huge", ValueError, "epsilon_main", epsilon_main=1e308),
            _reject(
                "adaptive-unsized-without-size", ValueError, "size is required", None, size=None
            ),
            _reject("adaptive-size-on-sized-domain", ValueError, "size applies only", size=5),
            _reject("adaptive-size-0", ValueError, "size must be an integer >= 1", None, size=0),
            _reject(
                "adaptive-candidates-empty",
                ValueError,
                "candidates must not be empty",
                candidates=[],
            ),
            _reject(
                "adaptive-candidate-depth-0",
                ValueError,
                "candidates",
                candidates=[ScheduleCandidate(1, 0, (1.0,))],
            ),
            _reject(
                "adaptive-candidate-wrong-type",
                TypeError,
                "candidates",
                candidates=[(1, 1, (1.0, 4.0))],
            ),
            _reject(
                "adaptive-candidate-wrong-budget",
                ValueError,
                "candidates",
                candidates=[ScheduleCandidate(1, 1, (1.0, 8.0))],
            ),
            _reject("adaptive-c-abs-0", ValueError, "c_abs", c_abs=0.0),
            _reject("adaptive-selection", ValueError, "selection", selection="argmin"),
            _reject("adaptive-placement", ValueError, "placement", placement="edge"),
            _reject("adaptive-bounds-nan", ValueError, "bounds must be finite", bounds=(0.0, NAN)),
            _reject(
                "adaptive-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "adaptive-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
            *_output_measure_rejects("adaptive"),
            _reject(
                "adaptive-zcdp-permute-and-flip",
                ValueError,
                "selection must be 'exponential' in zCDP",
                selection="permute_and_flip",
                output_measure=ZCDP,
            ),
            _reject(
                "adaptive-zcdp-pure-candidates",
                ValueError,
                "candidates",
                candidates=standard_candidates(2, N, 0.5),
                output_measure=ZCDP,
            ),
            _reject(
                "adaptive-zcdp-tiny-rho",
                ValueError,
                "epsilon_main is too small.*2\\^52",
                epsilon_main=1e-60,
                output_measure=ZCDP,
            ),
            _reject(
                "adaptive-split-order-type", TypeError, "split_order must be", split_order=(1, 0)
            ),
            _reject(
                "adaptive-split-order-columns",
                ValueError,
                "split_order is for 1 columns",
                split_order=SplitOrder.cyclic(1),
            ),
            _reject(
                "adaptive-split-order-zcdp-columns",
                ValueError,
                "split_order is for 1 columns",
                split_order=SplitOrder.cyclic(1),
                output_measure=ZCDP,
            ),
            *_postprocessing_rejects("adaptive"),
            _reject(
                "adaptive-zcdp-consistency",
                ValueError,
                "consistency must be one of",
                consistency="hay",
                output_measure=ZCDP,
            ),
            _reject(
                "adaptive-zcdp-threshold",
                ValueError,
                "threshold must be a finite number >= 0",
                threshold=-2.0,
                output_measure=ZCDP,
            ),
            _reject("adaptive-score", ValueError, "score must be one of", score="bound"),
            _reject(
                "adaptive-zcdp-score",
                ValueError,
                "score must be one of",
                score="bound",
                output_measure=ZCDP,
            ),
        ),
        variants={
            "permute_and_flip": (N, {"selection": "permute_and_flip"}),
            "uniform": (N, {"placement": "uniform"}),
            "least_squares": (N, {"consistency": "least_squares", "threshold": 2.0}),
            "least_squares-unsized": (None, {"consistency": "least_squares"}),
            "split_order": (N, {"split_order": SplitOrder.discrete_first((2, 0))}),
            "zcdp": (N, {"output_measure": ZCDP}),
            "zcdp-unsized": (None, {"output_measure": ZCDP}),
            "zcdp-split-order": (
                N,
                {"output_measure": ZCDP, "split_order": SplitOrder.discrete_first((2, 0))},
            ),
            "capped": (N, {"score": "capped"}),
            "capped-unsized": (None, {"score": "capped"}),
            "capped-uniform": (N, {"score": "capped", "placement": "uniform"}),
            "capped-uniform-unsized": (None, {"score": "capped", "placement": "uniform"}),
            "capped-zcdp": (N, {"score": "capped", "output_measure": ZCDP}),
            "capped-split-order": (
                N,
                {"score": "capped", "split_order": SplitOrder.discrete_first((2, 0))},
            ),
        },
        scale_overrides=lambda v: {
            "candidates": [ScheduleCandidate(1, 1, (1.0, v))],
            "epsilon_main": 2.0 / v,
        },
        tiny_epsilon=("epsilon_main", {"epsilon_main": 1e-60}),
        audits=_adaptive_audits,
    ),
    Entry(
        "make_privtree",
        M.make_privtree,
        "measurement",
        lambda n: _arr(n) | {"epsilon_tree": 0.5, "epsilon_counts": 0.5, "max_depth": 8},
        (
            _reject("privtree-eps-tree-0", ValueError, "epsilon_tree", epsilon_tree=0.0),
            _reject("privtree-eps-tree-nan", ValueError, "epsilon_tree", epsilon_tree=NAN),
            _reject("privtree-eps-counts-inf", ValueError, "epsilon_counts", epsilon_counts=INF),
            _reject(
                "privtree-eps-counts-negative", ValueError, "epsilon_counts", epsilon_counts=-1.0
            ),
            _reject(
                "privtree-eps-counts-tiny",
                ValueError,
                "epsilon_counts is too small",
                epsilon_counts=1e-60,
            ),
            _reject("privtree-max-depth-0", ValueError, "max_depth must be in", max_depth=0),
            _reject(
                "privtree-max-depth-float", TypeError, "max_depth must be an integer", max_depth=2.5
            ),
            _reject("privtree-theta", ValueError, "theta must be an integer", theta=0.5),
            _reject("privtree-placement", ValueError, "placement", placement="edge"),
            _reject("privtree-bounds-nan", ValueError, "bounds must be finite", bounds=(0.0, NAN)),
            _reject("privtree-axes", ValueError, "axes must hold coordinates in", axes=(0, 2) * 4),
            _reject(
                "privtree-domain-int",
                ValueError,
                "input_domain must have T=float",
                input_domain=dom(T=int),
            ),
            _reject(
                "privtree-metric-l1",
                ValueError,
                "input_metric",
                input_metric=dp.l1_distance(T=float),
            ),
        ),
        variants={"center": (N, {"placement": "center"}), "theta": (None, {"theta": 3})},
        tiny_epsilon=("epsilon_tree", {"epsilon_tree": 1e-60}),
        no_audit="its structure's privacy ratio is enumerated exactly in "
        "tests/measurements/test_privtree.py",
    ),
    Entry(
        "make_exponential_selection",
        M.make_exponential_selection,
        "measurement",
        lambda n: {"input_domain": VEC4, "input_metric": LINF, "epsilon": 1.0, "sensitivity": 1.0},
        (
            _reject("selection-eps-0", ValueError, "epsilon", epsilon=0.0),
            _reject("selection-eps-negative", ValueError, "epsilon", epsilon=-1.0),
            _reject("selection-eps-nan", ValueError, "epsilon", epsilon=NAN),
            _reject("selection-eps-inf", ValueError, "epsilon", epsilon=INF),
            _reject("selection-eps-subnormal", ValueError, "epsilon", epsilon=5e-324),
            _reject("selection-sensitivity-0", ValueError, "sensitivity", sensitivity=0.0),
            _reject("selection-sensitivity-huge", ValueError, "sensitivity", sensitivity=1e308),
            _reject(
                "selection-metric", ValueError, "input_metric", input_metric=dp.l1_distance(T=float)
            ),
            _reject("selection-kind", ValueError, "selection", selection="gumbel"),
            _reject(
                "selection-negate-text", TypeError, "negate must be True or False", negate="no"
            ),
        ),
        sizes=_SIZED_ONLY,
        data=lambda n: [0.0, 1.0, 2.0, 3.0],
        output="index",
        randomness="opendp",
        unvalidated={
            "input_domain": "OpenDP's make_noisy_max checks it (a vector of float scores)"
        },
        variants={"permute_and_flip": (N, {"selection": "permute_and_flip"})},
        tiny_epsilon=None,
        audits=_selection_audits,
    ),
    Entry(
        "make_tree_em",
        M.make_tree_em,
        "measurement",
        lambda n: _arr(n) | {"candidates": C3, "m": 3, "epsilon": 1.0},
        (
            *_public_candidate_rejects("tree-em"),
            *_tree_rejects("tree-em"),
            _reject(
                "tree-em-unsized", ValueError, "size", input_domain=dom(None), input_metric=SYM
            ),
        ),
        sizes=_SIZED_ONLY,
        output="multiset",
        audits=_tree_em_audits,
    ),
    Entry(
        "make_tree_projection",
        M.make_tree_projection,
        "measurement",
        lambda n: _arr(n) | {"candidates": C3, "m": 3, "epsilon": 1.0},
        (
            *_public_candidate_rejects("tree-projection"),
            *_tree_rejects("tree-projection"),
            *_output_measure_rejects("tree-projection"),
            _reject(
                "tree-projection-zcdp-tiny-rho",
                ValueError,
                "epsilon is too small.*2\\^52",
                epsilon=1e-60,
                output_measure=ZCDP,
            ),
        ),
        output="multiset",
        variants={
            "zcdp": (N, {"output_measure": ZCDP}),
            "zcdp-unsized": (None, {"output_measure": ZCDP}),
        },
        tiny_epsilon=("epsilon", {"epsilon": 1e-60}),
        audits=_tree_projection_audits,
    ),
    Entry(
        "make_tree_count_laplace",
        M.make_tree_count_laplace,
        "measurement",
        lambda n: {
            "input_domain": _tree_counts(n).output_domain,
            "input_metric": _tree_counts(n).output_metric,
        },
        (
            _reject(
                "tree-count-laplace-metric-wrong-length",
                ValueError,
                "input_metric must have",
                input_metric=weighted_l1_distance([1.0]),
            ),
            _reject(
                "tree-count-laplace-domain", ValueError, "TreeCountsDomain", input_domain=dom()
            ),
            _reject(
                "tree-count-laplace-metric-not-weighted",
                ValueError,
                "WeightedL1Distance",
                input_metric=CO,
            ),
        ),
        pipeline=lambda built, n: _tree_counts(n) >> built,
        output="other",
        scale_overrides=lambda v: {
            "input_metric": weighted_l1_distance([1.0] * TREE3.height + [v])
        },
        no_audit="make_tree_projection is this release post-processed: audited through "
        "make_tree_projection",
    ),
    Entry(
        "make_tree_count_gaussian",
        M.make_tree_count_gaussian,
        "measurement",
        lambda n: {
            "input_domain": _tree_counts_sq(n).output_domain,
            "input_metric": _tree_counts_sq(n).output_metric,
        },
        (
            _reject(
                "tree-count-gaussian-metric-wrong-length",
                ValueError,
                "input_metric must have",
                input_metric=weighted_l2sq_distance([1.0]),
            ),
            _reject(
                "tree-count-gaussian-domain", ValueError, "TreeCountsDomain", input_domain=dom()
            ),
            _reject(
                "tree-count-gaussian-metric-l1",
                ValueError,
                "WeightedL2SqDistance",
                input_metric=weighted_l1_distance([1.0] * (TREE3.height + 1)),
            ),
        ),
        pipeline=lambda built, n: _tree_counts_sq(n) >> built,
        output="other",
        scale_overrides=lambda v: {
            "input_metric": weighted_l2sq_distance([1.0] * TREE3.height + [v])
        },
        no_audit=_NO_AUDIT_ZCDP,
    ),
    Entry(
        "make_tree_multiset",
        M.make_tree_multiset,
        "postprocessor",
        lambda n: {"counts_domain": _tree_counts(n).output_domain, "m": 3},
        (
            _reject("tree-multiset-m-0", ValueError, "m must be >= 1", m=0),
            _reject("tree-multiset-m-float", TypeError, "m must be an integer", m=3.0),
            _reject("tree-multiset-domain", ValueError, "TreeCountsDomain", counts_domain=dom()),
        ),
        pipeline=lambda built, n: (
            _tree_counts(n)
            >> M.make_tree_count_laplace(
                _tree_counts(n).output_domain, _tree_counts(n).output_metric
            )
            >> built
        ),
        output="multiset",
    ),
    Entry(
        "make_nn_histogram",
        M.make_nn_histogram,
        "measurement",
        lambda n: _arr(n) | {"candidates": C3, "m": 3, "epsilon": 1.0},
        (
            *_public_candidate_rejects("nn-histogram"),
            *_output_measure_rejects("nn-histogram"),
            _reject(
                "nn-histogram-zcdp-tiny-rho",
                ValueError,
                "epsilon is too small.*2\\^52",
                epsilon=1e-60,
                output_measure=ZCDP,
            ),
        ),
        output="multiset",
        randomness="opendp",
        variants={"zcdp": (N, {"output_measure": ZCDP})},
        tiny_epsilon=("epsilon", {"epsilon": 1e-60}),
        audits=_nn_histogram_audits,
    ),
    # ----- post-processors (their releases run the upstream measurement: the randomness is its)
    Entry(
        "make_full_consistency",
        P.make_full_consistency,
        "postprocessor",
        lambda n: {"counts_domain": _dyadic(n).output_domain},
        (
            _reject(
                "full-consistency-domain", ValueError, "DyadicCountsDomain", counts_domain=dom()
            ),
            *[
                _reject(
                    f"full-consistency-output-size-{v!r}",
                    ValueError,
                    "output_size must be an integer >= 1",
                    None,
                    output_size=v,
                )
                for v in _OUTPUT_SIZE_BAD
            ],
            _reject(
                "full-consistency-output-size-on-sized-domain",
                ValueError,
                "output_size applies only",
                output_size=5,
            ),
        ),
        pipeline=lambda built, n: (
            _dyadic(n)
            >> M.make_tree_laplace(_dyadic(n).output_domain, _dyadic(n).output_metric)
            >> built
        ),
        output="other",
        variants={"output_size": (None, {"output_size": 4})},
    ),
    Entry(
        "make_synthesis",
        P.make_synthesis,
        "postprocessor",
        lambda n: {"counts_domain": _dyadic(n).output_domain},
        (
            _reject("synthesis-domain", ValueError, "DyadicCountsDomain", counts_domain=dom()),
            _reject("synthesis-placement", ValueError, "placement", placement="corner"),
        ),
        pipeline=lambda built, n: (
            _dyadic(n)
            >> M.make_pruned_tree_laplace(_dyadic(n).output_domain, _dyadic(n).output_metric)
            >> built
        ),
        variants={"uniform": (N, {"placement": "uniform"})},
    ),
)


def entry(name: str) -> Entry:
    """The entry of constructor ``name`` (``"make_pruned_pmm"`` or ``"pruned_pmm"``)."""
    for e in ENTRIES:
        if name in (e.name, e.short):
            return e
    raise KeyError(name)


def releases(randomised: bool | None = None, array_input: bool | None = None) -> list[Release]:
    """Every release of every entry (and its variants), optionally filtered."""
    out = []
    for e in ENTRIES:
        if randomised is not None and (e.randomness != "none") != randomised:
            continue
        if array_input is not None and e.array_input != array_input:
            continue
        out.extend(e.releases())
    return out


def constructor_cases() -> list[tuple[Entry, Reject]]:
    """Every (entry, reject) pair."""
    return [(e, r) for e in ENTRIES for r in e.rejects]


def audit_cases() -> list[AuditCase]:
    """Every entry's audit cases, in registry order."""
    return [case for e in ENTRIES if e.audits is not None for case in e.audits()]


# ---------------------------------------------------------------------------------------------
# the high-level API and the public tree builders (randomised, not constructors)


def _api_releases() -> dict[str, tuple[Callable[[], Any], bool]]:
    """``label -> (release thunk, reproducible in runtime.reproducible)``."""
    from opendp_wasserstein import select_candidates, synthesize
    from opendp_wasserstein.public_candidates.trees import quadtree

    x = _ROWS[:40]
    c = _ROWS[40:50]
    return {
        "synthesize[adaptive]": (lambda: synthesize(x, 1.0, (0, 1))[0], True),
        "synthesize[pruned]": (lambda: synthesize(x, 1.0, (0, 1), mechanism="pruned")[0], True),
        "synthesize[pmm]": (lambda: synthesize(x, 1.0, (0, 1), mechanism="pmm")[0], True),
        "synthesize[pruned, private size, depth]": (
            lambda: synthesize(x, 1.0, (0, 1), mechanism="pruned", public_size=False, depth=3)[0],
            True,
        ),
        "synthesize[adaptive, private size]": (
            lambda: synthesize(x, 1.0, (0, 1), public_size=False)[0],
            True,
        ),
        "synthesize[pmm, private size]": (
            lambda: synthesize(x, 1.0, (0, 1), mechanism="pmm", public_size=False)[0],
            True,
        ),
        "synthesize[adaptive, delta]": (lambda: synthesize(x, 1.0, (0, 1), delta=1e-9)[0], True),
        "synthesize[pruned, delta]": (
            lambda: synthesize(x, 1.0, (0, 1), mechanism="pruned", delta=1e-9)[0],
            True,
        ),
        "select_candidates[projection]": (lambda: select_candidates(x, c, 20, 0.5)[0], True),
        "select_candidates[tree-em]": (
            lambda: select_candidates(x, c, 20, 0.5, mechanism="tree-em")[0],
            True,
        ),
        "select_candidates[nn]": (
            lambda: select_candidates(x, c, 20, 0.5, mechanism="nn")[0],
            False,
        ),
        "frt_tree": (lambda: frt_tree(c).digest, True),
        "quadtree": (lambda: quadtree(c, (0, 1)).digest, True),
    }


#: the randomised public functions that are not constructors, for the randomness policy
API_RELEASES = _api_releases()
