"""The method interface shared by ``synthetic`` and ``plm``, and the registry of method names.

A method is a typed, frozen configuration (one dataclass per method; its fields are its
parameters, validated on construction) with

* pure loss terms: :meth:`Method.task_loss` and :meth:`Method.penalty`, functions of the batch's
  :class:`Forward` and of the run's method state (:meth:`Method.init_state`: generators,
  theta_0, layer weights measured before the first update);
* and/or an optimizer wrapper with its own state (:meth:`Method.optimizer`, a
  ``torch.optim.Optimizer`` with ``state_dict``), as SAM;
* model changes that last one run only (:meth:`Method.applied`, a context manager that undoes
  them on exit).

A method never changes itself, and never changes a model beyond the ``with method.applied(model)``
block. Strings appear only at the command-line/JSON edge: :func:`parse_method` and
:func:`method_from_config` read them against the dataclass's typed fields.

A trainer builds a :class:`Forward` per batch and adds ``method.penalty(fwd, state)`` to
``method.task_loss(fwd, y)``. Penalties keep a leading model axis if the trainer batches several
models (a grid of sigma): one call serves all of them.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch


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


@dataclass(frozen=True)
class Method:
    """Plain fine-tuning: no extra term, no wrapper, no model change.

    Subclasses are frozen dataclasses whose fields are their parameters; they override what
    they need. ``needs_inputs`` asks the trainer for differentiable inputs (and ``fn``,
    ``feature_fn``, ``hidden_fn``, ``dropout_fn``); ``heads`` for a multi-head model; ``dual``
    (the ``mode="unlab"`` variants) for JACHESS's dual mode: the penalty is minimized alone on
    unlabeled batches between task steps."""

    base_name: ClassVar[str] = "finetune"
    needs_inputs: ClassVar[bool] = False
    # differentiates through a gradient (create_graph): the trainer loads eager attention
    double_backward: ClassVar[bool] = False
    notes: ClassVar[Mapping[str, str]] = {}  # readings of the paper, recorded with every result

    @property
    def name(self) -> str:
        return self.base_name + ("-unlab" if self.dual else "")

    @property
    def heads(self) -> int:
        return 1

    @property
    def dual(self) -> bool:
        return getattr(self, "mode", "train") == "unlab"

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

    def optimizer(self, base: torch.optim.Optimizer, *, seed: int) -> torch.optim.Optimizer:
        """The optimizer the trainer steps: ``base`` or a wrapper around it with its own state."""
        return base

    @contextmanager
    def applied(self, model: torch.nn.Module) -> Iterator[None]:
        """Model changes for one run (MixOut, a frozen encoder, dropout rates), undone on exit."""
        yield

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


# ------------------------------------------------------------------ names (the string edge)

_METHODS: dict[str, tuple[type[Method], dict[str, Any]]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Register a method class under its ``base_name`` (and ``<name>-unlab`` when it has a
    ``mode`` field)."""
    for name, fixed in [(cls.base_name, {})] + (
            [(f"{cls.base_name}-unlab", {"mode": "unlab"})]
            if any(f.name == "mode" for f in dataclasses.fields(cls)) else []):
        if name in _METHODS and _METHODS[name][0] is not cls:
            raise ValueError(f"method name {name!r} is registered twice")
        _METHODS[name] = (cls, fixed)
    return cls


register(Method)


def known_methods() -> list[str]:
    """Every registered method name (``boundbench.plm`` adds the transformer methods on
    import)."""
    return sorted(_METHODS)


def _split_args(text: str) -> list[str]:
    """``"a=1,b=[1,2]"`` -> ``["a=1", "b=[1,2]"]``: commas inside brackets stay."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += 1 if ch in "[(" else -1 if ch in "])" else 0
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise ValueError(f"unbalanced brackets in method arguments {text!r}")
    return [p for p in [*parts, cur] if p.strip()]


def _coerce(method: str, key: str, hint: Any, value: Any) -> Any:
    """``value`` (a string from the command line, or a JSON value) as the field's type."""
    where = f"method {method!r}: parameter {key!r}"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")):
            if type(None) in args:
                return None
        inner = [a for a in args if a is not type(None)]
        errors = []
        for a in inner:
            try:
                return _coerce(method, key, a, value)
            except ValueError as exc:
                errors.append(str(exc))
        raise ValueError(errors[0] if errors else f"{where}: cannot read {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{where} must be one of {list(args)} (got {value!r})")
        return value
    if origin is tuple:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                value = [v for v in value.strip("()[]").split(";") if v.strip()]
        if not isinstance(value, list | tuple):
            value = [value]
        item = args[0] if args else float
        return tuple(_coerce(method, key, item, v) for v in value)
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
            return value.strip().lower() in ("true", "1")
        raise ValueError(f"{where} must be true or false (got {value!r})")
    if hint is int:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be an integer (got {value!r})") from None
        if isinstance(value, bool) or not f.is_integer():
            raise ValueError(f"{where} must be an integer (got {value!r})")
        return int(f)
    if hint is float:
        if isinstance(value, bool):
            raise ValueError(f"{where} must be a number (got {value!r})")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where} must be a number (got {value!r})") from None
    if hint is str:
        if not isinstance(value, str):
            raise ValueError(f"{where} must be a string (got {value!r})")
        return value.strip()
    return value


def method_from_config(name: str, params: Mapping[str, Any] | None = None) -> Method:
    """The method ``name`` with ``params`` (strings or JSON values) read against its typed
    fields; unknown names, unknown parameters and ill-typed values raise ``ValueError``."""
    if name not in _METHODS:
        raise ValueError(f"unknown method {name!r}; known: {known_methods()}")
    cls, fixed = _METHODS[name]
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.init} - set(fixed)
    kw = {}
    for key, value in (params or {}).items():
        if key not in fields:
            raise ValueError(f"method {name!r} has no parameter {key!r}; its parameters: "
                             f"{sorted(fields) or 'none'}")
        kw[key] = _coerce(name, key, hints[key], value)
    return cls(**fixed, **kw)


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})``, the values still strings."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"method must be a non-empty name (got {spec!r})")
    name, _, rest = spec.strip().partition(":")
    params: dict[str, str] = {}
    for part in _split_args(rest) if rest.strip() else []:
        key, eq, val = part.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"method spec {spec!r}: expected name:key=value,... (got {part!r})")
        if key.strip() in params:
            raise ValueError(f"method spec {spec!r} sets {key.strip()!r} twice")
        params[key.strip()] = val.strip()
    return name.strip(), params


def parse_method(spec: str) -> Method:
    """``"name"`` or ``"name:key=value,key=value"`` (lists in brackets: ``rates=[0.3,0.5]``) ->
    the method, its arguments read against its typed fields."""
    return method_from_config(*split_spec(spec))


def spec(method: Method) -> str:
    """The inverse of :func:`parse_method`: the name and the parameters that differ from the
    defaults (``"jachess:dims=1,reg_batch=2"``)."""
    _, fixed = _METHODS[method.name]
    defaults = type(method)(**fixed)
    args = []
    for f in dataclasses.fields(method):
        if f.name in fixed or not f.init:
            continue
        v, d = getattr(method, f.name), getattr(defaults, f.name)
        if isinstance(v, torch.Tensor) or v != d:
            args.append(f"{f.name}={json.dumps(_plain(v)).replace(' ', '')}"
                        if not isinstance(v, str) else f"{f.name}={v}")
    return method.name + (":" + ",".join(args) if args else "")
