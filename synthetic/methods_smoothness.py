"""Smoothness methods on the shared interface: dropout, weight decay, SAM (and AD + SAM), JACHESS
(paper 000, eq. 7) in train and dual (unlabeled) mode, and its baselines, Jacobian regularization
of the logits (``jacobian`` in :mod:`synthetic.methods`) and Cross-Hölder (logits Jacobian +
Hessian).
"""

from __future__ import annotations

import torch

from boundbench.synthetic.methods import Forward, Method
from boundbench.theory.curvature import hessian_frobenius, jacobian_frobenius


class Dropout(Method):
    """Dropout with rate ``p`` on every ``nn.Dropout`` of the model (BERT's eager attention reads
    its rate from its module, so attention-probability dropout follows too)."""

    name = "dropout"

    def __init__(self, p: float = 0.1) -> None:
        if not 0 <= p < 1:
            raise ValueError(f"p must lie in [0, 1) (got {p})")
        self.p = p

    def prepare_model(self, model: torch.nn.Module) -> None:
        for mod in model.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = self.p

    def describe(self) -> dict:
        return {"method": self.name, "p": self.p}


class WeightDecay(Method):
    """Decoupled weight decay ``wd`` (AdamW) on every trainable parameter."""

    name = "weight-decay"

    def __init__(self, wd: float = 0.01) -> None:
        if wd < 0:
            raise ValueError(f"wd must be >= 0 (got {wd})")
        self.wd = wd

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        for g in optimizer.param_groups:
            g["weight_decay"] = self.wd
        return optimizer

    def describe(self) -> dict:
        return {"method": self.name, "wd": self.wd}


class SAMOptimizer(torch.optim.Optimizer):
    """Sharpness-aware minimization (Foret et al. 2021) around a base optimizer: ascend to
    ``theta + rho g / ||g||``, take the gradient there (the closure), come back and let the base
    optimizer step with it.

    ``param_groups`` *are* the base optimizer's, so a learning-rate scheduler attached to either
    object schedules the base step (the fix SAM users ask for). The trainer's closure re-runs the
    batch with the RNG state of the first pass: both passes see the same dropout masks."""

    needs_closure = True

    def __init__(self, base: torch.optim.Optimizer, *, rho: float = 0.05) -> None:
        if rho <= 0:
            raise ValueError(f"rho must be > 0 (got {rho})")
        self.base, self.rho = base, rho
        self.param_groups = base.param_groups
        self.defaults = base.defaults
        self.state = base.state  # shares the base's state (Adam moments)
        self._optimizer_step_pre_hooks: dict = {}
        self._optimizer_step_post_hooks: dict = {}

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

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)


class SAM(Method):
    """SAM with radius ``rho`` (0.05 as in JACHESS's baseline) on the trainer's optimizer."""

    name = "sam"

    def __init__(self, rho: float = 0.05) -> None:
        if rho <= 0:
            raise ValueError(f"rho must be > 0 (got {rho})")
        self.rho = rho

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        return SAMOptimizer(optimizer, rho=self.rho)

    def describe(self) -> dict:
        return {"method": self.name, "rho": self.rho}


class Combined(Method):
    """Several methods at once: penalties add, optimizer wrappers chain, model hooks run in
    order (e.g. activation decay + SAM)."""

    def __init__(self, *methods: Method) -> None:
        if not methods:
            raise ValueError("Combined needs at least one method")
        self.methods = methods
        self.name = "+".join(m.name for m in methods)
        self.needs_inputs = any(m.needs_inputs for m in methods)
        self.heads = max(m.heads for m in methods)

    def setup(self, params):
        for m in self.methods:
            m.setup(params)

    def prepare_model(self, model):
        for m in self.methods:
            m.prepare_model(model)

    def penalty(self, fwd: Forward):
        return sum(m.penalty(fwd) for m in self.methods)

    def wrap_optimizer(self, optimizer):
        for m in self.methods:
            optimizer = m.wrap_optimizer(optimizer)
        return optimizer

    def describe(self) -> dict:
        return {"method": self.name, "parts": [m.describe() for m in self.methods]}


def ad_sam(sigma: float = 0.05, rho: float = 0.05) -> Combined:
    from boundbench.synthetic.methods import ActivationDecay

    return Combined(ActivationDecay(sigma), SAM(rho))


LAYER_WEIGHTS = ("soft", "uniform", "inverse", "logits")


