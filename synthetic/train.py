"""Full-batch gradient descent on linear heads, batched over datasets x LOO replicas x heads.

Everything runs as one tensor program per chunk of datasets: weights ``W`` have shape
``(k, R + 1, H, D)`` (datasets, replica 0 = all of S and replica r = S without sample
``loo[:, r-1]``, heads, augmented dimension ``D = d + 1``); replicas differ only through a
sample mask. Heads of one dataset start from independent draws; all replicas of a dataset share
those starts, so a LOO difference measures the algorithm, not the initialization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.executors import one_torch_thread
from boundbench.framework.inputs.validate import (
    MAX_DRAWS,
    Array,
    Bool,
    Choice,
    Float,
    Int,
    IntSeq,
    Rng,
    Seed,
    Seq,
    Tensor,
    as_array,
    as_generator,
    check_fields,
    checked,
    iterations,
)
from boundbench.methods import Method, Trainer
from boundbench.synthetic._gd_steps import _gd_chunk, _gd_chunk_samples, _sample_space

LOSSES = ("exponential", "logistic")


@checked(X=Array(ndim=(2, 3)))
def augment(X: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``[x, -1]``: the paper's augmented features, so that ``w = [v, b]`` scores ``v^T x - b``."""
    X = torch.as_tensor(X)
    return torch.cat([X, -torch.ones(*X.shape[:-1], 1, dtype=X.dtype, device=X.device)], dim=-1)


@checked(
    Xa=Tensor(ndim=3), y=Tensor(ndim=2), W0=Tensor(ndim=3), loss=Choice("exponential", "logistic"))
def stable_lr(Xa: torch.Tensor, y: torch.Tensor, W0: torch.Tensor, loss: str) -> torch.Tensor:
    """Largest step ``2/beta`` per dataset and head, ``(k, H)``, for which GD on the *mean* loss
    cannot diverge.

    Theorem 2.4 asks for ``eta < 2 beta^-1 sigma_max^-1(X~)``. Soudry et al. (2018), whose
    Theorem 3 the proof uses, state ``eta < 2 beta^-1 sigma_max^-2(X)`` for the *summed* loss
    (beta the smoothness of the scalar loss); the paper drops the square. For the mean loss the
    Hessian is ``(1/n) sum l''(m_i) x_i x_i^T``, so we use ``beta_eff = beta_l sigma_max^2 / n``
    with ``beta_l = 1/4`` for the logistic loss; the exponential loss is not globally smooth,
    but GD with this step keeps the loss below its start, where ``l''(m_i) = e^{-m_i} <= n L(w0)``,
    hence ``beta_eff = L(w0) sigma_max^2``, with ``L(w0)`` the head's own starting loss: a step
    that depended on the other heads (their largest starting loss) would make a head's path
    depend on how many heads train beside it, and the H-head model would no longer be the mean
    of the first H heads of a wider run.
    """
    n = Xa.shape[-2]
    # sigma_max^2 as the top eigenvalue of a Gram matrix: MKL's SVD of the (n, D)
    # matrix gives other last bits with another thread count, and a Dask worker runs with
    # fewer threads than the client, so a block's heads would differ from the serial run's
    # (the smaller of the two Gram matrices: ``X^T X`` and ``X X^T`` share their top eigenvalue)
    gram = Xa.transpose(-1, -2) @ Xa if n >= Xa.shape[-1] else Xa @ Xa.transpose(-1, -2)
    with one_torch_thread():
        # and on one thread: the eigensolver's last bits followed the thread count at the
        # features claims' 100 x 100 and 385 x 385 (Fig. 5's 6 x 6 never), which moved every
        # head of a run with more threads (a Dask worker's) off the audit's one-thread bits
        smax2 = torch.linalg.eigvalsh(gram)[..., -1]
    if loss == "logistic":
        beta = (smax2 / (4 * n))[:, None].expand(-1, W0.shape[1])
    else:
        m = y[:, None, :] * torch.einsum("knd,khd->khn", Xa, W0)
        beta = torch.exp(-m).mean(-1) * smax2[:, None]
    return 2.0 / beta


