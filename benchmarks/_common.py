"""Helpers shared by the benchmark scripts (test data, CSV output, machine notes).

Imported as ``from _common import ...``: the scripts are run as ``python benchmarks/X.py``,
which puts this folder on ``sys.path``.  Nothing here is a privacy mechanism.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import numpy as np


def sample_curve(n: int, d: int, seed: int | None = None) -> np.ndarray:
    """``n`` points on a smooth closed curve in ``[0.1, 0.9]^d`` (intrinsic dimension 1).

    ``x_c(t) = 0.5 + 0.4 sin(2 pi f_c t + 2 pi c / d)`` with ``t`` uniform on ``[0, 1]`` and
    frequencies ``f_c = 1, 2, 3, 1, 2, 3, ...``: a Lissajous-type curve that is not contained in a
    coordinate subspace nor in a 2-D plane (for ``d >= 3``), so no single pair of coordinates
    determines it.  Public test data, seeded with ``np.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    t = rng.uniform(size=n)
    c = np.arange(d)
    freq = 1.0 + (c % 3)
    phase = 2.0 * np.pi * c / d
    out = np.empty((n, d))
    for j in range(d):  # column by column: no (n, d) temporaries beyond the output
        out[:, j] = 0.5 + 0.4 * np.sin(2.0 * np.pi * freq[j] * t + phase[j])
    return out


def make_data(kind: str, n: int, d: int, seed: int | None = None) -> np.ndarray:
    """``"curve"`` (:func:`sample_curve`) or ``"uniform"`` (uniform on ``[0, 1]^d``)."""
    if kind == "curve":
        return sample_curve(n, d, seed)
    if kind == "uniform":
        return np.random.default_rng(seed).uniform(size=(n, d))
    raise ValueError(f"unknown data kind {kind!r}")


def write_csv(
    path: str, rows: Sequence[dict[str, Any]], fieldnames: Sequence[str] | None = None
) -> None:
    """Write ``rows`` (dicts) to ``path``, columns in first-seen order unless given."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if fieldnames is None:
        seen: dict[str, None] = {}
        for r in rows:
            for k in r:
                seen.setdefault(k, None)
        fieldnames = list(seen)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fieldnames), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def machine_note() -> str:
    """One line on the machine and its current load (timings on a shared machine are noisy)."""
    try:
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        load = "load average n/a"
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus, "
        f"{load}"
    )


def mem_available_bytes() -> int | None:
    """``MemAvailable`` from /proc/meminfo, or None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover
        return None
    return None  # pragma: no cover


def fmt(v: Any, spec: str = ".4g", width: int = 9) -> str:
    """Right-aligned number, or the text (e.g. ``"-"``) for missing values."""
    if v is None or v == "" or (isinstance(v, float) and not np.isfinite(v)):
        return f"{'-':>{width}}"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return f"{v:>{width}{spec}}"
    return f"{v!s:>{width}}"


class PeerError(RuntimeError):
    """A peer's run failed (runner exit, time-out, unexpected output): recorded, not raised."""


def run_runner(
    cmd: list[str], timeout: float, max_message: int | None = None
) -> tuple[dict, float]:
    """Run a peer's runner script (its own interpreter) and return
    ``(its JSON line, wall seconds)``.

    The runner prints one JSON line last on stdout; a non-zero exit becomes a :class:`PeerError`
    carrying the last three lines of its stderr (cut to ``max_message`` characters if given)."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise PeerError(f"timed out after {timeout:.0f} s") from e
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise PeerError(f"runner exit {proc.returncode}: {tail}"[:max_message])
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall
