"""numpy's ufuncs on the interval vocabulary (a user's bound written with ``np.sqrt``, evaluated
by ``boundbench prove``): each maps to an enclosure of
:mod:`boundbench.framework.certificates.intervals`, or to
sympy on :class:`~boundbench.framework.certificates.intervals.Symbolic` values; one without refuses in one
line (:class:`NoEnclosure`). Importing this module attaches ``__array_ufunc__`` to both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boundbench.framework.certificates.intervals import (
    Dual,
    NoEnclosure,
    Symbolic,
    cos,
    erf,
    exp,
    is_symbolic,
    log,
    ncdf,
    positive,
    sin,
    sqrt,
)


def _ufunc(ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
    name = getattr(ufunc, "__name__", str(ufunc))
    if method != "__call__" or kwargs.get("out") is not None:
        raise NoEnclosure(f"numpy.{name}.{method} has no interval enclosure here")
    binary: dict[str, Callable[[Any, Any], Any]] = {
        "add": lambda a, b: a + b, "subtract": lambda a, b: a - b,
        "multiply": lambda a, b: a * b, "true_divide": lambda a, b: a / b,
        "divide": lambda a, b: a / b, "maximum": lambda a, b: b + positive(a - b),
        "minimum": lambda a, b: a - positive(a - b), "power": _power}
    unary: dict[str, Callable[[Any], Any]] = {
        "negative": lambda a: -a, "positive": lambda a: a, "absolute": abs, "fabs": abs,
        "square": lambda a: a ** 2, "sqrt": sqrt, "exp": exp, "log": log, "sin": sin,
        "cos": cos, "erf": erf, "log1p": lambda a: log(1 + a), "expm1": lambda a: exp(a) - 1,
        "ndtr": ncdf}
    args = [_scalar(a, name) for a in inputs]
    if name in binary and len(args) == 2:
        return binary[name](*args)
    if name in unary and len(args) == 1:
        return unary[name](args[0])
    raise NoEnclosure(f"numpy.{name} has no interval enclosure in boundbench's vocabulary "
                      "(+, -, *, /, integer powers, abs, sqrt, exp, log, log1p, expm1, sin, cos, "
                      "erf, maximum, minimum)")


def _scalar(a: Any, name: str) -> Any:
    import numpy as np

    if isinstance(a, np.ndarray):
        if a.shape != ():
            raise NoEnclosure(f"numpy.{name} on an array of shape {a.shape}: the prover takes "
                              "scalar parameters")
        a = a.item()
    if isinstance(a, np.generic):
        a = a.item()
    return a


def _power(a: Any, b: Any) -> Any:
    if is_symbolic(a):
        return a ** b
    if isinstance(b, float) and b.is_integer():
        b = int(b)
    if isinstance(b, int) and b >= 1:
        return a ** b
    if isinstance(b, int) and b <= -1:
        return 1 / a ** (-b)
    if b == 0.5:
        return sqrt(a)
    raise NoEnclosure(f"numpy.power with exponent {b!r}: integer powers and 0.5 only")


def _dual_ufunc(self: Dual, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    return _ufunc(ufunc, method, inputs, kwargs)


def _symbolic_ufunc(self: Symbolic, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    out = _ufunc(ufunc, method, tuple(Symbolic.of(a) for a in inputs), kwargs)
    return out if isinstance(out, Symbolic) else Symbolic(out)


Dual.__array_ufunc__ = _dual_ufunc  # type: ignore[attr-defined]
Symbolic.__array_ufunc__ = _symbolic_ufunc  # type: ignore[attr-defined]
