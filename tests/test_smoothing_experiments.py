"""Clusters, batched AD training and the Monte Carlo smoothed Hessian."""

import numpy as np
import pytest
import torch

from boundbench.synthetic.mlp import MLPRun, make_clusters, train_mlps
from boundbench.theory.curvature import last_layer_hessian, smoothed_last_layer_top_eig


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


def test_divergent_training_is_an_error_not_nan():
    with pytest.raises(ValueError, match="training diverged"):
        train_mlps(MLPRun(strengths=(5.0,), seeds=1, n_train=100, n_test=10, hidden=8, steps=50,
                          lr=50.0))
