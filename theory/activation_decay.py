"""*Activation Decay by Loss Smoothing to Enhance Generalization*: the paper's results as functions.

Corollary 1 (erf bound on the Hessian of a Gaussian-smoothed loss), the 1-D Huber loss that
attains it, Theorem 2 (smoothed cross-entropy <= CE + sigma^2 ||h||^2 / 2) with its lower bound,
the exact smoothed CE it should be compared with, Theorem 3 (a Taylor form, not a bound), the
GELU Lipschitz constant, Theorem 1 (the layerwise Hessian bound, both readings) and Appendix B's
Hessian of the last layer with its smoothed top eigenvalue. Arrays broadcast; classes sit on the
last axis of ``logits``.

Smoothing the last layer ``W`` of ``logits = W h`` by ``Delta ~ N(0, sigma^2 I)`` adds
``xi = Delta h ~ N(0, s^2 I_c)`` to the logits with ``s = sigma ||h||``; every smoothed-CE
function here therefore takes the logit-space scale ``s`` (see :func:`logit_noise_scale`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy.special import erf, log_softmax, softmax
from scipy.stats import norm

from boundbench.framework import validate as v
from boundbench.framework import values
from boundbench.framework.validate import (
    Array,
    Float,
    Int,
    Rng,
    Seed,
    Seq,
    Tensor,
    Values,
    checked,
    draws,
)
from boundbench.framework.verdicts import BoundSides
from boundbench.theory._inputs import real_tensor


def _gelu_lipschitz() -> float:
    # GELU'(x) = Phi(x) + x phi(x); GELU''(x) = phi(x) (2 - x^2) vanishes at x = sqrt(2).
    x = np.sqrt(2.0)
    return float(norm.cdf(x) + x * norm.pdf(x))


GELU_LIPSCHITZ: float = _gelu_lipschitz()
"""``max_x GELU'(x) = Phi(sqrt 2) + sqrt 2 phi(sqrt 2) = 1.128904...``: GELU is not 1-Lipschitz,
which Theorem 1's proof ("contractant activations such as ReLU and GELU") assumes."""


