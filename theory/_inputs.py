"""Input checks the theory functions on tensors share (the array ones are declarative, in
:mod:`boundbench.framework.inputs.validate`), and the two argument specs only the estimators use: a
seed or a ``torch.Generator`` (:class:`TorchSeed`), a count or list of dimensions
(:class:`Dims`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.limits import allocation_failure
from boundbench.framework.inputs.validate import DRAWS_WHY, MAX_DRAWS, Int, Seed, Spec
from boundbench.framework.inputs.values import MAX_MAGNITUDE, is_integer


def call_naming(fn: Callable[..., Any], *args: Any, failed: str) -> Any:
    """``fn(*args)``, where torch's error inside a user's function or model (an input of the
    wrong width or dtype: "mat1 and mat2 shapes cannot be multiplied") is a ValueError opening
    with ``failed``, which names the input (issue 65). An allocation failure passes on, for
    :func:`~boundbench.framework.inputs.validate.checked`'s size rule to name the sizes."""
    try:
        return fn(*args)
    except RuntimeError as exc:
        if allocation_failure(exc):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgument(f"{failed}: {first}") from None


def real_tensor(name: str, value: Any, ndim: int) -> torch.Tensor:
    """``value`` as a finite, non-empty float64 tensor of ``ndim`` axes, or a ValueError naming
    ``name`` (no silent cast of complex or boolean input)."""
    if isinstance(value, str | bytes) or value is None:
        raise InvalidArgument(f"{name} must be a real {ndim}-D array (got {type(value).__name__})")
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise InvalidArgument(f"{name} must be a real {ndim}-D array ({err})") from None
    if t.is_complex() or t.dtype == torch.bool:
        raise InvalidArgument(f"{name} must be real-valued (got dtype {t.dtype})")
    if t.ndim != ndim or t.numel() == 0:
        raise InvalidArgument(f"{name} must be a non-empty {ndim}-D array (got shape {tuple(t.shape)})")
    t = t.to(torch.float64)
    if not torch.isfinite(t).all():
        raise InvalidArgument(f"{name} must be finite (got NaN or inf)")
    if float(t.abs().max()) > MAX_MAGNITUDE:
        raise InvalidArgument(f"{name} must have magnitude <= {MAX_MAGNITUDE:g} (got "
                              f"{float(t.abs().max()):.3g}): beyond it the Hessian's products overflow")
    return t


class TorchSeed(Seed):
    """An integer seed >= 0 or a ``torch.Generator``."""

    def __call__(self, name: str, value: Any) -> Any:
        if isinstance(value, torch.Generator):
            return value
        return super().__call__(name, value)


class Dims(Spec):
    """A count >= 1, or a non-empty list of indices >= 0."""

    def __call__(self, name: str, value: Any) -> Any:
        if is_integer(value):
            return Int(1, MAX_DRAWS, why=DRAWS_WHY)(name, value)
        if isinstance(value, list | tuple) and value and all(is_integer(v) and v >= 0
                                                             for v in value):
            return list(value)
        raise InvalidArgument(f"{name} must be a count >= 1 or a list of indices >= 0 (got {value!r})")
