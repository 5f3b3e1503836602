"""Activation Decay's Appendix B: the exact Hessian of the last layer's cross-entropy and the top
eigenvalue of its Gaussian-smoothed mean (the facade :mod:`boundbench.theory.activation_decay`
re-exports them)."""

from __future__ import annotations

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Float, Seed, Tensor, checked, draws, iterations


@checked(h=Tensor(ndim=(2, 3)), W=Tensor(ndim=(2, 3)))
def last_layer_hessian(h: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Exact Hessian of the mean cross-entropy of ``logits = W h`` w.r.t. ``W`` (row-major
    ``(c, k)`` flattening): ``mean_n (diag p_n - p_n p_n^T) kron h_n h_n^T``, independent of the
    labels. ``h (..., n, k)``, ``W (..., c, k)`` with matching leading (model) axes.

    Its spectral norm is at most ``1/2 lambda_max(mean_n h_n h_n^T)`` (``diag p - p p^T <= I/2``):
    why shrinking the penultimate activations flattens the last layer (activation decay).

    Parameters
    ----------
    h : torch.Tensor
        Features ``(..., n, k)``.
    W : torch.Tensor
        The last layer ``(..., c, k)``.

    Returns
    -------
    torch.Tensor
        ``(..., c k, c k)``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Appendix B (the Hessian of the last layer).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.activation_decay import last_layer_hessian
    >>> h = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    >>> H = last_layer_hessian(h, torch.zeros(2, 2, dtype=torch.float64))
    >>> top = torch.linalg.eigvalsh(H)[-1].item()
    >>> half = 0.5 * torch.linalg.eigvalsh(h.T @ h / 3)[-1].item()
    >>> round(top, 4), round(half, 4)  # two classes, uniform p: the bound is attained
    (0.5, 0.5)
    """
    if h.shape[-1] != W.shape[-1] or h.shape[:-2] != W.shape[:-2]:
        raise InvalidArgument(f"h (..., n, k) and W (..., c, k) must share k and their leading axes "
                              f"(got {tuple(h.shape)} and {tuple(W.shape)})")
    p = torch.softmax(h @ W.transpose(-1, -2), -1)
    A = torch.diag_embed(p) - p[..., :, None] * p[..., None, :]
    n, c, k = h.shape[-2], W.shape[-2], h.shape[-1]
    H = torch.einsum("...nab,...ni,...nj->...aibj", A, h, h) / n
    return H.reshape(*H.shape[:-4], c * k, c * k)


@checked(
    h=Tensor(ndim=(2, 3)), W=Tensor(ndim=(2, 3)), sigma=Float(0, lo_open=True), n_mc=draws(1),
    n_batches=iterations(2), z=Float(0, lo_open=True), seed=Seed())
def smoothed_last_layer_top_eig(
    h: torch.Tensor, W: torch.Tensor, *, sigma: float, n_mc: int, n_batches: int = 10,
    z: float = 3.0, seed: int = 0,
) -> tuple[float, float, float]:
    """Top eigenvalue of ``E_Delta Hess_W CE((W + Delta) h)``, ``Delta ~ N(0, sigma^2 I)``, by
    Monte Carlo: ``(estimate, lower, upper)`` confidence limits at ``z`` standard errors.

    The Hessian is linear in ``A_n = diag p_n - p_n p_n^T``, so the MC average is taken over
    ``A_n`` and the Kronecker mean formed once per batch. ``upper`` adds ``z`` standard errors
    of the batch eigenvalues; ``lower`` is the Rayleigh quotient of the batches along the
    estimate's top eigenvector minus ``z`` s.e. (a lower bound on the top eigenvalue up to the
    mild optimism of reusing that eigenvector).

    Parameters
    ----------
    h : torch.Tensor
        Features ``(n, k)``.
    W : torch.Tensor
        The last layer ``(c, k)``.
    sigma : float
        ``sigma > 0``, the smoothing of ``W``.
    n_mc : int
        Draws of ``Delta`` in all.
    n_batches : int, default 10
        Batches the standard errors are taken over, at least 2.
    z : float, default 3.0
        Standard errors on each side.
    seed : int, default 0
        The seed of the draws (on the CPU, whatever the device).

    Returns
    -------
    estimate, lower, upper : float

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Appendix B (activation decay flattens the last layer).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.activation_decay import smoothed_last_layer_top_eig
    >>> h = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    >>> lam, lo, hi = smoothed_last_layer_top_eig(h, torch.zeros(2, 2, dtype=torch.float64),
    ...                                           sigma=0.1, n_mc=200)
    >>> lo <= lam <= hi, round(lam, 2)
    (True, 0.5)
    """
    if h.ndim != 2 or W.ndim != 2 or W.shape[1] != h.shape[1]:
        raise InvalidArgument(f"h must be (n, k) features and W (c, k) weights over the same k (got h "
                              f"{tuple(h.shape)}, W {tuple(W.shape)})")
    gen = torch.Generator().manual_seed(seed)
    n, k = h.shape
    c = W.shape[0]
    per = max(1, n_mc // n_batches)
    Ms = []
    # sum_n A_n (x) h_n h_n^T as one (c^2, n) x (n, k^2) product: einsum's three-operand
    # contraction would materialize an (n, c, c, k, k) tensor
    hh = (h[:, :, None] * h[:, None, :]).reshape(n, k * k)
    for _ in range(n_batches):
        # drawn on the CPU's seeded stream (the same draws on every device), then moved
        delta = torch.randn(per, c, k, generator=gen, dtype=h.dtype).to(h.device) * sigma
        p = torch.softmax(torch.einsum("mck,nk->mnc", W + delta, h), -1)
        # mean_m (diag p_m - p_m p_m^T) = diag(mean_m p_m) - (1/per) sum_m p_m p_m^T: one
        # batched product over the draws, not a (per, n, c, c) tensor (3x faster at paper size)
        A = torch.diag_embed(p.mean(0)) - torch.einsum("mnc,mnd->ncd", p, p) / per
        M = (A.reshape(n, c * c).T @ hh).reshape(c, c, k, k).permute(0, 2, 1, 3)
        Ms.append(M.reshape(c * k, c * k) / n)
    Ms = torch.stack(Ms)
    M = Ms.mean(0)
    evals, evecs = torch.linalg.eigh(M)
    lam, v = evals[-1].item(), evecs[:, -1]
    lam_b = torch.linalg.eigvalsh(Ms)[:, -1]
    q_b = torch.einsum("i,bij,j->b", v, Ms, v)
    se_l, se_q = lam_b.std().item() / n_batches**0.5, q_b.std().item() / n_batches**0.5
    return lam, q_b.mean().item() - z * se_q, lam + z * se_l