class JACHESS(Method):
    """JACHESS (paper 000, eq. 7): ``weight * sum_k lam_k (||J^(k)||_F + sum_{d in D_k}
    ||H_d^(k)||_F)`` w.r.t. the input word embeddings, every block ``k`` from *one* forward pass
    with all hidden states, norms by the random-projection estimators (5)-(6), ``dims`` = |D_k|
    output dimensions drawn afresh per call (10 in the paper).

    Readings (the paper leaves them open; recorded in ``describe``):

    * a block's output is its pooled representation (the classifier's pooling; the paper sums
      per-token norms, its code takes the [CLS] position only);
    * ``layer_weights``: ``"soft"`` = softmax(-j) (the paper's choice), ``"inverse"`` =
      softmax(j), ``"uniform"`` = 1/K, ``"logits"`` = the logits only (Table 5's strategies),
      where ``j_k`` is the mean Jacobian norm of block ``k`` of the *base* model, measured on
      the first batch before any update;
    * ``weight`` is the global multiplier the paper does not give; ``reg_batch`` regularizes only
      the first examples of each batch (a CPU budget knob; None = all).

    ``mode="unlab"`` is the dual mode: the trainer alternates task steps with steps on the
    penalty alone over unlabeled texts."""

    name = "jachess"
    needs_inputs = True

    def __init__(self, weight: float = 1.0, *, layer_weights: str = "soft", dims: int = 10,
                 n_proj: int = 1, mode: str = "train", reg_batch: int | None = None,
                 seed: int = 0) -> None:
        if weight < 0:
            raise ValueError(f"weight must be >= 0 (got {weight})")
        if layer_weights not in LAYER_WEIGHTS:
            raise ValueError(f"layer_weights must be one of {LAYER_WEIGHTS} (got {layer_weights!r})")
        if mode not in ("train", "unlab"):
            raise ValueError(f"mode must be 'train' or 'unlab' (got {mode!r})")
        if dims < 0 or n_proj < 1:
            raise ValueError(f"dims must be >= 0 and n_proj >= 1 (got {dims}, {n_proj})")
        self.weight, self.layer_weights, self.dims, self.n_proj = weight, layer_weights, dims, n_proj
        self.mode, self.reg_batch = mode, reg_batch
        self.dual = mode == "unlab"
        self.name = "jachess-unlab" if self.dual else "jachess"
        self.gen = torch.Generator().manual_seed(seed)
        self.lam: torch.Tensor | None = None
        self.base_norms: list[float] = []

    def _norms(self, z: torch.Tensor, x: torch.Tensor, *, create_graph: bool,
               hessian: bool) -> torch.Tensor:
        def f(_):
            return z

        jac = jacobian_frobenius(f, x, n_proj=self.n_proj, seed=self.gen,
                                 create_graph=create_graph, event_dims=2)
        if not hessian or self.dims == 0:
            return jac
        return jac + hessian_frobenius(f, x, dims=self.dims, n_proj=self.n_proj, seed=self.gen,
                                       create_graph=create_graph)

    def _init_weights(self, layers: list[torch.Tensor], x: torch.Tensor) -> None:
        j = torch.stack([self._norms(z, x, create_graph=False, hessian=False).mean().detach()
                         for z in layers]).double().cpu()
        self.base_norms = j.tolist()
        K = len(layers)
        if self.layer_weights == "soft":
            self.lam = torch.softmax(-j, 0)
        elif self.layer_weights == "inverse":
            self.lam = torch.softmax(j, 0)
        else:
            self.lam = torch.full((K,), 1.0 / K, dtype=torch.float64)

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.hidden_fn is None:
            raise ValueError("JACHESS needs Forward.inputs and Forward.hidden_fn")
        x = fwd.inputs
        if self.reg_batch is not None:
            x = x[: self.reg_batch]
        sub = x.detach().requires_grad_(True)
        n = sub.shape[0]
        layers, logits = fwd.hidden_fn(sub, slice(0, n))  # one pass, the first n rows
        if self.layer_weights == "logits":
            return self.weight * self._norms(logits, sub, create_graph=True, hessian=True).mean()
        if self.lam is None:
            self._init_weights(layers, sub)
        total = 0.0
        for lam, z in zip(self.lam.tolist(), layers, strict=True):
            total = total + lam * self._norms(z, sub, create_graph=True, hessian=True).mean()
        return self.weight * total

    def describe(self) -> dict:
        return {"method": self.name, "weight": self.weight, "layer_weights": self.layer_weights,
                "dims": self.dims, "n_proj": self.n_proj, "mode": self.mode,
                "reg_batch": self.reg_batch, "pooling": "classifier pooling per block",
                "lambda": None if self.lam is None else self.lam.tolist(),
                "base_jacobian_norms": self.base_norms}


class CrossHolder(Method):
    """Cross-Hölder (Mustafa et al. 2020; JACHESS's baseline): ``lam * mean_batch (||J||_F +
    sum_d ||H_d||_F)`` of the logits w.r.t. the input embeddings, every logit dimension."""

    name = "cross-holder"
    needs_inputs = True

    def __init__(self, lam: float = 0.01, *, n_proj: int = 1, mode: str = "train",
                 reg_batch: int | None = None, seed: int = 0) -> None:
        if lam < 0:
            raise ValueError(f"lam must be >= 0 (got {lam})")
        if mode not in ("train", "unlab"):
            raise ValueError(f"mode must be 'train' or 'unlab' (got {mode!r})")
        self.lam, self.n_proj, self.mode, self.reg_batch = lam, n_proj, mode, reg_batch
        self.dual = mode == "unlab"
        self.name = "cross-holder-unlab" if self.dual else "cross-holder"
        self.gen = torch.Generator().manual_seed(seed)

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None:
            raise ValueError("Cross-Hölder needs Forward.inputs and Forward.fn")
        x, fn = fwd.inputs, fwd.fn
        if self.reg_batch is not None:  # the first rows only, in a pass of their own
            if fwd.hidden_fn is None:
                raise ValueError("Cross-Hölder with reg_batch needs Forward.hidden_fn")
            rows = slice(0, self.reg_batch)
            x = fwd.inputs[rows].detach().requires_grad_(True)

            def fn(e):
                return fwd.hidden_fn(e, rows)[1]
        jac = jacobian_frobenius(fn, x, n_proj=self.n_proj, seed=self.gen, create_graph=True,
                                 event_dims=2)
        c = fwd.logits.shape[-1]
        hess = hessian_frobenius(fn, x, dims=list(range(c)), n_proj=self.n_proj,
                                 seed=self.gen, create_graph=True)
        return self.lam * (jac + hess).mean()

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam, "n_proj": self.n_proj, "mode": self.mode,
                "reg_batch": self.reg_batch}
