"""The smallest effect a procedure valid by construction detects at the seeds a claim has, under
each noise family of the battery (issue 82 item 3).

Problem: an inconclusive verdict of a betting sequence or of the scheduled permutation test
says nothing about the effects it could have found at its seeds unless its power is stated, and
a power measured on one shape of data (normal) overstates it on skewed or heavy-tailed seeds:
issue 82 measured the "spread ratio 0.7 at 100 a side" of a Gaussian calculation at 91% power on
normal data and 23% on lognormal.

Computed: for each family of :data:`~boundbench.framework.stats.decisions.battery.FAMILIES`, its noise
squashed into a bounded shape (:func:`bounded_noise`: ``1 / (1 + exp(-z / 2))``, standardized
to mean 0 and variance 1, as ``benchmarks/bench_decisions.py`` draws its nulls), scaled to the
claim's observed spread and shifted by an effect, :data:`DRAWS` datasets of the claim's own
size, drawn from the claim's seed; the effect reported is the smallest on the grid
(:data:`MEAN_STEPS` in units of that spread with :data:`RANGE_STEPS` of the range's half-width,
:data:`RATIOS`) the procedure detects in the
claimed direction by the last seed in at least :data:`POWER` of them (values that would leave
the metric's range are clipped to it, which can only shrink the effect). The reach "under the
worst family" is the largest such effect over the families (``None``: beyond the grid for at
least one family, which is then the worst). An estimate of power, not a guarantee.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.stats.decisions.battery import FAMILIES, noise
from boundbench.framework.stats.decisions.betting import ever_rejects
from boundbench.framework.stats.decisions.permutation import lower_at_some_look

__all__ = ["DRAWS", "MEAN_STEPS", "POWER", "RANGE_STEPS", "RATIOS", "bounded_noise", "mean_reach",
           "reach_text", "spread_reach"]

DRAWS = 200  # datasets per family and effect
POWER = 0.8  # the share of them that must detect the effect
MEAN_STEPS = (0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)  # mean differences / spread
# and / the range's half-width: a betting sequence's bets are capped (a capital never below half),
# so at few seeds its reach is set by the range, not by the spread
RANGE_STEPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
RATIOS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05)  # std(treatment) / std(control)


@cache
def _squash_moments(family: str) -> tuple[float, float]:
    """The mean and sd of the squashed noise, from 400,000 draws of a fixed seed."""
    u = 1.0 / (1.0 + np.exp(-noise(family, np.random.default_rng([82, 3]), 400_000) / 2.0))
    return float(u.mean()), float(u.std())


def bounded_noise(family: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``family``'s noise squashed into a bounded shape and standardized (mean 0, sd 1).

    >>> z = bounded_noise("lognormal", np.random.default_rng(0), (100_000,))
    >>> bool(abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02 and np.ptp(z) < 12)
    True
    """
    m, s = _squash_moments(family)
    return (1.0 / (1.0 + np.exp(-noise(family, rng, shape) / 2.0)) - m) / s


def _smallest(grid: tuple[float, ...], detects: Callable[[float], bool]) -> float | None:
    """The first grid value that ``detects`` (a bisection: power grows along the grid)."""
    lo, hi = 0, len(grid)
    while lo < hi:
        mid = (lo + hi) // 2
        if detects(grid[mid]):
            hi = mid
        else:
            lo = mid + 1
    return grid[lo] if lo < len(grid) else None


def _summary(by: dict[str, float | None], *, worst_is: Callable[[list[float]], float],
             units: str, n: int, grid: tuple[float, ...]) -> dict:
    known = {f: v for f, v in by.items() if v is not None}
    if len(known) < len(by):
        under = next(f for f, v in by.items() if v is None)
        effect = None
    else:
        effect = worst_is(list(known.values()))
        under = next(f for f, v in by.items() if v == effect)
    return {"effect": effect, "under": under, "by_family": by, "units": units, "seeds": n,
            "power": POWER, "draws": DRAWS, "largest_tried": grid[-1]}


