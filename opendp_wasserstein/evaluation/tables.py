"""Utility of synthetic tables: W1 under the table metric, marginal TVDs, a classifier score.

Nothing here is a privacy mechanism; it compares a release with the data it came from.

* :func:`table_w1`: the 1-Wasserstein distance under the **table metric** of
  :mod:`opendp_wasserstein.tables.encoding` (numeric columns scaled by their bounds, the discrete
  0/1 metric on categorical, bool and is-missing axes, maximum over axes), exact with POT up to
  ``max_points`` rows per table and otherwise the mean over subsample pairs with its noise floor
  (as :func:`~opendp_wasserstein.evaluation.w1_estimate`).
* :func:`marginal_tvd`: total variation distance of every 1-way or 2-way marginal, numeric
  columns cut into ``bins`` equal-width bins of their bounds, missing a bin of its own.
* :func:`classifier_score`: train on synthetic, test on real (scikit-learn's
  ``HistGradientBoostingClassifier``), next to train-on-real and the majority-class baseline.
* :func:`model_score`: the same for any target column: balanced accuracy for a categorical or
  bool target, R^2 of a ``HistGradientBoostingRegressor`` for a numeric one.
* :func:`gower_w1`: W1 under the **Gower distance** (mean over columns of the bounds-scaled
  numeric distance and the 0/1 category distance), exact with POT on seeded subsamples.
* :func:`correlation_error`: mean absolute error of the correlation matrix (Pearson between
  numeric columns) and of an association matrix over all columns (Pearson, the correlation
  ratio between a categorical and a numeric column, Cramer's V between two categoricals).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.evaluation.wasserstein import _EMD_MAX_ITER, W1Estimate
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import read_table
from opendp_wasserstein.tables.schema import BoolColumn, CategoricalColumn, IntColumn, Schema

__all__ = [
    "table_w1",
    "marginal_tvd",
    "MarginalTVD",
    "classifier_score",
    "ClassifierScore",
    "model_score",
    "ModelScore",
    "gower_w1",
    "gower_distance",
    "correlation_error",
    "CorrelationError",
    "encode_table",
]


def encode_table(data: Any, schema: Schema, columns: Sequence[str] | None = None) -> np.ndarray:
    """A table (any supported type) as points of ``[0, 1]^D`` under ``schema``."""
    sub = schema.select(list(columns)) if columns is not None else schema
    cols, _ = read_table(data, sub, columns=list(sub.names) if columns is not None else None)
    return TableEncoding(sub).encode(cols)


def _cost(enc: TableEncoding, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na, da = enc.metric_view(a)
    nb, db = enc.metric_view(b)
    cost = cdist(na, nb, metric="chebyshev") if na.shape[1] else np.zeros((len(a), len(b)))
    if da.shape[1]:
        cost = np.where(cdist(da, db, metric="hamming") > 0, 1.0, cost)
    return cost


def _exact(enc: TableEncoding, a: np.ndarray, b: np.ndarray) -> float:
    ot = import_optional("ot", "the exact table W1")
    cost = _cost(enc, a, b)
    value = ot.emd2(
        np.full(len(a), 1 / len(a)), np.full(len(b), 1 / len(b)), cost, numItermax=_EMD_MAX_ITER
    )
    return max(float(value), 0.0)


def table_w1(
    real: Any,
    synthetic: Any,
    schema: Schema,
    max_points: int = 2000,
    repeats: int = 5,
    seed: int = 0,
) -> W1Estimate:
    """W1 between two tables under the table metric (exact for small tables, else subsampled).

    :param real: the reference table (any type :func:`~opendp_wasserstein.tables.read_table`
        takes), not modified
    :param synthetic: the other table, same columns
    :param schema: the public schema both are read under
    :param max_points: the largest table size computed exactly, and the subsample size
    :param repeats: subsample pairs averaged when a table is larger
    :param seed: seed of the subsampling (evaluation only)
    :return: a :class:`~opendp_wasserstein.evaluation.W1Estimate` (its ``noise_floor`` is the W1
        between two subsamples of ``real``)

    :example:

    >>> import pandas as pd
    >>> from opendp_wasserstein.tables import Schema, FloatColumn, BoolColumn
    >>> s = Schema({"x": FloatColumn(bounds=(0, 10)), "b": BoolColumn()})
    >>> a = pd.DataFrame({"x": [0.0, 5.0], "b": [True, False]})
    >>> b = pd.DataFrame({"x": [1.0, 5.0], "b": [True, True]})
    >>> table_w1(a, b, s).value  # (0.1 + 1) / 2
    0.55
    """
    enc = TableEncoding(schema)
    a = encode_table(real, schema)
    b = encode_table(synthetic, schema)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both tables must have at least one row")
    n, m = len(a), len(b)
    if n <= max_points and m <= max_points:
        return W1Estimate(_exact(enc, a, b), 0.0, 0.0, max_points, 1, True)
    rng = np.random.default_rng(seed)

    def draw(p: np.ndarray) -> np.ndarray:
        return p if len(p) <= max_points else p[rng.choice(len(p), size=max_points, replace=False)]

    floor_set = a if n > max_points else b
    values = np.array([_exact(enc, draw(a), draw(b)) for _ in range(repeats)])
    floors = np.array([_exact(enc, draw(floor_set), draw(floor_set)) for _ in range(repeats)])
    se = float(values.std(ddof=1) / math.sqrt(repeats)) if repeats > 1 else float("nan")
    return W1Estimate(float(values.mean()), se, float(floors.mean()), max_points, repeats, False)


def _column_codes(
    enc: TableEncoding, points: np.ndarray, bins: int
) -> dict[str, tuple[np.ndarray, int]]:
    """Per column: integer codes and the number of codes (numeric: bins + missing)."""
    out: dict[str, tuple[np.ndarray, int]] = {}
    j = 0
    for name, spec in enc.schema.items():
        axis = enc.axes[j]
        if axis.role == "category":
            out[name] = (enc._lookup(points[:, j], axis.cells), axis.cells)
            j += 1
            continue
        missing = None
        if axis.role == "missing":
            missing = points[:, j] >= 0.5
            j += 1
        b = bins
        if isinstance(spec, IntColumn):
            b = min(bins, spec.upper - spec.lower + 1)  # an int column with few values
        codes = np.clip(np.floor(points[:, j] * b).astype(np.int64), 0, b - 1)
        j += 1
        if missing is not None:
            out[name] = (np.where(missing, b, codes), b + 1)
        else:
            out[name] = (codes, b)
    return out


@dataclass(frozen=True)
class MarginalTVD:
    """Total variation distances of marginals.

    :param mean: the mean over marginals
    :param max: the largest
    :param by_marginal: ``{(column, ...): tvd}``
    """

    mean: float
    max: float
    by_marginal: dict[tuple[str, ...], float]


def marginal_tvd(
    real: Any, synthetic: Any, schema: Schema, way: int = 1, bins: int = 10
) -> MarginalTVD:
    """Total variation distance between the tables' ``way``-way marginals (1 or 2).

    :example:

    >>> import pandas as pd
    >>> from opendp_wasserstein.tables import Schema, CategoricalColumn
    >>> s = Schema({"c": CategoricalColumn(categories=("a", "b"))})
    >>> marginal_tvd(pd.DataFrame({"c": ["a", "a"]}), pd.DataFrame({"c": ["a", "b"]}), s).mean
    0.5
    """
    if way not in (1, 2):
        raise ValueError("way must be 1 or 2")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError("bins must be a positive integer")
    enc = TableEncoding(schema)
    ca = _column_codes(enc, encode_table(real, schema), bins)
    cb = _column_codes(enc, encode_table(synthetic, schema), bins)
    out: dict[tuple[str, ...], float] = {}
    for combo in itertools.combinations(schema.names, way):
        size = 1
        ka = np.zeros(len(next(iter(ca.values()))[0]), dtype=np.int64)
        kb = np.zeros(len(next(iter(cb.values()))[0]), dtype=np.int64)
        for name in combo:
            (xa, k), (xb, _) = ca[name], cb[name]
            ka, kb, size = ka * k + xa, kb * k + xb, size * k
        pa = np.bincount(ka, minlength=size) / max(len(ka), 1)
        pb = np.bincount(kb, minlength=size) / max(len(kb), 1)
        out[combo] = float(0.5 * np.abs(pa - pb).sum())
    vals = list(out.values())
    return MarginalTVD(float(np.mean(vals)), float(np.max(vals)), out)


@dataclass(frozen=True)
class ClassifierScore:
    """Train-on-synthetic / test-on-real classification of one target column.

    :param synthetic: balanced accuracy on the real test rows of a model trained on synthetic
    :param real: the same for a model trained on real training rows (``None`` if not given)
    :param majority: balanced accuracy of always predicting the most common synthetic label
    """

    synthetic: float
    real: float | None
    majority: float


def _features(enc: TableEncoding, points: np.ndarray, skip: str) -> np.ndarray:
    blocks = []
    for j, axis in enumerate(enc.axes):
        if axis.column == skip:
            continue
        if axis.discrete:
            codes = enc._lookup(points[:, j], axis.cells)
            blocks.append(np.eye(axis.cells)[codes])
        else:
            blocks.append(points[:, j : j + 1])
    return np.hstack(blocks) if blocks else np.zeros((len(points), 0))


def classifier_score(
    synthetic: Any,
    test_real: Any,
    target: str,
    schema: Schema,
    train_real: Any = None,
    seed: int = 0,
) -> ClassifierScore:
    """Balanced accuracy, on real rows, of a classifier of ``target`` trained on synthetic rows.

    :param synthetic: the synthetic table (training rows)
    :param test_real: real rows held out from the release (test rows)
    :param target: a categorical or bool column of the schema
    :param train_real: optional real training rows, for the train-on-real reference
    :param seed: the classifier's random state (evaluation only)
    """
    HistGradientBoostingClassifier = import_optional(
        "sklearn.ensemble", "classifier_score"
    ).HistGradientBoostingClassifier
    balanced_accuracy_score = import_optional(
        "sklearn.metrics", "classifier_score"
    ).balanced_accuracy_score
    if target not in schema:
        raise ValueError(
            f"target {target!r} is not in the schema; its columns are {list(schema.names)}"
        )
    if not isinstance(schema[target], (CategoricalColumn, BoolColumn)):
        raise ValueError(f"target {target!r} must be a categorical or bool column")
    enc = TableEncoding(schema)
    t = [j for j, a in enumerate(enc.axes) if a.column == target][0]
    cells = enc.axes[t].cells

    def xy(data: Any) -> tuple[np.ndarray, np.ndarray]:
        p = encode_table(data, schema)
        return _features(enc, p, target), enc._lookup(p[:, t], cells)

    xs, ys = xy(synthetic)
    xt, yt = xy(test_real)

    def fit_score(x: np.ndarray, y: np.ndarray) -> float:
        if len(np.unique(y)) < 2:
            pred = np.full(len(yt), y[0] if len(y) else 0)
        else:
            model = HistGradientBoostingClassifier(random_state=seed, max_iter=100)
            pred = model.fit(x, y).predict(xt)
        return float(balanced_accuracy_score(yt, pred))

    majority = np.full(len(yt), np.bincount(ys, minlength=cells).argmax())
    real = None
    if train_real is not None:
        xr, yr = xy(train_real)
        real = fit_score(xr, yr)
    return ClassifierScore(fit_score(xs, ys), real, float(balanced_accuracy_score(yt, majority)))


# ----------------------------------------------------------------------------------------------
# train on synthetic, test on real, for any target


@dataclass(frozen=True)
class ModelScore:
    """Train-on-synthetic / test-on-real score of one target column.

    :param metric: ``"balanced_accuracy"`` (categorical or bool target) or ``"r2"`` (numeric)
    :param synthetic: the score on the real test rows of a model trained on synthetic rows
    :param real: the same for a model trained on real training rows (``None`` if not given)
    :param baseline: the score of a constant prediction from the synthetic rows (the majority
        label; the mean of the target, whose R^2 is at most 0)
    """

    metric: str
    synthetic: float
    real: float | None
    baseline: float


def model_score(
    synthetic: Any,
    test_real: Any,
    target: str,
    schema: Schema,
    train_real: Any = None,
    seed: int = 0,
) -> ModelScore:
    """Score, on real rows, of a gradient-boosting model of ``target`` trained on synthetic rows.

    A categorical or bool ``target`` is scored by :func:`classifier_score` (balanced accuracy);
    a numeric one (float, int, datetime) by the R^2 of scikit-learn's
    ``HistGradientBoostingRegressor`` on the test rows whose target is present, trained on the
    rows whose target is present.  Features are every other column as the table encoding
    gives them (numeric coordinates scaled by the bounds, one-hot categories and is-missing
    indicators), the same for every table compared.

    :param synthetic: the synthetic table (training rows)
    :param test_real: real rows held out from the release (test rows)
    :param target: a column of the schema
    :param schema: the public schema
    :param train_real: optional real training rows, for the train-on-real reference
    :param seed: the model's random state (evaluation only)

    :example:

    >>> import numpy as np, pandas as pd
    >>> from opendp_wasserstein.tables import Schema, FloatColumn
    >>> s = Schema({"x": FloatColumn(bounds=(0, 1)), "y": FloatColumn(bounds=(0, 2))})
    >>> x = np.linspace(0, 1, 400)
    >>> t = pd.DataFrame({"x": x, "y": 2 * x})
    >>> model_score(t, t, "y", s).synthetic > 0.99
    True
    """
    if target not in schema:
        raise ValueError(
            f"target {target!r} is not in the schema; its columns are {list(schema.names)}"
        )
    if isinstance(schema[target], (CategoricalColumn, BoolColumn)):
        c = classifier_score(synthetic, test_real, target, schema, train_real=train_real, seed=seed)
        return ModelScore("balanced_accuracy", c.synthetic, c.real, c.majority)
    HistGradientBoostingRegressor = import_optional(
        "sklearn.ensemble", "model_score"
    ).HistGradientBoostingRegressor
    r2_score = import_optional("sklearn.metrics", "model_score").r2_score

    enc = TableEncoding(schema)
    value = [j for j, a in enumerate(enc.axes) if a.column == target and a.role == "value"][0]
    miss = [j for j, a in enumerate(enc.axes) if a.column == target and a.role == "missing"]

    def xy(data: Any) -> tuple[np.ndarray, np.ndarray]:
        p = encode_table(data, schema)
        keep = p[:, miss[0]] < 0.5 if miss else np.ones(len(p), dtype=bool)
        return _features(enc, p[keep], target), p[keep, value]

    xs, ys = xy(synthetic)
    xt, yt = xy(test_real)
    if len(yt) < 2:
        raise ValueError("test_real needs at least two rows with the target present")

    def fit_score(x: np.ndarray, y: np.ndarray) -> float:
        if len(y) < 2 or np.ptp(y) == 0:
            pred = np.full(len(yt), float(y.mean()) if len(y) else 0.5)
        else:
            pred = (
                HistGradientBoostingRegressor(random_state=seed, max_iter=100).fit(x, y).predict(xt)
            )
        return float(r2_score(yt, pred))

    baseline = float(r2_score(yt, np.full(len(yt), float(ys.mean()) if len(ys) else 0.5)))
    real = None
    if train_real is not None:
        xr, yr = xy(train_real)
        real = fit_score(xr, yr)
    return ModelScore("r2", fit_score(xs, ys), real, baseline)


# ----------------------------------------------------------------------------------------------
# W1 under the Gower distance


def gower_distance(a: np.ndarray, b: np.ndarray, schema: Schema) -> np.ndarray:
    """The ``len(a) x len(b)`` matrix of Gower distances between encoded points.

    Per column: a numeric column (float, int, datetime) contributes ``|u - v|``, its
    coordinates scaled by the PUBLIC bounds as :class:`~opendp_wasserstein.tables.TableEncoding`
    scales them (``|x - y| / (hi - lo)``; an int column ``|x - y| / (hi - lo + 1)``); a
    categorical or bool column 0 if the categories agree, else 1 (missing is a category of its
    own); a nullable numeric column 0 if both are missing, 1 if exactly one is, else the scaled
    distance.  The distance is the mean over the columns, so it lies in ``[0, 1]``.

    :param a: points of the encoding (:func:`encode_table`), one row per record
    :param b: the same for the other table
    :param schema: the schema both were encoded under
    """
    enc = TableEncoding(schema)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != enc.dimension or b.shape[1] != enc.dimension:
        raise ValueError(f"a and b must be (n, {enc.dimension}) encoded points of the schema")
    cost = np.zeros((len(a), len(b)))
    j = 0
    for _name, _spec in schema.items():
        axis = enc.axes[j]
        if axis.role == "category":
            ca, cb = enc._lookup(a[:, j], axis.cells), enc._lookup(b[:, j], axis.cells)
            cost += ca[:, None] != cb[None, :]
            j += 1
            continue
        if axis.role == "missing":
            ma, mb = a[:, j] >= 0.5, b[:, j] >= 0.5
            j += 1
            d = np.abs(a[:, j][:, None] - b[:, j][None, :])
            cost += np.where(ma[:, None] != mb[None, :], 1.0, np.where(ma[:, None], 0.0, d))
        else:
            cost += np.abs(a[:, j][:, None] - b[:, j][None, :])
        j += 1
    return cost / len(schema)


def gower_w1(
    real: Any,
    synthetic: Any,
    schema: Schema,
    max_points: int = 2000,
    seed: int = 0,
    noise_floor: bool = True,
) -> W1Estimate:
    """W1 between two tables under the Gower distance (:func:`gower_distance`).

    **Estimator.** Each table larger than ``max_points`` rows is replaced by a uniform random
    subsample of ``max_points`` rows without replacement (seeded by ``seed``; the same ``seed``
    draws the same rows of the same table, so releases compared against one real table are
    measured on one real subsample); W1 between the two (sub)samples with uniform weights is
    then computed exactly with POT's network simplex (``ot.emd2``).  With no subsampling the
    value is the exact W1.  A subsample's empirical measure is farther from its table than the
    table itself, so the estimate is biased up by about the **noise floor**: the same estimate
    between two disjoint subsamples of ``real`` (reported when ``noise_floor`` and ``real`` has
    at least ``2 max_points`` rows, else between ``real``'s subsample and a second independent
    one; 0 when nothing is subsampled).

    :param real: the reference table (any type :func:`~opendp_wasserstein.tables.read_table`
        takes), not modified
    :param synthetic: the other table, same columns
    :param schema: the public schema both are read under
    :param max_points: the subsample size (and the largest table computed whole)
    :param seed: seed of the subsampling (evaluation only)
    :param noise_floor: also compute the noise floor (one more transport problem)
    :return: a :class:`~opendp_wasserstein.evaluation.W1Estimate` (``repeats`` 1, ``se`` nan
        when subsampled)

    :example:

    >>> import pandas as pd
    >>> from opendp_wasserstein.tables import Schema, FloatColumn, CategoricalColumn
    >>> s = Schema({"x": FloatColumn(bounds=(0, 10)),
    ...            "c": CategoricalColumn(categories=("a", "b"))})
    >>> a = pd.DataFrame({"x": [0.0, 5.0], "c": ["a", "b"]})
    >>> b = pd.DataFrame({"x": [1.0, 5.0], "c": ["a", "a"]})
    >>> gower_w1(a, b, s).value  # ((0.1 + 0) / 2 + (0 + 1) / 2) / 2
    0.275
    """
    ot = import_optional("ot", "gower_w1")

    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 2:
        raise ValueError("max_points must be an integer >= 2")
    a = encode_table(real, schema)
    b = encode_table(synthetic, schema)
    if len(a) == 0 or len(b) == 0:
        raise ValueError("both tables must have at least one row")
    rng_a = np.random.default_rng([seed, 0])
    rng_b = np.random.default_rng([seed, 1])

    def draw(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return p if len(p) <= max_points else p[rng.choice(len(p), size=max_points, replace=False)]

    def emd(x: np.ndarray, y: np.ndarray) -> float:
        cost = gower_distance(x, y, schema)
        v = ot.emd2(
            np.full(len(x), 1 / len(x)), np.full(len(y), 1 / len(y)), cost, numItermax=_EMD_MAX_ITER
        )
        return max(float(v), 0.0)

    sub = len(a) > max_points or len(b) > max_points
    value = emd(draw(a, rng_a), draw(b, rng_b))
    floor = 0.0
    if sub and noise_floor:
        rng = np.random.default_rng([seed, 2])
        if len(a) >= 2 * max_points:
            idx = rng.permutation(len(a))
            floor = emd(a[idx[:max_points]], a[idx[max_points : 2 * max_points]])
        else:
            floor = emd(draw(a, np.random.default_rng([seed, 0])), draw(a, rng))
    return W1Estimate(value, float("nan") if sub else 0.0, floor, max_points, 1, not sub)


# ----------------------------------------------------------------------------------------------
# correlation / association matrices


@dataclass(frozen=True)
class CorrelationError:
    """Mean absolute error between the correlation / association matrices of two tables.

    :param numeric: mean over pairs of numeric columns of ``|r_real - r_synthetic|`` (Pearson);
        ``None`` with fewer than two numeric columns
    :param mixed: mean over ALL pairs of columns of the absolute difference of their
        association: Pearson between two numeric columns, the correlation ratio (eta) between a
        categorical and a numeric column, Cramer's V between two categoricals
    :param by_pair: ``{(column, column): (real, synthetic)}`` associations
    """

    numeric: float | None
    mixed: float
    by_pair: dict[tuple[str, str], tuple[float, float]]


def _column_values(
    enc: TableEncoding, points: np.ndarray
) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Per column: ("numeric", coordinate, present) or ("categorical", code, all-True)."""
    out: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    j = 0
    for name, _spec in enc.schema.items():
        axis = enc.axes[j]
        if axis.role == "category":
            out[name] = (
                "categorical",
                enc._lookup(points[:, j], axis.cells),
                np.ones(len(points), dtype=bool),
            )
            j += 1
            continue
        present = np.ones(len(points), dtype=bool)
        if axis.role == "missing":
            present = points[:, j] < 0.5
            j += 1
        out[name] = ("numeric", points[:, j], present)
        j += 1
    return out


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2:
        return 0.0
    x, y = x - x.mean(), y - y.mean()
    den = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / den if den > 0 else 0.0  # a constant column: no correlation


