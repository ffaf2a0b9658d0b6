"""Sphinx configuration of wideml's documentation site.

Build it (no network needed) with ``pip install -e ".[docs]"`` and
``sphinx-build -W --keep-going -b html docs docs/_build/html``; the test suite runs the same build
into a temporary folder (``tests/docs/test_docs_build.py``). Why Sphinx: see docs/guide/contributing.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import wideml  # noqa: E402

project = "wideml"
author = "the wideml developers"
copyright = "the wideml developers, BSD-3-Clause"
release = wideml.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "wideml_api",
    "wideml_cli",
    "wideml_config",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# examples/ holds the gallery's sources (sphinx-gallery reads them); auto_examples/ is what it generates from them.
exclude_patterns = ["_build", "examples", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

# myst: the existing markdown pages (architecture, schedulers, the guide) as they are.
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# autodoc + numpydoc: the docstrings are numpydoc already.
autodoc_typehints = "none"  # the numpydoc Parameters sections say the types
autodoc_member_order = "bysource"
autodoc_default_options = {"exclude-members": "set_fit_request, set_transform_request, set_predict_request, "
                           "set_score_request, set_output, get_metadata_routing, __init__"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# The gallery: small scripts run at build time (each a few seconds on small data), figures captured.
sphinx_gallery_conf = {
    "examples_dirs": str(HERE / "examples"),
    "gallery_dirs": str(HERE / "auto_examples"),
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "write_computation_times": False,
    "reset_modules": ("matplotlib",),
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
}

html_theme = "alabaster"
html_title = f"wideml {release}"
html_theme_options = {"description": "Out-of-core supervised dimensionality reduction for wide data",
                      "fixed_sidebar": True, "show_relbars": True, "page_width": "1280px", "sidebar_width": "240px"}
html_static_path: list[str] = []
html_show_sourcelink = False
