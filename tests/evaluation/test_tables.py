import numpy as np
import pandas as pd
import pytest

from opendp_wasserstein.evaluation import classifier_score, marginal_tvd, table_w1, w1
from opendp_wasserstein.tables import BoolColumn, CategoricalColumn, FloatColumn, IntColumn, Schema

S = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "c": CategoricalColumn(categories=("a", "b", "c")),
        "k": IntColumn(bounds=(0, 9)),
    }
)


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


# ---------------------------------------------------------------------------------------------
# Gower distance and its W1

G = Schema(
    {
        "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
        "c": CategoricalColumn(categories=("a", "b", "c")),
        "k": IntColumn(bounds=(0, 9)),
    }
)


def _enc(df, schema=G):
    from opendp_wasserstein.evaluation.tables import encode_table

    return encode_table(df, schema)


def test_gower_distance_hand_values():
    from opendp_wasserstein.evaluation import gower_distance

    a = pd.DataFrame({"x": [0.0, None, None, 2.0], "c": ["a", "a", "b", "c"], "k": [0, 0, 9, 4]})
    b = pd.DataFrame({"x": [5.0, None], "c": ["a", "b"], "k": [0, 4]})
    d = gower_distance(_enc(a), _enc(b), G)
    assert d.shape == (4, 2)
    # numeric 0.5 (of the bounds), same category, same int: (0.5 + 0 + 0) / 3
    assert d[0, 0] == pytest.approx(0.5 / 3)
    # missing vs 5.0: 1; int |0 - 4| / (9 - 0 + 1)
    assert d[1, 0] == pytest.approx(1 / 3)
    assert d[1, 1] == pytest.approx((0 + 1 + 0.4) / 3)  # both missing: 0
    assert d[2, 1] == pytest.approx((0 + 0 + 0.5) / 3)
    assert d[3, 0] == pytest.approx((0.3 + 1 + 0.4) / 3)
    assert np.all((d >= 0) & (d <= 1))
    with pytest.raises(ValueError, match="encoded points"):
        gower_distance(_enc(a)[:, :2], _enc(b), G)


def test_gower_w1_exact_values():
    from opendp_wasserstein.evaluation import gower_w1

    a = pd.DataFrame({"x": [0.0, None], "c": ["a", "b"], "k": [0, 0]})
    b = pd.DataFrame({"x": [2.0, 5.0], "c": ["a", "b"], "k": [0, 0]})
    # best matching: (0 -> 2.0: 0.2/3) + (missing -> 5.0: 1/3), averaged over 2 rows
    est = gower_w1(a, b, G)
    assert est.exact
    assert est.noise_floor == 0.0
    assert est.value == pytest.approx((0.2 + 1) / 6)
    assert gower_w1(a, a, G).value == 0.0
    assert gower_w1(b, a, G).value == pytest.approx(est.value)


def test_gower_w1_one_numeric_column_is_scaled_1d_w1():
    from scipy.stats import wasserstein_distance

    from opendp_wasserstein.evaluation import gower_w1

    s = Schema({"v": FloatColumn(bounds=(-5.0, 5.0))})
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, 300), rng.normal(0.5, 2, 250)
    want = wasserstein_distance(np.clip(a, -5, 5), np.clip(b, -5, 5)) / 10
    assert gower_w1(pd.DataFrame({"v": a}), pd.DataFrame({"v": b}), s).value == pytest.approx(
        want, rel=1e-9
    )


def test_gower_w1_subsampled_is_seeded_and_reports_floor():
    from opendp_wasserstein.evaluation import gower_w1

    a, b = _frame(900, 1), _frame(500, 2)
    est = gower_w1(a, b, G, max_points=200, seed=3)
    assert not est.exact
    assert est.sample_size == 200
    assert est.repeats == 1
    again = gower_w1(a, b, G, max_points=200, seed=3)
    assert (again.value, again.noise_floor) == (est.value, est.noise_floor)
    assert np.isnan(est.std_error)
    assert est.noise_floor > 0
    assert gower_w1(a, b, G, max_points=200, seed=3, noise_floor=False).noise_floor == 0.0
    assert gower_w1(a, b, G, max_points=200, seed=4).value != est.value
    shifted = b.assign(c="a", x=b["x"] * 0.1)
    assert gower_w1(a, shifted, G, max_points=200, seed=3).value > est.value + 0.1
    with pytest.raises(ValueError, match="max_points"):
        gower_w1(a, b, G, max_points=1)


