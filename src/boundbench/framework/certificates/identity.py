"""Identities a proof rests on, proven symbolically on the very expressions the proof evaluates.

A cancellation-free form of ``rhs - lhs`` (:class:`boundbench.framework.certificates.proofs.Proof`'s
``difference``) decides a tight bound in a few boxes, but only if it *is* ``rhs - lhs``. Here the
proof's own ``sides`` and ``difference`` functions are evaluated on sympy symbols (the interval
vocabulary dispatches to sympy, :data:`boundbench.framework.certificates.intervals.SYMBOLIC`) and
``form - (rhs - lhs)`` is reduced to 0 by sound rewrites (expansion, cancellation of rational
functions, sympy's ``simplify``), each ``max(x, 0)`` and ``|x|`` split by the sign of its
argument. Nothing is trusted that was checked only at points: the point check
(:func:`check_form`) stays as a guard that refuses a wrong form early, not as the proof.

The same machinery proves the lemmas that carry a box's proof to the claim's whole domain:
:class:`Homogeneous` (both sides scale alike, so a box around the origin covers every point) and
:class:`EveryCount` (an identity and a sign for every value of an integer axis, as sympy sums).

References
----------
A. Meurer et al., SymPy: symbolic computing in Python, PeerJ Computer Science 3:e103 (2017).
LeanCert's typed outcomes (Verified / Inconclusive / DomainObstruction, and the route that
checked it), whose vocabulary :mod:`boundbench.framework.certificates.levels` follows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from boundbench.framework.certificates.intervals import Dual, NoEnclosure, NotExact
from boundbench.framework.certificates.proofs import Proof, _flat, _form, _params, _point
from boundbench.framework.certificates.symbolic import SYMBOLIC, Symbolic, to_sympy

MAX_SPLITS = 4  # max(x, 0) and |x| atoms split by sign: 2^4 cases at most

CHECK_POINTS = 64  # fixed points of the box where a difference form must match the sides


def symbols(space: Mapping[str, tuple]) -> dict[str, Any]:
    """One real sympy symbol per axis of ``space`` (positive or non-negative where the box
    is), an integer axis fixed to one value as that integer."""
    import sympy

    out: dict[str, Any] = {}
    for name, spec in space.items():
        lo, hi = float(spec[0]), float(spec[1])
        if len(spec) == 3 and spec[2] == "int" or lo == hi and float(lo).is_integer():
            out[name] = sympy.Integer(int(lo)) if lo == hi else sympy.Symbol(name, integer=True)
        elif lo > 0:
            out[name] = sympy.Symbol(name, positive=True)
        elif lo == 0:
            out[name] = sympy.Symbol(name, nonnegative=True)
        else:
            out[name] = sympy.Symbol(name, real=True)
    return out


def evaluate(fn: Callable[[dict[str, Any]], Any], q: dict[str, Any]) -> Any:
    """``fn`` on symbols, as exact sympy values: each parameter a :class:`~boundbench.
    framework.certificates.symbolic.Symbolic` (a float in ``fn``'s code enters as its exact rational), the
    vocabulary's constants exact (sympy's); a tuple's items unwrapped one by one."""
    token = SYMBOLIC.set(True)
    try:
        out = fn({k: Symbolic(v) for k, v in q.items()})
    finally:
        SYMBOLIC.reset(token)
    return tuple(to_sympy(x) for x in out) if isinstance(out, tuple) else to_sympy(out)


def is_zero(expr: Any) -> tuple[bool, str]:
    """Whether sympy reduces ``expr`` to 0 by sound rewrites, and how; each ``Max(x, 0)`` and
    ``Abs(x)`` replaced, on each side of ``x = 0``, by ``x``, ``0`` or ``-x`` (atoms whose
    arguments are equal or opposite share one sign case, so no case is contradictory)."""
    import sympy

    expr = exact(sympy.sympify(expr))
    atoms = sorted(expr.atoms(sympy.Max, sympy.Abs), key=sympy.default_sort_key)
    args = []
    for atom in atoms:
        arg = atom.args[0] if isinstance(atom, sympy.Abs) else _max_arg(atom)
        if arg is None:
            return False, f"{atom} is not max(x, 0)"
        args.append(arg)
    keys = list(dict.fromkeys(_canonical(a) for a in args))
    if len(keys) > MAX_SPLITS:
        return False, f"{len(keys)} max/abs arguments to split (at most {MAX_SPLITS})"
    cases = list(itertools.product((1, -1), repeat=len(keys)))
    for signs in cases:
        sign_of = dict(zip(keys, signs, strict=True))
        sub = {}
        for atom, arg in zip(atoms, args, strict=True):
            key = _canonical(arg)
            sigma = sign_of[key] * (1 if sympy.expand(arg) == key else -1)  # sigma arg >= 0
            sub[atom] = sigma * arg if isinstance(atom, sympy.Abs) else (
                arg if sigma > 0 else sympy.Integer(0))
        e = expr.xreplace(sub) if sub else expr
        if not _reduces_to_zero(e):
            return False, ("sympy did not reduce form - (rhs - lhs) to 0"
                           + (f" where the signs of {keys} are {signs}" if keys else ""))
    how = "sympy reduced form - (rhs - lhs) to 0"
    return True, how + (f", in each of {len(cases)} sign cases of {keys}" if keys else "")


