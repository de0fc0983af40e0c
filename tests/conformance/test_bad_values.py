"""One rule per kind of input for NaN, missing and infinite values, the same in Python, on the
command line and on Dask (issue 20, item 11; the table in docs/tables.rst, "Missing and
non-finite values").  One test per cell of the table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.cli import main
from opendp_wasserstein.tables import CategoricalColumn, FloatColumn, Schema

SECRET = 987654.321
C = np.array([[0.1, 0.1], [0.9, 0.9]])
SCHEMA = Schema(
    {"x": FloatColumn(bounds=(0.0, 1.0)), "c": CategoricalColumn(categories=("a", "b"))}
)
CAND_TABLE = pd.DataFrame({"x": [0.1, 0.9], "c": ["a", "b"]})


@pytest.fixture(autouse=True)
def _contrib() -> None:
    dp.enable_features("contrib")


def _array(bad: float) -> np.ndarray:
    x = np.random.default_rng(0).uniform(size=(60, 2))
    x[7, 0] = bad
    x[8, 1] = SECRET
    return x


def _table(bad: object) -> pd.DataFrame:
    df = pd.DataFrame({"x": np.linspace(0.05, 0.95, 60), "c": ["a", "b"] * 30})
    df["x"] = df["x"].astype(object)
    df.loc[7, "x"] = bad
    df["x"] = df["x"].astype(float)
    return df


# -- numeric arrays without a schema: NaN refused (outside the domain), +-inf mapped -----------


@pytest.mark.parametrize("call", ["synthesize", "select"])
def test_array_nan_is_refused_naming_the_parameter_only(call: str) -> None:
    x = _array(np.nan)
    with pytest.raises(ValueError, match="must not contain NaN") as info:
        synthesize(x, 1.0, bounds=(0, 1)) if call == "synthesize" else select_candidates(
            x, C, 5, 1.0
        )
    assert "987654" not in str(info.value)
    assert "7" not in str(info.value)


@pytest.mark.parametrize("bad", [np.inf, -np.inf])
def test_array_inf_is_clamped_by_synthesize_and_tied_by_select(bad: float) -> None:
    y, _ = synthesize(_array(bad), 1.0, bounds=(0, 1))
    assert np.all((y >= 0) & (y <= 1))
    counts, _ = select_candidates(_array(bad), C, 5, 1.0)
    assert int(counts.sum()) == 5


# -- the command line follows the same rule ------------------------------------------------


def _csv(path: Path, x: np.ndarray) -> str:
    path.write_text("a,b\n" + "\n".join(f"{u!r},{v!r}" for u, v in x.tolist()) + "\n")
    return str(path)


def test_cli_nan_refused_inf_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bounds = tmp_path / "b.json"
    bounds.write_text(json.dumps({"a": [0, 1], "b": [0, 1]}))
    cands = _csv(tmp_path / "c.csv", C)
    for bad, code in ((np.nan, 2), (np.inf, 0), (-np.inf, 0)):
        data = _csv(tmp_path / "d.csv", _array(bad))
        assert (
            main(
                [
                    "synth",
                    data,
                    "-o",
                    str(tmp_path / "o.csv"),
                    "--epsilon",
                    "1",
                    "--bounds",
                    str(bounds),
                    "--quiet",
                ]
            )
            == code
        )
        assert (
            main(
                [
                    "select",
                    data,
                    cands,
                    "-m",
                    "5",
                    "--epsilon",
                    "1",
                    "-o",
                    str(tmp_path / "s.csv"),
                    "--quiet",
                ]
            )
            == code
        )
    err = capsys.readouterr().err
    assert "987654" not in err


# -- Dask follows the same rule ------------------------------------------------------------


def test_dask_nan_refused_inf_accepted(tmp_path: Path) -> None:
    from opendp_wasserstein.distributed import select_on_dask, synthesize_on_dask
    from tests.distributed.conftest import InlineClient

    with pytest.raises(ValueError, match="must not contain NaN") as info:
        synthesize_on_dask(
            _array(np.nan), 1.0, tmp_path / "o1", bounds=(0, 1), client=InlineClient()
        )
    assert "987654" not in str(info.value)
    with pytest.raises(ValueError, match="must not contain NaN"):
        select_on_dask(_array(np.nan), C, 5, 1.0, client=InlineClient())
    synthesize_on_dask(_array(np.inf), 1.0, tmp_path / "o2", bounds=(0, 1), client=InlineClient())
    counts, _ = select_on_dask(_array(-np.inf), C, 5, 1.0, client=InlineClient())
    assert int(counts.sum()) == 5


# -- tables with a schema: missing imputed (or a value of a nullable column), inf clamped -------


@pytest.mark.parametrize("bad", [np.nan, None, np.inf, -np.inf])
def test_table_bad_values_are_mapped_never_refused(bad: object) -> None:
    out, _ = synthesize(_table(bad), 1.0, schema=SCHEMA)
    assert out["x"].between(0, 1).all()
    assert out["x"].notna().all()
    counts, _ = select_candidates(_table(bad), CAND_TABLE, 5, 1.0, schema=SCHEMA)
    assert int(counts.sum()) == 5


def test_cli_schema_bad_values_are_mapped(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA.to_json()))
    data = tmp_path / "d.csv"
    data.write_text("x,c\n" + "\n".join(["0.2,a", ",b", "inf,a", "-inf,b", "nan,a"] * 10) + "\n")
    cands = tmp_path / "c.csv"
    CAND_TABLE.to_csv(cands, index=False)
    assert (
        main(
            [
                "synth",
                str(data),
                "-o",
                str(tmp_path / "o.csv"),
                "--epsilon",
                "1",
                "--schema",
                str(schema),
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "select",
                str(data),
                str(cands),
                "-m",
                "5",
                "--epsilon",
                "1",
                "-o",
                str(tmp_path / "s.csv"),
                "--schema",
                str(schema),
                "--quiet",
            ]
        )
        == 0
    )


# -- candidates are public: every bad value refused, by row number --------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_candidate_arrays_with_bad_values_are_refused(bad: float, tmp_path: Path) -> None:
    from opendp_wasserstein.distributed import select_on_dask
    from tests.distributed.conftest import InlineClient

    c = C.copy()
    c[1, 0] = bad
    x = np.random.default_rng(0).uniform(size=(30, 2))
    with pytest.raises(ValueError, match="candidates must be finite"):
        select_candidates(x, c, 5, 1.0)
    with pytest.raises(ValueError, match="candidates must be finite"):
        select_on_dask(x, c, 5, 1.0, client=InlineClient())
    cands = _csv(tmp_path / "c.csv", c)
    data = _csv(tmp_path / "d.csv", x)
    assert (
        main(
            [
                "select",
                data,
                cands,
                "-m",
                "5",
                "--epsilon",
                "1",
                "-o",
                str(tmp_path / "s.csv"),
                "--quiet",
            ]
        )
        == 2
    )


@pytest.mark.parametrize("bad", [np.nan, None, np.inf])
def test_candidate_tables_with_bad_values_are_refused(bad: object, tmp_path: Path) -> None:
    """They used to be imputed or clamped as the data are."""
    cands = CAND_TABLE.copy()
    cands["x"] = cands["x"].astype(object)
    cands.loc[1, "x"] = bad
    cands["x"] = cands["x"].astype(float)
    with pytest.raises(ValueError, match=r"candidates: column 'x' .*\(rows \[1\]\)"):
        select_candidates(_table(0.5), cands, 5, 1.0, schema=SCHEMA)
    c2 = CAND_TABLE.copy()
    c2.loc[0, "c"] = None
    with pytest.raises(ValueError, match=r"candidates: column 'c' is not nullable"):
        select_candidates(_table(0.5), c2, 5, 1.0, schema=SCHEMA)
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps(SCHEMA.to_json()))
    path = tmp_path / "c.csv"
    cands.to_csv(path, index=False)
    data = tmp_path / "d.csv"
    _table(0.5).to_csv(data, index=False)
    assert (
        main(
            [
                "select",
                str(data),
                str(path),
                "-m",
                "5",
                "--epsilon",
                "1",
                "-o",
                str(tmp_path / "s.csv"),
                "--schema",
                str(schema),
                "--quiet",
            ]
        )
        == 2
    )
