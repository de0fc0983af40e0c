"""The secure bulk path of :class:`~opendp_wasserstein.noise._source.RandomSource`: a request of
at least ``AES_CTR_WORDS`` words is the AES-256-CTR keystream of a fresh ``os.urandom`` key."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from scipy import stats

from opendp_wasserstein.noise import _source
from opendp_wasserstein.noise._source import AES_CTR_WORDS, RandomSource

KEY = bytes(range(32))


@pytest.fixture
def fixed_key(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``os.urandom`` returns ``KEY`` for a 32-byte read; every read's size is recorded."""
    calls: list[int] = []
    real = os.urandom

    def fake(k: int) -> bytes:
        calls.append(k)
        return KEY if k == 32 else real(k)

    monkeypatch.setattr(_source.os, "urandom", fake)
    return calls


def _ecb_counter_blocks(key: bytes, blocks: int) -> np.ndarray:
    """The CTR keystream built independently: ``E_K(i)`` for the 128-bit big-endian counters
    ``i = 0 .. blocks - 1`` (ECB over the counter blocks), as 64-bit words."""
    ctr = np.zeros((blocks, 2), dtype=">u8")
    ctr[:, 1] = np.arange(blocks, dtype=np.uint64)
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return np.frombuffer(enc.update(ctr.tobytes()), dtype=np.uint64)


def test_a_large_secure_request_is_the_aes_ctr_keystream_of_one_fresh_key(
    fixed_key: list[int],
) -> None:
    words = RandomSource().uint64(AES_CTR_WORDS + 6)
    assert fixed_key == [32]  # one key read, nothing else
    assert words.dtype == np.uint64
    assert words.flags.writeable
    assert np.array_equal(words, _ecb_counter_blocks(KEY, (AES_CTR_WORDS + 6) // 2))
    # shapes as the small path gives them
    assert RandomSource().uint64((AES_CTR_WORDS, 2)).shape == (AES_CTR_WORDS, 2)


def test_a_small_secure_request_reads_os_urandom_itself(fixed_key: list[int]) -> None:
    RandomSource().uint64(AES_CTR_WORDS - 1)
    assert fixed_key == [8 * (AES_CTR_WORDS - 1)]


def test_the_keystream_is_uniform_on_the_fixed_key(fixed_key: list[int]) -> None:
    """Bytes and bits of 2^18 words under the fixed key (deterministic: the test input is
    fixed, so it is not a flaky statistical test): byte counts pass a chi-square test at
    1e-4 and every bit position is balanced within 5 standard deviations."""
    words = RandomSource().uint64(1 << 18)
    counts = np.bincount(words.view(np.uint8), minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-4
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    ones = bits.sum(axis=0).astype(np.float64)
    n = words.size
    assert np.all(np.abs(ones - n / 2) < 5 * np.sqrt(n / 4))
    # the derived draws read the same words
    assert np.array_equal(RandomSource().uniform(1 << 18), (words >> np.uint64(11)) * 2.0**-53)


def test_two_large_secure_requests_differ() -> None:
    rng = RandomSource()
    a, b = rng.uint64(1 << 16), rng.uint64(1 << 16)
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, RandomSource().uint64(1 << 16))


def test_seeded_streams_are_unchanged_by_the_bulk_path() -> None:
    """A seeded source reads PCG64 for every size: the words of numpy's generator seeded as
    before (reproducible releases and their reference values do not move)."""
    for size in (5, AES_CTR_WORDS, 1 << 16):
        gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([9, 4])))
        want = gen.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
        assert np.array_equal(RandomSource(9).derive(4).uint64(size), want)