def exact(expr: Any) -> Any:
    """``expr`` with every sympy Float replaced by the exact rational of its binary value: a
    float in a bound's code is the number it stands for, and sympy's Float arithmetic rounds
    (a difference of 1e-20 could vanish), so no zero test sees a Float."""
    import sympy

    floats = expr.atoms(sympy.Float)
    return expr.xreplace({f: sympy.Rational(f) for f in floats}) if floats else expr


def _canonical(arg: Any) -> Any:
    import sympy

    neg = sympy.expand(-arg)
    return min(sympy.expand(arg), neg, key=sympy.default_sort_key)


def _max_arg(atom: Any) -> Any:
    a, b = atom.args
    return b if a == 0 else a if b == 0 else None


SIMPLIFY_SECONDS = 20.0  # sympy's simplify, in a child process, before the identity is "not proven"


def _reduces_to_zero(e: Any) -> bool:
    """Expansion, then cancellation of rational functions (in process: fast), then sympy's
    ``simplify`` in a forked child for at most :data:`SIMPLIFY_SECONDS` (it can run without
    end, e.g. on ``sin(64 pi x)^2``): a rewrite that does not finish proves nothing."""
    import sympy

    for step in (sympy.expand, lambda x: sympy.cancel(sympy.together(x))):
        try:
            if step(e) == 0:
                return True
        except (TypeError, ValueError, NotImplementedError, RecursionError):
            continue
    return _simplify_in_child(e)


def _simplify_in_child(e: Any) -> bool:
    """``simplify(e) == 0`` in a forked child, killed after :data:`SIMPLIFY_SECONDS` (a plain
    ``os.fork``: multiprocessing refuses children to a daemonic process, as a Dask or pool
    worker is); a child that does not answer in time, or dies, proves nothing."""
    import os
    import select
    import signal

    import sympy  # imported before the fork: the child only computes

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one byte, then out without the parent's exit handlers
        os.close(read)
        try:
            os.write(write, b"1" if sympy.simplify(e) == 0 else b"0")
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], SIMPLIFY_SECONDS)
        ok = bool(ready) and os.read(read, 1) == b"1"
    finally:
        os.close(read)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return ok


def prove_identity(proof: Proof, space: Mapping[str, tuple]) -> dict[str, Any]:
    """Prove ``proof.difference == rhs - lhs`` symbolically on ``space``'s symbols.

    Returns ``{"proven": bool, "route": ..., "why": ...}``: proven only when sympy reduces the
    difference to 0 (wherever the form is defined; where its denominator vanishes both sides
    are continuous and the inequality passes to the limit). A form that is an enclosure
    (:func:`~boundbench.framework.certificates.intervals.hull`), or a side sympy cannot read, is not proven:
    the proof is then "given the stated lemma".

    Examples
    --------
    >>> from boundbench.framework.certificates import proofs as pr
    >>> p = pr.Proof(lambda q: (q["x"] ** 2, q["x"]), difference=lambda q: q["x"] * (1 - q["x"]))
    >>> prove_identity(p, {"x": (0.0, 1.0)})["proven"]
    True
    """
    if proof.difference is None:
        return {"proven": True, "route": "no form: the sides themselves are enclosed"}
    q = symbols(space)
    try:
        lhs, rhs = evaluate(proof.sides, q)
        form = evaluate(proof.difference, q)
    except NotExact as exc:
        return {"proven": False, "why": str(exc)}
    except (NoEnclosure, TypeError, AttributeError, ValueError) as exc:
        return {"proven": False, "why": f"the sides do not evaluate on symbols "
                f"({type(exc).__name__}: {exc})"}
    ok, how = is_zero(form - (rhs - lhs))
    return {"proven": ok, "route": how} if ok else {"proven": False, "why": how}


