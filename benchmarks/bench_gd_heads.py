"""Batched GD heads (datasets x LOO replicas x heads in one tensor program) vs a Python loop.

The loop trains each (dataset, replica, head) separately with the same torch operations; both
run side by side here and the ratio is printed, with the max difference of the final heads.
A third timing is the bare pair of batched matmuls a GD step needs (same shapes and FLOPs, no
logistic slope, no step scaling), in the layout train_heads uses: its ratio says how far the
elementwise work is from the matmul floor. Every timing is the best of ``--repeats``, after a
warm-up run. ``--device`` (default CUDA when present) runs all three on that device; on a GPU
each timing waits for the device to finish (``torch.cuda.synchronize``). A last part times
the GD in the span of the samples that ``train_heads`` runs where the samples are fewer than
the dimensions (the features claims) against the coordinate form.

    python benchmarks/bench_gd_heads.py [--datasets 20] [--replicas 5] [--heads 1] [--n 2000]
                                        [--steps 200] [--repeats 3] [--device cpu]
                                        [--skip-features]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.train import Numerics, augment, train_heads


def loop_version(X, y, loo, *, steps: int, lr: float, seed: int, heads: int = 1,
                 device: str = "cpu") -> np.ndarray:
    k, n, d = X.shape
    gen = torch.Generator().manual_seed(seed)  # drawn on the CPU, as train_heads draws W0
    W0 = (torch.randn(k, heads, d + 1, generator=gen, dtype=torch.float64)
          / (d + 1) ** 0.5).to(device)
    out = np.empty((k, loo.shape[1] + 1, heads, d + 1))
    for j in range(k):
        Z = (torch.as_tensor(y[j])[:, None] * augment(torch.as_tensor(X[j]))).to(device)
        for r in range(loo.shape[1] + 1):
            keep = torch.ones(n, dtype=torch.bool, device=device)
            if r > 0:
                keep[loo[j, r - 1]] = False
            Zr = Z[keep]
            for h in range(heads):
                w = W0[j, h].clone()
                for _ in range(steps):
                    m = Zr @ w
                    w -= lr * (-torch.sigmoid(-m)) @ Zr / Zr.shape[0]
                out[j, r, h] = w.cpu().numpy()
    return out


def bare_matmuls(k: int, rows: int, n: int, D: int, steps: int, *, layout: str,
                 device: str = "cpu") -> float:
    """Seconds for ``steps`` pairs of the batched matmuls one GD step makes, nothing else:
    ``layout="train_heads"``: its layout (``S = W Z^T``, ``G^T = Z^T S^T``, ``D`` padded to a
    multiple of 4); ``"plain"``: ``S = W Z^T``, ``G = S Z`` unpadded."""
    Dp = -(-D // 4) * 4 if layout == "train_heads" else D
    f64 = {"dtype": torch.float64, "device": device}
    Z = torch.randn(k, n, Dp, **f64)
    Zt = Z.transpose(1, 2).contiguous()
    Wt = torch.randn(k, Dp, rows, **f64)
    W = Wt.transpose(1, 2).contiguous()
    S = torch.empty(k, rows, n, **f64)
    Gt = torch.empty(k, Dp, rows, **f64)
    G = torch.empty(k, rows, Dp, **f64)
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        if layout == "train_heads":
            torch.bmm(Wt.transpose(1, 2), Zt, out=S)
            torch.bmm(Zt, S.transpose(1, 2), out=Gt)
        else:
            torch.bmm(W, Zt, out=S)
            torch.bmm(S, Z, out=G)
    _sync(device)
    return time.perf_counter() - t0


def _sync(device: str) -> None:
    """Wait for queued GPU work, so that a timing covers it (a no-op on the CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def best(f, repeats: int, device: str = "cpu") -> float:
    """The fastest of ``repeats`` timings of ``f()`` (seconds)."""
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        f()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=20)
    ap.add_argument("--replicas", type=int, default=5)
    ap.add_argument("--heads", type=int, default=1, help="MHLoss heads (Fig. 5 uses 1-100)")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3, help="timings are the best of these")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="where all three versions run (default: CUDA when present)")
    ap.add_argument("--skip-features", action="store_true",
                    help="leave out the features claims' shape (fewer samples than dimensions)")
    args = ap.parse_args()
    dev = args.device
    data = make_separable(n_datasets=args.datasets, n=args.n, d=5, margin=0.1, bound=1.0, seed=0)
    loo = np.random.default_rng(0).integers(0, args.n, (args.datasets, args.replicas))
    lr = 1.0

    def batched():
        return train_heads(data.X, data.y, steps=args.steps, loo=loo, lr=lr, seed=0, record=2,
                           heads=args.heads, numerics=Numerics(device=dev))

    res = batched()  # warm-up (thread pool, MKL); every timing below is the best of --repeats
    t_batched = best(batched, args.repeats, dev)
    t_loop = best(lambda: loop_version(data.X, data.y, loo, steps=args.steps, lr=lr, seed=0,
                                       heads=args.heads, device=dev), args.repeats, dev)
    ref = loop_version(data.X, data.y, loo, steps=args.steps, lr=lr, seed=0, heads=args.heads,
                       device=dev)
    rows = (args.replicas + 1) * args.heads
    D = data.X.shape[-1] + 1
    t_bare = {layout: best(lambda layout=layout: bare_matmuls(
        args.datasets, rows, args.n, D, args.steps, layout=layout, device=dev), args.repeats, dev)
        for layout in ("train_heads", "plain")}
    diff = np.abs(res.weights - ref).max()
    runs = args.datasets * rows
    print(f"{runs} GD runs (datasets x replicas x heads), n = {args.n}, {args.steps} steps, "
          f"torch {torch.__version__}, on {dev}"
          + (f" ({torch.get_num_threads()} threads)" if dev == "cpu" else ""))
    print(f"batched: {t_batched:7.2f} s   loop: {t_loop:7.2f} s   speed-up: {t_loop / t_batched:.1f}x")
    floor = min(t_bare.values())
    print(f"bare matmuls of the same FLOPs: {t_bare['train_heads']:7.3f} s in train_heads' "
          f"layout, {t_bare['plain']:7.3f} s plain   batched / fastest bare: "
          f"{t_batched / floor:.1f}x")
    print(f"max |W_batched - W_loop| = {diff:.2e}")
    if not args.skip_features:
        features_shape(args.repeats, dev)


