"""The string edge of the method interface: method names and specs (``"jachess:dims=1"``) read
against each method's typed fields, and a list of names -> classes that each layer extends
(:data:`boundbench.methods.names.METHODS`, then the plm layer's); an unknown name lists the
known ones."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import torch

from boundbench.errors import InvalidArgument
from boundbench.methods._interface import Method, _plain


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
        raise InvalidArgument(f"unbalanced brackets in method arguments {text!r}")
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
        raise InvalidArgument(errors[0] if errors else f"{where}: cannot read {value!r}")
    if origin is typing.Literal:
        if value not in args:
            raise InvalidArgument(f"{where} must be one of {list(args)} (got {value!r})")
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
        raise InvalidArgument(f"{where} must be true or false (got {value!r})")
    if hint is int:
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{where} must be an integer (got {value!r})") from None
        if isinstance(value, bool) or not f.is_integer():
            raise InvalidArgument(f"{where} must be an integer (got {value!r})")
        return int(f)
    if hint is float:
        if isinstance(value, bool):
            raise InvalidArgument(f"{where} must be a number (got {value!r})")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise InvalidArgument(f"{where} must be a number (got {value!r})") from None
    if hint is str:
        if not isinstance(value, str):
            raise InvalidArgument(f"{where} must be a string (got {value!r})")
        return value.strip()
    return value


class MethodNames:
    """Method names -> classes, explicit (as the claim catalogue is), built
    from a list of classes (each registered under its ``base_name``, and ``<name>-unlab`` when
    it has a ``mode`` field). Layers extend the list rather than register into a global."""

    def __init__(self, classes: Iterable[type[Method]], *, elsewhere: str = "") -> None:
        self._by_name: dict[str, tuple[type[Method], dict[str, Any]]] = {}
        self._elsewhere = elsewhere
        self._classes = tuple(classes)
        for cls in self._classes:
            has_mode = any(f.name == "mode" for f in dataclasses.fields(cls))
            for name, fixed in [(cls.base_name, {})] + (
                    [(f"{cls.base_name}-unlab", {"mode": "unlab"})] if has_mode else []):
                if name in self._by_name:
                    raise InvalidArgument(f"method name {name!r} is listed twice")
                self._by_name[name] = (cls, fixed)

    def extended(self, classes: Iterable[type[Method]], *, elsewhere: str = "") -> MethodNames:
        """This list and ``classes``."""
        return MethodNames([*self._classes, *classes], elsewhere=elsewhere)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def from_config(self, name: str, params: Mapping[str, Any] | None = None) -> Method:
        """The method ``name`` with ``params`` (strings or JSON values) read against its typed
        fields; unknown names, unknown parameters and ill-typed values raise ``ValueError``."""
        if name not in self._by_name:
            raise InvalidArgument(f"unknown method {name!r}; known: {self.names()}"
                                  + (f" ({self._elsewhere})" if self._elsewhere else ""))
        cls, fixed = self._by_name[name]
        hints = typing.get_type_hints(cls)
        fields = {f.name for f in dataclasses.fields(cls) if f.init} - set(fixed)
        kw = {}
        for key, value in (params or {}).items():
            if key not in fields:
                raise InvalidArgument(f"method {name!r} has no parameter {key!r}; its parameters: "
                                      f"{sorted(fields) or 'none'}")
            kw[key] = _coerce(name, key, hints[key], value)
        try:
            return cls(**fixed, **kw)
        except TypeError as exc:  # a spec's type check: at this edge, a bad value
            raise InvalidArgument(f"method {name!r}: {exc}") from None

    def parse(self, text: str) -> Method:
        """``"name"`` or ``"name:key=value,key=value"`` (lists in brackets: ``rates=[0.3,0.5]``)
        -> the method, its arguments read against its typed fields."""
        return self.from_config(*split_spec(text))

    def spec(self, method: Method) -> str:
        """The inverse of :meth:`parse`: the name and the parameters that differ from the
        defaults (``"jachess:dims=1,reg_batch=2"``)."""
        if method.name not in self._by_name:
            raise InvalidArgument(f"method {method.name!r} is not in this list")
        _, fixed = self._by_name[method.name]
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


def split_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})``, the values still strings."""
    if not isinstance(spec, str) or not spec.strip():
        raise InvalidArgument(f"method must be a non-empty name (got {spec!r})")
    name, _, rest = spec.strip().partition(":")
    params: dict[str, str] = {}
    for part in _split_args(rest) if rest.strip() else []:
        key, eq, val = part.partition("=")
        if not eq or not key.strip():
            raise InvalidArgument(f"method spec {spec!r}: expected name:key=value,... (got {part!r})")
        if key.strip() in params:
            raise InvalidArgument(f"method spec {spec!r} sets {key.strip()!r} twice")
        params[key.strip()] = val.strip()
    return name.strip(), params
