"""Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data: the direction
rate of GD on separable data (Theorem 5), which Fu et al.'s Theorem 2.4 builds on.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``soudry`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench import papers as _papers

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "direction_rate"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "direction_rate",
)

PAPER = _papers.register_builtin(__name__, CLAIM_MODULES)
