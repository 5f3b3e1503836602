"""JACHESS (Jukić & Šnajder, eq. 7) on a transformer's blocks, in train and dual (unlabeled) mode, and
its Cross-Hölder baseline (logits Jacobian + Hessian). The Jacobian penalty of the logits alone
is model-agnostic: :class:`boundbench.methods.penalties.JacobianPenalty`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Choice, Float, Int, unchecked
from boundbench.methods import Forward, Method
from boundbench.theory import norms

# the training step's own inputs: checking every entry for NaN each step is a host sync
jacobian_frobenius = unchecked(norms.jacobian_frobenius)
hessian_frobenius = unchecked(norms.hessian_frobenius)

LAYER_WEIGHTS = ("soft", "uniform", "inverse", "logits")


@dataclass(frozen=True)
class JACHESS(Method):
    """JACHESS (Jukić & Šnajder, eq. 7): ``weight * sum_k lam_k (||J^(k)||_F + sum_{d in D_k}
    ||H_d^(k)||_F)`` w.r.t. the input word embeddings, every block ``k`` from *one* forward pass
    with all hidden states, norms by the random-projection estimators (5)-(6), ``dims`` = |D_k|
    output dimensions drawn afresh per call (10 in the paper).

    Readings (the paper leaves them open; recorded with every result):

    * a block's output is its pooled representation (the classifier's pooling; the paper sums
      per-token norms, its code takes the [CLS] position only);
    * ``layer_weights``: ``"soft"`` = softmax(-j) (the paper's choice), ``"inverse"`` =
      softmax(j), ``"uniform"`` = 1/K, ``"logits"`` = the logits only (Table 5's strategies),
      where ``j_k`` is the mean Jacobian norm of block ``k`` of the *base* model, measured on
      the first batch before any update (the run's state);
    * ``weight`` is the global multiplier the paper does not give (ours: 1e-3, ~0.1 of the CE
      at the start); ``reg_batch`` regularizes only the first examples of each batch (a CPU
      budget knob; None = all).

    ``mode="unlab"`` (``jachess-unlab``) is the dual mode: the trainer alternates task steps
    with steps on the penalty alone over unlabeled texts."""

    base_name = "jachess"
    quick = {"dims": 1, "reg_batch": 2}  # 2 examples a batch, 1 Hessian dimension per block
    needs_inputs = True
    double_backward = True
    notes = {"pooling": "classifier pooling per block"}
    weight: float = 1e-3
    layer_weights: Literal["soft", "uniform", "inverse", "logits"] = "soft"
    dims: int = 10
    n_proj: int = 1
    mode: Literal["train", "unlab"] = "train"
    reg_batch: int | None = None
    uses = frozenset({"hidden"})
    checks = {"weight": Float(0), "layer_weights": Choice(*LAYER_WEIGHTS), "dims": Int(0),
              "n_proj": Int(1), "mode": Choice("train", "unlab"),
              "reg_batch": Int(1, optional=True)}

    def _norms(self, z: torch.Tensor, x: torch.Tensor, gen: torch.Generator, *,
               create_graph: bool, hessian: bool) -> torch.Tensor:
        def f(_):
            return z

        jac = jacobian_frobenius(f, x, n_proj=self.n_proj, seed=gen, create_graph=create_graph,
                                 event_dims=2)
        if not hessian or self.dims == 0:
            return jac
        return jac + hessian_frobenius(f, x, dims=self.dims, n_proj=self.n_proj, seed=gen,
                                       create_graph=create_graph)

    def _rows(self, fwd: Forward) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        if fwd.inputs is None or fwd.hidden_fn is None:
            raise InvalidArgument("JACHESS needs Forward.inputs and Forward.hidden_fn")
        x = fwd.inputs if self.reg_batch is None else fwd.inputs[: self.reg_batch]
        sub = x.detach().requires_grad_(True)
        layers, logits = fwd.hidden_fn(sub, slice(0, sub.shape[0]))  # one pass, first rows
        return layers, logits, sub

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        """The layer weights lam_k from the base model's Jacobian norms on the first batch."""
        # projections drawn on the inputs' device (not on the CPU and copied every step)
        gen = norms._generator(seed, fwd.inputs.device if fwd.inputs is not None
                             else torch.device("cpu"))
        if self.layer_weights == "logits":
            return {"generator": gen, "lam": None, "base_norms": []}
        layers, _, sub = self._rows(fwd)
        j = torch.stack([self._norms(z, sub, gen, create_graph=False, hessian=False).mean()
                         .detach() for z in layers]).double().cpu()
        K = len(layers)
        lam = (torch.softmax(-j, 0) if self.layer_weights == "soft" else
               torch.softmax(j, 0) if self.layer_weights == "inverse" else
               torch.full((K,), 1.0 / K, dtype=torch.float64))
        # Python floats: read every step, never a tensor to copy back
        return {"generator": gen, "lam": lam.tolist(), "base_norms": j.tolist()}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        layers, logits, sub = self._rows(fwd)
        gen = state["generator"]
        if self.layer_weights == "logits":
            return self.weight * self._norms(logits, sub, gen, create_graph=True,
                                             hessian=True).mean()
        total: Any = 0.0  # a sum of tensors
        for lam, z in zip(state["lam"], layers, strict=True):
            total = total + lam * self._norms(z, sub, gen, create_graph=True, hessian=True).mean()
        return self.weight * total

    def report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        lam = state.get("lam")
        return {"lambda": None if lam is None else list(lam),
                "base_jacobian_norms": list(state.get("base_norms", []))}


@dataclass(frozen=True)
class CrossHolder(Method):
    """Cross-Hölder (Mustafa et al. 2020; JACHESS's baseline): ``lam * mean_batch (||J||_F +
    sum_d ||H_d||_F)`` of the logits w.r.t. the input embeddings, every logit dimension."""

    base_name = "cross-holder"
    quick = {"reg_batch": 4}
    needs_inputs = True
    double_backward = True
    lam: float = 1e-3
    n_proj: int = 1
    mode: Literal["train", "unlab"] = "train"
    reg_batch: int | None = None
    uses = frozenset({"hidden"})  # reg_batch's rows run in a pass of their own
    checks = {"lam": Float(0), "n_proj": Int(1), "mode": Choice("train", "unlab"),
              "reg_batch": Int(1, optional=True)}

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        return {"generator": torch.Generator().manual_seed(seed)}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None:
            raise InvalidArgument("Cross-Hölder needs Forward.inputs and Forward.fn")
        x, fn = fwd.inputs, fwd.fn
        if self.reg_batch is not None:  # the first rows only, in a pass of their own
            if fwd.hidden_fn is None:
                raise InvalidArgument("Cross-Hölder with reg_batch needs Forward.hidden_fn")
            rows = slice(0, self.reg_batch)
            x = fwd.inputs[rows].detach().requires_grad_(True)

            def fn(e):
                return fwd.hidden_fn(e, rows)[1]
        gen = state["generator"]
        jac = jacobian_frobenius(fn, x, n_proj=self.n_proj, seed=gen, create_graph=True,
                                 event_dims=2)
        c = fwd.logits.shape[-1]
        hess = hessian_frobenius(fn, x, dims=list(range(c)), n_proj=self.n_proj, seed=gen,
                                 create_graph=True)
        return self.lam * (jac + hess).mean()
