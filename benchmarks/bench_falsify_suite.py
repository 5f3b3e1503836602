"""Planted-wrong bounds against five engines on the same boxes and evaluation budget (issue 62).

Fifteen correct inequalities (textbook ones and the catalogue's), each with two wrong variants of
the kinds papers print (a constant off, n for n - 1, a dropped factor, an exponent off, a
loosened condition), chosen so that each fails only on a small part of its box: the fraction is
measured here on 20,000 uniform draws and printed. Engines, each given the same number of calls
of the bound and stopped at nothing but its budget:

- ``portfolio``: ``boundbench falsify`` (hypothesis and differential evolution over the declared
  box in one budget, each seeding the other; ``falsify(..., evaluations=N)``);
- ``hypothesis``: plain ``@given`` over the box;
- ``hyp+target``: ``@given`` with ``hypothesis.target(lhs/rhs)``;
- ``random``: uniform draws (log-uniform on log axes);
- ``scipy DE``: boundbench's differential evolution (``worst_case``), the audit's engine.

A violation is ``lhs > rhs (1 + 1e-9)``. Per engine it prints: wrong bounds found (in at least
one seed / in every seed), seeds that found, false alarms on the correct bounds, the median
number of calls to the first violation (over the seeds that found one) and, per bound, the worst
ratio over the seeds, rescored in extended precision (float64's rounding inflates a correct
bound's ratio where its sides are near 0: scipy DE "finds" 1.021 on Hoeffding's lemma as
published). Run::

    python benchmarks/bench_falsify_suite.py [--evals 2000] [--seeds 5] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import erf, ndtr

RTOL = 1e-9

# name -> (space, sides(p) -> (lhs, rhs)); "name" for the correct bound, "name / kind" for a
# planted-wrong variant
BOUNDS: dict[str, tuple[dict, Callable[[dict], tuple[float, float]]]] = {}


def _add(name: str, space: dict, true: Callable, wrong: dict[str, Callable]) -> None:
    BOUNDS[name] = (space, true)
    for kind, fn in wrong.items():
        BOUNDS[f"{name} / {kind}"] = (space, fn)


_POS = (1e-2, 1e2, "log")
_add("AM-GM", {"x": _POS, "y": _POS},
     lambda p: (np.sqrt(p["x"] * p["y"]), (p["x"] + p["y"]) / 2),
     {"constant 1 - 1e-4": lambda p: (np.sqrt(p["x"] * p["y"]),
                                      (1 - 1e-4) * (p["x"] + p["y"]) / 2),
      "exponent off (mean of 3 terms)": lambda p: ((p["x"] * p["y"]) ** 0.5,
                                                   (p["x"] + p["y"] + 1e-3 * abs(
                                                       p["x"] - p["y"])) / 2.0006)})
_add("Young", {"x": (-3.0, 3.0), "y": (-3.0, 3.0)},
     lambda p: (p["x"] * p["y"], p["x"] ** 2 / 2 + p["y"] ** 2 / 2),
     {"2 dropped a little": lambda p: (p["x"] * p["y"], (p["x"] ** 2 + p["y"] ** 2) / 2.001),
      "square for abs": lambda p: (p["x"] * p["y"], (p["x"] ** 2 + p["y"] ** 2) / 2
                                   - 1e-3 * min(abs(p["x"]), 1))})
_add("Bernoulli", {"x": (-1.0, 2.0), "n": (1, 12, "int")},
     lambda p: (1 + p["n"] * p["x"], (1 + p["x"]) ** p["n"]),
     {"condition loosened (x >= -2)": lambda p: (1 + p["n"] * (p["x"] - 1.0) * 0.0 + p["n"]
                                                 * p["x"], (1 + p["x"]) ** p["n"]
                                                 if p["x"] > -0.999 else -1.0)})
_add("log(1+x) <= x", {"x": (-0.99, 10.0)},
     lambda p: (np.log1p(p["x"]), p["x"]),
     {"constant 1 - 1e-3 near 0": lambda p: (np.log1p(p["x"]), p["x"] * (1 - 1e-3)
                                             if abs(p["x"]) < 0.05 else p["x"])})
_add("exp >= 1 + x", {"x": (-5.0, 5.0)},
     lambda p: (1 + p["x"], np.exp(p["x"])),
     {"1 + x + x^2/2 (needs x >= 0)": lambda p: (1 + p["x"] + p["x"] ** 2 / 2, np.exp(p["x"])
                                                 if p["x"] > -0.02 else 1e9),
      "dropped factor near 0": lambda p: (1 + p["x"] + 0.6 * p["x"] ** 2, np.exp(p["x"])
                                          if abs(p["x"]) < 0.01 else 1e9)})
_add("Jensen x^2", {"a": (-2.0, 2.0), "b": (-2.0, 2.0)},
     lambda p: (((p["a"] + p["b"]) / 2) ** 2, (p["a"] ** 2 + p["b"] ** 2) / 2),
     {"2 for 2.0005": lambda p: (((p["a"] + p["b"]) / 2) ** 2,
                                 (p["a"] ** 2 + p["b"] ** 2) / 2.0005),
      "n - 1 for n": lambda p: (((p["a"] + p["b"]) / 2) ** 2 * (1 + 1e-4),
                                (p["a"] ** 2 + p["b"] ** 2) / 2)})
_add("sin x <= x", {"x": (0.0, 10.0)},
     lambda p: (np.sin(p["x"]), p["x"]),
     {"x - x^3/6 (Taylor dropped)": lambda p: (np.sin(p["x"]), p["x"] - p["x"] ** 3 / 6
                                               if p["x"] < 0.3 else p["x"]),
      "constant 1 - 1e-4": lambda p: (np.sin(p["x"]), p["x"] * (1 - 1e-4))})
_add("Cauchy-Schwarz", {"t": (0.0, 2 * math.pi), "u": (0.0, 2 * math.pi),
                        "r": (0.1, 10.0, "log")},
     lambda p: (abs(np.cos(p["t"] - p["u"])) * p["r"], p["r"]),
     {"constant 1 - 1e-5": lambda p: (abs(np.cos(p["t"] - p["u"])) * p["r"],
                                      p["r"] * (1 - 1e-5)),
      "square dropped": lambda p: (abs(np.cos(p["t"] - p["u"])) * p["r"],
                                   p["r"] * (1 - 1e-3 * (1 - abs(np.cos(p["t"])))))})
_add("triangle", {"t": (0.0, 2 * math.pi), "a": (0.1, 10.0, "log"), "b": (0.1, 10.0, "log")},
     lambda p: (np.sqrt(p["a"] ** 2 + p["b"] ** 2 + 2 * p["a"] * p["b"] * np.cos(p["t"])),
                p["a"] + p["b"]),
     {"constant 1 - 1e-5": lambda p: (np.sqrt(p["a"] ** 2 + p["b"] ** 2 + 2 * p["a"] * p["b"]
                                                * np.cos(p["t"])),
                                      (p["a"] + p["b"]) * (1 - 1e-5))})
_add("Gaussian tail (Chernoff)", {"t": (0.0, 8.0)},
     lambda p: (ndtr(-p["t"]), 0.5 * np.exp(-p["t"] ** 2 / 2)),
     {"1/2 for 0.49999": lambda p: (ndtr(-p["t"]), 0.49999 * np.exp(-p["t"] ** 2 / 2))})
_add("Mills ratio", {"t": (0.05, 8.0)},
     lambda p: (ndtr(-p["t"]), np.exp(-p["t"] ** 2 / 2) / np.sqrt(2 * math.pi) / p["t"]),
     {"t + 2.5e-4 t^3 for t": lambda p: (ndtr(-p["t"]), np.exp(-p["t"] ** 2 / 2)
                                   / np.sqrt(2 * math.pi) / (p["t"] + 2.5e-4 * p["t"] ** 3))})
_add("erf bound (Cor. 1)", {"w": (1e-3, 2.0), "t": (-5.0, 5.0), "s": (1e-2, 1e2, "log")},
     lambda p: (ndtr((p["w"] / 2 - p["t"]) / p["s"]) - ndtr((-p["w"] / 2 - p["t"]) / p["s"]),
                erf(1 / (np.sqrt(2) * p["s"]))),
     {"sqrt2 for 1.4143": lambda p: (ndtr((p["w"] / 2 - p["t"]) / p["s"])
                                     - ndtr((-p["w"] / 2 - p["t"]) / p["s"]),
                                     erf(1 / (1.4143 * p["s"]))),
      "width 2 eps/H for 1.999": lambda p: (ndtr((p["w"] / 2 - p["t"]) / p["s"])
                                            - ndtr((-p["w"] / 2 - p["t"]) / p["s"]),
                                            erf(0.9995 / (np.sqrt(2) * p["s"])))})
_add("normalization 2/r (Lemma A.2.1)", {"t": (1e-4, math.pi, "log"), "dx": (0.0, 3.0),
                                          "dy": (0.0, 3.0)},
     lambda p: (2 * np.sin(p["t"] / 2), 2 * np.sqrt((p["dx"] - p["dy"]) ** 2 + 4 * (1 + p["dx"])
                                                        * (1 + p["dy"]) * np.sin(p["t"] / 2) ** 2)),
     {"1/(2r) (a quarter), near coincident": lambda p: (
         2 * np.sin(p["t"] / 2), 0.5 * np.sqrt((p["dx"] - p["dy"]) ** 2 + 4 * (1 + p["dx"])
                                                   * (1 + p["dy"]) * np.sin(p["t"] / 2) ** 2)
         * (1 + 4 * (p["dx"] + p["dy"]))),
      "r for 2r, a 2% slack lost": lambda p: (2 * np.sin(p["t"] / 2),
                             0.98 * np.sqrt((p["dx"] - p["dy"]) ** 2 + 4 * (1 + p["dx"]) * (1 + p["dy"])
                                       * np.sin(p["t"] / 2) ** 2) * (1 + 30 * p["dx"]))})
_add("descent lemma", {"b": (0.1, 10.0, "log"), "eta": (0.0, 1.0), "w": (-3.0, 3.0)},
     # f = b/2 w^2, a step eta/b: f(next) <= f - (eta/b)/2 ||g||^2, both sides factored (the
     # difference of two equal terms at eta = 1 is a rounding tie, not a bound)
     lambda p: (0.5 * p["b"] * p["w"] ** 2 * (1 - p["eta"]) ** 2,
                0.5 * p["b"] * p["w"] ** 2 * (1 - p["eta"])),
     {"eta <= 1.001/beta": lambda p: (0.5 * p["b"] * p["w"] ** 2 * (1 - 1.001 * p["eta"]) ** 2,
                                      0.5 * p["b"] * p["w"] ** 2 * (1 - 1.001 * p["eta"])),
      "eta for eta/2 near eta = 0": lambda p: (0.5 * p["b"] * p["w"] ** 2 * (1 - p["eta"]) ** 2,
                                               0.5 * p["b"] * p["w"] ** 2
                                               * (1 - (2.5 if p["eta"] < 1e-3 else 1) * p["eta"]))})
_add("self-bounding", {"b": (0.1, 10.0, "log"), "w": (-3.0, 3.0), "m": (0.0, 1.0)},
     lambda p: ((p["b"] * p["w"]) ** 2, 2 * p["b"] * (0.5 * p["b"] * p["w"] ** 2 + p["m"])),
     {"2 beta for 1.9999 beta": lambda p: ((p["b"] * p["w"]) ** 2, 1.9999 * p["b"]
                                          * (0.5 * p["b"] * p["w"] ** 2 + p["m"])),
      "f >= 0 dropped (f - 1e-3)": lambda p: ((p["b"] * p["w"]) ** 2, 2 * p["b"]
                                              * (0.5 * p["b"] * p["w"] ** 2 + p["m"] - 1e-3))})


_add("HM <= GM", {"x": _POS, "y": _POS},
     lambda p: (2 * p["x"] * p["y"] / (p["x"] + p["y"]), np.sqrt(p["x"] * p["y"])),
     {"constant 1 - 1e-4": lambda p: (2 * p["x"] * p["y"] / (p["x"] + p["y"]),
                                      (1 - 1e-4) * np.sqrt(p["x"] * p["y"]))})
_add("cos x >= 1 - x^2/2", {"x": (-5.0, 5.0)},
     lambda p: (1 - p["x"] ** 2 / 2, np.cos(p["x"])),
     {"2 for 2.0001": lambda p: (1 - p["x"] ** 2 / 2.0001, np.cos(p["x"]))})
_add("tanh x <= x", {"x": (0.0, 5.0)},
     lambda p: (np.tanh(p["x"]), p["x"]),
     {"constant 1 - 1e-4": lambda p: (np.tanh(p["x"]), p["x"] * (1 - 1e-4))})
_add("1 - x <= exp(-x)", {"x": (0.0, 5.0)},
     lambda p: (1 - p["x"], np.exp(-p["x"])),
     {"slope 0.9999 for 1": lambda p: (1 - 0.9999 * p["x"], np.exp(-p["x"]))})
_add("arctan x <= x", {"x": (0.0, 10.0)},
     lambda p: (np.arctan(p["x"]), p["x"]),
     {"constant 1 - 1e-5": lambda p: (np.arctan(p["x"]), p["x"] * (1 - 1e-5))})
_add("Hoeffding's lemma (Bernoulli)", {"q": (0.0, 1.0), "lam": (-5.0, 5.0)},
     lambda p: (np.log(p["q"] * np.exp(p["lam"] * (1 - p["q"])) + (1 - p["q"])
                         * np.exp(-p["lam"] * p["q"])), p["lam"] ** 2 / 8),
     {"8 for 8.001": lambda p: (np.log(p["q"] * np.exp(p["lam"] * (1 - p["q"])) + (1 - p["q"])
                                         * np.exp(-p["lam"] * p["q"])), p["lam"] ** 2 / 8.001)})


def high_precision(v: Any) -> bool:
    """A recheck's number (mpmath's, through boundbench's wrapper, or numpy.longdouble)."""
    return isinstance(v, np.longdouble) or not isinstance(v, int | float | np.integer
                                                           | np.floating)


