"""The public axis-aligned box the PMM family works in, and the forms ``bounds`` may take."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Box", "as_box"]


@dataclass(frozen=True)
class Box:
    """A public axis-aligned box ``[lower, upper]`` in R^d."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]

    @property
    def dim(self) -> int:
        return len(self.lower)

    def to_unit(self, x: np.ndarray) -> np.ndarray:
        """Map rows into [0, 1]^d (a new array): coordinates outside the box, ``+-inf``
        included, are clamped to its faces and NaN goes to the lower face."""
        lo = np.asarray(self.lower)
        width = np.asarray(self.upper) - lo
        with np.errstate(invalid="ignore", over="ignore"):
            u = np.clip((x - lo) / width, 0.0, 1.0)
        u[np.isnan(u)] = 0.0
        return u

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """Map points of [0, 1]^d back into the box."""
        lo = np.asarray(self.lower)
        return np.clip(lo + u * (np.asarray(self.upper) - lo), lo, np.asarray(self.upper))


def _box_arrays(lower: Any, upper: Any, d: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        lo = np.asarray(lower, dtype=np.float64)
        hi = np.asarray(upper, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers") from None
    lo = np.broadcast_to(lo, (d,)) if lo.ndim == 0 else lo
    hi = np.broadcast_to(hi, (d,)) if hi.ndim == 0 else hi
    return lo, hi


def as_box(bounds: Any, d: int, name: str = "bounds") -> Box:
    """Validate public bounds for dimension ``d``.

    Accepted forms: a :class:`Box`; a mapping ``{"lower": ..., "upper": ...}``; a pair
    ``(lower, upper)`` of scalars or length-``d`` sequences; ``None`` for the unit cube.  A pair of
    two length-2 sequences at ``d = 2`` also reads as two per-column ``(low, high)`` pairs: when
    both readings are valid boxes and differ, the argument is refused as ambiguous (never guessed).
    """
    if bounds is None:
        return Box((0.0,) * d, (1.0,) * d)
    if isinstance(bounds, Box):
        lower, upper = bounds.lower, bounds.upper
    elif isinstance(bounds, dict):
        if set(bounds) != {"lower", "upper"}:
            raise ValueError(f"{name} as a mapping must have exactly the keys 'lower' and 'upper'")
        lower, upper = bounds["lower"], bounds["upper"]
    else:
        try:
            lower, upper = bounds
        except (TypeError, ValueError):
            raise ValueError(
                f"{name} must be a pair (lower, upper), a Box or {{'lower': ..., 'upper': ...}}"
            ) from None
    lo, hi = _box_arrays(lower, upper, d, name)
    if lo.shape != (d,) or hi.shape != (d,):
        raise ValueError(
            f"{name} must give {d} lower and {d} upper values, got shapes {lo.shape} and {hi.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{name} must be finite")
    if np.any(lo >= hi):
        raise ValueError(f"{name} must have lower < upper in every column")
    if np.any(hi / 2 - lo / 2 > np.finfo(np.float64).max / 2):  # upper - lower overflows
        raise ValueError(f"{name} must have a finite width upper - lower in every column")
    if (
        d == 2
        and not isinstance(bounds, (Box, dict))
        and np.ndim(lower) == 1
        and np.ndim(upper) == 1
    ):
        # the same 2 x 2 numbers read per column: (lo_0, hi_0), (lo_1, hi_1)
        alt_lo, alt_hi = np.array([lo[0], hi[0]]), np.array([lo[1], hi[1]])
        if np.all(alt_lo < alt_hi) and not (
            np.array_equal(alt_lo, lo) and np.array_equal(alt_hi, hi)
        ):
            raise ValueError(
                f"{name} is ambiguous for 2 columns: it reads both as (lower, upper) and as one "
                "(low, high) pair per column; pass Box(lower=[...], upper=[...]) or "
                "{'lower': [...], 'upper': [...]} (or a per-column mapping in synthesize)"
            )
    return Box(tuple(float(v) for v in lo), tuple(float(v) for v in hi))
