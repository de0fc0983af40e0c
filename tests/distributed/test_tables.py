"""The structured table release on Dask (:mod:`opendp_wasserstein.distributed._tables`): the
in-memory release under the same key, from a CSV converted to Parquet with several row groups."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import opendp.prelude as dp
import pyarrow.parquet as pq
import pytest

from opendp_wasserstein import runtime
from opendp_wasserstein.distributed import synthesize_on_dask
from opendp_wasserstein.distributed._tables import (
    block_parts,
    copula_counts_task,
    marginal_counts_task,
    pair_counts_task,
    synthesize_table_on_dask,
    table_blocks,
)
from opendp_wasserstein.tables import Schema, TableEncoding
from opendp_wasserstein.tables.copula import CopulaSplits, make_split_counts
from opendp_wasserstein.tables.io import read_file
from opendp_wasserstein.tables.marginals import column_plans, make_level_counts, tree_levels
from opendp_wasserstein.tables.pairs import PairCoding, make_pair_counts, make_pattern_counts
from opendp_wasserstein.tables.pipeline import StructuredOptions, make_structured_synthesis
from opendp_wasserstein.tables.release import synthesize_table

SCHEMA = {
    "columns": {
        "region": {"type": "categorical", "categories": ["n", "e", "s", "w", "c"]},
        "smoker": {"type": "bool"},
        "age": {"type": "int", "bounds": [0, 100]},
        "income": {"type": "float", "bounds": [0, 200000], "nullable": True},
        "spend": {"type": "float", "bounds": [0, 50000], "nullable": True},
    }
}


def _csv(path: Any, n: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    region = rng.choice(list("neswc"), n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    smoker = rng.uniform(size=n) < 0.25
    age = np.clip(rng.normal(45 + 8 * (region == "s"), 12, n), 18, 90).astype(int)
    income = np.clip(np.exp(rng.normal(10 + 0.01 * age - 0.3 * smoker, 0.4)), 0, 2e5)
    missing = rng.uniform(size=n) < 0.1
    spend = np.clip(income * rng.uniform(0.1, 0.4, n), 0, 5e4)
    gone = missing | (rng.uniform(size=n) < 0.05)  # two nullable columns: a pattern table
    lines = ["region,smoker,age,income,spend"] + [
        f"{r},{'true' if s else 'false'},{a},{'' if m else f'{v:.2f}'},{'' if g else f'{w:.2f}'}"
        for r, s, a, v, m, w, g in zip(
            region, smoker, age, income, missing, spend, gone, strict=True
        )
    ]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def table_files(tmp_path_factory: Any) -> Any:
    """A CSV of 6,000 rows converted to Parquet in row groups of 1,000 (6 row groups)."""
    d = tmp_path_factory.mktemp("tables")
    _csv(d / "t.csv", 6000)
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(d / "t.csv"), schema=schema)
    pq.write_table(table, d / "t.parquet", row_group_size=1000)
    (d / "schema.json").write_text(json.dumps(SCHEMA))
    return d


def _in_memory(d: Any, epsilon: float, seed: int, options: Any = None) -> Any:
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(d / "t.parquet"), schema=schema)
    with runtime.reproducible(seed):
        out, report = synthesize_table(
            table, epsilon, schema, structured=options or StructuredOptions()
        )
    return out, report


@pytest.mark.parametrize(
    ("epsilon", "joint"),
    [(2.0, "pairs"), (0.25, "copula"), (0.05, "independent")],
    ids=["pairs", "copula", "independent"],
)
def test_dask_table_release_is_the_in_memory_release_under_the_same_key(
    table_files: Any, cluster: Any, epsilon: float, joint: str
) -> None:
    schema = Schema.from_json(SCHEMA)
    blocks, n = table_blocks(str(table_files / "t.parquet"), TableEncoding(schema), 1000)
    assert (len(blocks), n) == (6, 6000)  # one part per row group
    expected, report = _in_memory(table_files, epsilon, 7)
    assert report.details["joint_kind"] == joint
    out = table_files / f"out-{joint}"
    with runtime.reproducible(7):  # one block per row group: 6 tasks a pass, 6 output parts
        rows, parts, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"), epsilon, out, schema, cluster, rows_per_block=1000
        )
    got = pq.read_table(out)
    # 6 input blocks, 4 output parts (public_parts: two per worker)
    assert (rows, parts) == (6000, 4)
    assert len(list(out.glob("*.parquet"))) == 4
    assert got.schema == expected.schema
    assert got.equals(expected)
    assert dreport.epsilon == report.epsilon
    assert dreport.details["joint_kind"] == joint
    assert dreport.details["split_order"] == report.details["split_order"]
    for key in (
        "pair_edges",
        "pair_bins",
        "pair_pattern",
        "quality",
        "epsilon_marginals",
        "copula_pairs",
        "joint",
    ):
        assert dreport.details.get(key) == report.details.get(key)


@pytest.mark.parametrize(
    ("epsilon", "joint"),
    [(2.0, "pairs"), (0.25, "copula"), (0.05, "independent")],
    ids=["pairs", "copula", "independent"],
)
def test_dask_release_in_output_blocks_is_the_in_memory_release_under_the_same_key(
    table_files: Any, cluster: Any, epsilon: float, joint: str
) -> None:
    """Output blocks of 2,500 rows (2,500, 2,500, 1,000: a function of n, not of the 6 row
    groups), each drawn, calibrated and written on a worker: the in-memory release in the same
    blocks, rows and quality figure."""
    schema = Schema.from_json(SCHEMA)
    opts = StructuredOptions(block_rows=2500)
    expected, report = _in_memory(table_files, epsilon, 13, opts)
    one, _ = _in_memory(table_files, epsilon, 13)
    assert not one.equals(expected)  # the blocks are other draws than one sample of n rows
    assert report.details["joint_kind"] == joint
    out = table_files / f"out-blocks-{joint}"
    with runtime.reproducible(13):
        rows, parts, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            epsilon,
            out,
            schema,
            cluster,
            options=opts,
            rows_per_block=1000,
        )
    # 4 parts (public_parts) over 3 blocks: 2, 1, 1
    assert (rows, parts) == (6000, 4)
    assert sorted(p.name for p in out.glob("*.parquet")) == [
        f"part-{q:05d}.parquet" for q in range(4)
    ]
    assert [pq.ParquetFile(out / f"part-{q:05d}.parquet").metadata.num_rows for q in range(4)] == [
        1250,
        1250,
        2500,
        1000,
    ]
    assert pq.read_table(out).equals(expected)
    for key in ("pair_edges", "quality", "quality_columns", "quality_worst"):
        assert dreport.details.get(key) == report.details.get(key)


def test_block_parts() -> None:
    assert block_parts(4, 1) == [4]
    assert block_parts(5, 2) == [3, 2]
    assert block_parts(1, 3) == [1, 1, 1]
    assert block_parts(4, 3) == [2, 1, 1]


def test_dask_table_release_with_small_row_groups_and_parts(table_files: Any, inline: Any) -> None:
    """The inline client; row groups merged into blocks of 2,000 rows, 4 output parts."""
    schema = Schema.from_json(SCHEMA)
    expected, _ = _in_memory(table_files, 2.0, 3)
    out = table_files / "out-inline"
    with runtime.reproducible(3):
        n, parts, _ = synthesize_table_on_dask(
            str(table_files / "t.parquet"), 2.0, out, schema, inline, parts=4, rows_per_block=2000
        )
    assert (n, parts) == (6000, 4)
    assert pq.read_table(out).equals(expected)


def test_dask_table_release_refusals(table_files: Any, inline: Any) -> None:
    schema = Schema.from_json(SCHEMA)
    src = str(table_files / "t.parquet")
    with pytest.raises(ValueError, match="public_size=True"):
        synthesize_on_dask(src, 1.0, table_files / "x", schema=schema, public_size=False)
    with pytest.raises(ValueError, match="do not apply"):
        synthesize_on_dask(src, 1.0, table_files / "x", schema=schema, depth=3)
    with pytest.raises(ValueError, match="not both"):
        synthesize_on_dask(src, 1.0, table_files / "x", (0, 1), schema=schema)
    with pytest.raises(ValueError, match="no Dask plan"):
        synthesize_on_dask(
            src,
            1.0,
            table_files / "x",
            schema=schema,
            structured=StructuredOptions(joint="tree"),
            client=inline,
        )
    assert not (table_files / "x").exists()


def test_dask_table_release_on_the_csprng(table_files: Any, inline: Any) -> None:
    """Without a seed: OpenDP's discrete Laplace and exponential selection on the driver (no
    equality to expect; the output has the public size and the in-memory column types)."""
    schema = Schema.from_json(SCHEMA)
    expected, _ = _in_memory(table_files, 2.0, 3)
    out = table_files / "out-secure"
    n, parts, report = synthesize_table_on_dask(
        str(table_files / "t.parquet"), 2.0, out, schema, inline
    )
    got = pq.read_table(out)
    assert (n, got.num_rows, parts) == (6000, 6000, 1)  # one input block
    assert got.schema == expected.schema
    assert report.details["joint_kind"] == "pairs"
    assert len(report.details["pair_edges"]) == 4  # k - 1 for 5 columns
    assert report.details["pair_pattern"] == ["income", "spend"]
    assert set(got.column("region").to_pylist()) <= set("neswc")


def test_dask_copula_on_the_csprng(table_files: Any, inline: Any) -> None:
    """joint='auto' at n eps / k = 300 without a seed: OpenDP's discrete Laplace on the pair
    counts' sum on the driver (no equality to expect: the public size, the 3 numeric columns'
    pairs counted, the in-memory certificate)."""
    schema = Schema.from_json(SCHEMA)
    out = table_files / "out-copula-secure"
    n, _, report = synthesize_table_on_dask(
        str(table_files / "t.parquet"), 0.25, out, schema, inline
    )
    assert (n, pq.read_table(out).num_rows) == (6000, 6000)
    assert report.details["joint_kind"] == "copula"
    assert report.details["copula_pairs"] == 3
    enc = TableEncoding(schema)
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=6000, T=float, nan=False)
    meas = make_structured_synthesis(dom, dp.change_one_distance(), enc, 0.25)
    assert report.details["epsilon_release"] == meas.map(1)


def test_copula_counts_task_is_make_split_counts(table_files: Any) -> None:
    """The workers' pair counts are make_split_counts' on the block's rows, and the blocks' sum
    is the whole table's."""
    schema = Schema.from_json(SCHEMA)
    enc = TableEncoding(schema)
    blocks, _ = table_blocks(str(table_files / "t.parquet"), enc, 1000)
    plans = column_plans(enc)
    cols = tuple(c for c, p in enumerate(plans) if p.kind == "numeric")
    assert len(cols) == 3  # age, income, spend
    splits = CopulaSplits(
        cols,
        tuple(plans[c].value_axis for c in cols),
        (0.5, 0.3, 0.6),
        tuple(
            -1 if plans[c].missing_axis is None else plans[c].axes[plans[c].missing_axis]
            for c in cols
        ),
        (0.5,) * 3,
        (1.0,) * 3,
    )
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, T=float, nan=False)
    counts = make_split_counts(dom, dp.symmetric_distance(), splits)
    assert copula_counts_task(blocks[2], splits).tolist() == counts(blocks[2]())
    x = np.concatenate([b() for b in blocks])
    total = sum(copula_counts_task(b, splits) for b in blocks)
    assert total.tolist() == counts(x)
    assert x.shape[0] == 6000
    assert total.min() > 0


