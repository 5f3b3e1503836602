"""Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via Bi-Stage
Optimization: Theorem 1's masked-gradient estimator, the gradient-penalty regularizer of eqs.
(12)-(14) and the masks' sign (§3.2), robustness and CKA by fine-tuning a real encoder.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``uegr`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench import papers as _papers

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "plm_robustness", "regularizer", "thm1"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "thm1", "regularizer", "plm_robustness",
)

PAPER = _papers.register_builtin(__name__, CLAIM_MODULES)
