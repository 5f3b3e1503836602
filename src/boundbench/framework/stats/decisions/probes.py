"""The fine-tuning claims' probes decided by procedures valid by construction (issue 82): the
dicts a budgeted audit tracks (:func:`~boundbench.framework.stats.stopping.probe`'s keys) for a
paired mean difference of a bounded metric (:func:`mean_probe`, a betting confidence sequence)
and for a spread (:func:`spread_probe`, the scheduled exact permutation test of
:mod:`.permutation`, with a bounded ratio sequence for a no-effect band).

Each probe names its ``procedure`` and its ``validity`` condition, and carries
``projected_seeds``: a method's seeds by which half of :data:`CONTINUATIONS` continuations of
these values (resampled from them, appended in order, drawn from the claim's seed) decide, up
to :data:`~boundbench.framework.stats.stopping.PROJECTION_CAP`; None past it. What a budget
allocates by, not a guarantee. Undecided, a probe also carries its ``reach``: the smallest
effect its procedure detects at these seeds in 80% of draws under each noise family of the
battery, and the worst family's (:mod:`.reach`, issue 82 item 3).
"""

from __future__ import annotations

import math

import numpy as np

from boundbench.framework.stats.bands import band_margin
from boundbench.framework.stats.decisions.paths import bounded_mean_path, bounded_ratio_path
from boundbench.framework.stats.decisions.permutation import SCHEDULE, look_alpha, spread_looks
from boundbench.framework.stats.decisions.reach import mean_reach, reach_text, spread_reach
from boundbench.framework.stats.sequential import ALPHA
from boundbench.framework.stats.stopping import PROJECTION_CAP, as_band, first_decision

__all__ = ["CONTINUATIONS", "mean_probe", "spread_probe"]

CONTINUATIONS = 20  # resampled continuations behind a probe's projected seeds
PROJECTION_GRID = 201  # candidate means of a projection's sequences (the decision's: GRID)

MEAN_PROCEDURE = ("betting confidence sequence (Waudby-Smith & Ramdas 2024, hedged capital, "
                  "predictable plug-in bets) on the paired differences, a look after every seed")
SPREAD_PROCEDURE = ("exact permutation test of the within-method pair differences |x1 - x2| "
                    "(Lehmann & Romano 2022, Thm 17.2.1) at 4, 8, 16, ... seeds, look j at "
                    "alpha 6 / (pi^2 (j + 1)^2)")


