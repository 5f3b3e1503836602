"""boundbench's own papers, one package each, laid out as a plugin's paper is: its
``register_paper`` and its claim modules, one per section of the paper, loaded through an entry
point of the ``boundbench.claims`` group. Claims are leaves: they import the library (plm,
synthetic, methods, theory, framework), and nothing in the library imports them.

``shared`` holds what claims of two papers share (a fine-tuning grid, GD's implicit bias).
"""

from boundbench.framework.claims import registry as _registry

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = ["BUILTIN", "ad", "fu", "jachess", "register_builtin", "shared", "soudry", "uegr"]

#: boundbench's papers in report order: key, title, citation (as CITATION.cff gives them; each
#: key is an entry point of the same name)
_PAPERS = (
    ("fu", "Fu, So & Collier: A Stability Analysis of Fine-Tuning a Pre-Trained Model", ""),
    ("ad", "Activation Decay by Loss Smoothing to Enhance Generalization", ""),
    ("jachess", "Jukic & Snajder: From Robustness to Improved Generalization and Calibration in "
     "PLMs", ""),
    ("uegr", "Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via "
     "Bi-Stage Optimization", ""),
    ("soudry", "Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data",
     "JMLR 19(70), 2018"),
)
BUILTIN = tuple(key for key, _, _ in _PAPERS)

# all five registered, in report order, before any of their claim modules can be imported (a
# test importing one paper's module first leaves the papers' order as it is)
with _registry.loading("boundbench"):
    for _key, _title, _citation in _PAPERS:
        _registry.register_paper(_key, _title, citation=_citation)


def register_builtin(package: str, claim_modules: tuple[str, ...]) -> _registry.Paper:
    """Import the claim modules of boundbench's paper ``package`` (its submodules, in report
    order) as boundbench's own, whichever import comes first: the catalogue's entry point, or a
    test importing one module. Each paper's ``__init__`` calls it once; returns the paper."""
    with _registry.loading("boundbench"):
        _registry.load(f"{package}.{m}" for m in claim_modules)
    return _registry.papers()[package.rsplit(".", 1)[1]]
