"""Privacy audit harness: statistically valid empirical LOWER bounds on epsilon.

A pure ``eps``-DP mechanism ``M`` satisfies ``P[M(X) in E] <= e^eps P[M(X') in E]`` for every
event ``E`` and every pair of neighbouring datasets.  Drawing ``runs`` releases on ``X`` and on
``X'`` and counting how often ``E`` happens bounds both probabilities with Clopper-Pearson
intervals, so ``log(CP_lower(p_X) / CP_upper(p_X'))`` is a lower bound on the true ``eps`` that
holds with probability ``>= 1 - alpha`` (Jagielski et al. 2020; Nasr et al. 2021; the
"Bonferroni over events and directions" of DP auditing tools).  A lower bound ABOVE the epsilon
certified by a measurement's privacy map is (up to probability ``alpha``) a privacy bug.

Pieces:

- :func:`clopper_pearson`, :func:`audit_events` (the bound), :func:`audit_report` (the bound
  and the per-event table), :func:`exact_ratio` (the exact ``max |log p_a / p_b|`` of two pmfs);
- :class:`AuditCase`: a mechanism factory, two hard neighbouring datasets, events, ``d_in``;
  seedable cases draw every release inside ``opendp_wasserstein.runtime.reproducible`` (NOT
  private: reproducible audits), the others from the secure default;
- the events and outcome keys the cases use (:func:`cell_at_least`, :func:`quadrant_masses` ...);
- :func:`make_broken_pruned_pmm` and :data:`BROKEN_CASE_BUILDERS`: a deliberately broken
  mechanism the audit must catch (a fixture of the harness, not of the package).

The cases of the package's mechanisms are not defined here: each is part of its mechanism's
entry in ``tests/conformance/registry.py`` (``Entry.audits``), the one registry the cross-cutting
suites draw from; :func:`all_cases` collects them.  The statistics need only numpy and scipy.  Used
by ``tests/conformance/audit/test_audit.py`` (fast) and ``benchmarks/audit.py`` (long).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "clopper_pearson",
    "Event",
    "EventBound",
    "AuditReport",
    "draw",
    "count_events",
    "bound_from_counts",
    "audit_events",
    "audit_report",
    "exact_ratio",
    "AuditCase",
    "BROKEN_CASE_BUILDERS",
    "all_cases",
    "make_broken_pruned_pmm",
    "timed_run",
]


# ---------------------------------------------------------------------------------------------
# statistics


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """The exact two-sided ``1 - alpha`` Clopper-Pearson interval for a binomial proportion.

    Each side is a one-sided ``1 - alpha/2`` bound: ``lo = Beta(alpha/2; k, n-k+1)`` (0 when
    ``k = 0``), ``hi = Beta(1 - alpha/2; k+1, n-k)`` (1 when ``k = n``).

    >>> clopper_pearson(0, 10, 0.05)[0], clopper_pearson(10, 10, 0.05)[1]
    (0.0, 1.0)
    """
    if isinstance(k, bool) or isinstance(n, bool) or int(k) != k or int(n) != n:
        raise TypeError("k and n must be integers")
    k, n = int(k), int(n)
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2.0, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha / 2.0, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class Event:
    """A named predicate on one release."""

    name: str
    fn: Callable[[Any], bool]

    def __call__(self, release: Any) -> bool:
        return bool(self.fn(release))


def _as_event(e: Any, i: int) -> Event:
    if isinstance(e, Event):
        return e
    if isinstance(e, tuple) and len(e) == 2:
        return Event(str(e[0]), e[1])
    if callable(e):
        return Event(getattr(e, "__name__", f"event{i}"), e)
    raise TypeError("events must be Event objects, (name, predicate) pairs or predicates")


@dataclass(frozen=True)
class EventBound:
    """The lower bound from one event in one direction: ``log(CP_lo(p_num) / CP_hi(p_den))``."""

    event: str
    direction: str  # "a/b": P_a(E) over P_b(E); "b/a" the other way
    count_num: int
    count_den: int
    runs: int
    epsilon_lower: float


@dataclass(frozen=True)
class AuditReport:
    """The audit's result: the largest valid lower bound and every (event, direction) term."""

    epsilon_lower: float
    best: EventBound | None
    bounds: tuple[EventBound, ...]
    runs: int
    alpha: float
    tests: int
    counts_a: tuple[int, ...]
    counts_b: tuple[int, ...]