# ---------------------------------------------------------------------------------------------
# correlation / association error


def test_correlation_error_values():
    from opendp_wasserstein.evaluation import correlation_error

    s = Schema(
        {
            "u": FloatColumn(bounds=(0.0, 1.0)),
            "v": FloatColumn(bounds=(0.0, 1.0)),
            "c": CategoricalColumn(categories=("a", "b")),
        }
    )
    x = np.linspace(0, 1, 200)
    c = np.where(x < 0.5, "a", "b")
    a = pd.DataFrame({"u": x, "v": x, "c": c})
    assert correlation_error(a, a, s).numeric == 0.0
    assert correlation_error(a, a, s).mixed == 0.0
    b = pd.DataFrame({"u": x, "v": 1 - x, "c": c})
    err = correlation_error(a, b, s)
    assert err.numeric == pytest.approx(2.0)
    assert err.by_pair[("u", "v")] == pytest.approx((1.0, -1.0))
    # eta of a step category against a uniform variable: sqrt(between / total) = sqrt(3) / 2
    assert err.by_pair[("u", "c")][0] == pytest.approx(np.sqrt(3) / 2, abs=0.01)
    # a constant synthetic column has no association with anything
    flat = a.assign(v=0.5, c="a")
    e2 = correlation_error(a, flat, s)
    assert e2.by_pair[("u", "v")][1] == 0.0
    assert e2.by_pair[("v", "c")][1] == 0.0


def test_correlation_error_cramers_v_and_nulls():
    from opendp_wasserstein.evaluation import correlation_error

    s = Schema(
        {
            "p": CategoricalColumn(categories=("a", "b")),
            "q": CategoricalColumn(categories=("x", "y")),
            "w": FloatColumn(bounds=(0.0, 10.0), nullable=True),
            "z": FloatColumn(bounds=(0.0, 10.0)),
        }
    )
    # 2x2 table [[30, 10], [10, 30]]: chi2 = 20, n = 80, V = sqrt(20 / 80) = 0.5
    p = ["a"] * 40 + ["b"] * 40
    q = ["x"] * 30 + ["y"] * 10 + ["x"] * 10 + ["y"] * 30
    z = np.arange(80) / 8.0
    w = z.copy()
    w[::2] = np.nan  # Pearson over the rows where both are present: still exactly 1
    a = pd.DataFrame({"p": p, "q": q, "w": w, "z": z})
    err = correlation_error(a, a, s)
    assert err.by_pair[("p", "q")][0] == pytest.approx(0.5)
    assert err.by_pair[("w", "z")][0] == pytest.approx(1.0)
    assert err.numeric == 0.0
    with pytest.raises(ValueError, match="two columns"):
        correlation_error(a[["z"]], a[["z"]], s.select(["z"]))


# ---------------------------------------------------------------------------------------------
# model score


def test_model_score_numeric_target():
    from opendp_wasserstein.evaluation import model_score

    s = Schema(
        {
            "x": FloatColumn(bounds=(0.0, 1.0)),
            "c": CategoricalColumn(categories=("a", "b")),
            "y": FloatColumn(bounds=(-1.0, 3.0), nullable=True),
        }
    )
    rng = np.random.default_rng(0)

    def make(n):
        x = rng.uniform(size=n)
        c = rng.choice(["a", "b"], n)
        y = 2 * x + (c == "b") * 0.5 + rng.normal(0, 0.05, n)
        y[rng.uniform(size=n) < 0.1] = np.nan
        return pd.DataFrame({"x": x, "c": c, "y": y})

    train, test = make(1500), make(1000)
    good = model_score(train, test, "y", s, train_real=train)
    assert good.metric == "r2"
    assert good.synthetic > 0.95
    assert good.real is not None
    assert good.real > 0.95
    assert good.baseline <= 0.0
    shuffled = train.assign(y=rng.permutation(train["y"].to_numpy()))
    assert model_score(shuffled, test, "y", s).synthetic < 0.1
    constant = train.assign(y=1.0)
    assert model_score(constant, test, "y", s).synthetic == pytest.approx(
        model_score(constant, test, "y", s).baseline
    )
    cat = model_score(train, test, "c", s)
    assert cat.metric == "balanced_accuracy"
    with pytest.raises(ValueError, match="'nope' is not in the schema"):
        model_score(train, test, "nope", s)