def test_cli_synth_schema_on_a_scheduler_is_the_in_memory_synth(
    table_files: Any, cluster: Any, capsys: Any
) -> None:
    from opendp_wasserstein.cli import main

    src, schema = str(table_files / "t.parquet"), str(table_files / "schema.json")
    common = ["--epsilon", "2", "--schema", schema, "--seed", "11", "--json"]
    mem = table_files / "cli-mem.parquet"
    assert main(["synth", src, "-o", str(mem), *common]) == 0
    capsys.readouterr()
    out = table_files / "cli-dask"
    address = cluster.scheduler.address
    assert main(["synth", src, "-o", str(out), *common, "--scheduler", address]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_out"] == 6000
    assert summary["mechanism"] == "structured"
    assert pq.read_table(out).equals(pq.read_table(mem))
    bad = ["synth", src, "-o", str(table_files / "cli-x"), *common, "--scheduler", address]
    assert main([*bad, "--private-size"]) == 2
    assert "--private-size" in capsys.readouterr().err
    assert main([*bad, "--mechanism", "adaptive"]) == 2
    assert not (table_files / "cli-x").exists()


def test_cli_synth_joint_copula_on_a_scheduler_is_the_in_memory_synth(
    table_files: Any, cluster: Any, capsys: Any
) -> None:
    """``synth --joint copula --scheduler`` (eps 4, n eps / k = 4800: forced above the auto
    range) gives the in-memory rows under the same seed and names the copula."""
    from opendp_wasserstein.cli import main

    src, schema = str(table_files / "t.parquet"), str(table_files / "schema.json")
    common = ["--epsilon", "4", "--schema", schema, "--seed", "5", "--joint", "copula", "--json"]
    mem = table_files / "cli-copula-mem.parquet"
    assert main(["synth", src, "-o", str(mem), *common]) == 0
    capsys.readouterr()
    out = table_files / "cli-copula-dask"
    address = cluster.scheduler.address
    assert main(["synth", src, "-o", str(out), *common, "--scheduler", address]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_out"] == 6000
    assert pq.read_table(out).equals(pq.read_table(mem))
    assert "copula" in json.dumps(summary)


def test_cli_synth_schema_on_a_scheduler_prints_the_in_memory_summary(
    table_files: Any, cluster: Any, capsys: Any
) -> None:
    """The printed summary of ``synth --schema --scheduler`` is the in-memory one (one printer
    for both: the certified budget, the joint release, the quality figure with its worst
    columns, the warnings), all but the last line, which names the Parquet parts written."""
    from opendp_wasserstein.cli import main

    src, schema = str(table_files / "t.parquet"), str(table_files / "schema.json")
    common = ["--epsilon", "2", "--schema", schema, "--seed", "12"]
    assert main(["synth", src, "-o", str(table_files / "sum-mem.parquet"), *common]) == 0
    mem = capsys.readouterr()
    address = cluster.scheduler.address
    out = str(table_files / "sum-dask")
    assert main(["synth", src, "-o", out, *common, "--scheduler", address]) == 0
    dask = capsys.readouterr()
    mem_lines, dask_lines = mem.out.splitlines(), dask.out.splitlines()
    assert dask_lines[:-1] == mem_lines[:-1]
    assert any("worst: " in line for line in dask_lines)
    assert dask_lines[-1].startswith("wrote 6000 synthetic rows in ")
    assert dask.err == mem.err


def test_dask_table_release_bars_move_per_part(table_files: Any, cluster: Any, capsys: Any) -> None:
    pytest.importorskip("tqdm")
    schema = Schema.from_json(SCHEMA)
    with runtime.reproducible(5):
        synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            2.0,
            table_files / "out-bars",
            schema,
            cluster,
            rows_per_block=1000,
            progress=True,
        )
    err = capsys.readouterr().err
    assert "first look" in err
    assert "pairs" in err
    assert "6/6" in err


def test_pair_counts_task_is_make_pair_counts(table_files: Any) -> None:
    """The workers' 2-way tables are make_pair_counts' on the block's rows, pair by pair."""

    schema = Schema.from_json(SCHEMA)
    enc = TableEncoding(schema)
    blocks, _ = table_blocks(str(table_files / "t.parquet"), enc, 1000)
    x = blocks[2]()
    plans = column_plans(enc)
    edges = [None if p.kind == "category" else np.array([0.0, 0.3, 0.5, 1.0]) for p in plans]
    sizes = tuple(
        p.cells if e is None else 3 + (p.missing_axis is not None)
        for p, e in zip(plans, edges, strict=True)
    )
    coding = PairCoding(plans, tuple(edges), sizes)
    pairs = [(i, j) for i in range(len(plans)) for j in range(i + 1, len(plans))]
    got = pair_counts_task(blocks[2], coding, pairs)
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, T=float, nan=False)
    assert len(got) == len(pairs) + 1  # the missingness pattern counts last
    for (i, j), g in zip(pairs, got[:-1], strict=True):
        want = make_pair_counts(dom, dp.symmetric_distance(), coding, i, j)(x)
        assert g.tolist() == list(want)
        assert sum(want) == 1000
    want = make_pattern_counts(dom, dp.symmetric_distance(), coding)(x)
    assert got[-1].tolist() == list(want)
    assert len(want) == 4
    assert sum(want) == 1000
    assert want[3] > 0  # both missing in some rows


