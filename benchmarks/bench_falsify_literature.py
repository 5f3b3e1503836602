"""Published inequalities with planted errors against five engines (issue 81 item 5).

The bounds are ``literature_bounds.ENTRIES``: twenty inequalities from textbooks and papers
(convexity and means, norms and matrices on boxes of up to 24 dimensions, concentration and
information on integer boxes, special functions), each correct one paired with a planted error
of a kind a referee would make, each wrong one's supremum computed apart from every engine in
mpmath at 50 digits. Every engine gets the same box and the same number of calls of the bound
(counted by one wrapper, shrinking included) at each seed; the engines are those of
``bench_falsify_suite.py``: ``portfolio`` (``boundbench falsify --evaluations N``), plain
hypothesis, hypothesis with ``target(lhs/rhs)``, uniform random draws and differential
evolution (scipy's, as the audit runs it).

It prints, per bound, each engine's seeds that found the planted error and its worst ratio
(the 10 largest float64 ones rescored at 50 digits) against the supremum; per engine, the
wrong bounds found in every seed, false alarms on the correct ones, the median and quartiles of
the calls to the first violation, and the (bound, seed) pairs where the portfolio's worst is
below DE's by more than 1e-9 relative. Run::

    python benchmarks/bench_falsify_literature.py [--evals 2000] [--seeds 10] [--jobs 2]
        [--only NAME ...] [--engines portfolio scipy\\ DE ...]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_falsify_suite import ENGINES, Counter, high_precision  # noqa: E402
from literature_bounds import ENTRIES  # noqa: E402

TINY = 1e-290  # both sides below this: float64 underflow (subnormals), not a ratio


class Scored(Counter):
    """The suite's counter, with the instances whose two sides both underflow (a box's
    subnormal corner: l1 and l2 norms of 5e-324 are 1e-322 and 0) counted apart and left out
    of the worst ratio: there float64 has no digits for either side, and its code (numpy's
    norms) runs at no higher precision to rescore it."""

    def __init__(self, fn: Any, limit: int | None = None) -> None:
        super().__init__(fn, limit)
        self.underflows = 0

    def __call__(self, p: dict) -> tuple[Any, Any]:
        if any(high_precision(v) for v in p.values()):
            return self.fn(p)  # a high-precision recheck's call (Counter's rule)
        if self.limit is not None and self.calls >= self.limit:
            return super().__call__(p)  # past the budget: not scored
        out = self.fn(p)
        lhs, rhs = (float(v) for v in out)
        if abs(lhs) < TINY and abs(rhs) < TINY:
            self.calls += 1
            self.underflows += 1
            return out
        return super().__call__(p)


def one(args: tuple[int, str, str, int, int]) -> dict[str, Any]:
    """One (bound, variant, engine, seed) run: whether it said violated, its first violating
    call, its worst ratio rescored at 50 digits, its seconds."""
    i, variant, engine, seed, evals = args
    e = ENTRIES[i]
    c = Scored(e.wrong if variant == "wrong" else e.correct, limit=evals)
    t0 = time.perf_counter()
    said = bool(ENGINES[engine](e.space, c, evals, seed))
    return {"i": i, "variant": variant, "engine": engine, "seed": seed, "said": said,
            "first": c.first, "worst": c.worst_exact(), "calls": c.calls,
            "underflows": c.underflows, "past": c.past,
            "seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--engines", nargs="*", default=list(ENGINES), choices=list(ENGINES))
    args = ap.parse_args()
    picked = [i for i, e in enumerate(ENTRIES)
              if not args.only or any(o.lower() in e.name.lower() for o in args.only)]
    t0 = time.perf_counter()
    sups = {i: ENTRIES[i].sup() for i in picked}
    print(f"{len(picked)} published bounds, each correct and with a planted error; "
          f"{args.evals} calls, {args.seeds} seeds, engines {', '.join(args.engines)}; "
          f"suprema at 50 digits in {time.perf_counter() - t0:.0f} s", flush=True)
    jobs = [(i, v, eng, s, args.evals) for i in picked for v in ("wrong", "correct")
            for eng in args.engines for s in range(args.seeds)]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(one, jobs, chunksize=1))
    _report(rows, picked, sups, args)
    print(f"\n{time.perf_counter() - t0:.0f} s in all", flush=True)


def _report(rows: list[dict], picked: list[int], sups: dict, args: Any) -> None:
    by = {(r["i"], r["variant"], r["engine"], r["seed"]): r for r in rows}
    for i in picked:
        e, sup = ENTRIES[i], float(sups[i])
        print(f"\n{e.name} ({e.source}); planted: {e.kind}; supremum {sup:.12g} ({e.how})")
        for eng in args.engines:
            w = [by[i, "wrong", eng, s] for s in range(args.seeds)]
            c = [by[i, "correct", eng, s] for s in range(args.seeds)]
            hits = sum(r["said"] for r in w)
            worst = min(r["worst"] for r in w)
            alarms = sum(r["said"] for r in c)
            under = sum(r["underflows"] for r in w + c)
            print(f"  {eng:<11} found {hits}/{args.seeds}; worst/supremum, least over seeds "
                  f"{worst / sup:.12f}; correct: largest {max(r['worst'] for r in c):.12g}"
                  + (f", FALSE ALARMS {alarms}" if alarms else "")
                  + (f"; {under} calls with both sides in float64 underflow" if under else ""))
    print("\n| engine | planted errors found in every seed | (bound, seed) found | false "
          "alarms | calls to the first violation: median [q1, q3] | calls past the budget, "
          "not scored | seconds |")
    print("|---|---|---|---|---|---|---|")
    n = len(picked)
    for eng in args.engines:
        w = [r for r in rows if r["engine"] == eng and r["variant"] == "wrong"]
        every = sum(all(by[i, "wrong", eng, s]["said"] for s in range(args.seeds)) for i in picked)
        firsts = [r["first"] for r in w if r["said"] and r["first"]]
        q = np.percentile(firsts, [25, 50, 75]) if firsts else [math.nan] * 3
        alarms = sum(r["said"] for r in rows if r["engine"] == eng and r["variant"] == "correct")
        secs = sum(r["seconds"] for r in rows if r["engine"] == eng)
        past = sum(r["past"] for r in rows if r["engine"] == eng)
        print(f"| {eng} | {every}/{n} | {sum(r['said'] for r in w)}/{n * args.seeds} | {alarms} "
              f"| {q[1]:g} [{q[0]:g}, {q[2]:g}] | {past} | {secs:.0f} |")
    if {"portfolio", "scipy DE"} <= set(args.engines):
        below = [(ENTRIES[i].name, s, by[i, "wrong", "portfolio", s]["worst"],
                  by[i, "wrong", "scipy DE", s]["worst"]) for i in picked
                 for s in range(args.seeds)
                 if by[i, "wrong", "portfolio", s]["worst"]
                 < by[i, "wrong", "scipy DE", s]["worst"] * (1 - 1e-9)]
        print(f"\n(bound, seed) pairs where the portfolio's worst is below DE's by more than "
              f"1e-9 relative: {len(below)} of {n * args.seeds}")
        for name, s, a, b in below:
            print(f"  {name}, seed {s}: {a:.12g} < {b:.12g}")


if __name__ == "__main__":
    main()
