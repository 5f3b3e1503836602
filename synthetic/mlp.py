"""Small MLPs trained with activation decay on Gaussian clusters, many models in one program.

The network follows the activation-decay paper's setup (no biases): ``h = s(W1 x)``,
``logits = W2 h``. A grid of sigma values x seeds is trained at once: weights carry a leading
model axis ``S`` and every model sees the same minibatches. After training we measure, per
model, what the paper's figures plot: the top Hessian eigenvalue w.r.t. the last layer ``W2``
(exact: a ``c*h``-square Kronecker mean), the Hessian trace w.r.t. all parameters (Hutchinson),
the gradient norm "near the minimum" and test accuracy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

import numpy as np
import torch

from boundbench.errors import ComputationError, InvalidArgument
from boundbench.framework.inputs.validate import Float, Int, Seed, checked
from boundbench.methods import Forward, Method, Trainer, make_optimizer
from boundbench.methods.penalties import ActivationDecay
from boundbench.theory.activation_decay import last_layer_hessian
from boundbench.theory.operators import HessianOperator
from boundbench.theory.trace import trace_hutchinson


@checked(
    n=Int(2), d=Int(1), classes=Int(2), spread=Float(0, lo_open=True), separation=Float(0),
    label_noise=Float(0, 1), seed=Seed(generator=True), needs=lambda a: 8.0 * a["n"] * a["d"])
def make_clusters(
    *, n: int, d: int, classes: int, spread: float = 1.0, separation: float = 2.0,
    label_noise: float = 0.0, seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian clusters ``N(mu_c, spread^2 I)`` with centres ``N(0, separation^2 I)``.

    Returns ``(X, y, y_clean)``; a fraction ``label_noise`` of labels is replaced by a uniformly
    drawn *different* class (symmetric noise)."""
    if not 0 <= label_noise < 1:
        raise InvalidArgument(f"label_noise must lie in [0, 1) (got {label_noise})")
    if classes < 2 or n < classes:
        raise InvalidArgument(f"need classes >= 2 and n >= classes (got {classes}, {n})")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    centres = rng.standard_normal((classes, d)) * separation
    y = rng.integers(0, classes, n)
    X = centres[y] + rng.standard_normal((n, d)) * spread
    noisy = y.copy()
    flip = rng.random(n) < label_noise
    noisy[flip] = (y[flip] + rng.integers(1, classes, flip.sum())) % classes
    return X, noisy, y


def _act(name: str):
    if name == "relu":
        return torch.relu
    if name == "gelu":
        return torch.nn.functional.gelu
    raise InvalidArgument(f"activation must be 'relu' or 'gelu' (got {name!r})")


#: What :func:`train_mlps` gives a method: loss terms, its own task loss, optimizer wrappers (a
#: closure too), input Jacobians, labels and parameters, all with a leading model axis. It has
#: no torch module to change, one head, no pretrained start and no unlabeled texts.
MLP_TRAINER = Trainer("synthetic MLP", frozenset(
    {"penalty", "task-loss", "optimizer", "closure", "inputs", "labels", "params"}))


@dataclass(frozen=True)
class MLPRun:
    """A grid of method strengths x seeds of MLPs trained at once with CE + the method's penalty
    (SGD, cosine lr). ``method`` is any method :data:`MLP_TRAINER` gives what it needs; ``strength``
    names its parameter that ``strengths`` sets, one value per model (``sigma`` of activation
    decay, ``lam`` of the Jacobian penalty)."""

    strengths: tuple[float, ...] = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)
    method: Method = ActivationDecay()
    strength: str | None = "sigma"  # None: the method as given, ``strengths`` only label models
    seeds: int = 3
    n_train: int = 2000
    n_test: int = 2000
    d: int = 20
    hidden: int = 64
    classes: int = 5
    spread: float = 2.0
    label_noise: float = 0.0
    activation: str = "relu"
    steps: int = 3000
    batch: int = 64
    lr: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        MLP_TRAINER.check(self.method)
        if self.strength is None:  # the method as given for every model
            return
        if self.strength not in {f.name for f in fields(self.method) if f.init}:
            raise InvalidArgument(f"strength must name a parameter of {self.method.name!r} (got "
                                  f"{self.strength!r})")
        try:  # one method object serves every model: the strength holds one value per model
            self.batched_method()
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(f"strengths: {self.method.name!r} cannot take one {self.strength!r} "
                                  f"per model ({exc})") from None

    def batched_method(self) -> Method:
        """The method with its strength a tensor over the models (strengths x seeds)."""
        if self.strength is None:
            return self.method
        strength = np.repeat(np.asarray(self.strengths, dtype=float), self.seeds)
        return replace(self.method, **{self.strength: torch.as_tensor(strength)})

    def config(self) -> dict:
        return {**asdict(self), "method": self.method.describe()}


@dataclass
class TrainedMLPs:
    cfg: MLPRun
    strength: np.ndarray  # (S,) sigma or lambda of each model
    replica: np.ndarray  # (S,)
    W1: torch.Tensor  # (S, hidden, d)
    W2: torch.Tensor  # (S, c, hidden)
    X: torch.Tensor
    y: torch.Tensor  # (possibly noisy) training labels
    X_test: torch.Tensor
    y_test: torch.Tensor  # clean
    grad_norm_end: np.ndarray  # mean minibatch ||grad_W2 CE|| over the last 10% of steps

    def forward(self, X: torch.Tensor, W1=None, W2=None) -> Forward:
        """Every model on the same ``X (n, d)``, or each on its own ``X (S, n, d)``."""
        W1 = self.W1 if W1 is None else W1
        W2 = self.W2 if W2 is None else W2
        eq = "shd,snd->snh" if X.dim() == 3 else "shd,nd->snh"
        h = _act(self.cfg.activation)(torch.einsum(eq, W1, X))
        return Forward(logits=torch.einsum("sch,snh->snc", W2, h), features=h)