def test_dask_table_release_of_a_column_subset(table_files: Any, inline: Any) -> None:
    """``columns=``: the in-memory release of the same columns, under the same key."""
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    cols = ["age", "region", "income"]
    with runtime.reproducible(9):
        expected, _ = synthesize_table(
            table, 2.0, schema, columns=cols, structured=StructuredOptions()
        )
    out = table_files / "out-subset"
    with runtime.reproducible(9):
        synthesize_table_on_dask(
            str(table_files / "t.parquet"), 2.0, out, schema, inline, columns=cols
        )
    got = pq.read_table(out)
    assert got.column_names == cols
    assert got.equals(expected)


def test_dask_copula_of_one_numeric_column_is_the_in_memory_release(
    table_files: Any, inline: Any
) -> None:
    """``columns=["age", "region", "smoker"]`` at eps 0.1 (``n eps / k = 200``: the copula by
    the rule) has one numeric column: nothing is counted, independent columns at the whole
    budget, as in memory, under the same key."""
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    cols = ["age", "region", "smoker"]
    with runtime.reproducible(4):
        expected, report = synthesize_table(
            table, 0.1, schema, columns=cols, structured=StructuredOptions()
        )
    assert report.details["joint_kind"] == "copula"
    out = table_files / "out-copula-one"
    with runtime.reproducible(4):
        _, _, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"), 0.1, out, schema, inline, columns=cols
        )
    assert pq.read_table(out).equals(expected)
    assert dreport.details["joint"] is False
    assert report.details["joint"] is False
    assert dreport.details["copula_pairs"] == 0
    assert dreport.details["split_order"] == "independent columns"
    assert dreport.epsilon == report.epsilon


