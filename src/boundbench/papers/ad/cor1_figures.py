"""Activation-decay claims on trained MLPs (Gaussian clusters): Corollary 1 with global and
with the paper's epsilon, Fig. 1a and Fig. 3 analogues (JACHESS's MLP claim:
:mod:`~boundbench.papers.jachess.mlp`).

Choices the papers leave open, as used here (all in the configs):
- model: bias-free MLP ``d=20 -> hidden -> 5`` (ReLU), SGD batch 64, lr 0.1 cosine-annealed,
  float64; CE + sigma^2/2 mean ||h||^2 (batch mean); one init per seed shared across sigma;
- Hessians w.r.t. the last layer W^(L) only, on the training set, at the end (as Fig. 1a),
  computed exactly (Kronecker mean) instead of by PyHessian;
- ``H`` for Fig. 1a: the top eigenvalue of the sigma = 0 model (the paper does not say);
  ``eps`` (paper's recipe): mean minibatch gradient norm w.r.t. W^(L) over the last 10% of steps;
- globally valid pair for the last layer: ``eps = sqrt(2) mean ||h||`` (||p - y|| <= sqrt 2) and
  ``H = lambda_max(mean h h^T)/2`` (ad.last-layer-hessian);
- Fig. 3: 30% symmetric label noise, accuracy on clean test labels, Hessian trace w.r.t. all
  parameters by Hutchinson (Rademacher probes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from boundbench.framework.claims.registry import Outcome, claim
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.search.targeted import Search
from boundbench.framework.stats.exact_trends import calibrated_trend
from boundbench.framework.stats.trends import trend_verdict
from boundbench.framework.verdicts.readings import readings_verdict
from boundbench.framework.verdicts.rules import BINDING, Verdict, measured, with_margin
from boundbench.papers.ad.proofs import COR1_PROOF
from boundbench.synthetic.mlp import MLPRun, measure, train_mlps
from boundbench.theory.activation_decay import cor1_rhs, smoothed_last_layer_top_eig

BIND_C = (0.05, 0.5, 1.0, 2.0, 5.0)  # widths c eps/(sqrt2 H): erf factors 1, 0.995 .. 0.22


def _ad_cfg(ctx: CheckContext, label_noise: float) -> MLPRun:
    return MLPRun(strengths=(0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0), seeds=ctx.pick(2, 5),
                  n_train=ctx.pick(1000, 2000), n_test=ctx.pick(1000, 2000),
                  hidden=ctx.pick(32, 64), steps=ctx.pick(800, 3000), label_noise=label_noise,
                  seed=ctx.seed)


def _ad_table(ctx: CheckContext, label_noise: float = 0.0) -> tuple[pd.DataFrame, MLPRun]:
    cfg = _ad_cfg(ctx, label_noise)
    n_mc = ctx.pick(200, 2000)

    def compute() -> pd.DataFrame:
        tr = train_mlps(cfg)
        df = pd.DataFrame(measure(tr, trace_probes=ctx.pick(20, 100), seed=ctx.seed))
        W2 = tr.W2.clone().requires_grad_(True)
        logits = tr.forward(tr.X, W2=W2).logits
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.classes),
                                               tr.y.repeat(len(tr.strength)), reduction="none")
        (g,) = torch.autograd.grad(ce.view(len(tr.strength), -1).mean(-1).sum(), W2)
        df["grad_norm_full_end"] = g.flatten(1).norm(dim=1).numpy()
        with torch.no_grad():
            h = tr.forward(tr.X).features
        df["H_global"] = [0.5 * torch.linalg.eigvalsh(hs.T @ hs / len(hs))[-1].item() for hs in h]
        df["eps_global"] = np.sqrt(2.0) * h.norm(dim=-1).mean(-1).numpy()
        est = [smoothed_last_layer_top_eig(h[s], tr.W2[s], sigma=sig, n_mc=n_mc, seed=ctx.seed)
               if sig > 0 and label_noise == 0 else (np.nan, np.nan, np.nan)
               for s, sig in enumerate(tr.strength)]
        df[["smoothed_lam", "smoothed_lo", "smoothed_hi"]] = np.array(est)
        # Cor. 1 at smoothing widths where its erf factor is far from 1 (1/c the erf argument):
        # the instances on which the bound can bind
        for c in BIND_C:
            sig_c = c * df.eps_global / (np.sqrt(2.0) * df.H_global)
            est = [smoothed_last_layer_top_eig(h[s], tr.W2[s], sigma=float(sig_c[s]), n_mc=n_mc,
                                               seed=ctx.seed) if label_noise == 0
                   else (np.nan, np.nan, np.nan) for s in range(len(tr.strength))]
            df[[f"bind{c:g}_{k}" for k in ("lam", "lo", "hi")]] = np.array(est)
            df[f"bind{c:g}_sigma"] = sig_c
            # the case H = lambda_max(mean h h^T)/2 is the bound of: two classes at p = (1/2,
            # 1/2), a zero head on the same features; there the bound is tight as sigma -> 0
            zero = torch.zeros(2, h.shape[-1], dtype=h.dtype)
            est = [smoothed_last_layer_top_eig(h[s], zero, sigma=float(sig_c[s]), n_mc=n_mc,
                                               seed=ctx.seed) if label_noise == 0
                   else (np.nan, np.nan, np.nan) for s in range(len(tr.strength))]
            df[[f"zero{c:g}_{k}" for k in ("lam", "lo", "hi")]] = np.array(est)
        # each model's features and head, flattened, for searches over its smoothing width
        df["features"] = [hs.numpy().ravel() for hs in h]
        df["head_weights"] = [w.numpy().ravel() for w in tr.W2]
        return df.rename(columns={"strength": "sigma"})

    return ctx.cached("ad-mlps", {**cfg.config(), "n_mc": n_mc, "bind_c": BIND_C,
                                 "zero_head": True, "stored": "features+head_weights"}, compute), cfg


def _cor1_verdict(df: pd.DataFrame, rhs: np.ndarray, what: str) -> Verdict:
    hi, lo = measured(df.smoothed_hi.to_numpy()), measured(df.smoothed_lo.to_numpy())
    ev = {"n_models": len(df), "n_upper_within_bound": int((hi <= rhs).sum()),
          "n_lower_above_bound": int((lo > rhs).sum()),
          "worst_estimate_over_rhs": float(np.max(df.smoothed_lam / rhs)),
          # models whose estimate is within 10% of the bound, and the check against half the
          # bound (a wrong constant), which must fail on them
          "n_binding": int((df.smoothed_lam >= (1 - BINDING) * rhs).sum()),
          "control_bound_halved_n_lower_above": int((lo > rhs / 2).sum()),
          "control_bound_halved_worst_ratio": float(np.max(2 * df.smoothed_lam / rhs)),
          "min_rhs": float(rhs.min()), "max_smoothed_lambda": float(df.smoothed_lam.max())}
    # the margin: how far the deciding confidence limits are from the bound, relative to it
    above = (lo - rhs) / rhs
    ev = with_margin(ev, above.max() if ev["n_lower_above_bound"] else
                     float(np.min(np.abs(np.concatenate([(rhs - hi) / rhs, above])))),
                     "relative")
    if ev["n_lower_above_bound"]:
        return Verdict("violated", f"{what}: the measured smoothed-Hessian norm exceeds the erf "
                       f"bound beyond its confidence margin on {ev['n_lower_above_bound']} of "
                       f"{len(df)} models (estimate/bound up to "
                       f"{ev['worst_estimate_over_rhs']:.3g})", ev)
    if ev["n_upper_within_bound"] == len(df):
        return Verdict("holds", f"{what}: the smoothed-Hessian norm stays below the erf bound on "
                       f"all {len(df)} models, confidence margin included (estimate/bound <= "
                       f"{ev['worst_estimate_over_rhs']:.3g})", ev)
    return Verdict("inconclusive", f"{what}: the bound lies inside the Monte Carlo interval", ev)


def _cor1_figure(df: pd.DataFrame, title: str, readings: dict[str, str] | None = None):
    """The smoothed Hessian against the erf bound per sigma; ``readings``: the verdict of each
    reading of the paper's eps (its bound is drawn with it, the failing one too)."""
    fig, (ax,) = plotting.figure()
    g = df.groupby("sigma")
    m = g.smoothed_lam.median()
    ax.errorbar(m.index, m.values, yerr=[m.values - g.smoothed_lo.min().values,
                                         g.smoothed_hi.max().values - m.values],
                fmt="o-", ms=4, label="||E_Delta Hess_W L(W + Delta)|| (MC, 3 s.e.)")
    ax.plot(m.index, g.rhs_global.median().values, "k--", label="erf bound, global eps and H")
    if readings is None:
        ax.plot(m.index, g.rhs_paper.median().values, "C3:", label="erf bound, paper's eps")
    else:
        ax.plot(m.index, g.rhs_paper.median().values, "C3:",
                label=f"erf bound, minibatch eps: {readings['minibatch eps']}")
        ax.plot(m.index, g.rhs_full.median().values, "C4-.",
                label=f"erf bound, full-batch eps: {readings['full-batch eps']}")
    plotting.plain_log_axis(ax, "x", ticks=m.index)
    ax.set_yscale("log")
    ax.set_xlabel("sigma (smoothing = activation-decay strength)")
    ax.set_ylabel("spectral norm, last layer")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return fig


