"""What an ``audit.json`` holds (:class:`AuditReport`, :class:`Meta`, :class:`ClaimEntry`) and
the one way it is read, validated and written (:func:`read`, :func:`validate`, :func:`write`).

Every reader goes through :func:`read` (issue 65): one check of the types every reader relies
on, so a hand-edited, truncated or crafted report is refused with one line naming the file, the
entry and the field, never an internal error, and so that the names a report gives files (claim
ids, paper keys, figures, tables) are plain names inside ``--out``
(:mod:`boundbench.framework.files.escape`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import write_atomic
from boundbench.framework.files.escape import safe_name, safe_relpath


class ClaimEntry(TypedDict, total=False):
    """One claim of a report: what the registry declares of it, its verdict with the reason and
    the evidence behind it, its outputs and the run that made them."""

    id: str
    paper: str
    paper_title: str
    package: str
    package_version: str
    where: str
    statement: str
    equation: str
    kind: str  # bound, equality or trend
    setting: str  # synthetic, features or fine-tuning
    origin: str  # the file and line that registered it
    notes: str
    correction: str
    erratum: dict[str, Any]
    self_test: str
    verdict: str  # one of boundbench.report.vocabulary.STATUSES
    reason: str
    evidence: dict[str, Any]
    figure: str
    figure_files: list[str]
    figure_title: str
    table: str
    seconds: float
    run: dict[str, Any]
    provenance: dict[str, Any]
    error: str
    certified: str


class Meta(TypedDict, total=False):
    """When, how and where a report was made."""

    created: str
    scale: str
    seed: int
    seconds: float
    commit: str
    counts: dict[str, int]  # claims per verdict
    errors: list[str]  # the claims whose check raised
    lock_sha256: str
    lock_pins_not_matched: list[str]
    budget_seconds: float | None  # a budgeted audit's --budget ...
    budget_spent_seconds: float  # ... and what it spent
    environment: dict[str, Any]
    machine: dict[str, Any]
    out: str
    claims_run: list[str]  # a partial audit's claims, merged into ...
    merged_into: str  # ... the audit of this date


#: a claim entry as the renderers read it: of a report (:class:`ClaimEntry`) or of its short
#: record (``docs/last-audit.json``, :func:`boundbench.report.readme.record`)
Entry = Mapping[str, Any]


class AuditReport(TypedDict):
    """An ``audit.json``: its :class:`Meta` and one :class:`ClaimEntry` per claim, in report
    order."""

    meta: Meta
    claims: list[ClaimEntry]


# what the renderers read: required (issue 84: an entry without 'kind' passed, and errata, the
# merge and regenerate then failed with "internal error: KeyError: 'kind'")
TEXT = ("where", "statement", "verdict", "reason", "kind", "equation", "paper_title")
OPTIONAL_TEXT = ("notes", "correction", "package", "package_version", "figure_title", "error",
                 "certified", "self_test", "setting", "origin")
OPTIONAL_DICT = ("run", "provenance", "erratum")


class ReportError(InvalidArgument):
    """A report that is not one this version reads: the message names the file and where (an
    :class:`~boundbench.errors.InvalidArgument`: the user's file)."""


def _fail(source: str, where: str, what: str) -> ReportError:
    return ReportError(f"audit {source!r} is not one this version reads: {where} {what} (an "
                       "older, truncated or hand-edited report; rerun the audit)")


def validate(report: Any, *, source: str) -> AuditReport:
    """``report`` if it has the shape and types every reader relies on; else
    :class:`ReportError` naming ``source``, the entry and the field."""
    if not isinstance(report, dict):
        raise _fail(source, "the file", f"holds a {type(report).__name__}, not an object")
    meta, claims = report.get("meta"), report.get("claims")
    if not isinstance(meta, dict):
        raise _fail(source, "'meta'", "is missing or not an object")
    if not isinstance(claims, list):
        raise _fail(source, "'claims'", "is missing or not a list")
    for key, kind in (("created", str), ("scale", str), ("counts", dict)):
        if not isinstance(meta.get(key), kind):
            raise _fail(source, f"meta.{key}", f"must be a {kind.__name__}")
    if not isinstance(meta.get("seed"), int) or isinstance(meta.get("seed"), bool):
        raise _fail(source, "meta.seed", "must be an integer")
    for key in ("environment", "machine"):  # the README's re-run line reads them
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            raise _fail(source, f"meta.{key}", "must be an object or null")
    # what the machine line and the budget's section read (issue 84: exit 3 on a crafted one)
    if meta.get("lock_sha256") is not None and not isinstance(meta["lock_sha256"], str):
        raise _fail(source, "meta.lock_sha256", "must be text or null")
    off = meta.get("lock_pins_not_matched")
    if off is not None and not (isinstance(off, list) and all(isinstance(x, str) for x in off)):
        raise _fail(source, "meta.lock_pins_not_matched", "must be a list of text or null")
    for key in ("budget_seconds", "budget_spent_seconds"):
        v = meta.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise _fail(source, f"meta.{key}", "must be a number or null")
    for i, r in enumerate(claims):
        _check_claim(r, f"claim entry {i}", source)
    return cast(AuditReport, report)


def _check_claim(r: Any, at: str, source: str) -> None:
    if not isinstance(r, dict):
        raise _fail(source, at, f"is a {type(r).__name__}, not an object")
    try:
        safe_name(r.get("id"), what="its id")
        at = f"claim {r['id']!r}"
        safe_name(r.get("paper"), what="its paper")
        for key in ("figure", "table"):
            if r.get(key) is not None:
                safe_relpath(r[key], what=f"its {key}")
        files = r.get("figure_files")
        if files is not None and not isinstance(files, list):
            raise InvalidArgument("its figure_files must be a list")
        for f in files or []:
            safe_relpath(f, what="its figure_files")
    except ValueError as exc:
        raise _fail(source, at, str(exc)) from None
    for key in TEXT:
        if not isinstance(r.get(key), str):
            raise _fail(source, f"{at}, field {key!r},", "must be text")
    for key in OPTIONAL_TEXT:
        if r.get(key) is not None and not isinstance(r[key], str):
            raise _fail(source, f"{at}, field {key!r},", "must be text or null")
    if not isinstance(r.get("evidence"), dict):
        raise _fail(source, f"{at}, field 'evidence',", "must be an object")
    for key in OPTIONAL_DICT:
        if r.get(key) is not None and not isinstance(r[key], dict):
            raise _fail(source, f"{at}, field {key!r},", "must be an object or null")
    if r.get("figure_files") is not None and not isinstance(r["figure_files"], list):
        raise _fail(source, f"{at}, field 'figure_files',", "must be a list")
    if isinstance(r.get("seconds"), bool) or not isinstance(r.get("seconds"), int | float):
        raise _fail(source, f"{at}, field 'seconds',", "must be a number")


def salvage(report: Any, *, source: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of ``report`` (parsed JSON) that every reader can rely on, one by one, and
    a line per entry dropped (its index or id, and why): what a partial audit keeps of a
    folder's report that :func:`validate` refuses whole (issue 84: one bad entry lost them
    all). A report without a list of claims keeps nothing."""
    claims = report.get("claims") if isinstance(report, dict) else None
    if not isinstance(claims, list):
        return [], ["the file holds no list of claims"]
    good, dropped, seen = [], [], set()
    for i, r in enumerate(claims):
        try:
            _check_claim(r, f"claim entry {i}", source)
        except ReportError as exc:
            dropped.append(str(exc).split(": ", 1)[-1].split(" (an older", 1)[0])
            continue
        if r["id"] in seen:
            dropped.append(f"claim {r['id']!r} (entry {i}) repeats an earlier entry's id")
            continue
        seen.add(r["id"])
        good.append(r)
    return good, dropped


def read(path: Path) -> AuditReport:
    """The ``audit.json`` at ``path``, checked (:func:`validate`); a ``ValueError`` naming
    the file where it is missing, is not JSON, or nests too deep to read."""
    path = Path(path)
    if not path.exists():
        raise InvalidArgument(f"audit {str(path)!r} does not exist: run `boundbench audit` first")
    try:
        report = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _fail(str(path), "the file", f"is not JSON ({exc})") from None
    except RecursionError:
        raise _fail(str(path), "the file", "nests deeper than any report does") from None
    return validate(report, source=str(path))


def write(report: AuditReport, path: Path) -> None:
    """Write ``report`` as ``audit.json`` at ``path``: validated first (:func:`validate`), then
    written atomically (an unpredictable temporary name, renamed)."""
    text = dumps(report, source=str(path))
    write_atomic(Path(path), lambda t: t.write_text(text))


def dumps(report: AuditReport, *, source: str) -> str:
    """``report`` as the text of an ``audit.json``, validated first (:func:`validate`)."""
    validate(report, source=source)
    return json.dumps(report, indent=2) + "\n"
