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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist

from opendp_wasserstein.evaluation.wasserstein import _EMD_MAX_ITER, W1Estimate
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import read_table
from opendp_wasserstein.tables.schema import BoolColumn, CategoricalColumn, IntColumn, Schema

__all__ = ["table_w1", "marginal_tvd", "MarginalTVD", "classifier_score", "ClassifierScore", "encode_table"]


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
    import ot

    cost = _cost(enc, a, b)
    value = ot.emd2(np.full(len(a), 1 / len(a)), np.full(len(b), 1 / len(b)), cost, numItermax=_EMD_MAX_ITER)
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


def _column_codes(enc: TableEncoding, points: np.ndarray, bins: int) -> dict[str, tuple[np.ndarray, int]]:
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


def marginal_tvd(real: Any, synthetic: Any, schema: Schema, way: int = 1, bins: int = 10) -> MarginalTVD:
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
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import balanced_accuracy_score

    if target not in schema:
        raise ValueError(f"target {target!r} is not in the schema; its columns are {list(schema.names)}")
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
