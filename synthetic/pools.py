"""Fu et al.'s stability experiments on a *pool* of features: training sets drawn from it,
linear heads fitted on each, their exact leave-one-out stability. The pool is any ``(N, d)``
array: separable synthetic data (:func:`boundbench.synthetic.data.make_separable`) or the frozen
features of a real pre-trained encoder (``boundbench.plm.features``); one code path serves both,
so their curves compare like for like.

The head is the ridge-logistic one, ``min_w mean_i log(1 + exp(-y_i w^T [x_i, -1])) +
(lam/2) ||w||^2`` on the augmented features (the intercept is penalized with the weights, as
GD on augmented features treats it). Where a training set is separable and ``lam`` is small,
its direction approaches the max-margin one (Rosset et al. 2004) without the hard-margin QP's
cost in 384 dimensions; where it is not, it is the regularized head of Lemma A.2.5's kind.
Every leave-one-out solution is solved to a gradient norm below ``tol`` (exact up to it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from boundbench.framework.validate import (
    Array,
    Bool,
    Choice,
    Float,
    Int,
    Rng,
    Seed,
    Seq,
    check_fields,
    checked,
)
from boundbench.synthetic.stability import normalized_distance
from boundbench.synthetic.train import augment


def _check_batch(X: np.ndarray, y: np.ndarray) -> None:
    """Datasets ``X (k, n, d)`` with labels ``y (k, n)``, or a ValueError naming both."""
    if np.shape(y) != np.shape(X)[:2]:
        raise ValueError(f"y must have shape (k, n) = {np.shape(X)[:2]} to match X of shape "
                         f"{np.shape(X)} (got {np.shape(y)})")


def _check_pool(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (len(X),):
        raise ValueError(f"the pool must be X (N, d) with labels y (N,) (got {X.shape}, {y.shape})")
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(f"the pool needs binary labels (got {len(classes)} classes)")
    if not np.all(np.isfinite(X)):
        raise ValueError("the pool's features must be finite")
    return X, np.where(y == classes[1], 1.0, -1.0)


@checked(y=Array(ndim=1), n=Int(2), k=Int(1), rng=Rng(), min_per_class=Int(1))
def draw_sets(y: np.ndarray, *, n: int, k: int, rng: np.random.Generator,
              min_per_class: int = 2) -> np.ndarray:
    """``k`` training sets of ``n`` distinct pool indices ``(k, n)``, each with at least
    ``min_per_class`` points of either class (redrawn otherwise)."""
    N = len(y)
    if not 2 * min_per_class <= n <= N:
        raise ValueError(f"n must lie in [{2 * min_per_class}, {N}] (got {n})")
    out = np.empty((k, n), dtype=int)
    for j in range(k):
        for _ in range(1000):
            idx = rng.choice(N, n, replace=False)
            pos = int((y[idx] > 0).sum())
            if min(pos, n - pos) >= min_per_class:
                out[j] = idx
                break
        else:
            raise ValueError(f"cannot draw {n} points with {min_per_class} of each class")
    return out


def _loss_parts(W: torch.Tensor, Z: torch.Tensor):
    """For heads ``W (k, m, D)`` and signed features ``Z = y x~ (k, n, D)``: ``s = sigmoid(-m)``
    and ``h = s (1 - s)`` at the margins ``m = W Z^T`` ``(k, m, n)``."""
    s = torch.sigmoid(-torch.bmm(W, Z.transpose(1, 2)))
    return s, s * (1 - s)


@checked(
    X=Array(ndim=3), y=Array(ndim=2), lam=Float(0, lo_open=True), tol=Float(0, lo_open=True),
    max_iter=Int(1))
def fit_ridge_logistic(X: np.ndarray, y: np.ndarray, *, lam: float, tol: float = 1e-10,
                       max_iter: int = 200) -> np.ndarray:
    """Ridge-logistic heads ``w = [v, b]`` of datasets ``X (k, n, d)``, ``y (k, n)`` in {-1, 1}
    by Newton's method: ``(k, d + 1)``."""
    if not lam > 0:
        raise ValueError(f"lam must be > 0 (got {lam})")
    _check_batch(X, y)
    Z = torch.as_tensor(np.asarray(y, dtype=np.float64))[..., None] * augment(
        torch.as_tensor(np.asarray(X, dtype=np.float64)))
    k, n, D = Z.shape
    W = torch.zeros(k, 1, D, dtype=torch.float64)
    eye = torch.eye(D, dtype=torch.float64)
    for _ in range(max_iter):
        s, h = _loss_parts(W, Z)
        g = -torch.bmm(s, Z)[:, 0] / n + lam * W[:, 0]
        if float(g.norm(dim=-1).max()) < tol:
            break
        H = torch.einsum("kn,kni,knj->kij", h[:, 0], Z, Z) / n + lam * eye
        W = W - torch.linalg.solve(H, g)[:, None]
    else:
        raise ValueError(f"Newton did not reach tol={tol} in {max_iter} iterations (lam={lam})")
    return W[:, 0].numpy()


