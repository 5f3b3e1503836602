"""Declared input checks: specs for a function's arguments (``@checked``) and for a frozen
config's fields (``check_fields``, a method's ``checks``). Each failure is a ValueError (bad
value) or TypeError (bad type) naming the parameter. The checks a function's body makes itself
(:func:`~boundbench.framework.inputs.values.real`, the relations between two arguments) are in
:mod:`boundbench.framework.inputs.values`."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.inputs import limits
from boundbench.framework.inputs.values import (
    MAX_MAGNITUDE,
    in_interval,
    integers,
    is_integer,
    max_magnitude,
    real,
    too_large,
)

F = TypeVar("F", bound=Callable[..., Any])
# the limits' names where callers have always imported them from
MAX_SEED, MAX_DRAWS, DRAWS_WHY, SizeError = (limits.MAX_SEED, limits.MAX_DRAWS, limits.DRAWS_WHY,
                                             limits.SizeError)

# ---------------------------------------------------------------- declared argument specs
# (``@checked(n=Int(1), rng=Rng())``: each only checks, except Rng, which makes a Generator)


class Spec:
    def __call__(self, name: str, value: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


class Values(Spec):
    """Array-like of finite reals of any shape (a bound's broadcasting arguments), optionally
    integer-valued and all in an interval; passed on as a float64 array."""

    def __init__(self, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False, integer: bool = False, min_ndim: int = 0) -> None:
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        self.integer, self.min_ndim = integer, min_ndim

    def __call__(self, name: str, value: Any) -> np.ndarray:
        if np.ndim(value) < self.min_ndim:
            raise InvalidArgument(f"{name} must have at least {self.min_ndim} dimension(s) (got shape "
                                  f"{np.shape(value)})")
        if self.integer:
            return integers(name, value, minimum=None if self.lo is None else int(self.lo))
        if self.lo is None and self.hi is None:
            return real(name, value)
        if self.hi is None:
            assert self.lo is not None
            a = real(name, value)
            bad = a <= self.lo if self.lo_open else a < self.lo
            if np.any(bad):
                raise InvalidArgument(f"{name} must be {'>' if self.lo_open else '>='} {self.lo:g} "
                                      f"(got min {a.min():.6g})")
            return a
        return in_interval(name, value, -np.inf if self.lo is None else self.lo, self.hi,
                            closed_lo=not self.lo_open, closed_hi=not self.hi_open)


class Int(Spec):
    """An integer (never a bool), optionally within ``[minimum, maximum]``; ``why`` says what a
    maximum protects (memory, time) in its error."""

    def __init__(self, minimum: int | None = None, maximum: int | None = None,
                 *, optional: bool = False, why: str = "") -> None:
        self.minimum, self.maximum, self.optional, self.why = minimum, maximum, optional, why

    def __call__(self, name: str, value: Any) -> Any:
        if value is None and self.optional:
            return value
        if not is_integer(value):
            raise InvalidArgument(f"{name} must be an integer (got {value!r})")
        if self.minimum is not None and value < self.minimum:
            raise InvalidArgument(f"{name} must be >= {self.minimum} (got {value})")
        if self.maximum is not None and value > self.maximum:
            why = f": {self.why}" if self.why else ""
            raise InvalidArgument(f"{name} must be <= {self.maximum:,} (got {value:,}){why}")
        return value


class Float(Spec):
    """A finite real number, optionally in an interval."""

    def __init__(self, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                 hi_open: bool = False, optional: bool = False, per_model: bool = False) -> None:
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        self.optional, self.per_model = optional, per_model

    def __call__(self, name: str, value: Any) -> Any:
        if value is None and self.optional:
            return value
        if self.per_model and hasattr(value, "detach") and hasattr(value, "is_floating_point"):
            # a method strength with one value per model of a batched trainer
            if value.dim() > 1 or not value.is_floating_point():
                raise InvalidArgument(f"{name} must be a number or a 1-D float tensor of one value per "
                                f"model (got a {value.dtype} tensor of shape {tuple(value.shape)})")
            for x in value.detach().cpu().reshape(-1).tolist():
                self(name, x)
            return value
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise InvalidArgument(f"{name} must be a real number (got {value!r})")
        if not np.isfinite(value):
            raise InvalidArgument(f"{name} must be finite (got {value})")
        if abs(float(value)) > MAX_MAGNITUDE:
            raise too_large(name, abs(float(value)), MAX_MAGNITUDE)
        lo_bad = self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo)
        hi_bad = self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi)
        if lo_bad or hi_bad:
            if self.hi is None:
                need = f"be {'>' if self.lo_open else '>='} {self.lo:g}"
            elif self.lo is None:
                need = f"be {'<' if self.hi_open else '<='} {self.hi:g}"
            else:
                need = (f"lie in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}"
                        f"{')' if self.hi_open else ']'}")
            raise InvalidArgument(f"{name} must {need} (got {value:g})")
        return value


class Array(Spec):
    """Numeric array-like: finite, non-empty, of ``ndim`` dimensions when given."""

    def __init__(self, *, ndim: int | tuple[int, ...] | None = None, finite: bool = True,
                 min_size: int = 1, optional: bool = False) -> None:
        self.ndim, self.finite, self.min_size, self.optional = ndim, finite, min_size, optional

    def __call__(self, name: str, value: Any) -> Any:
        if value is None and self.optional:
            return value
        if isinstance(value, str):
            raise InvalidArgument(f"{name} must be numeric (got a string)")
        if hasattr(value, "detach") and hasattr(value, "is_floating_point"):
            return self._tensor(name, value)
        try:
            a = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - anything unconvertible is a type error
            raise InvalidArgument(f"{name} must be numeric (got {type(value).__name__})") from exc
        if a.dtype.kind == "b":
            raise InvalidArgument(f"{name} must be numbers, not booleans (got dtype bool)")
        if a.dtype.kind not in "iuf":
            raise InvalidArgument(f"{name} must be real numbers (got dtype {a.dtype})")
        dims = (self.ndim,) if isinstance(self.ndim, int) else self.ndim
        if dims is not None and a.ndim not in dims:
            raise InvalidArgument(f"{name} must have {' or '.join(map(str, dims))} dimensions (got "
                                  f"shape {a.shape})")
        if a.size < self.min_size or (self.min_size and a.ndim and 0 in a.shape):
            raise InvalidArgument(f"{name} must not be empty (got shape {a.shape})")
        if self.finite and not np.all(np.isfinite(a)):
            raise InvalidArgument(f"{name} must be finite (got NaN or inf)")
        if a.dtype.kind == "f" and a.size:
            # NaN may mean "not measured" where finite=False; a huge finite entry never does
            biggest = float(np.max(np.abs(np.where(np.isfinite(a), a, 0.0))))
            if biggest > MAX_MAGNITUDE:
                raise too_large(name, biggest, MAX_MAGNITUDE)
        return value

    def _tensor(self, name: str, value: Any) -> Any:
        """The same checks on a torch tensor where it lives (no copy to the host)."""
        import torch

        if value.dtype == torch.bool or value.is_complex():
            raise InvalidArgument(f"{name} must be real-valued (got dtype {value.dtype})")
        dims = (self.ndim,) if isinstance(self.ndim, int) else self.ndim
        if dims is not None and value.ndim not in dims:
            raise InvalidArgument(f"{name} must have {' or '.join(map(str, dims))} dimensions (got "
                                  f"shape {tuple(value.shape)})")
        if value.numel() < self.min_size or (self.min_size and 0 in value.shape):
            raise InvalidArgument(f"{name} must not be empty (got shape {tuple(value.shape)})")
        if self.finite and value.is_floating_point():
            if not bool(torch.isfinite(value).all()):
                raise InvalidArgument(f"{name} must be finite (got NaN or inf)")
            limit = max_magnitude(value.dtype)
            biggest = float(value.detach().abs().max())
            if biggest > limit:
                raise too_large(name, biggest, limit)
        return value


class Tensor(Array):
    """A torch tensor (floating point), finite and non-empty."""

    def __call__(self, name: str, value: Any) -> Any:
        import torch

        if value is None and self.optional:
            return value
        if not isinstance(value, torch.Tensor):
            raise InvalidArgument(f"{name} must be a torch.Tensor (got {type(value).__name__})")
        if not value.is_floating_point():
            raise InvalidArgument(f"{name} must be a floating-point tensor (got {value.dtype})")
        return super().__call__(name, value)


class Choice(Spec):
    def __init__(self, *options: Any) -> None:
        self.options = options

    def __call__(self, name: str, value: Any) -> Any:
        if isinstance(value, bool | np.bool_) and not any(isinstance(o, bool) for o in self.options):
            raise InvalidArgument(f"{name} must be one of {list(self.options)} (got {value!r}, a "
                                  "boolean)")
        if value not in self.options:
            raise InvalidArgument(f"{name} must be one of {list(self.options)} (got {value!r})")
        return value


class Bool(Spec):
    def __call__(self, name: str, value: Any) -> Any:
        if not isinstance(value, bool | np.bool_):
            raise InvalidArgument(f"{name} must be True or False (got {value!r})")
        return value


class Rng(Spec):
    """A ``numpy.random.Generator``, or a seed (an integer in [0, :data:`MAX_SEED`]) turned into
    one: every parameter named ``rng`` takes both and is annotated ``np.random.Generator | int``
    (:func:`checked` refuses another annotation, issue 65), as scikit-learn's ``random_state``."""

    def __call__(self, name: str, value: Any) -> Any:
        if isinstance(value, np.random.Generator):
            return value
        if is_integer(value) and 0 <= value <= MAX_SEED:
            return np.random.default_rng(int(value))
        raise InvalidArgument(f"{name} must be a numpy Generator or a seed in [0, {MAX_SEED}] "
                        f"(got {value!r})")


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """``rng`` as a Generator (a checked body's first line: typed, and right via unchecked)."""
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(int(rng))


class Seed(Spec):
    """An integer seed in [0, :data:`MAX_SEED`] (or, with ``generator=True``, a Generator passed
    through)."""

    def __init__(self, *, generator: bool = False) -> None:
        self.generator = generator

    def __call__(self, name: str, value: Any) -> Any:
        if self.generator and isinstance(value, np.random.Generator):
            return value
        if not is_integer(value):
            raise InvalidArgument(f"{name} must be an integer seed >= 0"
                            f"{' or a numpy Generator' if self.generator else ''} "
                            f"(got {value!r})")
        if value < 0:
            raise InvalidArgument(f"{name} must be >= 0 (got {value})")
        if value > MAX_SEED:
            raise InvalidArgument(f"{name} must be <= {MAX_SEED} (2^32 - 1; got {value})")
        return value


class Seeds(Spec):
    """At least one distinct :class:`Seed`, from any sequence (a ``range`` too): a list of ints."""

    def __call__(self, name: str, value: Any) -> Any:
        if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
            raise InvalidArgument(f"{name} must be a sequence of integer seeds (got {value!r})")
        seeds = [int(Seed()(name, s)) for s in value]
        if not seeds or len(set(seeds)) != len(seeds):
            raise InvalidArgument(f"{name} must be distinct seeds, at least one (got {value!r})")
        return seeds


class Seq(Spec):
    """A non-empty tuple/list whose items each meet ``item`` (``as_tuple``: stored as a tuple,
    for frozen configs)."""

    def __init__(self, item: Spec, *, as_tuple: bool = False) -> None:
        self.item, self.as_tuple = item, as_tuple

    def __call__(self, name: str, value: Any) -> Any:
        if not isinstance(value, tuple | list) or not value:
            raise InvalidArgument(f"{name} must be a non-empty tuple of values (got {value!r})")
        for x in value:
            self.item(name, x)
        return tuple(value) if self.as_tuple and not isinstance(value, tuple) else value


def draws(minimum: int) -> Int:
    """The spec of a Monte Carlo sample, probe or projection count."""
    return Int(minimum, MAX_DRAWS, why=DRAWS_WHY)


def iterations(minimum: int) -> Int:
    """The spec of a step or batch count of an iterative method."""
    return Int(minimum, MAX_DRAWS, why="more would run for days; take fewer")


def apply(spec: Spec, name: str, value: Any) -> Any:
    """``spec(name, value)``, where every failure names the argument: numpy's own errors on a
    value it cannot read (a ragged list's "inhomogeneous shape", an object it cannot convert)
    are restated with ``name`` (one rule for every checked argument, issue 65)."""
    try:
        return spec(name, value)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if "inhomogeneous" in msg or "setting an array element with a sequence" in msg:
            raise InvalidArgument(f"{name} must be a rectangular array of numbers (nested lists of "
                                  f"equal lengths; got a ragged nesting: {_outline(value)})") from None
        if name in msg:
            raise
        raise type(exc)(f"{name}: {msg or type(exc).__name__}") from None


def as_array(name: str, value: Any) -> np.ndarray:
    """``np.asarray(value)`` for a function that checks its own array argument, with numpy's
    errors on a ragged or unreadable value restated with ``name`` (:func:`apply`'s rule)."""
    class _Raw(Spec):
        def __call__(self, name: str, value: Any) -> np.ndarray:
            return np.asarray(value)

    return apply(_Raw(), name, value)


def _outline(value: Any, depth: int = 0) -> str:
    """A ragged nesting's lengths, for its error: ``[[2 items], [1 item]]``."""
    if isinstance(value, list | tuple) and depth < 2:
        inner = ", ".join(_outline(v, depth + 1) for v in value[:4])
        return f"[{inner}{', ...' if len(value) > 4 else ''}]"
    if isinstance(value, list | tuple):
        return f"[{len(value)} item{'s' if len(value) != 1 else ''}]"
    return type(value).__name__


def checked(*, needs: Callable[[dict[str, Any]], float] | None = None,
            **specs: Spec) -> Callable[[F], F]:
    """Validate the named arguments of the decorated function by their specs (defaults too,
    so a bad default fails loudly), before the body runs; ``needs`` (the checked arguments ->
    a lower bound in bytes of what the body allocates) refuses a call beyond the machine's
    free memory before anything is allocated (:func:`~boundbench.framework.inputs.limits.check_memory`).
    The unchecked body stays reachable as ``fn.__wrapped__``, for a hot loop whose inputs are
    its own (an optimizer's gradients)."""
    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)
        unknown = set(specs) - set(sig.parameters)
        if unknown:
            raise InvalidArgument(f"checked: {fn.__name__} has no arguments {sorted(unknown)}")
        for name, spec in specs.items():  # a maintainer's slip, caught at import
            note = str(sig.parameters[name].annotation)
            if isinstance(spec, Rng) and not ("Generator" in note and "int" in note):
                raise InvalidArgument(f"checked: {fn.__name__}'s {name} takes a Generator or a seed; "
                                f"annotate it np.random.Generator | int (is {note})")

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as exc:
                raise InvalidArgument(f"{fn.__name__}: {exc}") from None
            bound.apply_defaults()
            for name, spec in specs.items():
                bound.arguments[name] = apply(spec, name, bound.arguments[name])
            if needs is not None:
                limits.check_memory(fn.__name__, bound.arguments, needs(bound.arguments))
            try:
                return fn(*bound.args, **bound.kwargs)
            except (MemoryError, RuntimeError, ValueError, SizeError) as exc:
                # one rule for every checked function (issue 65): a size too large for the
                # machine is the caller's to change, named, never a bare MemoryError
                if isinstance(exc, SizeError) or limits.allocation_failure(exc):
                    raise limits.size_error(fn.__name__, bound.arguments, exc) from None
                raise

        call.needs = needs  # type: ignore[attr-defined]  # the size fuzz reads it
        return call  # type: ignore[return-value]

    return wrap


