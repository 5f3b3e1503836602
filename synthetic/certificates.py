"""Primal and dual solutions of the small SVMs a replay certifies (:mod:`boundbench.framework.
replay`): each solved once with cvxpy + Clarabel, its constraint multipliers read off the
problem, and handed to the replay as exact decimals; the replay re-derives the optimum from the
active set they name and checks every KKT condition itself, trusting none of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundbench.framework.replay import exact


def _solve(X: np.ndarray, y: np.ndarray, caps: np.ndarray | None, lam: float) -> dict[str, Any]:
    """One SVM with its multipliers: soft margin ``lam ||v||^2 + sum caps_i hinge`` (points with
    cap 0 left out) or, with ``caps=None``, the hard margin ``1/2 ||v||^2 s.t. margins >= 1``.
    A ``ValueError`` where the solver does not report an optimum (non-separable data)."""
    import cvxpy as cp

    keep = np.arange(len(y)) if caps is None else np.flatnonzero(caps > 0)
    Xk, yk = X[keep], y[keep]
    v, c = cp.Variable(X.shape[1]), cp.Variable()
    margin = cp.multiply(yk, Xk @ v + c)
    if caps is None:
        con = margin >= 1
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [con])
    else:
        xi = cp.Variable(len(keep))
        con = xi >= 1 - margin
        prob = cp.Problem(cp.Minimize(lam * cp.sum_squares(v) + caps[keep] @ xi), [xi >= 0, con])
    # tight tolerances: the solution only names the active set the replay re-solves exactly
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    if prob.status != cp.OPTIMAL:
        raise ValueError(f"the SVM for the replay is {prob.status} (hard margin needs separable "
                         "data)")
    alpha = np.zeros(len(y))
    alpha[keep] = np.asarray(con.dual_value, dtype=float)
    return {"v": exact(np.asarray(v.value, dtype=float)),
            "c": exact(float(np.asarray(c.value, dtype=float))),
            "alpha": exact(alpha)}


def svm_loo_instance(X: np.ndarray, y: np.ndarray, *, which: str, lam: float | None = None,
                     n_fav: int | None = None) -> dict[str, Any]:
    """A replay's input (program ``svm_loo``) for one planar dataset: the data, and the solver's
    primal and dual solutions of every SVM the sides compare. ``which``: ``"a24-w"`` or
    ``"a24-v"`` (hard margin, Lemma A.2.4), or ``"lemma"``, ``"cor"``, ``"thm24"``, ``"v-norm"``
    (soft margin, the intercept free; Lemma A.2.5, Cor. 2.5's step, Thm 2.4's second term, Lemma
    A.2.5's proof step)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    out: dict[str, Any] = {"X": exact(X), "y": exact(y), "which": which,
                           "hard": _solve(X, y, None, 0.0)}
    if which.startswith("a24"):
        out["hard_loo"] = [_solve(np.delete(X, i, 0), np.delete(y, i), None, 0.0)
                           for i in range(n)]
        return out
    if lam is None or n_fav is None:
        raise ValueError("lam and n_fav are needed for the soft-margin replays")
    out.update(lam=exact(lam), n_fav=exact(int(n_fav)),
               soft=_solve(X, y, np.full(n, 1.0 / n), lam))
    loo = []
    for i in range(n):
        caps = np.full(n, 1.0 / (n - 1))
        caps[i] = 0.0
        loo.append(_solve(X, y, caps, lam))
    out["soft_loo"] = loo
    return out
