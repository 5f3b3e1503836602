"""What a ``holds`` rests on, in one typed vocabulary of certificate levels (issue 79).

Every holding bound carries one :class:`Level` in its evidence and in every report:

- **proven on the claim's whole stated domain**: ``lhs <= rhs`` with no tolerance, in ball
  arithmetic, on a box that is the claim's domain or that proven lemmas carry to it
  (:class:`~boundbench.framework.certificates.identity.Homogeneous`,
  :class:`~boundbench.framework.certificates.identity.EveryCount`), every form's identity proven
  by sympy; or, for a first-order lemma, an exact
  certificate over its whole function class and step-size range (multipliers and Gram matrix as
  functions of the step size, verified by sympy);
- **proven on a stated sub-box of its domain**: the same, on a box smaller than the domain (both
  printed, and why the rest is not covered);
- **proven given a stated lemma**: the proof rests on a step no prover checked (a form sympy
  cannot prove equal to ``rhs - lhs``, an expectation bracketed by hand), checked at points;
- **numerical certificate**: a floating-point SDP (PEPit's dual) at stated settings, where no
  exact certificate was found;
- **not refuted** in N evaluations (a search and a random family);
- **not provable by this method**: a side defined by an SVM, GD's iterates or a trained net;
- **refuted**: an exact counterexample (ball arithmetic at float64 parameters).

After LeanCert's typed outcomes (Verified / Rejected / Inconclusive / DomainObstruction /
Unsupported, with the route that checked each).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from boundbench.framework.certificates.proofs import (
    NotProvable,
    Proof,
    enclose_domain,
    integer_cases,
    prove,
)

__all__ = ["LEVEL_ORDER", "Level", "certification", "certify", "level_of"]


class Level(enum.StrEnum):
    """A certificate's level, strongest first (its value is the report's words)."""

    DOMAIN = "proven on the claim's whole stated domain"
    SUBBOX = "proven on a stated sub-box of its domain"
    LEMMA = "proven given a stated lemma"
    NUMERICAL = "numerical certificate"
    NOT_REFUTED = "not refuted"
    NOT_PROVABLE = "not provable by this method"
    REFUTED = "refuted"


LEVEL_ORDER = tuple(Level)
PROVEN = (Level.DOMAIN, Level.SUBBOX)


def level_of(entry: Mapping[str, Any]) -> Level | None:
    """An entry's (or an evidence's) certificate level, or ``None`` where it has none."""
    ev = entry.get("evidence") if "evidence" in entry else entry
    cert = (ev or {}).get("certification") if isinstance(ev, Mapping) else None
    raw = (cert or {}).get("level") if isinstance(cert, Mapping) else entry.get("certificate")
    try:
        return Level(raw) if raw else None
    except ValueError:
        return None


def _ends(spec: tuple) -> list:
    """A box's axis for JSON: infinite ends as the strings "inf" and "-inf"."""
    return [x if isinstance(x, str) else str(float(x)) if not np.isfinite(float(x)) else x
            for x in spec]


def _box_text(box: Mapping[str, Any]) -> str:
    def end(v: Any) -> str:
        return f"{float(v):g}"  # inf and -inf as such

    return ", ".join(f"{k} in [{end(v[0])}, {end(v[1])}]" for k, v in box.items())


def _run(p: Proof, case: dict[str, tuple], domain: Mapping[str, tuple] | None,
         quantities: Callable | None) -> dict[str, Any]:
    """One part's proof on one integer case; a form whose identity sympy did not prove is
    backed by the sides alone (which refute a false bound behind a wrong form)."""
    from boundbench.framework.certificates.identity import check_form, prove_identity

    if p.difference is not None:  # the point guard first: a wrong rewrite is refused at once
        check = check_form(p, case)
        if check["disagree"]:
            return {"status": "not a proof: its cancellation-free form disagrees with the sides",
                    "form_check": check, "identity": p.identity, "boxes": 0,
                    "budget": p.budget, "n_undecided": 1, "undecided": []}
    box = case  # where the inequality is decided, and the identity proven
    if p.enclose_domain and domain is not None:  # the domain on the case's axes
        box = {k: (case[k] if len(v) == 3 else v[:2]) for k, v in domain.items() if k in case}
        r = enclose_domain(p, box)
        r["covers_domain"] = r["status"] == "proven on the box"
    else:
        r = prove(p, case, quantities=quantities)
    if p.difference is not None:
        r.update(form_check=check, identity_proof=prove_identity(p, box))
    ident = r.get("identity_proof")
    if p.difference is not None and (ident is None or not ident["proven"]) and \
            r["status"] != "refuted" and not p.enclose_domain:
        bare = prove(dataclasses.replace(p, difference=None, budget=min(p.budget, 2000)),
                     case, quantities=quantities)
        r["sides_alone"] = {k: bare[k] for k in ("status", "boxes", "n_undecided")}
        if bare["status"] in ("refuted", "proven on the box"):
            r = {**bare, "sides_alone": r["sides_alone"], "form_not_used": True}
    return r


