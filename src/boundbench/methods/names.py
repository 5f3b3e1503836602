"""The model-agnostic methods by name (every trainer's: the synthetic GD heads and MLPs, and the
transformer fine-tuning): the explicit list a method name is read against (no registration on
import). :mod:`boundbench.plm.methods` extends it with the methods that need an encoder."""

from __future__ import annotations

from boundbench.methods import Method, MethodNames
from boundbench.methods.optimizers import ADSAM, SAM, MaskedUpdate, WeightDecay
from boundbench.methods.penalties import MMR, ActivationDecay, JacobianPenalty, L2ToInit, MHLoss

METHODS = MethodNames(
    [Method, ActivationDecay, JacobianPenalty, MHLoss, MMR, L2ToInit, WeightDecay, SAM,
     MaskedUpdate, ADSAM],
    elsewhere="the transformer methods are in boundbench.plm.methods.METHODS")
