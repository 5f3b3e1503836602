"""Exact first-order certificates of Fu et al.'s PEP lemmas, for every step size of their range.

A performance-estimation problem's dual is a proof: non-negative multipliers ``lam_k`` of
inequalities every function of the class satisfies (its interpolation conditions at the points
the lemma involves, and the lemma's own assumptions such as ``f >= 0``) such that

    target - sum_k lam_k ineq_k = v^T S v  with  S positive semidefinite,

an identity in the Gram entries ``<a, b>`` of the points and gradients and in the function
values, where ``target >= 0`` is the lemma. PEPit solves that SDP in floating point at one step
size; here the multipliers are rational functions of ``t = eta beta`` and of ``beta``, and the
identity, ``lam_k >= 0`` and ``S >= 0`` are verified by sympy, exactly, for every ``t`` of the
lemma's range and every ``beta > 0``:

* the residual's coefficients of the function values, and its constant, are identically 0;
* ``S >= 0`` by its principal minors (all of them, not only the leading ones: the exact
  criterion for a semidefinite matrix), each a rational function whose sign on the range is
  decided by :func:`sympy.solve_univariate_inequality` after ``beta`` is factored out as a
  positive monomial (the certificate must be homogeneous in ``beta``, or it is not accepted).

Where do the multipliers come from? A PEP's optimal dual is a face, not a point: PEPit's solver
returns an interior point of it, which is not a function of low degree of the step size
(Lemma A.5.1 at ``t = 0.25``: multipliers 1.434 and 0.434, where 1 and 0 is a certificate). So
the same dual is solved again (cvxpy, Clarabel) for its sparsest member (least sum of
multipliers), at five step sizes and two values of ``beta``; each multiplier is read as
``beta^e p(t)`` with ``p`` a polynomial of degree at most 2 with small rational coefficients,
and the guess is then verified exactly as above. The guess can be wrong; the verification
cannot accept a wrong one: it is the proof, and a failed one leaves the lemma at "numerical
certificate".

References
----------
A. B. Taylor, J. M. Hendrickx and F. Glineur, Smooth strongly convex interpolation and exact
worst-case performance of first-order methods, Math. Program. 161 (2017): Theorem 4 (smooth
convex interpolation) and Theorem 3.10 (smooth, not necessarily convex), the conditions PEPit's
``SmoothConvexFunction`` and ``SmoothFunction`` impose. B. Goujaud et al., PEPit, Math. Program.
Comput. 16 (2024).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import sympy as sp

ETA, BETA, T = sp.symbols("eta beta t", positive=True)
_SAMPLE = (0.2, 0.4, 0.6, 0.8, 1.0)  # fractions of the range's upper end at which duals are read


class Vec:
    """A vector of the Gram representation: a combination of named basis vectors."""

    def __init__(self, terms: dict[str, sp.Expr]):
        self.terms = {k: v for k, v in terms.items() if v != 0}

    @classmethod
    def basis(cls, name: str) -> Vec:
        return cls({name: sp.Integer(1)})

    def __add__(self, o: Vec) -> Vec:
        keys = set(self.terms) | set(o.terms)
        return Vec({k: self.terms.get(k, 0) + o.terms.get(k, 0) for k in keys})

    def __sub__(self, o: Vec) -> Vec:
        return self + (-1) * o

    def __rmul__(self, c: Any) -> Vec:
        return Vec({k: c * v for k, v in self.terms.items()})

    def dot(self, o: Vec) -> sp.Expr:
        return sp.Add(*[a * b * gram(i, j) for i, a in self.terms.items()
                        for j, b in o.terms.items()])


def gram(i: str, j: str) -> sp.Symbol:
    """The Gram entry ``<i, j>`` (one symbol for both orders)."""
    a, b = sorted((i, j))
    return sp.Symbol(f"<{a},{b}>")


@dataclass(frozen=True)
class Point:
    name: str
    x: Vec
    g: Vec
    f: sp.Symbol


def point(name: str, x: Vec) -> Point:
    return Point(name, x, Vec.basis(f"g_{name}"), sp.Symbol(f"f_{name}"))


def smooth_convex(pi: Point, pj: Point, L: sp.Expr) -> sp.Expr:
    """PEPit's ``SmoothConvexFunction`` condition (i, j), as ``>= 0``: Taylor et al., Thm 4."""
    d = pi.g - pj.g
    return pi.f - pj.f - pj.g.dot(pi.x - pj.x) - d.dot(d) / (2 * L)


def smooth(pi: Point, pj: Point, L: sp.Expr) -> sp.Expr:
    """PEPit's ``SmoothFunction`` condition (i, j), as ``>= 0``: Taylor et al., Thm 3.10."""
    dx, dg = pi.x - pj.x, pi.g - pj.g
    return (pi.f - pj.f + L / 4 * dx.dot(dx) - (pi.g + pj.g).dot(dx) / 2
            - dg.dot(dg) / (4 * L))


