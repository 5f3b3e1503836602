"""The public API, fuzzed.

Every public function and class of the numeric modules below is either a case here, with one
valid call, or excluded with the reason. Hypothesis then replaces one argument of the valid call
at a time with a bad value (NaN, +-inf, negative, zero, empty, wrong type, out of range) or a
random finite one (for a real argument: +-10^u, u uniform in [-8, 8], or 0). The oracle:

- a ``ValueError``/``TypeError`` whose message names the argument that was replaced (for a
  random finite value, any argument: "need mu < beta" names both);
- or a result whose numbers are all finite;
- never another exception type, never NaN/inf out, never a call longer than ``LIMIT`` seconds.

The number of examples is bounded for CI (``FUZZ_EXAMPLES``, default 25 per case).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import signal
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

# the cases (valid calls, exclusions) in two modules of their own; PLM_* are read by other
# tests and benchmarks/fuzz_report.py through this module
from fuzz_cases import CASES, EXCLUDED, MODULES
from fuzz_plm_cases import PLM_EXCLUDED, PLM_MODULES, UNBOUNDED_OK  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundbench.theory import activation_decay as ad

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
LIMIT = 20  # seconds a single call may take

HUGE = 1e300  # a finite number whose square is not


def _shape_variants(valid: Any) -> list[Any]:
    """An array argument with the wrong shape: 0-d, one axis more, one element fewer along
    the last axis (lengths that no longer match the other arguments')."""
    if valid.ndim == 0 or not valid.numel() if isinstance(valid, torch.Tensor) else \
            valid.ndim == 0 or not valid.size:
        return []
    out = [valid.reshape(-1)[0] if isinstance(valid, torch.Tensor) else np.asarray(valid.flat[0]),
           valid[None].repeat(2, *([1] * valid.ndim))
           if isinstance(valid, torch.Tensor) else np.stack([valid, valid])]
    if valid.shape[-1] >= 2:
        out.append(valid[..., :-1])
    return out


def _bad_values(valid: Any) -> list[Any]:
    """Bad replacements for an argument whose valid value is ``valid``."""
    if isinstance(valid, bool):
        return ["yes", None]
    if isinstance(valid, int):
        # 10**15: a size no machine holds, refused by name, never a MemoryError (issue 65)
        return [-1, 0, 1.5, "3", None, -(10**9), 10**15]
    if isinstance(valid, float):
        return [math.nan, math.inf, -math.inf, -1.0, 0.0, "x", None, HUGE, -HUGE,
                [[valid, valid], [valid]],  # a ragged list (issue 65)
                np.full((3, 4), valid)]  # an array where a number is expected (issue 65)
    if isinstance(valid, str):
        return ["bogus", 3, None]
    if isinstance(valid, np.random.Generator):
        return ["rng", 1.5, None]
    if isinstance(valid, np.ndarray):
        bad = [valid.astype(str)]
        if valid.dtype.kind == "f" and valid.size:
            for x in (math.nan, math.inf):
                a = valid.copy()
                a.flat[0] = x
                bad.append(a)
        bad.append(valid[..., :0])  # empty along the last axis
        bad += _shape_variants(valid)
        if valid.size >= 2 and valid.ndim >= 1:  # a ragged nesting of its values (issue 65)
            rows = valid.reshape(-1).tolist()
            bad.append([rows, rows[:-1]])
        if valid.dtype.kind == "f" and valid.size:
            a = valid.copy()
            a.flat[0] = HUGE  # finite, but its square overflows
            bad.append(a)
        return bad
    if isinstance(valid, torch.Tensor):
        bad = [valid[..., :0], "x"]
        if valid.dtype.is_floating_point and valid.numel():
            for x in (math.nan, math.inf, torch.finfo(valid.dtype).max / 10):
                a = valid.clone()
                a.view(-1)[0] = x
                bad.append(a)
        bad += _shape_variants(valid)
        return bad
    if isinstance(valid, tuple):
        return [(), (-1,) * max(1, len(valid)), "abc", None]
    if isinstance(valid, list):
        return [[], "abc", None]
    return [None, "x"]


def _numbers(out: Any, depth: int = 0) -> list[float]:
    """Every number in a result (arrays, tensors, tuples, dicts, dataclasses, objects)."""
    if depth > 4:
        return []
    if isinstance(out, bool | str) or out is None:
        return []
    if isinstance(out, int | float | np.number):
        return [float(out)]
    if isinstance(out, np.ndarray):
        return out.astype(float).ravel().tolist() if out.dtype.kind in "fiu" else []
    if isinstance(out, torch.Tensor):
        return out.detach().double().ravel().tolist() if out.is_floating_point() else []
    if isinstance(out, list | tuple):
        return [x for o in out for x in _numbers(o, depth + 1)]
    if isinstance(out, dict):
        return [x for o in out.values() for x in _numbers(o, depth + 1)]
    if dataclasses.is_dataclass(out):
        return [x for f in dataclasses.fields(out) for x in _numbers(getattr(out, f.name),
                                                                    depth + 1)]
    if hasattr(out, "__dict__"):
        return [x for k, o in vars(out).items() if k.endswith("_")
                for x in _numbers(o, depth + 1)]
    if hasattr(out, "to_numpy"):  # pandas
        return _numbers(out.select_dtypes("number").to_numpy(), depth + 1)
    return []


class _Timeout(Exception):
    pass


def _call(fn: Callable, kw: dict) -> tuple[str, Any]:
    def alarm(*_):
        raise _Timeout

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(LIMIT)
    try:
        return "ok", fn(**kw)
    except _Timeout:
        return "hang", None
    except (ValueError, TypeError) as exc:
        return "error", exc
    except Exception as exc:  # noqa: BLE001 - any other type is itself the finding
        return "other", exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _judge(case: str, kw: dict, name: str | None, finite_input: bool) -> str | None:
    """``None`` if the call meets the oracle, else what went wrong."""
    fn, _ = CASES[case]
    kind, out = _call(fn, kw)
    if kind == "hang":
        return f"{case}: hangs (> {LIMIT} s) with {name}={kw.get(name)!r}"
    if kind == "other":
        return f"{case}: {type(out).__name__} ({out}) with {name}={kw.get(name)!r}"
    if kind == "error" and name is None:
        return f"{case}: the valid call raises {type(out).__name__}: {out}"
    if kind == "error":
        names = [name] if name else list(kw)
        if not any(n in str(out) for n in names):
            return (f"{case}: {type(out).__name__} does not name {names} with "
                    f"{name}={kw.get(name)!r}: {out}")
        return None
    nums = _numbers(out)
    if case in UNBOUNDED_OK:  # infinite interval ends are a result there; NaN never is
        nums = [x for x in nums if not math.isinf(x)]
    if not all(math.isfinite(x) for x in nums):
        return (f"{case}: non-finite output with {name}={kw.get(name)!r}"
                + (" (from finite input)" if finite_input else " (invalid input accepted)"))
    return None


def test_every_public_name_is_fuzzed_or_excluded_with_a_reason():
    public = set()
    for mn in MODULES:
        mod = importlib.import_module(mn)
        for n, o in vars(mod).items():
            if n.startswith("_") or getattr(o, "__module__", None) != mn:
                continue
            if inspect.isfunction(o) or inspect.isclass(o):
                public.add(f"{mn.rsplit('.', 1)[1]}.{n}")
    covered = {c for c in CASES} | {c.rsplit(".", 1)[0] for c in CASES} | set(EXCLUDED)
    assert public - covered == set()


@pytest.mark.parametrize("case", sorted(CASES))
def test_valid_call_gives_finite_numbers(case):
    fn, kw = CASES[case]
    assert _judge(case, dict(kw), None, True) is None


@pytest.mark.parametrize("case", sorted(CASES))
def test_fuzz(case):
    fn, valid = CASES[case]
    names = sorted(valid)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        name = data.draw(st.sampled_from(names), label="argument")
        kw = dict(valid)
        v = valid[name]
        choices = _bad_values(v)
        if isinstance(v, float) and not isinstance(v, bool):
            # finite values over 16 decades each side of 0 (and 0): a bound of tiny or huge
            # inputs may overflow legitimately only beyond this range
            mag = data.draw(st.floats(-8, 8), label="log10 |value|")
            sign = data.draw(st.sampled_from([-1.0, 1.0]), label="sign")
            choices = choices + [sign * 10.0**mag, 0.0]
        bad = data.draw(st.sampled_from(choices), label="value")
        kw[name] = bad
        problem = _judge(case, kw, name, False)
        assert problem is None, problem

    run()


def test_every_bad_value_is_refused_by_name_exhaustively():
    """Every case, every argument, every bad value (no sampling): issue 41's leftovers, each
    class failing before its fix: shapes (0-d, an axis more, a length one short of the other
    arguments'), finite values too large to square (1e300; a float32 tensor near its range),
    refused by name or computed stably; never an IndexError, a broadcasting message or a
    non-finite result. ``benchmarks/fuzz_report.py`` prints the same counts."""
    problems = []
    for case, (_, valid) in sorted(CASES.items()):
        for name in sorted(valid):
            for bad in _bad_values(valid[name]):
                kw = dict(valid)
                kw[name] = bad
                p = _judge(case, kw, name, False)
                if p:
                    problems.append(p[:300])
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:20])


