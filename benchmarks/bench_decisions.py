"""False-decision rates of ``boundbench.decide``'s procedures on a fixed battery of nulls (issue 82
item 2), with a look after every seed, against a negative control that fails visibly.

Each null draws both methods' per-seed metric from one distribution: a family (normal, t3,
exponential, lognormal sigma 1, a failed-run mixture 85% N(0, 1) + 15% N(-6, 0.5), heavy ties
Poisson(0.6)) standardized by its own mean and sd and squashed into [0, 1] by a logistic,
``1 / (1 + exp(-z / 2))``: a bounded metric of that shape, the two methods equal in mean and in
variance. A procedure errs on a null where its confidence sequence ever excludes the true
difference, 0, at some look up to the last seed (``ever_rejects``: every wrong word needs it,
so the rate is an upper bound of the rate of wrong words). Rows:

- ``mean``: the betting sequence on the seed-by-seed differences (claims higher-mean,
  lower-mean, no-effect);
- ``spread``: the betting sequence on ``((t1 - t2)^2 - (c1 - c2)^2) / 2`` of consecutive seeds
  (claim lower-spread);
- ``spread-perm``: the audit's spread claims' test (:func:`~boundbench.framework.stats.decisions.
  permutation.spread_looks`: exact permutation test of ``|x1 - x2|`` at 4, 8, 16, ... seeds,
  each look at its share of alpha), the control shifted by 0.1 (a mean difference is not a
  spread difference); an error is a word at any look;
- ``ratio-cs``: the audit's bounded std-ratio sequence (the no-effect band's interval,
  :func:`~boundbench.framework.stats.decisions.paths.bounded_ratio_path`): ever excludes 1;
- ``share``: the share reading of a mean claim on unbounded values
  (:func:`~boundbench.framework.stats.decisions.shares.share_words`: units in the claimed direction
  against reversed, the exact Clopper-Pearson interval against 1/2, fixed n), on the
  differences ``t - c`` (symmetric about 0: the share is 1/2); an error is a word;
- ``mean-boot``: the percentile bootstrap interval of the mean of ``t - c`` (1,000 resamples),
  fixed n, which ``calibrated_mean`` admits only where its own calibration's upper end is at
  most alpha + 1 point: what it errs on this battery;
- ``trend-perm``: the synthetic trend claims' test (:func:`~boundbench.framework.
  exact_trends.calibrated_trend`: the two-sided permutation test of Spearman's rho), the
  "seeds a side" values spread over 4 levels, 499 permutations (the audit decides with 1,999;
  the test is exact for any number); an error is a word;
- ``paired-perm``: the within-set trend test (``calibrated_paired_trend``), that many sets
  each at 4 levels; an error is a word;
- ``spread-fixed``: the synthetic spread claim's test (:func:`~boundbench.framework.stats.decisions.
  permutation.spread_test`, one look at the whole level), the control shifted by 0.1;
- ``control``: Welch's t test at alpha, a fixed-n test re-applied after every seed from the
  third: the negative control, above alpha by construction.

Printed: the rate with its 95% Clopper-Pearson interval per (procedure, family, seeds a side),
and whether the interval's upper end is at most alpha + 1 point (the rule a procedure is used
under). Run::

    python benchmarks/bench_decisions.py [--nulls 2000] [--sizes 6 12 20 40 100] [--alpha 0.05]

The procedures calibrated per claim (a mean's bootstrap, an end-ratio band, a fitted exponent,
the best sigma's interval) are run on the same six families inside the audit, at each claim's
own sizes and scale (:mod:`boundbench.framework.stats.decisions.battery`); ``--audit DIR/audit.json``
prints those rows from an audit's evidence, with the rule applied to each::

    python benchmarks/bench_decisions.py --audit /tmp/qa/audit.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from boundbench.framework.stats.decisions.battery import FAMILIES, noise
from boundbench.framework.stats.decisions.betting import ever_rejects
from boundbench.framework.stats.decisions.paths import bounded_ratio_path
from boundbench.framework.stats.decisions.permutation import spread_looks, spread_test
from boundbench.framework.stats.decisions.shares import share_words
from boundbench.framework.stats.trends import bootstrap_mean

PROCEDURES = ("mean", "spread", "spread-perm", "ratio-cs", "share", "mean-boot", "trend-perm",
              "paired-perm", "spread-fixed", "control")
LEVELS = 4  # a trend's levels: the seeds a side spread over them (trend-perm), or the sets'
# count with every set at each level (paired-perm)


def _family(name: str, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """The battery family's standardized noise (the package's own,
    :func:`boundbench.framework.stats.decisions.battery.noise`) squashed into [0, 1]."""
    return 1.0 / (1.0 + np.exp(-noise(name, rng, shape) / 2.0))




def _control(t: np.ndarray, c: np.ndarray, alpha: float) -> np.ndarray:
    """Welch's t test after every seed from the third: ever p < alpha."""
    import warnings

    hit = np.zeros(t.shape[0], dtype=bool)
    for k in range(3, t.shape[1] + 1):
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # ties: a zero variance
            p = stats.ttest_ind(t[:, :k], c[:, :k], axis=1, equal_var=False).pvalue
        hit |= np.nan_to_num(p, nan=1.0) < alpha
    return hit