_FLOATS = (torch.float32, torch.float64)


@dataclass(frozen=True)
class Numerics:
    """How :func:`train_heads` does its arithmetic, apart from the algorithm: the heads' float
    type ``dtype``; the per-step slopes' ``slope_dtype`` (the margins, logistic slopes and
    gradient sums; ``None``: ``dtype``; float32 slopes with float64 heads run the step 2.5x as
    fast on a 2-core CPU, within 1e-3 relative of the float64 stability, see
    :func:`train_heads`); the ``device`` (``None``: the CPU) and ``chunk_elems``, the elements a
    chunk of datasets holds (memory only: the chunks give the same numbers).

    Examples
    --------
    >>> import torch
    >>> Numerics(slope_dtype=torch.float32).slope_dtype
    torch.float32
    """

    dtype: torch.dtype = torch.float64
    slope_dtype: torch.dtype | None = None
    device: str | torch.device | None = None
    chunk_elems: int = 2**24

    def __post_init__(self) -> None:
        check_fields(self, chunk_elems=Int(1, 2**40, why="a chunk that large holds no memory"))
        slopes = self.dtype if self.slope_dtype is None else self.slope_dtype
        if self.dtype not in _FLOATS or slopes not in _FLOATS:
            # half precision overflows the slopes
            raise InvalidArgument(f"dtype and slope_dtype must be torch.float32 or torch.float64 "
                                  f"(got {self.dtype} and {self.slope_dtype}): half precision "
                                  "overflows the slopes")
        object.__setattr__(self, "slope_dtype", slopes)
        if self.device is not None and not isinstance(self.device, str | torch.device):
            raise InvalidArgument(f"device must be a torch device or its name (got {self.device!r})")


@dataclass(frozen=True)
class GDHeads:
    """Result of :func:`train_heads`. ``directions``: the unit direction of the mean of all
    heads, ``(k, R + 1, len(steps), D)``; ``prefix_directions``: the unit direction of the mean
    of the first ``h`` heads for each ``h`` in ``prefixes``, ``(k, R + 1, len(prefixes),
    len(steps), D)`` (its last entry is ``directions``); ``weights``: final heads
    ``(k, R + 1, H, D)``."""

    steps: np.ndarray
    directions: np.ndarray
    weights: np.ndarray
    lr: np.ndarray  # (k, H): the step of every head (equal across heads for the logistic loss)
    loss: str
    prefixes: tuple[int, ...]
    prefix_directions: np.ndarray


def _dense(steps: int) -> float:
    """A point count past which the log grid rounds onto every step: its spacing,
    ``log(steps) / (n - 1)``, is then below the narrowest rounding interval's log-width,
    about ``1 / (2 steps)`` (at the last step), with a factor 2 to spare."""
    return 4 * steps * max(np.log(steps), 1.0) + 2


@checked(steps=Int(1), n_points=Int(1),
         # the grid, its rounding and its integers (16 bytes a point at the peak); a count past
         # _dense needs none of them: every step is recorded
         needs=lambda a: 0.0 if a["n_points"] > _dense(a["steps"]) else 16.0 * a["n_points"])
def record_steps(steps: int, n_points: int) -> np.ndarray:
    """About ``n_points`` log-spaced step counts in ``[1, steps]`` (every step where
    ``n_points`` is so large that the grid rounds onto each, computed without the grid: the
    same array, checked for steps up to 10^5)."""
    if n_points > _dense(steps):
        return np.arange(1, steps + 1)
    return np.unique(np.round(np.logspace(0, np.log10(steps), n_points)).astype(int))


#: What :func:`train_heads` gives a method: several heads, trained on eq. 10's mean over heads
#: of the margin loss (MHLoss's task loss with the logistic or exponential loss) and nothing else.
HEADS_TRAINER = Trainer("linear-heads GD", frozenset({"heads", "task-loss"}))


