"""The Hessian trace from Hessian-vector products:

- :func:`trace_hutchinson` (Hutchinson 1989): unbiased, variance ``2 ||A||_F^2 / m`` with
  Rademacher probes (``- 2 sum_i A_ii^2 / m``); returns the standard error.
- :func:`trace_hutchpp`: Hutch++ (Meyer et al. 2021), relative error ``O(1/m)`` instead of
  ``O(1/sqrt m)`` for matrices with decaying spectra, at ``m`` matvecs.
"""

from __future__ import annotations

import torch

from boundbench.framework.validate import Choice, Seed, checked, draws
from boundbench.theory.operators import HessianOperator


def _probes(n: int, dim: int, *, seed: int, dist: str, dtype, device) -> torch.Tensor:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if dist == "rademacher":
        z = torch.randint(0, 2, (n, dim), generator=gen).to(dtype) * 2 - 1
    elif dist == "gaussian":
        z = torch.randn(n, dim, generator=gen, dtype=dtype)
    else:
        raise ValueError(f"dist must be 'rademacher' or 'gaussian' (got {dist!r})")
    return z.to(device)


@checked(n_probes=draws(2), seed=Seed(), dist=Choice("rademacher", "gaussian"))
def trace_hutchinson(
    op: HessianOperator, *, n_probes: int = 100, seed: int = 0, dist: str = "rademacher"
) -> tuple[float, float]:
    """Hutchinson's ``tr(H) = E[z^T H z]``: ``(estimate, standard error)`` over ``n_probes``."""
    if n_probes < 2:
        raise ValueError(f"n_probes must be >= 2 (got {n_probes})")
    Z = _probes(n_probes, op.dim, seed=seed, dist=dist, dtype=op.dtype, device=op.device)
    q = (Z * op.matmat(Z)).sum(1)
    return float(q.mean()), float(q.std() / n_probes**0.5)


@checked(n_matvecs=draws(3), seed=Seed())
def trace_hutchpp(op: HessianOperator, *, n_matvecs: int = 99, seed: int = 0) -> float:
    """Hutch++: exact trace on a sketched top subspace plus Hutchinson on the rest.

    Uses ``n_matvecs`` HVPs in three equal parts: sketch ``H S``, its projection ``Q^T H Q``, and
    Hutchinson on ``(I - QQ^T) H (I - QQ^T)``."""
    m = n_matvecs // 3
    if m < 1:
        raise ValueError(f"n_matvecs must be >= 3 (got {n_matvecs})")
    S = _probes(m, op.dim, seed=seed, dist="rademacher", dtype=op.dtype, device=op.device)
    G = _probes(m, op.dim, seed=seed + 1, dist="rademacher", dtype=op.dtype, device=op.device)
    Q, _ = torch.linalg.qr(op.matmat(S).T)
    top = float((Q.T * op.matmat(Q.T)).sum())
    G = G - (G @ Q) @ Q.T
    rest = float((G * op.matmat(G)).sum()) / m
    return top + rest
