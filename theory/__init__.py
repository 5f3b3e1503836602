"""The papers' bounds and lemmas as functions (:mod:`.stability_bounds`, :mod:`.smoothing`,
:mod:`.masked_gradient`), the estimators (:mod:`.curvature`), test problems with known constants
(:mod:`.problems`) and, in :mod:`.claims`, the checks that hold them against measurement."""
