"""A SIGTERM answered as a Ctrl-C (issue 84): ``kill``, ``timeout`` and job schedulers end a
run with SIGTERM, which ended an audit at once with status -15, no line, and Python's
leaked-semaphore warning; answered as a ``KeyboardInterrupt``, the pool's workers are stopped,
finished work is kept, and the command prints its "interrupted" line and exits 130
(:class:`~boundbench.errors.ExitCode` ``INTERRUPTED``)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["sigterm_as_interrupt"]


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt("terminated (SIGTERM)")


@contextlib.contextmanager
def sigterm_as_interrupt(active: bool = True) -> Iterator[None]:
    """Within the block a SIGTERM raises ``KeyboardInterrupt("terminated (SIGTERM)")``, and the
    handler before it is restored after. Only where ``active`` (the command line's own process:
    a library user's keeps its own) and on the main thread (where Python runs handlers).

    >>> import os
    >>> with sigterm_as_interrupt():
    ...     try:
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...     except KeyboardInterrupt as exc:
    ...         print(exc)
    terminated (SIGTERM)
    >>> signal.getsignal(signal.SIGTERM) is _terminated  # restored after the block
    False
    """
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
