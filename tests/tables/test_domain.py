import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from opendp_wasserstein.tables import (
    BoolColumn,
    CategoricalColumn,
    IntColumn,
    Schema,
    TableDomain,
    table_domain,
)
from opendp_wasserstein.tables.domain import check_table_domain, table_rows

pl = pytest.importorskip("polars")

SCHEMA = Schema(
    {
        "age": IntColumn(bounds=(0, 120)),
        "c": CategoricalColumn(categories=("a", "b")),
        "b": BoolColumn(),
    }
)


def _df(n=4):
    return pd.DataFrame(
        {"c": ["a", "b"] * (n // 2), "age": np.arange(n), "b": [True, False] * (n // 2)}
    )


def test_descriptor_carries_the_schema_and_size():
    dom = table_domain(SCHEMA, size=4)
    assert isinstance(dom.descriptor, TableDomain)
    assert dom.descriptor.schema is SCHEMA
    assert dom.descriptor.size == 4
    assert check_table_domain(dom) == TableDomain(SCHEMA, 4)


def test_identifier_holds_every_field():
    # OpenDP compares user domains by identifier: every field must change it
    base = table_domain(SCHEMA, size=4)
    assert base == table_domain(SCHEMA, size=4)
    assert base != table_domain(SCHEMA, size=5)
    assert base != table_domain(SCHEMA)
    other = Schema(
        {
            "age": IntColumn(bounds=(0, 121)),
            "c": CategoricalColumn(categories=("a", "b")),
            "b": BoolColumn(),
        }
    )
    assert base != table_domain(other, size=4)
    nullable = Schema(
        {
            "age": IntColumn(bounds=(0, 120)),
            "c": CategoricalColumn(categories=("a", "b")),
            "b": BoolColumn(nullable=True),
        }
    )
    assert base != table_domain(nullable, size=4)
    reordered = SCHEMA.select(["c", "age", "b"])
    assert base != table_domain(reordered, size=4)  # the column order is the encoding's axis order


@pytest.mark.parametrize("kind", ["pandas", "polars", "lazy", "arrow"])
def test_member_any_column_order_and_size(kind):
    df = _df()
    x = {
        "pandas": df,
        "polars": pl.from_pandas(df),
        "lazy": pl.from_pandas(df).lazy(),
        "arrow": pa.Table.from_pandas(df, preserve_index=False),
    }[kind]
    assert table_domain(SCHEMA, size=4).member(x)
    assert table_domain(SCHEMA).member(x)
    assert not table_domain(SCHEMA, size=5).member(x)
    assert table_rows(x) == 4


def test_member_refuses_other_columns_and_types():
    dom = table_domain(SCHEMA)
    assert not dom.member(_df().drop(columns=["b"]))
    assert not dom.member(_df().assign(extra=1))
    assert not dom.member([[1, "a", True]])
    assert dom.member(
        np.array([[1, "a", True]], dtype=object)
    )  # numpy: the schema's columns in order
    assert not dom.member(np.zeros((2, 2)))


def test_bad_arguments_name_the_parameter():
    with pytest.raises(TypeError, match="schema"):
        table_domain({"age": [0, 1]})
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="size"):
            table_domain(SCHEMA, size=bad)
    import opendp.prelude as dp

    with pytest.raises(ValueError, match="table_domain"):
        check_table_domain(dp.numpy.array2_domain(num_columns=2, T=float))
