"""The method interface shared by ``synthetic`` and ``plm``: a method is a loss term on what a
forward pass exposes, optionally an optimizer wrapper. Written once, used by both trainers.

A trainer builds a :class:`Forward` for each batch (logits, the input of the final linear layer,
hidden states, the differentiable inputs and a function re-running the model from them) and
adds ``method.penalty(fwd)`` to the task loss. Penalties keep a leading model axis if the trainer
batches several models (e.g. a grid of sigma), so one call serves all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from theory.curvature import jacobian_frobenius


@dataclass
class Forward:
    logits: torch.Tensor  # (..., B, c): what the model predicts with (mean head for MHLoss)
    features: torch.Tensor  # (..., B, h): input of the final linear layer, h^(L-1)
    inputs: torch.Tensor | None = None  # differentiable inputs (embeddings) when needed
    fn: Callable[[torch.Tensor], torch.Tensor] | None = None  # inputs -> logits
    hidden: list[torch.Tensor] = field(default_factory=list)
    feature_fn: Callable[[torch.Tensor], torch.Tensor] | None = None  # inputs -> features
    head_logits: torch.Tensor | None = None  # (H, B, c) for multi-head models
    labels: torch.Tensor | None = None  # (B,) the batch's labels, for label-aware penalties
    input_event_dims: int = 1  # trailing axes of ``inputs`` forming one example (2: tokens x emb)
    # (inputs of some rows, those rows) -> (pooled output of every block, logits), one pass
    hidden_fn: Callable[..., tuple[list[torch.Tensor], torch.Tensor]] | None = None


class Method:
    """Plain fine-tuning: no extra term. Subclasses override :meth:`penalty`,
    :meth:`task_loss`, :meth:`setup` and/or :meth:`wrap_optimizer`; ``needs_inputs`` asks the
    trainer for differentiable inputs, ``heads`` for a multi-head model, ``dual`` for JACHESS's
    dual mode (the penalty is minimized alone on unlabeled batches, between task steps)."""

    name = "finetune"
    needs_inputs = False
    heads = 1
    dual = False  # True: penalty-only steps on unlabeled data alternate with task steps

    def setup(self, params: dict[str, torch.Tensor]) -> None:
        """Called once with the trainable parameters before training (e.g. to keep theta_0)."""

    def prepare_model(self, model: torch.nn.Module) -> None:
        """Called once with the model before training (e.g. to install MixOut)."""

    def prepare_start(self, model_name: str, train_texts: list[str], *, seed: int) -> str:
        """The model to start fine-tuning from (SURT continues pre-training first)."""
        return model_name

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the prediction logits (batch axis -2, classes last)."""
        c = fwd.logits.shape[-1]
        ce = torch.nn.functional.cross_entropy(fwd.logits.reshape(-1, c),
                                               y.expand(fwd.logits.shape[:-1]).reshape(-1),
                                               reduction="none")
        return ce.view(fwd.logits.shape[:-1]).mean(-1)

    def penalty(self, fwd: Forward) -> torch.Tensor | float:
        return 0.0

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        return optimizer

    def describe(self) -> dict:
        return {"method": self.name}


class ActivationDecay(Method):
    """Activation decay (paper 002, eq. after Theorem 2): ``sigma^2/2 * mean_batch ||h^(L-1)||^2``,
    the Theorem 2 upper bound of Gaussian smoothing of the last layer with std sigma.

    ``sigma`` may be a tensor with one value per model of a batched trainer (leading axis); the
    batch reduction is the mean, matching the CE mean (the paper does not say)."""

    name = "activation-decay"

    def __init__(self, sigma: float | torch.Tensor) -> None:
        sig = torch.as_tensor(sigma, dtype=torch.float64)
        if torch.any(sig < 0):
            raise ValueError(f"sigma must be >= 0 (got {sigma})")
        self.sigma = sig

    def penalty(self, fwd: Forward) -> torch.Tensor:
        sq = fwd.features.pow(2).sum(-1).mean(-1)  # (...,)
        return 0.5 * self.sigma.to(sq) ** 2 * sq

    def describe(self) -> dict:
        return {"method": self.name, "sigma": self.sigma.tolist()}


