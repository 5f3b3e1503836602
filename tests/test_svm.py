"""The cvxpy hard-margin SVM against scikit-learn."""

import numpy as np
import pytest
from sklearn.svm import SVC

from synthetic.svm import HardMarginSVM
from theory.checks_stability import _separable_dataset


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_sklearn(seed):
    X, y = _separable_dataset(np.random.default_rng(seed), 50, 4)
    ours = HardMarginSVM().fit(X, y)
    ref = SVC(kernel="linear", C=1e8, tol=1e-8).fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_[0], rtol=1e-3, atol=1e-4)
    assert ours.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-3, abs=1e-4)
    assert set(ours.support_) == set(ref.support_)
    assert ours.margin_ == pytest.approx(1 / np.linalg.norm(ours.coef_))
    # every support vector sits on the margin
    np.testing.assert_allclose(y[ours.support_] * ours.decision_function(X[ours.support_]), 1, atol=1e-6)
    assert np.all(ours.predict(X) == y)


def test_non_separable_data_raise_with_the_status():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])  # XOR
    with pytest.raises(ValueError, match="not linearly separable.*infeasible"):
        HardMarginSVM().fit(X, y)


@pytest.mark.parametrize("X, y, match", [
    (np.zeros(3), np.ones(3), "X must have shape"),
    (np.zeros((3, 2)), np.ones(2), "y must have shape"),
    (np.zeros((3, 2)), np.array([1.0, 0.0, 1.0]), "labels in"),
    (np.zeros((3, 2)), np.ones(3), "both classes"),
])
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        HardMarginSVM().fit(X, y)
