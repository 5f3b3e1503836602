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
* its dropout masks: a counter-based hash of (seed, step, site, position)
  (:func:`seeded_uniform`) in place of torch's generator, whose draws under vmap would depend
  on the batch of seeds; the attention dropout through transformers' attention interface.

Shapes are a seed's own too: its batch is padded to its longest text rounded up to a multiple
of :data:`WIDTH_STEP` (a fixed bucket: fewer distinct shapes), and the seeds whose batches have
the same width and rows run in one vmapped call (an epoch's short last batch lands at a
different step for each seed).

What a method may use here is :data:`BATCHED_TRAINER`'s capabilities: its task loss, its
penalty, several heads and the batch labels, with hooks that run under vmap (no data-dependent
Python control flow) and the default state. A method that needs more (an optimizer wrapper,
model changes, differentiable inputs, unlabeled batches, its own state) is refused with the
reason, and :func:`finetune_seeds` runs it one seed at a time with
:func:`~boundbench.plm.train.finetune`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from boundbench.methods import Forward, Method, Trainer
from boundbench.plm.data import TextData
from boundbench.plm.diagnostics import parameter_distance
from boundbench.plm.encode import forward_texts, token_ids
from boundbench.plm.models import EncoderClassifier, load_classifier, pick_device
from boundbench.plm.train import FinetuneConfig, FinetuneResult, _metrics, _next_batch, finetune

#: What the batched loop gives a method (a method needing more runs one seed at a time).
BATCHED_TRAINER = Trainer("plm fine-tuning, seeds at once",
                          frozenset({"penalty", "task-loss", "heads", "labels"}))

#: A seed's batch width is its longest text rounded up to a multiple of this.
WIDTH_STEP = 8

_M32 = 0xFFFFFFFF
ATTENTION = "boundbench_seeded"


def _mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (two multiply-xorshift rounds; products stay below 2^59, so int64
    arithmetic never overflows) of an int64 tensor holding values in [0, 2^32)."""
    x = ((x ^ (x >> 16)) * 0x45D9F3B) & _M32
    x = ((x ^ (x >> 16)) * 0x45D9F3B) & _M32
    return x ^ (x >> 16)


class _Stream:
    """The running seed's stream key, ``hash(seed, step)``: an int64 0-d tensor, a batched one
    inside :func:`vmap` (set by the batched forward, read by the dropout sites)."""

    key: torch.Tensor | None = None


def stream_key(seeds: torch.Tensor, step: int) -> torch.Tensor:
    """``hash(hash(seed) + step)`` per seed: the key of every dropout mask of that step."""
    return _mix((_mix(seeds & _M32) + step) & _M32)


def seeded_uniform(site: int, shape: torch.Size | tuple[int, ...],
                   device: torch.device) -> torch.Tensor:
    """Uniform numbers in [0, 1) of ``shape`` from (the running seed's key, ``site``, position)
    alone, in float64 (2^-32 resolution): a counter-based generator, the same for a seed
    whichever seeds run beside it."""
    if _Stream.key is None:
        raise RuntimeError("seeded_uniform outside a batched step (no stream key set)")
    n = int(np.prod(shape)) if len(shape) else 1
    where = torch.arange(n, device=device, dtype=torch.int64).view(shape)
    k = _mix((_Stream.key + site * 0x9E3779B1) & _M32)
    return _mix((where + k) & _M32).to(torch.float64) * (1.0 / 2**32)


def _drop(x: torch.Tensor, p: float, site: int) -> torch.Tensor:
    keep = seeded_uniform(site, x.shape, x.device) >= p
    return torch.where(keep, x / (1.0 - p), torch.zeros((), dtype=x.dtype, device=x.device))


class SeededDropout(torch.nn.Module):
    """``torch.nn.Dropout`` with its mask from :func:`seeded_uniform` at its own site."""

    def __init__(self, p: float, site: int) -> None:
        super().__init__()
        self.p, self.site = float(p), site

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _drop(x, self.p, self.site) if self.training and self.p > 0 else x


def seeded_attention(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                     value: torch.Tensor, attention_mask: torch.Tensor | None,
                     scaling: float | None = None, dropout: float = 0.0, **_: Any):
    """transformers' eager attention (``eager_attention_forward``) with the attention dropout's
    mask from :func:`seeded_uniform` at the module's site."""
    if scaling is None:
        scaling = query.size(-1) ** -0.5
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1)
    if module.training and dropout > 0:
        weights = _drop(weights, dropout, int(module._seeded_site))
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION, seeded_attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


