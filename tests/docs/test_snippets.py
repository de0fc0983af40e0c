"""Every Python snippet in the README and the Sphinx pages runs, as a reader would run it.

The snippets of a Sphinx page (``.. code-block:: python`` blocks and ``>>>`` doctest blocks)
run in order in one namespace, as the page builds on its earlier blocks; each ```` ```python ````
block of the README runs on its own, as a reader copies one.  Each page runs in a fresh Python
process (so no test fixture, such as the suite's ``dp.enable_features``, helps them), with the
page's directory layout irrelevant: the working directory is a temporary one.  Doctest blocks
must print what they show.

The one exception is the pseudocode of the proof pages: a code block in a section titled
"Pseudocode" is simplified Python that mirrors the implementation and is not meant to run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst"))]
PAGES = [p for p in PAGES if "_build" not in p.parts]

#: section titles whose code blocks are pseudocode, not snippets
PSEUDOCODE_SECTIONS = {"pseudocode"}

_RST_CODE = re.compile(r"^(?P<indent>\s*)\.\. (?:code-block|code|sourcecode)::\s*(?P<lang>\S*)\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>_:.])\1{2,}\s*$")
_MD_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")


@dataclass(frozen=True)
class Snippet:
    """One runnable block of a page: ``kind`` is ``"code"`` (exec) or ``"doctest"``."""

    page: str
    line: int  # 1-based line of the first line of the block's source
    kind: str
    source: str
    fresh: bool = False  # run in a fresh namespace rather than after the page's earlier blocks


def _doctest_or_code(page: str, line: int, source: str, fresh: bool = False) -> Snippet:
    kind = "doctest" if source.lstrip().startswith(">>>") else "code"
    return Snippet(page, line, kind, source, fresh)


def markdown_snippets(text: str, page: str = "<md>") -> list[Snippet]:
    """The ```` ```python ```` (and ``py``, ``pycon``) fenced blocks of a Markdown text.

    Each block stands alone (a README reader copies one block), so each is ``fresh``.
    """
    out: list[Snippet] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _MD_FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m["fence"], m["lang"].lower(), i + 1
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        if lang in ("python", "py", "python3", "pycon"):
            body = textwrap.dedent("\n".join(lines[start:i]))
            out.append(_doctest_or_code(page, start + 1, body, fresh=True))
        i += 1
    return out


def rst_snippets(text: str, page: str = "<rst>") -> tuple[list[Snippet], int]:
    """The Python code blocks and ``>>>`` doctest blocks of a reStructuredText text.

    :return: the snippets, and how many Python blocks were skipped as pseudocode
    """
    out: list[Snippet] = []
    skipped = 0
    lines = text.splitlines()
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if (
            i + 1 < len(lines)
            and line.strip()
            and not line.startswith(" ")
            and _RST_UNDERLINE.match(lines[i + 1])
            and len(lines[i + 1].strip()) >= len(line.strip())
        ):
            section = line.strip().lower()
            i += 2
            continue
        m = _RST_CODE.match(line)
        if m:
            indent, lang = len(m["indent"]), m["lang"].lower()
            i += 1
            while i < len(lines) and re.match(r"^\s+:[\w-]+:", lines[i]):  # directive options
                i += 1
            start = i
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                i += 1
            body = textwrap.dedent("\n".join(lines[start:i])).strip("\n")
            first = start + next((k for k, s in enumerate(lines[start:i]) if s.strip()), 0) + 1
            if lang in ("python", "py", "python3", "pycon"):
                if section in PSEUDOCODE_SECTIONS:
                    skipped += 1
                else:
                    out.append(_doctest_or_code(page, first, body))
            continue
        if line.lstrip().startswith(">>> "):  # a doctest block: a paragraph of >>> and output
            start = i
            while i < len(lines) and lines[i].strip():
                i += 1
            out.append(
                Snippet(page, start + 1, "doctest", textwrap.dedent("\n".join(lines[start:i])))
            )
            continue
        i += 1
    return out, skipped


def page_snippets(path: Path) -> list[Snippet]:
    text = path.read_text(encoding="utf-8")
    name = str(path.relative_to(ROOT))
    if path.suffix == ".md":
        return markdown_snippets(text, name)
    return rst_snippets(text, name)[0]


_RUNNER = r"""
import doctest, json, sys, traceback
snippets = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
for s in snippets:
    if s["fresh"]:
        namespace = {"__name__": "__main__"}
    where = f"{s['page']}:{s['line']}"
    if s["kind"] == "code":
        code = compile("\n" * (s["line"] - 1) + s["source"], s["page"], "exec")
        try:
            exec(code, namespace)
        except BaseException:
            print(f"snippet at {where} failed:", file=sys.stderr)
            traceback.print_exc()
            sys.exit(1)
    else:
        test = doctest.DocTestParser().get_doctest(
            s["source"], namespace, where, s["page"], s["line"] - 1
        )
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=sys.stderr.write, clear_globs=False)
        if runner.failures:
            print(f"doctest at {where} failed", file=sys.stderr)
            sys.exit(1)
"""

RUNNABLE = [p for p in PAGES if page_snippets(p)]


def test_the_pages_have_snippets():
    names = {str(p.relative_to(ROOT)) for p in RUNNABLE}
    assert {"README.md", "docs/getting_started.rst"} <= names


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_snippets_run(page: Path, tmp_path: Path) -> None:
    snippets = page_snippets(page)
    payload = json.dumps([s.__dict__ for s in snippets])
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=payload,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]


# ---------------------------------------------------------------------------------------------
# the extraction itself

RST = """\
Title
=====

.. code-block:: python
   :caption: first

   x = 1
   if x:
       y = 2

   z = 3

text

.. code-block:: bash

   echo not python

Pseudocode
----------

.. code-block:: python

   repeat forever:

Usage
-----

>>> 1 + 1
2

   .. code-block:: python

      w = 4
"""


def test_rst_extraction():
    snippets, skipped = rst_snippets(RST)
    assert skipped == 1
    assert [(s.line, s.kind) for s in snippets] == [(7, "code"), (29, "doctest"), (34, "code")]
    assert snippets[0].source == "x = 1\nif x:\n    y = 2\n\nz = 3"
    assert snippets[1].source == ">>> 1 + 1\n2"
    assert snippets[2].source == "w = 4"
    assert not any(s.fresh for s in snippets)


def test_markdown_extraction():
    text = (
        "# T\n\n```bash\nls\n```\n\n```python\nimport os\nprint(os.sep)\n```\n\n  ```py\n  >>> "
        "2\n  2\n  ```\n"
    )
    snippets = markdown_snippets(text)
    assert [(s.line, s.kind, s.source) for s in snippets] == [
        (8, "code", "import os\nprint(os.sep)"),
        (13, "doctest", ">>> 2\n2"),
    ]
    assert all(s.fresh for s in snippets)