@checked(H=Values(0, lo_open=True), eps=Values(0), sigma=Values(0, lo_open=True))
def cor1_rhs(*, H: ArrayLike, eps: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """Corollary 1, eq. (1): ``||Hess E_Delta L(theta + Delta)||_2 <= H erf(eps / (sqrt2 H sigma))``.

    Assumptions: ``grad L`` is H-Lipschitz and ``||grad L|| <= eps`` at every point the Gaussian
    ``N(theta, sigma^2 I)`` reaches (globally, in practice). The paper states the gradient bound
    without saying where it must hold and estimates ``eps`` from the gradient norm "near the
    minimum", which does not make the right side a bound (see the ``ad.cor1`` claims). Adapted
    from Delattre et al. (2024), Thm 2; its proof (B.1) is one sentence; the maximizer of the
    left side is the Huber loss, :func:`huber_smoothed_hessian`.
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    s = np.asarray(sigma)
    return h * erf(e / (np.sqrt(2.0) * h * s))


@checked(H=Values(0, lo_open=True), eps=Values(0), sigma=Values(0, lo_open=True))
def cor1_simple_rhs(*, H: ArrayLike, eps: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """The consequences of Corollary 1 the paper states: ``rhs <= min(H, sqrt(2/pi) eps/sigma)``.

    From ``erf(x) <= min(1, 2x/sqrt(pi))``.
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    s = np.asarray(sigma)
    return np.minimum(h, np.sqrt(2.0 / np.pi) * e / s)


@checked(H=Values(0, lo_open=True), eps=Values(0), theta=Values())
def huber_grad(theta: ArrayLike, *, H: ArrayLike, eps: ArrayLike) -> np.ndarray:
    """Gradient of the 1-D Huber loss with curvature H and slope cap eps: ``clip(H theta, -eps, eps)``.

    It is H-Lipschitz and bounded by eps everywhere: Corollary 1's assumptions hold globally.
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    return np.clip(h * np.asarray(theta), -e, e)


@checked(H=Values(0, lo_open=True), eps=Values(0), sigma=Values(0, lo_open=True), theta=Values())
def huber_smoothed_hessian(
    theta: ArrayLike, *, H: ArrayLike, eps: ArrayLike, sigma: ArrayLike
) -> np.ndarray:
    """Exact second derivative of the Gaussian-smoothed Huber loss.

    ``L'' = H 1{|theta| < eps/H}``, so ``(L^sigma)''(theta) = H [Phi((eps/H - theta)/sigma) -
    Phi((-eps/H - theta)/sigma)]``. At ``theta = 0`` this equals Corollary 1's right side: the
    bound is attained.
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    s = np.asarray(sigma)
    t = np.asarray(theta)
    a = e / h
    return h * _gauss_mass((-a - t) / s, (a - t) / s)


def _gauss_mass(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``Phi(hi) - Phi(lo)`` for ``lo <= hi`` without cancellation where it can be avoided:
    erf near 0 and across it (Phi's values there sit near 1/2, so their difference would lose
    digits: 4.6e-11 relative at |lo|, |hi| ~ 1e-5), tail functions on one side beyond 1 (so
    Corollary 1's equality holds to rounding)."""
    lo, hi = np.broadcast_arrays(lo, hi)
    across = 0.5 * (erf(hi / np.sqrt(2.0)) - erf(lo / np.sqrt(2.0)))
    right = norm.sf(lo) - norm.sf(hi)
    left = norm.cdf(hi) - norm.cdf(lo)
    return np.where(lo >= 1, right, np.where(hi <= -1, left, across))


@checked(sigma=Values(0, lo_open=True), h=Values(min_ndim=1))
def logit_noise_scale(h: ArrayLike, *, sigma: ArrayLike) -> np.ndarray:
    """``s = sigma ||h||``: the std of each logit when the last layer is smoothed by sigma."""
    return np.asarray(sigma) * np.linalg.norm(np.asarray(h), axis=-1)


@checked(logits=Array())
@checked(logits=Values(min_ndim=1))
def cross_entropy(logits: ArrayLike, y: ArrayLike) -> np.ndarray:
    """``-log softmax(logits)[y]``, stable; ``y`` holds integer class indices."""
    z = np.asarray(logits)
    yy = values.labels("y", y, z.shape[-1])
    shape = np.broadcast_shapes(z.shape[:-1], yy.shape)
    z = np.broadcast_to(z, (*shape, z.shape[-1]))
    yy = np.broadcast_to(yy, shape)
    return -np.take_along_axis(log_softmax(z, axis=-1), yy[..., None], axis=-1)[..., 0]


@checked(logits=Array())
@checked(logits=Values(min_ndim=1), s=Values(0))
def thm2_rhs(logits: ArrayLike, y: ArrayLike, *, s: ArrayLike) -> np.ndarray:
    """Theorem 2, eq. (4): smoothed CE ``<= CE(W h, y) + sigma^2 ||h||^2 / 2 = CE + s^2/2``.

    Proof (B.3): Jensen on the log, then the Gaussian moment generating function. Two typos in
    the paper: the log-sum-exp index should run over the c classes (it writes ``j = 1..d``), and
    the MGF step reuses sigma for ``Var(Delta_j^T h) = sigma^2 ||h||^2``; neither changes the
    result. The lower bound ``CE <= smoothed CE`` (Jensen, CE convex in the logits) is
    :func:`cross_entropy` itself.
    """
    return cross_entropy(logits, y) + np.asarray(s) ** 2 / 2.0


@checked(logits=Array())
@checked(logits=Values(min_ndim=1), s=Values(0))
def thm3_taylor(logits: ArrayLike, y: ArrayLike, *, s: ArrayLike) -> np.ndarray:
    """Theorem 3 (B.4): second-order Taylor form ``CE + s^2/2 * sum_i p_i (1 - p_i)``.

    ``p = softmax(W h)``; ``sum_i p_i (1 - p_i) = 1 - ||p||^2``. Not a bound in either direction
    (the paper says "not an upper bound"; it also under-estimates for confident samples). Typo
    in the proof: "the trace of p p^T is 1" should read ``tr diag(p) = 1``, ``tr p p^T = ||p||^2``.
    """
    z = np.asarray(logits)
    p = softmax(z, axis=-1)
    return cross_entropy(z, y) + np.asarray(s) ** 2 / 2.0 * (1.0 - np.sum(p**2, axis=-1))


@checked(n_nodes=Int(2))
@checked(margin=Values(), s=Values(0))
def smoothed_ce_binary(margin: ArrayLike, *, s: ArrayLike, n_nodes: int = 300) -> np.ndarray:
    """Exact smoothed CE for two classes by Gauss-Hermite quadrature.

    With ``margin = z_y - z_other`` and i.i.d. logit noise ``N(0, s^2)``, the smoothed loss is
    ``E softplus(-margin + sqrt(2) s Z)``, ``Z ~ N(0, 1)``. softplus is analytic in a strip whose
    width in Z shrinks like 1/s, so convergence slows as s grows: 300 nodes give a relative error
    below 1e-11 for ``s <= 3`` (measured against adaptive quadrature in the tests).
    """
    m = np.asarray(margin)
    ss = np.asarray(s)
    if n_nodes < 2:
        raise ValueError(f"n_nodes must be >= 2 (got {n_nodes})")
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    # E f(mu + tau Z) = pi^(-1/2) sum_k w_k f(mu + tau sqrt(2) x_k), with tau = sqrt(2) s
    arg = -m[..., None] + 2.0 * ss[..., None] * x
    return np.sum(w * np.logaddexp(0.0, arg), axis=-1) / np.sqrt(np.pi)


@checked(noise_shape=Seq(Int(1)), n_samples=v.draws(4), rng=Rng(), batch=Int(1))
def antithetic_mean(
    f: Callable[[np.ndarray], np.ndarray],
    noise_shape: tuple[int, ...],
    *,
    n_samples: int,
    rng: np.random.Generator,
    batch: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo ``E f(N)`` for ``N ~ N(0, I)`` of ``noise_shape``: ``(mean, standard error)``.

    ``f`` maps a batch of noise, shape ``(k, *noise_shape)``, to values ``(k, *out)``. Antithetic
    pairs ``(N, -N)`` cancel the odd part of ``f``; the standard error is over pairs.
    """
    if n_samples < 4 or n_samples % 2:
        raise ValueError(f"n_samples must be an even number >= 4 (got {n_samples})")
    n = n_samples // 2
    total = total_sq = 0.0
    done = 0
    while done < n:
        k = min(batch, n - done)
        noise = rng.standard_normal((k, *noise_shape))
        pair = 0.5 * (f(noise) + f(-noise))
        total = total + pair.sum(axis=0)
        total_sq = total_sq + (pair**2).sum(axis=0)
        done += k
    mean = np.asarray(total / n)
    var = np.maximum(total_sq / n - mean**2, 0.0) * n / (n - 1)
    return mean, np.sqrt(var / n)


@checked(logits=Array(), n_samples=v.draws(4), rng=Rng())
@checked(logits=Values(min_ndim=1), s=Values(0))
def smoothed_ce_monte_carlo(
    logits: ArrayLike,
    y: ArrayLike,
    *,
    s: ArrayLike,
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo smoothed CE in any number of classes, in logit space: ``(mean, s.e.)``.

    Adds ``xi ~ N(0, s^2 I_c)`` to the logits; equivalent to smoothing the last layer (module
    docstring). For the weight-space statement itself use :func:`smoothed_ce_weight_space`.
    """
    z = np.asarray(logits)
    yy = values.labels("y", y, z.shape[-1])
    ss = np.asarray(s)
    try:
        np.broadcast_shapes(z.shape[:-1], yy.shape, ss.shape)
    except ValueError:
        raise ValueError(f"logits (..., classes), y and s must broadcast over the leading axes "
                         f"(got logits {z.shape}, y {yy.shape}, s {ss.shape})") from None
    z, yy, ss = np.broadcast_arrays(z, yy[..., None], ss[..., None])
    yy, ss = yy[..., 0], ss[..., 0]
    return antithetic_mean(lambda xi: cross_entropy(z + xi * ss[..., None], yy), z.shape,
                           n_samples=n_samples, rng=rng)


@checked(n_samples=v.draws(4), rng=Rng())
@checked(W=Values(), h=Values(), sigma=Values(0, lo_open=True))
def smoothed_ce_weight_space(
    W: ArrayLike,
    h: ArrayLike,
    y: int,
    *,
    sigma: float,
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Monte Carlo ``E_Delta CE((W + Delta) h, y)``, ``Delta ~ N(0, sigma^2 I_{c x d})``:
    the smoothed loss exactly as Theorem 2 states it. Returns ``(mean, s.e.)``."""
    WW = np.asarray(W)
    hh = np.asarray(h)
    sg = float(np.asarray(sigma))
    if WW.ndim != 2 or hh.shape != (WW.shape[1],):
        raise ValueError(f"W must be (c, d) and h (d,) (got {WW.shape} and {hh.shape})")
    yy = values.labels("y", np.asarray(y), WW.shape[0])
    mean, se = antithetic_mean(lambda dl: cross_entropy((WW + sg * dl) @ hh, yy), WW.shape,
                               n_samples=n_samples, rng=rng, batch=max(64, 2**20 // WW.size))
    return float(mean), float(se)


# --- Appendix B: the Hessian of the last layer --------------------------------------------------


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


# --- Theorem 1 ---------------------------------------------------------------------------------

#: the readings of Theorem 1 (``ad.thm1.literal`` and ``ad.thm1.block``)
THM1_READINGS = ("literal", "block")
_THM1_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu, "gelu": torch.nn.functional.gelu}


def thm1_terms(weights: list[torch.Tensor] | tuple[torch.Tensor, ...], x: torch.Tensor, *,
               activation: str) -> dict[str, float]:
    """Every number both readings of :func:`thm1_sides` need, from one exact Hessian:
    ``hess_full``, ``hess_block``, ``rhs_contractant`` (``||W^(l)||`` alone, the paper's
    "contractant" activation), ``rhs_lipschitz`` (each ``||W^(l)||`` times the activation's
    Lipschitz constant) and ``last_layer_scale`` (``||W^(L)||_2``)."""
    if activation not in _THM1_ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_THM1_ACTIVATIONS)} "
                         f"(got {activation!r})")
    if not isinstance(weights, list | tuple) or len(weights) < 2:
        raise ValueError("weights must be a list of at least 2 matrices W^(1), ..., W^(L)")
    Ws = [real_tensor(f"weights[{i}]", w, 2) for i, w in enumerate(weights)]
    xx = real_tensor("x", x, 1)
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
