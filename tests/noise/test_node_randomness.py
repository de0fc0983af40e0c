"""Tests of node-addressed randomness (:mod:`opendp_wasserstein.noise.node_randomness`)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from scipy import stats

from opendp_wasserstein.noise._source import RandomSource
from opendp_wasserstein.noise.node_randomness import (
    COIN_STREAM,
    LAPLACE_STREAM,
    PLACEMENT_STREAM,
    KeyedNodeNoise,
    release_node_noise,
)
from tests.noise.test_fast_gaussian import gof_pvalue as gaussian_gof_pvalue
from tests.noise.test_fast_laplace import P_MIN, gof_pvalue

KEY = bytes(range(100, 132))


def cells_at(level: int, d: int, k: int, seed: int = 0) -> np.ndarray:
    """``k`` distinct level-``level`` cells of the cyclic dyadic hierarchy of ``[0, 1]^d``."""
    from opendp_wasserstein.hierarchy.cells import coord_bits_at_level

    bits = coord_bits_at_level(level, d)
    gen = np.random.default_rng(seed)  # test inputs only
    cells = np.column_stack([gen.integers(0, 2 ** int(b), size=4 * k) for b in bits])
    return np.unique(cells, axis=0)[:k]


def cbc_mac_blocks(key: bytes, header: np.ndarray, ids: np.ndarray, count: int) -> bytes:
    """Reference: AES-CBC with a zero IV over ``H || id lanes || C_c``; the last block of each."""
    lanes = ids.astype("<i8").tobytes()
    if ids.size % 2:
        lanes += bytes(8)
    out = b""
    for c in range(count):
        msg = header.astype("<u8").tobytes() + lanes + np.array([c, 0], dtype="<u8").tobytes()
        enc = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).encryptor()
        out += (enc.update(msg) + enc.finalize())[-16:]
    return out


@pytest.mark.parametrize("d", [1, 2, 3, 10])
def test_blocks_are_cbc_mac_of_the_node_address(d: int) -> None:
    noise = KeyedNodeNoise(KEY, namespace=5)
    cells = cells_at(30, d, 4)
    got = noise.blocks(LAPLACE_STREAM, 30, cells, 3)
    for i in range(cells.shape[0]):
        header = np.array(
            [(0x4F445057 << 32) | (1 << 24) | (LAPLACE_STREAM << 16) | 5, (30 << 32) | d],
            dtype=np.uint64,
        )
        assert got[i].tobytes() == cbc_mac_blocks(KEY, header, cells[i], 3)


def test_cached_headers_keep_the_cbc_mac() -> None:
    # E_K(H) is kept per (stream, level, width): asking again, after other levels, streams and
    # widths, still gives the CBC-MAC of the address (blocks 0..2, and block 0 alone)
    noise = KeyedNodeNoise(KEY, namespace=2)
    for _ in range(2):
        for level, d, stream in (
            (7, 3, LAPLACE_STREAM),
            (8, 3, COIN_STREAM),
            (7, 2, LAPLACE_STREAM),
        ):
            cells = cells_at(level, d, 3, seed=level + d)
            header = np.array(
                [(0x4F445057 << 32) | (1 << 24) | (stream << 16) | 2, (level << 32) | d],
                dtype=np.uint64,
            )
            for count in (1, 3):
                got = noise.blocks(stream, level, cells, count)
                for i in range(cells.shape[0]):
                    assert got[i].tobytes() == cbc_mac_blocks(KEY, header, cells[i], count)
    assert len(noise._headers) == 3


def test_same_key_same_values_in_any_order_and_batch() -> None:
    noise = KeyedNodeNoise(KEY)
    cells = cells_at(40, 3, 5000)
    lap = noise.laplace(40, cells, 7.5)
    coin = noise.coins(40, cells)
    counts = np.arange(cells.shape[0]) % 4
    pts = noise.uniform(40, cells, counts, 3)
    order = np.random.default_rng(1).permutation(cells.shape[0])[:1234]
    other = KeyedNodeNoise(bytes(KEY))  # another object with the same key (a worker)
    assert np.array_equal(other.laplace(40, cells[order], 7.5), lap[order])
    assert np.array_equal(other.coins(40, cells[order]), coin[order])
    starts = np.concatenate(([0], np.cumsum(counts)))
    expect = np.concatenate([pts[starts[i] : starts[i + 1]] for i in order])
    assert np.array_equal(other.uniform(40, cells[order], counts[order], 3), expect)
    for i in (0, 17, 999):  # one node at a time
        assert noise.laplace(40, cells[i : i + 1], 7.5)[0] == lap[i]


def test_pickled_object_draws_the_same_values() -> None:
    noise = KeyedNodeNoise(KEY, namespace=3)
    cells = cells_at(12, 2, 100)
    clone = pickle.loads(pickle.dumps(noise))
    assert clone == noise
    assert np.array_equal(clone.laplace(12, cells, 2.0), noise.laplace(12, cells, 2.0))


def test_addresses_separate_the_values() -> None:
    noise = KeyedNodeNoise(KEY)
    cells = cells_at(20, 2, 2000)
    base = noise.laplace(20, cells, 1e6)
    assert not np.array_equal(base, noise.laplace(21, cells, 1e6))  # level
    assert not np.array_equal(base, noise.derive(1).laplace(20, cells, 1e6))  # namespace
    assert not np.array_equal(base, KeyedNodeNoise(bytes(32)).laplace(20, cells, 1e6))  # key
    blocks = [
        noise.blocks(s, 20, cells, 1) for s in (LAPLACE_STREAM, COIN_STREAM, PLACEMENT_STREAM)
    ]
    assert not np.array_equal(blocks[0], blocks[1])
    assert not np.array_equal(blocks[1], blocks[2])
    # a node id and its zero-padded longer twin are different messages (w is in the header)
    one = noise.blocks(LAPLACE_STREAM, 4, np.array([[3]]), 1)
    two = noise.blocks(LAPLACE_STREAM, 4, np.array([[3, 0]]), 1)
    assert not np.array_equal(one, two)


@pytest.mark.parametrize("scale", [0.4, 3.0, 250.0])
def test_laplace_law_across_nodes(scale: float) -> None:
    x = KeyedNodeNoise(KEY).laplace(50, cells_at(50, 3, 60_000), scale)
    assert gof_pvalue(x, scale) > P_MIN


@pytest.mark.parametrize("scale", [0.4, 2.5, 40.0, 3.0e6])
def test_gaussian_law_across_nodes(scale: float) -> None:
    # seeded chi-square against the exact N_Z(0, scale^2) pmf (a fixed key: deterministic)
    x = KeyedNodeNoise(KEY).gaussian(50, cells_at(50, 3, 60_000), scale)
    assert gaussian_gof_pvalue(x, scale) > P_MIN


@pytest.mark.parametrize("scale", [0.7, 9.0])
def test_gaussian_exact_paths_forced(monkeypatch: pytest.MonkeyPatch, scale: float) -> None:
    # every certified interval widened by 2^48: the acceptance tests run in exact arithmetic
    import opendp_wasserstein.noise._fast_gaussian as fg

    monkeypatch.setattr(fg, "_SLACK", 2.0**48)
    x = KeyedNodeNoise(KEY).gaussian(7, cells_at(7, 2, 5_000), scale)
    assert gaussian_gof_pvalue(x, scale) > P_MIN


def test_gaussian_is_a_function_of_the_node() -> None:
    noise = KeyedNodeNoise(KEY)
    cells = cells_at(20, 3, 3000)
    g = noise.gaussian(20, cells, 2.0)
    order = np.random.default_rng(1).permutation(cells.shape[0])  # test order, not a mechanism
    assert np.array_equal(noise.gaussian(20, cells[order], 2.0), g[order])
    assert np.array_equal(noise.gaussian(20, cells[:7], 2.0), g[:7])
    assert np.array_equal(pickle.loads(pickle.dumps(noise)).gaussian(20, cells[:50], 2.0), g[:50])
    assert not np.array_equal(noise.gaussian(21, cells, 2.0), g)  # the level is in the address
    assert not np.array_equal(noise.laplace(20, cells, 2.0), g)  # its own stream
    assert noise.gaussian(3, np.zeros((0, 2), dtype=np.int64), 1.0).shape == (0,)
    with pytest.raises(ValueError, match="scale"):
        noise.gaussian(3, np.zeros((2, 2), dtype=np.int64), 0.0)


def test_coins_and_uniform_laws() -> None:
    noise = KeyedNodeNoise(KEY)
    cells = cells_at(33, 4, 50_000)
    coins = noise.coins(33, cells)
    assert set(np.unique(coins).tolist()) == {0, 1}
    assert stats.binomtest(int(coins.sum()), coins.size, 0.5).pvalue > P_MIN
    pts = noise.uniform(33, cells[:2000], np.full(2000, 5), 3)
    assert pts.shape == (10_000, 3)
    assert np.all((pts >= 0) & (pts < 1))
    for j in range(3):
        assert stats.kstest(pts[:, j], "uniform").pvalue > P_MIN
    assert np.all(pts * 2.0**53 == np.floor(pts * 2.0**53))  # multiples of 2^-53


def test_keys_from_sources() -> None:
    a = release_node_noise(RandomSource(7))
    b = release_node_noise(RandomSource(7))
    assert a == b  # seeded: reproducible (and not private)
    assert release_node_noise() != release_node_noise()  # secure: a fresh key each release
    assert KeyedNodeNoise.fresh() != KeyedNodeNoise.fresh()
    assert "hidden" in repr(a)
    assert KEY.hex() not in repr(KeyedNodeNoise(KEY))


def test_empty_requests() -> None:
    noise = KeyedNodeNoise(KEY)
    empty = np.zeros((0, 3), dtype=np.int64)
    assert noise.laplace(3, empty, 1.0).shape == (0,)
    assert noise.coins(3, empty).shape == (0,)
    assert noise.uniform(3, empty, np.zeros(0, dtype=np.int64), 3).shape == (0, 3)
    assert noise.uniform(3, np.zeros((2, 3), dtype=np.int64), np.array([0, 0]), 2).shape == (0, 2)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda n: KeyedNodeNoise(b"short"), "key"),
        (lambda n: KeyedNodeNoise(KEY, namespace=2**16), "namespace"),
        (lambda n: n.laplace(-1, np.zeros((1, 2), dtype=np.int64), 1.0), "level"),
        (lambda n: n.laplace(1, np.zeros(3, dtype=np.int64), 1.0), "cells"),
        (lambda n: n.laplace(1, np.zeros((2, 2)), 1.0), "cells"),
        (lambda n: n.laplace(1, np.zeros((2, 2), dtype=np.int64), 0.0), "scale"),
        (lambda n: n.laplace(1, np.zeros((2, 2), dtype=np.int64), np.nan), "scale"),
        (lambda n: n.laplace(1, np.zeros((2, 2), dtype=np.int64), 2.0**53), "scale"),
        (lambda n: n.uniform(1, np.zeros((2, 2), dtype=np.int64), np.array([1, -1]), 2), "counts"),
        (lambda n: n.uniform(1, np.zeros((2, 2), dtype=np.int64), np.array([1]), 2), "counts"),
        (lambda n: n.uniform(1, np.zeros((2, 2), dtype=np.int64), np.array([1, 1]), 0), "width"),
        (lambda n: n.blocks(9, 1, np.zeros((2, 2), dtype=np.int64), 1), "stream"),
    ],
)
def test_bad_arguments_name_the_parameter(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        call(KeyedNodeNoise(KEY))
