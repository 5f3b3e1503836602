"""Package version and the environment a result was computed in."""

from __future__ import annotations

import importlib.metadata
import platform

# part of every cache key beside the package version: bump it with any change that alters a
# cached table (a generator, a solver, a trainer), so no cache from before serves stale numbers
# (the package version alone did not change across such edits). 2: make_separable's exact margin
RESULTS_VERSION = 2


def version() -> str:
    try:
        return importlib.metadata.version("boundbench")
    except importlib.metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def environment() -> dict[str, str]:
    """Versions of Python and of the numerical packages results depend on."""
    env = {"boundbench": version(), "python": platform.python_version()}
    for pkg in ("numpy", "scipy", "torch", "cvxpy", "clarabel", "pandas", "transformers"):
        try:
            env[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            continue
    return env


def renamed(module: str, namespace: dict, old_to_new: dict[str, str]):
    """A module ``__getattr__`` that serves each old name in ``old_to_new`` as its new one, with
    a ``DeprecationWarning`` naming the new name (functions renamed to one scheme stay importable
    for a release)."""
    import warnings

    def __getattr__(name: str):
        if name in old_to_new:
            new = old_to_new[name]
            warnings.warn(f"{module}.{name} is renamed {new}", DeprecationWarning, stacklevel=2)
            return namespace[new]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__


def commit() -> str | None:
    """The git commit of the source tree the package runs from, or ``None`` outside a checkout
    (an installed wheel): part of every claim's run record."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    try:
        r = subprocess.run(["git", "-C", str(here), "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() or None if r.returncode == 0 else None


def compute_context() -> dict[str, str]:
    """Where numbers are computed, as far as it changes them: the accelerator a computation
    would use by default (a table computed on a GPU is not served to a CPU run, nor the other
    way round), whether TF32 matmuls are allowed and whether autocast is on. Part of every
    cache key and every result's record."""
    import torch

    cuda = torch.cuda.is_available()
    ctx = {"device": f"cuda ({torch.cuda.get_device_name(0)})" if cuda else "cpu",
           "tf32": str(bool(torch.backends.cuda.matmul.allow_tf32)),
           "autocast": str(torch.is_autocast_enabled())}
    return ctx
