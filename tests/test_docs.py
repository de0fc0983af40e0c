"""The Sphinx documentation builds with warnings as errors (no network needed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


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
    for page in ("index", "getting_started", "pmm_family", "public_candidates", "randomness",
                 "api", "upstream", "proofs/index", "proofs/pmm", "proofs/tree_em"):
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
    api = (html / "api.html").read_text(encoding="utf-8")
    # the constructor packages are documented through autodoc
    assert 'id="opendp_wasserstein.measurements.make_pruned_pmm"' in api
    assert 'id="opendp_wasserstein.transformations.make_dyadic_counts"' in api


def test_figures_are_small() -> None:
    figures = sorted((DOCS / "_static").glob("*.png"))
    assert figures, "docs/_static holds the figures made by docs/make_figures.py"
    for png in figures:
        assert png.stat().st_size < 300 * 1024, png.name
