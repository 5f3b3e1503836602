"""The table ``plm run`` prints and writes: every method of a grid against a baseline, per level,
its paired difference and its ratio of spreads across seeds, each with the audit's bootstrap
interval and the anytime-valid confidence sequence's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.stats.trends import bootstrap_mean
from boundbench.plm.grid.results import did_not_train, paired

EQUAL_RTOL = 1e-6
"""Paired differences within this of the metric's scale (relative) are equal: the metrics are
computed in float32, whose last bits printed "mean_difference 1.987e-08" for equal means
(issue 84); any real difference of a metric over a test set is far larger."""


def _without_noise(diff: np.ndarray, scale: float) -> np.ndarray:
    """``diff``, or zeros where every difference is float32 noise at ``scale``: the mean,
    its interval and its sequence then read equal methods as equal, not as 1e-8."""
    if len(diff) and np.all(np.abs(diff) <= EQUAL_RTOL * max(scale, 1.0)):
        return np.zeros_like(diff)
    return diff


def comparison(df: pd.DataFrame, *, metric: str = "test_accuracy", baseline: str | None = None,
               rng: np.random.Generator | None = None, alpha: float = 0.05) -> pd.DataFrame:
    """Every method against ``baseline`` (the first method of the table by default), per
    level: the mean paired difference of ``metric`` by seed with the audit's 95% bootstrap
    interval and the anytime-valid confidence sequence's interval (valid however the seeds
    were chosen, :mod:`~boundbench.framework.stats.sequential`), and the ratio of the std across
    seeds with its bootstrap interval and confidence sequence. Runs that never left the
    majority class (:func:`did_not_train`) are left out and counted. ``difference`` and
    ``spread`` say what the confidence sequence decides: ``higher``/``lower`` (``smaller``/
    ``larger``), or ``undecided``."""
    from boundbench.framework.stats.sequential import std_ratio_confidence_sequence, t_confidence_sequence
    from boundbench.framework.stats.trends import std_ratio_verdict

    if metric not in df.columns:
        raise InvalidArgument(f"metric must be a column of the results (got {metric!r}; columns: "
                              f"{sorted(c for c in df.columns if c.startswith('test_'))})")
    rng = rng if rng is not None else np.random.default_rng(0)
    methods = list(dict.fromkeys(df.method))
    base = baseline if baseline is not None else methods[0]
    if base not in methods:
        raise InvalidArgument(f"baseline must be one of the methods {methods} (got {base!r})")
    levels = list(dict.fromkeys(df.level)) if "level" in df.columns else [None]
    rows = []
    for lv in levels:
        part = df if lv is None or "level" not in df.columns else (
            df[df.level.isna()] if pd.isna(lv) else df[df.level == lv])
        for m in methods:
            if m == base:
                continue
            both = part[part.method.isin([m, base])]
            diff = _without_noise(paired(both.sort_values("seed"), metric, m, base),
                                  float(np.nanmax(np.abs(both[metric]))) if len(both) else 1.0)
            ok = both[~did_not_train(both)]
            a = ok[ok.method == m].sort_values("seed")[metric].to_numpy(dtype=float)
            b = ok[ok.method == base].sort_values("seed")[metric].to_numpy(dtype=float)
            row: dict = {"method": m, "baseline": base, "level": lv, "paired_seeds": len(diff),
                         "runs_not_trained": int(did_not_train(both).sum()),
                         "mean_difference": float(diff.mean()) if len(diff) else np.nan}
            if len(diff) >= 2:
                _, lo, hi = bootstrap_mean(diff, rng=rng)
                row.update(difference_ci_low=lo, difference_ci_high=hi)
                cs = t_confidence_sequence(diff, alpha=alpha)
                row.update(difference_cs_low=float(cs.low[-1]), difference_cs_high=float(
                    cs.high[-1]))
                row["difference"] = ("higher" if cs.low[-1] > 0 else "lower"
                                     if cs.high[-1] < 0 else "undecided")
            if min(len(a), len(b)) >= 3:
                v = std_ratio_verdict(a, b, rng=rng, what=metric)
                cs = std_ratio_confidence_sequence(a, b, alpha=alpha)
                row.update(std_ratio=v.evidence["std_ratio"], ratio_ci_low=v.evidence["ci_low"],
                           ratio_ci_high=v.evidence["ci_high"], ratio_cs_low=float(cs.low[-1]),
                           ratio_cs_high=float(cs.high[-1]))
                row["spread"] = ("smaller" if cs.high[-1] < 1 else "larger"
                                 if cs.low[-1] > 1 else "undecided")
            rows.append(row)
    out = pd.DataFrame(rows)
    if "level" in out.columns and out.level.isna().all():
        out = out.drop(columns="level")
    return out
