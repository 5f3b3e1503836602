"""Claims of the synthetic layer: each module registers its checks with the framework registry."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "fu_hard_margin", "fu_heads", "fu_quadratics", "fu_soft_margin", "fu_sweeps", "implicit_bias",
    "jachess_mlp", "smoothing",
]
