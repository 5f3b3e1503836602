"""The confidence sequences' calibration tables of ``docs/fine-tuning.md``, remade.

Three measurements, each printed as the Markdown table the page quotes:

1. **False decisions under the null** (the sequences assume Gaussian seed outcomes): for five
   null distributions of a seed's outcome, the share of sequences of up to 60 seeds, stopped at
   their first decision, that exclude the null (1,000 sequences for the paired mean, 300 for
   the std ratio), as ``tests/test_sequential.py`` does for the first two.
2. **Seeds the stopping rule uses** at the effects the standard audit measured, against the
   fixed-n design at 80% power (500 sequences of up to 150 seeds for a mean, 300 of up to 60
   for a std ratio): the median seed count at the first decision.
3. **A trend over levels read sequentially** (each seed's Spearman rho across the levels as one
   observation), under the null of no trend: Lai's t sequence against the empirical-Bernstein
   sequence on rho in [-1, 1] (1,000 nulls of up to 60 seeds); then the seeds the bounded
   sequence needs at a constant rho of -1 and -0.6.
4. **The peeking figure** (issue 64): the share of null comparisons of two arms' spreads that
   have made a false decision by each look (a look after every seed, up to 30), for the F test
   looked at after every seed, the std ratio's confidence sequence, and the calibrated
   fallback (the Brown-Forsythe permutation test, ``boundbench.framework.stats.calibration``) at a
   fixed number of seeds, looked at once; on Gaussian runs, a failed-run mixture (a tenth of
   the runs at the majority class) and t with 3 d.f. Printed as a table, drawn to ``--figure``.

5. **The std ratio's bootstrap interval on Gaussian runs** (``trends.std_ratio_verdict``, what
   the fine-tuning std claims read at fixed seeds): its false decisions under the null at 10,
   30, 60 and 100 runs a side (500 nulls each).

    python benchmarks/sequence_calibration.py [--seed 0] [--quick] [--figure docs/img/peeking.png]
        [--only-peeking | --only-bootstrap]

``--quick`` runs a tenth of the sequences (a smoke run; the page quotes the full one).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from boundbench.framework.stats import sequential as sq
from boundbench.framework.stats import stopping as stp
from boundbench.framework.stats.trends import Z_ALPHA, Z_BETA

SEEDS_MAX = 60
SD = 0.03  # a seed outcome's spread (accuracy differences of a few points)

# a seed's outcome under the null, each with mean 0 and about the spread SD
NULLS = {
    "Gaussian": lambda rng, n: rng.normal(0.0, SD, n),
    "accuracy difference (binomial, 300 texts)":
        lambda rng, n: (rng.binomial(300, 0.84, n) - rng.binomial(300, 0.84, n)) / 300,
    "t with 3 d.f.": lambda rng, n: SD * rng.standard_t(3, n),
    "centred exponential": lambda rng, n: SD * (rng.exponential(1.0, n) - 1.0),
    "centred lognormal": lambda rng, n: SD * (rng.lognormal(0.0, 1.0, n) - np.exp(0.5)),
}

# the standard audit's measured effects (tests/test_sequential.py's PLANTED)
PLANTED = {"fu.plm.surt-distance": ("mean", 0.55), "fu.plm.mmr-margin": ("mean", 3.4),
           "fu.plm.head-vs-full": ("std_ratio", 0.42), "fu.plm.mhloss-std": ("std_ratio", 2.68)}


def _first(low, high, *, null: float, scale: str = "linear", band=None):
    return stp.first_decision(low, high, null=null, expected="increase", band=band, scale=scale)


def false_decisions(rng: np.random.Generator, runs_mean: int, runs_ratio: int) -> None:
    print("| null distribution | false decisions, mean | false decisions, std ratio |")
    print("|---|---|---|")
    for name, draw in NULLS.items():
        wrong_mean = sum(
            _first(*_ends(sq.t_confidence_sequence(draw(rng, SEEDS_MAX))), null=0.0)[0]
            is not None for _ in range(runs_mean))
        wrong_ratio = sum(
            _first(*_ends(sq.std_ratio_confidence_sequence(draw(rng, SEEDS_MAX),
                                                           draw(rng, SEEDS_MAX))),
                   null=1.0, scale="ratio")[0] is not None for _ in range(runs_ratio))
        print(f"| {name} | {100 * wrong_mean / runs_mean:.1f}% | "
              f"{100 * wrong_ratio / runs_ratio:.1f}% |")


def _ends(path):
    return path.low, path.high


def _fixed_design(kind: str, effect: float) -> int:
    if kind == "mean":
        return stp.fixed_n(effect, 1.0)
    return int(np.ceil(1 + ((Z_ALPHA + Z_BETA) / np.log(effect)) ** 2))  # the audit's F-test count


def seeds_used(rng: np.random.Generator, runs_mean: int, runs_ratio: int) -> None:
    print("| effect | median seeds, sequential | fixed-n design, 80% power |")
    print("|---|---|---|")
    for cid, (kind, effect) in PLANTED.items():
        used = []
        for _ in range(runs_mean if kind == "mean" else runs_ratio):
            if kind == "mean":
                p = sq.t_confidence_sequence(rng.normal(effect, 1.0, 150))
                used.append(_first(p.low, p.high, null=0.0)[1])
            else:
                p = sq.std_ratio_confidence_sequence(rng.normal(3.0, effect, SEEDS_MAX),
                                                     rng.normal(0.0, 1.0, SEEDS_MAX))
                used.append(_first(p.low, p.high, null=1.0, scale="ratio")[1])
        what = "mean / SD" if kind == "mean" else "std ratio"
        print(f"| {what} {effect:g} (`{cid}`'s) | {np.median(used):g} | "
              f"{_fixed_design(kind, effect)} |")


def _rho_per_seed(rng: np.random.Generator, levels: int, seeds: int) -> np.ndarray:
    """Each seed's Spearman rho between the levels and outcomes with no trend."""
    x = np.arange(levels)
    return np.array([stats.spearmanr(x, rng.normal(size=levels))[0] for _ in range(seeds)])


