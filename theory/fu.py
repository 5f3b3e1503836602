"""Fu, So & Collier, *A Stability Analysis of Fine-Tuning a Pre-Trained Model*.

Right sides of the theorems and both sides of the lemmas, as numpy-broadcasting functions.
Notation follows the paper: head ``w = [v, b]`` on augmented features ``[x, -1]``, so the
classifier is ``sign(v^T x - b)``; ``B`` bounds ``||x_i||``; ``gamma`` is the hard-margin SVM
margin ``1 / ||v_hat||``; ``n`` the sample count; ``lam`` the soft-margin weight.

The theorems with "some constants C, lambda, nu" (2.4, 2.5, 3.1) cannot be falsified as a
whole; their explicit pieces can, and those are what this module gives.

Names, in every theory module: the paper's label, then what the function returns.
``<label>_sides`` returns both sides, a :class:`~boundbench.framework.verdicts.BoundSides`,
computed from your own arrays (pass it to :func:`~boundbench.framework.verdicts.bound_verdict`);
``<label>_rhs`` returns the right side, to compare with a left side you measured;
``<label>_term`` / ``_factor`` / ``_rate`` the explicit piece of a theorem whose constants the
paper leaves unspecified. ``boundbench claims --functions`` maps claim ids to these functions.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from boundbench.framework.validate import Array, Values, checked
from boundbench.framework.values import broadcastable
from boundbench.framework.verdicts import BoundSides


def _thm22_denominator(mu: np.ndarray, beta: np.ndarray, n: np.ndarray) -> np.ndarray:
    if np.any(mu >= beta):
        raise ValueError("mu must be < beta (Theorem 2.2 needs mu*I <= Hessian <= beta*I, "
                         "and mu = beta makes (1 - mu/beta)^(-1/4) infinite)")
    # (1 - x)^(-1/4) - 1 as expm1(-log1p(-x)/4): exact for tiny mu/beta, where the plain form
    # rounds to 0 and the bound to inf (mu = 1e-16: 2.5e-17 n, not 0)
    return n * np.expm1(-0.25 * np.log1p(-mu / beta))


@checked(
    lipschitz=Values(0, lo_open=True), beta=Values(0, lo_open=True), mu=Values(0, lo_open=True),
    dist0=Values(0), n=Values(2, integer=True))
def thm22_main_rhs(
    *, lipschitz: ArrayLike, beta: ArrayLike, mu: ArrayLike, dist0: ArrayLike, n: ArrayLike
) -> np.ndarray:
    """Theorem 2.2, main-text form, eq. (3): LOO stability of full fine-tuning by GD.

    ``E_S ||A(S^i) - A(S)|| <= sqrt(2 L) ||w0 - w*|| / beta / (n ((1 - mu/beta)^(-1/4) - 1))``

    Assumptions: every per-sample loss is non-negative, L-Lipschitz, beta-smooth, replaced by
    its second-order Taylor expansion at a common zero-loss minimizer ``w*`` with
    ``mu I <= Hessian``; full-batch GD with ``eta = 1/beta`` from ``w0``.

    Inconsistency: the appendix proof (A.1) derives a different expression,
    :func:`thm22_appendix_rhs`, with the square root over ``L ||w0 - w*|| / beta``. The two
    agree only when ``||w0 - w*|| = beta``; their ratio is ``sqrt(||w0 - w*|| / beta)``. Both are
    provided; the checks report both. The proof also replaces ``n - 1`` by ``n``. For a
    quadratic, ``L`` is only a Lipschitz constant on the ball GD visits, e.g.
    ``L = beta ||w0 - w*||``.
    """
    L = np.asarray(lipschitz)
    b = np.asarray(beta)
    m = np.asarray(mu)
    d = np.asarray(dist0)
    nn = np.asarray(n)
    return np.sqrt(2.0 * L) * d / b / _thm22_denominator(m, b, nn)


@checked(
    lipschitz=Values(0, lo_open=True), beta=Values(0, lo_open=True), mu=Values(0, lo_open=True),
    dist0=Values(0), n=Values(2, integer=True))
def thm22_appendix_rhs(
    *, lipschitz: ArrayLike, beta: ArrayLike, mu: ArrayLike, dist0: ArrayLike, n: ArrayLike
) -> np.ndarray:
    """Theorem 2.2, the form the appendix proof (A.1) derives.

    ``E_S ||A(S^i) - A(S)|| <= sqrt(2 L ||w0 - w*|| / beta) / (n ((1 - mu/beta)^(-1/4) - 1))``

    The proof bounds ``||w_T - w_T^i||`` for every T by ``sum_t sqrt(2/beta)/n sqrt(f(w_t, z_i))``
    with ``f(w_t, z_i) <= L (1 - mu/beta)^(t/2) ||w0 - w*||``. Same assumptions as
    :func:`thm22_main_rhs`, which states a different expression (see there).
    """
    L = np.asarray(lipschitz)
    b = np.asarray(beta)
    m = np.asarray(mu)
    d = np.asarray(dist0)
    nn = np.asarray(n)
    return np.sqrt(2.0 * L * d / b) / _thm22_denominator(m, b, nn)


@checked(
    lam=Values(0, lo_open=True), n=Values(2, integer=True), B=Values(0, lo_open=True),
    gamma=Values(0, lo_open=True))
def lemma_a25_rhs(*, lam: ArrayLike, n: ArrayLike, B: ArrayLike, gamma: ArrayLike) -> np.ndarray:
    """Lemma A.2.5: bound on the soft-margin SVM's leave-one-out distance ``||w_S^i - w_S||``.

    ``max{ sqrt((2/(lam n)) (1 + B/gamma)), (B + sqrt(B^2 + 8 n lam (1 + B/gamma))) / (2 n lam) }``

    for ``L_S(v, b) = lam ||v||^2 + (1/n) sum_i hinge_i`` (``L_{S^i}`` with ``1/(n-1)``).

    Inconsistencies, kept as the paper writes them: ``gamma`` is the *hard*-margin margin of S
    while the solutions are soft-margin ones; the proof uses ``n ~ n - 1``; it calls
    ``lam ||v||^2`` 2*lam-strongly convex in ``(v, b)`` although ``b`` is not penalized.
    """
    lm = np.asarray(lam)
    nn = np.asarray(n)
    bb = np.asarray(B)
    g = np.asarray(gamma)
    k = 1.0 + bb / g
    first = np.sqrt(2.0 / (lm * nn) * k)
    second = (bb + np.sqrt(bb**2 + 8.0 * nn * lm * k)) / (2.0 * nn * lm)
    return np.maximum(first, second)


@checked(r=Values(0, lo_open=True))
def thm24_second_term(
    *, r: ArrayLike, lam: ArrayLike, n: ArrayLike, B: ArrayLike, gamma: ArrayLike
) -> np.ndarray:
    """Theorem 2.4, eq. (6), second term: ``nu * lemma_a25_rhs`` with ``nu = 2/r`` (Lemma A.2.1).

    ``r`` is a lower bound on the norms of the SVM solutions being normalized. The first term,
    ``C log log t / log t``, has an unspecified constant; see :func:`thm24_direction_rate`.
    """
    nu = 2.0 / np.asarray(r)
    return nu * lemma_a25_rhs(lam=lam, n=n, B=B, gamma=gamma)


@checked(
    nu=Values(0, lo_open=True), lipschitz=Values(0, lo_open=True), lam=Values(0, lo_open=True),
    n=Values(2, integer=True))
def cor25_second_term(
    *, nu: ArrayLike, lipschitz: ArrayLike, lam: ArrayLike, n: ArrayLike
) -> np.ndarray:
    """Corollary 2.5, eq. (7), second term: ``nu L / (lam n)``.

    The proof (A.3) bounds the soft-margin LOO distance by ``L / (lam n)`` using strong
    convexity of the regularized objective and an L-Lipschitz per-sample loss; like Lemma A.2.5
    it uses ``n ~ n - 1`` and treats ``lam ||w||^2`` as strongly convex in the unpenalized ``b``.
    """
    return (
        np.asarray(nu)
        * np.asarray(lipschitz)
        / (np.asarray(lam) * np.asarray(n))
    )


@checked(delta=Values(0.0, 1.0, lo_open=True, hi_open=True), heads=Values(1, integer=True))
def cor31_head_factor(*, heads: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """Corollary 3.1, eq. (11): the factor ``sqrt((2 + 8 ln(1/delta)) / H)`` on the first term.

    Valid for ``H > 2 + 8 ln(1/delta)``, ``delta in (0, 1)``; with probability ``1 - delta``.
    The factor is then < 1, predicting an ``O(1/sqrt(H))`` speed-up of the direction
    convergence at a fixed step count.

    Inconsistency: eq. (11) and the last proof lines typeset the square root over the rate
    ``C xi log log t / log t`` as well. The Bernstein inequality the proof cites (Kohler & Lucchi
    2017, Lemma 18) bounds ``||mean of H vectors||`` by ``sigma sqrt(8(1/4 + log(1/delta))/H)``
    with ``sigma`` the second-moment bound, i.e. the rate sits *outside* the root. This function
    follows the Bernstein reading: the factor multiplies the rate. ``8(1/4 + log 1/delta)`` equals
    ``2 + 8 log(1/delta)``; both readings scale as ``H^(-1/2)``.
    """
    d = np.asarray(delta)
    h = np.asarray(heads)
    need = 2.0 + 8.0 * np.log(1.0 / d)
    if np.any(h <= need):
        raise ValueError(
            f"heads must be > 2 + 8 ln(1/delta) = {np.max(need):.4g} (Corollary 3.1's condition)"
        )
    return np.sqrt(need / h)


@checked(t=Values())
def thm24_direction_rate(t: ArrayLike) -> np.ndarray:
    """``log log t / log t``: Soudry et al. (2018, Thm 5) rate of GD's direction convergence.

    Appears with an unspecified constant C as the first term of Theorem 2.4. Needs ``t > e``.
    """
    tt = np.asarray(t)
    if np.any(tt <= math.e):
        raise ValueError(f"t must be > e so that log log t > 0 (got min {tt.min():.6g})")
    return np.log(np.log(tt)) / np.log(tt)


# --- lemmas: both sides ----------------------------------------------------------------------


@checked(u=Array(), w=Array(), grad_u=Array(), grad_w=Array())
@checked(
    beta=Values(0, lo_open=True), eta=Values(0, lo_open=True), u=Values(), w=Values(), grad_u=Values(),
    grad_w=Values())
def lemma_a12_sides(
    u: ArrayLike,
    w: ArrayLike,
    grad_u: ArrayLike,
    grad_w: ArrayLike,
    *,
    eta: ArrayLike,
    beta: ArrayLike,
) -> BoundSides:
    """Lemma A.1.2: for convex beta-smooth f and ``0 < eta <= 2/beta`` the GD map is non-expansive.

    ``||(u - eta grad f(u)) - (w - eta grad f(w))|| <= ||u - w||``.
    Vectors on the last axis; leading axes broadcast. Convexity is the caller's to ensure.
    """
    b = np.asarray(beta)
    e = np.asarray(eta)
    if np.any(e > 2.0 / b * (1 + 1e-12)):
        raise ValueError("eta must be <= 2/beta (Lemma A.1.2's condition)")
    uu, ww = np.asarray(u), np.asarray(w)
    gu, gw = np.asarray(grad_u), np.asarray(grad_w)
    broadcastable(u=uu, w=ww, grad_u=gu, grad_w=gw)
    e = e[..., None]
    lhs = np.linalg.norm((uu - e * gu) - (ww - e * gw), axis=-1)
    rhs = np.linalg.norm(uu - ww, axis=-1)
    return BoundSides(lhs, rhs)


@checked(f_value=Values(0), grad=Values(), beta=Values(0, lo_open=True))
def lemma_a13_sides(grad: ArrayLike, f_value: ArrayLike, *, beta: ArrayLike) -> BoundSides:
    """Lemma A.1.3: a non-negative beta-smooth f satisfies ``||grad f(w)||^2 <= 2 beta f(w)``."""
    f = np.asarray(f_value)
    g = np.asarray(grad)
    return BoundSides(np.sum(g**2, axis=-1), 2.0 * np.asarray(beta) * f)


@checked(r=Values(0, lo_open=True), x=Values(), y=Values())
def lemma_a21_sides(x: ArrayLike, y: ArrayLike, *, r: ArrayLike) -> BoundSides:
    """Lemma A.2.1: ``x -> x/||x||`` is ``(2/r)``-Lipschitz on ``{||x|| >= r}``.

    ``|| x/||x|| - y/||y|| || <= (2/r) ||x - y||``. The sharp constant is ``1/r`` (project y onto
    the ball of radius ``||x|| <= ||y||``: a 1-Lipschitz map), so the lemma is loose by 2.
    """
    rr = np.asarray(r)
    xx, yy = np.asarray(x), np.asarray(y)
    nx, ny = np.linalg.norm(xx, axis=-1), np.linalg.norm(yy, axis=-1)
    if np.any(nx < rr * (1 - 1e-12)) or np.any(ny < rr * (1 - 1e-12)):
        raise ValueError("x and y must have norm >= r (Lemma A.2.1's domain)")
    lhs = np.linalg.norm(xx / nx[..., None] - yy / ny[..., None], axis=-1)
    return BoundSides(lhs, 2.0 / rr * np.linalg.norm(xx - yy, axis=-1))


@checked(b_hat=Values(), v_hat=Values(min_ndim=1), B=Values(0, lo_open=True))
def lemma_a23_sides(b_hat: ArrayLike, v_hat: ArrayLike, *, B: ArrayLike) -> BoundSides:
    """Lemma A.2.3: the hard-margin SVM intercept satisfies ``|b_hat| <= 1 + ||v_hat|| B``.

    ``b_hat`` in the paper's convention ``sign(v^T x - b)``, i.e. minus scikit-learn's
    ``intercept_``. Proof: a support vector has ``y (v^T x - b) = 1``.
    """
    bb = np.asarray(b_hat)
    vv = np.asarray(v_hat)
    return BoundSides(np.abs(bb), 1.0 + np.linalg.norm(vv, axis=-1) * np.asarray(B))


@checked(
    beta=Values(0, lo_open=True), eta=Values(0, lo_open=True), grad_now=Values(), f_next=Values(),
    f_now=Values())
def lemma_a51_sides(
    f_next: ArrayLike, f_now: ArrayLike, grad_now: ArrayLike, *, eta: ArrayLike, beta: ArrayLike
) -> BoundSides:
    """Lemma A.5.1: for beta-smooth f and ``eta <= 1/beta``,
    ``f(w - eta grad f(w)) <= f(w) - (eta/2) ||grad f(w)||^2``. Convexity is not needed.
    """
    b = np.asarray(beta)
    e = np.asarray(eta)
    if np.any(e > 1.0 / b * (1 + 1e-12)):
        raise ValueError("eta must be <= 1/beta (Lemma A.5.1's condition)")
    g2 = np.sum(np.asarray(grad_now) ** 2, axis=-1)
    return BoundSides(np.asarray(f_next), np.asarray(f_now) - e / 2.0 * g2)