def test_an_empty_set_of_paired_differences_is_no_error():
    """``power_evidence`` of no trained pairs (all runs stuck at the majority class) reports
    nothing to size, as the fine-tuning claims need; found when the spec rejected it."""
    pytest.importorskip("transformers")
    from boundbench.papers.shared.fine_tuning import power_evidence

    ev = power_evidence(np.array([]))
    assert ev["seeds_needed"] is None


# ------------------------------------------------------------------- inputs silently misread
#
# Values a function must refuse, because any result would misread them: a complex number (its
# imaginary part dropped), a boolean (read as 0/1), an empty array (ignored), an array one longer
# than another argument it must match (accepted as if it matched). Each must raise a ValueError
# or TypeError naming the argument; a result is a silent misread. Exhaustive over every case,
# every argument and every such value (no sampling): `misread_counts()` gives the numbers.


def _misread_values(valid: Any, kw: dict, name: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(valid, bool) or valid is None or isinstance(valid, str):
        return out
    if isinstance(valid, int | float):
        out += [("complex", complex(valid, 1.0)), ("boolean", True)]
    elif isinstance(valid, np.ndarray) and valid.dtype.kind in "fiu" and valid.size:
        out += [("complex", valid + 1j), ("boolean", valid != 0), ("empty", valid[..., :0])]
        n = valid.shape[-1] if valid.ndim else 0
        others = [k for k, v in kw.items() if k != name and isinstance(v, np.ndarray | torch.Tensor)
                  and v.ndim and v.shape[-1] == n]
        if n >= 2 and others:
            out.append(("mismatched", np.concatenate([valid, valid[..., :1]], -1)))
    elif isinstance(valid, torch.Tensor) and valid.is_floating_point() and valid.numel():
        out += [("complex", valid.to(torch.complex128) + 1j), ("boolean", valid != 0),
                ("empty", valid[..., :0])]
    return out


# values that are no misread where they are accepted, and why
MISREAD_OK = {
    ("uegr.keep_probability", "s_norm", "empty"):
        "an elementwise map: no saliencies, no probabilities (an empty parameter list)",
    ("fine_tuning.power_evidence", "diff", "empty"):
        "no trained pairs is a reported case: nothing to size (test below)",
    ("train.gd_quadratic_loo", "loo", "empty"):
        "no left-out samples: an empty (k, 0) result, one column per left-out sample",
    ("trends.std_ratio_verdict", "a", "mismatched"):
        "a and b are independent samples, resampled each on its own: lengths may differ",
    ("trends.std_ratio_verdict", "b", "mismatched"):
        "a and b are independent samples, resampled each on its own: lengths may differ",
}


def _misreads(case: str) -> tuple[int, list[str]]:
    """(calls tried, the misreads) for one case."""
    fn, valid = CASES[case]
    tried, bad = 0, []
    for name in sorted(valid):
        for what, value in _misread_values(valid[name], valid, name):
            if (case, name, what) in MISREAD_OK:
                continue
            tried += 1
            kind, out = _call(fn, {**valid, name: value})
            if kind == "ok":
                bad.append(f"{case}: {what} {name} accepted")
            elif kind == "error" and what != "mismatched" and name not in str(out):
                bad.append(f"{case}: {what} {name} refused without naming it: {out}")
            elif kind == "other":
                bad.append(f"{case}: {what} {name} gives {type(out).__name__}: {out}")
    return tried, bad


def misread_counts() -> dict[str, int]:
    """Calls tried and misreads found, by kind, over every case (the note's numbers)."""
    import collections

    counts: collections.Counter = collections.Counter()
    for case in sorted(CASES):
        tried, bad = _misreads(case)
        counts["tried"] += tried
        for b in bad:
            counts[b.split(": ", 1)[1].split()[0]] += 1
    return dict(counts)


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_input_is_silently_misread(case):
    _, bad = _misreads(case)
    assert not bad, "\n".join(bad)


def test_an_empty_label_array_is_refused_not_read_as_no_rows():
    """``y=[]`` gave ``cross_entropy`` an empty result and ``smoothed_ce_monte_carlo`` numpy's
    broadcasting message (issue 41 item 10); a y that does not broadcast names all three."""

    z = np.array([[1.0, 2.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="y must not be empty"):
        ad.cross_entropy(z, [])
    with pytest.raises(ValueError, match="y must not be empty"):
        ad.smoothed_ce_monte_carlo(z, [], s=0.1, n_samples=8, rng=0)
    with pytest.raises(ValueError, match=r"logits \(\.\.\., classes\), y and s must broadcast"):
        ad.smoothed_ce_monte_carlo(z, [0, 1, 1], s=0.1, n_samples=8, rng=0)
