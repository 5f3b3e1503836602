"""Interval arithmetic for the proofs (:mod:`boundbench.framework.certificates.proofs`): :class:`Iv`, closed
intervals whose endpoints are exact python-flint ``arb`` points, and :class:`Dual`, forward-mode
differentiation over them, so one evaluation encloses a function and its gradient over a box.

References
----------
F. Johansson, Arb: efficient arbitrary-precision midpoint-radius interval arithmetic, IEEE
Trans. Computers 66 (2017). R. E. Moore, R. B. Kearfott and M. J. Cloud, *Introduction to
Interval Analysis*, SIAM (2009), ch. 5 (interval arithmetic) and 6 (the mean-value form).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boundbench.errors import InvalidArgument
from boundbench.framework.certificates.symbolic import (
    SYMBOLIC,
    Symbolic,
    is_symbolic,
    symbolic_path,
    to_sympy,
)


class NotExact(InvalidArgument):
    """An enclosure (:func:`hull`: a mean-value point between two ends) met where an exact
    expression is needed: a form built on one is a lemma by hand, not an identity."""


class NoEnclosure(InvalidArgument):
    """A function (a numpy ufunc, a solver) this vocabulary has no interval enclosure for."""

class Iv:
    """A closed interval ``[lo, hi]`` whose endpoints are exact ``arb`` points: every operation
    computes its candidate endpoints as arb balls (rigorous) and keeps their outer ends, so a
    square of an interval around 0 starts exactly at 0 and a product of positive intervals stays
    positive (midpoint-radius balls lose both). A non-finite endpoint means -inf at the low end
    and +inf at the high end (an extended quotient's, ``[0, +inf]``)."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: Any, hi: Any) -> None:
        self.lo, self.hi = lo, hi

    @staticmethod
    def of(x: Any) -> Iv:
        from flint import arb

        if isinstance(x, Iv):
            return x
        b = x if isinstance(x, arb) else arb(x)
        return Iv(b.lower(), b.upper())

    def ball(self) -> Any:
        return self.lo.union(self.hi)

    def is_finite(self) -> bool:
        return bool(self.lo.is_finite() and self.hi.is_finite())

    def __add__(self, o: Any) -> Iv:
        o = Iv.of(o)
        return Iv((self.lo + o.lo).lower(), (self.hi + o.hi).upper())

    __radd__ = __add__

    def __neg__(self) -> Iv:
        return Iv(-self.hi, -self.lo)

    def __sub__(self, o: Any) -> Iv:
        return self + (-Iv.of(o))

    def __rsub__(self, o: Any) -> Iv:
        return Iv.of(o) - self

    def __mul__(self, o: Any) -> Iv:
        o = Iv.of(o)
        ps = [x * y for x in (self.lo, self.hi) for y in (o.lo, o.hi)]
        if not all(p.is_finite() for p in ps):
            return _mul_extended(self, o)
        return Iv(_least([p.lower() for p in ps]), _most([p.upper() for p in ps]))

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Iv:
        from flint import arb

        o = Iv.of(o)
        if o.lo > 0 or o.hi < 0:
            return self * Iv((1 / o.hi).lower(), (1 / o.lo).upper())
        # a divisor that touches 0 from one side: the quotient wherever it is defined keeps the
        # sign the operands force (Moore, Kearfott and Cloud 2009, sec. 8.1's extended
        # division); a non-negative ratio of non-negative terms is how a tight bound's
        # cancellation-free form stays >= 0 on a box around its degenerate point
        if o.hi == 0 and o.lo == 0 or not (o.lo >= 0 or o.hi <= 0):
            return _whole()
        sign = 1 if o.lo >= 0 else -1
        if self.lo >= 0 or self.hi <= 0:
            pos = (self.lo >= 0) == (sign > 0)
            return Iv(arb(0), arb("inf")) if pos else Iv(arb("-inf"), arb(0))
        return _whole()

    def __rtruediv__(self, o: Any) -> Iv:
        return Iv.of(o) / self

    def __pow__(self, k: int) -> Iv:
        from flint import arb

        if k == 1:
            return self
        if not self.is_finite():  # a comparison with NaN would drop an endpoint silently
            return Iv(arb(0), arb("inf")) if k % 2 == 0 else _whole()
        lo_k, hi_k = self.lo**k, self.hi**k
        if k % 2 == 1 or self.lo >= 0:  # increasing there
            return Iv(lo_k.lower(), hi_k.upper())
        if self.hi <= 0:
            return Iv(hi_k.lower(), lo_k.upper())
        return Iv(arb(0), _most([lo_k.upper(), hi_k.upper()]))

    def increasing(self, f: Callable[[Any], Any]) -> Iv:
        """``f`` (increasing) over the interval, from its endpoints."""
        return Iv(f(self.lo).lower(), f(self.hi).upper())

    def periodic(self, name: str) -> Iv:
        """``cos`` or ``sin`` over the interval: its endpoints' values, and 1 (or -1) where a
        maximum ``phase + 2k pi`` (a minimum ``phase + (2k+1) pi``) may lie inside, so that
        ``cos`` on ``[0, h]`` ends at exactly 1 (one ball around the interval ends above it:
        a bound tight at 0, ``sin x <= x``, then has a derivative enclosure starting at 0)."""
        import math

        from flint import arb

        f = (lambda t: t.cos()) if name == "cos" else (lambda t: t.sin())
        if not self.is_finite():
            return Iv(arb(-1), arb(1))
        phase = arb(0) if name == "cos" else arb.pi() / 2
        a, b = ((self.lo - phase) / arb.pi()), ((self.hi - phase) / arb.pi())
        k0, k1 = math.floor(float(a.lower())) - 1, math.ceil(float(b.upper())) + 1
        if k1 - k0 > 8:  # wider than a period or so: every value
            return Iv(arb(-1), arb(1))
        ends = [f(self.lo), f(self.hi)]
        lo, hi = _least([e.lower() for e in ends]), _most([e.upper() for e in ends])
        for k in range(k0, k1 + 1):
            c = phase + k * arb.pi() if k else phase
            if not (c < self.lo or c > self.hi):  # certainly outside, else counted
                if k % 2 == 0:
                    hi = arb(1)
                else:
                    lo = arb(-1)
        return Iv(_most([lo, arb(-1)]), _least([hi, arb(1)]))

    def through_ball(self, f: Callable[[Any], Any]) -> Iv:
        """``f`` over the interval through one arb ball covering it (any f)."""
        return Iv.of(f(self.ball()))

    def mid(self) -> Any:
        return (self.lo + self.hi) / 2

    def __abs__(self) -> Iv:
        from flint import arb

        if self.lo >= 0:
            return self
        if self.hi <= 0:
            return -self
        return Iv(arb(0), _most([-self.lo, self.hi]))

    def hull(self, o: Any) -> Iv:
        """The smallest interval holding both."""
        o = Iv.of(o)
        return Iv(_least([self.lo, o.lo]), _most([self.hi, o.hi]))


def _sign(x: Any, is_hi: bool) -> int:
    """An endpoint's sign; a non-finite endpoint is -inf at the low end and +inf at the high."""
    if not x.is_finite():
        return 1 if is_hi else -1
    return 1 if x > 0 else -1 if x < 0 else 0


def _mul_extended(a: Iv, b: Iv) -> Iv:
    """A product with an infinite endpoint (an extended quotient's): an endpoint product with a
    zero factor is 0 (the infinite end is not attained), one with an infinite factor is
    infinite with the product of the signs."""
    from flint import arb

    lows, highs, neg_inf, pos_inf = [], [], False, False
    for x, xh in ((a.lo, False), (a.hi, True)):
        for y, yh in ((b.lo, False), (b.hi, True)):
            sx, sy = _sign(x, xh), _sign(y, yh)
            if sx == 0 or sy == 0:
                lows.append(arb(0))
                highs.append(arb(0))
            elif not (x.is_finite() and y.is_finite()):
                neg_inf |= sx * sy < 0
                pos_inf |= sx * sy > 0
            else:
                lows.append((x * y).lower())
                highs.append((x * y).upper())
    lo = arb("-inf") if neg_inf or not lows else _least(lows)
    hi = arb("inf") if pos_inf or not highs else _most(highs)
    return Iv(lo, hi)


def _whole() -> Iv:
    from flint import arb

    return Iv(arb("-inf"), arb("inf"))


def _least(xs: list) -> Any:
    """The least of arb points; a non-finite one (NaN or an infinity) is -inf at a low end."""
    from flint import arb

    if not all(x.is_finite() for x in xs):
        return arb("-inf")
    m = xs[0]
    for x in xs[1:]:
        if x < m:
            m = x
    return m


def _most(xs: list) -> Any:
    """The largest of arb points; a non-finite one is +inf at a high end."""
    from flint import arb

    if not all(x.is_finite() for x in xs):
        return arb("inf")
    m = xs[0]
    for x in xs[1:]:
        if x > m:
            m = x
    return m


class Dual:
    """A value and its gradient, each an :class:`Iv`: forward-mode differentiation whose results
    enclose the function and its gradient over every point of the input intervals."""

    __slots__ = ("v", "g")

    def __init__(self, v: Any, g: tuple) -> None:
        self.v, self.g = v, g

    @staticmethod
    def _lift(x: Any, n: int) -> Dual:
        if isinstance(x, Dual):
            # a gradient-free Dual (a constant, a flat parameter) beside n gradients: zeros
            return Dual(x.v, (Iv.of(0),) * n) if not x.g and n else x
        return Dual(Iv.of(x), (Iv.of(0),) * n)

    def _pair(self, o: Any) -> tuple[Dual, Dual]:
        n = max(len(self.g), len(o.g) if isinstance(o, Dual) else 0)
        return Dual._lift(self, n), Dual._lift(o, n)

    # numpy's ufuncs on a Dual (a user's bound, ``boundbench prove``): attached by
    # boundbench.framework.certificates.ufuncs, which maps each to this vocabulary's enclosure
    __array_priority__ = 1000

    def __add__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        return Dual(self.v + o.v, tuple(a + b for a, b in zip(self.g, o.g, strict=True)))

    __radd__ = __add__

    def __neg__(self) -> Dual:
        return Dual(-self.v, tuple(-a for a in self.g))

    def __sub__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        return self + (-o)

    def __rsub__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        return o - self

    def __mul__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        return Dual(self.v * o.v, tuple(a * o.v + self.v * b
                                        for a, b in zip(self.g, o.g, strict=True)))

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        inv = 1 / o.v
        q = self.v / o.v
        return Dual(q, tuple((a - q * b) * inv for a, b in zip(self.g, o.g, strict=True)))

    def __rtruediv__(self, o: Any) -> Dual:
        self, o = self._pair(o)
        return o / self

    def __pow__(self, k: Any) -> Any:
        if isinstance(k, float) and k.is_integer():
            k = int(k)
        if k == 0.5:
            return sqrt(self)
        if isinstance(k, int) and k <= -1:
            return 1 / self ** (-k)
        if not isinstance(k, int) or k < 1:
            raise NoEnclosure(f"Dual powers are integers or 0.5 (got {k!r})")
        # by endpoints: an even power of an interval around 0 stays >= 0 (a product would not)
        return self.apply(self.v**k, k * self.v ** (k - 1) if k > 1 else Iv.of(1))

    def __abs__(self) -> Dual:
        from flint import arb

        if self.v.lo >= 0:
            return self
        if self.v.hi <= 0:
            return -self
        return self.apply(abs(self.v), Iv(arb(-1), arb(1)))

    def apply(self, value: Any, slope: Any) -> Dual:
        """``f(self)`` given ``f``'s value and derivative over ``self.v``."""
        return Dual(value, tuple(slope * a for a in self.g))


def _unary(name: str) -> Callable[[Any], Any]:
    def f(x: Any) -> Any:
        from flint import arb

        if symbolic_path(x):
            import sympy

            return Symbolic(getattr(sympy, name)(to_sympy(x)))
        if not isinstance(x, Dual):  # a constant: its arb ball
            b = x if isinstance(x, arb) else arb(x)
            return getattr(b, name)()
        v = x.v
        if name == "exp":
            e = v.increasing(lambda t: t.exp())
            return x.apply(e, e)
        if name == "log":
            return x.apply(v.increasing(lambda t: t.log()), 1 / v)
        if name == "sqrt":
            # sqrt is >= 0 wherever it is defined: a low end below 0 encloses from 0
            r = v.increasing(lambda t: t.sqrt()) if v.lo >= 0 else Iv(
                arb(0), v.hi.sqrt().upper() if v.hi >= 0 else arb(0))
            return x.apply(r, 1 / (2 * r))
        if name == "cos":
            return x.apply(v.periodic("cos"), -v.periodic("sin"))
        if name == "sin":
            return x.apply(v.periodic("sin"), v.periodic("cos"))
        if name == "erf":
            slope = (-(v**2)).increasing(lambda t: t.exp()) * Iv.of(2 / arb.pi().sqrt())
            return x.apply(v.increasing(lambda t: t.erf()), slope)
        raise InvalidArgument(name)
    return f


exp, log, sqrt, erf, cos, sin = (_unary(n) for n in ("exp", "log", "sqrt", "erf", "cos", "sin"))


def hull(a: Any, b: Any) -> Dual:
    """Every value between ``a`` and ``b`` (a mean-value point ``xi`` between two ends); its
    gradient is unknown (the whole line), so it serves a cancellation-free form, not a slope.
    It is an enclosure, not an expression: a form that uses it is a lemma by hand, never a
    proven identity (:class:`NotExact` where one is evaluated on symbols)."""
    if symbolic_path(a) or is_symbolic(b):
        raise NotExact("the form encloses a value between two ends (hull): a lemma by hand, "
                       "not an exact expression")
    if not isinstance(a, Dual) and not isinstance(b, Dual):
        raise InvalidArgument("hull takes at least one Dual (its gradient is the whole line)")
    n = len(a.g) if isinstance(a, Dual) else len(b.g)
    va = a.v if isinstance(a, Dual) else Iv.of(a)
    vb = b.v if isinstance(b, Dual) else Iv.of(b)
    return Dual(va.hull(vb), (_whole(),) * n)


def positive(x: Any) -> Any:
    """``max(x, 0)``, as an interval from the endpoints (never below 0, unlike ``(|x| + x)/2``
    computed from two enclosures)."""
    from flint import arb

    if symbolic_path(x):
        import sympy

        return Symbolic(sympy.Max(to_sympy(x), 0))
    v = x.v
    value = Iv(_most([v.lo, arb(0)]) if v.lo.is_finite() else arb(0),
               _most([v.hi, arb(0)]))
    if v.lo >= 0:
        return x
    return x.apply(value, Iv.of(0) if v.hi <= 0 else Iv(arb(0), arb(1)))


def pi() -> Any:
    """pi: an arb ball, or sympy's pi while the sides are evaluated on symbols."""
    from flint import arb

    if SYMBOLIC.get():
        import sympy

        return Symbolic(sympy.pi)
    return arb.pi()


def ncdf(x: Any) -> Any:
    """The standard normal CDF, ``(1 + erf(x / sqrt 2)) / 2``."""
    return (1 + erf(x / sqrt(2))) / 2


def npdf(x: Any) -> Any:
    """The standard normal density."""
    return exp(-(x * x) / 2) / sqrt(2 * pi())


def integer(x: Any) -> int:
    """An integer axis's value (fixed per case,
    :func:`boundbench.framework.certificates.proofs.integer_cases`)
    from a Dual, a number or a sympy integer."""
    if isinstance(x, Dual):
        return int(float(x.v.lo))
    return int(Symbolic.of(x))