def _eta(codes: np.ndarray, y: np.ndarray) -> float:
    if len(y) < 2:
        return 0.0
    total = float(((y - y.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    counts = np.bincount(codes)
    sums = np.bincount(codes, weights=y)
    nz = counts > 0
    between = float((sums[nz] ** 2 / counts[nz]).sum() - len(y) * y.mean() ** 2)
    return math.sqrt(min(max(between / total, 0.0), 1.0))


def _cramers_v(a: np.ndarray, b: np.ndarray) -> float:
    n = len(a)
    if n == 0:
        return 0.0
    ka, kb = int(a.max()) + 1, int(b.max()) + 1
    table = np.bincount(a * kb + b, minlength=ka * kb).reshape(ka, kb).astype(np.float64)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    r, c = table.shape
    if min(r, c) < 2:
        return 0.0  # one category only: no association
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return math.sqrt(min(chi2 / (n * (min(r, c) - 1)), 1.0))


def _association(
    u: tuple[str, np.ndarray, np.ndarray], v: tuple[str, np.ndarray, np.ndarray]
) -> float:
    (ku, xu, pu), (kv, xv, pv) = u, v
    keep = pu & pv
    if ku == "numeric" and kv == "numeric":
        return _pearson(xu[keep], xv[keep])
    if ku == "categorical" and kv == "categorical":
        return _cramers_v(xu, xv)
    codes, y = (xu[keep], xv[keep]) if ku == "categorical" else (xv[keep], xu[keep])
    return _eta(codes, y)


def correlation_error(real: Any, synthetic: Any, schema: Schema) -> CorrelationError:
    """Mean absolute error of the correlation matrix and of the mixed association matrix.

    Numeric values are read as the encoding's bounds-scaled coordinates (Pearson and eta are
    invariant under that affine map; values outside the bounds are clamped); a pair's
    statistic uses the rows where both columns are present (missing is a category of its own
    for categorical columns).  A column constant in a table has association 0 with every
    other.  See :class:`CorrelationError`.

    :example:

    >>> import numpy as np, pandas as pd
    >>> from opendp_wasserstein.tables import Schema, FloatColumn
    >>> s = Schema({"x": FloatColumn(bounds=(0, 1)), "y": FloatColumn(bounds=(0, 1))})
    >>> x = np.linspace(0, 1, 101)
    >>> err = correlation_error(
    ...     pd.DataFrame({"x": x, "y": x}), pd.DataFrame({"x": x, "y": 1 - x}), s)
    >>> round(err.numeric, 12)
    2.0
    """
    enc = TableEncoding(schema)
    ca = _column_values(enc, encode_table(real, schema))
    cb = _column_values(enc, encode_table(synthetic, schema))
    pairs: dict[tuple[str, str], tuple[float, float]] = {}
    numeric: list[float] = []
    for p, q in itertools.combinations(schema.names, 2):
        ra, rb = _association(ca[p], ca[q]), _association(cb[p], cb[q])
        pairs[(p, q)] = (ra, rb)
        if ca[p][0] == "numeric" and ca[q][0] == "numeric":
            numeric.append(abs(ra - rb))
    if not pairs:
        raise ValueError("correlation_error needs at least two columns")
    mixed = float(np.mean([abs(x - y) for x, y in pairs.values()]))
    return CorrelationError(float(np.mean(numeric)) if numeric else None, mixed, pairs)
