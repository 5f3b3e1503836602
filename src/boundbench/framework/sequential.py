"""Anytime-valid confidence sequences: add seeds until a fine-tuning claim is decided.

A confidence sequence (CS) is a sequence of intervals that contain the true value at *every*
number of seeds at once with probability at least ``1 - alpha``; a rule that looks after each
seed and stops when the interval excludes the null (or fits inside the no-effect band) keeps
its error rate at ``alpha`` however it stops. Two are given here, both from the group-invariance
construction (Lai 1976, *Ann. Statist.* 4: 265-280; Pérez-Ortiz, Lardy, de Heide & Grünwald
2024, *Ann. Statist.* 52: 1410-1432): the likelihood ratio of the data's maximal invariant under
the nuisance group, mixed over the parameter of interest, is a nonnegative martingale under the
null, so Ville's inequality bounds the chance it ever reaches ``1 / alpha``:

- :func:`t_confidence_sequence`, for the mean of Gaussian observations with unknown variance
  (the paired seed-by-seed difference of two methods): location-scale invariance, a normal
  mixture of precision ``rho`` over the standardized effect. Closed form.
- :func:`std_ratio_confidence_sequence`, for the ratio of the standard deviations of two
  Gaussian samples with unknown means and variances (a claim that one method is more stable
  across seeds): invariance under the two shifts and a common scale, a normal mixture over
  the log variance ratio, evaluated on a grid.

Both assume Gaussian observations (the tests also run them on skewed, heavy-tailed and
discrete nulls). Why not a nonparametric, bounded-range CS (empirical Bernstein or betting,
Waudby-Smith & Ramdas 2024, *JRSS B* 86: 1-27)? Its width has a floor of about
``range * log(1/alpha) / n``: for an accuracy difference in [-1, 1] that is about 0.37 at 20
seeds, while the effects of the fine-tuning claims are 0.005 to 0.05.
:func:`eb_confidence_sequence` implements it (their Theorem 2, predictable plug-in) so that a
reader can see that floor on their own data; the claims use the invariant sequences.

Each function takes the data in the order they were drawn (seed 0, 1, ...) and returns the CS
after each prefix (:class:`CSPath`); :func:`decide` turns the last interval into a decision,
and :func:`futile` says when the seeds left cannot decide.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from boundbench.framework.bands import Band, band_margin, band_outcome
from boundbench.framework.validate import Array, Choice, Float, Int, Real, checked

ALPHA = 0.05


class CSPath(NamedTuple):
    """A confidence sequence after each prefix of the data: ``n[i]`` observations (per sample),
    the point ``estimate`` and the interval ``[low, high]`` (``-inf``/``inf`` where the data
    cannot bound it yet)."""

    n: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _t_halfwidth(t: np.ndarray, ss: np.ndarray, alpha: float, rho: float) -> np.ndarray:
    """Half-width of Lai's CS after ``t`` observations with sum of squares ``ss`` about their
    mean. The e-value against mean ``m`` is ``sqrt(rho / (t + rho)) (1 - Y^2 / (V (t + rho)))
    ^(-t/2)`` with ``Y = sum(x - m)``, ``V = sum((x - m)^2)``; it stays under ``1 / alpha`` iff
    ``Y^2 / V < q = (t + rho)(1 - K^(-2/t))``, ``K = sqrt((t + rho) / rho) / alpha``, which is
    ``(mean - m)^2 < q ss / (t (t - q))`` when ``q < t`` and every ``m`` otherwise."""
    t = np.asarray(t, dtype=float)
    log_k = 0.5 * np.log((t + rho) / rho) - np.log(alpha)
    q = (t + rho) * -np.expm1(-2.0 * log_k / t)
    with np.errstate(divide="ignore", invalid="ignore"):
        hw = np.sqrt(np.maximum(q * ss, 0.0) / (t * (t - q)))
    return np.where(q < t, hw, np.inf)


@checked(x=Array(ndim=1), alpha=Float(0, 1, lo_open=True, hi_open=True),
         rho=Float(0, lo_open=True))
def t_confidence_sequence(x: np.ndarray, *, alpha: float = ALPHA, rho: float = 1.0) -> CSPath:
    """Lai's (1976) confidence sequence for the mean of Gaussian observations with unknown
    variance, after each prefix of ``x``.

    Valid at level ``1 - alpha`` uniformly over all prefixes for any mean and variance, when the
    observations are i.i.d. Gaussian. ``rho`` is the precision of the normal mixture over the
    standardized effect ``(mean - m) / sigma``: the sequence is tightest after about ``rho /
    effect^2`` observations, and valid for any ``rho`` fixed before the data are seen. The
    first observation cannot bound anything (scale invariance): the interval is infinite until
    the data pin the spread."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.size + 1, dtype=float)
    mean = np.cumsum(x) / t
    hw = _t_halfwidth(t, _prefix_ss(x), alpha, rho)
    return CSPath(t.astype(int), mean, mean - hw, mean + hw)


