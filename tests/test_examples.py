"""Every example runs (small settings), so none rots."""

import importlib.util
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_chaining_with_opendp():
    out = load("chaining_with_opendp").main(n=2000)
    assert out["composition_epsilon"] == pytest.approx(1.0, rel=1e-12)
    assert out["binary_search_epsilon"] <= 0.7


def test_figure2_quick(tmp_path):
    rows = load("figure2_adaptive").main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "figure2.csv").exists() and (tmp_path / "figure2.png").exists()
    text = (tmp_path / "figure2.csv").read_text().splitlines()
    assert text[0].startswith("k,d,rep,mechanism,w1") and len(text) > 4
    assert len(rows) == 2 * 2 * 2  # d in {2, 4}, two repeats, two mechanisms
    assert all(r["epsilon"] == 1.0 and r["w1"] > 0 for r in rows)


def test_real_data_digits(tmp_path):
    pytest.importorskip("sklearn")
    reports = load("real_data_digits").main(["--out", str(tmp_path)])
    assert (tmp_path / "digits.png").exists()
    assert all(r.epsilon == 1.0 for r in reports.values())
