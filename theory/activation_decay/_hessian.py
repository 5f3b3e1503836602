"""Activation Decay's Hessian bounds: Corollary 1 (the erf bound on a Gaussian-smoothed loss) and
the 1-D Huber loss that attains it, Theorem 1 (the layerwise bound, both readings) and the GELU
Lipschitz constant its proof needs (the facade :mod:`boundbench.theory.activation_decay`
re-exports them)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from numpy.typing import ArrayLike
from scipy.special import erf, ndtr

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import (
    Values,
    checked,
)
from boundbench.framework.inputs.values import broadcastable
from boundbench.framework.verdicts.rules import BoundSides
from boundbench.theory._inputs import real_tensor


def _gelu_lipschitz() -> float:
    # GELU'(x) = Phi(x) + x phi(x); GELU''(x) = phi(x) (2 - x^2) vanishes at x = sqrt(2).
    # scipy.stats's norm.cdf and norm.pdf written out (the same operations, the same bits):
    # this runs at import, and scipy.stats is 0.5-1.8 s of every command's start
    x = np.sqrt(2.0)
    return float(ndtr(x) + x * (np.exp(-x**2 / 2.0) / np.sqrt(2 * np.pi)))


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

    Parameters
    ----------
    H : array_like
        ``H > 0``, the Lipschitz constant of ``grad L``.
    eps : array_like
        ``eps >= 0``, the bound on ``||grad L||``.
    sigma : array_like
        ``sigma > 0``, the smoothing's standard deviation.

    Returns
    -------
    numpy.ndarray
        ``H erf(eps / (sqrt 2 H sigma))``, broadcast over the arguments.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Corollary 1, eq. (1), and Appendix B.1; Delattre et al. (2024), Thm 2.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import cor1_rhs, huber_smoothed_hessian
    >>> round(float(cor1_rhs(H=2.0, eps=1.0, sigma=0.5)), 4)
    1.3654
    >>> round(float(huber_smoothed_hessian(0.0, H=2.0, eps=1.0, sigma=0.5)), 4)  # attained
    1.3654
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    s = np.asarray(sigma)
    return h * erf(e / (np.sqrt(2.0) * h * s))


@checked(H=Values(0, lo_open=True), eps=Values(0), sigma=Values(0, lo_open=True))
def cor1_simple_rhs(*, H: ArrayLike, eps: ArrayLike, sigma: ArrayLike) -> np.ndarray:
    """The consequences of Corollary 1 the paper states: ``rhs <= min(H, sqrt(2/pi) eps/sigma)``.

    From ``erf(x) <= min(1, 2x/sqrt(pi))``.

    Parameters
    ----------
    H : array_like
        ``H > 0``, the Lipschitz constant of ``grad L``.
    eps : array_like
        ``eps >= 0``, the bound on ``||grad L||``.
    sigma : array_like
        ``sigma > 0``, the smoothing's standard deviation.

    Returns
    -------
    numpy.ndarray
        ``min(H, sqrt(2/pi) eps / sigma)``, never below :func:`cor1_rhs`.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Corollary 1.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import cor1_simple_rhs
    >>> round(float(cor1_simple_rhs(H=2.0, eps=1.0, sigma=0.5)), 4)
    1.5958
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    s = np.asarray(sigma)
    return np.minimum(h, np.sqrt(2.0 / np.pi) * e / s)


@checked(H=Values(0, lo_open=True), eps=Values(0), theta=Values())
def huber_grad(theta: ArrayLike, *, H: ArrayLike, eps: ArrayLike) -> np.ndarray:
    """Gradient of the 1-D Huber loss with curvature H and slope cap eps: ``clip(H theta, -eps, eps)``.

    It is H-Lipschitz and bounded by eps everywhere: Corollary 1's assumptions hold globally.

    Parameters
    ----------
    theta : array_like
        The points.
    H : array_like
        ``H > 0``, the curvature near 0.
    eps : array_like
        ``eps >= 0``, the slope cap.

    Returns
    -------
    numpy.ndarray
        ``clip(H theta, -eps, eps)``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Appendix B.1 (the loss that attains Corollary 1).

    Examples
    --------
    >>> from boundbench.theory.activation_decay import huber_grad
    >>> huber_grad([-2.0, 0.1, 2.0], H=2.0, eps=1.0).tolist()
    [-1.0, 0.2, 1.0]
    """
    h = np.asarray(H)
    e = np.asarray(eps)
    broadcastable(theta=theta, H=h, eps=e)
    return np.clip(h * np.asarray(theta), -e, e)


