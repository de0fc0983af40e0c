"""The release's option objects: keyword-only, frozen, checked once, shared by every front end."""

from __future__ import annotations

import dataclasses

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.release import options as options_module
from opendp_wasserstein.release.measurement import selection_measurement, synthesis_measurement
from opendp_wasserstein.release.options import SelectionOptions, SynthesisOptions, as_bounds
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import Schema


def test_options_are_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        SynthesisOptions(1.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        SelectionOptions(1.0)  # type: ignore[misc]
    opts = SynthesisOptions(epsilon=1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.epsilon = 2.0  # type: ignore[misc]


def test_defaults_are_resolved_once():
    opts = SynthesisOptions(epsilon=1, mechanism="pruned", depth=6)
    assert opts.epsilon == 1.0
    assert isinstance(opts.epsilon, float)
    assert opts.post == ("least_squares", 3.0)
    assert opts.resolved_score == "capped"
    assert SynthesisOptions(epsilon=1.0, consistency="paper").post == ("paper", 0.0)
    assert SynthesisOptions(epsilon=1.0, score="paper").resolved_score == "paper"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"public_size": "no"}, TypeError, "public_size must be True or False"),
        ({"delta": 2.0}, ValueError, r"delta must be in \(0, 1\)"),
        ({"delta": 1e-9, "public_size": False}, ValueError, "delta needs public_size=True"),
        ({"mechanism": "mst"}, ValueError, "mechanism must be one of"),
        (
            {"mechanism": "pmm", "threshold": 1.0},
            ValueError,
            "consistency and threshold apply only",
        ),
        ({"mechanism": "privtree", "delta": 1e-9}, ValueError, "pure DP only"),
        ({"mechanism": "pruned", "score": "paper"}, ValueError, "score applies only"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon_select": 2.0}, ValueError, "epsilon_select must be smaller than epsilon"),
        ({"mechanism": "pruned", "epsilon_select": 0.1}, ValueError, "epsilon_select applies only"),
        ({"depth": 4}, ValueError, "depth applies only"),
        ({"epsilon_size": 0.1}, ValueError, "epsilon_size applies only with public_size=False"),
        ({"public_size": False, "epsilon_size": 1.5}, ValueError, "epsilon_size must be smaller"),
    ],
)
def test_every_option_check_names_the_option(kwargs, error, match):
    with pytest.raises(error, match=match):
        SynthesisOptions(**{"epsilon": 1.0, **kwargs})


def test_selection_options_checks():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        SelectionOptions(epsilon=1.0, mechanism="mwem")
    with pytest.raises(ValueError, match="tree-em' needs public_size=True"):
        SelectionOptions(epsilon=1.0, mechanism="tree-em", public_size=False)
    with pytest.raises(TypeError, match="public_size"):
        SelectionOptions(epsilon=1.0, public_size=1)
    assert SelectionOptions(epsilon=2).epsilon == 2.0


def _count_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the option checks (``SynthesisOptions.__post_init__``) that run."""
    calls: list[str] = []
    original = SynthesisOptions.__post_init__

    def counting(self: SynthesisOptions) -> None:
        calls.append(self.mechanism)
        original(self)

    monkeypatch.setattr(SynthesisOptions, "__post_init__", counting)
    return calls


def test_a_table_release_checks_its_options_once(monkeypatch):
    """A table release goes through the front door once: the options are checked once (the old
    table path called the public ``synthesize`` again and re-ran every check)."""
    calls = _count_checks(monkeypatch)
    dp.enable_features("contrib")
    frame = pd.DataFrame({"a": np.random.default_rng(0).uniform(size=200), "b": ["x", "y"] * 100})
    schema = Schema.from_json(
        {
            "columns": {
                "a": {"type": "float", "bounds": [0, 1]},
                "b": {"type": "categorical", "categories": ["x", "y"]},
            }
        }
    )
    with reproducible(0):
        out, report = synthesize(frame, 1.0, schema=schema, mechanism="pruned", depth=4)
    assert calls == ["pruned"]
    assert report.epsilon == 1.0
    assert list(out.columns) == ["a", "b"]


def test_an_array_release_checks_its_options_once(monkeypatch):
    calls = _count_checks(monkeypatch)
    x = np.random.default_rng(1).uniform(size=(300, 2))
    with reproducible(1):
        synthesize(x, 1.0, bounds=(0, 1))
    assert calls == ["adaptive"]


def test_synthesize_takes_its_options_by_keyword():
    x = np.zeros((10, 2))
    with pytest.raises(TypeError):
        synthesize(x, 1.0, (0, 1), "pruned")  # type: ignore[misc]
    with pytest.raises(TypeError):
        select_candidates(x, x[:2] + np.arange(2)[:, None], 2, 1.0, "nn")  # type: ignore[misc]


def test_the_measurement_is_the_one_the_options_ask_for():
    """The measurement built from options certifies the budget: pure DP per replacement with a
    public size, per added or removed record without, (epsilon, delta) with delta."""
    dp.enable_features("contrib")
    box = as_bounds((0, 1), 2)
    meas, rho = synthesis_measurement(
        SynthesisOptions(epsilon=1.0, mechanism="pruned"), d=2, n=500, box=box
    )
    assert (meas.map(1), rho) == (1.0, None)
    meas, _ = synthesis_measurement(
        SynthesisOptions(epsilon=1.0, mechanism="pruned", depth=6, public_size=False),
        d=2,
        n=None,
        box=box,
    )
    assert meas.map(1) <= 1.0
    meas, rho = synthesis_measurement(
        SynthesisOptions(epsilon=1.0, delta=1e-9), d=2, n=500, box=box
    )
    assert meas.map(1) == (1.0, 1e-9)
    assert rho is not None
    sel = selection_measurement(
        SelectionOptions(epsilon=1.0), p=2, n=100, candidates=np.eye(2), m=5
    )
    assert sel.map(1) == 1.0


def test_as_bounds_forms():
    assert as_bounds({0: (0, 1), 1: (2, 3)}, 2).upper == (1.0, 3.0)
    with pytest.raises(ValueError, match="bounds are required"):
        as_bounds(None, 2)
    with pytest.raises(ValueError, match="keys 0 .. 1"):
        as_bounds({0: (0, 1)}, 2)


def test_the_defaults_are_the_api_defaults():
    from opendp_wasserstein import api

    assert api.DEFAULT_CONSISTENCY == options_module.DEFAULT_CONSISTENCY == "least_squares"
    assert api.MECHANISMS == options_module.MECHANISMS
