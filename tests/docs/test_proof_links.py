"""Every constructor's ``**Proof Definition:**`` names a proof page that exists and that names the
constructor back; every public constructor with a map has one (issue 21)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from opendp_wasserstein import measurements, postprocessing, transformations
from opendp_wasserstein.tables import joint, marginals, pipeline
from opendp_wasserstein.tables import measurement as table_measurement
from opendp_wasserstein.tables import transformation as table_transformation

ROOT = Path(__file__).resolve().parents[2]

#: the field: ``**Proof Definition:** ``docs/proofs/x.rst``` or ``:doc:`/proofs/x```
FIELD = re.compile(
    r"\*\*Proof Definition:\*\*\s+(?:``docs/(proofs/[\w/]+)\.rst``|:doc:`/?(proofs/[\w/]+)`)"
)

#: constructors whose argument is elsewhere, and where
ELSEWHERE = {
    "make_table_encoding": "a row-wise map, d_out = d_in: its module docstring and docs/tables.rst",
    "make_table_decoding": "a post-processing Function of released points: docs/tables.rst",
}


def constructors() -> list[tuple[str, object]]:
    out = []
    for mod in (measurements, transformations, postprocessing):
        out += [(name, getattr(mod, name)) for name in mod.__all__ if name.startswith("make_")]
    for mod in (marginals, joint, pipeline, table_transformation, table_measurement):
        out += [
            (name, obj)
            for name, obj in vars(mod).items()
            if name.startswith("make_")
            and inspect.isfunction(obj)
            and obj.__module__ == mod.__name__
        ]
    return sorted(dict(out).items())


CONSTRUCTORS = constructors()


def test_the_walk_finds_the_constructors():
    names = {name for name, _ in CONSTRUCTORS}
    assert {
        "make_pmm",
        "make_dyadic_counts",
        "make_full_consistency",
        "make_table_marginals",
    } <= names
    assert len(names) >= 25


@pytest.mark.parametrize(("name", "constructor"), CONSTRUCTORS, ids=[n for n, _ in CONSTRUCTORS])
def test_the_proof_definition_resolves_and_names_the_constructor(name, constructor):
    pages = [a or b for a, b in FIELD.findall(inspect.getdoc(constructor) or "")]
    if name in ELSEWHERE:
        assert not pages, f"{name} has a proof page now: drop it from ELSEWHERE"
        return
    assert pages, f"{name} has no **Proof Definition:** field"
    for page in pages:
        path = ROOT / "docs" / f"{page}.rst"
        assert path.is_file(), f"{name}: Proof Definition {page} is not a page of docs/"
        assert re.search(rf"\b{name}\b", path.read_text(encoding="utf-8")), (
            f"{name}: {page}.rst never names it"
        )


def test_a_broken_link_is_found():
    """The field parser reads both spellings and the check above fails on a missing page."""
    doc = (
        "**Proof Definition:** ``docs/proofs/nope.rst``\n\n**Proof Definition:** :doc:`/proofs/pmm`"
    )
    assert [a or b for a, b in FIELD.findall(doc)] == ["proofs/nope", "proofs/pmm"]
    assert not (ROOT / "docs" / "proofs" / "nope.rst").exists()


INCLUDE = re.compile(
    r"^\.\. literalinclude:: (?P<src>\S+)\n(?:   :[\w-]+:.*\n)*?   :pyobject: (?P<obj>\w+)$", re.M
)


@pytest.mark.parametrize(("name", "constructor"), CONSTRUCTORS, ids=[n for n, _ in CONSTRUCTORS])
def test_the_proof_page_quotes_the_constructor_from_its_source(name, constructor):
    """The page shows the code itself (``literalinclude`` with ``:pyobject:`` of the file that
    defines it), so what the page shows cannot drift from the code."""
    if name in ELSEWHERE:
        return
    source = Path(inspect.getsourcefile(inspect.unwrap(constructor))).resolve()
    for a, b in FIELD.findall(inspect.getdoc(constructor) or ""):
        path = ROOT / "docs" / f"{a or b}.rst"
        quoted = {
            (str((path.parent / m["src"]).resolve()), m["obj"])
            for m in INCLUDE.finditer(path.read_text(encoding="utf-8"))
        }
        assert (str(source), name) in quoted, (
            f"{path.name} does not quote {name} from {source.name}"
        )
