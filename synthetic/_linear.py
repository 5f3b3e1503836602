"""What the linear classifiers of :mod:`boundbench.synthetic.svm` share: their input checks
(one dataset ``(n, d)`` or a batch ``(k, n, d)``, labels in {-1, +1}), the power-of-2 scale at
which the scale-free hard-margin problem is solved, and ``decision_function``/``predict``."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.values import real


def unit_scale(X: np.ndarray) -> float:
    """1, or the power of 2 nearest ``max |X|`` when that lies outside ``[2^-40, 2^40]``."""
    m = float(np.abs(X).max())
    if m == 0.0 or 2.0**-40 <= m <= 2.0**40:
        return 1.0
    return float(2.0 ** np.round(np.log2(m)))


def check_xy(X: ArrayLike, y: ArrayLike, limit: float | None = None
              ) -> tuple[np.ndarray, np.ndarray, bool]:
    # limit: the largest |X| a problem takes (the hard-margin SVM rescales X, so it takes any)
    X = real("X", X, allow_empty=True, finite=False)  # shape and finiteness named below
    y = real("y", y, allow_empty=True, finite=False)
    batched = X.ndim == 3
    if X.ndim not in (2, 3):
        raise InvalidArgument(f"X must have shape (n, d) or (n_datasets, n, d) (got {X.shape})")
    if not batched:
        X, y = X[None], y[None]
    if y.shape != X.shape[:2]:
        raise InvalidArgument(f"y must have shape {X.shape[:2] if batched else X.shape[1:2]} to "
                              f"match X of shape {X.shape if batched else X.shape[1:]} (got "
                              f"{y.shape if batched else y.shape[1:]})")
    # the shape printed as the user gave it: (1, 20, 0) for a single dataset read "1 sample"
    given = X.shape if batched else X.shape[1:]
    if X.shape[-2] < 2:
        raise InvalidArgument(f"X must have at least 2 samples (got {X.shape[-2]}: shape {given})")
    if X.shape[-1] == 0:
        raise InvalidArgument(f"X must have at least 1 feature (got 0: shape {given})")
    if not np.all(np.isfinite(X)):
        raise InvalidArgument("X must be finite")
    if limit is not None and X.size and np.max(np.abs(X)) > limit:
        raise InvalidArgument(f"X must have magnitude <= {limit:g} (got {np.max(np.abs(X)):.3g}): "
                              "this problem is not scale-free (a constant feature or a fixed lam), "
                              "and beyond it its solver fails")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise InvalidArgument("y must hold labels in {-1, +1}")
    if np.any(np.all(y == 1, axis=1) | np.all(y == -1, axis=1)):
        raise InvalidArgument("y must contain both classes in every dataset")
    return X, y, batched


class Linear:
    """``decision_function`` and ``predict`` of a fitted linear classifier (``coef_``,
    ``intercept_``), for one dataset or a batch."""

    # learned by fit: one dataset's arrays and float, or a batch's with a leading axis
    coef_: np.ndarray
    intercept_: Any
    support_: Any  # index array, or a list of them for a batch

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise InvalidArgument(f"this {type(self).__name__} is not fitted: call fit(X, y) first")
        X = real("X", X, allow_empty=True, finite=False)
        if X.shape[-1:] != np.shape(self.coef_)[-1:]:
            raise InvalidArgument(f"X must have {np.shape(self.coef_)[-1]} features (got shape "
                                  f"{X.shape})")
        if not np.all(np.isfinite(X)):
            raise InvalidArgument("X must be finite (a NaN row has no label)")
        batch = np.ndim(self.coef_) == 2
        if (batch and (X.ndim != 3 or X.shape[0] != np.shape(self.coef_)[0])) or \
                (not batch and X.ndim > 2):
            want = f"({np.shape(self.coef_)[0]}, n, d)" if batch else "(n, d) or (d,)"
            raise InvalidArgument(f"X must have shape {want}, as the data this model was fitted on "
                                  f"(got shape {X.shape})")
        if batch:
            return np.einsum("knd,kd->kn", X, self.coef_) + self.intercept_[:, None]
        return X @ self.coef_ + self.intercept_

    def predict(self, X: ArrayLike) -> np.ndarray:
        return np.where(self.decision_function(X) >= 0, 1.0, -1.0)
