"""Proofs of ``holds`` on a box, by interval branch-and-bound in ball arithmetic, with no tolerance.

A search that finds no violation has only failed to refute a bound. For a bound whose two sides
are closed-form functions of a few parameters, :func:`prove` decides ``lhs <= rhs`` exactly on
the whole box: it encloses ``D = rhs - lhs`` over each sub-box with python-flint's ``arb`` balls
(rigorous: every rounding is inside the enclosure), in the mean-value form
``D(box) in D(centre) + grad D(box) . (box - centre)`` with the gradient enclosed by
forward-mode differentiation in ``arb`` (:class:`Dual`), takes the better of that and the plain
enclosure, and:

- proves a box when the enclosure's lower end is >= 0 (no tolerance: ``rtol = atol = 0``);
- refutes the bound when ``D`` at a box's centre is certainly < 0 (an exact counterexample);
- restricts a box to one face where ``D`` is certainly monotone in a coordinate (its minimum is
  on that face: how a bound tight on the box's boundary gets proven);
- otherwise halves it along the coordinate whose gradient term is widest.

A bound attained on a set (``D = 0`` there) is never decided by a difference of two
enclosures; it is proven through a form that is exactly ``rhs - lhs`` (``Proof.difference``),
whose identity :mod:`boundbench.framework.certificates.identity` proves symbolically, or stays undecided. A
form sympy cannot prove equal (an enclosure such as :func:`hull`) makes the proof one "given a
lemma", a lower level (:mod:`boundbench.framework.certificates.levels`). Boxes left when the budget
runs out are returned, never "proven". Coordinates are the search's unit cube (log axes mapped
by ``exp`` inside the enclosure, so the proof covers the very box the search declares).

References
----------
F. Johansson, Arb: efficient arbitrary-precision midpoint-radius interval arithmetic, IEEE
Trans. Computers 66 (2017) (python-flint's ``arb``). R. E. Moore, R. B. Kearfott and M. J.
Cloud, *Introduction to Interval Analysis*, SIAM (2009), ch. 6 (the mean-value form) and 9
(branch and bound, the monotonicity test).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.certificates.intervals import (  # noqa: F401 - the sides' vocabulary, re-exported
    Dual,
    Iv,
    NoEnclosure,
    NotExact,
    _whole,
    cos,
    erf,
    exp,
    hull,
    integer,
    log,
    ncdf,
    npdf,
    pi,
    positive,
    sin,
    sqrt,
)
from boundbench.framework.inputs.boxes import decode_box

PREC = 128  # bits of arb's working precision (about 38 digits)


@dataclass(frozen=True)
class Proof:
    """A bound's sides in ball arithmetic, for :func:`prove`, and what the proof covers.

    Parameters
    ----------
    sides : callable
        ``params -> (lhs, rhs)`` on :class:`Dual` parameters, with this module's functions
        (:func:`erf`, :func:`ncdf`, :func:`sqrt`, :func:`pi`, ...): the bound as the proof
        states it. The same function evaluates on sympy symbols (the identity's proof), so
        constants go through the vocabulary (``sqrt(2)``, not ``arb(2).sqrt()``).
    budget : int, default 20000
        Boxes examined before the proof gives up and reports what is undecided.
    note : str
        The box and the reading, in words.
    difference : callable, optional
        ``params -> rhs - lhs`` in a cancellation-free form. Where a bound is attained on a
        whole set, ``rhs - lhs`` computed as a difference of two enclosures is never certainly
        >= 0 near that set; a form whose terms are each >= 0 by construction decides it in a
        few boxes. It is used as a proof only when sympy proves ``form - (rhs - lhs) = 0`` on
        these very expressions (:func:`boundbench.framework.certificates.identity.prove_identity`); a form
        it cannot (an enclosure, :func:`hull`) gives "proven given a lemma".
    reference : callable, optional
        ``params (floats) -> (lhs, rhs)`` as mpmath numbers, by an independent route (e.g.
        quadrature at 30 digits), where ``sides`` cannot evaluate a side at a point (an
        expectation). The form is checked against it at points (a guard, never the proof).
    identity : str
        The lemma that makes ``difference`` equal ``rhs - lhs``, in words (for the reports).
    attained : str
        Where the bound is attained (ratio 1), in words, for a tight bound.
    space : mapping, optional
        The proof's own box where its parameters are not the search's (a reparametrization,
        e.g. norms and a cosine for two vectors); else the search's box.
    domain : mapping, optional
        The claim's stated domain on the proof's axes (``name -> (low, high)``, infinite ends
        allowed; ``(low, high, "int")`` for a count): what the report compares the proven box
        with. ``None``: the box is all the claim states (a user's declared space).
    domain_text : str
        The claim's domain in words, as the paper states it.
    enclose_domain : bool, default False
        Prove from the form over the whole ``domain`` in one enclosure (infinite ends
        included) instead of branch-and-bound on the box: how a form >= 0 by construction
        covers an unbounded domain.
    reductions : tuple
        Lemmas the prover checks that carry the proof from its box to the rest of the domain
        (:class:`boundbench.framework.certificates.identity.Homogeneous`, :class:`~boundbench.framework.
        identity.EveryCount`).
    lemma : str
        A step the sides themselves rest on that no prover checked (e.g. an expectation's
        bracket by Taylor's theorem): the proof is then "given a lemma", whatever its form.
    beyond : str
        Why the proof does not cover the rest of the claim's domain, where it does not.
    """

    sides: Callable[[dict[str, Dual]], tuple[Any, Any]] = field(repr=False)
    budget: int = 20_000
    note: str = ""
    difference: Callable[[dict[str, Dual]], Any] | None = field(default=None, repr=False)
    reference: Callable[[dict[str, float]], tuple[Any, Any]] | None = field(default=None,
                                                                          repr=False)
    identity: str = ""
    attained: str = ""
    space: Mapping[str, tuple] | None = None
    domain: Mapping[str, tuple] | None = None
    domain_text: str = ""
    enclose_domain: bool = False
    reductions: tuple = ()
    lemma: str = ""
    beyond: str = ""


@dataclass(frozen=True)
class NotProvable:
    """A bound this prover cannot decide, and why in one line (a side defined by an SVM, by
    GD's iterates or by a trained network: no closed form to enclose)."""

    why: str


def _params(space: Mapping[str, tuple], lo: np.ndarray, hi: np.ndarray) -> dict[str, Dual]:
    """The box ``[lo, hi]`` of the unit cube as Dual parameters (balls), log axes by exp."""
    from flint import arb

    n = len(lo)
    out = {}
    for j, (name, spec) in enumerate(space.items()):
        a, b = float(spec[0]), float(spec[1])
        axis = spec[2] if len(spec) == 3 else "lin"
        u = Dual(Iv(arb(float(lo[j])), arb(float(hi[j]))),
                 tuple(Iv.of(1) if i == j else Iv.of(0) for i in range(n)))
        if axis == "log":
            out[name] = exp(arb(a).log() + u * (arb(b).log() - arb(a).log()))
        else:
            out[name] = arb(a) + u * (arb(b) - arb(a))
    return out


def _gap(proof: Proof, space: Mapping[str, tuple], lo: np.ndarray, hi: np.ndarray
         ) -> tuple[Any, Any]:
    """``D = rhs - lhs`` over the box (no tolerance): (value ball, gradient balls), and the
    sides."""
    n = len(lo)
    params = _params(space, lo, hi)
    if proof.difference is None:
        lhs, rhs = proof.sides(params)
        d = Dual._lift(rhs, n) - Dual._lift(lhs, n)
        return d, (lhs, rhs)
    # no gradients with a form: the plain enclosure decides (its terms are >= 0)
    flat = _flat(params)
    lhs, rhs = proof.sides(flat)
    return Dual(_form(proof, flat), (_whole(),) * n), (lhs, rhs)


def _flat(params: dict[str, Dual]) -> dict[str, Dual]:
    """The parameters without their gradients."""
    return {k: Dual(v.v, ()) for k, v in params.items()}


def _form(proof: Proof, params: dict[str, Dual]) -> Iv:
    """The cancellation-free ``rhs - lhs`` over the box, as an interval."""
    assert proof.difference is not None
    out = proof.difference(_flat(params))
    return out.v if isinstance(out, Dual) else Iv.of(out)


def _lower(x: Any) -> float:
    return float(x.lo) if x.lo.is_finite() else -np.inf


def prove(proof: Proof, space: Mapping[str, tuple], *,
          quantities: Callable[[dict[str, float]], dict[str, Any]] | None = None
          ) -> dict[str, Any]:
    """Decide ``lhs <= rhs`` exactly (no tolerance) on the whole box ``space``.

    With a form (``proof.difference``), ``D`` is the form: whether it *is* ``rhs - lhs`` is
    not decided here but by :func:`boundbench.framework.certificates.levels.certify`, which proves
    the identity by sympy and guards it at fixed points before it calls this.

    Returns
    -------
    dict
        ``status`` ("proven on the box", "refuted" or "not proven within its budget"),
        ``boxes`` examined, ``undecided`` (up to 5 boxes left, in parameters), ``counterexample``
        (where refuted: a float point where ``rhs - lhs`` is certainly < 0 in ball arithmetic),
        ``tightest`` (the examined centre nearest to equality: where a tight bound is attained).

    Examples
    --------
    >>> p = Proof(lambda q: (q["x"] * q["x"], q["x"]))
    >>> prove(p, {"x": (0.0, 1.0)})["status"]
    'proven on the box'
    >>> prove(Proof(lambda q: (q["x"] * q["x"], (1 - 1e-6) * q["x"] * q["x"])),
    ...       {"x": (0.5, 1.0)})["status"]
    'refuted'
    """
    from flint import ctx

    if any(len(s) == 3 and s[2] == "int" for s in space.values()):
        raise InvalidArgument("prove takes continuous boxes; enumerate integer axes outside it "
                              "(integer_cases)")
    old = ctx.prec
    ctx.prec = PREC
    try:
        out = _branch_and_bound(proof, space, quantities=quantities)
    finally:
        ctx.prec = old
    if proof.attained:
        out["attained"] = proof.attained
    if proof.difference is not None:
        out["identity"] = proof.identity
        out.pop("tightest", None)  # a form's few boxes say nothing of where it is tight
    return out


def enclose_domain(proof: Proof, domain: Mapping[str, tuple]) -> dict[str, Any]:
    """``rhs - lhs`` from the proof's form over the whole ``domain`` (infinite ends included) in
    one enclosure: "proven on the domain" when its lower end is >= 0. How a form that is >= 0
    by construction (squares, quotients of non-negative terms) covers an unbounded domain that
    no branch-and-bound box can (the form's identity is proven by the caller, as for
    :func:`prove`)."""
    from flint import arb, ctx

    if proof.difference is None:
        raise InvalidArgument("enclose_domain needs a cancellation-free form (difference)")
    old = ctx.prec
    ctx.prec = PREC
    try:
        params = {}
        for name, spec in domain.items():
            lo, hi = (arb(float(v)) if np.isfinite(float(v)) else arb(str(float(v)))
                      for v in spec[:2])
            params[name] = Dual(Iv(lo, hi), ())
        low = _lower(_form(proof, params))
        box = {k: [float(v[0]), float(v[1])] for k, v in domain.items()}
    finally:
        ctx.prec = old
    status = "proven on the box" if low >= 0 else "not proven within its budget"
    out: dict[str, Any] = {
        "status": status, "boxes": 1, "budget": 1, "box": box, "n_undecided": 0 if low >= 0
        else 1, "undecided": [] if low >= 0 else [box], "form_lower_end": low,
        "method": "one enclosure of the cancellation-free form over the whole domain "
                  "(arb, infinite ends included)",
        "identity": proof.identity}
    if proof.attained:
        out["attained"] = proof.attained
    return out


def _branch_and_bound(proof: Proof, space: Mapping[str, tuple], *,
                      quantities: Callable[[dict[str, float]], dict[str, Any]] | None
                      ) -> dict[str, Any]:
    n = len(space)
    stack = [(np.zeros(n), np.ones(n))]
    boxes = 0
    tight: tuple[float, np.ndarray] | None = None
    while stack and boxes < proof.budget:
        lo, hi = stack.pop()
        boxes += 1
        d, _ = _gap(proof, space, lo, hi)
        mid = (lo + hi) / 2
        dc, (lc, rc) = _gap(proof, space, mid, mid)
        if dc.v.is_finite() and dc.v.hi < 0:
            at = _counterexample(proof, space, mid)
            if at is not None:
                return _result("refuted", boxes, proof, space, [], at, quantities, tight)
        ratio = _ratio(lc, rc)
        if ratio is not None and (tight is None or ratio > tight[0]):
            tight = (ratio, mid)
        # the mean-value form over the box, beside the plain enclosure
        mv = dc.v
        for i in range(n):
            mv = mv + d.g[i] * float((hi[i] - lo[i]) / 2) * _unit_ball()
        low = max(_lower(d.v), _lower(mv))
        if low >= 0:
            continue
        grads = [d.g[i] for i in range(n)]
        # D monotone in u_i over the box (its partial derivative's enclosure >= 0, or <= 0:
        # non-strict is enough for a Lipschitz D, and is what proves a bound tight at a point,
        # exp(x) >= 1 + x at 0, where the derivative's enclosure starts at exactly 0): its
        # minimum over the box is on one face
        mono = [i for i in range(n) if hi[i] > lo[i] and grads[i].is_finite()
                and (grads[i].lo >= 0 or grads[i].hi <= 0)]
        if mono:
            i = mono[0]
            lo2, hi2 = lo.copy(), hi.copy()
            if grads[i].lo >= 0:
                hi2[i] = lo[i]
            else:
                lo2[i] = hi[i]
            stack.append((lo2, hi2))
            continue
        side = hi - lo
        # look ahead: the cut whose worse half has the best plain lower bound; among cuts that
        # decide nothing (an enclosure not yet finite), the widest side. A gradient enclosure
        # over a wide box is too loose to choose by
        scores = np.full(n, -np.inf)
        for j in range(n):
            if side[j] <= 0:
                continue
            cut = (lo[j] + hi[j]) / 2
            a_hi, b_lo = hi.copy(), lo.copy()
            a_hi[j] = cut
            b_lo[j] = cut
            scores[j] = min(_lower(_gap(proof, space, lo, a_hi)[0].v),
                            _lower(_gap(proof, space, b_lo, hi)[0].v))
        if np.all(side <= 0):  # a point that is not decided: nothing left to split
            stack.append((lo, hi))
            break
        i = int(np.argmax(scores)) if np.isfinite(scores).any() and np.ptp(
            scores[np.isfinite(scores)]) > 0 else int(np.argmax(side))
        cut = (lo[i] + hi[i]) / 2
        if not lo[i] < cut < hi[i]:  # a side below float64's resolution: no split left
            stack.append((lo, hi))
            break
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[i] = cut
        right_lo[i] = cut
        stack.extend([(lo, left_hi), (right_lo, hi)])
    status = "proven on the box" if not stack else "not proven within its budget"
    return _result(status, boxes, proof, space, stack, None, quantities, tight)


def _counterexample(proof: Proof, space: Mapping[str, tuple], mid: np.ndarray
                    ) -> dict[str, float] | None:
    """The centre as float64 parameters (the point a replay recomputes) where ``rhs - lhs``
    at exactly those floats is certainly < 0; ``None`` if rounding the centre to floats lost
    it (the box is then split on)."""
    from flint import arb

    at = _point(space, mid)
    params = {k: Dual(Iv(arb(v), arb(v)), ()) for k, v in at.items()}
    lhs, rhs = proof.sides(params)
    d = Dual._lift(rhs, 0).v - Dual._lift(lhs, 0).v
    return at if d.is_finite() and d.hi < 0 else None


def _unit_ball() -> Iv:
    from flint import arb

    return Iv(arb(-1), arb(1))


def _ratio(lhs: Any, rhs: Any) -> float | None:
    lv = lhs.v if isinstance(lhs, Dual) else Iv.of(lhs)
    rv = rhs.v if isinstance(rhs, Dual) else Iv.of(rhs)
    if not (lv.is_finite() and rv.is_finite()) or float(rv.mid()) <= 0:
        return None
    return float(lv.mid()) / float(rv.mid())


def _point(space: Mapping[str, tuple], u: np.ndarray) -> dict[str, float]:
    return {k: float(v) for k, v in decode_box(space, np.asarray(u, dtype=float)).items()}


def _result(status: str, boxes: int, proof: Proof, space: Mapping[str, tuple], left: list,
            counter: dict[str, float] | None, quantities: Any,
            tight: tuple[float, np.ndarray] | None) -> dict[str, Any]:
    def box(lo: np.ndarray, hi: np.ndarray) -> dict[str, list[float]]:
        a, b = _point(space, lo), _point(space, hi)
        return {k: [a[k], b[k]] for k in a}

    out: dict[str, Any] = {
        "status": status, "boxes": boxes, "budget": proof.budget, "rtol": 0.0, "atol": 0.0,
        "method": "interval branch-and-bound on intervals with exact arb endpoints "
                  "(python-flint), mean-value form with forward-mode gradients, monotonicity "
                  "test, look-ahead cuts; lhs <= rhs decided with no tolerance",
        "box": {k: list(v) for k, v in space.items()}, "n_undecided": len(left),
        "undecided": [box(lo, hi) for lo, hi in left[:5]]}
    if counter is not None:
        out["counterexample"] = counter
    if tight is not None:
        at = _point(space, tight[1])
        out["tightest"] = {"ratio": tight[0], "at": quantities(at) if quantities else at,
                           "attained": tight[0] >= 1 - 1e-6}
    return out


MAX_INTEGER_CASES = 64


def integer_cases(space: Mapping[str, tuple]) -> list[dict[str, tuple]]:
    """The box once per combination of its integer axes' values (each fixed as ``(v, v)``), so
    :func:`prove`, which takes continuous boxes, covers all of it; at most
    :data:`MAX_INTEGER_CASES` combinations."""
    import itertools

    ints = {k: range(int(v[0]), int(v[1]) + 1) for k, v in space.items()
            if len(v) == 3 and v[2] == "int"}
    combos = list(itertools.product(*ints.values()))
    if len(combos) > MAX_INTEGER_CASES:
        raise InvalidArgument(f"the box has {len(combos)} integer combinations; a proof enumerates at "
                              f"most {MAX_INTEGER_CASES}")
    return [{k: ((float(dict(zip(ints, c, strict=True))[k]),) * 2 if k in ints else v)
             for k, v in space.items()} for c in combos]