def _cor1_frame(ctx: CheckContext) -> tuple[pd.DataFrame, MLPRun]:
    df, cfg = _ad_table(ctx)
    df = df[df.sigma > 0].copy()
    df["rhs_global"] = cor1_rhs(H=df.H_global, eps=df.eps_global, sigma=df.sigma)
    df["rhs_paper"] = cor1_rhs(H=df.H_global, eps=df.grad_norm_end, sigma=df.sigma)
    return df, cfg


def _cor1_sides(p: dict):
    """Corollary 1 over its own assumption space in one dimension (H = eps = 1 by scaling):
    f'' = H on an interval of width w <= 2 eps/H and 0 elsewhere, so |f'| <= eps and |f''| <= H
    (the Huber loss at w = 2 eps/H); the smoothed Hessian at a point t off the interval's
    centre is H (Phi((w/2 - t)/sigma) - Phi((-w/2 - t)/sigma)), in closed form; batched."""
    from scipy.special import erf, ndtr

    w, t = np.asarray(p["width"], dtype=float), np.asarray(p["offset"], dtype=float)
    sig = np.asarray(p["sigma"], dtype=float)
    return ndtr((w / 2 - t) / sig) - ndtr((-w / 2 - t) / sig), erf(1.0 / (np.sqrt(2) * sig))


