r"""The table encoding as an OpenDP transformation, and the decoding as post-processing.

:func:`make_table_encoding` maps a table of :func:`~opendp_wasserstein.tables.table_domain`
row by row into points of ``[0, 1]^D`` (or into the one-hot embedding, where ``l_inf`` is the
table metric), so that every constructor of the package on ``dp.numpy.array2_domain`` chains
after it; :func:`make_table_decoding` turns released points back into a table.

**Stability.**  The encoding is a row-wise map: output row ``i`` is a function of input row
``i`` alone (each cell is read by a fixed rule of its column's declared type, see
:mod:`~opendp_wasserstein.tables.frames`; values outside the bounds or the categories are
clamped or sent to the fallback the same way for every record, never refused).  Adding,
removing or replacing one row of the table adds, removes or replaces one row of the output and
changes nothing else, so the map is ``d_out = d_in`` under ``symmetric_distance`` and under
``change_one_distance`` (with a public size, which the output keeps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from opendp.mod import Domain, Function, Metric, Transformation, assert_features

from opendp_wasserstein._compat import make_transformation, new_function, register, to_then
from opendp_wasserstein.core import dp
from opendp_wasserstein.core.data import check_metric
from opendp_wasserstein.tables.domain import check_table_domain
from opendp_wasserstein.tables.encoding import TableEncoding
from opendp_wasserstein.tables.frames import (
    FRAME_KINDS,
    FrameInfo,
    frame_kind,
    natural_frame_info,
    read_table,
    write_table,
)

__all__ = [
    "EMBEDDINGS",
    "make_table_encoding",
    "then_table_encoding",
    "make_table_decoding",
    "decode_points",
    "unsealed",
]

#: ``"cube"``: one coordinate per axis in ``[0, 1]`` (the hierarchy's input); ``"one_hot"``:
#: numeric axes and one indicator column per category, where ``l_inf`` is the table metric
EMBEDDINGS = ("cube", "one_hot")


def _row_stability(d_in: Any) -> int:
    if isinstance(d_in, bool) or not isinstance(d_in, (int, np.integer)) or d_in < 0:
        raise ValueError("d_in must be a non-negative integer")
    return int(d_in)


def make_table_encoding(
    input_domain: Domain, input_metric: Metric, embedding: str = "cube"
) -> Transformation:
    r"""Construct a Transformation from a table under a schema to its encoded points.

    The output is a float array with one row per record in
    ``dp.numpy.array2_domain(num_columns=D, size=n, T=float, nan=False)``: with
    ``embedding="cube"`` the points of ``[0, 1]^D`` of
    :class:`~opendp_wasserstein.tables.TableEncoding` (the input of the PMM family), with
    ``embedding="one_hot"`` their one-hot embedding (:meth:`TableEncoding.embed`), in which
    ``l_inf`` equals the table metric (the input of the public-candidate mechanisms with
    ``metric="linf"``).  Stability ``d_out = d_in`` (a row-wise map; module docstring).

    Columns of a table not in the schema, or schema columns missing from it, are refused by
    name (public metadata); no error depends on a value.

    :param input_domain: :func:`~opendp_wasserstein.tables.table_domain` ``(schema, size)``
    :param input_metric: ``dp.symmetric_distance()`` or (sized) ``dp.change_one_distance()``
    :param embedding: ``"cube"`` (default) or ``"one_hot"``
    :return: a Transformation into a float ``array2_domain``, same metric

    :example:

    >>> import numpy as np, pandas as pd, opendp.prelude as dp
    >>> from opendp_wasserstein.tables import (
    ...     Schema, table_domain, make_table_encoding, make_table_decoding)
    >>> from opendp_wasserstein.measurements import make_adaptive_pruned_pmm
    >>> dp.enable_features("contrib")
    >>> schema = Schema.from_json({"columns": {
    ...     "age": {"type": "int", "bounds": [0, 100]},
    ...     "region": {"type": "categorical", "categories": ["n", "e", "s", "w"]}}})
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"age": rng.integers(20, 70, 500),
    ...                    "region": rng.choice(["n", "e", "s"], 500)})
    >>> dom = table_domain(schema, size=500)
    >>> t = make_table_encoding(dom, dp.change_one_distance())
    >>> t.map(1), t(df).shape
    (1, (500, 2))
    >>> meas = (t >> make_adaptive_pruned_pmm(t.output_domain, t.output_metric, 0.2, 0.8)
    ...           >> make_table_decoding(dom))
    >>> meas.map(1)
    1.0
    >>> out = meas(df)
    >>> list(out.columns), str(out["age"].dtype), set(out["region"]) <= {"n", "e", "s", "w"}
    (['age', 'region'], 'int64', True)
    """
    assert_features("contrib")
    desc = check_table_domain(input_domain)
    check_metric(input_metric, desc.size)
    if embedding not in EMBEDDINGS:
        raise ValueError(f"embedding must be one of {EMBEDDINGS}, got {embedding!r}")
    schema, size = desc.schema, desc.size
    enc = TableEncoding(schema)
    width = enc.dimension if embedding == "cube" else enc.embedding_dimension

    def function(x: Any) -> np.ndarray:
        cols, _ = read_table(x, schema)
        points = enc.encode(cols)
        if size is not None and points.shape[0] != size:
            raise ValueError(f"data must have exactly {size} rows (the domain's public size)")
        return points if embedding == "cube" else enc.embed(points)

    return make_transformation(
        input_domain,
        input_metric,
        dp.numpy.array2_domain(num_columns=width, size=size, T=float, nan=False),
        input_metric,
        function,
        _row_stability,
    )


then_table_encoding = to_then(make_table_encoding)
register(make_table_encoding)


_OPENDP_RECORD = "__opendp_dict__"


_SEALED: dict[type, Any] = {}


def _sealed_type(base: type) -> Any:
    """A subclass of ``base`` whose instances refuse the attribute ``__opendp_dict__`` (one per
    base)."""
    if base in _SEALED:
        return _SEALED[base]

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if name == _OPENDP_RECORD:
            raise AttributeError("a released table does not keep OpenDP's record of the call")
        base.__setattr__(self, name, value)  # type: ignore[call-arg]

    _SEALED[base] = type(
        base.__name__, (base,), {"__setattr__": __setattr__, "__module__": base.__module__}
    )
    return _SEALED[base]


def _sealed(table: Any, kind: str) -> Any:
    """``table`` as an instance of a subclass of its type that refuses ``__opendp_dict__``.

    OpenDP's ``measurement_invoke`` (opendp 0.16, ``core.py``) stores
    ``{"this": measurement, "arg": input}`` on the output of every release whose type takes new
    attributes, so a pandas or Polars frame released by a chain ending in this decoding would
    carry a reference to the *private input table*.  Arrays, pyarrow tables and frozen
    dataclasses refuse the attribute (OpenDP then skips it); the frames are given a subclass
    that refuses it too (same class name and module, same behaviour otherwise).
    """
    if kind == "pandas":
        return _sealed_type(type(table))(table)
    if kind == "polars":
        return _sealed_type(type(table))._from_pydf(table._df)
    if kind == "polars-lazy":
        return _sealed_type(type(table))._from_pyldf(table._ldf)
    return table


def decode_points(domain: Domain, points: Any, kind: str = "pandas") -> Any:
    """Encoded points back into a table of ``kind`` under the domain's schema (a plain function:
    what :func:`make_table_decoding` applies, for points already released, e.g. by a Context
    query).

    :param domain: the :func:`~opendp_wasserstein.tables.table_domain` the points came from
    :param points: an ``(m, D)`` float array (public: a release)
    :param kind: ``"pandas"`` (default), ``"polars"``, ``"polars-lazy"``, ``"arrow"`` or ``"numpy"``
    """
    return _decoder(domain, kind)(points)


def unsealed(table: Any) -> Any:
    """A released table of :func:`make_table_decoding` as an instance of its library's own frame
    class (the same data; what a front end that invoked the chain returns to its caller, once
    OpenDP's ``measurement_invoke`` is done with it)."""
    base = type(table)
    if base not in _SEALED.values():
        return table
    parent: Any = base.__mro__[1]
    kind = frame_kind(table)
    if kind == "polars-lazy":
        return parent._from_pyldf(table._ldf)
    if kind == "polars":
        return parent._from_pydf(table._df)
    return parent(table)


def _decoder(domain: Domain, kind: str | FrameInfo) -> Any:
    desc = check_table_domain(domain)
    if isinstance(kind, FrameInfo):
        if sorted(kind.names) != sorted(desc.schema.names):
            raise ValueError("kind: a FrameInfo must name exactly the schema's columns")
        info = kind
    elif kind not in FRAME_KINDS:
        raise ValueError(f"kind must be one of {FRAME_KINDS}, got {kind!r}")
    else:
        info = natural_frame_info(desc.schema, kind)
    enc = TableEncoding(desc.schema)

    def function(points: Any) -> Any:
        p = np.asarray(points, dtype=np.float64)
        if p.ndim != 2 or p.shape[1] != enc.dimension:
            raise ValueError(f"the points must be an (m, {enc.dimension}) array of encoded points")
        return _sealed(write_table(enc.decode(p), desc.schema, info), info.kind)

    return function


def make_table_decoding(domain: Domain, kind: str | FrameInfo = "pandas") -> Function:
    """Post-processing: released points of ``[0, 1]^D`` back into a table under the schema.

    Any point decodes (it is clipped into the cube; every coordinate of a categorical column
    decodes to a declared label); int columns come back as integers, dates as dates,
    categories as their labels, booleans as booleans, nulls only in nullable columns.  The
    dtypes are the schema's natural ones
    (:func:`~opendp_wasserstein.tables.frames.natural_frame_info`). A pandas or Polars result is an
    instance of a subclass of the library's frame that refuses the attribute OpenDP's
    ``measurement_invoke`` would otherwise set on it: a record of the call holding the *input table*
    (see ``_sealed``).

    :param domain: the :func:`~opendp_wasserstein.tables.table_domain` the points were encoded from
    :param kind: the output type: ``"pandas"`` (default), ``"polars"``, ``"polars-lazy"``,
        ``"arrow"`` or ``"numpy"``, in the natural dtypes; or a
        :class:`~opendp_wasserstein.tables.FrameInfo` (public: a type, names, dtype kinds, e.g.
        :func:`~opendp_wasserstein.tables.frames.table_info` of an input), to write its type,
        column order and dtypes
    :return: a ``Function`` from an ``(m, D)`` float array to a table, to chain after a
        measurement (``meas >> make_table_decoding(dom)``); for points released already, e.g.
        by a Context query, call :func:`decode_points`
    """
    return new_function(_decoder(domain, kind))
