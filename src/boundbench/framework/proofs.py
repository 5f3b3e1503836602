"""Proofs of ``holds`` on a bound's declared box, by interval branch-and-bound in ball arithmetic.

A search that finds no violation has only failed to refute a bound. For a bound whose two sides
are closed-form functions of a few parameters, :func:`prove` decides it on the whole box: it
encloses ``D = rhs (1 + rtol) + atol - lhs`` over each sub-box with python-flint's ``arb`` balls
(rigorous: every rounding is inside the enclosure), in the mean-value form
``D(box) in D(centre) + grad D(box) . (box - centre)`` with the gradient enclosed by
forward-mode differentiation in ``arb`` (:class:`Dual`), takes the better of that and the plain
enclosure, and:

- proves a box when the enclosure's lower end is >= 0;
- refutes the bound when ``D`` at a box's centre is certainly < 0 (an exact counterexample);
- restricts a box to one face where ``D`` is certainly monotone in a coordinate (its minimum is
  on that face: how a bound tight on the box's boundary gets proven);
- otherwise halves it along the coordinate whose gradient term is widest.

Boxes left when the budget runs out are returned: the verdict word stays ``holds`` and the
evidence says "proven on the box" or "not refuted in N evaluations" with what is undecided.
Coordinates are the search's unit cube (log axes mapped by ``exp`` inside the enclosure, so the
proof covers the very box the search declares).

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
from boundbench.framework.intervals import (  # noqa: F401 - the sides' vocabulary, re-exported
    Dual,
    Iv,
    _whole,
    cos,
    erf,
    exp,
    hull,
    log,
    ncdf,
    npdf,
    positive,
    sin,
    sqrt,
)

PREC = 128  # bits of arb's working precision (about 38 digits)


@dataclass(frozen=True)
class Proof:
    """A bound's sides in ball arithmetic, for :func:`prove`.

    Parameters
    ----------
    sides : callable
        ``params -> (lhs, rhs)`` on :class:`Dual` parameters, with this module's functions
        (:func:`erf`, :func:`ncdf`, :func:`sqrt`, ...): the search's sides, written again.
    budget : int, default 20000
        Boxes examined before the proof gives up and reports what is undecided.
    note : str
        The box and the reading, in words.
    difference : callable, optional
        ``params -> rhs - lhs`` in a cancellation-free form (gradient-free :class:`Dual`
        parameters; the result may be an enclosure, e.g. a mean-value point as :func:`hull`).
        Where a bound is attained on a whole set, ``rhs - lhs`` computed as a difference of two
        enclosures is never certainly >= 0 near that set, and no box count decides it; a form
        whose terms are each >= 0 by construction does, in a few boxes. The proof then encloses
        ``D = rtol rhs + atol + difference``.
    reference : callable, optional
        ``params (floats) -> (lhs, rhs)`` as mpmath numbers, by an independent route (e.g.
        quadrature at 30 digits), where ``sides`` cannot evaluate a side at a point (an
        expectation). The difference form is checked against it.
    identity : str
        The lemma that makes ``difference`` equal ``rhs - lhs``, in words (for the reports);
        it is checked, not trusted: at :data:`CHECK_POINTS` fixed points of the box the form
        must enclose ``rhs - lhs`` from ``sides`` (or ``reference``), or the proof is refused.
    attained : str
        Where the bound is attained (ratio 1), in words, for a tight bound.
    """

    sides: Callable[[dict[str, Dual]], tuple[Any, Any]] = field(repr=False)
    budget: int = 20_000
    note: str = ""
    difference: Callable[[dict[str, Dual]], Any] | None = field(default=None, repr=False)
    reference: Callable[[dict[str, float]], tuple[Any, Any]] | None = field(default=None,
                                                                          repr=False)
    identity: str = ""
    attained: str = ""


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


def _gap(proof: Proof, space: Mapping[str, tuple], lo: np.ndarray, hi: np.ndarray,
         rtol: float, atol: float) -> tuple[Any, Any]:
    """``D = rhs (1 + rtol) + atol - lhs`` over the box: (value ball, gradient balls)."""
    from flint import arb

    n = len(lo)
    params = _params(space, lo, hi)
    if proof.difference is None:
        lhs, rhs = proof.sides(params)
        d = Dual._lift(rhs, n) * (1 + arb(rtol)) + arb(atol) - Dual._lift(lhs, n)
        return d, (lhs, rhs)
    # no gradients with a form: the plain enclosure decides (its terms are >= 0)
    flat = _flat(params)
    lhs, rhs = proof.sides(flat)
    d = Dual._lift(rhs, 0) * arb(rtol) + arb(atol) + _form(proof, flat)
    return Dual(d.v, (_whole(),) * n), (lhs, rhs)


def _flat(params: dict[str, Dual]) -> dict[str, Dual]:
    """The parameters without their gradients."""
    return {k: Dual(v.v, ()) for k, v in params.items()}


def _form(proof: Proof, params: dict[str, Dual]) -> Iv:
    """The cancellation-free ``rhs - lhs`` over the box, as an interval."""
    assert proof.difference is not None
    out = proof.difference(_flat(params))
    return out.v if isinstance(out, Dual) else Iv.of(out)


CHECK_POINTS = 64  # fixed points of the box where a difference form must match the sides


def check_form(proof: Proof, space: Mapping[str, tuple]) -> dict[str, Any]:
    """Check a proof's cancellation-free form against its sides at fixed points of the box:
    the box's centre and the first :data:`CHECK_POINTS` points of the unscrambled Halton
    sequence (corners and faces included by its first point). At each, the form's enclosure
    must meet ``rhs - lhs`` from ``sides`` (an arb enclosure), or from ``reference`` (mpmath at
    30 digits, within 1e-15 relative). A wrong rewrite (a dropped factor, a sign) fails here, so the proof
    never rests on an unchecked identity."""
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


def _lower(x: Any) -> float:
    return float(x.lo) if x.lo.is_finite() else -np.inf


def prove(proof: Proof, space: Mapping[str, tuple], *, rtol: float, atol: float = 0.0,
          quantities: Callable[[dict[str, float]], dict[str, Any]] | None = None
          ) -> dict[str, Any]:
    """Decide ``lhs <= rhs (1 + rtol) + atol`` on the whole box ``space`` (a :class:`Search`'s).

    Returns
    -------
    dict
        ``status`` ("proven on the box", "refuted" or "not proven within its budget"),
        ``boxes`` examined, ``undecided`` (up to 5 boxes left, in parameters), ``counterexample``
        (where refuted), ``tightest`` (the examined centre nearest to equality: where a tight
        bound is attained) and the tolerance.

    Examples
    --------
    >>> p = Proof(lambda q: (q["x"] * q["x"], q["x"]))
    >>> prove(p, {"x": (0.0, 1.0)}, rtol=1e-9)["status"]
    'proven on the box'
    """
    from flint import ctx

    if any(len(s) == 3 and s[2] == "int" for s in space.values()):
        raise InvalidArgument("prove takes continuous boxes; enumerate integer axes outside it "
                              "(integer_cases)")
    old = ctx.prec
    ctx.prec = PREC
    try:
        check = check_form(proof, space) if proof.difference is not None else None
        if check is not None and check["disagree"]:
            return {"status": "not a proof: its cancellation-free form disagrees with the sides",
                    "form_check": check, "identity": proof.identity, "boxes": 0,
                    "budget": proof.budget, "n_undecided": 1, "undecided": []}
        out = _branch_and_bound(proof, space, rtol=rtol, atol=atol, quantities=quantities)
    finally:
        ctx.prec = old
    if check is not None:
        out.update(form_check=check, identity=proof.identity)
    if proof.attained:
        out["attained"] = proof.attained
    if proof.difference is not None:
        out.pop("tightest", None)  # a form's few boxes say nothing of where it is tight
    return out


def _branch_and_bound(proof: Proof, space: Mapping[str, tuple], *, rtol: float, atol: float,
                      quantities: Callable[[dict[str, float]], dict[str, Any]] | None
                      ) -> dict[str, Any]:
    n = len(space)
    stack = [(np.zeros(n), np.ones(n))]
    boxes = 0
    tight: tuple[float, np.ndarray] | None = None
    while stack and boxes < proof.budget:
        lo, hi = stack.pop()
        boxes += 1
        d, _ = _gap(proof, space, lo, hi, rtol, atol)
        mid = (lo + hi) / 2
        dc, (lc, rc) = _gap(proof, space, mid, mid, rtol, atol)
        if dc.v.is_finite() and dc.v.hi < 0:
            return _result("refuted", boxes, proof, space, [], mid, quantities, rtol, atol,
                           tight)
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
        mono = [i for i in range(n) if hi[i] > lo[i] and grads[i].is_finite()
                and (grads[i].lo > 0 or grads[i].hi < 0)]
        if mono:  # D monotone in u_i over the box: its minimum is on one face
            i = mono[0]
            lo2, hi2 = lo.copy(), hi.copy()
            if grads[i].lo > 0:
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
            scores[j] = min(_lower(_gap(proof, space, lo, a_hi, rtol, atol)[0].v),
                            _lower(_gap(proof, space, b_lo, hi, rtol, atol)[0].v))
        if np.all(side <= 0):  # a point that is not decided: nothing left to split
            stack.append((lo, hi))
            break
        i = int(np.argmax(scores)) if np.isfinite(scores).any() and np.ptp(
            scores[np.isfinite(scores)]) > 0 else int(np.argmax(side))
        cut = (lo[i] + hi[i]) / 2
        left_hi, right_lo = hi.copy(), lo.copy()
        left_hi[i] = cut
        right_lo[i] = cut
        stack.extend([(lo, left_hi), (right_lo, hi)])
    status = "proven on the box" if not stack else "not proven within its budget"
    return _result(status, boxes, proof, space, stack, None, quantities, rtol, atol, tight)


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
    from boundbench.framework.search import decode_box

    return {k: float(v) for k, v in decode_box(space, np.asarray(u, dtype=float)).items()}


def _result(status: str, boxes: int, proof: Proof, space: Mapping[str, tuple], left: list,
            counter: np.ndarray | None, quantities: Any, rtol: float, atol: float,
            tight: tuple[float, np.ndarray] | None) -> dict[str, Any]:
    def box(lo: np.ndarray, hi: np.ndarray) -> dict[str, list[float]]:
        a, b = _point(space, lo), _point(space, hi)
        return {k: [a[k], b[k]] for k in a}

    out: dict[str, Any] = {
        "status": status, "boxes": boxes, "budget": proof.budget, "rtol": rtol, "atol": atol,
        "method": "interval branch-and-bound on intervals with exact arb endpoints "
                  "(python-flint), mean-value form with forward-mode gradients, monotonicity "
                  "test, look-ahead cuts",
        "box": {k: list(v) for k, v in space.items()}, "n_undecided": len(left),
        "undecided": [box(lo, hi) for lo, hi in left[:5]]}
    if counter is not None:
        out["counterexample"] = _point(space, counter)
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


def certification(verdict: Any, search: Any, *, proof: Proof | None = None) -> dict[str, Any]:
    """What a ``holds`` rests on, for the evidence and every report: "proven on the box" (an
    interval proof, :func:`prove`) or "not refuted in N evaluations" (the random family and the
    search), with the box and, where a proof was tried and left boxes, how many."""
    from boundbench.framework.verdicts import NUMERIC_RTOL

    ev = verdict.evidence
    n = int(ev.get("n_instances") or 0) + int(ev.get("search_evals") or 0)
    out: dict[str, Any] = {"status": f"not refuted in {n:,} evaluations", "evaluations": n}
    if search is not None:
        out["box"] = {k: list(v) for k, v in search.space.items()}
    pep = ev.get("pep") or {}
    if pep.get("proven_on_class"):
        # the SDP's dual certificate is numerical (its value within rtol of the bound), and
        # it covers the settings solved, not every step size between them
        out["status"] = ("proven on the whole function class at "
                         f"{len(pep.get('runs', []))} setting(s) (PEPit's SDP dual certificates, "
                         f"within {pep.get('rtol', NUMERIC_RTOL):g} of the bound)")
    if proof is None:
        return out
    # a two-sided bound is proven side by side: each inequality is one Proof
    parts = proof if isinstance(proof, tuple) else (proof,)
    results = [prove(p, box, rtol=float(ev.get("rtol", NUMERIC_RTOL)),
                     atol=float(search.atol), quantities=search.quantities)
               for p in parts for box in integer_cases(search.space)]
    out["proof"] = results[0] if len(results) == 1 else results
    refuted = [r for r in results if r["status"] == "refuted"]
    if all(r["status"] == "proven on the box" for r in results):
        out["status"] = "proven on the box"
        # the form itself (the lemma) is in the proof's evidence, "identity"
        if any(r.get("identity") for r in results):
            points = sum(r["form_check"]["points"] for r in results if r.get("form_check"))
            out["status"] += (" (of a cancellation-free form of rhs - lhs, checked against the "
                              f"sides at {points} points)")
        attained = [r["attained"] for r in results if r.get("attained")]
        if attained:
            out["status"] += "; attained " + "; ".join(attained)
    elif refuted:
        out["status"] = f"refuted by the interval proof at {refuted[0]['counterexample']}"
    else:
        left = sum(r["n_undecided"] for r in results)
        boxes = sum(r["boxes"] for r in results)
        refused = [r for r in results if r["status"].startswith("not a proof")]
        out["status"] += (f"; the interval proof refused its cancellation-free form (it "
                          f"disagrees with the sides at {refused[0]['form_check']['first']})"
                          if refused else
                          f"; the interval proof left {left} of its boxes undecided within "
                          f"{boxes:,} (its budget)")
    return out
