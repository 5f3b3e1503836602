"""The fine-tuning claims' confidence sequences on bounded metrics, as the stopping rules read
them (:class:`~boundbench.framework.stats.sequential.CSPath`): a paired mean difference
(:func:`bounded_mean_path`) and a ratio of standard deviations (:func:`bounded_ratio_path`),
both betting sequences (Waudby-Smith & Ramdas 2024, *JRSS B* 86: 1-27) valid for any data
inside the metric's range, at every look (issue 82).

Validity: every value inside the metric's declared range (:data:`METRIC_RANGES`; checked,
never clipped), the seeds independent draws. Nothing about the shape of the data: the Gaussian
sequences these replace (:mod:`boundbench.framework.stats.sequential`) erred on 11-50% of skewed or
heavy-tailed nulls under a look after every seed. The price is power: a difference of
accuracies lives in [-1, 1] however close the runs are, and a bet is capped
(:data:`~boundbench.framework.stats.decisions.betting.CAP`), so a small effect needs many seeds
(measured per family in ``benchmarks/bench_decisions.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.stats.decisions.betting import CAP, GRID, betting_cs
from boundbench.framework.stats.sequential import ALPHA, CSPath

__all__ = ["METRIC_RANGES", "RATIO_GRID", "bounded_mean_path", "bounded_ratio_path",
           "metric_range"]

#: per-run metrics of the fine-tuning grids whose range is known (a drop of accuracy is a
#: difference of two accuracies; multiclass Brier is in [0, 2]; linear CKA in [0, 1])
METRIC_RANGES = {"test_accuracy": (0.0, 1.0), "test_f1": (0.0, 1.0), "test_mcc": (-1.0, 1.0),
                 "test_ece": (0.0, 1.0), "test_brier": (0.0, 2.0), "noise_drop": (-1.0, 1.0),
                 "corrupt_drop": (-1.0, 1.0), "cka_mean": (0.0, 1.0)}
#: candidate std ratios: 10^(k/200) for |k| <= 400 (0.01 to 100, 1 itself among them)
RATIO_GRID = 10.0 ** (np.arange(-400, 401) / 200)


def metric_range(column: str) -> tuple[float, float] | None:
    """The known range of a grid's metric column, or None (then no bounded procedure applies,
    and the claim says which procedure it used instead)."""
    return METRIC_RANGES.get(column)


def _checked(x: np.ndarray, lower: float, upper: float, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    bad = ~np.isfinite(x) | (x < lower) | (x > upper)
    if bad.any():
        raise InvalidArgument(f"{what}: {x[bad][0]!r} is outside its declared range [{lower:g}, "
                              f"{upper:g}]: a bounded-data procedure needs every value inside")
    return x


def bounded_mean_path(x: np.ndarray, *, lower: float, upper: float,
                      alpha: float = ALPHA, grid: int = GRID) -> CSPath:
    """The betting confidence sequence for the mean of ``x`` (in seed order), each value in
    ``[lower, upper]`` (a paired difference of a metric in ``[a, b]``: ``[a - b, b - a]``):
    ``P(the mean is outside the interval at some look) <= alpha``, any shape of data. ``x``
    of shape (B, n): B sequences at once; ``grid``: :func:`betting_cs`'s.

    Examples
    --------
    >>> p = bounded_mean_path(np.full(100, 0.2), lower=-1.0, upper=1.0)
    >>> bool(p.low[-1] > 0)
    True
    """
    x = _checked(x, lower, upper, "a paired difference")
    cs = betting_cs(x, lower=lower, upper=upper, alpha=alpha, grid=grid)
    est = np.cumsum(x, axis=-1) / cs.n
    # an empty set (every candidate rejected, chance at most alpha) bounds nothing
    return CSPath(cs.n, est, np.where(np.isnan(cs.low), -np.inf, cs.low),
                  np.where(np.isnan(cs.high), np.inf, cs.high))


def bounded_ratio_path(a: np.ndarray, b: np.ndarray, *, lower: float, upper: float,
                       alpha: float = ALPHA, at: Sequence[float] = ()) -> CSPath:
    """A confidence sequence for ``std(a) / std(b)``, each value in ``[lower, upper]``, valid
    at every look for any shape of data in that range.

    Re-posed on bounded quantities: half the squared difference of two independent draws has
    the variance as its mean, so on consecutive pairs of seeds ``u = (a1 - a2)^2 / 2`` and
    ``v = (b1 - b2)^2 / 2`` (both in ``[0, R^2 / 2]``, ``R = upper - lower``), the ratio is
    ``rho`` exactly when ``z = u - rho^2 v`` has mean 0. Each candidate ``rho`` (of
    :data:`RATIO_GRID`, plus ``at``: a band's edges) is tested by betting on ``z``
    (hedged capital, predictable plug-in bets, :func:`~boundbench.framework.stats.decisions.betting.
    _rejects`); the true ratio's capital reaches ``1 / alpha`` with probability at most
    ``alpha``. The interval is the hull of the candidates not rejected so far (running
    intersection), widened to the next candidate on each side (0 and infinity past the grid's
    ends); a word read off it at 1 or at a band's edge errs at most ``alpha`` (those are
    candidates). ``n``: seeds of each method (two a look).
    """
    a = _checked(a, lower, upper, "a seed's value")
    b = _checked(b, lower, upper, "a seed's value")
    k = min(a.size, b.size) // 2
    if k < 1:
        raise InvalidArgument("a std ratio's sequence needs at least 2 seeds of each method")
    u = (a[0:2 * k:2] - a[1:2 * k:2]) ** 2 / 2
    v = (b[0:2 * k:2] - b[1:2 * k:2]) ** 2 / 2
    rho = np.unique(np.r_[RATIO_GRID, np.asarray(at, dtype=float)])
    r2 = rho ** 2
    top = (upper - lower) ** 2 / 2
    lo_z, hi_z = -r2 * top, np.full_like(r2, top)
    z = u[None, :] - r2[:, None] * v[None, :]  # (candidates, looks)
    y = (z - lo_z[:, None]) / (hi_z - lo_z)[:, None]
    m0 = -lo_z / (hi_z - lo_z)  # the rescaled 0
    rejected = np.maximum.accumulate(_rejects_each(y, m0, alpha), axis=1)  # (candidates, looks)
    kept = ~rejected
    first = np.argmax(kept, axis=0)
    last = rho.size - 1 - np.argmax(kept[::-1], axis=0)
    empty = ~kept.any(axis=0)
    ext = np.r_[0.0, rho, np.inf]  # a candidate's neighbours, 0 and inf past the ends
    low = np.where(empty, np.nan, ext[first])  # ext[first] is rho[first - 1]
    high = np.where(empty, np.nan, ext[last + 2])
    n = 2 * np.arange(1, k + 1)
    sa = np.sqrt(np.cumsum(u) / np.arange(1, k + 1))
    sb = np.sqrt(np.cumsum(v) / np.arange(1, k + 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(sb > 0, sa / sb, np.nan)
    return CSPath(n, est, np.where(np.isnan(low), 0.0, low), np.where(np.isnan(high), np.inf, high))


def _rejects_each(y: np.ndarray, m0: np.ndarray, alpha: float) -> np.ndarray:
    """Per row ``i`` of ``y`` (unit scale), whether the hedged capital against the mean
    ``m0[i]`` has reached ``1 / alpha`` at each look: the test of
    :func:`~boundbench.framework.stats.decisions.betting._rejects` with a sequence per candidate."""
    t = np.arange(1, y.shape[-1] + 1, dtype=np.float64)
    sq = np.cumsum((y - (0.5 + np.cumsum(y, axis=-1)) / (t + 1)) ** 2, axis=-1)
    dev = np.concatenate([np.zeros_like(sq[..., :1]), sq[..., :-1]], axis=-1)
    lam = np.sqrt(2 * np.log(2 / alpha) / ((0.25 + dev) * np.log1p(t)))
    m = m0[:, None]
    with np.errstate(divide="ignore"):
        up = np.minimum(lam, CAP / m)
        down = np.minimum(lam, CAP / (1 - m))
    step = y - m
    log_k = np.maximum(np.cumsum(np.log1p(up * step), axis=-1),
                       np.cumsum(np.log1p(-down * step), axis=-1)) - np.log(2)
    return log_k >= np.log(1 / alpha)
