"""Decisions valid by construction on bounded per-seed metrics (issue 82): betting confidence
sequences (:mod:`.betting`) and the claims read off them (:mod:`.comparison`); a mean claim
re-posed on the share of units in its direction (:mod:`.shares`); the battery of null shapes
every calibrated procedure is also run on (:mod:`.battery`); the power of the procedures valid
by construction at a claim's seeds, per noise shape (:mod:`.reach`)."""

from boundbench.framework.stats.decisions.betting import BettingPath, betting_cs
from boundbench.framework.stats.decisions.comparison import CLAIMS, RANGES, Decision, decide

__all__ = [
    # the sequence
    "BettingPath", "betting_cs",
    # the claims
    "CLAIMS", "RANGES", "Decision", "decide",
    # the submodules
    "battery", "betting", "comparison", "paths", "permutation", "probes", "reach",
    "shares",
]
