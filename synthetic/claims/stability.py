"""Claims of Fu et al. that need data, SVMs or training: Figures 5-9, Theorem 2.2, Lemmas A.2.3,
A.2.4, A.2.5, Corollary 3.1's head rate and Soudry et al.'s direction rate.

Each check: experiment config (scale-dependent) -> cached tidy table -> verdict -> figure. The
choices the paper leaves open are documented in :mod:`synthetic.experiments`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from boundbench.framework import plotting
from boundbench.framework.registry import Block, CheckContext, Erratum, Outcome, claim
from boundbench.framework.reports import ratio_histogram_outcome
from boundbench.framework.search import Search
from boundbench.framework.verdicts import (
    EQUIVALENCE,
    FRAGILE,
    NUMERIC_RTOL,
    BoundSides,
    Verdict,
    along_t_verdict,
    bootstrap_mean,
    bound_verdict,
    decide_no_effect,
    end_ratio,
    log_spaced,
    measured,
    median_reversals,
    paired_trend_verdict,
    readings_verdict,
    trend_verdict,
    with_margin,
)
from boundbench.synthetic.data import make_separable
from boundbench.synthetic.experiments import (
    FIG5_COMBINED,
    FIG5_DEFAULT,
    HeadsRun,
    QuadraticGrid,
    SoftLOOGrid,
    SVMSweep,
)
from boundbench.synthetic.svm import HardMarginSVM
from boundbench.theory import stability_bounds as sb

# how the errata read the soft-margin statements' existential "for some constant lam" (issue 38)
_LAM_READING = ("lam is the soft-margin weight the proofs fix (the objective lam ||v||^2 + (1/n) "
                "sum hinge); read existentially (for some lam) the statement could not fail, so "
                "the finding reads it as its proof needs it")


# ---------------------------------------------------------------- Figures 6, 7, 9: SVM sweeps


def _sweep(ctx: CheckContext, vary: str, quick: tuple, paper: tuple, **kw) -> tuple[pd.DataFrame,
                                                                                        SVMSweep]:
    cfg = SVMSweep(vary=vary, levels=ctx.pick(quick, paper), n_datasets=ctx.pick(30, 500),
                   n=ctx.pick(300, 2000), seed=ctx.seed, **kw)
    return ctx.cached(f"svm-sweep-{vary}", cfg.config(), lambda: cfg.run(ctx.progress)), cfg


def _sweep_verdict(ctx: CheckContext, df: pd.DataFrame, cfg: SVMSweep, *, x: str, xlabel: str,
                   expected: str) -> Verdict:
    verdict = trend_verdict(df[x].to_numpy(), df["stability"].to_numpy(), expected=expected,
                            rng=ctx.rng(), what=f"normalized LOO stability vs {xlabel}")
    med = df.groupby(f"{cfg.vary}_level")["stability"].median().sort_index()
    # monotone unless some pair of adjacent levels moves the wrong way beyond sampling noise
    # (point medians at 30 datasets a level wander by a few per cent: a tie, not a reversal)
    rev = median_reversals([g.to_numpy() for _, g in
                            df.groupby(f"{cfg.vary}_level")["stability"]],
                           expected=expected, rng=ctx.rng("medians"))
    monotone = rev["monotone"]
    verdict = verdict.with_evidence(**{f"median_stability_at_{k:g}": float(v) for k, v in med.items()})
    realised = (df.svm_margin / cfg.margin).groupby(df[f"{cfg.vary}_level"]).median()
    verdict = verdict.with_evidence(
        n_datasets_per_level=cfg.n_datasets, n=cfg.n if cfg.vary != "n" else "varied", d=cfg.d,
        generator=cfg.generator,
        medians_monotone=monotone, median_end_ratio=float(med.iloc[-1] / med.iloc[0]),
        **({} if cfg.vary == "margin" or cfg.generator != "slab" else
           {f"realised_margin_over_requested_at_{k:g}": float(v) for k, v in realised.items()}),
        seed=ctx.seed)
    verdict = verdict.with_evidence(median_reversals=rev["reversals"])
    if verdict.status == "supported":
        # the decision also rests on the reversal test: its margin counts when nearer
        m = rev["margin"]
        if m / FRAGILE["log ratio"] < verdict.evidence["margin_to_flip"] / FRAGILE["rho"]:
            verdict = verdict.with_evidence(**with_margin(verdict.evidence, m, "log ratio"))
    if verdict.status == "supported" and not monotone:
        # a rank correlation over thousands of points can be "significant" while the level
        # medians turn back: the effect is not identified over the range
        verdict = Verdict("inconclusive", f"{verdict.reason}; but the per-level medians turn "
                          f"back beyond sampling noise ({', '.join(f'{v:.3g}' for v in med)}; "
                          f"{len(rev['reversals'])} adjacent pair(s) with a 95% interval the "
                          f"wrong way; end-to-end ratio {med.iloc[-1] / med.iloc[0]:.3g}), so the "
                          "trend is not identified",
                          with_margin(verdict.evidence, rev["margin"], "log ratio"))
    if verdict.status == "inconclusive" and ctx.scale == "quick" and monotone:
        verdict = verdict.with_evidence(
            decide_with=f"{cfg.n_datasets} datasets a level is too few to decide here: "
            "`--scale paper` runs 500")
    if cfg.vary == "bound":
        each = (df.svm_margin / cfg.margin).to_numpy()
        lo, hi = each.min(), each.max()
        fixed = bool(np.allclose(each, 1.0, rtol=1e-4))
        say = (f"at a margin fixed at {cfg.margin:g} (realised / requested in [{lo:.5f}, "
               f"{hi:.5f}] over every dataset and B)" if fixed else
               f"the margin is not fixed: the realised SVM margin is {realised.iloc[0]:.3g}x the "
               f"requested {cfg.margin:g} at B = {realised.index[0]:g} and "
               f"{realised.iloc[-1]:.3g}x at B = {realised.index[-1]:g}")
        verdict = Verdict(verdict.status, f"{verdict.reason}; {say}",
                          {**verdict.evidence, "margin_fixed": fixed})
    return verdict


def _sweep_panel(ax, df: pd.DataFrame, cfg: SVMSweep, *, x: str, xlabel: str, logx: bool,
                 title: str) -> None:
    ax.scatter(df[x], df["stability"], s=4, alpha=0.25, color="grey", label="one dataset")
    plotting.median_band(ax, df[x], df["stability"], group=df[f"{cfg.vary}_level"],
                         label="median, interquartile band")
    if logx:
        plotting.plain_log_axis(ax, "x", ticks=cfg.levels if cfg.generator == "slab" else None)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(r"normalized LOO stability $\|\hat\Delta\|$ (SVM)")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7)


def _sweep_claim(ctx: CheckContext, df: pd.DataFrame, cfg: SVMSweep, *, x: str,
                 xlabel: str, expected: str, logx: bool) -> Outcome:
    verdict = _sweep_verdict(ctx, df, cfg, x=x, xlabel=xlabel, expected=expected)
    fig, (ax,) = plotting.figure()
    _sweep_panel(ax, df, cfg, x=x, xlabel=xlabel, logx=logx, title=f"{ctx.claim_id}: "
                 f"{verdict.status} (rho = {verdict.evidence['spearman_rho']:.2f})")
    return Outcome(verdict, df, fig, cfg.config())


def _sweep_readings(ctx: CheckContext, runs: dict[str, tuple[pd.DataFrame, SVMSweep]], *,
                    x: str, xlabel: str, expected: str, default: str, what: str) -> Outcome:
    """One sweep claim over the readings of its setup: a verdict per reading, the common one or
    depends-on-reading, and a panel per reading."""
    per = {name: _sweep_verdict(ctx, df, cfg, x=x, xlabel=xlabel, expected=expected)
           for name, (df, cfg) in runs.items()}
    verdict = readings_verdict(per, default=default, what=what)
    fig, axes = plotting.figure(len(runs))
    for ax, (name, (df, cfg)) in zip(axes, runs.items(), strict=True):
        _sweep_panel(ax, df, cfg, x=x, xlabel=xlabel, logx=True,
                     title=f"{name}: {per[name].status} (rho = "
                     f"{per[name].evidence['spearman_rho']:.2f})")
    fig.suptitle(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    table = pd.concat([df.assign(reading=name) for name, (df, _) in runs.items()],
                      ignore_index=True)
    return Outcome(verdict, table, fig, {name: cfg.config() for name, (_, cfg) in runs.items()})


_SWEEP_NOTE = ("Measured on the exact hard-margin SVM (the direction GD converges to), every i "
               "of every dataset; data from make_separable (d = 5, balanced; the coordinate along "
               "the normal uniform on each side of the margin slab, the rest uniform in that "
               "slice of the ball, so not uniform in the ball; d + 1 points placed on the margin, so "
               "the SVM margin is exactly the requested one).")


@claim("fu.fig6.n", paper="fu", where="§4.3.2, Figure 6", kind="trend",
       statement="Fine-tuning a linear head becomes more stable as the number of training "
       "samples n grows.", equation="E_i ||w(S^i)/||w(S^i)|| - w(S)/||w(S)|| || decreases in n",
       notes=_SWEEP_NOTE)
def _fig6(ctx: CheckContext) -> Outcome:
    df, cfg = _sweep(ctx, "n", (100, 200, 400, 800), (250, 500, 1000, 2000, 4000))
    return _sweep_claim(ctx, df, cfg, x="n", xlabel="training samples n",
                        expected="decreasing", logx=True)


@claim("fu.fig7.margin", paper="fu", where="§4.3.3, Figure 7", kind="trend",
       statement="Stability improves as the margin between the classes grows.",
       equation="E_i ||Delta_hat|| decreases in the SVM margin gamma_S",
       notes=_SWEEP_NOTE + " Two readings of how the margin is controlled: centres (the "
       "paper's own construction and the default: two balanced classes uniform in balls of "
       "radius 0.5, their centres moved apart, the margin measured by the SVM) and slab (ours: "
       "the margin set directly by make_separable). Stability is plotted against the realised "
       "SVM margin in both.")
def _fig7(ctx: CheckContext) -> Outcome:
    dist = (1.04, 1.1, 1.2, 1.4, 1.8)  # centre distances: margins from ~0.02 to ~0.4
    runs = {"centres": _sweep(ctx, "distance", dist, dist, generator="centres"),
            "slab": _sweep(ctx, "margin", (0.02, 0.05, 0.1, 0.2, 0.4), (0.02, 0.05, 0.1, 0.2, 0.4))}
    return _sweep_readings(ctx, runs, x="svm_margin", xlabel="realised SVM margin gamma_S",
                           expected="decreasing", default="centres", what="stability vs the margin")


@claim("fu.fig9.bound", paper="fu", where="§4.3.5, Figure 9", kind="trend",
       statement="Stability improves as the bound B on the feature norms decreases.",
       equation="E_i ||Delta_hat|| increases in B = max_i ||x_i||",
       notes=_SWEEP_NOTE + " The paper does not say what stays fixed as B varies, so two "
       "readings run: fixed-margin (ours and the default: B varies at a margin fixed at 0.1) "
       "and centres-spread (the paper's Fig. 7 construction with the class centres 1.2 apart "
       "and the classes' radius growing from 0.1 to 0.55, so B grows and the margin shrinks "
       "with it). Stability is plotted against the realised B in both.")
def _fig9(ctx: CheckContext) -> Outcome:
    radii = (0.1, 0.2, 0.3, 0.45, 0.55)  # centres 1.2 apart: margins from ~0.5 to ~0.05
    runs = {"fixed-margin": _sweep(ctx, "bound", (0.5, 1.0, 2.0, 4.0, 8.0),
                                   (0.5, 1.0, 2.0, 4.0, 8.0)),
            "centres-spread": _sweep(ctx, "radius", radii, radii, generator="centres",
                                     distance=1.2)}
    return _sweep_readings(ctx, runs, x="max_norm", xlabel="feature bound B = max ||x_i||",
                           expected="increasing", default="fixed-margin", what="stability vs B")


# ------------------------------------------------------- Figure 5, Corollary 3.1, Soudry et al.




FIG5_PAPER_DATASETS = 500  # "we randomly generate 500 training sets" (Fu et al. §4.3)
# --scale paper runs each reading on this many (a declared departure: 8 readings x 500 datasets
# are about 8 h on 2 cores; --datasets 500 runs the paper's count, on a cluster with --workers)
FIG5_DECLARED_DATASETS = 100
# float32 slopes are used for a reading where their measured error on the stability is 100x
# inside the no-effect band the verdict decides with (1 +- EQUIVALENCE)
FLOAT32_TOLERANCE = EQUIVALENCE / 100
FLOAT32_CHECK_DATASETS = 2


def _heads_config(ctx: CheckContext, reading: str) -> HeadsRun:
    """A reading's run before its precision is chosen: ``ctx.datasets`` datasets (``--datasets``)
    or the scale's count (10 quick, :data:`FIG5_DECLARED_DATASETS` at paper scale)."""
    return HeadsRun(n_datasets=ctx.datasets or ctx.pick(10, FIG5_DECLARED_DATASETS),
                    n=ctx.pick(150, 2000), steps=ctx.pick(600, 3000), k_loo=ctx.pick(3, 4),
                    seed=ctx.seed, **FIG5_COMBINED[reading])


