"""Sphinx configuration of the API reference and the guides (``docs/``). Built by
``python -m sphinx -W -b html docs docs/_build`` and in the tests (tests/test_api_reference.py),
warnings as errors."""

from boundbench import __version__

project = "boundbench"
author = "the boundbench authors"
release = version = __version__
extensions = [
    "sphinx.ext.autodoc",  # the reference, from the docstrings
    "sphinx.ext.napoleon",  # their numpydoc sections
    "myst_parser",  # the guides, written in Markdown
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "seeds"]  # the seed records are data (docs/seeds/README.md says what)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
myst_heading_anchors = 3
html_theme = "alabaster"
