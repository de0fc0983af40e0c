"""Entry points, sources, atomic output and worker failures of distributed releases
(:mod:`opendp_wasserstein.distributed._executor`, ``_source``, ``_output``)."""

from __future__ import annotations

import os

import numpy as np
import opendp.prelude as dp
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import tests.distributed.helpers as helpers
from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.core.plan import plan_of
from opendp_wasserstein.distributed import release_on_dask, select_on_dask, synthesize_on_dask
from opendp_wasserstein.measurements import make_pruned_pmm
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import paper_schedule
from tests.distributed.conftest import sorted_rows


@pytest.fixture(autouse=True, scope="module")
def _hooks_by_value():
    import cloudpickle

    cloudpickle.register_pickle_by_value(helpers)  # the worker processes cannot import tests/
    yield
    cloudpickle.unregister_pickle_by_value(helpers)


def pruned(n: int, d: int = 2, depth: int = 12):  # type: ignore[no-untyped-def]
    dom = dp.numpy.array2_domain(num_columns=d, size=n, T=float)
    return make_pruned_pmm(
        dom, dp.change_one_distance(), depth, paper_schedule(d, 1.0, depth), placement="uniform"
    )


def rows(n: int, d: int = 2, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(size=(n, d)) ** 3


def leftovers(path) -> list[str]:  # type: ignore[no-untyped-def]
    return [f for f in os.listdir(path) if f.startswith(".")]


# ---------------------------------------------------------------------------------------------
# worker failures (the real cluster)
# ---------------------------------------------------------------------------------------------


def test_a_worker_killed_mid_release_gives_the_same_release(killable_cluster, tmp_path):
    meas, x = pruned(3000), rows(3000)
    with reproducible(4):
        clean = release_on_dask(
            meas, x, tmp_path / "clean", client=killable_cluster, parts=3, rows_per_block=800
        )
    hook = helpers.KillWorker(str(tmp_path / "sentinel"), q=1)
    with reproducible(4):
        again = release_on_dask(
            meas,
            x,
            tmp_path / "killed",
            client=killable_cluster,
            parts=3,
            rows_per_block=800,
            _hook=hook,
        )
    assert (tmp_path / "sentinel").exists()  # the worker was killed once, the part retried
    assert np.array_equal(sorted_rows(clean.read()), sorted_rows(again.read()))
    for name in os.listdir(tmp_path / "clean"):  # part by part, byte for byte
        assert pq.read_table(tmp_path / "clean" / name).equals(
            pq.read_table(tmp_path / "killed" / name)
        )
    assert leftovers(tmp_path) == []


def test_a_release_that_keeps_failing_writes_nothing(killable_cluster, tmp_path):
    from distributed import KilledWorker

    hook = helpers.KillWorker(str(tmp_path / "sentinel"), q=0, always=True)
    with pytest.raises(KilledWorker):
        release_on_dask(
            pruned(2000),
            rows(2000),
            tmp_path / "out",
            client=killable_cluster,
            parts=2,
            rows_per_block=500,
            _hook=hook,
        )
    assert not (tmp_path / "out").exists()
    assert leftovers(tmp_path) == []


def test_a_task_error_writes_nothing(inline, tmp_path):
    with pytest.raises(RuntimeError, match="injected"):
        release_on_dask(
            pruned(1000),
            rows(1000),
            tmp_path / "out",
            client=inline,
            parts=3,
            rows_per_block=300,
            _hook=helpers.Fail(2),
        )
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------


def test_output_is_refused_if_it_exists_unless_overwrite(inline, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("old")
    with pytest.raises(FileExistsError, match="exists"):
        release_on_dask(pruned(500), rows(500), tmp_path / "out", client=inline)
    rel = release_on_dask(pruned(500), rows(500), tmp_path / "out", client=inline, overwrite=True)
    assert sorted(os.listdir(rel.path)) == ["part-00000.parquet"]
    assert rel.read().shape == (500, 2)
    assert leftovers(tmp_path) == []


def test_parts_hold_the_source_column_names(inline, tmp_path):
    x = rows(900, 3)
    pq.write_table(
        pa.table({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]}),
        tmp_path / "in.parquet",
        row_group_size=100,
    )
    rel = release_on_dask(
        pruned(900, 3), str(tmp_path / "in.parquet"), tmp_path / "out", client=inline, parts=2
    )
    for f in os.listdir(rel.path):
        assert pq.read_schema(rel.path + "/" + f).names == ["a", "b", "c"]
    assert rel.rows == 900
    assert rel.parts == 2


# ---------------------------------------------------------------------------------------------
# sources
# ---------------------------------------------------------------------------------------------


def test_parquet_directory_dask_frame_and_array_give_the_same_release(inline, tmp_path):
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    n, x = 1200, rows(1200)
    meas = pruned(n)
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3):  # three files, several row groups each, one extra column
        part = x[i * 400 : (i + 1) * 400]
        pq.write_table(
            pa.table({"u": part[:, 0], "v": part[:, 1], "id": np.arange(400)}),
            src / f"f{i}.parquet",
            row_group_size=90,
        )
    frame = dd.from_pandas(pd.DataFrame(x, columns=["u", "v"]), npartitions=4)
    array = da.from_array(x, chunks=(350, 2))
    outs = []
    for k, source in enumerate([x, str(src), frame, array]):
        with reproducible(9):
            outs.append(
                release_on_dask(
                    meas,
                    source,
                    tmp_path / f"o{k}",
                    client=inline,
                    columns=["u", "v"] if k in (1, 2) else None,
                    parts=2,
                    rows_per_block=250,
                ).read()
            )
    for o in outs[1:]:
        assert np.array_equal(sorted_rows(o), sorted_rows(outs[0]))


