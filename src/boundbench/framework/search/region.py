"""Where a violated bound fails, as a property of the claim over all its instances (issue 80).

The characterization (:mod:`boundbench.framework.search.characterize`) follows rays from the search's
worst instance; where one ray crosses ``lhs/rhs = 1`` is a fact about that instance only, and
other instances break the bound beyond it. A claim whose search declares a :class:`Scale` (the
feature bound ``B``, a norm, ``lam``) gets its violation region in that scale instead:

1. **level searches**: at a fixed value ``b`` of the scale, a global search (the same
   differential evolution and polish as :func:`~boundbench.framework.search.targeted.worst_case`) of the
   worst ratio over every other parameter of the box, started from the violations found so far
   moved to ``b`` (:attr:`Scale.at`);
2. **a push**: from the worst instance at a violating level, the ray in the scale alone to where
   its ratio crosses 1 (bisection), and the next level just past that crossing; rounds go on
   until a level's search finds no violation;
3. **the range below** (or above): one search with the scale free over the whole interval from
   that holding level to the end of the scale's range (a violation there restarts the rounds
   from it), so "none found below ``b``" covers the interval, not a few levels.

The boundary instance (the violation nearest the holding side, ``lhs/rhs >= 1 +``
:data:`MARGIN` so that a 50-digit replay decides it) is replayed like any violation, its
control the worst instance the holding level's search found. The ray's crossing from the
search's worst instance stays in the characterization, named as one ray's.

Everything is counted in evaluations and drawn from the seed: no clock is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.search.characterize import _plain
from boundbench.framework.search.targeted import Search, instance_sides, worst_case, worst_ratio
from boundbench.framework.verdicts.sizes import describe

__all__ = ["MARGIN", "Scale", "apply_region", "over", "region"]

MARGIN = 1e-3  # the boundary instance's ratio is at least 1 + MARGIN: a replay can decide it
ROUNDS = 14  # level searches before the stage says its bracket did not close
BRACKET = 0.02  # the bracket [holding level, boundary] closes at this relative width
OVERSHOOT = 0.25  # a level past a ray's crossing by 2^0.25 (19%): the bracket's other end
RAY_STEPS = 40  # halvings (or doublings) along the ray, then bisections of its crossing
POLISH = 1.0  # a level's polish spends as much as its population search: it starts from violations
BELOW_SHARE = 4  # the range-below search has this many level budgets


@dataclass(frozen=True)
class Scale:
    """A scale of a bound's instances along which its violation region is found.

    Parameters
    ----------
    name : str
        The quantity's name as :attr:`Search.quantities` gives it (``"B"``).
    of : callable
        ``params -> float``: an instance's value of the scale.
    at : callable
        ``(params, value) -> params``: the instance moved to that value exactly, changing only
        the axes in ``fixes`` (the feature scale that sets ``B``, say).
    range : tuple of float
        ``(low, high)``, ``0 < low < high``: the values the stage searches (they may reach
        beyond the box's own: the statement's domain, stated in the report).
    fixes : tuple of str
        The search space's axes that ``at`` sets (left out of each level's search).
    grows : {"up", "down"}
        Violations grow as the scale grows (the region's infimum is sought) or as it shrinks
        (its supremum).
    budget : tuple of int
        Evaluations of one level's search at (quick, paper) scale.
    note : str
        The scale in words.

    Examples
    --------
    >>> s = Scale("x", of=lambda p: p["x"], at=lambda p, v: {**p, "x": v}, range=(1e-2, 1e2),
    ...           fixes=("x",))
    >>> s.at({"x": 1.0, "y": 2.0}, 3.0)
    {'x': 3.0, 'y': 2.0}
    """

    name: str
    of: Callable[[dict[str, Any]], float]
    at: Callable[[dict[str, Any], float], dict[str, Any]]
    range: tuple[float, float]
    fixes: tuple[str, ...] = ()
    grows: str = "up"
    budget: tuple[int, int] = (120, 1000)
    note: str = ""

    def __post_init__(self) -> None:
        lo, hi = (float(x) for x in self.range)
        if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo < hi):
            raise InvalidArgument(f"Scale {self.name!r}: range must be (low, high) with "
                                  f"0 < low < high (got {self.range!r})")
        if self.grows not in ("up", "down"):
            raise InvalidArgument(f"Scale {self.name!r}: grows must be 'up' or 'down' (got "
                                  f"{self.grows!r})")
        if len(self.budget) != 2 or min(self.budget) < 10:
            raise InvalidArgument(f"Scale {self.name!r}: budget must be (quick, paper) "
                                  f"evaluations >= 10 (got {self.budget!r})")


class _Stage:
    """One region search: the scored instances, the evaluations spent, the levels seen."""

    def __init__(self, search: Search, scale: Scale, context: Any, *, evals: int,
                 rtol: float) -> None:
        self.search, self.scale, self.evals, self.rtol = search, scale, evals, rtol
        self.sides = instance_sides(search, context)
        self.n = 0
        self.levels: list[dict[str, Any]] = []
        self.free = {k: v for k, v in search.space.items() if k not in scale.fixes}
        self.toward_hold = 0.5 if scale.grows == "up" else 2.0
        self.end = float(scale.range[0] if scale.grows == "up" else scale.range[1])

    def score(self, params: dict[str, Any]) -> float | None:
        self.n += 1
        try:
            r = worst_ratio(*self.sides(_plain(params)), self.search.atol)
        except (ValueError, np.linalg.LinAlgError, ArithmeticError):
            return None
        return None if np.isnan(r) else r

    def fails(self, r: float | None) -> bool:
        """A level violates at ``lhs/rhs >= 1 +`` :data:`MARGIN` (and past the tolerance):
        a weaker excess (1 + 1e-5, say) can be the float64 solve's own error where the
        instances degenerate (an SVM on nearly coincident points), which no replay decides;
        the holding level's worst ratio is reported beside it, so such an excess is seen."""
        return r is not None and r >= 1 + max(self.rtol, MARGIN)

    def beyond(self, b: float, c: float) -> bool:
        """``b`` lies past ``c`` on the holding side."""
        return b < c if self.scale.grows == "up" else b > c

    def ray(self, inst: dict[str, Any]) -> dict[str, Any]:
        """Along the scale alone from a violating ``inst``: the value nearest the holding side
        with ``lhs/rhs >= 1 + MARGIN`` (halfway to a weaker violation's ratio) (``fail``) and
        the first past it that holds (``hold``), by steps of a factor 2 then bisection of each
        crossing; or, where it holds nowhere on the way, how far it fails (``down_to``)."""
        at = self.scale.at
        b = float(self.scale.of(inst))
        r = self.score(at(inst, b))
        if r is None or r <= 1 + self.rtol:
            return {"holds": False, "fail": b, "why": "the instance does not violate the bound"}
        # the fail end's ratio: 1 + MARGIN, or halfway to a weaker violation's own
        m = MARGIN if r >= 1 + MARGIN else max((r - 1) / 2, self.rtol * (1 + 1e-6))
        b_fail, b_hold, last, last_r = b, None, b, r
        for _ in range(RAY_STEPS):
            b = max(b * self.toward_hold, self.end) if self.scale.grows == "up" else \
                min(b * self.toward_hold, self.end)
            r = self.score(at(inst, b))
            if r is not None and r <= 1 + self.rtol:
                b_hold = b
                break
            if r is None:
                break
            last, last_r = b, r
            if r >= 1 + m:
                b_fail = b
            if b == self.end:
                break
        if b_hold is None:  # violated as far as the ray went: to the range's end, or refused
            return {"holds": False, "fail": b_fail, "down_to": last, "ratio_there": last_r,
                    "at_end": last == self.end}
        fail = self._crossing(inst, b_fail, b_hold, lambda x: x >= 1 + m)[0]
        hold = self._crossing(inst, b_fail, b_hold, lambda x: x > 1 + self.rtol)[1]
        return {"holds": True, "fail": fail, "hold": hold}

    def _crossing(self, inst: dict[str, Any], yes: float, no: float,
                  test: Callable[[float], bool]) -> tuple[float, float]:
        """Bisection in ``log`` of the scale between ``yes`` (``test`` true) and ``no``."""
        lo, hi = np.log(yes), np.log(no)
        for _ in range(RAY_STEPS):
            if abs(hi - lo) < 1e-7:
                break
            mid = 0.5 * (lo + hi)
            r = self.score(self.scale.at(inst, float(np.exp(mid))))
            if r is not None and test(r):
                lo = mid
            else:
                hi = mid
        return float(np.exp(lo)), float(np.exp(hi))

    def level(self, b: float | None, starts: list[dict[str, Any]], stage: str,
              budget: int, seed: int, past: float = 0.0) -> tuple[float, dict[str, Any]]:
        """The worst ratio over every free parameter at scale value ``b`` (``None``: the scale
        free too, over the range from ``past`` to the range's end)."""
        space = dict(self.free)
        base = dict(starts[0])
        if b is None:
            lo, hi = sorted((past, self.end))
            space["__scale"] = (lo, hi, "log")

        def put(p: dict[str, Any]) -> dict[str, Any]:
            q = {**base, **{k: v for k, v in p.items() if k != "__scale"}}
            return self.scale.at(q, float(p["__scale"]) if b is None else float(b))

        def sides(p: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
            return self.sides(_plain(put(p)))

        s = Search(space, sides, budget=(budget, budget), atol=self.search.atol)
        warm = [{k: v for k, v in x.items() if k in space} for x in starts]
        if b is None:
            warm = [{**w, "__scale": float(np.clip(self.scale.of(x), *space["__scale"][:2]))}
                    for w, x in zip(warm, starts, strict=True)]
        found = worst_case(s, max_evals=budget, seed=seed, start=warm, polish=POLISH)
        ratio, params, n = found.worst_ratio, found.instance, found.n_evals
        self.n += n
        inst = _plain(put(params))
        self.levels.append({"value": float(self.scale.of(inst)) if b is None else float(b),
                            "worst_ratio": float(ratio), "stage": stage,
                            "evaluations": int(n)})
        return float(ratio), inst


def region(search: Search, scale: Scale, *, start: dict[str, Any], evals: int, seed: int,
           rtol: float = 0.0, context: Any = None,
           quantities: Callable[[dict[str, Any]], dict[str, Any]] | None = None
           ) -> dict[str, Any]:
    """The infimum (``scale.grows == "up"``) or supremum of ``scale`` over the violations of
    ``search``'s bound, from the violating instance ``start``; ``evals`` evaluations a level.
    Returns the evidence: ``found`` (the bracket closed to :data:`BRACKET` and the range past it
    searched), the ``boundary`` value and its instance (``lhs/rhs >= 1 +`` :data:`MARGIN`), the
    holding level ``holds_to`` with its search's worst instance (the replay's control), every
    search made, the evaluations spent, and the sentence the report prints."""
    st = _Stage(search, scale, context, evals=evals, rtol=rtol)
    ss = np.random.SeedSequence([int(seed) % 2**32, 80])
    seeds = iter(int(x) for x in ss.generate_state(ROUNDS + 4))
    known = [_plain(start)]
    ray = st.ray(known[0])
    hold: dict[str, Any] | None = None  # the holding level nearest the violations, searched
    closed, searches = False, 0
    while ray["holds"] and searches < ROUNDS + 2:
        fail = ray["fail"]
        if hold is not None and _ratio(fail, hold["value"]) <= 1 + BRACKET:
            # the bracket is closed: the range past the holding level, the scale free
            r, best = st.level(None, [scale.at(x, hold["value"]) for x in known], "range",
                               BELOW_SHARE * evals, next(seeds), past=hold["value"])
            searches += 1
            if not st.fails(r):
                closed = True
                break
            known.insert(0, best)
            ray, hold = st.ray(best), None  # a violation past the holding level: go on from it
            continue
        # the next level: just past the ray's own crossing, else the bracket's middle
        b = (float(ray["hold"]) * st.toward_hold ** OVERSHOOT if hold is None
             else float(np.sqrt(fail * hold["value"])))
        # the first level is searched as widely as the range: the search's worst instance sits
        # where the box made it worst (its largest scale), and near the boundary other shapes win
        first = not st.levels
        r, best = st.level(b, [scale.at(x, b) for x in known], "level",
                           BELOW_SHARE * evals if first else evals, next(seeds))
        searches += 1
        if st.fails(r):
            known.insert(0, best)
            nxt = st.ray(best)
            if nxt["holds"] and hold is not None and st.beyond(nxt["hold"], hold["value"]):
                hold = None  # its ray holds only past the holding level: that level was wrong
            if not nxt["holds"] and "down_to" in nxt:
                ray = nxt  # violated along the scale as far as it goes: no holding side
                break
            # a violation too weak for a ray to 1 + MARGIN: the level itself is the fail end
            ray = nxt if nxt["holds"] else {"holds": True, "fail": b, "hold": b}
        else:
            hold = {"value": b, "ratio": r, "instance": best}
    return _report(st, scale, ray, hold, closed, known[0], quantities)


def _ratio(a: float, b: float) -> float:
    return max(a, b) / min(a, b)


def _report(st: _Stage, scale: Scale, ray: dict[str, Any], hold: dict[str, Any] | None,
            closed: bool, inst: dict[str, Any],
            quantities: Callable[[dict[str, Any]], dict[str, Any]] | None) -> dict[str, Any]:
    q = quantities or (lambda p: {scale.name: float(scale.of(p))})
    name = scale.name
    side = "infimum" if scale.grows == "up" else "supremum"
    out: dict[str, Any] = {"scale": name, "side": side, "range": [float(x) for x in scale.range],
                           "over": over(scale), "searches": st.levels,
                           "evaluations_per_level": st.evals, "method": _METHOD}
    if not ray.get("holds"):
        b = float(ray.get("down_to", ray["fail"]))
        there = _plain(scale.at(inst, b))
        why = (f"to the end of the scale's range ({_end(scale)})" if ray.get("at_end") else
               "as far as its instances are defined")
        out.update(found=False, everywhere=bool(ray.get("at_end")), boundary=b, n_evaluations=st.n,
                   boundary_ratio=ray.get("ratio_there"), instance=there, at=q(there),
                   note=(f"violated at every value of {name} tried, {why}: along the scale from "
                         f"a violating instance lhs/rhs is still {ray.get('ratio_there', 0):.6g} "
                         f"at {name} = {b:.4g} ({st.n} evaluations)"))
        return out
    b_fail = float(ray["fail"])
    boundary = _plain(scale.at(inst, b_fail))
    out.update(found=closed, boundary=b_fail, boundary_ratio=st.score(boundary),
               instance=boundary, at=q(boundary), n_evaluations=st.n)
    word = "from" if scale.grows == "up" else "up to"
    away = "below" if scale.grows == "up" else "above"
    head = (f"violated {word} {name} = {b_fail:.4g} (lhs/rhs {out['boundary_ratio']:.6g} at "
            f"{describe(out['at'])})")
    if closed and hold is not None and hold["ratio"] > 1 + st.rtol:
        # the excess shrinks below MARGIN but not to nothing: the set where lhs/rhs >= 1 +
        # MARGIN ends here, the violation set goes on (no holding instance: no control)
        rng = st.levels[-1]
        out.update(found=False, weaker_below={"value": hold["value"], "ratio": hold["ratio"],
                                              "instance": hold["instance"]})
        out["note"] = (f"{head}; below {name} = {hold['value']:.4g} violations smaller than "
                       f"{MARGIN:g} go on (the worst over every other parameter there "
                       f"{hold['ratio']:.6g}, over {name} in {_interval(st, hold)} at once "
                       f"{rng['worst_ratio']:.6g}), so the region's {side} lies {away} it: "
                       f"{b_fail:.4g} is where lhs/rhs >= 1 + {MARGIN:g} ends ({st.n} "
                       f"evaluations, {len(st.levels)} searches)")
    elif closed and hold is not None:
        rng = st.levels[-1]
        out.update(holds_to=hold["value"], holding_ratio=hold["ratio"],
                   control_instance=hold["instance"])
        out["note"] = (f"{head}; no violation found {away} {name} = {hold['value']:.4g}: at "
                       f"that value the worst over every other parameter is "
                       f"{hold['ratio']:.6g}, and over {name} in {_interval(st, hold)} at once "
                       f"{rng['worst_ratio']:.6g} ({st.n} evaluations, {len(st.levels)} "
                       "searches)")
    else:
        out["note"] = (f"{head}; the bracket did not close to {BRACKET:.0%} in "
                       f"{len(st.levels)} searches, so the region's {side} is at most that "
                       f"({st.n} evaluations)")
    return out


_METHOD = ("at each fixed value of the scale, differential evolution and a bounded Nelder-Mead "
           "polish over every other parameter, started from the violations found; pushed to "
           "the crossing of the worst one's ray until a value holds; then one search with the "
           "scale free over the rest of its range")


def over(scale: Scale) -> str:
    """What the region ranges over, in words: the box's other parameters, the scale at every
    value of its own range (which may reach past the box's axis for it: the level searches set
    the scale through ``fixes``, not within the box)."""
    by = f" (set through {', '.join(scale.fixes)})" if scale.fixes else ""
    return (f"every other parameter of the search's box, with {scale.name} at each value of "
            f"[{scale.range[0]:g}, {scale.range[1]:g}]{by}")


def _end(scale: Scale) -> str:
    return f"{scale.range[0]:g}" if scale.grows == "up" else f"{scale.range[1]:g}"


def _interval(st: _Stage, hold: dict[str, Any]) -> str:
    lo, hi = sorted((hold["value"], st.end))
    return f"[{lo:.4g}, {hi:.4g}]"


def apply_region(verdict: Any, claim: Any, found: Any, context: Any = None) -> Any:
    """``verdict`` with its violation region in each scale ``claim``'s search declares
    (``regions`` in the evidence, each sentence in the reason, each boundary instance replayed
    as ``replay/<id>.region-<scale>.py`` with the holding level's worst instance as control):
    for a violated bound whose search (or characterization) holds a violating instance."""
    from boundbench.framework.execution.context import salt
    from boundbench.framework.execution.executors import one_torch_thread
    from boundbench.framework.search.characterize import quantities as in_terms
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL, Verdict

    search = claim.search
    if verdict.status != "violated" or not getattr(search, "scales", ()):
        return verdict
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    start, r0 = found.instance, found.worst_ratio
    sup = (verdict.evidence.get("characterization") or {}).get("supremum_found") or {}
    if not r0 > 1 + rtol and isinstance(sup.get("ratio"), float) and sup["ratio"] > 1 + rtol:
        start, r0 = sup["instance"], sup["ratio"]
    if not r0 > 1 + rtol:
        return verdict.with_evidence(regions=[{"found": False, "note": (
            "no violating instance of the search's box to start the region from")}])
    quick = getattr(context, "scale", "quick") == "quick"
    seed = getattr(context, "seed", 0)
    regions = []
    with one_torch_thread():
        for sc in search.scales:
            g = region(search, sc, start=start, evals=int(sc.budget[0 if quick else 1]),
                       rtol=rtol, context=context if search.with_context else None,
                       seed=salt(f"{seed}/{claim.id}/region/{sc.name}") % 2**32,
                       quantities=lambda p: in_terms(search, p))
            regions.append({**g, **_replayed(claim, g, rtol, context)})
    said = "; ".join(f"where it fails in {g['scale']}, over {g['over']}: {g['note']}"
                     for g in regions)
    return Verdict(verdict.status, f"{verdict.reason}; {said}",
                   {**verdict.evidence, "regions": regions}, verdict.figure, verdict.table)


def _replayed(claim: Any, g: dict[str, Any], rtol: float, context: Any) -> dict[str, Any]:
    """The boundary instance's standalone replay (its control the holding level's worst)."""
    rep = claim.search.replay
    if rep is None or "instance" not in g:
        return {}
    import re

    from boundbench.framework.files.escape import safe_name
    from boundbench.framework.search.replay import witness_replay

    try:
        inst = rep.build(g["instance"])
        ctrl = rep.build(g["control_instance"]) if "control_instance" in g else None
    except ValueError as exc:
        return {"replay": {"written": False, "why": f"building it raised {exc}"}}
    return {"replay": witness_replay(
        name=safe_name(f"{claim.id}.region-" + (re.sub(r"[^A-Za-z0-9]+", "-", g["scale"])
                                                 .strip("-") or "scale"), what="a replay"),
        claim=claim,
        equation=claim.equation or claim.statement, program=rep.program, instance=inst,
        control=ctrl, rtol=rtol, atol=float(claim.search.atol),
        out_dir=getattr(context, "out_dir", None))}