@dataclass(frozen=True)
class Homogeneous:
    """Both sides are positively homogeneous of one degree in ``axes``:
    ``side(k x) = k^degree side(x)`` for every ``k > 0`` (proven by sympy on the proof's sides),
    so ``lhs <= rhs`` at ``x`` iff at ``x / k``. A box that is ``[-R, R]`` (or ``[0, R]``) on
    those axes, where the domain is the whole line (or half-line), then covers the domain:
    every point is a positive multiple of a point of the box."""

    axes: tuple[str, ...]
    degree: int = 1

    def covers(self) -> tuple[str, ...]:
        return self.axes

    def words(self) -> str:
        return (f"homogeneity of degree {self.degree} in {', '.join(self.axes)} (both sides, "
                "k > 0; sympy)")

    def check(self, proof: Proof, box: Mapping[str, tuple], domain: Mapping[str, tuple]
              ) -> dict[str, Any]:
        import sympy

        for a in self.axes:
            lo, hi = float(box[a][0]), float(box[a][1])
            dlo, dhi = float(domain[a][0]), float(domain[a][1])
            shape = (lo == -hi and hi > 0 and dlo == -np.inf and dhi == np.inf) or (
                lo == 0 and hi > 0 and dlo == 0 and dhi == np.inf)
            if not shape:
                return {"proven": False, "why": f"the box's {a} in [{lo:g}, {hi:g}] is not "
                        f"[-R, R] (or [0, R]) in a domain [{dlo:g}, {dhi:g}]"}
        k = sympy.Symbol("k", positive=True)
        q = symbols({a: (-1.0, 1.0) if a in self.axes else v for a, v in box.items()})
        scaled = {a: k * v if a in self.axes else v for a, v in q.items()}
        try:
            lhs, rhs = evaluate(proof.sides, q)
            lk, rk = evaluate(proof.sides, scaled)
        except (NotExact, NoEnclosure, TypeError, AttributeError, ValueError) as exc:
            return {"proven": False, "why": f"the sides do not evaluate on symbols ({exc})"}
        for side, a, b in (("lhs", lk, lhs), ("rhs", rk, rhs)):
            ok, how = is_zero(sympy.sympify(a) - k ** self.degree * sympy.sympify(b))
            if not ok:
                return {"proven": False, "why": f"{side}(k x) = k^{self.degree} {side}(x): {how}"}
        return {"proven": True, "route": f"{self.words()}: sympy reduced side(k x) - k^"
                f"{self.degree} side(x) to 0 for both sides"}


@dataclass(frozen=True)
class EveryCount:
    """A proof per value of an integer axis, carried to every value the claim allows.

    ``general()`` gives ``(zero, form, count)``: the statement for a symbolic ``count`` as
    sympy sums, ``zero`` the identity ``(rhs - lhs) - form`` and ``form`` the cancellation-free
    form. The check proves ``zero`` identically 0 and ``form`` non-negative for every count, and
    links the general statement to the proof's own sides: at each count the box enumerates,
    ``form`` with its sums written out and ``at(c, q)`` substituted (the general symbols as the
    case's parameters) must equal the proof's ``difference`` there (sympy), so the per-count
    proofs and the symbolic one are of one statement."""

    axis: str
    statement: str
    general: Callable[[], tuple] = field(repr=False)
    at: Callable[[int, dict[str, Any]], dict] = field(repr=False)

    def covers(self) -> tuple[str, ...]:
        return (self.axis,)

    def words(self) -> str:
        return f"every {self.axis} (sympy, a symbolic count): {self.statement}"

    def check(self, proof: Proof, box: Mapping[str, tuple], domain: Mapping[str, tuple]
              ) -> dict[str, Any]:
        import sympy

        zero, form, count = self.general()
        ok, how = is_zero(sympy.sympify(zero))
        if not ok:
            ok = _reduces_to_zero(_same_dummies(zero))
        if not ok:
            return {"proven": False, "why": f"the identity for a symbolic {self.axis}: {how}"}
        if sympy.sympify(form).is_nonnegative is not True:
            return {"proven": False, "why": f"sympy could not show the form >= 0 for a "
                    f"symbolic {self.axis}"}
        if proof.difference is None:
            return {"proven": False, "why": "no form to link the symbolic count to"}
        lo, hi = int(box[self.axis][0]), int(box[self.axis][1])
        for c in range(lo, hi + 1):
            q = symbols({k: ((c, c) if k == self.axis else v) for k, v in box.items()})
            written = form.subs(count, c).doit().xreplace(self.at(c, q))
            ok, how = is_zero(written - evaluate(proof.difference, q))
            if not ok:
                return {"proven": False, "why": f"the symbolic form at {self.axis} = {c} is not "
                        f"the proof's own form there: {how}"}
        return {"proven": True, "route": f"{self.words()}; equal to the proof's own form at "
                f"{self.axis} = {lo}..{hi} (sympy)"}