class JacobianPenalty(Method):
    """``lam * mean_batch ||d logits / d inputs||_F`` estimated by JACHESS eq. (5) with ``n_proj``
    random projections, differentiable (``create_graph``): the Jacobian-regularization baseline,
    and JACHESS's first-order term on the logits."""

    name = "jacobian"
    needs_inputs = True

    def __init__(self, lam: float | torch.Tensor, *, n_proj: int = 1, seed: int = 0) -> None:
        lm = torch.as_tensor(lam, dtype=torch.float64)
        if torch.any(lm < 0):
            raise ValueError(f"lam must be >= 0 (got {lam})")
        self.lam, self.n_proj = lm, n_proj
        self.gen = torch.Generator().manual_seed(seed)

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.fn is None:
            raise ValueError("JacobianPenalty needs Forward.inputs and Forward.fn")
        est = jacobian_frobenius(fwd.fn, fwd.inputs, n_proj=self.n_proj, seed=self.gen,
                                 create_graph=True, event_dims=fwd.input_event_dims)  # (..., B)
        return self.lam.to(est) * est.mean(-1)

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam.tolist(), "n_proj": self.n_proj}


class MHLoss(Method):
    """Multi-head loss (Fu et al. eq. 10): ``H`` linear heads from independent inits, loss
    ``(1/(nH)) sum_h sum_i l(w_h^T x_i y_i)``; predictions use the mean head (the trainer builds
    the model with ``heads`` heads and puts the mean in ``Forward.logits``)."""

    name = "mhloss"

    def __init__(self, heads: int = 50) -> None:
        if heads < 1:
            raise ValueError(f"heads must be >= 1 (got {heads})")
        self.heads = heads

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        if fwd.head_logits is None:
            raise ValueError("MHLoss needs a multi-head model (Forward.head_logits)")
        H, B, c = fwd.head_logits.shape
        return torch.nn.functional.cross_entropy(fwd.head_logits.reshape(H * B, c),
                                                 y.repeat(H))

    def describe(self) -> dict:
        return {"method": self.name, "heads": self.heads}


class MMR(Method):
    """Max-margin regularizer (Fu et al. eqs. 8-9): ``alpha / (1 + ||centroid_+ - centroid_-||)``
    of the batch's features, with centroids per class. For more than two classes (the paper's
    case is binary) the mean of the term over class pairs present in the batch."""

    name = "mmr"

    def __init__(self, alpha: float = 1.0) -> None:
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0 (got {alpha})")
        self.alpha = alpha

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.labels is None:
            raise ValueError("MMR needs the batch labels (Forward.labels)")
        y, h = fwd.labels, fwd.features
        present = torch.unique(y)
        if len(present) < 2:
            return h.sum() * 0.0  # one class in the batch: no margin to measure
        cents = torch.stack([h[y == c].mean(0) for c in present])
        i, j = torch.triu_indices(len(present), len(present), 1)
        dist = (cents[i] - cents[j]).norm(dim=-1)
        return self.alpha * (1.0 / (1.0 + dist)).mean()

    def describe(self) -> dict:
        return {"method": self.name, "alpha": self.alpha}


