"""The features tier's max-margin head: the squared-hinge SVM at a tiny ridge, its exact
leave-one-out, and its direction gap to the bias-penalized max-margin SVM."""

import numpy as np
import torch

from boundbench.synthetic.data import make_separable
from boundbench.synthetic.pool_heads import _sq_hinge_newton, max_margin_loo
from boundbench.synthetic.stability import normalized_distance
from boundbench.synthetic.svm import BiasPenalizedSVM
from boundbench.synthetic.train import augment


def _independent_loo(X, y, lam, W):
    """Every LOO head by its own Newton solve (the brute force max_margin_loo must match)."""
    Z = torch.as_tensor(y)[..., None] * augment(torch.as_tensor(X))
    k, n, D = Z.shape
    out = np.empty((k, n, D))
    for j in range(k):
        for i in range(n):
            keep = np.ones(n, dtype=bool)
            keep[i] = False
            out[j, i] = _sq_hinge_newton(Z[j:j + 1, keep], torch.as_tensor(W[j:j + 1]).clone(),
                                         lam, tol=1e-11, max_iter=300)[0].numpy()
    return out


def test_exact_loo_matches_independent_solves_in_low_and_high_dimension():
    """d = 5 (few support vectors) and d = 60 > n (most points on the margin, where removing one
    changes the active set and the active-set fallback runs)."""
    d5 = make_separable(n_datasets=2, n=24, d=5, margin=0.1, bound=1.0, seed=0,
                        exact_margin=False)
    rng = np.random.default_rng(1)
    y = np.where(rng.random((2, 30)) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((2, 30, 60)) / np.sqrt(60) + 0.3 * y[..., None] * rng.standard_normal(
        60) / np.sqrt(60)
    for X_, y_ in ((d5.X, d5.y), (X, y)):
        W_loo, W = max_margin_loo(X_, y_)
        ref = _independent_loo(X_, y_, 1e-6, W)
        scale = np.abs(ref).max(-1, keepdims=True)
        assert np.max(np.abs(W_loo - ref) / scale) < 1e-8


def test_direction_is_the_max_margin_one_where_ridge_logistic_is_not():
    from boundbench.synthetic.pool_heads import fit_ridge_logistic

    d = make_separable(n_datasets=6, n=60, d=5, margin=0.1, bound=1.0, seed=2, exact_margin=False)
    ref = BiasPenalizedSVM().fit(d.X, d.y).coef_
    _, W = max_margin_loo(d.X, d.y)
    assert normalized_distance(W, ref).max() < 5e-3
    # the head it replaces, at its default lam, is far from that direction
    assert normalized_distance(fit_ridge_logistic(d.X, d.y, lam=1e-2), ref).max() > 0.05


def test_the_features_tiers_solvers_run_and_agree_on_two_threads():
    # torch 2.13's batched LU failed on 2 threads at 385 x 385 ("Pivots given to lu_solve must
    # all be greater or equal to 1"): a user's fit_ridge_logistic on a 2-core machine crashed,
    # and PoolDistance's step followed the thread count; both now give the one-thread bits
    from boundbench.synthetic.pool_heads import fit_ridge_logistic
    from boundbench.synthetic.pools import PoolDistance

    wide = make_separable(n_datasets=2, n=100, d=384, margin=0.05, bound=1.0, seed=1,
                          exact_margin=False)
    pool = make_separable(n_datasets=1, n=300, d=384, margin=0.05, bound=1.0, seed=2,
                          exact_margin=False)
    before = torch.get_num_threads()
    heads, tables = [], []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            heads.append(fit_ridge_logistic(wide.X, wide.y, lam=1e-2))
            tables.append(PoolDistance(n=100, k=3, steps=20).run(pool.X[0], pool.y[0]))
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(heads[0], heads[1])
    assert np.array_equal(tables[0]["loo_distance"], tables[1]["loo_distance"])


def test_the_max_margin_loo_heads_do_not_follow_the_thread_count():
    # on two threads MKL's dgemm summed an active set's 27 x 385 Gram matrix in another order
    # and that training set's LOO heads moved in their last bits (fu.features.n's table
    # differed between the command line and a Dask worker); it now runs on one thread
    from boundbench.synthetic.pool_heads import check_pool, draw_sets, max_margin_loo

    d = make_separable(n_datasets=1, n=600, d=384, margin=0.05, bound=1.0, seed=1,
                       exact_margin=False)
    X, y = check_pool(d.X[0], d.y[0])
    idx = draw_sets(y, n=100, k=4, rng=np.random.default_rng(0))
    before = torch.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            got.append(max_margin_loo(X[idx], y[idx]))
        assert torch.get_num_threads() == 2  # the caller's count is given back
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(got[0][1], got[1][1]) and np.array_equal(got[0][0], got[1][0])
