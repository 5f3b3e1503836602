"""Never invent a violation: re-evaluate a ``@bound``'s violating instance in high precision.

A bound written plainly in numpy can "fail" where float64 underflows or overflows (hypothesis
draws 1e-300 and subnormals): ``x**2`` of 1e-170 is 0 in float64, not 1e-340. Before a violation
is reported, :func:`recheck` calls the bound's own code again on the instance with every float an
mpmath number at 50 digits that numpy's ufuncs keep (:mod:`boundbench.testing._mpfloat`), or,
where the code leaves that path, with every float (the arrays' too) turned into
``numpy.longdouble`` (x87 extended precision on x86-64: a 64-bit significand and exponents to
1e+-4932; IEEE quad on aarch64), and compares the sides there. A violation that vanishes is a
floating-point artifact of the float64 code, reported with its instance, not a finding; code that
converts back to float64 (``float(x)``, ``math.sqrt``) in both cannot be rechecked, and the report
says the recheck was not conclusive.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

EXTREME = (1e-150, 1e150)  # floats outside this magnitude range are "extreme" (besides 0)


def _widen(x: Any) -> Any:
    """``x`` with every float (the arrays' too) a ``numpy.longdouble``."""
    from boundbench.testing._mpfloat import map_floats

    return map_floats(x, np.longdouble, lambda a: a.astype(np.longdouble))


def extreme_floats(x: Any) -> list[float]:
    """The floats of an instance outside :data:`EXTREME` in magnitude (subnormals included)."""
    out: list[float] = []

    def walk(v: Any) -> None:
        if isinstance(v, float | np.floating) and not isinstance(v, bool):
            a = abs(float(v))
            if a != 0 and math.isfinite(a) and not EXTREME[0] <= a <= EXTREME[1]:
                out.append(float(v))
        elif isinstance(v, np.ndarray) and v.dtype.kind == "f":
            a = np.abs(v[np.isfinite(v) & (v != 0)])
            out.extend(float(t) for t in a[(a < EXTREME[0]) | (a > EXTREME[1])][:3])
        elif isinstance(v, tuple | list):
            for t in v:
                walk(t)
        elif isinstance(v, dict):
            for t in v.values():
                walk(t)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                walk(getattr(v, f.name))

    walk(x)
    return out


def recheck(fn: Any, instance: Any, *, rtol: float, atol: float) -> dict[str, Any]:
    """The bound's sides on ``instance`` again in high precision: ``{"status": "confirmed" |
    "artifact" | "inconclusive", "precision", "lhs", "rhs", "extreme_floats"}``. First through
    the bound's own code at 50 digits (every float an mpmath number that numpy's ufuncs keep,
    :mod:`boundbench.testing._mpfloat`); where the code leaves that path (``math.sqrt``,
    ``float(x)``, scipy), in ``numpy.longdouble``. ``artifact``: float64 said violated, high
    precision says it holds."""
    mp = _recheck_mp(fn, instance, rtol=rtol, atol=atol)
    if mp is not None:
        return mp
    return _recheck_longdouble(fn, instance, rtol=rtol, atol=atol)


def _recheck_mp(fn: Any, instance: Any, *, rtol: float, atol: float) -> dict[str, Any] | None:
    """:func:`recheck` at 50 digits, or None where the code did not compute in mpmath."""
    import mpmath

    from boundbench.testing._mpfloat import DIGITS, values, widen

    with mpmath.workdps(DIGITS):
        try:
            got = fn(widen(instance))
            lhs, rhs = (values(t) for t in got)
        except Exception:  # noqa: BLE001 - code that does not take mpmath numbers
            return None
        if lhs is None or rhs is None or len(lhs) not in (1, len(rhs)) or \
                len(rhs) not in (1, len(lhs)):
            return None
        n = max(len(lhs), len(rhs))
        pairs = [(lhs[i if len(lhs) > 1 else 0], rhs[i if len(rhs) > 1 else 0]) for i in range(n)]
        excess = [a - ((b * (1 + mpmath.mpf(rtol)) if b >= 0 else b) + mpmath.mpf(atol))
                  for a, b in pairs]
        i = max(range(n), key=lambda j: excess[j])
        return {"precision": f"mpmath at {DIGITS} digits, through the bound's own code",
                "extreme_floats": extreme_floats(instance)[:5],
                "lhs": float(pairs[i][0]), "rhs": float(pairs[i][1]),
                "lhs_digits": mpmath.nstr(pairs[i][0], 30),
                "rhs_digits": mpmath.nstr(pairs[i][1], 30),
                "status": "confirmed" if excess[i] > 0 else "artifact"}


def _recheck_longdouble(fn: Any, instance: Any, *, rtol: float, atol: float) -> dict[str, Any]:
    info = np.finfo(np.longdouble)
    out: dict[str, Any] = {"precision": f"numpy.longdouble ({info.nmant + 1}-bit significand, "
                                        f"max {float(np.log10(info.max)):.0f} decades)",
                           "extreme_floats": extreme_floats(instance)[:5]}
    try:
        got = fn(_widen(instance))
        lhs, rhs = (np.asarray(t, dtype=np.longdouble) for t in got)
        lhs, rhs = np.broadcast_arrays(lhs, rhs)
    except Exception as exc:  # noqa: BLE001 - the user's code may not take longdouble
        return {**out, "status": "inconclusive",
                "why": f"the bound did not run on extended-precision inputs ({exc})"}
    if not (np.all(np.isfinite(lhs)) and np.all(np.isfinite(rhs))):
        return {**out, "status": "inconclusive", "why": "non-finite sides in extended precision"}
    allowed = np.where(rhs >= 0, rhs * (1 + np.longdouble(rtol)), rhs) + np.longdouble(atol)
    excess = lhs - allowed
    i = int(np.argmax(excess))
    widened = any(np.asarray(t).dtype == np.longdouble for t in got if hasattr(t, "dtype"))
    res = {**out, "lhs": float(lhs.ravel()[i]), "rhs": float(rhs.ravel()[i])}
    if excess.ravel()[i] > 0:
        return {**res, "status": "confirmed"}
    if not widened and np.longdouble is not np.float64:
        # the code returned float64: it did not compute in the wider type, nothing is shown
        return {**res, "status": "inconclusive",
                "why": "the bound's code returned float64 from extended-precision inputs"}
    return {**res, "status": "artifact"}
