"""Batched GD heads and the Theorem 2.2 quadratic setting."""

import numpy as np
import pytest
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.stability import head_loo_stability, normalized_distance, paper_head
from boundbench.synthetic.svm import HardMarginSVM
from boundbench.synthetic.train import (
    augment,
    gd_quadratic_loo,
    make_quadratic_setting,
    stable_lr,
    train_heads,
)
from boundbench.theory import stability_bounds as sb


@pytest.fixture(scope="module")
def data():
    return make_separable(n_datasets=3, n=60, d=3, margin=0.1, bound=1.0, seed=11)


@pytest.mark.parametrize("loss", ["logistic", "exponential"])
def test_gd_turns_toward_the_svm(data, loss):
    res = train_heads(data.X, data.y, loss=loss, steps=3000, record=12)
    svm = HardMarginSVM().fit(data.X, data.y)
    gap = normalized_distance(res.directions[:, 0], paper_head(svm.coef_, svm.intercept_)[:, None])
    assert np.all(gap[:, -1] < gap[:, 0])
    assert np.all(gap[:, -1] < 0.3)


def test_replicas_equal_training_without_the_sample(data):
    loo = np.array([[0, 7], [3, 5], [1, 2]])
    res = train_heads(data.X, data.y, steps=200, loo=loo, lr=0.5, seed=4)
    # dataset 0 of a chunk draws the same initial heads as a one-dataset run with the same seed
    for r, i in enumerate(loo[0]):
        keep = np.arange(60) != i
        one = train_heads(data.X[:1, keep], data.y[:1, keep], steps=200, lr=0.5, seed=4)
        np.testing.assert_allclose(res.weights[0, r + 1], one.weights[0, 0], atol=1e-10)
    stab = head_loo_stability(res.directions)
    assert stab.shape == (3, 2, len(res.steps)) and np.all(stab >= 0)


def test_mean_head_and_independent_inits(data):
    res = train_heads(data.X, data.y, steps=5, heads=4, lr=0.5)
    w = res.weights[:, 0]  # (k, H, D)
    assert not np.allclose(w[:, 0], w[:, 1])
    mean = w.mean(1)
    np.testing.assert_allclose(res.directions[:, 0, -1],
                               mean / np.linalg.norm(mean, axis=-1, keepdims=True), atol=1e-12)


def test_divergent_step_is_refused(data):
    Xa = augment(torch.as_tensor(data.X))
    limit = stable_lr(Xa, torch.as_tensor(data.y), torch.zeros(3, 1, 4, dtype=torch.float64),
                      "logistic")
    with pytest.raises(ValueError, match="lr=.* diverges"):
        train_heads(data.X, data.y, steps=2, lr=float(limit.max()) * 1.01)
    with pytest.raises(ValueError, match="loss must be one of"):
        train_heads(data.X, data.y, loss="hinge")


def test_quadratic_loo_matches_an_explicit_loop():
    s = make_quadratic_setting(n_datasets=2, n=12, d=3, mu=0.2, beta=1.0, dist0=2.0, seed=3)
    loo = np.array([[0, 4], [11, 2]])
    sup = gd_quadratic_loo(s, loo, steps=300)
    for k in range(2):
        A = [0.2 * np.eye(3) + 0.8 * np.outer(u, u) for u in s.U[k]]
        for r, i in enumerate(loo[k]):
            AS = np.mean(A, 0)
            Ai = np.mean([a for j, a in enumerate(A) if j != i], 0)
            w, wi, best = s.w0[k].copy(), s.w0[k].copy(), 0.0
            for _ in range(300):
                w = w - AS @ (w - s.w_star[k])
                wi = wi - Ai @ (wi - s.w_star[k])
                best = max(best, np.linalg.norm(w - wi))
            assert sup[k, r] == pytest.approx(best, rel=1e-10)
    # Theorem 2.2's appendix bound holds here (L = beta * dist0)
    rhs = sb.thm22_appendix_rhs(lipschitz=2.0, beta=1.0, mu=0.2, dist0=2.0, n=12)
    assert sup.max() <= rhs
