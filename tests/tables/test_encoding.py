import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    DatetimeColumn,
    FloatColumn,
    IntColumn,
    RawColumn,
    Schema,
    TableEncoding,
    category_boundaries,
)


def _raw(values, missing=None):
    values = np.asarray(values)
    return RawColumn(
        values, np.zeros(len(values), bool) if missing is None else np.asarray(missing, bool)
    )


@given(st.integers(1, 300))
def test_category_cells_are_a_balanced_dyadic_tree(k):
    b = category_boundaries(k)
    assert b[0] == 0
    assert b[-1] == 1
    assert np.all(np.diff(b) > 0)
    depth = int(np.ceil(np.log2(k))) if k > 1 else 0
    widths = np.diff(b)
    # every cell is a dyadic interval at depth depth-1 or depth (balanced)
    levels = -np.log2(widths)
    assert np.all(levels == np.round(levels))
    assert set(levels.astype(int)) <= {max(depth - 1, 0), depth}
    assert np.all(np.mod(b[:-1], widths) == 0)  # aligned: a node of the dyadic tree
    # bisecting depth times separates all categories: each depth-`depth` cell is inside one category
    cells = (np.arange(2**depth) + 0.5) / 2**depth
    owner = np.searchsorted(b, cells, side="right") - 1
    assert set(owner) == set(range(k))


def test_k3_matches_the_design():
    assert category_boundaries(3).tolist() == [0.0, 0.5, 0.75, 1.0]


def test_any_point_decodes_to_declared_values():
    s = Schema(
        {
            "c": CategoricalColumn(categories=("a", "b", "c"), nullable=True),
            "x": FloatColumn(bounds=(-1.0, 1.0), nullable=True),
            "i": IntColumn(bounds=(5, 9)),
            "t": DatetimeColumn(bounds=("2015-01-01", "2016-01-01")),
            "b": BoolColumn(),
        }
    )
    enc = TableEncoding(s)
    assert [a.role for a in enc.axes] == [
        "category",
        "missing",
        "value",
        "value",
        "value",
        "category",
    ]
    assert [a.cells for a in enc.axes] == [4, 2, 0, 0, 0, 2]
    u = np.random.default_rng(1).uniform(size=(2000, enc.dimension))
    u[:5] = 0.0
    u[5:10] = 1.0
    dec = enc.decode(u)
    assert set(dec["c"].values[~dec["c"].missing]) <= {0, 1, 2}
    assert dec["c"].missing.any()
    assert dec["x"].missing.any()
    assert not dec["i"].missing.any()
    assert not dec["b"].missing.any()
    assert not dec["t"].missing.any()
    assert dec["i"].values.dtype == np.int64
    assert set(dec["i"].values) == {5, 6, 7, 8, 9}
    x = dec["x"].values[~dec["x"].missing]
    assert x.min() >= -1
    assert x.max() <= 1
    assert dec["t"].values.min() >= s["t"].lower_us
    assert dec["t"].values.max() <= s["t"].upper_us


def test_int_cells_are_equal_width():
    enc = TableEncoding(Schema({"i": IntColumn(bounds=(0, 3))}))
    u = (np.arange(4000) + 0.5) / 4000
    vals = enc.decode(u[:, None])["i"].values
    assert np.bincount(vals).tolist() == [1000, 1000, 1000, 1000]


def test_out_of_range_unseen_and_missing_handled_per_record():
    s = Schema(
        {
            "x": FloatColumn(bounds=(0.0, 10.0)),
            "c": CategoricalColumn(categories=("a", "b"), fallback="b"),
            "d": CategoricalColumn(categories=("a", "b"), nullable=True),
            "e": CategoricalColumn(categories=("a", "b")),
        }
    )
    enc = TableEncoding(s)
    cols = {
        "x": _raw([-np.inf, 20.0, np.nan, 5.0], [False, False, True, False]),
        "c": _raw([-1, 0, 1, -1], [False, False, False, True]),
        "d": _raw([-1, 0, 1, 0], [False, False, False, True]),
        "e": _raw([-1, 1, 1, 0], [False, False, False, True]),
    }
    p = enc.encode(cols)
    assert p[:, 0].tolist() == [0.0, 1.0, 0.5, 0.5]  # clamped; missing imputed at the midpoint
    back = enc.decode(p)
    assert back["c"].values.tolist() == [1, 0, 1, 1]  # unseen and missing -> fallback "b"
    assert back["d"].missing.tolist() == [True, False, False, True]  # unseen -> missing
    assert back["e"].values.tolist() == [0, 1, 1, 0]  # unseen/missing -> first category


