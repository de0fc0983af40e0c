"""Picklable test hooks for the worker processes (pickled by value: see test_run.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class KillWorker:
    """Kill the worker process running part ``q``: once (a sentinel file marks the first
    attempt) or at every attempt."""

    sentinel: str
    q: int
    always: bool = False

    def __call__(self, q: int) -> None:
        if q != self.q:
            return
        if self.always or not os.path.exists(self.sentinel):
            with open(self.sentinel, "w"):
                pass
            os._exit(1)


@dataclass(frozen=True)
class Fail:
    """Raise in part ``q`` (an ordinary task error)."""

    q: int

    def __call__(self, q: int) -> None:
        if q == self.q:
            raise RuntimeError("injected failure")
