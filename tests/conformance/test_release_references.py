"""No release carries a reference to its input.

OpenDP 0.16's ``measurement_invoke`` (and ``transformation_invoke``, ``function_eval``) stores
``{"this": ..., "arg": <the input>}`` as the attribute ``__opendp_dict__`` on any output that
accepts new attributes, so a release of a type that takes attributes would carry the private
input along.  Separately, a release object could hold the input (or a copy of it) in one of its
own fields.  For every release type the package produces (every measurement of the registry and
its variants, the high-level API, and the table releases in every frame type) this suite checks
that the released object

* has no ``__opendp_dict__`` attribute, and
* reaches (through ``gc.get_referents``, transitively) neither the input object, nor any of the
  input's own containers (arrays, frames, columns), nor any float array holding one of the
  input's values (the inputs are random 53-bit floats: a value of the input seen again in a
  released array means a copy of it was kept).
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pyarrow as pa
import pytest

from opendp_wasserstein.runtime import reproducible
from tests.conformance.registry import ENTRIES, Release

pl = pytest.importorskip("polars")

OPENDP_RECORD = "__opendp_dict__"

#: objects the walk does not enter: shared, immutable or global (never a per-release copy)
_ATOMS = (
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    type(None),
    type,
    types.ModuleType,
    types.BuiltinFunctionType,
    np.dtype,
)


def _reachable(root: Any, limit: int = 200_000) -> Iterator[Any]:
    """Every object reachable from ``root`` through ``gc.get_referents`` (modules, types and
    atoms are not entered)."""
    seen = {id(root)}
    stack = [root]
    count = 0
    while stack:
        obj = stack.pop()
        yield obj
        count += 1
        if count > limit:
            raise AssertionError("the release reaches more than 200000 objects")
        if isinstance(obj, _ATOMS) or obj is sys.modules:
            continue
        if isinstance(obj, types.FunctionType):
            # a function's globals are its module's namespace (shared, not per release); its
            # closure and defaults are walked
            children = [
                *(c.cell_contents for c in (obj.__closure__ or ()) if _cell_full(c)),
                *(obj.__defaults__ or ()),
                *(obj.__kwdefaults__ or {}).values(),
            ]
        else:
            children = gc.get_referents(obj)
        for child in children:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)


def _cell_full(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


_CONTAINERS = (
    np.ndarray,
    pd.DataFrame,
    pd.Series,
    pa.Table,
    pa.ChunkedArray,
    pa.Array,
    pl.DataFrame,
    pl.LazyFrame,
    pl.Series,
    list,
    dict,
)


def _frame_floats(obj: Any) -> list[np.ndarray]:
    """The float columns of a Polars or pyarrow table (their buffers live outside Python's
    object graph, so they are read out; pandas and numpy are walked)."""
    if isinstance(obj, pl.LazyFrame):
        obj = obj.collect()
    if isinstance(obj, pl.DataFrame):
        return [obj[c].to_numpy() for c, t in obj.schema.items() if t.is_float()]
    if isinstance(obj, pa.Table):
        return [
            obj.column(i).to_numpy()
            for i, f in enumerate(obj.schema)
            if pa.types.is_floating(f.type)
        ]
    return []


def _input_fingerprint(x: Any) -> tuple[set[int], np.ndarray]:
    """The ids of the input's own containers, and its float values (0 and 1 left out: bounds)."""
    ids = {id(x)}
    values: list[np.ndarray] = [np.asarray(v, dtype=np.float64).ravel() for v in _frame_floats(x)]
    for obj in _reachable(x):
        if isinstance(obj, _CONTAINERS):
            ids.add(id(obj))
        if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
            values.append(obj.ravel())
    vals = np.unique(np.concatenate(values)) if values else np.array([])
    return ids, vals[(vals != 0.0) & (vals != 1.0) & np.isfinite(vals)]


def assert_no_input_reference(out: Any, x: Any) -> None:
    assert not hasattr(out, OPENDP_RECORD), (
        f"the release carries OpenDP's record of the call ({type(out).__name__})"
    )
    ids, values = _input_fingerprint(x)
    for col in _frame_floats(out):
        hit = np.isin(np.asarray(col, dtype=np.float64), values)
        assert not hit.any(), f"a released column holds {int(hit.sum())} of the input's values"
    for obj in _reachable(out):
        assert id(obj) not in ids or isinstance(obj, _ATOMS), (
            f"the release reaches the input's {type(obj).__name__}"
        )
        if values.size and isinstance(obj, np.ndarray) and obj.dtype.kind == "f" and obj.size:
            hit = np.isin(obj.ravel(), values)
            assert not hit.any(), (
                f"a released {obj.shape} array holds {int(hit.sum())} of the input's values"
            )


