"""Privacy audits (fast setting): empirical lower bounds never exceed the certified epsilon,
exact output laws stay within ``e^eps``, and a deliberately broken mechanism is caught.

The cases are the audit pairs of the registry's entries (``tests/conformance/registry.py``).
Seedable cases draw every release inside ``runtime.reproducible`` (NOT private; deterministic
tests).  The selections, the nearest-neighbour histogram and the private-size count draw from
OpenDP's CSPRNG, so for them the test is random.  Every validity audit runs at ``alpha = 1e-6``: a
false alarm (a bound above the truth) has probability below 1e-6 whatever the seeds, and so do the
chi-square checks of the samplers (p-value threshold 1e-7).  ``benchmarks/audit.py`` runs the
same cases longer.
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
from scipy import stats

from tests.conformance import registry
from tests.conformance.audit.harness import (
    BROKEN_CASE_BUILDERS,
    BROKEN_SCALES,
    AuditCase,
    Event,
    all_cases,
    audit_events,
    audit_report,
    bound_from_counts,
    clopper_pearson,
    count_events,
    draw,
    exact_ratio,
    neighbour_distance,
    row_distance,
)

#: the level of every validity audit: a false alarm has probability below 1e-6
ALPHA = 1e-6
#: the level at which the broken mechanism must be caught (600 runs: missed w.p. 2e-8)
ALPHA_CATCH = 0.05
#: chi-square p-values below this fail (probability 1e-7 when the law is right)
P_MIN = 1e-7
CASES = all_cases()
BROKEN = [case for build in BROKEN_CASE_BUILDERS for case in build()]


def _id(case: AuditCase) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", case.label).strip("-")


# ---------------------------------------------------------------------------------------------
# the statistics


def test_clopper_pearson_known_values_and_edges():
    lo, hi = clopper_pearson(5, 10, 0.05)
    assert lo == pytest.approx(0.187086, abs=1e-5)
    assert hi == pytest.approx(0.812914, abs=1e-5)
    assert clopper_pearson(0, 10, 0.05) == (0.0, pytest.approx(0.308498, abs=1e-5))
    assert clopper_pearson(10, 10, 0.05) == (pytest.approx(0.691502, abs=1e-5), 1.0)
    # a smaller alpha widens the interval
    lo2, hi2 = clopper_pearson(5, 10, 0.001)
    assert lo2 < lo
    assert hi2 > hi
    for bad in [(-1, 10, 0.05), (11, 10, 0.05), (0, 0, 0.05), (1, 10, 0.0), (1, 10, 1.0)]:
        with pytest.raises(ValueError):
            clopper_pearson(*bad)
    with pytest.raises(TypeError):
        clopper_pearson(1.5, 10, 0.05)


def test_clopper_pearson_coverage():
    """Each one-sided bound fails with probability at most alpha/2 (exact binomial sums)."""
    n, alpha = 40, 0.1
    for p in (0.03, 0.2, 0.5, 0.77):
        pmf = stats.binom.pmf(np.arange(n + 1), n, p)
        miss_lo = sum(pmf[k] for k in range(n + 1) if clopper_pearson(k, n, alpha)[0] > p)
        miss_hi = sum(pmf[k] for k in range(n + 1) if clopper_pearson(k, n, alpha)[1] < p)
        assert miss_lo <= alpha / 2 + 1e-12
        assert miss_hi <= alpha / 2 + 1e-12


def test_bound_from_counts_bonferroni_and_directions():
    rep = bound_from_counts([90, 10], [10, 90], runs=100, alpha=0.05, names=["e0", "e1"])
    assert rep.tests == 4
    assert len(rep.bounds) == 4
    # each term uses CP at level alpha / tests
    lo, _ = clopper_pearson(90, 100, 0.05 / 4)
    _, hi = clopper_pearson(10, 100, 0.05 / 4)
    assert rep.epsilon_lower == pytest.approx(math.log(lo / hi))
    assert {(b.event, b.direction) for b in rep.bounds} == {
        ("e0", "a/b"),
        ("e0", "b/a"),
        ("e1", "a/b"),
        ("e1", "b/a"),
    }
    # never negative overall, -inf terms kept
    rep0 = bound_from_counts([0], [0], runs=50, alpha=0.05)
    assert rep0.epsilon_lower == 0.0
    assert all(b.epsilon_lower == -math.inf for b in rep0.bounds)


def test_audit_events_on_known_bernoulli_pair():
    """Two coins with P = 0.6 and 0.6 / e: the bound is valid (< 1) and informative (> 0.5)."""
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(2)
    ua, ub = rng_a.uniform(size=20000), rng_b.uniform(size=20000)
    heads = Event("heads", lambda r: r)
    lb = audit_events(lambda i: ua[i] < 0.6, lambda i: ub[i] < 0.6 / math.e, [heads], 20000, ALPHA)
    assert 0.8 < lb <= 1.0
    # identical laws: no evidence of privacy loss
    same = audit_events(
        lambda i: ua[i] < 0.5, lambda i: ub[i] < 0.5, [heads, ("tails", lambda r: not r)], 20000
    )
    assert same < 0.1
    # plain callables are accepted as events
    rep = audit_report(lambda i: i % 2 == 0, lambda i: i % 2 == 0, [lambda r: r], 10)
    assert rep.counts_a == rep.counts_b == (5,)
    assert count_events(draw(lambda i: i, 10), [lambda r: r >= 7]).tolist() == [3]
    with pytest.raises(ValueError):
        audit_events(lambda i: 0, lambda i: 0, [], 10)


def test_exact_ratio():
    assert exact_ratio({0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5}) == 0.0
    assert exact_ratio({0: 0.8, 1: 0.2}, {0: 0.4, 1: 0.6}) == pytest.approx(math.log(3))
    assert exact_ratio({0: 1.0}, {0: 0.5, 1: 0.5}) == math.inf
    assert exact_ratio({0: 1.0, 1: 1e-30}, {0: 1.0, 1: 0.0}, min_prob=1e-20) == 0.0
    assert exact_ratio({"a": 0.25, "b": 0.75}, {"b": 0.5, "a": 0.5}) == pytest.approx(math.log(2))


def test_row_distance():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    assert row_distance(x, x[::-1]) == 0
    assert row_distance(x, np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])) == 2
    assert row_distance(x, x[:2]) == 1


# ---------------------------------------------------------------------------------------------
# the registry


def test_every_randomised_measurement_is_audited_or_says_why():
    """Adding a randomised measurement to the registry needs its hard pairs (or a reason)."""
    for e in registry.ENTRIES:
        if e.kind == "measurement" and e.randomness != "none":
            assert (e.audits is not None) != bool(e.no_audit), (
                f"{e.name}: give audits or no_audit, not both"
            )
        else:
            assert e.audits is None, f"{e.name}: only randomised measurements are audited"
    families = {c.mechanism for c in CASES}
    assert {
        "pruned_pmm",
        "pmm",
        "adaptive_pruned_pmm",
        "selection (exponential)",
        "selection (permute_and_flip)",
        "tree_em",
        "tree_projection",
        "nn_histogram",
        "noisy_size_then",
    } <= families
    names = {c.name for c in CASES if c.mechanism == "pruned_pmm"}
    assert any("split" in n for n in names)
    assert any("empty" in n for n in names)
    assert any("far corner" in n for n in names)
    assert any("output_size" in n for n in names)
    assert any("unsized" in n for n in names)
    assert len({c.label for c in CASES}) == len(CASES)
    assert BROKEN
    assert all(c.expect_violation for c in BROKEN)
    assert not any(c.expect_violation for c in CASES)


def test_seedable_cases_are_the_reproducible_entries():
    by_family = {
        "pruned_pmm": "make_pruned_pmm",
        "pmm": "make_pmm",
        "adaptive_pruned_pmm": "make_adaptive_pruned_pmm",
        "tree_em": "make_tree_em",
        "tree_projection": "make_tree_projection",
        "nn_histogram": "make_nn_histogram",
        "noisy_size_then": "make_noisy_size_then",
    }
    for case in CASES:
        name = by_family.get(case.mechanism, "make_exponential_selection")
        assert case.seedable == registry.entry(name).seedable, case.label


@pytest.mark.parametrize("case", CASES + BROKEN, ids=_id)
def test_neighbours_are_at_distance_d_in(case):
    assert neighbour_distance(case) == case.d_in


# ---------------------------------------------------------------------------------------------
# exact laws


EXACT = [c for c in CASES if c.exact_law is not None]


def test_exact_cases_present():
    mechs = {c.mechanism for c in EXACT}
    assert {
        "pruned_pmm",
        "pmm",
        "selection (exponential)",
        "selection (permute_and_flip)",
        "tree_em",
        "noisy_size_then",
    } <= mechs


@pytest.mark.parametrize("case", EXACT, ids=_id)
def test_exact_ratio_within_certified_epsilon(case):
    eps = case.certified_epsilon()
    law_a, law_b = case.exact_law(case.x_a), case.exact_law(case.x_b)
    assert sum(law_a.values()) == pytest.approx(1.0, abs=1e-9)
    assert sum(law_b.values()) == pytest.approx(1.0, abs=1e-9)
    ratio = exact_ratio(law_a, law_b)
    assert ratio <= eps + 1e-9, f"{case.label}: exact max log-ratio {ratio} > certified {eps}"
    if case.tight:
        assert ratio > 0.5 * eps  # the neighbours are hard: the check is not vacuous


def test_lone_point_pmm_is_tight():
    """Full PMM on one point moved across the only split: the exact ratio is e^eps."""
    (case,) = [c for c in EXACT if c.mechanism == "pmm" and "lone point" in c.name]
    assert case.exact_epsilon() == pytest.approx(case.certified_epsilon(), rel=1e-9)


@pytest.mark.parametrize("case", [c for c in EXACT if c.mechanism.startswith("selection")], ids=_id)
def test_selection_sampler_matches_exact_law(case):
    """The exact laws used above are those of the implementation (chi-square, both datasets)."""
    meas = case.factory()
    for x in (case.x_a, case.x_b):
        law = case.exact_law(x)
        runs = 1000
        obs = np.bincount([case.outcome(meas(x)) for _ in range(runs)], minlength=len(law))
        exp = np.array([law[i] for i in range(len(law))]) * runs
        assert stats.chisquare(obs, exp).pvalue > P_MIN


# ---------------------------------------------------------------------------------------------
# sampling audits


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_empirical_lower_bound_never_exceeds_certified_epsilon(case):
    eps = case.certified_epsilon()
    rep = case.run(alpha=ALPHA)
    assert rep.runs == case.fast_runs
    assert rep.epsilon_lower <= eps, (
        f"{case.label}: empirical lower bound {rep.epsilon_lower:.4f} > certified {eps} "
        f"(event {rep.best.event!r} {rep.best.direction}: {rep.best.count_num} vs "
        f"{rep.best.count_den} "
        f"of {rep.runs})"
    )
    exact = case.exact_epsilon()
    if exact is not None:
        # the audit can only find what is there (up to alpha)
        assert rep.epsilon_lower <= exact + 1e-12


# ---------------------------------------------------------------------------------------------
# the deliberately broken mechanism is caught


@pytest.mark.parametrize("case", BROKEN, ids=_id)
def test_broken_mechanism_caught_by_exact_law(case):
    claimed = case.certified_epsilon()
    ratio = case.exact_epsilon()
    assert ratio is not None, f"exact ratio {ratio} vs claimed {claimed}"
    assert ratio > claimed + 0.5, f"exact ratio {ratio} vs claimed {claimed}"
    # the honest mechanism with the claimed scales is within its claim on the same instance
    honest_law = dataclasses.replace(case, exact_law=_honest_depth1_law(case))
    assert honest_law.exact_epsilon() <= claimed + 1e-9


def _honest_depth1_law(case: AuditCase):
    from tests.measurements.exact_pmm import split_law

    n = len(case.x_a)

    def law(x):
        lower = int((np.asarray(x)[:, 0] < 0.5).sum())
        return split_law(n, lower, n - lower, BROKEN_SCALES[1], True)

    return law


@pytest.mark.parametrize("case", BROKEN, ids=_id)
def test_broken_mechanism_caught_by_sampling_audit(case):
    """Seeded, so deterministic: the lower bound exceeds the (false) claim, the releases follow
    the exact law of the halved-noise pipeline, and the honest pipeline is not flagged."""
    from opendp_wasserstein.measurements import make_pruned_pmm

    claimed = case.certified_epsilon()
    sa, sb = case.samplers(seed_base=0)
    rel_a, rel_b = draw(sa, case.fast_runs), draw(sb, case.fast_runs)
    ca, cb = count_events(rel_a, case.events), count_events(rel_b, case.events)
    rep = bound_from_counts(ca, cb, case.fast_runs, ALPHA_CATCH, [e.name for e in case.events])
    assert rep.epsilon_lower > claimed, (
        f"broken mechanism not caught: {rep.epsilon_lower} <= {claimed}"
    )
    # the samples are the broken pipeline's exact law (so the exact check above is about it)
    for x, rel in ((case.x_a, rel_a), (case.x_b, rel_b)):
        law = case.exact_law(x)
        keys = sorted(law)
        obs = np.array([sum(1 for r in rel if case.outcome(r) == k) for k in keys], dtype=float)
        exp = np.array([law[k] for k in keys]) * len(rel)
        big = exp >= 5
        f_obs = np.append(obs[big], obs[~big].sum())
        f_exp = np.append(exp[big], exp[~big].sum())
        keep = f_exp > 0
        f_exp = f_exp[keep] * f_obs[keep].sum() / f_exp[keep].sum()
        assert stats.chisquare(f_obs[keep], f_exp).pvalue > P_MIN
    # the same audit on the honest Pruned-PMM of the same instance stays below the claim
    broken = case.factory()
    dom, metric = broken.input_domain, broken.input_metric
    honest = dataclasses.replace(
        case,
        factory=lambda: make_pruned_pmm(dom, metric, 1, BROKEN_SCALES, placement="center"),
        expect_violation=False,
    )
    assert honest.certified_epsilon() == claimed
    assert honest.run(runs=300, alpha=ALPHA).epsilon_lower <= claimed


def test_seeded_audit_is_reproducible():
    case = BROKEN[0]
    a7, b7 = case.samplers(seed_base=7)
    again, _ = case.samplers(seed_base=7)
    a8, _ = case.samplers(seed_base=8)
    r7, r7b, r8 = draw(a7, 10), draw(again, 10), draw(a8, 10)
    assert all(np.array_equal(u, v) for u, v in zip(r7, r7b, strict=True))
    assert not all(np.array_equal(u, v) for u, v in zip(r7, r8, strict=True))
    assert not np.array_equal(a7(0), b7(0))  # X and X' runs use different seeds
