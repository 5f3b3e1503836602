"""Leave-one-out stability (Fu et al., Definitions 2.1 and 2.3) of SVMs and GD-trained heads.

The paper's synthetic metric (§4.3) is the normalized LOO distance
``||w(S^i)/||w(S^i)|| - w(S)/||w(S)|| ||`` of the augmented head ``w = [v, b]``; the
stability of a dataset is its mean over ``i``.
"""

from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, checked
from boundbench.synthetic.svm import hard_margin_loo


@checked(a=Array(), b=Array())
def normalized_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``|| a/||a|| - b/||b|| ||`` along the last axis (broadcasting)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.linalg.norm(a / np.linalg.norm(a, axis=-1, keepdims=True)
                          - b / np.linalg.norm(b, axis=-1, keepdims=True), axis=-1)


@checked(v=Array(), c=Array())
def paper_head(v: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``w = [v, b]`` with ``b = -c`` (scikit-learn's intercept ``c``): ``v`` of shape
    ``(..., d)``, ``c`` of shape ``(...)``."""
    v, c = np.asarray(v), np.asarray(c)
    if v.ndim < 1 or c.shape != v.shape[:-1]:
        raise InvalidArgument(f"v must have shape (..., d) and c its leading shape (got v {v.shape}, "
                              f"c {c.shape})")
    return np.concatenate([v, -c[..., None]], axis=-1)


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


def optimal_set_moves(v: np.ndarray, c_int: tuple[float, float], v_loo: np.ndarray,
                      c_loo_int: tuple[np.ndarray, np.ndarray], *, grid: int = 33) -> dict:
    """Leave-one-out moves between *sets* of optimal heads, where the intercept is not unique.

    The optimal heads on S are ``{[v, b] : b in -I}`` and on ``S^i`` ``{[v_i, b] : b in -I_i}``
    (``I``, ``I_i`` the intercept intervals of
    :func:`~boundbench.synthetic.svm.soft_margin_intercepts`; ``v`` is unique). For every ``i``:

    - ``closest`` / ``farthest``: ``min`` / ``max`` of ``||w_i - w||`` over the two sets, in
      closed form: ``sqrt(||v_i - v||^2 + g^2)`` with ``g`` the gap between the intervals
      (closest) or their largest spread (farthest);
    - ``direction_closest`` / ``direction_farthest``: the same for ``w/||w||``, over a
      ``grid x grid`` lattice of the two intervals refined once around its extreme cell (the
      normalized head moves on a great-circle arc as ``b`` varies; the refinement resolves the
      extreme to ``1/grid^2`` of the interval widths);
    - ``r_min``: the smallest norm of any optimal head compared, ``sqrt(||v||^2 + dist(0, I)^2)``
      over S and every ``S^i``: Lemma A.2.1's radius valid for every pair.
    """
    v = np.asarray(v, dtype=np.float64)
    v_loo = np.asarray(v_loo, dtype=np.float64)
    lo, hi = (float(x) for x in c_int)
    lo_i, hi_i = (np.asarray(x, dtype=np.float64) for x in c_loo_int)
    if np.any(lo_i > hi_i) or lo > hi:
        raise InvalidArgument("intercept intervals must have low <= high")
    dv2 = ((v_loo - v) ** 2).sum(-1)
    gap = np.maximum(0.0, np.maximum(lo_i - hi, lo - hi_i))
    spread = np.maximum(hi_i - lo, hi - lo_i)

    def nearest0(a, b):
        return np.where((a <= 0) & (b >= 0), 0.0, np.minimum(np.abs(a), np.abs(b)))

    r_min = float(np.sqrt(min((v**2).sum() + nearest0(lo, hi) ** 2,
                              ((v_loo**2).sum(-1) + nearest0(lo_i, hi_i) ** 2).min())))

    def directions(b1, b2):  # b1 (m, G), b2 (m, G): distance (m, G, G) of [v, -b1] vs [v_i, -b2]
        n1 = np.sqrt((v**2).sum() + b1**2)  # (m, G)
        n2 = np.sqrt((v_loo**2).sum(-1)[:, None] + b2**2)  # (m, G)
        dot = (v_loo @ v)[:, None, None] + b1[:, :, None] * b2[:, None, :]
        cos = dot / (n1[:, :, None] * n2[:, None, :])
        return np.sqrt(np.maximum(0.0, 2.0 - 2.0 * cos))

    u = np.linspace(0.0, 1.0, grid)
    out = {}
    for name, pick in (("closest", np.argmin), ("farthest", np.argmax)):
        a1, w1 = np.full(len(lo_i), lo), np.full(len(lo_i), hi - lo)
        a2, w2 = lo_i.copy(), hi_i - lo_i
        for _ in range(2):  # the lattice, then once more around its extreme cell
            b1 = a1[:, None] + w1[:, None] * u
            b2 = a2[:, None] + w2[:, None] * u
            dist = directions(b1, b2).reshape(len(lo_i), -1)
            j = pick(dist, 1)
            j1, j2 = j // grid, j % grid
            best = dist[np.arange(len(j)), j]
            step1, step2 = w1 / (grid - 1), w2 / (grid - 1)
            a1 = np.clip(a1 + j1 * step1 - step1, a1, None)
            a2 = np.clip(a2 + j2 * step2 - step2, a2, None)
            w1 = np.minimum(2 * step1, np.full_like(w1, hi) - a1)
            w2 = np.minimum(2 * step2, hi_i - a2)
        out[f"direction_{name}"] = best
    out.update(closest=np.sqrt(dv2 + gap**2), farthest=np.sqrt(dv2 + spread**2), r_min=r_min)
    return out
