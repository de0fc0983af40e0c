"""Checks of privacy parameters: messages name the parameter and never contain private data."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from opendp.mod import Measure

from opendp_wasserstein.core import dp

__all__ = [
    "check_epsilon",
    "check_scales",
    "check_output_measure",
    "check_threshold",
    "check_delta",
    "EPS_MIN",
    "EPS_MAX",
    "SCALE_MAX",
    "ScaleLimitError",
    "OUTPUT_MEASURES",
]


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


class ScaleLimitError(ValueError):
    """A noise scale above :data:`SCALE_MAX` (usually: an epsilon too small for exact integer
    noise).

    A ``ValueError``; callers that derive scales from an epsilon catch it to name that epsilon.
    """


def check_scales(
    scales: Any, length: int, name: str = "scales", root_may_be_inf: bool = False
) -> tuple[float, ...]:
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
        raise ValueError(
            f"{name} must have {length} entries (sigma_0..sigma_depth), got {arr.size}"
        )
    rest = arr[1:] if root_may_be_inf and arr.size and arr[0] == np.inf else arr
    if not np.all(np.isfinite(rest)) or np.any(rest <= 0):
        raise ValueError(
            f"{name} must all be finite and > 0"
            + (" (sigma_0 may be inf)" if root_may_be_inf else "")
        )
    if np.any(rest < EPS_MIN) or np.any(rest > SCALE_MAX):
        err = ScaleLimitError if np.any(rest > SCALE_MAX) else ValueError
        raise err(f"{name} must all be between {EPS_MIN:g} and 2^52 (= {SCALE_MAX:.0f})")
    return tuple(float(s) for s in arr)


#: the noise each output measure of the noisy-count mechanisms calls for
OUTPUT_MEASURES = {"max_divergence": "laplace", "zero_concentrated_divergence": "gaussian"}


def check_output_measure(output_measure: Any) -> str:
    """``"laplace"`` for ``dp.max_divergence()`` (pure DP) or ``None`` (the default everywhere),
    ``"gaussian"`` for ``dp.zero_concentrated_divergence()`` (zCDP), else a ``ValueError`` naming
    ``output_measure``.

    :example:

    >>> import opendp.prelude as dp
    >>> from opendp_wasserstein.core.parameters import check_output_measure
    >>> (check_output_measure(dp.max_divergence()),
    ...  check_output_measure(dp.zero_concentrated_divergence()))
    ('laplace', 'gaussian')
    """
    if output_measure is None:
        return "laplace"
    kind = None
    if isinstance(output_measure, Measure):  # OpenDP's own equality, not the printed name
        for name, noise in OUTPUT_MEASURES.items():
            if output_measure == getattr(dp, name)():
                kind = noise
    if kind is None:
        raise ValueError(
            "output_measure must be dp.max_divergence() (discrete Laplace noise) or "
            f"dp.zero_concentrated_divergence() (discrete Gaussian noise), got {output_measure!r}"
        )
    return kind


def check_threshold(threshold: Any, name: str = "threshold") -> float:
    """A finite float ``>= 0`` (a post-processing threshold), or an error naming ``name``."""
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(
        threshold, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{name} must be a number, got {type(threshold).__name__}")
    t = float(threshold)
    if not (math.isfinite(t) and t >= 0.0):
        raise ValueError(f"{name} must be a finite number >= 0, got {threshold!r}")
    return t


def check_delta(delta: Any) -> float:
    """A ``delta`` in ``(0, 1)``, as a float, or an error naming ``delta``."""
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)):
        raise TypeError(f"delta must be a number, got {type(delta).__name__}")
    d = float(delta)
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return d
