"""Verdicts: the rules that turn a measured and a computed side into one (:mod:`.rules`),
verdicts combined over readings and trajectories (:mod:`.readings`) and the one size per
finding every report quotes (:mod:`.sizes`)."""

# the public submodules (tests/test_public_api.py checks it)
__all__ = ["readings", "rules", "sizes"]
