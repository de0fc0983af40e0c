"""Tests of the per-element-stream discrete Laplace sampler
(:mod:`opendp_wasserstein.noise._stream_laplace`).

Streams come from :class:`~opendp_wasserstein.noise.node_randomness.KeyedNodeNoise` with fixed keys
(deterministic tests) or from explicit byte tables (paths that uniform bytes reach with
probability ``2^-64``).  Goodness of fit is a chi-square test against the exact pmf.
"""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import opendp_wasserstein.noise._stream_laplace as sl
from opendp_wasserstein.noise._fast_laplace import _ElementBits
from opendp_wasserstein.noise.node_randomness import LAPLACE_STREAM, KeyedNodeNoise
from tests.noise.test_fast_laplace import P_MIN, gof_pvalue

KEY = bytes(range(32))


def keyed_streams(key: bytes = KEY, level: int = 0):  # type: ignore[no-untyped-def]
    """Stream ``i`` = the Laplace stream of node ``(i,)`` at ``level`` under ``key``."""
    noise = KeyedNodeNoise(key)
    enc = noise._encryptor()

    def streams(ids: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
        state = noise._chain(enc, LAPLACE_STREAM, level, ids[:, None])
        return noise._expand(enc, state, np.arange(ids.size), first, count)

    return streams


def exp_neg(x: Fraction, digits: int = 120) -> Fraction:
    """``exp(-x)`` to ``digits`` significant digits (reference for the threshold digits)."""
    with localcontext() as ctx:
        ctx.prec = digits
        return Fraction((-(Decimal(x.numerator) / Decimal(x.denominator))).exp())


# ---------------------------------------------------------------------------------------------
# goodness of fit
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "scale", [0.125, 0.3, 1.0, 2.5, 16.0, 17.0, 100.0, 1000.0, 123456.7, 2.0**40 + 0.5]
)
def test_goodness_of_fit(scale: float) -> None:
    # the bit decomposition: k = 0 below 32, then U bits; 2^40: 36 U bits over three blocks
    x = sl.stream_discrete_laplace(scale, 60_000, keyed_streams())
    assert x.dtype == np.int64
    assert x.shape == (60_000,)
    assert gof_pvalue(x, scale) > P_MIN


def test_goodness_of_fit_small_scale() -> None:
    # below 1/8: the Canonne-Kamath-Steinke sampler with per-element streams
    x = sl.stream_discrete_laplace(0.1, 200_000, keyed_streams())
    assert gof_pvalue(x, 0.1) > P_MIN


@pytest.mark.parametrize("scale", [0.3, 2.5, 1000.0])
def test_goodness_of_fit_cks_per_element(monkeypatch: pytest.MonkeyPatch, scale: float) -> None:
    # the per-element CKS sampler at ordinary scales (forced)
    monkeypatch.setattr(sl, "MIN_TABLE_SCALE", math.inf)
    x = sl.stream_discrete_laplace(scale, 40_000, keyed_streams())
    assert gof_pvalue(x, scale) > P_MIN


def test_goodness_of_fit_other_key() -> None:
    x = sl.stream_discrete_laplace(2.5, 100_000, keyed_streams(bytes(32), level=7))
    assert gof_pvalue(x, 2.5) > P_MIN


def test_refinement_path_keeps_the_law(monkeypatch: pytest.MonkeyPatch) -> None:
    # pretend only one digit of every theta_i and eight of every p^v are known at the base
    # precision: every tied first byte (1 in 256 per bit) recomputes at twice the precision
    original = sl._constants
    calls = {"refined": 0}

    def truncated(scale: float, frac: int = sl._FRAC) -> sl._Constants:
        c = original(scale, frac)
        if frac != sl._FRAC:
            calls["refined"] += 1
            return c
        theta = replace(c.theta, known=np.minimum(c.theta.known, 1))
        powers = replace(c.powers, known=np.minimum(c.powers.known, 8))
        out = replace(c, theta=theta)
        object.__setattr__(out, "powers", powers)  # in place of the lazily built digits
        return out

    monkeypatch.setattr(sl, "_constants", truncated)
    scale = 3000.0  # k = 7 U bits
    x = sl.stream_discrete_laplace(scale, 60_000, keyed_streams())
    assert calls["refined"] > 0
    assert gof_pvalue(x, scale) > P_MIN


