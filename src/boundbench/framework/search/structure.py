"""A bound's structural parameters (depth, width, a class count) characterized like its scales
(issue 80): the worst ratio at each value, the growth law across them, and at the claim's own
value a bracket of the supremum.

A search (:mod:`boundbench.framework.search.targeted`) fixes the statement's structure (a network of
depth 3, say) and the characterization walks only its continuous parameters out of the box. A
claim whose search declares a :class:`Structure` gets, for each value of the structural
parameter, the worst ratio of a search at that value and of the statement's extremal family
there (the instances a derivation says approach the supremum, followed ``k = 2, 4, ...,
2^20``); the growth between values is called geometric ("grows like c^K") only where every one
of the last steps multiplies the worst ratio by the same factor to 1% and by more than 1.001.
The family's instance at the claim's own value is replayed like a violation. An upper end of the
bracket, where one is declared, is a hand derivation (its docstring), said to be one: nothing
here proves it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.search.targeted import Search, scorer, worst_case

__all__ = ["Structure", "apply_structure", "characterize_structure"]

FAMILY_STEPS = 20  # the family at k = 2^1 .. 2^20
GEOMETRIC_RTOL = 0.01  # steps that agree to 1% are one geometric rate
GROWS = 1e-3  # a step above 1 + this grows


@dataclass(frozen=True)
class Structure:
    """A structural parameter of a bound's statement.

    Parameters
    ----------
    name : str
        Its name in the report (``"K"``), and ``what`` it is in words.
    values : tuple of int
        The values characterized, increasing (the claim's own among them).
    own : int
        The claim's own value (the depth its search uses).
    search : callable
        ``value -> Search``: the claim's search at that value.
    family : callable, optional
        ``(value, k) -> params``: the statement's extremal family at that value, ``k -> inf``
        its limit (declared by the claim, from a derivation its docstring gives).
    upper : callable, optional
        ``value -> float``: a hand bound on the supremum at that value (``upper_note`` says
        whence); reported as a hand derivation, never as proven.
    budget : tuple of int
        Evaluations of each value's search at (quick, paper) scale.

    Examples
    --------
    >>> s = Structure("K", values=(1, 2), own=1, what="layers",
    ...               search=lambda k: Search({"x": (0.0, 1.0)}, lambda p: (p["x"], 1.0)))
    >>> s.values
    (1, 2)
    """

    name: str
    values: tuple[int, ...]
    own: int
    search: Callable[[int], Search]
    what: str = ""
    family: Callable[[int, float], dict[str, Any]] | None = None
    family_note: str = ""
    upper: Callable[[int], float] | None = None
    upper_note: str = ""
    budget: tuple[int, int] = (150, 1500)

    def __post_init__(self) -> None:
        v = list(self.values)
        if len(v) < 3 or v != sorted(set(v)) or self.own not in v:
            raise InvalidArgument(f"Structure {self.name!r}: values must be at least 3 distinct "
                                  f"increasing integers holding own = {self.own!r} (got "
                                  f"{self.values!r})")
        if len(self.budget) != 2 or min(self.budget) < 10:
            raise InvalidArgument(f"Structure {self.name!r}: budget must be (quick, paper) "
                                  f"evaluations >= 10 (got {self.budget!r})")


def _family(st: Structure, value: int, score: Callable[[dict[str, Any]], float]
            ) -> tuple[float | None, dict[str, Any] | None]:
    """The family's largest ratio over ``k = 2^1 .. 2^20`` at ``value``, and its instance."""
    if st.family is None:
        return None, None
    best: tuple[float, dict[str, Any] | None] = (-np.inf, None)
    for j in range(1, FAMILY_STEPS + 1):
        p = st.family(value, 2.0**j)
        try:
            r = float(score(p))
        except (ValueError, ArithmeticError):
            continue
        if np.isfinite(r) and r > best[0]:
            best = (r, p)
    return (best[0] if best[1] is not None else None), best[1]


def characterize_structure(st: Structure, *, evals: int, seed: int) -> dict[str, Any]:
    """Every value's worst ratio (its search's and its family's), the growth law and the
    bracket at the claim's own value; the evidence and the sentence the report prints."""
    rows: list[dict[str, Any]] = []
    for v in st.values:
        s = st.search(v)
        found = worst_case(s, max_evals=evals, seed=(seed + 104729 * v) % 2**32)
        fam, inst = _family(st, v, scorer(s))
        by_family = fam is not None and fam > found.worst_ratio
        rows.append({"value": v, "search_worst": float(found.worst_ratio),
                     "search_evaluations": int(found.n_evals), "family_worst": fam,
                     "worst": float(fam) if by_family and fam is not None
                     else float(found.worst_ratio),
                     "by": "family" if by_family else "search",
                     "instance": inst if by_family else found.instance})
    growth = _growth([r["value"] for r in rows], [r["worst"] for r in rows])
    own = next(r for r in rows if r["value"] == st.own)
    out: dict[str, Any] = {"name": st.name, "what": st.what, "rows": rows, "growth": growth,
                           "own": st.own, "own_worst": own["worst"], "own_by": own["by"],
                           "own_instance": own["instance"],
                           "family_note": st.family_note, "evaluations_per_value": evals}
    if st.upper is not None:
        out["own_upper"] = float(st.upper(st.own))
        out["upper_note"] = st.upper_note
    out["note"] = _say(st, rows, growth, out)
    return out


def _growth(values: list[int], worst: list[float]) -> dict[str, Any]:
    """Geometric where the last (up to 4) steps agree to :data:`GEOMETRIC_RTOL` and each
    exceeds ``1 +`` :data:`GROWS`; bounded where none does; else growing, not geometrically."""
    w = np.asarray(worst, dtype=float)
    if not np.all(np.isfinite(w) & (w > 0)):
        return {"law": "undetermined", "why": "a value without a finite positive worst ratio"}
    steps = (w[1:] / w[:-1]) ** (1.0 / np.diff(np.asarray(values, dtype=float)))
    tail = steps[-min(4, len(steps)):]
    if np.all(tail > 1 + GROWS) and tail.max() / tail.min() <= 1 + GEOMETRIC_RTOL:
        rate = float(np.exp(np.mean(np.log(tail))))
        return {"law": "geometric", "rate": rate, "unbounded": True,
                "fitted_over": values[-len(tail) - 1:]}
    if np.all(tail <= 1 + GROWS):
        return {"law": "bounded", "unbounded": False, "at_most_found": float(w.max())}
    return {"law": "growing", "unbounded": None, "steps": [float(x) for x in tail]}


def _say(st: Structure, rows: list[dict[str, Any]], growth: dict[str, Any],
         out: dict[str, Any]) -> str:
    n = st.name
    each = ", ".join(f"{r['worst']:.6g} ({n} = {r['value']})" for r in rows)
    if growth["law"] == "geometric":
        v0 = rows[0]["value"]
        law = (f"grows like {growth['rate']:.6g}^({n} - {v0}) (every step over {n} = "
               f"{growth['fitted_over'][0]}..{growth['fitted_over'][-1]} the same factor to "
               f"{GEOMETRIC_RTOL:.0%}): unbounded in {n}")
    elif growth["law"] == "bounded":
        law = f"bounded in {n} as far as followed: at most {growth['at_most_found']:.6g} found"
    else:
        law = f"its growth in {n} is not geometric ({growth.get('why', 'uneven steps')})"
    by = ("the family " + st.family_note if out["own_by"] == "family"
          else "the search at that value")
    bracket = f"{out['own_worst']:.6g} <= sup at {n} = {st.own} (by {by})"
    if "own_upper" in out:
        bracket += (f"; sup <= {out['own_upper']:.6g} by a hand derivation, not proven here "
                    f"({st.upper_note})")
    return f"in {n} ({st.what}): worst lhs/rhs {each}; {law}; {bracket}"


def apply_structure(verdict: Any, claim: Any, context: Any = None) -> Any:
    """``verdict`` with the characterization of each structural parameter its search declares
    (``structure`` in the evidence, its sentence in the reason, the family's instance at the
    claim's own value replayed as ``replay/<id>.structure-<name>.py``), for a violated or
    tight bound."""
    from boundbench.framework.execution.context import salt
    from boundbench.framework.execution.executors import one_torch_thread
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL, Verdict

    st = getattr(claim.search, "structure", None)
    if st is None or verdict.status not in ("violated", "holds"):
        return verdict
    quick = getattr(context, "scale", "quick") == "quick"
    seed = salt(f"{getattr(context, 'seed', 0)}/{claim.id}/structure") % 2**32
    with one_torch_thread():
        g = characterize_structure(st, evals=int(st.budget[0 if quick else 1]), seed=seed)
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    rep = st.search(st.own).replay
    if rep is not None and g["own_worst"] > 1 + rtol:
        from boundbench.framework.files.escape import safe_name
        from boundbench.framework.search.replay import witness_replay

        try:
            inst = rep.build(g["own_instance"])
        except ValueError as exc:  # outside the assumptions: no replay, said why
            g["replay"] = {"written": False, "why": f"building it raised {exc}"}
        else:
            g["replay"] = witness_replay(
                name=safe_name(f"{claim.id}.structure-{st.name}", what="a replay"),
                claim=claim, equation=claim.equation or claim.statement, program=rep.program,
                instance=inst, control=None, rtol=rtol, atol=float(claim.search.atol),
                out_dir=getattr(context, "out_dir", None))
    return Verdict(verdict.status, f"{verdict.reason}; {g['note']}",
                   {**verdict.evidence, "structure": g}, verdict.figure, verdict.table)