class L2ToInit(Method):
    """``lam * ||theta - theta_0||^2`` over the trainable parameters: a simple stability
    baseline (Theorem 2.2's ||w0 - w*|| read as a regularizer)."""

    name = "l2-init"

    def __init__(self, lam: float = 1e-3) -> None:
        if lam < 0:
            raise ValueError(f"lam must be >= 0 (got {lam})")
        self.lam = lam
        self.params: dict[str, torch.Tensor] = {}
        self.init: dict[str, torch.Tensor] = {}

    def setup(self, params: dict[str, torch.Tensor]) -> None:
        self.params = params
        self.init = {k: p.detach().clone() for k, p in params.items()}

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if not self.params:
            raise ValueError("L2ToInit.setup must be called with the parameters first")
        return self.lam * sum((p - self.init[k]).pow(2).sum() for k, p in self.params.items())

    def describe(self) -> dict:
        return {"method": self.name, "lam": self.lam}


class HeadTuning(Method):
    """Head tuning (Fu et al. Table 3): the encoder is frozen, only the linear head trains
    (the same as the trainer's ``head_only``, as a method so a grid can compare it)."""

    name = "head-tuning"

    def prepare_model(self, model: torch.nn.Module) -> None:
        if not hasattr(model, "encoder"):
            raise ValueError("head tuning needs a model with an .encoder to freeze")
        model.encoder.requires_grad_(False)


class _MixoutParam(torch.nn.Module):
    """``mixout(w) = (M w + (1 - M) w0 - p w0) / (1 - p)``, ``M ~ Ber(1 - p)`` per entry, in
    training mode; ``w`` at evaluation. Unbiased: ``E mixout(w) = w``."""

    def __init__(self, w0: torch.Tensor, p: float) -> None:
        super().__init__()
        self.register_buffer("w0", w0.detach().clone())
        self.p = p

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return w
        keep = (torch.rand_like(w) >= self.p).to(w.dtype)
        return (keep * w + (1 - keep) * self.w0 - self.p * self.w0) / (1 - self.p)


class MixOut(Method):
    """MixOut (Lee et al. 2019): during training every weight entry of the encoder's linear
    layers is swapped for its pre-trained value with probability ``p`` (and the result rescaled
    to stay unbiased). Installed with ``torch.nn.utils.parametrize``."""

    name = "mixout"

    def __init__(self, p: float = 0.1) -> None:
        if not 0 <= p < 1:
            raise ValueError(f"p must lie in [0, 1) (got {p})")
        self.p = p

    def prepare_model(self, model: torch.nn.Module) -> None:
        from torch.nn.utils import parametrize

        root = getattr(model, "encoder", model)
        for mod in root.modules():
            if isinstance(mod, torch.nn.Linear) and not parametrize.is_parametrized(mod):
                parametrize.register_parametrization(mod, "weight",
                                                     _MixoutParam(mod.weight, self.p))

    def describe(self) -> dict:
        return {"method": self.name, "p": self.p}


class LNSR(Method):
    """LNSR (Hua et al. 2021): Gaussian noise ``N(0, sigma^2)`` on the input embeddings and a
    penalty ``weight * mean ||f(x + noise) - f(x)||^2`` on the change of the features (the
    encoder's pooled output)."""

    name = "lnsr"
    needs_inputs = True

    def __init__(self, sigma: float = 0.01, weight: float = 1.0, *, seed: int = 0) -> None:
        if sigma < 0 or weight < 0:
            raise ValueError(f"sigma and weight must be >= 0 (got {sigma}, {weight})")
        self.sigma, self.weight = sigma, weight
        self.gen = torch.Generator().manual_seed(seed)

    def penalty(self, fwd: Forward) -> torch.Tensor:
        if fwd.inputs is None or fwd.feature_fn is None:
            raise ValueError("LNSR needs Forward.inputs and Forward.feature_fn")
        noise = torch.randn(fwd.inputs.shape, generator=self.gen, dtype=fwd.inputs.dtype)
        noisy = fwd.feature_fn(fwd.inputs + self.sigma * noise.to(fwd.inputs.device))
        return self.weight * (noisy - fwd.features).pow(2).sum(-1).mean()

    def describe(self) -> dict:
        return {"method": self.name, "sigma": self.sigma, "weight": self.weight}


