"""Linearly separable data with a controlled hard margin and feature bound, many datasets at once.

Construction (one batched call for all datasets): a random unit normal ``u`` and offset ``c``
per dataset; each point's coordinate along ``u`` is drawn uniformly from the allowed side
(``t >= c + margin`` for ``y = +1``, ``t <= c - margin`` for ``y = -1``, ``|t| <= bound``), its
orthogonal part uniformly from the ``(d-1)``-ball of radius ``sqrt(bound^2 - t^2)``. The points
are therefore *not* uniform in the ball: ``t`` is uniform along ``u``, so the thin caps near
``|t| = bound`` hold as many points as the wide middle. Hence
``||x_i|| <= bound`` exactly and the plane ``u^T x = c`` separates the classes with geometric
margin at least ``margin``, so the hard-margin SVM margin is at least ``margin`` (usually close
to it: points are drawn down to the edge of the gap).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from boundbench.theory._validate import Float, Int, Seed, checked


@dataclass(frozen=True)
class SeparableData:
    X: np.ndarray  # (n_datasets, n, d)
    y: np.ndarray  # (n_datasets, n), in {-1, +1}
    normal: np.ndarray  # (n_datasets, d): the generating plane's unit normal u
    offset: np.ndarray  # (n_datasets,): its offset c
    margin: float  # the requested lower bound on the hard margin
    bound: float  # the requested bound on ||x_i||

    @property
    def max_norm(self) -> np.ndarray:
        """Realised ``B = max_i ||x_i||`` per dataset."""
        return np.linalg.norm(self.X, axis=-1).max(axis=-1)

    @property
    def plane_margin(self) -> np.ndarray:
        """Geometric margin of the generating plane per dataset (a lower bound on the SVM's)."""
        t = np.einsum("knd,kd->kn", self.X, self.normal) - self.offset[:, None]
        return np.min(self.y * t, axis=-1)

    def svm_margin(self) -> np.ndarray:
        """Realised hard-margin SVM margin per dataset (solves the SVMs)."""
        from boundbench.synthetic.svm import HardMarginSVM

        return HardMarginSVM().fit(self.X, self.y).margin_


@checked(
    n_datasets=Int(1), n=Int(2), d=Int(1), margin=Float(0, lo_open=True), bound=Float(0,
    lo_open=True), balance=Float(0, 1, lo_open=True, hi_open=True), seed=Seed(generator=True))
def make_separable(
    *,
    n_datasets: int,
    n: int,
    d: int,
    margin: float,
    bound: float,
    balance: float = 0.5,
    seed: int | np.random.Generator = 0,
) -> SeparableData:
    """``n_datasets`` separable datasets of ``n`` points in ``R^d``; see the module docstring.

    ``balance`` is the fraction of positives (rounded; both classes must be non-empty).
    Offsets ``c`` are drawn uniformly in ``+-(bound - margin)/4`` so the intercept is not zero.
    """
    if not margin < bound:
        raise ValueError(f"margin must be < bound: points within the bound cannot be {margin} away "
                         f"from a plane on both sides with bound={bound}")
    n_pos = int(round(balance * n))
    if not 0 < n_pos < n:
        raise ValueError(f"balance={balance} with n={n} leaves one class empty "
                         f"({n_pos} positives)")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    k = n_datasets
    u = rng.standard_normal((k, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    c = rng.uniform(-1, 1, k) * (bound - margin) / 4
    y = np.where(np.arange(n) < n_pos, 1.0, -1.0)
    y = np.broadcast_to(y, (k, n)).copy()
    perm = np.argsort(rng.random((k, n)), axis=-1)
    y = np.take_along_axis(y, perm, axis=-1)
    lo = np.where(y > 0, c[:, None] + margin, -bound)
    hi = np.where(y > 0, bound, c[:, None] - margin)
    t = lo + (hi - lo) * rng.random((k, n))
    X = t[..., None] * u[:, None, :]
    if d > 1:
        g = rng.standard_normal((k, n, d))
        g -= np.einsum("knd,kd->kn", g, u)[..., None] * u[:, None, :]  # orthogonal to u
        g /= np.linalg.norm(g, axis=-1, keepdims=True)
        radius = np.sqrt(np.maximum(bound**2 - t**2, 0.0)) * rng.random((k, n)) ** (1 / (d - 1))
        X += g * radius[..., None]
    return SeparableData(X, y, u, c, float(margin), float(bound))
