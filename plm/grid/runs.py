"""``boundbench plm run`` and ``plm sweep`` as library calls: where a grid's run lives, running it
(to its seed count, or until the paired comparison is decided) without leaving an empty folder
behind, and the text the command prints. The command line only parses and prints."""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from boundbench.plm.grid.cells import at_once_default, run_grid
from boundbench.plm.grid.experiments import StabilityGrid, summarize


@dataclass
class GridRun:
    """A finished run: the grid, its folder, the per-run table ``df``; with ``until_decided``,
    the paired comparison ``table`` and the stopping ``record`` too."""

    grid: StabilityGrid
    out: Path
    df: pd.DataFrame
    metric: str = "test_accuracy"
    table: pd.DataFrame | None = None
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def until_decided(self) -> bool:
        return self.table is not None


def sweep_grid(config: str | Path, *, scale: str) -> StabilityGrid:
    """``plm sweep``'s grid: a sweep file at ``scale``, its model checked before any work."""
    from boundbench.plm.models import check_model

    grid = StabilityGrid.from_json(config, scale=scale)
    check_model(grid.finetune.model)  # a missing or unsafe model fails before any work
    return grid


def single_grid(*, task: str, methods: list[str], seeds: int, train_size: int | None,
                model: str, steps: int | None, device: str | None, head_only: bool,
                diagnostics: bool, evaluation: bool, scale: str) -> StabilityGrid:
    """``plm run``'s grid: the methods on one task at ``scale``, its model checked first."""
    from boundbench.plm.grid.experiments import as_methods
    from boundbench.plm.models import check_model
    from boundbench.plm.training.train import FinetuneConfig

    ft = FinetuneConfig(model=model, max_steps=steps, device=device, head_only=head_only)
    grid = StabilityGrid(task=task, methods=as_methods(methods), seeds=seeds, train_size=train_size,
                         finetune=ft, diagnostics=diagnostics, evaluation=evaluation
                         ).at_scale(scale)
    check_model(grid.finetune.model)
    return grid


def run_folder(grid: StabilityGrid, out_root: Path) -> Path:
    """The run's folder under ``out_root``: the task and the grid's key. The seed count is left
    out, so a run with more seeds (or ``until_decided``) extends the cells a smaller one left."""
    return Path(out_root) / f"{re.sub(r'[^A-Za-z0-9.+-]+', '_', grid.task)}-{grid.key(seeds=False)}"


def cost_note(grid: StabilityGrid, *, scale: str, command: str = "run") -> str | None:
    """One line for a run expected to take over two minutes here (None otherwise)."""
    est = grid.estimate()
    if est is None or est["seconds"] <= 120:
        return None
    hint = "" if scale == "quick" else "; --scale quick runs a smoke version in minutes"
    return (f"plm {command}: about {est['seconds'] / 60:.0f} min at scale {scale} here (a rough "
            f"estimate: {est['runs']:.0f} runs of {est['steps']:.0f} steps; finished runs are "
            f"reused{hint})")


def run(grid: StabilityGrid, out_root: Path, *, until_decided: bool = False,
        metric: str = "test_accuracy", band: float | None = None, max_seeds: int = 50,
        budget: float | None = None, workers: int | None = None,
        scheduler: str | None = None, seeds_at_once: int | None = None) -> GridRun:
    """Run ``grid`` into :func:`run_folder` (finished cells are reused): to its seeds, or, with
    ``until_decided``, adding paired seeds until the anytime-valid comparison on ``metric``
    decides (:func:`boundbench.plm.grid.sequential.run_until_decided`). ``seeds_at_once``: see
    :func:`boundbench.plm.grid.cells.run_grid`. A run that fails before finishing any cell leaves
    no folder behind."""
    runner = functools.partial(run_grid, seeds_at_once=at_once_default(seeds_at_once))
    out = run_folder(grid, out_root)
    fresh = not out.exists()
    try:
        if until_decided:
            from boundbench.plm.grid.sequential import run_until_decided

            df, table, record = run_until_decided(
                grid, out, metric=metric, band=band, max_seeds=max_seeds, budget=budget,
                workers=workers, scheduler=scheduler, runner=runner)
            return GridRun(grid, out, df, metric, table, record)
        return GridRun(grid, out, runner(grid, out, workers=workers, scheduler=scheduler),
                       metric)
    except BaseException:
        if fresh and not any(out.glob("cells/*.json")):
            shutil.rmtree(out, ignore_errors=True)
        raise


def _fmt(frame: pd.DataFrame, digits: str) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:{digits}}")


