"""Trend rules: does a measured quantity move the way a paper predicts, and by enough to matter?

Spearman trends with tie-aware ranks (pooled and within sets), the bootstrap intervals they are
decided on, the no-effect band (:data:`EQUIVALENCE`), the median reversals and the ratio of
spreads; each returns a :class:`~boundbench.framework.verdicts.rules.Verdict` whose evidence keeps the
numbers and the margin to a flip.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import (
    Array,
    Bool,
    Choice,
    Float,
    Int,
    Rng,
    Text,
    as_generator,
    checked,
)
from boundbench.framework.inputs.values import broadcastable
from boundbench.framework.verdicts.rules import (
    FRAGILE,
    Verdict,
    measured,
    with_margin,
)

TIE_RTOL = 1e-5
"""Values closer than this (relative) rank as ties: a solver's or a kernel's last bits must not
order them (Fig. 7's realised margins are equal to the requested one up to 1e-9, and their order
within a level was noise that moved the rank correlation)."""


def tied_ranks(a: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """Average ranks along the last axis, with values within ``rtol`` (relative) of their
    neighbour in sorted order counted as ties (chains of near-ties form one tie).

    >>> tied_ranks(np.array([3.0, 1.0, 1.0 + 1e-9, 2.0])).tolist()
    [4.0, 1.5, 1.5, 3.0]
    """
    from scipy.stats import rankdata

    a = np.asarray(a, dtype=np.float64)
    order = np.argsort(a, axis=-1, kind="stable")
    srt = np.take_along_axis(a, order, axis=-1)
    gap = np.diff(srt, axis=-1)
    size = np.maximum(np.abs(srt[..., 1:]), np.abs(srt[..., :-1]))
    new = gap > rtol * np.where(size > 0, size, 1.0)
    gid_sorted = np.concatenate([np.zeros(a.shape[:-1] + (1,)), np.cumsum(new, axis=-1)],
                                axis=-1)
    gid = np.empty_like(gid_sorted)
    np.put_along_axis(gid, order, gid_sorted, axis=-1)
    return rankdata(gid, axis=-1)


@checked(x=Array(ndim=(1, 2)), y=Array(ndim=2))
def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of ``x`` and ``y`` along the last axis, one per row (0 where a
    row is constant)."""
    broadcastable(x=x, y=y)  # a length that differs along the last axis is named here too
    rx = tied_ranks(x)
    ry = tied_ranks(y)
    rx -= rx.mean(-1, keepdims=True)
    ry -= ry.mean(-1, keepdims=True)
    den = np.sqrt((rx**2).sum(-1) * (ry**2).sum(-1))
    return np.where(den > 0, (rx * ry).sum(-1) / np.where(den > 0, den, 1), 0.0)


def _trend_status(lo: float, hi: float, expected: str, what: str, ci: str, ev: dict) -> Verdict:
    # decided or not, the interval edge nearest 0 is what a change would have to move
    ev = with_margin(ev, min(abs(lo), abs(hi)), "rho")
    sign = 1.0 if expected == "increasing" else -1.0
    if sign * lo > 0 and sign * hi > 0:
        return Verdict("supported", f"{what} is {expected}: {ci}", ev)
    if sign * lo < 0 and sign * hi < 0:
        return Verdict("contradicted", f"{what} is not {expected} but the opposite: {ci}", ev)
    return Verdict("inconclusive", f"{what}: no clear trend, the interval contains 0 ({ci})", ev)


@checked(x=Array(ndim=1), y=Array(ndim=2), expected=Choice("increasing", "decreasing"), rng=Rng(),
         what=Text())