def draw(sample: Callable[[int], Any], runs: int) -> list[Any]:
    """``[sample(0), ..., sample(runs - 1)]``: the run index lets a sampler seed its release."""
    return [sample(i) for i in range(runs)]


def count_events(releases: Sequence[Any], events: Sequence[Any]) -> np.ndarray:
    """How many of ``releases`` fall in each event (int64, one per event)."""
    evs = [_as_event(e, i) for i, e in enumerate(events)]
    return np.array([sum(1 for r in releases if ev(r)) for ev in evs], dtype=np.int64)


def bound_from_counts(
    counts_a: Sequence[int] | np.ndarray,
    counts_b: Sequence[int] | np.ndarray,
    runs: int,
    alpha: float,
    names: Sequence[str] | None = None,
) -> AuditReport:
    """The largest lower bound on eps over events and both directions, Bonferroni-corrected.

    With ``T = 2 * len(events)`` tests, every test uses Clopper-Pearson intervals at level
    ``alpha / T`` (two-sided, so each one-sided bound fails with probability ``alpha / (2T)``
    and a test with probability at most ``alpha / T``): all ``T`` bounds hold simultaneously
    with probability ``>= 1 - alpha``, whatever the dependence between the events.  Negative
    bounds are reported as they are; the overall bound is at least 0 (eps >= 0 always holds).
    """
    ca = [int(c) for c in counts_a]
    cb = [int(c) for c in counts_b]
    if len(ca) != len(cb) or not ca:
        raise ValueError("counts_a and counts_b must be non-empty and of equal length")
    names = [f"event{i}" for i in range(len(ca))] if names is None else list(names)
    tests = 2 * len(ca)
    level = alpha / tests
    out: list[EventBound] = []
    for name, ka, kb in zip(names, ca, cb, strict=True):
        lo_a, hi_a = clopper_pearson(ka, runs, level)
        lo_b, hi_b = clopper_pearson(kb, runs, level)
        for direction, lo, hi, kn, kd in (("a/b", lo_a, hi_b, ka, kb), ("b/a", lo_b, hi_a, kb, ka)):
            value = math.log(lo / hi) if lo > 0.0 else -math.inf
            out.append(EventBound(name, direction, kn, kd, runs, value))
    best = max(out, key=lambda b: b.epsilon_lower)
    return AuditReport(
        max(0.0, best.epsilon_lower), best, tuple(out), runs, alpha, tests, tuple(ca), tuple(cb)
    )


def audit_report(
    sample_a: Callable[[int], Any],
    sample_b: Callable[[int], Any],
    events: Sequence[Any],
    runs: int,
    alpha: float = 0.05,
) -> AuditReport:
    """Draw ``runs`` releases from each sampler (called with the run index ``0 .. runs-1``),
    count every event and return the full :class:`AuditReport` (see :func:`bound_from_counts`)."""
    if isinstance(runs, bool) or int(runs) != runs or runs < 1:
        raise ValueError("runs must be an integer >= 1")
    evs = [_as_event(e, i) for i, e in enumerate(events)]
    if not evs:
        raise ValueError("events must not be empty")
    ca = count_events(draw(sample_a, runs), evs)
    cb = count_events(draw(sample_b, runs), evs)
    return bound_from_counts(ca, cb, int(runs), alpha, [e.name for e in evs])


def audit_events(
    sample_a: Callable[[int], Any],
    sample_b: Callable[[int], Any],
    events: Sequence[Any],
    runs: int,
    alpha: float = 0.05,
) -> float:
    """The largest statistically valid (probability ``>= 1 - alpha``) lower bound on eps:
    ``max`` over events ``E`` and both directions of ``log(CP_lo(p_a(E)) / CP_up(p_b(E)))``,
    Bonferroni-corrected over the ``2 len(events)`` tests.

    :param sample_a: ``i -> release`` on dataset X (``i`` the run index, e.g. for a seed)
    :param sample_b: ``i -> release`` on the neighbouring dataset X'
    :param events: predicates on a release (:class:`Event`, ``(name, fn)`` or plain callables)
    :param runs: releases drawn from each side
    :param alpha: the probability that the bound is wrong
    """
    return audit_report(sample_a, sample_b, events, runs, alpha).epsilon_lower


