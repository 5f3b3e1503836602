"""How badly and where a bound fails: the characterization stage after a search.

A search (:mod:`boundbench.framework.search.targeted`) maximizes ``lhs/rhs`` inside a box, so the worst
ratio it reports is the box's, not the bound's: a violation that grows without limit reads as
"worst 3.4" when the box ends there. :func:`characterize` starts at the search's worst instance
and walks out of the box geometrically, ``k`` up to ``2^10``, with no code from the claim:
along each axis (log axes scaled by ``k`` and ``1/k``, linear ones translated by ``k - 1`` box
widths either way, integer axes of more than two values multiplied), every pair of log axes
scaled by ``k^a, k^b`` (``a, b`` in -2, -1, 1, 2: ``X -> kX, lam -> k^2 lam`` found undeclared),
and the claim's declared maps (:attr:`Search.maps`) and symmetry.

A direction is **unbounded** when each of its last three doublings of ``k`` multiplies the
ratio by at least :data:`~boundbench.framework.search.targeted.UNBOUNDED_GROWTH`; its growth exponent is
the slope of ``log ratio`` against ``log k`` over them. The headline is the unbounded direction
that grows fastest, else the largest ratio found. Then :func:`failure_boundary` bisects, along
the headline direction, between the failing worst instance and a holding one: "holds for B
below 1.3, fails above". Instances are quoted in their own terms (:attr:`Search.quantities`:
``B``, ``lam``, ``n`` ...), never as "k = 1" of a map. Directions are screened at ``k = 8``
and ``64``, followed only where the ratio grows; instances whose sides raise are refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations, product
from typing import Any

import numpy as np

from boundbench.framework.search.targeted import SYMMETRY_STEPS, UNBOUNDED_GROWTH, Search

# the words of a finding's size live apart (sizes imports nothing of this module's)
from boundbench.framework.verdicts.sizes import TIE_RTOL, describe, size, summary

__all__ = ["TIE_RTOL", "apply_characterization", "characterize", "describe", "directions",
           "failure_boundary", "not_probed", "quantities", "size", "summary"]

KS = [2.0**j for j in range(SYMMETRY_STEPS + 1)]  # 1, 2, ..., 1024
SCREEN = (8.0, 64.0)  # every direction is scored here first
FOLLOW = [k for k in KS if k > SCREEN[1]]  # and here where it grows
INBETWEEN = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0)  # k tried for a boundary between 1 and the screen
BISECTIONS = 30  # halvings of the log k bracket: k* to 2^-30 of its decade
PAIR_POWERS = (-2, -1, 1, 2)
TIGHT = 0.9  # a bound that holds but reaches this ratio is characterized too


@dataclass(frozen=True)
class Direction:
    """A one-parameter family of instances through the worst one: ``at(params, k)`` with
    ``at(params, 1) == params``, defined for every ``k > 0``."""

    name: str
    at: Callable[[dict[str, Any], float], dict[str, Any]]
    origin: str  # "axis", "axis pair", "declared map", "declared symmetry"


def _axis_directions(search: Search) -> tuple[list[Direction], list[str]]:
    out: list[Direction] = []
    skipped: list[str] = []
    for name, spec in search.space.items():
        lo, hi = float(spec[0]), float(spec[1])
        axis = spec[2] if len(spec) == 3 else "lin"
        if axis == "log":
            out.append(Direction(f"{name} -> k {name}", _scale(name, 1.0), "axis"))
            out.append(Direction(f"{name} -> {name} / k", _scale(name, -1.0), "axis"))
        elif axis == "int":
            if hi - lo < 2:  # a choice between two values (an activation, a sign)
                skipped.append(f"{name} (a choice of {int(hi - lo) + 1} values, not a scale)")
                continue
            out.append(Direction(f"{name} -> k {name}", _int_scale(name), "axis"))
        else:
            w = hi - lo
            out.append(Direction(f"{name} -> {name} + (k - 1) {w:g}", _shift(name, w), "axis"))
            out.append(Direction(f"{name} -> {name} - (k - 1) {w:g}", _shift(name, -w), "axis"))
    logs = [n for n, s in search.space.items() if len(s) == 3 and s[2] == "log"]
    for a, b in combinations(logs, 2):
        for pa, pb in product(PAIR_POWERS, PAIR_POWERS):
            out.append(Direction(f"{a} -> {_pow(pa)}{a}, {b} -> {_pow(pb)}{b}",
                                 _scale2(a, pa, b, pb), "axis pair"))
    return out, skipped


def _pow(p: int) -> str:
    return {1: "k ", -1: "k^-1 "}.get(p, f"k^{p} ")


def _scale(name: str, power: float) -> Callable[[dict, float], dict]:
    return lambda p, k: {**p, name: p[name] * k**power}


def _scale2(a: str, pa: int, b: str, pb: int) -> Callable[[dict, float], dict]:
    return lambda p, k: {**p, a: p[a] * k**pa, b: p[b] * k**pb}


def _int_scale(name: str) -> Callable[[dict, float], dict]:
    def at(p: dict, k: float) -> dict:
        v = int(p[name])
        return {**p, name: max(1, int(round(v * k))) if v >= 1 else int(round(v + k - 1))}
    return at


def _shift(name: str, step: float) -> Callable[[dict, float], dict]:
    return lambda p, k: {**p, name: p[name] + (k - 1.0) * step}


def directions(search: Search) -> tuple[list[Direction], list[str]]:
    """Every direction :func:`characterize` follows for ``search``, and the axes it leaves out
    (with why)."""
    out: list[Direction] = []
    if search.symmetry is not None:
        out.append(Direction(search.symmetry_note or "the declared symmetry", search.symmetry,
                             "declared symmetry"))
    for name, fn in (search.maps or {}).items():
        out.append(Direction(name, fn, "declared map"))
    axes, skipped = _axis_directions(search)
    return out + axes, skipped


def _plain(p: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in p.items()}


def quantities(search: Search, params: dict[str, Any]) -> dict[str, Any]:
    """The instance in its assumptions' own terms (:attr:`Search.quantities`, e.g. ``B``,
    ``lam``, ``n``), else its parameters."""
    if search.quantities is not None:
        try:
            return {k: float(v) if isinstance(v, int | float | np.floating) else v
                    for k, v in search.quantities(dict(params)).items()}
        except Exception:  # noqa: BLE001 - an instance outside the assumptions has none
            return {}
    return _plain(params)


def _follow(d: Direction, params: dict[str, Any], start_ratio: float,
            safe: Callable[[dict[str, Any]], float | None]) -> dict[str, Any]:
    """One direction: screened at :data:`SCREEN`, followed to ``2^10`` where it grows;
    unbounded where each of the last three doublings multiplies the ratio by at least
    :data:`~boundbench.framework.search.targeted.UNBOUNDED_GROWTH`."""
    ks, rs = [1.0], [float(start_ratio)]

    def at(k: float) -> None:
        r = safe(_plain(d.at(dict(params), k)))
        ks.append(k)
        rs.append(np.nan if r is None else r)

    for k in SCREEN:
        at(k)
    grows = bool(np.isfinite(rs[2]) and np.isfinite(rs[1]) and rs[2] > rs[1] > 0)
    if grows:
        for k in FOLLOW:
            at(k)
    arr = np.array(rs, dtype=float)
    unbounded, exponent = False, None
    if len(arr) == 1 + len(SCREEN) + len(FOLLOW):
        tail = arr[-4:]
        if np.all(np.isfinite(tail)) and np.all(tail > 0):
            unbounded = bool(np.all(tail[1:] >= UNBOUNDED_GROWTH * tail[:-1]))
            exponent = float(np.log(tail[-1] / tail[0]) / np.log(ks[-1] / ks[-4]))
    elif rs[-1] == np.inf:
        unbounded = True  # the right side reached 0 (or below) while the left did not
    return {"direction": d.name, "origin": d.origin, "k": ks,
            "ratio": [None if np.isnan(x) else float(f"{x:.6g}") for x in arr],
            "unbounded": unbounded, "growth_exponent": exponent}


EXPONENT_TIE = 0.05  # growth exponents this close are one growth (a declared map and an axis pair)


def _fastest(unbounded: list[dict[str, Any]]) -> dict[str, Any]:
    """The headline: the fastest growth, declared directions first among those within
    :data:`EXPONENT_TIE` of it (never the last bits of two equal exponents: they follow CPUs)."""
    e = [np.inf if r["growth_exponent"] is None else r["growth_exponent"] for r in unbounded]
    near = [r for r, x in zip(unbounded, e, strict=True) if x >= max(e) - EXPONENT_TIE]
    return min(near, key=lambda r: _ORIGIN_RANK.get(r["origin"], 9))


def _changed(search: Search, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The quantities that differ between instances ``a`` and ``b`` (what a map moves)."""
    qa, qb = quantities(search, a), quantities(search, b)
    keys = [k for k in qa if k in qb and isinstance(qa[k], float) and isinstance(qb[k], float)
            and not np.isclose(qa[k], qb[k], rtol=1e-9, atol=0)]
    return keys or list(qa)


