"""Run every registered claim and write ``audit.md`` and ``audit.json``."""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from boundbench import catalogue, errata
from boundbench.theory import registry as _claims
from boundbench.theory._meta import environment
from boundbench.theory.files import write_atomic

VERDICT_HELP = {
    "holds": "the inequality or identity was satisfied on every tested instance, within the "
    "stated tolerance",
    "violated": "at least one instance breaks it beyond the tolerance: a finding about the paper "
    "(or its reading), reported as measured",
    "supported": "the predicted trend appears in the measurements",
    "contradicted": "the measurements show the opposite of the predicted effect",
    "inconclusive": "the measurements cannot decide at this scale (or the check failed: see "
    "its reason)",
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


def run_audit(
    *,
    seed: int = 0,
    scale: str = "quick",
    out_dir: Path,
    only: Iterable[str] | None = None,
    progress: bool = True,
    force: bool = False,
) -> dict[str, Any]:
    """Run the claims (all, or ``only``), write the report into ``out_dir``, return it as a dict.
    Experiment tables are cached under ``out_dir/.cache``; ``force`` recomputes them."""
    ctx = _claims.CheckContext(seed=seed, scale=scale, out_dir=Path(out_dir), force=force)
    catalogue.load()
    ids = list(only) if only else list(catalogue.registry())
    for cid in ids:
        _claims.get(cid)  # unknown ids fail before any work
    t0 = time.perf_counter()
    results = []
    for cid in tqdm(ids, desc="audit", unit="claim", disable=not progress):
        results.append(_claims.run(cid, ctx, catch=True).to_dict())
    report = {
        "meta": {
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "seed": seed,
            "scale": scale,
            "seconds": round(time.perf_counter() - t0, 2),
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
              "| claim | paper, where | kind | verdict | finding |", "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| [`{r['id']}`](#{r['id'].replace('.', '')}) | {r['paper']}, "
                     f"{r['where']} | {r['kind']} | **{r['verdict']}** | {_fmt(r['reason'])} |")
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