def _not_trained_note(df: pd.DataFrame, grid: StabilityGrid) -> list[str]:
    """A line for runs too short to train (test F1 or MCC below the audit's threshold: still
    predicting one class), naming how many and what would train them."""
    from boundbench.framework.execution.profiles import get_profile
    from boundbench.plm.grid.results import TRAINED_MIN, did_not_train

    std = get_profile("standard").fine_tuning.max_steps
    if not {"test_f1", "test_mcc"} <= set(df.columns):
        return []
    bad = int(did_not_train(df).sum())
    if not bad:
        return []
    steps = grid.finetune.max_steps
    said = f"{steps} steps" if steps else "this run"
    return [f"\n{bad} of {len(df)} runs did not train (their test F1 or MCC is below "
            f"{TRAINED_MIN:g}: "
            f"they still predict one class): {said} cannot decide anything; the standard "
            f"scale trains {std} steps (--steps {std} --scale standard)"]


def _comparison_part(res: GridRun) -> list[str]:
    """The paired comparison against the first method, or, with fewer than two seeds where
    both runs trained, why there is no interval and what would give one."""
    from boundbench.plm.grid.comparison import comparison

    comp = res.table if res.table is not None else comparison(res.df, metric=res.metric)
    if "difference_ci_low" not in comp.columns:  # no method has 2 paired seeds that trained
        return [f"\nagainst {comp.baseline.iloc[0]}, paired by seed ({res.metric}): fewer than "
                "2 seeds where both runs trained, so no interval can be computed (the mean "
                "difference needs 2, the ratio of spreads 3); run with --seeds 3 or more, more "
                "--steps, or --until-decided:",
                _fmt(comp[[c for c in ("method", "level", "paired_seeds", "runs_not_trained",
                                       "mean_difference") if c in comp.columns]], ".4g")]
    parts = []
    if "std_ratio" not in comp.columns:
        parts.append(f"\n{int(res.df.seed.nunique())} seeds: the ratio of spreads needs 3 "
                     "seeds a method where the runs trained, so it is not shown")
    show = [c for c in ("method", "level", "paired_seeds", "runs_not_trained",
                        "mean_difference", "difference_ci_low", "difference_ci_high",
                        "difference_cs_low", "difference_cs_high", "difference",
                        "std_ratio", "ratio_ci_low", "ratio_ci_high", "ratio_cs_low",
                        "ratio_cs_high", "spread", "until_decided") if c in comp.columns]
    parts += [f"\nagainst {comp.baseline.iloc[0]}, paired by seed ({res.metric}): the mean "
              "difference with the audit's 95% bootstrap interval and the anytime-valid "
              "confidence sequence (valid however the seeds were chosen); the ratio of the "
              "std across seeds likewise:", _fmt(comp[show], ".4g")]
    if res.until_decided:
        rec = res.record
        parts.append(f"stopped at {rec['seeds']} seeds ({rec['stopped_because']}; "
                     f"{rec['seconds_spent'] / 60:.1f} min of fine-tuning): "
                     f"{res.out}/sequential.json")
    return parts


def report(res: GridRun) -> str:
    """What ``plm run`` prints: the summary by method and level, the paired comparison with
    its intervals when several methods ran, the evaluation and the diagnostics columns."""
    df, grid, out = res.df, res.grid, res.out
    summary = summarize(df)
    cols = ["method", "level", "n_seeds", "test_accuracy_mean", "test_accuracy_std",
            "test_f1_mean", "test_f1_std", "test_mcc_mean", "test_mcc_std"]
    if not grid.vary:  # one level: no 'level NaN' column
        cols.remove("level")
    parts = [_fmt(summary[cols], ".4f")]
    parts += _not_trained_note(df, grid)
    if df.method.nunique() > 1:
        parts += _comparison_part(res)
    ev = [c for c in ("test_ece_mean", "test_brier_mean", "noise_drop_mean",
                      "corrupt_drop_mean", "cka_mean_mean", "head_top_eig_mean") if c in summary]
    if grid.evaluation and ev:
        parts += ["\ncalibration, robustness (accuracy drops), CKA to the pre-trained encoder, "
                  "head Hessian (means over seeds):", _fmt(summary[["method", "level", *ev]], ".4g")]
    diag = [c for c in ("feat_B_mean", "feat_margin_over_B_mean", "feat_loo_stability_mean",
                        "feat_centroid_distance_mean", "encoder_distance_from_start_mean")
            if c in summary.columns]
    if grid.diagnostics and diag:
        parts += ["\ndiagnostics of the fine-tuned test features (mean over seeds):",
                  _fmt(summary[["method", "level", *diag]], ".4g")]
        pre = out / "diagnostics_pretrained.json"
        if pre.exists():
            parts.append(f"pre-trained encoder: {pre.read_text()}")
    parts.append(f"results: {out}/results.csv, summary.csv, config.json")
    return "\n".join(parts)
