"""The progress bar of the in-memory release: the default rule and what a private size hides."""

import sys

import numpy as np
import opendp.prelude as dp
import pytest

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.release import in_memory, progress
from opendp_wasserstein.release.options import SelectionOptions, SynthesisOptions
from opendp_wasserstein.release.progress import LONG_RELEASE_ROWS, default_progress
from opendp_wasserstein.runtime import reproducible


class Stream:
    """Standard error that says whether it is a terminal and keeps what is written."""

    def __init__(self, tty: bool) -> None:
        self.tty = tty
        self.text = ""

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None: ...


@pytest.fixture(autouse=True)
def _contrib():
    dp.enable_features("contrib")


@pytest.mark.parametrize(
    ("tty", "given", "private", "rows", "shown"),
    [
        (True, None, False, LONG_RELEASE_ROWS, True),
        (True, None, False, LONG_RELEASE_ROWS - 1, False),
        (True, None, False, None, True),  # no row count (Dask): long
        (False, None, False, LONG_RELEASE_ROWS, False),
        (True, None, True, None, False),
        (True, True, True, None, False),  # never with a private size, even when asked
        (False, True, False, 10, True),
        (True, False, False, LONG_RELEASE_ROWS, False),
    ],
)
def test_default_rule_follows_terminal_size_and_length(
    monkeypatch, tty, given, private, rows, shown
):
    monkeypatch.setattr(sys, "stderr", Stream(tty))
    assert default_progress(given, private, rows) is shown


def test_progress_must_be_a_flag_or_none():
    with pytest.raises(TypeError, match="progress"):
        SynthesisOptions(epsilon=1.0, progress="yes")
    with pytest.raises(TypeError, match="progress"):
        SelectionOptions(epsilon=1.0, progress=1)


def test_progress_with_a_schema_must_be_a_flag_or_none():
    with pytest.raises(TypeError, match="progress"):
        synthesize(np.zeros((4, 1)), 1.0, schema={"columns": []}, progress="yes")


def _spy(monkeypatch) -> list[tuple]:
    calls: list[tuple] = []

    def spy(given, private, rows=None):
        calls.append((given, private, rows))
        return default_progress(given, private, rows)

    monkeypatch.setattr(in_memory, "default_progress", spy)
    return calls


def _data(n: int = 200) -> np.ndarray:
    return np.random.default_rng(3).uniform(size=(n, 2))


def test_a_long_public_release_on_a_terminal_shows_its_stages(monkeypatch):
    pytest.importorskip("tqdm")
    stream = Stream(True)
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "LONG_RELEASE_ROWS", 100)  # a long release, made small
    calls = _spy(monkeypatch)
    bars = []

    def keep(total, quiet, desc):
        bars.append(progress.progress_bar(total, quiet, desc))
        return bars[-1]

    monkeypatch.setattr(in_memory, "progress_bar", keep)
    with reproducible(1):
        synthesize(_data(), 1.0, bounds=(0, 1))
    assert calls == [(None, False, 200)]
    assert "synthesize" in stream.text
    assert [(b.n, b.total) for b in bars] == [(3, 3)]  # data checked, measurement, released


def test_a_short_public_release_or_no_terminal_shows_nothing(monkeypatch):
    stream = Stream(True)
    monkeypatch.setattr(sys, "stderr", stream)
    with reproducible(1):
        synthesize(_data(), 1.0, bounds=(0, 1))  # 200 rows < LONG_RELEASE_ROWS
    assert stream.text == ""
    piped = Stream(False)
    monkeypatch.setattr(sys, "stderr", piped)
    monkeypatch.setattr(progress, "LONG_RELEASE_ROWS", 100)
    with reproducible(1):
        synthesize(_data(), 1.0, bounds=(0, 1))
    assert piped.text == ""


@pytest.mark.parametrize("given", [None, True])
def test_a_private_size_never_shows_a_bar_nor_reads_n_for_it(monkeypatch, given):
    stream = Stream(True)
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(progress, "LONG_RELEASE_ROWS", 1)  # every release would be long
    calls = _spy(monkeypatch)
    c = np.array([[0.2, 0.2], [0.8, 0.8]])
    with reproducible(1):
        synthesize(_data(), 1.0, bounds=(0, 1), public_size=False, progress=given)
        select_candidates(_data(), c, 5, 1.0, public_size=False, progress=given)
    assert calls == [(given, True, None), (given, True, None)]  # the row count is never passed
    assert stream.text == ""


def test_selection_shows_its_bar_when_asked(monkeypatch):
    pytest.importorskip("tqdm")
    stream = Stream(False)  # not a terminal: the bar helper shows nothing even when asked
    monkeypatch.setattr(sys, "stderr", stream)
    c = np.array([[0.2, 0.2], [0.8, 0.8]])
    with reproducible(1):
        counts, _ = select_candidates(_data(), c, 5, 1.0, progress=True)
    assert int(counts.sum()) == 5
    assert stream.text == ""
    stream = Stream(True)
    monkeypatch.setattr(sys, "stderr", stream)
    with reproducible(1):
        select_candidates(_data(), c, 5, 1.0, progress=True)
    assert "select" in stream.text