SHIFTS = (0.02, 0.05, 0.1, 0.2)  # mean differences (the metric in [0, 0.8] plus the shift)
RATIOS = (0.9, 0.7, 0.5, 0.3)  # std ratios (the treatment's metric shrunk about 1/2)


def _power(fam: str, n: int, nulls: int, alpha: float) -> tuple[str, str, str]:
    """The smallest mean difference and the largest std ratio the sequence detects (ever
    excludes 0 by the last seed) in 80% of draws, on the grids above: '>' / '<' past them."""
    rng = np.random.default_rng([820, FAMILIES.index(fam), n])
    mean = next((f"{d:g}" for d in SHIFTS if ever_rejects(
        0.8 * _family(fam, rng, (nulls, n)) + d - 0.8 * _family(fam, rng, (nulls, n)),
        value=0.0, lower=-1.0, upper=1.0, alpha=alpha).mean() >= 0.8), f"> {SHIFTS[-1]:g}")
    perm = f"< {RATIOS[-1]:g}"
    for r in RATIOS if n >= 4 else ():
        t = 0.5 + r * (_family(fam, rng, (nulls, n)) - 0.5)
        c = _family(fam, rng, (nulls, n))
        if np.mean([any(lk["word"] == "lower" for lk in spread_looks(t[i], c[i], alpha=alpha,
                                                                      seed=i))
                    for i in range(nulls)]) >= 0.8:
            perm = f"{r:g}"
            break
    spread = f"< {RATIOS[-1]:g}"
    if n >= 2:
        for r in RATIOS:
            t = 0.5 + r * (_family(fam, rng, (nulls, n)) - 0.5)
            if ever_rejects(_spread(t, _family(fam, rng, (nulls, n))), value=0.0, lower=-0.5,
                            upper=0.5, alpha=alpha).mean() >= 0.8:
                spread = f"{r:g}"
                break
    return mean, spread, perm


def _spread(t: np.ndarray, c: np.ndarray) -> np.ndarray:
    k = t.shape[1] // 2
    return ((t[:, 0:2 * k:2] - t[:, 1:2 * k:2]) ** 2 - (c[:, 0:2 * k:2] - c[:, 1:2 * k:2]) ** 2) / 2


