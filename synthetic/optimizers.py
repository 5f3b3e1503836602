"""Methods that wrap the optimizer: decoupled weight decay, SAM (and activation decay + SAM), and
the masked (selective) update of UEGR's backward stage. Each wrapper is a
``torch.optim.Optimizer`` that keeps its own state (``state_dict``) and shares the base's
``param_groups``, so a learning-rate scheduler attached to either schedules the base step.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from boundbench.framework.validate import Bool, Float
from boundbench.synthetic.methods import Forward, Method, register
from boundbench.synthetic.penalties import ActivationDecay
from boundbench.theory.masked_gradient import keep_probability, normalized_saliency


class _Wrapper(torch.optim.Optimizer):
    """An optimizer around ``base``: same ``param_groups`` and ``state`` (Adam moments), its own
    extra state in :meth:`state_dict` under ``"wrapper"``."""

    def __init__(self, base: torch.optim.Optimizer) -> None:
        self.base = base
        self.param_groups = base.param_groups
        self.defaults = base.defaults
        self.state = base.state
        self._optimizer_step_pre_hooks: dict = {}
        self._optimizer_step_post_hooks: dict = {}

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)

    def wrapper_state(self) -> dict[str, Any]:
        return {}

    def load_wrapper_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`wrapper_state` returned."""

    def state_dict(self) -> dict[str, Any]:
        return {**self.base.state_dict(), "wrapper": self.wrapper_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state_dict = dict(state_dict)
        self.load_wrapper_state(state_dict.pop("wrapper", {}))
        self.base.load_state_dict(state_dict)

    def report(self) -> dict[str, Any]:
        """What the wrapper measured over the run (recorded with the result)."""
        return {}


class SAMOptimizer(_Wrapper):
    """Sharpness-aware minimization (Foret et al. 2021) around a base optimizer: ascend to
    ``theta + rho g / ||g||``, take the gradient there (the closure), come back and let the base
    optimizer step with it. The trainer's closure re-runs the batch with the RNG state of the
    first pass: both passes see the same dropout masks."""

    needs_closure = True

    def __init__(self, base: torch.optim.Optimizer, *, rho: float = 0.05) -> None:
        if not rho > 0:
            raise ValueError(f"rho must be > 0 (got {rho})")
        super().__init__(base)
        self.rho = rho

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None:
            raise ValueError("SAM needs a closure that re-evaluates the loss and its gradients")
        params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
        norm = torch.norm(torch.stack([p.grad.norm() for p in params]))
        scale = self.rho / (norm + 1e-12)
        eps = [p.grad * scale for p in params]
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


class SelectiveUpdate(_Wrapper):
    """A masked update around a base optimizer (UEGR's backward stage, eqs. 7-9): before each
    base step every gradient entry is kept with probability ``p(s~)`` (eq. 9) and rescaled by
    ``1/p`` (unbiased: Theorem 1); ``update_fraction`` holds the fraction kept at each step.

    The saliency is the squared mini-batch gradient (the reading the optimizer can compute),
    normalized by ``max - min`` over all parameters at once (eq. 8 as written)."""

    def __init__(self, base: torch.optim.Optimizer, *, alpha: float, beta: float,
                 flipped: bool, seed: int = 0) -> None:
        super().__init__(base)
        # checked once here; step() runs the unchecked bodies
        Float()("alpha", alpha)
        Float(0)("beta", beta)
        Bool()("flipped", flipped)
        self.alpha, self.beta, self.flipped = alpha, beta, flipped
        self.gen = torch.Generator().manual_seed(seed)
        self.update_fraction: list[float] = []

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        kept = total = 0
        # the unchecked bodies: these are the step's own gradients, and checking every entry
        # of every parameter each step would cost a pass (and, on a GPU, a sync) per tensor
        saliency, keep = normalized_saliency.__wrapped__, keep_probability.__wrapped__
        for g, s_norm in zip(grads, saliency(grads), strict=True):
            p = keep(s_norm, alpha=self.alpha, beta=self.beta, flipped=self.flipped)
            u = torch.rand(s_norm.shape, generator=self.gen).to(s_norm.device)
            m = u < p
            # a kept entry has p > u >= 0, so the division is finite; dropped entries are 0
            g.copy_(torch.where(m, g / torch.where(m, p, 1.0).to(g.dtype), 0.0))
            kept += int(m.sum())
            total += m.numel()
        self.update_fraction.append(kept / max(total, 1))
        self.base.step()
        return loss

    def wrapper_state(self) -> dict[str, Any]:
        return {"generator": self.gen.get_state(), "update_fraction": list(self.update_fraction)}

    def load_wrapper_state(self, state: Mapping[str, Any]) -> None:
        if "generator" in state:
            self.gen.set_state(state["generator"])
        self.update_fraction = list(state.get("update_fraction", []))

    def report(self) -> dict[str, Any]:
        frac = self.update_fraction
        return {"mean_update_fraction": sum(frac) / len(frac) if frac else None}


@register
@dataclass(frozen=True)
class WeightDecay(Method):
    """Decoupled weight decay ``wd`` (AdamW) on every trainable parameter: the wrapper steps
    the base with its groups' ``weight_decay`` set to ``wd`` for that step only."""

    base_name = "weight-decay"
    wd: float = 0.01

    def __post_init__(self) -> None:
        if not self.wd >= 0:
            raise ValueError(f"wd must be >= 0 (got {self.wd})")

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int) -> torch.optim.Optimizer:
        return _WeightDecayed(base, wd=self.wd)