class Counter:
    """Wraps a bound's sides: counts calls, keeps the first violating call and the worst ratio.
    ``limit``: the budget; a call past it is answered but not scored (counted in ``past``), so
    no engine is scored on more calls than another (scipy's DE with its polish makes 25% more
    than its ``max_evals``)."""

    def __init__(self, fn: Callable[[dict], tuple[float, float]],
                 limit: int | None = None) -> None:
        self.fn, self.calls, self.first, self.worst = fn, 0, None, -math.inf
        self.limit, self.past = limit, 0
        self.top: list[tuple[float, dict]] = []  # the 10 largest float64 ratios' instances

    def __call__(self, p: dict) -> tuple[Any, Any]:
        if any(high_precision(v) for v in p.values()):
            # a high-precision recheck's instance (mpmath or longdouble numbers): the engine's
            # own extra call, not one of the budget's, and float() here would count as its
            # code leaving high precision
            return self.fn(p)
        if self.limit is not None and self.calls >= self.limit:
            self.past += 1
            return self.fn(p)
        self.calls += 1
        out = self.fn(p)  # returned as computed: a recheck in extended precision sees its type
        lhs, rhs = (float(v) for v in out)
        ratio = lhs / rhs if rhs > 0 else (math.inf if lhs > rhs else 0.0)
        self.worst = max(self.worst, ratio)
        if len(self.top) < 10 or ratio > self.top[-1][0]:
            self.top = sorted([*self.top, (ratio, dict(p))], key=lambda r: -r[0])[:10]
        if lhs > rhs * (1 + RTOL) and self.first is None:
            self.first = self.calls
        return out

    def worst_exact(self) -> float:
        """The largest ratio among the 10 largest float64 ones, each re-evaluated at 50 digits
        through the bound's own code (falsify's recheck; numpy.longdouble where the code leaves
        mpmath; float64 as measured where it runs in neither): the size of the worst case
        without float64's rounding, which a correct bound's near-0 sides inflate."""
        from boundbench.testing._precision import recheck

        best = -math.inf
        for ratio, p in self.top:
            r = recheck(self.fn, p, rtol=RTOL, atol=0.0)
            if "lhs" not in r:  # code that runs in neither (scipy's special functions)
                best = max(best, ratio)
                continue
            lhs, rhs = r["lhs"], r["rhs"]
            if "lhs_digits" in r:  # the ratio at 50 digits, not of the rounded floats
                import mpmath

                with mpmath.workdps(50):
                    lhs, rhs = mpmath.mpf(r["lhs_digits"]), mpmath.mpf(r["rhs_digits"])
                    best = max(best, float(lhs / rhs) if rhs > 0 else
                               (math.inf if lhs > rhs else 0.0))
                continue
            best = max(best, lhs / rhs if rhs > 0 else (math.inf if lhs > rhs else 0.0))
        return best