@pytest.mark.parametrize(
    ("epsilon", "joint"), [(2.0, "pairs"), (0.05, "independent")], ids=["pairs", "independent"]
)
def test_dask_delta_release_is_the_in_memory_release_under_the_same_key(
    table_files: Any, inline: Any, epsilon: float, joint: str
) -> None:
    """With delta: discrete Gaussian noise and zCDP selections, the very draws of the in-memory
    release (the same derived streams), the same certificate (epsilon', delta).  (At epsilon 2
    ``joint="auto"`` would run the network under delta: the pair tree is asked for.)"""
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    options = StructuredOptions(joint="pairs" if joint == "pairs" else "auto")
    with runtime.reproducible(11):
        expected, report = synthesize_table(table, epsilon, schema, structured=options, delta=1e-9)
    assert report.details["joint_kind"] == joint
    assert report.details["noise"] == "gaussian"
    out = table_files / f"out-delta-{joint}"
    with runtime.reproducible(11):
        _, _, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            epsilon,
            out,
            schema,
            inline,
            options=options,
            rows_per_block=1000,
            delta=1e-9,
        )
    assert pq.read_table(out).equals(expected)
    assert dreport.epsilon == report.epsilon
    assert dreport.delta == report.delta
    assert dreport.delta == 1e-9
    for key in ("pair_edges", "pair_bins", "pair_scale", "quality", "rho", "rho_marginals"):
        assert dreport.details.get(key) == report.details.get(key)