@claim("ad.cor1.global", functions=(cor1_rhs,),
       paper="ad", where="Corollary 1, eq. (1)", kind="bound",
       statement="With a gradient bound eps and a Hessian bound H valid everywhere, the spectral "
       "norm of the Gaussian-smoothed loss's Hessian is at most H erf(eps/(sqrt2 H sigma)), here "
       "for the last layer of trained MLPs.",
       equation="||Hess E_Delta L(W + Delta)|| <= H erf(eps / (sqrt(2) H sigma)),  eps = sqrt(2) "
       "mean||h||, H = lambda_max(mean h h^T)/2",
       search=Search({"width": (1e-3, 2.0), "offset": (-5.0, 5.0), "sigma": (1e-3, 1e2, "log")},
                     _cor1_sides, budget=(20_000, 500_000), batched=True, atol=1e-12,
                     note="the corollary's assumption space in 1-D (|f'| <= eps, |f''| <= H): "
                     "curvature H on an interval of width <= 2 eps/H, closed form",
                     proof=COR1_PROOF))
def _cor1_global(ctx: CheckContext) -> Outcome:
    df, cfg = _cor1_frame(ctx)
    full, _ = _ad_table(ctx)
    # the trained models at their own sigma, and every model (sigma = 0 too) at the widths where
    # the erf factor bites
    parts = [df.assign(family="trained sigma", sigma_eval=df.sigma, rhs=df.rhs_global)]
    for c in BIND_C:
        for head, name in (("bind", "trained head"), ("zero", "2-class zero head")):
            b = full.assign(family=f"{name}, sigma = {c:g} eps/(sqrt2 H)",
                            sigma_eval=full[f"bind{c:g}_sigma"],
                            smoothed_lam=full[f"{head}{c:g}_lam"],
                            smoothed_lo=full[f"{head}{c:g}_lo"],
                            smoothed_hi=full[f"{head}{c:g}_hi"])
            parts.append(b.assign(rhs=cor1_rhs(H=b.H_global, eps=b.eps_global,
                                               sigma=b.sigma_eval)))
    cols = ["family", "sigma", "replica", "sigma_eval", "smoothed_lam", "smoothed_lo",
            "smoothed_hi", "rhs", "H_global", "eps_global"]
    inst = pd.concat([p[[c for c in cols if c in p.columns]] for p in parts], ignore_index=True)
    verdict = _cor1_verdict(inst, inst.rhs.to_numpy(), "global eps and H")
    factor = inst.rhs / inst.H_global
    # control: the same comparison against a bound half as large (H halved) must fail, or the
    # check could not see a violation of that size
    control = float(np.max(inst.smoothed_lo / (0.5 * inst.rhs)))
    verdict = verdict.with_evidence(
        n_binding=int((inst.smoothed_lam >= 0.9 * inst.rhs).sum()),
        n_erf_factor_below_0_9=int((factor < 0.9).sum()),
        n_erf_factor_at_1=int((factor > 0.9999).sum()),
        control_half_bound_worst_lower_over_rhs=control,
        mc_samples=ctx.pick(200, 2000), seeds=cfg.seeds, seed=ctx.seed)
    fig = _cor1_figure(df, f"{ctx.claim_id}: {verdict.status}")
    ax = fig.axes[0]
    for head, mark in (("trained head", "o"), ("2-class zero head", "s")):
        g = inst[inst.family.str.startswith(head)]
        ax.scatter(g.sigma_eval, g.smoothed_lam, s=8, alpha=0.6, marker=mark,
                   label=f"{head} at sigma where erf < 1")
    rest = inst[inst.family != "trained sigma"]
    ax.scatter(rest.sigma_eval, rest.rhs, s=10, marker="_", color="k", label="its erf bound")
    ax.set_xscale("log")
    ax.set_xlabel("smoothing sigma (trained sigma, then sigma where the erf factor < 1)")
    ax.legend(fontsize=7)
    return Outcome(verdict, inst.assign(lhs=inst.smoothed_lam), fig, cfg.config())


