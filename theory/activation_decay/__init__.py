"""*Activation Decay by Loss Smoothing to Enhance Generalization*: the paper's results as functions.

Corollary 1 (erf bound on the Hessian of a Gaussian-smoothed loss), the 1-D Huber loss that
attains it, Theorem 2 (smoothed cross-entropy <= CE + sigma^2 ||h||^2 / 2) with its lower bound,
the exact smoothed CE it should be compared with, Theorem 3 (a Taylor form, not a bound), the
GELU Lipschitz constant, Theorem 1 (the layerwise Hessian bound, both readings) and Appendix B's
Hessian of the last layer with its smoothed top eigenvalue. Arrays broadcast; classes sit on the
last axis of ``logits``.

Smoothing the last layer ``W`` of ``logits = W h`` by ``Delta ~ N(0, sigma^2 I)`` adds
``xi = Delta h ~ N(0, s^2 I_c)`` to the logits with ``s = sigma ||h||``; every smoothed-CE
function here therefore takes the logit-space scale ``s`` (see :func:`logit_noise_scale`).
"""

from boundbench.theory.activation_decay._hessian import (
    GELU_LIPSCHITZ,
    THM1_READINGS,
    cor1_rhs,
    cor1_simple_rhs,
    huber_grad,
    huber_smoothed_hessian,
    thm1_sides,
    thm1_terms,
)
from boundbench.theory.activation_decay._last_layer import (
    last_layer_hessian,
    smoothed_last_layer_top_eig,
)
from boundbench.theory.activation_decay._smoothed_ce import (
    antithetic_mean,
    cross_entropy,
    logit_noise_scale,
    smoothed_ce_binary,
    smoothed_ce_monte_carlo,
    smoothed_ce_weight_space,
    thm2_rhs,
    thm3_taylor,
)

__all__ = [
    # Corollary 1 and the Huber loss that attains it
    "cor1_rhs", "cor1_simple_rhs", "huber_grad", "huber_smoothed_hessian",
    # Theorem 1, the layerwise Hessian bound, and GELU's Lipschitz constant
    "thm1_terms", "thm1_sides", "THM1_READINGS", "GELU_LIPSCHITZ",
    # Theorems 2 and 3 and the smoothed cross-entropy they approximate
    "logit_noise_scale", "cross_entropy", "thm2_rhs", "thm3_taylor", "smoothed_ce_binary",
    "smoothed_ce_monte_carlo", "smoothed_ce_weight_space", "antithetic_mean",
    # Appendix B: the last layer's Hessian and its smoothed top eigenvalue
    "last_layer_hessian", "smoothed_last_layer_top_eig",
]

# one public home: claims, reports and pickles name boundbench.theory.activation_decay.<name>
for _name in __all__:
    if callable(globals()[_name]):
        globals()[_name].__module__ = __name__
del _name
