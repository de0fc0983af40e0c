"""Staleness records: each group of theorems records the hash of the Python source it covers.

A source is named by the object, never by a file path: ``"face:name"`` is ``name`` on one of
the package's documented modules (``opendp_wasserstein.<face>``), and ``"face:name>helper"`` is
``helper`` looked up in the module that defines ``face:name`` (a map helper living next to its
constructor).  A module move keeps every key valid as long as the public faces re-export the
constructors.  The hash is sha256 over ``key + syntax`` of every key in order, where the syntax
is :func:`ast.dump` of the object's source (:func:`inspect.getsource`): any change to code,
names, literals or docstrings renews nothing silently, while a formatter's re-wrapping (which
keeps the syntax tree) leaves the records valid.

``formal/staleness.json`` holds the records; ``python formal/renew.py`` rewrites the hashes
after the theorems were checked against the changed code (the one-command renewal).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

RECORDS = Path(__file__).resolve().parents[2] / "formal" / "staleness.json"
FACES = (
    "measurements",
    "transformations",
    "postprocessing",
    "core.exact",
    "schedules.pure",
    "schedules.zcdp",
    "schedules.tree",
    # the table release's documented modules (docs/proofs/table_marginals.rst, gower.rst)
    "tables.marginals",
    "tables.pipeline",
    "tables.joint",
    # the table release as one chain (docs/proofs/table_release.rst)
    "tables.measurement",
    "tables.transformation",
)


def resolve(key: str) -> Any:
    """The object a key names (``face:name`` or ``face:name>helper``)."""
    face, _, rest = key.partition(":")
    if face not in FACES or not rest:
        raise ValueError(f"a source key is 'face:name[>helper]' with face in {FACES}, got {key!r}")
    name, _, helper = rest.partition(">")
    obj = getattr(importlib.import_module(f"opendp_wasserstein.{face}"), name)
    if helper:
        obj = getattr(sys.modules[inspect.unwrap(obj).__module__], helper)
    return inspect.unwrap(obj)


def syntax_of(obj: Any) -> str:
    """The syntax tree of ``obj``'s source as text (layout-free, comments dropped)."""
    return ast.dump(ast.parse(textwrap.dedent(inspect.getsource(obj))))


def digest(keys: list[str], source_of: Any = None) -> str:
    """sha256 over the sources of ``keys`` (``source_of(obj)``: default :func:`syntax_of`)."""
    get = syntax_of if source_of is None else source_of
    h = hashlib.sha256()
    for key in keys:
        h.update(key.encode())
        h.update(b"\0")
        h.update(get(resolve(key)).encode())
        h.update(b"\0")
    return h.hexdigest()


def load() -> dict[str, Any]:
    return json.loads(RECORDS.read_text())


def stale(records: dict[str, Any]) -> list[str]:
    """The groups whose recorded hash no longer matches the code."""
    return [
        name for name, rec in records["records"].items() if digest(rec["sources"]) != rec["sha256"]
    ]


def renew(names: list[str] | None = None) -> list[str]:
    """Rewrite the hashes (of ``names``, default all); returns the groups that changed."""
    data = load()
    changed = []
    for name, rec in data["records"].items():
        if names and name not in names:
            continue
        new = digest(rec["sources"])
        if new != rec["sha256"]:
            rec["sha256"] = new
            changed.append(name)
    RECORDS.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return changed
