"""Releasing a synthetic table: read under the schema, encode, synthesise, decode, same type out.

The mechanism runs on the encoded points in ``[0, 1]^D`` (box ``(0, 1)``); encoding is row-wise
(one record in, one point out), so the certified privacy loss of the release is the one of the
mechanism on the points, plus the ``epsilon_spent`` of the schema if its bounds were estimated
privately (sequential composition).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from opendp_wasserstein.exact import round_up
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import read_table, write_table
from opendp_wasserstein.tables.schema import Schema

__all__ = ["synthesize_table"]


def synthesize_table(
    data: Any,
    epsilon: float,
    schema: Schema,
    columns: Sequence[str] | None = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """A private synthetic table of the same type, names and dtypes as ``data``.

    :param data: a pandas/Polars/pyarrow table or a 2-D numpy array (not modified)
    :param epsilon: the release's budget per replaced record
    :param schema: the public schema (columns of ``data`` not in it are refused by name)
    :param columns: use only these columns
    :param kwargs: passed to :func:`opendp_wasserstein.api.synthesize` (``mechanism``, ...)
    :return: the synthetic table and the :class:`~opendp_wasserstein.api.SynthesisReport`,
        whose ``epsilon`` includes the schema's ``epsilon_spent``
    """
    from opendp_wasserstein.api import synthesize

    if not isinstance(schema, Schema):
        raise TypeError("schema must be an opendp_wasserstein.tables.Schema (Schema.from_json reads a file)")
    cols, info = read_table(data, schema, columns)
    sub = schema.select(list(info.names))
    enc = TableEncoding(sub)
    points = enc.encode(cols)
    synthetic, report = synthesize(points, epsilon, bounds=(0.0, 1.0), **kwargs)
    out = write_table(enc.decode(synthetic), sub, info)
    total = round_up(Fraction(report.epsilon) + Fraction(schema.epsilon_spent))
    details = {**report.details, "epsilon_release": report.epsilon, "epsilon_schema": schema.epsilon_spent,
               "axes": [f"{a.column}:{a.role}" for a in enc.axes]}
    return out, replace(report, epsilon=total, details=details)