@dataclass(frozen=True)
class Lemma:
    """A statement the proof's reading of the claim rests on (a reparametrization: the sides
    as the claim's own expressions in other coordinates), proven by sympy: ``zeros(q, lhs,
    rhs)`` gives expressions in the proof's symbols ``q`` and its symbolic sides that must each
    be identically 0. It carries no axis; the level is "whole domain" only if it is proven."""

    statement: str
    zeros: Callable[[dict[str, Any], Any, Any], list] = field(repr=False)

    def covers(self) -> tuple[str, ...]:
        return ()

    def words(self) -> str:
        return f"{self.statement} (sympy)"

    def check(self, proof: Proof, box: Mapping[str, tuple], domain: Mapping[str, tuple]
              ) -> dict[str, Any]:
        q = symbols(box)
        try:
            lhs, rhs = evaluate(proof.sides, q)
        except (NotExact, NoEnclosure, TypeError, AttributeError, ValueError) as exc:
            return {"proven": False, "why": f"the sides do not evaluate on symbols ({exc})"}
        for z in self.zeros(q, lhs, rhs):
            ok, how = is_zero(z)
            if not ok:
                return {"proven": False, "why": f"{self.statement}: {how}"}
        return {"proven": True, "route": self.words()}


def _same_dummies(expr: Any) -> Any:
    """``expr`` with every sum's index renamed to one symbol, so that two sums over the same
    range with different index names are one term."""
    import sympy

    expr = sympy.simplify(expr)
    sums = expr.atoms(sympy.Sum)
    i = sympy.Symbol("i_", integer=True)
    sub = {}
    for s in sums:
        (var, lo, hi), = s.limits
        sub[s] = sympy.Sum(s.function.xreplace({var: i}), (i, lo, hi))
    return sympy.simplify(expr.xreplace(sub))


def check_form(proof: Proof, space: Mapping[str, tuple]) -> dict[str, Any]:
    """A guard, not a proof: the form's enclosure against ``rhs - lhs`` at fixed points of the
    box (its centre and the first :data:`CHECK_POINTS` points of the unscrambled Halton
    sequence), from ``sides`` (arb) or from ``reference`` (mpmath at 30 digits, within 1e-15
    relative). A wrong rewrite (a dropped factor, a sign) is refused here at once; one wrong
    only between these points is caught by :func:`prove_identity`, never trusted."""
    import mpmath
    from scipy.stats import qmc

    n = len(space)
    pts = np.vstack([np.full(n, 0.5), qmc.Halton(d=n, scramble=False).random(CHECK_POINTS)])
    bad = []
    for u in pts:
        flat = _flat(_params(space, u, u))
        form = _form(proof, flat)
        if proof.reference is not None:
            with mpmath.workdps(30):
                lhs, rhs = proof.reference(_point(space, u))
                exact = rhs - lhs
                tol = mpmath.mpf(10) ** -15 * max(1, abs(lhs), abs(rhs))
                lo, hi = (mpmath.mpf(x.str(35, radius=False)) if x.is_finite() else x_inf
                          for x, x_inf in ((form.lo, -mpmath.inf), (form.hi, mpmath.inf)))
                ok = lo - tol <= exact <= hi + tol
        else:
            lhs, rhs = proof.sides(flat)
            e = Dual._lift(rhs, 0).v - Dual._lift(lhs, 0).v
            ok = bool(e.lo <= form.hi and form.lo <= e.hi)
        if not ok:
            bad.append(_point(space, u))
    return {"points": len(pts), "disagree": len(bad), "first": bad[:3],
            "against": "an independent reference (mpmath)" if proof.reference else "the sides"}
