"""Seeded dropout (issue 66): a seed's dropout masks drawn before each step from a generator of
its own, seeded by (seed, step), in place of torch's global generator, whose draws under
:func:`torch.func.vmap` would follow the seeds beside it. Every ``torch.nn.Dropout`` of an
encoder becomes a :class:`SeededDropout` on a hidden state and every self-attention's
probabilities go through :func:`seeded_attention` (transformers' attention interface); the step
sets the masks (:class:`Stream`) and the dropout sites read them."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from boundbench.plm.models import PACKED_ATTENTION, EncoderClassifier, Packing

ATTENTION = "boundbench_seeded"


class Stream:
    """The running step's dropout masks, site -> keep mask (batched inside :func:`vmap`, one
    per seed; set by the batched step, read by the dropout sites)."""

    masks: dict[int, torch.Tensor] | None = None


def step_generator(seed: int, step: int, device: torch.device) -> torch.Generator:
    """The generator of a seed's dropout masks at ``step``, seeded from (seed, step) alone
    (numpy's SeedSequence mixes the pair: nearby seeds and steps give unrelated streams)."""
    state = np.random.SeedSequence([seed, step]).generate_state(2, dtype=np.uint32)
    return torch.Generator(device=device).manual_seed(int(state[0]) << 32 | int(state[1]))


def site_masks(sites: list[tuple[int, float, str]], *, seed: int, step: int, rows: int,
               width: int, hidden: int, heads: int, device: torch.device
               ) -> dict[int, torch.Tensor]:
    """One seed's keep masks of every dropout site at ``step``, drawn in site order from
    :func:`step_generator`: ``(rows, width, hidden)`` for a hidden state's, ``(rows, heads,
    width, width)`` for the attention probabilities'. A seed's masks depend on its seed, step
    and batch shape alone."""
    gen = step_generator(seed, step, device)
    out = {}
    for site, p, kind in sites:
        shape = (rows, width, hidden) if kind == "hidden" else (rows, heads, width, width)
        out[site] = torch.rand(shape, generator=gen, device=device) >= p
    return out


def _drop(x: torch.Tensor, p: float, site: int) -> torch.Tensor:
    if Stream.masks is None:
        raise RuntimeError("a seeded dropout outside a batched step (no masks set)")
    keep = Stream.masks[site]
    return torch.where(keep, x / (1.0 - p), torch.zeros((), dtype=x.dtype, device=x.device))


class SeededDropout(torch.nn.Module):
    """``torch.nn.Dropout`` whose mask is the step's, drawn for its site beforehand
    (:func:`site_masks`)."""

    def __init__(self, p: float, site: int) -> None:
        super().__init__()
        self.p, self.site = float(p), site

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _drop(x, self.p, self.site) if self.training and self.p > 0 else x


def seeded_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                     value: torch.Tensor, attention_mask: torch.Tensor | None,
                     scaling: float | None = None, dropout: float = 0.0, **kwargs: Any):
    """transformers' eager attention (``eager_attention_forward``) with the attention dropout's
    mask the step's, drawn for the module's site beforehand. With a ``packing``
    (:class:`~boundbench.plm.models.Packing`, a padding-free batch) it attends on the padded
    grid, each text to itself, its mask the packing's, and returns the real tokens' outputs."""
    packing: Packing | None = kwargs.get("packing")
    if packing is not None:  # (1, heads, T, d) -> (rows, heads, width, d)
        query, key, value = (packing.unpack(t.transpose(1, 2)).transpose(1, 2)
                             for t in (query, key, value))
        attention_mask = packing.additive
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1)
    if module.training and dropout > 0:
        weights = _drop(weights, dropout, _site(module))
    out = torch.matmul(weights, value).transpose(1, 2)
    return (out if packing is None else packing.pack(out)).contiguous(), weights


def _site(module: torch.nn.Module) -> int:
    site: Any = module.__dict__["_seeded_site"]  # set by seeded(), a plain int attribute
    return int(site)


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION, seeded_attention)
    PACKED_ATTENTION.add(ATTENTION)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


def seeded(model: EncoderClassifier) -> list[tuple[int, float, str]]:
    """Seed ``model``'s dropouts in place: every ``torch.nn.Dropout`` of its encoder a
    :class:`SeededDropout` on a hidden state, every self-attention's probabilities through
    :func:`seeded_attention`; the sites ``(site, p, "hidden" | "attention")`` in module
    order (a dropout of rate 0 has none)."""
    _register()
    sites: list[tuple[int, float, str]] = []
    for module in list(model.encoder.modules()):
        if hasattr(module, "is_causal") and hasattr(module, "dropout"):  # a self-attention
            module._seeded_site = len(sites) + 1
            sites.append((len(sites) + 1, float(module.dropout.p), "attention"))
            continue  # its dropout module is read for its rate only (transformers' eager)
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Dropout):
                sites.append((len(sites) + 1, float(child.p), "hidden"))
                setattr(module, name, SeededDropout(child.p, len(sites)))
    model.encoder.set_attn_implementation(ATTENTION)
    return [x for x in sites if x[1] > 0]
