r"""The structured table release on a Dask cluster: the in-memory release's statistics summed
over the parts, the same noise and the same post-processing on the driver.

The structured release (:func:`~opendp_wasserstein.tables.pipeline.make_structured_synthesis`)
reads its input only through exact integer statistics of the encoded table:

1. **the first look**: every column's level counts
   (:func:`~opendp_wasserstein.tables.marginals.make_level_counts`);
2. **the pair tree** (``joint_kind == "pairs"``): the 2-way code tables of every pair of columns
   (the function of :func:`~opendp_wasserstein.tables.pairs.make_pair_counts`) under the codes
   built from the first look's release (public).  Every round's scores
   (:func:`~opendp_wasserstein.tables.pairs.make_pair_scores`) are a function of these tables:
   ``||C_ij - C_i C_j^T / n||_1`` with ``C_i`` the row sums of ``C_ij``, integers, so the float
   scores equal the in-memory ones bit for bit;
3. **the network** (``joint_kind == "network"``,
   :func:`~opendp_wasserstein.tables.network.make_network`): under the codes built from the first
   look's release (:func:`~opendp_wasserstein.tables.network.network_codings`, public), in one
   pass, the fine 2-way tables of every pair, the coarse 2-way tables of every pair and the
   coarse 3-way tables of every triple of at most ``max_cells`` cells
   (:func:`network_counts_task`, :func:`network_triples`), and the fine codes' missingness
   pattern counts.  The candidates of a round depend on the earlier rounds' choices, so every
   table any round can read is counted; each candidate's table (parents-major, child last) is
   a transpose of one of these, and its score a function of it (integers: bit for bit); each
   chosen clique's table likewise.  ``O(k^3 max_cells)`` integers per block at most
   (``max_cells``: :func:`~opendp_wasserstein.tables.network.network_cells`);
4. **the Gaussian copula** (``joint_kind == "copula"``, :mod:`~opendp_wasserstein.tables.copula`):
   under the splits at the first look's released medians
   (:func:`~opendp_wasserstein.tables.copula.copula_splits`, public), the ``P`` counts of the
   rows below both splits of every pair (:func:`copula_counts_task`: the function of
   :func:`~opendp_wasserstein.tables.copula.make_split_counts`), ``P`` integers per block; their
   sum is noised once on the driver (the in-memory ``make_copula_counts``' noise, scale and
   stream: discrete Laplace, with ``delta`` discrete Gaussian),
   the latent correlations computed there, and the blocks' Halton points correlated through
   them on the workers, as in memory.

Each part (:class:`TableBlock`: row groups of a Parquet file, read under the schema and encoded
on the worker) computes them (the level counts by the package's own transformations, the 2-way
tables by their function with each column coded once); the driver sums them
(exact: integers), checks the sum of rows against the public ``n``, and runs the in-memory
release's noise on the sums: OpenDP's discrete Laplace (``make_laplace``, the law of the
in-memory ``then_laplace``) and exponential selection on the CSPRNG by default, and inside
:func:`opendp_wasserstein.runtime.reproducible` the very draws of the in-memory release (the same
derived streams, in the same order), so the release under a seed is the in-memory release.
Everything after the noise reads no row: it is the in-memory code on the DP releases and the
public ``n``.  The driver builds the model the rows are drawn from
(:class:`~opendp_wasserstein.tables.pipeline.BlockModel`: the targets, the codes, the tree's
or the network's noisy tables; ``O(model)`` memory, not ``O(n)``) and sends it to the workers
once; the ``n`` synthetic rows are drawn in the in-memory release's output blocks
(:func:`~opendp_wasserstein.tables.pipeline.release_blocks` of the public ``n`` and
``block_rows``, not of the input's row groups), each block on a worker from its own stream
(:func:`~opendp_wasserstein.tables.pipeline.block_source`): drawn down the tree
(:func:`~opendp_wasserstein.tables.pairs.sample_tree`), scored (the quality figure's counts,
summed on the driver), calibrated (:func:`~opendp_wasserstein.tables.calibration.calibrate`),
decoded and written as Parquet parts, exactly as
:func:`~opendp_wasserstein.tables.pipeline.draw_blocks` draws them in memory.  The certified
map is the in-memory measurement's (built here for the same arguments).  The network's rows
(``joint="network"``) are drawn the same way, block by block on the workers, from its model
(:func:`~opendp_wasserstein.tables.pipeline.network_model` on the driver's release: the
cliques, their noisy tables, the pattern; rows by
:func:`~opendp_wasserstein.tables.network.sample_network`).

Not on Dask: ``joint="tree"`` (the joint hierarchy: Adaptive Pruned-PMM over a family of split
orders after the quantile encoding; refused, naming the in-memory path) and a private size (the
structured release needs a public ``n``, in memory too).
"""

from __future__ import annotations

