"""The method interface shared by ``synthetic`` and ``plm``: what a method is, what a trainer owes
it, and the list that reads method names (:class:`MethodNames`).

A method is a typed, frozen configuration (one dataclass per method; its fields are its
parameters, declared with their checks in ``checks`` and validated on construction) with hooks,
each a default no-op a method overrides:

* pure loss terms: :meth:`Method.task_loss` and :meth:`Method.penalty`, functions of the batch's
  :class:`Forward` and of the run's method state (:meth:`Method.init_state`: generators,
  theta_0, layer weights measured on the first batch before any update);
* an optimizer wrapper with its own state (:meth:`Method.optimizer`, a :class:`MethodOptimizer`
  with ``state_dict``), as SAM; ``needs_closure`` when its step re-runs the batch;
* model changes that last one run only (:meth:`Method.applied`, a context manager that undoes
  them on exit), and a different starting model (:meth:`Method.start_model`, SURT's first stage);
* :meth:`Method.report`: what the run's state says at the end.

A trainer declares what it gives a method (a :class:`Trainer`: the hooks it calls and the
:class:`Forward` fields it fills) and refuses, when the run is configured, a method that needs
more (:meth:`Trainer.check`, from :meth:`Method.needs`): a method is honoured whole or not run.

A method never changes itself, and never changes a model beyond the ``with method.applied(model)``
block. Strings appear only at the command-line/JSON edge: a :class:`MethodNames` reads them
against the dataclass's typed fields (:mod:`boundbench.methods._names`;
``boundbench.methods.names.METHODS`` lists the model-agnostic methods, the plm layer's
list adds the transformer methods).

Penalties keep a leading model axis if the trainer batches several models (a grid of sigma): one
call serves all of them, and a strength may be a tensor with one value per model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs.validate import Spec, check_fields


@dataclass
class Forward:
    """What one forward pass exposes to a method (built by the trainer, per batch)."""

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
    # (inputs, dropout rate) -> logits with every dropout of the model at that rate, this pass only
    dropout_fn: Callable[[torch.Tensor, float], torch.Tensor] | None = None
    params: Mapping[str, torch.Tensor] | None = None  # the trainable parameters (live)

    @property
    def model_axes(self) -> int:
        """Leading axes that index models a trainer runs at once (0: one model)."""
        return self.logits.dim() - 2


# ------------------------------------------------------------------ what trainers give

#: Everything a trainer may give a method; :meth:`Method.needs` lists what a method uses.
CAPABILITIES: dict[str, str] = {
    "penalty": "an extra loss term (Method.penalty)",
    "task-loss": "its own task loss (Method.task_loss)",
    "optimizer": "an optimizer wrapper (Method.optimizer)",
    "closure": "an optimizer step that re-runs the batch (a closure, as SAM's)",
    "model-changes": "changes to a torch module for the run (Method.applied)",
    "start-model": "a different pretrained model to start from (Method.start_model)",
    "heads": "a multi-head model (Forward.head_logits)",
    "inputs": "differentiable inputs with inputs -> logits and inputs -> features functions",
    "hidden": "every block's output from one pass (Forward.hidden_fn)",
    "dropout": "a pass with every dropout at a chosen rate (Forward.dropout_fn)",
    "labels": "the batch labels (Forward.labels)",
    "params": "the trainable parameters (Forward.params)",
    "unlabeled": "batches of unlabeled texts (dual mode)",
    "encoder": "a pretrained encoder to freeze or mix (model.encoder)",
}


@dataclass(frozen=True)
class Trainer:
    """What one trainer gives a method (keys of :data:`CAPABILITIES`)."""

    name: str
    gives: frozenset[str]

    def __post_init__(self) -> None:
        unknown = set(self.gives) - set(CAPABILITIES)
        if unknown:
            raise InvalidArgument(f"trainer {self.name!r}: unknown capabilities {sorted(unknown)}")

    def check(self, method: Method) -> None:
        """``ValueError`` in one line when ``method`` needs what this trainer does not give."""
        if not isinstance(method, Method):
            raise InvalidArgument(f"method must be a Method of the shared interface (got {method!r})")
        missing = sorted(method.needs() - self.gives)
        if missing:
            raise InvalidArgument(f"the {self.name} trainer cannot run method {method.name!r}: it "
                                  f"needs {'; '.join(CAPABILITIES[c] for c in missing)}")


# ------------------------------------------------------------------ optimizer wrappers


class MethodOptimizer(torch.optim.Optimizer):
    """An optimizer around ``base`` (a method's wrapper): it shares the base's ``param_groups``
    (so a learning-rate scheduler attached to either schedules the base step) and ``state``
    (Adam moments), and keeps its own extra state. Wrappers chain: ``base`` may be another
    wrapper, whose state nests under ``"base"`` in :meth:`state_dict`.

    ``model_axes``: leading axes of every parameter that index independent models a trainer
    runs at once (the synthetic MLP grid); a wrapper's norms and normalizations are then per
    model."""

    def __init__(self, base: torch.optim.Optimizer, *, model_axes: int = 0) -> None:
        if not isinstance(base, torch.optim.Optimizer):
            raise InvalidArgument(f"base must be a torch.optim.Optimizer (got {type(base).__name__})")
        # torch's own constructor (its checks, hooks and bookkeeping) over the base's groups;
        # afterwards param_groups, state and defaults read the base's live objects, which a
        # load_state_dict of the base replaces
        super().__init__(base.param_groups, base.defaults)
        self.__dict__.pop("_during_init", None)
        self.base = base
        self.model_axes = model_axes

    def _shared(name: str) -> property:  # type: ignore[misc]  # a property factory, class-level
        def get(self: MethodOptimizer) -> Any:
            if "base" in self.__dict__:
                return getattr(self.base, name)
            return self.__dict__.setdefault("_during_init", {}).get(name)

        def put(self: MethodOptimizer, value: Any) -> None:
            if "base" in self.__dict__:
                setattr(self.base, name, value)
            else:
                self.__dict__.setdefault("_during_init", {})[name] = value

        return property(get, put)

    param_groups = _shared("param_groups")
    state = _shared("state")
    defaults = _shared("defaults")
    del _shared

    @property
    def needs_closure(self) -> bool:
        """Whether :meth:`step` needs a closure that re-runs the batch (any wrapper inside)."""
        return isinstance(self.base, MethodOptimizer) and self.base.needs_closure

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.base.zero_grad(set_to_none=set_to_none)

    def wrapper_state(self) -> dict[str, Any]:
        """This wrapper's own state (generators, counters)."""
        return {}

    def load_wrapper_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`wrapper_state` returned."""

    def state_dict(self) -> dict[str, Any]:
        return {"base": self.base.state_dict(), "wrapper": self.wrapper_state()}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        if set(state_dict) != {"base", "wrapper"}:
            raise InvalidArgument(f"state_dict of {type(self).__name__} must hold 'base' and "
                                  f"'wrapper' (got keys {sorted(state_dict)})")
        self.base.load_state_dict(state_dict["base"])
        self.load_wrapper_state(state_dict["wrapper"])

    def own_report(self) -> dict[str, Any]:
        """What this wrapper measured over the run."""
        return {}

    def report(self) -> dict[str, Any]:
        """What every wrapper of the chain measured (recorded with the result)."""
        return {**optimizer_report(self.base), **self.own_report()}


def optimizer_report(opt: torch.optim.Optimizer) -> dict[str, Any]:
    """What a method's optimizer measured over the run (nothing for a plain optimizer)."""
    return opt.report() if isinstance(opt, MethodOptimizer) else {}


def make_optimizer(method: Method, base: torch.optim.Optimizer, *, seed: int,
                   model_axes: int = 0) -> torch.optim.Optimizer:
    """``method``'s optimizer around ``base``, checked against what the method declares: a
    trainer passes a closure exactly when ``method.needs_closure``."""
    opt = method.optimizer(base, seed=seed, model_axes=model_axes)
    wants = isinstance(opt, MethodOptimizer) and opt.needs_closure
    if wants != method.needs_closure:
        raise InvalidArgument(f"method {method.name!r} declares needs_closure={method.needs_closure} "
                              f"but its optimizer {type(opt).__name__} "
                              f"{'needs' if wants else 'takes no'} closure")
    return opt


def per_model(x: Any, like: torch.Tensor, model_axes: int) -> Any:
    """A strength with one value per model (a tensor over the leading model axes), shaped to
    broadcast against ``like``; a plain number stays as it is."""
    if not isinstance(x, torch.Tensor) or x.dim() == 0:
        return x
    return x.to(like).reshape(*x.shape, *[1] * (like.dim() - model_axes))


# ------------------------------------------------------------------ the method


@dataclass(frozen=True)
class Method:
    """Plain fine-tuning: no extra term, no wrapper, no model change.

    Subclasses are frozen dataclasses whose fields are their parameters, checked on construction
    by the specs in ``checks``; they override the hooks they need. ``needs_inputs`` asks the
    trainer for differentiable inputs (and ``fn``, ``feature_fn``); ``uses`` names any further
    capability (:data:`CAPABILITIES`) beyond the hooks a method overrides; ``heads`` asks for a
    multi-head model; ``dual`` (the ``mode="unlab"`` variants) for JACHESS's dual mode: the
    penalty is minimized alone on unlabeled batches between task steps.

    Parameters
    ----------
    (fields) : any
        A subclass's dataclass fields are its parameters (e.g. ``SAM.rho``), checked on
        construction by the specs in ``checks``; plain fine-tuning has none.

    Attributes
    ----------
    name : str
        The method's name (``"sam"``); its fields hold the parameters.

    References
    ----------
    The method contract every trainer honours or refuses (``docs/fine-tuning.md``).

    Examples
    --------
    >>> import boundbench as bb
    >>> m = bb.SYNTHETIC_METHODS.parse("sam:rho=0.1")
    >>> (m.name, m.rho)
    ('sam', 0.1)
    """

    base_name: ClassVar[str] = "finetune"
    needs_inputs: ClassVar[bool] = False
    needs_closure: ClassVar[bool] = False  # its optimizer's step re-runs the batch (SAM)
    # differentiates through a gradient (create_graph): the trainer loads eager attention
    double_backward: ClassVar[bool] = False
    uses: ClassVar[frozenset[str]] = frozenset()
    checks: ClassVar[Mapping[str, Spec]] = {}  # field name -> its spec
    notes: ClassVar[Mapping[str, str]] = {}  # readings of the paper, recorded with every result
    # why its hooks cannot run under torch.func.vmap, one seed per model, in the batched seeds'
    # loop (plm/training/batched.py); empty: they can (the trainer's capabilities permitting)
    seeds_at_once_refused: ClassVar[str] = ""
    # the parameters a quick-scale run gives the method where it leaves them at their defaults
    # (a CPU's budget; recorded in each run's method config): see at_quick_scale in plm
    quick: ClassVar[Mapping[str, Any]] = {}

    def __post_init__(self) -> None:
        check_fields(self, **self.checks)

    @property
    def name(self) -> str:
        return self.base_name + ("-unlab" if self.dual else "")

    @property
    def heads(self) -> int:
        return 1

    @property
    def dual(self) -> bool:
        return getattr(self, "mode", "train") == "unlab"

    def needs(self) -> frozenset[str]:
        """What a trainer must give this method (keys of :data:`CAPABILITIES`): the hooks it
        overrides, its flags, and ``uses``."""
        cls, out = type(self), set(self.uses)
        for hook, cap in (("penalty", "penalty"), ("task_loss", "task-loss"),
                          ("optimizer", "optimizer"), ("applied", "model-changes"),
                          ("start_model", "start-model")):
            if getattr(cls, hook) is not getattr(Method, hook):
                out.add(cap)
        for flag, cap in ((self.needs_inputs, "inputs"), (self.needs_closure, "closure"),
                          (self.heads > 1, "heads"), (self.dual, "unlabeled")):
            if flag:
                out.add(cap)
        return frozenset(out)

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        """The run's method state, from the first batch before any update (default: none)."""
        return {}

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of the prediction logits (batch axis -2, classes last)."""
        c = fwd.logits.shape[-1]
        ce = torch.nn.functional.cross_entropy(fwd.logits.reshape(-1, c),
                                               y.expand(fwd.logits.shape[:-1]).reshape(-1),
                                               reduction="none")
        return ce.view(fwd.logits.shape[:-1]).mean(-1)

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor | float:
        return 0.0

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int,
                  model_axes: int = 0) -> torch.optim.Optimizer:
        """The optimizer the trainer steps: ``base`` or a :class:`MethodOptimizer` around it."""
        return base

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        """Model changes for one run (MixOut, a frozen encoder, dropout rates), undone on exit."""
        yield

    def start_model(self, model_name: str, train_texts: Sequence[str], *, seed: int,
                    device: str | torch.device | None = None) -> str:
        """The pretrained model the run starts from (default: ``model_name`` itself).
        ``device``: where a first stage that trains (SURT's) runs, the run's own device (None:
        CUDA when present)."""
        return model_name

    def describe(self) -> dict[str, Any]:
        """The method's name and parameters (and its readings of the paper), for results."""
        params = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                  if f.init}
        return {"method": self.name, **params, **self.notes}

    def report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """What the run's state says about the method at the end (recorded with the result)."""
        return {}


def _plain(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, Method):
        return x.describe()
    if isinstance(x, tuple):
        return [_plain(v) for v in x]
    return x


@dataclass(frozen=True)
class Combined(Method):
    """Several methods at once: penalties add, optimizer wrappers chain (the first part's
    innermost), model changes nest, start models chain, reports merge; at most one part may
    replace the task loss."""

    parts: tuple[Method, ...] = ()

    def __post_init__(self) -> None:
        if not self.parts or not all(isinstance(m, Method) for m in self.parts):
            raise InvalidArgument(f"parts must be a non-empty tuple of methods (got {self.parts!r})")
        losses = [m.name for m in self.parts if "task-loss" in m.needs()]
        if len(losses) > 1:
            raise InvalidArgument(f"parts {losses} each replace the task loss; combine at most one")

    @property
    def name(self) -> str:
        return "+".join(m.name for m in self.parts)

    @property
    def heads(self) -> int:
        return max(m.heads for m in self.parts)

    @property
    def dual(self) -> bool:
        return any(m.dual for m in self.parts)

    @property
    def needs_inputs(self) -> bool:  # type: ignore[override]
        return any(m.needs_inputs for m in self.parts)

    @property
    def needs_closure(self) -> bool:  # type: ignore[override]
        return any(m.needs_closure for m in self.parts)

    @property
    def double_backward(self) -> bool:  # type: ignore[override]
        return any(m.double_backward for m in self.parts)

    def needs(self) -> frozenset[str]:
        return frozenset().union(*(m.needs() for m in self.parts))

    def init_state(self, fwd: Forward, *, seed: int) -> dict[str, Any]:
        return {str(i): m.init_state(fwd, seed=seed) for i, m in enumerate(self.parts)}

    def task_loss(self, fwd: Forward, y: torch.Tensor) -> torch.Tensor:
        own = [m for m in self.parts if "task-loss" in m.needs()]
        return (own[0] if own else Method()).task_loss(fwd, y)

    def penalty(self, fwd: Forward, state: Mapping[str, Any]) -> torch.Tensor | float:
        return sum((m.penalty(fwd, state[str(i)]) for i, m in enumerate(self.parts)), 0.0)

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int,
                  model_axes: int = 0) -> torch.optim.Optimizer:
        for m in self.parts:
            base = m.optimizer(base, seed=seed, model_axes=model_axes)
        return base

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        with ExitStack() as stack:
            for m in self.parts:
                stack.enter_context(m.applied(model))
            yield

    def start_model(self, model_name: str, train_texts: Sequence[str], *, seed: int,
                    device: str | torch.device | None = None) -> str:
        for m in self.parts:
            model_name = m.start_model(model_name, train_texts, seed=seed, device=device)
        return model_name

    def report(self, state: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, m in enumerate(self.parts):
            out.update(m.report(state.get(str(i), {})))
        return out

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "parts": [m.describe() for m in self.parts]}