def _box(space: dict, rng: np.random.Generator) -> dict:
    out: dict[str, Any] = {}
    for k, spec in space.items():
        lo, hi = spec[0], spec[1]
        axis = spec[2] if len(spec) == 3 else "lin"
        out[k] = (int(rng.integers(lo, hi + 1)) if axis == "int" else
                  float(math.exp(rng.uniform(math.log(lo), math.log(hi)))) if axis == "log"
                  else float(rng.uniform(lo, hi)))
    return out


def fraction(space: dict, fn: Callable, n: int = 20_000) -> float:
    rng = np.random.default_rng(12345)
    bad = 0
    for _ in range(n):
        lhs, rhs = fn(_box(space, rng))
        bad += lhs > rhs * (1 + RTOL)
    return bad / n


def run_portfolio(space, c, evals, seed):
    from boundbench.falsify import _run_file_test
    from boundbench.testing.bound import bound

    def sides(p: dict) -> tuple[float, float]:
        return c(p)

    test = bound(space=space, rtol=RTOL)(sides)
    test.reproduce = lambda s: ""
    out = _run_file_test(test, target="x", budget=1e9, seed=seed, t0=time.perf_counter(),
                         evaluations=evals)
    return out["violated"]


def run_hypothesis(space, c, evals, seed, targeted):
    from hypothesis import HealthCheck, given, settings, target
    from hypothesis import seed as hseed

    from boundbench.testing.bound import _box_strategy

    @hseed(seed)
    @settings(max_examples=evals, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_box_strategy(space))
    def prop(p):
        if c.calls >= evals:
            return
        lhs, rhs = c(p)
        if targeted:
            target(min(lhs / rhs, 1e12) if rhs > 0 else 1e12)
        assert lhs <= rhs * (1 + RTOL)

    try:
        prop()
    except Exception:  # noqa: BLE001 - a failure (or hypothesis calling it flaky): found
        return True
    return False


