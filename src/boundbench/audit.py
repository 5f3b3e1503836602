"""Run every registered claim and write ``audit.md`` and ``audit.json``."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from boundbench import catalogue, errata
from boundbench.errata import rerun_scale as _rerun_scale
from boundbench.framework import registry as _claims
from boundbench.framework.files import key_lock, sweep_temporaries, within, write_atomic
from boundbench.framework.meta import commit, environment, lock, machine
from boundbench.framework.verdicts import FINDINGS, FRAGILE, against_paper, fmt_ratio

VERDICT_HELP = {
    "holds": "the inequality or identity was satisfied on every tested instance (the random "
    "family and a targeted search for the worst case), within the stated tolerance",
    "violated": "at least one instance breaks it beyond the tolerance, whichever optimum or "
    "reading is taken: a finding about the paper, reported with its size (worst lhs/rhs and "
    "lhs - rhs)",
    "ill-posed": "the statement presupposes a unique optimum where there is none: it holds for "
    "the closest pair of optimal solutions and fails for the farthest (both verdicts given)",
    "supported": "the predicted trend appears: its confidence interval lies on the predicted "
    "side of 0",
    "contradicted": "the opposite of the predicted effect: the interval lies on the other side",
    "no-effect": "the predicted effect is absent: the interval of the change lies inside the "
    "no-effect band (1 +- 10% unless the claim says otherwise)",
    "depends-on-reading": "the paper leaves a choice open and its plausible readings give "
    "different verdicts (each reading's verdict is listed)",
    "inconclusive": "the interval straddles 0 (or the no-effect band's edge) at this scale, or "
    "the check failed (see its reason); the reason says what would decide it",
    "not-testable": "the claim cannot be measured as stated (e.g. unspecified constants)",
}


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


class _DaskShared:
    """Tables shared between the workers of one run through the scheduler: a
    ``distributed.Lock`` per cache key, the parquet bytes in a ``distributed.Variable``."""

    def __init__(self, run: str) -> None:
        from distributed import get_client

        self.client, self.run = get_client(), run

    def lock(self, key: str):
        from distributed import Lock

        return Lock(f"boundbench-{self.run}-{key}")

    def get(self, key: str) -> bytes | None:
        from distributed import Variable

        try:
            return Variable(f"boundbench-{self.run}-{key}", client=self.client).get(timeout=0.1
                                                                                   ).result()
        except Exception:  # noqa: BLE001 - unset (TimeoutError) means nobody computed it yet
            return None

    def put(self, key: str, data: bytes) -> None:
        from distributed import Variable

        fut = self.client.scatter(data)
        Variable(f"boundbench-{self.run}-{key}", client=self.client).set(fut)


def _remote_claim(task: tuple) -> tuple[dict[str, Any], dict[str, bytes]]:
    """One claim on a Dask worker, in a private folder seeded with the client's cache; returns
    its result and every file it wrote (figure, table, config, new cache entries), which the
    client writes: workers need no shared filesystem."""
    import tempfile

    cid, seed, scale, force, cache, run, formats, datasets = task
    catalogue.load()
    with tempfile.TemporaryDirectory(prefix="boundbench-") as d:
        root = Path(d)
        for rel, data in cache.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        ctx = _claims.CheckContext(seed=seed, scale=scale, out_dir=root, force=force,
                                   progress=False, formats=formats, datasets=datasets,
                                   tables=_claims.TableCache(shared=_DaskShared(run)))
        result = _claims.run(cid, ctx, catch=True).to_dict()
        files = {}
        for f in root.rglob("*"):
            rel = f.relative_to(root).as_posix()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name and (
                    rel not in cache or f.read_bytes() != cache[rel]):
                files[rel] = f.read_bytes()
    return result, files


def one_line_warning(message: Warning | str, category: type[Warning], *args: Any,
                     **kwargs: Any) -> str:
    """A warning as the command line shows it (``warnings.formatwarning``): one line, without
    the source line the default format adds."""
    return f"boundbench: warning: {message}\n"


def _one_line_warnings() -> None:
    """In a worker process, warnings in :func:`one_line_warning`'s form (a spawned process does
    not inherit the parent's ``warnings.formatwarning``)."""
    import warnings

    warnings.formatwarning = one_line_warning


def _failed(cid: str, ctx: _claims.CheckContext, why: str, done: Any) -> dict[str, Any]:
    """The report entry of a claim whose task failed away from here (``done``: its
    :class:`~boundbench.framework.execution.Done`): inconclusive, saying where and why."""
    return {**_claims.get(cid).describe(), "verdict": "inconclusive",
            "reason": f"{why}: {done.error}", "evidence": {}, "figure": None, "table": None,
            "seconds": 0.0, "seed": ctx.seed, "scale": ctx.scale,
            "error": done.traceback or done.error}


def _remote_block(block: _claims.Block) -> Any:
    """One block of a claim's experiment on a worker: its table (the client caches it)."""
    _one_line_warnings()
    return block.run()


