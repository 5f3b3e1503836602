"""The one gate between report data and the files a report writes (issue 65): a claim's text,
a plugin's text or a hand-edited ``audit.json`` can hold anything, and none of it may become a
script in a Markdown or HTML report, a formula in a spreadsheet, a link to another scheme, or a
path outside ``--out``.

- :func:`safe_name` / :func:`safe_relpath`: a file name (a claim id, a paper key) or a relative
  path inside the output folder, or a ``ValueError`` naming what it is;
- :func:`markdown_safe`: every string of a report with tag-like ``<`` written as ``&lt;``, so no
  ``<script>``, ``<img onerror>`` or ``<!-- marker -->`` from report data reaches a Markdown
  report (``<=`` and ``< 3`` stay as they are);
- :func:`safe_url`: a link target only where it is a relative path inside the report's folder
  or an ``http(s)`` address (``javascript:``, ``data:`` and the rest become ``#``);
- :func:`csv_cell`: a cell that a spreadsheet would run as a formula (OWASP's list: a leading
  ``=``, ``+``, ``-``, ``@``, tab or carriage return) prefixed with ``'``.
"""

from __future__ import annotations

import re
from typing import Any

from boundbench.errors import InvalidArgument

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,199}")
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def safe_name(name: Any, *, what: str) -> str:
    """``name`` if it is one safe file-name component (letters, digits, ``. _ + -``, starting
    with a letter or digit, no ``..``, at most 200 characters); else a ``ValueError`` naming
    ``what`` and the rule."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise InvalidArgument(f"{what} must be a plain file name (letters, digits and . _ + -, "
                              f"starting with a letter or digit, no '..'; got {name!r:.80})")
    return name


def safe_relpath(path: Any, *, what: str) -> str:
    """``path`` if it is a relative path of :func:`safe_name` components joined by ``/`` (a
    figure, a table, a replay script inside ``--out``); else a ``ValueError``."""
    if not isinstance(path, str) or not path or path.startswith("/"):
        raise InvalidArgument(f"{what} must be a relative path inside the output folder (got "
                              f"{path!r:.80})")
    for part in path.split("/"):
        safe_name(part, what=what)
    return path


def markdown_safe(obj: Any) -> Any:
    """``obj`` (a report, a record, a string) with every string's tag-like ``<`` escaped, to
    depth 64: what every Markdown renderer applies to report data before writing it."""
    def walk(o: Any, depth: int) -> Any:
        if isinstance(o, str):
            return _TAG.sub("&lt;", o)
        if depth > 64:
            return o
        if isinstance(o, dict):
            return {k: walk(v, depth + 1) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return type(o)(walk(v, depth + 1) for v in o)
        return o

    return walk(obj, 0)


def safe_url(url: Any) -> str:
    """A link target from report data: a relative path without a scheme (no ``..``), an
    ``#anchor`` or an ``http(s)`` address as it is; anything else ``#``."""
    if not isinstance(url, str) or not url:
        return "#"
    if url.startswith("#") or re.match(r"^https?://", url, re.IGNORECASE):
        return url
    if _SCHEME.match(url) or url.startswith(("/", "\\")) or ".." in url.split("/"):
        return "#"
    return url


def csv_cell(value: Any) -> Any:
    """A CSV cell that a spreadsheet would evaluate (a leading ``= + - @``, tab or CR) as text:
    ``'`` prefixed (OWASP, CSV injection). Numbers and other cells are returned as they are."""
    if isinstance(value, str) and value.startswith(FORMULA):
        return "'" + value
    return value
