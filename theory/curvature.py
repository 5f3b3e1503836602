"""Curvature estimators: Hessian-vector products, top eigenvalue, trace, Jacobian/Hessian norms.

Built on ``torch.func``. A :class:`HessianOperator` wraps a scalar loss of a chosen subset of a
model's parameters (e.g. only the last layer ``W^(L)``); everything else is an estimator on top
of its ``matvec``. Accuracy, as tested against closed forms (``tests/test_curvature.py``):

- :func:`top_eigenvalue_power` (PyHessian's method): stops when the Rayleigh quotient changes by
  less than ``tol`` relative; converges at rate ``(lambda_2/lambda_1)^k``, so it can stop early
  on a slowly converging quotient: its error can exceed ``tol``.
- :func:`top_eigenvalue_lanczos`: scipy's ARPACK (implicitly restarted Lanczos); far fewer HVPs
  for the same accuracy (``benchmarks/bench_curvature.py``).
- :func:`trace_hutchinson`: unbiased, variance ``2 ||A||_F^2 / m`` with Rademacher probes
  (``- 2 sum_i A_ii^2 / m``); returns the standard error.
- :func:`trace_hutchpp`: Hutch++ (Meyer et al. 2021), relative error ``O(1/m)`` instead of
  ``O(1/sqrt m)`` for matrices with decaying spectra, at ``m`` matvecs.
- :func:`jacobian_frobenius` (JACHESS eq. 5) and :func:`hessian_frobenius` (eq. 6): unbiased for
  the *squared* norms; relative error of the norm ``~ 1/sqrt(2p)`` for p projections (Gaussian).

Estimators meant for regularizers take ``create_graph=True`` and stay differentiable in the
model's parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.func import functional_call, grad, jvp, vmap

from boundbench.framework.validate import (
    MAX_MAGNITUDE,
    Array,
    Bool,
    Choice,
    Dims,
    Float,
    Int,
    Seed,
    Tensor,
    TorchSeed,
    checked,
    draws,
)
from boundbench.framework.verdicts import BoundSides


def _split_params(model: torch.nn.Module, names: list[str] | None):
    """``(chosen, fixed)`` parameter dicts: the named ones (default all) and the rest, detached."""
    full = dict(model.named_parameters())
    names = names or list(full)
    unknown = set(names) - set(full)
    if unknown:
        raise ValueError(f"names must be parameters of the model; unknown: {sorted(unknown)}")
    fixed = {k: v.detach() for k, v in full.items() if k not in names}
    return {k: full[k] for k in names}, fixed


class HessianOperator:
    """The Hessian of ``loss(model(batch), batch)`` w.r.t. the parameters named in ``params``.

    ``loss_fn(params: dict[str, Tensor]) -> scalar`` is built from ``model`` with
    :func:`torch.func.functional_call`; parameters not named stay fixed at their values. Vectors
    are flat, in the order of ``names``. A list of ``(weight, loss)`` pairs gives full-dataset
    HVPs batch by batch (:meth:`for_batches`).
    """

    def __init__(
        self,
        loss: Callable[[Mapping[str, torch.Tensor]], torch.Tensor]
        | list[tuple[float, Callable[[Mapping[str, torch.Tensor]], torch.Tensor]]],
        params: Mapping[str, torch.Tensor],
    ) -> None:
        # a list of (weight, loss) pairs is a loss over batches: H v = sum_b weight_b H_b v,
        # one batch in memory at a time
        parts = loss if isinstance(loss, list) else [(1.0, loss)]
        self._parts = [(float(w), grad(f)) for w, f in parts]
        self.loss = (lambda p: sum(w * f(p) for w, f in parts)) if isinstance(loss, list) else loss
        self.names = list(params)
        self.params = {k: p.detach() for k, p in params.items()}
        self.shapes = [p.shape for p in self.params.values()]
        self.sizes = [p.numel() for p in self.params.values()]
        self.dim = int(sum(self.sizes))
        ref = next(iter(self.params.values()))
        self.dtype, self.device = ref.dtype, ref.device
        self.n_matvecs = 0

    @classmethod
    def for_model(
        cls,
        model: torch.nn.Module,
        loss_of_output: Callable[[torch.Tensor], torch.Tensor],
        inputs: torch.Tensor,
        *,
        names: list[str] | None = None,
    ) -> HessianOperator:
        """Hessian of ``loss_of_output(model(inputs))`` w.r.t. the parameters ``names``
        (default: all); the rest of the model is held fixed."""
        Array()("inputs", inputs)  # NaN inputs would give a NaN Hessian, silently
        chosen, fixed = _split_params(model, names)

        def loss(p: Mapping[str, torch.Tensor]) -> torch.Tensor:
            return loss_of_output(functional_call(model, {**fixed, **p}, (inputs,)))

        return cls(loss, chosen)

    @classmethod
    def for_batches(
        cls,
        model: torch.nn.Module,
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        batches: list[tuple[torch.Tensor, torch.Tensor]],
        *,
        names: list[str] | None = None,
    ) -> HessianOperator:
        """Full-dataset Hessian of the mean ``loss_fn(model(x), y)`` over ``batches`` of
        ``(x, y)``, weighted by batch size; HVPs visit one batch at a time."""
        chosen, fixed = _split_params(model, names)
        total = sum(len(x) for x, _ in batches)

        def part(x: torch.Tensor, y: torch.Tensor):
            return lambda p: loss_fn(functional_call(model, {**fixed, **p}, (x,)), y)

        return cls([(len(x) / total, part(x, y)) for x, y in batches], chosen)

    def _unflatten(self, v: torch.Tensor) -> dict[str, torch.Tensor]:
        parts = torch.split(v, self.sizes)
        return {k: p.view(s) for k, p, s in zip(self.names, parts, self.shapes, strict=True)}

    def matvec(self, v: torch.Tensor) -> torch.Tensor:
        """``H v`` by forward-over-reverse differentiation (one jvp of the gradient)."""
        self.n_matvecs += 1
        tangent = self._unflatten(v.to(self.dtype))
        out: Any = 0.0  # a sum of tensors
        for w, g in self._parts:
            hv = jvp(g, (self.params,), (tangent,))[1]
            out = out + w * torch.cat([hv[k].reshape(-1) for k in self.names])
        return out

    def matmat(self, V: torch.Tensor) -> torch.Tensor:
        """``H V^T`` for a batch of vectors ``V (m, dim)``, as one vmapped HVP: ``(m, dim)``."""
        self.n_matvecs += V.shape[0]

        out: Any = 0.0  # a sum of tensors
        for w, g in self._parts:
            def one(v: torch.Tensor, g=g) -> torch.Tensor:
                hv = jvp(g, (self.params,), (self._unflatten(v),))[1]
                return torch.cat([hv[k].reshape(-1) for k in self.names])

            out = out + w * vmap(one)(V.to(self.dtype))
        return out

    def dense(self) -> torch.Tensor:
        """The full Hessian matrix (``dim`` matvecs): for tests and small problems."""
        return self.matmat(torch.eye(self.dim, dtype=self.dtype, device=self.device)).T


@dataclass(frozen=True)
class EigResult:
    value: float
    vector: torch.Tensor
    n_matvecs: int
    n_iter: int
    # ||H v - value v|| for the unit vector returned: the accuracy actually reached (an
    # eigenvalue is within it of `value`), whatever the stopping rule
    residual: float = float("nan")


@checked(tol=Float(0, 1, lo_open=True, hi_open=True), max_iter=Int(1), seed=Seed())
def top_eigenvalue_power(
    op: HessianOperator, *, tol: float = 1e-3, max_iter: int = 100, seed: int = 0
) -> EigResult:
    """Power iteration as PyHessian runs it: stop when the Rayleigh quotient's relative change
    ``|l_k - l_{k-1}| / (|l_{k-1}| + 1e-6) < tol``. Returns the largest-magnitude eigenvalue."""
    if not tol > 0:
        raise ValueError(f"tol must be > 0 (got {tol})")
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
    tol=Float(0, 1, lo_open=True, hi_open=True), seed=Seed(), which=Choice("LM", "LA"), ncv=Int(3))
def top_eigenvalue_lanczos(
    op: HessianOperator, *, tol: float = 1e-3, seed: int = 0, which: str = "LM", ncv: int = 20
) -> EigResult:
    """Largest-magnitude (``which="LM"``, the spectral norm ``||H||_2`` that Cor. 1 and Fig. 1a
    bound, as a signed eigenvalue) or largest algebraic (``"LA"``) eigenvalue by scipy's ARPACK
    (implicitly restarted Lanczos, Krylov basis of ``ncv`` vectors) on the HVP operator, to
    relative accuracy ``tol``; ``residual`` is ``||H v - lambda v||`` (one more HVP). ARPACK
    builds the whole basis before its first convergence test, so it spends at least ``ncv`` HVPs
    even when power iteration would stop sooner."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    if which not in ("LM", "LA"):
        raise ValueError(f"which must be 'LM' (largest magnitude) or 'LA' (largest algebraic) "
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
    w, V = eigsh(A, k=1, which=which, tol=tol, v0=v0, ncv=min(op.dim - 1, max(ncv, 3)))
    n = op.n_matvecs - start
    vec = torch.as_tensor(V[:, 0], dtype=op.dtype, device=op.device)
    res = float((op.matvec(vec) - float(w[0]) * vec).norm())
    return EigResult(float(w[0]), vec.cpu(), n, 1, res)


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
    result is differentiable in the parameters of ``f`` (for use as a penalty)."""
    if n_proj < 1:
        raise ValueError(f"n_proj must be >= 1 (got {n_proj})")
    gen = seed if isinstance(seed, torch.Generator) else _generator(seed, x.device)
    x = x if x.requires_grad else x.detach().requires_grad_(True)
    z = f(x)
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
    released code does). Returns ``(B,)``, differentiable with ``create_graph``."""
    if n_proj < 1:
        raise ValueError(f"n_proj must be >= 1 (got {n_proj})")
    gen = seed if isinstance(seed, torch.Generator) else _generator(seed, x.device)
    x = x if x.requires_grad else x.detach().requires_grad_(True)
    z = f(x)
    if z.ndim != 2:
        raise ValueError(f"f(x) must be a batch of output vectors (B, m) (got shape "
                         f"{tuple(z.shape)} for x of shape {tuple(x.shape)})")
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


@checked(h=Tensor(ndim=(2, 3)), W=Tensor(ndim=(2, 3)))
def last_layer_hessian(h: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Exact Hessian of the mean cross-entropy of ``logits = W h`` w.r.t. ``W`` (row-major
    ``(c, k)`` flattening): ``mean_n (diag p_n - p_n p_n^T) kron h_n h_n^T``, independent of the
    labels. ``h (..., n, k)``, ``W (..., c, k)`` with matching leading (model) axes.

    Its spectral norm is at most ``1/2 lambda_max(mean_n h_n h_n^T)`` (``diag p - p p^T <= I/2``):
    why shrinking the penultimate activations flattens the last layer (activation decay)."""
    if h.shape[-1] != W.shape[-1] or h.shape[:-2] != W.shape[:-2]:
        raise ValueError(f"h (..., n, k) and W (..., c, k) must share k and their leading axes "
                         f"(got {tuple(h.shape)} and {tuple(W.shape)})")
    p = torch.softmax(h @ W.transpose(-1, -2), -1)
    A = torch.diag_embed(p) - p[..., :, None] * p[..., None, :]
    n, c, k = h.shape[-2], W.shape[-2], h.shape[-1]
    H = torch.einsum("...nab,...ni,...nj->...aibj", A, h, h) / n
    return H.reshape(*H.shape[:-4], c * k, c * k)


@checked(
    h=Tensor(ndim=(2, 3)), W=Tensor(ndim=(2, 3)), sigma=Float(0, lo_open=True), n_mc=draws(1),
    n_batches=Int(2), z=Float(0, lo_open=True), seed=Seed())
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
    mild optimism of reusing that eigenvector)."""
    if h.ndim != 2 or W.ndim != 2 or W.shape[1] != h.shape[1]:
        raise ValueError(f"h must be (n, k) features and W (c, k) weights over the same k (got h "
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


# --- activation decay, Theorem 1 ---------------------------------------------------------------

#: the readings of Theorem 1 (``ad.thm1.literal`` and ``ad.thm1.block``)
THM1_READINGS = ("literal", "block")
_THM1_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu, "gelu": torch.nn.functional.gelu}


def _real_tensor(name: str, value: Any, ndim: int) -> torch.Tensor:
    """``value`` as a finite, non-empty float64 tensor of ``ndim`` axes, or a ValueError naming
    ``name`` (no silent cast of complex or boolean input)."""
    if isinstance(value, str | bytes) or value is None:
        raise ValueError(f"{name} must be a real {ndim}-D array (got {type(value).__name__})")
    try:
        t = torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{name} must be a real {ndim}-D array ({err})") from None
    if t.is_complex() or t.dtype == torch.bool:
        raise ValueError(f"{name} must be real-valued (got dtype {t.dtype})")
    if t.ndim != ndim or t.numel() == 0:
        raise ValueError(f"{name} must be a non-empty {ndim}-D array (got shape {tuple(t.shape)})")
    t = t.to(torch.float64)
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} must be finite (got NaN or inf)")
    if float(t.abs().max()) > MAX_MAGNITUDE:
        raise ValueError(f"{name} must have magnitude <= {MAX_MAGNITUDE:g} (got "
                         f"{float(t.abs().max()):.3g}): beyond it the Hessian's products overflow")
    return t


def thm1_terms(weights: list[torch.Tensor] | tuple[torch.Tensor, ...], x: torch.Tensor, *,
               activation: str) -> dict[str, float]:
    """Every number both readings of :func:`thm1_sides` need, from one exact Hessian:
    ``hess_full``, ``hess_block``, ``rhs_contractant`` (``||W^(l)||`` alone, the paper's
    "contractant" activation), ``rhs_lipschitz`` (each ``||W^(l)||`` times the activation's
    Lipschitz constant) and ``last_layer_scale`` (``||W^(L)||_2``)."""
    from boundbench.theory.smoothing import GELU_LIPSCHITZ

    if activation not in _THM1_ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_THM1_ACTIVATIONS)} "
                         f"(got {activation!r})")
    if not isinstance(weights, list | tuple) or len(weights) < 2:
        raise ValueError("weights must be a list of at least 2 matrices W^(1), ..., W^(L)")
    Ws = [_real_tensor(f"weights[{i}]", w, 2) for i, w in enumerate(weights)]
    xx = _real_tensor("x", x, 1)
    prev = xx.shape[0]
    for i, w in enumerate(Ws):
        if w.shape[1] != prev:
            after = "x's length" if i == 0 else f"weights[{i - 1}]'s rows"
            raise ValueError(f"weights[{i}] must have {prev} columns to follow {after} (got "
                             f"shape {tuple(w.shape)}; x has shape {tuple(xx.shape)})")
        prev = w.shape[0]
    s = _THM1_ACTIVATIONS[activation]
    sizes = [w.numel() for w in Ws]

    def net(theta: torch.Tensor) -> torch.Tensor:
        parts = [p.view(w.shape) for p, w in zip(torch.split(theta, sizes), Ws, strict=True)]
        h = xx
        for W in parts[:-1]:
            h = s(W @ h)
        return parts[-1] @ h

    theta0 = torch.cat([w.reshape(-1) for w in Ws])
    target = net(theta0).detach()  # a zero-loss point of the squared loss

    def loss(theta: torch.Tensor) -> torch.Tensor:
        return 0.5 * (net(theta) - target).pow(2).sum()

    from torch.func import hessian, jacrev

    H = hessian(loss)(theta0)
    nb = sum(sizes[:-1])
    full = torch.linalg.matrix_norm(H, 2).item()
    block = torch.linalg.matrix_norm(H[:nb, :nb], 2).item()
    # direct partials dh^(j)/dW^(j) at the network's own h^(j-1) (the proof's reading)
    hs, h = [], xx
    for W in Ws[:-1]:
        hs.append(h)
        h = s(W @ h)
    jac = [torch.linalg.matrix_norm(
        jacrev(lambda w, hp=hp: s(w @ hp))(W).reshape(W.shape[0], -1), 2).item()
        for W, hp in zip(Ws[:-1], hs, strict=True)]
    wn = [torch.linalg.matrix_norm(W, 2).item() for W in Ws[:-1]]
    hz = torch.linalg.matrix_norm(Ws[-1].T @ Ws[-1], 2).item()  # Hessian of L w.r.t. h^(L-1)
    lip = 1.0 if activation == "relu" else GELU_LIPSCHITZ

    def rhs(c: float) -> float:
        total = 0.0
        for j, n_j in enumerate(jac):
            term = n_j
            for w_l in wn[j + 1:]:
                term = term * w_l * c
            total = total + term
        return total**2 * hz

    return {"last_layer_scale": torch.linalg.matrix_norm(Ws[-1], 2).item(),
            "hess_full": full, "hess_block": block,
            "rhs_contractant": rhs(1.0), "rhs_lipschitz": rhs(lip)}


