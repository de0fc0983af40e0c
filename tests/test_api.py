import numpy as np
import pytest

from opendp_wasserstein import synthesize


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
@pytest.mark.parametrize("eps", [1.0, 0.3, 0.7])
def test_synthesize_certifies_epsilon(mechanism, eps):
    x = np.random.default_rng(0).uniform(-1, 1, size=(2000, 3))
    keep = x.copy()
    y, report = synthesize(x, eps, bounds=(-1, 1), mechanism=mechanism, seed=1)
    assert np.array_equal(x, keep)
    assert report.epsilon == eps
    assert y.shape == (2000, 3) and np.all((y >= -1) & (y <= 1))
    assert report.visited_nodes >= 1 and report.depth >= 1 and len(report.scales) == report.depth + 1


def test_synthesize_unsized():
    x = np.random.default_rng(0).uniform(size=(500, 2))
    y, report = synthesize(x, 1.0, bounds=(0, 1), mechanism="pruned", public_size=False, seed=2)
    assert report.epsilon <= 1.0 and report.epsilon == pytest.approx(1.0, rel=1e-12)
    assert y.shape[1] == 2
    with pytest.raises(ValueError, match="public_size"):
        synthesize(x, 1.0, bounds=(0, 1), public_size=False)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"bounds": None}, "bounds"),
        ({"epsilon": 0}, "epsilon"),
        ({"mechanism": "mst"}, "mechanism"),
        ({"epsilon_select": 2.0}, "epsilon_select"),
        ({"X": np.zeros(5)}, "2-dimensional"),
        ({"X": np.array([[np.nan, 1.0]])}, "NaN"),
        ({"X": np.zeros((0, 2))}, "at least one row"),
        ({"X": np.array([["a", "b"]])}, "real numbers"),
    ],
)
def test_synthesize_errors(kwargs, match):
    args = {"X": np.zeros((10, 2)), "epsilon": 1.0, "bounds": (0, 1)} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        synthesize(**args)


@pytest.mark.parametrize("mechanism", ["projection", "tree-em", "nn"])
def test_select_candidates(mechanism):
    from opendp_wasserstein import select_candidates

    rng = np.random.default_rng(0)
    D = rng.normal(size=(400, 3))
    C = rng.normal(size=(30, 3))
    keep = D.copy()
    counts, report = select_candidates(D, C, 12, 0.5, mechanism=mechanism)
    assert np.array_equal(D, keep)
    assert counts.shape == (30,) and counts.sum() == 12 and np.all(counts >= 0)
    assert report.epsilon == 0.5 and report.k == 30


def test_select_candidates_errors():
    from opendp_wasserstein import select_candidates

    D = np.zeros((10, 2))
    C = np.array([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="mechanism"):
        select_candidates(D, C, 3, 1.0, mechanism="mst")
    with pytest.raises(ValueError, match="m"):
        select_candidates(D, C, 0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        select_candidates(D, C, 3, 0.0)
    with pytest.raises(ValueError, match="seed"):
        select_candidates(D, C, 3, 1.0, mechanism="nn", seed=1)
