"""Top Hessian eigenvalue: Lanczos (scipy ARPACK) vs power iteration (PyHessian's method), side by
side on the same model; and the cost of one HVP relative to one gradient.

Model: a tanh MLP 20 -> 64 -> 5 on Gaussian clusters, cross-entropy on 2,000 points, Hessian
w.r.t. all 1,600 weights; the reference eigenvalue is the dense Hessian's.

    python benchmarks/bench_curvature.py
"""

from __future__ import annotations

import time

import torch
from torch.func import grad

from boundbench.synthetic.mlp import make_clusters
from boundbench.theory.eigenvalues import top_eigenvalue_lanczos, top_eigenvalue_power
from boundbench.theory.operators import HessianOperator


def case(train_steps: int) -> None:
    torch.manual_seed(0)
    X, y, _ = make_clusters(n=2000, d=20, classes=5, seed=0)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64, bias=False), torch.nn.Tanh(),
                                torch.nn.Linear(64, 5, bias=False)).double()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(train_steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(X), y).backward()
        opt.step()

    def ce(out):
        return torch.nn.functional.cross_entropy(out, y)

    op = HessianOperator.for_model(model, ce, X)
    ref = torch.linalg.eigvalsh(op.dense())[-1].item()
    tol = 1e-3

    # power iteration: PyHessian's stopping rule, and the HVPs it takes to be within tol
    pw = top_eigenvalue_power(op, tol=tol, max_iter=1000, seed=0)
    v = torch.randn(op.dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    v /= v.norm()
    needed = None
    for k in range(1, 5001):
        hv = op.matvec(v)
        if abs(float(v @ hv) - ref) / abs(ref) <= tol:
            needed = k
            break
        v = hv / hv.norm()
    lz = top_eigenvalue_lanczos(op, tol=tol, seed=0)
    lz8 = top_eigenvalue_lanczos(op, tol=tol, seed=0, ncv=8)

    print(f"--- {train_steps} training steps; dim = {op.dim}, reference top eigenvalue (dense) "
          f"= {ref:.6f}")
    print(f"power (PyHessian rule, tol {tol:g}): {pw.n_matvecs:4d} HVPs, relative error "
          f"{abs(pw.value - ref) / ref:.2e}")
    print(f"power, HVPs until relative error <= {tol:g}: {needed}")
    print(f"Lanczos (ARPACK, tol {tol:g}):        {lz.n_matvecs:4d} HVPs, relative error "
          f"{abs(lz.value - ref) / ref:.2e}")
    print(f"Lanczos (ARPACK, tol {tol:g}, ncv 8): {lz8.n_matvecs:4d} HVPs, relative error "
          f"{abs(lz8.value - ref) / ref:.2e}")
    if needed:
        print(f"HVPs to reach {tol:g}, power / Lanczos(ncv 8): {needed / lz8.n_matvecs:.2f}")

    g = grad(op.loss)
    vec = torch.randn(op.dim, dtype=torch.float64)
    for f in (lambda: g(op.params), lambda: op.matvec(vec)):
        f()
    reps = 30
    t0 = time.perf_counter()
    for _ in range(reps):
        g(op.params)
    t_grad = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        op.matvec(vec)
    t_hvp = (time.perf_counter() - t0) / reps
    print(f"one gradient {t_grad * 1e3:.2f} ms, one HVP {t_hvp * 1e3:.2f} ms: HVP/gradient = "
          f"{t_hvp / t_grad:.2f}")


def main() -> None:
    for steps in (0, 200):  # random init, and a partly trained model
        case(steps)


if __name__ == "__main__":
    main()
