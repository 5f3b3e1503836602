"""Mean, within-set trend and no-effect-band verdicts calibrated on their own data (issue 64):
each reports its realised false-decision rate on nulls drawn from the claim's observed
outcomes, the smallest effect it could detect there (80% power, by simulation from the same
resampling, in the claim's units), and falls back to a procedure valid for these data where
the rate's exact interval lies above the nominal level.

One core, :func:`calibrate`, runs a :class:`Procedure` (a decision and the nulls it is
calibrated on) and an alternative family; the wrappers say what the nulls are:

- :func:`calibrated_mean`: a mean (of paired differences, of per-dataset exponents) decided by
  a bootstrap interval or a confidence sequence; nulls are the values centred at the null and
  drawn with replacement (the data's shape, no effect); admitted only where the upper end of
  its rate is at most alpha plus a point, else ``inconclusive`` (no test of a median stands in
  for the mean's); :func:`mean_or_share` adds the claim re-posed on a bounded share.
- the trends moved to :mod:`~boundbench.framework.exact_trends` (exact permutation tests,
  valid by construction; a :class:`Procedure` with ``validity`` is used whatever its measured
  rate, which is then a check);
- :func:`calibrated_end_ratio`: a no-effect decided by an end-to-end ratio's interval inside
  ``1 +- margin`` (an equivalence test, Schuirmann 1987, *J. Pharmacokin. Biopharm.* 15:
  657-680); a false decision is a no-effect where the effect sits at the band's edge, and the
  verdict stands only where the smallest ratio the interval tells from 1 lies inside the band.

The rate is the share of nulls on which the procedure decides an effect (``supported`` or
``contradicted``; ``no-effect`` for a band), with its exact (Clopper-Pearson) interval
(:func:`~boundbench.framework.calibration._calibration`), in the spirit of the false-fail
rates TensorFlow Probability's ``statistical_testing`` attaches to its assertions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.calibration import ALPHA, FALSE, Calibration, _calibration
from boundbench.framework.verdicts import Verdict

# the evidence a calibrated verdict adds: what a verdict built from several carries over
CALIBRATION_KEYS = ("calibration", "realised_false_decision_rate", "realised_false_decision_ci",
                    "min_detectable_effect", "min_detectable_units",
                    "min_detectable_fraction_of_paper", "decided_by", "refused",
                    "calibration_not_applicable")
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
    for c in grid:
        sets = [alternative(c, rng) for _ in range(draws)]
        if sum(decide(s, rng)[0] == found for s in sets) >= power * draws:
            return float(c if measure is None else np.mean([measure(s) for s in sets]))
    return None


DEFECT_LEVEL = 1e-3
"""The level of the check that an exact test errs above its own level: the one-sided binomial
test of its false decisions against ``alpha``. Far below the decisions' 5%, so that a test at
its level is not called broken by chance (the 95% interval's lower end passes 5% for an exact
test at 5% in about 2% of 200-null checks: 1 audit in 7 with its 7 exact claims)."""


def _excess_p(cal: Calibration) -> float:
    from scipy.stats import binomtest

    return float(binomtest(cal.false_decisions, cal.n_sim, cal.alpha,
                           alternative="greater").pvalue)


def _above(cal: Calibration) -> bool:
    return _excess_p(cal) < DEFECT_LEVEL


def calibrate(verdict: Verdict, data: Any, primary: Procedure, *, rng: np.random.Generator,
              alternative: Callable[[float, np.random.Generator], Any],
              grid: Sequence[float], measure: Callable[[Any], float] | None, units: str,
              n_sim: int = 200, alpha: float = ALPHA,
              paper_effect: float | None = None, found: str = "supported") -> Verdict:
    """``verdict`` (decided by ``primary`` on ``data``) with its realised false-decision rate
    and minimum detectable effect in the evidence. A procedure valid by construction
    (``primary.validity``) decides whatever its measured rate, unless that rate is shown above
    ``alpha`` at :data:`DEFECT_LEVEL` (a defect: ``inconclusive``); any other is admitted only where the
    **upper** end of its rate's interval is at most ``alpha`` plus one point
    (:attr:`~boundbench.framework.calibration.Calibration.admitted`, issue 82), or where the
    verdict is not one of its false words (a rate of false rejections says nothing against a
    verdict that rejects nothing); where it is not, ``inconclusive``, the refused procedure
    and its rate kept (a fallback valid by construction is a procedure of its own: the trends'
    exact tests, :mod:`~boundbench.framework.exact_trends`)."""
    cal = realised(primary, rng=rng, n_sim=n_sim, alpha=alpha)
    ev: dict[str, Any] = {**verdict.evidence}
    if primary.validity is not None:
        ev["validity"] = primary.validity
    if primary.validity is not None and _above(cal):
        # an exact test whose rate on its own exact nulls lies above its level is broken
        proc, status, used = primary, "inconclusive", cal
        reason = (f"{verdict.reason}; not decided: {primary.name}, valid by construction where "
                  f"{primary.validity}, erred above its level on its own nulls ({cal.text()}): "
                  "a defect of boundbench, please report it")
    elif primary.validity is not None:
        proc, status, used = primary, verdict.status, cal
        reason = (f"{verdict.reason}; valid by construction where {primary.validity}; its "
                  f"rate on these nulls, a check: {cal.text()}, not shown above its level "
                  f"(one-sided binomial p = {_excess_p(cal):.2g}, a defect below "
                  f"{DEFECT_LEVEL:g})")
    elif cal.admitted:
        proc, status, used = primary, verdict.status, cal
        reason = f"{verdict.reason}; calibrated: {cal.text()}"
    elif verdict.status not in primary.false:
        # the rate is of false rejections; a verdict that rejects nothing (``holds``, a
        # ``supported`` that is "not contradicted") is not one, and a test erring toward
        # rejection did not reject here: its strength is its reach, below
        proc, status, used = primary, verdict.status, cal
        reason = (f"{verdict.reason}; its rate of false {' or '.join(primary.false)} decisions, "
                  f"which this verdict is not: {cal.text()}")
    else:
        proc, status, used = primary, "inconclusive", cal
        ev["refused"] = {"procedure": primary.name, "status": verdict.status,
                         "calibration": cal.to_dict()}
        reason = (f"{verdict.reason}; not decided: {cal.text()}, above the level by more "
                  "than a point at its upper end, and no procedure valid for these data is "
                  "declared")
    mde = reach(proc.decide, alternative, grid, measure, rng=rng, found=found)
    ev.update(calibration={**used.to_dict(), "by_construction": proc.validity is not None},
              realised_false_decision_rate=used.rate,
              realised_false_decision_ci=[used.low, used.high], min_detectable_effect=mde,
              min_detectable_units=units, decided_by=proc.name)
    words = f"the smallest {units} it finds in 80% of draws like these is "
    if mde is None:
        reason += f"; {words}beyond the largest tried: more data would"
    else:
        reason += f"; {words}{mde:.3g}"
        if paper_effect:
            ev["min_detectable_fraction_of_paper"] = mde / abs(paper_effect)
            reason += f" ({mde / abs(paper_effect):.0%} of the paper's effect)"
    return Verdict(status, reason, ev, verdict.figure, verdict.table)


# ------------------------------------------------------------------------------ means


def _interval_word(lo: float, hi: float, null: float, sign: int) -> str:
    from boundbench.framework.trends import interval_status

    return interval_status(lo - null, hi - null, expected_sign=sign)


def calibrated_mean(verdict: Verdict, x: np.ndarray, *, rng: np.random.Generator,
                    expected_sign: int, null: float = 0.0, units: str,
                    decide: Decision | None = None, procedure: str =
                    "the mean's bootstrap interval", n_sim: int = 200,
                    paper_effect: float | None = None) -> Verdict:
    """A verdict on the mean of ``x`` against ``null`` (``decide``: data -> word, by default
    the 95% percentile bootstrap interval of the mean; a confidence sequence passes its own),
    calibrated on ``x`` centred at ``null`` and drawn with replacement, and used only where the
    upper end of its realised rate is at most alpha plus a point (issue 82); else
    ``inconclusive``: no procedure decides the mean of unbounded values at a guaranteed level,
    and none is put in its place (a test of the median is not one of the mean, issue 82; a
    claim may add the share reading, :func:`mean_or_share`). The minimum detectable effect is
    the mean shift, in ``units``, found in 80% of such draws shifted by it."""
    from boundbench.framework.trends import bootstrap_mean

    x = np.asarray(x, dtype=float).ravel()
    if x.size < 3:  # resamples of two values say nothing about the data's shape
        return verdict.with_evidence(
            calibration_not_applicable=f"{x.size} value(s): too few to resample")
    sign = 1 if expected_sign > 0 else -1
    if decide is None:
        def decide(d: np.ndarray, g: np.random.Generator) -> tuple[str, dict[str, Any]]:
            _, lo, hi = bootstrap_mean(d, rng=g)
            return _interval_word(lo, hi, null, sign), {}

    centred = x - x.mean() + null
    primary = Procedure(procedure, decide, lambda g: g.choice(centred, x.size),
                        "resamples of these values centred at the null")
    se = float(np.std(x, ddof=1)) / np.sqrt(x.size) or 1e-12
    return calibrate(verdict, x, primary, rng=rng, n_sim=n_sim,
                     alternative=lambda c, g: g.choice(centred, x.size) + sign * c,
                     grid=[se * k for k in (0.5, 1, 1.5, 2, 2.5, 3, 4, 6, 10, 20)],
                     measure=lambda d: abs(float(np.mean(d)) - null), units=units,
                     paper_effect=paper_effect)


def mean_or_share(mean: Verdict, x: np.ndarray, *, null: float, expected_sign: int,
                  what: str, unit: str) -> Verdict:
    """A mean claim over two readings (:func:`~boundbench.framework.readings.readings_verdict`,
    where an undecided reading outvotes nobody): ``mean``, the calibrated mean's verdict
    (:func:`calibrated_mean`), and ``share``, the claim re-posed on the share of ``unit`` s in
    the claimed direction from ``null`` against the share reversed, read from its exact
    interval (:func:`~boundbench.framework.decisions.shares.share_decision`, valid for any
    shape of the values). The share reading says it is not the mean's: it is a
    statement of its own, the paper's direction held by most units."""
    from boundbench.framework.decisions.shares import exact_size, share_decision, share_reach
    from boundbench.framework.readings import readings_verdict

    d = share_decision(x, null=null, expected_sign=expected_sign)
    toward = "above" if expected_sign > 0 else "below"
    # its error rate and reach are computed from the binomial, not simulated: exact
    size, reach_ = exact_size(d.n), share_reach(d.n)
    exact = {"procedure": d.procedure, "false_decisions": None, "n_sim": None, "rate": size,
             "low": size, "high": size, "alpha": 0.05, "admitted": True, "by_construction": True,
             "nulls": "the binomial count at share 1/2 (computed exactly)"}
    share = Verdict(d.word, (
        f"{d.share:.0%} of {d.n} {unit}s lie {toward} {null:g}"
        + (f" ({d.ties} at it, dropped)" if d.ties else "") + f"; the share's 95% interval "
        f"[{d.low:.2f}, {d.high:.2f}] against 1/2 ({d.procedure}, which errs on exactly "
        f"{size:.1%} of nulls at {d.n} units; valid where {d.validity})"),
        {**mean.evidence, "share_reading": d.evidence(), "decided_by": d.procedure,
         "calibration": exact, "realised_false_decision_rate": size,
         "realised_false_decision_ci": [size, size], "min_detectable_effect": reach_,
         "min_detectable_units": f"share of {unit}s in the claimed direction"})
    return readings_verdict({"mean": mean, "share": share}, default="mean", what=what, words={
        "mean": f"the mean over {unit}s (bootstrap, used where calibrated)",
        "share": f"the share of {unit}s in the claimed direction (exact interval)"})


