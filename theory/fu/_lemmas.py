"""Fu et al.'s appendix lemmas, both sides of each from your own arrays (the facade
:mod:`boundbench.theory.fu` re-exports them)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Values, checked
from boundbench.framework.inputs.values import broadcastable
from boundbench.framework.verdicts.rules import BoundSides


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

    Parameters
    ----------
    u, w : array_like
        Two points, vectors on the last axis.
    grad_u, grad_w : array_like
        ``grad f`` at ``u`` and at ``w``.
    eta : array_like
        The step, ``0 < eta <= 2/beta``.
    beta : array_like
        ``f``'s smoothness, ``beta > 0``.

    Returns
    -------
    BoundSides
        ``lhs`` and ``rhs``, one pair per instance; :func:`~boundbench.framework.verdicts.rules.bound_verdict`
        decides them.

    References
    ----------
    Fu, So & Collier, Lemma A.1.2.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a12_sides
    >>> s = lemma_a12_sides([1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], eta=0.5, beta=2.0)
    >>> round(float(s.lhs), 4), round(float(s.rhs), 4)
    (0.7071, 1.4142)
    """
    b = np.asarray(beta)
    e = np.asarray(eta)
    if np.any(e > 2.0 / b * (1 + 1e-12)):
        raise InvalidArgument("eta must be <= 2/beta (Lemma A.1.2's condition)")
    uu, ww = np.asarray(u), np.asarray(w)
    gu, gw = np.asarray(grad_u), np.asarray(grad_w)
    broadcastable(u=uu, w=ww, grad_u=gu, grad_w=gw)
    e = e[..., None]
    lhs = np.linalg.norm((uu - e * gu) - (ww - e * gw), axis=-1)
    rhs = np.linalg.norm(uu - ww, axis=-1)
    return BoundSides(lhs, rhs)


@checked(f_value=Values(0), grad=Values(), beta=Values(0, lo_open=True))
def lemma_a13_sides(grad: ArrayLike, f_value: ArrayLike, *, beta: ArrayLike) -> BoundSides:
    """Lemma A.1.3: a non-negative beta-smooth f satisfies ``||grad f(w)||^2 <= 2 beta f(w)``.

    Parameters
    ----------
    grad : array_like
        ``grad f(w)``, vectors on the last axis.
    f_value : array_like
        ``f(w) >= 0``.
    beta : array_like
        ``f``'s smoothness, ``beta > 0``.

    Returns
    -------
    BoundSides
        ``lhs`` and ``rhs``, one pair per instance; :func:`~boundbench.framework.verdicts.rules.bound_verdict`
        decides them.

    References
    ----------
    Fu, So & Collier, Lemma A.1.3.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a13_sides
    >>> s = lemma_a13_sides([2.0, 0.0], 1.0, beta=2.0)  # f(w) = w^2 at w = 1: it binds
    >>> float(s.lhs), float(s.rhs)
    (4.0, 4.0)
    """
    f = np.asarray(f_value)
    g = np.asarray(grad)
    return BoundSides(np.sum(g**2, axis=-1), 2.0 * np.asarray(beta) * f)


