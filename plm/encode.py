"""Tokenization once per task, padded batches, and batched inference of a classifier on texts
(logits or pooled features, in evaluation mode)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Int, IntLists, Rng, as_generator, checked

_TOKENS: OrderedDict[tuple, list[list[int]]] = OrderedDict()


def token_ids(tok, texts: list[str], *, max_length: int) -> list[list[int]]:
    """Each text's token ids (truncated to ``max_length``, unpadded), tokenized once per
    tokenizer, length and text list in this process (a grid's seeds and methods share it)."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    key = (getattr(tok, "name_or_path", id(tok)), type(tok).__name__, max_length, digest)
    if key not in _TOKENS:
        _TOKENS[key] = tok(texts, truncation=True, max_length=max_length)["input_ids"]
        while len(_TOKENS) > 8:  # a few tasks at a time
            _TOKENS.popitem(last=False)
    _TOKENS.move_to_end(key)
    return _TOKENS[key]


@checked(ids=IntLists(), pad_id=Int(0))
def pad_batch(ids: list[list[int]], *, pad_id: int, device=None,
              width: int | None = None) -> dict[str, torch.Tensor]:
    """``input_ids`` and ``attention_mask`` of a batch, padded on the right to its longest (or
    to ``width``, at least that)."""
    width = max(len(t) for t in ids) if width is None else width
    out = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for r, t in enumerate(ids):
        out[r, :len(t)] = torch.as_tensor(t)
        mask[r, :len(t)] = 1
    return {"input_ids": out.to(device), "attention_mask": mask.to(device)}


@checked(lengths=Array(ndim=1), batch_size=Int(1), group=Int(1), rng=Rng())
def length_grouped_batches(lengths: np.ndarray, *, batch_size: int, group: int,
                           rng: np.random.Generator | int) -> list[np.ndarray]:
    """One epoch of batches: a random permutation cut into chunks of ``group`` batches, each
    chunk sorted by length (less padding), the batches in random order. ``group <= 1``: plain
    random batches. The chunks are drawn afresh each epoch, so batch composition stays random
    across epochs and seeds."""
    rng = as_generator(rng)
    n = len(lengths)
    order = rng.permutation(n)
    if group > 1:
        size = group * batch_size
        order = np.concatenate([c[np.argsort(-lengths[c], kind="stable")]
                                for c in (order[i:i + size] for i in range(0, n, size))])
    batches = [order[i:i + batch_size] for i in range(0, n, batch_size)]
    if group > 1:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def sorted_batches(tok, texts: list[str], *, max_length: int, batch_size: int = 64, device=None):
    """``(positions, batch)`` pairs over ``texts`` sorted by token length (little padding), from
    the tokenization cache; ``positions`` are the batch rows' indices into ``texts``."""
    ids = token_ids(tok, list(texts), max_length=max_length)
    order = np.argsort([len(t) for t in ids], kind="stable")
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    for s in range(0, len(order), batch_size):
        rows = order[s:s + batch_size]
        yield rows, pad_batch([ids[i] for i in rows], pad_id=pad, device=device)


@torch.no_grad()
def forward_all(model, tok, texts: list[str], *, max_length: int, device, batch_size: int = 64,
                hidden: bool = False) -> dict[str, Any]:
    """One evaluation-mode pass over ``texts`` (length-sorted batches, results in the texts'
    order, on the CPU): ``logits``, pooled ``features`` and, with ``hidden``, the pooled output
    of the embedding layer and of every block (``hidden``, a list)."""
    model.eval()
    parts: dict[str, list] = {"logits": [], "features": [], "hidden": [], "rows": []}
    for rows, b in sorted_batches(tok, texts, max_length=max_length, batch_size=batch_size,
                                  device=device):
        out = model(b["input_ids"], b["attention_mask"], hidden_states=hidden)
        parts["rows"].append(torch.as_tensor(rows))
        parts["logits"].append(out.logits.float().cpu())
        parts["features"].append(out.features.float().cpu())
        if hidden:
            parts["hidden"].append([model.pool(h, b["attention_mask"]).float().cpu()
                                    for h in out.hidden])
    back = torch.argsort(torch.cat(parts["rows"]))  # sorted position -> text order
    res: dict = {k: torch.cat(parts[k])[back] for k in ("logits", "features")}
    if hidden:
        res["hidden"] = [torch.cat(layer)[back] for layer in zip(*parts["hidden"], strict=True)]
    return res


def forward_texts(model, tok, texts: list[str], *, max_length: int, device,
                  batch_size: int = 64, field: str = "logits") -> torch.Tensor:
    """``Forward.<field>`` (``logits`` or ``features``) of ``texts`` in evaluation mode, on the
    CPU (:func:`forward_all`)."""
    if field not in ("logits", "features"):
        raise InvalidArgument(f"field must be 'logits' or 'features' (got {field!r})")
    out = forward_all(model, tok, texts, max_length=max_length, device=device,
                      batch_size=batch_size)[field]
    assert isinstance(out, torch.Tensor)  # logits and features are tensors, hidden is a list
    return out


def encode(model, tok, texts: list[str], *, max_length: int = 128, batch_size: int = 64,
           device: str | torch.device | None = None) -> np.ndarray:
    """Pooled features ``(n, hidden)`` of ``texts`` (the head's input), in float64, returned on
    the CPU. The batches go to ``device``, by default the model's own: move the model to the GPU
    and encoding runs there."""
    if device is None:
        device = next(model.parameters()).device
    return forward_texts(model, tok, texts, max_length=max_length, device=device,
                         batch_size=batch_size, field="features").double().numpy()
