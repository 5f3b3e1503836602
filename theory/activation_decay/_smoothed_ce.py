"""Activation Decay's smoothed cross-entropy: Theorem 2 with its lower bound, Theorem 3 (a Taylor
form), the exact and Monte Carlo smoothed CE they should be compared with (the facade
:mod:`boundbench.theory.activation_decay` re-exports them)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_softmax, softmax

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs import validate as v
from boundbench.framework.inputs import values
from boundbench.framework.inputs.validate import (
    Array,
    Float,
    Int,
    Rng,
    Seq,
    Values,
    as_generator,
    checked,
)


@checked(sigma=Values(0, lo_open=True), h=Values(min_ndim=1))
def logit_noise_scale(h: ArrayLike, *, sigma: ArrayLike) -> np.ndarray:
    """``s = sigma ||h||``: the std of each logit when the last layer is smoothed by sigma.

    Parameters
    ----------
    h : array_like
        Penultimate features, vectors on the last axis.
    sigma : array_like
        ``sigma > 0``, the last layer's smoothing.

    Returns
    -------
    numpy.ndarray
        ``sigma ||h||``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2 (the variance of ``Delta h``).

    Examples
    --------
    >>> from boundbench.theory.activation_decay import logit_noise_scale
    >>> float(logit_noise_scale([3.0, 4.0], sigma=0.1))
    0.5
    """
    return np.asarray(sigma) * np.linalg.norm(np.asarray(h), axis=-1)


@checked(logits=Array())
@checked(logits=Values(min_ndim=1))
def cross_entropy(logits: ArrayLike, y: ArrayLike) -> np.ndarray:
    """``-log softmax(logits)[y]``, stable; ``y`` holds integer class indices.

    Parameters
    ----------
    logits : array_like
        The logits, classes on the last axis.
    y : array_like
        Integer class indices, broadcast against the leading axes of ``logits``.

    Returns
    -------
    numpy.ndarray
        The loss, one value per leading index.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2 (its lower bound).

    Examples
    --------
    >>> from boundbench.theory.activation_decay import cross_entropy
    >>> round(float(cross_entropy([2.0, 0.0], 0)), 4)
    0.1269
    """
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

    Parameters
    ----------
    logits : array_like
        The logits, classes on the last axis.
    y : array_like
        Integer class indices, broadcast against the leading axes of ``logits``.
    s : array_like
        ``s >= 0``, the logit-space noise scale ``sigma ||h||`` (:func:`logit_noise_scale`).

    Returns
    -------
    numpy.ndarray
        ``CE(logits, y) + s^2 / 2``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2, eq. (4), and Appendix B.3.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import (
    ...     cross_entropy, smoothed_ce_binary, thm2_rhs, thm3_taylor)
    >>> z, s = [2.0, 0.0], 1.0
    >>> lo, exact = cross_entropy(z, 0), smoothed_ce_binary(2.0, s=s)
    >>> [round(float(v), 4) for v in (lo, thm3_taylor(z, 0, s=s), exact, thm2_rhs(z, 0, s=s))]
    [0.1269, 0.2319, 0.2412, 0.6269]

    Theorem 2 holds (0.2412 <= 0.6269); Theorem 3's Taylor form falls below the exact value here.
    """
    return cross_entropy(logits, y) + np.asarray(s) ** 2 / 2.0


