"""A mean claim on unbounded values re-posed on a bounded quantity (issue 82): the share of
units (datasets, held-out inputs) on which the claimed direction holds, among those where it
holds or is reversed. No procedure decides the mean of unbounded values at a guaranteed level
from a finite sample (Bahadur & Savage 1956, *Ann. Math. Statist.* 27: 1115-1122), so a claim
whose mean reading cannot be decided validly is also read this way, as a separate reading that
says what it is: never a test of the median presented as the mean's.

Units with the claimed direction are counted against units with the reversed one (ties, a unit
exactly at the null, dropped), and the share's exact (Clopper-Pearson) 95% interval is read
against 1/2: exact for any shape of the values, the units being independent draws, all of
them drawn before the decision (a fixed number of units, not a sequence looked at as it grows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument

__all__ = ["SHARE_VALIDITY", "ShareDecision", "exact_size", "share_decision", "share_reach",
           "share_words"]

SHARE_VALIDITY = ("the units are independent draws (the datasets of a seed, the held-out inputs "
                  "of the trained networks), all drawn before the decision: the count in the "
                  "claimed direction is then binomial whatever the shape of the values, and the "
                  "exact interval misses the share with chance at most alpha")
PROCEDURE = "the share's exact (Clopper-Pearson) interval, ties dropped"


def _counts(x: np.ndarray, null: float, expected_sign: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        raise InvalidArgument("x must be finite: a unit with a non-finite value has no direction")
    if expected_sign not in (-1, 1):
        raise InvalidArgument(f"expected_sign must be -1 or 1 (got {expected_sign!r})")
    d = expected_sign * (x - null)
    return np.sum(d > 0, axis=-1), np.sum(d != 0, axis=-1)


def _interval(k: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import beta

    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - alpha / 2, k + 1, n - k), 1.0)
    return np.where(n > 0, low, 0.0), np.where(n > 0, high, 1.0)


def _words(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return np.where(low > 0.5, "supported", np.where(high < 0.5, "contradicted", "inconclusive"))


@dataclass(frozen=True)
class ShareDecision:
    """The share reading's outcome: ``word`` (supported: the claimed direction is the more
    likely; contradicted: the reversed one; else inconclusive), the share of units in the
    claimed direction among the untied, its interval, the units counted (``n``, ties
    excluded; ``ties``), the procedure and its validity condition."""

    word: str
    share: float
    low: float
    high: float
    n: int
    ties: int
    procedure: str
    validity: str

    def evidence(self) -> dict[str, Any]:
        return {"share": self.share, "share_ci": [self.low, self.high], "units": self.n,
                "ties": self.ties, "procedure": self.procedure, "validity": self.validity}


def share_decision(x: np.ndarray, *, null: float, expected_sign: int,
                   alpha: float = 0.05) -> ShareDecision:
    """The share of ``x``'s units in the claimed direction from ``null`` (ties dropped), its
    exact interval read against 1/2.

    Parameters
    ----------
    x : array of shape (n,)
        One value per unit.
    null : float
        The value the claim's direction is measured from.
    expected_sign : {-1, 1}
        The claimed direction.
    alpha : float, default 0.05
        The interval misses the share with chance at most ``alpha``.

    Returns
    -------
    ShareDecision

    References
    ----------
    C. J. Clopper and E. S. Pearson, The use of confidence or fiducial limits illustrated in
    the case of the binomial, Biometrika 26 (1934) 404-413.

    Examples
    --------
    >>> import numpy as np
    >>> share_decision(np.linspace(1.0, 3.0, 12), null=0.9, expected_sign=1).word
    'supported'
    """
    if not 0 < alpha < 1:
        raise InvalidArgument(f"alpha must be in (0, 1) (got {alpha})")
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise InvalidArgument(f"x must be one non-empty sequence (got shape {x.shape})")
    k, n = _counts(x, null, expected_sign)
    low, high = _interval(k, n, alpha)
    share = float(k / n) if n else float("nan")
    return ShareDecision(str(_words(low, high)), share, float(low), float(high), int(n),
                         int(x.size - n), PROCEDURE, SHARE_VALIDITY)


def share_words(x: np.ndarray, *, null: float, expected_sign: int,
                alpha: float = 0.05) -> np.ndarray:
    """:func:`share_decision`'s words for a batch ``x`` of shape (B, n) at once (what a
    benchmark or a calibration runs)."""
    k, n = _counts(np.atleast_2d(x), null, expected_sign)
    return _words(*_interval(k, n, alpha))


def exact_size(n: int, alpha: float = 0.05) -> float:
    """The share decision's exact chance of a word (supported or contradicted) at ``n`` untied
    units when the share is 1/2: the binomial probability of the counts whose interval excludes
    1/2, computed, not simulated (at most ``alpha``; below it, the count being discrete).

    Examples
    --------
    >>> round(exact_size(12), 4)  # counts 0-2 and 10-12 of 12
    0.0386
    """
    from scipy.stats import binom

    if n < 1:
        return 0.0
    k = np.arange(n + 1)
    low, high = _interval(k, np.full_like(k, n), alpha)
    return float(binom.pmf(k, n, 0.5)[(low > 0.5) | (high < 0.5)].sum())


def share_reach(n: int, alpha: float = 0.05, power: float = 0.8) -> float | None:
    """The smallest share (in the claimed direction, among untied units) that ``n`` units
    decide ``supported`` with chance at least ``power``, computed from the binomial; None where
    no share up to 1 does (too few units).

    Examples
    --------
    >>> share_reach(12) is not None and share_reach(12) > share_reach(100)
    True
    """
    from scipy.stats import binom

    if n < 1:
        return None
    k = np.arange(n + 1)
    low, _ = _interval(k, np.full_like(k, n), alpha)
    first = np.flatnonzero(low > 0.5)
    if not first.size:
        return None
    grid = np.linspace(0.5, 1.0, 501)
    ok = binom.sf(first[0] - 1, n, grid) >= power
    return float(grid[np.argmax(ok)]) if ok.any() else None
