"""Exact output laws of the package's own code on tiny inputs, in rational interval arithmetic.

Probabilities are intervals ``[lo, hi]`` of Fractions, rounded outward to a ``2^-256`` grid so
the denominators stay small; ``e^x`` and ``q = e^{-1/s}`` are bracketed by Taylor partial sums
with a remainder bound.  Noise is enumerated on a *window of noisy counts*: a node's noisy count
reads as ``0`` when it is at most ``0`` (one atom, probability ``q^c / (1 + q)`` exactly), as
``1 .. c + W`` one by one, and the rest (``q^{W+1}/(1+q)``) is unaccounted mass ``delta``.

A pure-DP claim ``eps`` is certified on a pair of laws when the hockey-stick divergence
``sum_o max(0, P(o) - e^eps P'(o)) + tail(P)`` is at most ``delta_max`` (upper bounds
throughout); the *certified loss* ``max_o log(P_lo(o) / P'_hi(o))`` is a lower bound on the true
loss, reported next to the map for tightness.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from tests.formal import package as pkg

GRID = 2**256


def _down(x: Fraction) -> Fraction:
    return Fraction(math.floor(x * GRID), GRID)


def _up(x: Fraction) -> Fraction:
    return Fraction(math.ceil(x * GRID), GRID)


@dataclass(frozen=True)
class Iv:
    """A non-negative interval ``[lo, hi]``."""

    lo: Fraction
    hi: Fraction

    def __add__(self, o: Iv) -> Iv:
        return Iv(self.lo + o.lo, self.hi + o.hi)

    def __mul__(self, o: Iv) -> Iv:
        return Iv(_down(self.lo * o.lo), _up(self.hi * o.hi))

    @staticmethod
    def exact(x: Fraction | int) -> Iv:
        f = Fraction(x)
        return Iv(_down(f), _up(f))


ZERO, ONE = Iv(Fraction(0), Fraction(0)), Iv(Fraction(1), Fraction(1))


@functools.cache
def exp_iv(x: Fraction, terms: int = 60) -> Iv:
    """``e^x`` for rational ``0 <= x <= 60`` (at least ``3x + 60`` terms, so that the remainder
    bound stays far below the value)."""
    assert 0 <= x <= 60
    s, t = Fraction(0), Fraction(1)
    for k in range(max(terms, math.ceil(3 * x) + 60)):
        s += t
        t = t * x / (k + 1)
    rem = t * 3 ** math.ceil(x)  # the tail is at most x^K/K! e^x
    return Iv(_down(s), _up(s + rem))


@functools.cache
def q_iv(scale: float) -> Iv:
    """``q = e^{-1/scale}``."""
    e = exp_iv(1 / Fraction(scale))
    return Iv(_down(1 / e.hi), _up(1 / e.lo))


def lapz_atoms(c: int, scale: float, W: int) -> tuple[list[tuple[int, Iv]], Iv]:
    """The atoms of the truncated noisy count ``max(c + Z, 0)``, ``Z ~ LapZ(scale)``, on the
    window, and the mass above it.  Values are returned as the *noise* ``z`` to hand out."""
    q = q_iv(scale)
    norm = Iv(_down((1 - q.hi) / (1 + q.hi)), _up((1 - q.lo) / (1 + q.lo)))
    atoms = [(-c, Iv(_down(q.lo**c / (1 + q.hi)), _up(q.hi**c / (1 + q.lo))))]  # c + z <= 0
    for v in range(1, c + W + 1):
        z = v - c
        atoms.append((z, norm * Iv(q.lo ** abs(z), q.hi ** abs(z))))
    tail = Iv(_down(q.lo ** (W + 1) / (1 + q.hi)), _up(q.hi ** (W + 1) / (1 + q.lo)))
    return atoms, tail


Law = dict[Any, Iv]


@dataclass
class Certificate:
    claim: float
    delta: Fraction  # upper bound on the hockey-stick divergence at the claim
    certified_loss: float  # lower bound on the true loss (over outcomes with mass)

    @property
    def tightness(self) -> float:
        return self.certified_loss / self.claim if self.claim > 0 else float("nan")


def certify(
    p: Law,
    p_tail: Fraction,
    p2: Law,
    claim: float,
    floor: Fraction = Fraction(1, 10**12),
    p2_tail: Fraction = Fraction(0),
) -> Certificate:
    """Check ``P <= e^claim P' + delta`` over all events; the delta and the certified loss.

    ``p_tail`` / ``p2_tail`` bound the mass each law leaves out (outside its window): the loss
    at an outcome is certified against ``P'_hi(o) + p2_tail``, so that it stays a lower bound
    when the window of ``P'`` misses part of the outcome's mass."""
    e = exp_iv(Fraction(claim)).lo
    delta = p_tail
    loss = -math.inf
    for o, iv in p.items():
        other = p2.get(o, ZERO)
        delta += max(Fraction(0), iv.hi - e * other.lo)
        if iv.lo > floor and other.hi + p2_tail > 0:
            loss = max(loss, _log_ratio(iv.lo, other.hi + p2_tail))
    return Certificate(claim, delta, loss)


def _log_ratio(a: Fraction, b: Fraction) -> float:
    # log of a ratio of two (possibly tiny) rationals, as a float (a report, not a bound)
    return (math.log(a.numerator) - math.log(a.denominator)) - (
        math.log(b.numerator) - math.log(b.denominator)
    )


# ---------------------------------------------------------------------------------------------
# the pruned traversal (Algorithms 1-2), node by node through the package's expand_levels


class ScriptedNoise:
    """Hands out given noise values and coins; records the scales the code asks for."""

    def __init__(self, values: Iterable[int] = (), coins: Iterable[int] = ()) -> None:
        self.values = list(values)
        self.coin_values = list(coins)
        self.scales: list[float] = []
        self.asked = 0
        self.asked_coins = 0

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        k = len(cells)
        self.scales.extend([float(scale)] * k)
        out = self.values[self.asked : self.asked + k] + [0] * max(
            0, self.asked + k - len(self.values)
        )
        self.asked += k
        return np.array(out, dtype=np.int64)

    gaussian = laplace

    def coins(self, level: int, cells: np.ndarray) -> np.ndarray:
        k = len(cells)
        out = self.coin_values[self.asked_coins : self.asked_coins + k] + [0] * max(
            0, self.asked_coins + k - len(self.coin_values)
        )
        self.asked_coins += k
        return np.array(out, dtype=np.int64)


def _expand_one(
    front: Any,
    counter: Callable,
    scales: tuple[float, ...],
    values: list[int],
    coins: list[int],
    threshold: float,
) -> tuple[Any, ScriptedNoise]:
    noise = ScriptedNoise(values, coins)
    nxt = pkg.expand_levels(front, front.level + 1, counter, scales, noise, threshold)
    return nxt, noise


def pruned_law(
    counts: Any, scales: tuple[float, ...], size: int, W: int, threshold: float = 0.0
) -> tuple[Law, Fraction]:
    """The exact law of the leaf masses ``{cell: mass}`` of ``pruned_traversal`` on the count
    tree ``counts`` with the public root mass ``size``: every node is expanded alone with
    ``expand_levels`` (the package's docstring: subtrees expand independently), its two
    children's noise enumerated on the window and the coin when both read zero."""
    counter = pkg.tree_counter(counts)
    depth = counts.depth
    tail_total = Fraction(0)
    memo: dict[Any, Law] = {}

    def node_law(
        level: int, cell: tuple[int, ...], mass: int, state: tuple[np.ndarray, ...]
    ) -> Law:
        key = (level, cell, mass, tuple(int(a[0]) for a in state))
        if key not in memo:
            memo[key] = _node_law(level, cell, mass, state)
        return memo[key]

    def _node_law(
        level: int, cell: tuple[int, ...], mass: int, state: tuple[np.ndarray, ...]
    ) -> Law:
        nonlocal tail_total
        front = pkg.Frontier(
            level, np.array([cell], dtype=np.int64), np.array([mass], dtype=np.int64), state, 0, [1]
        )
        if level == depth:
            return {frozenset({(cell, mass)}): ONE}
        # probe: which scale and which exact child counts
        probe, noise = _expand_one(front, counter, scales, [0, 0], [0], threshold)
        child_counts, _ = counter(level, state)
        c0, c1 = (int(v) for v in child_counts.reshape(-1))
        s0, s1 = noise.scales
        a0, t0 = lapz_atoms(c0, s0, W)
        a1, t1 = lapz_atoms(c1, s1, W)
        tail_total += t0.hi + t1.hi
        out: dict[Any, Iv] = defaultdict(lambda: ZERO)
        for (z0, p0), (z1, p1) in itertools.product(a0, a1):
            both_zero = c0 + z0 <= threshold * s0 and c1 + z1 <= threshold * s1
            for coin, pc in (
                ((0, Iv.exact(Fraction(1, 2))), (1, Iv.exact(Fraction(1, 2))))
                if both_zero
                else ((0, ONE),)
            ):
                nxt, _ = _expand_one(front, counter, scales, [z0, z1], [coin], threshold)
                sub: Law = {frozenset(): ONE}
                for i in range(len(nxt.mass)):
                    kid = node_law(
                        level + 1,
                        tuple(int(v) for v in nxt.cells[i]),
                        int(nxt.mass[i]),
                        tuple(arr[i : i + 1] for arr in nxt.state),
                    )
                    sub = combine(sub, kid)
                w = p0 * p1 * pc
                for o, iv in sub.items():
                    out[o] = out[o] + w * iv
        return dict(out)

    root_state = (np.zeros(1, dtype=np.int64), np.full(1, counts.n, dtype=np.int64))
    law = node_law(0, tuple([0] * counts.d), size, root_state)
    return law, tail_total


def combine(a: Law, b: Law) -> Law:
    out: dict[Any, Iv] = defaultdict(lambda: ZERO)
    for (oa, pa), (ob, pb) in itertools.product(a.items(), b.items()):
        out[oa | ob] = out[oa | ob] + pa * pb
    return dict(out)


# ---------------------------------------------------------------------------------------------
# tiny data sets and their neighbours


def grid_points(d: int, depth: int) -> np.ndarray:
    """The centres of the depth-``depth`` cells of the unit cube (one point per cell)."""
    per = 2 ** math.ceil(depth / d)
    axis = (np.arange(per) + 0.5) / per
    return np.array(list(itertools.product(axis, repeat=d)), dtype=float)


def datasets(points: np.ndarray, n: int) -> list[np.ndarray]:
    """Every multiset of ``n`` grid points (a data set of ``n`` rows)."""
    return [points[list(c)] for c in itertools.combinations_with_replacement(range(len(points)), n)]


def replacement_pairs(points: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every ordered pair of ``n``-row data sets differing in one row."""
    out = []
    for x in datasets(points, n):
        for i in range(n):
            for p in points:
                y = x.copy()
                y[i] = p
                if not np.array_equal(np.sort(x, axis=0), np.sort(y, axis=0)):
                    out.append((x, y))
    return out


def add_remove_pairs(points: np.ndarray, n_max: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every ordered pair (x, x + one row) and (x + one row, x), sizes 0 .. n_max."""
    out = []
    for n in range(n_max):
        for x in datasets(points, n) if n else [np.zeros((0, points.shape[1]))]:
            for p in points:
                y = np.vstack([x, p[None, :]])
                out += [(x, y), (y, x)]
    return out


# ---------------------------------------------------------------------------------------------
# discrete Laplace on a window, scripted node noise, and push-forward laws


def lapz_pmf(z: int, scale: float) -> Iv:
    """``P(Z = z) = (1 - q) q^|z| / (1 + q)`` for ``Z ~ LapZ(scale)``."""
    q = q_iv(scale)
    k = abs(z)
    return Iv(_down((1 - q.hi) * q.lo**k / (1 + q.hi)), _up((1 - q.lo) * q.hi**k / (1 + q.lo)))


def lapz_window(scale: float, W: int) -> tuple[list[tuple[int, Iv]], Fraction]:
    """The atoms ``z = -W .. W`` of ``LapZ(scale)`` and an upper bound of the mass outside."""
    q = q_iv(scale)
    return [(z, lapz_pmf(z, scale)) for z in range(-W, W + 1)], _up(
        2 * q.hi ** (W + 1) / (1 + q.lo)
    )


def lapz_at_least(t: int, scale: float) -> Iv:
    """``P(Z >= t)`` for ``Z ~ LapZ(scale)``: ``q^t / (1 + q)`` for ``t >= 1``, else
    ``1 - q^(1-t) / (1 + q)``."""
    q = q_iv(scale)
    if t >= 1:
        return Iv(_down(q.lo**t / (1 + q.hi)), _up(q.hi**t / (1 + q.lo)))
    k = 1 - t
    return Iv(_down(1 - q.hi**k / (1 + q.lo)), _up(1 - q.lo**k / (1 + q.hi)))


def complement(p: Iv) -> Iv:
    return Iv(1 - p.hi, 1 - p.lo)


class TableNoise:
    """Node noise from a table ``{(level, cell): z}`` (``default`` elsewhere); records the nodes
    asked for, in order, with the scale the code asked for."""

    def __init__(self, table: dict[tuple[int, tuple[int, ...]], int], default: int = 0) -> None:
        self.table, self.default = table, default
        self.asked: dict[tuple[int, tuple[int, ...]], float] = {}

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        keys = [(int(level), tuple(int(v) for v in c)) for c in np.asarray(cells)]
        for k in keys:
            self.asked[k] = float(scale)
        return np.array([self.table.get(k, self.default) for k in keys], dtype=np.int64)

    gaussian = laplace


class FixedPermutation:
    """A tie-break source whose ``permutation(k)`` is a given permutation."""

    def __init__(self, perm: tuple[int, ...]) -> None:
        self.perm = perm

    def permutation(self, k: int) -> np.ndarray:
        assert k == len(self.perm), (k, self.perm)
        return np.array(self.perm, dtype=np.int64)

    def derive(self, _namespace: int) -> FixedPermutation:
        return self


def add_to(law: dict[Any, Iv], key: Any, p: Iv) -> None:
    law[key] = law.get(key, ZERO) + p


def points_key(points: np.ndarray) -> tuple:
    """A released point array as a multiset (the rows' order is a uniform shuffle)."""
    return tuple(sorted(tuple(float(v) for v in row) for row in np.asarray(points)))


def window_for(scale: float, mass: float = 1e-8) -> int:
    """The smallest ``W`` whose LapZ tail ``2 q^(W+1) / (1 + q)`` is below ``mass`` (a float
    estimate; the exact tail is what the checks charge)."""
    return max(1, math.ceil(scale * math.log(2 / mass)))


# ---------------------------------------------------------------------------------------------
# the discrete Gaussian's Renyi sums


def exp_neg_hi(x: Fraction) -> Fraction:
    """An upper bound of ``e^{-x}`` for rational ``x >= 0`` (``e^{-60}`` beyond 60)."""
    return 1 / exp_iv(min(x, Fraction(60))).lo


@functools.cache
def dgauss_renyi(u: int, v: int, s: float, alpha: int, W: int) -> Fraction:
    """An upper bound of ``sum_y p(y-u)^alpha p(y-v)^(1-alpha)`` for the discrete Gaussian
    ``p(z) = exp(-z^2 / (2 s^2)) / Z``, over all integers ``y``.

    The normaliser cancels to ``1/Z``; ``Z`` is at least the window's sum.  The numerator's
    terms are ``exp(A - (y - c)^2 / (2 s^2))`` with ``c = alpha u + (1 - alpha) v`` and
    ``A = alpha (alpha - 1) (u - v)^2 / (2 s^2)``; outside the window ``|y - c| >= m`` and
    ``sum_{k >= m} exp(-k^2 / (2 s^2)) <= exp(-m^2 / (2 s^2)) / (1 - exp(-m / s^2))``
    (consecutive ratios are at most ``exp(-m / s^2)``), twice for the two sides."""
    s2 = Fraction(s) ** 2
    lo_y, hi_y = min(u, v) - W, max(u, v) + W
    num = Fraction(0)
    den = Fraction(0)
    for y in range(lo_y, hi_y + 1):
        e = Fraction(alpha * (y - u) ** 2 + (1 - alpha) * (y - v) ** 2) / (2 * s2)
        num += exp_neg_hi(e) if e >= 0 else exp_iv(-e).hi
        den += 1 / exp_iv(Fraction(y - u) ** 2 / (2 * s2)).hi if (y - u) ** 2 <= 120 * s2 else 0
    c = alpha * u + (1 - alpha) * v
    m = min(c - lo_y + 1, hi_y + 1 - c)  # the nearest integers outside the window
    assert m >= 1, "the window must hold the centre of the numerator's terms"
    big_a = Fraction(alpha * (alpha - 1) * (u - v) ** 2) / (2 * s2)
    tail = 2 * exp_iv(big_a).hi * exp_neg_hi(Fraction(m * m) / (2 * s2))
    tail /= 1 - exp_neg_hi(Fraction(m) / s2)
    return (num + tail) / den
