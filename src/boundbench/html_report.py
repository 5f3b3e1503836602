"""``audit.html``: the audit as one self-contained web page a researcher can open and send.

The findings first, a verdict table that sorts (click a column's header) and filters (by paper,
by verdict, by text), then a section per paper with its errata, what was hard to check and each
claim with its evidence and figure. Rendered with Jinja2 (autoescaped) from the same report as
``audit.md``; the figures are linked relative to the page (they lie beside it), the script and
style are inline, and nothing is fetched from a network.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import jinja2

from boundbench.errata import rerun_scale
from boundbench.framework import registry as _claims
from boundbench.larger import Latest, larger_line, latest_verdicts
from boundbench.rendering import (
    VERDICT_HELP,
    anchor,
    caption,
    certified,
    evidence_items,
    findings,
    is_finding,
    is_fragile,
    machine_line,
    verdict_size,
)
from boundbench.summaries import difficult, difficulty

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("boundbench", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]),
                          undefined=jinja2.StrictUndefined, trim_blocks=True,
                          lstrip_blocks=True)


def _claim(r: dict[str, Any], latest: Latest | None = None) -> dict[str, Any]:
    """What the page shows of one claim (plain strings and pairs, no nested evidence);
    ``latest``: the larger audits' latest verdicts, shown where they decided otherwise."""
    prov = r.get("provenance")
    return {"id": r["id"], "anchor": anchor(r["id"]), "paper": r["paper"],
            "where": r["where"], "kind": r["kind"], "verdict": r["verdict"],
            "fragile": is_fragile(r), "size": verdict_size(r), "reason": r["reason"],
            "statement": r["statement"], "equation": r.get("equation") or "",
            "notes": r.get("notes") or "", "evidence": evidence_items(r.get("evidence") or {}),
            "figure": r.get("figure") or "", "table": r.get("table") or "",
            "caption": caption(prov).replace("`", "") if prov and r.get("figure") else "",
            "replay": ((r.get("evidence") or {}).get("replay") or {}).get("path")
            if ((r.get("evidence") or {}).get("replay") or {}).get("written") else None,
            "certified": certified(r),
            "against": is_finding(r),
            "correction": r.get("correction") or "", "error": r.get("error") or "",
            "larger": larger_line(r["id"], r["verdict"], latest or {})}


def _paper(paper: str, title: str, rs: list[dict[str, Any]],
           latest: Latest | None = None) -> dict[str, Any]:
    claims = [_claim(r, latest) for r in rs]
    return {"key": paper, "title": title, "claims": claims,
            "tally": ", ".join(f"{n} {k}" for k, n in Counter(r["verdict"] for r in rs).items()),
            "errata": [c for c in claims if c["against"]],
            "difficult": [(r["id"], anchor(r["id"]), difficulty(r)) for r in difficult(rs)]}


def render_html(report: dict[str, Any], larger: list[dict[str, Any]] | None = None) -> str:
    """The page for ``report`` (an ``audit.json``), as text.

    Parameters
    ----------
    report : dict
        The audit's report: ``meta`` and ``claims`` as :func:`boundbench.audit.run_audit`
        writes them.
    larger : list of dict, optional
        Records of standard- or paper-scale audits (``docs/larger-audits.json``): a claim one
        of them decided otherwise shows both verdicts.

    Returns
    -------
    str
        A complete HTML5 document with inline style and script; its images are the claims'
        figure files, linked relative to the report's folder.
    """
    meta, results = report["meta"], report["claims"]
    titles = _claims.titles_of(results)
    latest = latest_verdicts(larger or [])
    return _ENV.get_template("audit.html.j2").render(
        meta=meta, rerun=rerun_scale(meta), machine=" ".join(machine_line(meta)),
        environment=", ".join(f"{k} {v}" for k, v in meta["environment"].items()),
        verdict_help=VERDICT_HELP, counts=sorted(meta["counts"].items()),
        found=[_claim(r, latest) for r in findings(results)],
        claims=[_claim(r, latest) for r in results],
        papers=[_paper(p, t, [r for r in results if r["paper"] == p], latest)
                for p, t in titles.items()],
        verdicts=sorted({r["verdict"] for r in results}))
