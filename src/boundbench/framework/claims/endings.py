"""Endings shared by bound checks: a verdict over a table of both sides and its figure."""

from __future__ import annotations

from typing import Any

import pandas as pd

from boundbench.framework.claims.registry import Outcome
from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files import plotting
from boundbench.framework.verdicts.rules import NUMERIC_RTOL, BoundSides, bound_verdict

RTOL, ATOL = NUMERIC_RTOL, 1e-12  # the bound checks' tolerance (verdicts.NUMERIC_RTOL)


def ratio_histogram_outcome(
    ctx: CheckContext,
    df: pd.DataFrame,
    *,
    what: str,
    xlabel: str,
    evidence: dict[str, Any] | None = None,
    ratio: pd.Series | None = None,
    config: Any = None,
) -> Outcome:
    """Verdict over ``df.lhs <= df.rhs`` (tolerance :data:`RTOL`, :data:`ATOL`) plus a histogram
    by ``df.family`` of ``ratio`` (default ``lhs/rhs`` where ``rhs > 0``), with the bound at 1."""
    verdict = bound_verdict(BoundSides(df["lhs"].to_numpy(), df["rhs"].to_numpy()), rtol=RTOL,
                            atol=ATOL, what=what, evidence={"seed": ctx.seed, **(evidence or {})})
    fig, (ax,) = plotting.figure()
    if ratio is None:
        ratio = (df["lhs"] / df["rhs"])[df["rhs"] > 0]
    family = df["family"][ratio.index].str.replace(r" d=\d+$", "", regex=True)
    plotting.ratio_histogram(ax, ratio.to_numpy(), family.to_numpy(), xlabel=xlabel)
    ax.set_title(f"{ctx.claim_id}: {verdict.status}", fontsize=9)
    return Outcome(verdict, df, fig, config)
