"""The statistics of effect claims: trend rules (:mod:`.trends`, exact ones in
:mod:`.exact_trends`), no-effect bands (:mod:`.bands`), calibration on a claim's own nulls and
the battery of null shapes (:mod:`.calibration`, :mod:`.calibrated`, :mod:`.procedures`),
confidence sequences and their stopping rules (:mod:`.sequential`, :mod:`.stopping`) and the
decisions valid by construction (:mod:`.decisions`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = [
    "bands", "calibrated", "calibration", "decisions", "exact_trends", "procedures", "sequential",
    "stopping", "trends",
]
