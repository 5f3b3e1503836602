"""Exact linear SVMs with cvxpy (Clarabel), in scikit-learn's estimator style, for one dataset
``X (n, d)`` or a batch ``X (k, n, d)``.

Sign convention: scikit-learn's, ``decision = X @ coef_ + intercept_``. The paper (Fu et al.)
writes the head as ``w = [v, b]`` acting on ``[x, -1]``, i.e. ``sign(v^T x - b)``; so
``v = coef_`` and ``b = -intercept_``.

Speed without giving up exactness. The hard-margin problem is solved on a *working set* of
points and grown until no point violates its constraint: a solution of the problem restricted
to a subset of the constraints that satisfies all of them is optimal for the full problem (the
restricted problem is a relaxation). Each cvxpy problem is built once per (working-set size, d)
with ``cp.Parameter``s and re-solved; padding rows are switched off by a negative right side.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from boundbench.errors import ComputationError, InvalidArgument
from boundbench.framework.inputs.validate import Array, Bool, Float, Int, checked
from boundbench.framework.inputs.values import MAX_MAGNITUDE, same_length
from boundbench.synthetic._linear import Linear as _Linear
from boundbench.synthetic._linear import check_xy as _check_xy
from boundbench.synthetic._linear import unit_scale as _unit_scale

# cvxpy is imported where an SVM is solved: with scipy.stats it is 2.5 s of every command's
# start (the catalogue imports this module), most of which solve no SVM
if TYPE_CHECKING:
    import cvxpy as cp

SOLVER = "CLARABEL"
FEAS_TOL = 1e-8  # a point violates y f(x) >= 1 when below 1 - FEAS_TOL
_SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def _solve(prob: cp.Problem, what: str) -> None:
    """``prob.solve`` with Clarabel, where a solver that gives up (cvxpy's ``SolverError``, e.g.
    on points a few 1e-3 apart that are barely separable or not at all) is a ``ValueError``
    naming the problem, like any status other than optimal: callers, and the targeted searches
    that skip the instances they cannot evaluate, see one kind of failure."""
    import cvxpy as cp
    try:
        with warnings.catch_warnings():
            # "Solution may be inaccurate": such a status is refused by every caller, by name
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            # warm_start=False: a fresh solver each time. cvxpy's default updates the solver
            # the problem last used in place, and Clarabel's answer then moved in its last
            # digits (1e-14) with whatever that problem had solved before in the process
            # (another claim's instances, in an audit's pool): a claim's numbers followed its
            # history (docs/reproducibility.md)
            prob.solve(solver=SOLVER, warm_start=False)
    except cp.error.SolverError as exc:
        raise ComputationError(f"{what} solver {SOLVER} failed without a status (numerical "
                               f"trouble: the data may be nearly or not separable): {exc}") from exc


@lru_cache(maxsize=32)
def _hard_qp(m: int, d: int):
    """``min 1/2 ||v||^2 s.t. Z v + y c >= r`` for m rows; Z = y * X. Rows with Z = 0, y = 0,
    r = -1 are padding: always satisfied with slack (r = 0 would be degenerate for the solver)."""
    import cvxpy as cp
    Z, yy, r = cp.Parameter((m, d)), cp.Parameter(m), cp.Parameter(m)
    v, c = cp.Variable(d), cp.Variable()
    con = Z @ v + yy * c >= r
    return cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [con]), Z, yy, r, v, c, con


def _solve_subset(X: np.ndarray, y: np.ndarray, idx: np.ndarray):
    import cvxpy as cp
    d = X.shape[1]
    m = next((s for s in _SIZES if s >= len(idx)), len(idx))
    prob, Z, yy, r, v, c, con = _hard_qp(m, d)
    Zv, yv, rv = np.zeros((m, d)), np.zeros(m), np.full(m, -1.0)  # padding: 0 >= -1, slack
    Zv[: len(idx)] = y[idx, None] * X[idx]
    yv[: len(idx)] = y[idx]
    rv[: len(idx)] = 1.0
    Z.value, yy.value, r.value = Zv, yv, rv
    _solve(prob, "hard-margin SVM")
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InvalidArgument(
            f"X, y are not linearly separable: the hard-margin SVM is infeasible "
            f"(solver status {prob.status!r}); use SoftMarginSVM"
        )
    if prob.status != cp.OPTIMAL:
        raise ComputationError(f"hard-margin SVM solver status {prob.status!r}, not 'optimal'")
    return np.array(v.value), float(c.value), np.array(con.dual_value[: len(idx)])


@checked(X=Array(ndim=2), y=Array(ndim=1), exclude=Int(0, optional=True))
def hard_margin_exact(
    X: np.ndarray, y: np.ndarray, *, exclude: int | None = None, start: np.ndarray | None = None
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Exact hard-margin SVM of one dataset, optionally without sample ``exclude``.

    Returns ``(v, c, duals, working_set)``; ``duals`` has one entry per sample (0 off the
    working set and for ``exclude``). ``start`` seeds the working set (the warm start of the
    leave-one-out re-solves); by default the 8 points per class nearest the other class along
    the class-mean direction.
    """
    same_length(X=X, y=y)
    # solved on X / (its largest row norm) and mapped back (v / s, c, duals / s^2), so data
    # at scale 1e-8 or 1e8 meet the solver's absolute tolerances like data at scale 1
    scale = float(np.linalg.norm(X, axis=1).max())
    if not scale > 0:
        raise InvalidArgument("X, y are not linearly separable: every x_i is 0")
    v, c, duals, work = _exact_unit(X / scale, y, exclude=exclude, start=start)
    return v / scale, c, duals / scale**2, work


