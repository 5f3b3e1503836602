"""Fu, So & Collier: A Stability Analysis of Fine-Tuning a Pre-Trained Model: the appendix lemmas
(A.1-A.5) on random instances, Figures 5-9 on separable data and GD heads, the hard- and soft-
margin bounds of Theorem 2.4 and Corollary 2.5 against exact SVMs, the SVM limit GD reaches, the
same effects on a real encoder's features and by fine-tuning it.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``fu`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench import papers as _papers

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "appendix_lemmas", "features", "fig5_heads", "figs6_9_sweeps",
    "hard_margin", "plm_stability", "soft_margin", "thm2_2_quadratics", "thm2_4_svm_limit"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "appendix_lemmas", "figs6_9_sweeps", "fig5_heads", "thm2_2_quadratics", "hard_margin",
    "soft_margin", "thm2_4_svm_limit", "features", "plm_stability",
)

PAPER = _papers.register_builtin(__name__, CLAIM_MODULES)
