"""Betting confidence sequences for the mean of bounded observations.

Problem: ``x_1, x_2, ...`` independent, each in a known interval ``[lower, upper]``, with a
common mean ``m`` (identically distributed is not needed: a common conditional mean is). A
confidence sequence is a sequence of intervals ``C_t`` with ``P(m in C_t for every t) >=
1 - alpha``: a decision read off ``C_t`` at any look, however the looks and the stopping are
chosen (after every seed, until the budget ends, when it looks good), errs with probability at
most ``alpha``. Nothing else is assumed: no normality, no variance, no tail.

Guarantee (Waudby-Smith & Ramdas 2024, *JRSS B* 86: 1-27, Theorem 3 with the predictable
plug-in bets of their eq. (26)): for each candidate ``m`` the hedged capital
``K_t(m) = max(K+_t(m), K-_t(m)) / 2``, with ``K+_t(m) = prod_i (1 + l+_i(m) (y_i - m))`` and
``K-_t(m) = prod_i (1 - l-_i(m) (y_i - m))`` on the rescaled ``y_i in [0, 1]``, is at most the
mean of two nonnegative martingales under ``m``; by Ville's inequality it ever reaches
``1 / alpha`` with probability at most ``alpha``. ``C_t`` is the set of ``m`` it has not
rejected, intersected over the looks so far (still valid; the intervals never widen).

Computed on a grid of candidate means (:data:`GRID` points of ``[lower, upper]``); the interval
reported is the hull of the grid points not rejected, widened by one grid step on each side, so
it contains the exact set's hull.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from boundbench.errors import InvalidArgument

__all__ = ["GRID", "BettingPath", "betting_cs", "ever_rejects"]

GRID = 2001  # candidate means on [lower, upper]
CAP = 0.5  # the bets' cap, c / m and c / (1 - m): WSR's c = 1/2, a capital never below half


class BettingPath(NamedTuple):
    """The confidence sequence after each observation: ``low[..., t - 1], high[..., t - 1]``
    is ``C_t`` (the running intersection), ``n`` the looks."""

    n: np.ndarray
    low: np.ndarray
    high: np.ndarray


def betting_cs(x: np.ndarray, *, lower: float, upper: float, alpha: float = 0.05,
               grid: int = GRID) -> BettingPath:
    """The betting confidence sequence for the common mean of ``x`` (in the order drawn).

    Parameters
    ----------
    x : array of shape (n,) or (B, n)
        The observations, each in ``[lower, upper]`` (checked: a value outside is refused,
        never clipped); a batch: B sequences at once, each its own confidence sequence.
    lower, upper : float
        The known range of every observation (``lower < upper``).
    alpha : float, default 0.05
        The chance that the sequence ever misses the mean.
    grid : int, default GRID
        Candidate means on the range (a coarser grid widens the interval by its step: what a
        projection uses for speed).

    Returns
    -------
    BettingPath
        The interval after each observation.

    References
    ----------
    I. Waudby-Smith and A. Ramdas, Estimating means of bounded random variables by betting,
    JRSS B 86 (2024) 1-27: Theorem 3 (hedged capital), eq. (26) (predictable plug-in bets).

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.framework.stats.decisions import betting_cs
    >>> p = betting_cs(np.full(200, 0.3), lower=0.0, upper=1.0)
    >>> bool(p.low[-1] < 0.3 < p.high[-1]) and bool(p.high[-1] - p.low[-1] < 0.2)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim not in (1, 2):
        raise InvalidArgument(f"x must be one sequence (n,) or a batch (B, n) (got shape "
                              f"{x.shape})")
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise InvalidArgument(f"the range must be finite with lower < upper (got [{lower}, "
                              f"{upper}])")
    if not 0 < alpha < 1:
        raise InvalidArgument(f"alpha must be in (0, 1) (got {alpha})")
    if x.shape[-1] == 0:
        raise InvalidArgument("no observations to decide on")
    inside = np.isfinite(x) & (x >= lower) & (x <= upper)
    if not inside.all():
        raise InvalidArgument(f"an observation is outside its declared range [{lower}, "
                              f"{upper}] (got {x[~inside][0]!r}): a bounded-data procedure "
                              "needs it")
    y = (x - lower) / (upper - lower)
    if not (isinstance(grid, int) and grid >= 3):
        raise InvalidArgument(f"grid must be an integer >= 3 (got {grid!r})")
    m = np.linspace(0.0, 1.0, grid)
    t = np.arange(1, y.shape[-1] + 1)
    kept = ~np.maximum.accumulate(_rejects(y, m, alpha), axis=-2)  # running intersection
    width = 1.0 / (grid - 1)
    first = np.argmax(kept, axis=-1)
    last = grid - 1 - np.argmax(kept[..., ::-1], axis=-1)
    empty = ~kept.any(axis=-1)  # every candidate rejected: an event of chance at most alpha
    low = np.where(empty, np.nan, np.maximum(m[first] - width, 0.0))
    high = np.where(empty, np.nan, np.minimum(m[last] + width, 1.0))
    scale = upper - lower
    return BettingPath(t, lower + scale * low, lower + scale * high)


def _rejects(y: np.ndarray, m: np.ndarray, alpha: float) -> np.ndarray:
    """Whether the hedged capital of each candidate mean ``m`` (unit scale) has reached
    ``1 / alpha`` at each look: shape ``y.shape + m.shape``."""
    t = np.arange(1, y.shape[-1] + 1, dtype=np.float64)
    # predictable: the i-th bet uses the variance estimate of the observations before it
    sq = np.cumsum((y - (0.5 + np.cumsum(y, axis=-1)) / (t + 1)) ** 2, axis=-1)
    dev = np.concatenate([np.zeros_like(sq[..., :1]), sq[..., :-1]], axis=-1)
    lam = np.sqrt(2 * np.log(2 / alpha) / ((0.25 + dev) * np.log1p(t)))[..., None]
    with np.errstate(divide="ignore"):
        up = np.minimum(lam, CAP / m)
        down = np.minimum(lam, CAP / (1 - m))
    step = y[..., None] - m
    log_k = np.maximum(np.cumsum(np.log1p(up * step), axis=-2),
                       np.cumsum(np.log1p(-down * step), axis=-2)) - np.log(2)
    return log_k >= np.log(1 / alpha)


def ever_rejects(x: np.ndarray, *, value: float, lower: float, upper: float,
                 alpha: float = 0.05) -> np.ndarray:
    """Whether :func:`betting_cs`'s sequence for ``x`` (shape (n,) or (B, n)) ever excludes
    ``value``, computed at that one candidate: where ``value`` is the true mean, the event
    every wrong word needs (its chance is at most ``alpha``), so its frequency over nulls is
    an upper bound of the procedure's error rate (``benchmarks/bench_decisions.py``)."""
    x = np.asarray(x, dtype=np.float64)
    y = (x - lower) / (upper - lower)
    m = np.array([(value - lower) / (upper - lower)])
    return np.asarray(_rejects(y, m, alpha)[..., 0].any(axis=-1))
