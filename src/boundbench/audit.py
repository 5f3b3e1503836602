"""Run every registered claim and write ``audit.md`` and ``audit.json``."""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from boundbench import catalogue
from boundbench.budget import BUDGET_FILE, spend_budget
from boundbench.errors import InvalidArgument
from boundbench.framework.claims import registry
from boundbench.framework.execution import context
from boundbench.framework.files.atomic import key_lock
from boundbench.framework.files.meta import commit, environment, lock, machine
from boundbench.report import schema
from boundbench.report.schema import AuditReport
from boundbench.report.vocabulary import counts
from boundbench.report.writers import write_all
from boundbench.running import _jsonable, run_claims


def check_no_downscale(out: Path, ids: Iterable[str], scale: str, *, force: bool) -> None:
    """A ``ValueError`` (before any work) when ``out`` holds outputs of these claims made at a
    larger scale than ``scale``: a quick run must not silently replace paper-scale figures and
    tables. ``force`` allows it."""
    if force:
        return
    rank = {s: i for i, s in enumerate(context.SCALES)}
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
        raise InvalidArgument(f"--out {str(out)!r} holds outputs made at a larger scale than "
                              f"{scale!r}: {shown}; choose another --out, or add --force to replace "
                              "them")


def _previous_report(out: Path) -> tuple[list[dict[str, Any]], str | None] | None:
    """The folder's ``audit.json`` as ``(claims, created)``, or ``None`` where there is none.
    A file that is not a whole report (one bad entry, truncated, an older version) is set
    aside as ``audit.json.bad-<time>`` and its good entries are kept one by one
    (:func:`~boundbench.report.schema.salvage`), the dropped ones named in the warning (issue
    84: the merge replaced it with the partial audit's claims, the good entries gone)."""
    from boundbench.framework.files.atomic import set_aside

    path = out / "audit.json"
    if not path.exists():
        return None
    try:
        report = schema.read(path)  # the types every reader relies on, safe file names
        return [dict(r) for r in report["claims"]], report["meta"].get("created")
    except (OSError, ValueError) as exc:
        why = str(exc)
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        raw = None
    good, dropped = schema.salvage(raw, source=str(path))
    shown = "; ".join(dropped[:5]) + (f"; and {len(dropped) - 5} more" if len(dropped) > 5 else "")
    set_aside(path, f"not a whole report ({why})", then=(
        f"the partial audit keeps its {len(good)} good entries and merges into them (dropped: "
        f"{shown})"))
    meta = raw.get("meta") if isinstance(raw, dict) else None
    created = meta.get("created") if isinstance(meta, dict) else None
    return good, created if isinstance(created, str) else None


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
    seed_records: Path | str | None = None,
) -> AuditReport:
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
    the cores).

    Parameters
    ----------
    seed : int, default 0
        Every claim's seed.
    scale : {"quick", "standard", "paper"}, default "quick"
        The sizes the claims run at.
    out_dir : pathlib.Path
        Where the report, the figures and the cache go.
    only : iterable of str, optional
        Claim ids to run (a partial audit merges into the folder's report).
    progress : bool, default True
        Show a progress bar.
    force : bool, default False
        Overwrite a folder's larger-scale results with smaller-scale ones.
    workers, scheduler : optional
        Run the claims on a local Dask cluster of ``workers`` or on ``scheduler``.
    formats : tuple of str, default ("png",)
        Figure formats.
    budget : float, optional
        Seconds for the fine-tuning claims' extra seeds (``--budget``).
    datasets : int, optional
        Datasets per reading where a claim declares it (Fig. 5).
    processes : int, optional
        Processes of the local pool.
    seed_records : pathlib.Path or str, optional
        The fine-tuning claims' per-seed records (``docs/seeds``), continued and added to.

    Returns
    -------
    dict
        The report: ``meta`` and one entry per claim, as written to ``audit.json``.

    Examples
    --------
    >>> import boundbench as bb
    >>> report = bb.run_audit(out_dir=Path("figures"), only=["ad"])  # doctest: +SKIP
    >>> report["meta"]["counts"]  # doctest: +SKIP
    """
    if budget is not None and not (isinstance(budget, int | float) and math.isfinite(budget)
                                   and budget > 0):
        raise InvalidArgument(f"budget must be a positive number of seconds (got {budget!r})")
    if budget is not None and (workers is not None or scheduler is not None):
        # the allocation adds seeds claim by claim, in this process
        raise InvalidArgument("budget runs the fine-tuning claims here, one after another: leave "
                              "out workers and scheduler")
    ctx = registry.CheckContext(seed=seed, scale=scale, out_dir=Path(out_dir), force=force,
                               formats=tuple(formats), sequential=budget is not None,
                               datasets=datasets,
                               seed_records=Path(seed_records) if seed_records else None)
    catalogue.load()
    # a paper's key stands for its claims; unknown ids fail before any work
    ids = catalogue.expand(list(only)) if only else list(catalogue.registry())
    check_no_downscale(Path(out_dir), ids, scale, force=force)
    t0 = time.perf_counter()
    created = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    results, spent = _claims_within_budget(
        ids, ctx, budget=budget, out_dir=Path(out_dir), t0=time.perf_counter(), progress=progress,
        run_kw={"workers": workers, "scheduler": scheduler, "processes": processes})
    # the run's options whole (issue 83), beside when and from what it ran
    run = {"ran_at": created, "scale": scale, "seed": seed, "commit": commit(),
           "spec": ctx.spec.to_dict()}
    if datasets is not None:
        run["datasets"] = datasets
    if budget is not None:
        run["budget_seconds"] = budget
    for r in results:
        r["run"] = dict(run)
    # in the report's order; _write_report fills the None fields (update keeps the order)
    meta = {"created": created, "seed": seed, "scale": None, "seconds": None,
            "workers": workers or (f"scheduler {scheduler}" if scheduler else 1),
            "environment": environment(), "machine": machine(), **lock(),
            "commit": run["commit"], "counts": None, "errors": None, "claims_run": ids,
            "out": str(out_dir),
            "merged_into": None, "budget_seconds": budget,
            "budget_spent_seconds": round(spent, 1) if budget is not None else None}
    return _write_report(Path(out_dir), results, meta, scale=scale, partial=bool(only), t0=t0)


def _claims_within_budget(ids: list[str], ctx: registry.CheckContext, *, budget: float | None,
                          out_dir: Path, t0: float, progress: bool,
                          run_kw: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    """The claims' results and the seconds spent: one pass (:func:`run_claims`), then, with a
    ``budget``, more seeds for the undecided fine-tuning claims (:func:`spend_budget`). The time
    spent is saved as it goes, so a killed budgeted audit resumes counting what it had spent."""
    if budget is None:
        return run_claims(ids, ctx, progress=progress, **run_kw), 0.0
    from boundbench.framework.files.atomic import read_json, write_json

    budget_path = out_dir / ".cache" / BUDGET_FILE
    key = {"scale": ctx.scale, "seed": ctx.seed, "budget": budget, "claims": sorted(ids)}
    before = read_json(budget_path, required=("key", "spent", "finished"))
    spent = 0.0
    if before is not None and before["key"] == key and not before["finished"]:
        spent = float(before["spent"])  # a killed run of this audit: its time counts

    def save(seconds: float, finished: bool = False) -> None:
        write_json(budget_path, {"key": key, "spent": seconds, "finished": finished})

    save(spent)
    try:
        results = run_claims(ids, ctx, progress=progress, **run_kw)
    except KeyboardInterrupt:
        save(spent + time.perf_counter() - t0)  # the time the killed pass took counts
        raise
    spent += time.perf_counter() - t0
    save(spent)
    results, spent = spend_budget(results, ctx, budget=budget, spent=spent, progress=progress,
                                  save=save)
    save(spent, finished=True)
    return results, spent


def _write_report(out: Path, results: list[dict[str, Any]], meta: dict[str, Any], *,
                  scale: str, partial: bool, t0: float) -> AuditReport:
    """Write the report with every registered writer (:data:`boundbench.report.writers.WRITERS`:
    ``audit.json``, ``audit.md``, ``index.md``, the errata sheet, the per-paper summaries,
    ``audit.html``) into ``out``; a ``partial`` audit's claims replace theirs in the
    folder's earlier report, the rest kept.
    The folder's report is read, merged and written under its lock: two partial audits that
    finish together each merge into the other's report instead of one dropping a claim."""
    out.mkdir(parents=True, exist_ok=True)
    with key_lock(out / "audit.json"):
        merged_into = None
        previous = _previous_report(out) if partial else None
        if previous is not None:
            kept, merged_into = previous
            byid = {r["id"]: r for r in kept}
            byid.update({r["id"]: r for r in results})
            order = [c for c in catalogue.registry() if c in byid]
            results = [byid[c] for c in order] + [byid[c] for c in byid if c not in order]
        scales = sorted({(r.get("run") or {}).get("scale", r.get("scale", scale)) for r in results})
        meta = {**meta, "scale": scale if scales == [scale] else "mixed (" + ", ".join(scales) + ")",
                "seconds": round(time.perf_counter() - t0, 2),
                "counts": counts(results),
                "errors": [r["id"] for r in results if r.get("error")],
                "merged_into": merged_into}
        report = _jsonable({"meta": meta, "claims": results})
        # every registered writer (report/writers.py): audit.json first, then the pages
        write_all(report, out)
    return report
