"""``--scheduler`` of the ``synth`` and ``select`` commands (:mod:`opendp_wasserstein.cli.dask`)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from opendp_wasserstein.cli import main


@pytest.fixture
def files(tmp_path):  # type: ignore[no-untyped-def]
    x = np.random.default_rng(0).uniform(size=(3000, 2))
    pq.write_table(
        pa.table({"a": x[:, 0], "b": x[:, 1]}), tmp_path / "data.parquet", row_group_size=500
    )
    (tmp_path / "b.json").write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    c = np.random.default_rng(1).uniform(size=(12, 2))
    (tmp_path / "c.csv").write_text("a,b\n" + "\n".join(f"{u},{v}" for u, v in c))
    return tmp_path


def test_synth_and_select_on_a_scheduler(files, cluster, capsys):
    address = cluster.scheduler.address
    out = files / "out"
    code = main(
        [
            "synth",
            str(files / "data.parquet"),
            "-o",
            str(out),
            "--epsilon",
            "1",
            "--bounds",
            str(files / "b.json"),
            "--scheduler",
            address,
            "--seed",
            "1",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows_out"] == 3000
    assert summary["epsilon_certified"] == 1.0
    assert pq.read_table(out).num_rows == 3000
    code = main(
        [
            "select",
            str(files / "data.parquet"),
            str(files / "c.csv"),
            "-m",
            "20",
            "--epsilon",
            "1",
            "-o",
            str(files / "sel.csv"),
            "--scheduler",
            address,
            "--json",
        ]
    )
    assert code == 0
    lines = (files / "sel.csv").read_text().splitlines()
    assert lines[0] == "a,b,multiplicity"
    assert sum(int(r.split(",")[-1]) for r in lines[1:]) == 20
    # an existing output directory is refused, and nothing is written
    assert (
        main(
            [
                "synth",
                str(files / "data.parquet"),
                "-o",
                str(out),
                "--epsilon",
                "1",
                "--bounds",
                str(files / "b.json"),
                "--scheduler",
                address,
                "--quiet",
            ]
        )
        == 2
    )
    assert "exists" in capsys.readouterr().err


def test_synth_private_size_on_a_scheduler(files, cluster, capsys):
    """--private-size: the DP count on the cluster; no field of the summary is read off n."""
    args = [
        "synth",
        str(files / "data.parquet"),
        "--epsilon",
        "1",
        "--bounds",
        str(files / "b.json"),
        "--scheduler",
        cluster.scheduler.address,
        "--json",
        "--private-size",
    ]
    seen = []
    for seed in ("1", "2"):
        out = files / f"priv{seed}"
        assert main([*args, "-o", str(out), "--seed", seed]) == 0
        summary = json.loads(capsys.readouterr().out)
        assert (
            summary["rows_out"]
            == summary["details"]["size_estimate"]
            == pq.read_table(out).num_rows
        )
        assert "seconds" not in summary  # a timing: never in a summary written with the release
        assert summary["epsilon_certified"] <= 1.0
        assert "rows_in" not in summary
        seen.append(summary["rows_out"])
    assert seen[0] != seen[1]  # the size comes from the noisy count, not from n


def test_scheduler_errors(files, capsys):
    args = [
        "synth",
        str(files / "data.parquet"),
        "-o",
        str(files / "o"),
        "--epsilon",
        "1",
        "--bounds",
        str(files / "b.json"),
    ]
    assert main([*args, "--scheduler", "local:zero"]) == 2
    assert "local:N" in capsys.readouterr().err
    assert not (files / "o").exists()


def test_scheduler_outputs_that_are_inputs_are_refused_before_any_work(files, capsys):
    """Issue 20 item 6: an output inside the input dataset's directory would be read as data by
    the next run; an output that is the data file would replace it.  Refused before a cluster
    starts (the scheduler address below is never contacted)."""
    ds = files / "ds"
    ds.mkdir()
    (files / "data.parquet").rename(ds / "part-0.parquet")
    before = (ds / "part-0.parquet").read_bytes()
    base = ["--epsilon", "1", "--scheduler", "tcp://192.0.2.1:1"]
    assert (
        main(
            [
                "synth",
                str(ds),
                "-o",
                str(ds / "synthetic"),
                "--bounds",
                str(files / "b.json"),
                *base,
            ]
        )
        == 2
    )
    assert "inside the input directory" in capsys.readouterr().err
    assert (
        main(
            [
                "select",
                str(ds / "part-0.parquet"),
                str(files / "c.csv"),
                "-m",
                "3",
                "-o",
                str(ds / "part-0.parquet"),
                *base,
            ]
        )
        == 2
    )
    assert "-o/--output" in capsys.readouterr().err
    assert (
        main(
            ["select", str(ds), str(files / "c.csv"), "-m", "3", "-o", str(files / "c.csv"), *base]
        )
        == 2
    )
    assert "is the candidates file" in capsys.readouterr().err
    assert (ds / "part-0.parquet").read_bytes() == before
    assert sorted(p.name for p in ds.iterdir()) == ["part-0.parquet"]
