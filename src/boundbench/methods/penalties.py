"""Methods that are loss terms on what any model's forward pass exposes: activation decay, the
Jacobian penalty, Fu et al.'s multi-head loss and max-margin regularizer, and L2 to the start.

Each works on the MLPs of :mod:`boundbench.synthetic.mlp` and on the transformers of
:mod:`boundbench.plm` alike. Default values are the papers' where stated (MHLoss H = 50, AD
sigma = 0.05), else ours (chosen so the term is ~0.1 of the CE at the start on the default
model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Choice, Float, Int, unchecked
from boundbench.methods import Forward, Method
from boundbench.theory.norms import jacobian_frobenius as _checked_jacobian

# the training step's own inputs: checking every entry for NaN each step is a host sync
jacobian_frobenius = unchecked(_checked_jacobian)

# a strength: finite, >= 0, one value or one per model of a batched trainer
STRENGTH = Float(0, per_model=True)


@dataclass(frozen=True)
class ActivationDecay(Method):
    """Activation decay (its paper's eq. after Theorem 2): ``sigma^2/2 * mean_batch
    ||h^(L-1)||^2``, the Theorem 2 upper bound of Gaussian smoothing of the last layer with std
    sigma.

    ``sigma`` may be a tensor with one value per model of a batched trainer (leading axis); the
    batch reduction is the mean, matching the CE mean (the paper does not say)."""

    base_name = "activation-decay"
    sigma: float = 0.05

    checks = {"sigma": STRENGTH}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        sq = fwd.features.pow(2).sum(-1).mean(-1)  # (...,)
        return 0.5 * torch.as_tensor(self.sigma).to(sq) ** 2 * sq


@dataclass(frozen=True)
class JacobianPenalty(Method):
    """``lam * mean_batch ||d logits / d inputs||_F`` estimated by JACHESS eq. (5) with ``n_proj``
    random projections, differentiable (``create_graph``): the Jacobian-regularization baseline,
    and JACHESS's first-order term on the logits. ``mode="unlab"``: dual mode."""

    base_name = "jacobian"
    needs_inputs = True
    double_backward = True
    lam: float = 0.05
    n_proj: int = 1
    mode: Literal["train", "unlab"] = "train"

    checks = {"lam": STRENGTH, "n_proj": Int(1), "mode": Choice("train", "unlab")}

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        return {"generator": torch.Generator().manual_seed(seed)}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None:
            raise InvalidArgument("JacobianPenalty needs Forward.inputs and Forward.fn")
        est = jacobian_frobenius(fwd.fn, fwd.inputs, n_proj=self.n_proj, seed=state["generator"],
                                 create_graph=True, event_dims=fwd.input_event_dims)  # (..., B)
        return torch.as_tensor(self.lam).to(est) * est.mean(-1)


@dataclass(frozen=True)
class MHLoss(Method):
    """Multi-head loss (Fu et al. eq. 10): ``H`` linear heads from independent inits, loss
    ``(1/(nH)) sum_h sum_i l(w_h^T x_i y_i)``; predictions use the mean head (the trainer builds
    the model with ``heads`` heads and puts the mean in ``Forward.logits``)."""

    base_name = "mhloss"
    uses = frozenset({"heads"})  # its task loss reads every head, whatever their number
    checks = {"heads": Int(1)}
    heads: int = 50  # a field here, the base's property elsewhere

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        if fwd.head_logits is None:
            raise InvalidArgument("MHLoss needs a multi-head model (Forward.head_logits)")
        H, B, c = fwd.head_logits.shape
        return torch.nn.functional.cross_entropy(fwd.head_logits.reshape(H * B, c), y.repeat(H))


@dataclass(frozen=True)
class MMR(Method):
    """Max-margin regularizer (Fu et al. eqs. 8-9): ``alpha / (1 + ||centroid_+ - centroid_-||)``
    of the batch's features, with centroids per class. For more than two classes (the paper's
    case is binary) the mean of the term over class pairs present in the batch."""

    base_name = "mmr"
    alpha: float = 1.0

    uses = frozenset({"labels"})
    checks = {"alpha": STRENGTH}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        if fwd.labels is None:
            raise InvalidArgument("MMR needs the batch labels (Forward.labels)")
        y, h = fwd.labels, fwd.features  # (B,), (..., B, k): the same labels for every model
        # the classes are the logits' columns, a fixed count (the classes present in the batch,
        # torch.unique's, would give an output shape that follows the data, which vmap cannot
        # batch: the seeds-at-once loop runs this penalty under vmap); a pair of classes counts
        # when both are in the batch, and a batch of one class has no margin to measure (0)
        C = fwd.logits.shape[-1]
        onehot = (y[:, None] == torch.arange(C, device=y.device)).to(h.dtype)  # (B, C)
        counts = onehot.sum(0)
        cents = torch.einsum("...bk,bc->...ck", h, onehot) / counts.clamp(min=1)[:, None]
        i, j = torch.triu_indices(C, C, 1, device=y.device)
        dist = (cents[..., i, :] - cents[..., j, :]).norm(dim=-1)  # (..., pairs)
        terms = 1.0 / (1.0 + dist)
        both = ((counts[i] > 0) & (counts[j] > 0)).to(h.dtype)  # (pairs,)
        some = (terms * both).sum(-1) / both.sum().clamp(min=1)
        # every class present: the plain mean over the pairs (the last bits of the form it
        # replaced, which averaged over torch.unique's pairs)
        alpha = torch.as_tensor(self.alpha).to(dist)
        return alpha * torch.where((counts > 0).all(), terms.mean(-1), some)


@dataclass(frozen=True)
class L2ToInit(Method):
    """``lam * ||theta - theta_0||^2`` over the trainable parameters: a simple stability
    baseline (Theorem 2.2's ||w0 - w*|| read as a regularizer). ``theta_0`` is the run's state,
    taken before the first update."""

    base_name = "l2-init"
    lam: float = 1e-3

    uses = frozenset({"params"})
    checks = {"lam": STRENGTH}

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        if fwd.params is None:
            raise InvalidArgument("L2ToInit needs the trainable parameters (Forward.params)")
        return {"theta0": {k: p.detach().clone() for k, p in fwd.params.items()}}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        if fwd.params is None:
            raise InvalidArgument("L2ToInit needs the trainable parameters (Forward.params)")
        theta0, k = state["theta0"], fwd.model_axes  # per model when parameters carry a model axis
        sq = sum((p - theta0[name]).pow(2).flatten(k).sum(-1) for name, p in fwd.params.items())
        return torch.as_tensor(self.lam).to(sq) * sq
