"""Mean, no-effect-band and exponent verdicts calibrated on their own data (issue 64) and on a
battery of six null shapes at their sizes (issue 82): each reports its realised false-decision
rate on nulls drawn from the claim's observed outcomes and on data of the claim's sizes and
scale with each battery family's noise (:mod:`~boundbench.framework.stats.decisions.battery`), and the
smallest effect it detects in 80% of draws under the worst of them (in the claim's units); it
decides only where the upper end of every rate's interval is at most alpha plus a point
(:mod:`~boundbench.framework.stats.procedures`).

One core, :func:`calibrate`, runs a :class:`Procedure` (a decision and the nulls it is
calibrated on) and an alternative family; the wrappers say what the nulls are:

- :func:`calibrated_mean`: a mean (of paired differences, of per-dataset exponents) decided by
  a bootstrap interval or a confidence sequence; nulls are the values centred at the null and
  drawn with replacement (the data's shape, no effect); admitted only where the upper end of
  its rate is at most alpha plus a point, else ``inconclusive`` (no test of a median stands in
  for the mean's); :func:`mean_or_share` adds the claim re-posed on a bounded share.
- the trends moved to :mod:`~boundbench.framework.stats.exact_trends` (exact permutation tests,
  valid by construction; a :class:`Procedure` with ``validity`` is used whatever its measured
  rate, which is then a check);
- :func:`calibrated_end_ratio`: a no-effect decided by an end-to-end ratio's interval inside
  ``1 +- margin`` (an equivalence test, Schuirmann 1987, *J. Pharmacokin. Biopharm.* 15:
  657-680); a false decision is a no-effect where the effect sits at the band's edge, and the
  verdict stands only where the smallest ratio the interval tells from 1 lies inside the band.

The rate is the share of nulls on which the procedure decides an effect (``supported`` or
``contradicted``; ``no-effect`` for a band), with its exact (Clopper-Pearson) interval
(:func:`~boundbench.framework.stats.calibration._calibration`), in the spirit of the false-fail
rates TensorFlow Probability's ``statistical_testing`` attaches to its assertions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from boundbench.framework.inputs.validate import Float, Int, checked
from boundbench.framework.stats.calibration import ALPHA
from boundbench.framework.stats.decisions.battery import FAMILIES
from boundbench.framework.stats.procedures import (  # noqa: F401 (re-exported: the procedure's names)
    DEFECT_LEVEL,
    Decision,
    Procedure,
    _battery,
    _family_draw,
    _judge,
    _reach,
    reach,
    realised,
)
from boundbench.framework.verdicts.rules import Verdict

# the evidence a calibrated verdict adds: what a verdict built from several carries over
CALIBRATION_KEYS = ("calibration", "realised_false_decision_rate", "realised_false_decision_ci",
                    "min_detectable_effect", "min_detectable_units",
                    "min_detectable_fraction_of_paper", "decided_by", "refused",
                    "calibration_not_applicable", "battery", "calibration_these_data",
                    "min_detectable_by_family", "min_detectable_under", "calibration_kept")


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
    (:attr:`~boundbench.framework.stats.calibration.Calibration.admitted`, issue 82), or where the
    verdict is not one of its false words (a rate of false rejections says nothing against a
    verdict that rejects nothing); where it is not, ``inconclusive``, the refused procedure
    and its rate kept (a fallback valid by construction is a procedure of its own: the trends'
    exact tests, :mod:`~boundbench.framework.stats.exact_trends`)."""
    cal = realised(primary, rng=rng, n_sim=n_sim, alpha=alpha)
    # the battery draws from a child generator: these data's own draws are those of before
    g = rng.spawn(1)[0] if primary.family is not None else rng
    # its rates where they admit the procedure; one valid by construction is valid on any of
    # its shapes (benchmarks/bench_decisions.py measures that), so it meets them for its reach
    battery = (_battery(primary, rng=g, n_sim=n_sim, alpha=alpha) if primary.validity is None
               else {})
    ev: dict[str, Any] = {**verdict.evidence}
    status, reason, used = _judge(verdict, primary, cal, battery, ev)
    at, mde = _reach(primary.decide, alternative, grid, measure, rng=rng, found=found)
    reaches: dict[str, tuple[int, float | None]] = {"these data": (at, mde)}
    for fam in (FAMILIES if primary.family is not None else ()):
        reaches[fam] = _reach(primary.decide, _family_draw(primary, fam), grid, measure, rng=g,
                              found=found)
    # the worst reach: none at all, else the largest effect measured in the claim's units (a
    # rho, a mean shift), else the furthest along the grid (the effect drawn: a spread ratio's
    # grid falls as the effect grows)
    def badness(k: str) -> tuple[bool, float]:
        i, value = reaches[k]
        return value is None, (abs(value) if measure is not None and value is not None else i)

    under = max(reaches, key=badness)
    mde = reaches[under][1]
    ev.update(calibration={**used.to_dict(), "by_construction": primary.validity is not None,
                           "battery_families": len(battery)},
              realised_false_decision_rate=used.rate,
              realised_false_decision_ci=[used.low, used.high], min_detectable_effect=mde,
              min_detectable_units=units, decided_by=primary.name)
    words = f"the smallest {units} it finds in 80% of draws like these is "
    if battery:  # each family's rate, and these data's own beside the worst recorded above
        ev.update(battery={k: c.to_dict() for k, c in battery.items()},
                  calibration_these_data=cal.to_dict())
    if len(reaches) > 1:
        ev.update(min_detectable_by_family={k: r[1] for k, r in reaches.items()},
                  min_detectable_under=under)
        words = (f"the smallest {units} it finds in 80% of draws, under the worst of these data's "
                 f"resamples and the battery's {len(reaches) - 1} families at these data's size "
                 f"and variance ({under}), is ")
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
    from boundbench.framework.stats.trends import interval_status

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
    from boundbench.framework.stats.trends import bootstrap_mean

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
    sd = float(np.std(x, ddof=1))

    def family(fam: str, c: float | None, g: np.random.Generator) -> np.ndarray:
        from boundbench.framework.stats.decisions.battery import noise

        return null + sign * (c or 0.0) + sd * noise(fam, g, x.size)

    primary = Procedure(procedure, decide, lambda g: g.choice(centred, x.size),
                        "resamples of these values centred at the null", family=family)
    se = sd / np.sqrt(x.size) or 1e-12
    return calibrate(verdict, x, primary, rng=rng, n_sim=n_sim,
                     alternative=lambda c, g: g.choice(centred, x.size) + sign * c,
                     grid=[se * k for k in (0.5, 1, 1.5, 2, 2.5, 3, 4, 6, 10, 20)],
                     measure=lambda d: abs(float(np.mean(d)) - null), units=units,
                     paper_effect=paper_effect)


