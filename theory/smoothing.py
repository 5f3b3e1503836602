"""*Activation Decay by Loss Smoothing to Enhance Generalization*.

Corollary 1 (erf bound on the Hessian of a Gaussian-smoothed loss), the 1-D Huber loss that
attains it, Theorem 2 (smoothed cross-entropy <= CE + sigma^2 ||h||^2 / 2) with its lower bound,
the exact smoothed CE it should be compared with, Theorem 3 (a Taylor form, not a bound) and the
GELU Lipschitz constant. Arrays broadcast; classes sit on the last axis of ``logits``.

Smoothing the last layer ``W`` of ``logits = W h`` by ``Delta ~ N(0, sigma^2 I)`` adds
``xi = Delta h ~ N(0, s^2 I_c)`` to the logits with ``s = sigma ||h||``; every smoothed-CE
function here therefore takes the logit-space scale ``s`` (see :func:`logit_noise_scale`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import erf, log_softmax, softmax
from scipy.stats import norm

from boundbench.framework import validate as v
from boundbench.framework.validate import Array, Int, Rng, Seq, Values, checked


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
    yy = v.labels("y", y, z.shape[-1])
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
    yy = v.labels("y", y, z.shape[-1])
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
    yy = v.labels("y", np.asarray(y), WW.shape[0])
    mean, se = antithetic_mean(lambda dl: cross_entropy((WW + sg * dl) @ hh, yy), WW.shape,
                               n_samples=n_samples, rng=rng, batch=max(64, 2**20 // WW.size))
    return float(mean), float(se)
