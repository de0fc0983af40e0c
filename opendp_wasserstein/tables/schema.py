"""The public schema of a table: one column spec per column, all of it public.

A schema says everything the mechanisms may know about a table besides the private rows: the
type of each column, its public bounds or category list, whether it may hold missing values and
what happens to a value outside the declared categories.  It is a frozen dataclass (hashable, so
it can sit in an OpenDP domain descriptor) and reads and writes JSON::

    {"columns": {
      "income": {"type": "float", "bounds": [0, 500000], "nullable": true},
      "age":    {"type": "int", "bounds": [0, 120]},
      "region": {"type": "categorical", "categories": ["north", "east", "south", "west"]},
      "visit":  {"type": "datetime", "bounds": ["2015-01-01", "2016-01-01"]},
      "smoker": {"type": "bool"}
    }}

A bound or category list that was read off the data (``opendp-wasserstein schema`` drafts such
lists) is **not private**; it carries ``"derived_from_data": true`` until a person replaces it
with public knowledge, and :meth:`Schema.data_derived_columns` lists the columns still marked.

The reader acts on every field it accepts (``type``, ``bounds``, ``categories``, ``fallback``,
``nullable``, ``derived_from_data`` in a column; ``columns`` and ``epsilon_spent`` at the top)
and refuses any other, at every level, naming the field and where it is: a misspelt
``nulable`` or a note such as ``"privacy": {"epsilon": 0.7}`` would otherwise be dropped, and a
release would report less privacy loss than the schema says was spent.  A drafted schema may
leave a column's ``bounds`` or ``categories`` as ``null``, to be filled in: such a schema is
refused, naming the column, until they are.

Errors name the column and the field, never a data value.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "FloatColumn",
    "IntColumn",
    "DatetimeColumn",
    "CategoricalColumn",
    "BoolColumn",
    "ColumnSpec",
    "Schema",
    "SchemaError",
    "NULL_FALLBACK",
    "parse_datetime",
]

#: the ``fallback`` value meaning "treat a value outside the categories as missing"
NULL_FALLBACK = "null"

_INT_LIMIT = 2**53  # integer bounds must be exact in float64


class SchemaError(ValueError):
    """A schema (or a table checked against it) is not valid; the message names the column."""


def _finite_number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise SchemaError(f"{where} must be a number")
    f = float(value)
    if not math.isfinite(f):
        raise SchemaError(f"{where} must be finite")
    return f


def parse_datetime(value: Any, where: str = "datetime") -> int:
    """Microseconds since 1970-01-01 (UTC for aware values) of an ISO string, date or datetime.

    >>> parse_datetime("1970-01-02")
    86400000000
    """
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            raise SchemaError(f"{where} must not be NaT")
        return int(value.astype("datetime64[us]").astype(np.int64))
    if isinstance(value, str):
        try:
            parsed: Any = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise SchemaError(f"{where} must be an ISO date or datetime string") from None
        value = parsed
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        delta = value - _dt.datetime(1970, 1, 1)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, _dt.date):
        return (value - _dt.date(1970, 1, 1)).days * 86_400_000_000
    raise SchemaError(f"{where} must be an ISO date or datetime string")


def _format_datetime(us: int) -> str:
    moment = _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=int(us))
    if us % 86_400_000_000 == 0:
        return moment.date().isoformat()
    return moment.isoformat()


@dataclass(frozen=True)
class _Base:
    nullable: bool = False
    derived_from_data: bool = False
    type: ClassVar[str] = ""

    def _check_flags(self, name: str) -> None:
        for flag in ("nullable", "derived_from_data"):
            if not isinstance(getattr(self, flag), bool):
                raise SchemaError(f"column {name!r}: {flag} must be true or false")

    def _flags_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.nullable:
            out["nullable"] = True
        if self.derived_from_data:
            out["derived_from_data"] = True
        return out

    def validate(self, name: str) -> None:  # pragma: no cover - overridden
        self._check_flags(name)

    def to_json(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass(frozen=True)
class FloatColumn(_Base):
    """A real-valued column with public bounds ``(lower, upper)``; values outside are clamped.

    :param bounds: ``(lower, upper)``, finite, ``lower < upper``
    :param nullable: missing values are a value of their own (else imputed at the midpoint)
    :param derived_from_data: the bounds were read off the data (not private)
    """

    bounds: tuple[float, float] = (0.0, 1.0)
    type: ClassVar[str] = "float"

    def validate(self, name: str) -> None:
        self._check_flags(name)
        if not isinstance(self.bounds, tuple) or len(self.bounds) != 2:
            raise SchemaError(f"column {name!r}: bounds must be [lower, upper]")
        lo = _finite_number(self.bounds[0], f"column {name!r}: lower bound")
        hi = _finite_number(self.bounds[1], f"column {name!r}: upper bound")
        if not lo < hi:
            raise SchemaError(f"column {name!r}: bounds must have lower < upper")
        if not math.isfinite(hi - lo):
            raise SchemaError(
                f"column {name!r}: bounds must have a finite width (upper - lower overflows)"
            )

    @property
    def lower(self) -> float:
        return float(self.bounds[0])

    @property
    def upper(self) -> float:
        return float(self.bounds[1])

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "bounds": [self.bounds[0], self.bounds[1]], **self._flags_json()}


@dataclass(frozen=True)
class IntColumn(_Base):
    """An integer column with public inclusive bounds; values are clamped and come back as ints.

    :param bounds: ``(lower, upper)`` integers, ``lower < upper``, ``|bound| <= 2**53``
    """

    bounds: tuple[int, int] = (0, 1)
    type: ClassVar[str] = "int"

    def validate(self, name: str) -> None:
        self._check_flags(name)
        if not isinstance(self.bounds, tuple) or len(self.bounds) != 2:
            raise SchemaError(f"column {name!r}: bounds must be [lower, upper]")
        for v, which in zip(self.bounds, ("lower", "upper"), strict=True):
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool)
            ok = ok or (isinstance(v, float) and float(v).is_integer())
            if not ok or abs(int(v)) > _INT_LIMIT:
                raise SchemaError(
                    f"column {name!r}: {which} bound must be an integer of at most 2**53 in size"
                )
        if not int(self.bounds[0]) < int(self.bounds[1]):
            raise SchemaError(f"column {name!r}: bounds must have lower < upper")

    @property
    def lower(self) -> int:
        return int(self.bounds[0])

    @property
    def upper(self) -> int:
        return int(self.bounds[1])

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "bounds": [self.lower, self.upper], **self._flags_json()}


@dataclass(frozen=True)
class DatetimeColumn(_Base):
    """A date or datetime column with public bounds (ISO strings, dates or datetimes).

    Values are handled in microseconds since the epoch (aware values in UTC) and come back in
    the input's own type: dates as dates, datetimes as datetimes.
    """

    bounds: tuple[Any, Any] = ("1970-01-01", "1970-01-02")
    type: ClassVar[str] = "datetime"

    def validate(self, name: str) -> None:
        self._check_flags(name)
        if not isinstance(self.bounds, tuple) or len(self.bounds) != 2:
            raise SchemaError(f"column {name!r}: bounds must be [lower, upper]")
        lo = parse_datetime(self.bounds[0], f"column {name!r}: lower bound")
        hi = parse_datetime(self.bounds[1], f"column {name!r}: upper bound")
        if not lo < hi:
            raise SchemaError(f"column {name!r}: bounds must have lower < upper")

    @property
    def lower_us(self) -> int:
        return parse_datetime(self.bounds[0])

    @property
    def upper_us(self) -> int:
        return parse_datetime(self.bounds[1])

    @property
    def date_only(self) -> bool:
        """Both bounds fall on midnight: values of this column are naturally dates."""
        return self.lower_us % 86_400_000_000 == 0 and self.upper_us % 86_400_000_000 == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "bounds": [_format_datetime(self.lower_us), _format_datetime(self.upper_us)],
            **self._flags_json(),
        }


@dataclass(frozen=True)
class CategoricalColumn(_Base):
    """A column over a public, ordered list of categories (strings or integers).

    :param categories: the distinct public labels, all strings or all integers
    :param fallback: where a value outside ``categories`` goes, the same for every record:
        ``None`` (default: missing if ``nullable``, else the first category), a declared
        category, or ``"null"`` (missing; needs ``nullable``; if ``"null"`` is itself a
        declared category, that category is meant)
    """

    categories: tuple[Any, ...] = ()
    fallback: Any = None
    type: ClassVar[str] = "categorical"

    def validate(self, name: str) -> None:
        self._check_flags(name)
        cats = self.categories
        if not isinstance(cats, tuple) or len(cats) == 0:
            raise SchemaError(f"column {name!r}: categories must be a non-empty list")
        all_str = all(isinstance(c, str) for c in cats)
        all_int = all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in cats)
        if not (all_str or all_int):
            raise SchemaError(f"column {name!r}: categories must be all strings or all integers")
        if len(set(cats)) != len(cats):
            raise SchemaError(f"column {name!r}: categories must be distinct")
        if self.fallback is not None and self.fallback not in cats:
            if self.fallback != NULL_FALLBACK:
                raise SchemaError(
                    f'column {name!r}: fallback must be a declared category or "null"'
                )
            if not self.nullable:
                raise SchemaError(f'column {name!r}: fallback "null" needs nullable: true')

    def fallback_code(self) -> int:
        """The category index a value outside the list goes to (``-1``: missing)."""
        if self.fallback is None:
            return -1 if self.nullable else 0
        if self.fallback in self.categories:
            return self.categories.index(self.fallback)
        return -1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "categories": [_plain(c) for c in self.categories],
        }
        if self.fallback is not None:
            out["fallback"] = _plain(self.fallback)
        return {**out, **self._flags_json()}


@dataclass(frozen=True)
class BoolColumn(_Base):
    """A boolean column: a categorical column over ``(False, True)``.

    A value that is not a boolean (``true/false``, ``1/0``, ``yes/no``, case-insensitive
    strings included) is missing if ``nullable``, else ``False``.
    """

    type: ClassVar[str] = "bool"

    @property
    def categories(self) -> tuple[bool, bool]:
        return (False, True)

    def validate(self, name: str) -> None:
        self._check_flags(name)

    def fallback_code(self) -> int:
        return -1 if self.nullable else 0

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, **self._flags_json()}


ColumnSpec = FloatColumn | IntColumn | DatetimeColumn | CategoricalColumn | BoolColumn

_TYPES: dict[str, type] = {
    "float": FloatColumn,
    "int": IntColumn,
    "datetime": DatetimeColumn,
    "date": DatetimeColumn,
    "categorical": CategoricalColumn,
    "bool": BoolColumn,
}


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, np.integer) else v


#: the fields of a column entry, by type: every one is acted on, any other field is refused
_FIELDS: dict[type, tuple[str, ...]] = {
    FloatColumn: ("type", "bounds", "nullable", "derived_from_data"),
    IntColumn: ("type", "bounds", "nullable", "derived_from_data"),
    DatetimeColumn: ("type", "bounds", "nullable", "derived_from_data"),
    CategoricalColumn: ("type", "categories", "fallback", "nullable", "derived_from_data"),
    BoolColumn: ("type", "nullable", "derived_from_data"),
}
#: the top-level fields of a schema
TOP_LEVEL_FIELDS = ("columns", "epsilon_spent")

#: what a drafted schema leaves to fill in (``null``) and how to fill it in
_TO_FILL = (
    "left to fill in (null in a drafted schema): write the public {what}, or leave the column "
    "out (delete it, or release the others: columns=... / --columns)"
)


def _check_named(names: Sequence[str], present: Sequence[str]) -> None:
    """Refuse the ``names`` asked for that the schema lacks, naming them (only them: unlike
    :meth:`Schema.check_names`, the schema's columns are not listed, as the command line's
    errors about a table's header never quote a field the schema does not name)."""
    known = set(present)
    missing = [n for n in names if n not in known]
    if missing:
        raise SchemaError(f"columns {missing} are not in the schema")


def _column_from_json(name: str, entry: Any) -> ColumnSpec:
    where = f"columns.{json.dumps(name)}"
    if isinstance(entry, list):  # the old bounds.json form: [lower, upper]
        entry = {"type": "float", "bounds": entry}
    if not isinstance(entry, dict):
        raise SchemaError(f'column {name!r}: must be an object with a "type"')
    kind = entry.get("type")
    if kind not in _TYPES:
        raise SchemaError(f"column {name!r}: type must be one of {sorted(set(_TYPES))}")
    cls: Any = _TYPES[kind]
    # refused first: a field the reader does not act on (a misspelt "nulable", a note such as
    # "estimated_with_epsilon") would otherwise be silently dropped
    unknown = sorted(str(k) for k in set(entry) - set(_FIELDS[cls]))
    if unknown:
        raise SchemaError(
            f"column {name!r}: unknown field(s) {unknown} at {where}; "
            f"the fields of a {cls.type} column are {sorted(_FIELDS[cls])}"
        )
    kwargs: dict[str, Any] = {
        "nullable": entry.get("nullable", False),
        "derived_from_data": entry.get("derived_from_data", False),
    }
    if cls in (FloatColumn, IntColumn, DatetimeColumn):
        b = entry.get("bounds")
        if "bounds" in entry and b is None:
            raise SchemaError(
                f"column {name!r}: bounds are " + _TO_FILL.format(what="[lower, upper]")
            )
        if not isinstance(b, list) or len(b) != 2:
            raise SchemaError(f"column {name!r}: bounds must be [lower, upper]")
        kwargs["bounds"] = tuple(b)
    elif cls is CategoricalColumn:
        cats = entry.get("categories")
        if "categories" in entry and cats is None:
            raise SchemaError(
                f"column {name!r}: categories are " + _TO_FILL.format(what="list of categories")
            )
        if not isinstance(cats, list):
            raise SchemaError(f"column {name!r}: categories must be a list")
        kwargs["categories"] = tuple(cats)
        kwargs["fallback"] = entry.get("fallback")
    spec: ColumnSpec = cls(**kwargs)
    spec.validate(name)
    return spec


@dataclass(frozen=True)
class Schema:
    """An ordered mapping of column names to column specs (public).

    :param columns: ``{name: spec}`` (or a sequence of pairs); the order is the column order
    :param epsilon_spent: privacy loss (per replaced record) already spent on finding parts of
        this schema privately (``opendp-wasserstein schema --estimate-bounds``); a release
        built on the schema reports it added to its own

    :example:

    >>> s = Schema({"age": IntColumn(bounds=(0, 120)), "smoker": BoolColumn()})
    >>> s.names
    ('age', 'smoker')
    >>> Schema.from_json(s.to_json()) == s
    True
    >>> Schema.from_bounds({"height": [100, 220]})["height"]
    FloatColumn(nullable=False, derived_from_data=False, bounds=(100.0, 220.0))
    """

    columns: Any
    epsilon_spent: float = 0.0
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        items = (
            list(self.columns.items()) if isinstance(self.columns, Mapping) else list(self.columns)
        )
        if not items:
            raise SchemaError("a schema needs at least one column")
        pairs: list[tuple[str, ColumnSpec]] = []
        for item in items:
            if not (isinstance(item, tuple) and len(item) == 2):
                raise SchemaError("schema columns must be name -> column spec pairs")
            name, spec = item
            if not isinstance(name, str) or not name:
                raise SchemaError("column names must be non-empty strings")
            if not isinstance(
                spec, (FloatColumn, IntColumn, DatetimeColumn, CategoricalColumn, BoolColumn)
            ):
                raise SchemaError(
                    f"column {name!r}: spec must be a FloatColumn, IntColumn, "
                    "DatetimeColumn, CategoricalColumn or BoolColumn"
                )
            if isinstance(spec, FloatColumn):
                spec.validate(name)
                spec = FloatColumn(
                    bounds=(float(spec.bounds[0]), float(spec.bounds[1])),
                    nullable=spec.nullable,
                    derived_from_data=spec.derived_from_data,
                )
            elif isinstance(spec, IntColumn):
                spec.validate(name)
                spec = IntColumn(
                    bounds=(int(spec.bounds[0]), int(spec.bounds[1])),
                    nullable=spec.nullable,
                    derived_from_data=spec.derived_from_data,
                )
            elif isinstance(spec, DatetimeColumn):
                spec.validate(name)
                spec = DatetimeColumn(
                    bounds=(_format_datetime(spec.lower_us), _format_datetime(spec.upper_us)),
                    nullable=spec.nullable,
                    derived_from_data=spec.derived_from_data,
                )
            elif isinstance(spec, CategoricalColumn):
                spec.validate(name)
                spec = CategoricalColumn(
                    categories=tuple(_plain(c) for c in spec.categories),
                    fallback=_plain(spec.fallback),
                    nullable=spec.nullable,
                    derived_from_data=spec.derived_from_data,
                )
            spec.validate(name)
            pairs.append((name, spec))
        names = tuple(p[0] for p in pairs)
        if len(set(names)) != len(names):
            raise SchemaError("column names in a schema must be distinct")
        eps = self.epsilon_spent
        if (
            isinstance(eps, bool)
            or not isinstance(eps, (int, float))
            or not (math.isfinite(eps) and eps >= 0)
        ):
            raise SchemaError("epsilon_spent must be a finite number >= 0")
        object.__setattr__(self, "columns", tuple(pairs))
        object.__setattr__(self, "epsilon_spent", float(eps))
        object.__setattr__(self, "_names", names)

    # -- mapping-like access
    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return self._names

    def __getitem__(self, name: str) -> ColumnSpec:
        for n, spec in self.columns:
            if n == name:
                return spec
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def items(self) -> tuple[tuple[str, ColumnSpec], ...]:
        return self.columns  # type: ignore[no-any-return]

    def select(self, names: Sequence[str]) -> Schema:
        """The sub-schema of ``names`` (in that order); unknown names are refused by name."""
        self.check_names(names, what="selected")
        return Schema([(n, self[n]) for n in names], epsilon_spent=self.epsilon_spent)

    def header_mismatch(
        self, names: Sequence[str], fields: str, aside: str
    ) -> tuple[list[str], list[str]]:
        """Why a table's column ``names`` are not exactly the schema's columns (``[]`` when they
        are), and the schema columns they share.  A name that is not in the schema is counted,
        never quoted (a header may be a record); schema names are public and named.

        :param fields: what the names are called in the message (``"column name(s)"``)
        :param aside: said after the count of names not in the schema
        """
        extra = sum(n not in self._names for n in names)
        missing = [c for c in self._names if c not in names]
        why = []
        if extra:
            why.append(
                f"{extra} of its {len(names)} {fields} are not columns of the schema {aside}"
            )
        if missing and len(missing) < len(self):
            why.append(f"schema column(s) {missing} are not in it")
        elif missing:
            why.append("none of the schema's columns is in it")
        return why, [c for c in self._names if c in names]

    def check_names(self, names: Sequence[str], what: str = "table") -> None:
        """Refuse column names not in the schema, listing those that are."""
        unknown = [n for n in names if n not in self._names]
        if unknown:
            raise SchemaError(
                f"{what} column(s) {unknown} are not in the schema; its columns are "
                f"{list(self._names)}"
            )

    def data_derived_columns(self) -> list[str]:
        """Columns whose bounds or categories were read off the data (marked, not private)."""
        return [n for n, spec in self.columns if spec.derived_from_data]

    # -- JSON
    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``json.dump`` it); :meth:`from_json` reads it back."""
        out: dict[str, Any] = {"columns": {n: spec.to_json() for n, spec in self.columns}}
        if self.epsilon_spent:
            out["epsilon_spent"] = self.epsilon_spent
        return out

    def dumps(self) -> str:
        """The JSON text, one column per line."""
        cols = ",\n".join(
            f"  {json.dumps(n)}: {json.dumps(spec.to_json())}" for n, spec in self.columns
        )
        extra = (
            f',\n"epsilon_spent": {json.dumps(self.epsilon_spent)}' if self.epsilon_spent else ""
        )
        return '{"columns": {\n' + cols + "\n}" + extra + "}\n"

    @classmethod
    def from_json(cls, source: Any, columns: Sequence[str] | None = None) -> Schema:
        """A schema from a dict, a JSON string or a path to a JSON file.

        The old ``bounds.json`` form (``{"height": [100, 220]}``) reads as float columns.

        :param source: the schema
        :param columns: read only these columns' entries, in the file's order (the others are
            not validated, so a drafted schema's column left to fill in can be left out of a
            release, as ``--columns`` does; a name the schema lacks is refused); ``None``:
            every column
        """
        if isinstance(source, (str, os.PathLike)) and not str(source).lstrip().startswith("{"):
            try:
                with open(source) as f:
                    text = f.read()
            except OSError as e:
                raise SchemaError(
                    f"cannot read schema file {str(source)!r}: {e.strerror or e}"
                ) from None
            source = text
        if isinstance(source, str):
            try:
                source = json.loads(source)
            except json.JSONDecodeError as e:
                raise SchemaError(f"schema is not valid JSON: {e.msg} (line {e.lineno})") from None
        if not isinstance(source, dict):
            raise SchemaError("a schema must be a JSON object")
        keep = None if columns is None else [str(c) for c in columns]
        if all(isinstance(v, list) for v in source.values()) and "columns" not in source:
            if keep is not None:
                _check_named(keep, [str(k) for k in source])
                source = {k: v for k, v in source.items() if str(k) in keep}
            return cls.from_bounds(source)  # the old {"column": [lower, upper]} form
        # every top-level field is acted on; any other is refused (a "privacy" note would
        # otherwise be dropped, and a release would report less than was spent)
        unknown = sorted(str(k) for k in set(source) - set(TOP_LEVEL_FIELDS))
        if unknown:
            raise SchemaError(
                f"unknown top-level schema field(s) {unknown}; the top-level fields are "
                f'{list(TOP_LEVEL_FIELDS)} (or the old bounds form {{"column": [lower, upper]}})'
            )
        cols = source.get("columns")
        if not isinstance(cols, dict):
            raise SchemaError('a schema needs "columns": {name: column entry}')
        eps = source.get("epsilon_spent", 0.0)
        if keep is not None:
            _check_named(keep, [str(n) for n in cols])
        return cls(
            [
                (str(n), _column_from_json(str(n), e))
                for n, e in cols.items()
                if keep is None or str(n) in keep
            ],
            epsilon_spent=eps,
        )

    @classmethod
    def from_bounds(cls, bounds: Mapping[str, Any]) -> Schema:
        """The old ``{"column": [lower, upper]}`` bounds map as a schema of float columns."""
        if not isinstance(bounds, Mapping):
            raise SchemaError(
                'bounds must map each column name to [lower, upper], e.g. {"x": [0, 1]}'
            )
        pairs = []
        for n, b in bounds.items():
            if not (isinstance(b, (list, tuple)) and len(b) == 2):
                raise SchemaError(f"column {n!r}: bounds must be [lower, upper]")
            spec = FloatColumn(bounds=(b[0], b[1]))
            spec.validate(str(n))
            pairs.append((str(n), spec))
        return cls(pairs)

    def identifier(self) -> str:
        """A canonical string of every field, in column order (the order of the encoding's axes):
        OpenDP compares user domains by identifier only, so two schemas have the same identifier
        exactly when they are equal.

        >>> Schema({"b": BoolColumn(), "x": FloatColumn(bounds=(0, 1))}).identifier()
        '[["b",{"type":"bool"}],["x",{"bounds":[0.0,1.0],"type":"float"}]];epsilon_spent=0.0'
        """
        cols = [[n, spec.to_json()] for n, spec in self.columns]
        return (
            json.dumps(cols, sort_keys=True, separators=(",", ":"))
            + f";epsilon_spent={self.epsilon_spent!r}"
        )
