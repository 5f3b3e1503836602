"""The report's words: each verdict and what it means (:data:`VERDICT_HELP`), the terms the
rules use, which verdicts go against a paper (:func:`is_finding`, the one predicate every
renderer and command uses) and the order findings are listed in (:data:`SEVERITY`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from boundbench.framework.certificates.levels import LEVEL_ORDER, level_of
from boundbench.framework.verdicts.readings import AGAINST, against_paper
from boundbench.framework.verdicts.rules import FINDINGS, STATUSES, TERMS

__all__ = ["AGAINST", "FINDINGS", "SEVERITY", "STATUSES", "TERMS", "VERDICT_HELP", "certificate",
           "certificate_counts", "counts", "is_finding", "severity", "verdict_of"]

VERDICT_HELP = {
    "holds": "the inequality or identity was satisfied on every tested instance (the random "
    "family and a targeted search for the worst case), within the stated tolerance",
    "violated": "at least one instance breaks it beyond the tolerance, whichever optimum or "
    "reading is taken: a finding about the paper, reported with its size (worst lhs/rhs and "
    "lhs - rhs)",
    "ill-posed": "the statement presupposes a unique optimum where there is none: it holds for "
    "the closest pair of optimal solutions and fails for the farthest (both verdicts given)",
    "supported": "the predicted trend appears: its confidence interval lies on the predicted "
    "side of 0",
    "contradicted": "the data exclude the predicted effect: the interval lies on the other "
    "side of 0 (the opposite direction) or, for a rate the paper predicts, beyond the predicted "
    "exponent (a gap predicted to shrink like H^-1/2 that shrinks more slowly, or not at all)",
    "no-effect": "the predicted effect is absent: the interval of the change lies inside the "
    "no-effect band (1 +- 10% unless the claim says otherwise)",
    "depends-on-reading": "the paper leaves a choice open and its plausible readings give "
    "different verdicts (each reading's verdict is listed)",
    "inconclusive": "the interval straddles 0 (or the no-effect band's edge) at this scale, or "
    "the check failed (see its reason); the reason says what would decide it",
    "not-testable": "the claim cannot be measured as stated (e.g. unspecified constants)",
}

#: the order findings are listed in, most severe first: errors under every reading, then
#: ill-posed statements, then those that depend on the reading
SEVERITY = {"violated": 0, "contradicted": 0, "no-effect": 0, "ill-posed": 1,
            "depends-on-reading": 2}


def verdict_of(entry: Mapping[str, Any]) -> str:
    """A claim entry's verdict (one of :data:`STATUSES`), or of a record's entry."""
    return str(entry["verdict"])


def is_finding(entry: Mapping[str, Any]) -> bool:
    """Does a claim entry (of a report or a record) go against its paper? A decided verdict in
    :data:`AGAINST`, or one split by reading (or along t) with a part against it
    (:func:`boundbench.framework.verdicts.readings.against_paper`, the same predicate the verdict rules
    use)."""
    return against_paper(entry)


def severity(entry: Mapping[str, Any]) -> int:
    """Where a finding is listed: :data:`SEVERITY` of its verdict (0 first)."""
    return SEVERITY[verdict_of(entry)]


def counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many entries have each verdict, in order of first appearance."""
    return dict(Counter(verdict_of(e) for e in entries))


def certificate(entry: Mapping[str, Any]) -> str:
    """A holding bound's certificate level in words (:class:`~boundbench.framework.
    certification.Level`), from an entry's evidence or a record's ``certificate``; "" for any
    other entry."""
    if entry.get("kind") != "bound" or entry.get("verdict") != "holds":
        return ""
    level = level_of(entry)
    return level.value if level is not None else ""


def certificate_counts(entries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Holding bounds per certificate level, strongest first (levels none has left out)."""
    tally = Counter(c for c in (certificate(e) for e in entries) if c)
    return {lv.value: tally[lv.value] for lv in LEVEL_ORDER if tally[lv.value]}
