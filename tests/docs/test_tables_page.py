"""The Python example of docs/tables.rst runs (a smoke test)."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.rst"


def test_tables_doc_python_blocks_run():
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)", text)
    assert blocks
    for block in blocks:
        code = "\n".join(line[3:] for line in block.splitlines())
        exec(compile(code, str(DOC), "exec"), {})


def test_tables_doc_schema_example_parses():
    import json

    from opendp_wasserstein.tables import Schema

    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"\.\. code-block:: json\n\n((?:   .*\n|\n)+)", text).group(1)
    assert Schema.from_json(json.loads(block)).names == (
        "income",
        "age",
        "region",
        "visit",
        "smoker",
    )
