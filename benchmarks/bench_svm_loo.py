"""Paper-scale exact normalized LOO stability of the hard-margin SVM (Figs. 6/7/9): ours vs naive.

Naive = what a researcher would write first: a fresh cvxpy problem on all n points for every
dataset and for every left-out i. Both run here, side by side, on a subsample; each is
extrapolated to the paper's 500 datasets x 2,000 points; the ratio is printed. The SVM solutions
of both are compared (max abs difference of w = [v, b]).

    python benchmarks/bench_svm_loo.py [--n 2000] [--datasets 500] [--sample-datasets 10]
                                       [--sample-loo 20]
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.stability import normalized_distance, paper_head, svm_loo_stability
from boundbench.synthetic.svm import hard_margin_loo


def naive_svm(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    v, c = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [cp.multiply(y, X @ v + c) >= 1])
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL, prob.status
    return paper_head(v.value, c.value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--datasets", type=int, default=500, help="paper-scale dataset count")
    ap.add_argument("--sample-datasets", type=int, default=10)
    ap.add_argument("--sample-loo", type=int, default=20, help="naive LOO solves timed")
    args = ap.parse_args()
    data = make_separable(n_datasets=args.sample_datasets, n=args.n, d=args.d, margin=0.1,
                          bound=1.0, seed=0)

    t0 = time.perf_counter()
    ours = svm_loo_stability(data.X, data.y)
    t_ours = (time.perf_counter() - t0) / args.sample_datasets

    X, y = data.X[0], data.y[0]
    t0 = time.perf_counter()
    w_full = naive_svm(X, y)
    idx = np.random.default_rng(0).choice(args.n, args.sample_loo, replace=False)
    w_loo = [naive_svm(np.delete(X, i, 0), np.delete(y, i)) for i in idx]
    t_solve = (time.perf_counter() - t0) / (1 + args.sample_loo)
    t_naive = t_solve * (1 + args.n)

    v_loo, c_loo, v, c = hard_margin_loo(X, y)
    err_full = np.abs(paper_head(v, c) - w_full).max()
    err_loo = max(np.abs(paper_head(v_loo[i], c_loo[i]) - w).max() for i, w in zip(idx, w_loo, strict=True))
    stab_naive_sample = np.mean([normalized_distance(w, w_full) for w in w_loo])

    print(f"n = {args.n}, d = {args.d}; timed on {args.sample_datasets} datasets (ours) and "
          f"{1 + args.sample_loo} fresh solves (naive)")
    print(f"ours : {t_ours:8.3f} s per dataset (all {args.n} i, exact) -> "
          f"{t_ours * args.datasets / 60:8.2f} min for {args.datasets} datasets")
    print(f"naive: {t_solve:8.4f} s per solve x {1 + args.n} solves = {t_naive:8.1f} s per dataset"
          f" -> {t_naive * args.datasets / 3600:8.2f} h for {args.datasets} datasets")
    print(f"speed-up (naive / ours): {t_naive / t_ours:,.0f}x")
    print(f"max |w_ours - w_fresh|: full {err_full:.2e}, LOO (sampled i) {err_loo:.2e}")
    print(f"stability, dataset 0: ours {ours['stability'][0]:.4e} over all i; naive on "
          f"{args.sample_loo} sampled i {stab_naive_sample:.4e}")


if __name__ == "__main__":
    main()