def exact_ratio(
    law_a: Mapping[Any, float], law_b: Mapping[Any, float], min_prob: float = 0.0
) -> float:
    """``max_o |log(law_a[o] / law_b[o])|`` over outcomes of two exact pmfs (dicts).

    Outcomes missing from one law have probability 0 there; an outcome possible under one law
    only gives ``inf``.  Outcomes with both probabilities ``<= min_prob`` are ignored.

    >>> exact_ratio({0: 0.5, 1: 0.5}, {0: 0.25, 1: 0.75}) == math.log(2)
    True
    """
    worst = 0.0
    for o in set(law_a) | set(law_b):
        pa, pb = float(law_a.get(o, 0.0)), float(law_b.get(o, 0.0))
        if pa < 0 or pb < 0:
            raise ValueError("probabilities must be non-negative")
        if pa <= min_prob and pb <= min_prob:
            continue
        if pa == 0.0 or pb == 0.0:
            return math.inf
        worst = max(worst, abs(math.log(pa) - math.log(pb)))
    return worst


# ---------------------------------------------------------------------------------------------
# audit cases


@dataclass(frozen=True)
class AuditCase:
    """One audit: a mechanism on two neighbouring datasets chosen to be hard.

    :param mechanism: the mechanism family (table column), e.g. ``"pruned_pmm"``
    :param name: the neighbouring pair, e.g. ``"far corner"``
    :param factory: ``() -> Measurement`` (built once per audit, released ``runs`` times a side)
    :param x_a: dataset X
    :param x_b: dataset X', a neighbour of X at distance ``d_in``
    :param d_in: the input distance of (X, X') in the measurement's input metric
    :param neighbouring: ``"change_one"``, ``"symmetric"`` (rows, as multisets) or ``"linf"``
    :param events: predicates on one release
    :param seedable: whether the releases are reproducible inside
        ``runtime.reproducible``; then run ``i`` is drawn inside ``reproducible(seed_base + 2i)``
        on X and ``reproducible(seed_base + 2i + 1)`` on X' (**non-private**, deterministic
        audits); otherwise every release comes from the secure default
    :param fast_runs: runs per side in the fast test setting
    :param exact_law: ``dataset -> {outcome: probability}``, the exact output law (optional)
    :param outcome: ``release -> outcome`` key of ``exact_law``
    :param expect_violation: a deliberately broken mechanism the audit must catch
    :param diagnostics: a release is ``(output, info)``, ``info`` the dict the mechanism records
        inside ``runtime.diagnostics`` (public after the release, e.g. the chosen candidate)
    :param tight: the exact law's max log-ratio is at least half the certified epsilon (the pair
        is hard); False for cases that exercise a path rather than the worst case
    """

    mechanism: str
    name: str
    factory: Callable[[], Any]
    x_a: Any
    x_b: Any
    d_in: Any
    neighbouring: str
    events: tuple[Event, ...]
    seedable: bool = True
    fast_runs: int = 300
    exact_law: Callable[[Any], dict[Any, float]] | None = None
    outcome: Callable[[Any], Any] | None = None
    expect_violation: bool = False
    description: str = ""
    diagnostics: bool = False
    tight: bool = True

    @property
    def label(self) -> str:
        return f"{self.mechanism}: {self.name}"

    def certified_epsilon(self) -> float:
        """What the measurement's own privacy map certifies at ``d_in`` (claims, if broken)."""
        return float(self.factory().map(self.d_in))

    def samplers(self, seed_base: int = 0) -> tuple[Callable[[int], Any], Callable[[int], Any]]:
        """``(sample_a, sample_b)`` for :func:`audit_events`: run index -> one release."""
        from opendp_wasserstein import runtime

        meas = self.factory()

        def release(x: Any, seed: int | None) -> Any:
            with contextlib.ExitStack() as stack:
                if seed is not None:
                    stack.enter_context(runtime.reproducible(seed))
                if not self.diagnostics:
                    return meas(x)
                info = stack.enter_context(runtime.diagnostics())
                out = meas(x)
                return out, info[-1]

        if self.seedable:
            return (lambda i: release(self.x_a, seed_base + 2 * i)), (
                lambda i: release(self.x_b, seed_base + 2 * i + 1)
            )
        return (lambda i: release(self.x_a, None)), (lambda i: release(self.x_b, None))

    def run(self, runs: int | None = None, alpha: float = 0.05, seed_base: int = 0) -> AuditReport:
        """Audit with ``runs`` (default :attr:`fast_runs`) releases per side."""
        sa, sb = self.samplers(seed_base)
        return audit_report(sa, sb, self.events, self.fast_runs if runs is None else runs, alpha)

    def exact_epsilon(self) -> float | None:
        """``exact_ratio`` of the exact output laws on X and X', when known."""
        if self.exact_law is None:
            return None
        return exact_ratio(self.exact_law(self.x_a), self.exact_law(self.x_b))