_LOG_GRID = np.linspace(-7.0, 7.0, 1401)  # log variance ratio, steps of 0.01: std ratios 0.03-33


def _ratio_intervals(na: np.ndarray, nb: np.ndarray, ssa: np.ndarray, ssb: np.ndarray,
                     alpha: float, prior_sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) of the std ratio after ``na`` and ``nb`` observations with sums of
    squares ``ssa`` and ``ssb`` about their means (arrays, one row per prefix).

    The maximal invariant's likelihood of the variance ratio ``r`` (Haar measure over both
    shifts and the common scale) is ``r^(-(na-1)/2) (ssa / r + ssb)^(-(na+nb-2)/2)``. The
    e-value against ``r0`` is its mixture over ``log r ~ N(0, prior_sd^2)`` divided by its value
    at ``r0``; the CS is every ``r0`` where that stays under ``1 / alpha`` (on a grid of log r
    with steps of 0.01, the ends reported as 0 and infinity)."""
    na, nb = np.asarray(na, dtype=float)[:, None], np.asarray(nb, dtype=float)[:, None]
    ssa, ssb = np.asarray(ssa, dtype=float)[:, None], np.asarray(ssb, dtype=float)[:, None]
    ok = ((na >= 2) & (nb >= 2) & (ssa > 0) & (ssb > 0))[:, 0]
    g = _LOG_GRID[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.sqrt((ssa / np.maximum(na - 1, 1)) / (ssb / np.maximum(nb - 1, 1)))[:, 0]
        # log(ssa / r + ssb) without overflow: logaddexp
        loglik = -(na - 1) / 2 * g - (na + nb - 2) / 2 * np.logaddexp(np.log(ssa) - g,
                                                                       np.log(ssb))
    dx = _LOG_GRID[1] - _LOG_GRID[0]
    logprior = -0.5 * (g / prior_sd) ** 2 - np.log(prior_sd * np.sqrt(2 * np.pi)) + np.log(dx)
    log_mix = logsumexp(np.where(ok[:, None], loglik + logprior, 0.0), axis=1, keepdims=True)
    inside = (loglik > log_mix + np.log(alpha)) & ok[:, None]
    any_in = inside.any(1)
    first = np.argmax(inside, axis=1)
    last = inside.shape[1] - 1 - np.argmax(inside[:, ::-1], axis=1)
    low = np.where(first == 0, 0.0, np.exp(_LOG_GRID[first] / 2))
    high = np.where(last == _LOG_GRID.size - 1, np.inf, np.exp(_LOG_GRID[last] / 2))
    # no grid point inside: the interval is narrower than the grid's step; report the estimate
    low, high = np.where(any_in, low, est), np.where(any_in, high, est)
    low, high = np.where(ok, low, 0.0), np.where(ok, high, np.inf)
    return est, low, high


def _prefix_ss(x: np.ndarray) -> np.ndarray:
    """Sums of squares about each prefix's mean, by Welford's update (no cancellation);
    over the last axis."""
    x = np.asarray(x, dtype=float)
    t = np.arange(1, x.shape[-1] + 1)
    mean = np.cumsum(x, axis=-1) / t
    ss = np.zeros_like(mean)
    for i in range(1, x.shape[-1]):
        ss[..., i] = ss[..., i - 1] + (x[..., i] - mean[..., i - 1]) * (x[..., i] - mean[..., i])
    return ss


@checked(a=Array(ndim=1), b=Array(ndim=1), alpha=Float(0, 1, lo_open=True, hi_open=True),
         prior_sd=Float(0, lo_open=True))
def std_ratio_confidence_sequence(a: np.ndarray, b: np.ndarray, *, alpha: float = ALPHA,
                                  prior_sd: float = 1.0) -> CSPath:
    """A confidence sequence for ``std(a) / std(b)`` after each prefix of seeds, for two
    independent Gaussian samples with unknown means and variances (a method's accuracy across
    seeds against another's). ``a`` and ``b`` are in seed order, of one length (a seed adds
    one value to each); the path starts at two seeds. ``prior_sd``: the standard
    deviation of the normal mixture over the log variance ratio (1: std ratios of 0.6 to 1.6
    within one sd)."""
    if a.size != b.size:
        raise ValueError(f"a and b must have one length, a value each per seed (got {a.size} "
                         f"and {b.size})")
    n = a.size
    if n < 2:
        raise ValueError(f"a and b need at least 2 values each (got {n}): a standard "
                         "deviation needs two")
    a, b = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    t = np.arange(1, n + 1)
    est, lo, hi = _ratio_intervals(t, t, _prefix_ss(a), _prefix_ss(b), alpha, prior_sd)
    # from two seeds on: one value has no spread (its ratio is 0/0)
    return CSPath(t[1:], est[1:], lo[1:], hi[1:])


@checked(x=Array(ndim=1), lower=Float(), upper=Float(),
         alpha=Float(0, 1, lo_open=True, hi_open=True), c=Float(0, 1, lo_open=True, hi_open=True))
def eb_confidence_sequence(x: np.ndarray, *, lower: float, upper: float, alpha: float = ALPHA,
                           c: float = 0.5) -> CSPath:
    """The predictable plug-in empirical-Bernstein confidence sequence (Waudby-Smith & Ramdas
    2024, Theorem 2) for the mean of observations known to lie in ``[lower, upper]``; valid
    with no distributional assumption beyond the range. Intervals are intersected over time
    (still valid). Its width cannot fall below about ``(upper - lower) log(2/alpha) / (c n)``."""
    if not upper > lower:
        raise ValueError(f"upper must be > lower (got lower={lower:g}, upper={upper:g})")
    x = np.asarray(x, dtype=float)
    if np.any(x < lower) or np.any(x > upper):
        raise ValueError(f"x must lie in [lower, upper] = [{lower:g}, {upper:g}] (got "
                         f"[{x.min():.6g}, {x.max():.6g}])")
    span = upper - lower
    z = (x - lower) / span
    t = np.arange(1, z.size + 1, dtype=float)
    mu_hat = (0.5 + np.cumsum(z)) / (t + 1)
    var_hat = (0.25 + np.cumsum((z - mu_hat) ** 2)) / (t + 1)
    prev_mu = np.concatenate([[0.5], mu_hat[:-1]])
    prev_var = np.concatenate([[0.25], var_hat[:-1]])
    lam = np.minimum(np.sqrt(2 * np.log(2 / alpha) / (prev_var * t * np.log1p(t))), c)
    psi = (-np.log1p(-lam) - lam) / 4
    v = 4 * (z - prev_mu) ** 2
    centre = np.cumsum(lam * z) / np.cumsum(lam)
    hw = (np.log(2 / alpha) + np.cumsum(v * psi)) / np.cumsum(lam)
    low = np.maximum.accumulate(np.maximum(centre - hw, 0.0))
    high = np.minimum.accumulate(np.minimum(centre + hw, 1.0))
    est = np.cumsum(z) / t
    return CSPath(t.astype(int), lower + span * est, lower + span * low, lower + span * high)


def as_band(band, *, null: float, scale: str = "linear") -> Band | None:
    """``band`` as a :class:`~boundbench.framework.bands.Band`: a Band, its dict (a probe's
    JSON), a half-width ``h > 0`` (``0 +- h`` for a difference, ``1 +- h`` for a ratio with
    ``scale='ratio'``) or ``None``."""
    if band is None or isinstance(band, Band):
        return band
    if isinstance(band, dict):
        return Band(**band)
    if isinstance(band, bool) or not isinstance(band, int | float) or not band > 0 \
            or not np.isfinite(band):
        raise ValueError(f"band must be a positive number, a Band or None (got {band!r})")
    if scale not in ("linear", "ratio"):
        raise ValueError(f"scale must be 'linear' or 'ratio' (got {scale!r})")
    if null not in (0.0, 1.0):
        raise ValueError(f"a band is around a difference's null 0 or a ratio's null 1 (got "
                         f"null={null:g})")
    if scale == "ratio" and band >= 1:
        raise ValueError(f"a ratio band must be below 1 (got {band!r})")
    lo, hi = (null - band, null + band) if scale == "linear" else (null * (1 - band),
                                                                     null * (1 + band))
    return Band(lo, hi, "difference" if null == 0 else "ratio", "given",
                f"{null:g} +- {band:g}" if scale == "linear" else f"{null:g} x (1 +- {band:g})")


@checked(low=Real(), high=Real(), null=Float(), expected=Choice("increase", "decrease"))
def decide(low: float, high: float, *, null: float, expected: str,
           band=None, scale: str = "linear") -> str | None:
    """What an interval decides about an effect expected to ``increase`` or ``decrease`` from
    ``null``. Without a band: ``supported`` when it lies wholly on the expected side,
    ``contradicted`` when wholly on the other, else ``None`` (go on). With a no-effect
    ``band`` (a :class:`~boundbench.framework.bands.Band`, or a half-width: ``null +- band``,
    ``null * (1 +- band)`` with ``scale='ratio'``) the four outcomes of
    :func:`~boundbench.framework.bands.band_outcome`: ``no-effect`` inside it, ``supported`` or
    ``contradicted`` wholly beyond it, ``None`` across an edge."""
    if scale not in ("linear", "ratio"):
        raise ValueError(f"scale must be 'linear' or 'ratio' (got {scale!r})")
    if not low <= high:
        raise ValueError(f"low must be <= high (got {low:g} > {high:g})")
    b = as_band(band, null=null, scale=scale)
    if b is None:
        up, down = low > null, high < null
        if up or down:
            return "supported" if up == (expected == "increase") else "contradicted"
        return None
    return band_outcome(low, high, b, expected=expected)


@checked(low=Array(ndim=1, finite=False), high=Array(ndim=1, finite=False), null=Float(),
         expected=Choice("increase", "decrease"), scale=Choice("linear", "ratio"))
def first_decision(low: np.ndarray, high: np.ndarray, *, null: float, expected: str,
                   band=None, scale: str = "linear") -> tuple[str | None, int]:
    """The first decision (:func:`decide`) along a confidence sequence and the number of
    observations it took; ``(None, len(low))`` when none is reached. What the stopping rule
    does: look after every seed, stop at the first decision."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    if low.shape != high.shape:
        raise ValueError(f"low and high must have one shape (got {low.shape} and {high.shape})")
    b = as_band(band, null=null, scale=scale)
    if b is None:
        hit = (low > null) | (high < null)
    else:  # band_outcome's three decisions, elementwise
        hit = ((b.low <= low) & (high <= b.high)) | (low > b.high) | (high < b.low)
    if not hit.any():
        return None, int(low.size)
    i = int(np.argmax(hit))
    return decide(float(low[i]), float(high[i]), null=null, expected=expected, band=b,
                  scale=scale), i + 1


