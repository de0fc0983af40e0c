"""The single source of randomness for every mechanism in the package.

Secure by default: bits come from the operating system's CSPRNG (:func:`os.urandom`), read in
bulk; a request of at least :data:`AES_CTR_WORDS` words reads a fresh 32-byte key from
:func:`os.urandom` and expands it by AES-256 in counter mode (a CSPRNG: the keystream of a
secret, uniformly random, never reused key is indistinguishable from uniform bytes unless AES
is not a pseudorandom permutation), about five times the throughput of :func:`os.urandom` on
large requests.  A ``seed`` switches to numpy's PCG64 generator, which is **not** cryptographically
secure: it exists so that tests and figures can be reproduced, and a release made with a seed
must not be treated as private.  No code in the package touches numpy's global random state.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from opendp_wasserstein.runtime import current_seed

__all__ = [
    "RandomSource",
    "as_random_source",
    "NOISE_STREAM",
    "CORRECTION_STREAM",
    "PLACEMENT_STREAM",
    "SELECTION_STREAM",
    "SIZE_STREAM",
    "TIE_STREAM",
    "AES_CTR_WORDS",
]

_TWO_M53 = 2.0**-53

#: a secure request of at least this many 64-bit words is drawn as a fresh :func:`os.urandom`
#: key expanded by AES-256-CTR (:func:`_aes_ctr_words`); smaller ones read :func:`os.urandom`
AES_CTR_WORDS = 4096


def _aes_ctr_words(count: int) -> np.ndarray:
    """``count`` uniform 64-bit words: the AES-256-CTR keystream of a fresh 32-byte key read
    from :func:`os.urandom`.  The key is used for this one request and dropped, so the
    all-zero initial counter block never repeats under a key; ``count <= 2^61`` words stay far
    inside one key's ``2^128`` counter blocks."""
    enc = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(bytes(16))).encryptor()
    out = np.empty(count, dtype=np.uint64)
    enc.update_into(bytes(8 * count), memoryview(out).cast("B"))  # type: ignore[arg-type]
    return out


#: stream tags: with a seed, the noise, the corrections and the placement of one release draw
#: from independent derived streams (:meth:`RandomSource.derive`)
NOISE_STREAM, CORRECTION_STREAM, PLACEMENT_STREAM, SELECTION_STREAM, SIZE_STREAM = 0, 1, 2, 3, 5
#: the coins that break ties between candidates in a post-processing (rounding, closest multiset)
#: uniformly, so that no candidate is favoured by its row number
TIE_STREAM = 6


class RandomSource:
    """Uniform random bits, secure by default.

    :param seed: ``None`` (default) for the operating system's CSPRNG; an integer for a
        reproducible, **non-private** PCG64 stream (tests and figures only).
    """

    def __init__(self, seed: int | None = None, _stream: tuple[int, ...] = ()) -> None:
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
                raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
            if seed < 0:
                raise ValueError("seed must be >= 0")
            entropy = np.random.SeedSequence([int(seed), *_stream])
            self._gen: np.random.Generator | None = np.random.Generator(np.random.PCG64(entropy))
        else:
            self._gen = None
        self.seed = seed
        self._stream = _stream

    def derive(self, tag: int) -> RandomSource:
        """An independent stream: secure stays secure; a seeded source gives a seeded child."""
        if self._gen is None:
            return RandomSource()
        return RandomSource(self.seed, (*self._stream, int(tag)))

    @property
    def secure(self) -> bool:
        """True when the bits come from the operating system's CSPRNG."""
        return self._gen is None

    def uint64(self, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent uniform 64-bit words."""
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        count = int(np.prod(shape, dtype=np.int64))
        if self._gen is not None:
            return self._gen.integers(0, 2**64, size=shape, dtype=np.uint64, endpoint=False)
        if count == 0:
            return np.zeros(shape, dtype=np.uint64)
        if count >= AES_CTR_WORDS:
            return _aes_ctr_words(count).reshape(shape)
        return np.frombuffer(os.urandom(8 * count), dtype=np.uint64).reshape(shape).copy()

    def uniform(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Uniform floats on [0, 1), each a multiple of 2^-53 (every such value equally likely)."""
        return (self.uint64(size) >> np.uint64(11)).astype(np.float64) * _TWO_M53

    def bits(self, size: int) -> np.ndarray:
        """``size`` fair coin flips as an ``int64`` array of 0s and 1s."""
        return (self.uint64(size) & np.uint64(1)).astype(np.int64)

    def integers(self, high: np.ndarray | int, size: int | None = None) -> np.ndarray:
        """Exactly uniform integers on ``[0, high)`` (``high`` >= 1, elementwise), by rejection."""
        high_arr = np.asarray(high, dtype=np.uint64)
        if size is not None:
            high_arr = np.broadcast_to(high_arr, (size,))
        high_arr = np.ascontiguousarray(high_arr).reshape(-1)
        if high_arr.size and int(high_arr.min()) < 1:
            raise ValueError("high must be at least 1")
        out = np.empty(high_arr.size, dtype=np.uint64)
        todo = np.arange(high_arr.size)
        # accept words below the largest multiple of high that fits in 2^64:
        # with r = 2^64 mod high, that is words <= 2^64 - 1 - r
        max_word = np.uint64(2**64 - 1)
        r = (max_word % high_arr + np.uint64(1)) % high_arr
        limit = max_word - r
        while todo.size:
            words = self.uint64(todo.size)
            ok = words <= limit[todo]
            out[todo[ok]] = words[ok] % high_arr[todo[ok]]
            todo = todo[~ok]
        return out.astype(np.int64)

    def permutation(self, k: int) -> np.ndarray:
        """A random permutation of ``range(k)``: the sort order of i.i.d. 64-bit keys.

        Uniform up to key collisions (probability below ``k^2 / 2^65``; a tie keeps index
        order), which is only used to shuffle released rows.
        """
        keys = self.uint64(k)
        order = np.argsort(keys)  # unstable: distinct keys have one sorting permutation
        s = keys[order]
        if k > 1 and np.any(s[1:] == s[:-1]):  # a collision: index order among equal keys
            return np.argsort(keys, kind="stable")
        return order

    def __repr__(self) -> str:
        return "RandomSource(secure)" if self.secure else f"RandomSource(seed={self.seed})"


def as_random_source(rng: Any = None) -> RandomSource:
    """Coerce ``None``, an int seed, or a :class:`RandomSource` to a RandomSource.

    ``None`` is the default everywhere: the operating system's CSPRNG, unless the call runs inside
    :func:`opendp_wasserstein.runtime.reproducible` (a **non-private** seeded stream for tests and
    figures).  Mechanisms call this when they release, never when they are constructed.
    """
    if rng is None:
        return RandomSource(current_seed())
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return RandomSource(int(rng))
    raise TypeError(f"seed must be None, an int or a RandomSource, got {type(rng).__name__}")
