"""``boundbench prove FILE.py:FUNCTION``: the interval prover on a user's own bound.

FUNCTION is a ``@bound(space=...)`` test (:func:`boundbench.testing.bound`) whose function takes
a dict of the space's parameters and returns ``(lhs, rhs)``, written with numpy's ufuncs
(``np.sqrt``, ``np.exp``, ``np.log``, ``np.sin``, ``np.abs``, ``np.maximum``, ``scipy.special.erf``
...). Each ufunc maps to an outward-rounded enclosure (:mod:`boundbench.framework.certificates.intervals`),
so the same function is evaluated over boxes in ball arithmetic and :func:`boundbench.framework.
proofs.prove` decides ``lhs <= rhs`` with no tolerance on the declared space (the space *is* the
bound's stated domain). The outcome is a :class:`~boundbench.framework.certificates.levels.Level`:
proven on the space, refuted (with a standalone replay in numpy and mpmath), undecided (the
boxes left), or not provable by this method (a function with no enclosure: a solver, a branch
on a value, an array operation), in one line, with ``falsify`` suggested.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from boundbench.errors import InvalidArgument
from boundbench.framework.certificates import ufuncs  # noqa: F401 - numpy's ufuncs on Duals and symbols
from boundbench.framework.certificates.user_proofs import DEFAULT_BOXES, prove_function, runs_of

__all__ = ["DEFAULT_BOXES", "file_stem", "prove_bound", "prove_function", "write_replay"]


def prove_bound(target: str, *, boxes: int = DEFAULT_BOXES,
                out_dir: Path | None = None) -> dict[str, Any]:
    """Prove or refute the ``@bound(space=...)`` test ``FILE.py:FUNCTION`` on its space.

    Parameters
    ----------
    target : str
        ``FILE.py:FUNCTION``.
    boxes : int, default 20000
        Boxes the branch-and-bound examines (per integer case) before it reports the rest.
    out_dir : Path, optional
        Where a refutation's replay is written (``replay/prove-<FUNCTION>.py``).

    Returns
    -------
    dict
        ``level`` (the certificate's words), ``status`` (a sentence), ``box``, ``seconds``,
        and where refuted ``counterexample`` and ``replay``.
    """
    from boundbench.falsify import load_bound
    from boundbench.framework.certificates.levels import Level

    if isinstance(boxes, bool) or not isinstance(boxes, int) or boxes < 1:
        raise InvalidArgument(f"boxes must be an integer >= 1 (got {boxes!r})")
    if ".py:" not in target:
        raise InvalidArgument(f"target must be FILE.py:FUNCTION (got {target!r})")
    test, _ = load_bound(target)
    if test.space is None:
        raise InvalidArgument(f"{target!r} declares no space: prove takes @bound(space=...) "
                              "(a box of named parameters), not a hypothesis strategy")
    fn = test.fn
    t0 = time.perf_counter()
    out: dict[str, Any] = {"target": target, "box": {k: list(v) for k, v in test.space.items()}}
    res = prove_function(fn, test.space, boxes=boxes)
    out.update({k: v for k, v in res.items() if k != "proof"}, seconds=_since(t0),
               boxes=sum(r["boxes"] for r in runs_of(res)))
    if res["level"] == Level.NOT_PROVABLE.value:
        out["status"] += f"; try `boundbench falsify {target}`"
    elif res["level"] == Level.NOT_REFUTED.value:
        out["status"] += (f"; `--boxes` raises the budget, `boundbench falsify {target}` "
                          "searches for a violation")
    elif res["level"] == Level.REFUTED.value:
        out["replay"] = write_replay(fn, res["counterexample"], target=target, out_dir=out_dir)
    return out


def file_stem(name: str) -> str:
    """The bound's function name as a file name (the one safe-name gate)."""
    from boundbench.framework.files.escape import safe_name

    return safe_name(name, what="the bound's function name")


def _since(t0: float) -> float:
    return round(time.perf_counter() - t0, 2)


_FRAME = '''#!/usr/bin/env python3
"""Replay of `boundbench prove`'s counterexample to {target}.

Needs only numpy and mpmath. Recomputes both sides of the bound's own function (its source
below, numpy's names read in mpmath) at 50 and at 70 significant digits on the instance (exact
decimal strings of the float64 parameters), and exits 0 only if lhs > rhs beyond the difference
of the two passes; 1 if not; 2 if it could not compute them.
"""
import json
import sys

import mpmath
import numpy  # noqa: F401 - the environment the bound was written for


class _MPNumpy:
    """numpy's names a bound uses, in mpmath at the working precision."""

    sqrt, exp, log, log1p, expm1 = mpmath.sqrt, mpmath.exp, mpmath.log, mpmath.log1p, mpmath.expm1
    sin, cos, erf = mpmath.sin, mpmath.cos, mpmath.erf
    abs = absolute = fabs = staticmethod(abs)
    maximum, minimum = staticmethod(max), staticmethod(min)

    @staticmethod
    def square(x):
        return x * x

    @staticmethod
    def power(x, k):
        return x ** k

    @property
    def pi(self):
        return +mpmath.pi

    @property
    def e(self):
        return mpmath.e()


np = numpy_ = _MPNumpy()

{source}

INSTANCE = json.loads({instance!r})


def sides(dps):
    with mpmath.workdps(dps):
        lhs, rhs = {name}({{k: mpmath.mpf(v) for k, v in INSTANCE.items()}})
        return mpmath.mpf(lhs), mpmath.mpf(rhs)


def main():
    try:
        (l50, r50), (l70, r70) = sides(50), sides(70)
    except Exception as exc:  # noqa: BLE001
        print(f"could not compute the sides: {{type(exc).__name__}}: {{exc}}")
        return 2
    mpmath.mp.dps = 50
    err = abs(l50 - l70) + abs(r50 - r70)
    print(f"{target} at {{INSTANCE}}")
    print(f"  lhs = {{mpmath.nstr(l70, 25)}}")
    print(f"  rhs = {{mpmath.nstr(r70, 25)}}")
    print(f"  lhs - rhs = {{mpmath.nstr(l70 - r70, 10)}} (rounding below {{mpmath.nstr(err, 3)}})")
    ok = l70 - r70 > err
    print("  the bound is FALSE here" if ok else "  not reproduced")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def replay_text(fn: Any, instance: dict[str, float], *, target: str) -> str:
    """The replay of a counterexample: the bound function's own source (decorators removed)
    with numpy's names read in mpmath, and the instance as exact decimal strings."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = tree.body[0]
    if isinstance(node, ast.FunctionDef):
        node.decorator_list = []
    exact = {k: str(Decimal(float(v))) for k, v in instance.items()}
    return _FRAME.format(target=target, source=ast.unparse(tree), name=fn.__name__,
                         instance=json.dumps(exact))


def write_replay(fn: Any, instance: dict[str, float], *, target: str,
                 out_dir: Path | None) -> dict[str, Any]:
    """Write the replay to ``out_dir/replay/prove-<name>.py`` (atomically) and say where."""
    from boundbench.framework.files.atomic import write_atomic

    text = replay_text(fn, instance, target=target)
    if out_dir is None:
        return {"written": False, "text": text}
    path = Path(out_dir) / "replay" / f"prove-{file_stem(fn.__name__)}.py"
    write_atomic(path, lambda t: t.write_text(text))
    return {"written": True, "path": str(path)}