def test_source_errors_name_the_parameter_not_a_value(inline, tmp_path):
    x = rows(100)
    pq.write_table(pa.table({"u": x[:, 0], "s": ["secret-123"] * 100}), tmp_path / "bad.parquet")
    with pytest.raises(TypeError, match="numeric") as err:
        release_on_dask(pruned(100), str(tmp_path / "bad.parquet"), tmp_path / "o", client=inline)
    assert "secret" not in str(err.value)
    with pytest.raises(ValueError, match="columns"):
        release_on_dask(
            pruned(100), str(tmp_path / "bad.parquet"), tmp_path / "o", client=inline, columns=["u"]
        )
    with pytest.raises(FileNotFoundError, match="source"):
        release_on_dask(pruned(100), str(tmp_path / "missing"), tmp_path / "o", client=inline)
    x[3, 1] = np.nan
    strict = make_pruned_pmm(
        dp.numpy.array2_domain(num_columns=2, size=100, nan=False, T=float),
        dp.symmetric_distance(),
        5,
        paper_schedule(2, 1.0, 5),
    )
    with pytest.raises(ValueError, match="NaN"):
        release_on_dask(strict, x, tmp_path / "o", client=inline)
    with pytest.raises(TypeError, match="plan"):
        release_on_dask(dp.m.make_randomized_response_bool(0.7), x, tmp_path / "o", client=inline)
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------------------------
# entry points: the same measurement, the same map
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
def test_synthesize_on_dask_is_synthesize(mechanism, inline, tmp_path):
    x = rows(2500, 3)
    with reproducible(1):
        y, rep = synthesize(x, 1.0, bounds=(0, 1), mechanism=mechanism)
    with reproducible(1):
        rel, rep_d = synthesize_on_dask(
            x, 1.0, tmp_path / "o", bounds=(0, 1), mechanism=mechanism, client=inline
        )
    assert rep_d.epsilon == rep.epsilon
    assert rep_d.depth == rep.depth
    assert np.array_equal(sorted_rows(y), sorted_rows(rel.read()))


