"""Claims of the plm layer: each module registers its checks with the framework registry."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "features", "smoothing", "stability",
]
