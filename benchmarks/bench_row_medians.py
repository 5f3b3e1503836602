"""The bootstrap's row medians (``trends._row_medians``, a sort) against ``np.median(a, axis=1)``
(a partition), in the same process: the end-to-end ratio's 1000 resamples of n sets, as the
calibrated no-effect decision evaluates them thousands of times. The two are compared bit for
bit on every array timed; ``end_ratio`` (paired and not) and ``median_reversals`` are compared
with the same procedures written with np.median (the module before the change), on the same
draws, at 2, 3, 30, 200 and 201 sets.

    python benchmarks/bench_row_medians.py [--boot 1000] [--n 30 200 201] [--reps 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from boundbench.framework.stats import trends


def naive_end_ratio(lo: np.ndarray, hi: np.ndarray, *, rng: np.random.Generator, paired: bool,
                    n_boot: int = 1000) -> tuple[float, float, float]:
    """``trends.end_ratio`` as it was, with np.median (its checks of the inputs left out)."""
    if paired:
        r = hi / lo
        boot = np.median(r[rng.integers(0, len(r), (n_boot, len(r)))], 1)
        est = float(np.median(r))
    else:
        boot = (np.median(hi[rng.integers(0, len(hi), (n_boot, len(hi)))], 1)
                / np.median(lo[rng.integers(0, len(lo), (n_boot, len(lo)))], 1))
        est = float(np.median(hi) / np.median(lo))
    a, b = np.quantile(boot, [0.025, 0.975])
    return est, float(a), float(b)


def naive_reversal_bounds(groups: list[np.ndarray], *, rng: np.random.Generator,
                          n_boot: int = 1000) -> np.ndarray:
    """The interval ends ``trends.median_reversals`` decides on, with np.median (increasing)."""
    meds = [np.median(g[rng.integers(0, g.size, (n_boot, g.size))], axis=1) for g in groups]
    logs = np.log(np.stack(meds[1:]) / np.stack(meds[:-1]))
    return np.quantile(logs, [0.025, 0.975], axis=1)


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
    for n in (2, 3, 30, 200, 201):
        lo, hi = rng.lognormal(0, 0.05, n), rng.lognormal(0, 0.05, n)
        for paired in (True, False):
            ours = trends.end_ratio(lo, hi, rng=np.random.default_rng(n), paired=paired)
            naive = naive_end_ratio(lo, hi, rng=np.random.default_rng(n), paired=paired)
            assert ours == naive, (n, paired, ours, naive)
        groups = [lo, hi, lo * 1.1]
        rev = trends.median_reversals(groups, expected="increasing", rng=np.random.default_rng(3))
        lo_hi = naive_reversal_bounds(groups, rng=np.random.default_rng(3))
        upper = lo_hi[1]
        bad = upper < 0
        assert rev["monotone"] == (not bad.any()), n
        assert rev["margin"] == float(-upper[bad].min() if bad.any() else upper.min()), n
    print("end_ratio (paired and not) at 2, 3, 30, 200, 201 sets: identical to np.median's; "
          "median_reversals: the same decision and margin")


if __name__ == "__main__":
    main()
