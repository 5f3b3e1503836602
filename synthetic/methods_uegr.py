"""UEGR (Sun et al., paper 001) on the shared interface: the forward stage is a penalty
(single-step L2 adversarial embedding perturbation, ``m`` dropout passes with pass-specific
rates, cross-entropy on each and the JS divergence over pairs, eqs. 2-6), the backward stage an
optimizer wrapper (Fisher-saliency Bernoulli mask with 1/p rescaling, eqs. 7-9).

Readings of what the paper leaves open (recorded in ``describe`` and so in every result):
the perturbation norm is per example over tokens x embedding and the perturbation is detached;
"adaptive dropout" is ``m`` passes with fixed pass-specific rates (no rate-adaptation rule is
given); the saliency is the squared mini-batch gradient (reading (b)), normalized by
``max - min`` over all parameters at once; eq. 9's sign is selectable (``reading``).
"""

from __future__ import annotations

import torch

from boundbench.synthetic.methods import Forward, Method
from boundbench.theory.masked_gradient import keep_probability


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``JS(p || q) = KL(p || M)/2 + KL(q || M)/2``, ``M = (p + q)/2``, over the last axis."""
    m = 0.5 * (p + q)

    def kl(a):
        return torch.where(a > 0, a * (a.clamp_min(1e-30).log() - m.clamp_min(1e-30).log()), 0.0
                           ).sum(-1)

    return 0.5 * kl(p) + 0.5 * kl(q)


class SelectiveUpdate(torch.optim.Optimizer):
    """UEGR's backward stage around a base optimizer: before each base step every gradient entry
    is kept with probability ``p(s~)`` (eq. 9) and rescaled by ``1/p``; ``update_fraction`` holds
    the fraction kept at each step."""

    def __init__(self, base: torch.optim.Optimizer, *, alpha: float, beta: float,
                 flipped: bool, seed: int = 0) -> None:
        self.base, self.alpha, self.beta, self.flipped = base, alpha, beta, flipped
        self.param_groups, self.defaults, self.state = base.param_groups, base.defaults, base.state
        self._optimizer_step_pre_hooks: dict = {}
        self._optimizer_step_post_hooks: dict = {}
        self.gen = torch.Generator().manual_seed(seed)
        self.update_fraction: list[float] = []

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        sal = [g.float().pow(2) for g in grads]
        hi = max(float(s.max()) for s in sal)
        lo = min(float(s.min()) for s in sal)
        span = hi - lo
        kept = total = 0
        for g, s in zip(grads, sal, strict=True):
            s_norm = s / span if span > 0 else torch.zeros_like(s)
            p = keep_probability(s_norm, alpha=self.alpha, beta=self.beta, flipped=self.flipped)
            u = torch.rand(s.shape, generator=self.gen).to(s.device)
            m = u < p
            # a kept entry has p > u >= 0, so the division is finite; dropped entries are 0
            g.copy_(torch.where(m, g / torch.where(m, p, 1.0).to(g.dtype), 0.0))
            kept += int(m.sum())
            total += m.numel()
        self.update_fraction.append(kept / max(total, 1))
        self.base.step()
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)


class UEGR(Method):
    """``L_train = L_st + L_adv + lam L_div`` (eq. 6) and the selective update.

    ``eps``: perturbation radius (paper: 0.01, 0.1, 0.4); ``rates``: one dropout rate per
    adversarial pass (best in [0.3, 0.5]); ``lam`` = 0.01; ``alpha`` in [0.6, 0.95], ``beta`` in
    {1, 5, 10}; ``reading``: ``"as-written"`` (eq. 9: high saliency, *low* update probability)
    or ``"flipped"`` (high saliency, high probability, what the prose intends)."""

    name = "uegr"
    needs_inputs = True

    def __init__(self, eps: float = 0.1, *, rates: tuple[float, ...] = (0.3, 0.5),
                 lam: float = 0.01, alpha: float = 0.8, beta: float = 5.0,
                 reading: str = "flipped", selective: bool = True, seed: int = 0) -> None:
        if eps < 0 or lam < 0:
            raise ValueError(f"eps and lam must be >= 0 (got {eps}, {lam})")
        if not rates or any(not 0 <= r < 1 for r in rates):
            raise ValueError(f"rates must be dropout rates in [0, 1) (got {rates})")
        if reading not in ("as-written", "flipped"):
            raise ValueError(f"reading must be 'as-written' or 'flipped' (got {reading!r})")
        self.eps, self.rates, self.lam = eps, tuple(rates), lam
        self.alpha, self.beta, self.reading, self.selective = alpha, beta, reading, selective
        self.seed = seed
        self.dropouts: list[torch.nn.Dropout] = []
        self.optimizer: SelectiveUpdate | None = None

    def prepare_model(self, model: torch.nn.Module) -> None:
        self.dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None or fwd.labels is None:
            raise ValueError("UEGR needs Forward.inputs, Forward.fn and Forward.labels")
        y = fwd.labels
        ce = torch.nn.functional.cross_entropy(fwd.logits, y)
        (g,) = torch.autograd.grad(ce, fwd.inputs, retain_graph=True)
        norm = g.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *([1] * (g.dim() - 1)))
        x_adv = fwd.inputs.detach() + self.eps * g / norm
        saved = [m.p for m in self.dropouts]
        probs, adv = [], 0.0
        try:
            for r in self.rates:
                for m in self.dropouts:
                    m.p = r
                logits = fwd.fn(x_adv)
                adv = adv + torch.nn.functional.cross_entropy(logits, y)
                probs.append(torch.softmax(logits.float(), -1))
        finally:
            for m, p in zip(self.dropouts, saved, strict=True):
                m.p = p
        div = sum(js_divergence(probs[a], probs[b]).mean()
                  for a in range(len(probs)) for b in range(a + 1, len(probs)))
        return adv / len(self.rates) + self.lam * div

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        if not self.selective:
            return optimizer
        self.optimizer = SelectiveUpdate(optimizer, alpha=self.alpha, beta=self.beta,
                                         flipped=self.reading == "flipped", seed=self.seed)
        return self.optimizer

    def describe(self) -> dict:
        frac = self.optimizer.update_fraction if self.optimizer else []
        return {"method": self.name, "eps": self.eps, "rates": list(self.rates), "lam": self.lam,
                "alpha": self.alpha, "beta": self.beta, "reading": self.reading,
                "selective": self.selective,
                "saliency": "squared mini-batch gradient, max-min normalized over all parameters",
                "mean_update_fraction": sum(frac) / len(frac) if frac else None}