def test_encode_in_fortran_order_is_the_same_points():
    s = Schema(
        {
            "x": FloatColumn(bounds=(0.0, 10.0), nullable=True),
            "c": CategoricalColumn(categories=("a", "b", "c")),
            "b": BoolColumn(),
        }
    )
    enc = TableEncoding(s)
    cols = {
        "x": _raw([-np.inf, 20.0, np.nan, 5.0], [False, False, True, False]),
        "c": _raw([-1, 0, 2, 1]),
        "b": _raw([1, 0, 1, 1], [False, True, False, False]),
    }
    c, f = enc.encode(cols), enc.encode(cols, order="F")
    assert c.flags.c_contiguous
    assert f.flags.f_contiguous
    assert not f.flags.c_contiguous
    assert np.array_equal(c, f)
    with pytest.raises(ValueError, match="order"):
        enc.encode(cols, order="K")


def _reference_encode(enc, columns):
    """The encoding's rules column by column, written out plainly (the reference of the
    in-place, look-up-table encode)."""
    n = len(next(iter(columns.values())).values)
    out, j = np.empty((n, enc.dimension)), 0
    for name, spec in enc.schema.items():
        col, miss = columns[name], np.asarray(columns[name].missing, dtype=bool)
        if isinstance(spec, (CategoricalColumn, BoolColumn)):
            k, fb = len(spec.categories), spec.fallback_code()
            codes = np.asarray(col.values, dtype=np.int64)
            codes = np.where((codes < 0) | (codes >= k), fb, codes)
            codes = np.where(miss | (codes < 0), k if spec.nullable else fb, codes)
            b = category_boundaries(enc.axes[j].cells)
            out[:, j] = ((b[:-1] + b[1:]) / 2)[codes]
            j += 1
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            if isinstance(spec, FloatColumn):
                x = np.asarray(col.values, dtype=np.float64)
                u = (np.clip(x, spec.lower, spec.upper) - spec.lower) / (spec.upper - spec.lower)
            elif isinstance(spec, IntColumn):
                x = np.clip(np.asarray(col.values, dtype=np.float64), spec.lower, spec.upper)
                u = (np.floor(x + 0.5) - spec.lower + 0.5) / (spec.upper - spec.lower + 1.0)
            else:
                t = np.clip(np.asarray(col.values, dtype=np.int64), spec.lower_us, spec.upper_us)
                u = (t - spec.lower_us).astype(np.float64) / float(spec.upper_us - spec.lower_us)
        u = np.clip(np.nan_to_num(u, nan=0.5), 0.0, 1.0)
        if spec.nullable:
            out[:, j] = np.where(miss, 0.75, 0.25)
            j += 1
        out[:, j] = np.where(miss, 0.5, u)
        j += 1
    return out


def test_encode_is_the_rules_on_adversarial_values():
    """Out-of-list and extreme codes, NaN, +-inf and huge values, missing masks, nullable and
    fallback columns (seeded cases): the encode is the rules, in either memory order."""
    s = Schema(
        {
            "x": FloatColumn(bounds=(-1.0, 10.0), nullable=True),
            "i": IntColumn(bounds=(-3, 7)),
            "c": CategoricalColumn(categories=("a", "b", "c"), fallback="b"),
            "d": CategoricalColumn(categories=("a", "b"), nullable=True),
            "e": CategoricalColumn(categories=("a", "b", "c", "d", "e")),
            "b": BoolColumn(),
            "bn": BoolColumn(nullable=True),
            "i2": IntColumn(bounds=(0, 100), nullable=True),
            "f2": FloatColumn(bounds=(-1e307, 1e307)),
            "t": DatetimeColumn(bounds=("2020-01-01", "2021-01-01"), nullable=True),
        }
    )
    enc = TableEncoding(s)
    gen = np.random.default_rng(1)
    odd = [np.nan, np.inf, -np.inf, 1e308, -1e308, 0.5, 3.0, -2.0, 5.5, 99.5, 7.49]
    big = np.iinfo(np.int64)
    for trial in range(40):
        n = int(gen.integers(1, 300))
        cols = {}
        for name, spec in s.items():
            if isinstance(spec, (CategoricalColumn, BoolColumn)):
                v = gen.integers(-3, len(spec.categories) + 3, n)
                v[0], v[-1] = (big.max, big.min) if trial % 5 == 0 else (v[0], v[-1])
            elif isinstance(spec, DatetimeColumn):
                v = gen.integers(spec.lower_us - 10**12, spec.upper_us + 10**12, n)
            else:
                v = gen.choice(odd, n) if trial % 2 else gen.uniform(-20, 120, n)
            cols[name] = RawColumn(v, gen.uniform(size=n) < 0.2)
        want = _reference_encode(enc, cols)
        assert np.array_equal(enc.encode(cols), want), trial
        assert np.array_equal(enc.encode(cols, order="F"), want), trial


