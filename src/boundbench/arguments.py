"""The command line's argument types: each parses one flag's text or says, in one line, which
condition it violated (argparse prints it with the flag's name and exits 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__: list[str] = []  # the command line's own (boundbench.cli)


def _int_at_least(low: int, high: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer (got {text!r})") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low} (got {value})")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be an integer <= {high} (got {value})")
        return value

    parse.__name__ = f"integer >= {low}" if high is None else f"integer in [{low}, {high}]"
    return parse


def _scale(text: str) -> str:
    """A registered profile's name (framework.execution.profiles); a plugin's own profiles are registered
    when it loads, so an unknown name loads the plugins once before it is refused."""
    from boundbench.framework.execution.profiles import PROFILES

    if text not in PROFILES:
        from boundbench import catalogue

        catalogue.load()
    if text not in PROFILES:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(PROFILES)} (got {text!r}; "
                                         "boundbench.framework.execution.profiles.register_profile adds one)")
    return text


_scale.__name__ = "scale"


def _positive(what: str):
    """A parser of a positive finite number; ``what`` names it in the error."""
    def parse(text: str) -> float:
        import math

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what} (got {text!r})") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be {what} > 0 (got {text!r})")
        return value

    parse.__name__ = what
    return parse


_positive_seconds = _positive("a number of seconds")
_positive_float = _positive("a finite number")


def _duration(text: str) -> float:
    from boundbench.framework.stats.stopping import duration_seconds

    try:
        return duration_seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _device(text: str) -> str:
    """cpu, cuda, cuda:N or mps, and present on this machine."""
    import re

    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"must be cpu, cuda, cuda:N or mps (got {text!r})")
    if text.startswith("cuda"):
        import torch

        n = torch.cuda.device_count()
        idx = int(text.split(":")[1]) if ":" in text else 0
        if idx >= n:
            raise argparse.ArgumentTypeError(f"{text!r} is not available here ({n} CUDA "
                                             "device(s))")
    return text


def _out_dir(text: str) -> str:
    """A folder that is, or can be created, writable; never an existing file. Writability is
    tried, not read from permission bits (root passes those everywhere, /proc included): a
    probe file is created and removed in the deepest folder that exists; nothing is left."""
    import tempfile

    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder (got an empty string)")
    p = Path(text)
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is an existing file, not a folder")
    parent = p
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not writable ({str(parent)!r} is not a "
                                         "folder)")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".boundbench-probe-")
        import os

        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not writable ({str(parent)!r} is not a "
                                         f"writable folder: {exc.strerror or exc})") from None
    # nothing is written outside the folder: its cache must not be a link that leaves it
    from boundbench.framework.files.atomic import within

    try:
        within(p, p / ".cache", what=".cache")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
