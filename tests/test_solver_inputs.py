"""Solvers and step sizes: scale-free SVMs, support vectors on the margin,
and finite, stable steps and valid indices required up front."""

import numpy as np
import pytest

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.svm import HardMarginSVM, SoftMarginSVM
from boundbench.synthetic.train import gd_quadratic_loo, make_quadratic_setting, train_heads


@pytest.fixture(scope="module")
def data():
    d = make_separable(n_datasets=1, n=60, d=5, margin=0.1, bound=1.0, seed=3)
    return d.X[0], d.y[0]


@pytest.mark.parametrize("scale", [1e-8, 1e-6, 1e-4, 1e8])
def test_hard_margin_svm_is_scale_free(data, scale):
    X, y = data
    ref = HardMarginSVM().fit(X, y)
    got = HardMarginSVM().fit(X * scale, y)
    np.testing.assert_allclose(got.coef_ * scale, ref.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-6, atol=1e-8)
    assert sorted(got.support_) == sorted(ref.support_)


def test_support_vectors_sit_on_the_margin_and_agree_with_libsvm():
    from sklearn.svm import SVC

    rng = np.random.default_rng(7)
    n, d = 99, 50
    X = rng.standard_normal((n, d)) * np.logspace(-2, 1, d)  # anisotropic
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.1 * rng.standard_normal(n) > 0, 1.0, -1.0)
    svm = HardMarginSVM().fit(X, y)
    m = y * svm.decision_function(X)
    assert np.all(np.abs(m[svm.support_] - 1) <= 1e-6)
    ref = SVC(kernel="linear", C=1e10, tol=1e-8).fit(X, y)
    on_ref = set(ref.support_[np.abs(y[ref.support_] * ref.decision_function(X[ref.support_])
                                     - 1) <= 1e-3])
    assert set(svm.support_) == on_ref


def test_svm_input_errors(data):
    X, y = data
    with pytest.raises(ValueError, match="1 feature"):
        HardMarginSVM().fit(np.zeros((20, 0)), np.tile([1.0, -1.0], 10))
    svm = HardMarginSVM().fit(X, y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X must be finite"):
        svm.predict(bad)
    with pytest.raises(ValueError, match="not fitted"):
        HardMarginSVM().predict(X)
    soft = SoftMarginSVM(lam=0.1).fit(X, y)
    assert set(np.unique(soft.predict(X))) <= {-1.0, 1.0}
    with pytest.raises(ValueError, match="lam"):
        SoftMarginSVM(lam=np.inf).fit(X, y)
    with pytest.raises(ValueError, match="support_tol"):
        HardMarginSVM(support_tol=np.nan).fit(X, y)


@pytest.mark.parametrize("lr", [np.nan, -1e6, 0.0, np.inf])
def test_train_heads_requires_a_finite_positive_step(data, lr):
    X, y = data
    with pytest.raises(ValueError, match="lr"):
        train_heads(X[None], y[None], steps=2, lr=lr)


def test_exponential_loss_with_a_huge_start_is_refused(data):
    X, y = data
    with pytest.raises(ValueError, match="init_scale"):
        train_heads(X[None], y[None], loss="exponential", steps=2, init_scale=1e3)


def test_gd_quadratic_loo_rejects_indices_out_of_range():
    s = make_quadratic_setting(n_datasets=1, n=10, d=3, mu=0.1, beta=1.0, dist0=1.0)
    with pytest.raises(ValueError, match="loo"):
        gd_quadratic_loo(s, np.array([[-1]]), steps=5)
    with pytest.raises(ValueError, match="loo"):
        gd_quadratic_loo(s, np.array([[10]]), steps=5)
    assert gd_quadratic_loo(s, np.array([[9]]), steps=5).shape == (1, 1)