def _exact_unit(
    X: np.ndarray, y: np.ndarray, *, exclude: int | None, start: np.ndarray | None
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    n = X.shape[0]
    keep = np.ones(n, dtype=bool)
    if exclude is not None:
        if not 0 <= exclude < n:
            raise InvalidArgument(f"exclude must be a sample index in [0, {n}) (got {exclude})")
        keep[exclude] = False
    if start is None:
        a = X[y > 0].mean(0) - X[y < 0].mean(0)
        s = y * (X @ a)
        s[~keep] = np.inf
        start = np.concatenate([np.flatnonzero(y == cls)[np.argsort(s[y == cls])[:8]]
                                for cls in (-1.0, 1.0)])
    work = np.unique(np.asarray(start)[keep[np.asarray(start)]])
    in_work = np.zeros(n, dtype=bool)
    for _ in range(64):
        in_work[work] = True
        v, c, dual = _solve_subset(X, y, work)
        slack = y * (X @ v + c)
        # points of the working set may sit a solver tolerance below 1; only outsiders count
        bad = np.flatnonzero((slack < 1.0 - FEAS_TOL) & keep & ~in_work)
        if bad.size == 0:
            duals = np.zeros(n)
            duals[work] = dual
            return v, c, duals, work
        # add the worst violators (at most as many as the working set already has)
        add = bad[np.argsort(slack[bad])[: max(8, len(work))]]
        work = np.union1d(work, add)
    raise RuntimeError("hard-margin working set did not converge in 64 rounds")


class HardMarginSVM(_Linear):
    """``min 1/2 ||v||^2  s.t.  y_i (v^T x_i + c) >= 1`` solved exactly with cvxpy.

    ``fit(X, y)`` takes one dataset ``(n, d)`` or a batch ``(k, n, d)``; learned attributes then
    carry a leading batch axis. ``coef_`` (v), ``intercept_`` (c = -b), ``margin_``
    (= 1/||coef_||), ``dual_coef_`` (constraint duals, one per sample), ``support_`` (indices
    whose dual exceeds ``support_tol`` times the largest; a list of arrays for a batch),
    ``n_working_`` (size of the final working set), ``scale_`` (the power of 2 the problem was
    solved at: X / scale_ has unit magnitude). Non-separable data raise ``ValueError``
    carrying the solver status.
    """

    def __init__(self, *, support_tol: float = 1e-6, margin_tol: float = 1e-6) -> None:
        self.support_tol = support_tol
        self.margin_tol = margin_tol

    def fit(self, X: ArrayLike, y: ArrayLike) -> HardMarginSVM:
        for name in ("support_tol", "margin_tol"):
            t = getattr(self, name)
            if not (isinstance(t, int | float) and 0 < t < 1):
                raise InvalidArgument(f"{name} must be in (0, 1) (got {t!r})")
        Xb, yb, batched = _check_xy(X, y)
        # the problem is scale-equivariant (x -> s x: v -> v/s, c and the support unchanged,
        # duals -> duals/s^2): data far from unit scale are solved at unit scale, by a power of
        # 2 (exact), so that X * 1e200 is not called non-separable by the solver's tolerances
        scales = [_unit_scale(Xk) for Xk in Xb]
        out = [hard_margin_exact(Xk / sk, yk) for Xk, yk, sk in zip(Xb, yb, scales, strict=True)]
        coef = np.stack([o[0] / sk for o, sk in zip(out, scales, strict=True)])
        intercept = np.array([o[1] for o in out])
        duals = np.stack([o[2] for o in out])  # of the unit-scale problem: the support's
        # a support vector has a dual above support_tol of the largest *and* sits on the margin
        # (y f(x) = 1 within margin_tol): a solver's small positive duals off the margin are not
        margins = yb * (np.einsum("knd,kd->kn", Xb, coef) + intercept[:, None])
        support = [np.flatnonzero((dk > self.support_tol * dk.max())
                                  & (np.abs(mk - 1.0) <= self.margin_tol))
                   for dk, mk in zip(duals, margins, strict=True)]
        with np.errstate(under="ignore", over="ignore"):
            # beyond |X| ~ 1e+-150 the true duals leave float64's range (0 or inf there)
            duals = duals / np.array(scales)[:, None] / np.array(scales)[:, None]
        self.coef_ = coef if batched else coef[0]
        self.intercept_ = intercept if batched else float(intercept[0])
        self._dual_coef = duals if batched else duals[0]
        self.scale_ = np.array(scales) if batched else scales[0]
        self.support_ = support if batched else support[0]
        # 1/||v|| without squaring v (||v|| ~ 1e-200 for X ~ 1e200 would underflow)
        big = np.abs(self.coef_).max(axis=-1)
        self.margin_ = 1.0 / (big * np.linalg.norm(self.coef_ / np.expand_dims(big, -1), axis=-1))
        self.n_working_ = np.array([len(o[3]) for o in out]) if batched else len(out[0][3])
        self.working_sets_ = [o[3] for o in out]
        return self

    @property
    def dual_coef_(self) -> np.ndarray:
        """The constraint duals, one per sample; refused where they leave float64's range
        (|X| beyond about 1e+-150: they scale as 1/scale^2), never an infinity (issue 65)."""
        if not hasattr(self, "_dual_coef"):
            raise AttributeError("dual_coef_: this HardMarginSVM is not fitted")
        if not np.all(np.isfinite(self._dual_coef)):
            raise InvalidArgument(f"dual_coef_ of X with magnitude near {np.min(self.scale_):.3g} "
                                  "lies beyond float64's range (duals scale as 1/scale^2): fit X / "
                                  "scale_ and divide its duals by scale_**2 in a wider type")
        return self._dual_coef


@checked(support_tol=Float(0, 1, lo_open=True, hi_open=True))
def hard_margin_loo(X: ArrayLike, y: ArrayLike, *, support_tol: float = 1e-6):
    """Exact leave-one-out hard-margin SVMs of one dataset: ``(v_loo (n, d), c_loo (n,), v, c)``.

    Only support vectors are re-solved. Proof that the rest need not be: let ``(v, c)`` solve
    the problem on S with KKT multipliers ``alpha`` and ``alpha_i = 0``. Dropping constraint i
    leaves ``(v, c)`` feasible, and ``(v, c, alpha without i)`` still satisfies stationarity
    ``v = sum_j alpha_j y_j x_j``, ``sum_j alpha_j y_j = 0``, complementary slackness and dual
    feasibility, i.e. the KKT conditions of the problem on ``S^i``; the problem is convex, so
    ``(v, c)`` is optimal for ``S^i``, and unique in v (strictly convex objective) and in c (a
    support vector with ``alpha_j > 0`` fixes ``c`` by ``y_j (v^T x_j + c) = 1``). Support
    vectors are read from the duals (``> support_tol`` times the largest). The re-solves are
    warm-started from the full problem's final working set.
    """
    Xb, yb, batched = _check_xy(X, y)
    if batched:
        raise InvalidArgument("X must be one dataset (n, d) for hard_margin_loo; for a batch use "
                              "boundbench.synthetic.stability.svm_loo_stability")
    X, y = Xb[0], yb[0]
    if min((y > 0).sum(), (y < 0).sum()) < 2:
        raise InvalidArgument(f"y must hold >= 2 points of each class so that each leave-one-out "
                              f"set has both (got {int((y > 0).sum())} positive, "
                              f"{int((y < 0).sum())} negative)")
    v, c, duals, work = hard_margin_exact(X, y)
    n = len(y)
    v_loo = np.broadcast_to(v, (n, v.size)).copy()
    c_loo = np.full(n, c)
    for i in np.flatnonzero(duals > support_tol * duals.max()):
        v_loo[i], c_loo[i], _, _ = hard_margin_exact(X, y, exclude=int(i), start=work)
    return v_loo, c_loo, v, c


@lru_cache(maxsize=16)
def _soft_qp(n: int, d: int, penalize_intercept: bool = False):
    """``min lam ||v||^2 + sum_i a_i xi_i s.t. xi >= 0, xi >= 1 - (Z v + y c)``; weights a.
    ``penalize_intercept``: ``lam (||v||^2 + c^2)`` instead, strongly convex in ``w = [v, b]``."""
    import cvxpy as cp
    Z, yy, a = cp.Parameter((n, d)), cp.Parameter(n), cp.Parameter(n, nonneg=True)
    lam = cp.Parameter(nonneg=True)
    v, c, xi = cp.Variable(d), cp.Variable(), cp.Variable(n)
    reg = cp.sum_squares(v) + (cp.square(c) if penalize_intercept else 0)
    prob = cp.Problem(cp.Minimize(lam * reg + a @ xi), [xi >= 0, xi >= 1 - (Z @ v + yy * c)])
    return prob, Z, yy, a, lam, v, c


def _soft_solve(X: np.ndarray, y: np.ndarray, weights: np.ndarray, lam: float,
                penalize_intercept: bool = False):
    import cvxpy as cp
    prob, Z, yy, a, lm, v, c = _soft_qp(*X.shape, penalize_intercept)
    Z.value, yy.value, a.value, lm.value = y[:, None] * X, y, weights, lam
    _solve(prob, "soft-margin SVM")
    if prob.status != cp.OPTIMAL:
        raise ComputationError(f"soft-margin SVM solver status {prob.status!r}, not 'optimal'")
    return np.array(v.value), float(c.value)


class SoftMarginSVM(_Linear):
    """Lemma A.2.5's objective exactly: ``min lam ||v||^2 + (1/n) sum_i hinge(y_i (v^T x_i + c))``.

    The intercept is not penalized (as in the paper's ``L_S(v, b)``). Attributes as
    :class:`HardMarginSVM` (``coef_``, ``intercept_``), for one dataset or a batch.
    """

    def __init__(self, *, lam: float = 1e-2) -> None:
        self.lam = lam

    def fit(self, X: ArrayLike, y: ArrayLike) -> SoftMarginSVM:
        if isinstance(self.lam, bool) or not (isinstance(self.lam, int | float)
                                              and 0 < self.lam <= MAX_MAGNITUDE):
            raise InvalidArgument(f"lam must be a finite number in (0, {MAX_MAGNITUDE:g}] (got "
                                  f"{self.lam!r})")
        Xb, yb, batched = _check_xy(X, y, MAX_MAGNITUDE)
        n = Xb.shape[1]
        out = [_soft_solve(Xk, yk, np.full(n, 1.0 / n), self.lam) for Xk, yk in zip(Xb, yb,
                                                                                  strict=True)]
        coef = np.stack([o[0] for o in out])
        intercept = np.array([o[1] for o in out])
        self.coef_ = coef if batched else coef[0]
        self.intercept_ = intercept if batched else float(intercept[0])
        return self


@checked(lam=Float(0, lo_open=True), penalize_intercept=Bool())
def soft_margin_loo(X: ArrayLike, y: ArrayLike, *, lam: float, penalize_intercept: bool = False):
    """Leave-one-out soft-margin SVMs (weights ``1/(n-1)`` on the rest, as Lemma A.2.5's
    ``L_{S^i}``) of one dataset: ``(v_loo (n, d), c_loo (n,), v, c)``. Every i is re-solved on
    the one parameterized problem; only the weight vector changes. ``penalize_intercept``:
    ``lam ||[v, b]||^2``, the objective whose minimizer is unique (the reading under which
    Lemma A.2.5's strong-convexity step is valid)."""
    Xb, yb, batched = _check_xy(X, y, MAX_MAGNITUDE)
    if batched:
        raise InvalidArgument(f"X must be one dataset (n, d) for soft_margin_loo (got shape "
                              f"{Xb.shape})")
    if not lam > 0:
        raise InvalidArgument(f"lam must be > 0 (got {lam})")
    X, y = Xb[0], yb[0]
    n = len(y)
    v, c = _soft_solve(X, y, np.full(n, 1.0 / n), lam, penalize_intercept)
    v_loo, c_loo = np.empty((n, X.shape[1])), np.empty(n)
    for i in range(n):
        w = np.full(n, 1.0 / (n - 1))
        w[i] = 0.0
        v_loo[i], c_loo[i] = _soft_solve(X, y, w, lam, penalize_intercept)
    return v_loo, c_loo, v, c


def soft_margin_intercepts(X: ArrayLike, y: ArrayLike, v: ArrayLike, weights: ArrayLike
                           ) -> tuple[np.ndarray, np.ndarray]:
    """The set of optimal intercepts ``c`` of the soft-margin SVM given its (unique) ``v``:
    ``(c_low, c_high)``, one interval per row of ``v (m, d)`` and ``weights (m, n)``.

    Why a set: ``lam ||v||^2 + sum_i a_i hinge(y_i (v^T x_i + c))`` is strictly convex in ``v``,
    so ``v`` is unique (the midpoint of two optima with different ``v`` would be better), but
    it is piecewise linear in the unpenalized ``c``. Its slope in ``c`` on the open segment
    between two consecutive breakpoints ``t_j = y_j - v^T x_j`` is ``a`` times
    ``#{y_j = -1, t_j < c} - #{y_j = +1, t_j > c}``; where that count is 0 the objective is flat
    and every ``c`` of the segment is optimal (balanced classes, most points inside the margin:
    an interval up to ~2 wide). The count is an integer, so flatness is decided exactly, with no
    tolerance. This is the one-dimensional LP ``min_c sum_i a_i xi_i`` solved in closed form.

    ``weights``: each row's non-zero weights must be equal (``1/n`` on S, ``1/(n - 1)`` on S^i
    with the left-out point at 0), as in Lemma A.2.5's ``L_S`` and ``L_{S^i}``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    V = np.atleast_2d(np.asarray(v, dtype=np.float64))
    W = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if X.ndim != 2 or y.shape != X.shape[:1] or V.shape[1:] != X.shape[1:]:
        raise InvalidArgument(f"X must be (n, d), y (n,) and v (m, d) (got {X.shape}, {y.shape}, "
                              f"{V.shape})")
    if W.shape != (V.shape[0], X.shape[0]) or np.any(W < 0) or not np.all(np.isfinite(W)):
        raise InvalidArgument(f"weights must be finite, >= 0 and of shape {(V.shape[0], X.shape[0])} "
                              f"(got {W.shape})")
    active = W > 0
    top = np.where(active, W, 0).max(1, keepdims=True)
    if np.any(active & ~np.isclose(W, top, rtol=1e-12, atol=0)):
        raise InvalidArgument("weights must be equal on the points they keep (1/n or 1/(n - 1))")
    pos, neg = active & (y > 0), active & (y < 0)
    if np.any(~pos.any(1) | ~neg.any(1)):
        raise InvalidArgument("every row of weights must keep both classes")
    t = np.where(active, y - V @ X.T, np.inf)  # breakpoints; a dropped point has none
    order = np.argsort(t, axis=1, kind="stable")
    ts = np.take_along_axis(t, order, 1)
    sneg = np.take_along_axis(neg, order, 1).cumsum(1)
    spos = np.take_along_axis(pos, order, 1).cumsum(1)
    # count on the segment right of the k-th sorted breakpoint (the last valid one ends at +inf)
    count = sneg - (spos[:, -1:] - spos)
    m = active.sum(1, keepdims=True)
    k = np.arange(t.shape[1])[None, :]
    seg = k < m - 1  # bounded segments
    flat = (count == 0) & seg
    has_flat = flat.any(1)
    first = np.argmax(flat, 1)
    last = t.shape[1] - 1 - np.argmax(flat[:, ::-1], 1)
    rows = np.arange(len(ts))
    # no flat segment: the optimum is the breakpoint where the count turns positive
    turn = np.argmax((count > 0) & (k < m), 1)
    lo = np.where(has_flat, ts[rows, first], ts[rows, turn])
    hi = np.where(has_flat, ts[rows, np.minimum(last + 1, t.shape[1] - 1)], ts[rows, turn])
    return lo, hi


class BiasPenalizedSVM:
    """``min 1/2 ||w||^2  s.t.  y_i w^T [x_i, -1] >= 1``: the hard-margin SVM on the augmented
    features, its intercept ``b`` penalized with ``v`` (``w = [v, b]``). Gradient descent on a
    separable logistic or exponential loss of ``y w^T x~`` converges in direction to *this*
    solution (Soudry et al. 2018, Thm 3, applied to ``x~``), not to :class:`HardMarginSVM`, whose
    intercept is free; the two differ wherever the intercept matters.

    ``fit(X, y)`` takes ``(n, d)`` or a batch ``(k, n, d)``; ``coef_`` is ``w = [v, b]``
    (``(d + 1,)`` or ``(k, d + 1)``), ``margin_ = 1/||w||``. Non-separable data (through the
    origin of the augmented space) or a solver status other than optimal raise ``ValueError``."""

    def fit(self, X: ArrayLike, y: ArrayLike) -> BiasPenalizedSVM:
        import cvxpy as cp
        Xb, yb, batched = _check_xy(X, y, MAX_MAGNITUDE)
        k, n, d = Xb.shape
        Z = cp.Parameter((n, d + 1))
        w = cp.Variable(d + 1)
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w)), [Z @ w >= 1])
        coefs = []
        for Xk, yk in zip(Xb, yb, strict=True):
            Z.value = yk[:, None] * np.concatenate([Xk, -np.ones((n, 1))], axis=1)
            _solve(prob, "bias-penalized SVM")
            if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
                raise InvalidArgument(f"X, y are not separable by a plane w^T [x, -1] = 0 (solver "
                                      f"status {prob.status!r})")
            if prob.status != cp.OPTIMAL:
                raise ComputationError(f"bias-penalized SVM solver status {prob.status!r}, not "
                                       "'optimal'")
            coefs.append(np.array(w.value))
        coef = np.stack(coefs)
        self.coef_ = coef if batched else coef[0]
        self.margin_ = 1.0 / np.linalg.norm(self.coef_, axis=-1)
        return self
