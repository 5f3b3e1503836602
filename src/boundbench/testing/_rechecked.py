"""What ``boundbench falsify`` reports of a run: only what survives 50 digits (issue 80). The
run's pool of largest float64 ratios (:mod:`boundbench.testing._observe`) recomputed by the
bound's own code at 50 digits, a 50-digit polish where float64's rounding had made them, the
float64-only values apart."""

from __future__ import annotations

import math
from typing import Any

from boundbench.errors import ComputationError

HP_POLISH = (0.05, 5e-3, 5e-5)  # the 50-digit polish's first simplex half-widths
HP_POLISH_CALLS = 60  # calls of each (at 50 digits: a fixed count, whatever the machine)


def rechecked(test: Any, out: dict[str, Any], obs: Any, first: Any,
              deadline: float | None = None) -> dict[str, Any]:
    """Only what survives 50 digits is reported (issue 80): the pool of the run's largest
    float64 ratios (:mod:`boundbench.testing._observe`) recomputed by the bound's own code at
    50 digits; where float64's rounding made some of them (their float64 and 50-digit ratios
    differ), a Nelder-Mead polish on the 50-digit ratio from the best rechecked instance
    (:data:`HP_POLISH_CALLS` calls a round). ``worst_ratio``, its instance and sides are then
    the largest rechecked; the float64 values that did not survive are listed apart
    (``float64_only``). Code that leaves numpy's ufuncs cannot be rechecked: its float64 worst
    stays, labelled so (``worst_precision``).

    ``deadline`` (``time.perf_counter()`` seconds; a budget of seconds, never ``--evaluations``):
    past it the pool's remaining instances are listed as not rechecked (``not_rechecked``) and
    the polish stops; the largest and the first violation's are rechecked whatever the time."""
    import time

    from boundbench.testing._portfolio import polish_round
    from boundbench.testing._precision import high_precision_ratio

    def late() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    pool = list(obs.pool)
    if first is not None and first.value is not None:  # the first violation's instance first
        pool.insert(0, (first.worst_ratio, first.value))
    rows, skipped = [], []
    for k, (r64, inst) in enumerate(pool):
        if k >= 2 and late():
            skipped.append((r64, inst))
            continue
        rows.append((r64, inst, high_precision_ratio(test.fn, inst, atol=test.atol)))
    if skipped:
        out["not_rechecked"] = {"count": len(skipped), "why": "the budget of seconds ran out",
                                "largest_float64_ratio": max(r for r, _ in skipped)}
    if obs.warning:
        out["warning"] = obs.warning
    checked = [r for r in rows if r[2]["rechecked"]]
    if not checked:
        why = rows[0][2]["why"] if rows else "no instance returned both sides"
        out["worst_precision"] = f"float64 only: {why}"
        return out
    best = max(checked, key=lambda r: r[2]["ratio"])
    b_ratio, b_inst, b = best[2]["ratio"], best[1], best[2]
    calls = len(rows)
    drifted = [r for r in checked if not _close(r[0], r[2]["ratio"])]
    space = getattr(test, "space", None)
    if drifted and space is not None and isinstance(b_inst, dict) and set(b_inst) == set(space):
        def ratio_of(p: dict) -> tuple[float, float, float]:
            if late():
                raise ComputationError("the budget of seconds ran out")
            h = high_precision_ratio(test.fn, p, atol=test.atol)
            if not h["rechecked"]:
                raise ComputationError(h["why"])
            return h["ratio"], h["lhs"], h["rhs"]

        for width in HP_POLISH:
            hit = polish_round(test, space, centre=b_inst, width=width, chunk=HP_POLISH_CALLS,
                               ratio_of=ratio_of)
            calls += hit["evaluations"]
            if hit["ratio"] > b_ratio:
                b_inst = hit["instance"]
                b = high_precision_ratio(test.fn, b_inst, atol=test.atol)
                b_ratio = b["ratio"]
                calls += 1
    out.update(worst_ratio=b_ratio, instance=repr(b_inst), lhs=b["lhs"], rhs=b["rhs"],
               worst_precision=b["precision"], high_precision_calls=calls,
               worst_is="the largest lhs/rhs over this run's instances, each recomputed by the "
                        "bound's own code at 50 digits (the run's 16 largest float64 ratios, "
                        "then polished at 50 digits where float64's rounding had made them)")
    lost = [r for r in drifted if r[0] > b_ratio * (1 + 1e-9)]
    if lost:
        out["float64_only"] = [{"instance": repr(i), "float64_ratio": r64,
                                "high_precision_ratio": h["ratio"]}
                               for r64, i, h in sorted(lost, key=lambda r: -r[0])[:3]]
    if b_ratio > 1 + test.rtol and not out["violated"]:
        # a violation only 50 digits see: a finding, reproduced by its instance
        out.update(violated=True, verdict="violated", reproducer={
            "ratio": b_ratio, "lhs": b["lhs"], "rhs": b["rhs"], "instance": repr(b_inst),
            "is": "the 50-digit polish's instance (float64 did not see it)",
            "extended_precision": b})
    return out


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1.0)
