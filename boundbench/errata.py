"""An errata sheet per paper, generated from an audit (never written by hand).

Each entry is a claim the measurements went against (``violated`` or ``contradicted``): the
statement and where it is, what was measured, the smallest reproducing instance (the failing row
of the claim's table with the fewest points, where the table has ``lhs``/``rhs`` columns) with
the command that reproduces it, and the corrected statement where one is known (the claim's
``correction``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from boundbench.theory import registry as _claims
from boundbench.theory.files import write_atomic

FINDINGS = ("violated", "contradicted")
# columns that size an instance, smallest first is the smallest reproducing instance
_SIZE = ("n", "n_points", "d", "k", "heads", "lam")
_SHOW = 8  # at most this many columns of the instance row


def _smallest_instance(table: Path) -> dict[str, Any] | None:
    """The failing row (``lhs > rhs`` beyond 1e-6 relative) with the fewest points, from a claim's
    CSV; None when the table has no ``lhs``/``rhs`` columns or no failing row."""
    if not table.exists():
        return None
    df = pd.read_csv(table)
    if not {"lhs", "rhs"} <= set(df.columns):
        return None
    bad = df[df.lhs > df.rhs + 1e-6 * df.rhs.abs()]
    if bad.empty:
        return None
    by = [c for c in _SIZE if c in bad.columns]
    row = bad.sort_values(by + ["lhs"], ascending=[True] * len(by) + [False]).iloc[0]
    keep = [c for c in (*by, "family", "dataset", "lhs", "rhs") if c in row.index][:_SHOW]
    out = {c: (row[c].item() if hasattr(row[c], "item") else row[c]) for c in keep}
    out["lhs_over_rhs"] = float(row.lhs / row.rhs) if row.rhs else None
    return out


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def render(report: dict[str, Any], folder: Path, *, paper: str | None = None) -> str:
    """The errata sheet (markdown) of ``report`` (an ``audit.json``) whose outputs lie in
    ``folder``: one page per paper, or only ``paper``'s."""
    if paper is not None and paper not in _claims.PAPERS:
        raise ValueError(f"paper must be one of {sorted(_claims.PAPERS)} (got {paper!r})")
    meta = report["meta"]
    reg = _claims.registry()
    lines = ["# boundbench errata", "",
             f"Generated from the audit of {meta['created']} (scale {meta['scale']}, seed "
             f"{meta['seed']}): every claim the measurements went against. Regenerate with "
             f"`boundbench audit --scale {meta['scale']} --seed {meta['seed']}` (it writes this "
             "file) or `boundbench errata` from an existing audit.", ""]
    papers = [paper] if paper else list(_claims.PAPERS)
    for p in papers:
        found = [r for r in report["claims"] if r["paper"] == p and r["verdict"] in FINDINGS]
        lines += [f"## {_claims.PAPERS[p]}", ""]
        if not found:
            tested = sum(r["paper"] == p for r in report["claims"])
            lines += [f"No finding against this paper in this audit ({tested} claims tested).",
                      ""]
            continue
        for r in found:
            c = reg.get(r["id"])
            lines += [f"### {r['where']}: {r['verdict']} (`{r['id']}`)", "",
                      f"**Statement.** {r['statement']}", "", f"    {r['equation']}", "",
                      f"**Measured.** {r['reason']}", ""]
            inst = _smallest_instance(folder / r["table"]) if r.get("table") else None
            cmd = (f"`boundbench check {r['id']} --scale {r['scale']} --seed {r['seed']} "
                   "--out DIR`")
            if inst:
                cells = ", ".join(f"{k} = {_fmt(v)}" for k, v in inst.items())
                lines += [f"**Smallest reproducing instance.** {cells} (the failing row with "
                          f"the fewest points of `{r['table']}`); reproduce with {cmd}.", ""]
            else:
                lines += [f"**Reproduce.** {cmd}; the data behind the verdict are in "
                          f"`{r.get('table') or 'the claim table'}`.", ""]
            if c is not None and c.correction:
                lines += [f"**Corrected statement.** {c.correction}", ""]
            elif r.get("notes"):
                lines += [f"**Note.** {r['notes']}", ""]
    return "\n".join(lines) + "\n"


def write(folder: Path, *, paper: str | None = None, audit: Path | None = None) -> Path:
    """Write ``errata.md`` (or ``errata-<paper>.md``) into ``folder`` from its ``audit.json``
    (or ``audit``)."""
    from boundbench import catalogue

    catalogue.load()
    folder = Path(folder)
    src = Path(audit) if audit else folder / "audit.json"
    if not src.exists():
        raise ValueError(f"audit {str(src)!r} does not exist: run `boundbench audit` first")
    try:
        report = json.loads(src.read_text())
        report["meta"], report["claims"]  # noqa: B018 - the shape an audit has
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"audit {str(src)!r} is not an audit.json ({exc})") from exc
    text = render(report, src.parent, paper=paper)
    out = folder / (f"errata-{paper}.md" if paper else "errata.md")
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(out, lambda t: t.write_text(text))
    return out
