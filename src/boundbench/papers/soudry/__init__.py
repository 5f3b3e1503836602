"""Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data: the direction
rate of GD on separable data (Theorem 5), which Fu et al.'s Theorem 2.4 builds on.

One module per section of the paper, each registering that section's claims; the package is
loaded through boundbench's entry point ``soudry`` in the ``boundbench.claims`` group, as a
plugin's paper is (``docs/your-own-paper.md``).
"""

from boundbench.framework import registry as _registry

# the public submodules and names (tests/test_public_api.py checks it)
__all__ = [
    "CLAIM_MODULES", "PAPER", "direction_rate"
]

#: its claim modules, in report order
CLAIM_MODULES = (
    "direction_rate",
)

# registered as boundbench's own whichever import comes first (the catalogue's entry point, or a
# test importing one module)
with _registry.loading("boundbench"):
    PAPER = _registry.register_paper(
        "soudry",
        "Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data",
        citation="JMLR 19(70), 2018")
    _registry.load(f"{__name__}.{m}" for m in CLAIM_MODULES)
