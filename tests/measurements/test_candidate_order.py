"""A release must not depend on the order of the public candidates (issue 20, item 8).

Ties (a record at the same distance from several candidates, common under the table metric,
whose category distance is 0 or 1) used to go to the lowest row number, and the rounding steps
after the noise broke their ties the same way: ``select`` gave most of ``m`` to the first
candidate row of the file.  Now the projection deals tied records evenly in an order fixed by
the candidates' values, and the roundings break ties with fresh coins."""

from __future__ import annotations

import itertools

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

from opendp_wasserstein import select_candidates
from opendp_wasserstein.measurements import largest_remainder
from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.public_candidates.trees import Tree, closest_multiset
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import CategoricalColumn, FloatColumn, Schema


@pytest.fixture(autouse=True)
def _contrib() -> None:
    dp.enable_features("contrib")


SCHEMA = Schema(
    {
        "region": CategoricalColumn(categories=("n", "e", "s", "w")),
        "x": FloatColumn(bounds=(0.0, 1.0)),
    }
)
CANDIDATES = pd.DataFrame({"region": ["n", "e", "s", "w"], "x": [0.2, 0.4, 0.6, 0.8]})


@pytest.mark.parametrize("mechanism", ["projection", "nn"])
def test_the_first_candidate_row_no_longer_takes_the_tied_records(mechanism: str) -> None:
    """Every record has a region no candidate shares except one: under the table metric it is
    at distance 1 from all four.  With almost no noise the tied records are split evenly (the
    first row got 87-100 of 100)."""
    rng = np.random.default_rng(0)
    data = pd.DataFrame(
        {"region": rng.choice(["n", "e", "s", "w"], 400), "x": rng.uniform(size=400)}
    )
    cands = CANDIDATES.copy()
    cands["region"] = ["n", "n", "n", "n"]  # all in region n: every other record ties all four
    cands["x"] = [0.0, 1.0, 0.5, 0.25]  # and the records of region n are near one of them
    data.loc[data["region"] == "n", "x"] = 0.5
    tied = int((data["region"] != "n").sum())
    counts, _ = select_candidates(
        data, cands, m=400, epsilon=1e4, mechanism=mechanism, schema=SCHEMA
    )
    expect = np.full(4, tied / 4)
    expect[2] += 400 - tied
    assert np.abs(counts - expect).max() <= 3, counts


def _law(
    mechanism: str, C: np.ndarray, x: np.ndarray, m: int, seeds: range
) -> list[tuple[int, ...]]:
    out = []
    for s in seeds:
        with reproducible(s):
            counts, _ = select_candidates(x, C, m, 2.0, mechanism=mechanism)
        out.append(tuple(int(v) for v in counts))
    return out


def test_a_permutation_of_the_candidates_permutes_the_law_of_the_projection() -> None:
    """Seeded: 400 releases on ``C`` and 400 (other seeds) on ``C`` permuted, mapped back; the
    two samples of the 10 possible multisets must pass a chi-square test of one law at
    ``p >= 10^-4`` (on the old code, ties to the lowest row number, ``p < 10^-30``).  The FRT
    tree, the noise and the tie-break coins are drawn afresh by every release."""
    C = np.array([[0.0], [1.0], [3.0]])
    x = np.concatenate([np.full((30, 1), 0.5), np.full((10, 1), 2.0)])  # ties 0|1 and 1|3
    perm = np.array([2, 0, 1])
    inv = np.argsort(perm)
    a = _law("projection", C, x, 3, range(400))
    b = [
        tuple(np.asarray(o)[inv].tolist())
        for o in _law("projection", C[perm], x, 3, range(1000, 1400))
    ]
    outcomes = sorted(set(a) | set(b))
    table = np.array([[a.count(o) for o in outcomes], [b.count(o) for o in outcomes]])
    keep = table.sum(axis=0) >= 5
    pooled = np.concatenate([table[:, keep], table[:, ~keep].sum(axis=1, keepdims=True)], axis=1)
    pooled = pooled[:, pooled.sum(axis=0) > 0]
    assert chi2_contingency(pooled)[1] >= 1e-4, table


def test_rounding_ties_are_broken_by_coins_not_by_index() -> None:
    """All-zero noisy counts: one point among three equal remainders went to index 0 always."""
    src = RandomSource(7)
    got = np.array([largest_remainder([0, 0, 0], 1, src) for _ in range(3000)])
    share = got.sum(axis=0)
    assert share.sum() == 3000
    assert np.abs(share - 1000).max() < 120  # binomial sd ~26: 4.6 sd
    assert largest_remainder([0, 0, 0], 1).tolist() == [1, 0, 0]  # no coins: the documented default


def test_closest_multiset_ties_are_broken_by_coins_not_by_child_id() -> None:
    tree = Tree(parent=[-1, 0, 0], weight=[0.0, 1.0, 1.0])  # two leaves, equal weights
    src = RandomSource(3)
    firsts = [
        int(closest_multiset(tree, [1.0, 0.5, 0.5], 1, tie_break=src)[0]) for _ in range(2000)
    ]
    assert abs(sum(firsts) - 1000) < 120
    assert closest_multiset(tree, [1.0, 0.5, 0.5], 1).tolist() == [1, 0]


def test_permuted_candidates_permute_the_projected_histogram_exactly() -> None:
    from opendp_wasserstein.public_candidates.sets import NearestCandidates

    rng = np.random.default_rng(2)
    C = np.array(list(itertools.product([0.0, 1.0], repeat=3)))
    x = rng.integers(0, 3, size=(500, 3)) * 0.5
    h = np.bincount(NearestCandidates(C, "linf").query(x), minlength=8)
    for _ in range(5):
        perm = rng.permutation(8)
        assert np.array_equal(
            np.bincount(NearestCandidates(C[perm], "linf").query(x), minlength=8), h[perm]
        )
