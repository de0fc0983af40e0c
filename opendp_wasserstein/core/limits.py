"""Up-front resource checks: refuse runs that would exhaust memory, with the estimate.

The limit is ``OPENDP_WASSERSTEIN_MEMORY_LIMIT`` (bytes) if set, else half the machine's
physical memory (8 GiB if that cannot be read).  Estimates use only public parameters.
"""

from __future__ import annotations

import os

__all__ = ["memory_limit", "check_memory", "format_bytes"]


def memory_limit() -> int:
    """The memory budget in bytes for one release."""
    env = os.environ.get("OPENDP_WASSERSTEIN_MEMORY_LIMIT")
    if env:
        try:
            value = int(float(env))
        except ValueError:
            raise ValueError("OPENDP_WASSERSTEIN_MEMORY_LIMIT must be a number of bytes") from None
        if value <= 0:
            raise ValueError("OPENDP_WASSERSTEIN_MEMORY_LIMIT must be positive")
        return value
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 * 2**30


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


def check_memory(estimate: float, what: str, hint: str = "") -> None:
    """Raise ``MemoryError``-like ``ValueError`` if ``estimate`` bytes exceed the limit."""
    limit = memory_limit()
    if estimate > limit:
        msg = (
            f"{what} would need about {format_bytes(estimate)} of memory, more than the limit of "
            f"{format_bytes(limit)} (set OPENDP_WASSERSTEIN_MEMORY_LIMIT to change it)"
        )
        raise ValueError(msg + (f"; {hint}" if hint else ""))
