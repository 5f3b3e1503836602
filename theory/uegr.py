"""UEGR (Sun et al.), Theorem 1: the rescaled Bernoulli-masked gradient.

Setting (eqs. 15-19): per-sample gradients ~ ``N(mu, sigma_g^2 I)``, a batch of ``|D|`` of them
averaged, ``g ~ N(mu, sigma_g^2/|D| I)``; an independent mask ``m_i ~ Ber(p_i)``; the update uses
``g_tilde = g * m / p``. Coordinates are independent, so ``Cov[g_tilde]`` is diagonal.

Inconsistencies: eq. (15) writes the unscaled mask ``g * m`` while eq. (17) and the theorem's
mean use the 1/p-rescaled one; ``d`` and ``|B|`` in the statement are undefined (the proof uses
``|D|`` and an undefined ``k``). The prose says the selective update "reduces the variance";
eq. (18) itself shows the rescaled estimator's variance is *at least* that of ``g``.
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import ArrayLike

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs import validate as v
from boundbench.framework.inputs import values
from boundbench.framework.inputs.validate import (
    Array,
    Bool,
    Float,
    Int,
    Rng,
    Seq,
    Tensor,
    Values,
    as_generator,
    checked,
)


@checked(p=Values(0.0, 1.0, lo_open=True))
def _p(p: ArrayLike) -> np.ndarray:
    return np.asarray(p)


@checked(s_norm=Array(min_size=0), alpha=Float(), beta=Float(0), flipped=Bool())
def keep_probability(s_norm, *, alpha: float, beta: float, flipped: bool):
    """UEGR eq. (9): ``p = 1/(1 + exp(2 beta (s~ - alpha)))`` as written (decreasing in the
    saliency s~), or the sign-flipped reading ``1/(1 + exp(-2 beta (s~ - alpha)))`` (increasing:
    what the prose's "update only the key parameters" asks for). NumPy arrays or torch tensors.

    Parameters
    ----------
    s_norm : array_like or torch.Tensor
        Normalized saliencies (:func:`normalized_saliency`).
    alpha : float
        The threshold.
    beta : float
        ``beta >= 0``, the sharpness.
    flipped : bool
        ``False``: eq. (9) as written; ``True``: the sign-flipped reading.

    Returns
    -------
    numpy.ndarray or torch.Tensor
        Keep probabilities in ``(0, 1)``, of ``s_norm``'s kind.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), eq. (9).

    Examples
    --------
    >>> import numpy as np
    >>> from boundbench.theory.uegr import keep_probability
    >>> s = np.array([0.0, 1.0])  # a dull and a salient parameter
    >>> [round(p, 4) for p in keep_probability(s, alpha=0.5, beta=2.0, flipped=False).tolist()]
    [0.8808, 0.1192]
    >>> [round(p, 4) for p in keep_probability(s, alpha=0.5, beta=2.0, flipped=True).tolist()]
    [0.1192, 0.8808]
    """
    if beta < 0:
        raise InvalidArgument(f"beta must be >= 0 (got {beta})")
    if isinstance(s_norm, torch.Tensor):
        z = 2.0 * beta * (s_norm - alpha)
        return torch.sigmoid(z if flipped else -z)
    from scipy.special import expit  # 1/(1 + e^-z) without overflow for any finite z

    z = 2.0 * beta * (np.asarray(s_norm, dtype=np.float64) - alpha)
    return expit(z if flipped else -z)


@checked(grads=Seq(Tensor()), model_axes=Int(0))
def normalized_saliency(grads: list[torch.Tensor], *, model_axes: int = 0) -> list[torch.Tensor]:
    """UEGR eqs. (7)-(8) as boundbench reads them, the one reading used everywhere (the
    :class:`~boundbench.methods.optimizers.SelectiveUpdate` optimizer and the
    ``uegr.mask-sign`` check): the saliency of a parameter entry is its squared *mini-batch*
    gradient (what an optimizer step can compute; eq. 7's per-sample Fisher sum would need
    per-sample gradients), divided by ``max - min`` over all parameters at once (eq. 8 as
    written); all zeros when every saliency is equal.

    ``model_axes``: leading axes of every gradient that index independent models (a batched
    trainer); the max and min are then taken per model.

    Parameters
    ----------
    grads : list of torch.Tensor
        One gradient per parameter tensor.
    model_axes : int, default 0
        Leading axes that index independent models.

    Returns
    -------
    list of torch.Tensor
        The normalized saliencies, shaped as ``grads``.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), eqs. (7)-(8).

    Examples
    --------
    >>> import torch
    >>> from boundbench.theory.uegr import normalized_saliency
    >>> [t.tolist() for t in normalized_saliency([torch.tensor([1.0, -2.0]), torch.tensor([3.0])])]
    [[0.125, 0.5], [1.125]]

    Squares 1, 4 and 9 over ``max - min = 8``: eq. (8) divides without subtracting the minimum.
    """
    sal = [g.detach().float().pow(2) for g in grads]
    if not sal:
        raise InvalidArgument("grads must hold at least one gradient tensor")
    if model_axes == 0:
        # on the device, no float() per tensor (a host sync each on a GPU); the span in
        # float64, as Python floats had it
        hi = torch.stack([t.max() for t in sal]).max().double()
        lo = torch.stack([t.min() for t in sal]).min().double()
        span = hi - lo
        ok = span > 0
        return [torch.where(ok, t / torch.where(ok, span, 1.0), 0.0).to(t.dtype) for t in sal]
    lead = sal[0].shape[:model_axes]
    if any(t.shape[:model_axes] != lead for t in sal):
        raise InvalidArgument(f"grads must share their {model_axes} leading model axes")
    hi_m = torch.stack([t.flatten(model_axes).amax(-1) for t in sal]).amax(0)
    lo_m = torch.stack([t.flatten(model_axes).amin(-1) for t in sal]).amin(0)
    span_m = hi_m - lo_m
    out = []
    for t in sal:
        s = span_m.reshape(*lead, *[1] * (t.dim() - model_axes))
        out.append(torch.where(s > 0, t / torch.where(s > 0, s, 1.0), 0.0))
    return out


@checked(grad_mean=Values())
def rescaled_mask_mean(*, grad_mean: ArrayLike, p: ArrayLike) -> np.ndarray:
    """Eq. (17): ``E[g * m / p] = mu``: the rescaled masked gradient is unbiased.

    Parameters
    ----------
    grad_mean : array_like
        ``mu``, the gradient's mean.
    p : array_like
        Keep probabilities in ``(0, 1]``, broadcast against ``grad_mean``.

    Returns
    -------
    numpy.ndarray
        ``mu`` broadcast to the common shape.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), Theorem 1, eq. (17).

    Examples
    --------
    >>> from boundbench.theory.uegr import rescaled_mask_mean
    >>> rescaled_mask_mean(grad_mean=[1.0, 2.0], p=0.5).tolist()
    [1.0, 2.0]
    """
    mu = np.asarray(grad_mean)
    pp = _p(p)
    values.broadcastable(grad_mean=mu, p=pp)
    return np.broadcast_to(mu, np.broadcast_shapes(mu.shape, pp.shape)).copy()


@checked(grad_mean=Values(), grad_var=Values(0))
def rescaled_mask_variance(
    *, grad_mean: ArrayLike, grad_var: ArrayLike, p: ArrayLike
) -> np.ndarray:
    """Eq. (18), exact per coordinate: ``Var[g_i m_i / p_i] = Var[g_i]/p_i + (1 - p_i) mu_i^2 / p_i``.

    ``grad_var`` is ``Var[g_i] = sigma_g^2 / |D|``. Both terms grow as ``p_i`` falls, so the
    ratio to ``Var[g_i]`` is >= 1 for every ``p_i <= 1``.

    Parameters
    ----------
    grad_mean : array_like
        ``mu``, the gradient's mean.
    grad_var : array_like
        ``Var[g_i] >= 0``.
    p : array_like
        Keep probabilities in ``(0, 1]``, broadcast against ``grad_mean``.

    Returns
    -------
    numpy.ndarray
        The variance of each rescaled coordinate.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), Theorem 1, eq. (18).

    Examples
    --------
    >>> from boundbench.theory.uegr import rescaled_mask_variance
    >>> rescaled_mask_variance(grad_mean=1.0, grad_var=0.1, p=[1.0, 0.5]).tolist()
    [0.1, 1.2]

    Masking half the time multiplies this coordinate's variance by 12, not less than 1.
    """
    mu = np.asarray(grad_mean)
    var = np.asarray(grad_var)
    pp = _p(p)
    values.broadcastable(grad_mean=mu, grad_var=var, p=pp)
    return var / pp + (1.0 - pp) * mu**2 / pp


@checked(grad_mean=Values(), grad_var=Values(0))
def unscaled_mask_variance(
    *, grad_mean: ArrayLike, grad_var: ArrayLike, p: ArrayLike
) -> np.ndarray:
    """Variance of eq. (15)'s unscaled ``g_i m_i``: ``p_i Var[g_i] + p_i (1 - p_i) mu_i^2``.

    Smaller than ``Var[g_i]`` when ``mu_i`` is small, but biased: ``E[g_i m_i] = p_i mu_i``.

    Parameters
    ----------
    grad_mean : array_like
        ``mu``, the gradient's mean.
    grad_var : array_like
        ``Var[g_i] >= 0``.
    p : array_like
        Keep probabilities in ``(0, 1]``, broadcast against ``grad_mean``.

    Returns
    -------
    numpy.ndarray
        The variance of each unscaled masked coordinate.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), eq. (15).

    Examples
    --------
    >>> from boundbench.theory.uegr import unscaled_mask_variance
    >>> [round(v, 4) for v in unscaled_mask_variance(grad_mean=1.0, grad_var=0.1, p=[1.0, 0.5]).tolist()]
    [0.1, 0.3]
    """
    mu = np.asarray(grad_mean)
    var = np.asarray(grad_var)
    pp = _p(p)
    values.broadcastable(grad_mean=mu, grad_var=var, p=pp)
    return pp * var + pp * (1.0 - pp) * mu**2


@checked(
    grad_mean=Values(min_ndim=1), sigma_g=Values(0), batch_size=Values(1, integer=True),
    k=Float(0, lo_open=True))
def thm1_frobenius_rhs(
    *,
    grad_mean: ArrayLike,
    sigma_g: ArrayLike,
    batch_size: ArrayLike,
    p: ArrayLike,
    k: float = 1.0,
) -> np.ndarray:
    """Eq. (19): ``||Cov[g_tilde]||_F <= || sigma_g^2 k I/(p_hat |D|) + (1-p_hat)/p_hat diag(mu)^2 ||_F``.

    ``p_hat = min p``; vectors on the last axis. ``k`` is undefined in the paper; ``k = 1`` is
    the tightest reading that the proof supports (each diagonal entry of eq. 18 is largest at
    ``p_hat``). The theorem's statement adds a further undefined factor ``d`` and the learning
    rate ``eta^2``; this is the proof's form, for the gradient itself.

    Parameters
    ----------
    grad_mean : array_like
        ``mu``, vectors on the last axis.
    sigma_g : array_like
        ``sigma_g >= 0``, the per-sample gradient noise.
    batch_size : array_like
        ``|D|``, an integer ``>= 1``.
    p : array_like
        Keep probabilities in ``(0, 1]``, broadcast against ``grad_mean``.
    k : float, default 1.0
        The paper's undefined constant, ``k > 0``.

    Returns
    -------
    numpy.ndarray
        The bound on ``||Cov[g_tilde]||_F``.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), Theorem 1, eq. (19), and its proof.

    Examples
    --------
    >>> from boundbench.theory.uegr import sample_masked_gradients, thm1_frobenius_rhs
    >>> import numpy as np
    >>> kw = dict(grad_mean=[1.0, 0.0], sigma_g=1.0, batch_size=10, p=[0.5, 1.0])
    >>> round(float(thm1_frobenius_rhs(**kw)), 4)
    1.2166
    >>> g, masked = sample_masked_gradients(**kw, n_draws=100_000, rng=0)
    >>> round(float(np.linalg.norm(np.cov(masked.T))), 2)  # the measured left side
    1.21
    """
    mu = np.asarray(grad_mean)
    sg = np.asarray(sigma_g)
    nb = np.asarray(batch_size)
    kk = np.asarray(k)
    pp = _p(p)
    values.broadcastable(grad_mean=mu, p=pp)  # p_hat is the min over mu's coordinates
    values.broadcastable(**{"grad_mean without its last axis": mu[..., 0], "sigma_g": sg,
                            "batch_size": nb})
    p_hat = np.min(pp, axis=-1, keepdims=True)
    diag = sg[..., None] ** 2 * kk / (p_hat * nb[..., None]) + (1.0 - p_hat) / p_hat * mu**2
    return np.linalg.norm(diag, axis=-1)


@checked(n_draws=v.draws(2), rng=Rng(), rescale=Bool())
@checked(grad_mean=Values(), sigma_g=Float(0), batch_size=Values(1, integer=True))
def sample_masked_gradients(
    *,
    grad_mean: ArrayLike,
    sigma_g: float,
    batch_size: int,
    p: ArrayLike,
    n_draws: int,
    rng: np.random.Generator | int,
    rescale: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``(g, g * m [/ p])`` pairs under Theorem 1's model, shape ``(n_draws, d)`` each.

    The batch mean of ``|D|`` Gaussian per-sample gradients is drawn directly as
    ``N(mu, sigma_g^2/|D|)``.

    Parameters
    ----------
    grad_mean : array_like
        ``mu``, the gradients' mean, of any shape.
    sigma_g : float
        ``sigma_g >= 0``, the per-sample gradient noise.
    batch_size : int
        ``|D| >= 1``.
    p : array_like
        Keep probabilities in ``(0, 1]``, broadcast against ``grad_mean``.
    n_draws : int
        Draws, at least 2.
    rng : numpy.random.Generator or int
        The generator, or a seed for one.
    rescale : bool, default True
        Divide the masked gradient by ``p`` (eq. 17) or not (eq. 15).

    Returns
    -------
    g, masked : numpy.ndarray
        ``(n_draws, *grad_mean.shape)`` each.

    References
    ----------
    Sun et al., *Unified Enhancement of the Generalization and Robustness of Language Models
    via Bi-Stage Optimization* (UEGR), Theorem 1's model, eqs. (15)-(17).

    Examples
    --------
    >>> from boundbench.theory.uegr import sample_masked_gradients
    >>> g, masked = sample_masked_gradients(grad_mean=[1.0, 0.0], sigma_g=1.0, batch_size=10,
    ...                                     p=[0.5, 1.0], n_draws=100_000, rng=0)
    >>> round(float(masked[:, 0].mean()), 2), round(float(masked[:, 0].var()), 2)  # eqs. 17, 18
    (1.0, 1.2)
    """
    rng = as_generator(rng)
    mu = np.asarray(grad_mean)
    values.broadcastable(grad_mean=mu, p=_p(p))
    pp = np.broadcast_to(_p(p), mu.shape)
    sg = float(np.asarray(sigma_g))
    nb = int(np.asarray(batch_size))
    if n_draws < 2:
        raise InvalidArgument(f"n_draws must be >= 2 (got {n_draws})")
    if n_draws * mu.size > 2 * 10**8:  # two float64 arrays of this size
        raise InvalidArgument(f"n_draws must be <= {2 * 10**8 // mu.size:,} for {mu.size} "
                              f"coordinates (got {n_draws:,}: {2 * 8 * n_draws * mu.size / 2**30:.3g}"
                              " GiB of draws); draw in several calls")
    g = mu + rng.standard_normal((n_draws, mu.size)).reshape(n_draws, *mu.shape) * sg / np.sqrt(nb)
    m = rng.random(g.shape) < pp
    masked = g * m / pp if rescale else g * m
    return g, masked