def _projected(n: int, *, estimate: float, spread: float, kind: str,
               alpha: float) -> tuple[float, float, str]:
    """The interval after ``n`` seeds if the estimate and spread stayed as they are."""
    if kind == "mean":
        hw = float(_t_halfwidth(np.array([n]), np.array([spread ** 2 * (n - 1)]), alpha,
                                1.0)[0])
        return estimate - hw, estimate + hw, "linear"
    ssb = max(spread, 1e-300) ** 2 * (n - 1)
    _, lows, highs = _ratio_intervals(np.array([n]), np.array([n]),
                                      np.array([estimate ** 2 * ssb]), np.array([ssb]), alpha,
                                      1.0)
    return float(lows[0]), float(highs[0]), "ratio"


@checked(n=Int(1), n_max=Int(1), estimate=Float(), spread=Float(0),
         null=Float(), alpha=Float(0, 1, lo_open=True, hi_open=True),
         kind=Choice("mean", "std_ratio"))
def futile(*, n: int, n_max: int, estimate: float, spread: float, null: float,
           kind: str, band=None, alpha: float = ALPHA) -> bool:
    """Can the seeds left not decide? The interval the sequence would give after ``n_max``
    seeds if the estimate and the spread stayed as they are now (``spread``: the sample
    standard deviation for ``kind='mean'``, the ratio's ``s_b`` for ``kind='std_ratio'``, whose
    ``estimate`` is then the std ratio) is projected; the claim is futile when that interval
    would still neither exclude ``null`` nor fit in the band. Stopping for futility decides
    nothing, so it costs no validity."""
    if n_max < n:
        raise ValueError(f"n_max must be >= n (got n={n}, n_max={n_max})")
    return seeds_to_decide(n=n_max, n_max=n_max, estimate=estimate, spread=spread, null=null,
                           kind=kind, band=band, alpha=alpha) is None


