"""Run-time options that are not part of any mechanism: reproducibility, sampler, diagnostics.

Constructors carry only what the mechanism needs.  Three things that tests, figures and
debugging need sit here instead, as context managers that hold for the calls made inside their
``with`` block (in the current thread or task; :mod:`contextvars`), and change nothing else:

- :func:`reproducible` makes releases reproducible from a seed.  **A release made inside it is
  not private**: its noise is a deterministic function of a seed that anyone may guess.  It
  exists for tests and figures; the default, everywhere else, is the operating system's CSPRNG.
- :func:`sampler` picks the exact discrete Laplace back-end (``"fast"``, the default vectorised
  sampler, or ``"opendp"``, OpenDP's own ``make_laplace``).  Both draw the same law.
- :func:`diagnostics` collects what each mechanism can say about its run that is public after
  the release (depth, visited nodes, the chosen candidate ...), without changing any output.

:example:

>>> import numpy as np, opendp.prelude as dp
>>> from opendp_wasserstein.measurements import make_pruned_pmm
>>> from opendp_wasserstein.runtime import diagnostics, reproducible
>>> from opendp_wasserstein.schedules.pure import paper_schedule
>>> dp.enable_features("contrib")
>>> meas = make_pruned_pmm(dp.numpy.array2_domain(num_columns=2, size=100, T=float),
...                        dp.symmetric_distance(), depth=6, scales=paper_schedule(2, 1.0, 6))
>>> x = np.random.default_rng(0).uniform(size=(100, 2))
>>> with reproducible(7):   # NOT private: for tests and figures only
...     a = meas(x)
>>> with reproducible(7), diagnostics() as info:
...     b = meas(x)
>>> bool(np.array_equal(a, b)), info[-1]["depth"]
(True, 6)
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["reproducible", "sampler", "diagnostics", "SAMPLERS"]

#: the discrete Laplace back-ends
SAMPLERS = ("fast", "opendp")

_SEED: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "opendp_wasserstein_seed", default=None
)
_SAMPLER: contextvars.ContextVar[str] = contextvars.ContextVar(
    "opendp_wasserstein_sampler", default="fast"
)
#: the lists of the open :func:`diagnostics` blocks, outermost first (a :func:`capture` block
#: starts a new tuple, hiding the outer ones)
_DIAGNOSTICS: contextvars.ContextVar[tuple[list[dict[str, Any]], ...]] = contextvars.ContextVar(
    "opendp_wasserstein_diagnostics", default=()
)


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError("seed must be >= 0")
    return int(seed)


@contextmanager
def reproducible(seed: int) -> Iterator[None]:
    """Releases inside this block draw all their randomness from ``seed``: **not private**.

    Each release restarts from the seed, so the same call on the same data gives the same
    output.  For tests and reproducible figures only.

    :param seed: a non-negative integer
    """
    token = _SEED.set(_check_seed(seed))
    try:
        yield
    finally:
        _SEED.reset(token)


@contextmanager
def sampler(name: str) -> Iterator[None]:
    """Draw discrete Laplace noise with back-end ``name`` inside this block.

    :param name: ``"fast"`` (the default: an exact vectorised sampler) or ``"opendp"`` (OpenDP's
        integer ``make_laplace``; it draws from OpenDP's own CSPRNG, so it cannot be combined
        with :func:`reproducible`)
    """
    if name not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {name!r}")
    token = _SAMPLER.set(name)
    try:
        yield
    finally:
        _SAMPLER.reset(token)


@contextmanager
def diagnostics() -> Iterator[list[dict[str, Any]]]:
    """Collect one dict per release made inside this block: what is public after that release
    (e.g. ``depth``, ``visited_nodes``, ``s`` for the adaptive mechanism).  Outputs are unchanged.

    Blocks nest: every open block sees every release made inside it, so
    ``with diagnostics() as info: synthesize(...)`` collects the records of the release
    :func:`~opendp_wasserstein.synthesize` makes (which opens a block of its own for its report).

    :return: the list the dicts are appended to, in release order
    """
    out: list[dict[str, Any]] = []
    token = _DIAGNOSTICS.set((*_DIAGNOSTICS.get(), out))
    try:
        yield out
    finally:
        _DIAGNOSTICS.reset(token)


@contextmanager
def capture() -> Iterator[list[dict[str, Any]]]:
    """Like :func:`diagnostics`, but what is recorded inside goes to this block only, not to
    the enclosing ones: for a mechanism that folds the records of an inner release into its own
    record (recorded once, after the block), so that an enclosing block sees each release once.

    :return: the list the dicts are appended to, in release order
    """
    out: list[dict[str, Any]] = []
    token = _DIAGNOSTICS.set((out,))
    try:
        yield out
    finally:
        _DIAGNOSTICS.reset(token)


def current_seed() -> int | None:
    """The seed of the enclosing :func:`reproducible` block, or None (secure)."""
    return _SEED.get()


def current_sampler() -> str:
    """The discrete Laplace back-end of the enclosing :func:`sampler` block (default ``"fast"``)."""
    return _SAMPLER.get()


def record(info: dict[str, Any]) -> None:
    """Append ``info`` (public after the release) to the list of every enclosing
    :func:`diagnostics` block (up to the innermost :func:`capture` block)."""
    for sink in _DIAGNOSTICS.get():
        sink.append(dict(info))


def collecting() -> bool:
    """Whether a :func:`diagnostics` block is open (lets a mechanism skip bookkeeping)."""
    return bool(_DIAGNOSTICS.get())
