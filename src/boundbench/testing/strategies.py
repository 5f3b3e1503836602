"""Hypothesis strategies for the instance families the four papers use. Each draws a typed,
frozen instance that carries its known constants (margin, feature bound, smoothness, ...), built
from a few drawn numbers and a seed, so hypothesis shrinks it toward small instances: fewer
points, fewer dimensions, seed 0.

Ranges are ``(low, high)`` tuples, inclusive. The strategies live in three internal modules (Fu
et al.'s families, their LOO instances, the curvature papers'); this module is their public face.
"""

from boundbench.testing._curvature import (
    ACTIVATIONS,
    HuberLoss,
    LogitBatch,
    MaskedGradient,
    MLPInstance,
    huber_losses,
    logit_batches,
    masked_gradients,
    mlps,
)
from boundbench.testing._loo import (
    ExteriorPair,
    QuadraticLOOProblem,
    exterior_pairs,
    quadratic_loo_problems,
)
from boundbench.testing._stability import (
    SMOOTH_KINDS,
    SeparableDataset,
    SmoothLoss,
    SoftMarginProblem,
    separable_datasets,
    smooth_losses,
    soft_margin_problems,
)

__all__ = [
    # Fu et al.: separable data, soft margins, smooth losses, Thm 2.2's quadratics, Lemma A.2.4
    "separable_datasets", "SeparableDataset", "soft_margin_problems", "SoftMarginProblem",
    "smooth_losses", "SmoothLoss", "SMOOTH_KINDS", "quadratic_loo_problems",
    "QuadraticLOOProblem", "exterior_pairs", "ExteriorPair",
    # Activation Decay, JACHESS, UEGR: Huber losses, MLPs, logit batches, masked gradients
    "huber_losses", "HuberLoss", "mlps", "MLPInstance", "ACTIVATIONS", "logit_batches",
    "LogitBatch", "masked_gradients", "MaskedGradient",
]
