"""``falsify FILE.py:FUNCTION`` with the user's bound in a child process (issue 81 item 4): a
bound that hangs is stopped after ``eval_timeout`` seconds of one evaluation, one that ends its
process (``os._exit``, a crash) is reported, each as that instance's error in one line, and the
run around it survives.

The child is a fork of this process (it sees what the parent set up: its environment, the
hypothesis home, a test's monkeypatches); it runs the whole search and sends back its result.
Before each evaluation it writes the time and the instance into shared memory (no system call
a call; ``benchmarks/bench_falsify_isolation.py`` measures the cost), which the parent reads
when an evaluation overruns or the child dies. Where ``fork`` is not available the search runs
in this process, without these guards (said in the result's ``isolation``).

The clock decides only whether one evaluation overran: it never changes which calls are made,
so an ``--evaluations`` run stays the same run on any machine.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
import time
from collections.abc import Callable
from typing import Any

from boundbench.errors import InvalidArgument

__all__ = ["DEFAULT_EVAL_TIMEOUT", "beat", "isolated", "supported"]

#: seconds one evaluation of a user's bound may run (``falsify --eval-timeout``)
DEFAULT_EVAL_TIMEOUT = 10.0
_WIDTH = 2000  # characters of the instance kept for the message
_POLL = 0.05  # seconds between the parent's looks at the child

_SHARED: tuple[Any, Any] | None = None  # (start time, instance) in the child; None elsewhere


def supported() -> bool:
    """Whether a fork can run the bound (Linux and the BSDs; not Windows)."""
    return "fork" in mp.get_all_start_methods()


def beat(instance: Any) -> None:
    """Mark the start of one evaluation on ``instance`` (a no-op outside the child)."""
    if _SHARED is None:
        return
    started, text = _SHARED
    try:
        words = repr(instance)
    except Exception:  # noqa: BLE001 - an instance whose repr raises is still evaluated
        words = f"<an instance of type {type(instance).__name__}>"
    text.value = words[:_WIDTH].encode("utf-8", "replace")[:_WIDTH]
    started.value = time.monotonic()


def done() -> None:
    """Mark the end of the evaluation (a no-op outside the child)."""
    if _SHARED is not None:
        _SHARED[0].value = 0.0


def isolated(run: Callable[[], dict[str, Any]], *, target: str, eval_timeout: float,
             error: type[Exception]) -> dict[str, Any]:
    """``run()`` in a forked child; its result, or its exception raised here (an ``error``,
    :class:`~boundbench.testing.bound.BoundRaised` for ``falsify``, naming the instance when one
    evaluation ran past ``eval_timeout`` seconds or the child ended during one)."""
    if not (isinstance(eval_timeout, int | float) and not isinstance(eval_timeout, bool)
            and eval_timeout > 0 and eval_timeout == eval_timeout):
        raise InvalidArgument(f"eval_timeout must be a number of seconds > 0 (got "
                              f"{eval_timeout!r})")
    ctx = mp.get_context("fork")
    started, text = ctx.Value("d", 0.0, lock=False), ctx.Array("c", _WIDTH + 1, lock=False)
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(run, send, started, text, error), daemon=True)
    child.start()
    send.close()
    try:
        return _watch(child, receive, started, text, target=target, eval_timeout=eval_timeout,
                      error=error)
    finally:
        if child.is_alive():
            child.kill()
        child.join(5)
        receive.close()


def _child(run: Callable[[], dict[str, Any]], send: Any, started: Any, text: Any,
           error: type[Exception]) -> None:
    import faulthandler

    global _SHARED
    _SHARED = (started, text)
    faulthandler.disable()  # a crash of the bound is the parent's one line, not a dump
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends this
    try:
        message: tuple[str, Any] = ("result", run())
    except BaseException as exc:  # noqa: BLE001 - every way out goes back to the parent
        message = ("raise", exc)
    try:
        send.send(message)
    except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its words
        # (a RecursionError's chain can be too deep to pickle); the bound's own errors keep
        # their class, so the parent still prints them as the user's error in one line
        failed = message[1]
        send.send(("raise", error(str(failed)) if isinstance(failed, error) else RuntimeError(
            f"{type(failed).__name__}: {failed} (not picklable: {exc})")))
    send.close()


def _watch(child: Any, receive: Any, started: Any, text: Any, *, target: str,
           eval_timeout: float, error: type[Exception]) -> dict[str, Any]:
    def on() -> str:
        return text.value.decode("utf-8", "replace")

    while True:
        if receive.poll(_POLL):
            try:
                kind, value = receive.recv()
            except EOFError:  # the child closed the pipe without a message: it ended
                break
            if kind == "result":
                return value
            raise value
        t = started.value
        if t and time.monotonic() - t > eval_timeout:
            instance = on()
            child.kill()
            raise error(f"{target}: one evaluation ran past --eval-timeout {eval_timeout:g} s "
                        f"and was stopped, on {instance}")
        if not child.is_alive():
            break
    if receive.poll(0):  # it sent its result and ended between the two looks above
        try:
            kind, value = receive.recv()
        except EOFError:
            pass
        else:
            if kind == "result":
                return value
            raise value
    child.join(5)
    code = child.exitcode
    how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
           else f"ended the process (exit status {code})")
    where = f" on {on()}" if started.value else " outside an evaluation (at import or setup)"
    raise error(f"{target}: the bound {how}{where}; nothing it found is kept")
