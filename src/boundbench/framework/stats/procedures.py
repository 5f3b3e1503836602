"""A decision procedure, the nulls it is calibrated on and the rule that admits it (issue 82):
:class:`Procedure`, its realised rate (:func:`realised`) and reach (:func:`reach`), the battery
of null shapes it is also run on (:mod:`~boundbench.framework.stats.decisions.battery`), and the
judgement :func:`~boundbench.framework.stats.calibrated.calibrate` applies.

The rule: a procedure valid by construction (``validity``) decides whatever its measured rates,
which are then checks (a rate shown above its level, one-sided binomial test at
:data:`DEFECT_LEVEL` over all its null sets, is a defect); any other decides only where the
**upper** end of its rate's 95% interval is at most alpha plus a point on its own nulls and on
every battery family's, or where its verdict is not one of its false words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.stats.calibration import ALPHA, FALSE, Calibration, _calibration
from boundbench.framework.verdicts.rules import Verdict

Decision = Callable[[Any, np.random.Generator], tuple[str, dict[str, Any]]]


@dataclass(frozen=True)
class Procedure:
    """A decision procedure and the nulls it is calibrated on: ``decide(data, rng)`` returns
    the verdict word and its own evidence (a p-value as ``p``); ``null(rng)`` draws a dataset
    shaped like the observed one on which the claimed effect is absent; ``nulls`` says how, in
    words; ``false``: the words that are false decisions on such a null."""

    name: str
    decide: Decision
    null: Callable[[np.random.Generator], Any]
    nulls: str
    false: tuple[str, ...] = FALSE
    #: where the procedure is valid by construction, the condition in words (an exact
    #: permutation test: "the outcomes exchangeable across the levels under no trend"); its
    #: rate on the nulls is then a check that can fail, not what admits it (issue 82)
    validity: str | None = None
    #: data of the claim's own sizes and scale whose noise is a battery family's
    #: (:mod:`~boundbench.framework.stats.decisions.battery`): ``family(name, c, rng)``, ``c`` an
    #: effect as ``alternative`` takes it, ``None`` the null; its rates admit the procedure
    #: beside its own nulls' and its reaches give the worst family's (issue 82 items 2, 3)
    family: Callable[[str, float | None, np.random.Generator], Any] | None = None


def realised(proc: Procedure, *, rng: np.random.Generator, n_sim: int,
             alpha: float = ALPHA) -> Calibration:
    """How often ``proc`` makes a false decision on ``n_sim`` of its nulls."""
    if not isinstance(n_sim, int) or isinstance(n_sim, bool) or n_sim < 1:
        raise InvalidArgument(f"n_sim must be an integer >= 1 (got {n_sim!r})")
    k = sum(proc.decide(proc.null(rng), rng)[0] in proc.false for _ in range(n_sim))
    return _calibration(k, n_sim, proc.name, alpha, proc.nulls)


def reach(decide: Decision, alternative: Callable[[float, np.random.Generator], Any],
          grid: Sequence[float], measure: Callable[[Any], float] | None, *,
          rng: np.random.Generator, power: float = 0.8, draws: int = 40,
          found: str = "supported") -> float | None:
    """The smallest effect, in the claim's units, that ``decide`` finds (``found``) in at least
    ``power`` of ``draws`` datasets drawn by ``alternative(c, rng)``: the first ``c`` of
    ``grid`` (increasing effects) that reaches it, measured by ``measure`` as the mean over
    those draws (``None``: ``c`` itself, the effect drawn). None where the largest ``c`` falls
    short."""
    return _reach(decide, alternative, grid, measure, rng=rng, power=power, draws=draws,
                  found=found)[1]


def _reach(decide: Decision, alternative: Callable[[float, np.random.Generator], Any],
           grid: Sequence[float], measure: Callable[[Any], float] | None, *,
           rng: np.random.Generator, power: float = 0.8, draws: int = 40,
           found: str = "supported") -> tuple[int, float | None]:
    """:func:`reach` with the position in ``grid`` it stopped at (``len(grid)``: beyond), so
    that reaches measured on different data compare by the effect drawn."""
    for i, c in enumerate(grid):
        sets = [alternative(c, rng) for _ in range(draws)]
        if sum(decide(s, rng)[0] == found for s in sets) >= power * draws:
            return i, float(c if measure is None else np.mean([measure(s) for s in sets]))
    return len(grid), None


DEFECT_LEVEL = 1e-3
"""The level of the check that an exact test errs above its own level: the one-sided binomial
test of its false decisions against ``alpha``. Far below the decisions' 5%, so that a test at
its level is not called broken by chance (the 95% interval's lower end passes 5% for an exact
test at 5% in about 2% of 200-null checks: 1 audit in 7 with its 7 exact claims)."""


def _excess_p(cal: Calibration) -> float:
    from scipy.stats import binomtest

    return float(binomtest(cal.false_decisions, cal.n_sim, cal.alpha,
                           alternative="greater").pvalue)


def _family_draw(proc: Procedure, fam: str) -> Callable[[Any, np.random.Generator], Any]:
    """``proc``'s data of the battery family ``fam``: ``draw(c, rng)``, ``c`` an effect or None."""
    assert proc.family is not None
    family = proc.family
    return lambda c, g: family(fam, c, g)


