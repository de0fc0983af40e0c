"""Two-dimensional test distributions in the unit square, and low-dimensional subspaces.

These generators produce *public test data* for experiments; they are **not** privacy
mechanisms.  Their randomness comes from ``np.random.default_rng(seed)`` (``seed`` an int, a
:class:`numpy.random.Generator`, or ``None`` for fresh entropy), never from numpy's global random
state.

Every shape draws ``n`` independent points from a fixed distribution.  Each is defined in its own
natural coordinates and mapped into the unit square by a fixed affine map (the same for every
sample, so samples of different sizes or seeds come from the same distribution) that sends the
shape's noiseless bounding box to a square or rectangle centred in ``[0.05, 0.95]^2``, keeping the
aspect ratio.  Isotropic Gaussian jitter of standard deviation ``noise`` (in unit-square units)
is then added and the result is clipped to ``[0, 1]^2``, so a little mass may sit on the border
when ``noise`` is large.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "SHAPES",
    "SUBSPACE_FILL",
    "sample_annulus",
    "sample_checkerboard",
    "sample_cross",
    "sample_figure_eight",
    "sample_four_blobs",
    "sample_pinwheel",
    "sample_s_curve",
    "sample_shape",
    "sample_spiral",
    "sample_subspace",
    "sample_two_moons",
]

SeedLike = int | np.random.Generator | None

#: Value of the coordinates outside the subspace in :func:`sample_subspace`.
SUBSPACE_FILL = 0.5

_MARGIN = 0.05


# ----------------------------------------------------------------------------------------------
# helpers


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n must be an integer, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return int(n)


def _check_noise(noise: Any) -> float:
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.integer, np.floating)):
        raise ValueError(f"noise must be a real number, got {type(noise).__name__}")
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be finite and non-negative, got {noise}")
    return float(noise)


def _to_unit(
    points: np.ndarray,
    box: tuple[float, float, float, float],
    noise: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Map ``box = (xmin, xmax, ymin, ymax)`` into ``[0.05, 0.95]^2`` (aspect kept), jitter,
    clip."""
    xmin, xmax, ymin, ymax = box
    scale = (1.0 - 2.0 * _MARGIN) / max(xmax - xmin, ymax - ymin)
    centre = np.array([(xmin + xmax) / 2.0, (ymin + ymax) / 2.0])
    out = (points - centre) * scale + 0.5
    if noise > 0:
        out = out + rng.normal(0.0, noise, size=out.shape)
    return np.clip(out, 0.0, 1.0)


def _polar(r: np.ndarray, theta: np.ndarray) -> np.ndarray:
    return np.column_stack((r * np.cos(theta), r * np.sin(theta)))


# ----------------------------------------------------------------------------------------------
# the nine shapes


def sample_two_moons(n: int, seed: SeedLike = None, noise: float = 0.015) -> np.ndarray:
    """Two interleaving half circles (as :func:`sklearn.datasets.make_moons`, without sklearn).

    Each point picks a moon with probability 1/2: the upper arc :math:`(\\cos t, \\sin t)` or the
    lower arc :math:`(1 - \\cos t, 1/2 - \\sin t)`, with :math:`t` uniform on :math:`[0, \\pi]`.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, np.pi, size=n)
    lower = rng.integers(0, 2, size=n).astype(bool)
    x = np.where(lower, 1.0 - np.cos(t), np.cos(t))
    y = np.where(lower, 0.5 - np.sin(t), np.sin(t))
    return _to_unit(np.column_stack((x, y)), (-1.0, 2.0, -0.5, 1.0), noise, rng)


def sample_spiral(n: int, seed: SeedLike = None, noise: float = 0.01) -> np.ndarray:
    """An Archimedean spiral :math:`r = \\theta / \\theta_{max}` of two turns.

    :math:`\\theta` runs over :math:`[\\pi/2, 4.5\\pi]` with density proportional to
    :math:`\\theta`, so that points are close to uniform in arc length.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    lo, hi = 0.5 * np.pi, 4.5 * np.pi
    theta = np.sqrt(rng.uniform(lo**2, hi**2, size=n))
    return _to_unit(_polar(theta / hi, theta), (-1.0, 1.0, -1.0, 1.0), noise, rng)


