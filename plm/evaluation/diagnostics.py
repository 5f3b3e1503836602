"""The bridge to ``synthetic/``: the theory's quantities measured on real encoder features.

For features ``x = pool(E(text))`` before or after fine-tuning: the feature bound
``B = max ||x_i||``, the hard-margin SVM margin ``gamma`` (or, when the features are not
separable, the soft-margin SVM of Lemma A.2.5), the exact normalized leave-one-out stability of
that SVM head (Definition 2.3), the distance between class centroids (what MMR enlarges), and
``||theta - theta_0||`` of the encoder (what SURT is meant to shrink, Theorem 2.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Array, Float, Int, Seed, checked
from boundbench.framework.inputs.values import same_length
from boundbench.synthetic.stability import normalized_distance, paper_head, svm_loo_stability
from boundbench.synthetic.svm import HardMarginSVM, soft_margin_loo


@checked(X=Array(ndim=2), y=Array(ndim=1), lam=Float(0, lo_open=True), max_loo=Int(1), seed=Seed())
def feature_diagnostics(X: np.ndarray, y: np.ndarray, *, lam: float = 1e-2,
                        max_loo: int = 300, seed: int = 0) -> dict:
    """Theory quantities of binary features ``X (n, d)``, labels ``y`` in {0, 1} or {-1, +1}.

    The LOO stability uses at most ``max_loo`` points (a seeded subsample; ``n_used`` says how
    many): exact for the hard-margin SVM, and the soft-margin SVM (weight ``lam``) otherwise.
    """
    same_length(X=X, y=y)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    classes = np.unique(y)
    if len(classes) != 2:
        raise InvalidArgument(f"feature_diagnostics needs binary labels (got {len(classes)} classes)")
    ys = np.where(y == classes[1], 1.0, -1.0)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(ys))[:max_loo]
    Xs, ys_s = X[idx], ys[idx]
    out: dict[str, Any] = {"n": len(ys), "n_used": len(idx), "B": float(np.linalg.norm(X, axis=1).max()),
           "centroid_distance": float(np.linalg.norm(X[ys > 0].mean(0) - X[ys < 0].mean(0)))}
    try:
        svm = HardMarginSVM().fit(Xs, ys_s)
        st = svm_loo_stability(Xs[None], ys_s[None])
        out.update(separable=True, margin=float(svm.margin_),
                   margin_over_B=float(svm.margin_) / out["B"],
                   loo_stability=float(st["stability"][0]), svm="hard-margin")
    except ValueError:
        v_loo, c_loo, v, c = soft_margin_loo(Xs, ys_s, lam=lam)
        dist = normalized_distance(paper_head(v_loo, c_loo), paper_head(v, c))
        out.update(separable=False, margin=float(1.0 / np.linalg.norm(v)), margin_over_B=float(
            1.0 / np.linalg.norm(v)) / out["B"], loo_stability=float(dist.mean()),
            svm=f"soft-margin (lam={lam})")
    return out


def parameter_distance(params: Mapping[str, torch.Tensor],
                       reference: Mapping[str, torch.Tensor]) -> float:
    """``||theta - theta_0||`` over the floating-point entries the two state dicts share by name
    and shape (Theorem 2.2's ``||w0 - w*||`` read on a fine-tuning run: the encoder's
    ``state_dict`` at the end against a copy taken at the start)."""
    total = 0.0
    for k, p in params.items():
        r = reference.get(k)
        if r is not None and r.shape == p.shape and p.is_floating_point():
            # in place on one float64 copy: the same arithmetic as (p - r) ** 2 summed, at
            # about half the time (22 M entries a run; no temporaries beyond the copies)
            d = p.detach().to(torch.float64, copy=True)  # a float64 p is not changed
            total += float(d.sub_(r.detach().double()).square_().sum())
    return total**0.5