def _float32_check(ctx: CheckContext, cfg: HeadsRun) -> dict[str, Any] | None:
    """At paper scale, float32 slopes' measured error on the stability for this reading (its
    first datasets, float32 against float64 at the full n and steps), cached; ``None`` below
    the paper scale, which stays in float64."""
    if ctx.scale != "paper":
        return None
    config = {**cfg.block_config(0), "check_datasets": FLOAT32_CHECK_DATASETS}
    t = ctx.cached("mhloss-heads-float32-check", config, lambda: pd.DataFrame(
        [cfg.float32_error(datasets=FLOAT32_CHECK_DATASETS)]))
    err = float(t.max_relative_error.iloc[0])
    return {"max_relative_error": err, "tolerance": FLOAT32_TOLERANCE,
            "datasets": int(t.datasets.iloc[0]), "slopes": "float32" if err <=
            FLOAT32_TOLERANCE else "float64"}


def _heads_run(ctx: CheckContext, reading: str) -> tuple[HeadsRun, dict[str, Any] | None]:
    """A reading's run, in float32 slopes where its measured error allows (paper scale)."""
    cfg = _heads_config(ctx, reading)
    check = _float32_check(ctx, cfg)
    if check is not None and check["slopes"] == "float32":
        cfg = replace(cfg, slope="float32")
    return cfg, check


def _fig5_blocks(ctx: CheckContext) -> list[Block]:
    """Every block of every reading of Fig. 5's heads: what a cluster computes first."""
    from functools import partial

    out = []
    for reading in FIG5_COMBINED:
        cfg, _ = _heads_run(ctx, reading)
        out += [Block("mhloss-heads-block", cfg.block_config(b), partial(cfg.run_block, b))
                for b in range(cfg.n_blocks)]
    return out


def _heads(ctx: CheckContext, reading: str = FIG5_DEFAULT) -> tuple[pd.DataFrame, HeadsRun]:
    cfg, _ = _heads_run(ctx, reading)
    # each block cached on its own: a run of more datasets reuses a smaller one's blocks, and
    # blocks a cluster computed (audit --workers) are read here
    df = cfg.run(ctx.progress, blocks=lambda b: ctx.cached(
        "mhloss-heads-block", cfg.block_config(b), lambda: cfg.run_block(b)))
    return df, cfg


def _datasets_note(cfg: HeadsRun, *, short: bool = False) -> str:
    """How many of the paper's 500 datasets a reading ran: a declared departure below 500
    (``short``: for a figure's title)."""
    if short:
        return f"{cfg.n_datasets} of the paper's {FIG5_PAPER_DATASETS} datasets"
    if cfg.n_datasets >= FIG5_PAPER_DATASETS:
        return f"{cfg.n_datasets} datasets per reading (the paper's {FIG5_PAPER_DATASETS})"
    return (f"{cfg.n_datasets} of the paper's {FIG5_PAPER_DATASETS} datasets per reading "
            "(--datasets 500 runs them all)")


def _t_summary(v: Verdict) -> str:
    """A panel's verdict: one word where t does not change it, else its ranges of t."""
    return v.evidence.get("t_ranges", v.status) if v.status == "depends-on-reading" else v.status


def _fig5_at(ctx: CheckContext, df: pd.DataFrame, cfg: HeadsRun, t: int) -> Verdict:
    """The trend within datasets at step ``t``, a change inside 1 +- 10% over the whole range
    of H being no effect."""
    at = df[df.step == t]
    wide = at.pivot(index="dataset", columns="heads", values="loo_stability")
    verdict = paired_trend_verdict(wide.columns.to_numpy(), wide.to_numpy(),
                                   expected="decreasing", rng=ctx.rng(f"t{t}"),
                                   what=f"LOO stability at t = {t} vs H")
    # no effect is tested before the trend: over 500 datasets a 0.1% drift is a significant
    # rank trend, but not the effect the figure claims
    return decide_no_effect(verdict, end_ratio(wide.iloc[:, 0].to_numpy(),
                                               wide.iloc[:, -1].to_numpy(),
                                               rng=ctx.rng(f"ratio t{t}"), paired=True),
                            f"H in [{min(cfg.heads)}, {max(cfg.heads)}]", before_trend=True)


def _fig5_reading(ctx: CheckContext, df: pd.DataFrame, cfg: HeadsRun) -> tuple[Verdict,
                                                                                  pd.Series]:
    """One reading's verdict: decided at log-spaced steps over the paper's whole range of t
    (:func:`along_t_verdict`: where it changes with t, it says where it holds); and the paired
    ratio per step."""
    verdict = along_t_verdict({t: _fig5_at(ctx, df, cfg, t) for t in log_spaced(df.step)},
                              what="LOO stability vs H")
    last = df[df.step == df.step.max()]
    med = last.groupby("heads")["loo_stability"].median()
    base = df[df.heads == min(cfg.heads)].set_index(["dataset", "step"]).loo_stability
    widest = df[df.heads == max(cfg.heads)].set_index(["dataset", "step"]).loo_stability
    by_t = (widest / base).groupby(level="step").median()
    hi, lo = max(cfg.heads), min(cfg.heads)
    verdict = verdict.with_evidence(**{f"median_stability_H{h}": float(v) for h, v in med.items()},
                                    **{f"best_median_ratio_H{hi}_to_H{lo}": float(by_t.min()),
                                       "at_step": int(by_t.idxmin()),
                                       f"median_ratio_H{hi}_to_H{lo}_at_step_1":
                                           float(by_t.iloc[0])})
    return verdict, by_t


@claim("fu.fig5.heads", paper="fu", where="§4.3.1, Figure 5", kind="trend", blocks=_fig5_blocks,
       statement="With the multi-head loss (H heads, predict with the mean head), more heads give "
       "a more stable head after the same number of GD steps.",
       equation="E_i ||Delta_hat(t)|| of the mean head decreases in H at fixed t",
       notes="Logistic loss, LOO on sampled i; the dashed line is the exact SVM's stability on "
       "the same datasets. The paper leaves the setup open, so every reading runs: "
       "shared-start (the LOO runs restart from the full run's heads, N(0, 1/D), GD step "
       "1/beta_eff per head; ours), fresh-loo-start (the LOO runs draw their own heads), "
       "init-30 (heads 30x larger at the start), eq10-fixed-step (eq. 10's mean over heads with "
       "one head's step, so each head moves H times slower), and every combination of the "
       "three (8 readings; e.g. fresh-loo-start+init-30). Not run: a squared loss, one reading "
       "of the section's 'linear regression model': GD on the squared loss converges to the "
       "least-squares head, not to the max-margin direction Fig. 5's SVM line and Cor. 3.1 "
       "are about, and the paper's analysis (Lemmas A.2.x, Thm 2.4) is for the logistic loss, "
       "so we read the phrase as the linear (logistic-regression) head. Within a reading the "
       "H-head model "
       "is the mean of the first H heads (one run of max(H) where heads train independently), "
       "so every dataset is measured at every H on common starts: the trend is taken within "
       "datasets, and a change inside 1 +- 10% over the whole range of H is no effect. Each "
       "reading is decided at log-spaced steps over the whole range of t the run records (the "
       "paper plots t on a log axis); where its verdict changes with t, it says for which t "
       "each holds, and t counts as an axis like a reading.")
def _fig5(ctx: CheckContext) -> Outcome:
    per, tables, ratios, cfgs, checks = {}, [], {}, {}, {}
    for name in FIG5_COMBINED:
        df, cfg = _heads(ctx, name)
        per[name], ratios[name] = _fig5_reading(ctx, df, cfg)
        tables.append(df.assign(reading=name))
        cfgs[name] = cfg
        checks[name] = _float32_check(ctx, _heads_config(ctx, name))
    verdict = readings_verdict(per, default=FIG5_DEFAULT, what="stability vs heads H")
    cfg, df = cfgs[FIG5_DEFAULT], tables[0]
    verdict = verdict.with_evidence(
        svm_median_stability=float(df[df.step == df.step.max()].svm_loo_stability.median()),
        datasets_note=_datasets_note(cfg), paper_datasets=FIG5_PAPER_DATASETS,
        slopes={name: c.slope for name, c in cfgs.items()},
        **({"float32_check": checks} if any(checks.values()) else {}),
        steps=cfg.steps, n_datasets=cfg.n_datasets, n=cfg.n,
        loo=f"{cfg.k_loo} i per dataset, drawn uniformly without replacement",
        nested_heads=cfg.nested, seed=ctx.seed)
    fig, axes = plotting.figure(1 + len(FIG5_COMBINED))
    a1, rest = axes[0], axes[1:]
    for h in cfg.heads:
        sub = df[df.heads == h]
        plotting.median_band(a1, sub.step, sub.loo_stability, label=f"H = {h}")
    a1.axhline(df.svm_loo_stability.median(), color="k", ls="--", lw=1, label="SVM")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("GD steps t")
    a1.set_ylabel(r"normalized LOO stability $\|\hat\Delta\|$")
    a1.set_title(f"{FIG5_DEFAULT}: {_t_summary(per[FIG5_DEFAULT])}", fontsize=8)
    a1.legend(fontsize=7)
    lo_h = min(cfg.heads)
    for ax, (name, table) in zip(rest, zip(FIG5_COMBINED, tables, strict=True), strict=True):
        base = table[table.heads == lo_h].set_index(["dataset", "step"]).loo_stability
        for h in cfg.heads[1:]:
            rel = table[table.heads == h].set_index(["dataset", "step"]).loo_stability / base
            plotting.median_band(ax, rel.index.get_level_values("step"), rel.to_numpy(),
                                 label=f"H = {h}")
        ax.axhspan(1 - EQUIVALENCE, 1 + EQUIVALENCE, color="grey", alpha=0.12, lw=0,
                   label=f"no effect (1 +- {EQUIVALENCE:g})")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("GD steps t")
        ax.set_title(f"{name}: {_t_summary(per[name])}", fontsize=8)
        for t in per[name].evidence.get("decided_at_steps", []):
            ax.axvline(t, color="grey", ls=":", lw=0.6)
    rest[0].set_ylabel(f"stability at H / at H = {lo_h}, same dataset")
    rest[0].legend(fontsize=7)
    fig.suptitle(f"{ctx.claim_id}: {verdict.status} ({_datasets_note(cfg, short=True)})",
                 fontsize=9)
    return Outcome(verdict, pd.concat(tables, ignore_index=True), fig, cfg.config())


