"""Fu et al.'s theorems and corollaries: their right sides and explicit pieces (the facade
:mod:`boundbench.theory.fu` re-exports them)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Values, checked


def _thm22_denominator(mu: np.ndarray, beta: np.ndarray, n: np.ndarray) -> np.ndarray:
    if np.any(mu >= beta):
        raise InvalidArgument("mu must be < beta (Theorem 2.2 needs mu*I <= Hessian <= beta*I, "
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

    Parameters
    ----------
    lipschitz : array_like
        ``L > 0``, the per-sample losses' Lipschitz constant.
    beta : array_like
        ``beta > 0``, their smoothness; GD's step is ``1/beta``.
    mu : array_like
        ``0 < mu < beta``, the lower bound on the Hessian at ``w*``.
    dist0 : array_like
        ``||w0 - w*|| >= 0``, the start's distance to the minimizer.
    n : array_like
        The sample count, an integer ``>= 2``.

    Returns
    -------
    numpy.ndarray
        The right side, broadcast over the arguments.

    References
    ----------
    Fu, So & Collier, *A Stability Analysis of Fine-Tuning a Pre-Trained Model*,
    Theorem 2.2, eq. (3).

    Examples
    --------
    >>> from boundbench.theory.fu import thm22_main_rhs, thm22_appendix_rhs
    >>> kw = dict(lipschitz=2.0, beta=1.0, mu=0.5, dist0=4.0, n=100)
    >>> round(float(thm22_main_rhs(**kw)), 4), round(float(thm22_appendix_rhs(**kw)), 4)
    (0.4228, 0.2114)

    The two forms differ by ``sqrt(||w0 - w*|| / beta) = 2`` here.
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

    Parameters
    ----------
    lipschitz : array_like
        ``L > 0``, the per-sample losses' Lipschitz constant.
    beta : array_like
        ``beta > 0``, their smoothness; GD's step is ``1/beta``.
    mu : array_like
        ``0 < mu < beta``, the lower bound on the Hessian at ``w*``.
    dist0 : array_like
        ``||w0 - w*|| >= 0``, the start's distance to the minimizer.
    n : array_like
        The sample count, an integer ``>= 2``.

    Returns
    -------
    numpy.ndarray
        The right side, broadcast over the arguments.

    References
    ----------
    Fu, So & Collier, *A Stability Analysis of Fine-Tuning a Pre-Trained Model*,
    Appendix A.1 (proof of Theorem 2.2).

    Examples
    --------
    >>> from boundbench.theory.fu import thm22_appendix_rhs
    >>> round(float(thm22_appendix_rhs(lipschitz=2.0, beta=1.0, mu=0.5, dist0=4.0, n=100)), 4)
    0.2114
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

    Parameters
    ----------
    lam : array_like
        ``lam > 0``, the weight of ``||v||^2`` in the soft-margin objective.
    n : array_like
        The sample count, an integer ``>= 2``.
    B : array_like
        ``B > 0``, the bound on the feature norms ``||x_i||``.
    gamma : array_like
        ``gamma > 0``, the hard-margin SVM's margin ``1 / ||v_hat||``.

    Returns
    -------
    numpy.ndarray
        The bound on ``||w_S^i - w_S||``, broadcast over the arguments.

    References
    ----------
    Fu, So & Collier, Lemma A.2.5.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a25_rhs
    >>> round(float(lemma_a25_rhs(lam=0.1, n=100, B=1.0, gamma=0.5)), 4)
    0.8262
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

    Parameters
    ----------
    r : array_like
        ``r > 0``, a lower bound on the norms of the SVM solutions being normalized.
    lam : array_like
        ``lam > 0``, the weight of ``||v||^2`` in the soft-margin objective.
    n : array_like
        The sample count, an integer ``>= 2``.
    B : array_like
        ``B > 0``, the bound on the feature norms ``||x_i||``.
    gamma : array_like
        ``gamma > 0``, the hard-margin SVM's margin ``1 / ||v_hat||``.

    Returns
    -------
    numpy.ndarray
        ``(2 / r) * lemma_a25_rhs(...)``, broadcast over the arguments.

    References
    ----------
    Fu, So & Collier, Theorem 2.4, eq. (6), and Lemma A.2.1.

    Examples
    --------
    >>> from boundbench.theory.fu import thm24_second_term
    >>> round(float(thm24_second_term(r=1.0, lam=0.1, n=100, B=1.0, gamma=0.5)), 4)
    1.6524
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

    Parameters
    ----------
    nu : array_like
        ``nu > 0``, the Lipschitz constant of the normalization (``2/r`` by Lemma A.2.1).
    lipschitz : array_like
        ``L > 0``, the per-sample loss's Lipschitz constant.
    lam : array_like
        ``lam > 0``, the regularization weight.
    n : array_like
        The sample count, an integer ``>= 2``.

    Returns
    -------
    numpy.ndarray
        ``nu L / (lam n)``, broadcast over the arguments.

    References
    ----------
    Fu, So & Collier, Corollary 2.5, eq. (7), and its proof (A.3).

    Examples
    --------
    >>> from boundbench.theory.fu import cor25_second_term
    >>> round(float(cor25_second_term(nu=2.0, lipschitz=1.0, lam=0.1, n=100)), 4)
    0.2
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

    Parameters
    ----------
    heads : array_like
        The head count ``H``, an integer with ``H > 2 + 8 ln(1/delta)``.
    delta : array_like
        The failure probability, in ``(0, 1)``.

    Returns
    -------
    numpy.ndarray
        ``sqrt((2 + 8 ln(1/delta)) / H)``, below 1.

    Raises
    ------
    ValueError
        Where ``H <= 2 + 8 ln(1/delta)`` (the corollary's condition).

    References
    ----------
    Fu, So & Collier, Corollary 3.1, eq. (11); Kohler & Lucchi (2017), Lemma 18.

    Examples
    --------
    >>> from boundbench.theory.fu import cor31_head_factor
    >>> [round(f, 4) for f in cor31_head_factor(heads=[100, 400], delta=0.1).tolist()]
    [0.4519, 0.2259]

    Four times the heads, half the factor: the ``1/sqrt(H)`` the corollary predicts.
    """
    d = np.asarray(delta)
    h = np.asarray(heads)
    need = 2.0 + 8.0 * np.log(1.0 / d)
    if np.any(h <= need):
        raise InvalidArgument(
            f"heads must be > 2 + 8 ln(1/delta) = {np.max(need):.4g} (Corollary 3.1's condition)"
        )
    return np.sqrt(need / h)


@checked(t=Values())
def thm24_direction_rate(t: ArrayLike) -> np.ndarray:
    """``log log t / log t``: Soudry et al. (2018, Thm 5) rate of GD's direction convergence.

    Appears with an unspecified constant C as the first term of Theorem 2.4. Needs ``t > e``.

    Parameters
    ----------
    t : array_like
        GD's step count, ``t > e``.

    Returns
    -------
    numpy.ndarray
        ``log log t / log t``.

    References
    ----------
    Soudry, Hoffer, Nacson, Gunasekar & Srebro (2018), *The Implicit Bias of Gradient Descent on
    Separable Data*, Theorem 5; Fu, So & Collier, Theorem 2.4, eq. (6).

    Examples
    --------
    >>> from boundbench.theory.fu import thm24_direction_rate
    >>> [round(r, 4) for r in thm24_direction_rate([100, 10_000]).tolist()]
    [0.3316, 0.2411]
    """
    tt = np.asarray(t)
    if np.any(tt <= math.e):
        raise InvalidArgument(f"t must be > e so that log log t > 0 (got min {tt.min():.6g})")
    return np.log(np.log(tt)) / np.log(tt)