@dataclass(frozen=True)
class Setup:
    """One lemma as a certificate problem: ``target >= 0`` to prove, from ``inequalities``
    (name, expression ``>= 0``) valid on the class, for ``t = eta beta`` in ``(0, t_max]``
    (``t_max`` None: the lemma has no step size)."""

    lemma: str
    function_class: str
    statement: str
    target: sp.Expr
    inequalities: tuple[tuple[str, sp.Expr], ...]
    basis: tuple[str, ...]
    t_max: sp.Rational | None
    points: tuple[Point, ...] = ()


def _pairs(points: list[Point], cond: Callable, name: str) -> list[tuple[str, sp.Expr]]:
    """Every ordered pair's condition, in PEPit's order (i, j), i != j."""
    return [(f"{name}({a.name}, {b.name})", cond(a, b, BETA)) for a in points for b in points
            if a is not b]


def a12(t_max: Any = 2) -> Setup:
    """Lemma A.1.2: ``||(u - eta g_u) - (w - eta g_w)||^2 <= ||u - w||^2`` for convex
    beta-smooth f and ``0 < eta beta <= 2``."""
    u, w = point("u", Vec.basis("u")), point("w", Vec.basis("w"))
    d, s = u.x - w.x, (u.x - ETA * u.g) - (w.x - ETA * w.g)
    return Setup("A.1.2", "convex beta-smooth", "||GD(u) - GD(w)||^2 <= ||u - w||^2",
                 d.dot(d) - s.dot(s), tuple(_pairs([u, w], smooth_convex, "smooth convex")),
                 ("u", "w", "g_u", "g_w"), sp.Rational(t_max), (u, w))


def a13(factor: Any = 2) -> Setup:
    """Lemma A.1.3: ``||grad f(w)||^2 <= factor beta f(w)`` for every non-negative
    beta-smooth f (not only convex ones): the conditions between ``w`` and the gradient step
    ``y = w - g_w / beta``, and the assumption ``f(y) >= 0``."""
    w = point("w", Vec.basis("w"))
    y = point("y", w.x - (1 / BETA) * w.g)
    return Setup("A.1.3", "non-negative beta-smooth (not necessarily convex)",
                 f"||grad f||^2 <= {factor} beta f", sp.Rational(factor) * BETA * w.f
                 - w.g.dot(w.g), (*_pairs([w, y], smooth, "smooth"), ("f(y) >= 0", y.f)),
                 ("w", "g_w", "g_y"), None, (w, y))


def a51(t_max: Any = 1) -> Setup:
    """Lemma A.5.1: ``f(w - eta g) <= f(w) - (eta/2) ||g||^2`` for every beta-smooth f and
    ``0 < eta beta <= 1``."""
    w = point("w", Vec.basis("w"))
    n = point("next", w.x - ETA * w.g)
    return Setup("A.5.1", "beta-smooth (not necessarily convex)",
                 "f(w - eta g) <= f(w) - (eta/2)||g||^2", w.f - ETA / 2 * w.g.dot(w.g) - n.f,
                 tuple(_pairs([w, n], smooth, "smooth")), ("w", "g_w", "g_next"),
                 sp.Rational(t_max), (w, n))


SETUPS: dict[str, Callable[..., Setup]] = {"A.1.2": a12, "A.1.3": a13, "A.5.1": a51}


# -- the exact check ------------------------------------------------------------------------
def _split(expr: sp.Expr, basis: tuple[str, ...]) -> tuple[dict[sp.Symbol, sp.Expr],
                                                           sp.Matrix, sp.Expr]:
    """An expression linear in the function values and the Gram entries: its function-value
    coefficients, its Gram matrix ``S`` (``expr = sum S_ij <i, j>`` over ordered pairs), and
    what is left (must be 0)."""
    expr = sp.expand(expr)
    fs = {s: expr.coeff(s) for s in expr.free_symbols if s.name.startswith("f_")}
    n = len(basis)
    S = sp.zeros(n, n)
    rest = expr - sum(c * s for s, c in fs.items())
    for i in range(n):
        for j in range(i, n):
            c = rest.coeff(gram(basis[i], basis[j]))
            S[i, j] = S[j, i] = c if i == j else c / 2
            rest -= c * gram(basis[i], basis[j])
    return fs, S, sp.expand(rest)