@checked(
    X=Array(ndim=3), y=Array(ndim=2), lam=Float(0, lo_open=True), tol=Float(0, lo_open=True),
    max_iter=Int(1))
def ridge_logistic_loo(X: np.ndarray, y: np.ndarray, *, lam: float, tol: float = 1e-10,
                       max_iter: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Every leave-one-out ridge-logistic head of datasets ``X (k, n, d)``, ``y (k, n)``:
    ``(w_loo (k, n, d + 1), w (k, d + 1))``.

    Each of the ``k n`` problems (``mean`` over the other ``n - 1`` points) starts at the
    full-data head and takes chord-Newton steps with the full-data Hessian less the left-out
    point's term (a rank-one downdate, applied by Sherman-Morrison), until its own gradient
    norm is below ``tol``: exact up to ``tol``, all problems in batched matrix products."""
    w = fit_ridge_logistic(X, y, lam=lam, tol=tol)
    Z = torch.as_tensor(np.asarray(y, dtype=np.float64))[..., None] * augment(
        torch.as_tensor(np.asarray(X, dtype=np.float64)))
    k, n, D = Z.shape
    Wf = torch.as_tensor(w)[:, None]
    _, h = _loss_parts(Wf, Z)
    eye = torch.eye(D, dtype=torch.float64)
    M = torch.einsum("kn,kni,knj->kij", h[:, 0], Z, Z) / (n - 1) + lam * eye
    Minv = torch.linalg.inv(M)
    U = torch.bmm(Z, Minv)  # (k, n, D): M^-1 z_i (M is symmetric)
    c = h[:, 0] / (n - 1)  # the left-out point's Hessian weight
    denom = 1 - c * (U * Z).sum(-1)  # (k, n) > 0: M - c z z^T stays positive definite
    keep = 1 - torch.eye(n, dtype=torch.float64)  # row i: every point but i
    W = Wf.expand(k, n, D).clone()
    for _ in range(max_iter):
        s, _ = _loss_parts(W, Z)
        g = -torch.bmm(s * keep, Z) / (n - 1) + lam * W  # (k, n, D)
        if float(g.norm(dim=-1).max()) < tol:
            break
        Mg = torch.bmm(g, Minv)
        step = Mg + U * (c * (U * g).sum(-1) / denom)[..., None]
        W = W - step
    else:
        raise ValueError(f"the leave-one-out solves did not reach tol={tol} in {max_iter} "
                         f"steps (lam={lam}); a larger lam converges faster")
    return W.numpy(), w


MAX_MARGIN_LAM = 1e-6  # the squared-hinge head's ridge: its direction gap is O(lam)


def _sq_hinge_newton(Z: torch.Tensor, W: torch.Tensor, lam: float, *, tol: float,
                     max_iter: int) -> torch.Tensor:
    """``argmin_w sum_i max(0, 1 - w^T z_i)^2 + lam ||w||^2`` for each row of ``Z (k, n, D)`` by
    semi-smooth Newton (generalized Hessian of the active points) with Armijo backtracking,
    from ``W (k, D)``; the gradient norm ends below ``tol`` or ``ValueError``."""
    k, n, D = Z.shape
    eye = torch.eye(D, dtype=Z.dtype)

    def objective(W):
        return (torch.clamp(1 - torch.einsum("knd,kd->kn", Z, W), min=0) ** 2).sum(1) + lam * (
            W**2).sum(1)

    for _ in range(max_iter):
        r = torch.clamp(1 - torch.einsum("knd,kd->kn", Z, W), min=0)
        g = -2 * torch.einsum("kn,knd->kd", r, Z) + 2 * lam * W
        if float(g.norm(dim=-1).max()) < tol:
            return W
        H = 2 * torch.einsum("kn,kni,knj->kij", (r > 0).to(Z.dtype), Z, Z) + 2 * lam * eye
        step = torch.linalg.solve(H, g)
        t = torch.ones(k, dtype=Z.dtype)
        f0, slope = objective(W), (g * step).sum(1)
        for _ in range(60):
            new = W - t[:, None] * step
            bad = objective(new) > f0 - 1e-4 * t * slope
            if not bool(bad.any()):
                break
            t = torch.where(bad, t / 2, t)
        W = new
    raise ValueError(f"the squared-hinge Newton did not reach tol={tol} in {max_iter} steps "
                     f"(lam={lam})")


def _sq_hinge_active_set(Z: torch.Tensor, lam: float, *, act: torch.Tensor | None = None,
                         rounds: int = 50) -> tuple[torch.Tensor, bool]:
    """The squared-hinge head of one training set ``Z (n, D)`` by the primal-dual active-set
    iteration on its dual: ``w = Z_A^T r_A / lam``, ``r_A = (I + K_AA / lam)^{-1} 1`` for the
    active set ``A`` (margins below 1), from ``act`` (every point when None) until ``A``
    repeats with ``r_A >= 0``: ``(w, True)``; ``(the last iterate, False)`` if it has not
    settled in ``rounds`` (the caller finishes by Newton)."""
    n = Z.shape[0]
    K = Z @ Z.T
    act = torch.ones(n, dtype=torch.bool) if act is None else act.clone()
    r = torch.zeros(n, dtype=Z.dtype)
    for _ in range(rounds):
        idx = torch.nonzero(act).flatten()
        r = torch.zeros(n, dtype=Z.dtype)
        r[idx] = torch.linalg.solve(torch.eye(len(idx), dtype=Z.dtype) + K[idx][:, idx] / lam,
                                    torch.ones(len(idx), dtype=Z.dtype))
        marg = K[:, idx] @ r[idx] / lam
        new = (marg < 1) & ~((r < 0) & act)
        if torch.equal(new, act) and bool((r[idx] >= 0).all()):
            return Z[idx].T @ r[idx] / lam, True
        act = new
    return Z.T @ r.clamp(min=0) / lam, False


@checked(X=Array(ndim=3), y=Array(ndim=2), lam=Float(0, lo_open=True),
         tol=Float(0, lo_open=True))
def max_margin_loo(X: np.ndarray, y: np.ndarray, *, lam: float = MAX_MARGIN_LAM,
                   tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """Every leave-one-out head of the squared-hinge SVM ``min_w sum_i max(0, 1 - y_i w^T
    [x_i, -1])^2 + lam ||w||^2`` (intercept penalized, as GD on augmented features treats it):
    ``(w_loo (k, n, d + 1), w (k, d + 1))``.

    Why this head: on separable data its direction converges to the bias-penalized max-margin
    direction (GD's limit, the head Theorem 2.4 is about) at rate O(lam), where the
    ridge-logistic head's converges like 1/log(1/lam) (gap 0.07 at lam = 1e-8 on d = 5 data;
    this head's is ~5e-4 at lam = 1e-6).

    Exact LOO: at the solution ``w = Z_A^T r_A / lam`` with ``r_A = (I + K_AA/lam)^{-1} 1`` on the
    active set ``A`` (``y_i w^T x~_i < 1``), ``K = Z Z^T``. Removing an inactive point changes
    nothing (the rest's optimality conditions still hold); removing an active ``i`` gives, if
    the active set keeps the rest, ``r' = (M_{A-i})^{-1} 1``, read off ``M^{-1}`` by the
    principal-submatrix formula in O(|A|^2); every candidate is checked (``r' >= 0`` on ``A - i``,
    margins ``>= 1`` off it) and the few that fail are re-solved by Newton from the full head.
    """
    _check_batch(X, y)
    Z = torch.as_tensor(np.asarray(y, dtype=np.float64))[..., None] * augment(
        torch.as_tensor(np.asarray(X, dtype=np.float64)))
    k, n, D = Z.shape
    # the dual active-set iteration (n x n systems, n < D here) starts Newton next to the
    # optimum, so that the (k, D, D) Newton systems are formed once or twice, not ~30 times
    W0 = torch.stack([_sq_hinge_active_set(Z[j], lam)[0] for j in range(k)])
    W = _sq_hinge_newton(Z, W0, lam, tol=tol, max_iter=200)
    m = torch.einsum("knd,kd->kn", Z, W)
    W_loo = W[:, None, :].expand(k, n, D).clone()
    redo = []
    for j in range(k):
        A = torch.nonzero(m[j] < 1).flatten()
        if len(A) == 0:
            continue
        ZA = Z[j, A]
        Minv = torch.linalg.inv(torch.eye(len(A), dtype=Z.dtype) + ZA @ ZA.T / lam)
        row1 = Minv.sum(1)  # M^-1 1
        # for each active i: r' = (M^-1 1)_{-i} - M^-1_{-i,i} (M^-1 1)_i / M^-1_{ii}
        R = row1[None, :] - Minv * (row1 / Minv.diagonal())[:, None]  # row i: r' (with entry i)
        R[torch.arange(len(A)), torch.arange(len(A))] = 0.0
        Wc = R @ ZA / lam  # (|A|, D)
        margins = Wc @ Z[j].T  # (|A|, n)
        inactive = torch.ones(len(A), n, dtype=torch.bool)
        inactive[:, A] = False
        ok = (R >= -1e-12).all(1) & ((margins >= 1 - 1e-9) | ~inactive).all(1)
        W_loo[j, A] = Wc
        for a in torch.nonzero(~ok).flatten().tolist():
            redo.append((j, int(A[a])))
    # the active set changed: a primal-dual active-set iteration on S^i's dual (sizes <= n,
    # not D), from A - i; Newton from the full head if it has not settled in 50 rounds
    for j, i in redo:
        keep = torch.ones(n, dtype=torch.bool)
        keep[i] = False
        w, settled = _sq_hinge_active_set(Z[j, keep], lam, act=m[j, keep] < 1)
        W_loo[j, i] = w if settled else _sq_hinge_newton(
            Z[j, keep][None], W[j:j + 1].clone(), lam, tol=tol, max_iter=200)[0]
    return W_loo.numpy(), W.numpy()


@dataclass(frozen=True)
class PoolStability:
    """Normalized LOO stability (Fu et al. Def. 2.3) of a linear head on ``k`` training sets of
    each size ``n`` drawn from a pool. ``head``: ``"max-margin"`` (default: the squared-hinge
    SVM at ``lam = 1e-6``, :func:`max_margin_loo`, whose direction is within O(lam) of the
    bias-penalized max-margin one GD converges to) or ``"ridge-logistic"`` (at ``lam``; far from
    it: gap 0.12-0.40). The direction gap to the exact bias-penalized SVM (cvxpy) is measured on
    the first ``gap_sets`` training sets of each size (``gap_to_max_margin``; NaN elsewhere and
    where a set is not separable)."""

    levels: tuple[int, ...] = (40, 80, 160, 320)
    k: int = 60
    lam: float = 1e-2
    head: str = "max-margin"
    gap_sets: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, levels=Seq(Int(2)), k=Int(1), lam=Float(0, lo_open=True),
                     seed=Seed(), head=Choice("max-margin", "ridge-logistic"),
                     gap_sets=Int(0))

    def run(self, X: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        X, ys = _check_pool(X, y)
        rng = np.random.default_rng(self.seed)
        from boundbench.synthetic.svm import BiasPenalizedSVM

        cols: dict[str, list] = {"n": [], "dataset": [], "stability": [], "max_distance": [],
                                 "max_norm": [], "train_accuracy": [], "gap_to_max_margin": []}
        for n in self.levels:
            idx = draw_sets(ys, n=n, k=self.k, rng=rng)
            if self.head == "max-margin":
                w_loo, w = max_margin_loo(X[idx], ys[idx])
            else:
                w_loo, w = ridge_logistic_loo(X[idx], ys[idx], lam=self.lam)
            gaps = np.full(self.k, np.nan)
            for j in range(min(self.gap_sets, self.k)):
                try:
                    ref = BiasPenalizedSVM().fit(X[idx[j]], ys[idx[j]]).coef_
                except ValueError:  # not separable: no max-margin direction to compare with
                    continue
                gaps[j] = float(normalized_distance(w[j], ref))
            cols["gap_to_max_margin"] += list(gaps)
            dist = normalized_distance(w_loo, w[:, None])
            margins = ys[idx] * (np.einsum("knd,kd->kn", X[idx], w[:, :-1]) - w[:, -1:])
            cols["n"] += [n] * self.k
            cols["dataset"] += list(range(self.k))
            cols["stability"] += list(dist.mean(1))
            cols["max_distance"] += list(dist.max(1))
            cols["max_norm"] += list(np.linalg.norm(X[idx], axis=-1).max(1))
            cols["train_accuracy"] += list((margins > 0).mean(1))
        return {key: np.asarray(v) for key, v in cols.items()}


@dataclass(frozen=True)
class PoolHeads:
    """MHLoss on a pool (Fu et al. Fig. 5 on given features): GD on the mean logistic loss with
    ``H`` heads, normalized LOO stability of the mean head after ``steps`` steps, ``k_loo``
    left-out points per training set of ``n``. ``nested`` (default): one run of ``max(H)``
    heads, the ``H``-head model the mean of its first ``H`` (exact, as heads train independently;
    see :class:`~boundbench.synthetic.experiments.HeadsRun`); ``False`` draws each ``H`` afresh."""

    heads: tuple[int, ...] = (1, 4, 16)
    n: int = 100
    k: int = 30
    k_loo: int = 3
    steps: int = 300
    nested: bool = True
    # Fig. 5's open choices (see HeadsRun): the LOO runs' starts, the heads' initial scale, and
    # eq. 10's step ("eq10-fixed": one head's step on the mean over H heads, no nesting)
    replica_starts: str = "shared"
    init_scale: float = 1.0
    step: str = "per-head"
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, heads=Seq(Int(1)), n=Int(4), k=Int(1), steps=Int(1), seed=Seed(),
                     nested=Bool(), replica_starts=Choice("shared", "independent"),
                     init_scale=Float(0, lo_open=True), step=Choice("per-head", "eq10-fixed"))
        check_fields(self, k_loo=Int(1, self.n))

    def run(self, X: np.ndarray, y: np.ndarray, *,
            device: str | torch.device | None = None) -> dict[str, np.ndarray]:
        """The table; the GD runs on ``device`` (default the CPU; float64 throughout, TF32
        off, see :func:`~boundbench.synthetic.train.train_heads`)."""
        from boundbench.synthetic.stability import head_loo_stability
        from boundbench.synthetic.train import mhloss_plan, train_heads

        X, ys = _check_pool(X, y)
        rng = np.random.default_rng(self.seed)
        idx = draw_sets(ys, n=self.n, k=self.k, rng=rng)
        loo = np.stack([rng.choice(self.n, self.k_loo, replace=False) for _ in range(self.k)])
        cols: dict[str, list] = {"heads": [], "dataset": [], "stability": []}
        runs = mhloss_plan(self.heads, nested=self.nested, step=self.step, k=self.k,
                           D=X.shape[1] + 1, init_scale=self.init_scale, rng=rng)
        res = {}
        for w, levels, extra in runs:
            run = train_heads(X[idx], ys[idx], steps=self.steps, heads=w, loo=loo,
                              seed=self.seed + 1000 * w, prefixes=levels,
                              init_scale=self.init_scale, replica_starts=self.replica_starts,
                              device=device, **extra)
            res.update(dict.fromkeys(levels, run))  # every H this run gives
        for h in self.heads:
            run = res[h]
            dirs = run.prefix_directions[:, :, run.prefixes.index(h)]
            stab = head_loo_stability(dirs)[:, :, -1].mean(1)  # (k,) at the end
            cols["heads"] += [h] * self.k
            cols["dataset"] += list(range(self.k))
            cols["stability"] += list(stab)
        return {key: np.asarray(v) for key, v in cols.items()}


@dataclass(frozen=True)
class PoolDistance:
    """Theorem 2.2 on a pool: GD on the ridge-logistic objective (strongly convex with
    ``mu = lam``) from ``w0 = w* + r u`` (``u`` a random unit vector, ``w*`` the full-data head)
    with the same ``w0`` for the full and the leave-one-out runs; ``sup_t ||w_t(S^i) -
    w_t(S)||`` against ``r = ||w0 - w*||``."""

    distances: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
    n: int = 100
    k: int = 30
    k_loo: int = 3
    steps: int = 300
    lam: float = 1e-2
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, distances=Seq(Float(0, lo_open=True)), n=Int(4), k=Int(1),
                     steps=Int(1), lam=Float(0, lo_open=True), seed=Seed())
        check_fields(self, k_loo=Int(1, self.n))

    def run(self, X: np.ndarray, y: np.ndarray, *,
            device: str | torch.device | None = None) -> dict[str, np.ndarray]:
        """The table; the GD runs on ``device`` (default the CPU; the draws stay on the CPU's
        generator, so the instances do not depend on the device)."""
        dev = torch.device(device) if device is not None else torch.device("cpu")
        X, ys = _check_pool(X, y)
        rng = np.random.default_rng(self.seed)
        idx = draw_sets(ys, n=self.n, k=self.k, rng=rng)
        loo = np.stack([rng.choice(self.n, self.k_loo, replace=False) for _ in range(self.k)])
        w_star = fit_ridge_logistic(X[idx], ys[idx], lam=self.lam)
        Z = (torch.as_tensor(ys[idx])[..., None] * augment(torch.as_tensor(X[idx]))).to(dev)
        k, n, D = Z.shape
        # beta of the objective: the largest eigenvalue of mean z z^T / 4 plus lam
        beta = torch.linalg.eigvalsh(torch.einsum("kni,knj->kij", Z, Z) / n)[:, -1] / 4 + self.lam
        eta = (1.0 / beta)[:, None, None, None]
        R1, L = self.k_loo + 1, len(self.distances)
        mask = torch.ones(k, R1, n, dtype=torch.float64, device=dev)
        mask[:, 1:].scatter_(-1, torch.as_tensor(loo, device=dev)[..., None], 0.0)
        weight = (mask / mask.sum(-1, keepdim=True))[:, None]  # (k, 1, R1, n)
        u = torch.as_tensor(rng.standard_normal((k, L, D)), device=dev)
        u = u / u.norm(dim=-1, keepdim=True)
        r = torch.as_tensor(self.distances, dtype=torch.float64, device=dev)[None, :, None]
        W = (torch.as_tensor(w_star, device=dev)[:, None] + r * u)[:, :, None].expand(
            k, L, R1, D).clone()
        sup = torch.zeros(k, L, R1 - 1, dtype=torch.float64, device=dev)
        for _ in range(self.steps):
            m = torch.einsum("klrd,knd->klrn", W, Z)
            s = torch.sigmoid(-m) * weight
            grad = -torch.einsum("klrn,knd->klrd", s, Z) + self.lam * W
            W = W - eta * grad
            sup = torch.maximum(sup, (W[:, :, 1:] - W[:, :, :1]).norm(dim=-1))
        out = sup.mean(-1).cpu().numpy()  # (k, L): mean over the left-out points
        return {"distance": np.repeat(np.asarray(self.distances)[None], k, 0).ravel(),
                "dataset": np.repeat(np.arange(k), L), "loo_distance": out.ravel()}


@dataclass(frozen=True)
class SeedSpread:
    """Head tuning's spread across seeds (Fu et al. Table 3's protocol on given features): for
    each number of heads ``H``, ``seeds`` runs of mini-batch Adam (the plm trainer's head
    optimizer and step size) on MHLoss's mean logistic loss of ``H`` heads, each run with its own
    initial heads ``N(0, 1/D)`` and its own mini-batch order, the heads of one run sharing its
    batches; the test accuracy of each run's mean head. All runs of all ``H`` go in one tensor
    (Adam acts entrywise, so one optimizer over the stack is the runs' own optimizers)."""

    heads: tuple[int, ...] = (1, 50)
    seeds: int = 100
    epochs: float = 5.0
    batch_size: int = 16
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        check_fields(self, heads=Seq(Int(1)), seeds=Int(2), epochs=Float(0, lo_open=True),
                     batch_size=Int(1), lr=Float(0, lo_open=True), seed=Seed())

    def run(self, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, y_test: np.ndarray, *,
            device: str | torch.device | None = None) -> dict[str, np.ndarray]:
        """The table; the runs train on ``device`` (default the CPU; the starts and batch
        orders are drawn on the CPU, so they do not depend on the device)."""
        dev = torch.device(device) if device is not None else torch.device("cpu")
        X, ys = _check_pool(X, y)
        Xt, yt = _check_pool(X_test, y_test)
        if Xt.shape[1] != X.shape[1]:
            raise ValueError(f"X_test must have X's {X.shape[1]} columns (got {Xt.shape[1]})")
        if not np.array_equal(np.unique(y), np.unique(y_test)):
            raise ValueError(f"y_test must have y's two classes {np.unique(y).tolist()} (got "
                             f"{np.unique(y_test).tolist()})")
        n, S, Hs = len(X), self.seeds, self.heads
        b = min(self.batch_size, n)
        steps = max(1, int(np.ceil(self.epochs * n / b)))
        rng = np.random.default_rng(self.seed)
        # each run's batches: fresh permutations, epoch after epoch
        per_epoch = n // b
        epochs = -(-steps // per_epoch)
        order = np.stack([np.concatenate([rng.permutation(n)[:per_epoch * b]
                                          for _ in range(epochs)])[:steps * b]
                          for _ in range(S)]).reshape(S, steps, b)
        Z = (torch.as_tensor(ys)[:, None] * augment(torch.as_tensor(X))).to(dev)  # (n, D)
        D = Z.shape[1]
        # one (S, H, D) tensor of heads per H; a run's heads share its batches
        Ws = [torch.as_tensor(rng.standard_normal((S, h, D)) / np.sqrt(D), device=dev
                              ).requires_grad_(True) for h in Hs]
        opt = torch.optim.Adam(Ws, lr=self.lr)
        idx = torch.as_tensor(order, device=dev)
        for t in range(steps):
            batch = Z[idx[:, t]]  # (S, b, D)
            # sum over runs of each run's mean loss over its heads and batch: the runs'
            # gradients stay independent
            loss = torch.stack([torch.nn.functional.softplus(-torch.einsum(
                "shd,sbd->shb", W, batch)).mean((1, 2)).sum() for W in Ws]).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        Xa = augment(torch.as_tensor(Xt)).to(dev)
        yt_dev = torch.as_tensor(yt, device=dev)
        cols: dict[str, list] = {"heads": [], "run": [], "test_accuracy": [],
                                 "train_accuracy": []}
        with torch.no_grad():
            for h, W in zip(Hs, Ws, strict=True):
                mean_head = W.mean(1)  # (S, D)
                cols["heads"] += [h] * S
                cols["run"] += list(range(S))
                cols["test_accuracy"] += list(((Xa @ mean_head.T > 0).double() * 2 - 1 ==
                                               yt_dev[:, None]).double().mean(0).cpu().numpy())
                cols["train_accuracy"] += list((Z @ mean_head.T > 0).double().mean(0).cpu()
                                               .numpy())
        return {**{k: np.asarray(v) for k, v in cols.items()},
                "steps": np.full(S * len(Hs), steps)}
