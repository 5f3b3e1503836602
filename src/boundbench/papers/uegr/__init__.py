"""Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via Bi-Stage
Optimization: Theorem 1's masked-gradient estimator, the gradient-penalty regularizer of eqs.
(12)-(14) and the masks' sign (§3.2), robustness and CKA by fine-tuning a real encoder.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``uegr`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench.framework import registry as _registry

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "plm_robustness", "regularizer", "thm1"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "thm1", "regularizer", "plm_robustness",
)

# registered as boundbench's own whichever import comes first (the catalogue's entry point, or a
# test importing one module)
with _registry.loading("boundbench"):
    PAPER = _registry.register_paper(
        "uegr",
        "Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via Bi-"
        "Stage Optimization")
    _registry.load(f"{__name__}.{m}" for m in CLAIM_MODULES)