@checked(n=Int(1), n_max=Int(1), estimate=Float(), spread=Float(0),
         null=Float(), alpha=Float(0, 1, lo_open=True, hi_open=True),
         kind=Choice("mean", "std_ratio"))
def seeds_to_decide(*, n: int, n_max: int, estimate: float, spread: float, null: float,
                    kind: str, band=None, alpha: float = ALPHA) -> int | None:
    """The fewest seeds, from ``n`` up to ``n_max``, at which the projected interval (see
    :func:`futile`) decides; ``None`` when none does. What a budget allocates by."""
    if n_max < n:
        raise ValueError(f"n_max must be >= n (got n={n}, n_max={n_max})")
    band = as_band(band, null=null, scale="linear" if kind == "mean" else "ratio")

    def decides(k: int) -> bool:
        low, high, scale = _projected(k, estimate=estimate, spread=spread, kind=kind,
                                      alpha=alpha)
        return bool(np.isfinite(low) and np.isfinite(high) and decide(
            low, high, null=null, expected="increase", band=band, scale=scale) is not None)

    if not decides(n_max):
        return None
    lo, hi = n, n_max  # the projected width shrinks with k: bisect for the first that decides
    while lo < hi:
        mid = (lo + hi) // 2
        if decides(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


@checked(effect=Float(), sd=Float(0, lo_open=True), alpha=Float(0, 1, lo_open=True, hi_open=True),
         power=Float(0, 1, lo_open=True, hi_open=True))
def fixed_n(effect: float, sd: float, *, alpha: float = ALPHA, power: float = 0.8) -> int:
    """Seeds a fixed-size paired t-test needs to detect a mean ``effect`` with standard
    deviation ``sd`` at two-sided level ``alpha`` and the given power (noncentral t, exact),
    the comparison for the sequential rule's seed count."""
    from scipy import stats

    if effect == 0:
        raise ValueError("effect must be nonzero (a zero effect is never detected)")

    def enough(n: int) -> bool:
        df = n - 1
        crit = stats.t.ppf(1 - alpha / 2, df)
        nc = abs(effect) / sd * np.sqrt(n)
        return bool(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc) >= power)

    # the power grows with n: the smallest n that reaches it by doubling, then bisection (a
    # scan one seed at a time took seconds for small effects)
    top = 99_999
    if enough(2):
        return 2
    lo, hi = 2, 4  # enough(lo) is False
    while not enough(min(hi, top)):
        if hi >= top:
            raise ValueError(f"effect/sd = {effect / sd:.3g} needs over 100,000 seeds")
        lo, hi = hi, hi * 2
    hi = min(hi, top)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def duration_seconds(budget: str) -> float:
    """Seconds in a duration such as ``90m``, ``1h30m``, ``45s``, ``2h`` or ``600`` (seconds);
    a ValueError naming what is wrong otherwise."""
    import re

    text = budget
    if not isinstance(text, str):
        raise TypeError(f"budget must be a duration text such as '90m' (got {text!r})")
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        total = float(s)
    else:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m(?:in)?)?\s*"
                             r"(?:(\d+(?:\.\d+)?)s)?", s)
        if not s or parts is None or not any(parts.groups()):
            raise ValueError(f"budget must be a duration such as 90m, 1h30m, 45s or 600 (got "
                             f"{text!r})")
        h, m, sec = (float(g) if g else 0.0 for g in parts.groups())
        total = 3600 * h + 60 * m + sec
    if total <= 0:
        raise ValueError(f"budget must be a positive duration (got {text!r})")
    return total


