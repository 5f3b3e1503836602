"""The ``boundbench`` console script: :func:`boundbench.cli.main`, with a Ctrl-C during its
imports (numpy, torch, matplotlib: the first second of a command) answered in one line, as
:func:`~boundbench.cli.main` answers one that comes later, instead of a traceback.

Until the command starts its work a Ctrl-C ends the process at once (nothing has been written
yet): a ``KeyboardInterrupt`` raised inside an import does not always surface as one (Python
turns it into a ``SyntaxError`` when it lands while a ``\\N{...}`` escape loads ``unicodedata``,
issue 65). The handler is set by this module's first statements, before it imports anything
of boundbench's: the interpreter's own start and the import of the package's ``__init__`` (a
few milliseconds, longer through an editable install's finder) are Python's.
"""

from __future__ import annotations

import os
import signal
import sys

BEFORE_START = "\nboundbench: interrupted before it started; nothing was written.\n"
_INTERRUPTED = 130  # ExitCode.INTERRUPTED, not imported: the handler is set before any import


def _before_start(signum: int, frame: object) -> None:
    os.write(2, BEFORE_START.encode())
    os._exit(_INTERRUPTED)


# only the console script imports this module (a library user's process never does); a
# SIGTERM is answered as a Ctrl-C (issue 84: it ended an audit with -15, no line, and Python's
# leaked-semaphore warning)
signal.signal(signal.SIGINT, _before_start)
signal.signal(signal.SIGTERM, _before_start)



def offline() -> None:
    """Hugging Face's offline mode for this process and those it spawns, unless the user set
    it: an uncached model name then fails at once instead of trying DNS and HTTP (the hub reads
    these when first imported, which happens after this)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def started() -> None:
    """The command starts its work: Ctrl-C raises ``KeyboardInterrupt`` again, which
    :func:`boundbench.cli.main` answers (finished work kept, resumable). Only where the handler
    is still this module's (a caller running ``main()`` in its own process keeps its own)."""
    if signal.getsignal(signal.SIGINT) is _before_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) is _before_start:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # boundbench.cli.main sets its own


def run() -> int:
    signal.signal(signal.SIGINT, _before_start)  # the console script's first call
    signal.signal(signal.SIGTERM, _before_start)
    offline()
    from boundbench.cli import main

    return main(on_start=started)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
