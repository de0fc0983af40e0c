"""Input data domains: what a constructor may read off ``array2_domain`` and its metric, and the
release-time validation of a data array (errors depend only on public facts)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from opendp.extras.numpy import NPArray2Domain
from opendp.mod import Domain, Metric

from opendp_wasserstein.core import dp

__all__ = [
    "array_columns",
    "array_size",
    "check_data_domain",
    "check_metric",
    "replacements",
    "whole_replacements",
    "validate_data",
    "domain_allows_nan",
]


def _array2_descriptor(input_domain: Domain) -> Any:
    if not isinstance(getattr(input_domain, "descriptor", None), NPArray2Domain):
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
    if input_metric == dp.symmetric_distance():
        return "symmetric"
    if input_metric == dp.change_one_distance():
        if size is None:
            raise ValueError("input_metric change_one_distance needs a sized input_domain (size=n)")
        return "change_one"
    raise ValueError(
        "input_metric must be dp.symmetric_distance() or dp.change_one_distance(), got "
        f"{input_metric}"
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


def whole_replacements(metric_kind: str, d_in: Any) -> int:
    """The largest number of *replacements* (or, unsized, of added and removed rows) that
    ``d_in`` allows, as an integer: ``d_in // 2`` under ``symmetric_distance`` on a sized
    domain (both data sets have ``n`` rows, so their symmetric difference is even),
    ``d_in`` under ``change_one_distance`` and under ``symmetric_distance`` without a size
    (``metric_kind="unsized"``: each added or removed row counts once).

    Used by the l2sq (zCDP) maps, which are quadratic in it, so the floor matters.
    """
    if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)):
        raise TypeError(f"d_in must be an integer distance, got {type(d_in).__name__}")
    if d_in < 0:
        raise ValueError("d_in must be >= 0")
    return int(d_in) // 2 if metric_kind == "symmetric" else int(d_in)


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
