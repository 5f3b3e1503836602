"""The report's writers as units (issue 83): a registry of every file an audit writes from its
report, each a :class:`Writer` with one signature, ``render(report, folder, larger) -> {file
name: text}``, written by :func:`write_all` through the safe writer for several files
(:func:`boundbench.framework.files.atomic.write_together`: unpredictable temporary names, renamed once
all are written; nothing outside the folder). The audit and ``regenerate`` write through it, and the injection
test (``tests/test_report_edges.py``) renders every registered writer, so a writer added here
is tested without editing the test.

A plugin may add its own (:func:`register_writer`); the registry records where each came from
(``file:line``), as the claim registry does.

Examples
--------
>>> from boundbench.report.writers import WRITERS
>>> [w.name for w in WRITERS.values()][:3]
['audit.json', 'audit.md', 'index.md']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import write_together
from boundbench.framework.files.escape import safe_name
from boundbench.report import errata, html, markdown, schema, summaries
from boundbench.report.schema import AuditReport

Render = Callable[[AuditReport, Path, "list[dict[str, Any]] | None"], dict[str, str]]


@dataclass(frozen=True)
class Writer:
    """One writer: its ``name``, what it writes (``files``, for the docs), its ``render`` and
    where it was registered (``origin``, ``file:line``)."""

    name: str
    files: str
    render: Render
    origin: str = ""


#: Every writer, by name, in the order the audit writes them (``audit.json`` first).
WRITERS: dict[str, Writer] = {}


def register_writer(name: str, render: Render, *, files: str) -> Writer:
    """Add a writer to :data:`WRITERS` (a name already there is refused: one writer a name)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"name must be a non-empty string (got {name!r})")
    if name in WRITERS:
        raise InvalidArgument(f"a writer named {name!r} is registered already "
                              f"({WRITERS[name].origin})")
    if not callable(render):
        raise InvalidArgument(f"render must be callable (got {type(render).__name__})")
    caller = inspect.stack()[1]
    w = Writer(name, files, render, f"{Path(caller.filename).name}:{caller.lineno}")
    WRITERS[name] = w
    return w


def render_all(report: AuditReport, folder: Path, *,
               larger: list[dict[str, Any]] | None = None,
               only: tuple[str, ...] | None = None) -> dict[Path, str]:
    """Every file the writers (or those named in ``only``) make of ``report`` for ``folder``,
    in registry order: path -> text, nothing written."""
    unknown = sorted(set(only or ()) - set(WRITERS))
    if unknown:
        raise InvalidArgument(f"only must name registered writers, {list(WRITERS)} (got "
                              f"{unknown})")
    folder = Path(folder)
    files: dict[Path, str] = {}
    for name, w in WRITERS.items():
        if only is not None and name not in only:
            continue
        for file, text in w.render(report, folder, larger).items():
            files[folder / safe_name(file, what=f"a file of writer {name!r}")] = text
    return files


def write_all(report: AuditReport, folder: Path, *, larger: list[dict[str, Any]] | None = None,
              only: tuple[str, ...] | None = None) -> list[Path]:
    """Render ``report`` with every writer (or those named in ``only``, :func:`render_all`),
    then write every file into ``folder`` as one change
    (:func:`~boundbench.framework.files.atomic.write_together`): a writer that fails, or a disk that
    fills, replaces none of them, so the folder's reports never disagree (issue 84). The paths
    written, in order."""
    files = render_all(report, folder, larger=larger, only=only)
    write_together(files)
    return list(files)


def _json(report: AuditReport, folder: Path, larger: Any) -> dict[str, str]:
    return {"audit.json": schema.dumps(report, source=str(folder / "audit.json"))}


def _errata(report: AuditReport, folder: Path, larger: Any) -> dict[str, str]:
    from boundbench import catalogue

    catalogue.load()  # the claims' corrections and titles
    return {"errata.md": errata.render(report, folder, larger=larger)}


register_writer("audit.json", _json, files="audit.json (the report, validated)")
register_writer("audit.md", lambda r, f, lg: {"audit.md": markdown.render_markdown(r)},
                files="audit.md (every claim's verdict, evidence, figure and table)")
register_writer("index.md", lambda r, f, lg: {"index.md": markdown.render_index(r)},
                files="index.md (one line a claim)")
register_writer("errata.md", _errata, files="errata.md (the findings, a page per paper)")
register_writer("summaries", lambda r, f, lg: summaries.render(r),
                files="summary-<paper>.md, findings-<paper>.csv and .tex")
register_writer("audit.html", lambda r, f, lg: {"audit.html": html.render_html(r, lg, folder=f)},
                files="audit.html (the report as one page, figures inline)")
