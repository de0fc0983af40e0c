"""The one place that touches OpenDP beyond its documented public API.

OpenDP's public way to build a Transformation or Measurement from Python functions is
``dp.t.make_user_transformation`` / ``dp.m.make_user_measurement`` / ``dp.user_domain``, which
require the ``"honest-but-curious"`` feature: they exist for users whose maps are not vetted.
OpenDP's own Python extras (``opendp.extras.numpy``, ``opendp.extras.sklearn``) instead build on
the private constructors of ``opendp._internal`` and on ``opendp.extras._utilities.to_then``, and
so does this package: its maps are proved (``docs/proofs``), so asking users to enable
``honest-but-curious`` would misdescribe them.

Every other module imports these names from here, never from ``opendp._internal``.
``tests/test_compat.py`` checks each one against the installed OpenDP (existence and the
signature we call), so an OpenDP release that changes them fails loudly, in one place, with a
message naming what moved; ``pyproject.toml`` pins ``opendp<0.17`` for this reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import opendp.context as _context
from opendp._internal import (
    GLOBAL_FEATURES,
    _extrinsic_distance,
    _extrinsic_domain,
    _make_measurement,
    _make_transformation,
    _new_pure_function,
)
from opendp.extras._utilities import to_then as _to_then
from opendp.mod import Measurement, Transformation

__all__ = [
    "make_transformation",
    "make_measurement",
    "new_function",
    "extrinsic_domain",
    "extrinsic_distance",
    "to_then",
    "register",
    "feature_enabled",
    "PRIVATE_API",
]

#: name in this module -> (the OpenDP object, the parameters we pass it, in order)
PRIVATE_API: dict[str, tuple[Any, tuple[str, ...]]] = {
    "make_transformation": (
        _make_transformation,
        (
            "input_domain",
            "input_metric",
            "output_domain",
            "output_metric",
            "function",
            "stability_map",
        ),
    ),
    "make_measurement": (
        _make_measurement,
        ("input_domain", "input_metric", "output_measure", "function", "privacy_map", "TO"),
    ),
    "new_function": (_new_pure_function, ("function", "TO")),
    "extrinsic_domain": (_extrinsic_domain, ("identifier", "member", "descriptor")),
    "extrinsic_distance": (_extrinsic_distance, ("identifier", "descriptor")),
    "to_then": (_to_then, ("constructor",)),
}


def make_transformation(
    input_domain: Any,
    input_metric: Any,
    output_domain: Any,
    output_metric: Any,
    function: Callable[[Any], Any],
    stability_map: Callable[[Any], Any],
) -> Transformation:
    """A Transformation from a Python function and its (proved) stability map."""
    return _make_transformation(
        input_domain, input_metric, output_domain, output_metric, function, stability_map
    )


def make_measurement(
    input_domain: Any,
    input_metric: Any,
    output_measure: Any,
    function: Callable[[Any], Any],
    privacy_map: Callable[[Any], Any],
) -> Measurement:
    """A Measurement from a Python function and its (proved) privacy map (any Python output)."""
    return _make_measurement(
        input_domain, input_metric, output_measure, function, privacy_map, TO="ExtrinsicObject"
    )


def new_function(function: Callable[[Any], Any]) -> Any:
    """A post-processing ``Function`` with a Python output."""
    return _new_pure_function(function, TO="ExtrinsicObject")


def extrinsic_domain(identifier: str, member: Callable[[Any], bool], descriptor: Any) -> Any:
    """A user domain: compared by ``identifier``, which must therefore carry every field."""
    return _extrinsic_domain(identifier, member, descriptor)


def extrinsic_distance(identifier: str, descriptor: Any) -> Any:
    """A user metric: compared by ``identifier``."""
    return _extrinsic_distance(identifier, descriptor)


def to_then(constructor: Callable[..., Any]) -> Callable[..., Any]:
    """``then_x`` from ``make_x`` (fixes ``input_domain`` and ``input_metric`` when chained)."""
    return _to_then(constructor)


_REGISTERED: set[str] = set()


def register(constructor: Callable[..., Any]) -> None:
    """Register ``make_x`` with OpenDP's Context API as ``x``, as OpenDP's own extras do at import.

    OpenDP refuses a name twice; a name this package registered already (a module re-imported)
    is left as it is, and a clash with anyone else's constructor is an error.
    """
    name = constructor.__name__.removeprefix("make_")
    if name in _REGISTERED:
        return
    _context.register(constructor)
    _REGISTERED.add(name)


def feature_enabled(name: str) -> bool:
    """Whether OpenDP feature ``name`` is enabled (OpenDP has no public getter)."""
    return name in GLOBAL_FEATURES


def check_private_api() -> list[str]:
    """Problems with the OpenDP private names this package relies on (empty when all is well)."""
    problems = []
    if not isinstance(GLOBAL_FEATURES, set):
        problems.append("feature_enabled: opendp._internal.GLOBAL_FEATURES is no longer a set")
    for name, (obj, params) in PRIVATE_API.items():
        try:
            have = tuple(inspect.signature(obj).parameters)
        except (TypeError, ValueError):  # pragma: no cover - builtins
            problems.append(f"{name}: cannot read the signature of {obj!r}")
            continue
        if have[: len(params)] != params:
            problems.append(f"{name}: OpenDP's parameters are {have}, this package passes {params}")
    return problems
