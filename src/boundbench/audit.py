"""Run every registered claim and write ``audit.md`` and ``audit.json``."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import time
from collections import Counter
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from boundbench import catalogue, errata
from boundbench.framework import registry as _claims
from boundbench.framework.files import sweep_temporaries, write_atomic
from boundbench.framework.meta import environment

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

    cid, seed, scale, force, cache, run = task
    catalogue.load()
    with tempfile.TemporaryDirectory(prefix="boundbench-") as d:
        root = Path(d)
        for rel, data in cache.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        ctx = _claims.CheckContext(seed=seed, scale=scale, out_dir=root, force=force,
                                   progress=False,
                                   tables=_claims.TableCache(shared=_DaskShared(run)))
        result = _claims.run(cid, ctx, catch=True).to_dict()
        files = {}
        for f in root.rglob("*"):
            rel = f.relative_to(root).as_posix()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name and (
                    rel not in cache or f.read_bytes() != cache[rel]):
                files[rel] = f.read_bytes()
    return result, files


def _cache_files(out: Path) -> dict[str, bytes]:
    """The client's cache entries (tables, sidecars, configs) as bytes by relative path."""
    cache = out / ".cache"
    if not cache.exists():
        return {}
    return {f.relative_to(out).as_posix(): f.read_bytes() for f in cache.iterdir()
            if f.is_file() and not f.name.endswith(".lock") and ".tmp" not in f.name
            and ".bad-" not in f.name}


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


def run_claims(ids: list[str], ctx: _claims.CheckContext, *, workers: int | None = None,
               scheduler: str | None = None, progress: bool = True,
               desc: str = "audit") -> list[dict[str, Any]]:
    """Every claim in ``ids`` with ``ctx``: here, one after another (the default), or as Dask
    tasks (``workers``: a local cluster of that many processes; ``scheduler``: a running
    cluster's address). Results come back in ``ids`` order; the client writes every file."""
    if ctx.out_dir is not None:
        sweep_temporaries(Path(ctx.out_dir))  # what killed runs left half-written
    if workers is None and scheduler is None:
        return [_claims.run(cid, ctx, catch=True).to_dict()
                for cid in tqdm(ids, desc=desc, unit="claim", disable=not progress)]
    from boundbench.framework.execution import executor

    out = Path(ctx.out_dir) if ctx.out_dir is not None else None
    results: dict[str, dict[str, Any]] = {}
    # each task carries the cache as it stands when the task starts, so a table one claim
    # computed is reused by the claims that start after it (as in a serial run)
    cache = _cache_files(out) if out is not None else {}
    run = f"{os.getpid()}-{time.time_ns()}"  # names this run's shared tables on the cluster
    tasks = ((cid, ctx.seed, ctx.scale, ctx.force, dict(cache), run) for cid in _spread(ids))
    with executor(workers=workers, scheduler=scheduler) as ex:
        for task, done in ex.map(_remote_claim, tasks, desc=desc, progress=progress,
                                 total=len(ids)):
            cid = task[0]
            if done.error is not None:
                c = _claims.get(cid)
                results[cid] = {**c.describe(), "verdict": "inconclusive",
                                "reason": f"the task failed on its worker: {done.error}",
                                "evidence": {}, "figure": None, "table": None, "seconds": 0.0,
                                "seed": ctx.seed, "scale": ctx.scale,
                                "error": done.traceback or done.error}
                continue
            result, files = done.value
            if out is not None:
                for rel, data in files.items():
                    write_atomic(out / rel, partial(_write_bytes, data=data))
            cache.update({rel: data for rel, data in files.items()
                          if rel.startswith(".cache/")})
            results[cid] = result
    return [results[cid] for cid in ids]


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
) -> dict[str, Any]:
    """Run the claims (all, or ``only``), write the report into ``out_dir``, return it as a dict.
    Experiment tables are cached under ``out_dir/.cache``; ``force`` recomputes them.
    ``workers``/``scheduler``: run the claims as Dask tasks (:func:`run_claims`)."""
    ctx = _claims.CheckContext(seed=seed, scale=scale, out_dir=Path(out_dir), force=force)
    catalogue.load()
    ids = list(only) if only else list(catalogue.registry())
    for cid in ids:
        _claims.get(cid)  # unknown ids fail before any work
    t0 = time.perf_counter()
    results = run_claims(ids, ctx, workers=workers, scheduler=scheduler, progress=progress)
    report = {
        "meta": {
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "seed": seed,
            "scale": scale,
            "seconds": round(time.perf_counter() - t0, 2),
            "workers": workers or (f"scheduler {scheduler}" if scheduler else 1),
            "environment": environment(),
            "counts": dict(Counter(r["verdict"] for r in results)),
            "errors": [r["id"] for r in results if r.get("error")],
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
    errata.write(out)  # the errata sheet of this audit, beside it
    return report


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
    elif isinstance(worst, int | float):
        parts.append(f"worst lhs/rhs {_num(worst)}")
        if isinstance(ev.get("max_lhs_minus_rhs"), int | float) and r.get("verdict") == "violated":
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


def render_markdown(report: dict[str, Any]) -> str:
    meta, results = report["meta"], report["claims"]
    env = ", ".join(f"{k} {v}" for k, v in meta["environment"].items())
    lines = [
        "# boundbench audit",
        "",
        f"Generated {meta['created']} at scale **{meta['scale']}** with seed {meta['seed']} in "
        f"{meta['seconds']} s ({env}).",
        f"Re-run with `boundbench audit --scale {meta['scale']} --seed {meta['seed']}`.",
        "",
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
    lines += ["", f"## Summary ({len(results)} claims: {counts})", "",
              "| claim | paper, where | kind | verdict | size | finding |",
              "|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| [`{r['id']}`](#{r['id'].replace('.', '')}) | {r['paper']}, "
                     f"{r['where']} | {r['kind']} | **{r['verdict']}** | "
                     f"{_fmt(verdict_size(r))} | {_fmt(r['reason'])} |")
    lines += ["", "Papers: " + "; ".join(f"**{k}** = {v}" for k, v in _claims.PAPERS.items()), ""]
    for r in results:
        lines += [
            f"## {r['id']}",
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
        if r.get("error"):
            lines += ["```", r["error"].rstrip(), "```", ""]
    return "\n".join(lines)
