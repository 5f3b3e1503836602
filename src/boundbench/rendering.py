"""The audit's report as people read it: the verdict words, each claim's size, the findings,
the short record and the README's headline, ``audit.md`` and the folder's ``index.md``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from boundbench.budget import budget_section
from boundbench.errata import known_size, largest_known, rerun_command
from boundbench.framework import registry
from boundbench.framework.characterize import size as characterization_size
from boundbench.framework.escape import markdown_safe
from boundbench.framework.meta import machine_line, provenance_text  # noqa: F401 (re-exported)
from boundbench.framework.readings import against_paper, readings_text
from boundbench.framework.verdicts import FRAGILE, TERMS, fmt_ratio, plural
from boundbench.larger import beside_larger  # noqa: F401 (the findings block's, re-exported)

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

# evidence a claim section shows first (the rest, and every nested record, is in audit.json)
_EVIDENCE_FIRST = ("worst_lhs_over_rhs", "worst_found_by_search", "max_lhs_minus_rhs", "rho",
                   "ci_low", "ci_high", "std_ratio", "mean_difference", "effect", "n_instances",
                   "n_seeds", "n_points", "deciding_reading", "margin_to_flip")
EVIDENCE_COLUMNS = 6


def _fmt(v: Any) -> str:
    """A table cell: numbers to 3 significant digits, pipes escaped (norms are written |x|)."""
    text = f"{v:.3g}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|")


# evidence keys as a table names them: which family of instances a number comes from (the
# random family's worst beside a violation the search found read as a contradiction)
_EVIDENCE_NAMES = {"worst_lhs_over_rhs": "random family: worst lhs/rhs",
                   "max_lhs_minus_rhs": "random family: max lhs - rhs",
                   "n_instances": "random family: instances",
                   "n_violations": "random family: violations",
                   "worst_found_by_search": "targeted search: worst lhs/rhs"}


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
    elif (r.get("verdict") == "violated" and isinstance(ev.get("characterization"), dict)
          and ev["characterization"].get("probed")):
        # found by the tool beyond the search's box (framework.characterize), not a box corner
        parts.append(characterization_size(ev["characterization"]))
        if (isinstance(ev.get("max_lhs_minus_rhs"), int | float) and ev["max_lhs_minus_rhs"] > 0):
            parts.append(f"the random family's lhs - rhs up to {_num(ev['max_lhs_minus_rhs'])}")
    elif isinstance(worst, int | float):
        known = largest_known(ev)
        # the largest known, named by the family that found it (not the random family's worst
        # beside a search's violation)
        size = known_size(known[0]).replace("lhs/rhs", "worst lhs/rhs") if known else ""
        parts.append(f"{size} ({known[1].removeprefix('the ')})" if known
                     else f"worst lhs/rhs {fmt_ratio(worst, 3)}")
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
    return sorted((r for r in results if against_paper(r)),
                  key=lambda r: rank[r["verdict"]])


def self_tests(results: list[dict[str, Any]]) -> str:
    """The self-tests among ``results`` (claims a package declared with ``self_test``, the
    verdict they expect) in one sentence: how many passed, and each that failed; "" if none."""
    tests = [r for r in results if r.get("self_test")]
    if not tests:
        return ""
    failed = [r for r in tests if r["verdict"] != r["self_test"]]
    text = (f"Self-tests of the packages' own checks (not findings): {len(tests) - len(failed)} "
            f"passed, {len(failed)} failed")
    if failed:
        text += " (" + "; ".join(f"`{r['id']}` expected {r['self_test']}, got {r['verdict']}"
                                 for r in failed) + ")"
    return text + "."


def what_we_found(results: list[dict[str, Any]], *, link: str = "") -> list[str]:
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
             f"({', '.join(f'{n} {k}' for k, n in Counter(r['verdict'] for r in found).items())})."
             " Errors first, then ill-posed statements, then findings that depend on how the "
             "paper is read:", ""]
    for r in found:
        size = verdict_size(r)
        lines.append(f"- **{r['paper']}, {r['where']}**: {r['verdict']}{fragile_mark(r)}"
                     f"{f' ({size})' if size else ''}. "
                     f"[`{r['id']}`]({link}#{anchor(r['id'])})")
    return lines + [""] + ([tests, ""] if tests else [])


def certified(r: dict[str, Any]) -> str:
    """What a verdict rests on beyond boundbench: a violation's standalone replay (its path and
    result), a holding bound's proof or the number of evaluations that did not refute it."""
    ev = r.get("evidence") or {}
    rep = ev.get("replay")
    if isinstance(rep, dict) and rep.get("path"):
        return f"replay {rep['path']}: {rep.get('result')}"
    cert = ev.get("certification")
    if isinstance(cert, dict) and cert.get("status"):
        return str(cert["status"])
    return ""


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
            "device": ", ".join(mach.get("gpus") or []) or "CPU",
            "budget_seconds": max(((r.get("run") or {}).get("budget_seconds") or 0
                                   for r in report["claims"]), default=0) or None,
            "counts": meta["counts"],
            "claims": [{"id": r["id"], "paper": r["paper"], "where": r["where"],
                        "kind": r.get("kind"), "verdict": r["verdict"], "size": verdict_size(r),
                        "certified": certified(r),
                        "against_paper": against_paper(r), "fragile": is_fragile(r),
                        **({"self_test": r["self_test"]} if r.get("self_test") else {}),
                        "margin_to_flip": (r.get("evidence") or {}).get("margin_to_flip"),
                        "margin_units": (r.get("evidence") or {}).get("margin_units"),
                        **({"calibration": cal} if (cal := calibration_record(r)) else {})}
                       for r in report["claims"]]}


