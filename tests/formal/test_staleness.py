"""Staleness as a gate: every theorem group records the hash of the Python source it covers
(formal/staleness.json, keyed by objects found from the public faces, never by file path); a
change to that source fails here until the record is renewed with ``python formal/renew.py``
(after checking the theorems named in the record against the changed code)."""

from __future__ import annotations

import re

from tests.formal import package as pkg
from tests.formal import staleness
from tests.formal.extracted import FORMAL, ROOT


def test_every_record_matches_its_source():
    records = staleness.load()
    bad = staleness.stale(records)
    assert not bad, (
        f"the Python source covered by {bad} changed since its theorems were last checked: check "
        "the theorems named in formal/staleness.json against the new code, then run `python "
        "formal/renew.py`"
    )


def test_every_proof_page_has_a_record_and_its_theorems_exist():
    records = staleness.load()["records"]
    pages = {p.stem for p in (ROOT / "docs" / "proofs").glob("*.rst")} - {"index"}
    assert pages <= set(records), (
        f"proof pages without a staleness record: {sorted(pages - set(records))}"
    )
    theories = {p.stem: p.read_text() for p in (FORMAL / "theories").glob("*.v")}
    for name, rec in records.items():
        for thm in rec["theorems"]:
            if thm.endswith(".py"):
                assert (ROOT / thm).exists(), thm
                continue
            module, _, ident = thm.partition(".")
            assert re.search(
                rf"^(Theorem|Lemma|Corollary)\s+{re.escape(ident)}\b", theories[module], re.M
            ), (name, thm)
        for key in rec["sources"]:
            staleness.resolve(key)  # every key names an object of the package


def test_a_changed_source_changes_the_record(monkeypatch):
    """The gate can fail: the same keys over a modified source give another hash."""
    keys = staleness.load()["records"]["exponential_selection"]["sources"]
    honest = staleness.digest(keys)
    assert staleness.digest(keys, lambda obj: "def changed(): pass\n") != honest
    # and a monkeypatched map helper is seen through its key
    mod = __import__(pkg.T.make_dyadic_counts.__module__, fromlist=["x"])

    def planted(metric_kind, size, scales):  # pragma: no cover - never called
        return None

    before = staleness.digest(["transformations:make_dyadic_counts>dyadic_counts_stability"])
    monkeypatch.setattr(mod, "dyadic_counts_stability", planted)
    assert (
        staleness.digest(["transformations:make_dyadic_counts>dyadic_counts_stability"]) != before
    )


def test_every_proof_page_box_names_its_records_theorems():
    """The "Machine-checked" box of a proof page names exactly the theorems of its record."""
    for name, rec in staleness.load()["records"].items():
        if not rec["page"].startswith("docs/proofs/"):
            continue
        m = re.search(
            r"^   \* \*\*Theorems\*\* \(formal/theories\): (.*)$",
            (ROOT / rec["page"]).read_text(),
            re.M,
        )
        assert m is not None, f"{rec['page']} has no Machine-checked box"
        assert sorted(re.findall(r"``([^`]+)``", m.group(1))) == sorted(rec["theorems"]), name
