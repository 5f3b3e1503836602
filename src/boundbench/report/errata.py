"""An errata sheet per paper, generated from an audit (never written by hand).

Each paper's page has three sections, so that nothing accuses a paper of what comes from our own
choices:

- **Errors**: findings that hold under every reading the project runs that decides (undecided
  readings are named) and for every optimal solution (``violated``, ``contradicted``,
  ``no-effect``);
- **Ill-posed statements**: statements that presuppose a unique optimum where there is none
  (``ill-posed``: true for the closest pair of optima, false for the farthest);
- **Findings that depend on how the paper is read** (``depends-on-reading``), with the verdict
  of each reading.

Each entry gives the statement and where it is, what was measured, the smallest reproducing
instance (the failing row of the claim's table with the fewest points, where the table has
``lhs``/``rhs`` columns; for an ill-posed statement the farthest pair's ``lhs_farthest``) with
the command that reproduces it, and the corrected statement where one is known (the claim's
``correction``, which names the registered claim that verifies it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.claims import registry
from boundbench.framework.files.atomic import within, write_atomic
from boundbench.framework.files.escape import markdown_safe, safe_name, safe_url
from boundbench.framework.search.characterize import summary as characterization_summary
from boundbench.framework.verdicts.readings import readings_text
from boundbench.framework.verdicts.rules import NUMERIC_RTOL, fmt_ratio, fmt_sides, plural
from boundbench.framework.verdicts.sizes import largest_known
from boundbench.report import schema
from boundbench.report.entries import rerun_command, size_line
from boundbench.report.larger import larger_line, latest_verdicts
from boundbench.report.schema import AuditReport, Entry
from boundbench.report.vocabulary import is_finding

# columns that size an instance, smallest first is the smallest reproducing instance
_SIZE = ("n", "n_points", "d", "k", "heads", "lam")
_SHOW = 8  # at most this many columns of the instance row


SECTIONS = (
    ("Errors", ("violated", "contradicted", "no-effect"),
     "Findings that hold under every reading the project runs that decides (a reading that "
     "cannot decide is named in the entry) and for every optimal solution."),
    ("Ill-posed statements", ("ill-posed",),
     "Statements that presuppose a unique optimum where there is none: true for the closest "
     "pair of optimal solutions, false for the farthest."),
    ("Findings that depend on how the paper is read", ("depends-on-reading",),
     "The paper leaves a choice open (or the claim is about a curve over training steps t); "
     "its plausible readings (or ranges of t) reach different decided verdicts, one of them "
     "against the paper."),
)


def _smallest_instance(table: Path, lhs: str = "lhs") -> dict[str, Any] | None:
    """The failing row (``lhs > rhs`` beyond ``NUMERIC_RTOL`` relative) with the fewest points, from a claim's
    CSV; None when the table has no ``lhs``/``rhs`` columns or no failing row."""
    if not table.exists():
        return None
    df = pd.read_csv(table)
    if not {lhs, "rhs"} <= set(df.columns):
        return None
    df = df.assign(lhs=df[lhs])
    bad = df[df.lhs > df.rhs + NUMERIC_RTOL * df.rhs.abs()]
    if bad.empty:
        return None
    by = [c for c in _SIZE if c in bad.columns]
    row = bad.sort_values(by + ["lhs"], ascending=[True] * len(by) + [False]).iloc[0]
    keep = [c for c in (*by, "family", "dataset", "lhs", "rhs") if c in row.index][:_SHOW]
    out = {c: (row[c].item() if hasattr(row[c], "item") else row[c]) for c in keep}
    out["lhs_over_rhs"] = float(row.lhs / row.rhs) if row.rhs else None
    return out


def _anchor(name: str) -> str:
    """An explicit HTML anchor for a paper or claim (headings' own anchors vary by viewer)."""
    return "errata-" + name.lower().replace(".", "-")


def _fmt(v: Any) -> str:
    """A value at a reader's precision (4 significant digits), lists and tuples element-wise:
    the exact instance is in the claim's replay and evidence, not in the sheet."""
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def _ratio(v: Any) -> str:
    return fmt_ratio(v) if isinstance(v, float) else _fmt(v)


def _cells(inst: dict[str, Any]) -> str:
    """An instance's columns; its sides with as many digits as it takes to tell them apart and
    its ratio never rounded to 1 unless it is 1 (a violation must show in print)."""
    shown = {k: _fmt(v) for k, v in inst.items()}
    for lhs in ("lhs", "lhs_farthest"):
        if isinstance(inst.get(lhs), float) and isinstance(inst.get("rhs"), float):
            shown[lhs], shown["rhs"] = fmt_sides(inst[lhs], inst["rhs"])
    for key in ("lhs_over_rhs", "ratio", "worst_ratio"):
        if isinstance(inst.get(key), float):
            shown[key] = fmt_ratio(inst[key])
    return ", ".join(f"{k} = {v}" for k, v in shown.items())


def render(report: AuditReport, folder: Path, *, paper: str | None = None,
           larger: list[dict[str, Any]] | None = None) -> str:
    """The errata sheet (markdown) of ``report`` (an ``audit.json``) whose outputs lie in
    ``folder``: one page per paper, or only ``paper``'s; with ``larger`` (records of standard-
    or paper-scale audits, ``docs/larger-audits.json``), each finding a larger audit decided
    otherwise says so, with both verdicts."""
    report, larger = markdown_safe(report), markdown_safe(larger)  # issue 65: no tag from data
    latest = latest_verdicts(larger or [])
    titles = registry.titles_of(report["claims"])
    if paper is not None and paper not in titles:
        raise InvalidArgument(f"paper must be one of the audit's papers, {sorted(titles)} (got "
                              f"{paper!r})")
    meta = report["meta"]
    reg = registry.registry()
    lines = ["# boundbench errata", "",
             f"Generated from the audit of {meta['created']} (scale {meta['scale']}, seed "
             f"{meta['seed']}): every claim the measurements went against. Regenerate with "
             f"`{rerun_command(report)}` (it writes this file) or `boundbench errata` from an "
             "existing audit.", ""]
    papers = [paper] if paper else list(titles)
    lines += ["## Contents", ""]
    for p in papers:
        found = [r for r in report["claims"] if r["paper"] == p and is_finding(r)]
        lines.append(f"- [{titles[p]}](#{_anchor(p)}): {len(found)} finding(s)")
        for title, statuses, _ in SECTIONS:
            for r in (r for r in found if r["verdict"] in statuses):
                lines.append(f"  - [{r['where']}: {r['verdict']}](#{_anchor(r['id'])}) "
                             f"(`{r['id']}`, {title.lower()})")
    lines.append("")
    for p in papers:
        found = [r for r in report["claims"] if r["paper"] == p and is_finding(r)]
        tested = sum(r["paper"] == p for r in report["claims"])
        lines += [f'<a id="{_anchor(p)}"></a>', "", f"## {titles[p]}", "",
                  f"{plural(len(found), 'finding')} among the {plural(tested, 'claim')} tested." if found else
                  f"No finding against this paper in this audit ({plural(tested, 'claim')} tested).", ""]
        for title, statuses, what in SECTIONS:
            part = [r for r in found if r["verdict"] in statuses]
            lines += [f"### {title}", "", what, ""]
            if not part:
                lines += ["None in this audit.", ""]
            for r in part:
                lines += _entry(r, reg.get(r["id"]), folder,
                                larger_line(r["id"], r["verdict"], latest))
    return "\n".join(lines) + "\n"


_FAILS = {"statement": "the statement as displayed", "proof step": "a step of its proof",
          "use": "a use of it"}


def _size(ev: dict[str, Any]) -> str:
    """How badly and where it fails, as the characterization stage found it beyond the
    search's box (:mod:`boundbench.framework.search.characterize`): "unbounded along <map>" with its
    growth and the instances at both ends, the boundary where it starts to fail; else the
    worst ratio found."""
    ch = ev.get("characterization")
    if isinstance(ch, dict):
        if ch.get("probed"):
            return characterization_summary(ch, largest_known(ev))
        worst = ev.get("worst_found_by_search", ev.get("worst_lhs_over_rhs"))
        return ((f"worst lhs/rhs found {fmt_ratio(worst)}; " if isinstance(worst, float) else "")
                + f"not characterized beyond it: {ch.get('why', '')}")
    worst = ev.get("worst_found_by_search", ev.get("worst_lhs_over_rhs"))
    return f"worst lhs/rhs found {fmt_ratio(worst)}" if isinstance(worst, float) else ""


def _regions(regions: Any) -> list[str]:
    """Where the bound fails, in each declared scale over the box's other parameters
    (:mod:`boundbench.framework.search.region`), with the boundary instance's replay; the ray from the
    worst instance stays in the Size, named as one ray's."""
    lines: list[str] = []
    for g in regions if isinstance(regions, list) else []:
        if not isinstance(g, dict) or not isinstance(g.get("note"), str):
            continue
        rep: dict[str, Any] = g["replay"] if isinstance(g.get("replay"), dict) else {}
        tail = (f" Replay of the boundary instance: [`{rep['path']}`]({safe_url(rep['path'])}) "
                f"{rep.get('result')} (exit {rep.get('exit')}; its control, the holding "
                f"value's worst instance, exits {rep.get('control_exit')})."
                if rep.get("written") else "")
        over = f", over {g['over']}" if isinstance(g.get("over"), str) else ""
        lines += [f"**Where it fails in {g.get('scale')}{over}.** {g['note']}.{tail}", ""]
    return lines


def _entry(r: Entry, c: Any, folder: Path, larger: str = "") -> list[str]:
    err = r.get("erratum") or {}
    what = f" ({_FAILS[err['fails']]})" if err.get("fails") in _FAILS else ""
    lines = [f'<a id="{_anchor(r["id"])}"></a>', "",
             f"#### {r['where']}{what}: {r['verdict']} (`{r['id']}`)", "",
             f"**Statement.** {r['statement']}", "", f"    {r['equation']}", ""]
    if err:
        lines += [f"**What fails.** {err['part']}", ""]
        if err.get("constants"):
            lines += [f"**Its constants.** {err['constants']}", ""]
        if err.get("downstream"):
            lines += [f"**What follows.** {err['downstream']}", ""]
    size = _size(r.get("evidence") or {}) if r["verdict"] == "violated" else ""
    if size:
        known = size_line(r.get("evidence") or {})
        lines += [f"**Size.** {size}." + (f" {known[0].upper()}{known[1:]}." if known else ""), ""]
    lines += [f"**Measured.** {r['reason']}", ""]
    rep = (r.get("evidence") or {}).get("replay")
    if isinstance(rep, dict) and rep.get("written"):
        lines += [f"**Replay, without boundbench.** [`{rep['path']}`]({safe_url(rep['path'])}) (numpy and "
                  f"mpmath only; `python {rep['path']}`): at {rep.get('digits', 50)} digits the "
                  f"violation {rep.get('result')} (exit {rep.get('exit')}); its control, the "
                  f"instance nudged back inside the bound, exits {rep.get('control_exit')}.", ""]
    lines += _regions((r.get("evidence") or {}).get("regions"))
    by_reading = (r.get("evidence") or {}).get("by_reading")
    if isinstance(by_reading, dict) and by_reading:
        lines += ["| reading | verdict | what it measured |", "|---|---|---|"]
        lines += [f"| {name} | {v.get('status')} | {str(v.get('reason', '')).replace('|', '/')} |"
                  for name, v in by_reading.items()]
        lines.append("")
        if words := readings_text(r.get("evidence") or {}):
            lines += [f"**Readings.** {words}", ""]
    ev0 = r.get("evidence") or {}
    if isinstance(ev0.get("t_ranges"), str):
        lines += [f"**Along the training steps.** {ev0['t_ranges']} (decided at t = "
                  f"{', '.join(str(t) for t in ev0.get('decided_at_steps', []))}).", ""]
    if ev0.get("fragile"):
        lines += [f"**Fragile.** The deciding statistic is {ev0.get('margin_to_flip'):.3g} "
                  f"({ev0.get('margin_units')}) from its threshold: a small change of the data "
                  "(another seed, size or machine) may decide otherwise.", ""]
    if larger:
        lines += [f"**At a larger scale.** {larger}.", ""]
    if r.get("figure"):
        lines += [f"![{r['id']}: {r['verdict']}]({safe_url(r['figure'])})", ""]
    lhs = "lhs_farthest" if r["verdict"] == "ill-posed" else "lhs"
    # a report's table path is data: read it only where it stays inside the folder
    inst = (_smallest_instance(within(folder, r["table"], what=f"{r['id']}'s table"), lhs)
            if r.get("table") else None)
    cmd = (f"`boundbench check {r['id']} --scale {r['scale']} --seed {r['seed']} "
           "--out DIR`")
    hand = (r.get("evidence") or {}).get("reproducing_instance")
    if isinstance(hand, dict):
        extra = {k: v for k, v in hand.items() if k not in ("instance", "lhs", "rhs",
                                                              "lhs_over_rhs")}
        lines += [f"**Reproducing instance (by hand).** {hand['instance']}: "
                  f"{_cells({k: hand[k] for k in ('lhs', 'rhs', 'lhs_over_rhs')})}"
                  + "".join(f"; {k} = {_fmt(v)}" for k, v in extra.items())
                  + f"; reproduce with {cmd}.", ""]
        inst = None
    if inst:
        cells = _cells(inst)
        which = " (farthest optimal pair)" if lhs != "lhs" else ""
        lines += [f"**Smallest reproducing instance{which}.** {cells} (the failing row with "
                  f"the fewest points of `{r['table']}`); reproduce with {cmd}.", ""]
    elif not isinstance(hand, dict):
        lines += [f"**Reproduce.** {cmd}; the data behind the verdict are in "
                  f"`{r.get('table') or 'the claim table'}`.", ""]
    ev = r.get("evidence") or {}
    if isinstance(ev.get("worst_instance"), dict):
        cells = _cells(ev.get("worst_instance_named") or ev["worst_instance"])
        lines += [f"**Worst instance of the targeted search** (lhs/rhs "
                  f"{_ratio(ev.get('search_alone_worst_ratio'))}, {ev.get('search_evals')} "
                  f"instances searched): {cells}.", ""]
    if c is not None and c.correction:
        lines += [f"**Corrected statement.** {c.correction}", ""]
    elif r.get("notes"):
        lines += [f"**Note.** {r['notes']}", ""]
    return lines


def write(folder: Path, *, paper: str | None = None, audit: Path | None = None,
          larger: list[dict[str, Any]] | None = None) -> Path:
    """Write ``errata.md`` (or ``errata-<paper>.md``) into ``folder`` from its ``audit.json``
    (or ``audit``); ``larger``: records of larger audits to show beside (:func:`render`)."""
    from boundbench import catalogue

    catalogue.load()
    folder = Path(folder)
    if paper is not None:  # it names a file: a plain name, nothing that leaves the folder
        safe_name(paper, what="paper")
    src = Path(audit) if audit else folder / "audit.json"
    report = schema.read(src)
    try:
        text = render(report, src.parent, paper=paper, larger=larger)
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidArgument(f"audit {str(src)!r} is not one this version reads ({type(exc).__name__}"
                              f": {exc}; an older or hand-edited report; rerun the audit)") from None
    out = folder / (f"errata-{paper}.md" if paper else "errata.md")
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lambda t: t.write_text(text))
    return out
