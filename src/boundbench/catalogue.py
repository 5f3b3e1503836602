"""The claim catalogue: the modules whose import registers claims, in report order.

The application layer is the only code that knows every package; the registry
(:mod:`boundbench.framework.registry`) knows none of them and loads what this module lists.
"""

from __future__ import annotations

CLAIM_MODULES: tuple[str, ...] = (
    "boundbench.theory.claims.fu_lemmas",
    "boundbench.theory.claims.ad_smoothing",
    "boundbench.theory.claims.uegr_thm1",
    "boundbench.theory.claims.ad_layers",
    "boundbench.theory.claims.jachess",
    "boundbench.theory.claims.uegr_regularizer",
    "boundbench.synthetic.claims.fu_sweeps",
    "boundbench.synthetic.claims.fu_heads",
    "boundbench.synthetic.claims.fu_quadratics",
    "boundbench.synthetic.claims.fu_hard_margin",
    "boundbench.synthetic.claims.fu_soft_margin",
    "boundbench.synthetic.claims.implicit_bias",
    "boundbench.synthetic.claims.smoothing",
    "boundbench.plm.claims.features",
    "boundbench.plm.claims.stability",
    "boundbench.plm.claims.smoothing",
)


def load() -> None:
    """Import every claim module (once), so the registry holds every claim."""
    from boundbench.framework import registry

    registry.load(CLAIM_MODULES)


def registry():
    """Every registered claim by id, in report order (loads the catalogue first)."""
    from boundbench.framework import registry as _registry

    load()
    return _registry.registry()