def calibrated_paired_mean(v: Verdict, diff: np.ndarray, *, rng: np.random.Generator,
                           expected: str, band: Any = None, sequence: bool = False) -> Verdict:
    """A paired-difference verdict (``expected``: ``"increase"`` or ``"decrease"``) from the
    bootstrap interval of the mean or, with ``sequence``, from the t confidence sequence
    (which assumes Gaussian differences; decided against ``band`` where there is one),
    calibrated by :func:`calibrated_mean` on these differences centred at 0; the paper's
    effect, where the band records one, scales the minimum detectable effect."""
    from boundbench.framework.sequential import t_confidence_sequence
    from boundbench.framework.stopping import first_decision

    def along(d: np.ndarray, g: np.random.Generator) -> tuple[str, dict[str, Any]]:
        cs = t_confidence_sequence(d)
        return first_decision(cs.low, cs.high, null=0.0, expected=expected,
                              band=band)[0] or "inconclusive", {}

    return calibrated_mean(v, diff, rng=rng, units="mean paired change",
                           expected_sign=1 if expected == "increase" else -1,
                           decide=along if sequence else None,
                           procedure="the t confidence sequence" if sequence else
                           "the mean's bootstrap interval",
                           paper_effect=getattr(band, "paper_effect", None))


# ------------------------------------------------------------------- no-effect bands


