"""The papers whose claims are registered: key, title, citation and the package that
registered each (:func:`register_paper`). Built-in papers and plugins' papers register the same
way, when the catalogue loads the ``boundbench.claims`` entry points."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from boundbench.errors import ClaimError

PAPER_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")


@dataclass(frozen=True)
class Paper:
    """A paper whose claims are registered: its key (the claims' ``paper=`` and the first part
    of their ids), title, citation and the installed package that registered it."""

    key: str
    title: str
    citation: str = ""
    package: str = ""


_PAPERS: dict[str, Paper] = {}
_LOADING: list[str] = []  # the package whose claims are loading now (registry.loading sets it)


def current_package() -> str:
    """The package whose entry point is loading now; empty outside a load."""
    return _LOADING[-1] if _LOADING else ""


def register_paper(key: str, title: str, *, citation: str = "") -> Paper:
    """Register paper ``key`` so that claims can name it (``@claim(paper=key)``).

    Built-in papers and plugins' papers register the same way, when the catalogue loads the
    ``boundbench.claims`` entry points (:func:`boundbench.catalogue.load`); the package that
    registers is recorded. Registering the same paper again from the same package (a module
    imported twice) returns it; another package's paper with the same key is refused.

    Parameters
    ----------
    key : str
        Lower case letters, digits and ``_``, starting with a letter (at most 32).
    title : str
        The paper's authors and title, as reports show it.
    citation : str, optional
        Venue, year, arXiv id.

    Returns
    -------
    Paper
        The registered paper.

    Examples
    --------
    >>> import boundbench as bb
    >>> from boundbench.framework.claims import registry
    >>> with registry.loading("my-notes"):
    ...     bb.register_paper("mynotes2", "My notes (2026)").package
    'my-notes'
    """
    if not isinstance(key, str) or not PAPER_KEY.fullmatch(key):
        raise ClaimError(f"key must be lower case letters, digits or _, starting with a letter "
                         f"(got {key!r})")
    if not isinstance(title, str) or not title.strip():
        raise ClaimError(f"title must be a non-empty string (got {title!r})")
    paper = Paper(key, title, citation, current_package())
    old = _PAPERS.get(key)
    if old is not None and old != paper:
        raise ClaimError(f"paper key {key!r} of package {paper.package or '?'!r} clashes with "
                         f"the one package {old.package or '?'!r} registered ({old.title!r})")
    _PAPERS[key] = paper
    return paper


def papers() -> dict[str, Paper]:
    """Every registered paper by key, in registration order."""
    return dict(_PAPERS)


def paper_titles() -> dict[str, str]:
    """Every registered paper's title by key (what reports show)."""
    return {k: p.title for k, p in _PAPERS.items()}


def titles_of(results: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Key -> title of the papers of ``results`` (claims as an ``audit.json`` holds them), in
    registration order, then as they first appear (a report read without its plugins loaded
    keeps its own titles)."""
    found: dict[str, str] = {}
    for r in results:
        known = _PAPERS.get(r["paper"])
        found.setdefault(r["paper"], r.get("paper_title") or (known.title if known else
                                                              r["paper"]))
    return {k: found[k] for k in [*(k for k in _PAPERS if k in found),
                                  *(k for k in found if k not in _PAPERS)]}


def package_version(package: str) -> str:
    """The installed version of the distribution ``package`` ("" where it has no metadata: a
    source tree, or a package made in a notebook)."""
    from importlib import metadata

    try:
        return metadata.version(package)
    except (metadata.PackageNotFoundError, ValueError):
        return ""
