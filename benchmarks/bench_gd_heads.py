"""Batched GD heads (datasets x LOO replicas x heads in one tensor program) vs a Python loop.

The loop trains each (dataset, replica) separately with the same torch operations; both run
side by side here and the ratio is printed, with the max difference of the final heads.

    python benchmarks/bench_gd_heads.py [--datasets 20] [--replicas 5] [--n 2000] [--steps 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.train import augment, train_heads


def loop_version(X, y, loo, *, steps: int, lr: float, seed: int) -> np.ndarray:
    k, n, d = X.shape
    gen = torch.Generator().manual_seed(seed)
    W0 = torch.randn(k, 1, d + 1, generator=gen, dtype=torch.float64) / (d + 1) ** 0.5
    out = np.empty((k, loo.shape[1] + 1, d + 1))
    for j in range(k):
        Z = torch.as_tensor(y[j])[:, None] * augment(torch.as_tensor(X[j]))
        for r in range(loo.shape[1] + 1):
            keep = torch.ones(n, dtype=torch.bool)
            if r > 0:
                keep[loo[j, r - 1]] = False
            Zr = Z[keep]
            w = W0[j, 0].clone()
            for _ in range(steps):
                m = Zr @ w
                w -= lr * (-torch.sigmoid(-m)) @ Zr / Zr.shape[0]
            out[j, r] = w.numpy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--replicas", type=int, default=5)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    data = make_separable(n_datasets=args.datasets, n=args.n, d=5, margin=0.1, bound=1.0, seed=0)
    loo = np.random.default_rng(0).integers(0, args.n, (args.datasets, args.replicas))
    lr = 1.0

    t0 = time.perf_counter()
    res = train_heads(data.X, data.y, steps=args.steps, loo=loo, lr=lr, seed=0, record=2)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = loop_version(data.X, data.y, loo, steps=args.steps, lr=lr, seed=0)
    t_loop = time.perf_counter() - t0
    diff = np.abs(res.weights[:, :, 0] - ref).max()
    runs = args.datasets * (args.replicas + 1)
    print(f"{runs} GD runs (datasets x replicas), n = {args.n}, {args.steps} steps, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads")
    print(f"batched: {t_batched:7.2f} s   loop: {t_loop:7.2f} s   speed-up: {t_loop / t_batched:.1f}x")
    print(f"max |W_batched - W_loop| = {diff:.2e}")


if __name__ == "__main__":
    main()
