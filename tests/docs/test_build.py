"""The Sphinx documentation builds with warnings as errors (no network needed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("sphinx")
    cmd = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-b",
        "html",
        "-d",
        str(tmp_path / "doctrees"),
        str(DOCS),
        str(tmp_path / "html"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"sphinx failed:\n{proc.stdout}\n{proc.stderr}"
    html = tmp_path / "html"
    for page in (
        "index",
        "getting_started",
        "pmm_family",
        "public_candidates",
        "randomness",
        "api",
        "upstream",
        "proofs/index",
        "proofs/pmm",
        "proofs/tree_em",
    ):
        assert (html / f"{page}.html").is_file(), page
    # formulas render offline: every page with math loads the MathJax copied into _static
    page = (html / "proofs" / "pmm.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', page, flags=re.IGNORECASE)
    assert scripts == ["../_static/mathjax/tex-chtml.js"], scripts
    assert "cdn.jsdelivr" not in page
    assert "https://" not in " ".join(scripts)
    mathjax = html / "_static" / "mathjax"
    assert (mathjax / "tex-chtml.js").stat().st_size > 100_000
    assert list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff")), "fonts"
    # TeX only where MathJax renders it (issue 20, item 15): a page that does not load MathJax
    # holds no math markup (a sidebar title with :math: showed raw TeX there), and no page
    # holds \texttt (MathJax shows the backslash of \texttt{privacy\_map})
    for path in html.rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        assert "\\texttt" not in text, path.name
        if "mathjax" not in text.lower():
            assert "\\(" not in text, path.name
            assert 'class="math' not in text, path.name
    api = (html / "api.html").read_text(encoding="utf-8")
    # the constructor packages are documented through autodoc
    assert 'id="opendp_wasserstein.measurements.make_pruned_pmm"' in api
    assert 'id="opendp_wasserstein.transformations.make_dyadic_counts"' in api


def test_figures_are_small() -> None:
    figures = sorted((DOCS / "_static").glob("*.png"))
    assert figures, "docs/_static holds the figures made by docs/make_figures.py"
    for png in figures:
        assert png.stat().st_size < 300 * 1024, png.name


# ---------------------------------------------------------------------------------------------
# TeX where MathJax does not render it (issue 20, item 15)

PACKAGE = DOCS.parent / "opendp_wasserstein"
_BLOCK = re.compile(r"\.\. (math|code-block|code|literalinclude|doctest|testcode|highlight|raw)::")
_RAW_TEX = re.compile(r"\\[a-zA-Z]+|\\\(|\\\[")


def _outside_math(text: str) -> str:
    """``text`` (reST) without math, literals, roles and literal or code blocks: what Sphinx
    writes as plain text."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line, st = lines[i], lines[i].strip()
        literal = st.endswith("::") and not st.startswith("..")
        if _BLOCK.match(st) or literal:
            indent = len(line) - len(line.lstrip())
            out.append(line[:-2] if literal else "")
            i += 1
            while i < len(lines) and (
                not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
            ):
                i += 1
            continue
        out.append(line)
        i += 1
    body = re.sub(r"``.*?``", "", "\n".join(out), flags=re.S)
    return re.sub(r":[a-z:]+:`[^`]*`", "", body)


def _docstrings() -> list[tuple[str, str]]:
    import ast

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    found.append((f"{path.name}:{getattr(node, 'name', '<module>')}", doc))
    return found


def _sources() -> list[tuple[str, str]]:
    pages = [
        (str(p.relative_to(DOCS)), p.read_text(encoding="utf-8"))
        for p in sorted(DOCS.rglob("*.rst"))
    ]
    return pages + _docstrings()


def test_no_raw_tex_outside_math() -> None:
    """A TeX command outside ``:math:`` / ``.. math::`` is printed as it is, backslash and all."""
    bad = [
        (name, m.group())
        for name, text in _sources()
        for m in _RAW_TEX.finditer(_outside_math(text))
    ]
    assert bad == []


def test_no_texttt_in_math() -> None:
    r"""MathJax reads the argument of ``\texttt`` as text, so ``\texttt{privacy\_map}`` shows its
    backslash; ``\mathtt`` is math (the underscore renders)."""
    bad = [
        name
        for name, text in _sources()
        if "\\texttt" in text or re.search(r"\\text\{[^}]*\\_", text)
    ]
    assert bad == []


def test_no_math_in_section_titles() -> None:
    """Titles go to the sidebar of every page, and a page without formulas does not load MathJax:
    a title's ``:math:`` is shown there as raw TeX (``\\((\\varepsilon n)^{-1/k}\\)``)."""
    bad = []
    for name, text in _sources():
        lines = text.split("\n")
        for above, below in zip(lines, lines[1:], strict=False):
            if (
                re.fullmatch(r"([=\-~^\"'`#*+])\1{2,}", below.strip())
                and above.strip()
                and (":math:" in above or _RAW_TEX.search(above))
            ):
                bad.append((name, above))
    assert bad == []


def _mechanism_option(command: str) -> tuple[list[str], str]:
    from opendp_wasserstein.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    action = next(a for a in sub.choices[command]._actions if "--mechanism" in a.option_strings)
    return list(action.choices), action.help


#: how the --mechanism help names each choice
_MECHANISM_NAMES = {
    "adaptive": "Adaptive Pruned-PMM",
    "pruned": "Pruned-PMM",
    "pmm": "full PMM",
    "privtree": "PrivTree",
    "structured": "structured",
}


@pytest.mark.parametrize("command", ["demo", "synth"])
def test_mechanism_help_offers_exactly_the_choices(command: str) -> None:
    """``demo --help`` offered PrivTree, which ``demo --mechanism privtree`` refused."""
    choices, text = _mechanism_option(command)
    offered = set()
    for choice, name in sorted(
        _MECHANISM_NAMES.items(), key=lambda kv: -len(kv[1])
    ):  # longest first
        if re.search(rf"(?<![\w-]){re.escape(name)}\b", text):
            offered.add(choice)
            text = text.replace(name, "")
    assert offered == set(choices)


def test_every_synthesis_mechanism_is_in_the_index() -> None:
    from opendp_wasserstein.api import MECHANISMS

    index = (DOCS / "index.rst").read_text(encoding="utf-8")
    constructors = {
        "adaptive": "make_adaptive_pruned_pmm",
        "pruned": "make_pruned_pmm",
        "pmm": "make_pmm",
        "privtree": "make_privtree",
    }
    assert set(MECHANISMS) == set(constructors)
    assert [m for m in MECHANISMS if f"measurements.{constructors[m]}`" not in index] == []
