"""Node-addressed randomness: the noise of a tree node is a function of (release key, node).

A release that runs on many workers, or is retried after a worker died, must draw the *same*
noise for the same node wherever and however often it is computed: otherwise a retried task
could release a second, fresh noisy value of a count whose first value was already used or
written.  :class:`KeyedNodeNoise` makes every random value a release uses a deterministic
function of a secret per-release key and the public address of what it is for:

``(stream, level, node id, block counter)  ->  16 uniform bytes``

so any worker, any retry and the in-memory path read the same bytes for the same node, and the
exact samplers (:func:`~opendp_wasserstein.noise._fast_laplace.stream_discrete_laplace`) turn them
into the same value.

Construction
------------

The function is CBC-MAC with AES-256 under the release key ``K`` over a message of 128-bit
blocks (Bellare, Kilian, Rogaway 2000; Petrank, Rackoff 2000):

``H || L_1 || ... || L_m || C``

* ``H`` (header): a constant tag, the format version, the stream (Laplace noise, coins,
  placement, Gaussian noise), a namespace, the level ``j`` and the width ``w`` of the node id;
* ``L_1 .. L_m``, ``m = ceil(w / 2)``: the node id, ``w`` signed 64-bit integers, two per block
  (the last block zero-padded when ``w`` is odd).  For the dyadic hierarchy a level-``j`` node
  is its vector of per-coordinate cell indices (``w = d``,
  :func:`~opendp_wasserstein.hierarchy.cells.coord_bits_at_level`); any tree whose level-``j`` nodes
  have distinct integer vectors can be addressed the same way (a public tree by node index,
  ``w = 1``).  One 64-bit lane per coordinate needs no knowledge of the split order and covers
  every depth (a coordinate has at most 52 bits), at the cost of ``ceil(d/2)`` AES calls per
  node instead of ``ceil(j/128)`` for a packed Morton prefix, which is negligible next to the
  sampler;
* ``C``: the block counter ``c`` of the node's stream (``c`` in the low 64 bits).

Block ``c`` of the node's stream is ``CBC-MAC_K(H || L || C_c) = E_K(S XOR C_c)`` with the
chaining value ``S = E_K(... E_K(E_K(H) XOR L_1) ...  XOR L_m)`` computed once per node.
Every message that is ever evaluated has the length ``m + 2`` fixed by its own first block
(``w`` is in ``H``), so the message set is *prefix-free*, and CBC-MAC of a PRF is a PRF on
prefix-free messages: its outputs on distinct messages are indistinguishable from independent
uniform 128-bit blocks, with advantage at most that of distinguishing AES from a random
function plus ``O(q^2 l^2 / 2^128)`` for ``q`` messages of ``l`` blocks.  Distinct (stream,
namespace, level, id, counter) are distinct messages, so distinct nodes, streams and blocks
get independent uniform bytes.  Each node's stream is consumed by an exact sampler that reads
bytes in a fixed order determined only by that node's own values, so a node's value does not
depend on which other nodes are drawn with it (see
:class:`~opendp_wasserstein.noise._fast_laplace._ElementBits`).

AES in ECB mode over many blocks at once is the vectorised primitive (package
``cryptography``, AES-NI): every step above is one ECB call over all nodes of a batch.  The
alternative of a GGM-style chain (child seed ``= E_K(parent seed XOR const(level, bit))``)
costs one AES call per level of depth and needs the parent's seed, i.e. the traversal state;
CBC-MAC over the id costs ``ceil(w/2) + 1`` calls per node and needs nothing but the node.

Keys
----

The key is 32 bytes from :func:`os.urandom` for each release by default
(:meth:`KeyedNodeNoise.from_random_source` with a secure source).  With a seeded
(**non-private**) :class:`~opendp_wasserstein.noise._source.RandomSource`, e.g. inside the
reproducible option used for tests and figures, the key is read from that stream, so the
release is reproducible (and not private).  The key never enters a release.  It does travel
to the workers of a distributed run inside the pickled object: run such a cluster on a
trusted network or with TLS (Dask's ``distributed.comm`` security settings).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from opendp_wasserstein.noise._fast_laplace import MAX_SCALE
from opendp_wasserstein.noise._source import RandomSource, as_random_source
from opendp_wasserstein.noise._stream_gaussian import stream_discrete_gaussian
from opendp_wasserstein.noise._stream_laplace import stream_discrete_laplace

__all__ = [
    "KeyedNodeNoise",
    "release_node_noise",
    "random_words",
    "LAPLACE_STREAM",
    "COIN_STREAM",
    "PLACEMENT_STREAM",
    "GAUSS_STREAM",
    "KEY_BYTES",
]

#: bytes of a release key (AES-256)
KEY_BYTES = 32
#: stream tags: what the bytes of a node are for
LAPLACE_STREAM, COIN_STREAM, PLACEMENT_STREAM, GAUSS_STREAM = 1, 2, 3, 4
_STREAMS = (LAPLACE_STREAM, COIN_STREAM, PLACEMENT_STREAM, GAUSS_STREAM)
_TAG = 0x4F44_5057  # "ODPW"
_VERSION = 1
_LE64 = np.dtype("<u8")
_TWO_M53 = 2.0**-53
_MAX_HEADERS = 4096  # E_K(H) blocks kept per key (one per stream, level and id width)


class KeyedNodeNoise:
    """Random values addressed by tree node, a keyed PRF of (key, stream, level, node id).

    The object is what the tree traversals draw from: :meth:`laplace` (pure DP) or
    :meth:`gaussian` (zCDP) for noisy counts,
    :meth:`coins` for the fair coins of the zero-respecting correction; :meth:`uniform` draws
    keyed points per node (the synthesis places its points with the faster
    :class:`~opendp_wasserstein.hierarchy.placement.PlacementStream` instead: placement is
    post-processing).  It holds no data and no state besides the key: asking twice for a node
    gives the same value, whichever other nodes are asked with it, in any process.

    :param key: the secret release key, 32 bytes (draw it with :meth:`fresh` or
        :func:`release_node_noise`; never reuse a key for two releases)
    :param namespace: separates independent uses of one key (``0 <= namespace < 2^16``)

    :example:

    >>> import numpy as np
    >>> from opendp_wasserstein.noise.node_randomness import KeyedNodeNoise
    >>> noise = KeyedNodeNoise(bytes(32))  # a fixed key: reproducible, NOT private
    >>> cells = np.array([[0, 1], [1, 1], [1, 0]])
    >>> a = noise.laplace(2, cells, scale=3.0)
    >>> b = noise.laplace(2, cells[::-1], scale=3.0)  # same nodes, other order
    >>> bool(np.array_equal(a, b[::-1]))
    True
    >>> noise.coins(2, cells).dtype
    dtype('int64')
    """

    __slots__ = ("_key", "_namespace", "_headers", "_contexts")

    def __init__(self, key: bytes, namespace: int = 0) -> None:
        if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_BYTES:
            raise ValueError(f"key must be {KEY_BYTES} bytes")
        if isinstance(namespace, bool) or not isinstance(namespace, (int, np.integer)):
            raise TypeError("namespace must be an integer")
        if not 0 <= int(namespace) < 2**16:
            raise ValueError("namespace must be in [0, 2^16)")
        self._key = bytes(key)
        self._namespace = int(namespace)
        self._headers: dict[tuple[int, int, int], np.ndarray] = {}  # E_K(H): _header
        self._contexts = threading.local()  # the AES context of each thread: _encryptor

    # ------------------------------------------------------------------ construction

    @classmethod
    def fresh(cls) -> KeyedNodeNoise:
        """A new release key from the operating system's CSPRNG (:func:`os.urandom`)."""
        return cls(os.urandom(KEY_BYTES))

    @classmethod
    def from_random_source(cls, rng: RandomSource) -> KeyedNodeNoise:
        """A key from ``rng``: :func:`os.urandom` if it is secure, else from its seeded stream
        (reproducible and **not private**: tests and figures only)."""
        if rng.secure:
            return cls.fresh()
        return cls(rng.uint64(KEY_BYTES // 8).astype(_LE64).tobytes())

    def derive(self, namespace: int) -> KeyedNodeNoise:
        """The same key in another namespace: independent values for another use."""
        return KeyedNodeNoise(self._key, namespace)

    @property
    def namespace(self) -> int:
        return self._namespace

    def __reduce__(self) -> tuple[Any, ...]:  # pickled for the workers of a distributed run
        return (KeyedNodeNoise, (self._key, self._namespace))

    def __repr__(self) -> str:
        return f"KeyedNodeNoise(key=<hidden>, namespace={self._namespace})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KeyedNodeNoise)
            and self._key == other._key
            and self._namespace == other._namespace
        )

    def __hash__(self) -> int:
        return hash((KeyedNodeNoise, self._namespace))

    # ------------------------------------------------------------------ the PRF

    def _encryptor(self) -> Any:
        # one ECB context per thread, kept: ECB is stateless (every call encrypts whole blocks
        # and buffers nothing), and a context is never shared by two threads
        cache = self._contexts
        enc = getattr(cache, "enc", None)
        if enc is None:
            enc = cache.enc = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor()
        return enc

    @staticmethod
    def _aes(enc: Any, blocks: np.ndarray) -> np.ndarray:
        """``E_K`` of every 16-byte row of ``blocks`` (shape (..., 2) of little-endian uint64)."""
        data = np.ascontiguousarray(blocks, dtype=_LE64)
        # update_into a numpy buffer (which must have room for one more block): about 3 ns a
        # block, against 25-30 ns for update(), whose fresh bytes object is the cost from a few
        # thousand blocks on (measured with cryptography 51 on the project's machine)
        out = np.empty(data.size + 2, dtype=_LE64)
        if data.size:
            src, dst = memoryview(data).cast("B"), memoryview(out).cast("B")  # type: ignore[arg-type]
            enc.update_into(src, dst)
        return out[: data.size].reshape(data.shape)

    def _header(self, enc: Any, stream: int, level: int, w: int) -> np.ndarray:
        """``E_K(H)`` of the header block of ``(stream, level, w)`` (2 little-endian uint64),
        computed once per key and kept (the same block for every call at a level)."""
        key = (stream, level, w)
        out = self._headers.get(key)
        if out is None:
            header = np.array(
                [
                    [
                        (_TAG << 32) | (_VERSION << 24) | (stream << 16) | self._namespace,
                        (level << 32) | w,
                    ]
                ],
                dtype=_LE64,
            )
            out = self._aes(enc, header).reshape(2)
            if len(self._headers) >= _MAX_HEADERS:
                self._headers.clear()
            self._headers[key] = out
        return out

    def _chain(self, enc: Any, stream: int, level: int, ids: np.ndarray) -> np.ndarray:
        """The CBC-MAC chaining value ``S`` after ``H || L_1 .. L_m`` for every node, (k, 2)."""
        k, w = ids.shape
        state = self._header(enc, stream, level, w)[None, :]  # E_K(H), the same for all nodes
        lanes = ids.astype("<i8", copy=False).view(_LE64)
        block = np.empty((k, 2), dtype=_LE64)
        for b in range((w + 1) // 2):  # block b: lanes 2b, 2b + 1 (zero past the last lane)
            np.bitwise_xor(state[:, 0], lanes[:, 2 * b], out=block[:, 0])
            if 2 * b + 1 < w:
                np.bitwise_xor(state[:, 1], lanes[:, 2 * b + 1], out=block[:, 1])
            else:
                block[:, 1] = state[:, 1]
            state = self._aes(enc, block)
        return state

    @staticmethod
    def _check(level: Any, ids: Any) -> tuple[int, np.ndarray]:
        if isinstance(level, bool) or not isinstance(level, (int, np.integer)):
            raise TypeError("level must be an integer")
        if not 0 <= int(level) < 2**32:
            raise ValueError("level must be in [0, 2^32)")
        arr = np.asarray(ids)
        if arr.ndim != 2 or arr.shape[1] < 1:
            raise ValueError("cells must be a 2-D integer array (one row per node)")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise TypeError("cells must be an integer array")
        if arr.shape[1] >= 2**32:
            raise ValueError("cells has too many columns")
        return int(level), arr.astype(np.int64, copy=False)

    def blocks(self, stream: int, level: int, cells: np.ndarray, count: int) -> np.ndarray:
        """The first ``count`` 16-byte blocks of each node's stream, shape ``(k, 16 count)`` uint8.

        :param stream: one of :data:`LAPLACE_STREAM`, :data:`COIN_STREAM`, :data:`PLACEMENT_STREAM`
        :param level: the nodes' level (public)
        :param cells: the nodes' ids, one integer row per node, shape ``(k, w)``
        :param count: blocks per node
        """
        if stream not in _STREAMS:
            raise ValueError(f"stream must be one of {_STREAMS}")
        level, ids = self._check(level, cells)
        enc = self._encryptor()
        state = self._chain(enc, stream, level, ids)
        first = np.zeros(ids.shape[0], dtype=np.uint64)
        return self._expand(enc, state, np.arange(ids.shape[0]), first, count)

    def _expand(
        self, enc: Any, state: np.ndarray, elems: np.ndarray, first: np.ndarray, count: int
    ) -> np.ndarray:
        """Blocks ``first .. first + count - 1`` of the streams of nodes ``elems``."""
        block = np.empty((elems.size, count, 2), dtype=_LE64)
        if count == 1:
            state.take(elems, axis=0, out=block.reshape(elems.size, 2))
        else:
            block[:] = state.take(elems, axis=0)[:, None, :]
        ctr: np.ndarray = np.add(
            first.astype(np.uint64)[:, None], np.arange(count, dtype=np.uint64), dtype=np.uint64
        )
        if ctr.any():  # C_c = (c, 0): block 0 of every stream is E_K(S)
            block[:, :, 0] ^= ctr
        out = self._aes(enc, block)
        return out.view(np.uint8).reshape(elems.size, 16 * count)

    # ------------------------------------------------------------------ what traversals use

    def laplace(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        """``LapZ(scale)`` noise for each node, exact, node ``i`` from its own stream.

        :param level: the nodes' level (public)
        :param cells: the nodes' ids, shape ``(k, w)`` integers (for the dyadic hierarchy, the
            per-coordinate cell indices, ``w = d``)
        :param scale: the noise scale, finite, in ``(0, 2^52]``
        :return: ``int64`` array of length ``k``
        """
        # the traversal clamps noisy counts to +-2^61 (node_noise.add_noise)
        return self._draw(LAPLACE_STREAM, stream_discrete_laplace, level, cells, scale)

    def gaussian(self, level: int, cells: np.ndarray, scale: float) -> np.ndarray:
        """``N_Z(0, scale^2)`` noise for each node, exact, node ``i`` from its own stream
        (:func:`~opendp_wasserstein.noise._stream_gaussian.stream_discrete_gaussian`: CKS rejection
        rounds, each reading fresh regions of the node's Gaussian stream).

        :param level: the nodes' level (public)
        :param cells: the nodes' ids, shape ``(k, w)`` integers
        :param scale: the noise scale ``sigma``, finite, in ``(0, 2^52]``
        :return: ``int64`` array of length ``k``
        """
        return self._draw(GAUSS_STREAM, stream_discrete_gaussian, level, cells, scale)

    def _draw(
        self, stream: int, sampler: Any, level: int, cells: np.ndarray, scale: float
    ) -> np.ndarray:
        """One value per node from ``sampler(scale, k, streams)`` reading the nodes' own
        ``stream``."""
        level, ids = self._check(level, cells)
        scale_f = float(scale)
        if not (np.isfinite(scale_f) and 0.0 < scale_f <= MAX_SCALE):
            raise ValueError("scale must be finite and in (0, 2^52]")
        k = ids.shape[0]
        if k == 0:
            return np.zeros(0, dtype=np.int64)
        enc = self._encryptor()
        state = self._chain(enc, stream, level, ids)

        def streams(elems: np.ndarray, first: np.ndarray, count: int) -> np.ndarray:
            return self._expand(enc, state, elems, first, count)

        return np.asarray(sampler(scale_f, k, streams), dtype=np.int64)

    def coins(self, level: int, cells: np.ndarray) -> np.ndarray:
        """A fair coin (0 or 1, ``int64``) for each node: the low bit of its coin stream."""
        level, ids = self._check(level, cells)
        if ids.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        # block 0 of the coin stream is E_K(S XOR C_0) = E_K(S) (C_0 = 0): its first byte
        enc = self._encryptor()
        first = self._aes(enc, self._chain(enc, COIN_STREAM, level, ids))
        return (first[:, 0] & np.uint64(1)).astype(np.int64)

    def uniform(self, level: int, cells: np.ndarray, counts: np.ndarray, width: int) -> np.ndarray:
        """``counts[i]`` uniform points in ``[0, 1)^width`` for node ``i``, from its own stream.

        Point ``r`` of a node reads blocks ``r b .. r b + b - 1`` (``b = ceil(width / 2)``) of the
        node's placement stream, so any point can be drawn on its own
        (:meth:`placement_state`, :meth:`uniform_points`).  Every coordinate is a multiple of
        ``2^-53``, all such values equally likely (the top 53 bits of a 64-bit word).  Node
        ``i``'s points are rows ``sum(counts[:i]) ..`` of the output, in node order.

        :param level: the nodes' level (public)
        :param cells: the nodes' ids, shape ``(k, w)``
        :param counts: points per node, non-negative integers, shape ``(k,)``
        :param width: coordinates per point
        :return: ``float64`` array of shape ``(sum(counts), width)``
        """
        level, ids = self._check(level, cells)
        cnt = np.asarray(counts)
        if cnt.shape != (ids.shape[0],) or (cnt.size and not np.issubdtype(cnt.dtype, np.integer)):
            raise ValueError("counts must be one non-negative integer per node")
        cnt = cnt.astype(np.int64)
        if cnt.size and int(cnt.min()) < 0:
            raise ValueError("counts must be non-negative")
        _check_width(width)
        total = int(cnt.sum())
        if total == 0:
            return np.zeros((0, int(width)), dtype=np.float64)
        state = self.placement_state(level, ids)
        node = np.repeat(np.arange(ids.shape[0]), cnt)
        rank = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        return self.uniform_points(state[node], rank, width)

    def placement_state(self, level: int, cells: np.ndarray) -> np.ndarray:
        """The placement-stream chaining values of nodes (``(k, 2)`` little-endian uint64); pass
        rows of it to :meth:`uniform_points`.  Secret: derived from the key."""
        level, ids = self._check(level, cells)
        return self._chain(self._encryptor(), PLACEMENT_STREAM, level, ids)

    def uniform_points(self, state: np.ndarray, ranks: np.ndarray, width: int) -> np.ndarray:
        """Point ``ranks[i]`` of the node whose :meth:`placement_state` row is ``state[i]``.

        :return: ``float64`` array of shape ``(len(ranks), width)``, coordinates in ``[0, 1)``
        """
        _check_width(width)
        nb = (int(width) + 1) // 2
        rk = np.asarray(ranks, dtype=np.int64).astype(np.uint64)
        st = np.asarray(state, dtype=_LE64)
        block = np.empty((rk.size, nb, 2), dtype=_LE64)
        block[:, :, 0] = rk[:, None] * np.uint64(nb) + np.arange(nb, dtype=np.uint64)
        block[:, :, 0] ^= st[:, 0:1]
        block[:, :, 1] = st[:, 1:2]
        words = self._aes(self._encryptor(), block).reshape(rk.size, 2 * nb)
        if 2 * nb != int(width):
            words = words[:, : int(width)]
        out = np.right_shift(words, np.uint64(11)).astype(np.float64)
        out *= _TWO_M53
        return out


def _check_width(width: Any) -> None:
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError("width must be a positive integer")


def random_words(rng: RandomSource, count: int) -> np.ndarray:
    """``count`` uniform 64-bit words from ``rng``, fast: a secure source gives a 32-byte key
    from :func:`os.urandom` expanded by AES-256 in counter mode (a CSPRNG, about ten times the
    throughput of reading :func:`os.urandom` itself); a seeded source its own stream."""
    if not rng.secure:
        return rng.uint64(count)
    nonce = bytes(16)  # the key is fresh and used once
    enc = Cipher(algorithms.AES(os.urandom(KEY_BYTES)), modes.CTR(nonce)).encryptor()
    out = np.empty(int(count) + 2, dtype=np.uint64)  # update_into needs one block spare
    enc.update_into(bytes(8 * int(count)), memoryview(out).cast("B"))  # type: ignore[arg-type]
    return out[: int(count)]


def release_node_noise(rng: Any = None) -> KeyedNodeNoise:
    """The node noise of one release: a fresh :func:`os.urandom` key by default.

    :param rng: ``None`` (secure; a seeded source only through the package's explicit,
        non-private reproducible option) or a
        :class:`~opendp_wasserstein.noise._source.RandomSource`
    """
    return KeyedNodeNoise.from_random_source(as_random_source(rng))