class _WeightDecayed(_Wrapper):
    def __init__(self, base: torch.optim.Optimizer, *, wd: float) -> None:
        super().__init__(base)
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


@register
@dataclass(frozen=True)
class SAM(Method):
    """SAM with radius ``rho`` (0.05 as in JACHESS's baseline) on the trainer's optimizer."""

    base_name = "sam"
    rho: float = 0.05

    def __post_init__(self) -> None:
        if not self.rho > 0:
            raise ValueError(f"rho must be > 0 (got {self.rho})")

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int) -> torch.optim.Optimizer:
        return SAMOptimizer(base, rho=self.rho)


@register
@dataclass(frozen=True)
class MaskedUpdate(Method):
    """The masked update alone (UEGR's backward stage without its forward stage): eq. 9 as
    written (``reading="as-written"``: high saliency, *low* update probability) or sign-flipped
    (``"flipped"``: what the prose intends); ``alpha`` in [0.6, 0.95], ``beta`` in {1, 5, 10}."""

    base_name = "masked-update"
    alpha: float = 0.8
    beta: float = 5.0
    reading: Literal["as-written", "flipped"] = "flipped"

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must lie in (0, 1] (got {self.alpha})")
        if not self.beta > 0:
            raise ValueError(f"beta must be > 0 (got {self.beta})")
        if self.reading not in ("as-written", "flipped"):
            raise ValueError(f"reading must be 'as-written' or 'flipped' (got {self.reading!r})")

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int) -> torch.optim.Optimizer:
        return SelectiveUpdate(base, alpha=self.alpha, beta=self.beta,
                               flipped=self.reading == "flipped", seed=seed)


@dataclass(frozen=True)
class Combined(Method):
    """Several methods at once: penalties add, optimizer wrappers chain, model changes nest."""

    parts: tuple[Method, ...] = ()

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError("Combined needs at least one method in parts")

    @property
    def name(self) -> str:
        return "+".join(m.name for m in self.parts)

    @property
    def heads(self) -> int:
        return max(m.heads for m in self.parts)

    @property
    def needs_inputs(self) -> bool:  # type: ignore[override]
        return any(m.needs_inputs for m in self.parts)

    @property
    def double_backward(self) -> bool:  # type: ignore[override]
        return any(m.double_backward for m in self.parts)

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        return {str(i): m.init_state(fwd, seed=seed) for i, m in enumerate(self.parts)}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]):
        return sum(m.penalty(fwd, state[str(i)]) for i, m in enumerate(self.parts))

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int) -> torch.optim.Optimizer:
        for m in self.parts:
            base = m.optimizer(base, seed=seed)
        return base

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        with ExitStack() as stack:
            for m in self.parts:
                stack.enter_context(m.applied(model))
            yield

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "parts": [m.describe() for m in self.parts]}


@register
@dataclass(frozen=True)
class ADSAM(Combined):
    """Activation decay and SAM together (``ad+sam``)."""

    base_name = "ad+sam"
    sigma: float = 0.05
    rho: float = 0.05
    parts: tuple[Method, ...] = field(default=(), init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", (ActivationDecay(self.sigma), SAM(self.rho)))

    @property
    def name(self) -> str:
        return self.base_name

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "sigma": self.sigma, "rho": self.rho}
