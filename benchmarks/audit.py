"""Privacy audit, long mode: every registered audit case with many more runs.

For every audit case of the registry (``tests/conformance/registry.py``: Pruned-PMM, PMM, Adaptive
Pruned-PMM, the two selections, the public-candidate mechanisms, the private-size count) and the
harness's deliberately broken Pruned-PMM (``tests/conformance/audit/harness.py``) it draws
``runs`` releases on each of two hard neighbouring datasets and prints the statistically valid
(probability >= 1 - alpha) empirical lower bound on epsilon next to the epsilon certified by the
measurement's own privacy map, and the exact max log-ratio where the output law is known.

A correct mechanism has ``lower bound <= certified``; the broken one (flagged ``BROKEN``) must
show ``lower bound > certified``.  Any other violation is printed as ``VIOLATION`` and makes the
script exit with status 1.

Usage::

    python benchmarks/audit.py            # runs = 10 x the fast test setting per case
    python benchmarks/audit.py --quick    # the fast test setting (about a minute)
    python benchmarks/audit.py --factor 40 --secure

Seeded runs (default) are drawn inside ``opendp_wasserstein.runtime.reproducible`` and are
reproducible and **not private**; ``--secure`` draws every release from the operating system's
CSPRNG (the deployment path).  The cases that draw from OpenDP's own CSPRNG (the selections,
the nearest-neighbour histogram, the private-size count) are secure either way.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.conformance.audit.harness import AuditCase, all_cases, timed_run  # noqa: E402


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--quick", action="store_true", help="the fast test setting (factor 1)")
    p.add_argument(
        "--factor", type=float, default=10.0, help="runs = factor x the case's fast runs"
    )
    p.add_argument("--runs", type=int, default=None, help="the same number of runs for every case")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--secure", action="store_true", help="unseeded releases from the OS CSPRNG")
    p.add_argument("--seed-base", type=int, default=0)
    p.add_argument("--only", default=None, help="substring of the cases to run")
    p.add_argument(
        "--no-broken", action="store_true", help="skip the deliberately broken mechanism"
    )
    a = p.parse_args(argv)
    factor = 1.0 if a.quick else a.factor

    cases: list[AuditCase] = all_cases(include_broken=not a.no_broken)
    if a.only:
        cases = [c for c in cases if a.only in c.label]
    header = (
        f"{'mechanism':<34} {'case':<62} {'certified':>9} {'exact':>7} {'lower':>7} "
        f"{'runs':>6} {'seconds':>8}  status / strongest event"
    )
    print(header)
    print("-" * len(header))
    bad = 0
    t_all = time.perf_counter()
    for index, case in enumerate(cases):
        runs = a.runs if a.runs is not None else max(1, int(round(case.fast_runs * factor)))
        if a.secure:
            case = dataclasses.replace(case, seedable=False)
        eps = case.certified_epsilon()
        exact = case.exact_epsilon()
        # independent seeds per case (the fast tests share seed_base 0 across cases)
        rep, secs = timed_run(case, runs, a.alpha, a.seed_base + 10_000_000 * index)
        over = rep.epsilon_lower > eps
        if case.expect_violation:
            status = "BROKEN, caught" if over else "BROKEN, NOT CAUGHT"
            bad += not over
        else:
            status = "VIOLATION" if over else "ok"
            bad += over
        b = rep.best
        where = f"{b.event} ({b.direction}: {b.count_num} vs {b.count_den})" if b else ""
        print(
            f"{case.mechanism:<34} {case.name:<62} {eps:>9.4f} {_fmt(exact):>7} "
            f"{rep.epsilon_lower:>7.4f} "
            f"{rep.runs:>6} {secs:>8.1f}  {status}: {where}",
            flush=True,
        )
    print(
        f"\n{len(cases)} cases, alpha = {a.alpha} per case (Bonferroni over events and "
        "directions), "
        f"{'secure' if a.secure else 'seeded'} releases, {time.perf_counter() - t_all:.0f} s"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