def mean_or_share(mean: Verdict, x: np.ndarray, *, null: float, expected_sign: int,
                  what: str, unit: str) -> Verdict:
    """A mean claim over two readings (:func:`~boundbench.framework.verdicts.readings.readings_verdict`,
    where an undecided reading outvotes nobody): ``mean``, the calibrated mean's verdict
    (:func:`calibrated_mean`), and ``share``, the claim re-posed on the share of ``unit`` s in
    the claimed direction from ``null`` against the share reversed, read from its exact
    interval (:func:`~boundbench.framework.stats.decisions.shares.share_decision`, valid for any
    shape of the values). The share reading says it is not the mean's: it is a
    statement of its own, the paper's direction held by most units."""
    from boundbench.framework.stats.decisions.shares import exact_size, share_decision, share_reach
    from boundbench.framework.verdicts.readings import readings_verdict

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
    from boundbench.framework.stats.sequential import t_confidence_sequence
    from boundbench.framework.stats.stopping import first_decision

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
    (:func:`~boundbench.framework.stats.trends.decide_no_effect`), calibrated where it can be false:
    on nulls whose ratio sits at the band's edge nearer the estimate (each set's high-level
    values scaled, the sets drawn with replacement), its rate of no-effect decisions; and the
    smallest ratio the interval tells from 1 in 80% of draws. The verdict stands where that
    ratio lies inside the band; otherwise it is ``inconclusive``, with the number. Other
    verdicts are returned as they are."""
    from boundbench.framework.stats.trends import end_ratio

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
        if 1 - margin < a and b < 1 + margin:  # strictly: an interval at the edge is a tie
            return "no-effect", {}
        return ("supported" if a > 1 or b < 1 else "inconclusive"), {}

    up = est >= 1

    def log_sd(v: np.ndarray) -> float:
        v = v[np.isfinite(v) & (v > 0)]
        return float(np.std(np.log(v), ddof=1)) if v.size > 1 else 0.0

    m_lo = float(np.median(lo_v))
    s_r = log_sd(hi_v / lo_v) if paired else 0.0
    s_lo, s_hi = log_sd(lo_v), log_sd(hi_v)

    def family(fam: str, c: float | None, g: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
        # multiplicative noise centred at the family's median: the medians the statistic takes
        # are then exactly those of a ratio r (the band's edge for the null)
        from boundbench.framework.stats.decisions.battery import median, noise

        r, med = edge if c is None else (1 + c if up else 1 - c), median(fam)
        if paired:
            lo = lo_v[g.integers(0, lo_v.size, lo_v.size)]
            return lo, lo * r * np.exp(s_r * (noise(fam, g, lo_v.size) - med))
        return (m_lo * np.exp(s_lo * (noise(fam, g, lo_v.size) - med)),
                r * m_lo * np.exp(s_hi * (noise(fam, g, hi_v.size) - med)))

    primary = Procedure("the end-ratio interval inside the band", decide,
                        lambda g: scaled(edge, g), f"resamples of these sets with their ratio "
                        f"at the band's edge {edge:g}", ("no-effect",), family=family)
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


@checked(k=Int(1), n=Int(1), alpha=Float(0, 1, lo_open=True, hi_open=True))
def exponent_tail(k: int, n: int, alpha: float = ALPHA) -> float:
    """The lower quantile of each of ``k`` exponents' bootstrap intervals over ``n`` sets where
    a rate claim is contradicted by any of them: the one-sided tail ``alpha / (2 k)``
    (Bonferroni), expanded for small ``n`` as Hesterberg's expanded percentile interval does,
    ``Phi(-sqrt(n / (n - 1)) t_{n-1}(1 - alpha / (2 k)))`` (T. Hesterberg, "What teachers
    should know about the bootstrap", The American Statistician 69(4), 2015, sec. 6.3): the
    plain percentile interval is too narrow by about ``sqrt((n - 1) / n)`` and by ``z`` against
    ``t`` (at 20 sets and two series it erred 6.3% [4.9%, 8.0%] on lognormal nulls where it
    should 5%; the battery measures the expanded one, issue 82).

    >>> round(exponent_tail(1, 10), 4), round(exponent_tail(2, 20), 4)
    (0.0086, 0.0063)
    """
    from scipy import stats

    q = 1 - alpha / (2 * k)
    return float(stats.norm.cdf(-np.sqrt(n / (n - 1)) * stats.t.ppf(q, n - 1))) if n > 1 else q


def calibrated_exponent(verdict: Verdict, logx: np.ndarray, series: Sequence[np.ndarray], *,
                        rng: np.random.Generator, predicted: float,
                        aggregate: Callable[[np.ndarray], np.ndarray], n_boot: int = 500,
                        n_sim: int = 1000) -> Verdict:
    """A rate claim ``statistic ~ x^a`` with ``a <= predicted`` (e.g. a gap shrinking at least
    like ``H^-1/2``): each of ``series`` (log values, ``(sets, levels)``) is aggregated over
    its sets (``aggregate``: ``(..., sets, levels) -> (..., levels)``, commuting with shifts
    as a median or a log-mean-exp does, so the battery's nulls have the exponent tested), the
    exponent fitted on ``logx`` with a bootstrap interval over sets; ``contradicted`` where
    some series' interval lies above ``predicted``, at the lower quantile
    :func:`exponent_tail` (Bonferroni over the series, expanded for few sets), which the
    claim's own interval uses too. Calibrated on nulls whose exponent is exactly
    ``predicted`` (each series tilted by ``(predicted - a_hat) logx``, its sets drawn with
    replacement), where a ``contradicted`` is false; the minimum detectable effect is the
    excess exponent ``a - predicted`` found in 80% of such draws tilted by it."""
    logx = np.asarray(logx, dtype=float)
    series = [np.asarray(s, dtype=float) for s in series]
    est = [float(_slopes(logx, aggregate(s))) for s in series]
    nulls_at = [s + (predicted - a) * logx for s, a in zip(series, est, strict=True)]

    # every dataset decided (these, their nulls, the battery's) has these series' shapes: the
    # quantiles once, not a t quantile per series per null
    tails = {s.shape[0]: exponent_tail(len(series), s.shape[0]) for s in series}

    def decide(data: list[np.ndarray], g: np.random.Generator) -> tuple[str, dict[str, Any]]:
        for s in data:
            idx = g.integers(0, s.shape[0], (n_boot, s.shape[0]))
            tail = tails.get(s.shape[0]) or exponent_tail(len(data), s.shape[0])
            lo = float(np.quantile(_slopes(logx, aggregate(s[idx])), tail))
            if lo > predicted:
                return "contradicted", {}
        return "supported", {}

    def draw(c: float, g: np.random.Generator) -> list[np.ndarray]:
        return [s[g.integers(0, s.shape[0], s.shape[0])] + c * logx for s in nulls_at]

    cx = logx - logx.mean()
    # each set's line at the predicted exponent through its own mean, and the spread about it
    bases = [s.mean(-1, keepdims=True) + predicted * cx for s in nulls_at]
    spreads = [float(np.std(s - b)) for s, b in zip(nulls_at, bases, strict=True)]

    def family(fam: str, c: float | None, g: np.random.Generator) -> list[np.ndarray]:
        # noise alike at every level and an aggregate that commutes with shifts (a median, a
        # log-mean-exp): the aggregate's exponent is exactly ``predicted`` + ``c``
        from boundbench.framework.stats.decisions.battery import noise

        return [b + sd * noise(fam, g, b.shape) + (c or 0.0) * logx
                for b, sd in zip(bases, spreads, strict=True)]

    primary = Procedure("the fitted exponent's bootstrap interval", decide,
                        lambda g: draw(0.0, g), f"resamples of these sets tilted to the "
                        f"exponent {predicted:g}", ("contradicted",), family=family)
    return calibrate(verdict, series, primary, rng=rng, n_sim=n_sim, alternative=draw,
                     grid=(0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
                     measure=lambda d: max(float(_slopes(logx, aggregate(s))) for s in d)
                     - predicted, units="exponent above the predicted one",
                     found="contradicted")
