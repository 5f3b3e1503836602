"""One page per paper that a reviewer can attach to a review, in the shape the ML
Reproducibility Challenge asks for (scope, methodology, results, what was easy, what was
difficult), and beside it the paper's findings table as CSV and as a LaTeX ``tabular`` a paper
can ``\\input``. Written by the audit from its own report: ``summary-<paper>.md``,
``findings-<paper>.csv``, ``findings-<paper>.tex``."""

from __future__ import annotations

import csv
import io
from collections import Counter

from boundbench.framework.claims import registry
from boundbench.framework.files.escape import csv_cell, markdown_safe, safe_name, visible
from boundbench.framework.files.meta import machine_line
from boundbench.framework.verdicts.rules import plural
from boundbench.report.entries import certified, difficult, difficulty, is_fragile, readings_of, verdict_size
from boundbench.report.schema import AuditReport
from boundbench.report.vocabulary import counts, is_finding

SECTIONS = ("Scope of reproducibility", "Methodology", "Results", "What was easy",
            "What was difficult")
FINDINGS_COLUMNS = ("claim", "location", "verdict", "size", "certified", "corrected statement")


def paper_summary(report: AuditReport, paper: str) -> str:
    """``summary-<paper>.md``: the paper's claims as one page, from the audit's ``report``."""
    meta = report["meta"]
    rs = [r for r in report["claims"] if r["paper"] == paper]
    title = registry.titles_of(rs).get(paper, paper)
    kinds = Counter(r["kind"] for r in rs)
    tally = ", ".join(f"{n} {k}" for k, n in counts(rs).items())
    lines = [f"# Reproducibility summary: {title}", "",
             f"From boundbench's audit of {meta['created']} at scale **{meta['scale']}**, seed "
             f"{meta['seed']} ({meta['seconds']} s); the full report is [`audit.md`](audit.md), "
             f"the errata sheet [`errata.md`](errata.md).", *machine_line(meta), "",
             f"## {SECTIONS[0]}", "",
             f"{plural(len(rs), 'claim')} of the paper, each turned into a measurement: "
             + ", ".join(f"{n} {k}" for k, n in kinds.items()) + ".", ""]
    lines += [f"- `{r['id']}` ({r['where']}): {r['statement']}" for r in rs]
    searched = [r["id"] for r in rs if "worst_found_by_search" in (r.get("evidence") or {})]
    read = [f"`{r['id']}` ({', '.join(readings_of(r))})" for r in rs if len(readings_of(r)) > 1]
    tuned = [r["id"] for r in rs if registry.setting_of(r) == "fine-tuning"]
    lines += ["", f"## {SECTIONS[1]}", "",
              "- A bound is a left side measured on many instances against the paper's right "
              "side, within a stated tolerance; a trend is a rank correlation or a paired "
              "difference with a bootstrap interval, decided against a no-effect band; each "
              "verdict can fail (controls just outside the assumptions trip it).",
              f"- Targeted worst-case search over the assumption space: {len(searched)} "
              f"claim{'' if len(searched) == 1 else 's'}"
              + (f" ({', '.join(f'`{c}`' for c in searched)})." if searched else "."),
              "- Every reading the paper leaves open is run, and a verdict that depends on it "
              "says so: " + ("; ".join(read) + "." if read else "none here."),
              f"- Scale {meta['scale']}, seed {meta['seed']}; the same seed gives the same numbers "
              "on any machine under the lock."
              + (f" Fine-tuning claims ({len(tuned)}) are smoke runs at quick scale; the "
                 "standard and paper scales decide them (a GPU shortens them)." if tuned else "")]
    lines += ["", f"## {SECTIONS[2]}", "", f"{plural(len(rs), 'claim')}: {tally}.", "",
              "| claim | where | verdict | size |", "|---|---|---|---|"]
    lines += [f"| `{r['id']}` | {r['where']} | **{r['verdict']}**"
              f"{' (fragile)' if is_fragile(r) else ''} | {verdict_size(r)} |" for r in rs]
    errs = [r for r in rs if is_finding(r)]
    lines += ["", f"Errata ({len(errs)}):" if errs else "No claim went against the paper.", ""]
    lines += [f"- `{r['id']}` ({r['where']}): {r['reason']}"
              + (f" Corrected: {r['correction']}" if r.get("correction") else "") for r in errs]
    hard = difficult(rs)
    easy = [r for r in rs if r not in hard]
    lines += ["", f"## {SECTIONS[3]}", "",
              f"{plural(len(easy), 'claim')} {'was' if len(easy) == 1 else 'were'} decided "
              "under one reading with a margin: "
              + (", ".join(f"`{r['id']}` ({r['verdict']})" for r in easy) or "none") + ".",
              "", f"## {SECTIONS[4]}", ""]
    lines += [f"- `{r['id']}`: {difficulty(r)}" for r in hard] or ["Nothing here."]
    return "\n".join(lines) + "\n"


def findings_rows(report: AuditReport, paper: str) -> list[dict[str, str]]:
    """The paper's findings table: every claim with its location, verdict, size and the
    corrected statement where the audit gives one."""
    return [{"claim": r["id"], "location": r["where"], "verdict": r["verdict"],
             "size": verdict_size(r), "certified": certified(r),
             "corrected statement": r.get("correction") or ""}
            for r in report["claims"] if r["paper"] == paper]


def _latex(text: str) -> str:
    text = text.replace("\\", "\0")  # last: its replacement has braces of its own
    for a, b in (("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"), ("_", r"\_"),
                 ("{", r"\{"), ("}", r"\}"), ("~", r"\~{}"), ("^", r"\^{}")):
        text = text.replace(a, b)
    return text.replace("\0", r"\textbackslash{}")


def findings_latex(rows: list[dict[str, str]]) -> str:
    """A ``tabular`` of the findings rows, text escaped for LaTeX."""
    out = [r"\begin{tabular}{llllp{0.4\linewidth}}", r"\hline",
           " & ".join(c.capitalize() for c in FINDINGS_COLUMNS) + r" \\", r"\hline"]
    out += [" & ".join(_latex(row[c]) for c in FINDINGS_COLUMNS) + r" \\" for row in rows]
    return "\n".join([*out, r"\hline", r"\end{tabular}"]) + "\n"


def render(report: AuditReport) -> dict[str, str]:
    """Every paper's summary and findings tables: file name -> text."""
    files: dict[str, str] = {}
    safe = markdown_safe(report)  # no tag from report data reaches a page (issue 65)
    for paper in dict.fromkeys(r["paper"] for r in report["claims"]):
        safe_name(paper, what="a claim's paper")  # it names the files below
        md = paper_summary(safe, paper)
        rows = findings_rows(visible(report), paper)  # no control character in a cell
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FINDINGS_COLUMNS)
        w.writeheader()
        w.writerows([{k: csv_cell(v) for k, v in row.items()} for row in rows])
        files.update({f"summary-{paper}.md": md, f"findings-{paper}.csv": buf.getvalue(),
                      f"findings-{paper}.tex": findings_latex(rows)})
    return files
