"""The top Hessian eigenvalue from Hessian-vector products, as tested against closed forms
(``tests/test_curvature.py``):

- :func:`top_eigenvalue_power` (PyHessian's method, Yao et al. 2020): stops when the Rayleigh
  quotient changes by less than ``tol`` relative; converges at rate ``(lambda_2/lambda_1)^k``,
  so it can stop early on a slowly converging quotient: its error can exceed ``tol``.
- :func:`top_eigenvalue_lanczos`: scipy's ARPACK (implicitly restarted Lanczos); far fewer HVPs
  for the same accuracy (``benchmarks/bench_curvature.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Choice, Float, Int, Seed, checked, iterations
from boundbench.theory.operators import HessianOperator


@dataclass(frozen=True)
class EigResult:
    """An eigenvalue estimate and what it cost.

    Parameters
    ----------
    value : float
        The eigenvalue (signed).
    vector : torch.Tensor
        Its unit eigenvector, flat in the operator's parameter order.
    n_matvecs, n_iter : int
        Hessian-vector products and iterations spent.
    residual : float
        ``||H v - value v||``, the accuracy reached (NaN where not computed).

    Examples
    --------
    >>> import torch
    >>> EigResult(2.0, torch.ones(1), n_matvecs=3, n_iter=3).residual
    nan
    """

    value: float
    vector: torch.Tensor
    n_matvecs: int
    n_iter: int
    # ||H v - value v|| for the unit vector returned: the accuracy actually reached (an
    # eigenvalue is within it of `value`), whatever the stopping rule
    residual: float = float("nan")


@checked(tol=Float(0, 1, lo_open=True, hi_open=True), max_iter=iterations(1), seed=Seed())
def top_eigenvalue_power(
    op: HessianOperator, *, tol: float = 1e-3, max_iter: int = 100, seed: int = 0
) -> EigResult:
    """Power iteration as PyHessian runs it: stop when the Rayleigh quotient's relative change
    ``|l_k - l_{k-1}| / (|l_{k-1}| + 1e-6) < tol``. Returns the largest-magnitude eigenvalue.

    Parameters
    ----------
    op : HessianOperator
        The Hessian-vector product.
    tol : float, default 1e-3
        The stopping rule's relative change.
    max_iter : int, default 100
        Iterations at most.
    seed : int, default 0
        The start vector's seed.

    Returns
    -------
    EigResult
        The eigenvalue, its vector, the HVPs and iterations spent and the residual.

    References
    ----------
    Z. Yao et al., PyHessian: Neural networks through the lens of the Hessian, IEEE BigData 2020.

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.operators import HessianOperator
    >>> d = torch.arange(1.0, 31.0, dtype=torch.float64)  # H = diag(1, ..., 30)
    >>> op = HessianOperator(lambda p: 0.5 * (d * p["w"] ** 2).sum(),
    ...                      {"w": torch.zeros(30, dtype=torch.float64)})
    >>> round(top_eigenvalue_power(op, tol=1e-8, max_iter=500).value, 3)
    30.0
    """
    if not tol > 0:
        raise InvalidArgument(f"tol must be > 0 (got {tol})")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    v = torch.randn(op.dim, generator=gen, dtype=op.dtype).to(op.device)
    v /= v.norm()
    start = op.n_matvecs
    lam: float | None = None
    new = 0.0
    for k in range(1, max_iter + 1):  # noqa: B007 - k is the iteration count returned
        hv = op.matvec(v)
        new = float(v @ hv)
        # the residual of the Rayleigh pair (new, v): free, from this step's product
        res = float((hv - new * v).norm())
        u = v
        v = hv / hv.norm()
        if lam is not None and abs(new - lam) / (abs(lam) + 1e-6) < tol:
            lam = new
            break
        lam = new
    # the pair whose residual was measured: the quotient's vector, not the next iterate
    return EigResult(new, u, op.n_matvecs - start, k, res)


@checked(
    tol=Float(0, 1, lo_open=True, hi_open=True), seed=Seed(), which=Choice("LM", "LA"),
    ncv=Int(3, optional=True))
def top_eigenvalue_lanczos(
    op: HessianOperator, *, tol: float = 1e-3, seed: int = 0, which: str = "LM",
    ncv: int | None = None
) -> EigResult:
    """Largest-magnitude (``which="LM"``, the spectral norm ``||H||_2`` that Cor. 1 and Fig. 1a
    bound, as a signed eigenvalue) or largest algebraic (``"LA"``) eigenvalue by scipy's ARPACK
    (implicitly restarted Lanczos, Krylov basis of ``ncv`` vectors) on the HVP operator, to
    relative accuracy ``tol``; ``residual`` is ``||H v - lambda v||`` (one more HVP). ARPACK
    builds the whole basis before its first convergence test, so it spends at least ``ncv`` HVPs
    even when power iteration would stop sooner.

    Parameters
    ----------
    op : HessianOperator
        The Hessian-vector product.
    tol : float, default 1e-3
        ARPACK's relative accuracy.
    seed : int, default 0
        The start vector's seed.
    which : {"LM", "LA"}, default "LM"
        Largest magnitude or largest algebraic.
    ncv : int, optional
        The Krylov basis's size, 3 to the operator's dimension (ARPACK's range; one outside it
        is refused, never clipped); default ``min(20, dim - 1)``.

    Returns
    -------
    EigResult
        The eigenvalue, its vector, the HVPs spent and the residual.

    References
    ----------
    R. B. Lehoucq, D. C. Sorensen and C. Yang, ARPACK Users' Guide, SIAM 1998.

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.operators import HessianOperator
    >>> d = torch.arange(1.0, 31.0, dtype=torch.float64)  # H = diag(1, ..., 30)
    >>> op = HessianOperator(lambda p: 0.5 * (d * p["w"] ** 2).sum(),
    ...                      {"w": torch.zeros(30, dtype=torch.float64)})
    >>> round(top_eigenvalue_lanczos(op).value, 2)
    30.0
    """
    from scipy.sparse.linalg import LinearOperator, eigsh

    if which not in ("LM", "LA"):
        raise InvalidArgument(f"which must be 'LM' (largest magnitude) or 'LA' (largest algebraic) "
                              f"(got {which!r})")
    start = op.n_matvecs

    def mv(x: np.ndarray) -> np.ndarray:
        t = torch.as_tensor(np.ravel(x), dtype=op.dtype, device=op.device)
        return op.matvec(t).detach().cpu().numpy()

    v0 = np.random.default_rng(seed).standard_normal(op.dim)
    A = LinearOperator((op.dim, op.dim), matvec=mv, dtype=np.float64)
    if op.dim <= 2:  # ARPACK needs dim > k + 1; fall back to the dense matrix
        w, V = np.linalg.eigh(op.dense().detach().cpu().numpy())
        i = int(np.argmax(w if which == "LA" else np.abs(w)))
        return EigResult(float(w[i]), torch.as_tensor(V[:, i]), op.n_matvecs - start, 1, 0.0)
    if ncv is None:
        ncv = min(20, op.dim - 1)
    elif ncv > op.dim:
        raise InvalidArgument(f"ncv must be at most the operator's dimension, {op.dim} (got "
                              f"{ncv}): ARPACK's Krylov basis cannot be larger")
    w, V = eigsh(A, k=1, which=which, tol=tol, v0=v0, ncv=ncv)
    n = op.n_matvecs - start
    vec = torch.as_tensor(V[:, 0], dtype=op.dtype, device=op.device)
    res = float((op.matvec(vec) - float(w[0]) * vec).norm())
    return EigResult(float(w[0]), vec.cpu(), n, 1, res)
