"""Figure conventions shared by every claim: paper-like, labelled, readable in grey-scale.

Importing this module leaves matplotlib's backend alone (a notebook keeps its inline one); the
command line picks the non-interactive ``Agg`` backend itself."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np

STYLE: dict[Any, Any] = {  # matplotlib types its keys as literals
    "figure.figsize": (5.2, 3.6),
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 9,
    "legend.frameon": False,
}


def figure(ncols: int = 1, *, width: float = 5.2, height: float = 3.6):
    """A new figure with ``ncols`` axes in the project's style."""
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes.ravel())


def ratio_histogram(ax, ratio: np.ndarray, groups: np.ndarray, *, xlabel: str) -> None:
    """Distribution of lhs/rhs per problem family, with the bound at 1."""
    ratio = np.asarray(ratio, dtype=float)
    bins = np.linspace(0.0, max(1.05, float(np.nanmax(ratio)) * 1.02), 40)
    for g in np.unique(groups):
        ax.hist(ratio[groups == g], bins=bins, histtype="step", lw=1.4, label=str(g))
    ax.axvline(1.0, color="k", ls="--", lw=1, label="bound (ratio = 1)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("instances")
    ax.legend(fontsize=8)


def median_band(ax, x, y, *, group=None, label: str | None = None, color=None,
                q: float = 0.25):
    """Median of ``y`` per distinct ``x`` (or per ``group``, drawn at the group's median x) with
    an interquartile band: the spread over datasets. Returns the median's line."""
    import pandas as pd

    df = pd.DataFrame({"x": np.asarray(x), "y": np.asarray(y)})
    df["g"] = df["x"] if group is None else np.asarray(group)
    g = df.groupby("g")
    xs, med = g["x"].median(), g["y"].median()
    lo, hi = g["y"].quantile(q), g["y"].quantile(1 - q)
    (line,) = ax.plot(xs.values, med.values, marker="o", ms=3, label=label, color=color)
    ax.fill_between(xs.values, lo.values, hi.values, alpha=0.2, color=line.get_color(), lw=0)
    return line


def plain_log_axis(ax, which: str = "x", ticks=None) -> None:
    """Log scale with plain-number labels (at ``ticks`` if given) and no minor labels."""
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    getattr(ax, f"set_{which}scale")("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    if ticks is not None:
        axis.set_ticks(list(ticks))
    axis.set_major_formatter(FormatStrFormatter("%g"))
    axis.set_minor_formatter(NullFormatter())
