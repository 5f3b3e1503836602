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

from boundbench.framework.draws import orthonormalize, power
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


SMOOTH_KINDS = ("quadratic", "singular", "indefinite", "logistic")


@dataclass(frozen=True)
class SmoothLoss:
    """``n`` per-sample losses ``f_i`` on ``R^d`` with known constants, and ``points`` to
    evaluate them at (``(k, d)``, in the ball ``||w|| <= radius``).

    ``beta``: every ``f_i`` is ``beta``-smooth (``betas``: each one's own constant, ``(n,)``);
    ``mu``: every ``f_i`` is ``mu``-strongly convex (0 when only convex, negative for an
    indefinite quadratic: its lowest Hessian eigenvalue). ``kind``: one of :data:`SMOOTH_KINDS`.
    ``value`` and ``grad`` take ``w`` as ``(d,)`` (every sample at one point) or ``(n, d)``."""

    kind: str
    n: int
    d: int
    beta: float
    mu: float
    radius: float
    seed: int
    problems: object = field(repr=False)
    points: np.ndarray = field(repr=False)

    @property
    def betas(self) -> np.ndarray:
        return np.asarray(self.problems.beta)  # type: ignore[attr-defined]

    @property
    def convex(self) -> bool:
        return self.kind != "indefinite"

    def value(self, w: np.ndarray) -> np.ndarray:
        """Every sample's loss at ``w`` (``(d,)`` or ``(n, d)``): ``(n,)``."""
        return self.problems.value(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]

    def grad(self, w: np.ndarray) -> np.ndarray:
        """Every sample's gradient at ``w`` (``(d,)`` or ``(n, d)``): ``(n, d)``."""
        return self.problems.grad(np.broadcast_to(w, (self.n, self.d)))  # type: ignore[attr-defined]


