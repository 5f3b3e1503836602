"""Methods that wrap the optimizer: decoupled weight decay, SAM (and activation decay + SAM), and
the masked (selective) update of UEGR's backward stage. Each wrapper is a
:class:`~boundbench.methods.MethodOptimizer`: it keeps its own state (``state_dict``),
shares the base's ``param_groups``, chains with other wrappers, and works per model when the
trainer runs several at once (``model_axes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Bool, Choice, Float, unchecked
from boundbench.methods import Combined, Method, MethodOptimizer, per_model
from boundbench.methods.penalties import STRENGTH, ActivationDecay
from boundbench.theory.uegr import keep_probability, normalized_saliency


class SAMOptimizer(MethodOptimizer):
    """Sharpness-aware minimization (Foret et al. 2021) around a base optimizer: ascend to
    ``theta + rho g / ||g||``, take the gradient there (the closure), come back and let the base
    optimizer step with it. The trainer's closure re-runs the batch with the RNG state of the
    first pass: both passes see the same dropout masks. With ``model_axes``, ``||g||`` and
    ``rho`` (a number or one value per model) are per model."""

    def __init__(self, base: torch.optim.Optimizer, *, rho: float | torch.Tensor = 0.05,
                 model_axes: int = 0) -> None:
        STRENGTH("rho", rho)
        super().__init__(base, model_axes=model_axes)
        self.rho = rho

    @property
    def needs_closure(self) -> bool:
        return True

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            raise InvalidArgument("SAM needs a closure that re-evaluates the loss and its gradients")
        params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        k = self.model_axes
        if k == 0:
            norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
        else:  # one norm per model over all its parameters
            norm = sum(p.grad.pow(2).flatten(k).sum(-1) for p in params).sqrt()
        scale = torch.as_tensor(self.rho).to(norm) / (norm + 1e-12)
        eps = [p.grad * per_model(scale, p, k) for p in params]
        for p, e in zip(params, eps, strict=True):
            p.add_(e)
        for p in params:
            p.grad = None
        with torch.enable_grad():
            loss = closure()
        for p, e in zip(params, eps, strict=True):
            p.sub_(e)
        self.base.step()
        return loss


class SelectiveUpdate(MethodOptimizer):
    """A masked update around a base optimizer (UEGR's backward stage, eqs. 7-9): before each
    base step every gradient entry is kept with probability ``p(s~)`` (eq. 9) and rescaled by
    ``1/p`` (unbiased: Theorem 1); ``update_fraction`` holds the fraction kept at each step.

    The saliency is the squared mini-batch gradient (the reading the optimizer can compute),
    normalized by ``max - min`` over all parameters at once (eq. 8 as written; per model with
    ``model_axes``). Around a wrapper that needs a closure (SAM), the mask applies to the
    gradient the base steps with: the one the closure computes."""

    def __init__(self, base: torch.optim.Optimizer, *, alpha: float | torch.Tensor,
                 beta: float | torch.Tensor, flipped: bool, seed: int = 0,
                 model_axes: int = 0) -> None:
        # checked once here; step() runs the unchecked bodies
        Float(per_model=True)("alpha", alpha)
        Float(0, per_model=True)("beta", beta)
        Bool()("flipped", flipped)
        super().__init__(base, model_axes=model_axes)
        self.alpha, self.beta, self.flipped = alpha, beta, flipped
        self.seed = seed
        self.gen = torch.Generator().manual_seed(seed)  # moved to the gradients' device at once
        self._fractions: list[torch.Tensor] = []  # on the device: read at report time

    def _mask(self) -> None:
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        if not grads:
            return
        if (not self._fractions and grads[0].device.type == "cuda"
                and self.gen.device != grads[0].device):
            # masks drawn where the gradients are (a CPU mask for every entry, copied to the
            # device every step, was the step's largest cost there); a run resumed from a CPU
            # generator's state keeps drawing on the CPU, as it began
            self.gen = torch.Generator(device=grads[0].device).manual_seed(self.seed)
        kept: Any = 0
        total = 0
        k = self.model_axes
        # the unchecked bodies: these are the step's own gradients, and checking every entry
        # of every parameter each step would cost a pass (and, on a GPU, a sync) per tensor
        saliency, keep = unchecked(normalized_saliency), unchecked(keep_probability)
        for g, s_norm in zip(grads, saliency(grads, model_axes=k), strict=True):
            p = keep(s_norm, alpha=per_model(self.alpha, s_norm, k),
                     beta=per_model(self.beta, s_norm, k), flipped=self.flipped)
            u = torch.rand(s_norm.shape, generator=self.gen, device=self.gen.device
                           ).to(s_norm.device)
            m = u < p
            # a kept entry has p > u >= 0, so the division is finite; dropped entries are 0
            g.copy_(torch.where(m, g / torch.where(m, p, 1.0).to(g.dtype), 0.0))
            kept = kept + m.sum()  # a device tensor: no int() (a host sync) per parameter
            total += m.numel()
        self._fractions.append(torch.as_tensor(kept, dtype=torch.float64) / max(total, 1))

    @property
    def update_fraction(self) -> list[float]:
        """The fraction of gradient entries kept, per step (read from the device once)."""
        if not self._fractions:
            return []
        return torch.stack([torch.as_tensor(f, dtype=torch.float64) for f in self._fractions]
                           ).tolist()

    @torch.no_grad()
    def step(self, closure=None):
        if self.needs_closure:  # the wrapper inside re-runs the batch: mask what it computes
            if closure is None:
                raise InvalidArgument("this masked update wraps an optimizer that needs a closure")

            def masked():
                loss = closure()
                self._mask()
                return loss

            return self.base.step(masked)
        loss = closure() if closure is not None else None
        self._mask()
        self.base.step()
        return loss

    def wrapper_state(self) -> dict[str, Any]:
        return {"generator": self.gen.get_state(), "update_fraction": list(self.update_fraction)}

    def load_wrapper_state(self, state: Mapping[str, Any]) -> None:
        self.gen.set_state(state["generator"])
        self._fractions = [torch.tensor(float(f), dtype=torch.float64)
                           for f in state["update_fraction"]]

    def own_report(self) -> dict[str, Any]:
        frac = self.update_fraction
        return {"mean_update_fraction": sum(frac) / len(frac) if frac else None}


@dataclass(frozen=True)
class WeightDecay(Method):
    """Decoupled weight decay ``wd`` (AdamW) on every trainable parameter: the wrapper steps
    the base with its groups' ``weight_decay`` set to ``wd`` for that step only."""

    base_name = "weight-decay"
    wd: float = 0.01

    checks = {"wd": Float(0)}

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int,
                  model_axes: int = 0) -> torch.optim.Optimizer:
        return WeightDecayed(base, wd=self.wd, model_axes=model_axes)


