"""Leave-one-out stability (Fu et al., Definitions 2.1 and 2.3) of SVMs and GD-trained heads.

The paper's synthetic metric (§4.3) is the normalized LOO distance
``||w(S^i)/||w(S^i)|| - w(S)/||w(S)|| ||`` of the augmented head ``w = [v, b]``; the
stability of a dataset is its mean over ``i``.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from boundbench.synthetic.svm import hard_margin_loo
from boundbench.theory._validate import Array, checked


@checked(a=Array(), b=Array())
def normalized_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|| a/||a|| - b/||b|| ||`` along the last axis (broadcasting)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.linalg.norm(a / np.linalg.norm(a, axis=-1, keepdims=True)
                          - b / np.linalg.norm(b, axis=-1, keepdims=True), axis=-1)


@checked(v=Array(), c=Array())
def paper_head(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``w = [v, b]`` with ``b = -c`` (scikit-learn's intercept ``c``)."""
    return np.concatenate([v, -np.asarray(c)[..., None]], axis=-1)


def svm_loo_stability(X: np.ndarray, y: np.ndarray, *, progress: bool = False) -> dict:
    """Exact normalized LOO stability of the hard-margin SVM, every ``i`` of every dataset.

    Returns per dataset (arrays of length k): ``stability`` (mean over i of the normalized
    distance), ``max_distance``, ``norm_v`` (= 1/margin), ``n_support``, the full-data heads
    ``w`` (k, d + 1) in the paper's ``[v, b]``, and per sample ``v_norm_loo`` (k, n) and
    ``w_norm_loo`` for Lemma A.2.4.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    k, n, _ = X.shape
    out = {key: np.empty(k) for key in ("stability", "max_distance", "norm_v", "norm_w",
                                         "n_support")}
    out["w"] = np.empty((k, X.shape[2] + 1))
    out["v_norm_loo"] = np.empty((k, n))
    out["w_norm_loo"] = np.empty((k, n))
    for j in tqdm(range(k), desc="SVM LOO", disable=not progress, leave=False):
        v_loo, c_loo, v, c = hard_margin_loo(X[j], y[j])
        w, w_loo = paper_head(v, c), paper_head(v_loo, c_loo)
        dist = normalized_distance(w_loo, w)
        out["stability"][j] = dist.mean()
        out["max_distance"][j] = dist.max()
        out["w"][j] = w
        out["norm_v"][j] = np.linalg.norm(v)
        out["norm_w"][j] = np.linalg.norm(w)
        out["n_support"][j] = np.sum(np.any(v_loo != v, axis=-1) | (c_loo != c))
        out["v_norm_loo"][j] = np.linalg.norm(v_loo, axis=-1)
        out["w_norm_loo"][j] = np.linalg.norm(w_loo, axis=-1)
    return out


@checked(directions=Array(ndim=4))
def head_loo_stability(directions: np.ndarray) -> np.ndarray:
    """Normalized LOO distances of GD heads from :func:`synthetic.train.train_heads` directions
    ``(k, R + 1, T, D)`` (unit vectors): ``(k, R, T)``, replica r against replica 0."""
    return np.linalg.norm(directions[:, 1:] - directions[:, :1], axis=-1)
