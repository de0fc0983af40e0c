"""The one helper for optional dependencies: it names the pip package and the extra."""

from __future__ import annotations

import sys

import pytest

from opendp_wasserstein.core.optional import EXTRAS, OptionalDependencyError, import_optional


def test_installed_modules_are_returned():
    import json

    assert import_optional("json") is json


@pytest.mark.parametrize(
    ("module", "pip", "extra"),
    [
        ("polars", "polars", "polars"),
        ("ot", "POT", "eval"),
        ("ortools.graph.python", "ortools", "eval"),
        ("distributed", "dask[distributed]", "dask"),
        ("tqdm", "tqdm", "progress"),
    ],
)
def test_a_missing_module_names_the_package_and_the_extra(monkeypatch, module, pip, extra):
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(OptionalDependencyError) as info:
        import_optional(module, "this feature")
    message = str(info.value)
    assert message.startswith("this feature needs ")
    assert f"pip install {pip}" in message
    assert f"opendp-wasserstein[{extra}]" in message
    assert isinstance(info.value, ImportError)


def test_every_extra_named_is_an_extra_of_the_package():
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    declared = set(extras["project"]["optional-dependencies"])
    assert {extra for _, extra in EXTRAS.values()} <= declared