def sample_annulus(n: int, seed: SeedLike = None, noise: float = 0.0) -> np.ndarray:
    """The uniform distribution on the ring :math:`0.6 \\le r \\le 1`.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(0.6**2, 1.0, size=n))  # uniform in area
    theta = rng.uniform(0.0, 2.0 * np.pi, size=n)
    return _to_unit(_polar(r, theta), (-1.0, 1.0, -1.0, 1.0), noise, rng)


def sample_s_curve(n: int, seed: SeedLike = None, noise: float = 0.01) -> np.ndarray:
    """The S curve of :func:`sklearn.datasets.sample_s_curve` seen from the side.

    :math:`(\\sin t, \\operatorname{sign}(t)(\\cos t - 1))` with :math:`t` uniform on
    :math:`[-3\\pi/2, 3\\pi/2]`.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1.5 * np.pi, 1.5 * np.pi, size=n)
    pts = np.column_stack((np.sin(t), np.sign(t) * (np.cos(t) - 1.0)))
    return _to_unit(pts, (-1.0, 1.0, -2.0, 2.0), noise, rng)


def sample_pinwheel(n: int, seed: SeedLike = None, noise: float = 0.0) -> np.ndarray:
    """Five curved Gaussian arms (the pinwheel of Johnson et al., 2016).

    Each point picks an arm uniformly; its radial coordinate is :math:`1 + 0.3 Z_1` and its
    tangential one :math:`0.05 Z_2`; the point is then rotated by the arm's angle plus
    :math:`0.25 \\exp(\\text{radial})`.  The fixed map to the unit square sends
    :math:`[-1.8, 1.8]^2` to :math:`[0.05, 0.95]^2`; the rare points beyond :math:`\\pm 2` are
    clipped.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of extra Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    arms, radial_std, tangential_std, rate = 5, 0.3, 0.05, 0.25
    arm = rng.integers(0, arms, size=n)
    radial = 1.0 + radial_std * rng.standard_normal(n)
    tangential = tangential_std * rng.standard_normal(n)
    angle = 2.0 * np.pi * arm / arms + rate * np.exp(radial)
    c, s = np.cos(angle), np.sin(angle)
    pts = np.column_stack((c * radial - s * tangential, s * radial + c * tangential))
    return _to_unit(pts, (-1.8, 1.8, -1.8, 1.8), noise, rng)


def sample_figure_eight(n: int, seed: SeedLike = None, noise: float = 0.01) -> np.ndarray:
    """The lemniscate of Gerono :math:`(\\sin t, \\sin t \\cos t)`, :math:`t` uniform on a period.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, 2.0 * np.pi, size=n)
    pts = np.column_stack((np.sin(t), np.sin(t) * np.cos(t)))
    return _to_unit(pts, (-1.0, 1.0, -0.5, 0.5), noise, rng)


def sample_four_blobs(n: int, seed: SeedLike = None, noise: float = 0.05) -> np.ndarray:
    """An equal mixture of four isotropic Gaussians centred at ``(0.275 or 0.725, 0.275 or 0.725)``.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of each blob, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    centres = np.array([[-0.5, -0.5], [-0.5, 0.5], [0.5, -0.5], [0.5, 0.5]])
    pts = centres[rng.integers(0, 4, size=n)]
    return _to_unit(pts, (-1.0, 1.0, -1.0, 1.0), noise, rng)


def sample_checkerboard(n: int, seed: SeedLike = None, noise: float = 0.0) -> np.ndarray:
    """The uniform distribution on the 8 dark cells (row + column even) of a 4 x 4 board.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    cell = rng.integers(0, 8, size=n)
    row = cell // 2
    col = 2 * (cell % 2) + row % 2  # the two cells of each row with row + col even
    pts = np.column_stack((col, row)) + rng.uniform(0.0, 1.0, size=(n, 2))
    return _to_unit(pts, (0.0, 4.0, 0.0, 4.0), noise, rng)