def _nonnegative(expr: sp.Expr, t_max: Any) -> tuple[bool, str]:
    """``expr >= 0`` for every ``beta > 0`` and every ``t = eta beta`` in ``(0, t_max]``,
    exactly; else False and where it fails (or why it is not decided)."""
    e = sp.factor(sp.cancel(sp.sympify(expr).subs(ETA, T / BETA)))
    if e == 0:
        return True, "identically 0"
    at1 = sp.factor(e.subs(BETA, 1))
    ratio = sp.simplify(e / at1) if at1 != 0 else None
    monomial = ratio is not None and (ratio == 1 or ratio == BETA or (
        ratio.is_Pow and ratio.base == BETA and ratio.exp.is_integer))
    if not monomial:
        return False, f"not a positive monomial in beta times a function of t: {e}"
    if not at1.free_symbols:
        return bool(at1 >= 0), f"= {at1} beta^k"
    if t_max is None:
        return False, f"depends on t, but the lemma has no step size: {at1}"
    sol = sp.solve_univariate_inequality(at1 >= 0, T, relational=False)
    rng = sp.Interval.Lopen(0, t_max)
    if rng.is_subset(sol):
        return True, f"{at1} >= 0 on t in (0, {t_max}]"
    bad = rng - sol
    lo, hi = bad.inf, bad.sup
    at = (lo + hi) / 2 if hi > lo else lo
    return False, f"{at1} < 0 for t in {_text(bad)} (e.g. t = {sp.nsimplify(at)})"


def _text(s: sp.Set) -> str:
    """An interval as a reader writes it: ``(2, 3]``."""
    if isinstance(s, sp.Interval):
        return (f"{'(' if s.left_open else '['}{s.start}, {s.end}"
                f"{')' if s.right_open else ']'}")
    if isinstance(s, sp.Union):
        return " u ".join(_text(a) for a in s.args)
    return str(s)


def verify(setup: Setup, multipliers: list[sp.Expr]) -> dict[str, Any]:
    """Check a certificate exactly: the residual is a pure Gram form, every multiplier is
    non-negative and every principal minor of ``S`` is, for every ``beta > 0`` and ``t`` of the
    range. ``proven`` only when every check passed."""
    pairs = zip(multipliers, setup.inequalities, strict=True)
    residual = setup.target - sum(lam * e for lam, (_, e) in pairs)
    fs, S, rest = _split(residual, setup.basis)
    checks: list[dict[str, Any]] = []
    stray = {str(s): str(c) for s, c in fs.items() if sp.simplify(c) != 0}
    checks.append({"what": "the residual has no function value and no constant",
                   "ok": not stray and sp.simplify(rest) == 0,
                   "detail": f"left: {stray or ''} {rest if rest != 0 else ''}".strip()})
    for lam, (name, _) in zip(multipliers, setup.inequalities, strict=True):
        ok, why = _nonnegative(lam, setup.t_max)
        checks.append({"what": f"multiplier of {name} >= 0", "ok": ok, "detail": why})
    n = S.shape[0]
    from itertools import combinations

    for k in range(1, n + 1):
        for idx in combinations(range(n), k):
            m = sp.factor(S.extract(list(idx), list(idx)).det())
            ok, why = _nonnegative(m, setup.t_max)
            checks.append({"what": f"principal minor {[setup.basis[i] for i in idx]} of S >= 0",
                           "ok": ok, "detail": why})
    return {"proven": all(c["ok"] for c in checks), "checks": checks,
            "multipliers": {name: str(lam) for lam, (name, _) in
                            zip(multipliers, setup.inequalities, strict=True)},
            "S": [[str(sp.factor(S[i, j])) for j in range(n)] for i in range(n)],
            "basis": list(setup.basis)}


# -- the guess: the sparsest dual at a few step sizes, read as beta^e p(t) ---------------------
def _coefficients(expr: sp.Expr, setup: Setup, subs: dict) -> tuple[np.ndarray, np.ndarray]:
    fs, S, _ = _split(sp.sympify(expr).subs(subs), setup.basis)
    names = sorted({s for _, e in setup.inequalities for s in sp.expand(e).free_symbols
                    if s.name.startswith("f_")} | set(setup.target.free_symbols), key=str)
    fv = np.array([float(fs.get(s, 0)) for s in names if s.name.startswith("f_")])
    return fv, np.array(S.evalf(), dtype=float)


def sparsest_dual(setup: Setup, *, t: float | None, beta: float) -> np.ndarray | None:
    """The certificate problem at one ``(t, beta)`` in floating point (cvxpy, Clarabel):
    multipliers ``lam >= 0`` whose residual has no function value and a PSD Gram matrix, of
    least sum. None where it is infeasible (the lemma fails there, or the conditions used are
    too few)."""
    import cvxpy as cp

    subs = {BETA: beta, ETA: (t or 0) / beta}
    fT, ST = _coefficients(setup.target, setup, subs)
    parts = [_coefficients(e, setup, subs) for _, e in setup.inequalities]
    lam = cp.Variable(len(parts), nonneg=True)
    S = ST - sum(lam[k] * parts[k][1] for k in range(len(parts)))
    cons = [fT - sum(lam[k] * parts[k][0] for k in range(len(parts))) == 0,
            (S + S.T) / 2 >> 0]
    prob = cp.Problem(cp.Minimize(cp.sum(lam)), cons)
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:
        return None
    return None if prob.status not in ("optimal", "optimal_inaccurate") else np.asarray(lam.value)


