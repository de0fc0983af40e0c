"""The PMM family on a tiny mixed table (one categorical and one numeric column): exact maps,
the exact privacy ratio of neighbouring tables, and a chi-square of the released category
frequencies against their exact law.

The table is encoded (:func:`~opendp_wasserstein.tables.make_table_encoding`) and the hierarchy
splits the categorical axis first (3 categories: levels 1 and 2, cells ``[0, 1/2)`` = "a",
``[1/2, 3/4)`` = "b", ``[3/4, 1)`` = "c"), then the numeric one (level 3).
"""

import math
from collections import Counter

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest
from scipy import stats

from opendp_wasserstein.core.exact import round_up
from opendp_wasserstein.measurements import make_pmm, make_pruned_pmm
from opendp_wasserstein.runtime import reproducible
from opendp_wasserstein.schedules.pure import paper_schedule
from opendp_wasserstein.tables import (
    Schema,
    TableEncoding,
    make_table_decoding,
    make_table_encoding,
    read_table,
    table_domain,
)

from .exact_pmm import level_counts, morton_prefixes, tree_law

SCHEMA = Schema.from_json(
    {
        "columns": {
            "c": {"type": "categorical", "categories": ["a", "b", "c"]},
            "x": {"type": "float", "bounds": [0, 1]},
        }
    }
)
ORDER = TableEncoding(SCHEMA).split_order()
AXES = ORDER.axes_to(3)
EPS = 1.0
SCALES = paper_schedule(2, EPS, 3)
TABLE = pd.DataFrame({"c": ["a", "b", "c"], "x": [0.2, 0.7, 0.4]})


def _law(table: pd.DataFrame, pruned: bool) -> dict[tuple[int, ...], float]:
    enc = TableEncoding(SCHEMA)
    u = enc.encode(read_table(table, SCHEMA)[0])
    return tree_law(level_counts(morton_prefixes(u, AXES), 3), len(table), SCALES, pruned)


def _chain(mk):
    dom = table_domain(SCHEMA, size=3)
    t = make_table_encoding(dom, dp.change_one_distance())
    return (
        t
        >> mk(t.output_domain, t.output_metric, 3, SCALES, axes=AXES, placement="uniform")
        >> make_table_decoding(dom)
    )


def test_split_order_is_categories_first():
    assert AXES == (0, 0, 1)
    assert ORDER.diameters(3) == (1.0, 1.0, 1.0, 0.5)


@pytest.mark.parametrize("mk", [make_pruned_pmm, make_pmm])
def test_exact_map(mk):
    meas = _chain(mk)
    from fractions import Fraction

    want = round_up(2 * sum(Fraction(1) / Fraction(s) for s in SCALES[1:]))
    assert want == EPS
    assert meas.map(1) == want
    assert meas.check(1, want)
    assert not meas.check(1, math.nextafter(want, 0))
    assert meas.map(2) == round_up(4 * sum(Fraction(1) / Fraction(s) for s in SCALES[1:]))
    sym = table_domain(SCHEMA, size=3)
    t = make_table_encoding(sym, dp.symmetric_distance())
    assert (t >> mk(t.output_domain, t.output_metric, 3, SCALES, axes=AXES)).map(2) == EPS


NEIGHBOURS = [
    (0, ("c", 0.9)),  # across the category splits and the numeric split
    (1, ("a", 0.7)),  # category only
    (2, ("c", 0.6)),  # numeric only, into an empty cell
    (0, ("b", 0.1)),
]


@pytest.mark.parametrize("pruned", [True, False])
def test_exact_privacy_ratio_on_neighbouring_tables(pruned):
    base = _law(TABLE, pruned)
    assert abs(sum(base.values()) - 1) < 1e-9
    worst_all = 0.0
    for row, values in NEIGHBOURS:
        other_table = TABLE.copy()
        other_table.loc[row, ["c", "x"]] = values
        other = _law(other_table, pruned)
        assert set(base) == set(other)
        worst = max(max(base[o] / other[o], other[o] / base[o]) for o in base)
        assert worst <= math.exp(EPS) * (1 + 1e-9)
        worst_all = max(worst_all, worst)
    assert worst_all > math.exp(0.3 * EPS)  # the bound is not vacuous here


def _category_law(law: dict[tuple[int, ...], float]) -> dict[tuple[int, int, int], float]:
    """Counts of (a, b, c) in the release: leaves 0-3 lie in category a ([0, 1/2)), 4-5 in b, 6-7 in
    c."""
    out: Counter = Counter()
    for leaves, p in law.items():
        out[(sum(leaves[0:4]), sum(leaves[4:6]), sum(leaves[6:8]))] += p
    return dict(out)


@pytest.mark.parametrize("mk,pruned", [(make_pruned_pmm, True), (make_pmm, False)])
def test_released_category_frequencies_follow_their_exact_law(mk, pruned):
    """The release of the chain, decoded: its category counts against their exact law.  The
    runs release from the encoded points (the encoding is a fixed function of the table, the
    decoding of the points) and decode their categories with the table's own decoder; one full
    chain run checks that both agree with the chain."""
    law = _category_law(_law(TABLE, pruned))
    enc = TableEncoding(SCHEMA)
    dom = table_domain(SCHEMA, size=3)
    t = make_table_encoding(dom, dp.change_one_distance())
    meas = t >> mk(t.output_domain, t.output_metric, 3, SCALES, axes=AXES, placement="uniform")
    with reproducible(0):
        table = _chain(mk)(TABLE)
    with reproducible(0):
        codes = enc.decode(meas(TABLE))["c"].values
    assert table["c"].tolist() == [["a", "b", "c"][k] for k in codes]
    points = t(TABLE)
    core = mk(t.output_domain, t.output_metric, 3, SCALES, axes=AXES, placement="uniform")
    with reproducible(0):
        assert np.array_equal(enc.decode(core(points))["c"].values, codes)
    runs = 2500
    observed: Counter = Counter()
    for seed in range(runs):
        with reproducible(seed):
            codes = enc.decode(core(points))["c"].values
        counts = np.bincount(codes, minlength=3)
        observed[(int(counts[0]), int(counts[1]), int(counts[2]))] += 1
    assert set(observed) <= set(law)
    keys = sorted(law, key=lambda o: -law[o])
    exp = np.array([law[o] * runs for o in keys])
    obs = np.array([observed[o] for o in keys], dtype=float)
    big = exp >= 5
    f_obs, f_exp = obs[big], exp[big]
    if exp[~big].sum() > 0:
        f_obs, f_exp = np.append(f_obs, obs[~big].sum()), np.append(f_exp, exp[~big].sum())
    f_exp *= f_obs.sum() / f_exp.sum()
    assert len(f_obs) >= 4
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-6
