"""Running a :class:`~boundbench.plm.grid.experiments.StabilityGrid`: each cell (a method, a level,
a seed) is one fine-tuning run saved as JSON under ``<out>/cells/``; a killed sweep resumes
where it stopped (finished cells are read back, not re-run), and the cells not yet done can run
as Dask tasks, one GPU each where there are GPUs."""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from boundbench.errors import ComputationError, InvalidArgument
from boundbench.framework.files.atomic import (
    key_lock,
    read_json,
    sweep_temporaries,
    write_atomic,
    write_json,
)
from boundbench.framework.files.meta import environment
from boundbench.plm.data import TextData
from boundbench.plm.grid.experiments import StabilityGrid, load_task, method_labels, summarize
from boundbench.plm.training.train import finetune_seeds


def _prepare_data(grid: StabilityGrid, level: float | None) -> TextData:
    data = load_task(grid.task)  # the split is fixed (seed 0); the seeds vary training
    if grid.train_size is not None:
        data = data.subsample("train", grid.train_size, seed=0)
    if grid.eval_size is not None:
        data = data.subsample("dev", grid.eval_size, seed=0).subsample("test", grid.eval_size,
                                                                       seed=0)
    n_train = int((data.split == "train").sum())
    if grid.vary == "train_fraction" and level is not None:
        data = data.subsample("train", int(round(level * n_train)), seed=1)
    if grid.vary == "remove_fraction" and level is not None:
        data = data.subsample("train", int(round((1 - level) * n_train)), seed=1)
    return data


def run_grid(grid: StabilityGrid, out: str | Path, *, progress: bool = True,
             workers: int | None = None, scheduler: str | None = None,
             seeds_at_once: int | None = None) -> pd.DataFrame:
    """Run (or resume) every cell; write ``results.csv`` (one row per run), ``summary.csv``
    (mean and std per method and level), ``config.json`` and the figure set (``figures/``, see
    :func:`plm.figures.plot_grid`); return the results table. ``workers``/``scheduler``: the
    cells not yet done run as Dask tasks (one cell per task, a GPU each where there are GPUs);
    their rows come back here and are written as a serial run writes them. Serially, the seeds
    of a method and level train at once (:func:`boundbench.plm.training.train.finetune_seeds`), at most
    ``seeds_at_once`` of them (default :func:`at_once_default`: as many as the device's memory
    takes); a seed's numbers are the same either way."""
    import os

    at_once = at_once_default(seeds_at_once)  # checked before anything is written
    out = Path(out)
    cells = out / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    sweep_temporaries(out)  # what killed runs left half-written
    # under `accelerate launch` every process runs every cell; only rank 0 writes
    writer = int(os.environ.get("RANK", "0")) == 0
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if writer:
        text = json.dumps({"grid": grid.config(), "environment": environment()}, indent=2,
                          default=str)
        write_atomic(out / "config.json", lambda t: t.write_text(text))
    levels = grid.levels if grid.vary else (None,)
    if writer:  # which texts each level trains and is tested on, next to the results
        for lv in levels:
            _prepare_data(grid, lv).save_splits(out / "splits" / f"level-{lv}.csv")
    labels = dict(zip(grid.methods, method_labels(grid.methods), strict=True))
    todo = [(m, lv, s) for m in grid.methods for lv in levels for s in grid.run_seeds()]
    if grid.diagnostics:
        _pretrained_diagnostics(grid, out)
    if workers is not None or scheduler is not None:
        rows = _run_cells_distributed(grid, todo, cells, labels, workers=workers,
                                      scheduler=scheduler, progress=progress, writer=writer)
    else:
        # the bar names the run (issue 43: it said "stability grid")
        desc = f"plm run {grid.task}: {len(grid.methods)} methods x {grid.seeds} seeds"
        rows = _run_cells_serial(grid, todo, cells, labels, {}, out, writer=writer,
                                 world=world, at_once=at_once, desc=desc, progress=progress)
    df = pd.DataFrame(rows)
    if writer:
        from boundbench.plm.grid.figures import plot_grid

        write_atomic(out / "results.csv", lambda t: df.to_csv(t, index=False))
        summary = summarize(df)
        write_atomic(out / "summary.csv", lambda t: summary.to_csv(t, index=False))
        plot_grid(df, out / "figures")
    return df


def at_once_default(seeds_at_once: int | None = None) -> int | None:
    """How many seeds of a cell train at once: ``seeds_at_once`` when given, else the
    environment's ``BOUNDBENCH_SEEDS_AT_ONCE`` (an execution setting, like a thread count: it
    changes no number, so it is in no cache key), else None (as many as fit)."""
    import os

    value: object = seeds_at_once
    name = "seeds_at_once"
    if value is None and os.environ.get("BOUNDBENCH_SEEDS_AT_ONCE", "").strip():
        value, name = os.environ["BOUNDBENCH_SEEDS_AT_ONCE"].strip(), "BOUNDBENCH_SEEDS_AT_ONCE"
        value = int(value) if str(value).isdigit() else value
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidArgument(f"{name} must be a positive integer (got {value!r})")
    return value


