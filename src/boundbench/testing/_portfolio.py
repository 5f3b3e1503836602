"""The rounds of ``falsify``'s portfolio that search a declared box: a global search
(differential evolution, the audit's engine) and Nelder-Mead polishing, each for an exact number
of calls of the bound, each returning its best instance rechecked in high precision where it
violates (:mod:`boundbench.testing._precision`). :mod:`boundbench.falsify` schedules them beside
hypothesis's rounds.

References
----------
R. Storn and K. Price, Differential evolution, J. Global Optim. 11 (1997); J. A. Nelder and
R. Mead, A simplex method for function minimization, Comput. J. 7 (1965), with scipy's bounded
variant (scipy.optimize.minimize).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["APART", "TOP", "polish_round", "search_round"]


def polish_round(test: Any, space: dict, *, centre: dict, width: float,
                  chunk: int, ratio_of: Any = None) -> dict[str, Any]:
    """Nelder-Mead from ``centre`` (an initial simplex of half-width ``width`` of each axis, in
    the box's unit coordinates, bounded by the box) for at most ``chunk`` calls, maximizing the
    worst ratio: a local method converges on a smooth maximum or an edge where a population
    search of the same calls does not. The same record as :func:`search_round`. ``ratio_of``:
    ``params -> (ratio, lhs, rhs)`` in place of the float64 one (``falsify``'s 50-digit
    polish, where float64's own rounding is the largest ratio)."""
    from scipy.optimize import minimize

    from boundbench.framework.search.targeted import Search, encode

    probe = Search(space, lambda p: (0.0, 1.0))
    u0 = encode(probe, centre)
    simplex = np.vstack([u0] + [np.clip(u0 + width * np.eye(len(u0))[j] * (
        1 if u0[j] + width <= 1 else -1), 0.0, 1.0) for j in range(len(u0))])
    left = [chunk]
    best: dict[str, Any] = {"ratio": -math.inf, "lhs": math.nan, "rhs": math.nan,
                            "instance": None}
    digits = _Digits(test) if ratio_of is None else None

    def score(u: np.ndarray) -> float:
        if left[0] <= 0:
            raise _Spent
        left[0] -= 1
        p = {k: (v.item() if hasattr(v, "item") else v)
             for k, v in probe.decode(np.clip(u, 0.0, 1.0)).items()}
        try:
            ratio, lhs, rhs = (ratio_of or (lambda q: _worst_of(test, q)))(p)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            return 0.0
        if digits is not None and ratio > best["ratio"] and ratio >= 1 and left[0] > 0:
            # a new best at or past the bound: its 50-digit ratio where float64's rounding made
            # it (one call of the round's); a simplex led by float64's noise (Pinsker's KL <= 0
            # at p - q ~ 1e-10, a ratio of inf) converges on the noise, not on the worst case
            ratio, lhs, rhs = digits.score(p, ratio, lhs, rhs, left)
        if ratio > best["ratio"]:
            best.update(ratio=ratio, lhs=lhs, rhs=rhs, instance=dict(p))
        return -min(ratio, 1e300)

    try:
        minimize(score, u0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * len(u0),
                 options={"initial_simplex": simplex, "maxfev": chunk, "xatol": 1e-15,
                          "fatol": 0.0})
    except _Spent:
        pass
    return _hit(test, best, chunk - left[0], fallback=centre)


class _Digits:
    """A polishing round's 50-digit scores of its new bests (:func:`polish_round`): at most
    :data:`DIGIT_CHECKS` a round, each one call of the round's; none once the bound's code is
    found to leave the high-precision path (its float64 value is then all there is)."""

    def __init__(self, test: Any) -> None:
        self.test, self.left, self.off = test, DIGIT_CHECKS, False

    def score(self, p: dict, ratio: float, lhs: float, rhs: float,
              calls: list[int]) -> tuple[float, float, float]:
        from boundbench.testing._precision import high_precision_ratio

        if self.off or self.left <= 0:
            return ratio, lhs, rhs
        self.left -= 1
        calls[0] -= 1
        h = high_precision_ratio(self.test.fn, p, atol=self.test.atol)
        if not h["rechecked"]:
            self.off = True
            return ratio, lhs, rhs
        if _close(ratio, h["ratio"]):
            return ratio, lhs, rhs
        return h["ratio"], h["lhs"], h["rhs"]


DIGIT_CHECKS = 24  # a polishing round's 50-digit scores of new bests


def _close(a: float, b: float) -> bool:
    """Two ratios that agree to 1e-9 relative (both infinite: equal)."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


class _Spent(Exception):
    """A polishing round's calls are spent."""


def _worst_of(test: Any, p: dict) -> tuple[float, float, float]:
    from boundbench.testing._observe import call
    from boundbench.testing.bound import worst_element

    return worst_element(*call(test.fn, p))


def _hit(test: Any, best: dict[str, Any], evaluations: int, *, fallback: dict) -> dict[str, Any]:
    """A round's record: its best instance and sides, rechecked in high precision where it
    violates."""
    from boundbench.testing._precision import recheck

    instance = best["instance"] if best["instance"] is not None else fallback
    from boundbench.testing._precision import unconfirmed

    confirmed = False
    if best["ratio"] > 1 + test.rtol:
        chk = recheck(test.fn, instance, rtol=test.rtol, atol=test.atol,
                      space=getattr(test, "space", None))
        confirmed = chk["status"] != "artifact" and not unconfirmed(chk, best["lhs"],
                                                                     best["rhs"])
    return {"ratio": max(best["ratio"], 0.0), "instance": instance, "evaluations": evaluations,
            "lhs": best["lhs"], "rhs": best["rhs"], "confirmed": confirmed}


def search_round(test: Any, space: dict, *, chunk: int, seed: int, start: list,
                 steps: int | None = None) -> dict[str, Any]:
    """One round of the global search over the bound's declared box: exactly ``chunk`` calls of
    the bound (the search ends there; an instance it has scored before is answered from
    memory and is not a call),
    started from hypothesis's best instance; its best instance with that element's two sides
    (no call more), rechecked in high precision (mpmath at 50 digits) where it violates.
    ``steps``: the search's own ``max_evals`` (memory's answers included; default
    :data:`REPEATS` times ``chunk``)."""
    from boundbench.framework.search.targeted import Search, Spent, encode, worst_case
    from boundbench.testing._observe import call
    from boundbench.testing.bound import worst_element

    left = [max(chunk, 1)]
    best: dict[str, Any] = {"ratio": -math.inf, "lhs": math.nan, "rhs": math.nan,
                            "instance": None}
    search = Search(space, lambda p: (0.0, 1.0))
    top: list[tuple[float, np.ndarray, dict]] = []  # the best of distinct basins
    # an instance scored before is answered from memory, not called again: on integer axes
    # the population's trial points round to the same instances (on Chebyshev's binomial box,
    # 1,000 distinct of 2,400), so the round's calls go to instances it has not seen
    seen: dict[tuple, Any] = {}

    def sides(p: dict) -> Any:
        key = tuple(p[k] for k in space)
        if key in seen:
            return seen[key]
        if left[0] <= 0:
            raise Spent
        left[0] -= 1
        out = seen[key] = call(test.fn, p)
        ratio, lhs, rhs = worst_element(*out)
        if ratio > best["ratio"]:
            best.update(ratio=ratio, lhs=lhs, rhs=rhs, instance=dict(p))
        _keep(top, ratio, encode(search, p), dict(p))
        return out

    # the search's own count includes the answers from memory: the round ends on its calls
    # (``Spent``), or at REPEATS times them where the search only repeats itself
    res = worst_case(Search(space, sides), max_evals=steps or REPEATS * max(chunk, 1),
                     seed=seed, start=start)
    hit = _hit(test, best, max(chunk, 1) - left[0], fallback=res.instance)
    hit["candidates"] = [p for _, _, p in top]
    return hit


REPEATS = 4  # a global round's search steps (memory's answers included) per call it may make
TOP = 4  # basins a global round hands to the polishing
APART = 1e-3  # two instances closer than this (max-norm, unit coordinates) share a basin


def _keep(top: list, ratio: float, u: np.ndarray, p: dict) -> None:
    """Keep the :data:`TOP` largest ratios of instances at least :data:`APART` from each other
    (best first): where a bound fails on two separate edges, both are polished, not only the
    one the search happened to end on."""
    if not np.isfinite(ratio) and ratio != math.inf:
        return
    near = [i for i, (_, v, _) in enumerate(top) if np.max(np.abs(v - u)) < APART]
    if any(top[i][0] >= ratio for i in near):
        return
    for i in sorted(near, reverse=True):
        del top[i]
    top.append((ratio, u, p))
    top.sort(key=lambda r: -r[0])
    del top[TOP:]
