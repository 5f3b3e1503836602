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
    logits: torch.Tensor  # (..., B, c): what the model predicts with (mean head for MHLoss)
    features: torch.Tensor  # (..., B, h): input of the final linear layer, h^(L-1)
    inputs: torch.Tensor | None = None  # differentiable inputs (embeddings) when needed
    fn: Callable[[torch.Tensor], torch.Tensor] | None = None  # inputs -> logits
    hidden: list[torch.Tensor] = field(default_factory=list)
    head_logits: torch.Tensor | None = None  # (H, B, c) for multi-head models
    labels: torch.Tensor | None = None  # (B,) the batch's labels, for label-aware penalties
    input_event_dims: int = 1  # trailing axes of ``inputs`` forming one example (2: tokens x emb)


class Method:
    """Plain fine-tuning: no extra term. Subclasses override :meth:`penalty`,
    :meth:`task_loss`, :meth:`setup` and/or :meth:`wrap_optimizer`; ``needs_inputs`` asks the
    trainer for differentiable inputs, ``heads`` for a multi-head model."""

    name = "finetune"
    needs_inputs = False
    heads = 1

    def setup(self, params: dict[str, torch.Tensor]) -> None:
        """Called once with the trainable parameters before training (e.g. to keep theta_0)."""

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the prediction logits (batch axis -2, classes last)."""
        c = fwd.logits.shape[-1]
        ce = torch.nn.functional.cross_entropy(fwd.logits.reshape(-1, c),
                                               y.expand(fwd.logits.shape[:-1]).reshape(-1),
                                               reduction="none")
        return ce.view(fwd.logits.shape[:-1]).mean(-1)

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
                                 create_graph=True, event_dims=fwd.input_event_dims)  # (..., B)
        return self.lam.to(est) * est.mean(-1)

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam.tolist(), "n_proj": self.n_proj}


class MHLoss(Method):
    """Multi-head loss (Fu et al. eq. 10): ``H`` linear heads from independent inits, loss
    ``(1/(nH)) sum_h sum_i l(w_h^T x_i y_i)``; predictions use the mean head (the trainer builds
    the model with ``heads`` heads and puts the mean in ``Forward.logits``)."""

    name = "mhloss"

    def __init__(self, heads: int = 50) -> None:
        if heads < 1:
            raise ValueError(f"heads must be >= 1 (got {heads})")
        self.heads = heads

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        if fwd.head_logits is None:
            raise ValueError("MHLoss needs a multi-head model (Forward.head_logits)")
        H, B, c = fwd.head_logits.shape
        return torch.nn.functional.cross_entropy(fwd.head_logits.reshape(H * B, c),
                                                 y.repeat(H))

    def describe(self) -> dict:
        return {"method": self.name, "heads": self.heads}


class MMR(Method):
    """Max-margin regularizer (Fu et al. eqs. 8-9): ``alpha / (1 + ||centroid_+ - centroid_-||)``
    of the batch's features, with centroids per class. For more than two classes (the paper's
    case is binary) the mean of the term over class pairs present in the batch."""

    name = "mmr"

    def __init__(self, alpha: float = 1.0) -> None:
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0 (got {alpha})")
        self.alpha = alpha

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.labels is None:
            raise ValueError("MMR needs the batch labels (Forward.labels)")
        y, h = fwd.labels, fwd.features
        present = torch.unique(y)
        if len(present) < 2:
            return h.sum() * 0.0  # one class in the batch: no margin to measure
        cents = torch.stack([h[y == c].mean(0) for c in present])
        i, j = torch.triu_indices(len(present), len(present), 1)
        dist = (cents[i] - cents[j]).norm(dim=-1)
        return self.alpha * (1.0 / (1.0 + dist)).mean()

    def describe(self) -> dict:
        return {"method": self.name, "alpha": self.alpha}


class L2ToInit(Method):
    """``lam * ||theta - theta_0||^2`` over the trainable parameters: a simple stability
    baseline (Theorem 2.2's ||w0 - w*|| read as a regularizer)."""

    name = "l2-init"

    def __init__(self, lam: float = 1e-3) -> None:
        if lam < 0:
            raise ValueError(f"lam must be >= 0 (got {lam})")
        self.lam = lam
        self.params: dict[str, torch.Tensor] = {}
        self.init: dict[str, torch.Tensor] = {}

    def setup(self, params: dict[str, torch.Tensor]) -> None:
        self.params = params
        self.init = {k: p.detach().clone() for k, p in params.items()}

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if not self.params:
            raise ValueError("L2ToInit.setup must be called with the parameters first")
        return self.lam * sum((p - self.init[k]).pow(2).sum() for k, p in self.params.items())

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam}


METHODS = {"finetune": Method, "activation-decay": ActivationDecay, "jacobian": JacobianPenalty,
           "mhloss": MHLoss, "mmr": MMR, "l2-init": L2ToInit}


def make_method(name: str, **kwargs) -> Method:
    """A method by name (``METHODS``) with its keyword arguments."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {sorted(METHODS)}")
    return METHODS[name](**kwargs)
