"""The README's findings block beside the larger audits the repository keeps
(``docs/larger-audits.json``): each claim the quick audit leaves undecided with its latest
standard- or paper-scale verdict, and each claim a larger audit decided otherwise, with both
verdicts."""

from __future__ import annotations

from typing import Any

from boundbench.report.schema import Entry


def _when(r: Entry) -> str:
    budget = f", {r['budget_seconds'] / 60:.0f}-min budget" if r.get("budget_seconds") else ""
    return f"{r['created'][:10]}, {r['device']}{budget}"


def reach_text(c: Entry) -> str:
    """A recorded claim's smallest detectable effect in words (``"detects 0.55 Spearman rho"``),
    or ``""`` where its record has none."""
    cal = c.get("calibration") or {}
    mde = cal.get("min_detectable_effect")
    if not isinstance(mde, float):
        return "detects no effect tried" if cal else ""
    return f"detects {mde:.2g} {cal.get('units') or ''}".rstrip()


Latest = dict[str, tuple[dict[str, Any], dict[str, Any]]]
UNDECIDED = ("inconclusive", "not-testable")


def latest_verdicts(larger: list[dict[str, Any]]) -> Latest:
    """Each claim's latest entry in ``larger`` (records of standard- or paper-scale audits):
    claim id -> (record, the claim's entry)."""
    latest: Latest = {}
    for r in sorted(larger, key=lambda r: r["created"]):
        for c in r["claims"]:
            latest[c["id"]] = (r, c)
    return latest


def decided_otherwise(cid: str, verdict: str, latest: Latest
                      ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The latest larger audit of ``cid`` where it decided otherwise than ``verdict`` (both
    decided), else None."""
    if cid not in latest or verdict in UNDECIDED:
        return None
    r, big = latest[cid]
    return None if big["verdict"] in UNDECIDED or big["verdict"] == verdict else (r, big)


def larger_line(cid: str, verdict: str, latest: Latest) -> str:
    """"paper (2026-11-26, CPU): depends-on-reading (size)" where a larger audit decided
    ``cid`` otherwise than ``verdict``, with why scales can differ; else ""."""
    found = decided_otherwise(cid, verdict, latest)
    if found is None:
        return ""
    r, big = found
    size = f" ({big['size']})" if big.get("size") else ""
    return (f"{r['scale']} scale ({_when(r)}): {big['verdict']}{size}, where this audit says "
            f"{verdict}; {WHY_SCALES_DIFFER}")


def beside_larger(rec: dict[str, Any], larger: list[dict[str, Any]]) -> list[str]:
    """The claims the quick audit ``rec`` leaves inconclusive, each with its latest verdict in
    ``larger`` (records of standard- or paper-scale audits, :func:`record`), grouped: against
    the paper, decided with it, still undecided. Each verdict dated and labelled with its scale,
    device and budget; empty when no record holds such a claim."""
    latest = latest_verdicts(larger)
    open_ = [c["id"] for c in rec["claims"] if c["verdict"] == "inconclusive"
             and c["id"] in latest]
    differ = _decided_otherwise(rec, latest)
    if not open_:
        return differ
    groups: dict[str, list[str]] = {"against the paper": [], "with the paper": [],
                                    "still undecided": []}
    for cid in open_:
        r, c = latest[cid]
        group = ("still undecided" if c["verdict"] in ("inconclusive", "not-testable") else
                 "against the paper" if c.get("against_paper") else "with the paper")
        size = f", {c['size']}" if c.get("size") and group != "still undecided" else ""
        if group == "still undecided" or c["verdict"] == "no-effect":
            # what the run could have seen (issue 64), where its record says
            size += f", {reach}" if (reach := reach_text(c)) else ""
        groups[group].append(f"`{cid}` {c['verdict']} ({r['scale']}, {_when(r)}{size})")
    return ["", f"{len(open_)} claims the quick scale leaves undecided (smoke runs), with their "
            "latest recorded standard- or paper-scale verdict (`docs/larger-audits.json`):", "",
            *[f"- {g}: " + "; ".join(items) for g, items in groups.items() if items], *differ]


# why a larger scale can decide a claim otherwise than the quick one, by what it changes
WHY_SCALES_DIFFER = (
    "a larger scale runs more datasets, steps and search evaluations: an interval narrows "
    "(or its readings split), a grid reaches further, a search finds an instance the quick "
    "budget misses; neither verdict is overwritten, both are measured")


def _decided_otherwise(rec: dict[str, Any], latest: Latest) -> list[str]:
    """The claims ``rec`` decided whose latest standard- or paper-scale verdict (``latest``)
    is another decided one: both verdicts, with their sizes, and why scales can differ."""
    rows = []
    for c in rec["claims"]:
        found = decided_otherwise(c["id"], c["verdict"], latest)
        if found is None:
            continue
        r, big = found
        here = f" ({c['size']})" if c.get("size") else ""
        there = f" ({big['size']})" if big.get("size") else ""
        rows.append(f"`{c['id']}` {rec['scale']} **{c['verdict']}**{here}, {r['scale']} "
                    f"({_when(r)}) **{big['verdict']}**{there}")
    if not rows:
        return []
    # one paragraph: the README keeps to 150 lines
    return ["", f"Decided otherwise by a larger recorded audit ({len(rows)}; {WHY_SCALES_DIFFER}; "
            f"`docs/results-log.md` gives each run's reasons): " + "; ".join(rows) + "."]