def _trend_errors(proc: str, fam: str, t: np.ndarray, n: int, alpha: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Words of the trend tests on nulls with no trend: ``t``'s seeds over :data:`LEVELS`
    levels (one sample), or ``n`` sets each drawn afresh from ``fam`` at every level."""
    from boundbench.framework.stats.exact_trends import N_PERM_SIM, _centred_ranks, _rho_test

    if proc == "trend-perm":
        x = np.sort(np.arange(n) % LEVELS).astype(float)
        ys = t
    else:
        x = np.arange(float(LEVELS))
        ys = _family(fam, rng, (t.shape[0], n, LEVELS))
    rx, dx = _centred_ranks(x)
    return np.array([_rho_test(rx, float(dx), y, rng, sign=-1, n_perm=N_PERM_SIM,
                               alpha=alpha)[0] != "inconclusive" for y in ys])


def _cp(k: int, n: int) -> tuple[float, float]:
    lo = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def _batteries(ev: object, where: str = "") -> list[tuple[str, dict]]:
    """Every (reading, evidence) with a battery in an entry's evidence, readings included."""
    out: list[tuple[str, dict]] = []
    if isinstance(ev, dict):
        if isinstance(ev.get("battery"), dict):
            out.append((where, ev))
        for k, v in ev.items():
            if k != "battery":
                out += _batteries(v, f"{where}/{k}" if where else str(k))
    return out


def audit_rows(path: str) -> None:
    """The per-claim procedures' battery rows recorded by an audit (``--audit``)."""
    import json

    claims = json.load(open(path))["claims"]
    print("| claim | where in its evidence | procedure | family | false decisions, % [95% CI] "
          "| nulls | upper end <= alpha + 1 pt |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for c in claims:
        for where, ev in _batteries(c.get("evidence") or {}):
            # the battery is the first procedure's, also where it was refused for a fallback
            refused = ev.get("refused") or {}
            proc = refused.get("procedure") or ev.get("decided_by", "?")
            no = ("NO: kept, its verdict rejects nothing" if ev.get("calibration_kept") else
                  "NO: refused (a fallback or inconclusive)")
            for fam, b in ev["battery"].items():
                ok = b["high"] <= b["alpha"] + 0.01
                worst = max(worst, b["high"])
                print(f"| {c['id']} | {where or '-'} | {proc} | {fam} | {100 * b['rate']:.1f} "
                      f"[{100 * b['low']:.1f}, {100 * b['high']:.1f}] | {b['n_sim']} | "
                      f"{'yes' if ok else no} |")
    print(f"\nlargest upper end: {100 * worst:.1f}% (a refused procedure decided nothing there; a "
          "kept one stands beside a verdict its rate does not concern)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", help="an audit.json: print its per-claim battery rows and stop")
    ap.add_argument("--nulls", type=int, default=2000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[6, 12, 20, 40, 100])
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--procedures", nargs="+", default=list(PROCEDURES), choices=PROCEDURES)
    ap.add_argument("--no-power", action="store_true")
    args = ap.parse_args()
    if args.audit:
        audit_rows(args.audit)
        return
    a = args.alpha
    t0 = time.perf_counter()
    print(f"{args.nulls} nulls per cell, alpha {a}, a look after every seed\n")
    print("| procedure | family | seeds a side | false decisions, % [95% CI] | upper end <= "
          "alpha + 1 pt |")
    print("|---|---|---|---|---|")
    worst = {**{p: 0.0 for p in PROCEDURES}, "control": 1.0}
    for proc in args.procedures:
        for fam in FAMILIES:
            for n in args.sizes:
                rng = np.random.default_rng([82, FAMILIES.index(fam), n])
                t = _family(fam, rng, (args.nulls, n))
                c = _family(fam, rng, (args.nulls, n))
                if proc == "mean":
                    err = ever_rejects(t - c, value=0.0, lower=-1.0, upper=1.0, alpha=a)
                elif proc == "spread":
                    if n < 2:
                        continue
                    err = ever_rejects(_spread(t, c), value=0.0, lower=-0.5, upper=0.5, alpha=a)
                elif proc == "spread-perm":
                    err = np.array([any(lk["word"] for lk in spread_looks(
                        t[i], c[i] + 0.1, alpha=a, seed=i)) for i in range(args.nulls)])
                elif proc == "ratio-cs":
                    if n < 2:
                        continue
                    err = np.array([bool(((p.low > 1) | (p.high < 1)).any()) for p in (
                        bounded_ratio_path(t[i], c[i], lower=0.0, upper=1.0, alpha=a)
                        for i in range(args.nulls))])
                elif proc == "share":
                    err = share_words(t - c, null=0.0, expected_sign=1, alpha=a) != \
                        "inconclusive"
                elif proc in ("trend-perm", "paired-perm"):
                    err = _trend_errors(proc, fam, t, n, a, rng)
                elif proc == "spread-fixed":
                    if n < 4:
                        continue
                    err = np.array([spread_test(t[i], c[i] + 0.1, alpha=a, seed=i)[0] !=
                                    "inconclusive" for i in range(args.nulls)])
                elif proc == "mean-boot":
                    err = np.array([not (lo <= 0.0 <= hi) for _, lo, hi in (
                        bootstrap_mean(d, rng=np.random.default_rng(i), level=1 - a)
                        for i, d in enumerate(t - c))])
                else:
                    err = _control(t, c, a)
                k = int(err.sum())
                lo, hi = _cp(k, args.nulls)
                ok = hi <= a + 0.01
                if proc != "control":
                    worst[proc] = max(worst[proc], hi)
                elif n == args.sizes[-1]:
                    worst[proc] = min(worst[proc], lo)
                print(f"| {proc} | {fam} | {n} | {100 * k / args.nulls:.1f} [{100 * lo:.1f}, "
                      f"{100 * hi:.1f}] | {'yes' if ok else 'NO'} |")
    print("\nlargest upper end: " + ", ".join(f"{p} {100 * worst[p]:.1f}%" for p in
                                            args.procedures if p != "control")
          + f"; the negative control at {args.sizes[-1]} seeds: lower end at least "
          f"{100 * worst['control']:.1f}% (above alpha: it fails visibly)")
    if args.no_power:
        print(f"{time.perf_counter() - t0:.0f} s")
        return
    print("\npower: the smallest mean difference and the largest std ratio found in 80% of "
          f"{args.nulls} draws (the sequence excludes 0 by the last seed)\n")
    print("| family | seeds a side | mean difference | std ratio (betting) | std ratio "
          "(spread-perm) |")
    print("|---|---|---|---|---|")
    for fam in FAMILIES:
        for n in args.sizes:
            mean, spread, perm = _power(fam, n, args.nulls, a)
            print(f"| {fam} | {n} | {mean} | {spread} | {perm} |")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
