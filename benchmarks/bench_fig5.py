"""Fig. 5's workload (Fu et al. §4.3.1: MHLoss heads H in {1, 5, 10, 20, 50, 100}, n = 2,000,
LOO on sampled i) trained as one run of 100 heads (``HeadsRun(nested=True)``, the default) vs
one run per H (``nested=False``, 186 heads), side by side in one process on the same datasets.

It prints both times, their ratio, the largest difference of the 100-head model between the two
(the same run either way), and the time of the paper's size (500 datasets x 3,000 steps) on this
machine extrapolated linearly from the measured rate (GD's cost is linear in datasets x steps),
next to a floor: the time the logistic slopes alone (one sigmoid each, no matmul) take here.

Then precision, side by side in the same process on the same datasets: float64 throughout
against float32 slopes with float64 heads
(``train_heads(numerics=Numerics(slope_dtype=torch.float32))``), the time of each with its
paper-size extrapolation, and the largest difference in normalized stability (absolute and
relative to the float64 value) over every H, dataset and recorded step.

    python benchmarks/bench_fig5.py [--datasets 4] [--steps 300] [--n 2000] [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import numpy as np
import torch

from boundbench.synthetic.fig5 import HeadsRun


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=4)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="where GD runs (default: CUDA when present, else the CPU)")
    args = ap.parse_args()
    cfg = HeadsRun(n_datasets=args.datasets, n=args.n, steps=args.steps, seed=0)
    t0 = time.perf_counter()
    nested = cfg.run(device=args.device)
    t_nested = time.perf_counter() - t0
    t0 = time.perf_counter()
    apart = HeadsRun(**{**cfg.config(), "nested": False}).run(device=args.device)
    t_apart = time.perf_counter() - t0
    top = max(cfg.heads)
    diff = np.abs(nested[nested.heads == top].loo_stability.to_numpy()
                  - apart[apart.heads == top].loo_stability.to_numpy()).max()
    rows = (cfg.k_loo + 1) * top
    per = args.n * rows * args.datasets * args.steps  # (sample, column) slopes computed
    paper = 500 * 3000 / (args.datasets * args.steps)
    print(f"Fig. 5 grid H = {cfg.heads}: {args.datasets} datasets x (1 + {cfg.k_loo} LOO) "
          f"replicas, n = {args.n}, {args.steps} steps, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, {os.cpu_count()} CPUs")
    print(f"nested (100 heads): {t_nested:7.2f} s   per H (186 heads): {t_apart:7.2f} s   "
          f"speed-up: {t_apart / t_nested:.2f}x")
    print(f"max |stability(H = {top}) nested - per H| = {diff:.2e} (the same run)")
    print(f"{per / t_nested / 1e9:.2f} G slopes/s (sample x column x step)")
    print(f"paper size (500 datasets x 3,000 steps), extrapolated: nested "
          f"{t_nested * paper / 60:.0f} min, per H {t_apart * paper / 60:.0f} min")
    # a floor: the logistic slopes alone (one sigmoid per sample x column x step, float64, as
    # GD computes them), timed here at the same shapes, with no matmul
    S = torch.randn(1, rows, args.n, dtype=torch.float64)
    S.sigmoid_()
    t0 = time.perf_counter()
    for _ in range(20):
        S.neg_().sigmoid_()
    t_slope = (time.perf_counter() - t0) / (20 * S.numel())
    paper_slopes = 500 * 3000 * args.n * rows
    print(f"paper size: {paper_slopes:.2e} slopes; the sigmoids alone at {t_slope * 1e9:.2f} "
          f"ns each take {paper_slopes * t_slope / 60:.0f} min here (5 min needs "
          f"{300 / paper_slopes * 1e9:.2f} ns per slope, matmuls included)")
    # precision: float32 slopes with float64 heads against float64 throughout (nested both)
    t0 = time.perf_counter()
    mixed = replace(cfg, slope="float32").run(device=args.device)
    t_mixed = time.perf_counter() - t0
    ref = nested.loo_stability.to_numpy()
    err = np.abs(mixed.loo_stability.to_numpy() - ref)
    rel = err / np.abs(ref)
    print(f"precision on {args.device}: float64 {t_nested:7.2f} s ({t_nested * paper / 60:.0f} "
          f"min at paper size)   float32 slopes + float64 heads {t_mixed:7.2f} s "
          f"({t_mixed * paper / 60:.0f} min)   speed-up {t_nested / t_mixed:.2f}x")
    print(f"  stability, float32 slopes vs float64 over {len(ref)} (H, dataset, step) values: "
          f"max |diff| {err.max():.2e}, max relative {rel.max():.2e} (at step "
          f"{int(mixed.step.to_numpy()[rel.argmax()])}, H = "
          f"{int(mixed.heads.to_numpy()[rel.argmax()])})")

if __name__ == "__main__":
    main()