def test_dask_delta_on_the_csprng_and_refused_for_arrays(table_files: Any, inline: Any) -> None:
    schema = Schema.from_json(SCHEMA)
    src = str(table_files / "t.parquet")
    rel, report = synthesize_on_dask(
        src, 2.0, table_files / "out-delta-secure", schema=schema, client=inline, delta=1e-9
    )
    assert rel.rows == 6000
    assert report.delta == 1e-9
    assert report.epsilon <= 2.0
    assert report.details["joint_kind"] == "network"  # n eps / k = 2400 under delta
    assert len(report.details["network_cliques"]) == 4
    with pytest.raises(ValueError, match="delta: synthesize_on_dask releases arrays in pure DP"):
        synthesize_on_dask(src, 1.0, table_files / "y", (0, 1), delta=1e-9)
    assert not (table_files / "y").exists()


def test_cli_synth_schema_delta_on_a_scheduler_is_the_in_memory_synth(
    table_files: Any, cluster: Any, capsys: Any
) -> None:
    from opendp_wasserstein.cli import main

    src, schema = str(table_files / "t.parquet"), str(table_files / "schema.json")
    common = ["--epsilon", "2", "--schema", schema, "--seed", "12", "--json", "--delta", "1e-9"]
    mem = table_files / "cli-delta-mem.parquet"
    assert main(["synth", src, "-o", str(mem), *common]) == 0
    mem_summary = json.loads(capsys.readouterr().out)
    out = table_files / "cli-delta-dask"
    assert (
        main(["synth", src, "-o", str(out), *common, "--scheduler", cluster.scheduler.address]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["delta_certified"] == 1e-9
    assert summary["epsilon_certified"] == mem_summary["epsilon_certified"]
    assert summary["details"]["noise"] == "gaussian"
    assert pq.read_table(out).equals(pq.read_table(mem))


def test_marginal_counts_task_is_make_level_counts_and_needs_no_feature(table_files: Any) -> None:
    """The workers' first-look counts are make_level_counts' on the block's rows, level by
    level, computed without OpenDP's contrib feature and leaving the process's features as
    they were (a worker may be a thread of the caller's process)."""
    from opendp.mod import GLOBAL_FEATURES

    schema = Schema.from_json(SCHEMA)
    enc = TableEncoding(schema)
    blocks, _ = table_blocks(str(table_files / "t.parquet"), enc, 1000)
    plans = column_plans(enc)
    trees = [
        (p, leaves, level)
        for p in plans
        for leaves in ((1,) if p.kind == "category" else (16, 256, 300, 4096))
        for level in range(len(tree_levels(leaves, p.kind)))
    ]
    before = set(GLOBAL_FEATURES)
    dp.disable_features("contrib")
    try:
        rows, got = marginal_counts_task(blocks[2], trees)
        assert "contrib" not in GLOBAL_FEATURES
    finally:
        dp.enable_features(*before)
    assert set(GLOBAL_FEATURES) == before
    assert rows == 1000
    x = blocks[2]()
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, T=float, nan=False)
    for (p, leaves, level), g in zip(trees, got, strict=True):
        want = make_level_counts(dom, dp.symmetric_distance(), p, leaves, level)(x)
        assert g.dtype == np.int64
        assert g.tolist() == list(want)
        assert sum(want) == 1000


def test_a_worker_counts_without_scikit_learn(table_files: Any) -> None:
    """``array2_domain`` imports ``opendp.prelude``, which imports scikit-learn through OpenDP's
    sklearn extra: seconds of a worker's first pass, and a worker that imported it outlived
    its nanny's 4 s to close.  A worker's counts build no OpenDP domain (a fresh process
    stands for a worker): scikit-learn is not imported."""
    import subprocess
    import sys

    pytest.importorskip("sklearn")
    probe = (
        "import sys\n"
        "import opendp.prelude  # noqa: F401 (would import scikit-learn)\n"
        "print('sklearn' in sys.modules)\n"
    )
    worker = (
        "import sys\n"
        "from opendp_wasserstein.distributed._tables import marginal_counts_task, table_blocks\n"
        "from opendp_wasserstein.tables import Schema, TableEncoding\n"
        "from opendp_wasserstein.tables.marginals import column_plans\n"
        f"enc = TableEncoding(Schema.from_json({SCHEMA!r}))\n"
        f"blocks, _ = table_blocks({str(table_files / 't.parquet')!r}, enc, 1000)\n"
        "trees = [(p, 1 if p.kind == 'category' else 16, 0) for p in column_plans(enc)]\n"
        "rows, counts = marginal_counts_task(blocks[0], trees)\n"
        "print(rows, 'sklearn' in sys.modules)\n"
    )
    outs = []
    for code in (probe, worker):
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout.split())
    assert outs == [["True"], ["1000", "False"]]