def _paper_eps_sides(p: dict, ctx: CheckContext):
    """Corollary 1 with the paper's eps on one of the claim's own trained models (``model``),
    smoothed at a width ``c`` times eps/(sqrt2 H) of its choosing: the left side is the Monte
    Carlo *lower* confidence limit of the smoothed Hessian's top eigenvalue, so an excess is
    beyond the estimate's noise. ``model`` in [0, 1) picks a row of the claim's table (sigma > 0
    models, in the table's order)."""
    df, cfg = _cor1_frame(ctx)
    row = df.iloc[min(int(p["model"] * len(df)), len(df) - 1)]
    # a copy: a table read back from the cache holds read-only arrays (torch warns on those)
    h = torch.as_tensor(np.array(row["features"], dtype=np.float64)).view(-1, cfg.hidden)
    W = torch.as_tensor(np.array(row["head_weights"], dtype=np.float64)).view(cfg.classes,
                                                                                cfg.hidden)
    sigma = float(p["c"]) * row.grad_norm_end / (np.sqrt(2.0) * row.H_global)
    _, lo, _ = smoothed_last_layer_top_eig(h, W, sigma=sigma, n_mc=ctx.pick(200, 2000),
                                           seed=ctx.seed)
    return lo, float(cor1_rhs(H=row.H_global, eps=row.grad_norm_end, sigma=sigma))