def features_shape(repeats: int, device: str) -> None:
    """Fewer samples than dimensions, as the features claims train (40 training sets of n = 100
    frozen-encoder features, D = 385, 16 heads, 3 LOO replicas, 300 steps): ``train_heads``'
    GD in the span of the samples against the coordinate form it replaces there."""
    import boundbench.synthetic.train as tr

    data = make_separable(n_datasets=40, n=100, d=384, margin=0.1, bound=1.0, seed=0,
                          exact_margin=False)
    loo = np.random.default_rng(0).integers(0, 100, (40, 3))

    def run(samples: bool):
        tr._sample_space = lambda *a: samples
        try:
            return train_heads(data.X, data.y, steps=300, heads=16, loo=loo, prefixes=(1, 4, 16),
                               seed=0, numerics=Numerics(device=device))
        finally:
            tr._sample_space = form

    form = tr._sample_space
    assert form(100, 385, torch.float64, torch.float64)  # what train_heads picks at this shape
    a, b = run(True), run(False)  # warm-ups, and the two results compared
    t_samples = best(lambda: run(True), repeats, device)
    t_coords = best(lambda: run(False), repeats, device)
    diff = np.abs(a.prefix_directions - b.prefix_directions).max()
    print(f"\nfeatures claims' shape (40 sets x 4 replicas x 16 heads, n = 100, D = 385, 300 "
          f"steps): span of the samples {t_samples:6.2f} s   coordinates {t_coords:6.2f} s   "
          f"speed-up: {t_coords / t_samples:.1f}x   max direction difference {diff:.1e}")


if __name__ == "__main__":
    main()