class SURT(Method):
    """SURT (Fu et al. §3.3): continue masked-LM training of the encoder on the task's own
    training texts (no labels), then fine-tune. The default offline MiniLM ships no pre-trained
    MLM head, so the head is freshly initialized with its decoder tied to the word embeddings
    (recorded in ``describe``). Implemented in :func:`plm.surt.continue_pretraining`."""

    name = "surt"

    def __init__(self, steps: int = 200, lr: float = 5e-5, mask_prob: float = 0.15,
                 batch_size: int = 16, max_length: int = 128) -> None:
        self.steps, self.lr, self.mask_prob = steps, lr, mask_prob
        self.batch_size, self.max_length = batch_size, max_length

    def prepare_start(self, model_name: str, train_texts: list[str], *, seed: int) -> str:
        from plm.surt import continue_pretraining

        return continue_pretraining(model_name, train_texts, steps=self.steps, lr=self.lr,
                                    mask_prob=self.mask_prob, batch_size=self.batch_size,
                                    max_length=self.max_length, seed=seed)

    def describe(self) -> dict:
        return {"method": self.name, "steps": self.steps, "lr": self.lr,
                "mask_prob": self.mask_prob, "mlm_head": "re-initialized, decoder tied to the "
                "word embeddings (the default model has no pre-trained MLM head)"}


# the smoothness and UEGR methods build on the classes above (imported last on purpose)
from synthetic.methods_smoothness import JACHESS, SAM, CrossHolder, Dropout, WeightDecay, ad_sam  # noqa: E402
from synthetic.methods_uegr import UEGR  # noqa: E402


def _dual(cls, name: str):
    """The dual-mode (``*-unlab``) variant of a penalty method: its penalty is minimized alone
    on unlabeled batches between task steps (JACHESS §3.3)."""

    def make(**kw) -> Method:
        if cls in (JACHESS, CrossHolder):
            return cls(mode="unlab", **kw)
        m = cls(**kw)
        m.dual, m.name = True, name
        return m

    return make


METHODS = {"finetune": Method, "activation-decay": ActivationDecay, "jacobian": JacobianPenalty,
           "mhloss": MHLoss, "mmr": MMR, "l2-init": L2ToInit, "mixout": MixOut, "lnsr": LNSR,
           "surt": SURT, "head-tuning": HeadTuning, "dropout": Dropout,
           "weight-decay": WeightDecay, "sam": SAM, "ad+sam": ad_sam, "jachess": JACHESS,
           "jachess-unlab": _dual(JACHESS, "jachess-unlab"), "cross-holder": CrossHolder,
           "cross-holder-unlab": _dual(CrossHolder, "cross-holder-unlab"),
           "jacobian-unlab": _dual(JacobianPenalty, "jacobian-unlab"), "uegr": UEGR}


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"name"`` or ``"name:key=value,key=value"`` -> ``(name, kwargs)``; values are read as
    JSON when they parse (numbers, booleans, lists), else kept as strings."""
    import json

    name, _, rest = spec.partition(":")
    kw: dict = {}
    for part in filter(None, rest.split(",")):
        key, eq, val = part.partition("=")
        if not eq or not key:
            raise ValueError(f"method spec {spec!r}: expected name:key=value,... (got {part!r})")
        try:
            kw[key.strip()] = json.loads(val)
        except json.JSONDecodeError:
            kw[key.strip()] = val.strip()
    return name, kw


def make_method(name: str, **kwargs) -> Method:
    """A method by name (``METHODS``) with its keyword arguments; ``name`` may carry some, as
    in ``"jachess-unlab:layer_weights=uniform"`` (explicit ``kwargs`` win)."""
    base, spec_kw = parse_spec(name)
    if base not in METHODS:
        raise ValueError(f"unknown method {base!r}; known: {sorted(METHODS)}")
    method = METHODS[base](**{**spec_kw, **kwargs})
    if spec_kw:
        method.name = name
    return method
