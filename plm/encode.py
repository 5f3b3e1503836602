"""Batched inference of a classifier on texts: logits or pooled features, in evaluation mode."""

from __future__ import annotations

import numpy as np
import torch


@torch.no_grad()
def forward_texts(model, tok, texts: list[str], *, max_length: int, device,
                  batch_size: int = 64, field: str = "logits") -> torch.Tensor:
    """``Forward.<field>`` (``logits`` or ``features``) of ``texts`` in evaluation mode, on the
    CPU, batch by batch."""
    if field not in ("logits", "features"):
        raise ValueError(f"field must be 'logits' or 'features' (got {field!r})")
    model.eval()
    out = []
    for s in range(0, len(texts), batch_size):
        b = tok(texts[s:s + batch_size], padding=True, truncation=True, max_length=max_length,
                return_tensors="pt").to(device)
        out.append(getattr(model(b["input_ids"], b["attention_mask"]), field).float().cpu())
    return torch.cat(out)


def encode(model, tok, texts: list[str], *, max_length: int = 128, batch_size: int = 64,
           device: str | torch.device = "cpu") -> np.ndarray:
    """Pooled features ``(n, hidden)`` of ``texts`` (the head's input), in float64."""
    return forward_texts(model, tok, texts, max_length=max_length, device=device,
                         batch_size=batch_size, field="features").double().numpy()