def seeded(model: EncoderClassifier) -> EncoderClassifier:
    """``model`` with every dropout of its encoder seeded (:class:`SeededDropout`, and the
    attention's through :func:`seeded_attention`), numbered by site in module order."""
    _register()
    site = 0
    for module in list(model.encoder.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, torch.nn.Dropout):
                site += 1
                setattr(module, name, SeededDropout(child.p, site))
    for module in model.encoder.modules():
        if hasattr(module, "is_causal") and hasattr(module, "dropout"):  # a self-attention
            site += 1
            module._seeded_site = site
    model.encoder.set_attn_implementation(ATTENTION)
    return model


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


def _heads(model: EncoderClassifier, method: Method, seeds: Sequence[int]) -> dict[str, Any]:
    """Each seed's head as :class:`EncoderClassifier` draws it at that seed, stacked."""
    made = [EncoderClassifier(model.encoder, model.num_labels, heads=method.heads,
                              pooling=model.pooling, seed=s) for s in seeds]
    return {k: torch.stack([getattr(m, k).detach() for m in made]) for k in
            ("head_weight", "head_bias")}


def _padded(ids: list[list[int]], rows: np.ndarray, width: int, pad_id: int):
    out = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, i in enumerate(rows):
        out[r, :len(ids[i])] = torch.as_tensor(ids[i])
        mask[r, :len(ids[i])] = 1
    return out, mask


def finetune_seeds(data: TextData, method: Method, cfg: FinetuneConfig | None = None,
                   *, seeds: Sequence[int], progress: bool = False,
                   dtype: torch.dtype | None = None) -> list[FinetuneResult]:
    """Fine-tune ``data``'s train split at each of ``seeds`` (``cfg.seed`` is replaced by each),
    the seeds at once; one :class:`~boundbench.plm.train.FinetuneResult` per seed, in order.

    A seed's result equals this function's at that seed alone (module docstring). ``dtype``:
    the model's floating type (default its own, float32; the tests' float64). A method the
    batched loop cannot run (:func:`batchable` says why) runs one seed at a time with
    :func:`~boundbench.plm.train.finetune`, each result recording the reason.
    """
    cfg = FinetuneConfig() if cfg is None else cfg
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct seeds, at least one (got {seeds})")
    why = batchable(method)
    if why is not None or cfg.accelerate:
        why = why or "accelerate runs one seed per process"
        out = [finetune(data, method, replace(cfg, seed=s), progress=progress) for s in seeds]
        for r in out:
            r.config["seeds_at_once"] = f"1 (one seed at a time: {why})"
        return out
    device = pick_device(cfg.device)
    texts, labels = data.part("train")
    model, tok = load_classifier(cfg.model, num_labels=len(data.label_names),
                                 heads=method.heads, pooling=cfg.pooling, eager=True,
                                 seed=seeds[0])
    seeded(model).to(device=device, dtype=dtype).train()
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
    head = [params["head_weight"], params["head_bias"]]
    body = [v for k, v in params.items() if k.startswith("encoder.")]
    groups = [{"params": head, "lr": cfg.head_lr}] + ([{"params": body, "lr": cfg.lr}]
                                                      if body else [])
    opt = torch.optim.AdamW(groups, weight_decay=0.0, fused=device.type in ("cpu", "cuda"))
    seconds, losses, pens = _loop(model, method, cfg, params, fixed, opt, seeds, texts, labels,
                                  tok, device, progress=progress)
    # evaluated by a plain model of the same weights (no seeded dropout: it is off in eval)
    plain, _ = load_classifier(cfg.model, num_labels=len(data.label_names),
                               heads=method.heads, pooling=cfg.pooling, seed=seeds[0])
    plain.to(device=device, dtype=dtype)
    return [_result(plain, tok, data, method, cfg, params, start, s, i, losses[i], pens[i],
                    seconds / S, S, device) for i, s in enumerate(seeds)]


