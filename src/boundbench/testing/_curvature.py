"""Strategies for the curvature papers' instances: Huber losses, MLPs, logit batches (JACHESS)
and masked gradients (UEGR)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from boundbench.errors import InvalidArgument
from boundbench.testing._ranges import SEEDS, floats_in, ints_in


@dataclass(frozen=True)
class HuberLoss:
    """The 1-D Huber-type loss of activation decay's Corollary 1 with its constants: gradient
    ``clip(H theta, -eps, eps)`` (Hessian bound ``H``, gradient bound ``eps``), a smoothing scale
    ``sigma`` and a point ``theta``. It attains Corollary 1's bound at ``theta = 0``.

    Parameters
    ----------
    H, eps, sigma : float
        The constants of Corollary 1 and the smoothing scale.
    theta : float
        The evaluation point.

    Examples
    --------
    >>> HuberLoss(H=1.0, eps=0.5, sigma=0.1, theta=0.0).H
    1.0
    """

    H: float
    eps: float
    sigma: float
    theta: float


def huber_losses(*, H: tuple[float, float] = (1e-2, 1e2), eps: tuple[float, float] = (1e-3, 1e2),
                 sigma: tuple[float, float] = (1e-3, 1e2),
                 theta: tuple[float, float] = (-50.0, 50.0)) -> st.SearchStrategy[HuberLoss]:
    """``H``, ``eps`` and ``sigma`` on log scales, ``theta`` uniform (shrinks toward 0, where
    the bound is attained).

    Parameters
    ----------
    H, eps, sigma : tuple of float
        Ranges of the Huber constant, the threshold and the smoothing scale (log scales).
    theta : tuple of float
        Range of the evaluation point.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of HuberLoss

    References
    ----------
    Activation Decay by Loss Smoothing to Enhance Generalization, Corollary 1.

    Examples
    --------
    >>> from hypothesis import find
    >>> h = find(huber_losses(), lambda s: True)
    >>> h.sigma > 0
    True
    """
    logs = []
    for name, rng_ in (("H", H), ("eps", eps), ("sigma", sigma)):
        if not 0 < rng_[0] <= rng_[1]:
            raise InvalidArgument(f"{name} must be a range with 0 < low <= high (got {rng_})")
        logs.append(st.floats(np.log10(rng_[0]), np.log10(rng_[1])).map(lambda e: float(10.0**e)))
    return st.builds(HuberLoss, *logs, floats_in(theta, "theta"))


ACTIVATIONS = ("relu", "gelu")


@dataclass(frozen=True)
class MLPInstance:
    """A bias-free MLP ``h^(j) = s(W^(j) h^(j-1))``, ``h^(0) = x``, output ``W^(L) h^(L-1)``
    (activation decay's Theorem 1 setting): ``weights`` ``W^(1..L)``, an input ``x``, the
    ``activation``, each weight's spectral norm (``weight_norms``) and the activation's
    Lipschitz constant (``lipschitz``: 1 for ReLU, 1.1289 for GELU).

    Parameters
    ----------
    weights : list of numpy.ndarray
        ``W^(1), ..., W^(L)``.
    x : numpy.ndarray
        The input.
    activation : str
        ``"relu"`` or ``"gelu"``.
    weight_norms : list of float
        Each layer's spectral norm.
    lipschitz : float
        The activation's Lipschitz constant.
    seed : int
        The draw's seed.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(mlps(depth=(2, 2), width=(3, 3)), lambda s: True).activation
    'relu'
    """

    weights: tuple[np.ndarray, ...] = field(repr=False)
    x: np.ndarray = field(repr=False)
    activation: str
    weight_norms: tuple[float, ...]
    lipschitz: float
    seed: int

    @property
    def widths(self) -> tuple[int, ...]:
        return (self.x.size, *(w.shape[0] for w in self.weights))

    def __repr__(self) -> str:
        norms = ", ".join(f"{v:.4g}" for v in self.weight_norms)
        return (f"MLPInstance(widths={self.widths}, activation={self.activation!r}, "
                f"weight_norms=({norms}), seed={self.seed})")


def mlps(*, depth: tuple[int, int] = (2, 4), width: tuple[int, int] = (1, 6),
         activation: str | tuple[str, ...] = ACTIVATIONS,
         weight_norm: tuple[float, float] = (0.1, 3.0),
         last_norm: tuple[float, float] = (1e-2, 10.0)) -> st.SearchStrategy[MLPInstance]:
    """Small MLPs: ``depth`` weight matrices (``L``), every width (input included) in
    ``width``, Gaussian weights rescaled to a spectral norm drawn on a log scale from
    ``weight_norm`` (the last layer's from ``last_norm``: its scale decides Theorem 1's literal
    reading), a Gaussian input. Width 1 gives scalar chains, where the block bound binds.

    Parameters
    ----------
    depth, width : tuple of int
        Ranges of the number of weight matrices and of every width.
    activation : str or tuple of str
        ``"relu"`` or ``"gelu"`` (a tuple: one drawn).
    weight_norm, last_norm : tuple of float
        Ranges of the hidden and the last layers' spectral norms (log scales).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of MLPInstance

    Examples
    --------
    >>> from hypothesis import find
    >>> m = find(mlps(depth=(2, 2), width=(3, 3)), lambda s: True)
    >>> len(m.weights)
    2
    """
    dp_s, w_s = ints_in(depth, "depth", 2), ints_in(width, "width", 1)
    acts = (activation,) if isinstance(activation, str) else tuple(activation)
    if not acts or any(a not in ACTIVATIONS for a in acts):
        raise InvalidArgument(f"activation must be one of {ACTIVATIONS} or a tuple of them "
                              f"(got {activation!r})")
    for name, rng_ in (("weight_norm", weight_norm), ("last_norm", last_norm)):
        if not 0 < rng_[0] <= rng_[1]:
            raise InvalidArgument(f"{name} must be a range with 0 < low <= high (got {rng_})")
    wn_s = st.floats(np.log10(weight_norm[0]), np.log10(weight_norm[1])).map(lambda e: 10.0**e)
    ln_s = st.floats(np.log10(last_norm[0]), np.log10(last_norm[1])).map(lambda e: 10.0**e)

    @st.composite
    def draw(draw_) -> MLPInstance:
        from boundbench.theory.activation_decay import GELU_LIPSCHITZ

        L = draw_(dp_s)
        widths = [draw_(w_s) for _ in range(L + 1)]
        norms = [draw_(wn_s) for _ in range(L - 1)] + [draw_(ln_s)]
        act, seed = draw_(st.sampled_from(acts)), draw_(SEEDS)
        rng = np.random.default_rng(seed)
        Ws = []
        for i, target in enumerate(norms):
            W = rng.standard_normal((widths[i + 1], widths[i]))
            W *= target / max(np.linalg.norm(W, 2), 1e-300)
            Ws.append(W)
        lip = 1.0 if act == "relu" else GELU_LIPSCHITZ
        return MLPInstance(tuple(Ws), rng.standard_normal(widths[0]), act,
                           tuple(float(v) for v in norms), lip, seed)

    return draw()


@dataclass(frozen=True)
class LogitBatch:
    """Logits ``(B, c)``, labels in ``[0, c)`` and a smoothing scale ``sigma > 0`` (activation
    decay, Theorems 2-3).

    Parameters
    ----------
    logits : numpy.ndarray
        ``(B, c)``.
    labels : numpy.ndarray
        In ``[0, c)``, ``(B,)``.
    sigma : float
        The smoothing scale.
    seed : int
        The draw's seed.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(logit_batches(batch=(4, 4), classes=(3, 3)), lambda s: True).labels.shape
    (4,)
    """

    logits: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    sigma: float
    seed: int

    def __repr__(self) -> str:
        return (f"LogitBatch(batch={self.logits.shape[0]}, classes={self.logits.shape[1]}, "
                f"scale={float(np.abs(self.logits).max()):.4g}, sigma={self.sigma!r}, "
                f"seed={self.seed})")


def logit_batches(*, batch: tuple[int, int] = (1, 32), classes: tuple[int, int] = (2, 10),
                  scale: tuple[float, float] = (1e-2, 30.0),
                  sigma: tuple[float, float] = (1e-3, 10.0)) -> st.SearchStrategy[LogitBatch]:
    """Gaussian logits of standard deviation ``scale`` (log scale), uniform labels, and
    ``sigma`` (log scale).

    Parameters
    ----------
    batch, classes : tuple of int
        Ranges of the batch size and of the number of classes.
    scale, sigma : tuple of float
        Ranges of the logits' standard deviation and of the smoothing scale (log scales).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of LogitBatch

    Examples
    --------
    >>> from hypothesis import find
    >>> b = find(logit_batches(batch=(4, 4), classes=(3, 3)), lambda s: True)
    >>> b.logits.shape
    (4, 3)
    """
    b_s, c_s = ints_in(batch, "batch", 1), ints_in(classes, "classes", 2)
    for name, r in (("scale", scale), ("sigma", sigma)):
        if not 0 < r[0] <= r[1]:
            raise InvalidArgument(f"{name} must be a range with 0 < low <= high (got {r})")
    sc_s = st.floats(np.log10(scale[0]), np.log10(scale[1])).map(lambda e: float(10.0**e))
    sg_s = st.floats(np.log10(sigma[0]), np.log10(sigma[1])).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> LogitBatch:
        bb, cc, sc, sg, seed = draw_(b_s), draw_(c_s), draw_(sc_s), draw_(sg_s), draw_(SEEDS)
        rng = np.random.default_rng(seed)
        return LogitBatch(rng.standard_normal((bb, cc)) * sc, rng.integers(0, cc, bb), sg, seed)

    return draw()


@dataclass(frozen=True)
class MaskedGradient:
    """UEGR Theorem 1's setting: per-sample gradients ``N(grad_mean, sigma_g^2 I)`` averaged
    over a batch of ``batch_size``, so the batch gradient's variance is ``grad_var =
    sigma_g^2 / batch_size`` in every coordinate, and keep probabilities ``p`` in (0, 1].

    Parameters
    ----------
    grad_mean : numpy.ndarray
        The mean gradient.
    sigma_g : float
        The per-sample noise.
    batch_size : int
        The batch size.
    p : numpy.ndarray
        The keep probabilities, one per coordinate.
    seed : int
        The draw's seed.

    Examples
    --------
    >>> from hypothesis import find
    >>> g = find(masked_gradients(dim=(5, 5)), lambda s: True)
    >>> bool(((0 < g.p) & (g.p <= 1)).all())
    True
    """

    grad_mean: np.ndarray = field(repr=False)
    sigma_g: float
    batch_size: int
    p: np.ndarray = field(repr=False)
    seed: int

    @property
    def grad_var(self) -> float:
        return self.sigma_g**2 / self.batch_size

    def __repr__(self) -> str:
        return (f"MaskedGradient(dim={self.grad_mean.size}, sigma_g={self.sigma_g!r}, "
                f"batch_size={self.batch_size}, min_p={float(self.p.min()):.4g}, "
                f"seed={self.seed})")


def masked_gradients(*, dim: tuple[int, int] = (1, 64), p: tuple[float, float] = (0.01, 1.0),
                     sigma_g: tuple[float, float] = (0.0, 10.0),
                     batch_size: tuple[int, int] = (1, 256)) -> st.SearchStrategy[MaskedGradient]:
    """Means ``N(0, 1)`` per coordinate (times a scale drawn on a log scale in [1e-2, 10]),
    ``sigma_g`` uniform, ``batch_size`` and keep probabilities uniform in ``p``.

    Parameters
    ----------
    dim : tuple of int
        Range of the gradient's dimension.
    p : tuple of float
        Range of the keep probability.
    sigma_g : tuple of float
        Range of the per-sample noise.
    batch_size : tuple of int
        Range of the batch size.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of MaskedGradient

    References
    ----------
    Sun et al., Unified Enhancement of Generalization and Robustness of LMs, Theorem 1.

    Examples
    --------
    >>> from hypothesis import find
    >>> g = find(masked_gradients(dim=(5, 5)), lambda s: True)
    >>> g.grad_mean.shape
    (5,)
    """
    d_s, b_s = ints_in(dim, "dim", 1), ints_in(batch_size, "batch_size", 1)
    if not 0 < p[0] <= p[1] <= 1:
        raise InvalidArgument(f"p must be a range with 0 < low <= high <= 1 (got {p})")
    if sigma_g[0] < 0:
        raise InvalidArgument(f"sigma_g must be a range with 0 <= low (got {sigma_g})")
    sg_s = floats_in(sigma_g, "sigma_g")
    sc_s = st.floats(-2.0, 1.0).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> MaskedGradient:
        dd, sg, nb, sc, seed = draw_(d_s), draw_(sg_s), draw_(b_s), draw_(sc_s), draw_(SEEDS)
        rng = np.random.default_rng(seed)
        return MaskedGradient(rng.standard_normal(dd) * sc, sg, nb, rng.uniform(p[0], p[1], dd),
                              seed)

    return draw()
