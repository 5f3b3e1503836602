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
from collections.abc import Mapping
from typing import Any

import numpy as np

from boundbench.testing._observe import timed

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


TINY = float(np.finfo(np.float64).tiny)  # the smallest normal float64


def unconfirmed(chk: dict[str, Any], lhs: float, rhs: float) -> bool:
    """A float64 violation that cannot stand: the recheck could not run in high precision
    (``inconclusive``: the code leaves numpy's ufuncs) and float64 was out of its depth there
    (a side subnormal, a difference below the smallest normal float, or extreme floats in the
    instance, or it holds a few units in the last place away, :func:`holds_nearby`):
    ``lhs = 5e-324 > rhs = 0`` from an underflow is not a finding."""
    if chk.get("status") != "inconclusive":
        return False
    if chk.get("holds_nearby"):  # it holds a few ulps away: float64's rounding at a tie
        return True
    sub = any(0 < abs(v) < TINY for v in (lhs, rhs))
    return sub or abs(lhs - rhs) < TINY or bool(chk.get("extreme_floats"))


def high_precision_ratio(fn: Any, instance: Any, *, atol: float = 0.0) -> dict[str, Any]:
    """The instance's worst ``lhs / rhs`` recomputed by the bound's own code at 50 digits (or
    in ``numpy.longdouble`` where the code computed in it), under the search's rule
    (:func:`boundbench.framework.search.targeted.worst_ratio`): ``{"rechecked": True, "ratio", "lhs",
    "rhs", "precision"}``, or ``{"rechecked": False, "why"}`` where the code leaves that path
    (its float64 value is then all there is)."""
    import mpmath

    from boundbench.testing._mpfloat import DIGITS

    with mpmath.workdps(DIGITS):
        try:
            pairs = _mp_pairs(fn, instance)
        except _LeftMp:
            return {"rechecked": False, "why": _LEFT_WHY}
        if pairs is not None:
            ratios = [_mp_ratio(a, b, atol) for a, b in pairs]
            i = max(range(len(pairs)), key=lambda j: ratios[j])
            return {"rechecked": True, "ratio": float(ratios[i]), "lhs": float(pairs[i][0]),
                    "rhs": float(pairs[i][1]), "ratio_digits": mpmath.nstr(ratios[i], 15),
                    "precision": f"mpmath at {DIGITS} digits, through the bound's own code"}
    try:
        got = timed(fn, instance, _widen(instance))
        a, b = (np.asarray(t, dtype=np.longdouble) for t in got)
        widened = any(np.asarray(t).dtype == np.longdouble for t in got if hasattr(t, "dtype"))
    except Exception as exc:  # noqa: BLE001 - the user's code may not take longdouble
        return {"rechecked": False, "why": f"the bound did not run in high precision ({exc})"}
    if not widened or np.longdouble is np.float64:
        return {"rechecked": False, "why": "the bound's code leaves numpy's ufuncs (float(), "
                "math.*): it computes in float64 whatever it is given"}
    a, b = (t.ravel() for t in np.broadcast_arrays(a, b))
    if not a.size or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return {"rechecked": False, "why": "non-finite sides in extended precision"}
    # the search's rule, in longdouble itself (through float() the extra bits were lost)
    beyond = a - b > np.longdouble(atol) + np.longdouble(1e-9) * np.maximum(abs(a), abs(b))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(b > 0, a / np.where(b > 0, b, 1), np.where(beyond, np.inf, 0))
    r = np.where(beyond | (b <= 0), r, np.minimum(r, 1))
    i = int(np.argmax(r))
    return {"rechecked": True, "ratio": float(r[i]), "lhs": float(a[i]), "rhs": float(b[i]),
            "precision": "numpy.longdouble, through the bound's own code"}


def _mp_pairs(fn: Any, instance: Any) -> list[tuple[Any, Any]] | None:
    """The bound's sides on ``instance`` through its own code with every float an mpmath
    number (at the caller's working precision), element by element, broadcast; None where the
    code did not return mpmath numbers; :class:`_LeftMp` raised where it converted an input to
    float on the way."""
    from boundbench.testing._mpfloat import ESCAPES, math_lifted, values, widen

    before = ESCAPES[0]
    try:
        with math_lifted():  # math.log(x) of a high-precision x at 50 digits too
            lhs, rhs = (values(t) for t in timed(fn, instance, widen(instance)))
    except Exception:  # noqa: BLE001 - code that does not take mpmath numbers
        return None
    if ESCAPES[0] != before:
        raise _LeftMp  # it converted an input to float on the way: float64's digits again
    if lhs is None or rhs is None or len(lhs) not in (1, len(rhs)) or \
            len(rhs) not in (1, len(lhs)):
        return None
    n = max(len(lhs), len(rhs))
    return [(lhs[i if len(lhs) > 1 else 0], rhs[i if len(rhs) > 1 else 0]) for i in range(n)]


class _LeftMp(Exception):
    """The bound's code converted a high-precision input to float (``math.*``, ``float()``): it
    computes in float64 whatever it is given, ``numpy.longdouble`` included."""


_LEFT_WHY = ("the bound's code converts its inputs to float (math.*, float()): it computes in "
             "float64 whatever it is given")