def calibration_record(r: dict[str, Any]) -> dict[str, Any] | None:
    """A stochastic verdict's calibration in short (issue 64): its realised false-decision rate
    on nulls drawn from its own data with that rate's 95% interval, the smallest effect it
    detects in its units, and the procedure that decided (a fallback where the first one was
    refused); ``None`` for a verdict without one."""
    ev = r.get("evidence") or {}
    rate, ci = ev.get("realised_false_decision_rate"), ev.get("realised_false_decision_ci")
    if not isinstance(rate, float) or not isinstance(ci, list):
        return None
    return {"rate": rate, "low": ci[0], "high": ci[1], "min_detectable_effect":
            ev.get("min_detectable_effect"), "units": ev.get("min_detectable_units"),
            "decided_by": ev.get("decided_by"), "fell_back": "refused" in ev,  # and its level:
            "alpha": (ev.get("calibration") or {}).get("alpha", 0.05)}  # 5%, a family's 0.1%


def _calibration_line(claims: list[dict[str, Any]]) -> str:
    """How the record's stochastic verdicts err on nulls drawn from their own data, or nothing
    for a record made before calibration existed."""
    cal = [c for c in claims if c.get("calibration")]
    if not cal:
        return ""
    rates = [c["calibration"]["rate"] for c in cal]
    above = [c["id"] for c in cal if c["calibration"]["low"] > c["calibration"]["alpha"]]
    fell = [c["id"] for c in cal if c["calibration"].get("fell_back")]
    return (f"; its {len(cal)} calibrated stochastic verdicts err on {min(rates):.1%} to "
            f"{max(rates):.1%} of nulls drawn from their own data, "
            + (f"{len(above)} above their nominal level" if above else "each interval reaching "
               "its nominal level (5%, 0.1% for a family of Monte Carlo tests)")
            + (f", {len(fell)} decided by a procedure valid for their data after the first was "
               f"refused ({', '.join(f'`{i}`' for i in fell)})" if fell else ""))


def _certified_line(claims: list[dict[str, Any]]) -> str:
    """How much of a record is checkable without boundbench (issue 61), or nothing for a record
    made before certification existed."""
    bounds = [c for c in claims if c.get("kind") == "bound"]
    if not any(c.get("certified") for c in bounds):
        return ""
    bad = [c for c in bounds if c["verdict"] == "violated"]
    replayed = [c for c in bad if str(c.get("certified", "")).endswith(": reproduces")]
    held = [c for c in bounds if c["verdict"] == "holds"]
    proven = [c for c in held if str(c.get("certified", "")).startswith("proven")]
    return (f" ({len(replayed)} of its {len(bad)} violated bounds replay without boundbench at "
            f"50 digits, `figures/replay/`; {len(proven)} of its {len(held)} holding bounds are "
            "proven, the others not refuted in their evaluations)")


def headline(rec: dict[str, Any], *, link: str = "",
             larger: list[dict[str, Any]] | None = None) -> str:
    """The findings of a recorded audit (:func:`record`) as the README quotes them: dated, one
    line per finding, errors first; with ``larger`` (records of standard- or paper-scale
    audits, ``docs/larger-audits.json``), then :func:`beside_larger`."""
    rec, larger = markdown_safe(rec), markdown_safe(larger)  # no marker nor tag from the data
    found = findings(rec["claims"])
    counts = ", ".join(f"{n} {k}" for k, n in sorted(rec["counts"].items()))
    lines = [f"The last recorded audit ({rec['created'][:10]}, scale {rec['scale']}, seed "
             f"{rec['seed']}, commit {str(rec.get('commit') or 'unknown')[:7]}; "
             f"{plural(len(rec['claims']), 'claim')}: {counts}) found "
             f"{plural(len(found), 'claim')} against their paper"
             f"{_certified_line(rec['claims'])}{_calibration_line(rec['claims'])}:", "",
             *([self_tests(rec["claims"]), ""] if self_tests(rec["claims"]) else [])]
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
    return "\n".join(lines + beside_larger(rec, larger or [])) + "\n"


