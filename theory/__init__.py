"""The papers' bounds and lemmas as functions (:mod:`.stability_bounds`, :mod:`.smoothing`,
:mod:`.masked_gradient`), the estimators (:mod:`.curvature`), test problems with known constants
(:mod:`.problems`) and, in :mod:`.claims`, the checks that hold them against measurement."""

# the public submodules (what `from ... import *` imports; tests/test_public_api.py checks it)
__all__ = [
    "claims", "curvature", "masked_gradient", "problems", "smoothing", "stability_bounds",
]