def _battery(proc: Procedure, *, rng: np.random.Generator, n_sim: int,
             alpha: float) -> dict[str, Calibration]:
    """``proc``'s rate on ``n_sim`` nulls of each battery family at the claim's sizes and
    scale (:mod:`~boundbench.framework.stats.decisions.battery`); none where it has no ``family``."""
    from dataclasses import replace

    from boundbench.framework.stats.decisions.battery import FAMILIES

    if proc.family is None:
        return {}
    return {fam: realised(replace(proc, null=_family_null(proc, fam),
                                  nulls=f"{fam} nulls at these sizes and scale"),
                          rng=rng, n_sim=n_sim, alpha=alpha) for fam in FAMILIES}


def _family_null(proc: Procedure, fam: str) -> Callable[[np.random.Generator], Any]:
    assert proc.family is not None
    family = proc.family
    return lambda g: family(fam, None, g)


def _spread_text(battery: dict[str, Calibration]) -> str:
    lo, hi = (min(battery, key=lambda k: battery[k].high), max(battery, key=lambda k: battery[k].high))
    n = next(iter(battery.values())).n_sim
    return (f"; on the battery's {len(battery)} families at these sizes ({n} nulls each), upper "
            f"ends {battery[lo].high:.1%} ({lo}) to {battery[hi].high:.1%} ({hi})")


def _judge(verdict: Verdict, primary: Procedure, cal: Calibration,
           battery: dict[str, Calibration], ev: dict[str, Any]) -> tuple[str, str, Calibration]:
    """:func:`calibrate`'s rule: the status, the reason and the rate recorded."""
    every = {"these data": cal, **battery}
    spread = _spread_text(battery) if battery else ""
    if primary.validity is not None:
        ev["validity"] = primary.validity
        level = DEFECT_LEVEL / len(every)  # one check of the claim over all its null sets
        bad = [k for k, c in every.items() if _excess_p(c) < level]
        if bad:
            # an exact test whose rate on exact nulls lies above its level is broken
            return "inconclusive", (
                f"{verdict.reason}; not decided: {primary.name}, valid by construction where "
                f"{primary.validity}, erred above its level on {bad[0]}'s nulls "
                f"({every[bad[0]].text()}): a defect of boundbench, please report it"), every[bad[0]]
        return verdict.status, (
            f"{verdict.reason}; valid by construction where {primary.validity}; its rate on "
            f"these nulls, a check: {cal.text()}{spread}, not shown above its level (one-sided "
            f"binomial p >= {min(_excess_p(c) for c in every.values()):.2g}, a defect below "
            f"{level:.2g})"), cal
    worst = max(every, key=lambda k: every[k].high)
    if all(c.admitted for c in every.values()):
        return verdict.status, f"{verdict.reason}; calibrated: {cal.text()}{spread}", every[worst]
    if verdict.status not in primary.false:
        # the rate is of false rejections; a verdict that rejects nothing (``holds``, a
        # ``supported`` that is "not contradicted") is not one, and a test erring toward
        # rejection did not reject here: its strength is its reach
        ev["calibration_kept"] = (f"its verdict ({verdict.status}) is none of the false decisions "
                                  f"its rate counts ({', '.join(primary.false)})")
        return verdict.status, (
            f"{verdict.reason}; its rate of false {' or '.join(primary.false)} decisions, which "
            f"this verdict is not: {every[worst].text()}{spread}"), every[worst]
    ev["refused"] = {"procedure": primary.name, "status": verdict.status,
                     "calibration": every[worst].to_dict(), "on": worst}
    return "inconclusive", (
        f"{verdict.reason}; not decided: {every[worst].text()}, above the level by more than a "
        f"point at its upper end{spread}, and no procedure valid for these data is declared"
        ), every[worst]
