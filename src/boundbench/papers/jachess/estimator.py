"""JACHESS's estimators (Jukic & Snajder, §3.2, eqs. (5)-(6)): the random-projection estimates
of the input Jacobian's and Hessian's Frobenius norms against the exact norms on small networks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch.func import hessian, jacrev

from boundbench.framework.claims.registry import Outcome, claim
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.stats.calibrated import calibrated_exponent, exponent_tail
from boundbench.framework.verdicts.rules import Verdict
from boundbench.theory import norms


@claim("jachess.estimator", functions=(norms.jacobian_frobenius, norms.hessian_frobenius),
       paper="jachess", where="§3.2, eqs. (5)-(6)", kind="trend",
       statement="The random-projection estimates of the input-output Jacobian's and the "
       "per-output Hessians' Frobenius norms converge to the exact norms like 1/sqrt(p) in the "
       "number of projections p.",
       equation="rel. error of sqrt(mean_i ||v_i^T J||^2) and sqrt(mean_i ||H_d u_i||^2) = "
       "O(p^(-1/2))",
       notes="tanh MLP 8 -> 16 -> 6, 10 inputs, exact norms by torch.func.jacrev / hessian; RMS "
       "relative error over repetitions; exponent fitted on log-log over p >= 4 (at p = 1 the "
       "square root's bias flattens the curve), interval by bootstrap over repetitions; "
       "supported if the interval reaches -1/2 or below.")
def _jachess_estimator(ctx: CheckContext) -> Outcome:
    g = torch.Generator().manual_seed(ctx.seed)
    W1 = torch.randn(16, 8, generator=g, dtype=torch.float64) / 8**0.5
    W2 = torch.randn(6, 16, generator=g, dtype=torch.float64) / 4.0

    def f(x):
        return torch.tanh(x @ W1.T) @ W2.T

    x = torch.randn(10, 8, generator=g, dtype=torch.float64)
    jac = torch.stack([jacrev(lambda v: f(v[None])[0])(xi).norm() for xi in x])
    dims = [0, 2, 5]
    hes = torch.stack([sum(hessian(lambda v, d=d: f(v[None])[0, d])(xi).norm() for d in dims)
                       for xi in x])
    ps = ctx.pick((1, 4, 16, 64, 256), (1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
    reps = ctx.pick(20, 100)
    rows = []
    for p in ps:
        for r in range(reps):
            je = norms.jacobian_frobenius(f, x, n_proj=p, seed=1000 * p + r)
            he = norms.hessian_frobenius(f, x, dims=dims, n_proj=p, seed=1000 * p + r)
            rows.append({"p": p, "rep": r, "jac_rel_err": ((je - jac) / jac).pow(2).mean().sqrt()
                         .item(), "hess_rel_err": ((he - hes) / hes).pow(2).mean().sqrt().item()})
    df = pd.DataFrame(rows)
    rng = ctx.rng()
    ev: dict = {"seed": ctx.seed, "repetitions": reps, "p_grid": list(ps)}
    ok = True
    for col in ("jac_rel_err", "hess_rel_err"):
        # fit where the square root's small-p bias has faded (p >= 4); all p in the evidence too
        piv_all = df.pivot(index="rep", columns="p", values=col)
        piv = piv_all.loc[:, piv_all.columns >= 4].to_numpy()
        logp = np.log(piv_all.columns[piv_all.columns >= 4].to_numpy(dtype=float))

        def slope(rows_, piv=piv, logp=logp):
            return np.polyfit(logp, 0.5 * np.log((piv[rows_] ** 2).mean(0)), 1)[0]

        est = slope(np.arange(reps))
        boot = [slope(rng.integers(0, reps, reps)) for _ in range(500)]
        # two exponents, either contradicting: each interval Bonferroni's 97.5%, expanded for
        # few repetitions (the quantile calibrated_exponent decides and is measured with)
        lo, hi = np.quantile(boot, [exponent_tail(2, reps), 1 - exponent_tail(2, reps)])
        name = col.split("_")[0]
        ev.update({f"{name}_exponent": float(est), f"{name}_ci_low": float(lo),
                   f"{name}_ci_high": float(hi),
                   f"{name}_rms_rel_err_at_p{ps[-1]}": float(np.sqrt((piv[:, -1] ** 2).mean())),
                   f"{name}_exponent_all_p": float(np.polyfit(
                       np.log(np.array(ps, dtype=float)),
                       0.5 * np.log((piv_all.to_numpy() ** 2).mean(0)), 1)[0])})
        ok &= bool(lo <= -0.5)
    reason = (f"RMS relative error ~ p^{ev['jac_exponent']:.2f} (Jacobian, expanded 97.5% CI "
              f"[{ev['jac_ci_low']:.2f}, {ev['jac_ci_high']:.2f}]) and p^{ev['hess_exponent']:.2f} "
              f"(Hessian, expanded 97.5% CI [{ev['hess_ci_low']:.2f}, {ev['hess_ci_high']:.2f}]); "
              "predicted -0.5")
    verdict = Verdict("supported" if ok else "contradicted", reason, ev)
    # calibrated on nulls at exactly p^-1/2 (each series tilted, repetitions resampled)
    fit = [p for p in ps if p >= 4]
    series = [np.log(df.pivot(index="rep", columns="p", values=c)[fit].to_numpy())
              for c in ("jac_rel_err", "hess_rel_err")]
    verdict = calibrated_exponent(
        verdict, np.log(np.array(fit, dtype=float)), series, rng=ctx.rng("calibration"),
        predicted=-0.5, aggregate=lambda s: 0.5 * np.log(np.mean(np.exp(2 * s), axis=-2)))
    fig, (ax,) = plotting.figure()
    for col, lab in (("jac_rel_err", "Jacobian, eq. (5)"), ("hess_rel_err", "Hessian, eq. (6)")):
        plotting.median_band(ax, df.p, df[col], label=lab)
    pp = np.array(ps, dtype=float)
    ax.plot(pp, df[df.p == ps[0]].jac_rel_err.median() * pp**-0.5, "k--", lw=1, label="p^-1/2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("random projections p")
    ax.set_ylabel("relative error of the norm estimate")
    ax.legend(fontsize=7)
    return Outcome(verdict, df, fig, {"p": list(ps), "reps": reps})