def characterize(search: Search, params: dict[str, Any],
                 score: Callable[[dict[str, Any]], float], *, start_ratio: float,
                 rtol: float = 0.0) -> dict[str, Any]:
    """Walk out of ``search``'s box from ``params`` (ratio ``start_ratio``) along every
    direction (:func:`directions`); ``score(params) -> lhs/rhs`` raises outside the
    assumptions. Returns the evidence: ``unbounded``, the headline direction with its ratios
    and end quantities, the supremum found and where, every direction's screen, the refused
    count, the axes left out and, for a violation, the failure boundary."""
    dirs, skipped = directions(search)
    params = _plain(params)
    refused = 0

    def safe(q: dict[str, Any]) -> float | None:
        nonlocal refused
        try:
            # far outside the box a side may overflow (exp of a margin of 1e4): its float
            # limit (inf, 0) is the value, and a warning must not decide, since a warnings
            # filter (pytest's "error", a Dask worker's default) would make it an exception in
            # one process and a number in another
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                r = float(score(q))
        except Exception:  # noqa: BLE001 - outside the assumptions: not an instance
            refused += 1
            return None
        if np.isnan(r):
            refused += 1
            return None
        return r

    rows = [_follow(d, params, start_ratio, safe) for d in dirs]
    sup: dict[str, Any] = {"ratio": float(start_ratio), "instance": params, "direction": None,
                           "k": 1.0}
    for d, row in zip(dirs, rows, strict=True):
        finite = [-np.inf if x is None else x for x in row["ratio"]]
        j = int(np.argmax(finite))
        # a larger ratio only beyond rounding: at a tight bound (ratio 1 on the box and along
        # many directions) the last bits would otherwise pick the direction, and they follow
        # the machine
        if finite[j] > sup["ratio"] * (1 + TIE_RTOL):
            sup = {"ratio": float(finite[j]), "instance": _plain(d.at(dict(params), row["k"][j])),
                   "direction": d.name, "k": row["k"][j]}
    out: dict[str, Any] = {
        "probed": True, "start_ratio": float(start_ratio),
        "start": quantities(search, params),
        "n_directions": len(dirs), "n_evaluations": sum(len(r["k"]) - 1 for r in rows),
        "n_refused": refused, "axes_left_out": skipped,
        "directions": rows,
    }
    unb = [r for r in rows if r["unbounded"]]
    if unb:
        head = _fastest(unb)
        out["unbounded"] = True
        out["unbounded_along"] = [r["direction"] for r in unb]
    else:
        head = next((r for r in rows if r["direction"] == sup["direction"]), None)
        out["unbounded"] = False
    out["supremum_found"] = {"ratio": sup["ratio"], "direction": sup["direction"],
                             "at": quantities(search, sup["instance"]),
                             "instance": sup["instance"]}
    if head is not None:
        d = next(x for x in dirs if x.name == head["direction"])
        last = next(i for i in range(len(head["k"]) - 1, -1, -1)
                    if head["ratio"][i] is not None)
        end = _plain(d.at(dict(params), head["k"][last]))
        keys = _changed(search, params, end)
        out["headline"] = {**head, "moves": keys, "from": quantities(search, params),
                           "to": quantities(search, end), "k_to": head["k"][last],
                           "ratio_to": head["ratio"][last]}
    if start_ratio > 1 + rtol:
        out["failure_boundary"] = _boundary(search, dirs, rows, head, params, safe,
                                            start_ratio=start_ratio, rtol=rtol)
    return out