def smooth_losses(*, kind: str | tuple[str, ...] = "quadratic", n: tuple[int, int] = (2, 50),
                  d: tuple[int, int] = (1, 8), radius: tuple[float, float] = (0.5, 10.0),
                  points: int = 2) -> st.SearchStrategy[SmoothLoss]:
    """``n`` per-sample losses of one ``kind`` (a tuple: one of several, drawn), each with its
    exact constants:

    - ``"quadratic"``: ``1/2 (w - c_i)^T A_i (w - c_i)``, eigenvalues over three decades, convex
      (Theorem 2.2's setting, the lemmas' convex case); ``beta``, ``mu`` exact;
    - ``"singular"``: the same with some eigenvalues 0 (convex, ``mu = 0``);
    - ``"indefinite"``: the same with some eigenvalues negated (beta-smooth, not convex);
    - ``"logistic"``: logistic regression on one Gaussian sample each,
      ``beta = ||x||^2 / 4``, ``mu = 0``.

    ``points``: how many evaluation points, uniform in the ball of radius ``radius``."""
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    if not kinds or any(k not in SMOOTH_KINDS for k in kinds):
        raise ValueError(f"kind must be one of {SMOOTH_KINDS} or a tuple of them (got {kind!r})")
    if isinstance(points, bool) or not isinstance(points, int) or points < 1:
        raise ValueError(f"points must be an integer >= 1 (got {points!r})")
    n_s, d_s, r_s = _ints(n, "n", 1), _ints(d, "d", 1), _floats(radius, "radius")

    @st.composite
    def draw(draw_) -> SmoothLoss:
        kk = draw_(st.sampled_from(kinds))
        nn, dd, rad, seed = draw_(n_s), draw_(d_s), draw_(r_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        if kk == "logistic":
            prob: object = random_logistic(rng, nn, 1, dd)  # one sample per loss
            beta, mu = float(prob.beta.max()), 0.0  # type: ignore[attr-defined]
        else:
            prob = random_quadratics(rng, nn, dd, convex=kk != "indefinite",
                                     singular=kk == "singular")
            eig = np.linalg.eigvalsh(prob.A)
            beta = float(np.abs(eig).max())
            mu = 0.0 if kk == "singular" else float(eig.min())
        u = rng.standard_normal((points, dd))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        pts = u * rad * power(rng.random((points, 1)), 1.0 / dd)
        return SmoothLoss(kk, nn, dd, beta, mu, rad, seed, prob, pts)

    return draw()


@dataclass(frozen=True)
class QuadraticLOOProblem:
    """Theorem 2.2's setting (Fu et al.): per-sample quadratics ``f_i(w) = 1/2 (w - w*)^T A_i
    (w - w*)`` with ``A_i = mu I + (beta - mu) u_i u_i^T`` (``u_i`` unit vectors, ``beta = 1``),
    so every ``f_i`` and every mean of them is ``mu``-strongly convex and ``beta``-smooth with
    the common minimizer ``w* = 0``; GD starts at ``w0``, ``||w0 - w*|| = dist0``.
    :meth:`loo_distances` runs GD with ``eta = 1/beta`` on ``S`` and on every ``S^i``."""

    U: np.ndarray = field(repr=False)  # (n, d) unit vectors
    w0: np.ndarray = field(repr=False)
    mu: float
    beta: float
    dist0: float
    seed: int

    @property
    def n(self) -> int:
        return self.U.shape[0]

    @property
    def d(self) -> int:
        return self.U.shape[1]

    def __repr__(self) -> str:
        return (f"QuadraticLOOProblem(n={self.n}, d={self.d}, mu={self.mu!r}, beta={self.beta!r}, "
                f"dist0={self.dist0!r}, seed={self.seed})")

    def loo_distances(self, steps: int | None = None) -> np.ndarray:
        """``sup_t ||w_t(S^i) - w_t(S)||`` for every ``i`` (``(n,)``), over ``steps`` GD steps
        (default ``ceil(40 beta / mu)``: both runs have converged to ``w*`` by ``e^-40``)."""
        T = steps or int(np.ceil(40 * self.beta / self.mu))
        eye = np.eye(self.d)
        outer = np.einsum("ni,nj->nij", self.U, self.U)
        S = outer.sum(0)
        A_full = self.mu * eye + (self.beta - self.mu) * S / self.n
        A_loo = self.mu * eye + (self.beta - self.mu) * (S - outer) / (self.n - 1)  # (n, d, d)
        M = eye - np.concatenate([A_full[None], A_loo]) / self.beta  # GD maps, eta = 1/beta
        w = np.broadcast_to(self.w0, (self.n + 1, self.d)).copy()
        sup = np.zeros(self.n)
        for _ in range(T):
            w = np.einsum("kij,kj->ki", M, w)
            sup = np.maximum(sup, np.linalg.norm(w[1:] - w[:1], axis=1))
        return sup


def quadratic_loo_problems(*, n: tuple[int, int] = (2, 12), d: tuple[int, int] = (1, 4),
                           mu_over_beta: tuple[float, float] = (0.05, 0.95),
                           dist0: tuple[float, float] = (1e-4, 10.0)
                           ) -> st.SearchStrategy[QuadraticLOOProblem]:
    """Theorem 2.2's instances: ``n`` random unit directions in ``R^d``, ``mu/beta`` uniform,
    ``dist0`` on a log scale, a random start direction (``beta = 1``)."""
    n_s, d_s, k_s = _ints(n, "n", 2), _ints(d, "d", 1), _floats(mu_over_beta, "mu_over_beta")
    if not 0 < mu_over_beta[0] <= mu_over_beta[1] < 1:
        raise ValueError(f"mu_over_beta must be a range within (0, 1) (got {mu_over_beta})")
    if not 0 < dist0[0] <= dist0[1]:
        raise ValueError(f"dist0 must be a range with 0 < low <= high (got {dist0})")
    r_s = st.floats(np.log10(dist0[0]), np.log10(dist0[1])).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> QuadraticLOOProblem:
        nn, dd, kap, r, seed = draw_(n_s), draw_(d_s), draw_(k_s), draw_(r_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        U = rng.standard_normal((nn, dd))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        w0 = rng.standard_normal(dd)
        w0 *= r / np.linalg.norm(w0)
        return QuadraticLOOProblem(U, w0, float(kap), 1.0, r, seed)

    return draw()


@dataclass(frozen=True)
class ExteriorPair:
    """Two points ``x, y`` of ``R^d`` outside the ball of radius ``r`` (``||x||, ||y|| >= r``),
    at ``angle`` to each other (Lemma A.2.1's domain)."""

    x: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    r: float
    angle: float
    seed: int

    def __repr__(self) -> str:
        return (f"ExteriorPair(d={self.x.size}, r={self.r!r}, |x|/r="
                f"{float(np.linalg.norm(self.x)) / self.r:.6g}, |y|/r="
                f"{float(np.linalg.norm(self.y)) / self.r:.6g}, angle={self.angle!r}, "
                f"seed={self.seed})")


def exterior_pairs(*, d: tuple[int, int] = (1, 30), r: tuple[float, float] = (1e-3, 1e3),
                   excess: tuple[float, float] = (0.0, 10.0),
                   angle: tuple[float, float] = (1e-8, float(np.pi))
                   ) -> st.SearchStrategy[ExteriorPair]:
    """Pairs of points with norms ``r (1 + excess)`` (each its own excess) at an angle drawn
    on a log scale (small angles are where normalization's Lipschitz constant is reached);
    ``r`` on a log scale. In ``d = 1`` the angle is 0 or pi."""
    d_s = _ints(d, "d", 1)
    for name, rng_ in (("r", r), ("angle", angle)):
        if not 0 < rng_[0] <= rng_[1]:
            raise ValueError(f"{name} must be a range with 0 < low <= high (got {rng_})")
    if angle[1] > np.pi:
        raise ValueError(f"angle must be a range within (0, pi] (got {angle})")
    r_s = st.floats(np.log10(r[0]), np.log10(r[1])).map(lambda e: float(10.0**e))
    a_s = st.floats(np.log(angle[0]), np.log(angle[1])).map(lambda e: float(min(np.exp(e), np.pi)))
    e_s = _floats(excess, "excess")
    if excess[0] < 0:
        raise ValueError(f"excess must be a range with 0 <= low (got {excess})")

    @st.composite
    def draw(draw_) -> ExteriorPair:
        dd, rr, ang, ex, ey, seed = (draw_(d_s), draw_(r_s), draw_(a_s), draw_(e_s), draw_(e_s),
                                     draw_(_SEEDS))
        rng = np.random.default_rng(seed)
        if dd == 1:
            ang = 0.0 if ang < np.pi / 2 else float(np.pi)
            ux, uy = np.ones(1), np.array([np.cos(ang)])
        else:
            q = orthonormalize(rng.standard_normal((dd, 2)))  # no kernel-chosen signs
            ux, uy = q[:, 0], np.cos(ang) * q[:, 0] + np.sin(ang) * q[:, 1]
        return ExteriorPair(ux * rr * (1 + ex), uy * rr * (1 + ey), rr, ang, seed)

    return draw()


@dataclass(frozen=True)
class HuberLoss:
    """The 1-D Huber-type loss of activation decay's Corollary 1 with its constants: gradient
    ``clip(H theta, -eps, eps)`` (Hessian bound ``H``, gradient bound ``eps``), a smoothing scale
    ``sigma`` and a point ``theta``. It attains Corollary 1's bound at ``theta = 0``."""

    H: float
    eps: float
    sigma: float
    theta: float


def huber_losses(*, H: tuple[float, float] = (1e-2, 1e2), eps: tuple[float, float] = (1e-3, 1e2),
                 sigma: tuple[float, float] = (1e-3, 1e2),
                 theta: tuple[float, float] = (-50.0, 50.0)) -> st.SearchStrategy[HuberLoss]:
    """``H``, ``eps`` and ``sigma`` on log scales, ``theta`` uniform (shrinks toward 0, where
    the bound is attained)."""
    logs = []
    for name, rng_ in (("H", H), ("eps", eps), ("sigma", sigma)):
        if not 0 < rng_[0] <= rng_[1]:
            raise ValueError(f"{name} must be a range with 0 < low <= high (got {rng_})")
        logs.append(st.floats(np.log10(rng_[0]), np.log10(rng_[1])).map(lambda e: float(10.0**e)))
    return st.builds(HuberLoss, *logs, _floats(theta, "theta"))


ACTIVATIONS = ("relu", "gelu")


@dataclass(frozen=True)
class MLPInstance:
    """A bias-free MLP ``h^(j) = s(W^(j) h^(j-1))``, ``h^(0) = x``, output ``W^(L) h^(L-1)``
    (activation decay's Theorem 1 setting): ``weights`` ``W^(1..L)``, an input ``x``, the
    ``activation``, each weight's spectral norm (``weight_norms``) and the activation's
    Lipschitz constant (``lipschitz``: 1 for ReLU, 1.1289 for GELU)."""

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
    reading), a Gaussian input. Width 1 gives scalar chains, where the block bound binds."""
    dp_s, w_s = _ints(depth, "depth", 2), _ints(width, "width", 1)
    acts = (activation,) if isinstance(activation, str) else tuple(activation)
    if not acts or any(a not in ACTIVATIONS for a in acts):
        raise ValueError(f"activation must be one of {ACTIVATIONS} or a tuple of them "
                         f"(got {activation!r})")
    for name, rng_ in (("weight_norm", weight_norm), ("last_norm", last_norm)):
        if not 0 < rng_[0] <= rng_[1]:
            raise ValueError(f"{name} must be a range with 0 < low <= high (got {rng_})")
    wn_s = st.floats(np.log10(weight_norm[0]), np.log10(weight_norm[1])).map(lambda e: 10.0**e)
    ln_s = st.floats(np.log10(last_norm[0]), np.log10(last_norm[1])).map(lambda e: 10.0**e)

    @st.composite
    def draw(draw_) -> MLPInstance:
        from boundbench.theory.activation_decay import GELU_LIPSCHITZ

        L = draw_(dp_s)
        widths = [draw_(w_s) for _ in range(L + 1)]
        norms = [draw_(wn_s) for _ in range(L - 1)] + [draw_(ln_s)]
        act, seed = draw_(st.sampled_from(acts)), draw_(_SEEDS)
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
    """UEGR Theorem 1's setting: per-sample gradients ``N(grad_mean, sigma_g^2 I)`` averaged
    over a batch of ``batch_size``, so the batch gradient's variance is ``grad_var =
    sigma_g^2 / batch_size`` in every coordinate, and keep probabilities ``p`` in (0, 1]."""

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
    ``sigma_g`` uniform, ``batch_size`` and keep probabilities uniform in ``p``."""
    d_s, b_s = _ints(dim, "dim", 1), _ints(batch_size, "batch_size", 1)
    if not 0 < p[0] <= p[1] <= 1:
        raise ValueError(f"p must be a range with 0 < low <= high <= 1 (got {p})")
    if sigma_g[0] < 0:
        raise ValueError(f"sigma_g must be a range with 0 <= low (got {sigma_g})")
    sg_s = _floats(sigma_g, "sigma_g")
    sc_s = st.floats(-2.0, 1.0).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> MaskedGradient:
        dd, sg, nb, sc, seed = draw_(d_s), draw_(sg_s), draw_(b_s), draw_(sc_s), draw_(_SEEDS)
        rng = np.random.default_rng(seed)
        return MaskedGradient(rng.standard_normal(dd) * sc, sg, nb, rng.uniform(p[0], p[1], dd),
                              seed)

    return draw()
