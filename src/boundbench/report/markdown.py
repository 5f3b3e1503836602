"""``audit.md``, the audit's report as people read it (the verdict words, what was found, a
summary by paper, a section per claim), and the folder's ``index.md`` of figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from boundbench.framework.claims import registry
from boundbench.framework.files.escape import markdown_safe, safe_url
from boundbench.framework.files.meta import machine_line
from boundbench.framework.verdicts.readings import readings_text
from boundbench.framework.verdicts.rules import FRAGILE, plural
from boundbench.report.entries import (
    EVIDENCE_COLUMNS,
    anchor,
    budgeted_and_fixed,
    caption,
    evidence_items,
    findings,
    fragile_mark,
    is_fragile,
    replay_command,
    rerun_command,
    self_tests,
    table_cell,
    verdict_size,
)
from boundbench.report.schema import AuditReport, Entry
from boundbench.report.vocabulary import TERMS, VERDICT_HELP, counts


def what_we_found(results: Sequence[Entry], *, link: str = "") -> list[str]:
    """The report's opening: one line per finding against a paper, with its size and a link
    to its section (``link`` prefixes the anchor, e.g. ``audit.md`` from another file); then
    the self-tests, passed or failed (:func:`self_tests`)."""
    found = findings(results)
    tests = self_tests(results)
    if not found:
        return ["## What we found", "", "No claim went against its paper in this audit.", "",
                *([tests, ""] if tests else [])]
    lines = ["## What we found", "",
             f"{len(found)} of {plural(len(results), 'claim')} went against their paper "
             f"({', '.join(f'{n} {k}' for k, n in counts(found).items())})."
             " Errors first, then ill-posed statements, then findings that depend on how the "
             "paper is read:", ""]
    for r in found:
        size = verdict_size(r)
        lines.append(f"- **{r['paper']}, {r['where']}**: {r['verdict']}{fragile_mark(r)}"
                     f"{f' ({size})' if size else ''}. "
                     f"[`{r['id']}`]({link}#{anchor(r['id'])})")
    return lines + [""] + ([tests, ""] if tests else [])


def render_index(report: AuditReport) -> str:
    """``index.md``: every figure as a thumbnail with its claim, verdict and links to its data
    (CSV) and config (JSON), grouped by paper."""
    report = markdown_safe(report)  # no tag from report data reaches the page (issue 65)
    meta, results = report["meta"], report["claims"]
    lines = ["# boundbench figures", "",
             f"From the audit of {meta['created']} (scale {meta['scale']}, seed {meta['seed']}). "
             "Each figure links to its table (CSV, the data it was drawn from) and its config "
             "(JSON: seed, scale, versions, device); the verdict links to the claim's section in "
             "[`audit.md`](audit.md).", ""]
    for paper, title in registry.titles_of(results).items():
        part = [r for r in results if r["paper"] == paper and r.get("figure")]
        if not part:
            continue
        lines += [f"## {title}", "", "| figure | claim | verdict | data |", "|---|---|---|---|"]
        for r in part:
            files = " · ".join(f"[{Path(f).suffix[1:]}]({safe_url(f)})"
                               for f in r.get("figure_files") or [r["figure"]])
            data = " · ".join(x for x in (
                f"[csv]({safe_url(r['table'])})" if r.get("table") else "",
                f"[config]({r['id']}.json)", files) if x)
            remake = f"<br>{table_cell(caption(r['provenance']))}" if r.get("provenance") else ""
            fig = safe_url(r["figure"])  # a link only to a file inside the report (issue 84)
            lines.append(f"| [<img src=\"{fig}\" width=\"240\">]({fig}) | "
                         f"`{r['id']}`<br>{table_cell(r['where'])} | "
                         f"[**{r['verdict']}**](audit.md#{anchor(r['id'])}) | {data}{remake} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_markdown(report: AuditReport) -> str:
    report = markdown_safe(report)  # no tag from report data reaches the page (issue 65)
    meta, results = report["meta"], report["claims"]
    env = ", ".join(f"{k} {v}" for k, v in (meta.get("environment") or {}).items())
    lines = [
        "# boundbench audit",
        "",
        f"Generated {meta['created']} at scale **{meta['scale']}** with seed {meta['seed']} in "
        f"{meta['seconds']} s ({env}).",
        *machine_line(meta),
        f"Re-run with `{rerun_command(report)}`.",
        "",
        "Verdicts, as the rules apply them:",
        *[f"- **{k}**: {v}." for k, v in VERDICT_HELP.items()],
        "", "Terms: " + "; ".join(f"**{k}**: {v}" for k, v in TERMS.items()) + ".", "",
        *what_we_found(results),
        "Every figure with its claim and verdict: [`index.md`](index.md); the errata sheet: "
        "[`errata.md`](errata.md); the same report as a web page that sorts and filters: "
        "[`audit.html`](audit.html).",
        "",
        "## How to read this report",
        "",
        *([f"This report merges a partial audit of {len(meta['claims_run'])} claim(s) "
           f"({', '.join(meta['claims_run'])}) into the audit of {meta['merged_into']}; each "
           "claim gives its own run (time, scale, seed, commit).", ""]
          if meta.get("merged_into") else []),
        "Each claim below is a statement from one of the papers, turned into a measurement: a "
        "left side measured on many instances against the paper's right side, or a predicted "
        "trend against data, with a verdict in the words defined at the top.",
    ]
    lines += [
        "",
        f"Each claim's section shows up to {EVIDENCE_COLUMNS} numbers behind its verdict (the "
        "worst ratio of left to right side, a trend's correlation and interval, the sizes); its "
        "whole evidence, the control runs just outside the claim's assumptions included, is in "
        "`audit.json`, and every figure has its data beside it as CSV.",
    ]
    lines += _summary_by_paper(results, meta)
    lines += budget_section(report)
    for r in results:
        lines += _claim_section(r)
    return "\n".join(lines)


def _summary_by_paper(results: Sequence[Entry], meta: Mapping[str, Any]) -> list[str]:
    """The report's table of claims by paper, with each paper's tally of verdicts."""
    lines: list[str] = []
    total = ", ".join(f"{n} {k}" for k, n in sorted(meta["counts"].items()))
    lines += ["", f"## Summary by paper ({plural(len(results), 'claim')}: {total})", ""]
    for paper, title in registry.titles_of(results).items():
        part = [r for r in results if r["paper"] == paper]
        if not part:
            continue
        tally = ", ".join(f"{n} {k}" for k, n in counts(part).items())
        lines += [f"### {title}", "", f"{plural(len(part), 'claim')}: {tally}.", "",
                  "| claim | where | kind | verdict | size | finding |",
                  "|---|---|---|---|---|---|"]
        for r in part:
            lines.append(f"| [`{r['id']}`](#{anchor(r['id'])}) | {table_cell(r['where'])} | "
                         f"{r['kind']} | **{r['verdict']}**{fragile_mark(r)} | "
                         f"{table_cell(verdict_size(r))} | {table_cell(r['reason'])} |")
        lines.append("")
    lines += ["Papers: " + "; ".join(f"**{k}** = {v}" for k, v in registry.titles_of(results).items()), ""]
    return lines


def _claim_section(r: Entry) -> list[str]:
    """One claim's section of the report, about a dozen lines: where it is from, the claim, the
    verdict and why (fragile or noted where it is), a one-row table of its main numbers, its
    figure, data and run."""
    lines = [f"## {r['id']}",
             f"*{r['paper_title']}*, {r['where']} · {r['kind']} · **{r['verdict']}**"
             f"{fragile_mark(r)} · [summary](#summary-by-paper).",
             f"**Claim.** {r['statement']} `{r['equation']}`", ""]
    why = f"**Verdict.** {r['reason']}"
    if is_fragile(r):
        ev = r["evidence"]
        why += (f" **Fragile:** the deciding statistic is {ev['margin_to_flip']:.3g} "
                f"({ev['margin_units']}) from its threshold, within the "
                f"{FRAGILE[ev['margin_units']]:g} a small change of the data could cross.")
    if r.get("notes"):
        why += f" **Note.** {r['notes']}"
    if words := readings_text(r.get("evidence") or {}):
        why += f" **Readings.** {words}"
    lines += [why, ""]
    if cmd := replay_command(r):
        result = ((r.get("evidence") or {}).get("replay") or {}).get("result")
        lines += [f"**Replay, without boundbench.** `{cmd}` in this report's folder (numpy and "
                  f"mpmath only): {markdown_safe(str(result))}.", ""]
    table = evidence_table(r.get("evidence") or {})
    lines += [*table, ""] if table else []
    foot = [f"![{r['id']}]({safe_url(r['figure'])})"] if r.get("figure") else []
    links = []
    if r.get("table"):
        links.append(f"Data: [`{r['table']}`]({safe_url(r['table'])}) ({r['seconds']} s)")
    if r.get("run"):
        run = r["run"]
        links.append(f"run {run.get('ran_at')}, scale {run.get('scale')}, seed "
                     f"{run.get('seed')}, commit {run.get('commit') or 'unknown'}")
    if links:
        foot.append("; ".join(links) + ".")
    if r.get("provenance") and r.get("figure"):
        foot.append(caption(r["provenance"]))
    lines += [" ".join(foot), ""] if foot else []
    if r.get("error"):
        lines += ["```", r["error"].rstrip(), "```", ""]
    return lines


def evidence_table(ev: dict[str, Any]) -> list[str]:
    """:func:`evidence_items` as a one-row Markdown table; empty when there are none."""
    items = evidence_items(ev)
    if not items:
        return []
    return ["| " + " | ".join(k for k, _ in items) + " |",
            "|" + "---|" * len(items),
            "| " + " | ".join(v for _, v in items) + " |"]


def _budget_cell(v: Any) -> str:
    """A table cell: numbers to 3 significant digits, pipes escaped."""
    return (f"{v:.3g}" if isinstance(v, int | float) else str(v)).replace("|", "\\|")


def budget_section(report: AuditReport) -> list[str]:
    """The budgeted claims' table for ``audit.md``: per claim the seeds it used, each probe's
    confidence sequence and decision, and why it stopped; empty for an audit without a
    budget."""
    meta = report["meta"]
    budget = meta.get("budget_seconds")
    if budget is None:
        return []
    rows, fixed = budgeted_and_fixed(report)
    spent = meta.get("budget_spent_seconds") or 0.0
    lines = [f"## Fine-tuning claims under the budget ({spent / 60:.1f} of "
             f"{budget / 60:.0f} min)", "",
             "Each claim added seeds until its anytime-valid 95% confidence sequence decided "
             "(valid however the seeds were chosen), or no affordable number of seeds could, or "
             "the budget ran out.", "",
             "| claim | verdict | seeds | probe | confidence sequence | no-effect band | decided "
             "| stopped |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seq = r["evidence"]["sequential"]
        for p in seq.get("probes", []):
            iv = (f"[{_budget_cell(p['cs_low'])}, {_budget_cell(p['cs_high'])}]"
                  if p.get("cs_low") is not None and p.get("cs_high") is not None
                  else "unbounded")
            told = f"{p['decision']} at {p['decided_at']}" if p.get("decision") else "no"
            b = p.get("band") or {}
            band = (f"[{_budget_cell(b['low'])}, {_budget_cell(b['high'])}] ({_budget_cell(b['rule'])}: "
                    f"{_budget_cell(b['source'])})" if b else "none declared")
            lines.append(f"| `{r['id']}` | **{r['verdict']}** | {seq['grid_seeds']} | "
                         f"{_budget_cell(p['what'])} | {iv} | {band} | {told} | "
                         f"{_budget_cell(seq.get('stopped', ''))} |")
    if fixed:
        lines += ["", "Kept at their fixed seeds (a trend over levels has no confidence sequence "
                  "here, so the budget does not add seeds to it): "
                  + ", ".join(f"`{r['id']}` (**{r['verdict']}**)" for r in fixed) + "."]
    return [*lines, ""]
