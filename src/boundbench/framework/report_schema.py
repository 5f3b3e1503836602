"""What an ``audit.json`` must hold before any command reads it (issue 65): one check of the
types every reader relies on, so a hand-edited, truncated or crafted report is refused with one
line naming the file, the entry and the field, never an internal error, and so that the names
a report gives files (claim ids, paper keys, figures, tables) are plain names inside ``--out``
(:mod:`boundbench.framework.escape`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from boundbench.errors import InvalidArgument
from boundbench.framework.escape import safe_name, safe_relpath

TEXT = ("where", "statement", "verdict", "reason")
OPTIONAL_TEXT = ("paper_title", "equation", "notes", "correction", "kind", "package",
                 "package_version", "figure_title", "error", "certified", "self_test",
                 "setting", "origin")
OPTIONAL_DICT = ("run", "provenance", "erratum")


class ReportError(InvalidArgument):
    """A report that is not one this version reads: the message names the file and where (an
    :class:`~boundbench.errors.InvalidArgument`: the user's file)."""


def _fail(source: str, where: str, what: str) -> ReportError:
    return ReportError(f"audit {source!r} is not one this version reads: {where} {what} (an "
                       "older, truncated or hand-edited report; rerun the audit)")


def check_report(report: Any, *, source: str) -> dict[str, Any]:
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
    for i, r in enumerate(claims):
        _check_claim(r, f"claim entry {i}", source)
    return report


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
        for f in r.get("figure_files") or []:
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
    if r.get("seconds") is not None and not isinstance(r["seconds"], int | float):
        raise _fail(source, f"{at}, field 'seconds',", "must be a number")


def read_report(path: Path) -> dict[str, Any]:
    """The ``audit.json`` at ``path``, checked (:func:`check_report`); a ``ValueError`` naming
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
    return check_report(report, source=str(path))