_ORIGIN_RANK = {"declared symmetry": 0, "declared map": 1, "axis pair": 2, "axis": 3}


def _boundary(search: Search, dirs: list[Direction], rows: list[dict], head: dict | None,
              params: dict[str, Any], safe: Callable[[dict[str, Any]], float | None], *,
              start_ratio: float, rtol: float) -> dict[str, Any]:
    """The failure boundary along the headline direction back toward ``k -> 0``; where the
    bound fails along that whole path, along the first direction (declared ones first) on
    which the screen saw it hold."""
    by_name = {d.name: d for d in dirs}
    first = None
    if head is not None:
        first = failure_boundary(search, by_name[head["direction"]], params, safe,
                                 start_ratio=start_ratio, rtol=rtol)
        if first["found"]:
            return first
        # on the way out: the bound may hold between the worst instance and the screen's k = 8
        d = by_name[head["direction"]]
        for k in INBETWEEN:
            r = safe(_plain(d.at(dict(params), k)))
            if r is not None and r <= 1 + rtol:
                b = failure_boundary(search, d, params, safe, start_ratio=start_ratio,
                                     rtol=rtol, hold_at=k)
                if b["found"]:
                    return b
                break
    holding: list[tuple[dict[str, Any], float]] = []
    for r in rows:
        held = [k for k, x in zip(r["k"], r["ratio"], strict=True)
                if x is not None and x <= 1 + rtol]
        if held:
            holding.append((r, held[0]))
    holding.sort(key=lambda rk: (_ORIGIN_RANK.get(rk[0]["origin"], 9), rk[1]))
    for r, k_hold in holding[:3]:
        b = failure_boundary(search, by_name[r["direction"]], params, safe,
                             start_ratio=start_ratio, rtol=rtol, hold_at=k_hold)
        if b["found"]:
            return b
    return first or {"found": False, "note": "no holding instance was seen along any "
                     "direction from the worst instance"}


