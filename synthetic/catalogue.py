"""The methods the synthetic layer knows by name: the explicit list a method name is read against
(no registration on import). :mod:`boundbench.plm.catalogue` extends it with the transformer
methods."""

from __future__ import annotations

from boundbench.methods import Method, MethodCatalogue
from boundbench.synthetic.optimizers import ADSAM, SAM, MaskedUpdate, WeightDecay
from boundbench.synthetic.penalties import MMR, ActivationDecay, JacobianPenalty, L2ToInit, MHLoss

METHODS = MethodCatalogue(
    [Method, ActivationDecay, JacobianPenalty, MHLoss, MMR, L2ToInit, WeightDecay, SAM,
     MaskedUpdate, ADSAM],
    elsewhere="the transformer methods are in boundbench.plm.catalogue.METHODS")