def _claim_blocks(ids: list[str], ctx: _claims.CheckContext) -> list[_claims.Block]:
    """The blocks the claims in ``ids`` declare, each once (claims may share them)."""
    seen, out = set(), []
    for cid in ids:
        fn = _claims.get(cid).blocks
        for b in (fn(ctx) if fn is not None else []):
            key = json.dumps({"name": b.name, "config": b.config}, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(b)
    return out


def compute_blocks(ids: list[str], ctx: _claims.CheckContext, ex: Any, *,
                   progress: bool = True, desc: str = "blocks") -> int:
    """Compute on the executor ``ex`` every block the claims in ``ids`` declare and ``ctx``'s
    cache lacks, caching each as it arrives (a killed run resumes with the blocks it has);
    returns how many ran. The claims then read their blocks from the cache."""
    todo = [b for b in _claim_blocks(ids, ctx) if not ctx.is_cached(b.name, b.config)]
    for block, done in ex.map(_remote_block, todo, desc=desc, progress=progress,
                              total=len(todo)):
        if done.error is not None:
            raise RuntimeError(f"a block of {block.name} failed on its worker: {done.error}")
        ctx.cached(block.name, block.config, _constant(done.value))
    return len(todo)



def _pooled_blocks(ids: list[str], ctx: _claims.CheckContext, processes: int, *,
                   progress: bool, desc: str) -> None:
    """The missing blocks of the claims in ``ids`` on a local process pool (two or more)."""
    from boundbench.framework.execution import LocalPool

    blocked = [cid for cid in ids if _claims.get(cid).blocks is not None]
    if not blocked:
        return
    todo = [b for b in _claim_blocks(blocked, ctx) if not ctx.is_cached(b.name, b.config)]
    if len(todo) < 2:
        return  # one block runs as fast here, without a process to start
    with LocalPool(min(processes, len(todo))) as ex:
        # the run's one progress bar, under its name, before the bar over the claims
        compute_blocks(blocked, ctx, ex, progress=progress, desc=f"{desc}: blocks")


def _local_claim(task: tuple[str, _claims.CheckContext]) -> dict[str, Any]:
    """One claim in a pool's process: it writes its files into the run's folder itself (the
    folder's cache entries are locked per key and written atomically, so claims that share a
    table compute it once, whichever process gets there first)."""
    cid, ctx = task
    _one_line_warnings()
    catalogue.load()
    return _claims.run(cid, ctx, catch=True).to_dict()


def _pooled_claims(ids: list[str], ctx: _claims.CheckContext, processes: int, *,
                   progress: bool, desc: str) -> list[dict[str, Any]]:
    """Every claim in ``ids`` on a local process pool, one torch thread each: the claims are
    independent units (what a Dask run distributes), and a claim's numbers then depend neither
    on how many cores the machine has nor on the pool's size (a serial run's torch threads do
    follow the cores, and a thread count can move a last bit: the Fig. 5 finding)."""
    from boundbench.framework.execution import LocalPool

    quiet = replace(ctx, progress=False)  # one progress bar: the pool's, over the claims
    results: dict[str, dict[str, Any]] = {}
    try:
        with LocalPool(min(processes, len(ids))) as ex:
            for (cid, _), done in ex.map(_local_claim, [(c, quiet) for c in _spread(ids)],
                                         desc=desc, progress=progress, total=len(ids)):
                # an error: the process died, or the task did not pickle
                results[cid] = (done.value if done.error is None else
                                _failed(cid, ctx, "the claim's process failed", done))
    except KeyboardInterrupt:
        raise KeyboardInterrupt(f"{len(results)} of {len(ids)} claims had finished; their "
                                f"experiment tables are cached in "
                                f"{Path(str(ctx.out_dir)) / '.cache'}") from None
    return [results[cid] for cid in ids]


def _constant(value: Any) -> Callable[[], Any]:
    """A computation that returns ``value`` (a block computed on a worker, cached here)."""
    return lambda: value


def _cache_files(out: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The client's cache entries (tables, sidecars, configs) as bytes by relative path,
    leaving out the entries named ``skip`` (``<name>-<key>.*``)."""
    cache = out / ".cache"
    if not cache.exists():
        return {}
    return {f.relative_to(out).as_posix(): f.read_bytes() for f in cache.iterdir()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name
            and ".bad-" not in f.name and not any(f.name.startswith(f"{n}-") for n in skip)}


def _spread(ids: list[str]) -> list[str]:
    """``ids`` round-robin over their claim modules: claims that share a table sit in one
    module, so spreading them keeps them from running at the same time on two workers (the
    later one then starts with the earlier one's cached table)."""
    groups: dict[str, list[str]] = {}
    for cid in ids:
        groups.setdefault(_claims.get(cid).check.__module__, []).append(cid)
    lanes = list(groups.values())
    return [lane[i] for i in range(max(map(len, lanes), default=0)) for lane in lanes
            if i < len(lane)]


def _write_bytes(path: Path, *, data: bytes) -> None:
    path.write_bytes(data)


def check_no_downscale(out: Path, ids: Iterable[str], scale: str, *, force: bool) -> None:
    """A ``ValueError`` (before any work) when ``out`` holds outputs of these claims made at a
    larger scale than ``scale``: a quick run must not silently replace paper-scale figures and
    tables. ``force`` allows it."""
    if force:
        return
    rank = {s: i for i, s in enumerate(_claims.SCALES)}
    larger = []
    for cid in ids:
        try:
            made = json.loads((Path(out) / f"{cid}.json").read_text()).get("scale")
        except (OSError, ValueError, AttributeError):
            continue
        if made in rank and rank[made] > rank[scale]:
            larger.append(f"{cid} ({made})")
    if larger:
        shown = ", ".join(larger[:5]) + (f" and {len(larger) - 5} more" if len(larger) > 5 else "")
        raise ValueError(f"--out {str(out)!r} holds outputs made at a larger scale than "
                         f"{scale!r}: {shown}; choose another --out, or add --force to replace "
                         "them")


def run_claims(ids: list[str], ctx: _claims.CheckContext, *, workers: int | None = None,
               scheduler: str | None = None, progress: bool = True,
               desc: str = "audit", processes: int | None = None) -> list[dict[str, Any]]:
    """Every claim in ``ids`` with ``ctx``: here, one after another (the default), or as Dask
    tasks (``workers``: a local cluster of that many processes; ``scheduler``: a running
    cluster's address). Results come back in ``ids`` order; the client writes every file.
    ``processes``: in a run here, the blocks of the claims that declare them (Fig. 5's heads)
    are computed first, then the claims themselves, on a
    :class:`~boundbench.framework.execution.LocalPool` of up to that many processes with one
    torch thread each (the command line gives the cores; a block's or a claim's bits then do
    not depend on the machine's core count), which needs a script's
    ``if __name__ == "__main__":`` guard, hence not by default. ``processes=1`` runs the claims
    here on one torch thread, as a pool's process would (the same bits)."""
    if ctx.out_dir is not None:
        sweep_temporaries(Path(ctx.out_dir))  # what killed runs left half-written
    if workers is None and scheduler is None:
        if processes is not None and processes > 1 and ctx.out_dir is not None:
            _pooled_blocks(ids, ctx, processes, progress=progress, desc=desc)
            if len(ids) > 1:
                return _pooled_claims(ids, ctx, processes, progress=progress, desc=desc)
        from boundbench.framework.execution import one_torch_thread

        finished: list[dict[str, Any]] = []
        try:
            with one_torch_thread() if processes is not None else nullcontext():
                for cid in tqdm(ids, desc=desc, unit="claim", disable=not progress):
                    finished.append(_claims.run(cid, ctx, catch=True).to_dict())
        except KeyboardInterrupt:
            where = (f"; their experiment tables are cached in {Path(ctx.out_dir) / '.cache'}"
                     if ctx.out_dir is not None else "")
            raise KeyboardInterrupt(f"{len(finished)} of {len(ids)} claims had finished{where}"
                                    ) from None
        return finished
    from boundbench.framework.execution import executor

    out = Path(ctx.out_dir) if ctx.out_dir is not None else None
    results: dict[str, dict[str, Any]] = {}
    # claims that declare blocks (Fig. 5's heads): their blocks are the cluster's tasks, then
    # the claims read them here; the other claims are tasks themselves
    blocked = [cid for cid in ids if _claims.get(cid).blocks is not None] if out else []
    spread = [cid for cid in ids if cid not in blocked]
    skip = tuple({b.name for b in _claim_blocks(blocked, ctx)}) if blocked else ()
    # each task carries the cache as it stands when the task starts, so a table one claim
    # computed is reused by the claims that start after it (as in a serial run); blocks stay
    # with the client, which is the only one to read them
    cache = _cache_files(out, skip) if out is not None else {}
    run = f"{os.getpid()}-{time.time_ns()}"  # names this run's shared tables on the cluster
    tasks = ((cid, ctx.seed, ctx.scale, ctx.force, dict(cache), run, ctx.formats, ctx.datasets)
             for cid in _spread(spread))
    with executor(workers=workers, scheduler=scheduler) as ex:
        if blocked:
            compute_blocks(blocked, ctx, ex, progress=progress)
            for cid in blocked:
                results[cid] = _claims.run(cid, ctx, catch=True).to_dict()
        for task, done in ex.map(_remote_claim, tasks, desc=desc, progress=progress,
                                 total=len(spread)):
            cid = task[0]
            if done.error is not None:
                results[cid] = _failed(cid, ctx, "the task failed on its worker", done)
                continue
            result, files = done.value
            if out is not None:
                for rel, data in files.items():
                    # a worker names the files it wrote: none may land outside the folder
                    write_atomic(within(out, rel, what="a worker's file"),
                                 partial(_write_bytes, data=data))
            cache.update({rel: data for rel, data in files.items()
                          if rel.startswith(".cache/")})
            results[cid] = result
    return [results[cid] for cid in ids]


# what every claim entry of a report holds (what the report's renderers read)
REPORT_KEYS = frozenset({"id", "paper", "where", "kind", "statement", "verdict", "reason",
                         "evidence"})


def _previous_report(out: Path) -> dict[str, Any] | None:
    """The folder's ``audit.json`` if it is a whole report, else ``None`` (a file that does not
    parse is named in a warning and left in place: nothing to merge into)."""
    import warnings

    path = out / "audit.json"
    if not path.exists():
        return None
    try:
        report = json.loads(path.read_text())
        if isinstance(report, dict) and isinstance(report.get("meta"), dict) and isinstance(
                report.get("claims"), list):
            bad = [i for i, r in enumerate(report["claims"])
                   if not (isinstance(r, dict) and REPORT_KEYS <= set(r)
                           and isinstance(r.get("evidence"), dict))]
            if not bad:
                return report
            why = (f"claim entry {bad[0]} of {len(report['claims'])} lacks "
                   f"{sorted(REPORT_KEYS - set(report['claims'][bad[0]]))}"
                   if isinstance(report["claims"][bad[0]], dict)
                   else f"claim entry {bad[0]} is not an object")
        else:
            why = "not an audit report"
    except (OSError, ValueError) as exc:
        why = f"unreadable ({exc})"
    warnings.warn(f"{path}: {why}; the partial audit cannot merge into it and replaces it",
                  stacklevel=3)
    return None


BUDGET_FILE = "budget.json"  # in out_dir/.cache: the seconds a budgeted audit has spent


def _open_probes(r: dict[str, Any]) -> list[dict[str, Any]]:
    seq = (r.get("evidence") or {}).get("sequential") or {}
    return [p for p in seq.get("probes", []) if not p.get("decision")]


def _plan(r: dict[str, Any], left: float) -> dict[str, Any] | None:
    """What one more step of a budgeted claim would cost: ``None`` when it is decided or not
    sequential; else ``{"seeds": k, "need": n, "seconds": s}`` (the seeds its slowest open
    probe needs at the current estimate, :func:`~boundbench.framework.sequential.seeds_to_decide`,
    and their fine-tuning time), or ``{"futile": why}`` when no affordable count decides."""
    from boundbench.framework.sequential import (
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
    n_max = k + int(max(left, 0.0) // cost)
    need = k
    for p in opened:
        if p.get("estimate") is None or p.get("spread") is None or p["n"] < 2:
            need = max(need, k + 1)  # too few trained seeds to project: one more
            continue
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
            need_txt = (f"about {far} seeds{cost_text(far, cost)}" if far is not None
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


def spend_budget(results: list[dict[str, Any]], ctx: _claims.CheckContext, *, budget: float,
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
            byid[cid] = _claims.run(cid, run_ctx, catch=True).to_dict()
            # the seeds just added are every claim's on the same grid too: re-read those claims
            # at the new count (their runs are cached, so no fine-tuning) and plan them again
            for other in _sharing(byid, cid):
                byid[other] = _claims.run(other, _replace(ctx, seeds=run_ctx.seeds,
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


def run_audit(
    *,
    seed: int = 0,
    scale: str = "quick",
    out_dir: Path,
    only: Iterable[str] | None = None,
    progress: bool = True,
    force: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    formats: tuple[str, ...] = ("png",),
    budget: float | None = None,
    datasets: int | None = None,
    processes: int | None = None,
) -> dict[str, Any]:
    """Run the claims (all, or ``only``), write the report into ``out_dir``, return it as a dict.
    ``datasets``: datasets per reading of Fig. 5's heads (None: the scale's count).
    With ``only``, the claims that ran replace theirs in the folder's existing report and the
    others are kept; every claim records its run (time, scale, seed, commit).
    Experiment tables are cached under ``out_dir/.cache``; ``force`` recomputes them.
    ``workers``/``scheduler``: run the claims as Dask tasks (:func:`run_claims`); ``formats``:
    the figure formats written (png, pdf, svg). ``budget``: seconds for the whole audit; the
    fine-tuning claims are then judged by anytime-valid confidence sequences and the time the
    other claims leave goes to adding seeds to the undecided ones (:func:`spend_budget`); a
    killed budgeted audit resumes, counting the time it had spent. ``processes``: Fig. 5's blocks,
    then the claims, on that many local processes (:func:`run_claims`; the command line gives
    the cores)."""
    if budget is not None and not (isinstance(budget, int | float) and math.isfinite(budget)
                                   and budget > 0):
        raise ValueError(f"budget must be a positive number of seconds (got {budget!r})")
    if budget is not None and (workers is not None or scheduler is not None):
        # the allocation adds seeds claim by claim, in this process
        raise ValueError("budget runs the fine-tuning claims here, one after another: leave "
                         "out workers and scheduler")
    ctx = _claims.CheckContext(seed=seed, scale=scale, out_dir=Path(out_dir), force=force,
                               formats=tuple(formats), sequential=budget is not None,
                               datasets=datasets)
    catalogue.load()
    ids = list(only) if only else list(catalogue.registry())
    for cid in ids:
        _claims.get(cid)  # unknown ids fail before any work
    check_no_downscale(Path(out_dir), ids, scale, force=force)
    t0 = time.perf_counter()
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    spent = 0.0
    budget_path = Path(out_dir) / ".cache" / BUDGET_FILE
    if budget is not None:
        from boundbench.framework.files import read_json, write_json

        key = {"scale": scale, "seed": seed, "budget": budget, "claims": sorted(ids)}
        before = read_json(budget_path, required=("key", "spent", "finished"))
        if before is not None and before["key"] == key and not before["finished"]:
            spent = float(before["spent"])  # a killed run of this audit: its time counts

        def save(seconds: float, finished: bool = False) -> None:
            write_json(budget_path, {"key": key, "spent": seconds, "finished": finished})

        save(spent)
    try:
        results = run_claims(ids, ctx, workers=workers, scheduler=scheduler,
                             progress=progress, processes=processes)
    except KeyboardInterrupt:
        if budget is not None:  # the time the killed pass took counts on the resume
            save(spent + time.perf_counter() - t0)
        raise
    if budget is not None:
        spent += time.perf_counter() - t0
        save(spent)
        results, spent = spend_budget(results, ctx, budget=budget, spent=spent,
                                      progress=progress, save=save)
        save(spent, finished=True)
    run = {"ran_at": created, "scale": scale, "seed": seed, "commit": commit()}
    if datasets is not None:
        run["datasets"] = datasets
    if budget is not None:
        run["budget_seconds"] = budget
    for r in results:
        r["run"] = dict(run)
    errors = [r["id"] for r in results if r.get("error")]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    # the folder's report is read, merged and written under its lock: two partial audits that
    # finish together each merge into the other's report instead of one dropping a claim
    with key_lock(Path(out_dir) / "audit.json"):
        merged_into = None
        if only:
            # a partial audit updates the claims it ran in the folder's report and keeps the rest
            previous = _previous_report(Path(out_dir))
            if previous is not None:
                merged_into = previous["meta"].get("created")
                byid = {r["id"]: r for r in previous["claims"]}
                byid.update({r["id"]: r for r in results})
                order = [c for c in catalogue.registry() if c in byid]
                results = [byid[c] for c in order] + [byid[c] for c in byid if c not in order]
        scales = sorted({(r.get("run") or {}).get("scale", r.get("scale", scale)) for r in results})
        report = {
            "meta": {
                "created": created,
                "seed": seed,
                "scale": scale if scales == [scale] else "mixed (" + ", ".join(scales) + ")",
                "seconds": round(time.perf_counter() - t0, 2),
                "workers": workers or (f"scheduler {scheduler}" if scheduler else 1),
                "environment": environment(),
                "machine": machine(),
                **lock(),
                "commit": run["commit"],
                "counts": dict(Counter(r["verdict"] for r in results)),
                "errors": errors,
                "claims_run": ids,
                "merged_into": merged_into,
                "budget_seconds": budget,
                "budget_spent_seconds": round(spent, 1) if budget is not None else None,
            },
            "claims": results,
        }
        report = _jsonable(report)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        text = json.dumps(report, indent=2) + "\n"
        write_atomic(out / "audit.json", lambda t: t.write_text(text))
        md = render_markdown(report)
        write_atomic(out / "audit.md", lambda t: t.write_text(md))
        index = render_index(report)
        write_atomic(out / "index.md", lambda t: t.write_text(index))
        errata.write(out)  # the errata sheet of this audit, beside it
    return report


def budget_section(report: dict[str, Any]) -> list[str]:
    """The budgeted claims' table for ``audit.md``: per claim the seeds it used, each probe's
    confidence sequence and decision, and why it stopped; empty for an audit without a
    budget."""
    meta = report["meta"]
    if meta.get("budget_seconds") is None:
        return []
    rows = [r for r in report["claims"]
            if isinstance((r.get("evidence") or {}).get("sequential"), dict)]
    spent = meta.get("budget_spent_seconds") or 0.0
    lines = [f"## Fine-tuning claims under the budget ({spent / 60:.1f} of "
             f"{meta['budget_seconds'] / 60:.0f} min)", "",
             "Each claim added seeds until its anytime-valid 95% confidence sequence decided "
             "(valid however the seeds were chosen), or no affordable number of seeds could, or "
             "the budget ran out.", "",
             "| claim | verdict | seeds | probe | confidence sequence | no-effect band | decided "
             "| stopped |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seq = r["evidence"]["sequential"]
        for p in seq.get("probes", []):
            iv = (f"[{_num(p['cs_low'])}, {_num(p['cs_high'])}]"
                  if p.get("cs_low") is not None and p.get("cs_high") is not None
                  else "unbounded")
            told = f"{p['decision']} at {p['decided_at']}" if p.get("decision") else "no"
            b = p.get("band") or {}
            band = (f"[{_num(b['low'])}, {_num(b['high'])}] ({_fmt(b['rule'])}: "
                    f"{_fmt(b['source'])})" if b else "none declared")
            lines.append(f"| `{r['id']}` | **{r['verdict']}** | {seq['grid_seeds']} | "
                         f"{_fmt(p['what'])} | {iv} | {band} | {told} | "
                         f"{_fmt(seq.get('stopped', ''))} |")
    # the fine-tuning claims the budget did not extend: trends over levels (a rank trend has
    # no confidence sequence here, so seeds added at will would not be judged validly)
    fixed = [r for r in report["claims"] if ".plm." in r["id"] and r not in rows]
    if fixed:
        lines += ["", "Kept at their fixed seeds (a trend over levels has no confidence sequence "
                  "here, so the budget does not add seeds to it): "
                  + ", ".join(f"`{r['id']}` (**{r['verdict']}**)" for r in fixed) + "."]
    return [*lines, ""]


def _fmt(v: Any) -> str:
    """A table cell: numbers to 6 significant digits, pipes escaped (norms are written |x|)."""
    text = f"{v:.6g}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|")


def verdict_size(r: dict[str, Any]) -> str:
    """How large the finding behind a verdict is, from its evidence: for a bound, the worst
    lhs/rhs and lhs - rhs (targeted search included); for a trend, its rank correlation or the
    end-to-end ratio; for readings, how many agree. Empty where the evidence says nothing."""
    ev = r.get("evidence") or {}
    parts = []
    worst = ev.get("worst_found_by_search", ev.get("worst_lhs_over_rhs"))
    if r.get("verdict") == "ill-posed":
        far = ev.get("farthest_pair_worst_lhs_over_rhs")
        parts.append(f"closest pair {_num(ev.get('worst_lhs_over_rhs'))}x, farthest "
                     f"{_num(far)}x the bound")
    elif isinstance(ev.get("unbounded_along"), str) and isinstance(ev.get("along_symmetry"),
                                                                    dict):
        a = ev["along_symmetry"]
        parts.append(f"unbounded along {ev['unbounded_along']}: lhs/rhs {fmt_ratio(a['ratio'][0], 3)}"
                     f" at k = 1, {fmt_ratio(a['ratio'][-1], 3)} at k = {a['k'][-1]:g}")
    elif isinstance(worst, int | float):
        parts.append(f"worst lhs/rhs {fmt_ratio(worst, 3)}")
        # the random family's largest excess; a violation only the search found has none
        if (isinstance(ev.get("max_lhs_minus_rhs"), int | float) and ev["max_lhs_minus_rhs"] > 0
                and r.get("verdict") == "violated"):
            parts.append(f"lhs - rhs up to {_num(ev['max_lhs_minus_rhs'])}")
    for key, name in (("spearman_rho", "rho"), ("mean_within_set_spearman", "within-set rho"),
                      ("end_ratio", "end-to-end ratio"), ("std_ratio", "std ratio"),
                      ("fitted_exponent", "exponent"), ("max_abs_error", "max |error|")):
        if isinstance(ev.get(key), int | float):
            parts.append(f"{name} {_num(ev[key])}")
    if isinstance(ev.get("by_reading"), dict):
        counts = Counter(v.get("status") for v in ev["by_reading"].values())
        parts.append(", ".join(f"{n} {k}" for k, n in counts.items()) + " readings")
    return "; ".join(parts)


def _num(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, int | float) else str(v)


def machine_line(meta: dict[str, Any]) -> list[str]:
    """Where the audit ran and with which lock, as the report's second line: the CPU, any GPU
    (fine-tuning trains on it), the BLAS kernel, numpy's SIMD targets, and the lock's hash with
    any pin the install did not match."""
    m = meta.get("machine") or {}
    if not m and not meta.get("lock_sha256"):
        return []
    parts = [f"CPU {m.get('cpu_model', 'unknown')}"]
    if m.get("gpus"):
        parts.append(f"GPU {', '.join(m['gpus'])} (CUDA {m.get('cuda')})")
    if m.get("blas"):
        parts.append(f"BLAS {', '.join(m['blas'])}")
    if m.get("numpy_simd") is not None:
        parts.append(f"numpy SIMD {' '.join(m['numpy_simd']) or 'baseline only'}")
    if meta.get("lock_sha256"):
        off = meta.get("lock_pins_not_matched") or []
        parts.append(f"lock constraints.txt sha256 {meta['lock_sha256'][:12]}"
                     + (f", {len(off)} pin(s) not matched: {', '.join(off[:5])}" if off
                        else ", every pin matched"))
    return ["Machine: " + "; ".join(parts) + "."]


def is_fragile(r: dict[str, Any]) -> bool:
    """Is a claim's verdict within a small margin of flipping (``evidence.fragile``, set by the
    verdict rules from ``margin_to_flip``)? A record entry carries it as ``fragile``."""
    if "fragile" in r:
        return bool(r["fragile"])
    return bool((r.get("evidence") or {}).get("fragile"))


def fragile_mark(r: dict[str, Any]) -> str:
    return " (fragile)" if is_fragile(r) else ""


def anchor(claim_id: str) -> str:
    """The markdown anchor of a claim's section (GitHub's rule: lower case, dots dropped)."""
    return claim_id.lower().replace(".", "")


def findings(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claims whose verdict goes against the paper (``FINDINGS``), most severe first:
    errors under every reading, then ill-posed statements, then those that depend on the
    reading; within each, in the registry's order."""
    rank = {"violated": 0, "contradicted": 0, "no-effect": 0, "ill-posed": 1,
            "depends-on-reading": 2}
    return sorted((r for r in results if r["verdict"] in FINDINGS and against_paper(r)),
                  key=lambda r: rank[r["verdict"]])


def what_we_found(results: list[dict[str, Any]], *, link: str = "") -> list[str]:
    """The report's opening: one line per finding against a paper, with its size and a link
    to its section (``link`` prefixes the anchor, e.g. ``audit.md`` from another file)."""
    found = findings(results)
    if not found:
        return ["## What we found", "", "No claim went against its paper in this audit.", ""]
    lines = ["## What we found", "",
             f"{len(found)} of {len(results)} claims went against their paper "
             f"({', '.join(f'{n} {k}' for k, n in Counter(r['verdict'] for r in found).items())})."
             " Errors first, then ill-posed statements, then findings that depend on how the "
             "paper is read:", ""]
    for r in found:
        size = verdict_size(r)
        lines.append(f"- **{r['paper']}, {r['where']}**: {r['verdict']}{fragile_mark(r)}"
                     f"{f' ({size})' if size else ''}. "
                     f"[`{r['id']}`]({link}#{anchor(r['id'])})")
    return lines + [""]


def record(report: dict[str, Any]) -> dict[str, Any]:
    """The short record of an audit that the docs quote (``docs/last-audit.json``): when, at
    which scale, seed and commit, the counts, and each claim's verdict and size."""
    meta = report["meta"]
    mach = meta.get("machine") or {}
    return {"created": meta["created"], "scale": meta["scale"], "seed": meta["seed"],
            "commit": meta.get("commit"), "seconds": meta.get("seconds"),
            "lock_sha256": meta.get("lock_sha256"),
            "lock_pins_not_matched": meta.get("lock_pins_not_matched"),
            "cpu_model": mach.get("cpu_model"), "instruction_sets": mach.get("instruction_sets"),
            "numpy_simd": mach.get("numpy_simd"), "blas": mach.get("blas"),
            "counts": meta["counts"],
            "claims": [{"id": r["id"], "paper": r["paper"], "where": r["where"],
                        "verdict": r["verdict"], "size": verdict_size(r),
                        "against_paper": against_paper(r), "fragile": is_fragile(r),
                        "margin_to_flip": (r.get("evidence") or {}).get("margin_to_flip"),
                        "margin_units": (r.get("evidence") or {}).get("margin_units")}
                       for r in report["claims"]]}


def headline(rec: dict[str, Any], *, link: str = "") -> str:
    """The findings of a recorded audit (:func:`record`) as the README quotes them: dated, one
    line per finding, errors first."""
    found = findings(rec["claims"])
    counts = ", ".join(f"{n} {k}" for k, n in sorted(rec["counts"].items()))
    lines = [f"The last recorded audit ({rec['created'][:10]}, scale {rec['scale']}, seed "
             f"{rec['seed']}, commit {str(rec.get('commit') or 'unknown')[:7]}; "
             f"{len(rec['claims'])} claims: {counts}) found {len(found)} claims against their "
             "paper:", ""]
    for r in found:
        if r["verdict"] == "depends-on-reading":
            continue
        size = f" ({r['size']})" if r.get("size") else ""
        lines.append(f"- **{r['paper']}, {r['where']}**: {r['verdict']}{fragile_mark(r)}{size} "
                     f"(`{r['id']}`)")
    reading = [r["id"] for r in found if r["verdict"] == "depends-on-reading"]
    if reading:
        lines.append(f"- depends on how the paper is read ({len(reading)}): "
                     + ", ".join(f"`{c}`" for c in reading))
    return "\n".join(lines) + "\n"


def render_index(report: dict[str, Any]) -> str:
    """``index.md``: every figure as a thumbnail with its claim, verdict and links to its data
    (CSV) and config (JSON), grouped by paper."""
    meta, results = report["meta"], report["claims"]
    lines = ["# boundbench figures", "",
             f"From the audit of {meta['created']} (scale {meta['scale']}, seed {meta['seed']}). "
             "Each figure links to its table (CSV, the data it was drawn from) and its config "
             "(JSON: seed, scale, versions, device); the verdict links to the claim's section in "
             "[`audit.md`](audit.md).", ""]
    for paper, title in _claims.PAPERS.items():
        part = [r for r in results if r["paper"] == paper and r.get("figure")]
        if not part:
            continue
        lines += [f"## {title}", "", "| figure | claim | verdict | data |", "|---|---|---|---|"]
        for r in part:
            files = " · ".join(f"[{Path(f).suffix[1:]}]({f})"
                               for f in r.get("figure_files") or [r["figure"]])
            data = " · ".join(x for x in (
                f"[csv]({r['table']})" if r.get("table") else "",
                f"[config]({r['id']}.json)", files) if x)
            lines.append(f"| [<img src=\"{r['figure']}\" width=\"240\">]({r['figure']}) | "
                         f"`{r['id']}`<br>{_fmt(r['where'])} | "
                         f"[**{r['verdict']}**](audit.md#{anchor(r['id'])}) | {data} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
    meta, results = report["meta"], report["claims"]
    env = ", ".join(f"{k} {v}" for k, v in meta["environment"].items())
    lines = [
        "# boundbench audit",
        "",
        f"Generated {meta['created']} at scale **{meta['scale']}** with seed {meta['seed']} in "
        f"{meta['seconds']} s ({env}).",
        *machine_line(meta),
        f"Re-run with `boundbench audit --scale {_rerun_scale(meta)} --seed {meta['seed']}`.",
        "",
        *what_we_found(results),
        "Every figure with its claim and verdict: [`index.md`](index.md); the errata sheet: "
        "[`errata.md`](errata.md).",
        "",
        "## How to read this report",
        "",
        *([f"This report merges a partial audit of {len(meta['claims_run'])} claim(s) "
           f"({', '.join(meta['claims_run'])}) into the audit of {meta['merged_into']}; each "
           "claim gives its own run (time, scale, seed, commit).", ""]
          if meta.get("merged_into") else []),
        "Each claim below is a statement from one of the papers, turned into a measurement: a "
        "left side measured on many instances against the paper's right side, or a predicted "
        "trend against data. Verdicts:",
        "",
    ]
    lines += [f"- **{k}**: {v}." for k, v in VERDICT_HELP.items()]
    lines += [
        "",
        "Evidence tables give the numbers behind each verdict: `n_instances`, the tolerance "
        "(`rtol`, `atol`), the worst and median ratio of left to right side, the largest "
        "`lhs - rhs`. Keys starting with `control_` come from the same comparison run just "
        "outside the claim's assumptions: a value above 1 there shows the check can detect a "
        "violation. Every figure has its data beside it as CSV.",
    ]
    counts = ", ".join(f"{n} {k}" for k, n in sorted(meta["counts"].items()))
    lines += ["", f"## Summary by paper ({len(results)} claims: {counts})", ""]
    for paper, title in _claims.PAPERS.items():
        part = [r for r in results if r["paper"] == paper]
        if not part:
            continue
        tally = ", ".join(f"{n} {k}" for k, n in Counter(r["verdict"] for r in part).items())
        lines += [f"### {title}", "", f"{len(part)} claims: {tally}.", "",
                  "| claim | where | kind | verdict | size | finding |",
                  "|---|---|---|---|---|---|"]
        for r in part:
            lines.append(f"| [`{r['id']}`](#{anchor(r['id'])}) | {_fmt(r['where'])} | "
                         f"{r['kind']} | **{r['verdict']}**{fragile_mark(r)} | "
                         f"{_fmt(verdict_size(r))} | {_fmt(r['reason'])} |")
        lines.append("")
    lines += ["Papers: " + "; ".join(f"**{k}** = {v}" for k, v in _claims.PAPERS.items()), ""]
    lines += budget_section(report)
    for r in results:
        lines += [
            f"## {r['id']}",
            "",
            f"[back to the summary](#summary-by-paper) · verdict **{r['verdict']}**",
            "",
            f"*{r['paper_title']}*, {r['where']}. Kind: {r['kind']}.",
            "",
            f"**Claim.** {r['statement']}",
            "",
            f"    {r['equation']}",
            "",
            f"**Verdict: {r['verdict']}.** {r['reason']}",
            "",
        ]
        if is_fragile(r):
            ev = r["evidence"]
            lines += [f"**Fragile.** The deciding statistic is {ev['margin_to_flip']:.3g} "
                      f"({ev['margin_units']}) from the nearest threshold, within the "
                      f"{FRAGILE[ev['margin_units']]:g} that a small change of the data could "
                      "cross: another seed, size or machine may decide otherwise.", ""]
        if r.get("notes"):
            lines += [f"**Note.** {r['notes']}", ""]
        if r["evidence"]:
            lines += ["| evidence | value |", "|---|---|"]
            lines += [f"| {_fmt(k)} | {_fmt(v)} |" for k, v in r["evidence"].items()]
            lines.append("")
        if r.get("figure"):
            lines += [f"![{r['id']}]({r['figure']})", ""]
        if r.get("table"):
            lines += [f"Data: [`{r['table']}`]({r['table']}) ({r['seconds']} s).", ""]
        if r.get("run"):
            run = r["run"]
            lines += [f"Run {run.get('ran_at')}, scale {run.get('scale')}, seed {run.get('seed')}"
                      f", commit {run.get('commit') or 'unknown'}.", ""]
        if r.get("error"):
            lines += ["```", r["error"].rstrip(), "```", ""]
    return "\n".join(lines)
