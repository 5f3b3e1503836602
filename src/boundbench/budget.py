"""The audit's time budget (``--budget``): which fine-tuning claims get the next seeds, and in
what order (the report's section on how it was spent is
:func:`boundbench.report.markdown.budget_section`)."""

from __future__ import annotations

import math
import time
from typing import Any

from tqdm.auto import tqdm

from boundbench.framework.claims import registry

BUDGET_FILE = "budget.json"  # in out_dir/.cache: the seconds a budgeted audit has spent


def _open_probes(r: dict[str, Any]) -> list[dict[str, Any]]:
    seq = (r.get("evidence") or {}).get("sequential") or {}
    return [p for p in seq.get("probes", []) if not p.get("decision")]


def _plan(r: dict[str, Any], left: float) -> dict[str, Any] | None:
    """What one more step of a budgeted claim would cost: ``None`` when it is decided or not
    sequential; else ``{"seeds": k, "need": n, "seconds": s}`` (the seeds its slowest open
    probe needs at the current estimate, :func:`~boundbench.framework.stats.stopping.seeds_to_decide`,
    and their fine-tuning time), or ``{"futile": why}`` when no affordable count decides."""
    from boundbench.framework.stats.stopping import (
        PROJECTION_CAP,
        cost_text,
        projected_seeds,
        seeds_to_decide,
    )

    seq = (r.get("evidence") or {}).get("sequential") or {}
    opened = _open_probes(r)
    if not seq or not opened:
        return None
    k = int(seq["grid_seeds"])
    cost = seq.get("seconds_per_seed")
    if not isinstance(cost, int | float) or not math.isfinite(cost) or cost <= 0:
        return {"futile": "a seed's cost is unknown"}
    if left < cost:
        # not one more seed is affordable: the budget, not futility, is why it stops (an H100
        # audit of 2026-11-27 called "futile" a claim its report put 1 seed from deciding).
        # The least step (one seed, not a projection) costs more than is left, so
        # spend_budget stops the claim with its "the budget: ... min left" line
        return {"seeds": k, "need": k + 1, "seconds": cost}
    n_max = k + int(left // cost)
    need = k
    for p in opened:
        if p.get("estimate") is None or p.get("spread") is None or p["n"] < 2:
            need = max(need, k + 1)  # too few trained seeds to project: one more
            continue
        if "projected_seeds" in p:  # a bounded-data probe's own projection (issue 82)
            n = p["projected_seeds"]
            n = n if n is not None and n <= max(n_max, p["n"], 2) else None
        else:
            n = seeds_to_decide(n=max(p["n"], 2), n_max=max(n_max, p["n"], 2),
                                estimate=float(p["estimate"]), spread=float(p["spread"]),
                                null=float(p["null"]), kind=p["kind"], band=p.get("band"))
        # with a band, the seeds to detect the paper's effect or to land inside the band (at
        # this spread) count too (issue 39): a probe whose estimate sits at the band's edge may
        # still decide within the budget if its effect is nil or the paper's
        scenarios = [k for k in (p.get("seeds_at_paper_effect"), p.get("seeds_at_no_effect"))
                     if k is not None and k <= n_max]
        if scenarios and (n is None or min(scenarios) < n):
            n = max(min(scenarios), p["n"] + 1)
        if n is None:
            far = projected_seeds(p)
            # the device and grid that measured the seconds (the H100 audit of 2026-11-26
            # called its GPU seconds "CPU-hours here" in this line alone)
            where = {"device": seq.get("device"), "grid_key": seq.get("grid_key")}
            need_txt = (f"about {far} seeds{cost_text(far, cost, **where)}" if far is not None
                        else f"more than {PROJECTION_CAP} seeds")
            return {"futile": f"{p['what']}: at the current estimate no count of seeds the "
                    f"budget affords (up to {n_max}) decides; it would need {need_txt}, so it "
                    "gets none"}
        need = max(need, k + (n - p["n"]))  # untrained runs: the grid adds as many as it lacks
    if need <= k:
        need = k + 1
    return {"seeds": k, "need": need, "seconds": (need - k) * cost}


def _sharing(byid: dict[str, dict[str, Any]], cid: str) -> list[str]:
    """The undecided budgeted claims whose runs are ``cid``'s grid (the same ``grid_key``) at
    fewer seeds than ``cid`` now has."""
    seq = (byid[cid].get("evidence") or {}).get("sequential") or {}
    key, seeds = seq.get("grid_key"), int(seq.get("grid_seeds") or 0)
    if not key:
        return []
    return [c for c, r in byid.items()
            if c != cid and _open_probes(r)
            and r["evidence"]["sequential"].get("grid_key") == key
            and int(r["evidence"]["sequential"].get("grid_seeds") or 0) < seeds]


def spend_budget(results: list[dict[str, Any]], ctx: registry.CheckContext, *, budget: float,
                 spent: float, progress: bool = True,
                 save: Any = None) -> tuple[list[dict[str, Any]], float]:
    """Give the time left of ``budget`` (seconds, ``spent`` already) to the fine-tuning claims
    that their confidence sequences have not decided: the claim whose decision is expected
    soonest (seeds its projection needs x a seed's cost) gets half of those seeds (at least
    one, at most as many as it has) and is re-run, and so is every undecided claim on the same
    grid, at no fine-tuning cost (its runs are the new seeds' runs); then the plan is made
    again. A claim stops when it is decided, or is futile (no affordable seed count decides at
    its current estimate), or when the budget cannot pay for its next step. Each claim's
    evidence records its seeds and why it stopped. ``save(spent)`` is called after every step
    (a killed audit resumes with it)."""
    from dataclasses import replace as _replace

    byid = {r["id"]: r for r in results}
    stopped: dict[str, str] = {}
    t0 = time.perf_counter()
    bar = tqdm(total=round(budget), initial=min(round(spent), round(budget)), unit="s",
               desc="budget", disable=not progress)
    while True:
        now = spent + time.perf_counter() - t0
        left = budget - now
        plans = {}
        for cid, r in byid.items():
            if cid in stopped:
                continue
            plan = _plan(r, left)
            if plan is None:
                continue
            if "futile" in plan:
                stopped[cid] = f"futile: {plan['futile']}"
                continue
            plans[cid] = plan
        for c, plan in list(plans.items()):
            # half the seeds the projection asks for, at most doubling: the estimate it rests
            # on is itself uncertain, and the next look may decide or show the claim futile
            plan["step"] = max(1, min((plan["need"] - plan["seeds"] + 1) // 2, plan["seeds"]))
            cost = byid[c]["evidence"]["sequential"]["seconds_per_seed"] * plan["step"]
            if cost > left:
                stopped[c] = (f"the budget: {max(left, 0) / 60:.1f} min left, its next "
                              f"{plan['step']} seeds need {cost / 60:.1f} min")
                del plans[c]
        if not plans:
            break
        cid, plan = min(plans.items(), key=lambda kv: kv[1]["seconds"])
        step = plan["step"]
        run_ctx = _replace(ctx, seeds=plan["seeds"] + step, sequential=True)
        try:
            byid[cid] = registry.run(cid, run_ctx, catch=True).to_dict()
            # the seeds just added are every claim's on the same grid too: re-read those claims
            # at the new count (their runs are cached, so no fine-tuning) and plan them again
            for other in _sharing(byid, cid):
                byid[other] = registry.run(other, _replace(ctx, seeds=run_ctx.seeds,
                                                          sequential=True), catch=True).to_dict()
                stopped.pop(other, None)
        except KeyboardInterrupt:
            done = spent + time.perf_counter() - t0
            if save is not None:
                save(done)
            raise KeyboardInterrupt(
                f"the budgeted audit had spent {done / 60:.1f} of {budget / 60:.0f} min "
                f"(adding seeds to {cid}); its finished runs are cached, and the same command "
                "resumes, counting the time spent") from None
        if save is not None:
            save(spent + time.perf_counter() - t0)
        bar.n = min(round(spent + time.perf_counter() - t0), round(budget))
        bar.refresh()
    bar.close()
    total = spent + time.perf_counter() - t0
    for cid, r in byid.items():
        seq = (r.get("evidence") or {}).get("sequential")
        if not seq:
            continue
        why = stopped.get(cid) or ("decided" if not _open_probes(r) else "the budget")
        seq = {**seq, "stopped": why}
        r["evidence"] = {**r["evidence"], "sequential": seq}
        r["reason"] = f"{r['reason']} [{seq['grid_seeds']} seeds; stopped: {why}]"
    return [byid[r["id"]] for r in results], total


