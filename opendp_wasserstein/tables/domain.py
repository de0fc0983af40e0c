"""The OpenDP domain of tables under a public schema.

A table domain holds tables (pandas, Polars eager or lazy, pyarrow, or a 2-D numpy array whose
columns are the schema's, in order) whose columns are exactly the schema's columns, in any
order, optionally with a public number of rows.  Its descriptor, :class:`TableDomain`, carries
the schema; OpenDP compares user domains by identifier only, so the identifier holds every field
(the schema's canonical JSON and the size).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from opendp.mod import Domain

from opendp_wasserstein._compat import extrinsic_domain
from opendp_wasserstein.core.optional import import_optional
from opendp_wasserstein.tables.frames import column_names, frame_kind
from opendp_wasserstein.tables.schema import Schema

__all__ = ["TableDomain", "table_domain", "table_rows", "check_table_domain"]


@dataclass(frozen=True)
class TableDomain:
    """Tables under ``schema`` (public), with ``size`` rows when the number of rows is public.

    :param schema: the public schema; a member has exactly its columns (any order)
    :param size: the public number of rows, or None
    """

    schema: Schema
    size: int | None

    def identifier(self) -> str:
        return f"TableDomain(schema={self.schema.identifier()}, size={self.size})"


def table_rows(data: Any) -> int:
    """The number of rows of a table of any supported type (a LazyFrame is counted, not
    collected)."""
    kind = frame_kind(data)
    if kind == "polars-lazy":
        pl = import_optional("polars", "a Polars table")

        return int(data.select(pl.len()).collect().item())
    if kind == "arrow":
        return int(data.num_rows)
    return int(data.shape[0])


def table_domain(schema: Schema, size: int | None = None) -> Domain:
    """The domain of tables under ``schema`` with ``size`` rows (or any number of rows).

    :param schema: a :class:`~opendp_wasserstein.tables.Schema` (public)
    :param size: the public number of rows, or None when it is private
    :return: an OpenDP ``Domain`` whose descriptor is a :class:`TableDomain`

    :example:

    >>> from opendp_wasserstein.tables import Schema, table_domain
    >>> schema = Schema.from_json({"columns": {"age": {"type": "int", "bounds": [0, 120]},
    ...                                        "smoker": {"type": "bool"}}})
    >>> dom = table_domain(schema, size=3)
    >>> dom.descriptor.size, dom.descriptor.schema.names
    (3, ('age', 'smoker'))
    >>> import pandas as pd
    >>> dom.member(pd.DataFrame({"smoker": [True, False, True], "age": [30, 41, 52]}))
    True
    >>> dom.member(pd.DataFrame({"age": [30, 41, 52]}))
    False
    """
    if not isinstance(schema, Schema):
        raise TypeError(
            "schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)"
        )
    if size is not None:
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
            raise ValueError(f"size must be an integer >= 1 or None, got {size!r}")
        size = int(size)
    desc = TableDomain(schema, size)

    def member(x: Any) -> bool:
        try:
            names = column_names(x, schema)
        except (TypeError, ValueError):
            return False
        if sorted(names) != sorted(schema.names):
            return False
        return size is None or table_rows(x) == size

    return extrinsic_domain(desc.identifier(), member, desc)


def check_table_domain(input_domain: Domain) -> TableDomain:
    """The :class:`TableDomain` descriptor of ``input_domain``, or a ``ValueError``."""
    desc = getattr(input_domain, "descriptor", None)
    if not isinstance(desc, TableDomain):
        raise ValueError(f"input_domain must be a table_domain(schema, size), got {input_domain}")
    return desc
