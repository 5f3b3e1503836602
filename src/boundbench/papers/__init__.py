"""boundbench's own papers, one package each, laid out as a plugin's paper is: its
``register_paper`` and its claim modules, one per section of the paper, loaded through an entry
point of the ``boundbench.claims`` group. Claims are leaves: they import the library (plm,
synthetic, methods, theory, framework), and nothing in the library imports them.

``shared`` holds what claims of two papers share (a fine-tuning grid, GD's implicit bias).
"""

from collections.abc import Sequence

from boundbench.framework import registry as _registry

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = ["BUILTIN", "ad", "fu", "jachess", "register_builtin", "shared", "soudry", "uegr"]

#: boundbench's papers, in report order (each is an entry point of the same name)
BUILTIN = ("fu", "ad", "jachess", "uegr", "soudry")


def register_builtin(package: str, key: str, claim_modules: Sequence[str], title: str, *,
                     citation: str = "") -> _registry.Paper:
    """Register boundbench's paper ``key`` and import its claim modules (``package``'s
    submodules, in report order), as boundbench's own whichever import comes first: the
    catalogue's entry point, or a test importing one module. Each paper's ``__init__`` calls it
    once."""
    with _registry.loading("boundbench"):
        paper = _registry.register_paper(key, title, citation=citation)
        _registry.load(f"{package}.{m}" for m in claim_modules)
    return paper
