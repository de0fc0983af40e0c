import numpy as np
import pandas as pd
import pytest

from opendp_wasserstein.evaluation import classifier_score, marginal_tvd, table_w1, w1
from opendp_wasserstein.tables import BoolColumn, CategoricalColumn, FloatColumn, IntColumn, Schema

S = Schema({
    "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
    "c": CategoricalColumn(categories=("a", "b", "c")),
    "k": IntColumn(bounds=(0, 9)),
})


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    x[rng.uniform(size=n) < 0.1] = np.nan
    return pd.DataFrame({"x": x, "c": rng.choice(["a", "b", "c"], n), "k": rng.integers(0, 10, n)})


def test_w1_exact_hand_values():
    a = pd.DataFrame({"x": [0.0, None], "c": ["a", "b"], "k": [0, 0]})
    b = pd.DataFrame({"x": [2.0, 5.0], "c": ["a", "b"], "k": [0, 0]})
    # row 1: missing vs present -> 1; row 0: 0.2
    assert table_w1(a, b, S).value == pytest.approx(0.6)
    assert table_w1(a, a, S).value == 0.0
    c = pd.DataFrame({"x": [0.0, None], "c": ["b", "a"], "k": [0, 0]})
    assert table_w1(a, c, S).value == pytest.approx(1.0)


def test_w1_matches_linf_on_numeric_tables():
    s = Schema({"u": FloatColumn(bounds=(0.0, 1.0)), "v": FloatColumn(bounds=(0.0, 1.0))})
    rng = np.random.default_rng(3)
    a, b = rng.uniform(size=(200, 2)), rng.uniform(size=(150, 2))
    assert table_w1(a, b, s).value == pytest.approx(w1(a, b, metric="linf"), abs=1e-12)


def test_w1_subsampled_reports_floor():
    a, b = _frame(600, 1), _frame(700, 2)
    est = table_w1(a, b, S, max_points=200, repeats=3, seed=0)
    assert not est.exact
    assert est.repeats == 3
    assert est.noise_floor > 0
    assert est.value > 0
    assert est == table_w1(a, b, S, max_points=200, repeats=3, seed=0)


def test_marginal_tvd_values():
    a = _frame(500, 1)
    assert marginal_tvd(a, a, S).mean == 0.0
    assert marginal_tvd(a, a, S, way=2).max == 0.0
    b = a.assign(c="a")
    one = marginal_tvd(a, b, S)
    share_a = (a["c"] == "a").mean()
    assert one.by_marginal[("c",)] == pytest.approx(1 - share_a)
    assert one.by_marginal[("x",)] == 0.0
    two = marginal_tvd(a, b, S, way=2)
    assert set(two.by_marginal) == {("x", "c"), ("x", "k"), ("c", "k")}
    assert two.by_marginal[("x", "k")] == 0.0
    assert two.by_marginal[("x", "c")] >= one.by_marginal[("c",)]
    with pytest.raises(ValueError, match="way"):
        marginal_tvd(a, b, S, way=3)


@pytest.mark.slow
def test_classifier_score_separates_signal_from_noise():
    s = Schema({"x": FloatColumn(bounds=(0.0, 1.0)), "y": BoolColumn()})
    rng = np.random.default_rng(0)

    def make(n):
        x = rng.uniform(size=n)
        return pd.DataFrame({"x": x, "y": x > 0.5})

    train, test = make(2000), make(2000)
    good = classifier_score(train, test, "y", s, train_real=train)
    shuffled = train.assign(y=rng.permutation(train["y"].to_numpy()))
    bad = classifier_score(shuffled, test, "y", s)
    assert good.synthetic > 0.97
    assert good.real is not None
    assert good.real > 0.97
    assert bad.synthetic < 0.6
    assert good.majority == pytest.approx(0.5)
    constant = train.assign(y=True)
    assert classifier_score(constant, test, "y", s).synthetic == pytest.approx(0.5)
    with pytest.raises(ValueError, match="'x' must be a categorical"):
        classifier_score(train, test, "x", s)
