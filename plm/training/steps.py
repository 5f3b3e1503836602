"""What both fine-tuning loops share (:func:`boundbench.plm.training.train.finetune`, one seed, and
:mod:`boundbench.plm.training.batched`, seeds at once): the run's configuration and result, the order of
a seed's batches, the metrics of a split and the step's precision."""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass

import numpy as np
import torch

from boundbench.framework.inputs.validate import Bool, Float, Int, Seed, check_fields
from boundbench.plm.encode import length_grouped_batches
from boundbench.plm.evaluation.evaluate import calibration
from boundbench.plm.models import DEFAULT_MODEL


@dataclass(frozen=True)
class FinetuneConfig:
    model: str = DEFAULT_MODEL
    epochs: float = 3.0
    max_steps: int | None = None
    lr: float = 2e-5
    head_lr: float = 1e-3
    batch_size: int = 16
    max_length: int = 128
    head_only: bool = False
    pooling: str = "mean"
    seed: int = 0
    device: str | None = None
    accelerate: bool = False  # use HF accelerate (multi-GPU under `accelerate launch`)
    # batches from chunks of this many batches sorted by length (less padding); 1: plain random
    length_groups: int = 4

    def __post_init__(self) -> None:
        check_fields(self, epochs=Float(0, lo_open=True), max_steps=Int(1, optional=True),
                     lr=Float(0, lo_open=True), head_lr=Float(0, lo_open=True),
                     batch_size=Int(1), max_length=Int(2), length_groups=Int(1), seed=Seed(),
                     head_only=Bool(), accelerate=Bool())

    def config(self) -> dict:
        return asdict(self)


@dataclass
class FinetuneResult:
    metrics: dict[str, float]
    losses: list[float]
    penalties: list[float]
    seconds: float
    config: dict
    method: dict
    model: torch.nn.Module | None = None
    # with ``model``: the fine-tuned model's evaluation pass over the test split
    # (:func:`plm.encode.forward_all` with ``hidden=True``), which the grid's diagnostics and
    # evaluation read instead of running the same pass again
    test_pass: dict | None = None


def split_metrics(logits: torch.Tensor, y: torch.Tensor, prefix: str) -> dict[str, float]:
    from torchmetrics.functional import accuracy, f1_score, matthews_corrcoef

    c = logits.shape[-1]
    task = "binary" if c == 2 else "multiclass"
    pred = logits.argmax(-1)
    kw = {"task": task} if task == "binary" else {"task": task, "num_classes": c}
    f1_kw = kw if task == "binary" else {**kw, "average": "macro"}
    cal = calibration(logits, y)
    return {f"{prefix}_accuracy": float(accuracy(pred, y, **kw)),
            f"{prefix}_f1": float(f1_score(pred, y, **f1_kw)),
            f"{prefix}_mcc": float(matthews_corrcoef(pred, y, **kw)),
            f"{prefix}_brier": cal["brier"], f"{prefix}_ece": cal["ece"]}


def next_batch(batches: list, lengths: np.ndarray, *, cfg: FinetuneConfig, rng, world: int,
               acc) -> np.ndarray:
    """The next batch's text indices (``batches`` is the epoch's queue, refilled in place with
    length-grouped batches when it runs out); on several processes, this process's slice."""
    idx = np.asarray([], dtype=int)
    while len(idx) < world:  # every process draws the same batches (same rng)
        if not batches:  # a new epoch
            batches.extend(length_grouped_batches(lengths, batch_size=cfg.batch_size,
                                                  group=cfg.length_groups, rng=rng))
        idx = np.asarray(batches.pop(0))
    if world > 1:
        # equal slices on every process: a batch whose length is not a multiple of the
        # world size drops its last len % world texts (an epoch's short last batch), since
        # an empty slice would fail on one process and unequal ones would weight DDP's
        # gradient average unequally; a batch shorter than the world is skipped
        idx = idx[:len(idx) - len(idx) % world][acc.process_index::world]
    return idx


def precision(device: torch.device, acc):
    """The step's precision context: float32 on every device (accelerate's own context when it
    runs the show, with its mixed precision off).

    CUDA ran under bf16 autocast until issue 66. The seeds-at-once loop cannot autocast: under
    vmap a Linear's matmul ran in bf16 and its bias was added in float32 (pytorch#192617, seen
    here in torch 2.13 on the CPU), and the two arms of a paired comparison (FineTune trained
    at once, JACHESS one seed at a time) must train in one precision. A test swaps in CPU bf16
    to show every method would survive it (``tests/test_gpu_standins.py``)."""
    if acc is not None:  # accelerate owns the context (Accelerator(mixed_precision="no"))
        return acc.autocast()
    return contextlib.nullcontext()
