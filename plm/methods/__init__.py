"""The methods that need a transformer encoder, one module each (``transformer``: head tuning,
dropout rates, MixOut, LNSR, SURT; ``jachess``: JACHESS and Cross-Hölder; ``uegr``; ``surt``:
SURT's continued MLM pretraining), and :data:`METHODS`: every method name the package knows,
the model-agnostic list (:data:`boundbench.methods.names.METHODS`) extended with these. The
command line and sweep files read method names against it."""

from __future__ import annotations

from boundbench.methods import names as _names
from boundbench.plm.methods.jachess import JACHESS, CrossHolder
from boundbench.plm.methods.transformer import LNSR, SURT, Dropout, HeadTuning, MixOut
from boundbench.plm.methods.uegr import UEGR

# the public names and submodules (tests/test_public_api.py checks it)
__all__ = [
    "JACHESS", "LNSR", "METHODS", "SURT", "UEGR", "CrossHolder", "Dropout", "HeadTuning",
    "MixOut", "jachess", "surt", "transformer", "uegr",
]

METHODS = _names.METHODS.extended(
    [HeadTuning, Dropout, MixOut, LNSR, SURT, JACHESS, CrossHolder, UEGR])