def row_distance(x_a: np.ndarray, x_b: np.ndarray) -> int:
    """The symmetric distance of two datasets as multisets of rows."""
    ra = [tuple(r) for r in np.asarray(x_a, dtype=np.float64).tolist()]
    rb = [tuple(r) for r in np.asarray(x_b, dtype=np.float64).tolist()]
    diff = 0
    pool: dict[tuple[float, ...], int] = {}
    for r in ra:
        pool[r] = pool.get(r, 0) + 1
    for r in rb:
        if pool.get(r, 0) > 0:
            pool[r] -= 1
        else:
            diff += 1
    return diff + sum(pool.values())


def neighbour_distance(case: AuditCase) -> Any:
    """The distance of ``(x_a, x_b)`` in the case's neighbouring relation (to check ``d_in``)."""
    if case.neighbouring == "linf":
        return float(np.max(np.abs(np.asarray(case.x_a, float) - np.asarray(case.x_b, float))))
    sym = row_distance(case.x_a, case.x_b)
    if case.neighbouring == "symmetric":
        return sym
    if case.neighbouring == "change_one":
        if len(case.x_a) != len(case.x_b):
            raise ValueError("change_one neighbours must have the same size")
        return sym // 2
    raise ValueError(f"unknown neighbouring relation {case.neighbouring!r}")


# ---------------------------------------------------------------------------------------------
# event helpers


def _points(release: Any) -> np.ndarray:
    return release[0] if isinstance(release, tuple) else release


def cell_count(points: np.ndarray, lo: Sequence[float], hi: Sequence[float]) -> int:
    """Rows of ``points`` in the half-open cell ``[lo, hi)`` (``hi = inf`` for the top cells)."""
    p = np.asarray(points)
    inside = np.all((p >= np.asarray(lo)) & (p < np.asarray(hi)), axis=1)
    return int(inside.sum())


_INF = math.inf
#: the depth-2 cells of the unit square (level 1 splits x, level 2 splits y); points on a
#: split plane belong to the upper cell, as in the hierarchy
QUADRANTS: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "SW": ((-_INF, -_INF), (0.5, 0.5)),
    "NW": ((-_INF, 0.5), (0.5, _INF)),
    "SE": ((0.5, -_INF), (_INF, 0.5)),
    "NE": ((0.5, 0.5), (_INF, _INF)),
}
HALVES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "x<1/2": ((-_INF, -_INF), (0.5, _INF)),
    "x>=1/2": ((0.5, -_INF), (_INF, _INF)),
}


def cell_at_least(cell: str, t: int) -> Event:
    """``count of synthetic points in cell >= t`` (cells of :data:`QUADRANTS` or :data:`HALVES`)."""
    lo, hi = {**QUADRANTS, **HALVES}[cell]
    return Event(f"#{cell} >= {t}", lambda r: cell_count(_points(r), lo, hi) >= t)


def cell_below(cell: str, t: int) -> Event:
    """``count of synthetic points in cell < t`` (the complement of :func:`cell_at_least`)."""
    lo, hi = {**QUADRANTS, **HALVES}[cell]
    return Event(f"#{cell} < {t}", lambda r: cell_count(_points(r), lo, hi) < t)


def size_at_least(t: int) -> Event:
    return Event(f"size >= {t}", lambda r: _points(r).shape[0] >= t)


def quadrant_masses(release: Any) -> tuple[int, int, int, int]:
    """Leaf masses (SW, NW, SE, NE) of a depth-2 release: the keys of ``exact_pmm.leaf_law``."""
    p = _points(release)
    return tuple(cell_count(p, *QUADRANTS[c]) for c in ("SW", "NW", "SE", "NE"))  # type: ignore[return-value]


