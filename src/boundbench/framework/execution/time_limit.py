"""A claim's time limit (issue 65): a check that hangs (a plugin's loop, a solver that never
returns) must end as ``inconclusive`` with the reason, not run forever. Limits by scale
(:data:`DEFAULTS`), overridden per claim (``claim(time_limit=...)``); enforced with
``SIGALRM`` where a claim runs on a process's main thread (the command line, its pool's workers;
a Dask worker's thread or a non-POSIX system run without one, and say so)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from boundbench.errors import InvalidArgument

#: seconds a claim may take at each scale: several times the slowest built-in claim's time
#: (Fig. 5 takes about 4 hours at the paper's size on 2 cores)
DEFAULTS = {"quick": 15 * 60, "standard": 4 * 3600, "paper": 24 * 3600}


class TimeLimitExceeded(BaseException):
    """A claim ran past its time limit. A ``BaseException``, so that a check's own
    ``except Exception`` cannot swallow it."""


def enforceable() -> bool:
    """Whether :func:`time_limit` can stop a claim here (POSIX, the main thread)."""
    return hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`TimeLimitExceeded` in the block after ``seconds`` (``None``: no limit; a
    no-op where not :func:`enforceable`). Restores the previous alarm handler."""
    if seconds is None or not enforceable():
        yield
        return
    if not seconds > 0:
        raise InvalidArgument(f"time_limit must be > 0 seconds (got {seconds!r})")

    def alarm(*_: object) -> None:
        raise TimeLimitExceeded(seconds)

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