def _reductions(p: Proof, box: Mapping[str, tuple], domain: Mapping[str, tuple] | None
                ) -> list[dict[str, Any]]:
    """The outcomes of the lemmas that carry ``p``'s box to the claim's domain (once a part:
    they do not depend on the integer case)."""
    if domain is None:
        return []
    return [{"lemma": red.words(), "covers": list(red.covers()), **red.check(p, box, domain)}
            for red in p.reductions]


def _covered(box: Mapping[str, tuple], domain: Mapping[str, tuple] | None,
             run: dict[str, Any], checks: list[dict[str, Any]]) -> bool:
    """Whether the proven box covers the claim's domain: the same on every axis, the
    continuous axes enclosed whole (``enclose_domain``), or carried there by reductions the
    prover checked, and every reduction proven. An axis of the domain the proof has not (a
    class count its sides fix) is not covered."""
    if domain is None:
        return True
    done: set[str] = set()
    if run.get("covers_domain"):
        done.update(k for k, v in domain.items() if k in box and len(v) < 3)
    for c in checks:
        if c["proven"]:
            done.update(c["covers"])
    same = all(k in done or (k in box and [float(x) for x in box[k][:2]] ==
                             [float(x) for x in v[:2]]) for k, v in domain.items())
    # a lemma the domain's reading rests on (a reparametrization) must be proven too
    return same and all(c["proven"] for c in checks)


def certify(proof: Proof | tuple, box: Mapping[str, tuple], *,
            quantities: Callable | None = None) -> dict[str, Any]:
    """Prove a bound (one :class:`~boundbench.framework.certificates.proofs.Proof`, or a tuple of them for a
    two-sided bound) on ``box`` and say at which :class:`Level`: ``{"level", "status",
    "proof", "box", "domain", ...}``; ``level`` is ``None`` where the proof left boxes (the
    caller says "not refuted")."""
    parts = proof if isinstance(proof, tuple) else (proof,)
    runs = []
    for p in parts:
        pbox = dict(p.space or box)
        checks = _reductions(p, pbox, p.domain)
        for case in integer_cases(pbox):
            r = _run(p, case, p.domain, quantities)
            runs.append((p, pbox, r, _covered(pbox, p.domain, r, checks), checks))
    results = [r for _, _, r, _, _ in runs]
    proved = dict(parts[0].space or box)
    if parts[0].enclose_domain and parts[0].domain is not None:  # the domain on its axes
        proved = {k: (v if len(v) == 3 and v[2] == "int" else parts[0].domain.get(k, v)[:2])
                  for k, v in proved.items()}
    out: dict[str, Any] = {"proof": results[0] if len(results) == 1 else results,
                           "box": {k: _ends(v) for k, v in proved.items()}}
    if parts[0].domain is not None:
        out["domain"] = {k: _ends(v) for k, v in parts[0].domain.items()}
    reductions = list({id(red): red for *_, red in runs}.values())  # one list a part
    if any(reductions):
        out["reductions"] = [c for red in reductions for c in red]
    refuted = [r for r in results if r["status"] == "refuted"]
    if refuted:
        return {**out, "level": Level.REFUTED.value,
                "status": f"refuted by the interval proof at {refuted[0]['counterexample']}",
                "counterexample": refuted[0]["counterexample"]}
    if not all(r["status"] == "proven on the box" for r in results):
        out["level"] = None
        left = sum(r["n_undecided"] for r in results)
        refused = [r for r in results if r["status"].startswith("not a proof")]
        out["status"] = ("the interval proof refused its cancellation-free form (it disagrees "
                         f"with the sides at {refused[0]['form_check']['first']})" if refused
                         else f"the interval proof left {left} of its boxes undecided within "
                         f"{sum(r['boxes'] for r in results):,} (its budget)")
        return out
    lemmas = []
    for p, _, r, _, _ in runs:
        ident = r.get("identity_proof")
        if p.lemma:
            lemmas.append(p.lemma)
        elif not r.get("form_not_used") and ident is not None and not ident["proven"]:
            pts = (r.get("form_check") or {}).get("points", 0)
            lemmas.append(f"{p.identity or 'its form'} (by hand, checked at {pts} points; "
                          f"{ident['why']})")
    lemmas = list(dict.fromkeys(lemmas))
    whole = all(c for _, _, _, c, _ in runs)
    where = (("the claim's whole stated domain" + (f" ({parts[0].domain_text})"
                                                    if parts[0].domain_text else ""))
             if whole else f"a stated sub-box of its domain: the box {_box_text(out['box'])}"
             + (f" of the domain {_box_text(parts[0].domain)}" if parts[0].domain else ""))
    beyond = "" if whole or not parts[0].beyond else f" ({parts[0].beyond})"
    attained = list(dict.fromkeys(r["attained"] for r in results if r.get("attained")))
    tail = ("; attained " + "; ".join(attained)) if attained else ""
    if lemmas:
        out.update(level=Level.LEMMA.value, lemma=lemmas,
                   status=f"proven given a stated lemma on {where}{beyond}: "
                   + "; ".join(lemmas) + tail)
        return out
    level = Level.DOMAIN if whole else Level.SUBBOX
    routes = [r["identity_proof"]["route"] for r in results
              if (r.get("identity_proof") or {}).get("proven") and not r.get("form_not_used")
              and str(r["identity_proof"].get("route", "")).startswith("sympy")]
    reds = [c["route"] for c in out.get("reductions", []) if c["proven"]]
    how = "; ".join(dict.fromkeys(routes + reds))
    out.update(level=level.value, status=f"proven with no tolerance on {where}{beyond}"
               + (f" ({how})" if how else "") + tail)
    return out


