"""Every method name the package knows: the model-agnostic catalogue and the methods that need a
transformer encoder. The command line and sweep files read method names against this list."""

from __future__ import annotations

from boundbench.methods.catalogue import METHODS as SYNTHETIC_METHODS
from boundbench.plm.jachess import JACHESS, CrossHolder
from boundbench.plm.methods import LNSR, SURT, Dropout, HeadTuning, MixOut
from boundbench.plm.uegr import UEGR

METHODS = SYNTHETIC_METHODS.extended(
    [HeadTuning, Dropout, MixOut, LNSR, SURT, JACHESS, CrossHolder, UEGR])