# ---------------------------------------------------------------------------------------------
# node-addressed: a value depends on its own stream only
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.05, 0.7, 40.0, 5e5])
@pytest.mark.parametrize("cks", [False, True])
def test_value_depends_only_on_own_stream(
    monkeypatch: pytest.MonkeyPatch, scale: float, cks: bool
) -> None:
    if cks:
        monkeypatch.setattr(sl, "MIN_TABLE_SCALE", math.inf)
    n = 3000
    table = np.random.default_rng(5).integers(0, 256, size=(n, 4096), dtype=np.uint8)
    seen: list[int] = []

    def streams_for(ids_map: np.ndarray):  # type: ignore[no-untyped-def]
        def streams(ids: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
            node = ids_map[ids]
            cols = (first.astype(np.int64)[:, None] * 16 + np.arange(16 * count)) % 4096
            seen.append(int(first.max()) if first.size else 0)
            return table[node[:, None], cols]

        return streams

    full = sl.stream_discrete_laplace(scale, n, streams_for(np.arange(n)))
    perm = np.random.default_rng(6).permutation(n)[: n // 3]  # a subset, in another order
    part = sl.stream_discrete_laplace(scale, perm.size, streams_for(perm))
    assert np.array_equal(part, full[perm])
    one = sl.stream_discrete_laplace(scale, 1, streams_for(perm[:1]))
    assert one[0] == full[perm[0]]
    assert max(seen) < 4096 // 16  # the table is long enough: no wrap-around


@pytest.mark.parametrize(
    "scale", [0.125, 0.9, 5.0, 21.48, 60.0, 306.2, 3000.0, 5000.0, 70000.0, 2.0**40 + 0.5]
)
def test_common_cases_equal_the_general_path(scale: float) -> None:
    # _sample_table does the common cases for all elements at once (one tie decided by the
    # next byte, -0 redrawn from the next block, V >= v_max continued from it) and hands the
    # rest to _sample_table_elems: every value must be the general path's, bit for bit
    c = sl._constants(scale)
    blocks = ((1 + c.k + 7) // 8 * 8 + 8 + 15) // 16
    n = 20_000
    for seed in range(6):
        streams = keyed_streams(bytes([seed + 1]) * 32, level=seed)
        fast = sl._sample_table(c, n, _ElementBits(streams, n, blocks))
        general = sl._sample_table_elems(c, np.arange(n), _ElementBits(streams, n, blocks))
        assert np.array_equal(fast, general)


def test_first_blocks_only_before_a_request() -> None:
    bits = _ElementBits(keyed_streams(), 4, blocks=1)
    first = bits.first_blocks()
    assert first.shape == (4, 16)
    assert np.array_equal(bits.blocks_at(np.arange(4), 0), first)
    bits.bytes(np.arange(4))
    with pytest.raises(RuntimeError):
        bits.first_blocks()


def test_v_table_agrees_with_the_words() -> None:
    for scale in (0.3, 21.48, 306.2, 5000.0):
        c = sl._constants(scale)
        table = sl._v_table(scale)
        w = np.random.default_rng(3).integers(0, 2**64, size=200_000, dtype=np.uint64)
        w[:1000] = np.repeat(c.words, -(-1000 // c.vmax))[:1000]  # on the table words
        v = table[(w >> np.uint64(64 - sl._BUCKET_BITS)).astype(np.int64)]
        known = v >= 0
        ref = c.vmax - np.searchsorted(c.words_ascending, w, side="right")
        assert np.array_equal(v[known], ref[known])
        assert not np.isin(w[known], c.words).any()  # a known bucket holds no table word
        assert (ref[known] < c.vmax).all()
        assert known.mean() > 0.9


# ---------------------------------------------------------------------------------------------
# the exact constants
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [0.125, 0.9, 7.0, 31.5, 1000.0, 2.0**20 + 0.25])
def test_constants_digits_are_exact(scale: float) -> None:
    c = sl._constants(scale)
    k, vmax = sl._split(scale)
    assert (c.k, c.vmax) == (k, vmax)
    inv = 1 / Fraction(scale)
    for i in range(k):
        qi = exp_neg(inv * 2**i)
        theta = qi / (1 + qi)
        n = int(c.theta.known[i])
        assert n >= 1
        ref = math.floor(theta * 256**n)
        assert int.from_bytes(c.theta.digits[i, :n].tobytes(), "big") == ref
    for v in range(1, vmax + 1):
        pv = exp_neg(inv * 2**k * v)
        n = int(c.powers.known[v - 1])
        assert n >= 8
        assert int.from_bytes(c.powers.digits[v - 1, :n].tobytes(), "big") == math.floor(
            pv * 256**n
        )
        assert int(c.words[v - 1]) == math.floor(pv * 2**64)
    # the tail of the V table is about 2^-8 (only speed depends on it)
    assert 2.0**-9 < float(exp_neg(inv * 2**k * vmax)) <= 2.0**-8 * 1.01 or vmax == 1


def test_digits_are_the_agreeing_leading_bytes() -> None:
    """``_digits`` (all rows at once) against the byte-by-byte definition: row ``t`` holds the
    leading base-256 digits on which ``lo[t]`` and ``hi[t]`` agree, zeros after them."""
    rng = np.random.default_rng(7)
    for frac in (64, 256, 512):
        nb = frac // 8
        lo = [int.from_bytes(rng.bytes(nb), "big") for _ in range(60)]
        hi = [
            min(
                a
                + (int.from_bytes(rng.bytes(int(rng.integers(0, nb + 1))), "big") if t % 5 else 0),
                2**frac - 1,
            )
            for t, a in enumerate(lo)
        ]
        lo[1] = hi[1] = 0  # equal zeros: every digit known
        lo[2], hi[2] = 0, 2**frac - 1  # the first digit differs: none known
        got = sl._digits(lo, hi, frac)
        assert got.digits.shape == (60, nb)
        assert got.digits.dtype == np.uint8
        assert got.known.dtype == np.int64
        for t, (a, b) in enumerate(zip(lo, hi, strict=True)):
            da, db = a.to_bytes(nb, "big"), b.to_bytes(nb, "big")
            j = 0
            while j < nb and da[j] == db[j]:
                j += 1
            assert int(got.known[t]) == j
            assert got.digits[t].tobytes() == da[:j] + bytes(nb - j)
        assert int(got.known[1]) == nb
        assert int(got.known[2]) == 0
    empty = sl._digits([], [], 256)
    assert empty.digits.shape == (0, 32)
    assert empty.known.shape == (0,)


def test_split() -> None:
    assert sl._split(0.125) == (0, 1)
    assert sl._split(15.9)[0] == 0
    assert sl._split(32.0)[0] == 1
    k, vmax = sl._split(1000.0)
    assert 16 <= 1000.0 / 2**k < 32
    assert vmax == math.ceil(8 * math.log(2) * 1000.0 / 2**k)


# ---------------------------------------------------------------------------------------------
# the rare paths, with crafted streams
# ---------------------------------------------------------------------------------------------


def crafted(rows: list[bytes]):  # type: ignore[no-untyped-def]
    """Streams from explicit byte strings (padded with 0x80 bytes)."""
    width = 4096
    table = np.full((len(rows), width), 0x80, dtype=np.uint8)
    for i, r in enumerate(rows):
        table[i, : len(r)] = np.frombuffer(r, dtype=np.uint8)

    def streams(ids: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
        cols = first.astype(np.int64)[:, None] * 16 + np.arange(16 * count)
        return table[ids[:, None], cols]

    return streams


def test_tie_with_a_table_word_reads_further_digits() -> None:
    scale = 5.0  # k = 0: layout sign byte, 7 unused, V word; one block
    c = sl._constants(scale)
    word = int(c.words[1]).to_bytes(8, "big")
    ninth = int(c.powers.digits[1, 8])
    rows = [
        b"\x00" + bytes(7) + word + bytes([max(ninth - 1, 0)]),  # R < p^2: V = 2
        b"\x00" + bytes(7) + word + bytes([min(ninth + 1, 255)]),  # R > p^2: V = 1
    ]
    assert 0 < ninth < 255
    x = sl.stream_discrete_laplace(scale, 2, crafted(rows))
    assert x.tolist() == [2, 1]  # sign byte even: positive


def test_tail_word_continues_memoryless() -> None:
    scale = 5.0
    c = sl._constants(scale)
    # W = 0 < P_vmax: V >= vmax, then a fresh word; W' = 2^64 - 1: V' = 0
    rows = [b"\x00" + bytes(7) + bytes(8) + b"\xff" * 8]
    x = sl.stream_discrete_laplace(scale, 1, crafted(rows))
    assert x.tolist() == [c.vmax]


def test_minus_zero_is_rejected_and_redrawn() -> None:
    scale = 5.0
    # attempt 1: sign odd (negative), V word all ones: Y = 0 -> rejected; the next block is
    # attempt 2: sign even, W = 0x80..: V = #{P_v > W}
    w2 = b"\x80" * 8
    rows = [b"\x01" + bytes(7) + b"\xff" * 8 + b"\x00" + bytes(7) + w2]
    x = sl.stream_discrete_laplace(scale, 1, crafted(rows))
    c = sl._constants(scale)
    expected = int(np.count_nonzero(c.words > np.uint64(int.from_bytes(w2, "big"))))
    assert x.tolist() == [expected]
    assert expected >= 1


def test_retries_read_several_attempts_at_once() -> None:
    # 40 elements rejected as -0 in their first attempt: the next round reads 3 attempts of
    # each at once (40 * reject^3 <= 0.1 at scale 5) and every element takes its first accepted
    # attempt, then a tail word right after that attempt, as the one-at-a-time loop does
    scale = 5.0
    c = sl._constants(scale)
    reject = b"\x01" + bytes(7) + b"\xff" * 8  # sign odd, Y = 0
    tail = b"\x00" + bytes(7) + bytes(8)  # sign even, W = 0: V >= vmax, a fresh word follows
    plain = b"\x01" + bytes(7) + b"\x80" * 8  # negative, V = #{P_v > 0x80..}
    rows = []
    for i in range(40):
        n_rejected = 1 + i % 5  # the accepted attempt: 2nd .. 6th (past the 3 read at once)
        accepted = tail + bytes([i]) * 8 + b"\xff" * 8 if i % 2 else plain
        rows.append(reject * n_rejected + accepted)
    streams = crafted(rows)
    x = sl.stream_discrete_laplace(scale, 40, streams)
    general = sl._sample_table_elems(c, np.arange(40), _ElementBits(streams, 40, 1))
    assert x.tolist() == general.tolist()
    v_plain = int(np.count_nonzero(c.words > np.uint64(int.from_bytes(b"\x80" * 8, "big"))))
    for i in range(40):
        if i % 2 == 0:
            assert x[i] == -v_plain
        else:  # V = vmax + #{P_v > W'}, W' = the byte i repeated
            w = np.uint64(int.from_bytes(bytes([i]) * 8, "big"))
            assert x[i] == c.vmax + int(np.count_nonzero(c.words > w))


def test_u_bits_tie_reads_next_digit() -> None:
    scale = 100.0  # k = 2: sign, two U bytes, V word at offset 8
    c = sl._constants(scale)
    d0 = int(c.theta.digits[0, 0])
    d1 = int(c.theta.digits[0, 1])
    assert c.k == 2
    assert 0 < d1 < 255
    ones = b"\xff" * 8  # W = 2^64 - 1: V = 0
    # bit 0 ties on the first digit; its next digit (the next stream byte, right after the
    # U bytes) decides: below -> b_0 = 1; bit 1 is 0xff -> b_1 = 0; the V word stays at 8
    rows = [
        b"\x00" + bytes([d0, 0xFF, d1 - 1]) + bytes(4) + ones,
        b"\x00" + bytes([d0, 0xFF, d1 + 1]) + bytes(4) + ones,
        b"\x00" + bytes([0x00, 0x00]) + bytes(5) + ones,
    ]
    x = sl.stream_discrete_laplace(scale, 3, crafted(rows))
    assert x.tolist() == [1, 0, 3]


# ---------------------------------------------------------------------------------------------
# the per-element byte streams
# ---------------------------------------------------------------------------------------------


def test_element_bits_hand_out_each_stream_in_order() -> None:
    n = 5

    def streams(ids: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
        # byte b of stream i is (i * 37 + b) mod 256, b counted from the stream's start
        pos = first.astype(np.int64)[:, None] * 16 + np.arange(16 * count)
        return ((ids[:, None] * 37 + pos) % 256).astype(np.uint8)

    bits = _ElementBits(streams, n, blocks=1)
    ids = np.arange(n)
    assert bits.bytes(ids).tolist() == [(37 * i) % 256 for i in range(n)]
    odd = np.array([1, 3])
    assert bits.run(odd, 3).tolist() == [[(37 * i + b) % 256 for b in (1, 2, 3)] for i in (1, 3)]
    w = bits.word_be(ids)  # aligned to 8: bytes 8..15 of every stream
    assert [int(x) for x in w] == [
        int.from_bytes(bytes((37 * i + b) % 256 for b in range(8, 16)), "big") for i in range(n)
    ]
    # past the 16-byte buffer: the next block of each stream
    assert bits.bytes(ids).tolist() == [(37 * i + 16) % 256 for i in range(n)]
    with pytest.raises(TypeError):
        bits.bytes(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="longer"):
        bits.run(ids, 17)


def test_invalid_scale() -> None:
    for bad in (0.0, -1.0, np.nan, np.inf, 2.0**53):
        with pytest.raises(ValueError, match="scale"):
            sl.stream_discrete_laplace(bad, 3, keyed_streams())


def test_empty() -> None:
    assert sl.stream_discrete_laplace(2.0, 0, keyed_streams()).shape == (0,)


@pytest.mark.parametrize("scale", [0.125, 1.7, 21.48, 306.2, 5000.0, 2.0**40 + 0.5, 2.0**52])
def test_constants_agree_across_precisions(scale: float) -> None:
    # the draws read only known digits, so the values cannot depend on the precision the
    # constants were first built at: the words are equal and the digits agree where known
    base = sl._constants(scale)
    fine = sl._constants(scale, 4 * sl._FRAC)
    assert base.frac < fine.frac
    assert np.array_equal(base.words, fine.words)
    assert np.array_equal(base.words_ascending, fine.words_ascending)
    for name in ("theta", "powers"):
        a, b = getattr(base, name), getattr(fine, name)
        assert (a.known <= b.known).all()
        width = a.digits.shape[1]
        assert np.array_equal(
            np.where(np.arange(width) < a.known[:, None], b.digits[:, :width], 0), a.digits
        )
    # the words are the first eight digits of the powers
    assert (base.powers.known >= 8).all()
    assert np.array_equal(base.powers.digits[:, :8].copy().view(">u8").reshape(-1), base.words)
