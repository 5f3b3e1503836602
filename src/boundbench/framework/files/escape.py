"""The one gate between report data and the files a report writes (issue 65): a claim's text,
a plugin's text or a hand-edited ``audit.json`` can hold anything, and none of it may become a
script in a Markdown or HTML report, a formula in a spreadsheet, a link to another scheme, or a
path outside ``--out``.

- :func:`safe_name` / :func:`safe_relpath`: a file name (a claim id, a paper key) or a relative
  path inside the output folder, or a ``ValueError`` naming what it is;
- :func:`markdown_safe`: every string of a report, keys too, with tag-like ``<`` written as
  ``&lt;``, so no ``<script>``, ``<img onerror>`` or ``<!-- marker -->`` from report data reaches a
  Markdown report (``<=`` and ``< 3`` stay as they are), links to other schemes than http(s)
  shown as text, and control and invisible characters as escapes (:func:`visible`, which the
  HTML renderer applies before its autoescaping);
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
# C0 controls but tab, newline and carriage return, DEL, C1, and the invisible format characters
# that reorder or hide text (zero-width, bidirectional embeddings, overrides and isolates, BOM)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e"
                      "\u2060-\u2069\ufeff]")
# a Markdown inline link to another scheme than http(s): "[x](javascript:...)"
_MD_LINK = re.compile(r"\]\((?=\s*<?\s*(?!https?:)[A-Za-z][A-Za-z0-9+.-]*:)", re.IGNORECASE)
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


def _walk(obj: Any, text: Any) -> Any:
    """``obj`` with ``text`` applied to every string, dictionary keys too (issue 84: a key
    holding a tag reached audit.md's evidence table raw), to depth 64."""
    def walk(o: Any, depth: int) -> Any:
        if isinstance(o, str):
            return text(o)
        if depth > 64:
            return o
        if isinstance(o, dict):
            return {walk(k, depth + 1) if isinstance(k, str) else k: walk(v, depth + 1)
                    for k, v in o.items()}
        if isinstance(o, list | tuple):
            return type(o)(walk(v, depth + 1) for v in o)
        return o

    return walk(obj, 0)


def visible_text(s: str) -> str:
    """``s`` with every control or invisible format character (NUL, ESC, U+202E's override,
    zero-width marks) shown as its escape, ``\\u202e``: nothing from report data hides or
    reorders a report's text or a terminal's."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", s)


def visible(obj: Any) -> Any:
    """``obj`` (a report, a record, a string) with :func:`visible_text` applied to every string,
    keys included: what the HTML renderer applies before its autoescaping."""
    return _walk(obj, visible_text)


def markdown_safe(obj: Any) -> Any:
    """``obj`` (a report, a record, a string) with every string, keys included, made safe for
    Markdown: tag-like ``<`` escaped, a link to a scheme other than http(s) broken
    (``[x](javascript:...)`` is shown, not linked), control and invisible characters shown as
    escapes (:func:`visible_text`); to depth 64. What every Markdown renderer applies to report
    data before writing it."""
    return _walk(obj, lambda t: _MD_LINK.sub(r"\\](", _TAG.sub("&lt;", visible_text(t))))


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