def _no_tf32(fn):
    """Run ``fn`` with TF32 matmuls and convolutions off, restored afterwards: TF32 (which
    torch.compile suggests on Ampere GPUs) moves the GD heads' stability by 2-10%, the size of
    Fig. 5's effect; float32 proper stays within the tolerance :func:`train_heads` states."""
    import functools

    @functools.wraps(fn)
    def call(*args, **kwargs):
        old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        try:
            return fn(*args, **kwargs)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old

    return call


@checked(
    X=Array(ndim=3), y=Array(ndim=2), loss=Choice("exponential", "logistic"), steps=iterations(1),
    heads=Int(1), lr=Float(0, lo_open=True, optional=True), init_scale=Float(0), record=Int(1),
    seed=Seed(), prefixes=IntSeq(1), w0=Array(ndim=3, optional=True),
    lr_scale=Float(0, 1, lo_open=True), replica_starts=Choice("shared", "independent"),
    # the heads (k x H x d) and, per dataset, the recorded steps
    needs=lambda a: 8.0 * a["X"].shape[0] * (a["heads"] * a["X"].shape[2]
                                              + min(a["record"], a["steps"])))  # distinct steps
@_no_tf32
def train_heads(X: np.ndarray, y: np.ndarray, *, loss: str = "logistic", steps: int = 1000,
                heads: int = 1, loo: np.ndarray | None = None, lr: float | None = None,
                init_scale: float = 1.0, record: int = 30, seed: int = 0,
                prefixes: tuple[int, ...] = (), w0: np.ndarray | None = None,
                lr_scale: float = 1.0, replica_starts: str = "shared",
                numerics: Numerics | None = None, progress: bool = False,
                method: Method | None = None) -> GDHeads:
    """Full-batch GD on ``mean_i loss(y_i w^T [x_i, -1])`` for every dataset, replica and head.

    ``method``: a method of the shared interface instead of ``heads``: plain GD (one head) or
    :class:`~boundbench.methods.penalties.MHLoss` (eq. 10, its ``heads``); this trainer refuses
    any other (:data:`HEADS_TRAINER`).

    ``X (k, n, d)``, ``y (k, n)``; ``loo (k, R)`` holds the left-out sample of each LOO replica.
    ``lr``: a fixed step, which must be below :func:`stable_lr` of every dataset (``ValueError``
    otherwise), or ``None`` for half of it (``1/beta_eff``) per dataset and head. Heads start from
    ``N(0, init_scale^2 / D)``, or from ``w0 (k, heads, D)`` when given; MHLoss is the mean head,
    whose direction is what is recorded.

    ``lr_scale`` multiplies the default step (``1/H`` is GD on eq. 10's mean over heads with the
    step of one head's loss: each head then moves ``H`` times slower). ``replica_starts``:
    ``"shared"`` (the LOO replicas start from the full run's heads) or ``"independent"`` (each
    replica draws its own heads; ``w0`` then gives only the full run's).

    ``numerics`` (:class:`Numerics`): the heads' ``dtype``, the device, the chunk size and
    ``slope_dtype``, the precision of the per-step work over the samples (the margins, the
    logistic slopes and the gradient sums, ``2 n`` multiply-adds and one sigmoid per sample and
    column), while the heads themselves accumulate in ``dtype``. ``torch.float32`` there with
    float64 heads runs the step 2.5x as fast on a 2-core CPU and keeps the normalized stability
    within 1e-3 relative of the float64 run at the ends of Fig. 5's grid (measured 5.3e-4 at
    n = 2,000, t = 3,000; 3e-7 at n = 50; ``tests/test_train.py`` holds it there,
    ``benchmarks/bench_fig5.py`` prints both); float32 *heads* drift to 7e-2. Differences
    between head counts under shared starts are of that order (Fig. 5's ratios are 1.000 +-
    0.001), so the claims keep float64; TF32 is never used.

    ``prefixes``: head counts ``h <= heads`` whose mean over the *first* ``h`` heads is recorded
    too. Heads train independently (Fu et al. Cor. 3.1: the gradient of MHLoss's mean loss in
    ``w_h`` involves ``w_h`` alone), so one run of ``max(H)`` heads gives the ``H``-head model for
    every ``H`` exactly: Fig. 5's grid ``H in {1, 5, 10, 20, 50, 100}`` costs 100 heads, not 186,
    and the H levels share their first heads (common random numbers).

    With fewer samples than 1.5 times ``D`` (frozen encoder features) and one precision, the
    steps run in the span of the samples, ``W = W0 + Z^T A`` (``synthetic/_gd_steps.py``): the
    same heads in exact arithmetic, 4.3x as fast at the features claims' shape
    (``benchmarks/bench_gd_heads.py``), the directions within 1e-15 of the coordinate form's.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    loo, heads, pre = _checked_heads_args(X, y, loo=loo, heads=heads, prefixes=prefixes, w0=w0,
                                          method=method)
    num = Numerics() if numerics is None else numerics
    if not isinstance(num, Numerics):
        raise InvalidArgument(f"numerics must be a Numerics (got {type(num).__name__})")
    dtype, chunk_elems = num.dtype, num.chunk_elems
    slope_dtype = num.slope_dtype or dtype
    k, n, d = X.shape
    D = d + 1
    dev = torch.device(num.device) if num.device else torch.device("cpu")
    rec = record_steps(steps, record)
    R1 = loo.shape[1] + 1
    per = max(1, chunk_elems // (R1 * heads * n))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    dirs, finals, lrs = [], [], []
    for s in tqdm(range(0, k, per), desc="GD heads", disable=not progress, leave=False):
        Xa = augment(torch.as_tensor(X[s:s + per], dtype=dtype)).to(dev)
        yy = torch.as_tensor(y[s:s + per], dtype=dtype, device=dev)
        if w0 is None:
            # drawn in float64 whatever dtype: a float32 run starts from the float64 run's heads,
            # rounded (drawing in float32 changed the starts, not just their precision)
            W0 = (torch.randn(Xa.shape[0], heads, D, generator=gen, dtype=torch.float64)
                  * init_scale / D**0.5).to(dev, dtype)
        else:
            W0 = torch.as_tensor(np.asarray(w0)[s:s + per], dtype=dtype, device=dev)
        eta = _step_sizes(Xa, yy, W0, loss=loss, lr=lr, lr_scale=lr_scale,
                          init_scale=init_scale)
        W_indep = None
        if replica_starts == "independent" and R1 > 1:
            W_indep = torch.randn(Xa.shape[0], R1 - 1, heads, D, generator=gen,
                                  dtype=torch.float64) * init_scale / D**0.5
        if _sample_space(n, D, dtype, slope_dtype):
            out, final = _gd_chunk_samples(Xa, yy, W0, eta, loo=loo[s:s + per], W_indep=W_indep,
                                           loss=loss, steps=steps, rec=rec, pre=pre)
        else:
            out, final = _gd_chunk(Xa, yy, W0, eta, loo=loo[s:s + per], W_indep=W_indep,
                                   loss=loss, steps=steps, rec=rec, pre=pre,
                                   slope_dtype=slope_dtype)
        dirs.append(out.cpu().numpy())
        finals.append(final.cpu().numpy())
        lrs.append(eta.cpu().numpy())
    prefix_dirs = np.concatenate(dirs)
    return GDHeads(rec, prefix_dirs[:, :, -1], np.concatenate(finals), np.concatenate(lrs), loss,
                   pre, prefix_dirs)


def _checked_heads_args(X, y, *, loo, heads, prefixes, w0, method):
    """:func:`train_heads`' checks of its arrays and options; returns the LOO indices ``(k, R)``,
    the head count and the recorded head counts (sorted, ``heads`` last)."""
    if X.ndim != 3 or y.shape != X.shape[:2]:
        raise InvalidArgument(f"X must be (k, n, d) and y (k, n) (got {X.shape}, {y.shape})")
    if not np.all(np.isin(y, (-1.0, 1.0))):
        # {0, 1} labels would silently zero the margins y w^T x of one class
        raise InvalidArgument(f"y must hold labels in {{-1, +1}} (got values {np.unique(y)[:5]})")
    k, n, d = X.shape
    loo = np.zeros((k, 0), dtype=int) if loo is None else np.asarray(loo, dtype=int)
    if loo.ndim != 2 or loo.shape[0] != k or np.any((loo < 0) | (loo >= n)):
        raise InvalidArgument(f"loo must be (k, R) sample indices in [0, {n}) (got shape {loo.shape})")
    if method is not None:
        HEADS_TRAINER.check(method)
        if heads not in (1, method.heads):
            raise InvalidArgument(f"heads={heads} contradicts method {method.name!r} with "
                                  f"{method.heads} heads; give one of them")
        heads = method.heads
    if any(h > heads for h in prefixes):
        raise InvalidArgument(f"prefixes must be head counts <= heads={heads} (got {tuple(prefixes)})")
    if w0 is not None and np.shape(w0) != (k, heads, d + 1):
        raise InvalidArgument(f"w0 must have shape (k, heads, d + 1) = {(k, heads, d + 1)} (got "
                              f"{np.shape(w0)})")
    return loo, heads, tuple(sorted(set(prefixes) | {heads}))


def _step_sizes(Xa, yy, W0, *, loss, lr, lr_scale, init_scale) -> torch.Tensor:
    """The GD step of each dataset and head ``(kc, heads)``: half the stable step ``2 /
    beta_eff`` at ``W0`` times ``lr_scale``, or the fixed ``lr``, refused where it diverges."""
    limit = stable_lr(Xa, yy, W0, loss)
    if not bool(torch.all(torch.isfinite(limit) & (limit > 0))):
        raise InvalidArgument(f"init_scale={init_scale} leaves no stable step for the {loss} loss "
                              f"(2/beta_eff at w0 is {limit.min().item():.3g}: the loss at w0 "
                              "overflows); use a smaller init_scale")
    if lr is None:
        return limit / 2 * lr_scale
    eta = torch.full_like(limit, float(lr))
    if torch.any(eta >= limit):
        raise InvalidArgument(
            f"lr={lr} diverges: it must be < 2/beta_eff = {limit.min().item():.4g} for "
            "every dataset (Soudry et al.'s eta < 2 beta^-1 sigma_max^-2, mean loss)")
    return eta


@checked(heads=Seq(Int(1)), nested=Bool(), step=Choice("per-head", "eq10-fixed"), k=Int(1),
         D=Int(1), init_scale=Float(0, lo_open=True), rng=Rng(),
         # eq. 10's common start, k x max(H) x D (the one reading that draws it)
         needs=lambda a: 8.0 * a["k"] * max(a["heads"]) * a["D"] * (a["step"] == "eq10-fixed"))
def mhloss_plan(heads: tuple[int, ...], *, nested: bool, step: str, k: int, D: int,
                init_scale: float, rng: np.random.Generator | int) -> list[tuple[int, tuple[int, ...],
                                                                           dict]]:
    """The :func:`train_heads` runs that give every ``H`` of an MHLoss grid, as ``(width,
    levels, extra keyword arguments)``, under a reading of eq. 10's step: ``"per-head"`` (one
    head's step 1/beta_eff per head; one nested run of ``max(H)`` when ``nested``) or
    ``"eq10-fixed"`` (one head's step on the mean over ``H`` heads, so each head moves ``H``
    times slower: one run per ``H``, every ``H`` starting from the first ``H`` of one draw from
    ``rng``, the only case that consumes it)."""
    rng = as_generator(rng)
    if step not in ("per-head", "eq10-fixed"):
        raise InvalidArgument(f"step must be 'per-head' or 'eq10-fixed' (got {step!r})")
    if nested and step == "per-head":
        return [(max(heads), tuple(heads), {})]
    if step == "per-head":
        return [(h, (h,), {}) for h in heads]
    common = rng.standard_normal((k, max(heads), D)) * init_scale / D**0.5
    return [(h, (h,), {"w0": common[:, :h], "lr_scale": 1.0 / h}) for h in heads]


@dataclass(frozen=True)
class QuadraticSetting:
    """Theorem 2.2's setting: per-sample ``f(w, x_i) = 1/2 (w - w*)^T A_i (w - w*)`` with
    ``A_i = mu I + (beta - mu) u_i u_i^T``, ``u_i = x_i/||x_i||``: non-negative, zero at the
    common minimizer ``w*``, ``mu I <= A_i <= beta I``, and ``L = beta ||w0 - w*||``-Lipschitz
    on the ball GD stays in."""

    U: np.ndarray  # (k, n, d) unit vectors
    w_star: np.ndarray  # (k, d)
    w0: np.ndarray  # (k, d)
    mu: float
    beta: float

    @property
    def dist0(self) -> np.ndarray:
        return np.linalg.norm(self.w0 - self.w_star, axis=-1)


@checked(
    n_datasets=Int(1), n=Int(2), d=Int(1), mu=Float(0, lo_open=True), beta=Float(0, lo_open=True),
    dist0=Float(0, lo_open=True), seed=Seed(generator=True),
    needs=lambda a: 8.0 * a["n_datasets"] * a["n"] * a["d"])  # U
def make_quadratic_setting(
    *, n_datasets: int, n: int, d: int, mu: float, beta: float, dist0: float,
    seed: int | np.random.Generator = 0,
) -> QuadraticSetting:
    if not 0 < mu < beta:
        raise InvalidArgument(f"need 0 < mu < beta (got mu={mu}, beta={beta})")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    U = rng.standard_normal((n_datasets, n, d))
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    w_star = rng.standard_normal((n_datasets, d))
    e = rng.standard_normal((n_datasets, d))
    w0 = w_star + dist0 * e / np.linalg.norm(e, axis=-1, keepdims=True)
    return QuadraticSetting(U, w_star, w0, float(mu), float(beta))


@checked(steps=Int(1, MAX_DRAWS, optional=True, why="more would run for days; take fewer"))
def gd_quadratic_loo(setting: QuadraticSetting, loo: np.ndarray, *, steps: int | None = None):
    """GD with ``eta = 1/beta`` on the mean loss over S and over each ``S^i`` (``loo (k, R)``).

    Returns ``sup_t ||w_t(S^i) - w_t(S)||``, shape ``(k, R)``. The default horizon,
    ``40 beta/mu`` steps, shrinks the error by ``e^-40``: both runs have converged to ``w*``.
    """
    if not isinstance(setting, QuadraticSetting):
        raise InvalidArgument(f"setting must be a QuadraticSetting (from make_quadratic_setting; got "
                        f"{type(setting).__name__})")
    U = torch.as_tensor(setting.U)
    k, n, d = U.shape
    mu, beta = setting.mu, setting.beta
    steps = steps or int(np.ceil(40 * beta / mu))
    outer = torch.einsum("kni,knj->knij", U, U)
    S = outer.sum(1)
    loo = as_array("loo", loo)
    if loo.ndim != 2 or loo.shape[0] != k or not np.issubdtype(loo.dtype, np.integer):
        raise InvalidArgument(f"loo must be a ({k}, R) array of sample indices (got {loo.dtype} "
                              f"with shape {loo.shape})")
    if np.any((loo < 0) | (loo >= n)):
        raise InvalidArgument(f"loo must hold sample indices in [0, {n}) (got min {loo.min()}, max "
                              f"{loo.max()})")
    idx = torch.as_tensor(loo)
    left = outer[torch.arange(k)[:, None], idx]  # (k, R, d, d)
    eye = torch.eye(d, dtype=U.dtype)
    A_full = mu * eye + (beta - mu) * S / n
    A_loo = mu * eye + (beta - mu) * (S[:, None] - left) / (n - 1)
    A = torch.cat([A_full[:, None], A_loo], 1)  # (k, R+1, d, d)
    M = eye - A / beta
    e = torch.as_tensor(setting.w0 - setting.w_star)[:, None, :].expand(k, A.shape[1], d)
    e = e.contiguous()
    sup = torch.zeros(k, A.shape[1] - 1, dtype=U.dtype)
    for _ in range(steps):
        e = torch.einsum("krij,krj->kri", M, e)
        sup = torch.maximum(sup, torch.linalg.vector_norm(e[:, 1:] - e[:, :1], dim=-1))
    return sup.numpy()