def _run_cells_serial(grid: StabilityGrid, todo: list, cells: Path, labels: dict,
                      data_cache: dict, out: Path, *, writer: bool, world: int,
                      at_once: int | None, desc: str, progress: bool) -> list[dict]:
    """The cells of ``todo`` in order, done ones read back; the rest of each method and level
    trained ``at_once`` seeds at a time (None: all of them, in chunks the memory takes)."""
    done: dict[tuple, Any] = {}
    todo_by: dict[tuple, list[int]] = {}
    for m, lv, s in todo:
        todo_by.setdefault((m, lv), []).append(s)
    bar = tqdm(total=len(todo), desc=desc, disable=not progress)
    for (m, lv), seeds in todo_by.items():
        path = {s: cells / f"{labels[m]}-{lv}-{s}.json" for s in seeds}
        pending = []
        for s in seeds:
            row = read_json(path[s], required=CELL_KEYS)
            if row is None:
                pending.append(s)
            else:
                done[(m, lv, s)] = row
                bar.update(1)
        step = at_once or max(1, len(pending))
        for i in range(0, len(pending), step):
            chunk = pending[i:i + step]
            # two runs on one --out never train the same cell at once; but the processes of
            # one multi-process launch (accelerate/torchrun) train every cell together: one of
            # them holding the lock while another waits for it inside DDP's set-up is a deadlock
            with contextlib.ExitStack() as stack:
                if world == 1:
                    for s in chunk:
                        stack.enter_context(key_lock(path[s]))
                # done meanwhile by another run on this folder?
                rows: dict[int, dict | None] = {s: read_json(path[s], required=CELL_KEYS)
                                                for s in chunk}
                left = [s for s in chunk if rows[s] is None]
                if left:
                    rows.update(zip(left, _compute_cells(grid, m, lv, left, labels, data_cache,
                                                         out, progress=progress), strict=True))
                    if writer:
                        for s in left:
                            write_json(path[s], rows[s])
            for s in chunk:
                done[(m, lv, s)] = rows[s]
            bar.update(len(chunk))
    bar.close()
    return [done[key] for key in todo]


# the keys every cell file has: a cell without them (e.g. `{}`) is set aside and re-run
CELL_KEYS = ("method", "level", "seed", "task", "seconds", "final_loss", "method_config")


def _remote_cell(task: tuple) -> dict:
    """One cell on a Dask worker: its row, which the client writes."""
    grid, m, lv, s = task
    labels = dict(zip(grid.methods, method_labels(grid.methods), strict=True))
    return _compute_cell(grid, m, lv, s, labels, {}, None)


def gpu_resources(device: str | None) -> dict[str, float] | None:
    """The Dask resources a fine-tuning cell on ``device`` asks for: one GPU for any CUDA device
    (``None`` picks CUDA when present; an explicit ``cuda:N`` too, so that two cells never share
    a device unasked), none on the CPU."""
    import torch

    if device is not None:
        if not isinstance(device, str | torch.device) or isinstance(device, bool):
            raise InvalidArgument(f"device must be None, a string or a torch.device (got {device!r})")
        try:
            kind = torch.device(device).type
        except RuntimeError:
            raise InvalidArgument(f"device must be cpu, cuda, cuda:N or mps (got {device!r})") from None
    on_gpu = torch.cuda.is_available() and (device is None or kind == "cuda")
    return {"GPU": 1.0} if on_gpu else None


def _run_cells_distributed(grid: StabilityGrid, todo: list, cells: Path, labels: dict, *,
                           workers: int | None, scheduler: str | None, progress: bool,
                           writer: bool) -> list[dict]:
    """The cells of ``todo`` in order: done ones read back here, the rest computed as Dask tasks
    and written here as they arrive (so an interrupted sweep resumes like a serial one)."""
    from boundbench.framework.execution.executors import executor

    done: dict[tuple, dict] = {}
    for m, lv, s in todo:
        row = read_json(cells / f"{labels[m]}-{lv}-{s}.json", required=CELL_KEYS)
        if row is not None:
            done[(m, lv, s)] = row
    pending = [(grid, m, lv, s) for m, lv, s in todo if (m, lv, s) not in done]
    gpu = gpu_resources(grid.finetune.device)
    failures = []
    if pending:
        with executor(workers=workers, scheduler=scheduler) as ex:
            for (_, m, lv, s), res in ex.map(_remote_cell, pending, desc=f"cells {grid.task}",
                                             progress=progress, resources=gpu,
                                             total=len(pending)):
                if res.error is not None:
                    failures.append(f"{labels[m]}-{lv}-{s}: {res.error}")
                    continue
                if writer:
                    write_json(cells / f"{labels[m]}-{lv}-{s}.json", res.value)
                done[(m, lv, s)] = res.value
    if failures:
        raise ComputationError(f"{len(failures)} of {len(todo)} cells failed on their workers (the "
                               f"others are saved; rerun to retry): " + "; ".join(failures))
    return [done[key] for key in todo]


