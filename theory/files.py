"""Files written so that a killed process never leaves half of one."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomic(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` to a temporary name in ``path``'s folder, then rename it onto ``path``: a
    killed process leaves the old file or none, never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
