"""The ``boundbench`` console script: :func:`boundbench.cli.main`, with a Ctrl-C during its
imports (numpy, torch, matplotlib: the first second of a command) answered in one line, as
:func:`~boundbench.cli.main` answers one that comes later, instead of a traceback."""

from __future__ import annotations

import sys


def run() -> int:
    try:
        from boundbench.cli import main
    except KeyboardInterrupt:
        print("\nboundbench: interrupted before it started; nothing was written.",
              file=sys.stderr)
        return 130
    return main()
