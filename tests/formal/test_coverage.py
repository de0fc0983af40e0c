"""Every registry constructor is in formal/coverage.json, and what the manifest names exists:
its Coq theorems (in formal/theories/), its extracted map (in Extract.v and the driver), its
bounded check (a test function in tests/formal/), what that check checks and its figure (map
and certified loss)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conformance.registry import ENTRIES
from tests.formal.extracted import FORMAL, ROOT

COVERAGE = json.loads((FORMAL / "coverage.json").read_text())
THEORIES = {p.stem: p.read_text() for p in (FORMAL / "theories").glob("*.v")}
EXTRACT = (FORMAL / "theories" / "Extract.v").read_text()
DRIVER = (FORMAL / "extraction" / "driver.ml").read_text()


def test_every_registry_constructor_is_covered():
    missing = sorted({e.name for e in ENTRIES} - set(COVERAGE))
    assert not missing, f"constructors missing from formal/coverage.json: {missing}"
    unknown = sorted(set(COVERAGE) - {e.name for e in ENTRIES})
    assert not unknown, (
        f"formal/coverage.json names constructors the registry does not have: {unknown}"
    )


@pytest.mark.parametrize("name", sorted(COVERAGE))
def test_the_manifest_names_what_exists(name):
    rec = COVERAGE[name]
    assert rec["theorems"], name
    for thm in rec["theorems"]:
        module, _, ident = thm.partition(".")
        assert re.search(
            rf"^(Theorem|Lemma|Corollary)\s+{re.escape(ident)}\b", THEORIES[module], re.M
        ), thm
    if rec["extracted_map"] is None:
        assert rec.get("no_extracted_map"), f"{name}: no extracted map and no reason"
    else:
        for part in rec["extracted_map"].split(","):
            coq, _, query = part.strip().partition(" ")
            assert re.search(rf"\b{coq}\b", EXTRACT), coq
            assert f'"{query.strip("()")}"' in DRIVER, query
    assert rec.get("bounded_kind"), (
        f"{name}: the manifest says what its bounded check checks and its figure"
    )
    assert rec.get("bounded_figure"), (
        f"{name}: the manifest says what its bounded check checks and its figure"
    )
    path, _, fn = rec["bounded_check"].partition("::")
    assert re.search(rf"^def {fn}\(", (ROOT / path).read_text(), re.M), rec["bounded_check"]
