"""Strategies for Fu et al.'s leave-one-out instances: the quadratic LOO problems of Thm 2.2
and the exterior pairs of Lemma A.2.4."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.draws import orthonormalize
from boundbench.testing._ranges import SEEDS, floats_in, ints_in


@dataclass(frozen=True)
class QuadraticLOOProblem:
    """Theorem 2.2's setting (Fu et al.): per-sample quadratics ``f_i(w) = 1/2 (w - w*)^T A_i
    (w - w*)`` with ``A_i = mu I + (beta - mu) u_i u_i^T`` (``u_i`` unit vectors, ``beta = 1``),
    so every ``f_i`` and every mean of them is ``mu``-strongly convex and ``beta``-smooth with
    the common minimizer ``w* = 0``; GD starts at ``w0``, ``||w0 - w*|| = dist0``.
    :meth:`loo_distances` runs GD with ``eta = 1/beta`` on ``S`` and on every ``S^i``.

    Parameters
    ----------
    U : numpy.ndarray
        The samples' unit directions, ``(n, d)``.
    w0 : numpy.ndarray
        The start.
    mu, beta : float
        The constants of the per-sample quadratics.
    dist0 : float
        ``||w0 - w*||``.
    seed : int
        The draw's seed.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(quadratic_loo_problems(n=(2, 3), d=(2, 2)), lambda s: True).U.shape
    (2, 2)
    """

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
    ``dist0`` on a log scale, a random start direction (``beta = 1``).

    Parameters
    ----------
    n, d : tuple of int
        Ranges of the number of samples and of the dimension.
    mu_over_beta : tuple of float
        Range of the condition ratio.
    dist0 : tuple of float
        Range of ``||w0 - w*||``, drawn on a log scale.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QuadraticLOOProblem

    References
    ----------
    Fu et al., Theorem 2.2.

    Examples
    --------
    >>> from hypothesis import find
    >>> p = find(quadratic_loo_problems(n=(2, 3), d=(2, 2)), lambda s: True)
    >>> p.beta
    1.0
    """
    n_s, d_s, k_s = ints_in(n, "n", 2), ints_in(d, "d", 1), floats_in(mu_over_beta, "mu_over_beta")
    if not 0 < mu_over_beta[0] <= mu_over_beta[1] < 1:
        raise InvalidArgument(f"mu_over_beta must be a range within (0, 1) (got {mu_over_beta})")
    if not 0 < dist0[0] <= dist0[1]:
        raise InvalidArgument(f"dist0 must be a range with 0 < low <= high (got {dist0})")
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
    at ``angle`` to each other (Lemma A.2.1's domain).

    Parameters
    ----------
    x, y : numpy.ndarray
        The two points, ``(d,)``.
    r : float
        The radius both lie outside of.
    angle : float
        The angle between them.
    seed : int
        The draw's seed.

    Examples
    --------
    >>> from hypothesis import find
    >>> find(exterior_pairs(d=(3, 3)), lambda s: True).x.shape
    (3,)
    """

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
    ``r`` on a log scale. In ``d = 1`` the angle is 0 or pi.

    Parameters
    ----------
    d : tuple of int
        Range of the dimension.
    r : tuple of float
        Range of the ball's radius, drawn on a log scale.
    excess : tuple of float
        Range of each point's relative excess over ``r``.
    angle : tuple of float
        Range of the angle between the points, drawn on a log scale.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of ExteriorPair

    Examples
    --------
    >>> import numpy as np
    >>> from hypothesis import find
    >>> p = find(exterior_pairs(d=(2, 2)), lambda s: True)
    >>> bool(np.linalg.norm(p.x) >= p.r * (1 - 1e-12))
    True
    """
    d_s = ints_in(d, "d", 1)
    for name, rng_ in (("r", r), ("angle", angle)):
        if not 0 < rng_[0] <= rng_[1]:
            raise InvalidArgument(f"{name} must be a range with 0 < low <= high (got {rng_})")
    if angle[1] > np.pi:
        raise InvalidArgument(f"angle must be a range within (0, pi] (got {angle})")
    r_s = st.floats(np.log10(r[0]), np.log10(r[1])).map(lambda e: float(10.0**e))
    a_s = st.floats(np.log(angle[0]), np.log(angle[1])).map(lambda e: float(min(np.exp(e), np.pi)))
    e_s = floats_in(excess, "excess")
    if excess[0] < 0:
        raise InvalidArgument(f"excess must be a range with 0 <= low (got {excess})")

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
