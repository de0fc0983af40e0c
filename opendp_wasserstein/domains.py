"""Domains, metrics and exact map arithmetic shared by every constructor.

OpenDP compares user domains and metrics by identifier only, so every descriptor here is a
frozen dataclass whose every field appears in the identifier string.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import opendp.prelude as dp
from opendp.mod import Domain, Metric

from opendp_wasserstein._compat import extrinsic_distance, extrinsic_domain

__all__ = [
    "WeightedL1Distance",
    "weighted_l1_distance",
    "DyadicCountsDomain",
    "dyadic_counts_domain",
    "Box",
    "as_box",
    "array_columns",
    "array_size",
    "check_data_domain",
    "check_metric",
    "replacements",
    "round_up",
    "round_down",
    "exact_epsilon",
    "check_epsilon",
    "check_scales",
    "SCALE_MAX",
    "validate_data",
    "domain_allows_nan",
]

# ---------------------------------------------------------------------------------------------
# exact arithmetic for maps


def round_up(value: Fraction | int) -> float:
    """The smallest float >= ``value`` (exact rational), so a map never under-reports
    (``inf`` past the largest float: a valid, if vacuous, bound)."""
    try:
        f = float(value)
    except OverflowError:
        return math.inf
    if Fraction(f) < value:
        f = math.nextafter(f, math.inf)
    return f


def round_down(value: Fraction | int) -> float:
    """The largest float <= ``value`` (exact rational)."""
    f = float(value)
    if Fraction(f) > value:
        f = math.nextafter(f, -math.inf)
    return f


def exact_epsilon(weight: Fraction | int, scales: Sequence[float]) -> float:
    """``weight * sum(1 / s)`` computed exactly over the rationals, rounded up to a float
    (an infinite scale, a level that is not released, adds nothing)."""
    total = sum((Fraction(1) / Fraction(float(s)) for s in scales if math.isfinite(s)), Fraction(0))
    return round_up(Fraction(weight) * total)


# ---------------------------------------------------------------------------------------------
# parameter checks (messages name the parameter and never contain private data)


#: privacy parameters must lie in [EPS_MIN, EPS_MAX]: far outside, 2/eps or eps * n overflow
EPS_MIN, EPS_MAX = 1e-100, 1e100


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """A float in ``[1e-100, 1e100]``, or a ``ValueError`` naming ``name``."""
    if isinstance(epsilon, (str, bytes)):
        raise TypeError(f"{name} must be a number, got {type(epsilon).__name__}")
    if isinstance(epsilon, bool):
        raise ValueError(f"{name} must be a number > 0, got {epsilon!r}")
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {type(epsilon).__name__}") from None
    if not math.isfinite(eps) or eps <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}")
    if not EPS_MIN <= eps <= EPS_MAX:
        raise ValueError(f"{name} must be between {EPS_MIN:g} and {EPS_MAX:g}, got {epsilon!r}")
    return eps


#: noise scales are at most 2^52: beyond it no float budget is left to spend (1/sigma < 2^-52),
#: and it keeps every noisy count, mass and split an exact int64 (see ``node_noise.NOISE_LIMIT``)
SCALE_MAX = 2.0**52


def check_scales(scales: Any, length: int, name: str = "scales", root_may_be_inf: bool = False) -> tuple[float, ...]:
    """``length`` positive floats in ``[1e-100, 2^52]``, or a ``ValueError`` naming ``name``.

    With ``root_may_be_inf``, ``scales[0]`` may be ``inf``: the root count is not released.
    """
    try:
        arr = np.asarray(scales, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size != length:
        raise ValueError(f"{name} must have {length} entries (sigma_0..sigma_depth), got {arr.size}")
    rest = arr[1:] if root_may_be_inf and arr.size and arr[0] == np.inf else arr
    if not np.all(np.isfinite(rest)) or np.any(rest <= 0):
        raise ValueError(f"{name} must all be finite and > 0" + (" (sigma_0 may be inf)" if root_may_be_inf else ""))
    if np.any(rest < EPS_MIN) or np.any(rest > SCALE_MAX):
        raise ValueError(f"{name} must all be between {EPS_MIN:g} and 2^52 (= {SCALE_MAX:.0f})")
    return tuple(float(s) for s in arr)


# ---------------------------------------------------------------------------------------------
# the public box


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
        raise ValueError(f"{name} must give {d} lower and {d} upper values, got shapes {lo.shape} and {hi.shape}")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{name} must be finite")
    if np.any(lo >= hi):
        raise ValueError(f"{name} must have lower < upper in every column")
    if np.any(hi / 2 - lo / 2 > np.finfo(np.float64).max / 2):  # upper - lower overflows
        raise ValueError(f"{name} must have a finite width upper - lower in every column")
    if d == 2 and not isinstance(bounds, (Box, dict)) and np.ndim(lower) == 1 and np.ndim(upper) == 1:
        # the same 2 x 2 numbers read per column: (lo_0, hi_0), (lo_1, hi_1)
        alt_lo, alt_hi = np.array([lo[0], hi[0]]), np.array([lo[1], hi[1]])
        if np.all(alt_lo < alt_hi) and not (np.array_equal(alt_lo, lo) and np.array_equal(alt_hi, hi)):
            raise ValueError(
                f"{name} is ambiguous for 2 columns: it reads both as (lower, upper) and as one "
                "(low, high) pair per column; pass Box(lower=[...], upper=[...]) or "
                "{'lower': [...], 'upper': [...]} (or a per-column mapping in synthesize)"
            )
    return Box(tuple(float(v) for v in lo), tuple(float(v) for v in hi))


# ---------------------------------------------------------------------------------------------
# input data domains and metrics


def _array2_descriptor(input_domain: Domain) -> Any:
    if not str(input_domain).startswith("NPArray2Domain"):
        raise ValueError(
            "input_domain must be dp.numpy.array2_domain(num_columns=d, size=n or None, T=float), "
            f"got {input_domain}"
        )
    return input_domain.descriptor


def array_columns(input_domain: Domain) -> int:
    """The number of columns of an ``array2_domain`` (which must be set)."""
    desc = _array2_descriptor(input_domain)
    if desc.num_columns is None:
        raise ValueError("input_domain must set num_columns (the data dimension d)")
    return int(desc.num_columns)


def array_size(input_domain: Domain) -> int | None:
    """The public number of rows of an ``array2_domain``, or ``None``."""
    size = _array2_descriptor(input_domain).size
    return None if size is None else int(size)


def check_data_domain(input_domain: Domain) -> tuple[int, int | None]:
    """Check a float ``array2_domain`` and return ``(d, n or None)``."""
    desc = _array2_descriptor(input_domain)
    if str(desc.T) != "f64":
        raise ValueError(f"input_domain must have T=float (f64), got T={desc.T}")
    d = array_columns(input_domain)
    if d < 1:
        raise ValueError("input_domain num_columns must be >= 1")
    n = array_size(input_domain)
    if n is not None and n < 1:
        raise ValueError("input_domain size must be >= 1")
    return d, n


def check_metric(input_metric: Metric, size: int | None) -> str:
    """Accept ``symmetric_distance`` and, when the size is public, ``change_one_distance``."""
    name = str(input_metric)
    if name == "SymmetricDistance()":
        return "symmetric"
    if name == "ChangeOneDistance()":
        if size is None:
            raise ValueError("input_metric change_one_distance needs a sized input_domain (size=n)")
        return "change_one"
    raise ValueError(
        f"input_metric must be dp.symmetric_distance() or dp.change_one_distance(), got {name}"
    )


def replacements(metric_kind: str, d_in: Any) -> Fraction:
    """An upper bound on the records added plus removed that ``d_in`` stands for, halved.

    Each replacement changes an l1 histogram by at most 2: under ``symmetric_distance`` d_in
    adds/removes change it by at most d_in, under ``change_one_distance`` d_in replacements by
    2 * d_in.  This returns that l1 change divided by 2, as an exact rational.
    """
    if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)):
        raise TypeError(f"d_in must be an integer distance, got {type(d_in).__name__}")
    if d_in < 0:
        raise ValueError("d_in must be >= 0")
    return Fraction(int(d_in), 2) if metric_kind == "symmetric" else Fraction(int(d_in))


def validate_data(
    x: Any, d: int, size: int | None, name: str = "data", nan: bool = True
) -> np.ndarray:
    """Check a data array at release time.  Errors name the parameter and depend only on
    public facts (type, dtype, shape, the domain's public size) -- never on the values:

    - ``+-inf`` is not an error: the box clamp maps it to the box face;
    - NaN is not an error when the input domain admits NaN (``nan=True``, the default of
      ``array2_domain(T=float)``): :meth:`Box.to_unit` imputes it at the box's lower bound, a
      fixed row-wise map (as OpenDP's own ``make_np_clamp`` does with ``nan_to_num``);
    - when the domain excludes NaN (``nan=False``), data holding NaN is outside the input
      domain, on which no privacy guarantee is made, and is refused;
    - an empty array is valid when the size is not public.
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy ndarray")
    if x.dtype.kind != "f":
        raise TypeError(f"{name} must have a float dtype, got {x.dtype}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-dimensional array, got {x.ndim} dimensions")
    if x.shape[1] != d:
        raise ValueError(f"{name} must have {d} columns, got {x.shape[1]}")
    if size is not None and x.shape[0] != size:
        raise ValueError(f"{name} must have exactly {size} rows (the domain's public size)")
    if not nan and np.isnan(x).any():
        raise ValueError(f"{name} must not contain NaN: the input domain has nan=False")
    return x


def domain_allows_nan(input_domain: Domain) -> bool:
    """Whether an ``array2_domain`` admits NaN (its ``nan`` flag)."""
    return bool(_array2_descriptor(input_domain).nan)


# ---------------------------------------------------------------------------------------------
# weighted l1 metric on hierarchical counts


@dataclass(frozen=True)
class WeightedL1Distance:
    """``l1(s)``: ``d(u, v) = sum_j sum_{nodes at level j} |u - v| / scales[j]``."""

    scales: tuple[float, ...]


def weighted_l1_distance(scales: Sequence[float]) -> Metric:
    """The weighted l1 metric ``l1(s)`` on hierarchical counts, one scale per level.

    :param scales: the level scales ``s_0 .. s_L`` (``s_j`` weights every node of level j)
    """
    desc = WeightedL1Distance(tuple(float(s) for s in scales))
    return extrinsic_distance(f"WeightedL1Distance(scales={desc.scales!r})", desc)


@dataclass(frozen=True)
class DyadicCountsDomain:
    """Lazy count trees of the cyclic dyadic hierarchy of ``[lower, upper]`` to ``depth``."""

    depth: int
    num_columns: int
    size: int | None
    lower: tuple[float, ...]
    upper: tuple[float, ...]


def dyadic_counts_domain(depth: int, num_columns: int, size: int | None, box: Box) -> Domain:
    """The domain of :class:`~opendp_wasserstein.hierarchy.CountTree` values."""
    desc = DyadicCountsDomain(depth, num_columns, size, box.lower, box.upper)
    ident = (
        f"DyadicCountsDomain(depth={depth}, num_columns={num_columns}, size={size}, "
        f"lower={box.lower!r}, upper={box.upper!r})"
    )

    def member(x: Any) -> bool:
        from opendp_wasserstein.hierarchy import CountTree

        return isinstance(x, CountTree) and x.depth == depth and x.d == num_columns

    return extrinsic_domain(ident, member, desc)


def descriptor_of(domain: Domain, kind: type) -> Any:
    """The descriptor of a user domain/metric, checked to be of ``kind``."""
    desc = getattr(domain, "descriptor", None)
    if not isinstance(desc, kind):
        raise ValueError(f"expected a {kind.__name__} domain or metric, got {domain}")
    return desc


_ = dp  # keep the prelude import: it registers the numpy extras