@checked(logits=Array())
@checked(logits=Values(min_ndim=1), s=Values(0))
def thm3_taylor(logits: ArrayLike, y: ArrayLike, *, s: ArrayLike) -> np.ndarray:
    """Theorem 3 (B.4): second-order Taylor form ``CE + s^2/2 * sum_i p_i (1 - p_i)``.

    ``p = softmax(W h)``; ``sum_i p_i (1 - p_i) = 1 - ||p||^2``. Not a bound in either direction
    (the paper says "not an upper bound"; it also under-estimates for confident samples). Typo
    in the proof: "the trace of p p^T is 1" should read ``tr diag(p) = 1``, ``tr p p^T = ||p||^2``.

    Parameters
    ----------
    logits : array_like
        The logits, classes on the last axis.
    y : array_like
        Integer class indices, broadcast against the leading axes of ``logits``.
    s : array_like
        ``s >= 0``, the logit-space noise scale ``sigma ||h||`` (:func:`logit_noise_scale`).

    Returns
    -------
    numpy.ndarray
        ``CE + s^2/2 (1 - ||softmax(logits)||^2)``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 3 and Appendix B.4.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import (
    ...     cross_entropy, smoothed_ce_binary, thm2_rhs, thm3_taylor)
    >>> z, s = [2.0, 0.0], 1.0
    >>> lo, exact = cross_entropy(z, 0), smoothed_ce_binary(2.0, s=s)
    >>> [round(float(v), 4) for v in (lo, thm3_taylor(z, 0, s=s), exact, thm2_rhs(z, 0, s=s))]
    [0.1269, 0.2319, 0.2412, 0.6269]

    Theorem 2 holds (0.2412 <= 0.6269); Theorem 3's Taylor form falls below the exact value here.
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

    Parameters
    ----------
    margin : array_like
        ``z_y - z_other``, the true class's logit margin.
    s : array_like
        ``s >= 0``, the logit-space noise scale ``sigma ||h||`` (:func:`logit_noise_scale`).
    n_nodes : int, default 300
        Gauss-Hermite nodes, at least 2.

    Returns
    -------
    numpy.ndarray
        ``E softplus(-margin + sqrt(2) s Z)``.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2 (the left side it bounds).

    Examples
    --------
    >>> from boundbench.theory.activation_decay import smoothed_ce_binary
    >>> round(float(smoothed_ce_binary(2.0, s=1.0)), 4)
    0.2412
    """
    m = np.asarray(margin)
    ss = np.asarray(s)
    if n_nodes < 2:
        raise InvalidArgument(f"n_nodes must be >= 2 (got {n_nodes})")
    x, w = np.polynomial.hermite.hermgauss(n_nodes)
    # E f(mu + tau Z) = pi^(-1/2) sum_k w_k f(mu + tau sqrt(2) x_k), with tau = sqrt(2) s
    arg = -m[..., None] + 2.0 * ss[..., None] * x
    return np.sum(w * np.logaddexp(0.0, arg), axis=-1) / np.sqrt(np.pi)