import os
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from opendp_wasserstein import runtime
from opendp_wasserstein.combinators import rho_for_approx_dp
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import validate_data
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.core.parameters import check_delta, check_epsilon
from opendp_wasserstein.distributed._executor import _client
from opendp_wasserstein.distributed._output import ParquetSink, PartWriter
from opendp_wasserstein.distributed._pmm import Driver, public_parts
from opendp_wasserstein.distributed._source import PARQUET_ROWS_PER_BLOCK, parquet_files
from opendp_wasserstein.measurements._adaptive_common import softmax_choice
from opendp_wasserstein.measurements._exponential_selection import make_exponential_selection
from opendp_wasserstein.noise._source import (
    NOISE_STREAM,
    PLACEMENT_STREAM,
    SELECTION_STREAM,
    as_random_source,
)
from opendp_wasserstein.noise.samplers import sample_discrete_gaussian, sample_discrete_laplace
from opendp_wasserstein.release.reports import SynthesisReport
from opendp_wasserstein.tables.copula import (
    COPULA_NOISE_TAG,
    CopulaSplits,
    copula_splits,
    latent_correlations,
    pair_counts,
)
from opendp_wasserstein.tables.encoding import TableEncoding, category_boundaries, right_index
from opendp_wasserstein.tables.frames import FrameInfo, read_table, write_table
from opendp_wasserstein.tables.io import typed_by_schema
from opendp_wasserstein.tables.marginals import (
    BRANCHING,
    MAX_LEVELS,
    ColumnPlan,
    TableMarginals,
    column_plans,
    column_trees,
    level_cells,
    tree_levels,
)
from opendp_wasserstein.tables.network import (
    NETWORK_SCORE_COARSE,
    Clique,
    NetworkCoding,
    candidates,
    clique_penalty,
    fit_network,
    network_codings,
)
from opendp_wasserstein.tables.pairs import (
    PATTERN_SCALE,
    PairCoding,
    pair_count_scale,
    pair_score_sensitivity,
    pair_tables,
    pattern_codes,
    pattern_columns,
    zcdp_selection,
)
from opendp_wasserstein.tables.pipeline import (
    PAIR_SELECT_SHARE,
    BlockModel,
    StructuredOptions,
    block_source,
    copula_allowed,
    copula_runtime_scale,
    first_look_share,
    fit_copula,
    fit_marginals,
    fit_pairs,
    joint_kind,
    make_structured_synthesis,
    network_model,
    pair_model,
    quality_info,
    release_blocks,
)
from opendp_wasserstein.tables.quality import agreement_from_counts
from opendp_wasserstein.tables.release import check_derived
from opendp_wasserstein.tables.schema import FloatColumn, Schema

__all__ = ["TableBlock", "table_blocks", "synthesize_table_on_dask", "network_triples"]

#: a block holds consecutive row groups of one file until it has at least this many rows (a
#: file of ``k`` row groups of at least this many rows gives ``k`` blocks), as for arrays
TABLE_ROWS_PER_BLOCK = PARQUET_ROWS_PER_BLOCK


@dataclass(frozen=True)
class TableBlock:
    """Row groups ``row_groups`` of the Parquet file ``path``, read under the schema of ``enc``
    (typed record by record, as :func:`~opendp_wasserstein.tables.io.read_file` reads a file)
    and encoded: ``block()`` is the ``(rows, D)`` float64 array of encoded points (Fortran
    order: every count reads whole columns)."""

    path: str
    row_groups: tuple[int, ...]
    enc: TableEncoding

    def table(self) -> Any:
        names = list(self.enc.schema.names)
        t = pq.ParquetFile(self.path).read_row_groups(list(self.row_groups), columns=names)
        return typed_by_schema(t, self.enc.schema)

    def __call__(self) -> np.ndarray:
        cols, _ = read_table(self.table(), self.enc.schema, list(self.enc.schema.names))
        return self.enc.encode(cols, order="F")  # the counts read it column by column


def table_blocks(
    path: str, enc: TableEncoding, rows_per_block: int = TABLE_ROWS_PER_BLOCK
) -> tuple[list[TableBlock], int]:
    """The blocks of a Parquet source and its public row count (the footers)."""
    blocks: list[TableBlock] = []
    n = 0
    for f in parquet_files(path):
        meta = pq.ParquetFile(f).metadata
        group: list[int] = []
        rows = 0
        for g in range(meta.num_row_groups):
            group.append(g)
            rows += meta.row_group(g).num_rows
            if rows >= rows_per_block:
                blocks.append(TableBlock(f, tuple(group), enc))
                n, group, rows = n + rows, [], 0
        if group:
            blocks.append(TableBlock(f, tuple(group), enc))
            n += rows
    return blocks, n