def _mp_ratio(lhs: Any, rhs: Any, atol: float) -> Any:
    """:func:`boundbench.framework.search.targeted.worst_ratio`'s rule on one high-precision pair: the
    ratio where ``rhs > 0`` (above 1 only beyond 1e-9 relative and ``atol``), ``inf`` where
    ``rhs <= 0`` and ``lhs`` exceeds it beyond that, else 0."""
    import mpmath

    beyond = lhs - rhs > atol + mpmath.mpf("1e-9") * max(abs(lhs), abs(rhs))
    if rhs > 0:
        r = lhs / rhs
        return r if beyond else min(r, mpmath.mpf(1))
    return mpmath.inf if beyond else mpmath.mpf(0)


def recheck(fn: Any, instance: Any, *, rtol: float, atol: float,
            space: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The bound's sides on ``instance`` again in high precision: ``{"status": "confirmed" |
    "artifact" | "inconclusive", "precision", "lhs", "rhs", "extreme_floats"}``. First through
    the bound's own code at 50 digits (every float an mpmath number that numpy's ufuncs keep,
    :mod:`boundbench.testing._mpfloat`); where the code leaves that path (``math.sqrt``,
    ``float(x)``, scipy), in ``numpy.longdouble``; where it converts its inputs to float, in
    neither. ``artifact``: float64 said violated, high precision says it holds. Where it is
    ``inconclusive``, ``holds_nearby`` is :func:`holds_nearby`'s answer (``space``: the box its
    moves stay in)."""
    mp: dict[str, Any] | None
    try:
        mp = _recheck_mp(fn, instance, rtol=rtol, atol=atol)
    except _LeftMp:
        mp = {"precision": "float64 only", "status": "inconclusive", "why": _LEFT_WHY,
              "extreme_floats": extreme_floats(instance)[:5]}
    out: dict[str, Any] = (mp if mp is not None
                           else _recheck_longdouble(fn, instance, rtol=rtol, atol=atol))
    if out["status"] == "inconclusive":
        out["holds_nearby"] = holds_nearby(fn, instance, rtol=rtol, atol=atol, space=space)
    return out


ULP_DRAWS = 8  # instances a violation float64 alone computes is re-evaluated on
ULP_MOVE = 4  # each float moved by up to this many units in its last place
ULP_SEED = 81  # the moves' fixed seed: the same instances on every machine


def holds_nearby(fn: Any, instance: Any, *, rtol: float, atol: float,
                 space: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Where the recheck cannot run in high precision, the violation re-evaluated on
    :data:`ULP_DRAWS` instances with each float of ``instance`` moved by up to
    :data:`ULP_MOVE` units in the last place (drawn from :data:`ULP_SEED`; kept inside
    ``space``'s box where one is declared): a violation that is float64's rounding at an exact
    tie holds at some of them, and is not a finding (``np.var`` of six equal values is 1.2e-32
    against a range of 0; moved 4 ulps, 8 of 8 hold). One that holds at none stays a float64
    violation, said so. The idea of stochastic arithmetic (J. Vignes, CESTAC, 1993) applied
    to the inputs, not to each operation. The first instance where the bound holds, with its
    sides, or None (none held, or the instance has no float to move)."""
    if not isinstance(instance, dict):
        return None
    keys = [k for k, v in instance.items() if isinstance(v, (float, np.floating))
            and math.isfinite(float(v))]
    if not keys:
        return None
    rng = np.random.default_rng(ULP_SEED)
    for _ in range(ULP_DRAWS):
        moved = dict(instance)
        for k in keys:
            v = float(instance[k])
            w = v + int(rng.integers(-ULP_MOVE, ULP_MOVE + 1)) * float(np.spacing(abs(v)))
            if space is not None and k in space:
                w = min(max(w, float(space[k][0])), float(space[k][1]))
            moved[k] = type(instance[k])(w)
        try:
            lhs, rhs = np.broadcast_arrays(*(np.asarray(t, dtype=np.float64)
                                             for t in timed(fn, moved)))
        except Exception:  # noqa: BLE001 - the user's code, off its instance: no evidence
            continue
        allowed = np.where(rhs >= 0, rhs * (1 + rtol), rhs) + atol
        if lhs.size and np.all(np.isfinite(lhs)) and np.all(lhs <= allowed):
            return {"instance": moved, "lhs": float(np.max(lhs)), "rhs": float(np.min(rhs))}
    return None


def _recheck_mp(fn: Any, instance: Any, *, rtol: float, atol: float) -> dict[str, Any] | None:
    """:func:`recheck` at 50 digits, or None where the code did not compute in mpmath."""
    import mpmath

    from boundbench.testing._mpfloat import DIGITS

    with mpmath.workdps(DIGITS):
        pairs = _mp_pairs(fn, instance)
        if pairs is None:
            return None
        n = len(pairs)
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
        got = timed(fn, instance, _widen(instance))
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
    if not widened and np.longdouble is not np.float64:
        # the code returned float64 (float(), math.*): it did not compute in the wider type,
        # so its answer, either way, is float64's again; checked before the comparison, or a
        # float64 underflow would read "confirmed at numpy.longdouble"
        return {**res, "status": "inconclusive",
                "why": "the bound's code returned float64 from extended-precision inputs"}
    return {**res, "status": "confirmed" if excess.ravel()[i] > 0 else "artifact"}
