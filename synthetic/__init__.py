"""Synthetic experiments: separable data, exact SVMs (cvxpy), GD-trained heads, LOO stability."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "certificates", "data", "experiments", "fig5", "mlp", "pool_heads", "pools",
    "stability", "svm", "train",
]
