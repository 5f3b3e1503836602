"""The one rule by which every engine of ``boundbench.testing`` scores a bound's two sides (its
worst element's ``lhs / rhs``), apart so that the call observer and the decorator share it."""

from __future__ import annotations

from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.search.targeted import element_ratios


def worst_element(lhs: Any, rhs: Any) -> tuple[float, float, float]:
    """``(ratio, lhs, rhs)`` of the element with the largest ``lhs / rhs``: arrays (broadcast
    together) count their worst element; where ``rhs <= 0`` a positive ``lhs`` is ``inf``."""
    try:
        a, b = np.broadcast_arrays(np.asarray(lhs, dtype=np.float64),
                                   np.asarray(rhs, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"a bound must return two numbers or arrays (lhs, rhs) of one shape "
                              f"(got {type(lhs).__name__} and {type(rhs).__name__}: {exc})") from None
    a, b = a.ravel(), b.ravel()
    if a.size == 0:
        raise InvalidArgument("a bound must return non-empty lhs and rhs")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        bad, v = ("lhs", a) if not np.all(np.isfinite(a)) else ("rhs", b)
        first = float(v[~np.isfinite(v)][0])
        where = f" at element {int(np.flatnonzero(~np.isfinite(v))[0])}" if v.size > 1 else ""
        raise InvalidArgument(f"{bad} must be finite (got {first!r}{where})")
    r = element_ratios(a, b)
    i = int(np.argmax(r))
    return float(r[i]), float(a[i]), float(b[i])
