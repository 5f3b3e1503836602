"""Strategies for Fu et al.'s instance families: separable datasets, soft-margin problems, smooth
losses, the quadratic LOO problems of Thm 2.2 and exterior pairs (Lemma A.2.4)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from boundbench.framework.draws import orthonormalize, power
from boundbench.synthetic.data import make_separable
from boundbench.testing._ranges import SEEDS, floats_in, ints_in
from boundbench.theory.problems import random_logistic, random_quadratics


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
    n_s, d_s = ints_in(n, "n", 4), ints_in(d, "d", 1)
    m_s, b_s, bal_s = floats_in(margin, "margin"), floats_in(bound, "bound"), floats_in(balance, "balance")
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
        seed = draw_(SEEDS)
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
    n_s, d_s, r_s = ints_in(n, "n", 1), ints_in(d, "d", 1), floats_in(radius, "radius")

    @st.composite
    def draw(draw_) -> SmoothLoss:
        kk = draw_(st.sampled_from(kinds))
        nn, dd, rad, seed = draw_(n_s), draw_(d_s), draw_(r_s), draw_(SEEDS)
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
    n_s, d_s, k_s = ints_in(n, "n", 2), ints_in(d, "d", 1), floats_in(mu_over_beta, "mu_over_beta")
    if not 0 < mu_over_beta[0] <= mu_over_beta[1] < 1:
        raise ValueError(f"mu_over_beta must be a range within (0, 1) (got {mu_over_beta})")
    if not 0 < dist0[0] <= dist0[1]:
        raise ValueError(f"dist0 must be a range with 0 < low <= high (got {dist0})")
    r_s = st.floats(np.log10(dist0[0]), np.log10(dist0[1])).map(lambda e: float(10.0**e))

    @st.composite
    def draw(draw_) -> QuadraticLOOProblem:
        nn, dd, kap, r, seed = draw_(n_s), draw_(d_s), draw_(k_s), draw_(r_s), draw_(SEEDS)
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
    d_s = ints_in(d, "d", 1)
    for name, rng_ in (("r", r), ("angle", angle)):
        if not 0 < rng_[0] <= rng_[1]:
            raise ValueError(f"{name} must be a range with 0 < low <= high (got {rng_})")
    if angle[1] > np.pi:
        raise ValueError(f"angle must be a range within (0, pi] (got {angle})")
    r_s = st.floats(np.log10(r[0]), np.log10(r[1])).map(lambda e: float(10.0**e))
    a_s = st.floats(np.log(angle[0]), np.log(angle[1])).map(lambda e: float(min(np.exp(e), np.pi)))
    e_s = floats_in(excess, "excess")
    if excess[0] < 0:
        raise ValueError(f"excess must be a range with 0 <= low (got {excess})")

    @st.composite
    def draw(draw_) -> ExteriorPair:
        dd, rr, ang, ex, ey, seed = (draw_(d_s), draw_(r_s), draw_(a_s), draw_(e_s), draw_(e_s),
                                     draw_(SEEDS))
        rng = np.random.default_rng(seed)
        if dd == 1:
            ang = 0.0 if ang < np.pi / 2 else float(np.pi)
            ux, uy = np.ones(1), np.array([np.cos(ang)])
        else:
            q = orthonormalize(rng.standard_normal((dd, 2)))  # no kernel-chosen signs
            ux, uy = q[:, 0], np.cos(ang) * q[:, 0] + np.sin(ang) * q[:, 1]
        return ExteriorPair(ux * rr * (1 + ex), uy * rr * (1 + ey), rr, ang, seed)

    return draw()