def train_mlps(cfg: MLPRun) -> TrainedMLPs:
    """Train every (strength, seed) model of ``cfg`` at once, in float64."""
    rng = np.random.default_rng(cfg.seed)
    Xall, yall, yclean = make_clusters(n=cfg.n_train + cfg.n_test, d=cfg.d, classes=cfg.classes,
                                       spread=cfg.spread, label_noise=cfg.label_noise, seed=rng)
    X = torch.as_tensor(Xall[: cfg.n_train])
    y = torch.as_tensor(yall[: cfg.n_train])
    X_test = torch.as_tensor(Xall[cfg.n_train:])
    y_test = torch.as_tensor(yclean[cfg.n_train:])
    strength = np.repeat(np.asarray(cfg.strengths, dtype=float), cfg.seeds)
    rep = np.tile(np.arange(cfg.seeds), len(cfg.strengths))
    S = len(strength)
    gen = torch.Generator().manual_seed(cfg.seed)
    # one init per seed, shared across strengths: differences are the method's, not the init's
    W1_0 = torch.randn(cfg.seeds, cfg.hidden, cfg.d, generator=gen, dtype=torch.float64)
    W2_0 = torch.randn(cfg.seeds, cfg.classes, cfg.hidden, generator=gen, dtype=torch.float64)
    W1 = (W1_0[rep] * (2.0 / cfg.d) ** 0.5).requires_grad_(True)
    W2 = (W2_0[rep] * (1.0 / cfg.hidden) ** 0.5).requires_grad_(True)
    method = cfg.batched_method()
    params = {"W1": W1, "W2": W2}
    base = torch.optim.SGD([W1, W2], lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(base, cfg.steps)
    opt = make_optimizer(method, base, seed=cfg.seed, model_axes=1)
    tail = max(1, cfg.steps // 10)
    gnorm = torch.zeros(S, dtype=torch.float64)
    out = TrainedMLPs(cfg, strength, rep, W1, W2, X, y, X_test, y_test, np.zeros(S))

    def batch(idx: torch.Tensor) -> Forward:
        if method.needs_inputs:  # one copy of the batch per model: per-model input Jacobians
            xb = X[idx].expand(S, -1, -1).clone().requires_grad_(True)
            fwd = out.forward(xb)
            fwd.inputs, fwd.fn = xb, lambda x: out.forward(x).logits
            fwd.feature_fn = lambda x: out.forward(x).features
        else:
            fwd = out.forward(X[idx])
        fwd.labels, fwd.params = y[idx], params
        return fwd

    state: dict | None = None
    for t in range(cfg.steps):
        idx = torch.randint(0, cfg.n_train, (cfg.batch,), generator=gen)
        fwd = batch(idx)
        if state is None:  # the method's state, from the first batch before any update
            state = method.init_state(fwd, seed=cfg.seed)
        ce = method.task_loss(fwd, y[idx])  # (S,)
        loss = (ce + method.penalty(fwd, state)).sum()  # models are independent: sum = per-model steps
        opt.zero_grad()
        if t >= cfg.steps - tail:
            (g2,) = torch.autograd.grad(ce.sum(), W2, retain_graph=True)
            gnorm += g2.flatten(1).norm(dim=1).detach()
        loss.backward()
        if method.needs_closure:
            def closure(idx=idx, state=state):
                f2 = batch(idx)
                loss2 = (method.task_loss(f2, y[idx]) + method.penalty(f2, state)).sum()
                loss2.backward()
                return loss2
            opt.step(closure)
        else:
            opt.step()
        sched.step()
    bad = ~(torch.isfinite(W1).flatten(1).all(1) & torch.isfinite(W2).flatten(1).all(1))
    if bad.any():
        raise ComputationError(f"training diverged (non-finite weights) for strengths "
                               f"{sorted(set(strength[bad.numpy()].tolist()))}: lr={cfg.lr} is too large "
                               "for that penalty; lower lr or the strength")
    out.W1, out.W2 = W1.detach(), W2.detach()
    out.grad_norm_end = (gnorm / tail).numpy()
    return out


def measure(tr: TrainedMLPs, *, trace_probes: int = 30, seed: int = 0) -> dict[str, np.ndarray]:
    """Per model: top eigenvalue of the last-layer Hessian (train set, CE only), Hessian trace
    over all parameters (Hutchinson), mean ``||h||^2``, test accuracy, end gradient norm."""
    with torch.no_grad():
        fwd = tr.forward(tr.X)
        H = last_layer_hessian(fwd.features, tr.W2)
        lam = torch.linalg.eigvalsh(H)[:, -1]
        acc = (tr.forward(tr.X_test).logits.argmax(-1) == tr.y_test).double().mean(-1)
        train_acc = (fwd.logits.argmax(-1) == tr.y).double().mean(-1)
        hsq = fwd.features.pow(2).sum(-1).mean(-1)
    traces = []
    for s in range(len(tr.strength)):
        def loss(p, s=s):
            f = tr.forward(tr.X, p["W1"][None], p["W2"][None])
            return torch.nn.functional.cross_entropy(f.logits[0], tr.y)

        op = HessianOperator(loss, {"W1": tr.W1[s], "W2": tr.W2[s]})
        traces.append(trace_hutchinson(op, n_probes=trace_probes, seed=seed)[0])
    return {"strength": tr.strength, "replica": tr.replica, "lambda_max_W2": lam.numpy(),
            "trace_all": np.array(traces), "mean_h_sq": hsq.numpy(), "test_acc": acc.numpy(),
            "train_acc": train_acc.numpy(), "grad_norm_end": tr.grad_norm_end}
