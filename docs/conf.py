"""Sphinx configuration for opendp-wasserstein.

Build (no network needed, warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The figures in ``_static/`` are made by ``python docs/make_figures.py`` and committed; the
build never runs a mechanism.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

sys.path.insert(0, os.path.abspath(".."))

project = "opendp-wasserstein"
author = "the opendp-wasserstein authors"
copyright = "2026, the opendp-wasserstein authors"
try:
    from importlib.metadata import version as _version

    release = _version("opendp-wasserstein")
except Exception:  # pragma: no cover - docs built from a source tree without install
    release = "0.1.0"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    # copies MathJax 3 into _static/mathjax and points mathjax_path there, so formulas render
    # with no network (the package is in the dev extra; the module name has hyphens)
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
]

# no intersphinx: the build must work on an offline machine
templates_path: list[str] = []
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
html_static_path = ["_static"]
# display formulas wider than the text column scroll instead of being cut off at the right
html_css_files = ["wide_math.css"]
html_theme = "alabaster"
html_theme_options = {"description": "Private synthetic data and selection with W1 guarantees"}
html_title = "opendp-wasserstein"

# docstrings use Sphinx field lists (``:param x:``) and doctest blocks; no napoleon
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False
math_number_all = False
numfig = True

# ---------------------------------------------------------------------------------------------
# the internals section of the API page: every module listed here that imports is documented
# (a module a colleague is still writing is skipped until it lands)

#: (title, module) pairs listed under "Internals used by the proofs" on the API page
OPTIONAL_API_MODULES = [
    ("Traversals, consistency and leaf masses", "opendp_wasserstein.hierarchy.traversal"),
    ("Node noise (the noise interface of the traversals)", "opendp_wasserstein.noise.node_noise"),
    ("Synthesis", "opendp_wasserstein.hierarchy.placement"),
    ("Randomness: the source and the exact samplers", "opendp_wasserstein.noise"),
    ("Discrete Laplace and Gaussian samplers", "opendp_wasserstein.noise.samplers"),
    ("Privacy parameter checks", "opendp_wasserstein.core.parameters"),
    ("The public box", "opendp_wasserstein.core.box"),
    ("Input data domains and release-time validation", "opendp_wasserstein.core.data"),
    ("Resource limits", "opendp_wasserstein.core.limits"),
    ("Public candidate sets and the nearest-candidate projection", "opendp_wasserstein.public_candidates.sets"),
    ("Tree metrics (FRT / HST, quadtree) and the closest multiset", "opendp_wasserstein.public_candidates.trees"),
    ("Tree-EM dynamic programme", "opendp_wasserstein.public_candidates.tree_em_sampling"),
    ("Optional dependencies", "opendp_wasserstein.core.optional"),
]


def _optional_api_section() -> str:
    blocks = []
    for title, name in OPTIONAL_API_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        blocks.append(f"{title}\n{'-' * len(title)}\n\n.. automodule:: {name}\n")
    if not blocks:
        return (
            "*(None of these modules is importable in this build.)*\n"
        )
    return "\n".join(blocks)


def _fill_optional(app: Any, docname: str, source: list[str]) -> None:
    if docname == "api":
        source[0] = source[0].replace(".. optional-api-modules-here\n", _optional_api_section())


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _fill_optional)
    return {"parallel_read_safe": True}
