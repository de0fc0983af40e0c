"""The table releases as OpenDP chains (tables/measurement.py): exact maps, the front doors run
the chain and report its map, the schema's budget composed on top."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from opendp_wasserstein import select_candidates, synthesize
from opendp_wasserstein.core.exact import round_down, round_up
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.tables import (
    Schema,
    TableEncoding,
    make_table_selection,
    make_table_synthesis,
    table_domain,
    then_table_selection,
    then_table_synthesis,
)
from opendp_wasserstein.tables.frames import table_info
from opendp_wasserstein.tables.marginals import column_plans
from opendp_wasserstein.tables.pipeline import (
    COPULA_MARGINAL_SHARE,
    StructuredOptions,
    fit_copula,
    fit_marginals,
    make_structured_synthesis,
)
from opendp_wasserstein.tables.transformation import unsealed

dp.enable_features("contrib")

SCHEMA = Schema.from_json(
    {
        "columns": {
            "age": {"type": "int", "bounds": [0, 100]},
            "region": {"type": "categorical", "categories": ["n", "e", "s", "w"]},
            "x": {"type": "float", "bounds": [0, 1], "nullable": True},
        }
    }
)
N = 600
CO, SYM = dp.change_one_distance(), dp.symmetric_distance()
ONE_TREE = ["adaptive", "pruned", "pmm", "privtree"]


def _frame(n=N, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    return pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "region": rng.choice(["n", "e", "s"], n),
            "x": np.where(rng.uniform(size=n) < 0.1, np.nan, x),
        }
    )


CANDIDATES = pd.DataFrame({"region": ["n", "e", "s"], "age": [30, 60, 20], "x": [0.1, 0.5, 0.9]})


def _below(v: float) -> float:
    return float(np.nextafter(v, -math.inf))


@pytest.mark.parametrize("mechanism", ["structured", *ONE_TREE])
def test_synthesis_map_is_epsilon_per_replacement(mechanism):
    meas = make_table_synthesis(table_domain(SCHEMA, size=N), CO, 1.0, mechanism)
    assert meas.output_measure == dp.max_divergence()
    assert meas.map(1) == 1.0
    if mechanism != "structured":
        assert meas.map(3) == 3.0
    assert meas.check(1, 1.0)
    assert not meas.check(1, _below(1.0))


def test_structured_map_of_three_replacements_is_the_exact_sum_of_its_parts():
    """600 rows, 3 columns, eps 1: ``n eps / k = 200``, the copula (``joint="auto"``).  Its map at
    3 replacements is the first look's (at ``COPULA_MARGINAL_SHARE``) plus the counts' OpenDP
    maps at 3, summed over the rationals and rounded up: one float step above 3 (OpenDP's float
    maps at 3 are not exactly 3 times those at 1)."""
    meas = make_table_synthesis(table_domain(SCHEMA, size=N), CO, 1.0, "structured")
    enc = TableEncoding(SCHEMA)
    adom = dp.numpy.array2_domain(num_columns=enc.dimension, size=N, T=float, nan=False)
    _, marg = fit_marginals(adom, CO, enc, round_down(Fraction(COPULA_MARGINAL_SHARE)), 1)
    plans = column_plans(enc)
    _, counts = fit_copula(adom, CO, 1.0, marg.map(1), 1, plans, (0, 2))
    assert counts is not None
    want = round_up(Fraction(marg.map(3)) + Fraction(counts.map(3)))
    assert meas.map(3) == want
    assert want == float(np.nextafter(3.0, 4.0))


def test_structured_chain_map_is_the_structured_synthesis_map():
    """The chain adds nothing: its map is make_structured_synthesis's at the encoding's d_out
    (d_out = d_in), under both metrics."""
    enc = TableEncoding(SCHEMA)
    adom = dp.numpy.array2_domain(num_columns=enc.dimension, size=N, T=float, nan=False)
    opts = StructuredOptions(joint="pairs")
    for metric in (CO, SYM):
        inner = make_structured_synthesis(adom, metric, enc, 0.7, opts)
        chain = make_table_synthesis(table_domain(SCHEMA, size=N), metric, 0.7, options=opts)
        for d_in in (1, 2, 5):
            assert chain.map(d_in) == inner.map(d_in)
        unit = 1 if metric == CO else 2
        assert chain.check(unit, inner.map(unit))
        assert not chain.check(unit, _below(inner.map(unit)))
    assert make_table_synthesis(table_domain(SCHEMA, size=N), SYM, 0.7, options=opts).map(2) <= 0.7


@pytest.mark.parametrize("mechanism", ONE_TREE)
def test_one_tree_symmetric_distance_on_a_sized_domain_counts_replacements(mechanism):
    """symmetric_distance on a sized domain: d_in // 2 replacements, so map(2) is epsilon and
    map(1) (no pair of n-row tables is at symmetric distance 1) is 0."""
    meas = make_table_synthesis(table_domain(SCHEMA, size=N), SYM, 1.0, mechanism)
    assert [meas.map(d) for d in (0, 1, 2, 3, 4)] == [0.0, 0.0, 1.0, 1.0, 2.0]
    assert meas.check(2, 1.0)
    assert not meas.check(2, _below(1.0))


@pytest.mark.parametrize("mechanism", ONE_TREE)
def test_private_size_map_is_epsilon_per_added_or_removed_record(mechanism):
    meas = make_table_synthesis(table_domain(SCHEMA), SYM, 1.0, mechanism)
    assert meas.map(1) == 1.0
    assert meas.check(1, 1.0)
    assert not meas.check(1, _below(1.0))


@pytest.mark.parametrize("mechanism", ["adaptive", "pruned", "pmm"])
def test_delta_map_is_the_pair(mechanism):
    meas = make_table_synthesis(table_domain(SCHEMA, size=N), CO, 1.0, mechanism, delta=1e-9)
    assert meas.output_measure == dp.approximate(dp.max_divergence())
    assert meas.map(1) == (1.0, 1e-9)
    assert meas.check(1, (1.0, 1e-9))
    assert not meas.check(1, (_below(1.0), 1e-9))
    assert not meas.check(1, (1.0, _below(1e-9)))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (
            {"mechanism": "structured", "delta": 1e-9, "options": StructuredOptions(joint="tree")},
            "delta: joint='tree' \\(the joint hierarchy\\) is pure DP only",
        ),
        ({"mechanism": "privtree", "delta": 1e-9}, "privtree.*pure DP"),
        ({"mechanism": "structured", "split_order": "cyclic"}, "split_order applies"),
        ({"mechanism": "adaptive", "split_order": "random"}, "split_order must be one of"),
        ({"mechanism": "magic"}, "mechanism must be one of"),
        ({"mechanism": "adaptive", "options": {"margin": 1}}, "options: \\['margin'\\]"),
        ({"mechanism": "pmm", "options": {"epsilon_select": 0.1}}, "epsilon_select applies"),
        ({"mechanism": "adaptive", "kind": "excel"}, "kind must be one of"),
    ],
)
def test_synthesis_refuses_by_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_table_synthesis(table_domain(SCHEMA, size=N), CO, 1.0, **kwargs)


def test_structured_needs_a_size_and_its_options():
    with pytest.raises(ValueError, match="mechanism='structured' needs a sized input_domain"):
        make_table_synthesis(table_domain(SCHEMA), SYM, 1.0)
    with pytest.raises(TypeError, match="StructuredOptions"):
        make_table_synthesis(table_domain(SCHEMA, size=N), CO, 1.0, options={"depth": 3})
    with pytest.raises(ValueError, match="change_one_distance needs a sized"):
        make_table_synthesis(table_domain(SCHEMA), CO, 1.0, "adaptive")


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"structured": StructuredOptions(joint="never")},
        {"mechanism": "adaptive"},
        {"mechanism": "pruned", "delta": 1e-9},
        {"mechanism": "pmm", "split_order": "cyclic"},
        {"mechanism": "adaptive", "public_size": False},
    ],
)
def test_front_door_output_is_the_chain_output(kwargs):
    """synthesize(..., schema=) is one call of the chain: the same table under the same seed, and
    its report's epsilon is the chain's map(1)."""
    df = _frame()
    with reproducible(3):
        out, report = synthesize(df, 1.0, schema=SCHEMA, **kwargs)
    public = kwargs.get("public_size", True)
    mechanism = kwargs.get("mechanism", "structured")
    meas = make_table_synthesis(
        table_domain(SCHEMA, size=N if public else None),
        CO if public else SYM,
        1.0,
        mechanism,
        delta=kwargs.get("delta"),
        options=kwargs.get("structured"),
        split_order=kwargs.get("split_order"),
        kind=table_info(df, SCHEMA),  # the input's type, columns and dtype kinds, as the front door
    )
    with reproducible(3):
        direct = unsealed(meas(df))
    pd.testing.assert_frame_equal(out, direct, check_exact=True)
    assert type(out) is pd.DataFrame
    certified = meas.map(1)
    if kwargs.get("delta") is not None:
        assert (report.epsilon, report.delta) == certified
    else:
        assert report.epsilon == certified == report.details["epsilon_release"]


def test_schema_budget_is_composed_with_the_chain_map():
    schema = Schema(dict(SCHEMA.items()), epsilon_spent=0.3)
    df = _frame()
    for kwargs in ({}, {"mechanism": "adaptive"}, {"mechanism": "adaptive", "delta": 1e-6}):
        with reproducible(1):
            _, report = synthesize(df, 0.5, schema=schema, **kwargs)
        release = report.details["epsilon_release"]
        assert release == 0.5
        assert report.details["epsilon_schema"] == 0.3
        assert report.epsilon == round_up(Fraction(0.5) + Fraction(0.3))
        assert report.epsilon >= 0.8
        assert report.delta == kwargs.get("delta")
    with reproducible(1):
        _, sel = select_candidates(df, CANDIDATES, 10, 0.5, schema=schema)
    assert sel.epsilon == round_up(Fraction(0.5) + Fraction(0.3))


def test_columns_subset_runs_the_chain_on_those_columns():
    df = _frame().assign(extra=1)
    with reproducible(2):
        out, report = synthesize(df, 1.0, schema=SCHEMA, columns=["x", "age"], mechanism="pmm")
    assert list(out.columns) == ["x", "age"]
    assert report.epsilon == 1.0
    assert list(df.columns) == ["age", "region", "x", "extra"]  # the input is untouched


@pytest.mark.parametrize("mechanism", ["projection", "nn"])
def test_selection_maps(mechanism):
    sized = make_table_selection(table_domain(SCHEMA, size=N), CO, CANDIDATES, 10, 1.0, mechanism)
    assert sized.map(1) == 1.0
    assert sized.check(1, 1.0)
    assert not sized.check(1, _below(1.0))
    sym = make_table_selection(table_domain(SCHEMA, size=N), SYM, CANDIDATES, 10, 1.0, mechanism)
    assert [sym.map(d) for d in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert sym.check(2, 1.0)
    assert not sym.check(2, _below(1.0))
    unsized = make_table_selection(table_domain(SCHEMA), SYM, CANDIDATES, 10, 1.0, mechanism)
    assert unsized.map(1) == 1.0
    assert unsized.check(1, 1.0)
    assert not unsized.check(1, _below(1.0))


def test_selection_front_door_is_the_chain():
    df = _frame()
    with reproducible(4):
        counts, report = select_candidates(df, CANDIDATES, 20, 1.0, schema=SCHEMA)
    meas = make_table_selection(table_domain(SCHEMA, size=N), CO, CANDIDATES, 20, 1.0)
    with reproducible(4):
        direct = np.asarray(meas(df), dtype=np.int64)
    np.testing.assert_array_equal(counts, direct)
    assert report.epsilon == meas.map(1) == 1.0
    assert counts.sum() == 20


def test_selection_refuses_bad_candidates_by_row():
    bad = CANDIDATES.assign(age=[30.0, np.nan, 20.0])
    with pytest.raises(ValueError, match=r"column 'age' is not nullable .*rows \[1\]"):
        make_table_selection(table_domain(SCHEMA, size=N), CO, bad, 10, 1.0)
    with pytest.raises(ValueError, match="tree-em.*public_size=True"):
        make_table_selection(table_domain(SCHEMA), SYM, CANDIDATES, 10, 1.0, "tree-em")


def test_then_variants_and_the_context_api():
    df = _frame()
    space = (table_domain(SCHEMA, size=N), CO)
    meas = space >> then_table_synthesis(1.0, "adaptive")
    assert meas.map(1) == 1.0
    sel = space >> then_table_selection(CANDIDATES, 10, 1.0)
    assert sel.map(1) == 1.0
    ctx = dp.Context.compositor(
        data=df,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=1,
        domain=table_domain(SCHEMA),
    )
    with reproducible(0):
        out = ctx.query().table_synthesis(mechanism="adaptive").release()
    assert list(out.columns) == ["age", "region", "x"]
    assert not hasattr(out, "__opendp_dict__")


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("mechanism", ["structured", "adaptive"])
def test_extreme_values_are_read_and_decoded_without_a_warning(mechanism):
    """A warning while the table is read would depend on private values (numpy's "overflow
    encountered in cast" on a huge number, say): every warning fails here."""
    n = 200
    huge = 3e38 if mechanism == "adaptive" else 1e308  # float32 / float64 columns
    big = np.array([huge, -huge, np.inf, -np.inf, np.nan] * (n // 5))
    df = pd.DataFrame(
        {
            "age": pd.array(np.array([2**62, -(2**62), 5, 7] * (n // 4)), dtype="Int64"),
            "region": ["n", "zz", "", None] * (n // 4),
            "x": big.astype(np.float32 if mechanism == "adaptive" else np.float64),
        }
    )
    with reproducible(0):
        out, report = synthesize(df, 1.0, schema=SCHEMA, mechanism=mechanism)
    assert len(out) == n
    assert out["age"].between(0, 100).all()
    assert report.epsilon <= 1.0