NETWORK = StructuredOptions(joint="network")


@pytest.mark.parametrize(
    ("delta", "block_rows"), [(None, 2**20), (1e-9, 2**20), (None, 2500), (1e-9, 2500)]
)
def test_dask_network_release_is_the_in_memory_release_under_the_same_key(
    table_files: Any, cluster: Any, delta: float | None, block_rows: int
) -> None:
    """joint='network' on a LocalCluster (6 row groups, 6 input blocks): the statistics summed
    over the blocks, the rounds and the noise on the driver, the rows drawn on the workers in
    one output block or three (2,500 + 2,500 + 1,000 rows) give the in-memory release row for
    row (pure DP and zCDP under delta), with 3-way cliques among the chosen ones; the certified
    map is the in-memory measurement's."""
    options = StructuredOptions(joint="network", block_rows=block_rows)
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    with runtime.reproducible(13):
        expected, report = synthesize_table(table, 4.0, schema, structured=options, delta=delta)
    assert report.details["joint_kind"] == "network"
    out = table_files / f"out-network-{delta}-{block_rows}"
    with runtime.reproducible(13):
        rows, parts, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            4.0,
            out,
            schema,
            cluster,
            options=options,
            rows_per_block=1000,
            delta=delta,
        )
    assert (rows, parts) == (6000, 4)
    assert pq.read_table(out).equals(expected)
    assert (dreport.epsilon, dreport.delta) == (report.epsilon, report.delta)
    cliques = dreport.details["network_cliques"]
    assert cliques == report.details["network_cliques"]
    assert len(cliques) == 4  # k - 1 for 5 columns
    assert any(len(parents) == 2 for _, parents in cliques)  # a 3-way table was released
    assert dreport.details["network_pattern"] == ["income", "spend"]
    assert dreport.details["split_order"] == report.details["split_order"]
    assert report.details["split_order"] == "network of 2- and 3-way tables"
    for key in ("network_scale", "network_bins", "network_cells", "quality", "rho_marginals"):
        assert dreport.details.get(key) == report.details.get(key)
    enc = TableEncoding(schema)
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, size=6000, T=float, nan=False)
    meas = make_structured_synthesis(dom, dp.change_one_distance(), enc, 4.0, options, delta)
    certified = meas.map(1) if delta is None else meas.map(1)[0]
    assert dreport.details["epsilon_release"] == certified


