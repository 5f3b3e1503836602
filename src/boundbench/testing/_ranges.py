"""The ranges every strategy takes, ``(low, high)`` tuples checked by name, and the seeds an
instance is drawn from."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from boundbench.errors import InvalidArgument

SEEDS = st.integers(0, 2**32 - 1)


def floats_in(rng: tuple[float, float], name: str) -> st.SearchStrategy[float]:
    lo, hi = float(rng[0]), float(rng[1])
    if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
        raise InvalidArgument(f"{name} must be a (low, high) range with finite low <= high (got {rng})")
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def ints_in(rng: tuple[int, int], name: str, minimum: int) -> st.SearchStrategy[int]:
    lo, hi = rng
    if not (isinstance(lo, int) and isinstance(hi, int) and minimum <= lo <= hi):
        raise InvalidArgument(f"{name} must be a (low, high) range of integers with {minimum} <= low "
                              f"<= high (got {rng})")
    return st.integers(lo, hi)


def array_repr(a: np.ndarray) -> str:
    return f"array(shape={a.shape})"
