"""What one call may ask of the machine (issue 65): the largest seed, the largest draw or step
count, and the one rule for sizes beyond its memory — :func:`boundbench.framework.inputs.validate.checked`
turns a ``MemoryError`` (or torch's allocation error) inside a checked function into a
:class:`SizeError` naming the call's sizes, so a size of 10^15 is refused by name, never a bare
``MemoryError`` with an empty message."""

from __future__ import annotations

import reprlib
from typing import Any

import numpy as np

from boundbench import errors as _errors

#: the largest seed: seeds are combined with offsets (a block's index, a head count) and passed
#: to torch.manual_seed, which takes at most 2^64 - 1; 2^32 - 1 leaves room for the offsets
MAX_SEED = 2**32 - 1

#: the largest Monte Carlo / probe / step count a single call accepts: beyond it a call runs for
#: hours (10^9 draws of one sample at ~10^7/s is ~2 min; 10^15 would be ~3 years)
MAX_DRAWS = 10**9
DRAWS_WHY = ("more would run for hours or exhaust memory; split the work, or take fewer draws "
             "(the standard error falls as 1/sqrt(draws))")


# SizeError lives in boundbench.errors with every other exception (issue 83); named here too
SizeError = _errors.SizeError


def allocation_failure(exc: BaseException) -> bool:
    """Whether ``exc`` says memory could not be allocated (numpy's, Python's or torch's)."""
    if isinstance(exc, MemoryError):
        return True
    text = str(exc)
    # numpy's own refusal of a size beyond its index range is a ValueError
    return (isinstance(exc, RuntimeError) and ("can't allocate memory" in text
                                               or "out of memory" in text)
            or isinstance(exc, ValueError) and ("array is too big" in text
                                                or "Maximum allowed size exceeded" in text))


def _integral(x: Any) -> bool:
    def one(v: Any) -> bool:
        return isinstance(v, int | np.integer) and not isinstance(v, bool)

    return one(x) or (isinstance(x, list | tuple) and bool(x) and all(map(one, x)))


def _call(function: str, arguments: dict[str, Any]) -> str:
    """``f(n=10, d=3)``: a call named by its integer arguments (its sizes and counts)."""
    named = [f"{n}={reprlib.repr(x)}" for n, x in arguments.items() if _integral(x)]
    return f"{function}({', '.join(named) or ', '.join(f'{n}=...' for n in arguments)})"


def size_error(function: str, arguments: dict[str, Any], exc: BaseException) -> SizeError:
    """The :class:`SizeError` of ``function`` called with ``arguments`` that raised ``exc``
    (an allocation failure, or the :class:`SizeError` of a checked call inside it): the call's
    integer arguments (its sizes and counts) named, the inner call's message kept."""
    call = _call(function, arguments)
    if isinstance(exc, SizeError):
        return SizeError(f"{call} -> {exc}")
    said = " ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())[:300]
    return SizeError(f"{call} asks for more memory than this machine has "
                     f"({said or type(exc).__name__}); make these sizes smaller")


#: needs at or below this are not checked against the free memory (a machine that has not
#: 64 MiB free fails its allocation, which is then a SizeError all the same)
CHECKED_FROM = 64 * 2**20


def available_bytes() -> int | None:
    """The memory a call may still take: the system's available memory (``MemAvailable`` of
    ``/proc/meminfo``), or less where the process's address space is limited (``ulimit -v``);
    ``None`` where neither is known (then no size is refused before it runs, and a failed
    allocation is still a :class:`SizeError`)."""
    import resource

    free: list[int] = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free.append(int(line.split()[1]) * 1024)
    except OSError:  # not Linux: only an address-space limit, where set, is known
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * resource.getpagesize()
        except OSError:
            used = 0
        free.append(max(soft - used, 0))
    return min(free) if free else None


def check_memory(function: str, arguments: dict[str, Any], need: float) -> None:
    """Refuse, before anything is allocated, a call whose arrays need more than the memory
    available (:func:`available_bytes`): ``need`` is a lower bound in bytes of what
    ``function`` allocates with ``arguments`` (issue 84: sizes of 10^9 allocated tens of GB
    before they were refused, or ran on)."""
    if need <= CHECKED_FROM:  # the common small call reads no file (bootstraps in hot loops)
        return
    free = available_bytes()
    if free is not None and need > free:
        raise SizeError(f"{_call(function, arguments)} needs at least {need / 2**30:,.1f} GiB, "
                        f"more than the {free / 2**30:,.1f} GiB this machine has free; make "
                        "these sizes smaller")