def certification(verdict: Any, search: Any, *, proof: Any = None) -> dict[str, Any]:
    """What a ``holds`` rests on, for the evidence and every report: its :class:`Level`
    (``level``) and a sentence (``status``), with the box and the claim's domain."""
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL

    ev = verdict.evidence
    n = int(ev.get("n_instances") or 0) + int(ev.get("search_evals") or 0)
    out: dict[str, Any] = {"level": Level.NOT_REFUTED.value,
                           "status": f"not refuted in {n:,} evaluations", "evaluations": n}
    if search is not None:
        out["box"] = {k: list(v) for k, v in search.space.items()}
    pep = ev.get("pep") or {}
    exact = pep.get("exact") or {}
    if pep.get("proven_on_class") and exact.get("proven"):
        # an exact certificate (sympy) for every function of the lemma's class and every step
        # size of its range: the one route to "the whole function class"
        lams = "; ".join(f"{k}: {v}" for k, v in exact.get("multipliers", {}).items())
        out.update(level=Level.DOMAIN.value, status=(
            f"proven on the whole function class ({exact.get('class')} functions, "
            f"{exact.get('step_range')}): an exact certificate, the multipliers ({lams}) and "
            "the residual's Gram matrix verified by sympy, exactly, as functions of the step "
            f"size and beta ({len(exact.get('checks', []))} exact checks); beside it PEPit's "
            f"floating-point duals reach the bound at {len(pep.get('runs', []))} setting(s) over "
            f"{' and '.join(sorted({str(r.get('class')) for r in pep.get('runs', [])}))} "
            "functions"),
            route="exact first-order certificate (boundbench.theory.pep_certificates)")
    elif pep.get("proven_on_class"):
        # PEPit's duals are floating point, at the settings solved, not every step size
        # between them: a numerical certificate, not a proof
        runs = pep.get("runs", [])
        classes = sorted({str(r.get("class")) for r in runs if r.get("class")})
        out.update(level=Level.NUMERICAL.value, status=(
            f"numerical certificate: PEPit's floating-point SDP duals over {' and '.join(classes)}"
            f" functions at {len(runs)} setting(s) ({'; '.join(str(r.get('setting')) for r in runs)}"
            f"), each within {pep.get('rtol', NUMERIC_RTOL):g} of the bound; no exact "
            f"certificate over the lemma's whole step-size range ({exact.get('why', 'not tried')})"))
    if isinstance(proof, NotProvable):
        out.update(level=Level.NOT_PROVABLE.value,
                   status=f"not provable by this method ({proof.why}); not refuted in {n:,} "
                   "evaluations")
        return out
    if proof is None:
        return out
    res = certify(proof, search.space, quantities=search.quantities)
    if res.get("level") is None:
        out["status"] += "; " + res["status"]
        out["proof"] = res["proof"]
        return out
    return {**out, **res}