@checked(H=Values(0, lo_open=True), eps=Values(0), sigma=Values(0, lo_open=True), theta=Values())
def huber_smoothed_hessian(
    theta: ArrayLike, *, H: ArrayLike, eps: ArrayLike, sigma: ArrayLike
) -> np.ndarray:
    """Exact second derivative of the Gaussian-smoothed Huber loss.

    ``L'' = H 1{|theta| < eps/H}``, so ``(L^sigma)''(theta) = H [Phi((eps/H - theta)/sigma) -
    Phi((-eps/H - theta)/sigma)]``. At ``theta = 0`` this equals Corollary 1's right side: the
    bound is attained.

    Parameters
    ----------
    theta : array_like
        The points.
    H : array_like
        ``H > 0``, the Lipschitz constant of ``grad L``.
    eps : array_like
        ``eps >= 0``, the bound on ``||grad L||``.
    sigma : array_like
        ``sigma > 0``, the smoothing's standard deviation.

    Returns
    -------
    numpy.ndarray
        ``(L^sigma)''(theta)``, at most :func:`cor1_rhs` and equal to it at ``theta = 0``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Corollary 1 and Appendix B.1.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import huber_smoothed_hessian
    >>> [round(h, 4) for h in huber_smoothed_hessian([0.0, 1.0], H=2.0, eps=1.0, sigma=0.5).tolist()]
    [1.3654, 0.3146]
    """
    broadcastable(theta=theta, H=H, eps=eps, sigma=sigma)
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
    from scipy.stats import norm  # lazily: 0.5-1.8 s of a start
    lo, hi = np.broadcast_arrays(lo, hi)
    across = 0.5 * (erf(hi / np.sqrt(2.0)) - erf(lo / np.sqrt(2.0)))
    right = norm.sf(lo) - norm.sf(hi)
    left = norm.cdf(hi) - norm.cdf(lo)
    return np.where(lo >= 1, right, np.where(hi <= -1, left, across))



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
    Lipschitz constant) and ``last_layer_scale`` (``||W^(L)||_2``).

    Parameters
    ----------
    weights : list of torch.Tensor
        ``W^(1), ..., W^(L)`` (``L >= 2``), each ``W^(j)`` with as many columns as ``W^(j-1)`` has
        rows (``x``'s length for ``W^(1)``).
    x : torch.Tensor
        The input, a vector.
    activation : {"relu", "gelu"}
        The activation ``s``.

    Returns
    -------
    dict of str to float
        ``hess_full``, ``hess_block``, ``rhs_contractant``, ``rhs_lipschitz``,
        ``last_layer_scale``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 1, eq. (2).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.activation_decay import thm1_terms
    >>> g = torch.Generator().manual_seed(0)
    >>> Ws = [torch.randn(3, 2, generator=g, dtype=torch.float64),
    ...       torch.randn(1, 3, generator=g, dtype=torch.float64)]
    >>> t = thm1_terms(Ws, torch.tensor([1.0, -0.5], dtype=torch.float64), activation="gelu")
    >>> round(t["hess_block"], 4), round(t["rhs_lipschitz"], 4)
    (0.2827, 2.1533)
    """
    Ws, xx = _thm1_inputs(weights, x, activation=activation)
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

    from torch.func import hessian

    H = hessian(loss)(theta0)
    nb = sum(sizes[:-1])
    full = torch.linalg.matrix_norm(H, 2).item()
    block = torch.linalg.matrix_norm(H[:nb, :nb], 2).item()
    lip = 1.0 if activation == "relu" else GELU_LIPSCHITZ
    factors = _thm1_factors(Ws, xx, s)  # the Jacobians once, for both right sides
    return {"last_layer_scale": torch.linalg.matrix_norm(Ws[-1], 2).item(),
            "hess_full": full, "hess_block": block,
            "rhs_contractant": _thm1_rhs(factors, 1.0), "rhs_lipschitz": _thm1_rhs(factors, lip)}


def _thm1_inputs(weights, x, *, activation: str) -> tuple[list[torch.Tensor], torch.Tensor]:
    """:func:`thm1_terms`' checks: the weights as real matrices that chain from ``x``."""
    if activation not in _THM1_ACTIVATIONS:
        raise InvalidArgument(f"activation must be one of {sorted(_THM1_ACTIVATIONS)} "
                              f"(got {activation!r})")
    if not isinstance(weights, list | tuple) or len(weights) < 2:
        raise InvalidArgument("weights must be a list of at least 2 matrices W^(1), ..., W^(L)")
    Ws = [real_tensor(f"weights[{i}]", w, 2) for i, w in enumerate(weights)]
    xx = real_tensor("x", x, 1)
    prev = xx.shape[0]
    for i, w in enumerate(Ws):
        if w.shape[1] != prev:
            after = "x's length" if i == 0 else f"weights[{i - 1}]'s rows"
            raise InvalidArgument(f"weights[{i}] must have {prev} columns to follow {after} (got "
                                  f"shape {tuple(w.shape)}; x has shape {tuple(xx.shape)})")
        prev = w.shape[0]
    return Ws, xx


def _thm1_factors(Ws: list[torch.Tensor], xx: torch.Tensor,
                  s) -> tuple[list[float], list[float], float]:
    """The norms Theorem 1's right side multiplies: ``||dh^(j)/dW^(j)||`` per hidden layer,
    ``||W^(l)||`` per hidden layer and ``||Hess_{h^(L-1)} L|| = ||W^(L)^T W^(L)||``."""
    from torch.func import jacrev

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
    return jac, wn, hz


def _thm1_rhs(factors: tuple[list[float], list[float], float], c: float) -> float:
    """Theorem 1's right side with each ``||W^(l)||`` times ``c`` (1: the paper's contractant
    activations; the activation's Lipschitz constant: the corrected reading)."""
    jac, wn, hz = factors
    total = 0.0
    for j, n_j in enumerate(jac):
        term = n_j
        for w_l in wn[j + 1:]:
            term = term * w_l * c
        total = total + term
    return total**2 * hz


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
    ``dh^(j)/dW^(j)`` are the direct ones, as in the proof.

    Parameters
    ----------
    weights : list of torch.Tensor
        ``W^(1), ..., W^(L)`` (``L >= 2``), each ``W^(j)`` with as many columns as ``W^(j-1)`` has
        rows (``x``'s length for ``W^(1)``).
    x : torch.Tensor
        The input, a vector.
    activation : {"relu", "gelu"}
        The activation ``s``.
    reading : {"block", "literal"}
        Which Hessian against which right side (above).

    Returns
    -------
    BoundSides
        The Hessian's spectral norm and the right side.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 1, eq. (2), and its proof.

    Examples
    --------
    The literal reading fails where the corrected one holds:

    >>> import torch
    >>> from boundbench.theory.activation_decay import thm1_sides
    >>> g = torch.Generator().manual_seed(0)
    >>> Ws = [torch.randn(3, 2, generator=g, dtype=torch.float64),
    ...       torch.randn(1, 3, generator=g, dtype=torch.float64)]
    >>> x = torch.tensor([1.0, -0.5], dtype=torch.float64)
    >>> for reading in ("literal", "block"):
    ...     s = thm1_sides(Ws, x, activation="relu", reading=reading)
    ...     print(reading, round(float(s.lhs), 4), round(float(s.rhs), 4))
    literal 3.0517 1.7279
    block 0.2034 1.7279
    """
    if reading not in THM1_READINGS:
        raise InvalidArgument(f"reading must be one of {THM1_READINGS} (got {reading!r})")
    t = thm1_terms(weights, x, activation=activation)
    if reading == "literal":
        return BoundSides(np.asarray(t["hess_full"]), np.asarray(t["rhs_contractant"]))
    return BoundSides(np.asarray(t["hess_block"]), np.asarray(t["rhs_lipschitz"]))
