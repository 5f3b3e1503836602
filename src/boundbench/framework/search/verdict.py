"""A search's result in a claim's verdict: its evidence beside the random family's
(:func:`search_evidence`) and the verdict it decides (:func:`apply_search`, ``violated`` where
the search broke a bound the random family did not). Apart from the search itself
(:mod:`boundbench.framework.search.targeted`), which it imports."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from boundbench.framework.search.targeted import SearchResult


def search_evidence(result: SearchResult, random_worst: float | None, *,
                    named: dict[str, Any] | None = None) -> dict[str, Any]:
    """The evidence keys of a search beside the random family: ``worst_found_by_search`` is the
    larger of the two (the search is seeded by nothing the random family found, so a random
    family that did better is reported as such), with the instance it came from."""
    rw = float(random_worst) if random_worst is not None else 0.0
    by_search = result.worst_ratio >= rw
    worst = result.worst_ratio if by_search else rw
    ev: dict[str, Any] = {
        "worst_found_by_search": worst,
        "search_alone_worst_ratio": result.worst_ratio,
        "random_family_worst_ratio": random_worst,
        "worst_instance": (result.instance if by_search else
                           "the random family's worst row (see the claim's table)"),
        # the instance as the claim names it (Search.quantities: "activation gelu", not
        # "act=1"), what the reports quote; the raw parameters stay beside it
        **({"worst_instance_named": named} if named and by_search else {}),
        "search_evals": result.n_evals, "search_method": result.method,
        "search_instances_refused": result.n_refused,
    }
    if 0 < worst < 1:
        ev["loose_by_factor"] = 1.0 / worst
    return ev


def apply_search(verdict: Any, result: SearchResult, *,
                 named: dict[str, Any] | None = None) -> Any:
    """``verdict`` with the search's evidence, its worst ratio in the reason, and ``violated``
    (with the instance) where the search broke a bound the random family did not."""
    from boundbench.framework.verdicts.rules import (
        NUMERIC_RTOL,
        Verdict,
        fmt_ratio,
        measured,
        with_margin,
    )

    result = replace(result, worst_ratio=float(measured(result.worst_ratio)))
    ev = search_evidence(result, verdict.evidence.get("worst_lhs_over_rhs"), named=named)
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    said = (f"targeted search ({result.n_evals} instances): worst lhs/rhs "
            f"{fmt_ratio(result.worst_ratio)}")
    if verdict.status in ("holds", "ill-posed") and result.worst_ratio > 1 + rtol:
        inst = ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}"
                         for k, v in result.instance.items())
        # the search's worst ratio decides: its distance beyond the tolerance is the margin
        return Verdict("violated", f"a {said} at {inst}; the random family alone: "
                       f"{verdict.status}: {verdict.reason}",
                       with_margin({**verdict.evidence, **ev, "decided_by_search": True},
                                   (result.worst_ratio - 1 - rtol) / result.worst_ratio,
                                   "relative"),
                       verdict.figure, verdict.table)
    if verdict.status == "holds" and "loose_by_factor" in ev:
        said += (f"; loose by x{ev['loose_by_factor']:.3g} at the worst instance found"
                 if ev["loose_by_factor"] > 1 / 0.9 else "; it binds (within 10%)")
    out = {**verdict.evidence, **ev}
    if verdict.status == "holds" and result.worst_ratio > 0:
        # the search's worst instance is as near the threshold as any: it counts in the margin
        m = (1 + rtol - result.worst_ratio) / max(1.0, result.worst_ratio)
        old = out.get("margin_to_flip")
        if not isinstance(old, int | float) or out.get("margin_units") != "relative" or m < old:
            out = with_margin(out, m, "relative")
    return Verdict(verdict.status, f"{verdict.reason}; {said}", out, verdict.figure,
                   verdict.table)


def apply_readings(verdict: Any, search: Any, found: SearchResult, *, max_evals: int,
                   seed: int, context: Any = None) -> Any:
    """``verdict`` with the search run again under each of the statement's other readings
    (:attr:`Search.readings`), for a bound that holds under the search's own: every reading's
    worst ratio and instance in ``search_by_reading`` (the size is the largest of them,
    :func:`boundbench.framework.verdicts.sizes.largest_known`, with its reading named), and a verdict
    that depends on the reading where another one is violated (issue 80: Cor. 2.5 penalized
    reaches 0.99993 with its right side at n as displayed, 0.70 at the proofs' n - 1)."""
    from boundbench.framework.search.targeted import worst_case
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL, Verdict, fmt_ratio, with_margin

    if verdict.status != "holds" or not getattr(search, "readings", None):
        return verdict
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    rows = [{"reading": search.reading, "worst_ratio": float(found.worst_ratio),
             "instance": found.instance, "evaluations": found.n_evals, "own": True}]
    for j, (name, sides) in enumerate(search.readings.items()):
        alt = replace(search, sides=sides, readings={}, reading=name, scales=())
        r = worst_case(alt, max_evals=max_evals, seed=(seed + 7919 * (j + 1)) % 2**32,
                       context=context, start=[found.instance])
        rows.append({"reading": name, "worst_ratio": float(r.worst_ratio),
                     "instance": r.instance, "evaluations": r.n_evals, "own": False})
    ev = {**verdict.evidence, "search_by_reading": rows}
    top = max(rows, key=lambda x: x["worst_ratio"])
    said = "; under every reading searched: " + ", ".join(
        f"{x['reading']} {fmt_ratio(x['worst_ratio'])}" for x in rows)
    broken = [x for x in rows if x["worst_ratio"] > 1 + rtol]
    if not broken:
        m = (1 + rtol - top["worst_ratio"]) / max(1.0, top["worst_ratio"])
        old = ev.get("margin_to_flip")
        if not isinstance(old, int | float) or ev.get("margin_units") != "relative" or m < old:
            ev = with_margin(ev, m, "relative")  # the reading nearest its threshold counts
        return Verdict("holds", f"{verdict.reason}{said} (the largest, "
                       f"{fmt_ratio(top['worst_ratio'])}, under {top['reading']})", ev,
                       verdict.figure, verdict.table)
    by_reading = {x["reading"]: {"status": "violated" if x in broken else "holds",
                                 "reason": f"targeted search: worst lhs/rhs "
                                           f"{fmt_ratio(x['worst_ratio'])}"} for x in rows}
    return Verdict("depends-on-reading", f"{verdict.reason}{said}: violated under "
                   f"{', '.join(x['reading'] for x in broken)}",
                   {**ev, "by_reading": {**(ev.get("by_reading") or {}), **by_reading}},
                   verdict.figure, verdict.table)
