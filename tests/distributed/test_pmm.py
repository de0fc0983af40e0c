"""The PMM family on Dask (:mod:`opendp_wasserstein.distributed._pmm`): the distributed release
is the in-memory release of the same measurement.

With a fixed key (inside ``runtime.reproducible``) both paths must give the same rows; the law
is checked once more against the exact law of a tiny case through the inline client (the same
tasks run in this process), and the real 2-worker cluster runs every mechanism once.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from opendp_wasserstein.core.plan import plan_of
from opendp_wasserstein.distributed import release_on_dask
from opendp_wasserstein.distributed._pmm import Driver, part_bounds, run_pmm, split_level
from opendp_wasserstein.distributed._source import blocks_of
from opendp_wasserstein.hierarchy.split_order import SplitOrder
from opendp_wasserstein.measurements import make_adaptive_pruned_pmm, make_pmm, make_pruned_pmm
from opendp_wasserstein.runtime import diagnostics, reproducible
from opendp_wasserstein.schedules.pure import paper_schedule
from tests.distributed.conftest import sorted_rows
from tests.measurements.exact_pmm import counts_of, leaf_law

P_MIN = 1e-4


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(size=(n, d)) ** 2  # test data, clustered near 0
    x[:5] = x[5:10]  # duplicates
    return x


def both(meas, x, client, tmp_path, seed=11, **kw):  # type: ignore[no-untyped-def]
    with reproducible(seed), diagnostics() as a:
        y = meas(x)
    with reproducible(seed), diagnostics() as b:
        rel = release_on_dask(meas, x, tmp_path / f"out{seed}", client=client, **kw)
    return y, rel.read(), a[-1], b[-1]


CASES = {
    "pruned-center": lambda dom, met: make_pruned_pmm(dom, met, 14, paper_schedule(3, 1.0, 14)),
    "pruned-uniform": lambda dom, met: make_pruned_pmm(
        dom, met, 14, paper_schedule(3, 1.0, 14), placement="uniform"
    ),
    "pruned-shallow": lambda dom, met: make_pruned_pmm(dom, met, 4, paper_schedule(3, 1.0, 4)),
    "pmm": lambda dom, met: make_pmm(dom, met, 9, paper_schedule(3, 1.0, 9), placement="uniform"),
    "adaptive": lambda dom, met: make_adaptive_pruned_pmm(
        dom, met, 0.25, 0.75, placement="uniform"
    ),
    # a public split order other than the cyclic one (coordinate 2 split first, twice as often)
    "pruned-axes": lambda dom, met: make_pruned_pmm(
        dom, met, 14, paper_schedule(3, 1.0, 14), placement="uniform", axes=[2, 2, 0, 1] * 4
    ),
    "pmm-axes": lambda dom, met: make_pmm(
        dom, met, 8, paper_schedule(3, 1.0, 8), axes=[1, 0, 2, 2] * 2
    ),
    "adaptive-order": lambda dom, met: make_adaptive_pruned_pmm(
        dom, met, 0.25, 0.75, split_order=SplitOrder.discrete_first(cells=(0, 4, 0), max_splits=20)
    ),
    # the post-processing options: the paper's rule with a threshold, least squares (two passes)
    "pruned-threshold": lambda dom, met: make_pruned_pmm(
        dom, met, 14, paper_schedule(3, 1.0, 14), threshold=1.5
    ),
    "pruned-lsq": lambda dom, met: make_pruned_pmm(
        dom, met, 14, paper_schedule(3, 1.0, 14), placement="uniform", consistency="least_squares"
    ),
    "pruned-lsq-threshold": lambda dom, met: make_pruned_pmm(
        dom, met, 12, paper_schedule(3, 0.5, 12), consistency="least_squares", threshold=2.0
    ),
    "pruned-lsq-shallow": lambda dom, met: make_pruned_pmm(
        dom, met, 4, paper_schedule(3, 1.0, 4), consistency="least_squares"
    ),
    "pruned-lsq-axes": lambda dom, met: make_pruned_pmm(
        dom,
        met,
        14,
        paper_schedule(3, 1.0, 14),
        placement="uniform",
        axes=[2, 2, 0, 1] * 4,
        consistency="least_squares",
    ),
    "pruned-zcdp": lambda dom, met: make_pruned_pmm(
        dom, met, 12, [2.0] * 13, output_measure=dp.zero_concentrated_divergence()
    ),
    "pruned-lsq-zcdp": lambda dom, met: make_pruned_pmm(
        dom,
        met,
        12,
        [2.0] * 13,
        output_measure=dp.zero_concentrated_divergence(),
        consistency="least_squares",
    ),
    "adaptive-lsq": lambda dom, met: make_adaptive_pruned_pmm(
        dom, met, 0.25, 0.75, placement="uniform", consistency="least_squares"
    ),
    # the capped-count score (its statistic reduced from the histogram and the parts' trees)
    "adaptive-capped": lambda dom, met: make_adaptive_pruned_pmm(
        dom, met, 0.25, 0.75, placement="uniform", consistency="least_squares", score="capped"
    ),
    "adaptive-capped-order": lambda dom, met: make_adaptive_pruned_pmm(
        dom,
        met,
        0.25,
        0.75,
        split_order=SplitOrder.discrete_first(cells=(0, 4, 0), max_splits=20),
        score="capped",
    ),
    "adaptive-lsq-order": lambda dom, met: make_adaptive_pruned_pmm(
        dom,
        met,
        0.25,
        0.75,
        split_order=SplitOrder.discrete_first(cells=(0, 4, 0), max_splits=20),
        consistency="least_squares",
        threshold=1.0,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fixed_key_gives_the_in_memory_release(case, inline, tmp_path):
    n, d = 3000, 3
    meas = CASES[case](
        dp.numpy.array2_domain(num_columns=d, size=n, T=float), dp.change_one_distance()
    )
    y, z, info_mem, info_dist = both(
        meas, data(n, d), inline, tmp_path, parts=5, rows_per_block=700
    )
    assert np.array_equal(sorted_rows(y), sorted_rows(z))
    for key in ("depth", "visited_nodes", "active_nodes", "leaves", "size", "s", "candidate_index"):
        assert info_dist.get(key) == info_mem.get(key), key


#: the paper's-rule case of each least-squares case
PAPER_OF = {
    "pruned-lsq": "pruned-uniform",
    "pruned-lsq-threshold": "pruned-center",
    "adaptive-lsq": "adaptive",
    "pruned-lsq-axes": "pruned-axes",
    "pruned-lsq-zcdp": "pruned-zcdp",
}


@pytest.mark.parametrize("case", list(PAPER_OF))
def test_least_squares_runs_in_two_passes(case, inline, tmp_path, monkeypatch):
    # least squares below the split level: bottom-up in the parts, the top on the driver, then
    # top-down in the parts; the same rows as in memory, and not those of the paper's rule
    import opendp_wasserstein.distributed._pmm as pmm

    calls = []
    forest_task = pmm.forest_task

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return forest_task(*args, **kwargs)

    monkeypatch.setattr(pmm, "forest_task", spy)
    n, d = 3000, 3
    dom = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
    meas = CASES[case](dom, dp.change_one_distance())
    y, z, info_mem, info_dist = both(
        meas, data(n, d), inline, tmp_path, parts=2, rows_per_block=700
    )
    assert len(calls) == 2  # one forest per part: the release goes below the split level
    assert np.array_equal(sorted_rows(y), sorted_rows(z))
    for key in ("depth", "visited_nodes", "active_nodes", "leaves", "size", "s", "candidate_index"):
        assert info_dist.get(key) == info_mem.get(key), key
    paper = CASES[PAPER_OF[case]](dom, dp.change_one_distance())
    with reproducible(11):
        y_paper = paper(data(n, d))
    assert y_paper.shape != y.shape or not np.array_equal(sorted_rows(y_paper), sorted_rows(y))


@pytest.mark.parametrize("consistency", ["paper", "least_squares"])
@pytest.mark.parametrize("output_size", [None, 700])
def test_private_size_roots(output_size, consistency, inline, tmp_path):
    # noisy root (sigma_0 finite) or a given output size (sigma_0 = inf)
    dom = dp.numpy.array2_domain(num_columns=2, T=float)
    scales = paper_schedule(2, 1.0, 10)
    if output_size is not None:
        scales = (math.inf, *scales[1:])
    meas = make_pruned_pmm(
        dom,
        dp.symmetric_distance(),
        10,
        scales,
        placement="uniform",
        output_size=output_size,
        consistency=consistency,
    )
    y, z, _, _ = both(meas, data(800, 2), inline, tmp_path, parts=3, rows_per_block=200)
    assert np.array_equal(sorted_rows(y), sorted_rows(z))
    if output_size is not None:
        assert z.shape[0] == output_size


def test_law_of_a_tiny_case_is_the_exact_law(inline, tmp_path):
    """Leaf masses of the distributed Pruned-PMM (n = 3, depth 2, the split at level 1) against
    the exact law of the algorithm (tests/measurements/exact_pmm.py)."""
    scales = paper_schedule(2, 1.0, 2)
    x = np.array([[0.1, 0.1], [0.2, 0.7], [0.8, 0.3]])
    law = leaf_law(*counts_of(x), 3, scales, True)
    meas = make_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=3, T=float), dp.symmetric_distance(), 2, scales
    )
    plan = plan_of(meas)
    blocks, names = blocks_of(x, 2, rows_per_block=1)
    runs = 1500
    seen: Counter[tuple[int, ...]] = Counter()
    for seed in range(runs):
        rows = []

        def writer(q, pts, rows=rows):  # type: ignore[no-untyped-def]
            rows.append(pts)
            return pts.shape[0]

        with reproducible(seed):
            run_pmm(plan, Driver(inline, blocks, False), writer, parts=2)  # type: ignore[arg-type]
        pts = np.vstack(rows)
        cell = (np.floor(pts * 2).astype(int) @ np.array([2, 1])).tolist()  # level-2 cell
        seen[tuple(np.bincount(cell, minlength=4).tolist())] += 1
    keys = sorted(law)
    expected = np.array([law[k] for k in keys]) * runs
    observed = np.array([seen[k] for k in keys])
    assert sum(seen.values()) == observed.sum()  # no outcome outside the law's support
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > P_MIN


@pytest.mark.parametrize("make", [make_pruned_pmm, make_pmm])
def test_zcdp_fixed_key_gives_the_in_memory_release(make, inline, tmp_path):
    # zCDP: node-addressed discrete Gaussian noise, the same release on Dask
    n, d = 2000, 2
    dom = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
    meas = make(
        dom,
        dp.change_one_distance(),
        8,
        [2.0] * 9,
        placement="uniform",
        output_measure=dp.zero_concentrated_divergence(),
    )
    y, z, info_mem, info_dist = both(
        meas, data(n, d), inline, tmp_path, parts=3, rows_per_block=500
    )
    assert np.array_equal(sorted_rows(y), sorted_rows(z))
    assert info_dist["visited_nodes"] == info_mem["visited_nodes"]


def test_split_level_and_bounds():
    assert split_level(1, 30) == 6
    assert split_level(100, 30) == 13
    assert split_level(100, 9) == 9
    assert split_level(10**6, 60) == 20
    h = np.array([5, 0, 0, 5, 10, 0, 0, 0])
    b = part_bounds(h, 4)
    assert b[0] == 0
    assert np.all(np.diff(b) >= 0)
    assert b[-1] <= h.size
    owner = np.searchsorted(b, np.arange(h.size), side="right") - 1
    loads = np.bincount(owner, weights=h, minlength=4)
    assert loads.max() <= 10
    assert part_bounds(np.zeros(8, dtype=np.int64), 3).tolist() == [0, 0, 0]


def test_public_size_is_checked(inline, tmp_path):
    meas = make_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=100, T=float),
        dp.symmetric_distance(),
        6,
        paper_schedule(2, 1.0, 6),
    )
    with pytest.raises(ValueError, match="exactly 100 rows"):
        release_on_dask(meas, data(99, 2), tmp_path / "o", client=inline)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "case", ["pruned-uniform", "pmm", "adaptive", "pruned-lsq", "adaptive-lsq", "adaptive-capped"]
)
def test_real_cluster_gives_the_in_memory_release(case, cluster, tmp_path):
    n, d = 4000, 3
    meas = CASES[case](
        dp.numpy.array2_domain(num_columns=d, size=n, T=float), dp.change_one_distance()
    )
    y, z, _, info = both(
        meas, data(n, d, 3), cluster, tmp_path, seed=2, parts=3, rows_per_block=1000, progress=True
    )
    assert np.array_equal(sorted_rows(y), sorted_rows(z))
    assert info["size"] == n


@pytest.mark.parametrize(
    "case", ["pruned-uniform", "adaptive", "pruned-axes", "adaptive-least-squares"]
)
def test_output_parts_are_cut_on_noisy_masses_not_on_exact_counts(case, inline, tmp_path):
    """Each part writes its own file, so the cuts between parts are observable: they must be a
    function of the noisy counts.  They are :func:`part_bounds` of the frontier's noisy
    level-``j0`` masses, which are the level-``j0`` masses of the paper rule's release (a leaf
    keeps its frontier cell's mass; least squares cuts on the paper rule's frontier, threshold 0,
    and moves mass after): so the released rows of the paper rule, under the same key, give back
    every file's range of cells.  Half the rows sit on one point, where a cut on exact counts
    would fall."""
    import pyarrow.parquet as pq

    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.distributed._pmm import level_prefix
    from opendp_wasserstein.distributed._source import parquet_files

    n, parts = 4000, 4
    x = data(n, 3)
    x[: n // 2] = 0.3
    dom, met = dp.numpy.array2_domain(num_columns=3, size=n, T=float), dp.change_one_distance()
    if case == "adaptive-least-squares":
        meas = make_adaptive_pruned_pmm(
            dom, met, 0.25, 0.75, placement="uniform", consistency="least_squares"
        )
        paper = make_adaptive_pruned_pmm(
            dom, met, 0.25, 0.75, placement="uniform", consistency="paper", threshold=0.0
        )
    else:
        meas = paper = CASES[case](dom, met)
    with reproducible(5), diagnostics() as info:
        release_on_dask(meas, x, tmp_path / "o", client=inline, parts=parts)
    with reproducible(5):
        y_paper = paper(x)
    axes = [2, 2, 0, 1] * 4 if case == "pruned-axes" else None
    j0 = split_level(parts, info[-1]["depth"])
    box = as_box((0, 1), 3)
    hist = np.bincount(level_prefix(y_paper, box, j0, axes), minlength=1 << j0)
    b = np.concatenate((part_bounds(hist, parts), [1 << j0]))
    files = [
        pq.read_table(f).to_pandas().to_numpy(dtype=float) for f in parquet_files(tmp_path / "o")
    ]
    assert len(files) == parts  # one file per part, empty ones included: the count is public
    for q, y in enumerate(files):
        pre = level_prefix(y, box, j0, axes)
        if case != "adaptive-least-squares":
            assert pre.size == hist[b[q] : b[q + 1]].sum()
        assert np.all((pre >= b[q]) & (pre < b[q + 1]))


@pytest.mark.parametrize("seed", range(40))
def test_part_statistic_is_the_capped_sums_and_imbalance(seed):
    """One descent of the cells of two rows or more gives exactly the in-memory statistic
    (:func:`capped_level_sums` and :func:`level_imbalance`) of every level from ``start``, on
    trees with duplicates, ties on the first code word (d = 3, depth > 64) and empty parts."""
    from opendp_wasserstein.distributed._pmm import part_statistic
    from opendp_wasserstein.hierarchy.cells import CountTree, capped_level_sums, level_imbalance

    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    n = int(rng.integers(0, 2000)) if seed % 7 else 0
    depth = int(rng.integers(2, 52 * d + 1 if d > 1 else 52))
    x = rng.uniform(size=(n, d)) ** 3
    if n and seed % 3 == 0:
        x[: n // 3] = x[0]  # one heavy duplicate
    if n and seed % 4 == 0:
        x = np.round(x, 2)  # many ties
    tree = CountTree(x, depth)
    L = int(rng.integers(1, depth + 2))
    caps = rng.integers(1, 50, size=(L, int(rng.integers(1, 5))))
    J = int(rng.integers(0, depth + 1))
    first = int(rng.integers(0, J + 1))
    start = int(rng.integers(0, max(L, J) + 1))
    stat, imbalance = part_statistic(tree, caps, start, (first, J))
    assert np.array_equal(stat, capped_level_sums(tree, caps, start)[start:])
    want = level_imbalance(tree, J, start=min(max(first, start), J))[start:]
    assert np.array_equal(imbalance, want)
    stat2, none = part_statistic(tree, caps, start, None)
    assert none is None
    assert np.array_equal(stat2, stat)


@pytest.mark.parametrize("placement", ["uniform", "center"])
def test_uniform_points_are_written_without_a_dictionary(placement, inline, tmp_path):
    """Uniform points (distinct floats) are plain-encoded and uncompressed; centres (repeated)
    keep Parquet's dictionary encoding and snappy.  The values are the same either way."""
    import pyarrow.parquet as pq

    x = data(3000, 2)
    dom = dp.numpy.array2_domain(T=float, num_columns=2)
    meas = make_pruned_pmm(
        dom, dp.symmetric_distance(), 8, paper_schedule(2, 1.0, 8), placement=placement
    )
    rel = release_on_dask(meas, x, tmp_path / "o", client=inline, parts=2)
    encodings = {
        e
        for f in sorted((tmp_path / "o").iterdir())
        for e in pq.ParquetFile(f).metadata.row_group(0).column(0).encodings
    }
    dictionary = any("DICTIONARY" in e for e in encodings)
    assert dictionary == (placement == "center")
    compression = {
        pq.ParquetFile(f).metadata.row_group(0).column(0).compression
        for f in sorted((tmp_path / "o").iterdir())
    }
    assert compression == ({"UNCOMPRESSED"} if placement == "uniform" else {"SNAPPY"})
    assert rel.read().shape == (rel.rows, 2)


