"""The Hessian trace from Hessian-vector products:

- :func:`trace_hutchinson` (Hutchinson 1989): unbiased, variance ``2 ||A||_F^2 / m`` with
  Rademacher probes (``- 2 sum_i A_ii^2 / m``); returns the standard error.
- :func:`trace_hutchpp`: Hutch++ (Meyer et al. 2021), relative error ``O(1/m)`` instead of
  ``O(1/sqrt m)`` for matrices with decaying spectra, at ``m`` matvecs.
"""

from __future__ import annotations

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Choice, Seed, checked, draws
from boundbench.theory.operators import HessianOperator


def _probes(n: int, dim: int, *, seed: int, dist: str, dtype, device) -> torch.Tensor:
    gen = torch.Generator(device="cpu").manual_seed(seed)
    if dist == "rademacher":
        z = torch.randint(0, 2, (n, dim), generator=gen).to(dtype) * 2 - 1
    elif dist == "gaussian":
        z = torch.randn(n, dim, generator=gen, dtype=dtype)
    else:
        raise InvalidArgument(f"dist must be 'rademacher' or 'gaussian' (got {dist!r})")
    return z.to(device)


@checked(n_probes=draws(2), seed=Seed(), dist=Choice("rademacher", "gaussian"))
def trace_hutchinson(
    op: HessianOperator, *, n_probes: int = 100, seed: int = 0, dist: str = "rademacher"
) -> tuple[float, float]:
    """Hutchinson's ``tr(H) = E[z^T H z]``: ``(estimate, standard error)`` over ``n_probes``.

    Parameters
    ----------
    op : HessianOperator
        The Hessian-vector product.
    n_probes : int, default 100
        Random probes (one HVP each).
    seed : int, default 0
        The probes' seed.
    dist : {"rademacher", "gaussian"}, default "rademacher"
        The probes' distribution.

    Returns
    -------
    tuple of float
        The estimate and its standard error.

    References
    ----------
    M. F. Hutchinson, A stochastic estimator of the trace of the influence matrix for Laplacian
    smoothing splines, Comm. Statist. Simulation Comput. 18 (1989).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.operators import HessianOperator
    >>> d = torch.arange(1.0, 31.0, dtype=torch.float64)  # H = diag(1, ..., 30), trace 465
    >>> op = HessianOperator(lambda p: 0.5 * (d * p["w"] ** 2).sum(),
    ...                      {"w": torch.zeros(30, dtype=torch.float64)})
    >>> trace_hutchinson(op, n_probes=10)  # Rademacher probes are exact on a diagonal
    (465.0, 0.0)
    """
    if n_probes < 2:
        raise InvalidArgument(f"n_probes must be >= 2 (got {n_probes})")
    Z = _probes(n_probes, op.dim, seed=seed, dist=dist, dtype=op.dtype, device=op.device)
    q = (Z * op.matmat(Z)).sum(1)
    return float(q.mean()), float(q.std() / n_probes**0.5)


@checked(n_matvecs=draws(3), seed=Seed())
def trace_hutchpp(op: HessianOperator, *, n_matvecs: int = 99, seed: int = 0) -> float:
    """Hutch++: exact trace on a sketched top subspace plus Hutchinson on the rest.

    Uses ``n_matvecs`` HVPs in three equal parts: sketch ``H S``, its projection ``Q^T H Q``, and
    Hutchinson on ``(I - QQ^T) H (I - QQ^T)``.

    Parameters
    ----------
    op : HessianOperator
        The Hessian-vector product.
    n_matvecs : int, default 99
        HVPs in all (a multiple of 3).
    seed : int, default 0
        The sketch's and probes' seed.

    Returns
    -------
    float
        The trace estimate.

    References
    ----------
    R. A. Meyer, C. Musco, C. Musco and D. P. Woodruff, Hutch++: Optimal stochastic trace
    estimation, SOSA 2021.

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.operators import HessianOperator
    >>> d = torch.arange(1.0, 31.0, dtype=torch.float64)  # H = diag(1, ..., 30), trace 465
    >>> op = HessianOperator(lambda p: 0.5 * (d * p["w"] ** 2).sum(),
    ...                      {"w": torch.zeros(30, dtype=torch.float64)})
    >>> abs(trace_hutchpp(op, n_matvecs=30) - 465) < 0.1 * 465
    True
    """
    m = n_matvecs // 3
    if m < 1:
        raise InvalidArgument(f"n_matvecs must be >= 3 (got {n_matvecs})")
    S = _probes(m, op.dim, seed=seed, dist="rademacher", dtype=op.dtype, device=op.device)
    G = _probes(m, op.dim, seed=seed + 1, dist="rademacher", dtype=op.dtype, device=op.device)
    Q, _ = torch.linalg.qr(op.matmat(S).T)
    top = float((Q.T * op.matmat(Q.T)).sum())
    G = G - (G @ Q) @ Q.T
    rest = float((G * op.matmat(G)).sum()) / m
    return top + rest