def test_synthesize_on_dask_refuses_privtree_by_name(inline, tmp_path):
    """PrivTree has no Dask plan: refused before anything is read or written."""
    with pytest.raises(ValueError, match="mechanism='privtree' has no Dask plan"):
        synthesize_on_dask(
            rows(100, 2), 1.0, tmp_path / "o", bounds=(0, 1), mechanism="privtree", client=inline
        )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "post", [{"consistency": "paper"}, {"consistency": "least_squares", "threshold": 1.0}]
)
def test_synthesize_on_dask_takes_the_post_processing(post, inline, tmp_path):
    x = rows(2500, 3)
    with reproducible(2):
        y, rep = synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned", **post)
    with reproducible(2):
        rel, _ = synthesize_on_dask(
            x, 1.0, tmp_path / "o", bounds=(0, 1), mechanism="pruned", client=inline, **post
        )
    assert np.array_equal(sorted_rows(y), sorted_rows(rel.read()))
    with pytest.raises(ValueError, match="consistency and threshold apply only"):
        synthesize_on_dask(
            x, 1.0, tmp_path / "p", bounds=(0, 1), mechanism="pmm", client=inline, **post
        )
    with pytest.raises(ValueError, match="consistency must be one of"):
        synthesize_on_dask(x, 1.0, tmp_path / "p", bounds=(0, 1), consistency="lsq", client=inline)


@pytest.mark.parametrize(
    "mechanism, depth, epsilon_size",
    [
        ("adaptive", None, None),
        ("adaptive", None, 0.3),
        ("pruned", None, None),
        ("pmm", None, None),
        ("pruned", 9, None),
    ],
)
def test_private_size_on_dask_is_synthesize(mechanism, depth, epsilon_size, inline, tmp_path):
    # the DP count is a sum over the blocks, then the in-memory closure's noise: with a fixed
    # seed the same n_hat, depth and rows; the map is the in-memory measurement's own
    x = rows(1800, 3)
    kw = {
        "mechanism": mechanism,
        "depth": depth,
        "epsilon_size": epsilon_size,
        "public_size": False,
    }
    with reproducible(4):
        y, rep = synthesize(x, 1.0, bounds=(0, 1), **kw)
    with reproducible(4):
        rel, rep_d = synthesize_on_dask(x, 1.0, tmp_path / "o", bounds=(0, 1), client=inline, **kw)
    assert rep_d.epsilon == rep.epsilon
    assert rep_d.depth == rep.depth
    assert rep_d.seconds is None
    assert rep_d.details.get("size_estimate") == rep.details.get("size_estimate")
    assert rep_d.size == rep.size
    assert np.array_equal(sorted_rows(y), sorted_rows(rel.read()))


def test_private_size_measurement_has_the_noisy_size_plan_and_its_map():
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.core.plan import NoisySizePlan
    from opendp_wasserstein.release.measurement import synthesis_measurement
    from opendp_wasserstein.release.options import SynthesisOptions

    dp.enable_features("contrib")
    opts = SynthesisOptions(
        epsilon=1.0,
        public_size=False,
        epsilon_size=0.1,
        consistency="paper",
        threshold=0.0,
        score="paper",
    )
    meas, _ = synthesis_measurement(opts, d=3, n=None, box=as_box((0, 1), 3))
    plan = plan_of(meas)
    assert isinstance(plan, NoisySizePlan)
    assert (plan.d, plan.nan) == (3, False)  # the high-level functions release on NaN-free arrays
    assert meas.map(1) <= 1.0
    with reproducible(3):
        n_hat = plan.noisy_size(5000)
    with reproducible(3):
        assert plan.noisy_size(5000) == n_hat  # the in-memory closure, seeded
    assert plan.noisy_size(0) >= 1  # n_hat >= 1
    inner = plan.inner(n_hat)
    assert plan_of(inner).scores.size is None  # the built mechanism keeps the private-size domain


