"""Primal and dual solutions of the small SVMs a replay certifies (:mod:`boundbench.framework.
replay`): each solved once with cvxpy + Clarabel, its constraint multipliers read off the
problem, and handed to the replay as exact decimals; the replay re-derives the optimum from the
active set they name and checks every KKT condition itself, trusting none of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.search.replay import exact

# tight tolerances: the solution only names the active set the replay re-solves exactly
_TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def _solve(X: np.ndarray, y: np.ndarray, caps: np.ndarray | None, lam: float,
           *, drop: int | None = None) -> dict[str, Any]:
    """One SVM with its multipliers, on the package's own parameterized problems
    (:func:`~boundbench.synthetic.svm._soft_qp`, :func:`~boundbench.synthetic.svm._hard_qp`):
    soft margin ``lam ||v||^2 + sum caps_i hinge`` (a cap of 0 leaves the point out) or, with
    ``caps=None``, the hard margin, without point ``drop`` (its row padded, its multiplier left
    out). A ``ValueError`` where the solver reports no optimum (non-separable data)."""
    import cvxpy as cp

    from boundbench.synthetic.svm import SOLVER, _hard_qp, _soft_qp

    n, d = X.shape
    if caps is None:
        prob, Z, yy, r, v, c, con = _hard_qp(n, d)
        keep = np.ones(n, dtype=bool)
        if drop is not None:
            keep[drop] = False
        Z.value = np.where(keep[:, None], y[:, None] * X, 0.0)
        yy.value, r.value = np.where(keep, y, 0.0), np.where(keep, 1.0, -1.0)
    else:
        prob, Z, yy, a, lm, v, c = _soft_qp(n, d)
        Z.value, yy.value, a.value, lm.value = y[:, None] * X, y, caps, lam
        con, keep = prob.constraints[1], caps > 0
    prob.solve(solver=SOLVER, warm_start=False, **_TIGHT)
    if prob.status != cp.OPTIMAL:
        raise InvalidArgument(f"the SVM for the replay is {prob.status} (hard margin needs separable "
                              "data)")
    alpha = np.where(keep, np.asarray(con.dual_value, dtype=float), 0.0)
    return {"v": exact(np.asarray(v.value, dtype=float)),
            "c": exact(float(np.asarray(c.value, dtype=float))),
            # the multipliers of the points kept, as the replay indexes them
            "alpha": exact(alpha if drop is None else np.delete(alpha, drop))}


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
        out["hard_loo"] = [_solve(X, y, None, 0.0, drop=i) for i in range(n)]
        return out
    if lam is None or n_fav is None:
        raise InvalidArgument("lam and n_fav are needed for the soft-margin replays")
    out.update(lam=exact(lam), n_fav=exact(int(n_fav)),
               soft=_solve(X, y, np.full(n, 1.0 / n), lam))
    loo = []
    for i in range(n):
        caps = np.full(n, 1.0 / (n - 1))
        caps[i] = 0.0
        loo.append(_solve(X, y, caps, lam))
    out["soft_loo"] = loo
    return out