@claim("ad.cor1.paper-eps", functions=(cor1_rhs,),
       paper="ad", where="Corollary 1 as used in §4.1 (Fig. 1a)",
       kind="bound",
       statement="With eps estimated as the paper does (the average gradient norm near the "
       "minimum at the end of training), the erf expression still bounds the smoothed Hessian.",
       equation="||Hess E_Delta L(W + Delta)|| <= H erf(eps_end / (sqrt(2) H sigma)),  eps_end = "
       "mean minibatch ||grad_W L|| at the end",
       notes="H is kept at its global value so that only eps differs from ad.cor1.global. Two "
       "readings of the paper's eps (averaging the gradient's norm near the minimum), each at "
       "Fig. 1a's pairing (every model smoothed at the sigma it was trained with): the mean "
       "minibatch gradient norm over the last 10% of steps (the default, the literal reading) "
       "and the full-batch gradient norm at the end. The corollary needs ||grad L|| <= eps "
       "wherever the Gaussian reaches, not only at the minimum. The targeted search smooths the "
       "same trained models at widths of its choosing, sigma = c eps/(sqrt2 H) with c in [0.01, "
       "10] (where the erf factor bites), against the MC lower confidence limit: a "
       "violation there shows that a local eps does not make eq. (1) a valid bound, but Fig. 1a "
       "never smooths at those widths, so it does not decide the claim's readings.",
       search=Search({"model": (0.0, 1.0), "c": (1e-2, 10.0, "log")}, _paper_eps_sides,
                     budget=(40, 400), with_context=True,
                     quantities=lambda p: {
                         "trained model (its place along the claim's table, 0 to 1)": p["model"],
                         "sigma / (eps / (sqrt2 H))": p["c"]},
                     note="the claim's trained models, each smoothed at sigma = c eps/(sqrt2 H), "
                     "c in [0.01, 10]; MC lower confidence limit"))
def _cor1_paper(ctx: CheckContext) -> Outcome:
    df, cfg = _cor1_frame(ctx)
    mini = _cor1_verdict(df, np.asarray(df.rhs_paper), "paper's eps (minibatch)")
    # the other reading of "the gradient's norm near the minimum": the full-batch gradient.
    # Both at Fig. 1a's pairing: each model smoothed at the sigma it was trained with
    full = _cor1_verdict(df, np.asarray(cor1_rhs(H=df.H_global, eps=df.grad_norm_full_end,
                                                 sigma=df.sigma)), "full-batch eps")
    verdict = readings_verdict({"minibatch eps": mini, "full-batch eps": full},
                               default="minibatch eps", words={
                                   "minibatch eps": "eps is the minibatch gradient's norm near "
                                   "the minimum (the default)", "full-batch eps": "eps is the "
                                   "full-batch gradient's norm there"},
                               what="the erf bound at Fig. 1a's pairing (each model smoothed at "
                               "its own sigma)")
    verdict = verdict.with_evidence(full_batch_eps_verdict=full.status,
                            full_batch_eps_n_above_bound=full.evidence["n_lower_above_bound"],
                            full_batch_eps_worst_estimate_over_rhs=full.evidence[
                                "worst_estimate_over_rhs"],
                            median_eps_full_batch=float(df.grad_norm_full_end.median()))
    verdict = verdict.with_evidence(mc_samples=ctx.pick(200, 2000), seeds=cfg.seeds,
                            median_eps_paper=float(df.grad_norm_end.median()),
                            median_eps_global=float(df.eps_global.median()), seed=ctx.seed)
    df = df.assign(rhs_full=cor1_rhs(H=df.H_global, eps=df.grad_norm_full_end, sigma=df.sigma))
    fig = _cor1_figure(df, f"{ctx.claim_id}: {verdict.status}",
                       readings={"minibatch eps": mini.status, "full-batch eps": full.status})
    return Outcome(verdict, df, fig, cfg.config())


@claim("ad.fig1a", paper="ad", where="§4.1, Figure 1a", kind="trend",
       statement="After activation-decay training, the top Hessian eigenvalue of the last layer "
       "follows the trend of the erf bound across sigma (and, as plotted, stays below it).",
       equation="lambda_max(Hess_W L) after AD(sigma) tracks H0 erf(eps_end / (sqrt(2) H0 sigma))",
       notes="H0 = lambda_max of the sigma = 0 model of the same seed (the paper does not say how "
       "H was chosen); eps_end as in ad.cor1.paper-eps; exact eigenvalues. Verdict on the rank "
       "correlation across sigma > 0; evidence counts where the 'bound' is exceeded.")
