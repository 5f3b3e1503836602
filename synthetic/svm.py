"""Exact linear SVMs with cvxpy (Clarabel), in scikit-learn's estimator style.

Sign convention: scikit-learn's, ``decision = X @ coef_ + intercept_``. The paper (Fu et al.)
writes the head as ``w = [v, b]`` acting on ``[x, -1]``, i.e. ``sign(v^T x - b)``; so
``v = coef_`` and ``b = -intercept_``.
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
from numpy.typing import ArrayLike

SOLVER = "CLARABEL"


def _check_xy(X: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must have shape (n, d) (got {X.shape})")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) (got {y.shape})")
    if not np.all(np.isfinite(X)):
        raise ValueError("X must be finite")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("y must hold labels in {-1, +1}")
    if np.all(y == 1) or np.all(y == -1):
        raise ValueError("y must contain both classes")
    return X, y


class HardMarginSVM:
    """``min 1/2 ||v||^2  s.t.  y_i (v^T x_i + c) >= 1`` solved exactly with cvxpy.

    Learned attributes: ``coef_`` (v), ``intercept_`` (c = -b), ``margin_`` (= 1/||coef_||),
    ``support_`` (indices whose constraint dual exceeds ``support_tol`` times the largest dual),
    ``dual_coef_`` (the constraint duals, one per sample), ``status_`` (solver status).
    Non-separable data raise ``ValueError`` carrying the solver status.
    """

    def __init__(self, *, solver: str = SOLVER, support_tol: float = 1e-6) -> None:
        self.solver = solver
        self.support_tol = support_tol

    def fit(self, X: ArrayLike, y: ArrayLike) -> HardMarginSVM:
        X, y = _check_xy(X, y)
        n, d = X.shape
        v = cp.Variable(d)
        c = cp.Variable()
        cons = [cp.multiply(y, X @ v + c) >= 1]
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), cons)
        prob.solve(solver=self.solver)
        self.status_ = prob.status
        if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
            raise ValueError(
                f"X, y are not linearly separable: the hard-margin SVM is infeasible "
                f"(solver status {prob.status!r}); use a soft-margin SVM"
            )
        if prob.status != cp.OPTIMAL:
            raise ValueError(f"hard-margin SVM solver status {prob.status!r}, not 'optimal'")
        self.coef_ = np.asarray(v.value, dtype=np.float64)
        self.intercept_ = float(c.value)
        self.margin_ = 1.0 / float(np.linalg.norm(self.coef_))
        self.dual_coef_ = np.asarray(cons[0].dual_value, dtype=np.float64)
        self.support_ = np.flatnonzero(self.dual_coef_ > self.support_tol * self.dual_coef_.max())
        return self

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        return np.asarray(X, dtype=np.float64) @ self.coef_ + self.intercept_

    def predict(self, X: ArrayLike) -> np.ndarray:
        return np.where(self.decision_function(X) >= 0, 1.0, -1.0)