def _num(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def mean_probe(diff: np.ndarray, *, lower: float, upper: float, expected: str, band, what: str,
               seed: int, alpha: float = ALPHA) -> dict:
    """The probe of a mean paired difference (in seed order), each in ``[lower, upper]``."""
    diff = np.asarray(diff, dtype=float)
    b = as_band(band, null=0.0)
    path = bounded_mean_path(diff, lower=lower, upper=upper, alpha=alpha)
    decision, at = first_decision(path.low, path.high, null=0.0, expected=expected, band=b)
    out = {"what": what, "kind": "mean", "n": int(diff.size), "estimate": _num(path.estimate[-1]),
           "spread": _num(float(np.std(diff, ddof=1))) if diff.size > 1 else None, "null": 0.0,
           "expected": expected, "band": b.to_dict() if b is not None else None,
           "cs_low": _num(path.low[-1]), "cs_high": _num(path.high[-1]),
           "decision": decision, "decided_at": at if decision else None,
           "procedure": MEAN_PROCEDURE, "bounds": [lower, upper],
           "validity": f"every paired difference in [{lower:g}, {upper:g}] (checked); seeds "
                       "independent; any stopping rule"}
    if b is not None and decision is not None:
        m = band_margin(float(path.low[at - 1]), float(path.high[at - 1]), b)
        out["band_margin"] = m
    if decision is None:
        rng = np.random.default_rng(seed)
        extra = rng.choice(diff, (CONTINUATIONS, max(PROJECTION_CAP - diff.size, 0)))
        more = np.concatenate([np.broadcast_to(diff, (CONTINUATIONS, diff.size)), extra], axis=1)
        p = bounded_mean_path(more, lower=lower, upper=upper, alpha=alpha, grid=PROJECTION_GRID)
        firsts = []
        for lo_i, hi_i in zip(p.low, p.high, strict=True):
            d, k = first_decision(lo_i, hi_i, null=0.0, expected=expected, band=b)
            firsts.append(k if d else math.inf)
        med = float(np.median(firsts))
        out["projected_seeds"] = int(med) if math.isfinite(med) else None
        if expected in ("increase", "decrease") and out["spread"] is not None:
            reach = mean_reach(diff.size, spread=float(np.std(diff, ddof=1)), lower=lower,
                               upper=upper, expected=expected, alpha=alpha, seed=seed)
            out.update(reach=reach, reach_text=reach_text(reach))
    return out


def _approx_word(t: np.ndarray, c: np.ndarray, j: int, alpha: float) -> bool:
    """Whether the look at ``SCHEDULE[j]`` decides, by the permutation distribution's normal
    approximation (mean 0, variance ``4 s^2 / (2k - 1)`` of the pooled ``|d|``): the
    projection's fast stand-in for the exact test."""
    n = SCHEDULE[j]
    dt, dc = np.abs(t[0:n:2] - t[1:n:2]), np.abs(c[0:n:2] - c[1:n:2])
    pooled = np.r_[dt, dc]
    sd = math.sqrt(4 * pooled.var() / (2 * dt.size - 1))
    if sd == 0:
        return False
    from scipy.stats import norm

    z = (dt.mean() - dc.mean()) / sd
    return bool(min(norm.cdf(z), norm.sf(z)) <= look_alpha(j, alpha) / 2)


def spread_probe(t: np.ndarray, c: np.ndarray, *, lower: float, upper: float, band, what: str,
                 seed: int, alpha: float = ALPHA) -> dict:
    """The probe of "the treatment ``t`` has a lower spread than the control ``c``" (seed order),
    each value in ``[lower, upper]``: ``supported`` / ``contradicted`` by the scheduled
    permutation test (alpha), ``no-effect`` where the bounded ratio sequence of the standard
    deviations lies inside the band (alpha, a separate word on a separate null)."""
    t, c = np.asarray(t, dtype=float), np.asarray(c, dtype=float)
    n = min(t.size, c.size)
    t, c = t[:n], c[:n]
    b = as_band(band, null=1.0, scale="ratio")
    looks = spread_looks(t, c, alpha=alpha, seed=seed)
    hit = next((lk for lk in looks if lk["word"]), None)
    decision, at = ({"lower": "supported", "higher": "contradicted"}[hit["word"]], hit["seeds"]
                    ) if hit else (None, None)
    path = bounded_ratio_path(t, c, lower=lower, upper=upper, alpha=alpha,
                              at=(b.low, b.high) if b is not None else ()) if n >= 2 else None
    if decision is None and path is not None and b is not None:
        d, k = first_decision(path.low, path.high, null=1.0, expected="decrease", band=b,
                              scale="ratio")
        if d == "no-effect":
            decision, at = d, int(path.n[k - 1])
    sd_c = float(np.std(c, ddof=1)) if n > 1 else float("nan")
    est = float(np.std(t, ddof=1)) / sd_c if n > 1 and sd_c > 0 else float("nan")
    out = {"what": what, "kind": "std_ratio", "n": int(n), "estimate": _num(est),
           "spread": _num(sd_c), "null": 1.0, "expected": "decrease",
           "band": b.to_dict() if b is not None else None,
           "cs_low": _num(path.low[-1]) if path is not None else None,
           "cs_high": _num(path.high[-1]) if path is not None else None,
           "decision": decision, "decided_at": at, "procedure": SPREAD_PROCEDURE,
           "bounds": [lower, upper], "looks": looks,
           "validity": "under no effect the two methods' seeds are independent draws of one "
                       "distribution up to a shift (exact then, any shape); the no-effect "
                       f"band's interval: every value in [{lower:g}, {upper:g}] (checked)"}
    if decision is None:
        rng = np.random.default_rng(seed)
        firsts = []
        for _ in range(CONTINUATIONS):
            extra = max(PROJECTION_CAP - n, 0)
            mt, mc = np.r_[t, rng.choice(t, extra)], np.r_[c, rng.choice(c, extra)]
            k = next((SCHEDULE[j] for j in range(len(SCHEDULE)) if SCHEDULE[j] <= mt.size
                      and SCHEDULE[j] > (looks[-1]["seeds"] if looks else 0)
                      and _approx_word(mt, mc, j, alpha)), math.inf)
            firsts.append(k)
        med = float(np.median(firsts))
        out["projected_seeds"] = int(med) if math.isfinite(med) else None
        reach = spread_reach(t, c, lower=lower, upper=upper, alpha=alpha, seed=seed)
        out.update(reach=reach, reach_text=reach_text(reach))
    return out