def _values(f: Callable[[np.ndarray], np.ndarray], noise: np.ndarray) -> np.ndarray:
    """``f(noise)`` as finite float values with one row per draw, or an error naming ``f``
    (a float returned ended in an AttributeError, a NaN in a NaN mean: issue 65)."""
    try:
        out = np.asarray(f(noise), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument(f"f must return numbers, one row per draw (got an error: {exc})"
                        ) from None
    if out.ndim == 0 or out.shape[0] != noise.shape[0]:
        raise InvalidArgument(f"f must return one row per draw: {noise.shape[0]} rows for noise of "
                              f"shape {noise.shape} (got shape {out.shape})")
    if not np.all(np.isfinite(out)):
        raise InvalidArgument(f"f returned {int(np.sum(~np.isfinite(out)))} non-finite values for "
                              f"noise of shape {noise.shape}")
    return out


@checked(noise_shape=Seq(Int(1)), n_samples=v.draws(4), rng=Rng(), batch=Int(1))
def antithetic_mean(
    f: Callable[[np.ndarray], np.ndarray],
    noise_shape: tuple[int, ...],
    *,
    n_samples: int,
    rng: np.random.Generator | int,
    batch: int = 4096,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo ``E f(N)`` for ``N ~ N(0, I)`` of ``noise_shape``: ``(mean, standard error)``.

    ``f`` maps a batch of noise, shape ``(k, *noise_shape)``, to values ``(k, *out)``. Antithetic
    pairs ``(N, -N)`` cancel the odd part of ``f``; the standard error is over pairs.

    Parameters
    ----------
    f : callable
        Noise ``(k, *noise_shape)`` to values ``(k, *out)``.
    noise_shape : tuple of int
        The shape of one draw.
    n_samples : int
        Draws in all, even and at least 4.
    rng : numpy.random.Generator or int
        The generator, or a seed for one.
    batch : int, default 4096
        Pairs drawn at once.

    Returns
    -------
    mean, standard_error : numpy.ndarray
        Of shape ``out``.

    Examples
    --------
    >>> from boundbench.theory.activation_decay import antithetic_mean
    >>> mean, se = antithetic_mean(lambda n: n[:, 0] ** 2, (1,), n_samples=10_000, rng=0)
    >>> round(float(mean), 2)  # E Z^2 = 1
    0.99
    """
    rng = as_generator(rng)
    if n_samples < 4 or n_samples % 2:
        raise InvalidArgument(f"n_samples must be an even number >= 4 (got {n_samples})")
    n = n_samples // 2
    total = total_sq = 0.0
    done = 0
    while done < n:
        k = min(batch, n - done)
        noise = rng.standard_normal((k, *noise_shape))
        pair = 0.5 * (_values(f, noise) + _values(f, -noise))
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
    rng: np.random.Generator | int,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo smoothed CE in any number of classes, in logit space: ``(mean, s.e.)``.

    Adds ``xi ~ N(0, s^2 I_c)`` to the logits; equivalent to smoothing the last layer (module
    docstring). For the weight-space statement itself use :func:`smoothed_ce_weight_space`.

    Parameters
    ----------
    logits : array_like
        The logits, classes on the last axis.
    y : array_like
        Integer class indices, broadcast against the leading axes of ``logits``.
    s : array_like
        ``s >= 0``, the logit-space noise scale ``sigma ||h||`` (:func:`logit_noise_scale`).
    n_samples : int
        Draws, even and at least 4.
    rng : numpy.random.Generator or int
        The generator, or a seed for one.

    Returns
    -------
    mean, standard_error : numpy.ndarray
        One value per leading index.

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2 (its left side, in logit space).

    Examples
    --------
    >>> from boundbench.theory.activation_decay import smoothed_ce_monte_carlo
    >>> mean, se = smoothed_ce_monte_carlo([2.0, 0.0], 0, s=1.0, n_samples=20_000, rng=0)
    >>> round(float(mean), 2), bool(se < 0.01)  # the exact value is 0.2412
    (0.24, True)
    """
    rng = as_generator(rng)
    z = np.asarray(logits)
    yy = values.labels("y", y, z.shape[-1])
    ss = np.asarray(s)
    try:
        np.broadcast_shapes(z.shape[:-1], yy.shape, ss.shape)
    except ValueError:
        raise InvalidArgument(f"logits (..., classes), y and s must broadcast over the leading axes "
                              f"(got logits {z.shape}, y {yy.shape}, s {ss.shape})") from None
    z, yy, ss = np.broadcast_arrays(z, yy[..., None], ss[..., None])
    yy, ss = yy[..., 0], ss[..., 0]
    return antithetic_mean(lambda xi: cross_entropy(z + xi * ss[..., None], yy), z.shape,
                           n_samples=n_samples, rng=rng)


@checked(n_samples=v.draws(4), rng=Rng())
@checked(W=Values(), h=Values(), sigma=Float(0, lo_open=True))
def smoothed_ce_weight_space(
    W: ArrayLike,
    h: ArrayLike,
    y: int,
    *,
    sigma: float,
    n_samples: int,
    rng: np.random.Generator | int,
) -> tuple[float, float]:
    """Monte Carlo ``E_Delta CE((W + Delta) h, y)``, ``Delta ~ N(0, sigma^2 I_{c x d})``:
    the smoothed loss exactly as Theorem 2 states it. Returns ``(mean, s.e.)``.

    Parameters
    ----------
    W : array_like
        The last layer, ``(c, d)``.
    h : array_like
        The features, ``(d,)``.
    y : int
        The class.
    sigma : float
        ``sigma > 0``, the smoothing of ``W``.
    n_samples : int
        Draws, even and at least 4.
    rng : numpy.random.Generator or int
        The generator, or a seed for one.

    Returns
    -------
    mean, standard_error : float

    References
    ----------
    Anonymous, *Activation Decay by Loss Smoothing to Enhance Generalization*,
    Theorem 2, eq. (4) (its left side as stated).

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.theory.activation_decay import smoothed_ce_weight_space
    >>> mean, se = smoothed_ce_weight_space(np.eye(2), np.array([2.0, 0.0]), 0, sigma=0.5,
    ...                                     n_samples=20_000, rng=0)
    >>> round(mean, 2), bool(se < 0.01)  # s = 0.5 * ||h|| = 1: the logit-space value
    (0.24, True)
    """
    rng = as_generator(rng)
    WW = np.asarray(W)
    hh = np.asarray(h)
    sg = float(np.asarray(sigma))
    if WW.ndim != 2 or hh.shape != (WW.shape[1],):
        raise InvalidArgument(f"W must be (c, d) and h (d,) (got {WW.shape} and {hh.shape})")
    yy = values.labels("y", np.asarray(y), WW.shape[0])
    mean, se = antithetic_mean(lambda dl: cross_entropy((WW + sg * dl) @ hh, yy), WW.shape,
                               n_samples=n_samples, rng=rng, batch=max(64, 2**20 // WW.size))
    return float(mean), float(se)
