"""Fine-tuning loop for pretrained encoders with the shared method interface.

One loop for every method: the task loss comes from ``method.task_loss`` (MHLoss averages its
heads), the extra term from ``method.penalty`` on the batch's :class:`Forward`. Full fine-tuning
or head tuning (``head_only``: encoder frozen). CUDA when present, CPU otherwise, float32 on both,
with no code change. ``accelerate=True`` hands device placement, mixed precision and gradient
synchronization to Hugging Face ``accelerate``: launched with ``accelerate launch`` on several
GPUs, each process trains on its slice of every global batch and DDP averages the gradients.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import torch
from tqdm.auto import tqdm

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Seeds, apply
from boundbench.methods import (
    CAPABILITIES,
    Forward,
    Method,
    Trainer,
    make_optimizer,
    optimizer_report,
)
from boundbench.plm.data import TextData
from boundbench.plm.encode import forward_all, forward_texts, pad_batch, token_ids
from boundbench.plm.evaluation.diagnostics import parameter_distance
from boundbench.plm.methods.transformer import dropout_rate
from boundbench.plm.models import load_classifier, pick_device
from boundbench.plm.training import batched, steps
from boundbench.plm.training.steps import FinetuneConfig, FinetuneResult, next_batch, split_metrics

#: The fine-tuning loop gives a method everything the interface defines.
PLM_TRAINER = Trainer("plm fine-tuning", frozenset(CAPABILITIES))


def _accelerator(cfg: FinetuneConfig, method: Method):
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise InvalidArgument("accelerate=True needs Hugging Face accelerate: pip install -e "
                              "'.[plm]' (or pip install 'accelerate>=1,<2')")
    from accelerate import Accelerator

    cpu = cfg.device == "cpu" or not torch.cuda.is_available()
    acc = Accelerator(cpu=cpu, mixed_precision="no")  # float32, as every run (steps.precision)
    if acc.num_processes > 1 and method.needs_inputs:
        raise InvalidArgument(f"method {method.name!r} differentiates through extra forward passes "
                              "(double backward), which DDP does not support: run it on one device")
    return acc


def _accelerated_device(cfg: FinetuneConfig, acc) -> torch.device:
    """The device an accelerated run trains on. accelerate's own pick ignores an explicit
    ``cuda:N``: on one process the run is moved to that GPU (``cuda`` in accelerate means the
    current device); under several processes each rank owns its GPU, so an explicit index
    is refused rather than silently replaced."""
    if cfg.device is None or cfg.device == "cpu" or not torch.cuda.is_available():
        return acc.device
    want = pick_device(cfg.device)
    if want.type != "cuda" or want.index is None:
        return acc.device
    if acc.num_processes > 1:
        raise InvalidArgument(f"device={cfg.device!r} with accelerate on {acc.num_processes} "
                              "processes: each process trains on its own GPU (its local rank); "
                              "leave device unset, or choose GPUs with CUDA_VISIBLE_DEVICES")
    torch.cuda.set_device(want)
    return want


def _forward(model, core, b, y, method: Method, params) -> Forward:
    """The batch's :class:`Forward`, with differentiable embeddings and re-run functions when
    the method needs them (``model`` may be accelerate's wrapper of ``core``)."""
    if not method.needs_inputs:
        fwd = model(b["input_ids"], b["attention_mask"])
    else:
        m = b["attention_mask"]
        emb = core.embed(b["input_ids"]).detach().requires_grad_(True)
        fwd = model(attention_mask=m, inputs_embeds=emb)
        fwd.inputs, fwd.input_event_dims = emb, 2
        fwd.fn = lambda e: model(attention_mask=m, inputs_embeds=e).logits
        fwd.feature_fn = lambda e: model(attention_mask=m, inputs_embeds=e).features

        def hidden_fn(e, rows=slice(None)):  # one pass: each block's pooled output, logits
            mm = m[rows]
            out = model(attention_mask=mm, inputs_embeds=e, hidden_states=True)
            return [core.pool(h, mm) for h in out.hidden[1:]], out.logits

        def dropout_fn(e, rate):  # every dropout at `rate` for this pass only
            with dropout_rate(core, rate):
                return model(attention_mask=m, inputs_embeds=e).logits

        fwd.hidden_fn, fwd.dropout_fn = hidden_fn, dropout_fn
    fwd.labels, fwd.params = y, params
    return fwd


def finetune(data: TextData, method: Method, cfg: FinetuneConfig = FinetuneConfig(), *,
             progress: bool = False, keep_model: bool = False,
             unlabeled: list[str] | None = None) -> FinetuneResult:
    """Fine-tune on ``data``'s train split; report accuracy/F1/MCC, Brier and 8-bin ECE on dev
    and test.

    The method's model changes (``method.applied``) last this run only; its state
    (``method.init_state``) is taken at its first penalty, before any update, from the run's
    seed. Methods with ``dual = True`` (JACHESS-unlab and the other ``*-unlab`` regularizers) alternate
    a task-loss step on a labeled batch with a penalty-only step on a batch of ``unlabeled``
    texts, one of each per step (the paper leaves the granularity open). Optimizers with
    ``needs_closure`` (SAM) get a closure that re-runs the batch with the same dropout masks.

    A method the seeds-at-once loop can run (:func:`boundbench.plm.training.batched.batchable`: FineTune,
    MHLoss, MMR, activation decay) trains there, as a batch of one seed, its dropout masks drawn
    from (seed, step): a seed's numbers are then the same whether it trains alone or beside
    others (:func:`finetune_seeds`). The other methods train in this function's own loop, their
    dropout from torch's generator seeded by ``cfg.seed``.
    """
    PLM_TRAINER.check(method)
    if batched.batchable(method) is None and not cfg.accelerate:
        return batched.train_seeds(data, method, cfg, seeds=[cfg.seed], progress=progress,
                                   keep_model=keep_model)[0]
    if method.dual and not unlabeled:
        raise InvalidArgument(f"method {method.name!r} runs in dual mode and needs unlabeled texts "
                              "(finetune(..., unlabeled=[...]))")
    acc = _accelerator(cfg, method) if cfg.accelerate else None
    device = _accelerated_device(cfg, acc) if acc is not None else pick_device(cfg.device)
    torch.manual_seed(cfg.seed)
    texts, labels = data.part("train")
    # SURT: continued pre-training, on the run's device
    start = method.start_model(cfg.model, texts, seed=cfg.seed, device=device)
    model, tok = load_classifier(start, num_labels=len(data.label_names), heads=method.heads,
                                 pooling=cfg.pooling, eager=method.double_backward, seed=cfg.seed)
    model.to(device)
    start_state = {k: v.detach().clone() for k, v in model.encoder.state_dict().items()}
    with method.applied(model):
        losses, pens, secs, report = _train(model, tok, method, cfg, device=device, acc=acc,
                                            texts=texts, labels=labels, progress=progress,
                                            unlabeled=unlabeled)
    dist = parameter_distance(model.encoder.state_dict(), start_state)
    total = len(losses)
    metrics = {"train_steps": total, "encoder_distance_from_start": dist}
    test_pass = None
    for split in ("dev", "test"):
        tx, ty = data.part(split)
        if not len(tx):
            continue
        if split == "test" and keep_model:
            # the block outputs too: the same pass, bit for bit, as the logits' alone
            test_pass = forward_all(model, tok, tx, max_length=cfg.max_length, device=device,
                                    hidden=True)
            logits = test_pass["logits"]
        else:
            logits = forward_texts(model, tok, tx, max_length=cfg.max_length, device=device)
        metrics.update(split_metrics(logits, torch.as_tensor(ty), split))
    # where, in which precision and on how many CPU threads it ran: part of every result (a
    # float32 run and the GPU's bf16 runs before issue 66 are different measurements, and a CPU
    # run's last bits follow its thread count: the encoder's distance moved between 1 and 2)
    ran = {"device_used": str(device),
           "precision": "float32",
           "cpu_threads": torch.get_num_threads()}
    return FinetuneResult(metrics, losses, pens, secs, {**cfg.config(), **ran},
                          {**method.describe(), **report}, model if keep_model else None,
                          test_pass)


def finetune_seeds(data: TextData, method: Method, cfg: FinetuneConfig | None = None, *,
                   seeds: Sequence[int], progress: bool = False, keep_model: bool = False,
                   unlabeled: list[str] | None = None,
                   dtype: torch.dtype | None = None) -> list[FinetuneResult]:
    """Fine-tune at each of ``seeds`` (``cfg.seed`` replaced by each): one result per seed, in
    order, each equal to :func:`finetune`'s at that seed.

    The seeds of a method :func:`boundbench.plm.training.batched.batchable` accepts train at once, as one
    batched model (:func:`boundbench.plm.training.batched.train_seeds`, in chunks sized to the device's
    memory); the others one after another, each result's ``config["seeds_at_once"]`` saying
    why. ``dtype`` (seeds at once only): the model's floating type, float64 in the equality
    tests.

    Examples
    --------
    >>> runs = finetune_seeds(data, FineTune(), FinetuneConfig(max_steps=50),
    ...                       seeds=range(16))  # doctest: +SKIP
    """
    cfg = FinetuneConfig() if cfg is None else cfg
    if not isinstance(cfg, FinetuneConfig):
        raise InvalidArgument(f"cfg must be a FinetuneConfig (got {type(cfg).__name__})")
    seeds = apply(Seeds(), "seeds", seeds)  # distinct seeds in [0, MAX_SEED], at least one
    PLM_TRAINER.check(method)
    why = batched.batchable(method) or ("accelerate runs one seed per process"
                                        if cfg.accelerate else None)
    if why is None:
        return batched.train_seeds(data, method, cfg, seeds=seeds, progress=progress,
                                   keep_model=keep_model, dtype=dtype)
    if dtype is not None:
        raise InvalidArgument(f"dtype applies to seeds trained at once, and {method.name!r} trains "
                              f"one seed at a time ({why})")
    out = [finetune(data, method, replace(cfg, seed=s), progress=progress,
                    keep_model=keep_model, unlabeled=unlabeled) for s in seeds]
    for r in out:
        r.config["seeds_at_once"] = f"1 (one seed at a time: {why})"
    return out


def _train(model, tok, method: Method, cfg: FinetuneConfig, *, device, acc, texts, labels,
           progress: bool, unlabeled: list[str] | None):
    """The training loop of :func:`finetune`: ``(losses, penalties, seconds, report)``."""
    core = model
    model, trainable, opt = _optimizer(model, method, cfg, device, acc)
    n = len(texts)
    steps_per_epoch = max(1, (n + cfg.batch_size - 1) // cfg.batch_size)
    total = cfg.max_steps or int(np.ceil(cfg.epochs * steps_per_epoch))
    rng = np.random.default_rng(cfg.seed)
    ids = token_ids(tok, list(texts), max_length=cfg.max_length)  # once per task
    lengths = np.array([len(t) for t in ids])
    batches: list[np.ndarray] = []

    def tokenize(batch: list[str]):
        return tok(batch, padding=True, truncation=True, max_length=cfg.max_length,
                   return_tensors="pt").to(device)

    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0

    def backward(loss: torch.Tensor) -> None:
        if acc is not None:
            acc.backward(loss)
        else:
            loss.backward()

    state: dict = {}

    def run(b, y, *, with_task: bool, with_penalty: bool):
        with steps.precision(device, acc):  # a fresh context per pass (accelerate's is single-use)
            fwd = _forward(model, core, b, y, method, trainable)
            task = method.task_loss(fwd, y) if with_task else torch.zeros((), device=device)
            if with_penalty and not state:  # the method's state, before any update
                state.update(method.init_state(fwd, seed=cfg.seed), ready=True)
            pen = method.penalty(fwd, state) if with_penalty else 0.0
            return task, pen, task + pen

    def step(b, y, *, with_task: bool, with_penalty: bool):
        """One optimizer step on batch ``b``; a closure re-runs it when the method's optimizer
        needs one (SAM), with the RNG state of the first pass: the same dropout masks."""
        rng_state = _rng_state(device)
        task, pen, loss = run(b, y, with_task=with_task, with_penalty=with_penalty)
        opt.zero_grad()
        backward(loss)
        if method.needs_closure:
            def closure():
                _set_rng_state(device, rng_state)
                loss2 = run(b, y, with_task=with_task, with_penalty=with_penalty)[2]
                backward(loss2)
                return loss2
            opt.step(closure)
        else:
            opt.step()
        return task, pen

    loss_t: list[torch.Tensor] = []
    pen_t: list[torch.Tensor] = []
    t0 = time.perf_counter()
    model.train()
    world = acc.num_processes if acc is not None else 1
    for _ in tqdm(range(total), desc=f"{method.name}: seed {cfg.seed}", disable=not progress,
                  leave=False):
        idx = next_batch(batches, lengths, cfg=cfg, rng=rng, world=world, acc=acc)
        b = pad_batch([ids[i] for i in idx], pad_id=pad_id, device=device)
        y = torch.as_tensor(labels[idx], device=device)
        task, pen = step(b, y, with_task=True, with_penalty=not method.dual)
        if unlabeled is not None and method.dual:  # a pure-regularizer step on unlabeled texts
            u = rng.choice(len(unlabeled), size=min(cfg.batch_size, len(unlabeled)),
                           replace=False)
            _, pen = step(tokenize([unlabeled[i] for i in u]), None, with_task=False,
                          with_penalty=True)
        # kept on the device: a float() here would wait for the accelerator every step
        loss_t.append(task.detach())
        pen_t.append(pen.detach() if torch.is_tensor(pen)
                     else torch.tensor(float(pen), device=task.device))
    # one transfer, at the end
    losses = torch.stack(loss_t).float().cpu().tolist() if loss_t else []
    pens = torch.stack([p.to(task.device) for p in pen_t]).float().cpu().tolist() if pen_t else []
    secs = time.perf_counter() - t0
    report = {**method.report(state), **optimizer_report(opt)}
    return losses, pens, secs, report


def _optimizer(model, method: Method, cfg: FinetuneConfig, device, acc):
    """The trainable parameters (the head's at ``head_lr``, the encoder's at ``lr`` unless
    ``head_only``) and the method's optimizer around a fused AdamW; under ``accelerate`` the
    prepared model. Returns ``(model, trainable, optimizer)``."""
    if cfg.head_only:
        model.encoder.requires_grad_(False)
    trainable = {k: p for k, p in model.named_parameters() if p.requires_grad}
    head = [p for k, p in trainable.items() if k.startswith("head_")]
    body = [p for k, p in trainable.items() if not k.startswith("head_")]
    groups = [{"params": head, "lr": cfg.head_lr}] + ([{"params": body, "lr": cfg.lr}]
                                                      if body else [])
    base = _adamw(groups, device)
    if acc is not None:
        model, base = acc.prepare(model, base)
    return model, trainable, make_optimizer(method, base, seed=cfg.seed)


def _adamw(groups: list[dict], device: torch.device) -> torch.optim.Optimizer:
    """AdamW without weight decay (a method adds it), fused where torch has the kernel (CPU and
    CUDA, as ``transformers.Trainer`` uses it)."""
    try:
        return torch.optim.AdamW(groups, weight_decay=0.0, fused=device.type in ("cpu", "cuda"))
    except (RuntimeError, ValueError):
        return torch.optim.AdamW(groups, weight_decay=0.0)


def _rng_state(device: torch.device):
    return (torch.get_rng_state(),
            torch.cuda.get_rng_state(device) if device.type == "cuda" else None)


def _set_rng_state(device: torch.device, state) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)