def test_private_size_real_cluster_gives_the_in_memory_release(cluster, tmp_path):
    x = rows(3000, 2, seed=5)
    path = tmp_path / "data.parquet"
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1]}), path, row_group_size=700)
    with reproducible(6):
        y, rep = synthesize(x, 1.0, bounds=(0, 1), public_size=False)
    with reproducible(6):
        rel, rep_d = synthesize_on_dask(
            str(path), 1.0, tmp_path / "o", bounds=(0, 1), public_size=False, client=cluster
        )
    assert rep_d.details["size_estimate"] == rep.details["size_estimate"] == rel.rows
    assert np.array_equal(sorted_rows(y), sorted_rows(rel.read()))
    assert rep_d.epsilon == rep.epsilon


def test_private_size_refuses_what_synthesize_refuses(inline, tmp_path):
    x = rows(100, 2)
    with pytest.raises(ValueError, match="epsilon_size applies only"):
        synthesize_on_dask(x, 1.0, tmp_path / "o", bounds=(0, 1), epsilon_size=0.1, client=inline)
    with pytest.raises(ValueError, match="epsilon_size must be smaller"):
        synthesize_on_dask(
            x,
            1.0,
            tmp_path / "o",
            bounds=(0, 1),
            public_size=False,
            epsilon_size=1.0,
            client=inline,
        )
    with pytest.raises(TypeError, match="public_size"):
        synthesize_on_dask(x, 1.0, tmp_path / "o", bounds=(0, 1), public_size="no", client=inline)
    with pytest.raises(ValueError, match="depth applies only"):
        synthesize_on_dask(
            x, 1.0, tmp_path / "o", bounds=(0, 1), public_size=False, depth=5, client=inline
        )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("mechanism", ["projection", "tree-em", "nn"])
def test_select_on_dask_is_select_candidates(mechanism, cluster):
    dp.enable_features("idealized-numerics")
    x = np.random.default_rng(0).normal(size=(3000, 2))
    c = np.random.default_rng(1).normal(size=(25, 2))
    with reproducible(2):
        a, rep = select_candidates(x, c, 40, 1.0, mechanism=mechanism)
    with reproducible(2):
        b, rep_d = select_on_dask(x, c, 40, 1.0, mechanism=mechanism, client=cluster)
    assert rep_d.epsilon == rep.epsilon
    assert int(b.sum()) == 40
    if mechanism != "nn":  # OpenDP's own Laplace noise cannot be seeded
        assert np.array_equal(a, b)


def test_the_plan_is_recorded_by_the_constructor_and_the_map_is_its_own():
    meas = pruned(100)
    plan = plan_of(meas)
    assert plan.depth == 12
    assert plan.size == 100
    assert plan.placement == "uniform"
    assert meas.map(1) == 1.0  # the distributed release is certified by this very map


def test_candidate_index_is_scattered_under_a_fresh_key(inline):
    """Two releases with the same candidates must not share the scattered index's key: Dask
    derives a key from the content by default, and a second scatter racing the release of the
    first one's key cancelled a task with "lost dependencies" (seen once in CI)."""
    calls = []

    class Recording(type(inline)):  # type: ignore[misc]
        def scatter(self, value, broadcast=False, hash=True):  # noqa: A002 - Dask's name
            calls.append(hash)
            return super().scatter(value, broadcast, hash)

    x = np.random.default_rng(0).normal(size=(500, 2))
    c = np.random.default_rng(1).normal(size=(10, 2))
    for _ in range(2):
        select_on_dask(x, c, 5, 1.0, mechanism="projection", client=Recording())
    assert calls == [False, False]


