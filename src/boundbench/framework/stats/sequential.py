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
after each prefix (:class:`CSPath`); the stopping rules on them (``decide``, ``futile``, the
verdict) are in :mod:`boundbench.framework.stats.stopping`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Float, checked

ALPHA = 0.05


class CSPath(NamedTuple):
    """A confidence sequence after each prefix of the data: ``n[i]`` observations (per sample),
    the point ``estimate`` and the interval ``[low, high]`` (``-inf``/``inf`` where the data
    cannot bound it yet)."""

    n: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray


def t_halfwidth(t: np.ndarray, ss: np.ndarray, alpha: float, rho: float) -> np.ndarray:
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
    hw = t_halfwidth(t, _prefix_ss(x), alpha, rho)
    return CSPath(t.astype(int), mean, mean - hw, mean + hw)


_LOG_GRID = np.linspace(-7.0, 7.0, 1401)  # log variance ratio, steps of 0.01: std ratios 0.03-33


def ratio_intervals(na: np.ndarray, nb: np.ndarray, ssa: np.ndarray, ssb: np.ndarray,
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
        raise InvalidArgument(f"a and b must have one length, a value each per seed (got {a.size} "
                              f"and {b.size})")
    n = a.size
    if n < 2:
        raise InvalidArgument(f"a and b need at least 2 values each (got {n}): a standard "
                              "deviation needs two")
    a, b = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    t = np.arange(1, n + 1)
    est, lo, hi = ratio_intervals(t, t, _prefix_ss(a), _prefix_ss(b), alpha, prior_sd)
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
        raise InvalidArgument(f"upper must be > lower (got lower={lower:g}, upper={upper:g})")
    x = np.asarray(x, dtype=float)
    if np.any(x < lower) or np.any(x > upper):
        raise InvalidArgument(f"x must lie in [lower, upper] = [{lower:g}, {upper:g}] (got "
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
