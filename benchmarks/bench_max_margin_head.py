"""The squared-hinge head of :func:`boundbench.synthetic.pool_heads.max_margin_loo` (lam = 1e-6): Newton
from zero, as it was, vs Newton from the dual active-set solution, as it is now, on ``k``
training sets of each size in ``--n`` drawn from a separable pool of dimension ``--d`` (384,
MiniLM's). Prints each side's seconds, the ratio, and the largest relative difference of the
heads (both end below the same gradient tolerance).

    python benchmarks/bench_max_margin_head.py [--n 50 100 200] [--k 50] [--d 384]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.pool_heads import (
    MAX_MARGIN_LAM,
    _sq_hinge_active_set,
    _sq_hinge_newton,
    draw_sets,
)
from boundbench.synthetic.train import augment


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--d", type=int, default=384)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    pool = make_separable(n_datasets=1, n=1000, d=args.d, margin=0.05, bound=1.0, seed=0,
                          exact_margin=False)
    X, y = pool.X[0], pool.y[0]
    rng = np.random.default_rng(0)
    lam = MAX_MARGIN_LAM
    for n in args.n:
        idx = draw_sets(y, n=n, k=args.k, rng=rng)
        Z = torch.as_tensor(y[idx], dtype=torch.float64)[..., None] * augment(
            torch.as_tensor(X[idx], dtype=torch.float64))
        t = time.perf_counter()
        old = _sq_hinge_newton(Z, torch.zeros(args.k, Z.shape[-1], dtype=Z.dtype), lam,
                               tol=1e-9, max_iter=200)
        t_old = time.perf_counter() - t
        t = time.perf_counter()
        start = torch.stack([_sq_hinge_active_set(Z[j], lam)[0] for j in range(args.k)])
        new = _sq_hinge_newton(Z, start, lam, tol=1e-9, max_iter=200)
        t_new = time.perf_counter() - t
        diff = float((old - new).abs().max() / old.abs().max())
        print(f"n = {n:4d}, k = {args.k}: Newton from zero {t_old:6.2f} s, from the active set "
              f"{t_new:6.2f} s, ratio {t_old / t_new:5.1f}x; max relative head difference "
              f"{diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