def _compute_cell(grid: StabilityGrid, m, lv, s: int, labels: dict, data_cache: dict,
                  out: Path | None) -> dict:
    """Train, measure and evaluate one cell: its row."""
    return _compute_cells(grid, m, lv, [s], labels, data_cache, out)[0]


def _compute_cells(grid: StabilityGrid, m, lv, seeds: list[int], labels: dict,
                   data_cache: dict, out: Path | None, *, progress: bool = False) -> list[dict]:
    """Train one method and level at ``seeds`` (at once where the method allows), then measure
    and evaluate each run: their rows, in order. ``progress``: a bar over the training steps
    (a chunk of seeds at once can take minutes on a CPU), gone when it ends."""
    if lv not in data_cache:
        data_cache[lv] = _prepare_data(grid, lv)
    ft = grid.finetune
    method = m
    if grid.vary == "heads":
        method = replace(m, heads=int(lv))
    elif grid.vary == "sigma":
        method = replace(m, sigma=lv)
    elif grid.vary in ("epochs", "lr"):
        ft = replace(ft, **{grid.vary: lv})
    unlab = _unlabeled(grid, data_cache[lv]) if method.dual else None
    keep = grid.diagnostics or grid.evaluation
    runs = finetune_seeds(data_cache[lv], method, ft, seeds=seeds, keep_model=keep,
                          unlabeled=unlab, progress=progress)
    out_rows = []
    for s, res in zip(seeds, runs, strict=True):
        out_rows.append(_row(grid, m, lv, s, res, labels, data_cache, out))
        res.model = res.test_pass = None  # a seed's model is let go once its row is made
    return out_rows


def _row(grid: StabilityGrid, m, lv, s: int, res, labels: dict, data_cache: dict,
         out: Path | None) -> dict:
    """A trained run's row: its metrics, diagnostics and evaluation."""
    row = {"method": labels[m], "level": lv, "seed": s, "task": grid.task, **res.metrics,
           "seconds": res.seconds, "final_loss": float(np.mean(res.losses[-10:])),
           "method_config": json.dumps(res.method), "device": res.config["device_used"],
           "precision": res.config["precision"], "cpu_threads": res.config["cpu_threads"]}
    if grid.diagnostics and len(data_cache[lv].label_names) == 2:
        from boundbench.plm.evaluation.diagnostics import feature_diagnostics

        _, ty = data_cache[lv].part("test")
        # kept with the model (keep_model is on with diagnostics): finetune's own pass over the
        # test split, whose features encode() would compute again bit for bit
        assert res.test_pass is not None
        X = res.test_pass["features"].double().numpy()
        diag = feature_diagnostics(X, ty, seed=s, max_loo=grid.diagnostics_points)
        row.update({f"feat_{k}": v for k, v in diag.items()})
    if grid.evaluation:
        from boundbench.plm.evaluation.evaluate import evaluate_run

        row.update(evaluate_run(grid, res.model, data_cache[lv], seed=s, out=out,
                                test_pass=res.test_pass))
    return row


def _unlabeled(grid: StabilityGrid, data: TextData) -> list[str]:
    """Unlabeled texts for dual-mode methods: training-split texts of the full task that the
    (subsampled) training set does not contain, never dev or test texts."""
    full = load_task(grid.task)
    used = set(data.part("train")[0])
    pool = [t for t in full.part("train")[0] if t not in used]
    n = grid.unlabeled_size or len(used)
    rng = np.random.default_rng(0)
    return [pool[i] for i in rng.permutation(len(pool))[:n]]


def _pretrained_diagnostics(grid: StabilityGrid, out: Path) -> dict:
    """The diagnostics of the *pre-trained* encoder's test features (the same for every seed
    and method, so computed once per grid), in ``<out>/diagnostics_pretrained.json``."""
    path = out / "diagnostics_pretrained.json"
    done = read_json(path)
    if done is not None:
        return done
    from boundbench.plm.encode import encode
    from boundbench.plm.evaluation.diagnostics import feature_diagnostics
    from boundbench.plm.models import load_classifier, pick_device

    data = _prepare_data(grid, None)
    if len(data.label_names) != 2:
        return {}
    ft = grid.finetune
    model, tok = load_classifier(ft.model, num_labels=2, pooling=ft.pooling)
    device = pick_device(ft.device)
    tx, ty = data.part("test")
    diag = feature_diagnostics(encode(model.to(device), tok, tx, max_length=ft.max_length,
                                      device=device), ty, seed=0,
                               max_loo=grid.diagnostics_points)
    write_json(path, diag)
    return diag
