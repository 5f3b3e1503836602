"""A float that computes at 50 digits through numpy: how a ``@bound`` written in numpy on floats
is re-evaluated in high precision by its own code (:func:`boundbench.testing._precision.recheck`).

numpy applies a ufunc to an object scalar or an object array by calling the method of the same
name (``np.exp(x)`` is ``x.exp()``, ``np.sqrt(x)`` is ``x.sqrt()``) and the arithmetic operators
for the rest. :class:`Mp` wraps an ``mpmath.mpf`` and provides both, so ``np.log(q * np.exp(lam))``
written for floats runs at the working precision of mpmath, every step. Code that leaves that
path (``math.sqrt``, ``float(x)``, scipy's special functions, a float64 array built from the
inputs) returns something that is not an :class:`Mp`, or converts one to float on the way
(counted in :data:`ESCAPES`): the recheck then says it could not re-evaluate in high
precision.

References
----------
F. Johansson et al., mpmath: a Python library for arbitrary-precision floating-point arithmetic
(version 1.3), https://mpmath.org. numpy's object-dtype ufunc loops (NEP 13's method lookup).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from boundbench.errors import ComputationError

DIGITS = 50  # significant digits of a high-precision re-evaluation
#: conversions of an :class:`Mp` to float (``math.log(x)``, ``float(x)``): a count that grows
#: while the bound runs means its code left mpmath, whatever type it returns (``a * math.log(b)``
#: is an Mp of a float64 logarithm)
ESCAPES = [0]

_UNARY = ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "log1p", "expm1",
          "log10", "log2", "cbrt")
_MP_NAMES = {"arctan": "atan", "arcsin": "asin", "arccos": "acos", "arctanh": "atanh",
             "arcsinh": "asinh", "arccosh": "acosh", "exp2": None}


class Mp:
    """An ``mpmath.mpf`` that numpy's ufuncs and Python's operators keep at high precision."""

    __slots__ = ("v",)
    __array_priority__ = 100  # Mp op float64 array: the array becomes objects, not Mp floats

    def __init__(self, v: Any) -> None:
        import mpmath

        self.v: Any = v.v if isinstance(v, Mp) else mpmath.mpf(v)

    # arithmetic: both operands lifted, results stay Mp
    def _op(self, o: Any, f: Any) -> Any:
        if isinstance(o, np.ndarray):
            return NotImplemented
        return Mp(f(self.v, _raw(o)))

    def __add__(self, o: Any) -> Any: return self._op(o, lambda a, b: a + b)  # noqa: E704
    def __radd__(self, o: Any) -> Any: return self._op(o, lambda a, b: b + a)  # noqa: E704
    def __sub__(self, o: Any) -> Any: return self._op(o, lambda a, b: a - b)  # noqa: E704
    def __rsub__(self, o: Any) -> Any: return self._op(o, lambda a, b: b - a)  # noqa: E704
    def __mul__(self, o: Any) -> Any: return self._op(o, lambda a, b: a * b)  # noqa: E704
    def __rmul__(self, o: Any) -> Any: return self._op(o, lambda a, b: b * a)  # noqa: E704
    def __truediv__(self, o: Any) -> Any: return self._op(o, lambda a, b: a / b)  # noqa: E704
    def __rtruediv__(self, o: Any) -> Any: return self._op(o, lambda a, b: b / a)  # noqa: E704
    def __pow__(self, o: Any) -> Any: return self._op(o, lambda a, b: a ** b)  # noqa: E704
    def __rpow__(self, o: Any) -> Any: return self._op(o, lambda a, b: b ** a)  # noqa: E704
    def __neg__(self) -> Mp: return Mp(-self.v)  # noqa: E704
    def __pos__(self) -> Mp: return self  # noqa: E704
    def __abs__(self) -> Mp: return Mp(abs(self.v))  # noqa: E704

    def __lt__(self, o: Any) -> bool: return bool(self.v < _raw(o))  # noqa: E704
    def __le__(self, o: Any) -> bool: return bool(self.v <= _raw(o))  # noqa: E704
    def __gt__(self, o: Any) -> bool: return bool(self.v > _raw(o))  # noqa: E704
    def __ge__(self, o: Any) -> bool: return bool(self.v >= _raw(o))  # noqa: E704

    def __eq__(self, o: object) -> bool:
        return bool(self.v == _raw(o))

    def __hash__(self) -> int:
        return hash(self.v)

    def __float__(self) -> float:
        ESCAPES[0] += 1
        return float(self.v)

    def __bool__(self) -> bool:
        return bool(self.v)

    def __repr__(self) -> str:
        return f"Mp({self.v})"

    # numpy's object loops: np.square, np.reciprocal and np.conjugate call these names too
    def conjugate(self) -> Mp:
        return self

    def square(self) -> Mp:
        return Mp(self.v * self.v)

    def arctan2(self, o: Any) -> Mp:
        import mpmath

        return Mp(mpmath.atan2(self.v, _raw(o)))


def _unary(name: str, mp_name: str) -> Any:
    def f(self: Mp) -> Mp:
        import mpmath

        return Mp(getattr(mpmath, mp_name)(self.v))

    f.__name__ = name
    return f


for _n in _UNARY:
    setattr(Mp, _n, _unary(_n, {"cbrt": "cbrt", "log10": "log10"}.get(_n, _n)))
for _n, _m in _MP_NAMES.items():
    if _m is not None:
        setattr(Mp, _n, _unary(_n, _m))


def _raw(o: Any) -> Any:
    import mpmath

    if isinstance(o, Mp):
        return o.v
    if isinstance(o, np.generic):
        o = o.item()
    if isinstance(o, float):
        return mpmath.mpf(o)
    return o


def map_floats(x: Any, scalar: Any, array: Any) -> Any:
    """``x`` with every float turned by ``scalar`` and every float array by ``array``, through
    tuples (named ones too), lists, dicts and dataclasses; anything else as it is (the instance
    walk of a high-precision recheck)."""
    if isinstance(x, bool) or x is None:
        return x
    if isinstance(x, float | np.floating):
        return scalar(x)
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return array(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(map_floats(v, scalar, array) for v in x))
    if isinstance(x, tuple | list):
        return type(x)(map_floats(v, scalar, array) for v in x)
    if isinstance(x, dict):
        return {k: map_floats(v, scalar, array) for k, v in x.items()}
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        try:
            return dataclasses.replace(x, **{f.name: map_floats(getattr(x, f.name), scalar, array)
                                             for f in dataclasses.fields(x) if f.init})
        except (TypeError, ValueError):
            return x
    return x


def widen(x: Any) -> Any:
    """``x`` with every float (and every float array's entries) an :class:`Mp`."""
    def array(a: np.ndarray) -> np.ndarray:
        out = np.empty(a.shape, dtype=object)
        out.ravel()[:] = [Mp(float(v)) for v in a.ravel()]
        return out

    return map_floats(x, lambda v: Mp(float(v)), array)


def values(side: Any) -> list[Any] | None:
    """A side's entries as mpmath numbers, or None where any is not an :class:`Mp` (the code
    left the high-precision path) or not finite."""
    import mpmath

    flat = side.ravel().tolist() if isinstance(side, np.ndarray) else [side]
    if not flat or not all(isinstance(v, Mp) for v in flat):
        return None
    out = [v.v for v in flat]
    return out if all(mpmath.isfinite(v) for v in out) else None


# math's real functions and their mpmath counterparts (log takes a base too)
_MATH_REAL = {"exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "log10": "log10",
              "sqrt": "sqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos", "tan": "tan",
              "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2", "sinh": "sinh",
              "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh",
              "atanh": "atanh", "erf": "erf", "erfc": "erfc", "gamma": "gamma",
              "lgamma": "loggamma", "pow": "power", "fabs": "fabs", "hypot": "hypot"}
_MATH_TEST = {"isfinite": "isfinite", "isnan": "isnan", "isinf": "isinf"}


_LIFT_LOCK = threading.RLock()


@contextlib.contextmanager
def math_lifted() -> Iterator[None]:
    """While it is open, ``math``'s real functions given an :class:`Mp` compute in mpmath (at
    its working precision) and return an :class:`Mp`; on floats they are math's own. A bound
    written with ``math.log`` then rechecks at 50 digits through its own code, where numpy's
    object loops alone would turn ``math.log(x)`` into ``float(x)``'s logarithm. A result
    outside the reals raises math's ``ValueError`` (``math.log(-1.0)``, ``math.sqrt(-1.0)``).
    A module that imported a name (``from math import log``) keeps math's own: that call
    converts to float and is counted in :data:`ESCAPES`."""
    import math

    import mpmath

    def lifted(name: str, orig: Any) -> Any:
        mp_name = _MATH_REAL.get(name) or _MATH_TEST.get(name)
        real = name not in _MATH_TEST

        def f(*args: Any) -> Any:
            if not any(isinstance(a, Mp) for a in args):
                return orig(*args)
            raw = [_raw(a) for a in args]
            out = (mpmath.log(raw[0], 2) if name == "log2"
                   else getattr(mpmath, mp_name)(*raw))  # type: ignore[arg-type]
            if not real:
                return bool(out)
            if isinstance(out, mpmath.mpc):
                raise ComputationError("math domain error")
            return Mp(out)

        f.__name__ = name
        return f

    # one at a time: another thread's math.log(float) meanwhile is math's own, through f
    with _LIFT_LOCK:
        saved = {name: getattr(math, name) for name in (*_MATH_REAL, *_MATH_TEST, "log2")
                 if hasattr(math, name)}
        try:
            for name, orig in saved.items():
                setattr(math, name, lifted(name, orig))
            yield
        finally:
            for name, orig in saved.items():
                setattr(math, name, orig)
