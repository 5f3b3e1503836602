"""Sizes beyond any machine, refused before they are allocated (issue 84): every fuzzed public
entry point (``fuzz_cases.CASES``) called with each of its positive integer arguments times
10^9. The oracle: a :class:`~boundbench.errors.BoundbenchError` (a size refused by name: the
argument's maximum, or :func:`~boundbench.framework.inputs.limits.check_memory` against the machine's
free memory), or a result; either way with at most 1 GiB allocated on the way (numpy's
allocations as ``tracemalloc`` traces them, a refused one included: numpy traces an allocation
it then fails, so an array tried and refused counts). A size tried first and refused only by
the allocation failing reads tens of GB here."""

from __future__ import annotations

import signal
import tracemalloc

import fuzz_plm_cases  # noqa: F401 (its import adds its cases to CASES, as in the suite)
import numpy as np
import pytest
from fuzz_cases import CASES

from boundbench.errors import BoundbenchError

GIB = 2**30
BIG = 10**9
# integer arguments that are not sizes: a seed is a name, not an amount
NOT_SIZES = {"seed"}


def _sizes(kw: dict) -> list[str]:
    return [k for k, v in kw.items() if k not in NOT_SIZES and not isinstance(v, bool)
            and isinstance(v, int | np.integer) and v > 0]


# the fine-tuning modules' cases too (fuzz_plm_cases), since evaluate.reliability declares
# its bins' memory (issue 84: it ran on past 20 s at 10^9 bins)
@pytest.mark.parametrize("name", sorted(n for n, (_, kw) in CASES.items() if _sizes(kw)))
def test_a_size_beyond_any_machine_is_refused_before_it_is_allocated(name):
    fn, kw = CASES[name]

    def too_long(*_):
        raise TimeoutError(f"{name} ran on past 20 s")

    fn(**kw)  # the valid call first: a first call's imports and compilation are not its size
    old = signal.signal(signal.SIGALRM, too_long)
    try:
        for arg in _sizes(kw):
            tracemalloc.start()
            signal.alarm(20)
            try:
                fn(**{**kw, arg: int(kw[arg]) * BIG})
            except BoundbenchError:
                pass
            finally:
                signal.alarm(0)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            assert peak <= GIB, f"{name}({arg}={int(kw[arg]) * BIG}) allocated {peak / GIB:.1f} GiB"
    finally:
        signal.signal(signal.SIGALRM, old)


def test_the_memory_check_refuses_by_name_and_lets_what_fits_run(monkeypatch):
    """The check itself, on a machine said to have 1 GiB free: a need beyond it refused before
    anything is allocated, with the sizes named; a small one runs. The machine's own free
    memory is read (``MemAvailable``, or ``ulimit -v``)."""
    from boundbench.errors import SizeError
    from boundbench.framework.inputs import limits
    from boundbench.synthetic.data import make_separable

    assert (limits.available_bytes() or 0) > 0
    monkeypatch.setattr(limits, "available_bytes", lambda: GIB)
    tracemalloc.start()
    try:
        with pytest.raises(SizeError, match=r"make_separable\(n_datasets=1000, n=1000, d=1000, seed=0\)"
                                            r" needs at least 7.5 GiB, more than the 1.0 GiB"):
            make_separable(n_datasets=1000, n=1000, d=1000, margin=0.1, bound=1.0)
        assert tracemalloc.get_traced_memory()[1] < 2**20
    finally:
        tracemalloc.stop()
    assert make_separable(n_datasets=2, n=10, d=3, margin=0.1, bound=1.0).X.shape == (2, 10, 3)
    # numpy's refusal of a size beyond its index range is an allocation failure, named
    assert limits.allocation_failure(ValueError("array is too big; `arr.size * ...`"))
    assert not limits.allocation_failure(ValueError("x must be positive"))