def calibrated_end_ratio(verdict: Verdict, low_level: np.ndarray, high_level: np.ndarray, *,
                         paired: bool, margin: float, rng: np.random.Generator,
                         n_sim: int = 1000) -> Verdict:
    """A ``no-effect`` decided by the end-to-end ratio's interval inside ``1 +- margin``
    (:func:`~boundbench.framework.trends.decide_no_effect`), calibrated where it can be false:
    on nulls whose ratio sits at the band's edge nearer the estimate (each set's high-level
    values scaled, the sets drawn with replacement), its rate of no-effect decisions; and the
    smallest ratio the interval tells from 1 in 80% of draws. The verdict stands where that
    ratio lies inside the band; otherwise it is ``inconclusive``, with the number. Other
    verdicts are returned as they are."""
    from boundbench.framework.trends import end_ratio

    if verdict.status != "no-effect":
        return verdict
    lo_v, hi_v = np.asarray(low_level, dtype=float), np.asarray(high_level, dtype=float)
    est = float(verdict.evidence.get("end_ratio", 1.0))
    edge = 1 + margin if est >= 1 else 1 - margin

    def scaled(r: float, g: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if paired:
            i = g.integers(0, lo_v.size, lo_v.size)
            base = float(np.median(hi_v / lo_v))
            return lo_v[i], hi_v[i] * (r / base if base > 0 else 1.0)
        i, j = g.integers(0, lo_v.size, lo_v.size), g.integers(0, hi_v.size, hi_v.size)
        base = float(np.median(hi_v) / np.median(lo_v))
        return lo_v[i], hi_v[j] * (r / base if base > 0 else 1.0)

    def decide(d: tuple[np.ndarray, np.ndarray], g: np.random.Generator
               ) -> tuple[str, dict[str, Any]]:
        _, a, b = end_ratio(d[0], d[1], rng=g, paired=paired)
        if 1 - margin <= a and b <= 1 + margin:
            return "no-effect", {}
        return ("supported" if a > 1 or b < 1 else "inconclusive"), {}

    up = est >= 1
    primary = Procedure("the end-ratio interval inside the band", decide,
                        lambda g: scaled(edge, g), f"resamples of these sets with their ratio "
                        f"at the band's edge {edge:g}", ("no-effect",))
    v = calibrate(verdict, (lo_v, hi_v), primary, rng=rng, n_sim=n_sim,
                  alternative=lambda c, g: scaled(1 + c if up else 1 - c, g),
                  # on a grid of fractions of the margin, so the band's own edge is tried
                  grid=[margin * k for k in (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)],
                  measure=None, units="change of the end-to-end ratio from 1",
                  found="supported")
    mde = v.evidence.get("min_detectable_effect")
    if v.status == "no-effect" and (mde is None or mde > margin * (1 + 1e-9)):
        reach_txt = "beyond the largest tried" if mde is None else f"{mde:.3g}"
        return Verdict("inconclusive", f"{v.reason}; not no-effect: the smallest change these "
                       f"data tell from none, {reach_txt}, lies outside the band 1 +- "
                       f"{margin:g}", {**v.evidence, "status_if_in_reach": "no-effect"},
                       v.figure, v.table)
    return v


# -------------------------------------------------------------- fitted rate exponents


def _slopes(logx: np.ndarray, agg: np.ndarray) -> np.ndarray:
    """Least-squares slopes of ``agg (..., levels)`` on ``logx``, over the last axis."""
    cx = logx - logx.mean()
    return (agg * cx).sum(-1) / (cx**2).sum()


def calibrated_exponent(verdict: Verdict, logx: np.ndarray, series: Sequence[np.ndarray], *,
                        rng: np.random.Generator, predicted: float,
                        aggregate: Callable[[np.ndarray], np.ndarray], n_boot: int = 500,
                        n_sim: int = 1000) -> Verdict:
    """A rate claim ``statistic ~ x^a`` with ``a <= predicted`` (e.g. a gap shrinking at least
    like ``H^-1/2``): each of ``series`` (log values, ``(sets, levels)``) is aggregated over
    its sets (``aggregate``: ``(..., sets, levels) -> (..., levels)``), the exponent fitted on
    ``logx`` with a bootstrap interval over sets; ``contradicted`` where some series'
    interval lies above ``predicted``. Calibrated on nulls whose exponent is exactly
    ``predicted`` (each series tilted by ``(predicted - a_hat) logx``, its sets drawn with
    replacement), where a ``contradicted`` is false; the minimum detectable effect is the
    excess exponent ``a - predicted`` found in 80% of such draws tilted by it."""
    logx = np.asarray(logx, dtype=float)
    series = [np.asarray(s, dtype=float) for s in series]
    est = [float(_slopes(logx, aggregate(s))) for s in series]
    nulls_at = [s + (predicted - a) * logx for s, a in zip(series, est, strict=True)]

    def decide(data: list[np.ndarray], g: np.random.Generator) -> tuple[str, dict[str, Any]]:
        for s in data:
            idx = g.integers(0, s.shape[0], (n_boot, s.shape[0]))
            lo = float(np.quantile(_slopes(logx, aggregate(s[idx])), 0.025))
            if lo > predicted:
                return "contradicted", {}
        return "supported", {}

    def draw(c: float, g: np.random.Generator) -> list[np.ndarray]:
        return [s[g.integers(0, s.shape[0], s.shape[0])] + c * logx for s in nulls_at]

    primary = Procedure("the fitted exponent's bootstrap interval", decide,
                        lambda g: draw(0.0, g), f"resamples of these sets tilted to the "
                        f"exponent {predicted:g}", ("contradicted",))
    return calibrate(verdict, series, primary, rng=rng, n_sim=n_sim, alternative=draw,
                     grid=(0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
                     measure=lambda d: max(float(_slopes(logx, aggregate(s))) for s in d)
                     - predicted, units="exponent above the predicted one",
                     found="contradicted")