@pytest.mark.parametrize(
    "mechanism,depth,epsilon_size", [("pruned", 14, None), ("adaptive", None, 0.1)]
)
def test_private_size_parts_do_not_follow_the_input_blocks(
    mechanism, depth, epsilon_size, inline, tmp_path
):
    """The number of input blocks grows with n; with a private size the number of output files
    must not: one per 2^22 rows of the DP count, or (no DP count) a number set by the cluster."""
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.distributed._pmm import SPLIT_GROUPS
    from opendp_wasserstein.distributed._source import parquet_files
    from opendp_wasserstein.release.measurement import synthesis_measurement
    from opendp_wasserstein.release.options import SynthesisOptions

    opts = SynthesisOptions(
        epsilon=1.0,
        mechanism=mechanism,
        depth=depth,
        public_size=False,
        epsilon_size=epsilon_size,
        consistency="paper",
        threshold=0.0,
    )
    meas, _ = synthesis_measurement(opts, d=2, n=None, box=as_box((0, 1), 2))
    expected = 1 if epsilon_size else SPLIT_GROUPS  # the inline client has no workers
    for n in (100, 1000):
        rel = release_on_dask(meas, rows(n), tmp_path / f"o{n}", client=inline, rows_per_block=50)
        assert rel.parts == expected
        assert len(parquet_files(tmp_path / f"o{n}")) == expected


def test_a_text_column_is_refused_by_its_type_whatever_it_holds(inline, tmp_path):
    """Numbers stored as text read fine until one word is among them: refusing by values would
    tell whether that record is there, so a text column is refused by its (public) type."""
    for tag, values in (("numbers", ["0.5"] * 100), ("one-word", ["0.5"] * 99 + ["abc"])):
        path = tmp_path / f"{tag}.parquet"
        pq.write_table(pa.table({"u": rows(100)[:, 0], "s": values}), path)
        with pytest.raises(TypeError, match="numeric"):
            release_on_dask(pruned(100), str(path), tmp_path / f"o-{tag}", client=inline)


def test_no_progress_bar_when_the_size_is_private(cluster, tmp_path, capsys):
    """The bars count input blocks, whose number grows with n: with a private size none is shown."""
    pytest.importorskip("tqdm")
    from opendp_wasserstein.core.box import as_box
    from opendp_wasserstein.release.measurement import synthesis_measurement
    from opendp_wasserstein.release.options import SynthesisOptions

    opts = SynthesisOptions(
        epsilon=1.0,
        mechanism="pruned",
        depth=14,
        public_size=False,
        consistency="paper",
        threshold=0.0,
    )
    private, _ = synthesis_measurement(opts, d=2, n=None, box=as_box((0, 1), 2))
    release_on_dask(
        private, rows(300), tmp_path / "p", client=cluster, rows_per_block=50, progress=True
    )
    assert "count" not in capsys.readouterr().err
    release_on_dask(
        pruned(300), rows(300), tmp_path / "q", client=cluster, rows_per_block=50, progress=True
    )
    assert "count" in capsys.readouterr().err


