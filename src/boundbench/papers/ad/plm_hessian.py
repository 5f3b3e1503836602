"""Activation decay on the default real encoder (§4.1, Figure 1a): the head Hessian's top
eigenvalue at the fine-tuned features as sigma grows. At quick scale a smoke run that says so
and decides nothing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from boundbench.framework.claims.registry import Outcome, claim
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.stats.calibrated import calibrated_end_ratio
from boundbench.framework.stats.exact_trends import calibrated_trend
from boundbench.framework.stats.trends import end_ratio, trend_verdict
from boundbench.framework.verdicts.rules import plural
from boundbench.papers.shared.fine_tuning import (
    cached_grid,
    did_not_train,
    needs_plm,
    smoke,
    trend_banded,
    trend_power,
)
from boundbench.papers.shared.smoothing_grid import smoothing_grid
from boundbench.plm import bands
from boundbench.theory.activation_decay import cor1_rhs


@claim("ad.plm.hessian", setting="fine-tuning", functions=(cor1_rhs,),
       paper="ad", where="§4.1, Figure 1a (on a real encoder)", kind="trend",
       statement="Activation decay flattens the classification head: the top eigenvalue of the "
       "head's loss Hessian at the fine-tuned features falls as sigma grows.",
       equation="lambda_max(Hess_W CE) at the test features decreases in sigma; erf bound "
       "H0 erf(eps / (sqrt2 H0 sigma)) reported alongside",
       notes="sigma = 0 is plain fine-tuning. H0 = the sigma = 0 run's top eigenvalue (same "
       "seed), eps = the head-gradient norm at the test features: the paper's reading, which "
       "does not make the right side a bound (see ad.cor1.paper-eps).")
@needs_plm
def _ad_hessian(ctx: CheckContext) -> Outcome:
    # the evaluation without the robustness probes (level 0 only, which the clean pass gives):
    # this claim reads the head's Hessian and gradient, and the probes' forwards were a sixth
    # of its time
    grid = replace(smoothing_grid(ctx, ("activation-decay",), seeds=ctx.pick(2, 5, standard=4)), vary="sigma",
                   levels=ctx.pick((0.0, 0.05, 0.1, 0.2), (0.0, 0.01, 0.05, 0.1, 0.2)),
                   deltas=(0.0,), corruption_rates=(0.0,))
    df = cached_grid(ctx, grid)
    v = trend_verdict(df.level.to_numpy(), df.head_top_eig.to_numpy(), expected="decreasing",
                      rng=ctx.rng(), what="head Hessian top eigenvalue vs sigma")
    if not ctx.profile.smoke:  # a smoke run decides nothing to calibrate
        v = calibrated_trend(v, df.level.to_numpy(), df.head_top_eig.to_numpy(),
                             rng=ctx.rng("calibration"), expected="decreasing")
    h0 = df[df.level == 0].set_index("seed").head_top_eig
    d = df[df.level > 0].copy()
    d["erf_rhs"] = cor1_rhs(H=h0.loc[d.seed].to_numpy(), eps=d.head_grad_norm.to_numpy(),
                            sigma=d.level.to_numpy())
    wide = df.pivot_table(index="seed", columns="level", values="head_top_eig")
    top = wide[[df.level.min(), df.level.max()]].dropna()
    if len(top) >= 2 and (top.iloc[:, 0] > 0).all():
        ends = top.iloc[:, 0].to_numpy(), top.iloc[:, 1].to_numpy()
        v = trend_banded(v, end_ratio(*ends, rng=ctx.rng("band"), paired=True),
                         bands.ad_hessian(),
                         what=f"top eigenvalue at sigma {df.level.max():g} / at sigma "
                              f"{df.level.min():g}, median over seeds")
        b = bands.ad_hessian()
        if v.status == "no-effect":  # only where a change at the band's edge would be told
            v = calibrated_end_ratio(v.with_evidence(end_ratio=v.evidence["band_effect"]), *ends,
                                     paired=True, margin=min(1 - b.low, b.high - 1),
                                     rng=ctx.rng("band calibration"))
    else:
        v = v.with_evidence(band=bands.ad_hessian().to_dict())
    v = v.with_evidence(n_exceeding_erf=int((d.head_top_eig > d.erf_rhs).sum()), n_models=len(d),
                        n_seeds=int(df.seed.nunique()), scale=ctx.scale,
                        n_runs_not_trained=int(did_not_train(df).sum()),
                        seeds_needed=trend_power(v.evidence["spearman_rho"], df.level.nunique()),
                        top_eig_by_sigma={f"{k:g}": float(x) for k, x in
                                          df.groupby("level").head_top_eig.mean().items()})
    v = smoke(ctx, v, df, grid)
    table = pd.concat([df[df.level == 0].assign(erf_rhs=np.nan), d])
    fig, (ax,) = plotting.figure()
    plotting.median_band(ax, table.level, table.head_top_eig, label="head Hessian top eigenvalue")
    plotting.median_band(ax, d.level, d.erf_rhs, label="erf bound (H0, eps = head gradient norm)")
    ax.set_xlabel("sigma (activation decay)")
    ax.set_ylabel("lambda_max, test features")
    ax.set_title(f"{ctx.claim_id}: {v.status} ({plural(df.seed.nunique(), 'seed')})", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(v, table, fig, grid.config())
