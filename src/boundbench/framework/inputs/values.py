"""Checks a function's body makes on its values: :func:`real` (a float64 array, never a silent
cast), the magnitude rule (:data:`MAX_MAGNITUDE`), class labels, and the relations between two
arguments that one argument's spec cannot see (:func:`same_length`, :func:`broadcastable`).
Each failure is a ValueError naming the parameter; the declared specs of
:mod:`boundbench.framework.inputs.validate` call them."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from boundbench.errors import InvalidArgument

MAX_MAGNITUDE = 1e50
"""The largest magnitude a finite float64 input may have: a sixth power of it still fits in
float64, so the products and squares a bound forms stay finite; a larger value is refused by
name (``1e300`` is finite, but its square is not). A tensor of another precision gets the
same rule at its own range (:func:`max_magnitude`)."""


def is_integer(x: Any) -> bool:
    """An integer scalar (Python or numpy), not a bool."""
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def max_magnitude(dtype: Any = None) -> float:
    """:data:`MAX_MAGNITUDE`, or for a torch float type narrower than float64 the sixth root
    of its largest value (float32: 2.6e6); ``inf`` for float16, whose range is too short for a
    rule of that kind."""
    if dtype is None:
        return MAX_MAGNITUDE
    import torch

    if dtype == torch.float16:
        return float("inf")
    return min(MAX_MAGNITUDE, float(torch.finfo(dtype).max) ** (1 / 6))


def too_large(name: str, biggest: float, limit: float) -> ValueError:
    """The error for a value above the magnitude rule (:data:`MAX_MAGNITUDE`)."""
    return ValueError(f"{name} must have magnitude <= {limit:.3g} (got {biggest:.3g}): beyond "
                      "it the squares and products a bound forms overflow")


def real(name: str, x: Any, *, allow_empty: bool = False, finite: bool = True) -> np.ndarray:
    """``x`` as a float64 array of real numbers, or a ValueError naming ``name``: never a silent
    cast (a complex value's imaginary part, a boolean as 0/1, a numeric string), non-empty
    unless ``allow_empty``, finite unless ``finite=False``. For functions that convert their
    own array arguments (and for the ``Values`` spec)."""
    if hasattr(x, "detach") and hasattr(x, "is_complex"):  # a torch tensor
        if x.is_complex() or str(x.dtype) == "torch.bool":
            raise InvalidArgument(f"{name} must be real numbers (got a tensor of dtype {x.dtype})")
        x = x.detach().cpu().numpy()
    if isinstance(x, str | bytes):
        raise InvalidArgument(f"{name} must be numeric (got text {x!r:.40})")
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{name} must be numeric (got {type(x).__name__})") from exc
    if raw.dtype.kind == "c" or (raw.dtype.kind == "O" and any(
            isinstance(v, complex | np.complexfloating) for v in raw.ravel())):
        raise InvalidArgument(f"{name} must be real numbers (got complex values; take .real or "
                              "abs() first if that is what you mean)")
    if raw.dtype.kind == "b" or (raw.dtype.kind == "O" and any(
            isinstance(v, bool | np.bool_) for v in raw.ravel())):
        raise InvalidArgument(f"{name} must be numbers, not booleans")
    if raw.dtype.kind in "USV":
        raise InvalidArgument(f"{name} must be numeric (got text {raw.ravel()[:1].tolist()})")
    if raw.size == 0 and not allow_empty:
        raise InvalidArgument(f"{name} must not be empty (got shape {raw.shape})")
    try:
        a = raw.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"{name} must be numeric (got {type(x).__name__})") from exc
    if finite and not np.all(np.isfinite(a)):
        raise InvalidArgument(f"{name} must be finite (got NaN or inf)")
    if finite and a.size and np.max(np.abs(a)) > MAX_MAGNITUDE:
        raise too_large(name, float(np.max(np.abs(a))), MAX_MAGNITUDE)
    return a


def in_interval(
    name: str, x: ArrayLike, lo: float, hi: float, *, closed_lo: bool, closed_hi: bool
) -> np.ndarray:
    """:func:`real` of ``x``, every element inside the interval from ``lo`` to ``hi``."""
    a = real(name, x)
    ok_lo = a >= lo if closed_lo else a > lo
    ok_hi = a <= hi if closed_hi else a < hi
    if not np.all(ok_lo & ok_hi):
        interval = f"{'[' if closed_lo else '('}{lo:g}, {hi:g}{']' if closed_hi else ')'}"
        bad = a[~(ok_lo & ok_hi)].ravel()[0]
        raise InvalidArgument(f"{name} must lie in {interval} (got {bad:.6g})")
    return a


def integers(name: str, x: ArrayLike, *, minimum: int | None) -> np.ndarray:
    """Integer-valued array (sample counts, head counts) at least ``minimum``."""
    a = real(name, x)
    if np.any(a != np.round(a)):
        raise InvalidArgument(f"{name} must be an integer (got {a[a != np.round(a)].ravel()[0]:g})")
    if minimum is not None and np.any(a < minimum):
        raise InvalidArgument(f"{name} must be >= {minimum} (got {a.min():g})")
    return a


# ---------------------------------------------------------------- relations between arguments
#
# What one argument's spec cannot see: labels against the logits' class count, shapes that must
# broadcast together. A function calls these in its body, after its specs have run.


def labels(name: str, y: ArrayLike, n_classes: int) -> np.ndarray:
    a = np.asarray(y)
    if a.size == 0:  # an empty y broadcast against the logits gave an empty result, silently
        raise InvalidArgument(f"{name} must not be empty (got shape {a.shape})")
    if a.dtype.kind in "bc" or a.dtype.kind in "USVO":
        raise InvalidArgument(f"{name} must hold integer class indices (got dtype {a.dtype})")
    if not np.issubdtype(a.dtype, np.integer):
        if np.any(a != np.round(a)):
            raise InvalidArgument(f"{name} must hold integer class indices")
        a = a.astype(np.int64)
    if np.any((a < 0) | (a >= n_classes)):
        raise InvalidArgument(f"{name} must lie in [0, {n_classes - 1}] for {n_classes} classes")
    return a


def same_length(axis: int = 0, **arrays: Any) -> None:
    """``ValueError`` naming the arguments whose lengths along ``axis`` differ (one row per
    sample, one value per set: ``X`` and ``y``, two paired levels)."""
    shapes = {k: np.shape(a) for k, a in arrays.items()}
    lengths = {k: s[axis] if -len(s) <= axis < len(s) else None for k, s in shapes.items()}
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{k} {s}" for k, s in shapes.items())
        raise InvalidArgument(f"{' and '.join(shapes)} must have the same length along axis {axis} "
                              f"(got {said})")


def broadcastable(**arrays: Any) -> None:
    """``ValueError`` naming the arguments whose shapes do not broadcast together."""
    try:
        np.broadcast_shapes(*(np.shape(a) for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(a)}" for k, a in arrays.items())
        raise InvalidArgument(f"shapes do not broadcast: {shapes}") from None
