"""Linearly separable data with a controlled hard margin and feature bound, many datasets at once.

Construction (one batched call for all datasets): a random unit normal ``u`` and offset ``c``
per dataset; each point's coordinate along ``u`` is drawn uniformly from the allowed side
(``t >= c + margin`` for ``y = +1``, ``t <= c - margin`` for ``y = -1``, ``|t| <= bound``), its
orthogonal part uniformly from the ``(d-1)``-ball of radius ``sqrt(bound^2 - t^2)``. The points
are therefore *not* uniform in the ball: ``t`` is uniform along ``u``, so the thin caps near
``|t| = bound`` hold as many points as the wide middle. Hence ``||x_i|| <= bound`` exactly and
the plane ``u^T x = c`` separates the classes with geometric margin at least ``margin``.

That alone leaves the hard-margin SVM's margin *above* the request, often far above (1.03x at
d = 5, 1.46x at d = 20, up to 4x at B = 8), so with ``exact_margin`` (the
default) ``d + 1`` points of each dataset are replaced by a configuration on the margin whose
max-margin normal is ``u`` (see :func:`_plant_on_margin`): the SVM margin is exactly ``margin``,
and the support is ``d + 1`` points, each needed, as on generic data. All other points are as
without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.draws import complement_basis, power
from boundbench.framework.inputs.validate import Bool, Float, Int, Seed, checked


@dataclass(frozen=True)
class SeparableData:
    X: np.ndarray  # (n_datasets, n, d)
    y: np.ndarray  # (n_datasets, n), in {-1, +1}
    normal: np.ndarray  # (n_datasets, d): the generating plane's unit normal u
    offset: np.ndarray  # (n_datasets,): its offset c
    margin: float  # the requested hard margin: exact with exact_margin, else a lower bound
    bound: float  # the requested bound on ||x_i||
    exact_margin: bool = True

    @property
    def max_norm(self) -> np.ndarray:
        """Realised ``B = max_i ||x_i||`` per dataset."""
        return np.linalg.norm(self.X, axis=-1).max(axis=-1)

    @property
    def plane_margin(self) -> np.ndarray:
        """Geometric margin of the generating plane per dataset: the SVM's with
        ``exact_margin``, else a lower bound on it."""
        t = np.einsum("knd,kd->kn", self.X, self.normal) - self.offset[:, None]
        return np.min(self.y * t, axis=-1)

    def svm_margin(self) -> np.ndarray:
        """Realised hard-margin SVM margin per dataset (solves the SVMs)."""
        from boundbench.synthetic.svm import HardMarginSVM

        return HardMarginSVM().fit(self.X, self.y).margin_


@checked(
    n_datasets=Int(1), n=Int(2), d=Int(1), margin=Float(0, lo_open=True), bound=Float(0,
    lo_open=True), balance=Float(0, 1, lo_open=True, hi_open=True), seed=Seed(generator=True),
    exact_margin=Bool(), needs=lambda a: 8.0 * a["n_datasets"] * a["n"] * a["d"])  # X
def make_separable(
    *,
    n_datasets: int,
    n: int,
    d: int,
    margin: float,
    bound: float,
    balance: float = 0.5,
    seed: int | np.random.Generator = 0,
    exact_margin: bool = True,
) -> SeparableData:
    """``n_datasets`` separable datasets of ``n`` points in ``R^d``; see the module docstring.

    ``balance`` is the fraction of positives (rounded; both classes must be non-empty).
    Offsets ``c`` are drawn uniformly in ``+-(bound - margin)/4`` so the intercept is not zero.
    ``exact_margin``: place ``d + 1`` points on the margin so that the SVM margin is exactly
    ``margin`` (needs ``d`` points of each class).
    """
    if not margin < bound:
        raise InvalidArgument(f"margin must be < bound: points within the bound cannot be {margin} away "
                              f"from a plane on both sides with bound={bound}")
    n_pos = int(round(balance * n))
    if not 0 < n_pos < n:
        raise InvalidArgument(f"balance={balance} with n={n} leaves one class empty "
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
        radius = np.sqrt(np.maximum(bound**2 - t**2, 0.0)) * power(rng.random((k, n)), 1 / (d - 1))
        X += g * radius[..., None]
    if exact_margin:
        _plant_on_margin(X, y, u, c, margin, bound, rng)
    return SeparableData(X, y, u, c, float(margin), float(bound), bool(exact_margin))


def _plant_on_margin(X: np.ndarray, y: np.ndarray, u: np.ndarray, c: np.ndarray, margin: float,
                     bound: float, rng: np.random.Generator) -> None:
    """Replace ``d + 1`` points of each dataset (in place) by a Radon configuration on the margin.

    ``d + 1`` orthogonal parts ``w_j`` drawn in the ``(d-1)``-ball of room (``u^T w_j = 0``) have,
    generically, one affine dependency ``sum_j lam_j w_j = 0``, ``sum_j lam_j = 0``; those with
    ``lam_j > 0`` go to ``t = c + margin`` as positives, the others to ``t = c - margin`` as
    negatives. Then ``alpha_j = |lam_j|`` satisfies the SVM's KKT conditions for the normal ``u``
    (``sum alpha_j y_j = 0`` and ``sum alpha_j y_j x_j`` along ``u``), so the SVM margin is exactly
    ``margin``, its normal ``u``, and its support exactly these ``d + 1`` points, each needed, as
    on generic data (planting one pair instead left 2 support vectors and halved the stability).
    """
    k, n, d = X.shape
    n_pos = int((y[0] > 0).sum())
    if min(n_pos, n - n_pos) < d:
        raise InvalidArgument(f"exact_margin needs at least d = {d} points of each class (got "
                              f"{n_pos} positives and {n - n_pos} negatives); pass exact_margin=False")
    tp, tq = c + margin, c - margin
    room = np.sqrt(bound**2 - np.maximum(tp**2, tq**2))  # > 0: |c| + margin < bound
    if d == 1:
        lam, W = np.tile([1.0, -1.0], (k, 1)), np.zeros((k, 2, 1))
    else:
        # a basis of the orthogonal complement of u, and d + 1 points uniform in its ball
        # a basis of the orthogonal complement of u as a closed form of u (an SVD's basis
        # follows the BLAS kernel, and the data with it), and d + 1 points uniform in its ball
        basis = complement_basis(u)  # (k, d, d - 1)
        g = rng.standard_normal((k, d + 1, d - 1))
        g *= (room[:, None] * power(rng.random((k, d + 1)), 1 / (d - 1))
              / np.linalg.norm(g, axis=-1))[..., None]
        W = np.einsum("kjm,kdm->kjd", g, basis)  # (k, d + 1, d); numpy's loops, not BLAS
        dep = np.concatenate([g.transpose(0, 2, 1), np.ones((k, 1, d + 1))], axis=1)
        # the affine dependency, scaled so that lam_{d+1} = 1: a null vector with its sign
        # fixed (an SVD's null vector has the kernel's sign, which swaps the classes). Only
        # the signs of lam are used, so a kernel's rounding cannot change the data.
        x = np.linalg.solve(dep[:, :, :d], -dep[:, :, d:])[..., 0]
        lam = np.concatenate([x, np.ones((k, 1))], axis=1)  # (k, d + 1)
    # the r-th planted positive replaces the r-th positive of its dataset, likewise negatives
    # (every dataset has n_pos positives: y is a permutation of one label vector)
    is_pos, is_neg = lam > 0, lam < 0
    slot = np.where(is_pos, is_pos.cumsum(1) - 1, n_pos + is_neg.cumsum(1) - 1)
    order = np.argsort(y <= 0, axis=1, kind="stable")  # positives' indices, then negatives'
    target = np.take_along_axis(order, slot, axis=1)  # (k, d + 1)
    points = np.where(is_pos, tp[:, None], tq[:, None])[..., None] * u[:, None, :] + W
    placed = is_pos | is_neg
    rows = np.broadcast_to(np.arange(k)[:, None], target.shape)
    X[rows[placed], target[placed]] = points[placed]


@checked(n_datasets=Int(1), n=Int(2), d=Int(1), distance=Float(0, lo_open=True),
         radius=Float(0, lo_open=True), seed=Seed(generator=True))
def make_centres(
    *, n_datasets: int, n: int, d: int, distance: float, radius: float = 0.5,
    seed: int | np.random.Generator = 0,
) -> SeparableData:
    """Fu et al.'s Fig. 7 construction: two balanced classes, each uniform in a ball of
    ``radius`` around its centre, the centres ``distance`` apart along a random unit ``u``
    (at ``+-distance/2 u`` plus a random offset of norm at most ``radius``, so the intercept is
    not zero). The class-centre distance controls the margin; the margin itself is whatever the
    SVM finds (at least ``distance/2 - radius``, which must be > 0 so that the classes are
    separable)."""
    if not distance > 2 * radius:
        raise InvalidArgument(f"distance must be > 2 * radius = {2 * radius:g} for the two balls to be "
                              f"separable (got {distance:g})")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    k = n_datasets
    u = rng.standard_normal((k, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    shift = rng.standard_normal((k, d))
    shift *= radius * rng.random((k, 1)) / np.linalg.norm(shift, axis=-1, keepdims=True)
    y = np.broadcast_to(np.where(np.arange(n) < n // 2 + n % 2, 1.0, -1.0), (k, n))
    y = np.take_along_axis(y, np.argsort(rng.random((k, n)), axis=-1), axis=-1)
    g = rng.standard_normal((k, n, d))
    g *= (radius * power(rng.random((k, n)), 1 / d) / np.linalg.norm(g, axis=-1))[..., None]
    X = shift[:, None, :] + (y * distance / 2)[..., None] * u[:, None, :] + g
    offset = -(shift * u).sum(-1)  # the plane u^T x = u^T shift bisects the centres
    return SeparableData(X, y.copy(), u, -offset, float(distance / 2 - radius),
                         float(np.linalg.norm(X, axis=-1).max()), False)
