"""What running a claim writes and shows: its figure, table and config beside each other with
the command that remakes them (:func:`save`), and the figure titled with the final verdict and,
for a searched bound, the search's worst instance drawn under it
(:func:`say_what_was_decided`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.files.atomic import write_atomic

# ``outcome`` and ``c`` are the registry's Outcome and Claim, which import this module: Any
# here (an Outcome's verdict, table, figure and config; a Claim's id and search are read)


def save(ctx: CheckContext, outcome: Any) -> tuple[
        str | None, str | None, list[str], list[str], dict[str, str] | None]:
    """Write ``<id>.json`` (config, seed, scale, versions), ``<id>.csv`` and the figure in each
    of ``ctx.formats`` into ``ctx.out_dir``; return the figure's first file name, the table's,
    every figure file, the figure's layout problems
    (:func:`boundbench.framework.files.plotting.layout_problems`: overlapping or clipped text, fonts
    too small to print), checked whether or not anything is written, and how to remake the
    figure (:func:`~boundbench.framework.files.meta.figure_provenance`; ``None`` when nothing is
    written)."""
    fig_name = table_name = None
    fig_files: list[str] = []
    layout: list[str] = []
    prov: dict[str, str] | None = None
    if outcome.figure is not None:
        import matplotlib.pyplot as plt

        from boundbench.framework.files import plotting

        plotting.finalize(outcome.figure)
        layout = plotting.layout_problems(outcome.figure, drawn=True)
        # the layout checked is the layout saved: the engine is not run again for each format
        outcome.figure.set_layout_engine("none")
    if ctx.out_dir is not None:
        import json

        from boundbench.framework.files.meta import (
            compute_context,
            environment,
            figure_provenance,
            provenance_text,
        )

        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        prov = figure_provenance(claim_id=ctx.claim_id, seed=ctx.seed, scale=ctx.scale,
                                 out_dir=ctx.out_dir, config=outcome.config,
                                 datasets=ctx.datasets, formats=ctx.formats)
        meta = {"claim": ctx.claim_id, "seed": ctx.seed, "scale": ctx.scale,
                "config": outcome.config, "environment": environment(),
                "computed_on": compute_context(), "provenance": prov}
        text = json.dumps(meta, indent=2, default=str)
        write_atomic(ctx.out_dir / f"{ctx.claim_id}.json", lambda t: t.write_text(text))
        if outcome.table is not None:
            write_atomic(ctx.out_dir / f"{ctx.claim_id}.csv",
                         lambda t: outcome.table.to_csv(t, index=False))
            table_name = f"{ctx.claim_id}.csv"
        if outcome.figure is not None:
            for fmt in ctx.formats:
                write_atomic(ctx.out_dir / f"{ctx.claim_id}.{fmt}",
                             partial(plotting.savefig, outcome.figure, fmt=fmt,
                                     claim_id=ctx.claim_id,
                                     description=provenance_text(prov)))
                fig_files.append(f"{ctx.claim_id}.{fmt}")
            # reports embed the PNG where there is one (markdown viewers show it), else the first
            fig_name = next((f for f in fig_files if f.endswith(".png")), fig_files[0])
    if outcome.figure is not None:
        plt.close(outcome.figure)
    return fig_name, table_name, fig_files, layout, prov


def say_what_was_decided(c: Any, outcome: Any) -> tuple[str | None, bool]:
    """The figure's title is the final verdict, and a searched bound's figure draws the search's
    worst instance (the instance that decided it, where it did). Returns the title and whether
    the instance is drawn."""
    if outcome.figure is None:
        return None, False
    from boundbench.framework.files import plotting

    ev = outcome.verdict.evidence
    marked = False
    if c.search is not None and isinstance(ev.get("search_alone_worst_ratio"), int | float):
        with plotting.style():
            plotting.search_strip(outcome.figure, worst_ratio=float(ev["search_alone_worst_ratio"]),
                                  instance=ev.get("worst_instance_named",
                                                  ev.get("worst_instance")),
                                  random_worst=ev.get("random_family_worst_ratio"),
                                  decided=bool(ev.get("decided_by_search")))
        marked = True
    status = outcome.verdict.status
    if getattr(c, "kind", None) == "bound" and status == "violated":
        # the finding's one size, as every report quotes it (framework.verdicts.sizes)
        from boundbench.framework.verdicts.sizes import FAMILY, largest_known

        known = largest_known(ev)
        if known is not None:
            value = "unbounded" if known[0] == float("inf") else f"{known[0]:.3g}"
            status += f"; largest lhs/rhs {value} ({FAMILY.get(known[1], known[1])})"
    if ev.get("smoke_run"):
        _mark_smoke_run(outcome.figure)
        status += ", smoke run"
    return plotting.headline(outcome.figure, c.id, status), marked


def _mark_smoke_run(fig) -> None:
    """Say on every panel that the figure is a smoke run (a quick-scale fine-tuning claim: a
    few steps and seeds), so that a figure read alone does not suggest an effect: a difference
    between methods drawn there is noise the run cannot tell from one. The mark sits behind
    the data (the layout check leaves it out: :data:`~boundbench.framework.files.plotting.BEHIND_GID`)."""
    from boundbench.framework.files import plotting

    for ax in fig.axes:
        if ax.has_data():
            ax.text(0.5, 0.5, "SMOKE RUN\ndecides nothing", transform=ax.transAxes,
                    ha="center", va="center", rotation=20, fontsize=12, color="tab:red",
                    alpha=0.22, zorder=0.5, fontweight="bold", gid=plotting.BEHIND_GID,
                    clip_on=True)
