"""The method interface shared by ``synthetic`` and ``plm``: a method is a loss term on what a
forward pass exposes, optionally an optimizer wrapper. Written once, used by both trainers.

A trainer builds a :class:`Forward` for each batch (logits, the input of the final linear layer,
hidden states, the differentiable inputs and a function re-running the model from them) and
adds ``method.penalty(fwd)`` to the task loss. Penalties keep a leading model axis if the trainer
batches several models (e.g. a grid of sigma), so one call serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from theory.curvature import jacobian_frobenius


@dataclass
class Forward:
    logits: torch.Tensor  # (..., B, c)
    features: torch.Tensor  # (..., B, h): input of the final linear layer, h^(L-1)
    inputs: torch.Tensor | None = None  # differentiable inputs (embeddings) when needed
    fn: Callable[[torch.Tensor], torch.Tensor] | None = None  # inputs -> logits
    hidden: list[torch.Tensor] = field(default_factory=list)


class Method:
    """Plain fine-tuning: no extra term. Subclasses override :meth:`penalty` and/or
    :meth:`wrap_optimizer`; ``needs_inputs`` asks the trainer for differentiable inputs."""

    name = "finetune"
    needs_inputs = False

    def penalty(self, fwd: Forward) -> torch.Tensor | float:
        return 0.0

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        return optimizer

    def describe(self) -> dict:
        return {"method": self.name}


class ActivationDecay(Method):
    """Activation decay (paper 002, eq. after Theorem 2): ``sigma^2/2 * mean_batch ||h^(L-1)||^2``,
    the Theorem 2 upper bound of Gaussian smoothing of the last layer with std sigma.

    ``sigma`` may be a tensor with one value per model of a batched trainer (leading axis); the
    batch reduction is the mean, matching the CE mean (the paper does not say)."""

    name = "activation-decay"

    def __init__(self, sigma: float | torch.Tensor) -> None:
        sig = torch.as_tensor(sigma, dtype=torch.float64)
        if torch.any(sig < 0):
            raise ValueError(f"sigma must be >= 0 (got {sigma})")
        self.sigma = sig

    def penalty(self, fwd: Forward) -> torch.Tensor:
        sq = fwd.features.pow(2).sum(-1).mean(-1)  # (...,)
        return 0.5 * self.sigma.to(sq) ** 2 * sq

    def describe(self) -> dict:
        return {"method": self.name, "sigma": self.sigma.tolist()}


class JacobianPenalty(Method):
    """``lam * mean_batch ||d logits / d inputs||_F`` estimated by JACHESS eq. (5) with ``n_proj``
    random projections, differentiable (``create_graph``): the Jacobian-regularization baseline,
    and JACHESS's first-order term on the logits."""

    name = "jacobian"
    needs_inputs = True

    def __init__(self, lam: float | torch.Tensor, *, n_proj: int = 1, seed: int = 0) -> None:
        lm = torch.as_tensor(lam, dtype=torch.float64)
        if torch.any(lm < 0):
            raise ValueError(f"lam must be >= 0 (got {lam})")
        self.lam, self.n_proj = lm, n_proj
        self.gen = torch.Generator().manual_seed(seed)

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None:
            raise ValueError("JacobianPenalty needs Forward.inputs and Forward.fn")
        est = jacobian_frobenius(fwd.fn, fwd.inputs, n_proj=self.n_proj, seed=self.gen,
                                 create_graph=True)  # (..., B)
        return self.lam.to(est) * est.mean(-1)

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam.tolist(), "n_proj": self.n_proj}
