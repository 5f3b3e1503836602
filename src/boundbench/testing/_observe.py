"""What every call of a bound leaves behind under ``boundbench falsify`` (issue 80): the
instances with the largest float64 ratios, the pool that is rechecked at 50 digits before any
ratio is reported, and the first warning the bound's own arithmetic raised, with its instance
(``invalid value encountered in sqrt`` alone names nothing).

Every engine calls the bound through :func:`call` (hypothesis's rounds, the global search, the
polishing); outside :func:`observing` it is the bare call."""

from __future__ import annotations

import contextlib
import contextvars
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from boundbench.testing._isolated import beat, done

POOL = 16  # instances kept, the largest float64 ratios first, each distinct

_OBSERVER: contextvars.ContextVar[Observer | None] = contextvars.ContextVar(
    "boundbench_falsify_observer", default=None)


@dataclass
class Observer:
    """The run's pool (``(ratio, instance)``, largest first) and first warning."""

    pool: list[tuple[float, Any]] = field(default_factory=list)
    warning: str = ""
    _seen: set[str] = field(default_factory=set)

    def keep(self, instance: Any, out: Any) -> None:
        from boundbench.testing._ratios import worst_element

        try:
            ratio = worst_element(*out)[0]
        except Exception:  # noqa: BLE001 - a value that is not (lhs, rhs): the caller says so
            return
        if math.isnan(ratio) or (self.pool and len(self.pool) >= POOL
                                 and ratio <= self.pool[-1][0]):
            return
        key = repr(instance)
        if key in self._seen:
            return
        self._seen.add(key)
        self.pool.append((ratio, instance))
        self.pool.sort(key=lambda t: -t[0])
        for _, gone in self.pool[POOL:]:
            self._seen.discard(repr(gone))
        del self.pool[POOL:]


def timed(fn: Callable[[Any], Any], instance: Any, given: Any = None) -> Any:
    """``fn(given)`` (``fn(instance)`` by default), marked as one evaluation on ``instance`` for
    the parent of an isolated run (:mod:`boundbench.testing._isolated`): its timeout and the
    instance it names when the bound hangs or ends the process."""
    beat(instance)
    try:
        return fn(instance if given is None else given)
    finally:
        done()


def call(fn: Callable[[Any], Any], instance: Any) -> Any:
    """``fn(instance)``; under :func:`observing`, its warnings caught (the first one kept with
    the instance) and its ratio offered to the pool."""
    obs = _OBSERVER.get()
    if obs is None:
        return timed(fn, instance)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = timed(fn, instance)
    if caught and not obs.warning:
        w = caught[0]
        obs.warning = f"{w.category.__name__}: {w.message} (on {instance!r})"
    obs.keep(instance, out)
    return out


@contextlib.contextmanager
def observing() -> Iterator[Observer]:
    obs = Observer()
    token = _OBSERVER.set(obs)
    try:
        yield obs
    finally:
        _OBSERVER.reset(token)
