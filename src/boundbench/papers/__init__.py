"""boundbench's own papers, one package each, laid out as a plugin's paper is: its
``register_paper`` and its claim modules, one per section of the paper, loaded through an entry
point of the ``boundbench.claims`` group. Claims are leaves: they import the library (plm,
synthetic, methods, theory, framework), and nothing in the library imports them.

``shared`` holds what claims of two papers share (a fine-tuning grid, GD's implicit bias).
"""

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = ["BUILTIN", "ad", "fu", "jachess", "shared", "soudry", "uegr"]

#: boundbench's papers, in report order (each is an entry point of the same name)
BUILTIN = ("fu", "ad", "jachess", "uegr", "soudry")
