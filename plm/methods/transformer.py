"""Methods that need a transformer encoder: head tuning, dropout rates, MixOut, LNSR and SURT.

They implement the shared interface of :mod:`boundbench.methods`; their model changes
last one run (``with method.applied(model)``) and are undone on exit. The plm method list
(:mod:`boundbench.plm.methods`) lists them by name with JACHESS, Cross-Hölder and UEGR.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Float, Int
from boundbench.methods import Forward, Method


@dataclass(frozen=True)
class HeadTuning(Method):
    """Head tuning (Fu et al. Table 3): the encoder is frozen, only the linear head trains
    (the same as the trainer's ``head_only``, as a method so a grid can compare it)."""

    base_name = "head-tuning"
    uses = frozenset({"encoder"})

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        encoder = getattr(model, "encoder", None)
        if not isinstance(encoder, torch.nn.Module):
            raise InvalidArgument("head tuning needs a model with an .encoder to freeze")
        saved = {k: p.requires_grad for k, p in encoder.named_parameters()}
        encoder.requires_grad_(False)
        try:
            yield
        finally:
            for k, p in encoder.named_parameters():
                p.requires_grad_(saved[k])


@contextmanager
def dropout_rate(model: torch.nn.Module, p: float) -> Iterator[None]:
    """Every ``nn.Dropout`` of ``model`` at rate ``p`` inside the block, restored on exit (BERT's
    eager attention reads its rate from its module, so attention dropout follows too)."""
    mods = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    saved = [m.p for m in mods]
    for m in mods:
        m.p = p
    try:
        yield
    finally:
        for m, s in zip(mods, saved, strict=True):
            m.p = s


@dataclass(frozen=True)
class Dropout(Method):
    """Dropout with rate ``p`` on every ``nn.Dropout`` of the model, for the run."""

    base_name = "dropout"
    checks = {"p": Float(0, 1, hi_open=True)}
    p: float = 0.2

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        with dropout_rate(model, self.p):
            yield


class _MixoutParam(torch.nn.Module):
    """``mixout(w) = (M w + (1 - M) w0 - p w0) / (1 - p)``, ``M ~ Ber(1 - p)`` per entry, in
    training mode; ``w`` at evaluation. Unbiased: ``E mixout(w) = w``."""

    def __init__(self, w0: torch.Tensor, p: float) -> None:
        super().__init__()
        self.w0: torch.Tensor
        self.register_buffer("w0", w0.detach().clone())
        self.p = p

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return w
        keep = (torch.rand_like(w) >= self.p).to(w.dtype)
        return (keep * w + (1 - keep) * self.w0 - self.p * self.w0) / (1 - self.p)


@dataclass(frozen=True)
class MixOut(Method):
    """MixOut (Lee et al. 2019): during training every weight entry of the encoder's linear
    layers is swapped for its pre-trained value with probability ``p`` (and the result rescaled
    to stay unbiased). Installed with ``torch.nn.utils.parametrize`` for the run; on exit the
    parametrizations go and the trained weights stay."""

    base_name = "mixout"
    uses = frozenset({"encoder"})
    seeds_at_once_refused = ("its masks are drawn inside the forward from torch's generator, "
                             "which vmap cannot split by seed")
    checks = {"p": Float(0, 1, hi_open=True)}
    p: float = 0.1

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        from torch.nn.utils import parametrize

        root = getattr(model, "encoder", model)
        mods = [m for m in root.modules()
                if isinstance(m, torch.nn.Linear) and not parametrize.is_parametrized(m)]
        for mod in mods:
            parametrize.register_parametrization(mod, "weight", _MixoutParam(mod.weight, self.p))
        try:
            yield
        finally:
            for mod in mods:  # keep the trained weight, drop the mixing
                parametrize.remove_parametrizations(mod, "weight", leave_parametrized=False)


@dataclass(frozen=True)
class LNSR(Method):
    """LNSR (Hua et al. 2021): Gaussian noise ``N(0, sigma^2)`` on the input embeddings and a
    penalty ``weight * mean ||f(x + noise) - f(x)||^2`` on the change of the features (the
    encoder's pooled output)."""

    base_name = "lnsr"
    needs_inputs = True
    checks = {"sigma": Float(0), "weight": Float(0)}
    sigma: float = 0.01
    weight: float = 1.0

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        return {"generator": torch.Generator().manual_seed(seed)}

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor:
        if fwd.inputs is None or fwd.feature_fn is None:
            raise InvalidArgument("LNSR needs Forward.inputs and Forward.feature_fn")
        noise = torch.randn(fwd.inputs.shape, generator=state["generator"],
                            dtype=fwd.inputs.dtype)
        noisy = fwd.feature_fn(fwd.inputs + self.sigma * noise.to(fwd.inputs.device))
        # the batch mean per model (a batched trainer keeps its leading model axes)
        return self.weight * (noisy - fwd.features).pow(2).sum(-1).mean(-1)


@dataclass(frozen=True)
class SURT(Method):
    """SURT (Fu et al. §3.3): continue masked-LM training of the encoder on the task's own
    training texts (no labels), then fine-tune. The default offline MiniLM ships no pre-trained
    MLM head, so the head is freshly initialized with its decoder tied to the word embeddings.
    The first stage is :meth:`start_model` (:func:`boundbench.plm.methods.surt.continue_pretraining`),
    which the plm trainer calls before loading the model."""

    base_name = "surt"
    quick = {"steps": 30}  # a shorter first stage
    notes = {"mlm_head": "re-initialized, decoder tied to the word embeddings (the default "
             "model has no pre-trained MLM head)"}
    steps: int = 200
    lr: float = 5e-5
    mask_prob: float = 0.15
    batch_size: int = 16
    max_length: int = 128
    checks = {"steps": Int(0), "lr": Float(0, lo_open=True),
              "mask_prob": Float(0, 1, lo_open=True, hi_open=True), "batch_size": Int(1),
              "max_length": Int(2)}

    def start_model(self, model_name: str, train_texts: Sequence[str], *, seed: int,
                    device: str | torch.device | None = None) -> str:
        """The model fine-tuning starts from: ``model_name`` after continued MLM training, on
        ``device`` (the run's; None: CUDA when present)."""
        from boundbench.plm.methods.surt import continue_pretraining

        return continue_pretraining(model_name, list(train_texts), steps=self.steps, lr=self.lr,
                                    mask_prob=self.mask_prob, batch_size=self.batch_size,
                                    max_length=self.max_length, seed=seed, device=device)