def _cor31_reading(ctx: CheckContext, df: pd.DataFrame, cfg: HeadsRun) -> tuple[Verdict,
                                                                                   pd.DataFrame]:
    sub = df[df.heads >= 5]
    rng = ctx.rng()
    rows = []
    for t, g in sub.groupby("step"):
        piv = g.pivot(index="dataset", columns="heads", values="gap_to_penalized_svm")
        logh, gaps = np.log(piv.columns.to_numpy(dtype=float)), np.log(measured(piv.to_numpy()))
        k = len(piv)
        boot = [np.polyfit(logh, np.median(gaps[rng.integers(0, k, k)], axis=0), 1)[0]
                for _ in range(ctx.pick(300, 1000))]
        lo, hi = np.quantile(boot, [0.025, 0.975])
        rows.append({"step": t, "exponent": np.polyfit(logh, np.median(gaps, axis=0), 1)[0],
                     "ci_low": lo, "ci_high": hi})
    fits = pd.DataFrame(rows)
    by_t = {}
    for t in log_spaced(fits.step):
        f = fits[fits.step == t].iloc[0]
        m = with_margin({"fitted_exponent": float(f.exponent), "ci_low": float(f.ci_low),
                         "ci_high": float(f.ci_high)}, abs(f.ci_low + 0.5), "exponent")
        by_t[int(t)] = Verdict("contradicted" if f.ci_low > -0.5 else "supported",
                               f"gap ~ H^{f.exponent:.3g} (95% CI [{f.ci_low:.3g}, "
                               f"{f.ci_high:.3g}]) at t = {int(t)}", m)
    along = along_t_verdict(by_t, what="gap exponent in H")
    last = fits.iloc[-1]
    early = fits.iloc[(fits.step - 5).abs().argmin()]
    ev = {"fitted_exponent": float(last.exponent), "ci_low": float(last.ci_low),
          "ci_high": float(last.ci_high), "predicted": -0.5, "at_step": int(last.step),
          "exponent_at_step_5": float(early.exponent),
          "steps_with_ci_at_or_below_minus_half": int((fits.ci_low <= -0.5).sum()),
          "n_recorded_steps": len(fits), "n_datasets": cfg.n_datasets,
          "heads": [h for h in cfg.heads if h >= 5], "seed": ctx.seed}
    ev = {**ev, **{k: along.evidence[k] for k in ("by_t", "t_ranges", "decided_at_steps",
                                                     "margin_to_flip", "margin_units", "fragile")}}
    ci = (f"H^{last.exponent:.3g} (95% CI [{last.ci_low:.3g}, {last.ci_high:.3g}]) at "
          f"t = {int(last.step)}")
    if along.status == "depends-on-reading":
        return Verdict(along.status, f"{along.reason}; slower than H^-0.5 where contradicted",
                       ev), fits
    if along.status == "contradicted":
        return Verdict("contradicted", f"gap ~ {ci}: slower than the predicted H^-0.5 "
                       f"{along.evidence['t_ranges'].removeprefix('contradicted ')} (at t = "
                       f"{int(early.step)} the exponent is {early.exponent:.2f})", ev), fits
    return Verdict("supported", f"gap ~ {ci}: at least as fast as H^-0.5 "
                   f"{along.evidence['t_ranges'].removeprefix('supported ')}", ev), fits


@claim("fu.cor3.1.sqrt-h", functions=(sb.cor31_head_factor,), blocks=_fig5_blocks,
       erratum=Erratum(
           "statement",
           "The rate: the direction gap of the mean of H heads does not shrink like H^(-1/2) at "
           "a fixed step under any of Fig. 5's readings.",
           constants="The constant in O(H^(-1/2)) and delta are free; the claim tests the "
           "exponent of H, which no constant changes."),
       paper="fu", where="Corollary 3.1, eq. (11)", kind="trend",
       statement="Averaging H heads speeds up the direction convergence by a factor "
       "sqrt((2 + 8 ln(1/delta))/H): at a fixed step the gap to the max-margin direction shrinks "
       "like 1/sqrt(H).",
       equation="|| w_bar(t)/||w_bar(t)|| - w_hat/||w_hat|| || = O(H^(-1/2)) at fixed t",
       notes="The gap is measured to the direction GD converges to, the bias-penalized SVM "
       "(fu.thm2.4.svm-limit). Exponent fitted to log(median gap over datasets) vs log H over "
       "H >= 5 at every recorded step; interval by bootstrap over datasets. The verdict is taken "
       "at log-spaced steps over the whole recorded range of t: supported where the interval "
       "reaches -1/2 or below, contradicted where it lies above -1/2 (slower than predicted); "
       "where that changes with t, the verdict gives the ranges. Run under each of Fig. 5's "
       "readings (fu.fig5.heads).")