def failure_boundary(search: Search, d: Direction, params: dict[str, Any],
                     safe: Callable[[dict[str, Any]], float | None], *, start_ratio: float,
                     rtol: float = 0.0, hold_at: float | None = None) -> dict[str, Any]:
    """Where the bound starts to fail along ``d`` through the failing ``params``: the first
    ``k = 2^-j`` (j = 1..10) where it holds (or ``hold_at``, a ``k`` where it was seen to
    hold), then bisection in ``log k`` between that and the last failing ``k`` to the crossing
    ``lhs/rhs = 1``; quoted in the instance's quantities."""
    fail_k, fail_r = 1.0, float(start_ratio)
    hold_k = hold_r = None
    if hold_at is not None:
        hold_k, hold_r = hold_at, safe(_plain(d.at(dict(params), hold_at)))
    else:
        for j in range(1, SYMMETRY_STEPS + 1):
            k = 2.0**-j
            r = safe(_plain(d.at(dict(params), k)))
            if r is None:
                break
            if r <= 1 + rtol:
                hold_k, hold_r = k, r
                break
            fail_k, fail_r = k, r
    moved = _changed(search, params, _plain(d.at(dict(params), hold_k or 0.5)))
    if hold_k is None:
        q = quantities(search, _plain(d.at(dict(params), fail_k)))
        return {"direction": d.name, "found": False, "moves": moved,
                "fails_down_to": q, "ratio_there": fail_r,
                "note": f"fails along the whole path toward k -> 0 as far as it was followed "
                        f"({describe(q, moved)}, lhs/rhs {fail_r:.3g})"}
    lo, hi = np.log(hold_k), np.log(fail_k)  # holds at lo, fails at hi (either order)
    for _ in range(BISECTIONS):
        mid = 0.5 * (lo + hi)
        r = safe(_plain(d.at(dict(params), float(np.exp(mid)))))
        if r is None:
            break
        if r <= 1 + rtol:
            lo = mid
        else:
            hi = mid
    k_star = float(np.exp(hi))
    q_hold = quantities(search, _plain(d.at(dict(params), float(np.exp(lo)))))
    q_fail = quantities(search, _plain(d.at(dict(params), k_star)))
    m = next((k for k in moved if isinstance(q_fail.get(k), float)), None)
    if m is not None:
        side = "below" if q_hold[m] < q_fail[m] else "above"
        rest = [k for k in moved if k != m]
        there = f" ({describe(q_fail, rest)} at the crossing)" if rest else ""
        # one instance's ray, named as such: other instances fail past it (issue 80), and the
        # claim's region is the region stage's (framework.search.region)
        note = (f"along the ray {d.name} from the search's worst instance (one ray, not the "
                f"claim's region) it holds for {m} {side} {q_fail[m]:.4g} and fails "
                f"{'above' if side == 'below' else 'below'} it{there} (bisection)")
    else:
        note = (f"along the ray {d.name} from the search's worst instance (one ray, not the "
                f"claim's region) lhs/rhs crosses 1 at {describe(q_fail)}")
    return {"direction": d.name, "found": True, "moves": moved, "k": k_star,
            "holds_at": q_hold, "fails_from": q_fail, "holding_ratio": hold_r, "note": note,
            "control_instance": _plain(d.at(dict(params), hold_k)),  # the replay's control
            **({"holds_for": {"quantity": m, "side": side, "value": q_fail[m]}}
               if m is not None else {})}


