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

from boundbench.framework import plotting
from boundbench.framework.files import write_atomic


def _color(i: int):
    return plt.cm.tab20(i % 20)  # more methods than the default ten-colour cycle


def _bars(ax, df: pd.DataFrame, col: str, ylabel: str) -> None:
    methods = list(dict.fromkeys(df.method))
    for i, m in enumerate(methods):
        v = df[df.method == m][col].to_numpy(dtype=float)
        ax.scatter(np.full(len(v), i) + np.linspace(-0.12, 0.12, len(v)), v, s=10, color="grey")
        ax.errorbar(i, v.mean(), yerr=v.std(ddof=1) if len(v) > 1 else 0, fmt="o", ms=6,
                    capsize=3, color="C0")
    ax.set_xticks(range(len(methods)))
    ax.set_xticklabels(methods, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)


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
        fig.tight_layout()
        path = out / f"{name}.png"
        write_atomic(path, lambda t: fig.savefig(t, format="png", dpi=130))
        plt.close(fig)
        written.append(path)

    fig, axes = plotting.figure(3 if "test_ece" in df else 1, width=4.6)
    _bars(axes[0], df, "test_accuracy", "test accuracy")
    axes[0].set_title(f"{df.task.iloc[0]}: mean ± std over {seeds} seeds", fontsize=8)
    if "test_ece" in df:
        _bars(axes[1], df, "test_ece", "8-bin ECE")
        _bars(axes[2], df, "test_brier", "Brier score")
    save(fig, "accuracy_calibration")
    if "noise_acc_0" in df:
        fig, (a1, a2) = plotting.figure(2, width=4.8)
        _curves(a1, df, "noise_acc_", "embedding noise delta (e + delta v)")
        _curves(a2, df, "corrupt_acc_", "fraction of tokens replaced by [UNK]")
        a2.legend(fontsize=7, ncol=2)
        save(fig, "robustness")
    if "cka_layer_0" in df:
        fig, (ax,) = plotting.figure()
        _curves(ax, df, "cka_layer_", "layer (0 = embeddings)")
        ax.set_ylabel("linear CKA to the pre-trained encoder")
        ax.legend(fontsize=7, ncol=2)
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
        ax.legend(fontsize=7, ncol=2)
        save(fig, "reliability")
    return written
