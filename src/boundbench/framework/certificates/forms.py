"""Cancellation-free forms of ``rhs - lhs`` that sympy finds for a user's bound (``boundbench
prove``), and their evaluation in ball arithmetic: a bound attained on a point or a line is
never decided by a difference of two enclosures, and a square sympy factors out is. Each form is
still proven equal to ``rhs - lhs`` before it is used
(:func:`boundbench.framework.certificates.identity.prove_identity`, in
:func:`boundbench.framework.certificates.levels.certify`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from boundbench.framework.certificates.identity import evaluate, exact, symbols
from boundbench.framework.certificates.intervals import NoEnclosure, NotExact


def enclosure_of(expr: Any) -> Callable[[dict[str, Any]], Any]:
    """A sympy expression as a function of Dual parameters, every constant an exact ball (a
    rational ``p/q`` as ``arb(p) / arb(q)``, never a float): how an automatic form found by
    sympy is evaluated in ball arithmetic without a rounding the identity did not see."""
    import sympy
    from flint import arb

    from boundbench.framework.certificates import intervals as iv

    funcs = {sympy.exp: iv.exp, sympy.log: iv.log, sympy.sin: iv.sin, sympy.cos: iv.cos,
             sympy.erf: iv.erf}

    def ev(e: Any, q: dict[str, Any]) -> Any:
        if e.is_Symbol:
            return q[e.name]
        if e.is_Integer:
            return arb(int(e))
        if e.is_Rational:
            return arb(int(e.p)) / arb(int(e.q))
        if e.is_Float:  # exact: a float's binary value (exact() leaves none but these)
            return arb(sympy.Rational(e).p) / arb(sympy.Rational(e).q)
        if e is sympy.pi:
            return arb.pi()
        if e.is_Add:
            out = ev(e.args[0], q)
            for a in e.args[1:]:
                out = out + ev(a, q)
            return out
        if e.is_Mul:
            out = ev(e.args[0], q)
            for a in e.args[1:]:
                out = out * ev(a, q)
            return out
        if e.is_Pow:
            base, k = e.args
            if k == sympy.Rational(1, 2):
                return iv.sqrt(ev(base, q))
            if k == sympy.Rational(-1, 2):
                return 1 / iv.sqrt(ev(base, q))
            if k.is_Integer:
                b = ev(base, q)
                return b ** int(k) if int(k) > 0 else 1 / b ** (-int(k))
        if isinstance(e, sympy.Abs):
            return abs(ev(e.args[0], q))
        if isinstance(e, sympy.Max) and len(e.args) == 2:
            a, b = (ev(x, q) for x in e.args)
            return b + iv.positive(a - b)
        if e.func in funcs:
            return funcs[e.func](ev(e.args[0], q))
        raise NoEnclosure(f"{e.func} has no enclosure in the vocabulary")

    return lambda q: ev(expr, q)


def automatic_forms(sides: Callable[[dict[str, Any]], tuple[Any, Any]],
                    space: Mapping[str, tuple]) -> list[tuple[str, Callable]]:
    """Cancellation-free forms of ``rhs - lhs`` sympy finds for a bound attained on a set:
    ``factor(rhs - lhs)`` (a square where the bound is tight on a point or a line) and
    ``factor(rhs^2 - lhs^2) / (rhs + lhs)`` (a root side rationalized). Each is still proven
    equal to ``rhs - lhs`` before it is used (:func:`prove_identity`)."""
    import sympy

    q = symbols(space)
    try:
        lhs, rhs = (exact(sympy.sympify(x)) for x in evaluate(sides, q))
    except (NotExact, NoEnclosure, TypeError, AttributeError, ValueError):
        return []
    out = []
    for name, make in (("factor(rhs - lhs)", lambda: sympy.factor(sympy.together(rhs - lhs))),
                       ("factor(rhs^2 - lhs^2) / (rhs + lhs)",
                        lambda: sympy.factor(sympy.expand(rhs ** 2 - lhs ** 2)) / (rhs + lhs))):
        try:
            out.append((f"{name} = {make()}", enclosure_of(make())))
        except (TypeError, ValueError, NotImplementedError, NoEnclosure):
            continue
    return out