def not_probed(why: str) -> dict[str, Any]:
    """The characterization's evidence for a claim it cannot probe, saying why."""
    return {"probed": False, "why": why}


def apply_characterization(verdict: Any, search: Search, found: Any, context: Any = None
                           ) -> Any:
    """``verdict`` with the characterization of ``found`` (the search's worst instance) in its
    evidence and reason, for a violated, ill-posed or tight bound (worst ratio >= :data:`TIGHT`);
    a bound that holds in the box but fails beyond it is ``violated``, with the instance (a
    ``depends-on-reading`` one keeps its verdict: the search states one reading)."""
    from boundbench.framework.execution.executors import one_torch_thread
    from boundbench.framework.search.targeted import scorer
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL, Verdict, with_margin

    status = verdict.status
    if status not in ("violated", "ill-posed", "holds", "depends-on-reading"):
        return verdict
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    if status in ("holds", "depends-on-reading") and found.worst_ratio < TIGHT:
        return verdict  # loose everywhere the search looked: nothing to walk out from
    if not found.worst_ratio > 0:
        return verdict.with_evidence(characterization=not_probed(
            "the search found no instance inside the assumptions to start from"))
    with one_torch_thread():
        ch = characterize(search, found.instance, scorer(search, context),
                          start_ratio=found.worst_ratio, rtol=rtol)
    ev = {**verdict.evidence, "characterization": ch}
    h = ch.get("headline") or {}
    if ch.get("unbounded"):
        ev["unbounded_along"] = h.get("direction")
    ev["growth"] = {k: h.get(k) for k in ("direction", "k", "ratio", "unbounded",
                                          "growth_exponent", "from", "to", "moves")} if h else None
    from boundbench.framework.verdicts.sizes import largest_known

    said = f"beyond the box ({ch['n_evaluations']} instances on {ch['n_directions']} " \
           f"directions): {summary(ch, largest_known(ev))}"
    sup = ch["supremum_found"]["ratio"]
    if status == "holds" and sup > 1 + rtol:
        at = describe(ch["supremum_found"]["at"])
        return Verdict("violated", f"{verdict.reason}; but {said}: lhs/rhs {sup:.4g} at {at}",
                       with_margin({**ev, "decided_by_characterization": True},
                                   (sup - 1 - rtol) / sup, "relative"),
                       verdict.figure, verdict.table)
    return Verdict(status, f"{verdict.reason}; {said}", ev, verdict.figure, verdict.table)