PROJECTION_CAP = 1000  # seeds: how far a verdict's projection looks (past it, "more than")

# The measured ratio of a seed's fine-tuning time on this project's 2-core CPU machine to that
# on one GPU, by grid (its key without the seed count, StabilityGrid.key(seeds=False)): the
# standard grids' seconds a seed in the 90-minute CPU audit (docs/results-log.md, issue 39)
# against the budgeted standard audit on one NVIDIA H200 (results log, 2026-11-26). A grid
# without an entry projects CPU time only and says so.
GPU_SPEEDUP: dict[str, tuple[float, str]] = {
    "6fc5c17e827f": (43.03 / 3.272, "one NVIDIA H200"),  # MHLoss/MMR/SURT/head-vs-full grid
    "c72db0e5a993": (104.1 / 23.72, "one NVIDIA H200"),  # JACHESS/UEGR grid
}


def probe(kind: str, *, path: CSPath, null: float, expected: str, band,
          spread: float, what: str) -> dict:
    """One probe of a claim as a budgeted audit tracks it: the sequence's last interval, the
    first decision along it (and at how many seeds), what a projection needs (kind, estimate,
    spread, null, band: a :class:`~boundbench.framework.bands.Band`, a half-width or None) and,
    with a band, the seeds the sequence would need at the paper's effect and at no effect
    (at this spread, up to :data:`PROJECTION_CAP`; ``None``: more). JSON-ready."""
    scale = "linear" if kind == "mean" else "ratio"
    b = as_band(band, null=null, scale=scale)
    decision, at = first_decision(path.low, path.high, null=null, expected=expected, band=b,
                                  scale=scale)
    est = float(path.estimate[-1])

    def num(v: float) -> float | None:
        return float(v) if np.isfinite(v) else None

    out = {"what": what, "kind": kind, "n": int(path.n[-1]), "estimate": num(est),
           "spread": num(spread), "null": null, "expected": expected,
           "band": b.to_dict() if b is not None else None,
           "cs_low": num(path.low[-1]), "cs_high": num(path.high[-1]),
           "decision": decision, "decided_at": at if decision else None}
    if b is not None and decision is not None:
        # how near the last interval is to the band's edge (the first decided one, where the
        # last straddles an edge again): a decision that close is flagged fragile
        m = band_margin(float(path.low[-1]), float(path.high[-1]), b)
        out["band_margin"] = m if m is not None else band_margin(
            float(path.low[at - 1]), float(path.high[at - 1]), b)
    if b is not None and np.isfinite(spread) and spread > 0:
        def need(effect: float) -> int | None:
            return seeds_to_decide(n=2, n_max=PROJECTION_CAP, estimate=effect, spread=spread,
                                   null=null, kind=kind, band=b)

        out["seeds_at_paper_effect"] = (need(b.paper_effect) if b.paper_effect is not None
                                        else None)
        out["seeds_at_no_effect"] = need(null)
    return out