def test_ties_are_dealt_over_the_whole_data_not_per_block(cluster, tmp_path):
    """Tied rows (a lattice) in many Parquet row groups: the blocks send tallies and the driver
    deals the ties once, so the Dask release is the in-memory one (issue 20, item 8)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from opendp_wasserstein.distributed._histogram import histogram_task
    from opendp_wasserstein.public_candidates.sets import NearestCandidates, Tally

    rng = np.random.default_rng(5)
    c = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    x = rng.integers(0, 3, size=(2000, 2)) * 0.5  # 0, 0.5, 1: ties between 2 or 4 candidates
    nearest = NearestCandidates(c)
    whole = np.bincount(nearest.query(x), minlength=4)
    total = Tally(np.zeros(4, dtype=np.int64))
    for block in np.array_split(x, 7):
        total = total.merge(histogram_task(block, 2, False, nearest)[1])
    assert np.array_equal(nearest.histogram(total), whole)
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1]}), path, row_group_size=300)
    for mechanism in ("projection", "nn"):
        with reproducible(4):
            a, _ = select_candidates(x, c, 40, 1e4, mechanism=mechanism)
        with reproducible(4):
            b, _ = select_on_dask(str(path), c, 40, 1e4, mechanism=mechanism, client=cluster)
        if mechanism == "projection":
            assert np.array_equal(a, b)
        # epsilon 1e4: almost no noise, the even split of the ties shows (it was all to row 0)
        assert np.abs(b - 10).max() <= 2


def test_synthesize_on_dask_checks_the_options_once_and_matches_in_memory(
    inline, tmp_path, monkeypatch
):
    """The Dask front end builds the release's option object once (no second copy of the checks)
    and the measurement the in-memory release builds for the same arguments: the same report."""
    from opendp_wasserstein import synthesize
    from opendp_wasserstein.release.options import SynthesisOptions

    calls: list[str] = []
    original = SynthesisOptions.__post_init__

    def counting(self: SynthesisOptions) -> None:
        calls.append(self.mechanism)
        original(self)

    monkeypatch.setattr(SynthesisOptions, "__post_init__", counting)
    x = rows(2000)
    with reproducible(3):
        rel, report = synthesize_on_dask(
            x, 1.0, tmp_path / "out", bounds=(0, 1), mechanism="pruned", client=inline
        )
    assert calls == ["pruned"]
    with reproducible(3):
        y, memory = synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned")
    assert (report.epsilon, report.depth, report.scales) == (
        memory.epsilon,
        memory.depth,
        memory.scales,
    )
    assert rel.rows == len(y) == 2000
    with pytest.raises(TypeError):
        synthesize_on_dask(x, 1.0, tmp_path / "o2", (0, 1), "pruned")  # options are keyword-only


# ---------------------------------------------------------------------------------------------
# a client started in the background (the command line's --scheduler local:N)
# ---------------------------------------------------------------------------------------------


def test_a_future_of_a_client_gives_the_release_of_the_client(cluster, tmp_path):
    from concurrent.futures import Future

    x = rows(3000, 2)
    handle: Future = Future()
    handle.set_result(cluster)
    got = []
    for c in (cluster, handle):
        with reproducible(4):
            rel, _ = synthesize_on_dask(x, 1.0, tmp_path / f"o{len(got)}", (0, 1), client=c)
        got.append(sorted_rows(rel.read()))
    assert np.array_equal(got[0], got[1])
    failed: Future = Future()
    failed.set_exception(OSError("the cluster did not start"))
    with pytest.raises(OSError, match="did not start"):
        synthesize_on_dask(x, 1.0, tmp_path / "o9", (0, 1), client=failed)
    assert not (tmp_path / "o9").exists()


def test_local_client_in_background_starts_then_closes_the_cluster():
    from concurrent.futures import Future

    from opendp_wasserstein.distributed import local_client_in_background

    with local_client_in_background(workers=1, processes=False) as handle:
        assert isinstance(handle, Future)
        client = handle.result(timeout=120)
        assert client.submit(sum, [1, 2]).result() == 3
        assert len(client.scheduler_info()["workers"]) == 1
    assert client.status == "closed"
    with local_client_in_background(workers=1, processes=False) as unused:
        pass  # never waited for: closed all the same once started
    assert unused.result().status == "closed"


def test_local_client_workers_start_without_the_malloc_trim_threshold(monkeypatch):
    """The workers of :func:`local_client` keep glibc's dynamic mmap threshold: Dask's default
    ``MALLOC_TRIM_THRESHOLD_`` is not in their environment, even when an earlier nanny of this
    process left it in ``os.environ`` (which is restored after)."""
    import os

    from opendp_wasserstein.distributed import local_client

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with local_client(workers=1) as client:
        seen = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        assert os.environ.get("MALLOC_TRIM_THRESHOLD_") == "65536"
    assert list(seen.values()) == [None]
