"""Clusters, batched AD training and the Monte Carlo smoothed Hessian."""

import numpy as np
import pytest
import torch

from boundbench.synthetic.mlp import MLPRun, make_clusters, train_mlps
from boundbench.theory.activation_decay import last_layer_hessian, smoothed_last_layer_top_eig


def test_clusters_label_noise_fraction():
    X, y, clean = make_clusters(n=20_000, d=3, classes=4, label_noise=0.3, seed=0)
    assert X.shape == (20_000, 3)
    assert np.mean(y != clean) == pytest.approx(0.3, abs=0.01)
    with pytest.raises(ValueError, match="label_noise"):
        make_clusters(n=10, d=2, classes=2, label_noise=1.0)


@pytest.fixture(scope="module")
def trained():
    return train_mlps(MLPRun(strengths=(0.0, 1.0), seeds=2, n_train=300, n_test=300, hidden=16,
                             steps=300))


def test_training_learns_and_ad_shrinks_activations(trained):
    acc = (trained.forward(trained.X_test).logits.argmax(-1) == trained.y_test).double().mean(-1)
    assert torch.all(acc > 0.5)  # 5 classes: chance is 0.2
    with torch.no_grad():
        hsq = trained.forward(trained.X).features.pow(2).sum(-1).mean(-1)
    # models 0, 1: sigma = 0 (seeds 0, 1); models 2, 3: sigma = 1 with the same inits
    assert torch.all(hsq[2:] < hsq[:2])


def test_monte_carlo_smoothed_hessian_tends_to_the_exact_one(trained):
    with torch.no_grad():
        h = trained.forward(trained.X).features[0]
    W = trained.W2[0]
    exact = torch.linalg.eigvalsh(last_layer_hessian(h, W))[-1].item()
    lam, lo, hi = smoothed_last_layer_top_eig(h, W, sigma=1e-6, n_mc=40)
    assert lam == pytest.approx(exact, rel=1e-6)
    assert lo <= lam <= hi
    # smoothing need not lower the curvature at a point (a confident, flat point gets averaged
    # with sharper neighbours), but it can never exceed the global bound lambda_max(mean hh^T)/2
    lam_big, _, _ = smoothed_last_layer_top_eig(h, W, sigma=2.0, n_mc=200)
    assert lam_big <= 0.5 * torch.linalg.eigvalsh(h.T @ h / len(h))[-1].item()


def test_monte_carlo_smoothed_hessian_is_the_mean_of_exact_hessians_at_its_draws():
    """The estimate is the top eigenvalue of the mean, over its Gaussian draws, of the exact
    Hessian at ``W + delta`` (``last_layer_hessian``): re-drawn here from the same seeded stream
    and averaged the naive way, it agrees to rounding (the estimator sums ``p p^T`` over the
    draws in one product instead of forming every ``diag p - p p^T``)."""
    g = torch.Generator().manual_seed(0)
    h = torch.randn(30, 4, dtype=torch.float64, generator=g)
    W = torch.randn(3, 4, dtype=torch.float64, generator=g)
    sigma, n_mc, n_batches = 0.7, 20, 4
    lam, lo, hi = smoothed_last_layer_top_eig(h, W, sigma=sigma, n_mc=n_mc, n_batches=n_batches,
                                              seed=5)
    draws = torch.Generator().manual_seed(5)
    per = n_mc // n_batches
    hess = [last_layer_hessian(h, W + d * sigma)
            for _ in range(n_batches)
            for d in torch.randn(per, 3, 4, generator=draws, dtype=torch.float64)]
    naive = torch.linalg.eigvalsh(torch.stack(hess).mean(0))[-1].item()
    assert lam == pytest.approx(naive, rel=1e-12)
    assert lo <= lam <= hi
    # a control: the Hessian at W alone differs by more than rounding
    assert abs(torch.linalg.eigvalsh(last_layer_hessian(h, W))[-1].item() - naive) > 1e-6


def test_divergent_training_is_an_error_not_nan():
    with pytest.raises(ValueError, match="training diverged"):
        train_mlps(MLPRun(strengths=(5.0,), seeds=1, n_train=100, n_test=10, hidden=8, steps=50,
                          lr=50.0))