def projected_seeds(p: dict, *, cap: int = PROJECTION_CAP) -> int | None:
    """The seeds at which an undecided probe's sequence would decide if its estimate and
    spread held (:func:`seeds_to_decide` up to ``cap``); ``None`` when no count up to ``cap``
    does, or the probe is decided or has too few seeds to project."""
    if p.get("decision") or p.get("estimate") is None or p.get("spread") is None \
            or p["n"] < 2:
        return None
    return seeds_to_decide(n=p["n"], n_max=max(cap, p["n"]), estimate=float(p["estimate"]),
                           spread=float(p["spread"]), null=float(p["null"]), kind=p["kind"],
                           band=p.get("band"))


def cost_text(seeds: int, seconds_per_seed: float | None, *, device: str | None = None,
              grid_key: str | None = None) -> str:
    """What ``seeds`` seeds per method cost at the measured seconds a seed, named by the device
    that measured them (``device``: ``"cuda"`` makes them GPU-hours, anything else CPU-hours);
    CPU-hours are also scaled to a GPU by the ratio :data:`GPU_SPEEDUP` records for the grid
    ``grid_key``, where one is recorded."""
    if seconds_per_seed is None or not np.isfinite(seconds_per_seed) or seconds_per_seed <= 0:
        return ""
    hours = seeds * seconds_per_seed / 3600
    at = f"at {seconds_per_seed:.0f} s a seed"
    if device is not None and str(device).startswith("cuda"):
        return f" (about {hours:.2g} GPU-hours here {at})"
    ratio = GPU_SPEEDUP.get(grid_key) if grid_key else None
    gpu = (f", about {hours / ratio[0]:.2g} GPU-hours on {ratio[1]} by this grid's measured "
           f"step-time ratio {ratio[0]:.3g}" if ratio else
           "; no GPU time is recorded for this grid to scale it")
    return f" (about {hours:.2g} CPU-hours here {at}{gpu})"