def _rational(x: float, den: int = 64) -> sp.Rational:
    f = Fraction(x).limit_denominator(den)
    return sp.Rational(f.numerator, f.denominator)


def guess(setup: Setup) -> list[sp.Expr] | None:
    """Multipliers as ``beta^e p(t)``: ``e`` from the duals at ``beta = 1`` and 2, ``p`` the
    lowest-degree polynomial (at most 2) with rational coefficients (denominators up to 64)
    that meets the duals at the sampled step sizes within 1e-4."""
    ts = [None] if setup.t_max is None else [float(setup.t_max) * s for s in _SAMPLE]
    d1 = [sparsest_dual(setup, t=t, beta=1.0) for t in ts]
    d2 = [sparsest_dual(setup, t=t, beta=2.0) for t in ts]
    if any(d is None for d in d1 + d2):
        return None
    A1, A2 = np.array(d1), np.array(d2)
    out: list[sp.Expr] = []
    for k in range(A1.shape[1]):
        y1, y2 = A1[:, k], A2[:, k]
        if np.max(np.abs(y1)) < 1e-6 and np.max(np.abs(y2)) < 1e-6:
            out.append(sp.Integer(0))
            continue
        e = int(round(float(np.log2(np.max(np.abs(y2)) / np.max(np.abs(y1))))))
        found = None
        for deg in range(0, 1 + min(2, len(ts) - 1)):
            xs = np.array([0.0 if t is None else t for t in ts])
            c = np.polyfit(xs, y1, deg) if len(ts) > 1 else np.array([y1[0]])
            p = sum(_rational(ci) * T ** (len(c) - 1 - i) for i, ci in enumerate(c))
            vals = np.array([float(p.subs(T, x)) for x in xs])
            if np.max(np.abs(vals - y1)) < 1e-4:
                found = p
                break
        if found is None:
            return None
        out.append(sp.expand(BETA ** e * found.subs(T, ETA * BETA)))
    return out


@dataclass(frozen=True)
class ExactCertificate:
    """The outcome for one lemma: ``proven`` over its whole class and step-size range, with
    every exact check; ``why`` where not."""

    lemma: str
    function_class: str
    statement: str
    step_range: str
    proven: bool
    why: str
    detail: dict[str, Any] = field(repr=False, default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"lemma": self.lemma, "class": self.function_class, "statement": self.statement,
                "step_range": self.step_range, "proven": self.proven, "why": self.why,
                **self.detail}


def certify(setup: Setup) -> ExactCertificate:
    """The exact certificate of one lemma (:func:`guess`, then :func:`verify`)."""
    rng = ("every beta > 0 (no step size)" if setup.t_max is None else
           f"every beta > 0 and eta beta in (0, {setup.t_max}]")
    lams = guess(setup)
    if lams is None:
        return ExactCertificate(setup.lemma, setup.function_class, setup.statement, rng, False,
                                "no certificate of the form beta^e p(t) was found (the dual is "
                                "infeasible at a sampled step size, or not a low-degree "
                                "polynomial in it)")
    res = verify(setup, lams)
    bad = [c for c in res["checks"] if not c["ok"]]
    why = ("every exact check passed" if not bad else
           "; ".join(f"{c['what']}: {c['detail']}" for c in bad[:3]))
    return ExactCertificate(setup.lemma, setup.function_class, setup.statement, rng,
                            res["proven"], why, res)


def certify_lemma(name: str, planted: dict[str, Any]) -> dict[str, Any]:
    """A lemma's exact certificate, and its control: the same multipliers verified on the
    planted variant (``planted``: the arguments of the lemma's setup that make it false, a
    wider step range or a smaller constant), which must fail, with where."""
    setup = SETUPS[name]()
    res = certify(setup)
    out = res.to_dict()
    if res.proven:
        lams = [sp.sympify(v, locals={"eta": ETA, "beta": BETA})
                for v in res.detail["multipliers"].values()]
        ctrl = verify(SETUPS[name](**planted), lams)
        bad = [c for c in ctrl["checks"] if not c["ok"]]
        again = certify(SETUPS[name](**planted))
        out["planted"] = {"setup": planted, "refuted": not ctrl["proven"],
                          "why": "; ".join(f"{c['what']}: {c['detail']}" for c in bad[:2]),
                          "own_certificate_found": again.proven}
    return out