def lower_half_mass(release: Any) -> int:
    """Points with ``x < 1/2``: the key of ``exact_pmm.split_law`` at depth 1."""
    return cell_count(_points(release), *HALVES["x<1/2"])


# ---------------------------------------------------------------------------------------------
# the deliberately broken mechanism (a fixture of the harness: the audit must catch it)


def make_broken_pruned_pmm(
    input_domain: Any, input_metric: Any, depth: int, scales: Sequence[float], bounds: Any = None
) -> Any:
    """A deliberately BROKEN Pruned-PMM for the audit's self-test: the package's pipeline
    ``make_dyadic_counts >> make_pruned_tree_laplace >> make_synthesis`` with every noise scale
    HALVED, wrapped in a measurement whose privacy map still claims the epsilon of the
    un-halved ``scales`` (the honest ``make_pruned_pmm``'s map)."""
    from opendp.measures import max_divergence

    from opendp_wasserstein._compat import make_measurement
    from opendp_wasserstein.measurements import make_pruned_pmm, make_pruned_tree_laplace
    from opendp_wasserstein.postprocessing import make_synthesis
    from opendp_wasserstein.transformations import make_dyadic_counts

    honest = make_pruned_pmm(input_domain, input_metric, depth, scales, bounds)
    halved = [float(s) / 2.0 for s in scales]
    t_counts = make_dyadic_counts(input_domain, input_metric, depth, halved, bounds)
    cdom = t_counts.output_domain
    chain = (
        t_counts
        >> make_pruned_tree_laplace(cdom, t_counts.output_metric)
        >> make_synthesis(cdom, "center")
    )
    return make_measurement(
        input_domain, input_metric, max_divergence(), lambda x: chain(x), honest.map
    )


#: the broken self-test instance: depth 1 (all the budget on the root split), claimed eps = 2
BROKEN_SCALES = (1.0, 1.0)


def broken_cases() -> list[AuditCase]:
    """The deliberately broken Pruned-PMM: six points, one moved across the only split."""
    import opendp.prelude as dp

    from tests.measurements import exact_pmm as ex

    n = 6
    dom = dp.numpy.array2_domain(num_columns=2, size=n, T=float)
    xa = np.array([[0.25, 0.5]] * 5 + [[0.75, 0.5]])
    xb = np.array([[0.25, 0.5]] * 4 + [[0.75, 0.5]] * 2)

    def factory() -> Any:
        return make_broken_pruned_pmm(dom, dp.change_one_distance(), 1, BROKEN_SCALES)

    def law(x: np.ndarray) -> dict[Any, float]:
        lower = int((np.asarray(x)[:, 0] < 0.5).sum())
        return ex.split_law(n, lower, n - lower, BROKEN_SCALES[1] / 2.0, True)

    # 600 runs a side: at alpha = 0.05 the event '#x<1/2 >= 5' (exact log-ratio 3.32 against a
    # claim of 2) clears the claim except with probability 2e-8 over the seeds
    return [
        AuditCase(
            "BROKEN pruned_pmm (scales halved)",
            "one point across the split (n=6, depth 1)",
            factory,
            xa,
            xb,
            1,
            "change_one",
            (cell_at_least("x<1/2", 5),),
            fast_runs=600,
            exact_law=law,
            outcome=lower_half_mass,
            expect_violation=True,
            description="claims eps = 2, spends 4",
        )
    ]


#: deliberately broken mechanisms: the audit must report a lower bound above their claim
BROKEN_CASE_BUILDERS: list[Callable[[], list[AuditCase]]] = [broken_cases]


def all_cases(include_broken: bool = False) -> list[AuditCase]:
    """Every audit case of the registry (``tests/conformance/registry.py``), and the broken ones if
    asked."""
    from tests.conformance.registry import audit_cases

    broken = [case for build in BROKEN_CASE_BUILDERS for case in build()] if include_broken else []
    return audit_cases() + broken


def timed_run(
    case: AuditCase, runs: int, alpha: float = 0.05, seed_base: int = 0
) -> tuple[AuditReport, float]:
    """:meth:`AuditCase.run` and its wall-clock seconds."""
    t0 = time.perf_counter()
    rep = case.run(runs, alpha, seed_base)
    return rep, time.perf_counter() - t0