class WeightDecayed(MethodOptimizer):
    """The base optimizer with its groups' ``weight_decay`` at ``wd`` for each step only."""

    def __init__(self, base: torch.optim.Optimizer, *, wd: float, model_axes: int = 0) -> None:
        Float(0)("wd", wd)
        super().__init__(base, model_axes=model_axes)
        self.wd = wd

    @torch.no_grad()
    def step(self, closure=None):
        saved = [g.get("weight_decay", 0.0) for g in self.param_groups]
        for g in self.param_groups:
            g["weight_decay"] = self.wd
        try:
            return self.base.step(closure)
        finally:
            for g, wd in zip(self.param_groups, saved, strict=True):
                g["weight_decay"] = wd


@dataclass(frozen=True)
class SAM(Method):
    """SAM with radius ``rho`` (0.05 as in JACHESS's baseline) on the trainer's optimizer."""

    base_name = "sam"
    needs_closure = True
    checks = {"rho": Float(0, lo_open=True, per_model=True)}
    rho: float = 0.05

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int,
                  model_axes: int = 0) -> torch.optim.Optimizer:
        return SAMOptimizer(base, rho=self.rho, model_axes=model_axes)


@dataclass(frozen=True)
class MaskedUpdate(Method):
    """The masked update alone (UEGR's backward stage without its forward stage): eq. 9 as
    written (``reading="as-written"``: high saliency, *low* update probability) or sign-flipped
    (``"flipped"``: what the prose intends); ``alpha`` in [0.6, 0.95], ``beta`` in {1, 5, 10}."""

    base_name = "masked-update"
    alpha: float = 0.8
    beta: float = 5.0
    reading: Literal["as-written", "flipped"] = "flipped"

    checks = {"alpha": Float(0, 1, lo_open=True, per_model=True),
              "beta": Float(0, lo_open=True, per_model=True),
              "reading": Choice("as-written", "flipped")}

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int,
                  model_axes: int = 0) -> torch.optim.Optimizer:
        return SelectiveUpdate(base, alpha=self.alpha, beta=self.beta,
                               flipped=self.reading == "flipped", seed=seed, model_axes=model_axes)


@dataclass(frozen=True)
class ADSAM(Combined):
    """Activation decay and SAM together (``ad+sam``)."""

    base_name = "ad+sam"
    sigma: float = 0.05
    rho: float = 0.05
    parts: tuple[Method, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", (ActivationDecay(self.sigma), SAM(self.rho)))
        super().__post_init__()

    @property
    def name(self) -> str:
        return self.base_name

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "sigma": self.sigma, "rho": self.rho}
