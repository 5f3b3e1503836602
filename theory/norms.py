"""Frobenius norms of the input Jacobian and Hessian by random projections, as JACHESS
regularizes them (Jukic & Snajder, *From Robustness to Improved Generalization and Calibration
in PLMs*, §3.2, eqs. (5)-(6)): unbiased for the *squared* norms; relative error of the norm
``~ 1/sqrt(2p)`` for p Gaussian projections. Meant for regularizers: with
``create_graph=True`` they stay differentiable in the model's parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Bool, Int, Tensor, checked, draws
from boundbench.theory._inputs import Dims, TorchSeed, call_naming


def _safe_sqrt(x: torch.Tensor) -> torch.Tensor:
    """``sqrt(x)`` whose gradient at ``x = 0`` is 0, not inf: a norm estimate that is exactly 0
    (a Hessian row that vanishes on some input) must not turn a penalty's gradient into NaN.
    Equal to ``x.sqrt()`` everywhere else, values and gradients."""
    pos = x > 0
    return torch.where(pos, torch.where(pos, x, 1.0).sqrt(), 0.0)


def _generator(seed: int, device: torch.device) -> torch.Generator:
    """A generator seeded with ``seed`` on ``device`` (the CPU for devices without one, such as
    ``meta``), so projections are drawn where they are used, not copied there every step."""
    dev = device if device.type in ("cpu", "cuda") else torch.device("cpu")
    return torch.Generator(device=dev).manual_seed(seed)


def _output(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """``f(x)``, where torch's errors inside ``f`` (an x of the wrong width or dtype for the
    model: "mat1 and mat2 shapes cannot be multiplied") name ``x`` and ``f`` (issue 65)."""
    z = call_naming(f, x, failed=f"f(x) failed for x of shape {tuple(x.shape)} and dtype "
                                 f"{x.dtype} (is x the input f expects?)")
    if not isinstance(z, torch.Tensor):
        raise InvalidArgument(f"f must return a tensor (got {type(z).__name__})")
    return z


@checked(x=Tensor(), n_proj=draws(1), seed=TorchSeed(), create_graph=Bool(), event_dims=Int(0))
def jacobian_frobenius(
    f: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    *,
    n_proj: int = 10,
    seed: int | torch.Generator = 0,
    create_graph: bool = False,
    event_dims: int = 1,
) -> torch.Tensor:
    """JACHESS eq. (5): ``||J||_F ~ sqrt(mean_i ||d(v_i^T z)/dx||^2)``, ``v_i ~ N(0, I)`` in the
    output space; one VJP per projection. ``f`` maps ``x (*batch, *event)`` to ``z (*batch, m)``
    with batch entries independent (``event_dims`` trailing axes form one input, e.g. 2 for a
    sequence of embeddings); returns one estimate per batch entry. With ``create_graph`` the
    result is differentiable in the parameters of ``f`` (for use as a penalty).

    Parameters
    ----------
    f : callable
        The model, ``x`` to ``z (*batch, m)``; batch entries independent.
    x : torch.Tensor
        The inputs.
    n_proj : int, default 10
        Gaussian projections per estimate, at least 1.
    seed : int or torch.Generator, default 0
        The projections' seed, or a generator to draw them from.
    create_graph : bool, default False
        Keep the result differentiable in the parameters of ``f``.
    event_dims : int, default 1
        Trailing axes of ``x`` that form one input.

    Returns
    -------
    torch.Tensor
        One estimate of ``||d z / d x||_F`` per batch entry.

    References
    ----------
    Jukić & Šnajder, *From Robustness to Improved Generalization and Calibration in Pre-trained
    Language Models*, §3.2, eq. (5).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.norms import jacobian_frobenius
    >>> A = torch.tensor([[3.0, 0.0], [0.0, 4.0]], dtype=torch.float64)  # ||A||_F = 5
    >>> x = torch.ones(1, 2, dtype=torch.float64)
    >>> round(jacobian_frobenius(lambda x: x @ A.T, x, n_proj=2000).item(), 2)
    4.97
    """
    if n_proj < 1:
        raise InvalidArgument(f"n_proj must be >= 1 (got {n_proj})")
    if event_dims > x.ndim:
        raise InvalidArgument(f"event_dims must be <= x.ndim = {x.ndim} (got {event_dims})")
    gen = seed if isinstance(seed, torch.Generator) else _generator(seed, x.device)
    x = x if x.requires_grad else x.detach().requires_grad_(True)
    z = _output(f, x)
    total: Any = 0.0  # a sum of tensors
    for _ in range(n_proj):
        # drawn where the generator lives (a CUDA generator cannot draw a CPU tensor)
        v = torch.randn(z.shape, generator=gen, dtype=z.dtype, device=gen.device).to(z.device)
        (g,) = torch.autograd.grad(z, x, v, create_graph=create_graph, retain_graph=True)
        total = total + g.pow(2).sum(tuple(range(-event_dims, 0)))
    return _safe_sqrt(total / n_proj)


@checked(x=Tensor(), dims=Dims(), n_proj=draws(1), seed=TorchSeed(), create_graph=Bool())
def hessian_frobenius(
    f: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    *,
    dims: int | list[int] = 10,
    n_proj: int = 10,
    seed: int | torch.Generator = 0,
    create_graph: bool = False,
) -> torch.Tensor:
    """JACHESS eq. (6) with dimension sampling: ``sum_{d in D} ||H_d||_F``, each norm estimated by
    ``sqrt(mean_i ||H_d u_i||^2)``, ``u_i ~ N(0, I)`` in the input space (double backprop).

    ``dims``: explicit output indices, or a count drawn uniformly with replacement (as the
    released code does). Returns ``(B,)``, differentiable with ``create_graph``.

    Parameters
    ----------
    f : callable
        The model, ``x (B, ...)`` to ``z (B, m)``; batch entries independent.
    x : torch.Tensor
        The inputs.
    n_proj : int, default 10
        Gaussian projections per estimate, at least 1.
    seed : int or torch.Generator, default 0
        The projections' seed, or a generator to draw them from.
    create_graph : bool, default False
        Keep the result differentiable in the parameters of ``f``.
    dims : int or list of int, default 10
        Output indices, or how many to draw.

    Returns
    -------
    torch.Tensor
        ``(B,)``: the sum over the drawn outputs of each Hessian's estimated Frobenius norm.

    References
    ----------
    Jukić & Šnajder, *From Robustness to Improved Generalization and Calibration in Pre-trained
    Language Models*, §3.2, eq. (6).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.norms import hessian_frobenius
    >>> f = lambda x: torch.stack([x[:, 0] ** 2 + x[:, 1] ** 2, x[:, 0] * x[:, 1]], 1)
    >>> x = torch.ones(1, 2, dtype=torch.float64)  # Hessians 2 I and [[0, 1], [1, 0]]
    >>> round(hessian_frobenius(f, x, dims=[0, 1], n_proj=2000).item(), 2)  # 2 sqrt 2 + sqrt 2
    4.25
    """
    if n_proj < 1:
        raise InvalidArgument(f"n_proj must be >= 1 (got {n_proj})")
    gen = seed if isinstance(seed, torch.Generator) else _generator(seed, x.device)
    x = x if x.requires_grad else x.detach().requires_grad_(True)
    z = _output(f, x)
    if z.ndim != 2:
        raise InvalidArgument(f"f(x) must be a batch of output vectors (B, m) (got shape "
                              f"{tuple(z.shape)} for x of shape {tuple(x.shape)})")
    if not isinstance(dims, int) and max(dims) >= z.shape[1]:
        raise InvalidArgument(f"dims must be output indices < m = {z.shape[1]} (got {max(dims)})")
    if isinstance(dims, int):
        # drawn indices stay a tensor: indexing with them needs no copy to the host
        idx: Any = torch.randint(0, z.shape[1], (dims,), generator=gen, device=gen.device
                                 ).to(z.device)
    else:
        idx = dims
    out: Any = 0.0  # a sum of tensors
    for d in idx:
        (gd,) = torch.autograd.grad(z[:, d].sum(), x, create_graph=True)
        if not gd.requires_grad:  # z_d is linear in x: its Hessian is zero
            out = out + torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
            continue
        total: Any = 0.0  # a sum of tensors
        for _ in range(n_proj):
            u = torch.randn(x.shape, generator=gen, dtype=x.dtype, device=gen.device).to(x.device)
            (hu,) = torch.autograd.grad(gd, x, u, create_graph=create_graph, retain_graph=True,
                                        allow_unused=True)
            if hu is None:  # z_d is linear in x: its Hessian is zero
                hu = torch.zeros_like(x)
            total = total + hu.pow(2).flatten(1).sum(1)
        out = out + _safe_sqrt(total / n_proj)
    return out
