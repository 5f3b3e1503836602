"""The boxes of an assumption space: a claim's space maps each parameter name to ``(lo, hi)`` or
``(lo, hi, axis)`` with axis ``"lin"``, ``"log"`` or ``"int"``; a point of the unit cube names one
instance of the box. The search draws in the cube and the interval proofs split it, and both
read their points back through :func:`decode_box` (here, below both, so that neither imports
the other)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


def decode_box(space: Mapping[str, tuple], u: np.ndarray) -> dict[str, Any]:
    """Parameters of the box ``space`` from points ``u`` of the unit cube (last axis: one entry
    per name): log axes geometric, integer axes floored (the search's
    :meth:`~boundbench.framework.search.targeted.Search.decode` and the interval proofs' boxes,
    :mod:`boundbench.framework.certificates.proofs`).

    Parameters
    ----------
    space : Mapping[str, tuple]
        Per name ``(lo, hi)`` or ``(lo, hi, axis)``.
    u : numpy.ndarray
        Points of the unit cube, one column per name (clipped onto the cube).

    Examples
    --------
    >>> import numpy as np
    >>> decode_box({"n": (1, 4, "int"), "s": (1.0, 100.0, "log")}, np.array([0.75, 0.0]))
    {'n': np.int64(3), 's': np.float64(1.0)}
    """
    out: dict[str, Any] = {}
    for j, (name, spec) in enumerate(space.items()):
        lo, hi = float(spec[0]), float(spec[1])
        axis = spec[2] if len(spec) == 3 else "lin"
        x = np.clip(u[..., j], 0.0, 1.0)
        if axis == "log":
            out[name] = np.exp(np.log(lo) + x * (np.log(hi) - np.log(lo)))
        elif axis == "int":
            out[name] = np.floor(lo + x * (hi - lo + 1 - 1e-9)).astype(int)
        else:
            out[name] = lo + x * (hi - lo)
    return out
