"""runtime.diagnostics blocks nest: each sees the releases made inside it (issue 20, item 14)."""

from __future__ import annotations

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein import runtime, select_candidates, synthesize

X = np.random.default_rng(0).uniform(size=(300, 2))


@pytest.fixture(autouse=True)
def _contrib() -> None:
    dp.enable_features("contrib")


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm", "privtree"])
def test_an_enclosing_block_sees_what_synthesize_ran(mechanism: str) -> None:
    """``synthesize`` opens a block of its own for its report; the caller's block used to get
    0 records.  Now it gets one record per release, the one the report is built from."""
    with runtime.reproducible(3), runtime.diagnostics() as info:
        _, report = synthesize(X, 1.0, bounds=(0.0, 1.0), mechanism=mechanism)
    assert len(info) >= 1
    merged: dict = {}
    for r in info:
        merged |= r
    assert merged["depth"] == report.depth
    assert merged["visited_nodes"] == report.visited_nodes


def test_adaptive_records_once_per_release_in_every_block() -> None:
    """The adaptive mechanism folds its chosen Pruned-PMM's record into its own
    (``runtime.capture``): each open block sees one record for the one release."""
    with runtime.reproducible(1), runtime.diagnostics() as outer:
        with runtime.diagnostics() as inner:
            synthesize(X, 1.0, bounds=(0.0, 1.0), mechanism="adaptive")
        synthesize(X, 1.0, bounds=(0.0, 1.0), mechanism="pruned")
    assert len(inner) == 1
    assert "candidate_index" in inner[0]
    assert "depth" in inner[0]
    assert len(outer) == 2
    assert outer[0] == inner[0]
    assert "candidate_index" not in outer[1]


def test_a_capture_block_hides_its_records_from_enclosing_blocks() -> None:
    with runtime.diagnostics() as outer:
        with runtime.capture() as cap:
            runtime.record({"a": 1})
        runtime.record({"b": 2})
    assert cap == [{"a": 1}]
    assert outer == [{"b": 2}]
    assert not runtime.collecting()
    runtime.record({"c": 3})  # outside every block: dropped, no error


def test_an_enclosing_block_sees_what_select_candidates_ran() -> None:
    C = np.array([[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]])
    with runtime.diagnostics() as info:
        with runtime.diagnostics() as inner:
            select_candidates(X, C, m=10, epsilon=1.0)
    assert info == inner
