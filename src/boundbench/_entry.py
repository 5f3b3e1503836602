"""The ``boundbench`` console script: :func:`boundbench.cli.main`, with a Ctrl-C during its
imports (numpy, torch, matplotlib: the first second of a command) answered in one line, as
:func:`~boundbench.cli.main` answers one that comes later, instead of a traceback."""

from __future__ import annotations

import sys


def offline() -> None:
    """Hugging Face's offline mode for this process and those it spawns, unless the user set
    it: an uncached model name then fails at once instead of trying DNS and HTTP (the hub reads
    these when first imported, which happens after this)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def run() -> int:
    offline()
    try:
        from boundbench.cli import main
    except KeyboardInterrupt:
        print("\nboundbench: interrupted before it started; nothing was written.",
              file=sys.stderr)
        return 130
    return main()
