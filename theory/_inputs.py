"""Input checks the theory functions on tensors share (the array ones are declarative, in
:mod:`boundbench.framework.validate`)."""

from __future__ import annotations

from typing import Any

import torch

from boundbench.framework.values import MAX_MAGNITUDE


def real_tensor(name: str, value: Any, ndim: int) -> torch.Tensor:
    """``value`` as a finite, non-empty float64 tensor of ``ndim`` axes, or a ValueError naming
    ``name`` (no silent cast of complex or boolean input)."""
    if isinstance(value, str | bytes) or value is None:
        raise ValueError(f"{name} must be a real {ndim}-D array (got {type(value).__name__})")
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{name} must be a real {ndim}-D array ({err})") from None
    if t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} must be real-valued (got dtype {t.dtype})")
    if t.ndim != ndim or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array (got shape {tuple(t.shape)})")
    t = t.to(torch.float64)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite (got NaN or inf)")
    if float(t.abs().max()) > MAX_MAGNITUDE:
        raise ValueError(f"{name} must have magnitude <= {MAX_MAGNITUDE:g} (got "
                         f"{float(t.abs().max()):.3g}): beyond it the Hessian's products overflow")
    return t