# ---------------------------------------------------------------------------------------------
# every measurement of the registry (and its variants)

MEASUREMENT_RELEASES = [r for e in ENTRIES if e.kind == "measurement" for r in e.releases()]


def test_every_registered_measurement_is_covered():
    names = {r.entry.name for r in MEASUREMENT_RELEASES}
    assert names == {e.name for e in ENTRIES if e.kind == "measurement"}
    assert len(names) >= 12


@pytest.mark.parametrize("rel", MEASUREMENT_RELEASES, ids=lambda r: r.label)
def test_measurement_release_holds_no_reference_to_its_input(rel: Release):
    x = rel.data()
    with reproducible(0):
        out = rel.build()(x)
    assert_no_input_reference(out, x)


def test_the_check_catches_a_release_that_keeps_its_input():
    """The check can fail: an output that takes attributes gets OpenDP's record of the input,
    and a field holding a copy of the input is found."""
    from opendp_wasserstein._compat import make_measurement

    class Box:  # a plain object takes attributes
        def __init__(self, v: Any) -> None:
            self.v = v

    dp.enable_features("contrib")
    x = np.random.default_rng(1).uniform(size=(5, 2))
    meas = make_measurement(
        dp.numpy.array2_domain(num_columns=2, T=float),
        dp.symmetric_distance(),
        dp.max_divergence(),
        lambda a: Box(0),
        lambda d: 0.0,
    )
    with pytest.raises(AssertionError, match="record of the call"):
        assert_no_input_reference(meas(x), x)
    with pytest.raises(AssertionError, match="input's values"):
        assert_no_input_reference((np.sort(x, axis=0) + 0.0,), x)
    with pytest.raises(AssertionError, match="reaches the input"):
        assert_no_input_reference([x], x)
    df = _frame()
    for wrap in (pl.from_pandas, lambda f: pa.Table.from_pandas(f, preserve_index=False)):
        with pytest.raises(AssertionError, match="input's values"):
            assert_no_input_reference(wrap(_frame(seed=3).assign(copy=df["income"])), wrap(df))


# ---------------------------------------------------------------------------------------------
# the high-level API on arrays


def _api_cases() -> dict[str, Any]:
    from opendp_wasserstein import select_candidates, synthesize

    rows = np.random.default_rng(7).uniform(size=(50, 2))
    cands = np.random.default_rng(8).uniform(size=(10, 2))
    return {
        "synthesize[adaptive]": (rows, lambda x: synthesize(x, 1.0, (0, 1))),
        "synthesize[pruned]": (rows, lambda x: synthesize(x, 1.0, (0, 1), mechanism="pruned")),
        "synthesize[pmm]": (rows, lambda x: synthesize(x, 1.0, (0, 1), mechanism="pmm")),
        "synthesize[adaptive, private size]": (
            rows,
            lambda x: synthesize(x, 1.0, (0, 1), public_size=False),
        ),
        "synthesize[adaptive, zcdp]": (rows, lambda x: synthesize(x, 0.5, (0, 1), privacy="zcdp"))
        if _has_zcdp_api()
        else None,
        "select_candidates[projection]": (rows, lambda x: select_candidates(x, cands, 20, 0.5)),
        "select_candidates[tree-em]": (
            rows,
            lambda x: select_candidates(x, cands, 20, 0.5, mechanism="tree-em"),
        ),
        "select_candidates[nn]": (
            rows,
            lambda x: select_candidates(x, cands, 20, 0.5, mechanism="nn"),
        ),
    }


def _has_zcdp_api() -> bool:
    import inspect

    from opendp_wasserstein import synthesize

    return "privacy" in inspect.signature(synthesize).parameters


API_CASES = {k: v for k, v in _api_cases().items() if v is not None}


@pytest.mark.parametrize("label", list(API_CASES))
def test_api_release_and_report_hold_no_reference_to_the_input(label: str):
    x, run = API_CASES[label]
    with reproducible(0):
        out, report = run(x)
    assert_no_input_reference(out, x)
    assert_no_input_reference(report, x)


