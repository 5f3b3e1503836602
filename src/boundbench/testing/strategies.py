"""Hypothesis strategies for the instance families the four papers use. Each draws a typed,
frozen instance that carries its known constants (margin, feature bound, smoothness, ...), built
from a few drawn numbers and a seed, so hypothesis shrinks it toward small instances: fewer
points, fewer dimensions, seed 0.

Ranges are ``(low, high)`` tuples, inclusive.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from boundbench.synthetic.data import make_separable
from boundbench.theory.problems import random_logistic, random_quadratics

_SEEDS = st.integers(0, 2**32 - 1)


def _floats(rng: tuple[float, float], name: str) -> st.SearchStrategy[float]:
    lo, hi = float(rng[0]), float(rng[1])
    if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
        raise ValueError(f"{name} must be a (low, high) range with finite low <= high (got {rng})")
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _ints(rng: tuple[int, int], name: str, minimum: int) -> st.SearchStrategy[int]:
    lo, hi = rng
    if not (isinstance(lo, int) and isinstance(hi, int) and minimum <= lo <= hi):
        raise ValueError(f"{name} must be a (low, high) range of integers with {minimum} <= low "
                         f"<= high (got {rng})")
    return st.integers(lo, hi)


def _repr_array(a: np.ndarray) -> str:
    return f"array(shape={a.shape})"


@dataclass(frozen=True)
class SeparableDataset:
    """Linearly separable binary data: ``X (n, d)``, labels ``y`` in {-1, +1}, every
    ``||x_i|| <= bound``, and a hard-margin SVM margin of exactly ``margin`` (or at least, with
    ``exact_margin=False``)."""

    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    margin: float
    bound: float
    exact_margin: bool
    seed: int

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def d(self) -> int:
        return self.X.shape[1]

    def __repr__(self) -> str:
        return (f"SeparableDataset(n={self.n}, d={self.d}, margin={self.margin!r}, "
                f"bound={self.bound!r}, exact_margin={self.exact_margin}, seed={self.seed})")


def separable_datasets(*, n: tuple[int, int] = (10, 200), d: tuple[int, int] = (2, 10),
                       margin: tuple[float, float] = (0.05, 1.0),
                       bound: tuple[float, float] = (1.0, 5.0),
                       balance: tuple[float, float] = (0.5, 0.5),
                       exact_margin: bool = True) -> st.SearchStrategy[SeparableDataset]:
    """Separable datasets of Fu et al.'s construction (:func:`~boundbench.synthetic.data.
    make_separable`): ``n`` points in ``R^d`` within the ball of radius ``bound``, separated by
    ``margin`` (draws with ``margin >= bound`` are rejected, as no such data exist), a fraction
    ``balance`` of positives. ``exact_margin`` needs ``n >= 2 d + 2``."""
    n_s, d_s = _ints(n, "n", 4), _ints(d, "d", 1)
    m_s, b_s, bal_s = _floats(margin, "margin"), _floats(bound, "bound"), _floats(balance, "balance")
    if margin[0] <= 0:
        raise ValueError(f"margin must be > 0 (got range {margin})")

    @st.composite
    def draw(draw_) -> SeparableDataset:
        dd = draw_(d_s)
        nn = draw_(n_s.filter(lambda v: not exact_margin or v >= 2 * dd + 2))
        b = draw_(b_s)
        m = draw_(m_s.filter(lambda v: v < b))
        frac = draw_(bal_s)
        pos = int(round(frac * nn))
        valid = dd <= pos <= nn - dd if exact_margin else 0 < pos < nn
        if not valid:  # a class too small for this n: the balanced draw instead
            frac = 0.5
        seed = draw_(_SEEDS)
        data = make_separable(n_datasets=1, n=nn, d=dd, margin=m, bound=b, balance=frac,
                              seed=seed, exact_margin=exact_margin)
        return SeparableDataset(data.X[0], data.y[0], float(m), float(b), exact_margin, seed)

    return draw()


@dataclass(frozen=True)
class SoftMarginProblem:
    """A soft-margin SVM problem ``lam ||v||^2 + (1/n) sum hinge``: a separable dataset (its
    margin and bound known) and the regularization ``lam``."""

    data: SeparableDataset
    lam: float


def soft_margin_problems(*, lam: tuple[float, float] = (1e-3, 10.0), **data_ranges
                         ) -> st.SearchStrategy[SoftMarginProblem]:
    """A dataset of :func:`separable_datasets` (same keyword ranges) and ``lam``, drawn on a
    log scale."""
    lo, hi = lam
    if not 0 < lo <= hi:
        raise ValueError(f"lam must be a range with 0 < low <= high (got {lam})")
    lam_s = st.floats(np.log10(lo), np.log10(hi)).map(lambda e: float(10.0**e))
    return st.builds(SoftMarginProblem, separable_datasets(**data_ranges), lam_s)


@dataclass(frozen=True)
class SmoothLoss:
    """Per-sample losses ``f_i`` on ``R^d`` with known constants: ``beta`` (smoothness), ``mu``
    (strong convexity; 0 when only convex), ``lipschitz`` (of the gradient's size on the ball
    ``||w|| <= radius``), and their gradients. ``kind``: ``"quadratic"`` (Thm 2.2's setting) or
    ``"logistic"``."""

    kind: str
    n: int
    d: int
    beta: float
    mu: float
    radius: float
    seed: int
    problems: object = field(repr=False)

    def value(self, w: np.ndarray) -> np.ndarray:
        """Every sample's loss at ``w (d,)``: ``(n,)``."""
        return self.problems.value(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Every sample's gradient at ``w (d,)``: ``(n, d)``."""
        return self.problems.grad(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]


def smooth_losses(*, kind: str = "quadratic", n: tuple[int, int] = (2, 50),
                  d: tuple[int, int] = (1, 8), radius: tuple[float, float] = (0.5, 10.0)
                  ) -> st.SearchStrategy[SmoothLoss]:
    """``n`` per-sample losses of one ``kind``: ``"quadratic"`` (convex, eigenvalues over three
    decades; ``beta``, ``mu`` exact) or ``"logistic"`` (``beta = lambda_max(X^T X/n)/4`` per
    sample, ``mu = 0``)."""
    if kind not in ("quadratic", "logistic"):
        raise ValueError(f"kind must be 'quadratic' or 'logistic' (got {kind!r})")
    n_s, d_s, r_s = _ints(n, "n", 1), _ints(d, "d", 1), _floats(radius, "radius")

    @st.composite
    def draw(draw_) -> SmoothLoss:
        nn, dd, rad, seed = draw_(n_s), draw_(d_s), draw_(r_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        if kind == "quadratic":
            q = random_quadratics(rng, nn, dd)
            eig = np.linalg.eigvalsh(q.A)
            return SmoothLoss(kind, nn, dd, float(eig.max()), float(eig.min()), rad, seed, q)
        lg = random_logistic(rng, nn, 1, dd)  # one sample per loss
        return SmoothLoss(kind, nn, dd, float(lg.beta.max()), 0.0, rad, seed, lg)

    return draw()


@dataclass(frozen=True)
class LogitBatch:
    """Logits ``(B, c)``, labels in ``[0, c)`` and a smoothing scale ``sigma > 0`` (activation
    decay, Theorems 2-3)."""

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
    ``sigma`` (log scale)."""
    b_s, c_s = _ints(batch, "batch", 1), _ints(classes, "classes", 2)
    for name, r in (("scale", scale), ("sigma", sigma)):
        if not 0 < r[0] <= r[1]:
            raise ValueError(f"{name} must be a range with 0 < low <= high (got {r})")
    sc_s = st.floats(np.log10(scale[0]), np.log10(scale[1])).map(lambda e: float(10.0**e))
    sg_s = st.floats(np.log10(sigma[0]), np.log10(sigma[1])).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> LogitBatch:
        bb, cc, sc, sg, seed = draw_(b_s), draw_(c_s), draw_(sc_s), draw_(sg_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        return LogitBatch(rng.standard_normal((bb, cc)) * sc, rng.integers(0, cc, bb), sg, seed)

    return draw()


@dataclass(frozen=True)
class MaskedGradient:
    """A gradient's per-coordinate mean and variance and keep probabilities ``p`` in (0, 1]
    (UEGR Theorem 1's setting)."""

    grad_mean: np.ndarray = field(repr=False)
    grad_var: np.ndarray = field(repr=False)
    p: np.ndarray = field(repr=False)
    seed: int

    def __repr__(self) -> str:
        return (f"MaskedGradient(dim={self.grad_mean.size}, min_p={float(self.p.min()):.4g}, "
                f"seed={self.seed})")


def masked_gradients(*, dim: tuple[int, int] = (1, 64),
                     p: tuple[float, float] = (0.01, 1.0)) -> st.SearchStrategy[MaskedGradient]:
    """Means ``N(0, 1)``, variances ``|N(0, 1)|`` and keep probabilities uniform in ``p``."""
    d_s = _ints(dim, "dim", 1)
    if not 0 < p[0] <= p[1] <= 1:
        raise ValueError(f"p must be a range with 0 < low <= high <= 1 (got {p})")

    @st.composite
    def draw(draw_) -> MaskedGradient:
        dd, seed = draw_(d_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        return MaskedGradient(rng.standard_normal(dd), np.abs(rng.standard_normal(dd)),
                              rng.uniform(p[0], p[1], dd), seed)

    return draw()