def test_split_task_cuts_the_rows_by_the_part_of_their_cell():
    """The counting split gives every part exactly the rows of its cells, in input order."""
    from opendp_wasserstein.core.box import Box
    from opendp_wasserstein.distributed._pmm import level_prefix, part_of_cells, split_task
    from opendp_wasserstein.distributed._source import ArrayBlock

    x = data(5000, 3, seed=3)
    box = Box((0.0,) * 3, (1.0,) * 3)
    bounds = np.array([0, 0, 5, 40, 41, 64])  # an empty part, a one-cell part
    owner = part_of_cells(bounds, 6)
    assert owner.tolist() == np.repeat(np.arange(6), [0, 5, 35, 1, 23, 0]).tolist()
    blocks = [ArrayBlock(x[:1700]), ArrayBlock(x[1700:1700]), ArrayBlock(x[1700:])]
    pieces = split_task(blocks, 3, False, box, 6, bounds)
    prefix = level_prefix(x, box, 6)
    for q, piece in enumerate(pieces):
        hi = bounds[q + 1] if q + 1 < bounds.size else 64
        assert np.array_equal(piece.reshape(-1, 3), x[(prefix >= bounds[q]) & (prefix < hi)])


@pytest.mark.parametrize("hold", [True, False])
@pytest.mark.parametrize("consistency", ["paper", "least_squares"])
def test_adaptive_never_rebuilds_and_its_task_count_ignores_the_cuts(
    consistency, hold, inline, tmp_path, monkeypatch
):
    """The adaptive release expands the selection's trees (cut on exact counts) whatever the
    noisy cuts of the output are: the same rows as in memory, and the same number of tasks
    of every kind whether the two cuts agree or not (the count must not tell); with the rows
    held by the count pass or read again."""
    from opendp_wasserstein.distributed import _pmm

    monkeypatch.setattr(_pmm, "HOLD_BYTES_PER_WORKER", (1 << 28) if hold else 0)

    seen: list[bool] = []
    exact: list[np.ndarray] = []
    real_bounds, real_noisy = _pmm.part_bounds, _pmm.noisy_part_bounds

    def record_exact(h, parts):  # type: ignore[no-untyped-def]
        b = real_bounds(h, parts)
        exact.append(b)
        return b

    def record_noisy(front, j0, parts):  # type: ignore[no-untyped-def]
        b = real_noisy(front, j0, parts)
        exact.pop()  # its own call of part_bounds (on the noisy masses)
        # the release's cuts, then in turn cuts a whole part away from the exact ones and the
        # exact ones themselves (any cuts give the same rows: they only choose the files)
        if len(exact) % 3 == 1:
            b = np.concatenate(([0], np.minimum(b[1:] + (b[2] - b[1]), 1 << j0)))
        elif len(exact) % 3 == 2:
            b = exact[-1].copy()
        seen.append(bool(np.array_equal(b, exact[-1])))
        return b

    monkeypatch.setattr(_pmm, "part_bounds", record_exact)
    monkeypatch.setattr(_pmm, "noisy_part_bounds", record_noisy)
    counts: dict[bool, Counter] = {}
    real_submit = inline.submit

    def counting(fn, *args, **kw):  # type: ignore[no-untyped-def]
        tasks[fn.__name__] += 1
        return real_submit(fn, *args, **kw)

    monkeypatch.setattr(inline, "submit", counting)
    dom = dp.numpy.array2_domain(num_columns=2, size=20000, T=float)
    meas = make_adaptive_pruned_pmm(
        dom, dp.change_one_distance(), 0.25, 0.75, placement="uniform", consistency=consistency
    )
    for seed in range(12):
        x = data(20000, 2, seed=seed)
        tasks: Counter = Counter()
        y, z, _, _ = both(meas, x, inline, tmp_path, seed=seed, parts=4)
        assert np.array_equal(sorted_rows(y), sorted_rows(z))
        counts.setdefault(seen[-1], tasks)
        assert tasks == counts[seen[-1]]
        assert tasks["tree_task"] == 4  # built once, never rebuilt
        assert (tasks["hold_task"] > 0) == hold
        assert (tasks["split_task"] > 0) != hold
    assert set(counts) == {True, False}  # both cases were met
    assert counts[True] == counts[False]


