"""What keeps a hypothesis run under ``falsify --evaluations`` the same run on every machine, in
every process and under any load (issue 81 item 3): its calls a function of the seed, the box
and the bound's own file alone.

Hypothesis reads three things besides its seed that change which calls it makes:

- **its clocks**: it goes on generating until 10 s after the first failure (fewer calls on a
  slower machine) and stops shrinking after 300 s (``MAX_SHRINKING_SECONDS``);
- **the loaded profile**: a suite's ``derandomize=True`` replaces the seed;
- **the constants of every "local" module loaded** (hypothesis 6.131+ draws literals found in
  the user's code): a test process, a checkout installed editable or not, and a subprocess load
  different modules, so they drew different instances from one seed.

:func:`pinned` keeps the constants to those of the bound's own module (the literals of the
statement, where the feature helps), and, for a budget of calls, the clocks out. The settings
are pinned where the run is built (``boundbench.testing.bound._drive``).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["pinned"]


@contextlib.contextmanager
def pinned(fn: Callable[..., Any], *, counted: bool) -> Iterator[None]:
    """While open: hypothesis draws local constants from ``fn``'s module only, and where
    ``counted`` (an exact budget of calls), reads no clock for its stopping rules."""
    from unittest import mock

    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants, constants_from_module

    module = inspect.getmodule(fn)
    try:
        own = constants_from_module(module) if module is not None else Constants()
    except Exception:  # noqa: BLE001 - a module without readable source: no constants
        own = Constants()
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(providers, "_get_local_constants", lambda: own))
        providers.CONSTANTS_CACHE.cache.clear()  # it holds the pools drawn from other modules
        stack.callback(providers.CONSTANTS_CACHE.cache.clear)
        if counted:
            # stop generating at the first failure (report_multiple_bugs=False, set with the
            # settings) and shrink without a limit of seconds: only the budget's calls stop it
            stack.enter_context(mock.patch(
                "hypothesis.internal.conjecture.engine.MAX_SHRINKING_SECONDS", math.inf))
        yield
