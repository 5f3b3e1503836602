"""Combining verdicts: a claim decided under several readings of its paper, or at several points
along a trajectory, and whether a result goes against its paper (:func:`against_paper`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.verdicts.rules import (
    FRAGILE,
    Verdict,
    with_margin,
)

UNDECIDED = ("inconclusive", "not-testable")
"""The verdicts that decide nothing: a reading that gives one neither supports nor goes against
the paper, and is outvoted by none."""

AGAINST = ("violated", "contradicted", "no-effect", "ill-posed")
"""The decided verdicts that go against a paper's claim: a claim counts against its paper only
when its verdict, or the verdict of one of its decided readings, is one of these."""


def against_paper(result: Mapping[str, Any]) -> bool:
    """Does a claim's result (a report entry: ``verdict`` and ``evidence``, or a record entry
    with ``against_paper``) go against its paper? A decided verdict in :data:`AGAINST`, or a
    ``depends-on-reading`` one of whose decided readings is; a claim supported under one reading
    and undecided under another is not a finding, nor is a self-test (``self_test``)."""
    if result.get("self_test"):
        return False  # a package's check of itself: passed or failed, never a finding
    if "against_paper" in result:
        return bool(result["against_paper"])
    status = result.get("verdict", result.get("status"))
    if status in AGAINST:
        return True
    if status != "depends-on-reading":
        return False
    ev = result.get("evidence") or {}
    if isinstance(ev.get("readings_against_paper"), list):
        return bool(ev["readings_against_paper"]) or any(
            s in AGAINST for s in (ev.get("by_t") or {}).values())
    table = ev.get("by_reading") or {}
    steps = ev.get("by_t") or {}
    # an old record without the tables: as before, a disagreement counts
    return (not table and not steps) or any(v.get("status") in AGAINST for v in table.values()) \
        or any(s in AGAINST for s in steps.values())


def _goes_against(v: Verdict) -> bool:
    """A verdict against the paper: in :data:`AGAINST`, or split (by reading or along t) with a
    part in it."""
    if v.status in AGAINST:
        return True
    if v.status != "depends-on-reading":
        return False
    parts = list((v.evidence.get("by_t") or {}).values())
    parts += [r.get("status") for r in (v.evidence.get("by_reading") or {}).values()]
    return any(p in AGAINST for p in parts)


def _measurement(v: Verdict) -> str:
    """A verdict's status and evidence as one canonical string (arrays in full)."""
    import json

    def plain(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            return x.tolist()
        if isinstance(x, np.generic):
            return x.item()
        return repr(x)

    return v.status + json.dumps(v.evidence, sort_keys=True, default=plain)


def merge_identical(by_reading: Mapping[str, Verdict], default: str
                    ) -> tuple[dict[str, Verdict], str, list[list[str]]]:
    """Readings that measured the same thing, merged: readings whose verdicts have identical
    status and evidence (a choice that cannot affect the measured quantity, such as where the
    LOO runs start for a claim that reads only the run on S) become one reading named
    ``"a = b"``. Returns the merged readings, the default's merged name and the groups of two
    or more.

    >>> from boundbench.framework.verdicts.rules import Verdict
    >>> m, d, g = merge_identical({"a": Verdict("holds", "x", {"r": 1}),
    ...                            "b": Verdict("holds", "y", {"r": 1}),
    ...                            "c": Verdict("holds", "z", {"r": 2})}, "b")
    >>> list(m), d, g
    (['a = b', 'c'], 'a = b', [['a', 'b']])
    """
    groups: dict[str, list[str]] = {}
    for name, v in by_reading.items():
        groups.setdefault(_measurement(v), []).append(name)
    merged: dict[str, Verdict] = {}
    default_name = default
    for names in groups.values():
        label = " = ".join(names)
        merged[label] = by_reading[names[0]]
        if default in names:
            default_name = label
    return merged, default_name, [n for n in groups.values() if len(n) > 1]


def reading_parts(name: str) -> list[str]:
    """The choices a reading's name combines: ``"a+b"`` (a product of open choices) is ``a``
    and ``b``, ``"a = b"`` (readings that measured the same, merged) both sides' parts."""
    return list(dict.fromkeys(p.strip() for side in name.split(" = ") for p in side.split("+")))


def readings_text(ev: Mapping[str, Any]) -> str:
    """The readings a verdict names, in words (``reading_words`` in its evidence): what a
    report prints beside the verdict, so that no reading's name stands undefined."""
    words = ev.get("reading_words")
    if not isinstance(words, dict) or not words:
        return ""
    text = "; ".join(f"{name}: {w}" for name, w in words.items())
    names = list(ev.get("by_reading") or {})
    if any("+" in n for n in names):
        text += "; a name joined by + takes each of its choices"
    if any(" = " in n for n in names):
        text += "; readings joined by = measured the same (counted once)"
    return text + "."


def readings_verdict(by_reading: Mapping[str, Verdict], *, default: str, what: str,
                     words: Mapping[str, str] | None = None) -> Verdict:
    """One verdict over the readings of a choice the paper leaves open (``by_reading``: reading
    name -> its verdict; ``default``: the reading the paper's text describes, or ours where it
    describes none).

    Only decided readings vote (an ``inconclusive`` or ``not-testable`` reading decides
    nothing): every decided reading agreeing gives that verdict, naming the undecided readings;
    two different decided verdicts give ``depends-on-reading``, naming which readings give which;
    no decided reading gives ``inconclusive``. The evidence keeps the deciding reading's evidence
    (the default where it decided), every reading's status and reason (``by_reading``), and the
    readings against the paper (``readings_against_paper``). Readings with identical
    measurements are counted once, named together (:func:`merge_identical`; the groups in
    ``merged_readings``).

    Parameters
    ----------
    by_reading : mapping of str to Verdict
        Each reading's verdict.
    default : str
        The reading the paper's text describes (or ours, where it describes none).
    what : str
        The claim in words, for the reason.
    words : mapping of str to str, optional
        Each reading's choice in a few words (a combined reading ``"a+b"`` needs words for
        ``a`` and ``b``): kept as ``reading_words`` in the evidence, printed by the reports
        beside the verdict (:func:`readings_text`).

    Returns
    -------
    Verdict
        One verdict over the readings, ``depends-on-reading`` where decided readings disagree.

    References
    ----------
    The verdict rules of boundbench (issue 37: an undecided reading outvotes nobody).

    Examples
    --------
    >>> from boundbench.framework.verdicts.readings import readings_verdict
    >>> from boundbench.framework.verdicts.rules import Verdict
    >>> v = readings_verdict({"a": Verdict("holds", "fine"), "b": Verdict("violated", "fails")},
    ...                      default="a", what="bound")
    >>> v.status, v.reason
    ('depends-on-reading', 'bound: holds under a; violated under b. Default reading (a): fine')
    """
    if not by_reading:
        raise InvalidArgument("by_reading must name at least one reading")
    if default not in by_reading:
        raise InvalidArgument(f"default must be one of the readings {sorted(by_reading)} (got "
                              f"{default!r})")
    for name, v in by_reading.items():
        if not isinstance(v, Verdict):
            raise InvalidArgument(f"by_reading[{name!r}] must be a Verdict (got {type(v).__name__})")
    named: dict[str, str] = {}
    if words is not None:
        parts = list(dict.fromkeys(p for n in by_reading for p in reading_parts(n)))
        missing = [p for p in parts if not str(words.get(p, "")).strip()]
        if missing:
            raise InvalidArgument(f"words must describe every reading's choice (missing: {missing})")
        named = {p: str(words[p]) for p in parts}
    by_reading, default, merged_groups = merge_identical(by_reading, default)
    decided = {n: v for n, v in by_reading.items() if v.status not in UNDECIDED}
    deciding = default if (default in decided or not decided) else next(iter(decided))
    base = by_reading[deciding]
    table: dict[str, dict[str, Any]] = {name: {"status": v.status, "reason": v.reason}
                                         for name, v in by_reading.items()}
    ev: dict[str, Any] = {**base.evidence, "by_reading": table, "default_reading": default,
          "deciding_reading": deciding, "n_readings": len(by_reading),
          "readings_against_paper": [n for n, v in by_reading.items() if _goes_against(v)],
          **({"merged_readings": merged_groups} if merged_groups else {}),
          **({"reading_words": named} if named else {})}
    # the combined verdict flips when any reading's does: the reading nearest its threshold
    margins = {n: v.evidence for n, v in by_reading.items()
               if isinstance(v.evidence.get("margin_to_flip"), int | float)
               and v.evidence.get("margin_units") in FRAGILE}
    for name, e in margins.items():
        table[name]["margin_to_flip"] = e["margin_to_flip"]
        table[name]["fragile"] = bool(e.get("fragile"))
    if margins:
        near = min(margins, key=lambda n: margins[n]["margin_to_flip"]
                   / FRAGILE[margins[n]["margin_units"]])
        ev = with_margin(ev, margins[near]["margin_to_flip"], margins[near]["margin_units"])
        ev["margin_reading"] = near
        ev["fragile"] = any(bool(e.get("fragile")) for e in margins.values())
    groups: dict[str, list[str]] = {}
    for name, v in by_reading.items():
        groups.setdefault(v.status, []).append(name)
    if len(groups) == 1:
        return Verdict(base.status, f"{what}: {base.status} under every reading "
                       f"({', '.join(by_reading)}); {default}: {base.reason}", ev)
    parts = "; ".join(f"{status} under {', '.join(names)}" for status, names in groups.items())
    decided_groups = {s for s in groups if s not in UNDECIDED}
    if not decided_groups:
        return Verdict("inconclusive", f"{what}: no reading decides ({parts}). Default reading "
                       f"({default}): {base.reason}", ev)
    if len(decided_groups) == 1:
        (status,) = decided_groups
        undecided = [n for n in by_reading if n not in decided]
        return Verdict(status, f"{what}: {status} under {', '.join(decided)}; undecided under "
                       f"{', '.join(undecided)} ({parts}). {deciding}: {base.reason}",
                       {**ev, "undecided_readings": undecided})
    return Verdict("depends-on-reading", f"{what}: {parts}. Default reading ({default}): "
                   f"{base.reason}", ev)


def log_spaced(steps: Any, k: int = 5) -> list[int]:
    """Up to ``k`` of the recorded ``steps``, nearest to a log-spaced grid from the first to the
    last: where a claim about a training curve is decided (the paper plots t on a log axis).

    >>> log_spaced([1, 2, 5, 10, 20, 50, 100, 200, 600], 4)
    [1, 10, 100, 600]
    """
    st = np.unique(np.asarray(steps, dtype=np.int64))
    st = st[st > 0]
    if st.size == 0:
        raise InvalidArgument("steps must hold at least one step > 0")
    grid = np.geomspace(st[0], st[-1], min(k, st.size))
    return sorted({int(st[np.abs(np.log(st) - np.log(g)).argmin()]) for g in grid})


def along_t_verdict(by_t: Mapping[int, Verdict], *, what: str) -> Verdict:
    """One verdict for a claim about a curve over training steps, decided at several steps
    (``by_t``: step -> the verdict there). The same decided verdict at every step (undecided
    steps named) gives it; decided verdicts that change along t make t an axis like a reading:
    ``depends-on-reading`` with the ranges, e.g. "supported for t <= 30; no-effect for t >= 300".
    The evidence keeps the last step's evidence, each step's status (``by_t``), the ranges and
    the smallest margin over the steps."""
    if not by_t:
        raise InvalidArgument("by_t must hold at least one step")
    ts = sorted(by_t)
    runs: list[tuple[str, list[int]]] = []
    for t in ts:
        st = by_t[t].status
        if runs and runs[-1][0] == st:
            runs[-1][1].append(t)
        else:
            runs.append((st, [t]))

    def span(t: list[int], i: int) -> str:
        if len(runs) == 1:
            return f"at every t in [{t[0]}, {t[-1]}]"
        if len(t) == 1 and 0 < i < len(runs) - 1:
            return f"at t = {t[0]}"
        if i == 0:
            return f"for t <= {t[-1]}"
        if i == len(runs) - 1:
            return f"for t >= {t[0]}"
        return f"for {t[0]} <= t <= {t[-1]}"

    ranges = "; ".join(f"{st} {span(t, i)}" for i, (st, t) in enumerate(runs))
    last = by_t[ts[-1]]
    ev: dict[str, Any] = {**last.evidence, "by_t": {str(t): by_t[t].status for t in ts},
                          "t_ranges": ranges, "decided_at_steps": ts}
    rates = {t: v.evidence["realised_false_decision_rate"] for t, v in by_t.items()
             if isinstance(v.evidence.get("realised_false_decision_rate"), float)}
    if rates:  # the step whose decision errs most often on its nulls speaks for the curve
        worst = max(rates, key=lambda t: rates[t])
        w = by_t[worst].evidence  # its rate, interval, procedure and record, together
        carried = ("calibration", "decided_by", "min_detectable_effect", "min_detectable_units",
                   "battery", "calibration_these_data", "min_detectable_by_family",
                   "min_detectable_under", "calibration_kept")
        ev = {k: v for k, v in ev.items() if k not in carried}  # not the last step's beside it
        ev.update(realised_false_decision_rate=rates[worst],
                  realised_false_decision_ci=w.get("realised_false_decision_ci"),
                  realised_false_decision_step=worst, **{k: w[k] for k in carried if k in w},
                  # refused there: that step's verdict is inconclusive, no fallback decided it
                  **({"refused_at_step": worst} if "refused" in w else {}))
    margins = [(v.evidence["margin_to_flip"], v.evidence["margin_units"]) for v in by_t.values()
               if isinstance(v.evidence.get("margin_to_flip"), int | float)
               and v.evidence.get("margin_units") in FRAGILE]
    if margins:
        m, u = min(margins, key=lambda mu: mu[0] / FRAGILE[mu[1]])
        ev = with_margin(ev, m, u)
        ev["fragile"] = any(bool(v.evidence.get("fragile")) for v in by_t.values())
    decided = {v.status for v in by_t.values() if v.status not in UNDECIDED}
    if len(decided) > 1:
        return Verdict("depends-on-reading", f"{what} depends on the step t: {ranges}", ev)
    status = decided.pop() if decided else "inconclusive"
    # one run: every step says the same, so ``ranges`` is "<status> at every t in [a, b]"
    return Verdict(status, f"{what}: {ranges}. At t = {ts[-1]}: {last.reason}", ev)
