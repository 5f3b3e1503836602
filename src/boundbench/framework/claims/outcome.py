"""What a claim's definition holds beside its check, and what the check returns: the pieces of
its experiment a cluster may compute first (:class:`Block`), the check's result
(:class:`Outcome`) and what exactly fails where it goes against its paper (:class:`Erratum`).
:mod:`boundbench.framework.claims.registry` registers claims with them (and re-exports them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from boundbench.errors import ClaimError
from boundbench.framework.verdicts.rules import Verdict


@dataclass(frozen=True)
class Block:
    """One piece of a claim's experiment that can run anywhere: the cache entry
    ``name``/``config`` it fills and ``run``, a picklable callable that computes its table. A
    claim that declares its blocks (``@claim(blocks=...)``) reads them with
    :meth:`CheckContext.cached`, so blocks a Dask cluster computed first
    (:func:`boundbench.audit.run_claims`) are read, not recomputed."""

    name: str
    config: dict[str, Any]
    run: Callable[[], Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What a check returns: its verdict, the tidy table its figure was drawn from, the figure
    (matplotlib) and the experiment's config; the registry saves them as ``<claim id>.*``.

    Parameters
    ----------
    verdict : Verdict
        The claim's verdict with its reason and evidence.
    table : pandas.DataFrame, optional
        The tidy table the figure was drawn from (saved as ``<claim id>.csv``).
    figure : matplotlib.figure.Figure, optional
        Titled ``"<claim id>: <verdict>"`` (saved in the context's formats).
    config : optional
        The experiment's config, recorded with the seed, scale and versions.

    Examples
    --------
    >>> import boundbench as bb
    >>> bb.Outcome(bb.Verdict("holds", "1 <= 2")).verdict.status
    'holds'
    """

    verdict: Verdict
    table: Any = None  # pandas DataFrame
    figure: Any = None  # matplotlib Figure
    config: Any = None


@dataclass(frozen=True)
class Erratum:
    """What exactly fails when a claim goes against its paper, for the errata sheet.

    ``fails``: which part of the paper fails: ``"statement"`` (as displayed), ``"proof step"``
    (a step of its proof, the statement itself being true or unfalsifiable) or ``"use"`` (a use
    of it elsewhere). ``part``: that part in words, with its equation. ``constants``: how the
    statement's existential constants ("for some constants C, lam") are read, since read
    existentially it could not fail. ``downstream``: what follows for the results built on it.
    """

    fails: str
    part: str
    constants: str = ""
    downstream: str = ""

    PARTS = ("statement", "proof step", "use")

    def __post_init__(self) -> None:
        if self.fails not in self.PARTS:
            raise ClaimError(f"fails must be one of {self.PARTS} (got {self.fails!r})")
        if not self.part:
            raise ClaimError("part must name what fails")