def test_encode_does_not_modify_input():
    s = Schema({"x": FloatColumn(bounds=(0.0, 1.0), nullable=True)})
    v = np.array([np.nan, 2.0, 0.5])
    m = np.array([True, False, False])
    TableEncoding(s).encode({"x": RawColumn(v, m)})
    assert np.isnan(v[0])
    assert v[1] == 2.0
    assert m.tolist() == [True, False, False]


def test_table_metric():
    s = Schema(
        {"x": FloatColumn(bounds=(0.0, 4.0)), "c": CategoricalColumn(categories=("a", "b", "c"))}
    )
    enc = TableEncoding(s)
    a = enc.encode({"x": _raw([0.0, 0.0, 1.0]), "c": _raw([0, 1, 2])})
    b = enc.encode({"x": _raw([2.0, 1.0, 1.0]), "c": _raw([0, 2, 2])})
    assert enc.distance(a, b).tolist() == [0.5, 1.0, 0.0]


def test_missing_schema_column_is_named():
    enc = TableEncoding(Schema({"x": FloatColumn(bounds=(0.0, 1.0)), "y": BoolColumn()}))
    with pytest.raises(ValueError, match="'y'"):
        enc.encode({"x": _raw([0.5])})


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=30),
    st.integers(-(2**40), 2**40),
    st.integers(1, 2**40),
)
def test_int_round_trip_in_bounds(values, lo, width):
    hi = lo + width
    enc = TableEncoding(Schema({"i": IntColumn(bounds=(lo, hi))}))
    v = np.clip(np.asarray(values, dtype=np.int64), lo, hi)
    out = enc.decode(enc.encode({"i": _raw(v.astype(float))}))["i"].values
    assert out.tolist() == v.tolist()


def test_split_order_of_the_encoding():
    enc = TableEncoding(
        Schema(
            {
                "x": FloatColumn(bounds=(0, 1), nullable=True),
                "c": CategoricalColumn(categories=("a", "b", "c", "d", "e")),
                "b": BoolColumn(),
                "k": IntColumn(bounds=(0, 9)),
                "one": CategoricalColumn(categories=("only",)),
            }
        )
    )
    # axes: x:missing 0, x:value 1, c 2, b 3, k 4, one 5
    order = enc.split_order()
    assert order.cells == (2, 0, 5, 2, 0, 1)
    assert order.axes[:7] == (0, 2, 2, 2, 3, 1, 4)  # indicator, 3 levels of c, bool, numeric cyclic
    assert order.max_depth == 5 + 2 * 52
    assert 5 not in order.axes
    assert order.diameters(7)[4:] == (1.0, 1.0, 1.0, 0.5)
    cyc = enc.split_order("cyclic")
    assert cyc.axes[:7] == (0, 1, 2, 3, 4, 5, 0)
    assert cyc.cells == order.cells
    with pytest.raises(ValueError, match="order"):
        enc.split_order("random")


def test_right_index_is_searchsorted_right():
    """Edges anywhere, on the buckets' grid, a hair either side of it, dyadic category
    boundaries; points at and around every edge, outside [0, 1], NaN, -0.0 (seeded cases)."""
    from opendp_wasserstein.tables.encoding import right_index

    gen = np.random.default_rng(0)
    for trial in range(600):
        k = int(gen.integers(1, 20))
        kind = trial % 4
        if kind == 0:
            e = np.sort(gen.uniform(size=k))
        elif kind == 1:
            e = category_boundaries(k)
        elif kind == 2:
            e = np.unique(np.concatenate(([0.0], np.round(gen.uniform(size=k), 3), [1.0])))
        else:
            grid = gen.integers(0, 4097, k) / 4096
            e = np.sort(np.concatenate((grid, [np.nextafter(0.5, 1), np.nextafter(0.25, 0)])))
        x = np.concatenate(
            (
                gen.uniform(size=int(gen.integers(0, 300))),
                e,
                np.nextafter(e, 2),
                np.nextafter(e, -1),
                gen.integers(0, 4097, 20) / 4096,
            )
        )
        if trial % 7 == 0:
            x = np.concatenate((x, [np.nan, -0.0, 1.5, -3.0, np.inf, -np.inf]))
        gen.shuffle(x)
        got = right_index(e, x)
        assert got.dtype == np.int64
        assert np.array_equal(got, np.searchsorted(e, x, side="right")), trial
    assert right_index(np.array([0.5]), np.zeros(0)).tolist() == []