def test_held_rows_are_sized_for_dask_and_quote_nothing():
    """Rows held between the count pass and the partition: Dask's memory accounting sees their
    size (it may spill them), logs see no value, and the cut gives every part its cells' rows."""
    import pickle
    import sys

    from opendp_wasserstein.core.box import Box
    from opendp_wasserstein.distributed._pmm import (
        HeldRows,
        held_count_task,
        held_split_task,
        hold_task,
        split_task,
    )
    from opendp_wasserstein.distributed._source import ArrayBlock

    x = data(3000, 3, seed=4)
    box = Box((0.0,) * 3, (1.0,) * 3)
    blocks = [ArrayBlock(x[:1000]), ArrayBlock(x[1000:])]
    held = hold_task(blocks, 3, False, box, 6)
    assert repr(held) == "HeldRows(...)"
    assert sys.getsizeof(held) >= x.nbytes + 4 * 3000
    assert isinstance(pickle.loads(pickle.dumps(held)), HeldRows)
    n, h = held_count_task(held, 6)
    assert n == 3000
    assert h.sum() == 3000
    assert h.size == 64
    bounds = np.array([0, 3, 30, 31])
    cut = held_split_task(held, 6, bounds)
    for a, b in zip(cut, split_task(blocks, 3, False, box, 6, bounds), strict=True):
        assert np.array_equal(a.reshape(-1, 3), b.reshape(-1, 3))


def test_rows_are_held_only_for_a_public_size_that_fits():
    """Whether the count pass keeps the rows is a function of public values: the size, d and
    the number of workers (a private size always reads the source again)."""
    from opendp_wasserstein.distributed._pmm import HOLD_BYTES_PER_WORKER, holds

    fits = HOLD_BYTES_PER_WORKER // 28
    assert holds(fits, 3, 1)
    assert holds(2 * fits, 3, 2)
    assert holds(10**6, 3, 0)
    assert not holds(fits + 1, 3, 1)
    assert not holds(10**8, 3, 2)
    assert not holds(None, 3, 100)