def thm1_sides(weights: list[torch.Tensor] | tuple[torch.Tensor, ...], x: torch.Tensor, *,
               activation: str, reading: str = "block") -> BoundSides:
    """Activation decay (anonymous), Theorem 1, eq. (2), both sides at a zero-loss point of
    the squared loss ``1/2 ||W^(L) h^(L-1) - y||^2`` of a bias-free MLP
    ``h^(j) = s(W^(j) h^(j-1))``, ``h^(0) = x``, with exact Hessians (torch.func):

    ``||Hess L|| <= (sum_{j<L} ||dh^(j)/dW^(j)|| prod_{j<l<L} ||W^(l)||)^2 ||Hess_{h^(L-1)} L||``

    ``weights``: ``W^(1), ..., W^(L)`` (``L >= 2``); ``activation``: ``"relu"`` or ``"gelu"``.
    Inconsistency: the paper's theta includes ``W^(L)``, but ``dh^(L-1)/dW^(L) = 0``, so the
    right side has no ``W^(L)`` term, and it assumes "contractant" activations, which GELU
    (Lipschitz 1.1289) is not. ``reading="literal"``: the Hessian over every weight against the
    paper's right side (it fails, ``ad.thm1.literal``); ``reading="block"`` (default, the
    corrected reading): the Hessian over ``W^(1..L-1)`` against the right side with each
    ``||W^(l)||`` times the activation's Lipschitz constant (``ad.thm1.block``). The partials
    ``dh^(j)/dW^(j)`` are the direct ones, as in the proof."""
    if reading not in THM1_READINGS:
        raise ValueError(f"reading must be one of {THM1_READINGS} (got {reading!r})")
    t = thm1_terms(weights, x, activation=activation)
    if reading == "literal":
        return BoundSides(np.asarray(t["hess_full"]), np.asarray(t["rhs_contractant"]))
    return BoundSides(np.asarray(t["hess_block"]), np.asarray(t["rhs_lipschitz"]))