def paired_trend_verdict(
    x: np.ndarray,
    y: np.ndarray,
    *,
    expected: str,
    rng: np.random.Generator | int,
    what: str,
    evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """The trend of ``y (sets, levels)`` in ``x (levels,)`` when every set (a training set, a
    seed) is measured at every level: the mean over sets of their own Spearman correlation, with
    a bootstrap interval over sets, so the spread between sets does not hide the effect.
    Statuses as :func:`trend_verdict`.

    Parameters
    ----------
    x : numpy.ndarray
        The levels, ``(levels,)``.
    y : numpy.ndarray
        The measurements, ``(sets, levels)``.
    expected : {"increasing", "decreasing"}
        The predicted direction.
    rng : numpy.random.Generator
        The bootstrap's generator.
    what : str
        The trend in words, for the reason.
    evidence : mapping, optional
        The check's own keys.

    Returns
    -------
    Verdict
        As :func:`trend_verdict`'s, from the mean within-set correlation.

    References
    ----------
    The verdict rules of boundbench; used where every set is measured at every level (Fig. 5's
    datasets, seeds).

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.framework.stats.trends import paired_trend_verdict
    >>> g = np.random.default_rng(0)
    >>> _ = g.normal(size=100)  # as drawn before in the example above
    >>> y = -np.arange(5.0)[None, :] + g.normal(scale=0.5, size=(8, 5))
    >>> v = paired_trend_verdict(np.arange(5.0), y, expected="decreasing",
    ...                          rng=np.random.default_rng(1), what="stability vs heads")
    >>> v.status, v.reason.split(": ", 1)[1]
    ('supported', 'mean within-set Spearman rho = -0.962, 95% CI [-0.988, -0.925], 8 sets x 5 levels')
    """
    rng = as_generator(rng)
    if expected not in ("increasing", "decreasing"):
        raise InvalidArgument(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    y = np.asarray(measured(y), dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    if y.ndim != 2 or x.shape != y.shape[1:] or y.shape[0] < 2 or y.shape[1] < 2:
        raise InvalidArgument(f"y must be (sets >= 2, levels >= 2) with x (levels,) (got {y.shape}, "
                              f"{x.shape})")
    rho = spearman_rows(np.broadcast_to(x, y.shape), y)
    mean, lo, hi = bootstrap_mean(rho, rng=rng)
    ev = {"mean_within_set_spearman": mean, "ci_low": lo, "ci_high": hi, "n_sets": len(rho),
          "n_levels": y.shape[1], "expected": expected, **(evidence or {})}
    ci = (f"mean within-set Spearman rho = {mean:.3f}, 95% CI [{lo:.3f}, {hi:.3f}], "
          f"{len(rho)} sets x {y.shape[1]} levels")
    return _trend_status(lo, hi, expected, what, ci, ev)


@checked(
    x=Array(ndim=1), y=Array(ndim=1), expected=Choice("increasing", "decreasing"), rng=Rng(), what=Text(),
    n_boot=Int(10), level=Float(0, 1, lo_open=True, hi_open=True),
    needs=lambda a: 8.0 * a["n_boot"] * np.size(a["x"]))  # the resampled indices
def trend_verdict(
    x: np.ndarray,
    y: np.ndarray,
    *,
    expected: str,
    rng: np.random.Generator | int,
    what: str,
    n_boot: int = 1000,
    level: float = 0.95,
    evidence: Mapping[str, Any] | None = None,
) -> Verdict:
    """Spearman rank correlation of ``y`` with ``x`` and its bootstrap interval (rows resampled).

    ``supported`` when the interval lies on the ``expected`` side of 0 (``"increasing"`` or
    ``"decreasing"``), ``contradicted`` when it lies on the other side, else ``inconclusive``.

    Parameters
    ----------
    x, y : numpy.ndarray
        The levels and the measurements, one pair per row.
    expected : {"increasing", "decreasing"}
        The predicted direction.
    rng : numpy.random.Generator
        The bootstrap's generator.
    what : str
        The trend in words, for the reason.
    n_boot : int, default 1000
        Bootstrap resamples.
    level : float, default 0.95
        The interval's level.
    evidence : mapping, optional
        The check's own keys.

    Returns
    -------
    Verdict
        ``supported``, ``contradicted`` or ``inconclusive``, with ``spearman_rho`` and its
        interval in its evidence.

    References
    ----------
    Spearman's rank correlation with a percentile bootstrap over rows; the verdict rules of
    boundbench.

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.framework.stats.trends import trend_verdict
    >>> x = np.repeat(np.arange(5.0), 20)
    >>> y = -x + np.random.default_rng(0).normal(size=x.size)
    >>> trend_verdict(x, y, expected="decreasing", rng=np.random.default_rng(1),
    ...               what="loss vs n").reason
    'loss vs n is decreasing: Spearman rho = -0.819, 95% CI [-0.874, -0.735], 100 points'
    """
    rng = as_generator(rng)
    if expected not in ("increasing", "decreasing"):
        raise InvalidArgument(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    x = np.asarray(measured(x), dtype=np.float64).ravel()
    y = np.asarray(measured(y), dtype=np.float64).ravel()
    if x.shape != y.shape or x.size < 4:
        raise InvalidArgument("a trend needs x and y of one shape with at least 4 points")

    rho = float(spearman_rows(x[None], y[None])[0])
    ix = rng.integers(0, x.size, (n_boot, x.size))
    boot = spearman_rows(x[ix], y[ix])
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    ev = {"spearman_rho": rho, "ci_low": float(lo), "ci_high": float(hi), "ci_level": level,
          "n_points": int(x.size), "n_bootstrap": n_boot, "expected": expected,
          **(evidence or {})}
    ci = f"Spearman rho = {rho:.3f}, {level:.0%} CI [{lo:.3f}, {hi:.3f}], {x.size} points"
    return _trend_status(lo, hi, expected, what, ci, ev)


EQUIVALENCE = 0.10  # the smallest effect that counts: a 10% change of the median across a range


def _row_medians(a: np.ndarray) -> np.ndarray:
    """``np.median(a, axis=-1)``'s values by a sort: the same middle order statistics and the
    same mean of the two (hence its bits, but for which of +0 and -0 a tie in the middle
    shows), 2.6x its partition on a bootstrap's 1000 rows of 200 on a 2-core AMD EPYC without
    AVX-512 (benchmarks/bench_row_medians.py). Rows with a NaN or no values go to np.median itself."""
    n = a.shape[-1]
    if n == 0 or not np.isfinite(a).all():
        return np.median(a, axis=-1)
    s = np.sort(a, axis=-1)
    return s[..., n // 2] if n % 2 else (s[..., n // 2 - 1] + s[..., n // 2]) / 2


@checked(low_level=Array(ndim=1), high_level=Array(ndim=1), rng=Rng(), paired=Bool(),
         n_boot=Int(10), needs=lambda a: 8.0 * a["n_boot"] * np.size(a["low_level"]))
def end_ratio(
    low_level: np.ndarray, high_level: np.ndarray, *, rng: np.random.Generator | int, paired: bool,
    n_boot: int = 1000,
) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the change of a measurement from the smallest level of a factor
    (``low_level``, one value per training set) to the largest (``high_level``). ``paired``
    (set ``j`` measured at both levels): the median over sets of their own ratio; else the
    ratio of the two medians. 95% bootstrap interval over sets."""
    rng = as_generator(rng)
    lo_v = np.asarray(measured(low_level), dtype=np.float64)
    hi_v = np.asarray(measured(high_level), dtype=np.float64)
    if np.any(lo_v <= 0) or np.any(hi_v < 0):
        raise InvalidArgument("low_level must be > 0 and high_level >= 0 (a ratio of magnitudes; got "
                              f"min {lo_v.min():.3g} and {hi_v.min():.3g})")
    if paired:
        if lo_v.shape != hi_v.shape:
            raise InvalidArgument(f"low_level and high_level must have one value per set when "
                                  f"paired (got {lo_v.shape} and {hi_v.shape})")
        r = hi_v / lo_v
        boot = _row_medians(r[rng.integers(0, len(r), (n_boot, len(r)))])
        est = float(np.median(r))
    else:
        boot = (_row_medians(hi_v[rng.integers(0, len(hi_v), (n_boot, len(hi_v)))])
                / _row_medians(lo_v[rng.integers(0, len(lo_v), (n_boot, len(lo_v)))]))
        est = float(np.median(hi_v) / np.median(lo_v))
    a, b = np.quantile(boot, [0.025, 0.975])
    return est, float(a), float(b)


@checked(ratio=Array(ndim=1), factor=Text(), margin=Float(0, 1, lo_open=True, hi_open=True))
def decide_no_effect(verdict: Verdict, ratio: tuple[float, float, float], factor: str, *,
                     margin: float = EQUIVALENCE, before_trend: bool = False) -> Verdict:
    """A trend the rank test cannot see is decided by the size of the change: an interval of the
    end-to-end ratio (:func:`end_ratio`) inside ``1 +- margin`` means the predicted effect is
    absent (``no-effect``); otherwise the verdict stands, with the ratio as evidence.
    ``before_trend``: no effect is tested first, so an interval inside the band is
    ``no-effect`` whatever the rank test says (a drift of 0.1% over hundreds of datasets is a
    significant trend, but no effect of the size claimed); the trend's direction is stated."""
    if not isinstance(verdict, Verdict):
        raise InvalidArgument(f"verdict must be a Verdict (got {type(verdict).__name__})")
    # a bootstrap percentile interval need not contain the point estimate: only low <= high
    if len(ratio) != 3 or not ratio[1] <= ratio[2]:
        raise InvalidArgument(f"ratio must be (estimate, low, high) with low <= high (got "
                              f"{tuple(ratio)})")
    r, a, b = (float(v) for v in ratio)
    ev: dict[str, Any] = {"end_ratio": r, "end_ratio_ci_low": a, "end_ratio_ci_high": b,
          "equivalence_margin": margin}
    # how far the interval is from the band's edge: inside (> 0) it would have to grow by this
    # to leave it, outside (< 0) to enter it
    inside = min(a - (1 - margin), (1 + margin) - b)
    ev["no_effect_band_margin"] = inside
    tested = verdict.status == "inconclusive" or (
        before_trend and verdict.status in ("supported", "contradicted"))
    if tested and 1 - margin < a and b < 1 + margin:  # strictly inside: never on a tie
        if verdict.status != "inconclusive":
            ev["trend_inside_band"] = verdict.status
        return Verdict("no-effect", f"no effect: over the whole range of {factor} the median "
                       f"changes by a factor {r:.3f} (95% CI [{a:.3f}, {b:.3f}], inside 1 +- "
                       f"{margin:g}); {verdict.reason}",
                       with_margin({**verdict.evidence, **ev}, inside, "ratio"))
    if verdict.status == "inconclusive" and abs(inside) < FRAGILE["ratio"]:
        # an interval at the band's edge: as near a flip as a trend interval at 0
        return verdict.with_evidence(**with_margin({**verdict.evidence, **ev}, abs(inside),
                                                   "ratio"))
    return verdict.with_evidence(**ev)


def median_reversals(groups: list[np.ndarray], *, expected: str, rng: np.random.Generator,
                     n_boot: int = 1000, level: float = 0.95) -> dict[str, Any]:
    """Do the medians of ``groups`` (the measurements at each level of a factor, in the level's
    order) move against the ``expected`` trend anywhere, beyond sampling noise? For each pair of
    adjacent levels a percentile bootstrap interval of ``log(median_{k+1} / median_k)`` (each
    level resampled on its own); a *reversal* is a pair whose whole interval lies on the wrong
    side of 0. Point medians that wander by a few per cent (0.378 -> 0.390 at 30 datasets a
    level) are noise, not a reversal; deciding on them flipped Fig. 7's verdict with the CPU.

    Returns ``monotone`` (no reversal), ``reversals`` (the pairs, with their intervals) and
    ``margin`` (in log-ratio units: the interval edge nearest to making, or unmaking, a
    reversal)."""
    if expected not in ("increasing", "decreasing"):
        raise InvalidArgument(f"expected must be 'increasing' or 'decreasing' (got {expected!r})")
    if len(groups) < 2:
        raise InvalidArgument(f"need at least 2 levels (got {len(groups)})")
    sign = 1.0 if expected == "increasing" else -1.0
    meds = []
    for g in groups:
        g = np.asarray(measured(g), dtype=np.float64)
        if g.size < 2 or np.any(g <= 0):
            raise InvalidArgument("each level needs at least 2 positive measurements")
        meds.append(_row_medians(g[rng.integers(0, g.size, (n_boot, g.size))]))
    # every adjacent pair at once: (levels - 1, n_boot) log ratios, signed so that the expected
    # direction is positive; a reversal is a pair whose whole interval is below 0
    logs = sign * np.log(np.stack(meds[1:]) / np.stack(meds[:-1]))
    lo, hi = np.quantile(logs, [(1 - level) / 2, (1 + level) / 2], axis=1)
    bad = hi < 0
    reversals = [{"between_levels": [int(k), int(k) + 1],
                  "log_ratio_ci": sorted([float(sign * lo[k]), float(sign * hi[k])])}
                 for k in np.flatnonzero(bad)]
    # monotone: the pair nearest to reversing; else the strongest reversal, which must vanish
    margin = float(-hi[bad].min()) if bad.any() else float(hi.min())
    return {"monotone": not reversals, "reversals": reversals, "margin": margin}


@checked(x=Array(ndim=1), rng=Rng(), n_boot=Int(10), level=Float(0, 1, lo_open=True, hi_open=True),
         needs=lambda a: 8.0 * a["n_boot"] * np.size(a["x"]))
def bootstrap_mean(
    x: np.ndarray, *, rng: np.random.Generator | int, n_boot: int = 1000, level: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``x`` with a percentile bootstrap interval (rows
    resampled with replacement, all resamples drawn in one call)."""
    rng = as_generator(rng)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise InvalidArgument(f"x must be a 1-D array of at least 2 values (got shape {x.shape})")
    boot = x[rng.integers(0, x.size, (n_boot, x.size))].mean(1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(x.mean()), float(lo), float(hi)


@checked(low=Float(), high=Float(), expected_sign=Choice(-1, 1))
def interval_status(low: float, high: float, *, expected_sign: int) -> str:
    """``supported`` when the interval lies on the expected side of 0, ``contradicted`` when on
    the other side, else ``inconclusive``."""
    if expected_sign * low > 0 and expected_sign * high > 0:
        return "supported"
    if expected_sign * low < 0 and expected_sign * high < 0:
        return "contradicted"
    return "inconclusive"


Z_ALPHA, Z_BETA = 1.959964, 0.841621  # two-sided 5% test, 80% power


@checked(a=Array(ndim=1), b=Array(ndim=1), rng=Rng(), n_boot=Int(10),
         needs=lambda a: 8.0 * a["n_boot"] * np.size(a["a"]))
def std_ratio_verdict(
    a: np.ndarray,
    b: np.ndarray,
    *,
    rng: np.random.Generator | int,
    what: str,
    names: tuple[str, str] = ("a", "b"),
    equivalence: float | None = None,
    n_boot: int = 2000,
    evidence: dict[str, Any] | None = None,
) -> Verdict:
    """Is the spread of ``a`` smaller than that of ``b``? The ratio of their standard deviations
    with a 95% bootstrap interval (each sample resampled on its own): ``supported`` below 1,
    ``contradicted`` above 1, ``no-effect`` (with ``equivalence``) when the interval lies inside
    ``1 +- equivalence``; otherwise ``inconclusive`` with the runs per sample an F
    test of the variances would need at this ratio, ``1 + ((z_a + z_b) / ln r)^2``."""
    rng = as_generator(rng)
    a, b = np.asarray(measured(a), dtype=float), np.asarray(measured(b), dtype=float)
    if min(len(a), len(b)) < 3:
        raise InvalidArgument(f"a and b need at least 3 values each (got {len(a)} and {len(b)})")
    sa, sb = float(np.std(a, ddof=1)), float(np.std(b, ddof=1))
    r = sa / sb if sb > 0 else np.inf
    boot_a = np.std(a[rng.integers(0, len(a), (n_boot, len(a)))], axis=1, ddof=1)
    boot_b = np.std(b[rng.integers(0, len(b), (n_boot, len(b)))], axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(boot_b > 0, boot_a / np.where(boot_b > 0, boot_b, 1), np.inf)
    # resamples of a few runs can repeat one value (std 0): an infinite ratio, whose
    # interpolated quantile would be inf - inf; then quantiles without interpolation
    finite = bool(np.all(np.isfinite(ratios)))
    lo, hi = (float(q) for q in np.quantile(ratios, [0.025, 0.975],
                                            method="linear" if finite else "inverted_cdf"))
    need = (None if not np.isfinite(r) or r <= 0 or r == 1 else
            max(3, int(np.ceil(1 + ((Z_ALPHA + Z_BETA) / np.log(r)) ** 2))))
    na, nb = names
    ev = {**(evidence or {}), f"std_{na}": sa, f"std_{nb}": sb, f"mean_{na}": float(a.mean()),
          f"mean_{nb}": float(b.mean()), f"n_{na}": len(a), f"n_{nb}": len(b),
          "std_ratio": r if np.isfinite(r) else None, "effect": r if np.isfinite(r) else None,
          "ci_low": lo, "ci_high": hi,
          "seeds_needed": need}
    txt = (f"{what}: std {na} {sa:.4g} vs {nb} {sb:.4g} (ratio {r:.3g}, 95% bootstrap CI "
           f"[{lo:.3g}, {hi:.3g}], {len(a)} and {len(b)} runs)")
    edge = min(abs(1 - lo), abs(hi - 1)) if np.isfinite(hi) else abs(1 - lo)
    if equivalence is not None and 1 - equivalence <= lo and hi <= 1 + equivalence:
        edge = min(edge, lo - (1 - equivalence), (1 + equivalence) - hi)
    ev = with_margin(ev, edge, "ratio")
    if hi < 1:
        return Verdict("supported", txt, ev)
    if lo > 1:
        return Verdict("contradicted", txt, ev)
    if equivalence is not None and 1 - equivalence <= lo and hi <= 1 + equivalence:
        ev["equivalence_margin"] = equivalence
        return Verdict("no-effect", f"no effect: the interval lies inside 1 +- {equivalence:g}; "
                       + txt, ev)
    if need:
        txt += f"; a decision at this ratio needs about {need} runs each"
    return Verdict("inconclusive", txt, ev)