def mean_reach(n: int, *, spread: float, lower: float, upper: float, expected: str,
               alpha: float, seed: int) -> dict | None:
    """The smallest mean difference the betting sequence on ``n`` paired differences (each in
    ``[lower, upper]``, observed sd ``spread``) detects in the ``expected`` direction
    (``"increase"`` / ``"decrease"``) in :data:`POWER` of draws, per family; None where
    ``spread`` is not a positive number or ``n < 2``.

    >>> r = mean_reach(20, spread=0.02, lower=-1.0, upper=1.0, expected="increase",
    ...                alpha=0.05, seed=0)
    >>> r["under"] in FAMILIES and r["effect"] >= r["by_family"]["normal"]
    True
    """
    if expected not in ("increase", "decrease"):
        raise InvalidArgument(f"expected must be 'increase' or 'decrease' (got {expected!r})")
    if n < 2 or not (np.isfinite(spread) and spread > 0):
        return None
    sign = 1.0 if expected == "increase" else -1.0
    grid = tuple(sorted({float(spread * k) for k in MEAN_STEPS}
                        | {float((upper - lower) / 2 * k) for k in RANGE_STEPS}))
    by: dict[str, float | None] = {}
    for i, fam in enumerate(FAMILIES):
        z = spread * bounded_noise(fam, np.random.default_rng([seed, 821, i, n]), (DRAWS, n))

        def detects(effect: float, z: np.ndarray = z) -> bool:
            x = np.clip(sign * effect + z, lower, upper)
            hit = ever_rejects(x, value=0.0, lower=lower, upper=upper, alpha=alpha)
            return bool(np.mean(hit & (sign * x.mean(axis=1) > 0)) >= POWER)

        by[fam] = _smallest(grid, detects)
    return _summary(by, worst_is=max, units="mean paired change", n=n, grid=grid)


Detect = Callable[[np.ndarray, np.ndarray], np.ndarray]


def spread_reach(t: np.ndarray, c: np.ndarray, *, lower: float, upper: float, alpha: float,
                 seed: int, detect: Detect | None = None) -> dict | None:
    """The largest std ratio (treatment / control) the scheduled permutation test
    (:func:`~boundbench.framework.stats.decisions.permutation.spread_looks`) detects as lower at the
    seeds of ``t`` and ``c`` in :data:`POWER` of draws, per family, the control at its observed
    mean and sd; None below the schedule's first look or without a spread. ``detect``: another
    test, ``(treatments, controls) -> whether each of the (B, n) datasets is detected``.

    >>> rng = np.random.default_rng(0)
    >>> r = spread_reach(rng.uniform(0.8, 0.9, 16), rng.uniform(0.7, 0.9, 16), lower=0.0,
    ...                  upper=1.0, alpha=0.05, seed=0)
    >>> r["units"], r["effect"] is None or r["effect"] <= r["by_family"]["normal"]
    ('std ratio', True)
    """
    t, c = np.asarray(t, dtype=float), np.asarray(c, dtype=float)
    n = min(t.size, c.size)
    sd = float(np.std(c[:n], ddof=1)) if n > 1 else float("nan")
    if n < (4 if detect is None else 2) or not (np.isfinite(sd) and sd > 0):
        return None
    if detect is None:
        def detect(ts: np.ndarray, cs: np.ndarray) -> np.ndarray:
            return lower_at_some_look(ts, cs, alpha=alpha, seed=seed)

    by: dict[str, float | None] = {}
    for i, fam in enumerate(FAMILIES):
        rng = np.random.default_rng([seed, 822, i, n])
        zt, zc = bounded_noise(fam, rng, (DRAWS, n)), bounded_noise(fam, rng, (DRAWS, n))
        cs = np.clip(c[:n].mean() + sd * zc, lower, upper)

        def detects(r: float, zt: np.ndarray = zt, cs: np.ndarray = cs) -> bool:
            ts = np.clip(t[:n].mean() + r * sd * zt, lower, upper)
            return bool(np.mean(detect(ts, cs)) >= POWER)

        by[fam] = _smallest(RATIOS, detects)
    return _summary(by, worst_is=min, units="std ratio", n=n, grid=RATIOS)


def reach_text(r: dict | None) -> str:
    """A reach in words: ``"at 12 seeds it detects a std ratio of 0.4 in 80% of draws under the
    worst of 6 noise shapes (lognormal; normal 0.6)"``, or ``""`` without one."""
    if not r:
        return ""
    head = f"at {r['seeds']} seeds it detects"
    by = r["by_family"]
    normal = by.get("normal")
    if r["effect"] is None:
        edge = f"{'down to' if r['units'] == 'std ratio' else 'up to'} {r['largest_tried']:.3g}"
        if all(v is None for v in by.values()):
            return (f"{head} no {r['units']} {edge} in {r['power']:.0%} of draws under any of "
                    f"the {len(by)} noise shapes")
        return (f"{head} no {r['units']} {edge} in {r['power']:.0%} of draws under the "
                f"{r['under']} noise shape (normal: "
                f"{'none' if normal is None else f'{normal:.3g}'})")
    if all(v == r["effect"] for v in by.values()):
        return (f"{head} a {r['units']} of {r['effect']:.3g} in {r['power']:.0%} of draws under "
                f"each of the {len(by)} noise shapes")
    return (f"{head} a {r['units']} of {r['effect']:.3g} in {r['power']:.0%} of draws under the "
            f"worst of {len(by)} noise shapes ({r['under']}; normal {normal:.3g})")