def render_index(report: dict[str, Any]) -> str:
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
            files = " · ".join(f"[{Path(f).suffix[1:]}]({f})"
                               for f in r.get("figure_files") or [r["figure"]])
            data = " · ".join(x for x in (
                f"[csv]({r['table']})" if r.get("table") else "",
                f"[config]({r['id']}.json)", files) if x)
            remake = f"<br>{_fmt(caption(r['provenance']))}" if r.get("provenance") else ""
            lines.append(f"| [<img src=\"{r['figure']}\" width=\"240\">]({r['figure']}) | "
                         f"`{r['id']}`<br>{_fmt(r['where'])} | "
                         f"[**{r['verdict']}**](audit.md#{anchor(r['id'])}) | {data}{remake} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def render_markdown(report: dict[str, Any]) -> str:
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


def _summary_by_paper(results: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    """The report's table of claims by paper, with each paper's tally of verdicts."""
    lines: list[str] = []
    counts = ", ".join(f"{n} {k}" for k, n in sorted(meta["counts"].items()))
    lines += ["", f"## Summary by paper ({plural(len(results), 'claim')}: {counts})", ""]
    for paper, title in registry.titles_of(results).items():
        part = [r for r in results if r["paper"] == paper]
        if not part:
            continue
        tally = ", ".join(f"{n} {k}" for k, n in Counter(r["verdict"] for r in part).items())
        lines += [f"### {title}", "", f"{plural(len(part), 'claim')}: {tally}.", "",
                  "| claim | where | kind | verdict | size | finding |",
                  "|---|---|---|---|---|---|"]
        for r in part:
            lines.append(f"| [`{r['id']}`](#{anchor(r['id'])}) | {_fmt(r['where'])} | "
                         f"{r['kind']} | **{r['verdict']}**{fragile_mark(r)} | "
                         f"{_fmt(verdict_size(r))} | {_fmt(r['reason'])} |")
        lines.append("")
    lines += ["Papers: " + "; ".join(f"**{k}** = {v}" for k, v in registry.titles_of(results).items()), ""]
    return lines


def _claim_section(r: dict[str, Any]) -> list[str]:
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
    table = evidence_table(r.get("evidence") or {})
    lines += [*table, ""] if table else []
    foot = [f"![{r['id']}]({r['figure']})"] if r.get("figure") else []
    links = []
    if r.get("table"):
        links.append(f"Data: [`{r['table']}`]({r['table']}) ({r['seconds']} s)")
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


def caption(p: dict[str, str]) -> str:
    """A figure's caption: the command that remakes it, the commit, the config hash and the
    package versions (the same record is in the figure file's metadata)."""
    return provenance_text({**p, "command": f"`{p['command']}`"}) + "."


def evidence_items(ev: dict[str, Any]) -> list[tuple[str, str]]:
    """A claim's main numbers as (name, value) pairs, names and numbers only: the keys of
    ``_EVIDENCE_FIRST`` it has, then its other numbers, at most :data:`EVIDENCE_COLUMNS`
    (nested records, lists and long texts stay in ``audit.json``)."""
    def shown(v: Any) -> bool:
        return (isinstance(v, int | float) and not isinstance(v, bool)) or (
            isinstance(v, str) and 0 < len(v) <= 40)

    keys = [k for k in _EVIDENCE_FIRST if shown(ev.get(k))]
    keys += [k for k, v in ev.items() if k not in keys and shown(v)
             and not k.startswith("control_")]
    return [(_EVIDENCE_NAMES.get(k, k.replace("_", " ")),
             fmt_ratio(ev[k]) if "over_rhs" in k or k == "worst_found_by_search"
             and isinstance(ev[k], float) else _fmt(ev[k])) for k in keys[:EVIDENCE_COLUMNS]]


def evidence_table(ev: dict[str, Any]) -> list[str]:
    """:func:`evidence_items` as a one-row Markdown table; empty when there are none."""
    items = evidence_items(ev)
    if not items:
        return []
    return ["| " + " | ".join(k for k, _ in items) + " |",
            "|" + "---|" * len(items),
            "| " + " | ".join(v for _, v in items) + " |"]
