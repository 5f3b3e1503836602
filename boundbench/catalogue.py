"""The claim catalogue: the modules whose import registers claims, in report order.

The application layer is the only code that knows every package; the registry
(:mod:`boundbench.theory.registry`) knows none of them and loads what this module lists.
"""

from __future__ import annotations

CLAIM_MODULES: tuple[str, ...] = (
    "boundbench.theory.claims_stability",
    "boundbench.theory.claims_smoothing",
    "boundbench.theory.claims_masked_gradient",
    "boundbench.theory.claims_curvature",
    "boundbench.synthetic.claims_stability",
    "boundbench.synthetic.claims_smoothing",
    "boundbench.plm.claims_features",
    "boundbench.plm.claims_stability",
    "boundbench.plm.claims_smoothing",
)


def load() -> None:
    """Import every claim module (once), so the registry holds every claim."""
    from boundbench.theory import registry

    registry.load(CLAIM_MODULES)


def registry():
    """Every registered claim by id, in report order (loads the catalogue first)."""
    from boundbench.theory import registry as _registry

    load()
    return _registry.registry()