def _reference_decode(enc, points):
    """The decoding's rules on the whole array at once, written out plainly."""
    p = np.clip(np.nan_to_num(np.asarray(points, dtype=np.float64), nan=0.5), 0.0, 1.0)
    out, j, n = {}, 0, p.shape[0]
    for name, spec in enc.schema.items():
        if isinstance(spec, (CategoricalColumn, BoolColumn)):
            cells = enc.axes[j].cells
            b = category_boundaries(cells)
            codes = np.clip(np.searchsorted(b, p[:, j], side="right") - 1, 0, cells - 1)
            k = len(spec.categories)
            miss = codes == k if spec.nullable else np.zeros(n, dtype=bool)
            out[name] = (np.where(miss, 0, codes), miss)
            j += 1
            continue
        miss = p[:, j] >= 0.5 if spec.nullable else np.zeros(n, dtype=bool)
        j += int(spec.nullable)
        u = p[:, j]
        j += 1
        lo, hi = (spec.lower_us, spec.upper_us) if isinstance(spec, DatetimeColumn) else (0, 0)
        if isinstance(spec, FloatColumn):
            v = np.clip(spec.lower + u * (spec.upper - spec.lower), spec.lower, spec.upper)
        elif isinstance(spec, IntColumn):
            v = np.floor(spec.lower + u * (spec.upper - spec.lower + 1.0))
            v = np.clip(v, spec.lower, spec.upper).astype(np.int64)
        else:
            v = np.clip(lo + np.floor(u * float(hi - lo)).astype(np.int64), lo, hi)
        out[name] = (v, miss)
    return out


def test_decode_column_by_column_is_the_rules():
    """NaN, +-inf, signed zeros, points outside the cube and at cell edges, in C and Fortran
    order (seeded cases): the same values, dtypes and masks as the rules on the whole array."""
    s = Schema(
        {
            "x": FloatColumn(bounds=(-1.0, 10.0), nullable=True),
            "i": IntColumn(bounds=(-3, 7)),
            "c": CategoricalColumn(categories=("a", "b", "c"), fallback="b"),
            "d": CategoricalColumn(categories=("a", "b"), nullable=True),
            "b": BoolColumn(),
            "bn": BoolColumn(nullable=True),
            "i2": IntColumn(bounds=(0, 100), nullable=True),
            "t": DatetimeColumn(bounds=("2020-01-01", "2021-01-01"), nullable=True),
        }
    )
    enc = TableEncoding(s)
    odd = np.array([np.nan, np.inf, -np.inf, 0.5, 0.0, 1.0, -0.0, 2.0, -1.0, 0.75, 0.25])
    gen = np.random.default_rng(3)
    for trial in range(60):
        n = int(gen.integers(1, 200))
        p = gen.uniform(-0.1, 1.1, (n, enc.dimension))
        hit = gen.uniform(size=p.shape) < 0.2
        p[hit] = gen.choice(odd, int(hit.sum()))
        p = np.asfortranarray(p) if trial % 2 else p
        got, want = enc.decode(p), _reference_decode(enc, p)
        for name, (v, miss) in want.items():
            assert got[name].values.dtype == v.dtype, name
            assert np.array_equal(got[name].values, v), (trial, name)
            assert np.array_equal(got[name].missing, miss), (trial, name)


def test_rows_right_index_is_searchsorted_by_row():
    """Cumulative laws (a last entry set to 1 below a rounded-up sum too), entries on the
    buckets' grid, points at and around them (seeded): each point's count is ``searchsorted``
    of its row; a point outside [0, 1) or NaN, or a row not of that form, is refused (None)."""
    from opendp_wasserstein.tables.encoding import rows_right_index

    gen = np.random.default_rng(2)
    for trial in range(300):
        k, w = int(gen.integers(1, 12)), int(gen.integers(1, 18))
        law = gen.dirichlet(np.full(w, 0.5), size=k)
        law[law < 0.02] = 0.0
        cum = np.cumsum(law, axis=1)
        if trial % 3 == 0:
            cum = np.round(cum * 4096) / 4096
        cum[:, -1] = 1.0
        if trial % 5 == 0 and w > 1:
            cum[0, -2] = np.nextafter(1.0, 2.0)  # a rounded-up sum before the last entry
        n = int(gen.integers(1, 400))
        rows = gen.integers(0, k, n)
        x = gen.uniform(size=n)
        at = gen.uniform(size=n) < 0.2
        x[at] = np.minimum(cum[rows[at], gen.integers(0, w, int(at.sum()))], 0.75)
        got = rows_right_index(cum, rows, x)
        want = [np.searchsorted(cum[r], v, side="right") for r, v in zip(rows, x, strict=True)]
        assert got is not None
        assert got.dtype == np.int64
        assert np.array_equal(got, np.array(want, dtype=np.int64)), trial
        for odd in (1.0, np.nan, -0.5, 1.5):
            assert rows_right_index(cum, rows, np.append(x, odd)[1:]) is None
    bad = np.array([[0.5, 0.4, 1.0]])
    assert rows_right_index(bad, np.zeros(3, dtype=np.int64), np.full(3, 0.45)) is None