def marginal_counts_task(
    block: TableBlock, trees: Sequence[tuple[ColumnPlan, int, int]]
) -> tuple[int, list[np.ndarray]]:
    """Rows and the first look's exact level counts of one block (``trees``: per count, the
    column, its leaves and the level): the function of
    :func:`~opendp_wasserstein.tables.marginals.make_level_counts` on the block's rows
    (``bincount`` of :func:`~opendp_wasserstein.tables.marginals.level_cells`, a test checks them
    equal), which builds no OpenDP object on the worker, so it needs no feature there and leaves
    the process's features as they were.  Each column's leaves are counted once (one
    ``bincount`` per column): a level ``j`` node is ``BRANCHING^j`` consecutive leaves
    (the last group shorter), so its count is their sum, and the missing count is the leaves'."""
    x = block()
    x = validate_data(x, x.shape[1], None, nan=False)
    leaf_counts: dict[tuple[int, int], np.ndarray] = {}
    out = []
    for p, leaves, j in trees:  # the columns' levels (public)
        key = (id(p), leaves)
        if key not in leaf_counts:
            cells, width = level_cells(p, leaves, 0)
            leaf_counts[key] = np.bincount(cells(x), minlength=width).astype(np.int64)
        base = leaf_counts[key]
        if j == 0:
            out.append(base)
            continue
        _, width = level_cells(p, leaves, j)
        size = tree_levels(leaves, p.kind)[0]  # the leaves; a missing count follows them
        level = np.zeros(width, dtype=np.int64)
        level[: -(-size // BRANCHING**j)] = np.add.reduceat(
            base[:size], np.arange(0, size, BRANCHING**j)
        )
        if width > -(-size // BRANCHING**j):
            level[-1] = base[size]
        out.append(level)
    return int(x.shape[0]), out


def _pair_codes(coding: PairCoding, x: np.ndarray, c: int) -> np.ndarray:
    """:meth:`~opendp_wasserstein.tables.pairs.PairCoding.codes` (``x``'s codes of column
    ``c``) with the bin of each point found by
    :func:`~opendp_wasserstein.tables.encoding.right_index` instead of a binary search per point
    (the same codes: a test checks the tasks' tables against ``make_pair_counts``)."""
    p = coding.plans[c]
    v = x[:, p.value_axis]
    e = coding.edges[c]
    if e is None:
        b = category_boundaries(p.cells)
        return np.clip(right_index(b, v) - 1, 0, p.cells - 1)
    code = np.clip(right_index(e, v) - 1, 0, len(e) - 2)
    if p.missing_axis is not None:
        code = np.where(x[:, p.axes[p.missing_axis]] >= 0.5, len(e) - 1, code)
    return code


def pair_counts_task(
    block: TableBlock, coding: PairCoding, pairs: Sequence[tuple[int, int]]
) -> list[np.ndarray]:
    """The exact 2-way code tables of ``pairs`` on one block: the function of
    :func:`~opendp_wasserstein.tables.pairs.make_pair_counts` (``bincount(code_i * k_j +
    code_j)``, a test checks them equal) with every column's codes computed once, not once per
    pair (``k - 1`` times fewer searches)."""
    x = block()
    codes = {c: _pair_codes(coding, x, c) for c in sorted({c for p in pairs for c in p})}
    out = []
    for i, j in pairs:  # pairs of columns (public)
        ki, kj = coding.sizes[i], coding.sizes[j]
        out.append(np.bincount(codes[i] * kj + codes[j], minlength=ki * kj).astype(np.int64))
    cols = pattern_columns(coding)
    if cols:  # the missingness pattern counts (make_pattern_counts' function), last
        out.append(np.bincount(pattern_codes(coding, x), minlength=2 ** len(cols)).astype(np.int64))
    return out


def copula_counts_task(block: TableBlock, splits: CopulaSplits) -> np.ndarray:
    """The copula's ``P`` exact pair counts on one block (the rows present and below both
    splits): :func:`~opendp_wasserstein.tables.copula.pair_counts`, the function of
    :func:`~opendp_wasserstein.tables.copula.make_split_counts`, on the block's rows; the sum
    over the blocks is the whole table's (each row in one block)."""
    x = block()
    x = validate_data(x, x.shape[1], None, nan=False)
    return np.asarray(pair_counts(x, splits), dtype=np.int64)


def network_triples(coding: NetworkCoding) -> list[tuple[int, int, int]]:
    """The column triples ``a < b < c`` whose coarse table has at most ``max_cells`` cells
    (public: the codes' sizes): every 3-way clique any round can choose has its columns among
    them (:func:`~opendp_wasserstein.tables.network.candidates`; a table's cells do not depend
    on the order of its columns)."""
    k = len(coding.fine.plans)
    sizes = coding.coarse.sizes
    return [
        (a, b, c)
        for a in range(k)
        for b in range(a + 1, k)
        for c in range(b + 1, k)
        if sizes[a] * sizes[b] * sizes[c] <= coding.max_cells
    ]


def network_counts_task(block: TableBlock, coding: NetworkCoding) -> list[np.ndarray]:
    """The exact statistics of the network on one block, in one pass (every column's fine and
    coarse codes computed once): the fine 2-way tables of every pair ``i < j``, the coarse
    2-way tables of every pair, the coarse 3-way tables of :func:`network_triples` (row-major
    over the sorted columns: the function of
    :func:`~opendp_wasserstein.tables.network.make_clique_counts` for that order, a test checks
    them equal) and, when :func:`~opendp_wasserstein.tables.pairs.pattern_columns` of the fine
    codes is not empty, the missingness pattern counts, last.  Every score and every table the
    rounds and the counts read is a transpose of one of these (:func:`_oriented`)."""
    x = block()
    k = len(coding.fine.plans)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    out = []
    for cd in (coding.fine, coding.coarse):  # the two codings (public)
        codes = [cd.codes(x, c) for c in range(k)]
        for i, j in pairs:  # pairs of columns (public)
            ki, kj = cd.sizes[i], cd.sizes[j]
            out.append(np.bincount(codes[i] * kj + codes[j], minlength=ki * kj).astype(np.int64))
    s = coding.coarse.sizes
    for a, b, c in network_triples(coding):  # triples of columns (public)
        cell = (codes[a] * s[b] + codes[b]) * s[c] + codes[c]
        out.append(np.bincount(cell, minlength=s[a] * s[b] * s[c]).astype(np.int64))
    if pattern_columns(coding.fine):
        cols = len(pattern_columns(coding.fine))
        out.append(np.bincount(pattern_codes(coding.fine, x), minlength=2**cols).astype(np.int64))
    return out


def _oriented(
    coding: NetworkCoding,
    stats: dict[tuple[str, tuple[int, ...]], np.ndarray],
    level: int,
    cols: Sequence[int],
) -> np.ndarray:
    """The exact count table of ``cols`` (parents, then the child) at ``coding.level(level)``,
    row-major over ``cols`` as :func:`~opendp_wasserstein.tables.network.make_clique_counts`
    gives it: a transpose of the summed table of the sorted columns."""
    cd = coding.level(level)
    key = tuple(sorted(cols))
    name = "fine" if level < 2 else "coarse"
    t = stats[(name, key)].reshape([cd.sizes[c] for c in key])
    return np.ascontiguousarray(t.transpose([key.index(c) for c in cols])).reshape(-1)


def _network(
    coding: NetworkCoding,
    stats: dict[tuple[str, tuple[int, ...]], np.ndarray],
    n: int,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
    pattern: np.ndarray | None = None,
) -> tuple[list[Clique], list[np.ndarray], np.ndarray | None]:
    """:func:`~opendp_wasserstein.tables.network.make_network`'s release from the summed exact
    tables (``stats``, keyed by coding and sorted columns) and pattern counts: the same
    candidates, scores (integers, so the float scores equal the in-memory ones bit for bit),
    selections and noise, in the same order and streams (``noise="gaussian"``: OpenDP's zCDP
    noisy max, the discrete Gaussian)."""
    k = len(coding.fine.plans)
    rounds = k - 1
    gauss = noise == "gaussian"
    eps_round = round_down(Fraction(epsilon_select) / rounds)
    sel_sens = round_up(pair_score_sensitivity(n))
    if gauss:
        _, sel_scale = zcdp_selection(1, eps_round, sel_sens)
    else:
        sel_scale = round_up(2 * Fraction(sel_sens) / Fraction(eps_round))
    count_scale = pair_count_scale(pair_tables(coding.fine, noise), epsilon_counts, noise)
    src = as_random_source()
    sel_rng, noise_rng = src.derive(SELECTION_STREAM + 48), src.derive(NOISE_STREAM + 48)
    inside: list[int] = []
    chosen: list[Clique] = []
    for _ in range(rounds):  # k - 1 rounds (public)
        cand = candidates(coding, inside, k)
        coarse = NETWORK_SCORE_COARSE and bool(inside)
        scores = []
        for q in cand:  # candidates (public)
            lv = 2 if coarse else min(2, len(q.parents))
            cd = coding.level(lv)
            kp = int(np.prod([cd.sizes[c] for c in q.parents]))
            kc = cd.sizes[q.child]
            raw = _oriented(coding, stats, lv, q.columns)
            t = raw.astype(np.float64)
            m = raw.reshape(kp, kc)
            a = m.sum(axis=1).astype(np.float64)
            b = m.sum(axis=0).astype(np.float64)
            pen = 0.0 if gauss else clique_penalty(coding, q, count_scale, noise)
            scores.append(float(np.abs(t - np.outer(a, b).reshape(-1) / n).sum()) - pen)
        choice = _select(scores, src, gauss, sel_scale, eps_round, sel_sens, sel_rng)
        q = cand[choice]
        chosen.append(q)
        inside += [c for c in q.columns if c not in inside]
    rng = None if src.secure else noise_rng
    tables = []
    for q in chosen:
        cd = coding.level(len(q.parents))
        raw = _oriented(coding, stats, len(q.parents), q.columns)
        t = _laplace(raw, count_scale, rng, noise)
        tables.append(t.reshape([cd.sizes[c] for c in q.columns]))
    noisy = None
    if pattern_columns(coding.fine):
        if pattern is None:
            raise ValueError("the coding has a missingness pattern: give its exact counts")
        noisy = _laplace(pattern, PATTERN_SCALE * count_scale, rng, noise)
    names = [p.name for p in coding.fine.plans]
    runtime.record(
        {
            "network_cliques": [
                (names[q.child], tuple(names[p] for p in q.parents)) for q in chosen
            ],
            "network_scale": float(count_scale),
            "network_pattern": [coding.fine.plans[c].name for c in pattern_columns(coding.fine)],
        }
    )
    return chosen, tables, noisy


def _laplace(raw: np.ndarray, scale: float, rng: Any, noise: str = "laplace") -> np.ndarray:
    """The discrete Laplace (``noise="gaussian"``: discrete Gaussian) noise of a count vector:
    OpenDP's on the CSPRNG (``make_laplace`` / ``make_gaussian``, the laws of the in-memory
    ``then_laplace`` / ``then_gaussian``), or (seeded) the in-memory release's draw from
    ``rng``."""
    gauss = noise == "gaussian"
    if rng is None:
        dom = dp.vector_domain(dp.atom_domain(T="i64"), size=len(raw))
        meas = (
            dp.m.make_gaussian(dom, dp.l2_distance(T=float), scale)
            if gauss
            else dp.m.make_laplace(dom, dp.l1_distance(T="i64"), scale)
        )
        return np.asarray(meas(raw.tolist()), dtype=np.int64)
    sampler = sample_discrete_gaussian if gauss else sample_discrete_laplace
    return raw + sampler(np.full(len(raw), float(scale)), rng, "fast")


def _noisy_marginals(
    raw: Sequence[np.ndarray], scales: Sequence[float], noise: str = "laplace"
) -> list[list[int]]:
    """The first look's release from its exact counts (``seeded_laplace`` or ``seeded_gaussian``
    of each count, tag by tag, as :func:`~opendp_wasserstein.tables.marginals.make_table_marginals`
    composes them)."""
    src = as_random_source()
    out = []
    for tag, (r, s) in enumerate(zip(raw, scales, strict=True)):
        rng = None if src.secure else src.derive(NOISE_STREAM + 64).derive(tag)
        out.append(_laplace(r, s, rng, noise).tolist())
    return out


def _find(parent: list[int], a: int) -> int:
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


def _select(
    scores: list[float],
    src: Any,
    gauss: bool,
    sel_scale: Any,
    eps_round: Any,
    sel_sens: Any,
    sel_rng: Any,
) -> int:
    """One round's choice among the candidates' ``scores``, as in memory: OpenDP's zCDP noisy
    max at ``sel_scale`` (``gauss``) or exponential selection at ``eps_round`` on the CSPRNG,
    else (reproducible runs, not private) the same law from the seeded ``sel_rng``."""
    vec = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=len(scores))
    if src.secure and gauss:
        g = dp.m.make_noisy_max(
            vec, dp.linf_distance(T=float), dp.zero_concentrated_divergence(), sel_scale, False
        )
        return int(g(scores))
    if src.secure:
        v = make_exponential_selection(
            vec, dp.linf_distance(T=float), eps_round, sel_sens, negate=False
        )
        return int(v(scores))
    return softmax_choice(np.asarray(scores) / float(sel_scale), sel_rng)


def _pair_tree(
    coding: PairCoding,
    tables: dict[tuple[int, int], np.ndarray],
    n: int,
    epsilon_select: float,
    epsilon_counts: float,
    noise: str = "laplace",
    pattern: np.ndarray | None = None,
) -> tuple[list[tuple[int, int]], list[np.ndarray], np.ndarray | None]:
    """:func:`~opendp_wasserstein.tables.pairs.make_pair_tree`'s release from the exact 2-way
    tables of every pair (and the exact missingness pattern counts, ``pattern``, when
    :func:`~opendp_wasserstein.tables.pairs.pattern_columns` is not empty): the same scores,
    selections and noise, in the same order
    (``noise="gaussian"``: the budgets are ``rho``, the selections OpenDP's zCDP noisy max at
    the in-memory scale, the tables' noise discrete Gaussian)."""
    k = len(coding.plans)
    rounds = k - 1
    gauss = noise == "gaussian"
    eps_round = round_down(Fraction(epsilon_select) / rounds)
    sel_sens = round_up(pair_score_sensitivity(n))
    all_pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    if gauss:
        _, sel_scale = zcdp_selection(len(all_pairs), eps_round, sel_sens)
    else:
        sel_scale = round_up(2 * Fraction(sel_sens) / Fraction(eps_round))
    count_scale = pair_count_scale(pair_tables(coding, noise), epsilon_counts, noise)
    ones: dict[int, np.ndarray] = {}
    for (i, j), t in tables.items():  # a column's 1-way counts: the row sums of its tables
        m = t.reshape(coding.sizes[i], coding.sizes[j])
        ones.setdefault(i, m.sum(axis=1).astype(np.float64))
        ones.setdefault(j, m.sum(axis=0).astype(np.float64))
    src = as_random_source()
    sel_rng, noise_rng = src.derive(SELECTION_STREAM + 32), src.derive(NOISE_STREAM + 32)
    parent = list(range(k))
    edges: list[tuple[int, int]] = []
    for _ in range(rounds):  # k - 1 rounds (public)
        cand = [(i, j) for i, j in all_pairs if _find(parent, i) != _find(parent, j)]
        scores = [
            float(np.abs(tables[p] - np.outer(ones[p[0]], ones[p[1]]).reshape(-1) / n).sum())
            for p in cand
        ]
        a = _select(scores, src, gauss, sel_scale, eps_round, sel_sens, sel_rng)
        i, j = cand[a]
        edges.append((i, j))
        parent[_find(parent, i)] = _find(parent, j)
    out = []
    for i, j in edges:
        t = _laplace(tables[(i, j)], count_scale, None if src.secure else noise_rng, noise)
        out.append(t.reshape(coding.sizes[i], coding.sizes[j]))
    noisy = None
    if pattern_columns(coding):
        if pattern is None:
            raise ValueError("the coding has a missingness pattern: give its exact counts")
        scale = PATTERN_SCALE * count_scale  # the in-memory pattern scale
        noisy = _laplace(pattern, scale, None if src.secure else noise_rng, noise)
    runtime.record(
        {
            "pair_edges": [(coding.plans[i].name, coding.plans[j].name) for i, j in edges],
            "pair_scale": float(count_scale),
            "pair_pattern": [coding.plans[c].name for c in pattern_columns(coding)],
        }
    )
    return edges, out, noisy


def _frame_info(block: TableBlock) -> FrameInfo:
    """The output's frame info from the source's column types (public: the schema and the
    dtypes' kinds), as an in-memory read of the same file gives it."""
    names = list(block.enc.schema.names)
    empty = pq.ParquetFile(block.path).schema_arrow.empty_table().select(names)
    _, info = read_table(typed_by_schema(empty, block.enc.schema), block.enc.schema, names)
    return info


def block_release_task(
    model: BlockModel,
    m: int,
    rng: Any,
    writer: PartWriter,
    first: int,
    parts: int,
    schema: Schema,
    info: FrameInfo,
) -> tuple[int, list[np.ndarray] | None]:
    """One output block on a worker: ``m`` rows drawn from ``model`` with the block's stream
    ``rng`` (:meth:`~opendp_wasserstein.tables.pipeline.BlockModel.draw`: sampled, scored,
    calibrated), decoded and written as ``parts`` Parquet parts of consecutive rows numbered
    from ``first`` (each part decoded and converted on its own); its rows and the quality
    figure's counts."""
    points, counts = model.draw(m, rng)
    cuts = np.linspace(0, m, parts + 1).astype(np.int64)
    # dictionary pages for the columns that repeat values (public: the schema's types); a
    # float column's values are mostly distinct, and its dictionary would be built and dropped
    repeat = [n for n in schema.names if not isinstance(schema[n], FloatColumn)]
    for q in range(parts):  # the block's parts (public)
        piece = write_table(model.enc.decode(points[cuts[q] : cuts[q + 1]]), schema, info)
        final = writer.path(first + q)
        tmp = f"{final}.{uuid.uuid4().hex}.tmp"  # a retried task never shares a name
        pq.write_table(piece, tmp, use_dictionary=repeat)
        os.replace(tmp, final)
    return m, counts


def block_parts(parts: int, blocks: int) -> list[int]:
    """The output parts of each block: ``parts`` spread evenly over the blocks, at least one
    each.

    >>> block_parts(4, 1), block_parts(5, 2), block_parts(1, 3)
    ([4], [3, 2], [1, 1, 1])
    """
    total = max(int(parts), int(blocks))
    return [total // blocks + (1 if b < total % blocks else 0) for b in range(blocks)]


def synthesize_table_on_dask(
    source: str | os.PathLike[str],
    epsilon: float,
    out: str | os.PathLike[str],
    schema: Schema,
    client: Any = None,
    *,
    columns: Sequence[str] | None = None,
    options: StructuredOptions | None = None,
    parts: int | None = None,
    overwrite: bool = False,
    accept_data_derived_schema: bool = False,
    rows_per_block: int = TABLE_ROWS_PER_BLOCK,
    progress: bool = False,
    delta: float | None = None,
) -> tuple[int, int, SynthesisReport]:
    """The structured release of the Parquet table ``source`` on ``client``'s cluster (module
    docstring; default a 2-worker ``LocalCluster`` for the call); ``(rows, parts, report)``, the
    report as :func:`~opendp_wasserstein.tables.synthesize_table` gives it (``seconds``: the
    release, from the first task to the last part written).  With ``delta``: the in-memory
    release's zCDP variant (discrete Gaussian noise at ``rho = rho_for_approx_dp(epsilon,
    delta)``), certified by ``make_structured_synthesis(..., delta=delta)``."""
    if not isinstance(schema, Schema):
        raise TypeError(
            "schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)"
        )
    opts = StructuredOptions() if options is None else options
    if not isinstance(opts, StructuredOptions):
        raise TypeError("options must be a StructuredOptions")
    eps = check_epsilon(epsilon)
    noise = "laplace" if delta is None else "gaussian"
    # the budget of the parts: epsilon, or the zCDP rho that converts to at most epsilon
    budget = eps if delta is None else rho_for_approx_dp(eps, check_delta(delta))
    files = parquet_files(os.fspath(source))
    header = list(pq.ParquetFile(files[0]).schema_arrow.names)
    names = list(columns) if columns is not None else header
    unknown = [c for c in names if c not in schema]
    if unknown:
        raise ValueError(f"columns {unknown} are not in the schema")
    absent = [c for c in names if c not in header]
    if absent:
        raise ValueError(f"columns {absent} are not columns of the source")
    if columns is None:
        why, _ = schema.header_mismatch(header, "column name(s)", "(not shown)")
        if why:
            raise ValueError(
                f"the source's columns do not match the schema: {'; '.join(why)} "
                "(pass columns=... to release a subset)"
            )
    sub = schema.select(names)
    check_derived(sub, accept_data_derived_schema)
    enc = TableEncoding(sub)
    blocks, n = table_blocks(os.fspath(source), enc, rows_per_block)
    if n < 1:
        raise ValueError("the table must have at least one row (the size is public)")
    plans = column_plans(enc)
    kind_joint = joint_kind(opts, n, eps, len(plans), noise)
    if kind_joint == "tree":
        raise ValueError(
            f"joint={kind_joint!r} has no Dask plan: use synthesize_table in "
            "memory, or joint='auto'/'pairs'/'network'/'copula'/'never'"
        )
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=n, T=float, nan=False)
    met = dp.change_one_distance()
    meas = make_structured_synthesis(dom, met, enc, eps, opts, delta)  # the certificate
    certified_delta = None
    if delta is None:
        certified = meas.map(1)
    else:
        certified, certified_delta = meas.map(1)
    # the in-memory release's parameters, from the same public values by the same functions
    allowed = copula_allowed(plans, opts) if kind_joint == "copula" else ()
    joint = kind_joint != "independent" and (kind_joint != "copula" or len(allowed) >= 2)
    share = first_look_share(opts, n, eps, len(plans), noise)
    target = round_down(Fraction(budget) * share) if joint else budget
    levels = MAX_LEVELS if opts.marginal_levels is None else opts.marginal_levels
    marg_eps, m_marg = fit_marginals(dom, met, enc, target, 1, levels, noise)
    marg_map = m_marg.map(1)
    trees = column_trees(enc, n, marg_eps, levels, noise)
    counts = [(p, leaves, j) for p, leaves, lv, _ in trees for j in range(len(lv))]
    scales = [s for _, _, _, sc in trees for s in sc]
    budgets = None
    copula: tuple[tuple[int, ...], float] | None = None
    if kind_joint == "copula":  # the in-memory fit (zCDP with delta: the budget is a rho)
        cop_scale, _ = fit_copula(dom, met, budget, marg_map, 1, plans, allowed, noise)
        copula = (allowed, cop_scale)
    elif kind_joint == "network":  # the in-memory fit: the pair tree's split, the network's map
        e_sel, e_cnt, _ = fit_network(dom, met, enc, budget, marg_map, 1, PAIR_SELECT_SHARE, noise)
        budgets = (e_sel, e_cnt, 0)
    elif joint:
        e_sel, e_cnt, bins, _ = fit_pairs(dom, met, enc, n, budget, marg_map, 1, noise)
        budgets = (e_sel, e_cnt, bins)
    info_frame = _frame_info(blocks[0])
    sink = ParquetSink(out, names, overwrite)
    try:
        with _client(client) as c:
            drv = Driver(c, blocks, progress)
            try:
                workers = drv.workers()
                t0 = time.perf_counter()
                info, model, rng = _release(
                    drv,
                    enc,
                    n,
                    opts,
                    kind_joint,
                    counts,
                    scales,
                    marg_eps,
                    marg_map,
                    levels,
                    budgets,
                    noise,
                    copula,
                )
                sizes = release_blocks(n, opts.block_rows)
                per = block_parts(parts or public_parts(n, len(blocks), workers), len(sizes))
                firsts = np.concatenate(([0], np.cumsum(per)[:-1])).tolist()
                shared = c.scatter(model, broadcast=True)
                futures = [
                    c.submit(
                        block_release_task,
                        shared,
                        m,
                        block_source(rng, b),
                        sink.writer,
                        firsts[b],
                        per[b],
                        sub,
                        info_frame,
                        pure=False,
                    )
                    for b, m in enumerate(sizes)
                ]
                summed: list[np.ndarray] | None = None
                for _, counts in drv.run(futures, "rows"):
                    if counts is not None:
                        summed = (
                            counts
                            if summed is None
                            else [a + v for a, v in zip(summed, counts, strict=True)]
                        )
                if summed is not None:
                    assert model.coding is not None  # only the coded releases count
                    info |= quality_info(
                        agreement_from_counts(summed, model.marginals, model.coding.edges)
                    )
                written = sum(per)
                seconds = time.perf_counter() - t0
            finally:
                drv.close()
        sink.commit()
    except BaseException:
        sink.abort()
        raise
    runtime.record(info)
    if info.get("quality_poor"):
        warnings.warn(str(info["quality_warning"]), UserWarning, stacklevel=3)
    total = round_up(Fraction(certified) + Fraction(schema.epsilon_spent))
    details = dict(info)
    if delta is not None:
        details["rho"] = budget
    details |= {
        "epsilon_release": certified,
        "epsilon_schema": schema.epsilon_spent,
        "axes": [f"{a.column}:{a.role}" for a in enc.axes],
        "split_order": (
            "tree of 2-way marginals"
            if kind_joint == "pairs"
            else "network of 2- and 3-way tables"
            if kind_joint == "network"
            else "gaussian copula of pair counts"
            if kind_joint == "copula" and details.get("copula_pairs")
            else "independent columns"
        ),
        "parts": written,
    }
    report = SynthesisReport(
        mechanism="structured",
        epsilon=total,
        delta=certified_delta,
        depth=int(details.pop("depth", 0)),
        scales=tuple(details.pop("scales", ())),
        visited_nodes=int(details.pop("visited_nodes", 0)),
        size=int(n),
        seconds=seconds,
        details=details,
    )
    return int(n), written, report


def _release(
    drv: Driver,
    enc: TableEncoding,
    n: int,
    opts: StructuredOptions,
    kind_joint: str,
    counts: Sequence[tuple[ColumnPlan, int, int]],
    scales: Sequence[float],
    marg_eps: float,
    marg_map: Any,
    levels: int,
    pair_budgets: tuple[float, float, int] | None,
    noise: str = "laplace",
    copula: tuple[tuple[int, ...], float] | None = None,
) -> tuple[dict[str, Any], BlockModel, Any]:
    """The release's statistics on the cluster, its noise and the model built from them on the
    driver: the in-memory function of :func:`make_structured_synthesis` step by step up to the
    rows; the model, and the stream the blocks derive theirs from (``copula``: the columns that
    may take part and the template's scale, :func:`_copula_release`)."""
    c = drv.client
    futures = [c.submit(marginal_counts_task, b, counts, pure=False) for b in drv.blocks]
    rows, raw = 0, None
    for r, vecs in drv.run(futures, "first look"):
        rows += r
        raw = vecs if raw is None else [a + v for a, v in zip(raw, vecs, strict=True)]
    if rows != n or raw is None:
        raise ValueError(f"data must have exactly {n} rows (the Parquet footers' count)")
    release = _noisy_marginals(raw, scales, noise)
    marginals = TableMarginals.from_release(enc, release, n, marg_eps, levels, noise)
    rng = as_random_source().derive(PLACEMENT_STREAM + 16)
    # the copula with fewer than two columns taking part counts nothing (as in memory)
    joint = kind_joint != "independent" and (copula is None or len(copula[0]) >= 2)
    info: dict[str, Any] = {"structured": True, "joint": joint, "joint_kind": kind_joint}
    if noise == "gaussian":
        info |= {"noise": "gaussian", "rho_marginals": float(marg_map)}
    else:
        info["epsilon_marginals"] = float(marg_map)
    if copula is not None:
        return info, _copula_release(drv, enc, n, opts, marginals, copula, info, noise), rng
    if pair_budgets is None:
        info |= {"depth": 0, "visited_nodes": 0, "scales": ()}
        return info, BlockModel(enc, marginals, opts), rng
    e_sel, e_cnt, bins = pair_budgets
    if kind_joint == "network":
        return _network_release(
            drv, enc, n, opts, marginals, marg_eps, levels, e_sel, e_cnt, info, noise
        ) + (rng,)
    with runtime.diagnostics() as inner:
        coding = PairCoding.from_marginals(marginals, bins, enc)
        k = len(coding.plans)
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        futures = [c.submit(pair_counts_task, b, coding, pairs, pure=False) for b in drv.blocks]
        sums: list[np.ndarray] | None = None
        for vecs in drv.run(futures, "pairs"):
            sums = vecs if sums is None else [a + v for a, v in zip(sums, vecs, strict=True)]
        if sums is None:  # pragma: no cover - at least one block (n >= 1)
            raise ValueError("the source has no blocks")
        pattern = sums[len(pairs)] if pattern_columns(coding) else None
        edges, tables, noisy = _pair_tree(
            coding,
            dict(zip(pairs, sums[: len(pairs)], strict=True)),
            n,
            e_sel,
            e_cnt,
            noise,
            pattern,
        )
        model = pair_model(
            enc, n, marg_eps, levels, e_cnt, coding, marginals, edges, tables, opts, noise, noisy
        )
        info |= {"depth": 0, "visited_nodes": 0, "scales": (), "pair_bins": bins}
    for r in inner:
        info |= r
    return info, model, rng


def _copula_release(
    drv: Driver,
    enc: TableEncoding,
    n: int,
    opts: StructuredOptions,
    marginals: TableMarginals,
    copula: tuple[tuple[int, ...], float],
    info: dict[str, Any],
    noise: str = "laplace",
) -> BlockModel:
    """The copula's statistics on the cluster (:func:`copula_counts_task` under the public
    splits of the first look), their discrete Laplace (``noise="gaussian"``: discrete Gaussian)
    on the driver (the in-memory ``make_copula_counts``: OpenDP's on the CSPRNG, or seeded the
    stream ``COPULA_NOISE_TAG``),
    the latent correlations there and the in-memory model (the independent join's Halton points
    correlated through them).  With fewer than two columns taking part nothing is counted."""
    allowed, cop_scale = copula
    splits = copula_splits(marginals, allowed)
    corr = None
    if splits.pairs and len(allowed) >= 2:
        futures = [drv.client.submit(copula_counts_task, b, splits, pure=False) for b in drv.blocks]
        raw: np.ndarray | None = None
        for vec in drv.run(futures, "copula"):
            raw = vec if raw is None else raw + vec
        if raw is None:  # pragma: no cover - at least one block (n >= 1)
            raise ValueError("the source has no blocks")
        most = len(allowed) * (len(allowed) - 1) // 2
        scale = copula_runtime_scale(splits.pairs, most, cop_scale, noise)
        src = as_random_source()
        rng = None if src.secure else src.derive(NOISE_STREAM + 64).derive(COPULA_NOISE_TAG)
        noisy = _laplace(raw, scale, rng, noise)
        corr = latent_correlations(noisy, splits, n, scale, noise=noise)
    info |= {"depth": 0, "visited_nodes": 0, "scales": (), "copula_pairs": splits.pairs}
    return BlockModel(enc, marginals, opts, copula_axes=splits.axes, copula_corr=corr)


def _network_release(
    drv: Driver,
    enc: TableEncoding,
    n: int,
    opts: StructuredOptions,
    marginals: TableMarginals,
    marg_eps: float,
    levels: int,
    e_sel: float,
    e_cnt: float,
    info: dict[str, Any],
    noise: str = "laplace",
) -> tuple[dict[str, Any], BlockModel]:
    """The network's statistics on the cluster (one pass: :func:`network_counts_task`), its
    rounds and noise on the driver (:func:`_network`) and the in-memory
    :func:`~opendp_wasserstein.tables.pipeline.network_model` on that release (the codes
    rebuilt there by the same public function of the first look)."""
    with runtime.diagnostics() as inner:
        coding = network_codings(marginals, n, e_cnt, noise, enc)
        k = len(coding.fine.plans)
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        triples = network_triples(coding)
        futures = [
            drv.client.submit(network_counts_task, b, coding, pure=False) for b in drv.blocks
        ]
        sums: list[np.ndarray] | None = None
        for vecs in drv.run(futures, "network"):
            sums = vecs if sums is None else [a + v for a, v in zip(sums, vecs, strict=True)]
        if sums is None:  # pragma: no cover - at least one block (n >= 1)
            raise ValueError("the source has no blocks")
        keys: list[tuple[str, tuple[int, ...]]] = [("fine", p) for p in pairs]
        keys += [("coarse", p) for p in pairs] + [("coarse", t) for t in triples]
        stats = dict(zip(keys, sums[: len(keys)], strict=True))
        pattern = sums[len(keys)] if pattern_columns(coding.fine) else None
        released = _network(coding, stats, n, e_sel, e_cnt, noise, pattern)
        dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=n, T=float, nan=False)
        model = network_model(
            dom,
            dp.change_one_distance(),
            lambda _: released,  # the compositor's answer: the release computed above
            enc,
            marginals,
            n,
            marg_eps,
            levels,
            e_sel,
            e_cnt,
            opts,
            noise,
        )
        info |= {"depth": 0, "visited_nodes": 0, "scales": ()}
    for r in inner:
        info |= r
    return info, model