def _fig1a(ctx: CheckContext) -> Outcome:
    df, cfg = _ad_table(ctx)
    h0 = df[df.sigma == 0].set_index("replica").lambda_max_W2
    d = df[df.sigma > 0].copy()
    d["rhs"] = cor1_rhs(H=h0.loc[d.replica].to_numpy(), eps=d.grad_norm_end, sigma=d.sigma)
    verdict = trend_verdict(d.rhs.to_numpy(), d.lambda_max_W2.to_numpy(), expected="increasing",
                            rng=ctx.rng(), what="top eigenvalue vs erf bound across sigma")
    verdict = calibrated_trend(verdict, d.rhs.to_numpy(), d.lambda_max_W2.to_numpy(),
                               rng=ctx.rng("calibration"), expected="increasing")
    verdict = verdict.with_evidence(n_exceeding_bound=int((d.lambda_max_W2 > d.rhs).sum()),
                            n_models=len(d), seeds=cfg.seeds, seed=ctx.seed,
                            lambda_at_sigma0_median=float(h0.median()))
    fig, (ax,) = plotting.figure()
    plotting.median_band(ax, d.sigma, d.lambda_max_W2, label="top eigenvalue after AD (exact)")
    plotting.median_band(ax, d.sigma, d.rhs, label="erf bound (H0, eps_end)")
    plotting.plain_log_axis(ax, "x", ticks=sorted(d.sigma.unique()))
    ax.set_yscale("log")
    ax.set_xlabel("sigma")
    ax.set_ylabel("last-layer Hessian, training set")
    ax.set_title(f"{ctx.claim_id}: {verdict.status}; bound exceeded on "
                 f"{verdict.evidence['n_exceeding_bound']}/{len(d)}", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(verdict, d, fig, cfg.config())


@claim("ad.fig3", paper="ad", where="§4.1, Figure 3", kind="trend",
       statement="With 30% label noise, activation decay improves test accuracy over no "
       "regularization for a range of sigma (first improving, then declining as sigma grows).",
       equation="acc(AD sigma*) - acc(baseline) > 0 for some sigma* in the grid",
       notes="Paired per seed (same init and batches); interval by bootstrap over test examples "
       "and seeds at the best sigma (chosen on the same data: optimistic). The Hessian trace vs "
       "sigma is reported as evidence.")
def _fig3(ctx: CheckContext) -> Outcome:
    df, cfg = _ad_table(ctx, label_noise=0.3)
    base = df[df.sigma == 0].set_index("replica")
    df = df.assign(acc_diff=df.test_acc - base.test_acc.loc[df.replica].to_numpy())
    g = df.groupby("sigma")
    best = g.acc_diff.mean().drop(0.0).idxmax()
    # test-example bootstrap of the paired difference at the best sigma
    n_test = cfg.n_test
    d_best = df[df.sigma == best].acc_diff.to_numpy()
    se = np.sqrt(np.mean(df[df.sigma == best].test_acc * (1 - df[df.sigma == best].test_acc))
                 * 2 / n_test / len(d_best))
    lo, hi = d_best.mean() - 2 * se, d_best.mean() + 2 * se
    rho = trend_verdict(df.sigma.to_numpy(), df.trace_all.to_numpy(), expected="increasing",
                        rng=ctx.rng(), what="Hessian trace vs sigma")
    ev = {"best_sigma": float(best), "acc_diff_at_best": float(d_best.mean()),
          "approx_ci_low": float(lo), "approx_ci_high": float(hi),
          "acc_diff_at_largest_sigma": float(g.acc_diff.mean().iloc[-1]),
          "trace_vs_sigma_spearman": rho.evidence["spearman_rho"],
          "trace_at_sigma0": float(g.trace_all.mean().iloc[0]),
          "trace_at_best": float(g.trace_all.mean().loc[best]), "seeds": cfg.seeds,
          "label_noise": cfg.label_noise, "seed": ctx.seed}
    declines = ev["acc_diff_at_largest_sigma"] < ev["acc_diff_at_best"]
    if lo > 0:
        status = "supported"
        reason = (f"AD at sigma = {best:g} beats the baseline by {d_best.mean():+.3f} accuracy "
                  f"(approx. 95% CI [{lo:+.3f}, {hi:+.3f}]); "
                  f"{'declines' if declines else 'does not decline'} at larger sigma")
    elif hi < 0:
        status, reason = "contradicted", (f"every sigma is worse than the baseline (best "
                                          f"{d_best.mean():+.3f} at sigma = {best:g})")
    else:
        status, reason = "inconclusive", (f"best sigma = {best:g} changes accuracy by "
                                          f"{d_best.mean():+.3f}, CI [{lo:+.3f}, {hi:+.3f}]")
    reason += f"; Hessian trace vs sigma: Spearman {ev['trace_vs_sigma_spearman']:.2f}"
    verdict = _fig3_calibrated(ctx, Verdict(status, reason, ev), df, se)
    status = verdict.status
    fig, (a1, a2) = plotting.figure(2)
    plotting.median_band(a1, df.sigma, df.acc_diff, label="AD - baseline (per seed)")
    a1.axhline(0, color="k", lw=0.8)
    a1.set_ylabel("test accuracy difference")
    plotting.median_band(a2, df.sigma, df.trace_all, label="Hutchinson trace, all parameters")
    a2.set_yscale("log")
    a2.set_ylabel("Hessian trace (training loss)")
    for ax in (a1, a2):
        ax.set_xscale("symlog", linthresh=0.05)
        ax.set_xticks(sorted(df.sigma.unique()))
        ax.set_xticklabels([f"{v:g}" for v in sorted(df.sigma.unique())], fontsize=7)
        ax.minorticks_off()
        ax.set_xlabel("sigma")
        ax.legend(fontsize=7)
    a1.set_title(f"ad.fig3 (30% label noise): {status}", fontsize=9)
    return Outcome(verdict, df, fig, cfg.config())


def _fig3_calibrated(ctx: CheckContext, verdict: Verdict, df: pd.DataFrame, se: float
                     ) -> Verdict:
    """Fig. 3's decision (the best sigma's paired difference +- 2 SE, the best chosen on the
    same data) calibrated on nulls where no sigma helps: each sigma's differences centred at
    0 and the seeds drawn with replacement, the best sigma chosen again on each (issue 64)."""
    from boundbench.framework.stats.calibrated import Procedure, calibrate

    m = df[df.sigma > 0].pivot(index="replica", columns="sigma", values="acc_diff").to_numpy()
    if m.shape[0] < 3:
        return verdict.with_evidence(calibration_not_applicable=(
            f"{m.shape[0]} seeds: too few to resample; the interval's unit is the test example "
            "(a binomial SE), whose outcomes are not kept"))

    def decide(d: np.ndarray, g: np.random.Generator) -> tuple[str, dict]:
        best = float(d.mean(0).max())
        return ("supported" if best - 2 * se > 0 else "contradicted" if best + 2 * se < 0
                else "inconclusive"), {}

    centred = m - m.mean(0)

    def draw(c: float, g: np.random.Generator) -> np.ndarray:
        return centred[g.integers(0, len(m), len(m))] + c

    sd = m.std(0, ddof=1)

    def family(fam: str, c: float | None, g: np.random.Generator) -> np.ndarray:
        from boundbench.framework.stats.decisions.battery import noise

        return (c or 0.0) + sd * noise(fam, g, m.shape)

    return calibrate(verdict, m, Procedure("the best sigma's +- 2 SE interval", decide,
                                           lambda g: draw(0.0, g), "resamples of the seeds with "
                                           "every sigma's differences centred at 0",
                                           family=family),
                     rng=ctx.rng("calibration"), alternative=draw,
                     grid=[se * k for k in (0.5, 1, 1.5, 2, 2.5, 3, 4, 6)],
                     measure=lambda d: float(d.mean(0).max()), units="accuracy gain")
