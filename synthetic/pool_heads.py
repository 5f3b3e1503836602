"""The linear heads fitted on a pool of features, each with its exact batched leave-one-out:
the ridge-logistic head, ``min_w mean_i log(1 + exp(-y_i w^T [x_i, -1])) + (lam/2) ||w||^2`` on
the augmented features (the intercept penalized with the weights, as GD on augmented features
treats it), solved by Newton to a gradient norm below ``tol``; and the max-margin head, a
squared-hinge SVM at ``lam = 1e-6`` (:data:`MAX_MARGIN_LAM`) by an exact active-set Newton,
within ``O(lam)`` of the max-margin direction. Where a training set is separable and ``lam`` is
small, the ridge-logistic direction approaches the max-margin one too (Rosset et al. 2004),
without the hard-margin QP's cost in 384 dimensions. The experiments that use them are in
:mod:`boundbench.synthetic.pools`.
"""

from __future__ import annotations

import numpy as np
import torch

from boundbench.errors import ComputationError, InvalidArgument
from boundbench.framework.execution.executors import one_torch_thread
from boundbench.framework.inputs.validate import Array, Float, Int, Rng, as_generator, checked
from boundbench.synthetic.train import augment


def _solve(A: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.solve`` on one torch thread: torch 2.13's batched LU (MKL) failed on 2
    threads at the features claims' 385 x 385 Newton systems ("Pivots given to lu_solve must
    all be greater or equal to 1" for batches of 2, 3 and 6 systems; 1 and 40 passed), and a
    solver's last bits can follow the thread count; on one thread neither happens
    (``tests/test_max_margin_head.py``)."""
    with one_torch_thread():
        return torch.linalg.solve(A, b)


def _inv(A: torch.Tensor) -> torch.Tensor:
    """``torch.linalg.inv`` on one torch thread, for :func:`_solve`'s reasons."""
    with one_torch_thread():
        return torch.linalg.inv(A)


def _check_batch(X: np.ndarray, y: np.ndarray) -> None:
    """Datasets ``X (k, n, d)`` with labels ``y (k, n)``, or a ValueError naming both."""
    if np.shape(y) != np.shape(X)[:2]:
        raise InvalidArgument(f"y must have shape (k, n) = {np.shape(X)[:2]} to match X of shape "
                              f"{np.shape(X)} (got {np.shape(y)})")


def check_pool(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (len(X),):
        raise InvalidArgument(f"the pool must be X (N, d) with labels y (N,) (got {X.shape}, {y.shape})")
    classes = np.unique(y)
    if len(classes) != 2:
        raise InvalidArgument(f"the pool needs binary labels (got {len(classes)} classes)")
    if not np.all(np.isfinite(X)):
        raise InvalidArgument("the pool's features must be finite")
    return X, np.where(y == classes[1], 1.0, -1.0)


@checked(y=Array(ndim=1), n=Int(2), k=Int(1), rng=Rng(), min_per_class=Int(1),
         needs=lambda a: 8.0 * a["k"] * a["n"])  # the k index sets
def draw_sets(y: np.ndarray, *, n: int, k: int, rng: np.random.Generator | int,
              min_per_class: int = 2) -> np.ndarray:
    """``k`` training sets of ``n`` distinct pool indices ``(k, n)``, each with at least
    ``min_per_class`` points of either class (redrawn otherwise)."""
    rng = as_generator(rng)
    N = len(y)
    if not 2 * min_per_class <= n <= N:
        raise InvalidArgument(f"n must lie in [2 * min_per_class, len(y)] = [{2 * min_per_class}, "
                              f"{N}] (got n={n}, min_per_class={min_per_class})")
    out = np.empty((k, n), dtype=int)
    for j in range(k):
        for _ in range(1000):
            idx = rng.choice(N, n, replace=False)
            pos = int((y[idx] > 0).sum())
            if min(pos, n - pos) >= min_per_class:
                out[j] = idx
                break
        else:
            raise InvalidArgument(f"cannot draw {n} points with {min_per_class} of each class")
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
        raise InvalidArgument(f"lam must be > 0 (got {lam})")
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
        W = W - _solve(H, g)[:, None]
    else:
        raise ComputationError(f"Newton did not reach tol={tol} in {max_iter} iterations (lam={lam})")
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
    Minv = _inv(M)
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
        raise ComputationError(f"the leave-one-out solves did not reach tol={tol} in {max_iter} "
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
        step = _solve(H, g)
        t = torch.ones(k, dtype=Z.dtype)
        f0, slope = objective(W), (g * step).sum(1)
        for _ in range(60):
            new = W - t[:, None] * step
            bad = objective(new) > f0 - 1e-4 * t * slope
            if not bool(bad.any()):
                break
            t = torch.where(bad, t / 2, t)
        W = new
    raise ComputationError(f"the squared-hinge Newton did not reach tol={tol} in {max_iter} steps "
                           f"(lam={lam})")


def _sq_hinge_active_set(Z: torch.Tensor, lam: float, *, act: torch.Tensor | None = None,
                         rounds: int = 50, K: torch.Tensor | None = None
                         ) -> tuple[torch.Tensor, bool]:
    """The squared-hinge head of one training set ``Z (n, D)`` by the primal-dual active-set
    iteration on its dual: ``w = Z_A^T r_A / lam``, ``r_A = (I + K_AA / lam)^{-1} 1`` for the
    active set ``A`` (margins below 1), from ``act`` (every point when None) until ``A``
    repeats with ``r_A >= 0``: ``(w, True)``; ``(the last iterate, False)`` if it has not
    settled in ``rounds`` (the caller finishes by Newton). ``K``: the Gram matrix ``Z Z^T``
    when the caller has it."""
    n = Z.shape[0]
    K = Z @ Z.T if K is None else K
    act = torch.ones(n, dtype=torch.bool) if act is None else act.clone()
    r = torch.zeros(n, dtype=Z.dtype)
    for _ in range(rounds):
        idx = torch.nonzero(act).flatten()
        r = torch.zeros(n, dtype=Z.dtype)
        r[idx] = _solve(torch.eye(len(idx), dtype=Z.dtype) + K[idx][:, idx] / lam,
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

    Runs on one torch thread: on two, MKL's dgemm summed an active set's 27 x 385 Gram matrix
    in another order, and every LOO head of that training set moved in its last bits.
    """
    _check_batch(X, y)
    with one_torch_thread():
        return _max_margin_loo(X, y, lam=lam, tol=tol)


def _max_margin_loo(X: np.ndarray, y: np.ndarray, *, lam: float, tol: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    Z = torch.as_tensor(np.asarray(y, dtype=np.float64))[..., None] * augment(
        torch.as_tensor(np.asarray(X, dtype=np.float64)))
    k, n, D = Z.shape
    # the dual active-set iteration (n x n systems, n < D here) starts Newton next to the
    # optimum, so that the (k, D, D) Newton systems are formed once or twice, not ~30 times
    grams = torch.bmm(Z, Z.transpose(1, 2))  # (k, n, n); the LOO re-solves take theirs
    W0 = torch.stack([_sq_hinge_active_set(Z[j], lam, K=grams[j])[0] for j in range(k)])
    W = _sq_hinge_newton(Z, W0, lam, tol=tol, max_iter=200)
    m = torch.einsum("knd,kd->kn", Z, W)
    W_loo = W[:, None, :].expand(k, n, D).clone()
    redo = []
    for j in range(k):
        A = torch.nonzero(m[j] < 1).flatten()
        if len(A) == 0:
            continue
        ZA = Z[j, A]
        Minv = _inv(torch.eye(len(A), dtype=Z.dtype) + ZA @ ZA.T / lam)
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
        # the Gram matrix of S^i is the full set's less row and column i: read, not recomputed
        # (thousands of re-solves at paper scale; the product was most of their time)
        w, settled = _sq_hinge_active_set(Z[j, keep], lam, act=m[j, keep] < 1,
                                          K=grams[j][keep][:, keep])
        W_loo[j, i] = w if settled else _sq_hinge_newton(
            Z[j, keep][None], W[j:j + 1].clone(), lam, tol=tol, max_iter=200)[0]
    return W_loo.numpy(), W.numpy()