# ---------------------------------------------------------------------------------------------
# tables: synthesize / select_candidates on every frame type, and the OpenDP chains


def _schema() -> Any:
    from opendp_wasserstein.tables import Schema

    return Schema.from_json(
        {
            "columns": {
                "income": {"type": "float", "bounds": [0, 1000], "nullable": True},
                "age": {"type": "int", "bounds": [0, 120]},
                "region": {"type": "categorical", "categories": ["north", "east", "south"]},
                "visit": {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]},
                "smoker": {"type": "bool"},
            }
        }
    )


def _frame(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "income": np.where(rng.uniform(size=n) < 0.1, np.nan, rng.uniform(0, 900, n)),
            "age": rng.integers(18, 90, n),
            "region": rng.choice(["north", "east", "south"], n),
            "visit": pd.to_datetime("2015-01-01")
            + pd.to_timedelta(rng.integers(0, 365, n), unit="D"),
            "smoker": rng.uniform(size=n) < 0.3,
        }
    )


KINDS = ["pandas", "polars", "polars-lazy", "arrow", "numpy"]


def _as_kind(df: pd.DataFrame, kind: str) -> Any:
    if kind == "pandas":
        return df
    if kind == "polars":
        return pl.from_pandas(df)
    if kind == "polars-lazy":
        return pl.from_pandas(df).lazy()
    if kind == "arrow":
        return pa.Table.from_pandas(df, preserve_index=False)
    return df.to_numpy(dtype=object)


def _materialised(out: Any) -> Any:
    return out.collect() if isinstance(out, pl.LazyFrame) else out


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
@pytest.mark.parametrize("kind", KINDS)
def test_synthesized_table_holds_no_reference_to_the_input(kind: str, mechanism: str):
    from opendp_wasserstein import synthesize

    x = _as_kind(_frame(), kind)
    with reproducible(1):
        out, report = synthesize(x, 1.0, schema=_schema(), mechanism=mechanism)
    assert type(_materialised(out)).__name__ == type(_materialised(x)).__name__
    assert_no_input_reference(out, x)
    assert_no_input_reference(_materialised(out), x)
    assert_no_input_reference(report, x)


@pytest.mark.parametrize("kind", KINDS)
def test_selected_candidates_hold_no_reference_to_the_tables(kind: str):
    from opendp_wasserstein import select_candidates

    x = _as_kind(_frame(), kind)
    c = _as_kind(_frame(8, seed=5), kind)
    with reproducible(1):
        counts, report = select_candidates(x, c, 10, 1.0, schema=_schema())
    assert_no_input_reference(counts, x)
    assert_no_input_reference(report, x)
    assert_no_input_reference(counts, c)


@pytest.mark.parametrize("kind", KINDS)
def test_opendp_chain_ending_in_the_decoding_holds_no_reference_to_the_input(kind: str):
    from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
    from opendp_wasserstein.tables import make_table_decoding, make_table_encoding, table_domain

    dp.enable_features("contrib")
    df = _frame()
    dom = table_domain(_schema(), size=len(df))
    t = make_table_encoding(dom, dp.change_one_distance())
    meas = (
        t
        >> make_adaptive_pruned_pmm(t.output_domain, t.output_metric, 0.2, 0.8)
        >> make_table_decoding(dom, kind)
    )
    x = _as_kind(df, kind)
    with reproducible(2):
        out = meas(x)
    assert_no_input_reference(out, x)
    assert_no_input_reference(_materialised(out), x)


def test_encoding_transformation_output_holds_no_reference_to_the_input():
    from opendp_wasserstein.tables import make_table_encoding, table_domain

    dp.enable_features("contrib")
    df = _frame()
    t = make_table_encoding(table_domain(_schema(), size=len(df)), dp.change_one_distance())
    out = t(df)
    assert not hasattr(out, OPENDP_RECORD)
    assert not any(o is df for o in _reachable(out))


def test_context_query_release_holds_no_reference_to_the_input():
    from opendp_wasserstein.tables import table_domain

    dp.enable_features("contrib")
    df = _frame()
    ctx = dp.Context.compositor(
        data=df,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=1,
        domain=table_domain(_schema()),
    )
    with reproducible(3):
        points = (
            ctx.query()
            .table_encoding()
            .adaptive_pruned_pmm(epsilon_select=0.2, epsilon_main=1.6, size=len(df))
            .release()
        )
    assert_no_input_reference(points, df)
