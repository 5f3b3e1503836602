"""Activation Decay by Loss Smoothing to Enhance Generalization: the smoothed loss's bounds
(Corollary 1, Theorems 2-3, the GELU steps of Theorem 1's proof), Theorem 1's layer-wise Hessian
bound, Corollary 1 and Figures 1a and 3 on MLPs, the head Hessian on a fine-tuned encoder;
``proofs`` holds the interval proofs they cite.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``ad`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench import papers as _papers

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "cor1_figures", "plm_hessian", "proofs", "smoothing",
    "thm1_layers"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "smoothing", "thm1_layers", "cor1_figures", "plm_hessian",
)

PAPER = _papers.register_builtin(__name__, CLAIM_MODULES)
