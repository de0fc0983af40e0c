"""Whether a release shows a progress bar, and the bar: shared by the Python API, the command
line and the Dask front end.

A bar is never shown when the input size is private (its timing and its counts could follow
``n`` or the source's layout); otherwise it is what the caller asked for, or, with ``None`` (the
default everywhere), shown when standard error is a terminal and the release is long: at least
:data:`LONG_RELEASE_ROWS` rows when the caller knows the (public) row count.
"""

from __future__ import annotations

import sys
from typing import Any

from opendp_wasserstein.core.optional import import_optional

__all__ = ["LONG_RELEASE_ROWS", "default_progress", "check_progress", "NoProgress", "progress_bar"]

#: the public rule of a long in-memory release: at least this many rows (``n`` is public then)
LONG_RELEASE_ROWS = 10**6


def _stderr_is_a_terminal() -> bool:
    isatty = getattr(sys.stderr, "isatty", None)
    return callable(isatty) and bool(isatty())


def check_progress(progress: Any) -> bool | None:
    """``progress`` is None or a flag (a truthy string must not switch a bar on)."""
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")
    return progress


def default_progress(progress: bool | None, private_size: bool, rows: int | None = None) -> bool:
    """Whether a release shows its progress bars: never with a private size (a bar counts the
    input blocks, whose number may follow the source's layout, and its timing follows ``n``);
    otherwise ``progress``, or with None (the default of the Python API, as on the command line)
    when standard error is a terminal and, if the public row count ``rows`` is given, it is at
    least :data:`LONG_RELEASE_ROWS`.  Pass ``rows`` only when the size is public (it is not read
    otherwise); ``None`` counts as long (a distributed release)."""
    if private_size:
        return False
    if progress is not None:
        return bool(progress)
    if rows is not None and rows < LONG_RELEASE_ROWS:
        return False
    return _stderr_is_a_terminal()


class NoProgress:
    """Stands in for a progress bar where none is shown."""

    total: int | None = None

    def update(self, k: int = 1) -> None: ...

    def step(self, done: int, total: int) -> None: ...

    def close(self) -> None: ...


def progress_bar(total: int, quiet: bool, desc: str) -> Any:
    """A progress bar on standard error, shown only on a terminal and only if tqdm is installed.

    Nothing is shown when ``quiet``, when standard error is not a terminal (pipes, files, CI
    logs) or when tqdm (the ``progress`` extra) is missing.  The bar has ``update(k)``,
    ``step(done, total)`` (for steps whose count is known only as they run) and ``close()``.
    """
    if quiet or not _stderr_is_a_terminal():
        return NoProgress()
    try:
        tqdm = import_optional("tqdm", "the progress bar").tqdm
    except ImportError:
        return NoProgress()

    class _Bar(tqdm):  # type: ignore[misc,valid-type]
        def step(self, done: int, total: int) -> None:
            self.total = total
            self.update(done - self.n)

    return _Bar(total=total, desc=desc, file=sys.stderr, leave=False)
