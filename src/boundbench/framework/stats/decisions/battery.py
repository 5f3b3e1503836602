"""The battery of null shapes every calibrated decision is also checked on (issue 82 items 2 and
3): six families of noise the claims' data meet, each standardized to mean 0 and variance 1.

A procedure calibrated on resamples of a claim's own values meets only the shape those few
values show (12 values have no tail beyond their extremes). Each wrapper of
:mod:`~boundbench.framework.stats.calibrated` therefore also builds data of the claim's own sizes
and scale whose noise is drawn from each family below (its ``family`` hook): the procedure's
false-decision rate there admits it or not (the upper end of every family's interval at most
alpha plus a point, as on its own nulls), and its reach there is the smallest detectable effect
"under the worst family". The families, from issue 82's measurement:

- ``normal``;
- ``t3``: Student's t with 3 degrees of freedom (heavy tails, finite variance);
- ``exponential``: skewed;
- ``lognormal``: sigma 1, strongly skewed;
- ``failed runs``: 85% N(0, 1), 15% N(-6, 0.5), the bimodal shape of seeds of which some fail;
- ``ties``: Poisson(0.6), most values equal.

``benchmarks/bench_decisions.py`` draws its nulls from the same functions.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from boundbench.errors import InvalidArgument

__all__ = ["FAMILIES", "median", "noise"]

#: the battery's families, in the order its rates and reaches are reported
FAMILIES = ("normal", "t3", "exponential", "lognormal", "failed runs", "ties")

_LOGNORMAL_SD = float(np.sqrt((np.e - 1) * np.e))
_FAILED_MEAN = 0.15 * -6.0
_FAILED_SD = float(np.sqrt(0.85 * 1.0 + 0.15 * (0.25 + 36.0) - _FAILED_MEAN**2))


def noise(family: str, rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Draws of ``family``'s noise, mean 0 and variance 1 exactly (in the population).

    >>> import numpy as np
    >>> x = noise("lognormal", np.random.default_rng(0), 200_000)
    >>> bool(abs(x.mean()) < 0.02 and abs(x.var() - 1) < 0.1)
    True
    """
    if family == "normal":
        return rng.standard_normal(shape)
    if family == "t3":
        return rng.standard_t(3, shape) / np.sqrt(3.0)
    if family == "exponential":
        return rng.exponential(1.0, shape) - 1.0
    if family == "lognormal":
        return (rng.lognormal(0.0, 1.0, shape) - np.exp(0.5)) / _LOGNORMAL_SD
    if family == "failed runs":
        failed = rng.random(shape) < 0.15
        z = np.where(failed, rng.normal(-6.0, 0.5, shape), rng.standard_normal(shape))
        return (z - _FAILED_MEAN) / _FAILED_SD
    if family == "ties":
        return (rng.poisson(0.6, shape) - 0.6) / np.sqrt(0.6)
    raise InvalidArgument(f"family must be one of {', '.join(FAMILIES)} (got {family!r})")


@cache
def median(family: str) -> float:
    """The population median of :func:`noise` ``(family)``: a null whose statistic is a median
    (an end-to-end ratio) is centred at it, so that its true value is the one tested.

    >>> round(median("exponential"), 6)
    -0.306853
    """
    from scipy import optimize, stats

    if family in ("normal", "t3"):
        return 0.0
    if family == "exponential":
        return float(np.log(2.0) - 1.0)
    if family == "lognormal":
        return float((1.0 - np.exp(0.5)) / _LOGNORMAL_SD)
    if family == "ties":
        return float(-0.6 / np.sqrt(0.6))  # Poisson(0.6)'s median is 0
    if family == "failed runs":
        def cdf(z: float) -> float:
            return float(0.85 * stats.norm.cdf(z) + 0.15 * stats.norm.cdf(z, -6.0, 0.5)) - 0.5

        return float((optimize.brentq(cdf, -10.0, 10.0, xtol=1e-14) - _FAILED_MEAN) / _FAILED_SD)
    raise InvalidArgument(f"family must be one of {', '.join(FAMILIES)} (got {family!r})")
