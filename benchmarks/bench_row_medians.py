"""The bootstrap's row medians (``trends._row_medians``, a sort) against ``np.median(a, axis=1)``
(a partition), in the same process: the end-to-end ratio's 1000 resamples of n sets, as the
calibrated no-effect decision evaluates them thousands of times. The two are compared bit for
bit on every array timed, and the end-to-end ratio itself on the same draws.

    python benchmarks/bench_row_medians.py [--boot 1000] [--n 30 200 201] [--reps 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from boundbench.framework.stats import trends


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boot", type=int, default=1000, help="rows: bootstrap resamples")
    ap.add_argument("--n", type=int, nargs="+", default=[30, 200, 201], help="values a row")
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    for n in args.n:
        a = rng.lognormal(0, 0.05, n)[rng.integers(0, n, (args.boot, n))]
        t0 = time.perf_counter()
        for _ in range(args.reps):
            naive = np.median(a, axis=1)
        t1 = time.perf_counter()
        for _ in range(args.reps):
            ours = trends._row_medians(a)
        t2 = time.perf_counter()
        same = naive.tobytes() == ours.tobytes()
        print(f"{args.boot} x {n}: np.median {(t1 - t0) / args.reps * 1e3:.3f} ms, sort "
              f"{(t2 - t1) / args.reps * 1e3:.3f} ms, ratio {(t1 - t0) / (t2 - t1):.2f}x, "
              f"identical bits {same}")
        assert same
    lo, hi = rng.lognormal(0, 0.05, 200), rng.lognormal(0, 0.05, 200)
    print("end_ratio:", trends.end_ratio(lo, hi, rng=np.random.default_rng(1), paired=True))


if __name__ == "__main__":
    main()
