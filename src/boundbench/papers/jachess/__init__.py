"""Jukic & Snajder: From Robustness to Improved Generalization and Calibration in PLMs: the
Jacobian and Hessian estimators, the Frobenius regularizer on MLPs, robustness, calibration and
layer weights by fine-tuning a real encoder.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``jachess`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench import papers as _papers

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "estimator", "mlp", "plm_robustness"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "estimator", "mlp", "plm_robustness",
)

PAPER = _papers.register_builtin(__name__, CLAIM_MODULES)