def run_random(space, c, evals, seed):
    rng = np.random.default_rng(seed)
    for _ in range(evals):
        c(_box(space, rng))
    return c.first is not None


def run_de(space, c, evals, seed):
    from boundbench.framework.search.targeted import Search, worst_case

    worst_case(Search(space, c), max_evals=evals, seed=seed)
    return c.first is not None


ENGINES = {"portfolio": run_portfolio,
           "hypothesis": lambda s, c, e, seed: run_hypothesis(s, c, e, seed, False),
           "hyp+target": lambda s, c, e, seed: run_hypothesis(s, c, e, seed, True),
           "random": run_random, "scipy DE": run_de}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--engines", nargs="*", default=list(ENGINES), choices=list(ENGINES))
    args = ap.parse_args()
    engines = {e: ENGINES[e] for e in args.engines}
    names = [n for n in BOUNDS if not args.only or any(o in n for o in args.only)]
    wrong = [n for n in names if " / " in n]
    print(f"{len(wrong)} wrong bounds, {len(names) - len(wrong)} correct; {args.evals} calls, "
          f"{args.seeds} seeds")
    stats = {e: {"found_any": 0, "found_all": 0, "seeds": 0, "false": 0, "firsts": [],
                 "seconds": 0.0} for e in engines}
    worst: dict[str, dict[str, float]] = {}
    for name in names:
        space, fn = BOUNDS[name]
        frac = fraction(space, fn) if name in wrong else 0.0
        row = []
        for e, run in engines.items():
            hits = alarms = 0
            best = exact = -math.inf
            for seed in range(args.seeds):
                c = Counter(fn, limit=args.evals)
                t0 = time.perf_counter()
                said = run(space, c, args.evals, seed)
                stats[e]["seconds"] += time.perf_counter() - t0
                best = max(best, c.worst)
                exact = max(exact, c.worst_exact())
                if name in wrong and said:
                    hits += 1
                    stats[e]["firsts"].append(c.first or args.evals)
                elif said:
                    stats[e]["false"] += 1
                    alarms += 1
            worst.setdefault(name, {})[e] = exact
            if name in wrong:
                stats[e]["found_any"] += hits > 0
                stats[e]["found_all"] += hits == args.seeds
                stats[e]["seeds"] += hits
            row.append(f"{e} {hits}/{args.seeds} {exact:.15g}" if name in wrong else
                       f"{e} {exact:.15g}" + (" FALSE ALARM" if alarms else ""))
        tag = f"fails on {100 * frac:.3f}% of the box" if name in wrong else "correct"
        print(f"  {name:<52} {tag:<28} " + " | ".join(row), flush=True)
    print("\n| engine | wrong found (any / every seed) | seeds | false alarms | median calls "
          "to the first violation | seconds |\n|---|---|---|---|---|---|")
    for e, s in stats.items():
        med = float(np.median(s["firsts"])) if s["firsts"] else float("nan")
        print(f"| {e} | {s['found_any']}/{len(wrong)} / {s['found_all']}/{len(wrong)} | "
              f"{s['seeds']}/{len(wrong) * args.seeds} | {s['false']} | {med:g} | "
              f"{s['seconds']:.0f} |")
    if {"portfolio", "scipy DE"} <= set(engines):
        # within the suite's violation tolerance two sizes are one: a supremum that is not
        # attained (Hoeffding's at lambda -> 0) is approached by both to ~1e-10, where float64's
        # noise in the sides decides which instance each engine keeps
        lose = [n for n in wrong if worst[n]["portfolio"] < worst[n]["scipy DE"] * (1 - RTOL)]
        strict = [n for n in wrong if worst[n]["portfolio"] < worst[n]["scipy DE"]]
        print("\nbounds where the portfolio's worst ratio (rescored at 50 digits) is below "
              f"scipy DE's by more than {RTOL:g} relative: {len(lose)} {lose}; below at all: "
              + ", ".join(f"{n} ({worst[n]['portfolio'] / worst[n]['scipy DE'] - 1:.1e})"
                          for n in strict))


if __name__ == "__main__":
    main()
