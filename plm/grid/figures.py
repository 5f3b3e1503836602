"""The figure set of a stability/evaluation grid, drawn from its ``results.csv`` alone (re-plotting
never re-trains): accuracy mean ± std per method, and with evaluation columns the calibration
(ECE, Brier, reliability diagram pooled over seeds), robustness curves (accuracy vs embedding
noise and vs token corruption) and layer-wise CKA to the pre-trained encoder."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from boundbench.framework.files import plotting
from boundbench.framework.files.atomic import write_atomic


def _color(i: int):
    return plt.cm.tab20(i % 20)  # more methods than the default ten-colour cycle


def _bars(ax, df: pd.DataFrame, col: str, label: str, *, names: bool = True) -> None:
    """Every seed and the mean +- std of ``col`` per method, methods down the y axis with
    their arguments one per line (long method names stay readable at print width); ``names``
    False leaves the y labels to the panel on the left."""
    methods = list(dict.fromkeys(df.method))
    for i, m in enumerate(methods):
        v = df[df.method == m][col].to_numpy(dtype=float)
        ax.scatter(v, np.full(len(v), i) + np.linspace(-0.12, 0.12, len(v)), s=10, color="grey")
        ax.errorbar(v.mean(), i, xerr=v.std(ddof=1) if len(v) > 1 else 0, fmt="o", ms=6,
                    capsize=3, color="C0")
    ax.set_yticks(range(len(methods)))
    ax.set_yticklabels([m.replace(":", ":\n").replace(",", ",\n") for m in methods]
                       if names else [])
    ax.set_ylim(len(methods) - 0.5, -0.5)  # the first (baseline) method on top
    ax.set_xlabel(label)


def _legend_below(fig, ax) -> None:
    """The methods' legend under the panels, in two columns (long method names with their
    arguments do not fit inside a print-width panel)."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, [t.replace(",", ", ") for t in labels], loc="outside lower center",
               ncol=1 if max(map(len, labels), default=0) > 30 else 2, fontsize=7)


def _curves(ax, df: pd.DataFrame, prefix: str, xlabel: str) -> None:
    cols = sorted((c for c in df.columns if c.startswith(prefix)),
                  key=lambda c: float(c[len(prefix):]))
    x = [float(c[len(prefix):]) for c in cols]
    for i, (m, g) in enumerate(df.groupby("method", sort=False)):
        vals = g[cols].to_numpy(dtype=float)
        mean, sd = vals.mean(0), vals.std(0, ddof=1) if len(vals) > 1 else np.zeros(len(x))
        line, = ax.plot(x, mean, "o-", ms=3, lw=1, label=m, color=_color(i))
        ax.fill_between(x, mean - sd, mean + sd, color=line.get_color(), alpha=0.12)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (mean ± std over seeds)")


def plot_grid(results: str | Path | pd.DataFrame, out_dir: str | Path) -> list[Path]:
    """Write the figure set of a grid into ``out_dir``; return the PNG paths."""
    df = results if isinstance(results, pd.DataFrame) else pd.read_csv(results)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seeds = df.seed.nunique()
    written = []

    def save(fig, name: str) -> None:
        plotting.finalize(fig)  # the figure has constrained layout: no tight_layout on top
        # the layout finalize checked is the layout saved: savefig does not run the engine again
        fig.set_layout_engine("none")
        path = out / f"{name}.png"
        write_atomic(path, lambda t: fig.savefig(t, format="png", dpi=130))
        plt.close(fig)
        written.append(path)

    # a row per method, tall enough for its name broken at every argument
    lines = max(1 + m.count(":") + m.count(",") for m in df.method.unique())
    height = max(2.4, 0.7 + df.method.nunique() * max(0.35, 0.15 * lines))
    fig, axes = plotting.figure(3 if "test_ece" in df else 1, height=height)
    _bars(axes[0], df, "test_accuracy", "test accuracy")
    axes[0].set_title(f"{df.task.iloc[0]}: mean ± std over {seeds} seeds", fontsize=8)
    if "test_ece" in df:
        _bars(axes[1], df, "test_ece", "8-bin ECE", names=False)
        _bars(axes[2], df, "test_brier", "Brier score", names=False)
    save(fig, "accuracy_calibration")
    if "noise_acc_0" in df:
        fig, (a1, a2) = plotting.figure(2)
        _curves(a1, df, "noise_acc_", "embedding noise delta (e + delta v)")
        _curves(a2, df, "corrupt_acc_", "fraction of tokens replaced by [UNK]")
        _legend_below(fig, a2)
        save(fig, "robustness")
    if "cka_layer_0" in df:
        fig, (ax,) = plotting.figure()
        _curves(ax, df, "cka_layer_", "layer (0 = embeddings)")
        ax.set_ylabel("linear CKA to the pre-trained encoder")
        _legend_below(fig, ax)
        save(fig, "cka_layers")
    if "test_reliability" in df:
        fig, (ax,) = plotting.figure(width=4.6, height=4.2)
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="perfect calibration")
        for i, (m, g) in enumerate(df.groupby("method", sort=False)):
            bins = [json.loads(r) for r in g.test_reliability]
            count = np.sum([b["count"] for b in bins], 0)
            conf = np.sum([np.multiply(b["mean_predicted"], b["count"]) for b in bins], 0)
            frac = np.sum([np.multiply(b["fraction_positive"], b["count"]) for b in bins], 0)
            ok = count > 0
            ax.plot(conf[ok] / count[ok], frac[ok] / count[ok], "o-", ms=3, lw=1, label=m,
                    color=_color(i))
        ax.set_xlabel("mean predicted probability (8 bins, pooled over seeds)")
        ax.set_ylabel("fraction of positives")
        _legend_below(fig, ax)
        save(fig, "reliability")
    return written
