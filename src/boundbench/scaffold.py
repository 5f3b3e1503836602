"""``boundbench new-paper KEY --out DIR``: a pip-installable package that adds a paper to
boundbench through the ``boundbench.claims`` entry point: its ``pyproject.toml``, a claims
module with one bound claim (its ``_sides`` function, a search box over its assumptions and a
control that a wrong bound trips) and one trend claim, property tests with ``@bound`` and the
public strategies, and a README with the two commands (docs/your-own-paper.md)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import jinja2

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import write_atomic

KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
_ENV = jinja2.Environment(loader=jinja2.PackageLoader("boundbench", "templates/new-paper"),
                          undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
# template -> where it goes in the package (``{package}`` is the import name)
FILES = {"pyproject.toml.j2": "pyproject.toml", "README.md.j2": "README.md",
         "__init__.py.j2": "src/{package}/__init__.py", "claims.py.j2": "src/{package}/claims.py",
         "test_claims.py.j2": "tests/test_{key}_claims.py"}


def new_paper(key: str, out: Path, *, title: str = "", citation: str = "") -> list[Path]:
    """Write the package of paper ``key`` into ``out`` (a folder that does not exist or is
    empty); return the files written.

    Parameters
    ----------
    key : str
        The paper's key: lower case letters, digits and ``_``, starting with a letter (its
        claims are ``KEY.<name>``; ``boundbench audit --only KEY`` runs them).
    out : Path
        The package's folder.
    title, citation : str
        The paper's title and citation (placeholders where empty).

    Returns
    -------
    list of Path
        The files written, ``pyproject.toml`` first.
    """
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise InvalidArgument(f"key must be lower case letters, digits or _, starting with a letter, "
                              f"at most 32 characters (got {key!r})")
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise InvalidArgument(f"out {str(out)!r} is a link to nothing: give a new folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidArgument(f"out {str(out)!r} exists and is not an empty folder: give a new one")
    names = {"key": key, "package": f"boundbench_{key}", "dist": f"boundbench-{key}",
             "title": title or f"The paper {key} (replace with its title)",
             "citation": citation or "authors, venue, year (replace)"}
    for field in ("title", "citation"):
        # it goes into Python and TOML strings: no quote, backslash or control character
        # (a carriage return broke both, issue 65)
        if any(c in names[field] for c in '"\\') or any(
                ord(c) < 32 or ord(c) == 127 for c in names[field]):
            raise InvalidArgument(f"{field} must not hold quotes, backslashes, line breaks or other "
                                  f"control characters (got {names[field]!r})")
    written = []
    for template, target in FILES.items():
        path = out / target.format(**names)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _ENV.get_template(template).render(**names)
        write_atomic(path, partial(Path.write_text, data=text))
        written.append(path)
    return written
