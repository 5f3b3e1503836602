"""Head tuning's spread across seeds (Table 3's protocol on given features): the batched runs are
the runs a plain loop gives, one optimizer each."""

import numpy as np
import pytest
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.pools import SeedSpread
from boundbench.synthetic.train import augment


def _loop(exp: SeedSpread, X, y, Xt, yt):
    """Each run on its own: its own Adam, its own batches, the draws in SeedSpread's order."""
    ys = np.where(y == np.unique(y)[1], 1.0, -1.0)
    yts = np.where(yt == np.unique(y)[1], 1.0, -1.0)
    n, S = len(X), exp.seeds
    b = min(exp.batch_size, n)
    steps = int(np.ceil(exp.epochs * n / b))
    rng = np.random.default_rng(exp.seed)
    per_epoch = n // b
    order = np.stack([np.concatenate([rng.permutation(n)[:per_epoch * b]
                                      for _ in range(-(-steps // per_epoch))])[:steps * b]
                      for _ in range(S)]).reshape(S, steps, b)
    Z = torch.as_tensor(ys)[:, None] * augment(torch.as_tensor(X))
    W0 = [rng.standard_normal((S, h, Z.shape[1])) / np.sqrt(Z.shape[1]) for h in exp.heads]
    acc = {}
    for h, w0 in zip(exp.heads, W0, strict=True):
        for s in range(S):
            W = torch.as_tensor(w0[s]).clone().requires_grad_(True)
            opt = torch.optim.Adam([W], lr=exp.lr)
            for t in range(steps):
                loss = torch.nn.functional.softplus(-(W @ Z[order[s, t]].T)).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            w = W.detach().mean(0)
            pred = np.where(augment(torch.as_tensor(Xt)).numpy() @ w.numpy() > 0, 1.0, -1.0)
            acc[h, s] = float(np.mean(pred == yts))
    return acc


def test_batched_runs_equal_a_loop_of_independent_runs():
    data = make_separable(n_datasets=1, n=70, d=6, margin=0.2, bound=2.0, seed=3)
    X, y = data.X[0], data.y[0]
    exp = SeedSpread(heads=(1, 3), seeds=4, epochs=2.0, batch_size=8, seed=5)
    got = exp.run(X[:50], y[:50], X[50:], y[50:])
    want = _loop(exp, X[:50], y[:50], X[50:], y[50:])
    for h, s, a in zip(got["heads"], got["run"], got["test_accuracy"], strict=True):
        assert a == pytest.approx(want[h, s], abs=1e-12)
    assert got["steps"][0] == int(np.ceil(2.0 * 50 / 8))


def test_bad_input_names_the_parameter():
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match="seeds"):
        SeedSpread(seeds=1)
    with pytest.raises(ValueError, match="heads"):
        SeedSpread(heads=(0,))
    with pytest.raises(ValueError, match="X_test"):
        SeedSpread(seeds=2).run(X, y, X[:, :2], y)
    with pytest.raises(ValueError, match="y_test"):
        SeedSpread(seeds=2).run(X, y, X, np.repeat([1, 2], 10))
