"""Fu et al.'s stability experiments on a *pool* of features: training sets drawn from it,
linear heads fitted on each (:mod:`boundbench.synthetic.pool_heads`), their exact leave-one-out
stability. The pool is any ``(N, d)`` array: separable synthetic data
(:func:`boundbench.synthetic.data.make_separable`) or the frozen features of a real pre-trained
encoder (``boundbench.plm.features``); one code path serves both, so their curves compare like
for like.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.executors import one_torch_thread
from boundbench.framework.inputs.validate import (
    Bool,
    Choice,
    Float,
    Int,
    Seed,
    Seq,
    check_fields,
    iterations,
)
from boundbench.synthetic.pool_heads import (
    check_pool,
    draw_sets,
    fit_ridge_logistic,
    max_margin_loo,
    ridge_logistic_loo,
)
from boundbench.synthetic.stability import normalized_distance
from boundbench.synthetic.train import augment


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
        X, ys = check_pool(X, y)
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
    see :class:`~boundbench.synthetic.fig5.HeadsRun`); ``False`` draws each ``H`` afresh."""

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
        check_fields(self, heads=Seq(Int(1)), n=Int(4), k=Int(1), steps=iterations(1), seed=Seed(),
                     nested=Bool(), replica_starts=Choice("shared", "independent"),
                     init_scale=Float(0, lo_open=True), step=Choice("per-head", "eq10-fixed"))
        check_fields(self, k_loo=Int(1, self.n))

    def run(self, X: np.ndarray, y: np.ndarray, *,
            device: str | torch.device | None = None) -> dict[str, np.ndarray]:
        """The table; the GD runs on ``device`` (default the CPU; float64 throughout, TF32
        off, see :func:`~boundbench.synthetic.train.train_heads`)."""
        from boundbench.synthetic.stability import head_loo_stability
        from boundbench.synthetic.train import Numerics, mhloss_plan, train_heads

        X, ys = check_pool(X, y)
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
                              numerics=Numerics(device=device), **extra)
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
                     steps=iterations(1), lam=Float(0, lo_open=True), seed=Seed())
        check_fields(self, k_loo=Int(1, self.n))

    def run(self, X: np.ndarray, y: np.ndarray, *,
            device: str | torch.device | None = None) -> dict[str, np.ndarray]:
        """The table; the GD runs on ``device`` (default the CPU; the draws stay on the CPU's
        generator, so the instances do not depend on the device)."""
        dev = torch.device(device) if device is not None else torch.device("cpu")
        X, ys = check_pool(X, y)
        rng = np.random.default_rng(self.seed)
        idx = draw_sets(ys, n=self.n, k=self.k, rng=rng)
        loo = np.stack([rng.choice(self.n, self.k_loo, replace=False) for _ in range(self.k)])
        w_star = fit_ridge_logistic(X[idx], ys[idx], lam=self.lam)
        Z = (torch.as_tensor(ys[idx])[..., None] * augment(torch.as_tensor(X[idx]))).to(dev)
        k, n, D = Z.shape
        # beta of the objective: the largest eigenvalue of mean z z^T / 4 plus lam
        with one_torch_thread():  # its last bits followed the thread count (see stable_lr)
            top = torch.linalg.eigvalsh(torch.einsum("kni,knj->kij", Z, Z) / n)[:, -1]
        beta = top / 4 + self.lam
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
        X, ys = check_pool(X, y)
        Xt, yt = check_pool(X_test, y_test)
        if Xt.shape[1] != X.shape[1]:
            raise InvalidArgument(f"X_test must have X's {X.shape[1]} columns (got {Xt.shape[1]})")
        if not np.array_equal(np.unique(y), np.unique(y_test)):
            raise InvalidArgument(f"y_test must have y's two classes {np.unique(y).tolist()} (got "
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