def probe_text(p: dict, *, seconds_per_seed: float | None = None, device: str | None = None,
               grid_key: str | None = None) -> str:
    """A probe in words: its interval, its band and where that comes from, what it decided
    (a ``no-effect`` with its sign, and "smaller than half the paper's effect" where the band
    is half the paper's effect), and, undecided, the seeds its sequence would need at the
    current estimate, at the paper's effect and at no effect, with their cost (the sequential
    count, not a fixed design's, which is smaller: a sequence pays for being valid at every
    look)."""
    from boundbench.framework.bands import PAPER, sign_inside

    lo, hi = p["cs_low"], p["cs_high"]
    iv = (f"[{lo:.4g}, {hi:.4g}]" if lo is not None and hi is not None else
          "not yet bounded (at least 5 seeds)")
    what = "mean paired change" if p["kind"] == "mean" else "std ratio"
    head = (f"{p['what']}: {what} {p['estimate']:.4g}" if p["estimate"] is not None
            else f"{p['what']}:")
    band = as_band(p.get("band"), null=float(p["null"]))
    where = {"device": device, "grid_key": grid_key}
    told = (f"decided ({p['decision']}) at {p['decided_at']} seeds" if p["decision"]
            else "not decided")
    if p["decision"] == "no-effect" and band is not None and lo is not None:
        told += f", {sign_inside(lo, hi, band)}"
        if band.rule == PAPER:
            told += ": smaller than half the paper's effect"
    if not p["decision"] and p.get("estimate") is not None and p.get("spread") is not None \
            and p["n"] >= 2:  # projected_seeds' own conditions: None then means "none decides"
        need = projected_seeds(p)
        told += (f"; at this estimate the sequence would decide at about {need} seeds"
                 + cost_text(need, seconds_per_seed, **where) if need is not None else
                 f"; at this estimate no count of seeds up to {PROJECTION_CAP} decides")
    if not p["decision"] and band is not None:
        unit = "difference" if p["kind"] == "mean" else "std ratio"
        if band.paper_effect is not None and "seeds_at_paper_effect" in p:
            k = p["seeds_at_paper_effect"]
            told += (f"; detecting the paper's {unit} {band.paper_effect:.3g} needs about {k} "
                     f"seeds per method{cost_text(k, seconds_per_seed, **where)}" if k is not None else
                     f"; detecting the paper's {unit} {band.paper_effect:.3g} needs more than "
                     f"{PROJECTION_CAP} seeds per method at this spread")
        if "seeds_at_no_effect" in p:
            k = p["seeds_at_no_effect"]
            told += (f"; showing no effect (inside the band) needs about {k} seeds"
                     f"{cost_text(k, seconds_per_seed, **where)}" if k is not None else
                     f"; showing no effect needs more than {PROJECTION_CAP} seeds at this "
                     "spread")
    bt = f", {band.text()}" if band is not None else ""
    return (f"{head}, anytime-valid 95% confidence sequence {iv} over {p['n']} seeds{bt}, "
            f"{told}")