def trend_null(rng: np.random.Generator, runs: int) -> None:
    print("| levels | false decisions, *t* sequence on per-seed rho | "
          "empirical Bernstein on rho in [-1, 1] |")
    print("|---|---|---|")
    for levels in (3, 4, 5):
        wrong_t = wrong_eb = 0
        for _ in range(runs):
            rho = _rho_per_seed(rng, levels, SEEDS_MAX)
            wrong_t += _first(*_ends(sq.t_confidence_sequence(rho)), null=0.0)[0] is not None
            eb = sq.eb_confidence_sequence(rho, lower=-1.0, upper=1.0)
            wrong_eb += _first(eb.low, eb.high, null=0.0)[0] is not None
        print(f"| {levels} | {100 * wrong_t / runs:.1f}% | {100 * wrong_eb / runs:.1f}% |")
    for rho in (-1.0, -0.6):
        eb = sq.eb_confidence_sequence(np.full(200, rho), lower=-1.0, upper=1.0)
        print(f"a constant rho of {rho:g}: the bounded sequence decides at "
              f"{_first(eb.low, eb.high, null=0.0)[1]} seeds")


LOOKS = 30
PEEK_NULLS = {
    "Gaussian": lambda rng, n: rng.normal(0.88, 0.01, n),
    "failed-run mixture (a tenth at 0.52)": lambda rng, n: np.where(
        rng.random(n) < 0.1, rng.normal(0.52, 0.005, n), rng.normal(0.88, 0.01, n)),
    "t with 3 d.f.": lambda rng, n: 0.88 + 0.01 * rng.standard_t(3, n),
}


