"""GD's implicit bias, shared by the papers that build on it (Soudry et al.'s direction rate,
Fu et al.'s Theorem 2.4 premise): one GD head per dataset and its direction gaps to the two
max-margin solutions."""

from __future__ import annotations

import numpy as np

from boundbench.synthetic.svm import HardMarginSVM


def gd_svm_gaps(X: np.ndarray, y: np.ndarray, *, steps: int, record: int, seed: int) -> dict:
    """One GD head per dataset and its direction gaps, at every recorded step, to the two
    max-margin solutions (unit vectors): the free-intercept SVM and the bias-penalized one."""
    from boundbench.synthetic.stability import paper_head
    from boundbench.synthetic.svm import BiasPenalizedSVM
    from boundbench.synthetic.train import train_heads

    svm = HardMarginSVM().fit(X, y)
    refs = {"free": paper_head(svm.coef_, svm.intercept_),
            "penalized": BiasPenalizedSVM().fit(X, y).coef_}
    refs = {k: r / np.linalg.norm(r, axis=-1, keepdims=True) for k, r in refs.items()}
    gd = train_heads(X, y, steps=steps, record=record, seed=seed)
    dirs, T = gd.directions[:, 0], len(gd.steps)  # (k, T, D)
    return {"dataset": np.repeat(np.arange(len(X)), T), "step": np.tile(gd.steps, len(X)),
            "gap_free_svm": np.linalg.norm(dirs - refs["free"][:, None], axis=-1).ravel(),
            "gap_penalized_svm": np.linalg.norm(dirs - refs["penalized"][:, None],
                                                axis=-1).ravel(),
            "svm_separation": np.repeat(np.linalg.norm(refs["free"] - refs["penalized"],
                                                       axis=-1), T)}