def sequential_verdict(probes: list[dict], *, what: str, evidence: dict,
                       seconds_per_seed: float, grid_seeds: int, grid_key: str | None = None,
                       device: str | None = None):
    """The verdict of a claim judged by confidence sequences (a budgeted audit): supported when
    every probe is, contradicted when any is, no-effect when every probe lies in its band,
    else inconclusive; the evidence keeps the probes, the seeds and a seed's cost in seconds
    (what the budget allocates by), and ``grid_key``, the runs' grid without its seed count
    (claims with the same key read the same runs: seeds one of them adds are the others' too)
    and ``device``, where the runs trained (what the seconds a seed were measured on)."""
    from boundbench.framework.verdicts import Verdict, with_margin

    decisions = [p["decision"] for p in probes]
    status = ("contradicted" if "contradicted" in decisions else
              "supported" if all(d == "supported" for d in decisions) else
              "no-effect" if all(d == "no-effect" for d in decisions) else "inconclusive")
    ev = {**evidence, "sequential": {"probes": probes, "seconds_per_seed": seconds_per_seed,
                                     "grid_seeds": grid_seeds,
                                     **({"grid_key": grid_key} if grid_key else {}),
                                     **({"device": device} if device else {})}}
    # the probes that carry the decision: a contradicted one alone, or all of them
    deciding = [p for p in probes if p["decision"] == "contradicted"] \
        if status == "contradicted" else probes
    margins = [p["band_margin"] for p in deciding if p.get("band_margin") is not None]
    if status != "inconclusive" and margins:
        ev = with_margin(ev, min(margins), "band half-width")
    # each probe's text starts with its own label; the claim's is added only where it says more
    said = "; ".join(probe_text(p, seconds_per_seed=seconds_per_seed, device=device,
                                grid_key=grid_key) for p in probes)
    reason = said if all(p["what"].startswith(what) for p in probes) else f"{what}: {said}"
    return Verdict(status, reason, ev)