def test_dask_default_with_delta_is_the_network_in_memory_release(
    table_files: Any, cluster: Any
) -> None:
    """joint='auto' with delta at n eps / k = 4800 (>= NETWORK_MIN_NEPS_ZCDP): the rule reads
    the noise on Dask as in memory, so both run the network and give the same rows."""
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    with runtime.reproducible(21):
        expected, report = synthesize_table(
            table, 4.0, schema, structured=StructuredOptions(), delta=1e-9
        )
    assert report.details["joint_kind"] == "network"
    out = table_files / "out-auto-delta"
    with runtime.reproducible(21):
        _, _, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            4.0,
            out,
            schema,
            cluster,
            rows_per_block=1000,
            delta=1e-9,
        )
    assert dreport.details["joint_kind"] == "network"
    assert pq.read_table(out).equals(expected)
    assert (dreport.epsilon, dreport.delta) == (report.epsilon, report.delta)


def test_dask_network_on_the_csprng(table_files: Any, inline: Any) -> None:
    """Without a seed: OpenDP's noise and selections on the driver, pure and delta (no equality
    to expect: the public size, k - 1 cliques, the in-memory certificate)."""
    schema = Schema.from_json(SCHEMA)
    src = str(table_files / "t.parquet")
    for delta in (None, 1e-9):
        out = table_files / f"out-network-secure-{delta}"
        n, _, report = synthesize_table_on_dask(
            src, 4.0, out, schema, inline, options=NETWORK, delta=delta
        )
        assert (n, pq.read_table(out).num_rows) == (6000, 6000)
        assert len(report.details["network_cliques"]) == 4
        assert report.delta == delta
        assert report.epsilon <= 4.0


