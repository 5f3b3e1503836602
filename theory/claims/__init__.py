"""Claims of the theory layer: each module registers its checks with the framework registry."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "ad_layers", "ad_proofs", "ad_smoothing", "fu_lemmas", "jachess", "uegr_regularizer", "uegr_thm1",
]