def _loop(model: EncoderClassifier, method: Method, cfg: FinetuneConfig,
          params: dict[str, torch.Tensor], fixed: dict[str, torch.Tensor],
          opt: torch.optim.Optimizer, seeds: list[int], texts: Sequence[str],
          labels: np.ndarray, tok: Any, device: torch.device, *, progress: bool):
    """The steps: ``(seconds, task losses (S, steps), penalties (S, steps))``, the losses kept
    on the device until the end (no host synchronisation per step)."""
    from boundbench.plm.train import _amp

    n, S = len(texts), len(seeds)
    total = cfg.max_steps or int(np.ceil(cfg.epochs * max(1, -(-n // cfg.batch_size))))
    ids = token_ids(tok, list(texts), max_length=cfg.max_length)  # once per task
    lengths = np.array([len(t) for t in ids])
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    rngs = [np.random.default_rng(s) for s in seeds]  # each seed's data order, its own
    queues: list[list[np.ndarray]] = [[] for _ in seeds]
    seeds_t = torch.tensor(seeds, dtype=torch.int64, device=device)
    labels_t = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    dtype = next(iter(params.values())).dtype

    def one(p, ids_, mask, y, key):  # one seed's step, under vmap
        _Stream.key = key
        try:
            add = (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
            fwd: Forward = functional_call(model, {**p, **fixed}, args=(ids_, mask),
                                           kwargs={"encoder_mask": add})
            fwd.labels = y
            task = method.task_loss(fwd, y)
            pen = method.penalty(fwd, {})
        finally:
            _Stream.key = None
        return task, torch.as_tensor(pen, dtype=task.dtype, device=task.device) + 0 * task

    task_t = torch.zeros(total, S, device=device)
    pen_t = torch.zeros(total, S, device=device)
    t0 = time.perf_counter()
    for step in tqdm(range(total), desc=f"fine-tune {S} seeds", disable=not progress):
        batch = [_next_batch(q, lengths, cfg=cfg, rng=r, world=1, acc=None)
                 for q, r in zip(queues, rngs, strict=True)]
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i, idx in enumerate(batch):
            width = -(-int(lengths[idx].max()) // WIDTH_STEP) * WIDTH_STEP
            groups[(width, len(idx))].append(i)
        keys = stream_key(seeds_t, step)
        loss: Any = 0.0
        for (width, _), members in groups.items():
            padded = [_padded(ids, batch[i], width, pad_id) for i in members]
            x = torch.stack([a for a, _ in padded]).to(device)
            m = torch.stack([b for _, b in padded]).to(device)
            y = torch.stack([labels_t[batch[i]] for i in members]).to(device)
            if len(members) == S:
                p, k = params, keys
            else:  # the seeds whose batch has this shape
                sel = torch.tensor(members, device=device)
                p = {name: v.index_select(0, sel) for name, v in params.items()}
                k = keys.index_select(0, sel)
            with _amp(device, None):
                task, pen = vmap(one, randomness="error")(p, x, m, y, k)
            task_t[step, members] = task.detach().float()
            pen_t[step, members] = pen.detach().float()
            loss = loss + (task + pen).sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    losses = task_t.T.cpu().tolist()  # one transfer, at the end
    pens = pen_t.T.cpu().tolist()
    return time.perf_counter() - t0, losses, pens


def _result(eval_model: EncoderClassifier, tok: Any, data: TextData, method: Method,
            cfg: FinetuneConfig, params: dict[str, torch.Tensor],
            start: dict[str, torch.Tensor], seed: int, i: int, losses: list[float],
            pens: list[float], seconds: float, S: int, device: torch.device) -> FinetuneResult:
    """Seed ``i``'s result: its parameters loaded into a plain model (the evaluation of
    :func:`~boundbench.plm.train.finetune`, bit for bit the same code)."""
    eval_model.load_state_dict({k: v[i].detach() for k, v in params.items()}, strict=False)
    eval_model.eval()
    enc = eval_model.encoder.state_dict()
    metrics: dict[str, float] = {"train_steps": len(losses),
                                 "encoder_distance_from_start": parameter_distance(enc, start)}
    for split in ("dev", "test"):
        tx, ty = data.part(split)
        if len(tx):
            logits = forward_texts(eval_model, tok, tx, max_length=cfg.max_length,
                                   device=device)
            metrics.update(_metrics(logits, torch.as_tensor(ty), split))
    ran = {"seed": seed, "device_used": str(device),
           "precision": "bf16 autocast" if device.type == "cuda" else "float32",
           "cpu_threads": torch.get_num_threads(), "seeds_at_once": S,
           "dropout": "seeded (hash of seed, step, site, position)"}
    return FinetuneResult(metrics, losses, pens, seconds, {**cfg.config(), **ran},
                          {**method.describe(), **method.report({})})
