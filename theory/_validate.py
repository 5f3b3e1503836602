"""Input checks shared by every bound: each failure is a ValueError naming the parameter."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def as_array(name: str, x: ArrayLike) -> np.ndarray:
    """Float64 array of ``x``; rejects NaN and infinities."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric (got {type(x).__name__})") from exc
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite (got NaN or inf)")
    return a


def positive(name: str, x: ArrayLike) -> np.ndarray:
    a = as_array(name, x)
    if np.any(a <= 0):
        raise ValueError(f"{name} must be > 0 (got min {a.min():.6g})")
    return a


def nonnegative(name: str, x: ArrayLike) -> np.ndarray:
    a = as_array(name, x)
    if np.any(a < 0):
        raise ValueError(f"{name} must be >= 0 (got min {a.min():.6g})")
    return a


def in_interval(
    name: str, x: ArrayLike, lo: float, hi: float, *, closed_lo: bool, closed_hi: bool
) -> np.ndarray:
    a = as_array(name, x)
    ok_lo = a >= lo if closed_lo else a > lo
    ok_hi = a <= hi if closed_hi else a < hi
    if not np.all(ok_lo & ok_hi):
        interval = f"{'[' if closed_lo else '('}{lo:g}, {hi:g}{']' if closed_hi else ')'}"
        bad = a[~(ok_lo & ok_hi)].ravel()[0]
        raise ValueError(f"{name} must lie in {interval} (got {bad:.6g})")
    return a


def count(name: str, x: ArrayLike, *, minimum: int) -> np.ndarray:
    """Integer-valued array (sample counts, head counts) at least ``minimum``."""
    a = as_array(name, x)
    if np.any(a != np.round(a)):
        raise ValueError(f"{name} must be an integer (got {a[a != np.round(a)].ravel()[0]:g})")
    if np.any(a < minimum):
        raise ValueError(f"{name} must be >= {minimum} (got {a.min():g})")
    return a


def labels(name: str, y: ArrayLike, n_classes: int) -> np.ndarray:
    a = np.asarray(y)
    if not np.issubdtype(a.dtype, np.integer):
        if np.any(a != np.round(a)):
            raise ValueError(f"{name} must hold integer class indices")
        a = a.astype(np.int64)
    if np.any((a < 0) | (a >= n_classes)):
        raise ValueError(f"{name} must lie in [0, {n_classes - 1}] for {n_classes} classes")
    return a
