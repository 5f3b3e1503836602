"""The symbolic path of the interval vocabulary (:mod:`boundbench.framework.certificates.intervals`): while a
proof's sides are evaluated on sympy symbols (:func:`boundbench.framework.certificates.identity.evaluate`),
the vocabulary's functions and constants return exact sympy values, wrapped in
:class:`Symbolic` so that every Python float in a bound's code enters as the exact rational it
is."""

from __future__ import annotations

import contextvars
from typing import Any

#: set while a proof's sides are evaluated on sympy symbols
#: (:mod:`boundbench.framework.certificates.identity`): the vocabulary's constants
#: (``sqrt(2)``, :func:`pi`) are then exact symbols, not arb balls
SYMBOLIC: contextvars.ContextVar[bool] = contextvars.ContextVar("symbolic", default=False)


def is_symbolic(x: Any) -> bool:
    """Whether ``x`` is on the symbolic path: a sympy object or a :class:`Symbolic`."""
    return isinstance(x, Symbolic) or type(x).__module__.startswith("sympy")


def symbolic_path(x: Any) -> bool:
    return SYMBOLIC.get() or is_symbolic(x)


def to_sympy(x: Any) -> Any:
    """``x`` as an exact sympy value (a float as its binary rational)."""
    import sympy

    return sympy.sympify(Symbolic.of(x))


class Symbolic:
    """A sympy expression as the sides see it while they are evaluated on symbols
    (:func:`boundbench.framework.certificates.identity.evaluate`): arithmetic maps to sympy with every
    Python float taken as the exact rational it is (sympy's Floats would round a product of
    two floats that arb computes exactly, so an identity could hold for another constant than
    the one the enclosures use); numpy's ufuncs reach it through
    :mod:`boundbench.framework.certificates.ufuncs`."""

    __slots__ = ("e",)
    __array_priority__ = 1000

    def __init__(self, e: Any) -> None:
        self.e = e

    @staticmethod
    def of(x: Any) -> Any:
        """The sympy expression; a float as its exact binary value (sympy's Floats round)."""
        if isinstance(x, Symbolic):
            return x.e
        if isinstance(x, float):
            import sympy

            return sympy.Rational(x)
        return x

    def __add__(self, o: Any) -> Symbolic:
        return Symbolic(self.e + Symbolic.of(o))

    def __radd__(self, o: Any) -> Symbolic:
        return Symbolic(Symbolic.of(o) + self.e)

    def __sub__(self, o: Any) -> Symbolic:
        return Symbolic(self.e - Symbolic.of(o))

    def __rsub__(self, o: Any) -> Symbolic:
        return Symbolic(Symbolic.of(o) - self.e)

    def __mul__(self, o: Any) -> Symbolic:
        return Symbolic(self.e * Symbolic.of(o))

    def __rmul__(self, o: Any) -> Symbolic:
        return Symbolic(Symbolic.of(o) * self.e)

    def __truediv__(self, o: Any) -> Symbolic:
        return Symbolic(self.e / Symbolic.of(o))

    def __rtruediv__(self, o: Any) -> Symbolic:
        return Symbolic(Symbolic.of(o) / self.e)

    def __pow__(self, k: Any) -> Symbolic:
        return Symbolic(self.e ** Symbolic.of(k))

    def __neg__(self) -> Symbolic:
        return Symbolic(-self.e)

    def __abs__(self) -> Symbolic:
        return Symbolic(abs(self.e))