@checked(r=Values(0, lo_open=True), x=Values(min_ndim=1), y=Values(min_ndim=1))
def lemma_a21_sides(x: ArrayLike, y: ArrayLike, *, r: ArrayLike) -> BoundSides:
    """Lemma A.2.1: ``x -> x/||x||`` is ``(2/r)``-Lipschitz on ``{||x|| >= r}``.

    ``|| x/||x|| - y/||y|| || <= (2/r) ||x - y||``. The sharp constant is ``1/r`` (project y onto
    the ball of radius ``||x|| <= ||y||``: a 1-Lipschitz map), so the lemma is loose by 2.

    Parameters
    ----------
    x, y : array_like
        Two points of norm ``>= r``, vectors on the last axis.
    r : array_like
        The radius, ``r > 0``.

    Returns
    -------
    BoundSides
        ``lhs`` and ``rhs``, one pair per instance; :func:`~boundbench.framework.verdicts.rules.bound_verdict`
        decides them.

    Raises
    ------
    ValueError
        Where ``x`` or ``y`` lies inside the ball of radius ``r``.

    References
    ----------
    Fu, So & Collier, Lemma A.2.1.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a21_sides
    >>> s = lemma_a21_sides([1.0, 0.0], [0.0, 1.0], r=1.0)
    >>> round(float(s.lhs), 4), round(float(s.rhs), 4)
    (1.4142, 2.8284)
    """
    rr = np.asarray(r)
    xx, yy = np.asarray(x), np.asarray(y)
    broadcastable(x=xx, y=yy)
    broadcastable(**{"x and y without their last axis": xx[..., 0] + yy[..., 0], "r": rr})
    nx, ny = np.linalg.norm(xx, axis=-1), np.linalg.norm(yy, axis=-1)
    if np.any(nx < rr * (1 - 1e-12)) or np.any(ny < rr * (1 - 1e-12)):
        raise InvalidArgument("x and y must have norm >= r (Lemma A.2.1's domain)")
    lhs = np.linalg.norm(xx / nx[..., None] - yy / ny[..., None], axis=-1)
    return BoundSides(lhs, 2.0 / rr * np.linalg.norm(xx - yy, axis=-1))


@checked(b_hat=Values(), v_hat=Values(min_ndim=1), B=Values(0, lo_open=True))
def lemma_a23_sides(b_hat: ArrayLike, v_hat: ArrayLike, *, B: ArrayLike) -> BoundSides:
    """Lemma A.2.3: the hard-margin SVM intercept satisfies ``|b_hat| <= 1 + ||v_hat|| B``.

    ``b_hat`` in the paper's convention ``sign(v^T x - b)``, i.e. minus scikit-learn's
    ``intercept_``. Proof: a support vector has ``y (v^T x - b) = 1``.

    Parameters
    ----------
    b_hat : array_like
        The SVM's intercept ``b`` of ``sign(v^T x - b)``.
    v_hat : array_like
        Its weights ``v``, vectors on the last axis.
    B : array_like
        The bound on the feature norms, ``B > 0``.

    Returns
    -------
    BoundSides
        ``lhs`` and ``rhs``, one pair per instance; :func:`~boundbench.framework.verdicts.rules.bound_verdict`
        decides them.

    References
    ----------
    Fu, So & Collier, Lemma A.2.3.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a23_sides
    >>> s = lemma_a23_sides(0.5, [3.0, 4.0], B=1.0)
    >>> float(s.lhs), float(s.rhs)
    (0.5, 6.0)
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

    Parameters
    ----------
    f_next : array_like
        ``f(w - eta grad f(w))``.
    f_now : array_like
        ``f(w)``.
    grad_now : array_like
        ``grad f(w)``, vectors on the last axis.
    eta : array_like
        The step, ``0 < eta <= 1/beta``.
    beta : array_like
        ``f``'s smoothness, ``beta > 0``.

    Returns
    -------
    BoundSides
        ``lhs`` and ``rhs``, one pair per instance; :func:`~boundbench.framework.verdicts.rules.bound_verdict`
        decides them.

    References
    ----------
    Fu, So & Collier, Lemma A.5.1.

    Examples
    --------
    >>> from boundbench.theory.fu import lemma_a51_sides
    >>> s = lemma_a51_sides(0.4, 1.0, [1.0, 1.0], eta=0.25, beta=2.0)
    >>> float(s.lhs), float(s.rhs)
    (0.4, 0.75)
    """
    b = np.asarray(beta)
    e = np.asarray(eta)
    if np.any(e > 1.0 / b * (1 + 1e-12)):
        raise InvalidArgument("eta must be <= 1/beta (Lemma A.5.1's condition)")
    g2 = np.sum(np.asarray(grad_now) ** 2, axis=-1)
    return BoundSides(np.asarray(f_next), np.asarray(f_now) - e / 2.0 * g2)