def peeking(rng: np.random.Generator, runs: int, fixed_runs: int, figure: str | None) -> None:
    """False decisions by look k: the F test looked at after every seed (cumulative), the
    std ratio's sequence (cumulative), the permutation test at k seeds looked at once."""
    from boundbench.framework.stats.calibration import dispersion_permutation_status

    ks = np.arange(2, LOOKS + 1)
    fixed_at = (5, 10, 20, 30)
    curves = {}
    for name, draw in PEEK_NULLS.items():
        f_first, cs_first = [], []
        for _ in range(runs):
            a, b = draw(rng, LOOKS), draw(rng, LOOKS)
            va = np.array([np.var(a[:k], ddof=1) for k in ks])
            vb = np.array([np.var(b[:k], ddof=1) for k in ks])
            p = 2 * np.minimum(stats.f.cdf(va / vb, ks - 1, ks - 1),
                               stats.f.sf(va / vb, ks - 1, ks - 1))
            f_first.append(ks[np.argmax(p < 0.05)] if (p < 0.05).any() else np.inf)
            cs = sq.std_ratio_confidence_sequence(a, b)
            d, at = _first(cs.low, cs.high, null=1.0, scale="ratio")
            cs_first.append(int(cs.n[at - 1]) if d is not None else np.inf)
        fixed = [np.mean([dispersion_permutation_status(draw(rng, k), draw(rng, k), rng)[0]
                          in ("supported", "contradicted") for _ in range(fixed_runs)])
                 for k in fixed_at]
        curves[name] = ([np.mean(np.array(f_first) <= k) for k in ks],
                        [np.mean(np.array(cs_first) <= k) for k in ks], fixed)
    print("| outcomes | F test, looked at after every seed (by seed 10 / 30) | "
          "std-ratio sequence (by 10 / 30) | permutation test, one look at 5 / 10 / 20 / 30 |")
    print("|---|---|---|---|")
    for name, (f, cs, fixed) in curves.items():
        print(f"| {name} | {100 * f[8]:.1f}% / {100 * f[-1]:.1f}% | {100 * cs[8]:.1f}% / "
              f"{100 * cs[-1]:.1f}% | " + " / ".join(f"{100 * v:.1f}%" for v in fixed) + " |")
    if figure:
        from boundbench.framework.files import plotting

        fig, axes = plotting.figure(3)
        for ax, (name, (f, cs, fixed)) in zip(axes, curves.items(), strict=True):
            ax.plot(ks, f, "-", label="F test, looked at after every seed")
            ax.plot(ks, cs, "-", label="std-ratio confidence sequence")
            ax.plot(fixed_at, fixed, "o", label="permutation test (fallback), one look")
            ax.axhline(0.05, color="k", ls=":", lw=1, label="5%")
            ax.set(xlabel="seeds (looks)", title=name, ylim=(0, 1))
        axes[0].set_ylabel("share of nulls decided (false)")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2)
        fig.suptitle(f"Peeking at a spread comparison under the null ({runs} nulls a curve)")
        plotting.finalize(fig)
        fig.savefig(figure, dpi=130)
        print(f"figure: {figure}")


def bootstrap_gaussian(rng: np.random.Generator, runs: int) -> None:
    from boundbench.framework.stats.trends import std_ratio_verdict

    print("| runs a side | false decisions, std-ratio bootstrap (Gaussian null) |")
    print("|---|---|")
    for n in (10, 30, 60, 100):
        wrong = sum(std_ratio_verdict(rng.normal(0, 1, n), rng.normal(0, 1, n), rng=rng,
                                      what="x").status in ("supported", "contradicted")
                    for _ in range(runs))
        print(f"| {n} | {100 * wrong / runs:.1f}% ({wrong} of {runs}) |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="a tenth of the sequences")
    ap.add_argument("--figure", default=None, help="where to draw the peeking figure (PNG)")
    ap.add_argument("--only-peeking", action="store_true", help="measurement 4 alone")
    ap.add_argument("--only-bootstrap", action="store_true", help="measurement 5 alone")
    args = ap.parse_args()
    k = 10 if args.quick else 1
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    if args.only_bootstrap:
        print(f"5. The std ratio's bootstrap on Gaussian runs ({500 // k} nulls a row)\n")
        bootstrap_gaussian(rng, 500 // k)
        print(f"\n({time.perf_counter() - t0:.0f} s, seed {args.seed})")
        return
    if args.only_peeking:
        print(f"4. Peeking ({300 // k} nulls a curve, {200 // k} a permutation point)\n")
        peeking(rng, 300 // k, 200 // k, args.figure)
        print(f"\n({time.perf_counter() - t0:.0f} s, seed {args.seed})")
        return
    print(f"1. False decisions under the null ({1000 // k} sequences for the mean, {300 // k} "
          f"for the std ratio, up to {SEEDS_MAX} seeds)\n")
    false_decisions(rng, 1000 // k, 300 // k)
    print(f"\n2. Seeds the stopping rule uses ({500 // k} sequences for a mean, {300 // k} for "
          "a std ratio)\n")
    seeds_used(rng, 500 // k, 300 // k)
    print(f"\n3. A trend over levels read sequentially ({1000 // k} nulls of up to {SEEDS_MAX} "
          "seeds)\n")
    trend_null(rng, 1000 // k)
    print(f"\n4. Peeking ({300 // k} nulls a curve, {200 // k} a permutation point)\n")
    peeking(rng, 300 // k, 200 // k, args.figure)
    print(f"\n5. The std ratio's bootstrap on Gaussian runs ({500 // k} nulls a row)\n")
    bootstrap_gaussian(rng, 500 // k)
    print(f"\n({time.perf_counter() - t0:.0f} s, seed {args.seed})")


if __name__ == "__main__":
    main()
