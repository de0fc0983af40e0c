"""Every constructor's ``**Proof Definition:**`` is a Sphinx ``:doc:`` link to a page of
``docs/proofs/`` that exists and that names the constructor back; every public constructor with a
map has one (issue 21)."""

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

#: the field and what follows it on its line
FIELD = re.compile(r"\*\*Proof Definition:\*\*[ \t]*(.*)")
#: the one accepted value: ``:doc:`/proofs/x``` or ``:doc:`title </proofs/x>```, absolute from docs/
DOC = re.compile(r":doc:`(?:/(?P<bare>proofs/[\w/]+)|[^`<]+</(?P<titled>proofs/[\w/]+)>)`")


def proof_pages(name: str, doc: str) -> list[str]:
    """The docnames (``proofs/x``) the ``**Proof Definition:**`` fields of ``doc`` link to; a
    field whose value is not one ``:doc:`` link fails, naming the constructor."""
    pages = []
    for value in FIELD.findall(doc):
        m = DOC.fullmatch(value.strip())
        assert m, (
            f"{name}: **Proof Definition:** {value.strip()!r} is not a :doc: link to a proof page "
            "(write :doc:`/proofs/<page>`)"
        )
        pages.append(m["bare"] or m["titled"])
    return pages


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
    pages = proof_pages(name, inspect.getdoc(constructor) or "")
    if name in ELSEWHERE:
        assert not pages, f"{name} has a proof page now: drop it from ELSEWHERE"
        return
    assert pages, f"{name} has no **Proof Definition:** field"
    for page in pages:
        path = ROOT / "docs" / f"{page}.rst"
        assert path.is_file(), f"{name}: Proof Definition :doc:`/{page}` is not a page of docs/"
        assert re.search(rf"\b{name}\b", path.read_text(encoding="utf-8")), (
            f"{name}: {page}.rst never names it"
        )


def test_a_plain_path_or_a_broken_link_is_found():
    """The field parser takes both :doc: spellings, refuses a plain path, and the page check above
    fails on a page that does not exist."""
    doc = (
        "**Proof Definition:** :doc:`/proofs/pmm`\n\n"
        "**Proof Definition:** :doc:`PMM </proofs/nope>`"
    )
    assert proof_pages("make_x", doc) == ["proofs/pmm", "proofs/nope"]
    assert not (ROOT / "docs" / "proofs" / "nope.rst").exists()
    for bad in ("``docs/proofs/pmm.rst``", ":doc:`proofs/pmm`", ":doc:`/proofs/pmm>`", "pmm.rst"):
        with pytest.raises(AssertionError, match="make_x: .* is not a :doc: link"):
            proof_pages("make_x", f"**Proof Definition:** {bad}")


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
    for page in proof_pages(name, inspect.getdoc(constructor) or ""):
        path = ROOT / "docs" / f"{page}.rst"
        quoted = {
            (str((path.parent / m["src"]).resolve()), m["obj"])
            for m in INCLUDE.finditer(path.read_text(encoding="utf-8"))
        }
        assert (str(source), name) in quoted, (
            f"{path.name} does not quote {name} from {source.name}"
        )
