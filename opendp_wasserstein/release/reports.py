"""What a release reports besides its output: public after the release, shared by every front
end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SynthesisReport", "SelectionReport", "synthesis_report"]


@dataclass(frozen=True)
class SynthesisReport:
    """What :func:`~opendp_wasserstein.synthesize` did, all of it public after the release.

    :param mechanism: ``"adaptive"``, ``"pruned"`` or ``"pmm"``
    :param epsilon: the privacy loss certified by ``measurement.map`` for one replacement
        (``change_one_distance`` d_in = 1) -- or, without a public size, for one added or
        removed record (``symmetric_distance`` d_in = 1)
    :param depth: the hierarchy depth used
    :param scales: the noise schedule ``sigma_0 .. sigma_depth``
    :param visited_nodes: noisy nodes drawn
    :param size: rows released
    :param seconds: wall-clock time of the release; None when the size is private (the time
        grows with ``n``).  A timing, covered by no proof: keep it with the curator, do not
        publish it (:doc:`/randomness`)
    :param details: mechanism-specific public details (e.g. the selected candidate)
    :param delta: with ``synthesize(..., delta=...)``: the ``delta`` certified with ``epsilon``
        (the release is ``(epsilon, delta)``-DP); ``None`` for pure DP
    """

    mechanism: str
    epsilon: float
    depth: int
    scales: tuple[float, ...]
    visited_nodes: int
    size: int
    seconds: float | None
    details: dict[str, Any] = field(default_factory=dict)
    delta: float | None = None


@dataclass(frozen=True)
class SelectionReport:
    """What :func:`~opendp_wasserstein.select_candidates` did (public after the release).

    :param mechanism: ``"projection"``, ``"tree-em"`` or ``"nn"``
    :param epsilon: the loss certified by ``measurement.map`` for one replacement
        (``change_one_distance`` d_in = 1) -- or, without a public size, for one added or
        removed record (``symmetric_distance`` d_in = 1; a replacement costs twice that)
    :param m: the multiset size
    :param k: the number of candidates
    :param seconds: wall-clock time of the release; None when the size is private
    """

    mechanism: str
    epsilon: float
    m: int
    k: int
    seconds: float | None


def synthesis_report(
    mechanism: str,
    certified: Any,
    info: dict[str, Any],
    size: int,
    seconds: float | None,
    delta: float | None = None,
    rho: float | None = None,
) -> SynthesisReport:
    """The report of a synthesis from what the release recorded (``info``: its
    :func:`~opendp_wasserstein.runtime.diagnostics` records, merged) and the certified map
    (``seconds`` None when the size is private; ``rho`` the zCDP budget of a ``delta`` release)."""
    details = {k: v for k, v in info.items() if k not in {"depth", "visited_nodes", "scales"}}
    if rho is not None:
        details["rho"] = rho
    return SynthesisReport(
        mechanism=mechanism,
        epsilon=certified,
        delta=delta,
        depth=int(info["depth"]),
        scales=tuple(info.get("scales", ())),
        visited_nodes=int(info["visited_nodes"]),
        size=size,
        seconds=seconds,
        details=details,
    )