def _cor31(ctx: CheckContext) -> Outcome:
    per, fits_all = {}, []
    for name in FIG5_COMBINED:
        df, cfg = _heads(ctx, name)
        per[name], fits = _cor31_reading(ctx, df, cfg)
        fits_all.append(fits.assign(reading=name))
    verdict = readings_verdict(per, default=FIG5_DEFAULT, what="gap exponent in H")
    df, cfg = _heads(ctx, FIG5_DEFAULT)
    verdict = verdict.with_evidence(datasets_note=_datasets_note(cfg),
                                    paper_datasets=FIG5_PAPER_DATASETS)
    sub = df[df.heads >= 5]
    fits = fits_all[0]
    last_step, early_step = int(fits.step.iloc[-1]), int(fits.step.iloc[(fits.step - 5).abs()
                                                                         .argmin()])
    fig, (a1, a2) = plotting.figure(2)
    for t in sorted({early_step, int(fits.step.iloc[len(fits) // 2]), last_step}):
        g = sub[sub.step == t]
        plotting.median_band(a1, g.heads, g.gap_to_penalized_svm, label=f"t = {t}")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("heads H")
    a1.set_ylabel("direction gap of the mean head to GD's limit\n(the bias-penalized SVM)")
    a1.set_title(f"{FIG5_DEFAULT}", fontsize=8)
    a1.legend(fontsize=7)
    for name, f in zip(FIG5_COMBINED, fits_all, strict=True):
        (line,) = a2.plot(f.step, f.exponent, "o-", ms=2,
                          label=f"{name}: {_t_summary(per[name])}")
        a2.fill_between(f.step, f.ci_low, f.ci_high, alpha=0.15, lw=0, color=line.get_color())
    a2.axhline(-0.5, color="k", ls="--", lw=1, label="Cor. 3.1: -1/2")
    a2.axhline(0.0, color="grey", ls=":", lw=1)
    a2.set_xscale("log")
    a2.set_xlabel("GD steps t")
    a2.set_ylabel("exponent a in gap ~ H^a (95% CI)")
    a2.legend(fontsize=7)
    a2.set_title("exponent per reading", fontsize=8)
    fig.suptitle(f"{ctx.claim_id}: {verdict.status} ({_datasets_note(cfg, short=True)})",
                 fontsize=9)
    return Outcome(verdict, pd.concat(fits_all, ignore_index=True), fig, cfg.config())


def _gd_gaps(X: np.ndarray, y: np.ndarray, *, steps: int, record: int, seed: int) -> dict:
    """One GD head per dataset and its direction gaps, at every recorded step, to the two
    max-margin solutions (unit vectors): the free-intercept SVM and the bias-penalized one."""
    from boundbench.synthetic.stability import paper_head
    from boundbench.synthetic.svm import BiasPenalizedSVM
    from boundbench.synthetic.train import train_heads

    svm = HardMarginSVM().fit(X, y)
    refs = {"free": paper_head(svm.coef_, svm.intercept_),
            "penalized": BiasPenalizedSVM().fit(X, y).coef_}
    refs = {k: r / np.linalg.norm(r, axis=-1, keepdims=True) for k, r in refs.items()}
    gd = train_heads(X, y, steps=steps, record=record, seed=seed)
    dirs, T = gd.directions[:, 0], len(gd.steps)  # (k, T, D)
    return {"dataset": np.repeat(np.arange(len(X)), T), "step": np.tile(gd.steps, len(X)),
            "gap_free_svm": np.linalg.norm(dirs - refs["free"][:, None], axis=-1).ravel(),
            "gap_penalized_svm": np.linalg.norm(dirs - refs["penalized"][:, None],
                                                axis=-1).ravel(),
            "svm_separation": np.repeat(np.linalg.norm(refs["free"] - refs["penalized"],
                                                       axis=-1), T)}


def _rate_table(ctx: CheckContext) -> tuple[pd.DataFrame, dict]:
    """One GD head per dataset over several decades of t, with its gaps to both max-margin
    solutions."""
    cfg = {"k": ctx.pick(12, 100), "n": 100, "d": 5, "margin": 0.1, "bound": 1.0,
           "steps": ctx.pick(100_000, 1_000_000), "seed": ctx.seed}

    def compute() -> pd.DataFrame:
        rng = ctx.table_rng("soudry-rate")
        data = make_separable(n_datasets=cfg["k"], n=cfg["n"], d=cfg["d"], margin=cfg["margin"],
                              bound=cfg["bound"], seed=rng)
        gaps = _gd_gaps(data.X, data.y, steps=cfg["steps"], record=40,
                        seed=int(rng.integers(2**31)))
        return pd.DataFrame({k: v for k, v in gaps.items() if k != "svm_separation"})

    return ctx.cached("soudry-rate", cfg, compute), cfg


@claim("soudry.direction-rate", functions=(sb.thm24_direction_rate,),
       paper="soudry", where="Theorem 5 (used by Fu et al. Thm 2.4)",
       kind="trend",
       statement="Gradient descent on separable data converges in direction to the max-margin "
       "solution at the rate log log t / log t.",
       equation="|| w(t)/||w(t)|| - w_hat/||w_hat|| || = O(log log t / log t)",
       notes="One head, logistic loss, step 1/beta_eff, t up to 1e5 (quick) or 1e6 (paper): a "
       "1/log t rate needs decades of t to be identified. The reference is the max-margin "
       "solution of the augmented features GD runs on (the bias-penalized SVM, see "
       "fu.thm2.4.svm-limit); the gap to the free-intercept SVM is in the table and figure. Per "
       "dataset, the exponent a of gap ~ (log log t / log t)^a is fitted over t >= 100; the "
       "rate holds if a >= 1 (tolerance 0.1): supported if the bootstrap interval of the mean "
       "exponent lies above 0.9, contradicted if below.")
def _soudry(ctx: CheckContext) -> Outcome:
    df, cfg = _rate_table(ctx)
    one = df[df.step >= 100]
    piv = one.pivot(index="dataset", columns="step", values="gap_penalized_svm")
    r = np.log(sb.thm24_direction_rate(piv.columns.to_numpy(dtype=float)))
    a = np.array([np.polyfit(r, np.log(row), 1)[0] for row in piv.to_numpy()])
    _, lo, hi = bootstrap_mean(a, rng=ctx.rng())
    ev: dict[str, Any] = {"mean_exponent": float(a.mean()), "ci_low": float(lo), "ci_high": float(hi),
          "tolerance": 0.1, "t_range": [int(piv.columns.min()), int(piv.columns.max())],
          "decades_of_t": float(np.log10(piv.columns.max() / piv.columns.min())),
          "n_datasets": len(a), "reference": "bias-penalized SVM", "seed": ctx.seed}
    what = (f"gap to the bias-penalized SVM ~ rate^a with a = {a.mean():.2f} (95% CI "
            f"[{lo:.2f}, {hi:.2f}]) over t in [{ev['t_range'][0]}, {ev['t_range'][1]:,}]")
    status = "supported" if lo > 0.9 else "contradicted" if hi < 0.9 else "inconclusive"
    verdict = Verdict(status, what, ev)
    fig, (ax,) = plotting.figure()
    plotting.median_band(ax, df.step, df.gap_penalized_svm,
                         label="to the bias-penalized SVM (GD's limit)")
    plotting.median_band(ax, df.step, df.gap_free_svm, label="to the free-intercept SVM")
    t = piv.columns.to_numpy(dtype=float)
    scale = np.median(piv.to_numpy()[:, -1]) / sb.thm24_direction_rate(t[-1])
    ax.plot(t, scale * sb.thm24_direction_rate(t), "k--", lw=1, label="C log log t / log t")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("GD steps t")
    ax.set_ylabel("direction gap (median, IQR over datasets)")
    ax.set_title(f"{ctx.claim_id}: {status}", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(verdict, df, fig, cfg)


# ----------------------------------------------------------- Theorem 2.2 and Figure 8


def _quadratic(ctx: CheckContext) -> tuple[pd.DataFrame, QuadraticGrid]:
    cfg = QuadraticGrid(n_datasets=ctx.pick(10, 100), k_loo=ctx.pick(5, 20), seed=ctx.seed)
    df = ctx.cached("thm22-grid", cfg.config(), lambda: cfg.run(ctx.progress))
    return df, cfg


# What L is for Theorem 2.2's quadratic (the theorem takes an L-Lipschitz f and then analyses
# its Taylor quadratic, eq. 2, which no global L bounds): local-L, the quadratic's Lipschitz
# constant on the ball GD visits, beta ||w0 - w*|| (the extract's reading, ours); global-L, a loss
# that is that quadratic on the unit ball around w* and Lipschitz beyond it, L = beta max(||w0 -
# w*||, 1), whose L does not shrink with the start's distance
THM22_READINGS = {"local-L": lambda beta, dist0: beta * dist0,
                  "global-L": lambda beta, dist0: beta * np.maximum(dist0, 1.0)}


def _thm22_table(df: pd.DataFrame) -> pd.DataFrame:
    cells = df.groupby(["dist0", "kappa", "n", "beta"], as_index=False).agg(
        loo_distance=("loo_distance", "mean"), loo_distance_max=("loo_distance_max", "max"))
    for name, lip in THM22_READINGS.items():
        kw = dict(lipschitz=lip(cells.beta, cells.dist0), beta=cells.beta,
                  mu=cells.kappa * cells.beta, dist0=cells.dist0, n=cells.n)
        cells[f"rhs_main_{name}"] = sb.thm22_main_rhs(**kw)
        cells[f"rhs_appendix_{name}"] = sb.thm22_appendix_rhs(**kw)
    return cells


def _thm22_claim(ctx: CheckContext, form: str) -> Outcome:
    df, cfg = _quadratic(ctx)
    cells = _thm22_table(df)
    per = {}
    for name in THM22_READINGS:
        rhs = cells[f"rhs_{form}_{name}"]
        v = bound_verdict(BoundSides(cells.loo_distance.to_numpy(), rhs.to_numpy()), rtol=NUMERIC_RTOL,
                          what=f"E ||A(S^i) - A(S)|| <= {form} right side ({name})")
        worst = cells.loc[(cells.loo_distance / rhs).idxmax()]
        per[name] = v.with_evidence(worst_cell=f"dist0={worst.dist0:g}, mu/beta={worst.kappa:g}, "
                                    f"n={int(worst.n)}")
    verdict = readings_verdict(per, default="local-L", what=f"Theorem 2.2 ({form} form)")
    verdict = verdict.with_evidence(lipschitz="local-L: beta * dist0 (valid on the ball GD "
                                    "visits); global-L: beta * max(dist0, 1)",
                                    n_datasets_per_cell=cfg.n_datasets, k_loo=cfg.k_loo,
                                    seed=ctx.seed)
    cells = cells.assign(rhs=cells[f"rhs_{form}_local-L"], lhs=cells.loo_distance)
    fig, (ax,) = plotting.figure()
    for (kappa, n), g in cells.groupby(["kappa", "n"]):
        (line,) = ax.plot(g.dist0, g.loo_distance, "o-", ms=3, label=f"measured mu/beta={kappa:g},"
                          f" n={n}")
        ax.plot(g.dist0, g[f"rhs_{form}_local-L"], "--", lw=1, color=line.get_color())
        ax.plot(g.dist0, g[f"rhs_{form}_global-L"], ":", lw=1, color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("||w0 - w*||")
    ax.set_ylabel("E sup_t ||w_t(S^i) - w_t(S)||\n(dashed: bound, local L; dotted: global L)")
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(verdict, cells, fig, cfg.config())


_NMAX = 12  # the search's largest n: the bound's 1/n makes small n the hard case


def _thm22_search_sides(form: str):
    """Both sides of Theorem 2.2 on 2-D instances of its setting, batched over candidates: n
    unit vectors u_j at free angles, A_j = mu I + (beta - mu) u_j u_j^T (beta = 1), w0 - w* of
    norm dist0 at a free angle; GD with eta = 1/beta in closed form through the eigenvalues of
    I - A, sup over 40/mu steps, the mean over every i."""
    def sides(p: dict):
        n = np.asarray(p["n"])
        kap = np.asarray(p["mu_over_beta"], dtype=float)
        th = np.stack([np.asarray(p[f"u{j}"], dtype=float) for j in range(_NMAX)], -1)
        U = np.stack([np.cos(th), np.sin(th)], -1)  # (k, NMAX, 2)
        keep = np.arange(_NMAX)[None, :] < n[:, None]  # (k, NMAX)
        outer = np.einsum("kni,knj->knij", U, U) * keep[..., None, None]
        S = outer.sum(1)
        eye = np.eye(2)
        A_full = kap[:, None, None] * eye + (1 - kap)[:, None, None] * S / n[:, None, None]
        A_loo = (kap[:, None, None, None] * eye + (1 - kap)[:, None, None, None]
                 * (S[:, None] - outer) / (n - 1)[:, None, None, None])
        M = eye - np.concatenate([A_full[:, None], A_loo], 1)  # (k, 1 + NMAX, 2, 2)
        lam, V = np.linalg.eigh(M)
        d0 = np.asarray(p["dist0"], dtype=float)
        ph = np.asarray(p["start_angle"], dtype=float)
        e0 = d0[:, None] * np.stack([np.cos(ph), np.sin(ph)], -1)
        T = int(np.ceil(40 / kap.min()))
        t = np.arange(1, T + 1)
        coef = np.einsum("krij,ki->krj", V, e0)  # e0 in each eigenbasis
        e = np.einsum("krij,krtj->krti", V, lam[:, :, None, :] ** t[None, None, :, None]
                      * coef[:, :, None, :])  # (k, 1 + NMAX, T, 2)
        sup = np.linalg.norm(e[:, 1:] - e[:, :1], axis=-1).max(-1)  # (k, NMAX)
        lhs = np.where(keep, sup, 0).sum(1) / n
        kw = dict(lipschitz=d0, beta=np.ones_like(d0), mu=kap, dist0=d0, n=n)
        rhs = sb.thm22_main_rhs(**kw) if form == "main" else sb.thm22_appendix_rhs(**kw)
        return lhs, rhs
    return sides


def _thm22_search(form: str) -> Search:
    return Search({"n": (2, _NMAX, "int"), "mu_over_beta": (0.05, 0.95),
                   "dist0": (1e-4, 10.0, "log"), "start_angle": (0.0, np.pi),
                   **{f"u{j}": (0.0, np.pi) for j in range(_NMAX)}},
                  _thm22_search_sides(form), budget=(30_000, 300_000), batched=True,
                  note="2-D, n <= 12, beta = 1, every i; the local-L reading (L = beta dist0), "
                  "the default of THM22_READINGS")


_THM22 = ("Per-sample quadratics f_i(w) = 1/2 (w - w*)^T A_i (w - w*), A_i = mu I + (beta - mu) "
          "u_i u_i^T, GD with eta = 1/beta, sup over steps; L = beta ||w0 - w*||.")


@claim("fu.thm2.2.main", functions=(sb.thm22_main_rhs,),
       paper="fu", where="Theorem 2.2, eq. (3) (main text)", kind="bound",
       statement="Full fine-tuning by GD is leave-one-out stable with the main text's bound, "
       "which grows linearly in ||w0 - w*||.",
       equation="E||A(S^i) - A(S)|| <= sqrt(2L) ||w0 - w*|| / beta / (n ((1 - mu/beta)^(-1/4) - 1))",
       notes=_THM22 + " The main-text form differs from what the appendix proves.",
       search=_thm22_search("main"))
def _thm22_main(ctx: CheckContext) -> Outcome:
    return _thm22_claim(ctx, "main")


@claim("fu.thm2.2.appendix", functions=(sb.thm22_appendix_rhs,),
       paper="fu", where="Theorem 2.2, Appendix A.1 (the proof's form)",
       kind="bound",
       statement="Full fine-tuning by GD is leave-one-out stable with the bound the appendix "
       "proof derives.",
       equation="E||A(S^i) - A(S)|| <= sqrt(2 L ||w0 - w*|| / beta) / (n ((1 - mu/beta)^(-1/4) - 1))",
       notes=_THM22, search=_thm22_search("appendix"))
def _thm22_appendix(ctx: CheckContext) -> Outcome:
    return _thm22_claim(ctx, "appendix")


@claim("fu.fig8.distance", paper="fu", where="§4.3.4, Figure 8", kind="trend",
       statement="Fine-tuning is more stable when it starts closer to the solution: the LOO "
       "distance shrinks with ||w0 - w*||.",
       equation="E||A(S^i) - A(S)|| increases in ||w0 - w*||",
       notes=_THM22 + " The paper's Fig. 8 plots the normalized ||Delta_hat||; we use Theorem "
       "2.2's own quantity and setting, since separable GD has no finite w*.")
def _fig8(ctx: CheckContext) -> Outcome:
    df, cfg = _quadratic(ctx)
    verdict = trend_verdict(df.dist0.to_numpy(), df.loo_distance.to_numpy(), expected="increasing",
                            rng=ctx.rng(), what="LOO distance vs ||w0 - w*||")
    verdict = verdict.with_evidence(n_datasets_per_cell=cfg.n_datasets, seed=ctx.seed)
    fig, (ax,) = plotting.figure()
    for (kappa, n), g in df.groupby(["kappa", "n"]):
        plotting.median_band(ax, g.dist0, g.loo_distance, label=f"mu/beta={kappa:g}, n={n}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("||w0 - w*||")
    ax.set_ylabel("E_i sup_t ||w_t(S^i) - w_t(S)||")
    ax.legend(fontsize=7)
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df, fig, cfg.config())


# ---------------------------------------------------------------- Lemmas A.2.4 and A.2.5


_HARD_N = 6  # the searches' hard-margin datasets: 6 points in the plane, 3 per class


def _hard_data(p: dict) -> tuple[np.ndarray, np.ndarray]:
    X = np.array([[p[f"x{j}"], p[f"y{j}"]] for j in range(_HARD_N)]) * p.get("scale", 1.0)
    return X, np.where(np.arange(_HARD_N) < _HARD_N // 2, 1.0, -1.0)


_HARD_SPACE = {f"{a}{j}": (-1.0, 1.0) for j in range(_HARD_N) for a in "xy"}


def _a24_search(part: str) -> Search:
    """Lemma A.2.4 over tiny separable datasets (non-separable draws are outside it): removing
    each point in turn, the worst norm ratio."""
    from boundbench.synthetic.svm import hard_margin_loo

    def sides(p: dict):
        X, y = _hard_data(p)
        v_loo, c_loo, v, c = hard_margin_loo(X, y)  # ValueError: not separable
        if part == "v":
            return np.linalg.norm(v_loo, axis=-1), np.full(len(y), np.linalg.norm(v))
        return (np.linalg.norm(np.column_stack([v_loo, c_loo]), axis=-1),
                np.full(len(y), np.linalg.norm(np.append(v, c))))

    return Search({**_HARD_SPACE, "scale": (0.1, 10.0, "log")}, sides, budget=(500, 8000),
                  note="6 points in the plane (3 per class), coordinates in [-1, 1] times a "
                  "scale in [0.1, 10]")


def _a23_sides(p: dict):
    X, y = _hard_data(p)
    svm = HardMarginSVM().fit(X, y)  # ValueError: not separable
    s = sb.lemma_a23_sides(-svm.intercept_, svm.coef_, B=np.linalg.norm(X, axis=-1).max())
    return s.lhs, s.rhs


def _lemma24_table(ctx: CheckContext) -> tuple[pd.DataFrame, dict]:
    from boundbench.synthetic.stability import svm_loo_stability

    cfg = {"n_datasets": ctx.pick(30, 500), "n": ctx.pick(200, 2000), "d": 5, "margin": 0.1,
           "bound": 1.0, "seed": ctx.seed}

    def compute() -> pd.DataFrame:
        data = make_separable(n_datasets=cfg["n_datasets"], n=cfg["n"], d=cfg["d"],
                              margin=cfg["margin"], bound=cfg["bound"],
                              seed=ctx.table_rng("lemma-a24"))
        st = svm_loo_stability(data.X, data.y, progress=ctx.progress)
        k, n = st["v_norm_loo"].shape
        # support vectors from the constraint duals (> 1e-6 of the largest), not from a float
        # comparison of the re-solved norms
        support = np.zeros((k, n), dtype=bool)
        for j, idx in enumerate(HardMarginSVM().fit(data.X, data.y).support_):
            support[j, idx] = True
        return pd.DataFrame({"dataset": np.repeat(np.arange(k), n), "i": np.tile(np.arange(n), k),
                             "support_vector": support.ravel(),
                             "v_norm_loo": st["v_norm_loo"].ravel(),
                             "v_norm": np.repeat(st["norm_v"], n),
                             "w_norm_loo": st["w_norm_loo"].ravel(),
                             "w_norm": np.repeat(st["norm_w"], n)})

    return ctx.cached("lemma-a24", cfg, compute), cfg


# a hand-checkable instance of Lemma A.2.4 as stated (issue 38's referee): the support of S is
# symmetric (v = (1, 0), b = 0, ||w|| = 1); without (1, 10) the SVM must tilt and shift
_A24_HAND: dict[str, list] = {"positives": [[1.0, 10.0], [1.5, 12.0]],
                              "negatives": [[-1.0, 10.0], [-1.5, 8.0]], "removed": [1.0, 10.0]}


def _lemma24_hand(part: str) -> dict:
    """Both sides on :data:`_A24_HAND`, solved here (a reader recomputes them by hand)."""
    X = np.array(_A24_HAND["positives"] + _A24_HAND["negatives"])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    full, loo = HardMarginSVM().fit(X[None], y[None]), HardMarginSVM().fit(X[None, 1:], y[None, 1:])

    def norm(m: HardMarginSVM) -> float:
        w = m.coef_[0] if part == "v" else np.r_[m.coef_[0], m.intercept_[0]]
        return float(np.linalg.norm(w))

    lhs, rhs = norm(loo), norm(full)
    return {"instance": f"positives {_A24_HAND['positives']}, negatives "
            f"{_A24_HAND['negatives']}, i = the point {_A24_HAND['removed']}",
            "w_S": [*map(float, full.coef_[0]), float(full.intercept_[0])],
            "w_S_i": [*map(float, loo.coef_[0]), float(loo.intercept_[0])],
            "lhs": lhs, "rhs": rhs, "lhs_over_rhs": lhs / rhs}


def _lemma24_claim(ctx: CheckContext, part: str) -> Outcome:
    df, cfg = _lemma24_table(ctx)
    changed = df[df.support_vector]
    verdict = bound_verdict(BoundSides(df[f"{part}_norm_loo"].to_numpy(),
                                       df[f"{part}_norm"].to_numpy()), rtol=NUMERIC_RTOL,
                            what=f"||{part}_hat(S^i)|| <= ||{part}_hat(S)||")
    rel = (df[f"{part}_norm_loo"] - df[f"{part}_norm"]).abs() / df[f"{part}_norm"]
    verdict = verdict.with_evidence(
        n_support_vector_removals=len(changed),
        n_support_vectors_per_dataset=float(changed.groupby("dataset").size().mean()),
        n_non_support_moved=int((~df.support_vector & (rel > 1e-6)).sum()),
        tolerance_note="rtol 1e-5 (NUMERIC_RTOL; solver accuracy ~1e-8); support vectors: "
        "duals > 1e-6 of the largest", seed=ctx.seed,
        # a reproducing instance a reader can check by hand (the table's smallest failing row
        # can sit at solver noise, lhs/rhs 1.0000)
        **({"reproducing_instance": _lemma24_hand(part)} if part == "w" else {}))
    fig, (ax,) = plotting.figure()
    plotting.ratio_histogram(ax, (changed[f"{part}_norm_loo"] / changed[f"{part}_norm"])
                             .to_numpy(), np.full(len(changed), "support vectors removed"),
                             xlabel=f"||{part}(S^i)|| / ||{part}(S)||")
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, changed.assign(lhs=changed[f"{part}_norm_loo"],
                                           rhs=changed[f"{part}_norm"]), fig, cfg)


@claim("fu.lemma-a.2.4", paper="fu", where="Lemma A.2.4 (as stated)", kind="bound",
       erratum=Erratum(
           "statement",
           "A misstatement: the displayed ||w_hat(S^i)|| <= ||w_hat(S)|| with w = [v, b]; the "
           "intercept can grow (the proof treats the objective ||v||^2, b free, and shows the "
           "v part only).",
           downstream="None through the misstatement: the proof and its use in Lemma A.2.5's "
           "proof need only ||v_hat(S^i)|| <= ||v_hat(S)||, which holds for the hard-margin SVM "
           "on every instance (fu.lemma-a.2.4.v). That use applies it to the soft-margin v_hat, "
           "where it can fail: fu.lemma-a.2.5.proof-step."),
       statement="Removing a training point cannot increase the norm of the hard-margin SVM "
       "solution, including its intercept.",
       equation="||w_hat(S^i)|| <= ||w_hat(S)||,  w = [v, b]",
       notes="The proof only shows the v part (the objective is ||v||^2, b is free): see "
       "fu.lemma-a.2.4.v.", search=_a24_search("w"),
       correction="||v_hat(S^i)|| <= ||v_hat(S)||: removing a point cannot shrink the margin "
       "(what the proof shows, and what holds on every instance: fu.lemma-a.2.4.v); the "
       "intercept can grow.")
def _a24(ctx: CheckContext) -> Outcome:
    return _lemma24_claim(ctx, "w")


@claim("fu.lemma-a.2.4.v", paper="fu", where="Lemma A.2.4 (the proof's reading)", kind="bound",
       statement="Removing a training point cannot increase the norm of the hard-margin SVM "
       "weight vector (equivalently, cannot shrink the margin).",
       equation="||v_hat(S^i)|| <= ||v_hat(S)||", search=_a24_search("v"))
def _a24v(ctx: CheckContext) -> Outcome:
    return _lemma24_claim(ctx, "v")


def _soft_loo(ctx: CheckContext, *, penalized: bool = False) -> tuple[pd.DataFrame, SoftLOOGrid]:
    """The soft-margin LOO table Lemma A.2.5, Theorem 2.4's second term and Corollary 2.5 share:
    lam over 1e-3 .. 10, n from 10 up; ``penalized``: the intercept penalized with v (the
    corrected statements' objective)."""
    cfg = SoftLOOGrid(n=ctx.pick((10, 20, 50), (10, 20, 50, 100, 200)),
                      n_datasets=ctx.pick(3, 10), penalize_intercept=penalized, seed=ctx.seed)
    return ctx.cached("soft-loo", cfg.config(), lambda: cfg.run(ctx.progress)), cfg


NONUNIQUE_WIDTH = 1e-6  # an intercept interval wider than this (solver accuracy ~1e-8) is a set

_NOT_UNIQUE = (
    "The soft-margin objective is strictly convex in v but piecewise linear in the unpenalized "
    "intercept b, so at large lam (balanced classes, most points inside the margin) the optimal b "
    "is an interval: the statement, which compares *the* optima of S and S^i, presupposes a "
    "unique minimizer that does not exist there.")


def _by_lam(df: pd.DataFrame) -> dict:
    """Worst lhs/rhs per lam (closest and farthest optimal pair) and how wide the intercept sets
    are there: where the bound fails and why."""
    g = df.assign(ratio=df.lhs / df.rhs, far=df.lhs_farthest / df.rhs).groupby("lam")
    return {"worst_ratio_closest_pair_by_lam": {f"{k:g}": float(x)
                                                for k, x in g.ratio.max().items()},
            "worst_ratio_farthest_pair_by_lam": {f"{k:g}": float(x)
                                                 for k, x in g.far.max().items()},
            "widest_intercept_set_by_lam": {f"{k:g}": float(x) for k, x in
                                            g.b_width_any.max().items()}}


def _soft_loo_outcome(ctx: CheckContext, df: pd.DataFrame, cfg: SoftLOOGrid, *, lhs: str,
                      what: str, ylabel: str) -> Outcome:
    """Lemma A.2.5, Thm 2.4's second term and Cor 2.5 compare optima, which are sets where the
    intercept is not unique: each is judged on the closest and on the farthest pair of optimal
    solutions (``rhs_sets``: the right side valid for every pair), never on the solver's pick
    (``rhs``, reported as evidence). Holds if both pairs do, violated if even the closest pair
    fails, ill-posed if only the farthest does."""
    df = df.assign(b_width_any=np.maximum(df.b_width, df.b_width_loo_max))
    df = df.assign(lhs=df[f"{lhs}_closest"], lhs_farthest=df[f"{lhs}_farthest"],
                   rhs_solver_pick=df.rhs, rhs=df.rhs_sets)  # the errata sheet reads lhs/rhs
    nonunique = df.b_width_any > NONUNIQUE_WIDTH
    common = {"seed": ctx.seed, "n_datasets_per_cell": cfg.n_datasets,
              "n_problems": len(df), "n_problems_nonunique_optimum": int(nonunique.sum()),
              "fraction_nonunique_optimum": float(nonunique.mean()),
              "widest_intercept_interval": float(df.b_width_any.max()),
              "nonunique_width_tolerance": NONUNIQUE_WIDTH,
              "solver_b_outside_optimal_set_max": float(df.solver_b_outside_set.max()),
              **_by_lam(df)}
    closest = bound_verdict(BoundSides(df.lhs.to_numpy(), df.rhs.to_numpy()), rtol=NUMERIC_RTOL,
                            what=f"{what} (closest optimal pair)", evidence=common)
    farthest = bound_verdict(BoundSides(df.lhs_farthest.to_numpy(), df.rhs.to_numpy()),
                             rtol=NUMERIC_RTOL, what=f"{what} (farthest optimal pair)")
    pick = bound_verdict(BoundSides(df[lhs].to_numpy(), df.rhs_solver_pick.to_numpy()),
                         rtol=NUMERIC_RTOL, what="the solver's pick")
    ev = {**closest.evidence,
          "closest_pair": closest.status, "farthest_pair": farthest.status,
          "farthest_pair_worst_lhs_over_rhs": farthest.evidence.get("worst_lhs_over_rhs"),
          "farthest_pair_n_violations": farthest.evidence["n_violations"],
          "solver_pick": pick.status,
          "solver_pick_worst_lhs_over_rhs": pick.evidence.get("worst_lhs_over_rhs")}
    sets = (f"{int(nonunique.sum())} of {len(df)} problems have a non-unique optimal intercept "
            f"(widest interval {df.b_width_any.max():.3g})")
    if closest.status == "violated":
        verdict = Verdict("violated", f"{closest.reason}; even the closest pair of optimal "
                          f"solutions fails ({sets})", ev)
    elif farthest.status == "violated":
        verdict = Verdict("ill-posed", f"{sets}: the bound holds for the closest pair of optimal "
                          f"solutions (worst lhs/rhs {ev['worst_lhs_over_rhs']:.3g}) and fails "
                          f"for the farthest (worst {ev['farthest_pair_worst_lhs_over_rhs']:.3g}, "
                          f"{ev['farthest_pair_n_violations']} of {len(df)} problems). "
                          + _NOT_UNIQUE, ev)
    else:
        verdict = Verdict("holds", f"{closest.reason} and for the farthest pair too ({sets})", ev)
    fig, (ax,) = plotting.figure()
    for n, g in df.groupby("n"):
        line = plotting.median_band(ax, g.lam, g.lhs / g.rhs, label=f"n={n}, closest pair")
        far = (g.lhs_farthest / g.rhs).groupby(g.lam).max()
        ax.plot(far.index, far.values, ":", color=line.get_color(), lw=1,
                label=f"n={n}, farthest pair (max)")
    ax.axhline(1.0, color="k", lw=0.8, ls="--", label="bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("lam (soft-margin weight)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df, fig, cfg.config())


_SOFT_N = 6  # the search's datasets: 6 points in the plane, 3 per class


def _soft_search(which: str, penalized: bool = False, *, quick_evals: int = 400) -> Search:
    """A search over tiny soft-margin problems (6 points in [-1, 1]^2, lam in [1e-3, 10]) for the
    claims on :class:`SoftLOOGrid`'s table; the left side is the closest optimal pair's (the
    verdict's), non-separable draws (no hard margin gamma_S) are outside the assumptions.
    ``quick_evals``: its evaluations at quick scale (6,000 at paper scale)."""
    from boundbench.synthetic.stability import optimal_set_moves
    from boundbench.synthetic.svm import soft_margin_intercepts, soft_margin_loo

    def sides(p: dict):
        # the feature scale is free (B is any bound): the hinge is not scale-invariant, and a
        # search confined to [-1, 1]^2 missed Corollary 2.5's closest-pair violations at B ~ 2
        X = np.array([[p[f"x{j}"], p[f"y{j}"]] for j in range(_SOFT_N)]) * p["scale"]
        y = np.where(np.arange(_SOFT_N) < _SOFT_N // 2, 1.0, -1.0)
        n, lam = _SOFT_N, float(p["lam"])
        gamma = float(HardMarginSVM().fit(X, y).margin_)  # ValueError: not separable
        B = float(np.linalg.norm(X, axis=-1).max())
        v_loo, c_loo, v, c = soft_margin_loo(X, y, lam=lam, penalize_intercept=penalized)
        if penalized:
            lo = hi = np.concatenate([[c], c_loo])
        else:
            W = np.full((n + 1, n), 1.0 / (n - 1))
            W[0] = 1.0 / n
            W[np.arange(1, n + 1), np.arange(n)] = 0.0
            lo, hi = soft_margin_intercepts(X, y, np.vstack([v, v_loo]), W)
        m = optimal_set_moves(v, (lo[0], hi[0]), v_loo, (lo[1:], hi[1:]))
        # the proofs use n ~ n - 1; at n = 6 that is a factor 1.2, so the search judges the right
        # side at n - 1 (the larger, the paper's most favourable reading): what it finds is not
        # an artefact of that approximation
        n_fav = n - 1
        if which == "v-norm":  # Lemma A.2.5's proof step: no optimal set (v is unique)
            return np.linalg.norm(v_loo, axis=-1).max(), np.linalg.norm(v)
        if which == "lemma":
            return m["closest"].max(), sb.lemma_a25_rhs(lam=lam, n=n_fav, B=B, gamma=gamma)
        if which == "cor":
            return m["closest"].max(), sb.cor25_second_term(nu=1.0, lipschitz=np.sqrt(B**2 + 1),
                                                            lam=lam, n=n_fav)
        return m["direction_closest"].max(), sb.thm24_second_term(r=m["r_min"], lam=lam,
                                                                   n=n_fav, B=B, gamma=gamma)

    def symmetry(p: dict, k: float) -> dict:
        # X -> kX with lam -> k^2 lam maps the soft-margin optimum exactly (v -> v/k, b kept,
        # every hinge term unchanged): the intercept's move is invariant while the right sides
        # shrink like 1/k (Cor. 2.5) or ~1/k (Lemma A.2.5), so a violation, once found, grows
        # along it. The penalized objective has no such symmetry (b is penalized with v).
        return {**p, "scale": p["scale"] * k, "lam": p["lam"] * k * k}

    space = {"lam": (1e-4, 1e4, "log"), "scale": (1e-2, 1e2, "log"),
             **{f"{a}{j}": (-1.0, 1.0) for j in range(_SOFT_N) for a in "xy"}}
    return Search(space, sides, budget=(quick_evals, 6000),
                  note="6 points in [-1, 1]^2 times a scale in [1e-2, 1e2] (3 per class), lam in "
                  "[1e-4, 1e4] (both over many decades), the closest "
                  "optimal pair, the right side at n - 1 (the proofs' n ~ n - 1 read in the "
                  "paper's favour)" + (", intercept penalized" if penalized else ""
                                       if which in ("thm24", "v-norm")
                                       else "; then X -> kX, lam -> k^2 lam from the worst "
                                       "instance"),
                  # Theorem 2.4's term compares directions, on which the map acts otherwise
                  # (b is not scaled): no known growth there, so none is followed
                  symmetry=None if penalized or which in ("thm24", "v-norm") else symmetry,
                  symmetry_note="X -> kX, lam -> k^2 lam")


@claim("fu.lemma-a.2.5", functions=(sb.lemma_a25_rhs,),
       paper="fu", where="Lemma A.2.5", kind="bound",
       erratum=Erratum(
           "statement",
           "The bound as displayed, even for the closest pair of optimal solutions (the "
           "intercept free), once the feature scale is free: X -> kX with lam -> k^2 lam maps the "
           "optima exactly (v -> v/k, b unchanged), so their distance is invariant while the "
           "bound shrinks like 1/k.",
           constants=_LAM_READING + "; gamma_S is the hard-margin margin, as the lemma writes "
           "it; B any bound on the feature norms.",
           downstream="Theorem 2.4's second term and Corollary 2.5 are built on it (see "
           "fu.thm2.4.second-term, fu.cor2.5)."),
       statement="The soft-margin SVM moves by at most the lemma's amount when one training "
       "point is removed.",
       equation="||w_hat(S^i) - w_hat(S)|| <= max{ sqrt(2/(lam n) (1 + B/gamma_S)), (B + sqrt(B^2 "
       "+ 8 n lam (1 + B/gamma_S))) / (2 n lam) }",
       notes="Soft-margin objective lam ||v||^2 + (1/n) sum hinge (1/(n-1) without i); gamma_S "
       "is the hard-margin margin, as the lemma writes it; LHS is the max over all i; lam from "
       "1e-3 to 10 and n from 10 (the lemma states no range).",
       correction="With the intercept penalized, lam ||[v, b]||^2 + (1/n) sum hinge (2 lam-strongly "
       "convex in w = [v, b], so the minimizer is unique, as the proof's step assumes), the "
       "bound as stated: fu.lemma-a.2.5.penalized. With b free it fails even for the closest "
       "pair of optima once the feature scale is free (unbounded along X -> kX, lam -> k^2 "
       "lam); on the unit-scale grid it holds for the closest pair and fails for the farthest.",
       search=_soft_search("lemma"))
def _a25(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "lemma", penalized=False)


def _move_claim(ctx: CheckContext, which: str, *, penalized: bool) -> Outcome:
    """Lemma A.2.5 (``which="lemma"``) or Cor. 2.5's L/(lam n) (``"cor"``) on the soft-margin
    LOO table, the intercept free or ``penalized``."""
    df, cfg = _soft_loo(ctx, penalized=penalized)
    if which == "lemma":
        rhs = sb.lemma_a25_rhs(lam=df.lam, n=df.n, B=df.B, gamma=df.gamma_hard)
        name = "Lemma A.2.5"
    else:
        df = df.assign(lipschitz=np.sqrt(df.B**2 + 1))
        rhs = sb.cor25_second_term(nu=1.0, lipschitz=df.lipschitz, lam=df.lam, n=df.n)
        name = "L/(lam n)"
    df = df.assign(rhs=rhs, rhs_sets=rhs)
    tail = ", b penalized" if penalized else ""
    return _soft_loo_outcome(ctx, df, cfg, lhs="loo_distance_max",
                             what=f"max_i ||w(S^i) - w(S)|| <= {name}{tail}",
                             ylabel=f"max_i ||w(S^i) - w(S)|| / {name}")


@claim("fu.thm2.4.second-term", functions=(sb.thm24_second_term,),
       paper="fu", where="Theorem 2.4, eq. (6), second term",
       kind="bound",
       erratum=Erratum(
           "statement",
           "The explicit second term of eq. (6), nu times Lemma A.2.5's amount with nu = 2/r "
           "(Lemma A.2.1), for the soft-margin solution w = (v, b) with the intercept free: "
           "where ||v|| is small next to |b|, removing one point can move the intercept across "
           "0 and flip the direction (a change near 2), since Lemma A.2.5's bound on the move "
           "fails; Lemma A.2.1's 2/r does not rescue it.",
           constants=_LAM_READING + "; nu = 2/r with r the smallest norm of the solutions "
           "compared (Lemma A.2.1's radius), w = (v, b) as Lemmas A.2.4 and A.2.5 write it.",
           downstream="Theorem 2.4's head-tuning stability bound: its explicit half inherits "
           "Lemma A.2.5's failure (see fu.lemma-a.2.5)."),
       statement="The soft-margin SVM's direction moves by at most nu times Lemma A.2.5's amount "
       "when one point is removed (nu = 2/r, r the smallest norm of the solutions compared): "
       "the explicit half of the head-tuning stability bound.",
       equation="max_i ||w(S^i)/||w(S^i)|| - w(S)/||w(S)|| || <= (2/r) max{ sqrt(2/(lam n) (1 + "
       "B/gamma_S)), (B + sqrt(B^2 + 8 n lam (1 + B/gamma_S))) / (2 n lam) }",
       notes="r = min(||w(S)||, min_i ||w(S^i)||), Lemma A.2.1's radius; the first term (C log "
       "log t / log t) has an unspecified constant and is checked as a rate "
       "(soudry.direction-rate).",
       # 400 evaluations missed the direction flips that 1,500 find on every seed tried (0.75
       # and 0.38 against 1.62 and 2.49; the paper-scale audit of 2026-11-26)
       search=_soft_search("thm24", quick_evals=1500))
def _thm24_second(ctx: CheckContext) -> Outcome:
    df, cfg = _soft_loo(ctx)
    # the solver's pick uses its own radius; the optimal sets the smallest norm among them all
    df = df.assign(rhs=sb.thm24_second_term(r=df.r, lam=df.lam, n=df.n, B=df.B,
                                            gamma=df.gamma_hard),
                   rhs_sets=sb.thm24_second_term(r=df.r_min, lam=df.lam, n=df.n, B=df.B,
                                                 gamma=df.gamma_hard))
    return _soft_loo_outcome(ctx, df, cfg, lhs="direction_distance_max",
                             what="max_i ||direction change|| <= (2/r) Lemma A.2.5",
                             ylabel="direction change / Theorem 2.4's second term")


@claim("fu.cor2.5", functions=(sb.cor25_second_term,),
       paper="fu", where="Corollary 2.5, the L/(lam n) step of its proof (A.3)", kind="bound",
       erratum=Erratum(
           "proof step",
           "The step ||w_hat(S^i) - w_hat(S)|| <= L/(lam n) of the proof of Corollary 2.5 "
           "(Appendix A.3), with the intercept b free: lam ||v||^2 gives no strong convexity in "
           "b, and the optimal intercept moves by O(1) when one point is left out. The displayed "
           "bound (7) has existential constants (for some C, lam, nu) and is not what this claim "
           "measures.",
           constants=_LAM_READING + "; L = sqrt(B^2 + 1), the hinge's Lipschitz constant in "
           "w = [v, b].",
           downstream="Corollary 2.5's bound does not follow as proved with b free; with the "
           "intercept penalized the step holds (fu.cor2.5.penalized)."),
       statement="Removing one point moves the soft-margin SVM by at most L/(lam n), L the "
       "Lipschitz constant of the per-sample hinge loss in w (the piece Corollary 2.5 puts in "
       "place of Theorem 2.4's second term, times nu).",
       equation="max_i ||w(S^i) - w(S)|| <= L / (lam n),   L = sqrt(B^2 + 1)",
       notes="L = max_i ||[x_i, -1]|| <= sqrt(B^2 + 1), the hinge's Lipschitz constant in w = [v, "
       "b] on the augmented features; the proof's n ~ n - 1 is kept.",
       correction="With the intercept penalized (lam ||[v, b]||^2, a unique minimizer, as the "
       "L/(lam n) step assumes), as stated: fu.cor2.5.penalized. With b free it fails even for "
       "the closest pair of optima: the optimal intercept moves by up to ~0.5 when one point "
       "is left out, and lam ||v||^2 gives no strong convexity in b to bound that.",
       search=_soft_search("cor"))
def _cor25(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "cor", penalized=False)


@claim("fu.lemma-a.2.5.proof-step", paper="fu",
       where="Lemma A.2.5's proof, the step borrowed from Lemma A.2.4", kind="bound",
       statement="Removing one training point cannot increase the norm of the soft-margin SVM's "
       "weight vector (the proof of Lemma A.2.5 borrows this from Lemma A.2.4, which is about "
       "the hard-margin SVM).",
       equation="||v_hat_soft(S^i)|| <= ||v_hat_soft(S)||,  v_hat_soft = argmin lam ||v||^2 + "
       "(1/n) sum hinge (b free)",
       notes="Same soft-margin LOO table as fu.lemma-a.2.5 (every i of every dataset, lam from "
       "1e-3 to 10); v is unique (the objective is strictly convex in v), so no optimal set "
       "enters. Control: the hard-margin v, for which Lemma A.2.4's proof does show it "
       "(fu.lemma-a.2.4.v holds).",
       erratum=Erratum(
           "proof step",
           "The step of Lemma A.2.5's proof that bounds ||v_hat(S^i)|| by ||v_hat(S)|| by citing "
           "Lemma A.2.4: that lemma (and its proof) is about the hard-margin SVM, and for the "
           "soft-margin v_hat removing a point can increase the norm (a point inside the margin "
           "that pulled v short is gone).",
           constants=_LAM_READING + ".",
           downstream="Lemma A.2.5's bound is not proved as written; it is also violated as "
           "displayed (fu.lemma-a.2.5)."),
       search=_soft_search("v-norm"))
def _a25_proof_step(ctx: CheckContext) -> Outcome:
    df, cfg = _soft_loo(ctx)
    ratio = df.v_norm_loo_max / df.v_norm
    grows = int(df.n_loo_v_norm_grows.sum())
    pairs = int(df.n.sum())  # every i of every dataset is a LOO pair
    hard = _lemma24_table(ctx)[0]
    verdict = bound_verdict(
        BoundSides(df.v_norm_loo_max.to_numpy(), df.v_norm.to_numpy()), rtol=NUMERIC_RTOL,
        what="||v_hat_soft(S^i)|| <= ||v_hat_soft(S)||",
        evidence={"seed": ctx.seed, "n_loo_pairs": pairs, "n_loo_pairs_norm_grows": grows,
                  "fraction_loo_pairs_norm_grows": grows / max(pairs, 1),
                  "worst_ratio_by_lam": {f"{k:g}": float(v) for k, v in
                                         ratio.groupby(df.lam).max().items()},
                  # the reference: the hard-margin v, which the proof of A.2.4 covers, never
                  # grows (it would if the solver or the LOO were off)
                  "hard_margin_v_worst_ratio": float((hard.v_norm_loo / hard.v_norm).max())})
    fig, (ax,) = plotting.figure()
    plotting.ratio_histogram(ax, ratio.to_numpy(), df.lam.map(lambda x: f"lam={x:g}").to_numpy(),
                             xlabel="max_i ||v_soft(S^i)|| / ||v_soft(S)||")
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df.assign(lhs=df.v_norm_loo_max, rhs=df.v_norm), fig, cfg.config())


@claim("fu.lemma-a.2.5.penalized", functions=(sb.lemma_a25_rhs,),
       paper="fu", where="Lemma A.2.5, intercept penalized",
       kind="bound",
       statement="With the intercept penalized too (lam ||[v, b]||^2 + (1/n) sum hinge, the "
       "objective the proof's strong-convexity step needs; its minimizer is unique), the "
       "soft-margin SVM moves by at most the lemma's amount when one point is removed.",
       equation="||w_hat(S^i) - w_hat(S)|| <= max{ sqrt(2/(lam n) (1 + B/gamma_S)), (B + sqrt(B^2 "
       "+ 8 n lam (1 + B/gamma_S))) / (2 n lam) },  w_hat = argmin lam ||w||^2 + L_S(w)",
       notes="The corrected statement of fu.lemma-a.2.5; same grid and data.",
       search=_soft_search("lemma", penalized=True))
def _a25_penalized(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "lemma", penalized=True)


@claim("fu.cor2.5.penalized", functions=(sb.cor25_second_term,),
       paper="fu", where="Corollary 2.5, intercept penalized",
       kind="bound",
       statement="With the intercept penalized too (a unique, 2 lam-strongly convex minimizer), "
       "removing one point moves the soft-margin SVM by at most L/(lam n).",
       equation="max_i ||w(S^i) - w(S)|| <= L / (lam n),   L = sqrt(B^2 + 1),  w_hat = argmin "
       "lam ||w||^2 + L_S(w)",
       notes="The corrected statement of fu.cor2.5; same grid and data.",
       search=_soft_search("cor", penalized=True))
def _cor25_penalized(ctx: CheckContext) -> Outcome:
    return _move_claim(ctx, "cor", penalized=True)


@claim(
    "fu.lemma-a.2.3",
    functions=(sb.lemma_a23_sides,),
    paper="fu",
    where="Lemma A.2.3",
    kind="bound",
    statement="The intercept of the hard-margin SVM is at most 1 + ||v_hat|| B in absolute value, "
    "with B the largest feature norm.",
    equation="|b_hat| <= 1 + ||v_hat|| B,   B = max_i ||x_i||,   classifier sign(v^T x - b)",
    search=Search({**_HARD_SPACE, "scale": (0.1, 10.0, "log"), "shift_x": (-20.0, 20.0),
                   "shift_y": (-20.0, 20.0)},
                  lambda p: _a23_sides({**p, **{f"x{j}": p[f"x{j}"] + p["shift_x"] / p["scale"]
                                                for j in range(_HARD_N)},
                                        **{f"y{j}": p[f"y{j}"] + p["shift_y"] / p["scale"]
                                           for j in range(_HARD_N)}}),
                  budget=(800, 10000),
                  note="6 points in the plane (3 per class), coordinates in [-1, 1] times a scale "
                  "in [0.1, 10], the cloud shifted up to 20 from the origin (|b| grows with the "
                  "offset)"),
)
def _check_a23(ctx: CheckContext) -> Outcome:
    rng = ctx.rng()
    rows = []
    for d in (2, 5, 20):
        # bound 3, margin 0.2: plane offsets up to 0.7 make |b| a sizeable part of the bound
        data = make_separable(n_datasets=ctx.pick(10, 100), n=60, d=d, margin=0.2, bound=3.0,
                              seed=rng)
        svm = HardMarginSVM().fit(data.X, data.y)
        s = sb.lemma_a23_sides(-svm.intercept_, svm.coef_, B=data.max_norm)
        rows.append(pd.DataFrame({"family": f"d={d}", "B": data.max_norm, "margin": svm.margin_,
                                  "n_support": [len(x) for x in svm.support_], "lhs": s.lhs,
                                  "rhs": s.rhs}))
    # where the bound binds: both classes far out along the normal u (at distance ~10, margin
    # 0.1, spread 0.2 along u and 0.01 across), so the support vectors are nearly parallel to
    # v_hat and nearly as long as B, and |b| -> 1 + ||v|| B as spread and margin shrink
    k, n, d = ctx.pick(10, 100), 60, 5
    u = rng.standard_normal((k, 1, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    y = np.where(np.arange(n) < n // 2, 1.0, -1.0)
    t = 10.0 + 0.2 * rng.uniform(size=(k, n)) + np.where(y > 0, 0.4, 0.0)
    X = t[..., None] * u + 0.01 * rng.standard_normal((k, n, d))
    Y = np.broadcast_to(y, (k, n))
    svm = HardMarginSVM().fit(X, Y)
    B = np.linalg.norm(X, axis=-1).max(-1)
    s = sb.lemma_a23_sides(-svm.intercept_, svm.coef_, B=B)
    rows.append(pd.DataFrame({"family": "d=5, far along the normal", "B": B,
                              "margin": svm.margin_, "n_support": [len(x) for x in svm.support_],
                              "lhs": s.lhs, "rhs": s.rhs}))
    return ratio_histogram_outcome(ctx, pd.concat(rows, ignore_index=True),
                   what="|b| <= 1 + ||v|| B", xlabel="|b_hat| / (1 + ||v_hat|| B)")




# ------------------------------------------------- the limit of GD: which max-margin solution


def _far_gaussians(k: int, n: int, rng: np.random.Generator):
    """``k`` separable 2-D datasets: two Gaussian classes (std 0.25) 1.6 apart around (3, 3),
    so the separating line passes far from the origin and the intercept matters (a
    non-separable draw is drawn again)."""
    from types import SimpleNamespace

    u = np.array([1.0, -1.0]) / np.sqrt(2)
    X: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    while len(X) < k:
        y = np.where(np.arange(n) < n // 2, 1.0, -1.0)
        x = 3.0 + 0.8 * y[:, None] * u + 0.25 * rng.standard_normal((n, 2))
        try:
            HardMarginSVM().fit(x, y)
        except ValueError:
            continue
        X.append(x)
        Y.append(y)
    return SimpleNamespace(X=np.stack(X), y=np.stack(Y))


def _limit_table(ctx: CheckContext) -> tuple[pd.DataFrame, dict]:

    cfg = {"families": [(2, 1.0), (20, 1.0), (5, 4.0), "gaussian"], "n": 60, "margin": 0.1,
           "k": ctx.pick(8, 50), "steps": ctx.pick(20_000, 1_000_000), "seed": ctx.seed}

    def compute() -> pd.DataFrame:
        rng = ctx.table_rng("gd-limit")
        frames = []
        for fam in cfg["families"]:
            if fam == "gaussian":
                data, name = _far_gaussians(cfg["k"], cfg["n"], rng), "2-D Gaussians off the origin"
            else:
                d, B = fam
                data = make_separable(n_datasets=cfg["k"], n=cfg["n"], d=d, margin=cfg["margin"],
                                      bound=B, seed=rng)
                name = f"d={d}, B={B:g}"
            frames.append(pd.DataFrame({"family": name, **_gd_gaps(
                data.X, data.y, steps=cfg["steps"], record=25, seed=int(rng.integers(2**31)))}))
        return pd.concat(frames, ignore_index=True)

    return ctx.cached("gd-limit", cfg, compute), cfg


@claim("fu.thm2.4.svm-limit", paper="fu", where="Theorem 2.4's premise (via Soudry et al. Thm 3)",
       kind="equality",
       erratum=Erratum(
           "use",
           "The use of Soudry et al.'s Theorem 3 in Theorem 2.4's proof: on the augmented "
           "features [x, -1] it gives GD's limit direction as the bias-penalized SVM, not the "
           "free-intercept SVM the proof (and Lemma A.2.5) compares against.",
           constants="Theorem 2.4's constants C (in C log log t / log t) and lam are left "
           "existential in the statement; this finding concerns the limit the proof names, "
           "which no constant changes; the soft-margin lam of its second term is read as the "
           "weight the proof fixes, as in fu.lemma-a.2.5.",
           downstream="Theorem 2.4's first term bounds the distance to the wrong solution; "
           "against the bias-penalized SVM it holds (fu.thm2.4.svm-limit.penalized)."),
       statement="Gradient descent on the augmented features [x, -1] converges in direction to "
       "the hard-margin SVM with a free intercept, the max-margin solution Theorem 2.4 and "
       "Lemma A.2.5 compare against.",
       equation="lim_t w(t)/||w(t)|| = w_hat/||w_hat||,  w_hat = [v_hat, b_hat] of min ||v|| s.t. "
       "y (v^T x - b) >= 1",
       notes="Soudry et al.'s theorem, applied to x~ = [x, -1], gives the *bias-penalized* "
       "solution argmin ||[v, b]|| s.t. y w^T x~ >= 1. Both references are computed exactly "
       "(cvxpy); GD with logistic loss, step 1/beta_eff, one head. A dataset decides when the "
       "two references are > 0.02 apart: the premise fails there if at the last step GD is "
       "closer to the penalized solution than half their separation and the free SVM is not.",
       correction="GD on [x, -1] converges in direction to argmin ||[v, b]|| s.t. y (v^T x - b) "
       ">= 1, the bias-penalized SVM (fu.thm2.4.svm-limit.penalized); Theorem 2.4's telescoping "
       "and Lemma A.2.5 must compare against that solution (or GD must leave the intercept "
       "unpenalized by other means).")
def _svm_limit(ctx: CheckContext) -> Outcome:
    df, cfg = _limit_table(ctx)
    last = df[df.step == df.step.max()]
    apart = last[last.svm_separation > 0.02]
    half = apart.svm_separation / 2
    fails = apart[(apart.gap_penalized_svm < half) & (apart.gap_free_svm > half)]
    ev = {"n_datasets": len(last), "n_references_apart": len(apart), "n_failing": len(fails),
          "last_step": int(df.step.max()),
          "median_gap_free_at_last": float(last.gap_free_svm.median()),
          "median_gap_penalized_at_last": float(last.gap_penalized_svm.median()),
          "median_separation_where_apart": float(apart.svm_separation.median())
          if len(apart) else None,
          "by_family_failing": {f: int((fails.family == f).sum()) for f in df.family.unique()},
          "seed": ctx.seed}
    if len(fails):
        v = Verdict("violated", f"on {len(fails)} of {len(apart)} datasets where the two "
                    f"max-margin solutions differ (median {ev['median_separation_where_apart']:.3g}"
                    f" apart), GD after {ev['last_step']:,} steps is within half their separation "
                    "of the bias-penalized SVM and not of the free-intercept one (median gaps "
                    f"{apart.gap_penalized_svm.median():.3g} vs {apart.gap_free_svm.median():.3g}):"
                    " its limit is the penalized solution", ev)
    elif len(apart):
        v = Verdict("holds", f"on none of the {len(apart)} datasets where the two solutions differ "
                    "is GD nearer the penalized one", ev)
    else:
        v = Verdict("inconclusive", "the two max-margin solutions coincide on every dataset: "
                    "larger offsets or B would separate them", ev)
    fig, axes = plotting.figure(len(cfg["families"]))
    for ax, (fam, g) in zip(axes, df.groupby("family", sort=False), strict=True):
        plotting.median_band(ax, g.step, g.gap_free_svm, label="to the free-intercept SVM")
        plotting.median_band(ax, g.step, g.gap_penalized_svm, label="to the bias-penalized SVM")
        ax.axhline(g.svm_separation.median(), color="k", ls=":", lw=1,
                   label="median distance between the two")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("GD steps t")
        ax.set_ylabel("direction gap")
        ax.set_title(fam, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{ctx.claim_id}: {v.status}", fontsize=9)
    return Outcome(v, df, fig, cfg)


@claim("fu.thm2.4.svm-limit.penalized", paper="fu",
       where="Theorem 2.4's premise, corrected (Soudry et al. Thm 3 on [x, -1])", kind="equality",
       statement="Gradient descent on the augmented features [x, -1] converges in direction to "
       "the bias-penalized hard-margin SVM, argmin ||[v, b]|| s.t. y (v^T x - b) >= 1.",
       equation="lim_t w(t)/||w(t)|| = w_pen/||w_pen||,  w_pen = argmin ||w|| s.t. y w^T [x, -1] "
       ">= 1",
       notes="The corrected statement of fu.thm2.4.svm-limit, on its table (logistic loss, step "
       "1/beta_eff, one head). Direction convergence is logarithmically slow, so at a finite t "
       "it holds where, on every dataset whose two max-margin solutions differ (> 0.02 apart), "
       "GD at the last step is nearer the penalized solution than the free-intercept one (the "
       "test the two candidate limits are told apart by; the gaps need not shrink "
       "monotonically at finite t). The evidence counts the datasets within half the "
       "separation of each solution.")
def _svm_limit_penalized(ctx: CheckContext) -> Outcome:
    df, cfg = _limit_table(ctx)
    last = df[df.step == df.step.max()]
    apart = last[last.svm_separation > 0.02]
    near = apart.gap_penalized_svm < apart.gap_free_svm
    ev = {"n_instances": len(apart), "n_datasets": len(last), "n_violations": int((~near).sum()),
          "n_within_half_separation_of_penalized": int(
              (apart.gap_penalized_svm < apart.svm_separation / 2).sum()),
          "last_step": int(df.step.max()),
          "median_gap_penalized_at_last": float(apart.gap_penalized_svm.median())
          if len(apart) else None,
          "max_gap_penalized_over_half_separation": float(
              (apart.gap_penalized_svm / (apart.svm_separation / 2)).max()) if len(apart) else None,
          # control: the free-intercept SVM, which GD must *not* approach, fails the same test
          "control_free_svm_n_near": int((apart.gap_free_svm < apart.svm_separation / 2).sum()),
          "seed": ctx.seed}
    if not len(apart):
        v = Verdict("inconclusive", "the two max-margin solutions coincide on every dataset", ev)
    elif near.all():
        v = Verdict("holds", f"on all {len(apart)} datasets where the two solutions differ, GD "
                    f"after {ev['last_step']:,} steps is nearer the bias-penalized SVM than the "
                    f"free-intercept one (median gap {ev['median_gap_penalized_at_last']:.3g}); "
                    f"within half their separation of the penalized one on "
                    f"{ev['n_within_half_separation_of_penalized']}, of the free one on "
                    f"{ev['control_free_svm_n_near']}", ev)
    else:
        v = Verdict("violated", f"on {ev['n_violations']} of {len(apart)} datasets GD is not "
                    "nearer the bias-penalized SVM than the free-intercept one", ev)
    fig, (ax,) = plotting.figure()
    ax.scatter(apart.svm_separation / 2, apart.gap_penalized_svm, s=10,
               label="to the bias-penalized SVM")
    ax.scatter(apart.svm_separation / 2, apart.gap_free_svm, s=10, marker="x",
               label="to the free-intercept SVM (control)")
    lim = [float((apart.svm_separation / 2).min()), float((apart.svm_separation / 2).max())]
    ax.plot(lim, lim, "k--", lw=1, label="half the separation")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("half the distance between the two max-margin directions")
    ax.set_ylabel(f"direction gap of GD at t = {ev['last_step']:,}")
    ax.set_title(f"{ctx.claim_id}: {v.status}", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(v, apart, fig, cfg)