def unchecked(fn: F) -> F:
    """The body of a :func:`checked` function without its argument checks, for a hot loop whose
    inputs are its own (an optimizer's gradients)."""
    return getattr(fn, "__wrapped__", fn)


def check_fields(obj: Any, **specs: Spec) -> None:
    """The same specs for a frozen dataclass's fields (call from ``__post_init__``)."""
    for name, spec in specs.items():
        value = apply(spec, name, getattr(obj, name))
        if value is not getattr(obj, name):
            object.__setattr__(obj, name, value)


class Text(Spec):
    def __call__(self, name: str, value: Any) -> Any:
        if not isinstance(value, str):
            raise InvalidArgument(f"{name} must be a string (got {value!r})")
        return value


class Real(Spec):
    """A real number of any value, NaN and infinities included (functions that report "none"
    for them); only the type is checked."""

    def __call__(self, name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            raise InvalidArgument(f"{name} must be a real number (got {value!r})")
        return value


class IntLists(Spec):
    """A non-empty list of non-empty lists of integers >= 0 (token ids)."""

    def __call__(self, name: str, value: Any) -> Any:
        if not isinstance(value, list | tuple) or not value or not all(
                isinstance(t, list | tuple) and t and all(is_integer(i) and i >= 0 for i in t)
                for t in value):
            raise InvalidArgument(f"{name} must be a non-empty list of non-empty lists of token ids "
                            f"(integers >= 0; got {value!r:.80})")
        return value


class IntSeq(Spec):
    """A list or tuple (possibly empty) of integers >= ``minimum``."""

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum

    def __call__(self, name: str, value: Any) -> Any:
        if not isinstance(value, list | tuple) or not all(is_integer(i) and i >= self.minimum
                                                           for i in value):
            raise InvalidArgument(f"{name} must be a list of integers >= {self.minimum} (got "
                            f"{value!r:.80})")
        return value