def sample_cross(n: int, seed: SeedLike = None, noise: float = 0.0) -> np.ndarray:
    """The uniform distribution on a plus sign: the union of two bars of half-width 0.2.

    The bars are :math:`[-1, 1] \\times [-w, w]` and :math:`[-w, w] \\times [-1, 1]`,
    :math:`w = 0.2`.  Sampled exactly: the horizontal bar with probability equal to its share
    of the area, otherwise the parts of the vertical bar outside it.

    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter, in unit-square units.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    rng = np.random.default_rng(seed)
    w = 0.2
    # area: horizontal bar 4w, vertical arms outside it 4w(1 - w); share 1 / (2 - w)
    horizontal = rng.uniform(size=n) < 1.0 / (2.0 - w)
    u = rng.uniform(-1.0, 1.0, size=n)  # position along the bar
    v = rng.uniform(-w, w, size=n)  # position across the bar
    sign = np.where(rng.integers(0, 2, size=n) == 1, 1.0, -1.0)
    arm = sign * (w + (1.0 - w) * np.abs(u))  # along a vertical arm, outside the overlap
    pts = np.where(horizontal[:, None], np.column_stack((u, v)), np.column_stack((v, arm)))
    return _to_unit(pts, (-1.0, 1.0, -1.0, 1.0), noise, rng)


#: The nine 2-D test shapes, by name.
SHAPES: dict[str, Callable[..., np.ndarray]] = {
    "two_moons": sample_two_moons,
    "spiral": sample_spiral,
    "annulus": sample_annulus,
    "s_curve": sample_s_curve,
    "pinwheel": sample_pinwheel,
    "figure_eight": sample_figure_eight,
    "four_blobs": sample_four_blobs,
    "checkerboard": sample_checkerboard,
    "cross": sample_cross,
}


def sample_shape(
    name: str, n: int, seed: SeedLike = None, noise: float | None = None
) -> np.ndarray:
    """``n`` points of the test shape ``name`` (a key of :data:`SHAPES`).

    :param name: one of ``"two_moons"``, ``"spiral"``, ``"annulus"``, ``"s_curve"``,
        ``"pinwheel"``, ``"figure_eight"``, ``"four_blobs"``, ``"checkerboard"``, ``"cross"``.
    :param n: number of points, at least 1.
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: jitter standard deviation; ``None`` for the shape's default.
    :returns: array of shape ``(n, 2)`` in ``[0, 1]^2``.
    :raises ValueError: for an unknown name or invalid ``n`` / ``noise``.
    """
    if name not in SHAPES:
        raise ValueError(f"name must be one of {sorted(SHAPES)}, got {name!r}")
    if noise is None:
        return SHAPES[name](n, seed=seed)
    return SHAPES[name](n, seed=seed, noise=noise)


def sample_subspace(
    n: int, d: int, k: int, seed: SeedLike = None, noise: float = 0.0
) -> np.ndarray:
    """``n`` points uniform on a ``k``-dimensional coordinate face of ``[0, 1]^d``.

    The first ``k`` coordinates are independent and uniform on ``[0, 1]``; the remaining
    ``d - k`` are fixed at :data:`SUBSPACE_FILL` (``0.5``, the middle of the cube).  Optional
    isotropic Gaussian jitter of standard deviation ``noise`` is added to every coordinate and
    the result clipped to ``[0, 1]^d``.

    :param n: number of points, at least 1.
    :param d: ambient dimension, at least 1.
    :param k: intrinsic dimension, ``0 <= k <= d`` (``0`` gives a point mass before jitter).
    :param seed: seed or generator for ``np.random.default_rng``.
    :param noise: standard deviation of the Gaussian jitter.
    :returns: array of shape ``(n, d)`` in ``[0, 1]^d``.
    :raises ValueError: for invalid ``n``, ``d``, ``k`` or ``noise``.
    """
    n, noise = _check_n(n), _check_noise(noise)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be a positive integer, got {d!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= d:
        raise ValueError(f"k must be an integer with 0 <= k <= d = {d}, got {k!r}")
    d, k = int(d), int(k)
    rng = np.random.default_rng(seed)
    out = np.full((n, d), SUBSPACE_FILL)
    out[:, :k] = rng.uniform(0.0, 1.0, size=(n, k))
    if noise > 0:
        out += rng.normal(0.0, noise, size=out.shape)
        np.clip(out, 0.0, 1.0, out=out)
    return out