def test_network_counts_task_is_make_clique_counts(table_files: Any) -> None:
    """The workers' network statistics are make_clique_counts' (fine pairs, coarse pairs,
    coarse triples of network_triples) and make_pattern_counts' on the block's rows, and every
    oriented table the rounds read is make_clique_counts' of that clique."""
    from opendp_wasserstein.distributed._tables import (
        _oriented,
        network_counts_task,
        network_triples,
    )
    from opendp_wasserstein.tables.network import Clique, NetworkCoding, make_clique_counts

    schema = Schema.from_json(SCHEMA)
    enc = TableEncoding(schema)
    blocks, _ = table_blocks(str(table_files / "t.parquet"), enc, 1000)
    x = blocks[4]()
    plans = column_plans(enc)

    def coding(cuts: list[float]) -> PairCoding:
        edges = [None if p.kind == "category" else np.array(cuts) for p in plans]
        sizes = tuple(
            p.cells if e is None else len(cuts) - 1 + (p.missing_axis is not None)
            for p, e in zip(plans, edges, strict=True)
        )
        return PairCoding(plans, tuple(edges), sizes)

    net = NetworkCoding(coding([0.0, 0.2, 0.4, 0.7, 1.0]), coding([0.0, 0.5, 1.0]), 40)
    triples = network_triples(net)
    # coarse sizes: region 5, smoker 2, age 2, income 3, spend 3; at most 40 cells: all but
    # region x income x spend (45)
    assert triples == [(0, 1, 2), (0, 1, 3), (0, 1, 4), (0, 2, 3), (0, 2, 4), (1, 2, 3),
                       (1, 2, 4), (1, 3, 4), (2, 3, 4)]  # fmt: skip
    got = network_counts_task(blocks[4], net)
    k = len(plans)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    assert len(got) == 2 * len(pairs) + len(triples) + 1
    dom = dp.numpy.array2_domain(num_columns=enc.dimension, T=float, nan=False)
    sym = dp.symmetric_distance()
    keys = [("fine", p) for p in pairs] + [("coarse", p) for p in pairs]
    keys += [("coarse", t) for t in triples]
    for (name, cols), g in zip(keys, got[:-1], strict=True):
        cd = net.fine if name == "fine" else net.coarse
        want = make_clique_counts(dom, sym, cd, Clique(cols[-1], cols[:-1]))(x)
        assert g.tolist() == list(want)
        assert sum(want) == 1000
    assert got[-1].tolist() == list(make_pattern_counts(dom, sym, net.fine)(x))
    stats = dict(zip(keys, got[:-1], strict=True))
    for q in (Clique(0, (3,)), Clique(1, (4, 0)), Clique(2, (4, 3)), Clique(3, (0, 2))):
        lv = len(q.parents)
        want = make_clique_counts(dom, sym, net.level(lv), q)(x)
        assert _oriented(net, stats, lv, q.columns).tolist() == list(want)


def test_dask_delta_copula_is_the_in_memory_release_under_the_same_key(
    table_files: Any, cluster: Any
) -> None:
    """``joint="copula"`` with delta on a LocalCluster: the per-block pair counts summed, their
    discrete Gaussian drawn once on the driver from the in-memory stream: the in-memory rows,
    the same certificate ``(epsilon', delta)`` and the same number of pairs."""
    schema = Schema.from_json(SCHEMA)
    table = read_file(str(table_files / "t.parquet"), schema=schema)
    options = StructuredOptions(joint="copula")
    with runtime.reproducible(17):
        expected, report = synthesize_table(table, 0.25, schema, structured=options, delta=1e-9)
    assert report.details["joint_kind"] == "copula"
    assert report.details["noise"] == "gaussian"
    out = table_files / "out-delta-copula"
    with runtime.reproducible(17):
        _, _, dreport = synthesize_table_on_dask(
            str(table_files / "t.parquet"),
            0.25,
            out,
            schema,
            cluster,
            options=options,
            rows_per_block=1000,
            delta=1e-9,
        )
    assert pq.read_table(out).equals(expected)
    assert dreport.epsilon == report.epsilon
    assert dreport.delta == report.delta
    for key in ("copula_pairs", "rho", "rho_marginals", "split_order"):
        assert dreport.details.get(key) == report.details.get(key)
