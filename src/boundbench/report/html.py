"""``audit.html``: the audit as one self-contained web page a researcher can open and send.

The findings first, a verdict table that sorts (click a column's header) and filters (by paper,
by verdict, by text), then a section per paper with its errata, what was hard to check and each
claim with its evidence and figure. Rendered with Jinja2 (autoescaped) from the same report as
``audit.md``; the figures are embedded (downscaled PNG data URIs, each linking its full-size file
beside the page), the script and style are inline, and nothing is fetched from a network: the
page mailed alone shows everything.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from boundbench.framework.claims import registry
from boundbench.framework.files.atomic import within
from boundbench.framework.files.escape import safe_url, visible
from boundbench.framework.files.meta import machine_line
from boundbench.framework.verdicts.readings import readings_text
from boundbench.report.entries import (
    anchor,
    caption,
    certified,
    difficult,
    difficulty,
    evidence_items,
    findings,
    is_fragile,
    replay_command,
    rerun_command,
    self_tests,
    verdict_size,
)
from boundbench.report.larger import Latest, larger_line, latest_verdicts
from boundbench.report.schema import AuditReport, Entry
from boundbench.report.vocabulary import (
    TERMS,
    VERDICT_HELP,
    certificate,
    certificate_counts,
    counts,
    is_finding,
)

_ENV = jinja2.Environment(loader=jinja2.PackageLoader("boundbench", "templates"),
                          autoescape=jinja2.select_autoescape(["html", "j2"]),
                          undefined=jinja2.StrictUndefined, trim_blocks=True,
                          lstrip_blocks=True)


PAGE_WIDTH = 720  # pixels: a figure on the page is drawn at most this wide
PAGE_COLORS = 128  # a page figure's palette: line plots need few colours, and PNG packs them


def inline_figure(folder: Path | None, rel: str) -> str:
    """The figure ``rel`` of ``folder`` as a data URI for the page, at most
    :data:`PAGE_WIDTH` pixels wide on a :data:`PAGE_COLORS`-colour palette (the page mailed
    alone shows it; the full-size file beside the page stays linked), or ``rel`` itself where
    the file is not there (the page then links it as before)."""
    if folder is None or not rel:
        return rel
    try:
        path = within(folder, Path(rel), what="figure")
        if not path.is_file():
            return rel
        from PIL import Image

        with Image.open(path) as im:
            im.load()
            scale = min(1.0, PAGE_WIDTH / im.width)
            small = im.convert("RGB").resize((max(1, round(im.width * scale)),
                                              max(1, round(im.height * scale))),
                                             Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        small.quantize(colors=PAGE_COLORS, method=Image.Quantize.MEDIANCUT).save(
            buf, "PNG", optimize=True)
    except (OSError, ValueError):
        return rel  # unreadable or outside the folder: linked, never embedded from elsewhere
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _image(src: str) -> str:
    """An ``img`` source: the embedded figure, or a link through the scheme allow-list."""
    return src if src.startswith("data:image/png;base64,") else safe_url(src)


def _section_key(where: str) -> list:
    """A natural sort key for where a claim sits in its paper ("Lemma A.2.4" before "Lemma
    A.2.10"; theorems, lemmas and sections each together)."""
    import re

    return [(0, int(t), "") if t.isdigit() else (1, 0, t.lower())
            for t in re.findall(r"\d+|[A-Za-z]+", where)]


def _claim(r: Entry, latest: Latest | None = None,
           folder: Path | None = None) -> dict[str, Any]:
    """What the page shows of one claim (plain strings and pairs, no nested evidence);
    ``latest``: the larger audits' latest verdicts, shown where they decided otherwise;
    ``folder``: where the figures lie, embedded from there."""
    prov = r.get("provenance")
    return {"id": r["id"], "anchor": anchor(r["id"]), "paper": r["paper"],
            "where": r["where"], "kind": r["kind"], "verdict": r["verdict"],
            "fragile": is_fragile(r), "size": verdict_size(r), "reason": r["reason"],
            "statement": r["statement"], "equation": r.get("equation") or "",
            "notes": r.get("notes") or "", "readings": readings_text(r.get("evidence") or {}),
            "evidence": evidence_items(r.get("evidence") or {}),
            "figure": safe_url(r.get("figure")), "table": r.get("table") or "",
            "table_url": safe_url(r.get("table")),
            "image": _image(inline_figure(folder, r.get("figure") or "")),
            "caption": caption(prov).replace("`", "") if prov and r.get("figure") else "",
            "replay": safe_url(((r.get("evidence") or {}).get("replay") or {}).get("path"))
            if ((r.get("evidence") or {}).get("replay") or {}).get("written") else None,
            "replay_command": replay_command(r) or "",
            "replay_result": str(((r.get("evidence") or {}).get("replay") or {}).get("result")
                                 or ""),
            "certified": certified(r), "certificate": certificate(r),
            "against": is_finding(r),
            "correction": r.get("correction") or "", "error": r.get("error") or "",
            "larger": larger_line(r["id"], r["verdict"], latest or {})}


def _paper(paper: str, title: str, rs: Sequence[Entry],
           latest: Latest | None = None, folder: Path | None = None) -> dict[str, Any]:
    claims = [_claim(r, latest, folder) for r in rs]
    return {"key": paper, "title": title, "claims": claims,
            "tally": ", ".join(f"{n} {k}" for k, n in counts(rs).items()),
            "errata": [c for c in claims if c["against"]],
            "difficult": [(r["id"], anchor(r["id"]), difficulty(r)) for r in difficult(rs)]}


def render_html(report: AuditReport, larger: list[dict[str, Any]] | None = None, *,
                folder: Path | None = None) -> str:
    """The page for ``report`` (an ``audit.json``), as text.

    Parameters
    ----------
    report : dict
        The audit's report: ``meta`` and ``claims`` as :func:`boundbench.audit.run_audit`
        writes them.
    larger : list of dict, optional
        Records of standard- or paper-scale audits (``docs/larger-audits.json``): a claim one
        of them decided otherwise shows both verdicts.
    folder : Path, optional
        The report's folder: its figures are embedded in the page (:func:`inline_figure`).
        Without it they are linked relative to the page.

    Returns
    -------
    str
        A complete HTML5 document with inline style and script and, given ``folder``, its
        figures inline: the page needs nothing beside it.
    """
    # control and invisible characters from report data shown as escapes (issue 84)
    report, larger = visible(report), visible(larger)
    meta, results = report["meta"], report["claims"]
    titles = registry.titles_of(results)
    latest = latest_verdicts(larger or [])
    return _ENV.get_template("audit.html.j2").render(
        meta=meta, rerun=rerun_command(report),
        self_tests=self_tests(results), machine=" ".join(machine_line(meta)),
        environment=", ".join(f"{k} {v}" for k, v in (meta.get("environment") or {}).items()),
        verdict_help=VERDICT_HELP, terms=TERMS, counts=sorted(meta["counts"].items()),
        levels=list(certificate_counts(results).items()),
        levels_total=sum(certificate_counts(results).values()),
        found=[_claim(r, latest) for r in findings(results)],
        claims=[_claim(r, latest) for r in sorted(
            results, key=lambda r: (list(titles).index(r["paper"]) if r["paper"] in titles
                                    else len(titles), _section_key(r["where"])))],
        papers=[_paper(p, t, [r for r in results if r["paper"] == p], latest, folder)
                for p, t in titles.items()],
        verdicts=sorted({r["verdict"] for r in results}))
