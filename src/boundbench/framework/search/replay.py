"""Standalone replays of violated bounds: a script anyone can run without boundbench.

A violation found by boundbench rests on float64 arithmetic and, for the SVM claims, on a
solver's output. A replay takes that trust away: for each violated bound whose search declares a
:class:`Replay`, the audit writes ``replay/<claim-id>.py`` beside the figures, a script that
imports only numpy and mpmath, holds the deciding instance as exact decimal strings (the float64
values boundbench used, every digit), recomputes both sides at 50 significant digits (and again at
70, the difference bounding the rounding), certifies every optimum it uses (the SVM programs
re-solve the KKT system on the solver's active set and print each residual against its
tolerance) and exits 0 only if ``lhs > rhs (1 + rtol) + atol`` beyond the certified error. Exit 1:
not reproduced; exit 3: an optimum failed its own certificate (then the violation is not a
finding, and the evidence says so). ``--control`` replays the same bound at the instance nudged
back inside it (where the characterization's failure boundary saw it hold), which must exit 1:
the replay can fail.

The programs (the mpmath sides, one per family of instances) live in
:mod:`boundbench.framework.replays`; their source is copied into each script.

References
----------
F. Johansson et al., mpmath: a Python library for arbitrary-precision floating-point arithmetic
(version 1.3), https://mpmath.org. The KKT certificate: S. Boyd and L. Vandenberghe, *Convex
Optimization* (2004), sec. 5.5.3 (complementary slackness characterizes every optimum given one
dual optimum).
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

REPLAY_DIR = "replay"
EXIT_WORDS = {0: "reproduces", 1: "does not reproduce", 2: "could not run",
              3: "fails its own optimality certificate"}


@dataclass(frozen=True)
class Replay:
    """How a search instance becomes a standalone replay.

    Parameters
    ----------
    program : str
        A module of :mod:`boundbench.framework.replays` (``"gelu_slope"``, ``"mlp_hessian"``,
        ``"svm_loo"``) whose ``sides(I)`` recomputes both sides in mpmath.
    build : callable
        ``params -> dict``: the search instance as the program's input (numbers through
        :func:`exact`), solver solutions included where the sides are optima.

    Examples
    --------
    >>> r = Replay("gelu_slope", lambda p: {"x": exact(p["x"])})
    >>> r.build({"x": 0.5})
    {'x': '0.5'}
    """

    program: str
    build: Callable[[dict[str, Any]], dict[str, Any]] = field(repr=False)


def exact(x: Any) -> Any:
    """A float64 (or an array of them, nested lists) as its exact decimal expansion: the replay
    recomputes the very instance boundbench scored, not a rounded neighbour."""
    if isinstance(x, np.ndarray) or isinstance(x, list | tuple):
        return [exact(t) for t in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return str(int(x))
    return str(Decimal(float(x)))


def _program(name: str) -> str:
    from importlib import resources

    # read, not imported: a program runs only inside a script, on the frame's names
    return (resources.files("boundbench.framework.replays") / f"{name}.py").read_text()


def script(*, claim: str, where: str, equation: str, program: str, instance: dict[str, Any],
           control: dict[str, Any] | None, rtol: float, atol: float,
           float64: dict[str, float] | None) -> str:
    """The replay's text: a header saying what it checks and how to run it, the shared frame,
    the program, and the two instances as JSON."""
    frame = _program("_main")
    body, tail = frame.split('\nif __name__ == "__main__":')
    header = (f'#!/usr/bin/env python3\n"""Replay of boundbench\'s finding {claim} ({where}).\n\n'
              f"Bound: {equation}\n\n"
              "Needs only numpy and mpmath (pip install numpy mpmath). Recomputes both sides of "
              "the deciding\ninstance (exact decimal strings below: the float64 values "
              "boundbench used) at 50 significant\ndigits, certifies every optimum it uses, and "
              "exits 0 only if the violation reproduces\nbeyond the stated error; 1 if it does "
              "not; 3 if an optimum fails its certificate.\n"
              "  python this_file.py             the finding\n"
              "  python this_file.py --control   the instance nudged back inside the bound "
              "(exits 1)\n" + '"""\n')
    data = (f"\nCLAIM = {claim!r}\nWHERE = {where!r}\nEQUATION = {equation!r}\n"
            f"RTOL = {float(rtol)!r}\nATOL = {float(atol)!r}\n"
            f"FLOAT64 = {json.dumps(float64)}\n".replace("null", "None")
            + f"INSTANCE = json.loads({json.dumps(json.dumps(instance))})\n"
            + (f"CONTROL = json.loads({json.dumps(json.dumps(control))})\n" if control is not None
               else "CONTROL = None\n"))
    return (header + body.rstrip() + "\n\n\n" + _program(program).rstrip() + "\n\n" + data
            + '\n\nif __name__ == "__main__":' + tail)


def run(text: str, *, control: bool = False) -> tuple[int, str]:
    """Run a replay's text in this process (a fresh namespace; mpmath's precision restored):
    its exit code and what it printed."""
    import mpmath

    ns: dict[str, Any] = {"__name__": "boundbench_replay"}
    buf = io.StringIO()
    dps = mpmath.mp.dps
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            exec(compile(text, "<replay>", "exec"), ns)  # noqa: S102 - our own generated text
            code = int(ns["main"](["--control"] if control else []))
    except Exception as exc:  # noqa: BLE001 - a replay that crashes is reported, exit 2
        buf.write(f"\nthe replay raised {type(exc).__name__}: {exc}")
        code = 2
    finally:
        mpmath.mp.dps = dps
    return code, buf.getvalue()


def attach(verdict: Any, *, claim: Any, search: Any, params: dict[str, Any] | None,
           control: dict[str, Any] | None, out_dir: Path | None, score: Callable[..., Any]
           ) -> Any:
    """``verdict`` with its replay: the script written to ``out_dir/replay/<id>.py`` (when there
    is an ``out_dir``), run here on the instance and on the control, and both exit codes in
    the evidence (``replay``); a replay that does not reproduce is said in the reason."""
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL

    rep: Replay = search.replay
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    if params is None:
        return verdict.with_evidence(replay={"written": False, "why": (
            "the deciding instance is the random family's, not a point of the search box")})
    lhs, rhs = score(params)
    lhs, rhs = np.ravel(np.asarray(lhs, dtype=float)), np.ravel(np.asarray(rhs, dtype=float))
    rhs = np.broadcast_to(rhs, lhs.shape)
    worst = int(np.argmax(lhs - rhs * (1 + rtol)))
    try:
        inst = rep.build(params)
        ctrl = rep.build(control) if control is not None else None
    except ValueError as exc:  # outside the assumptions: no replay, said why
        return verdict.with_evidence(replay={"written": False, "why": f"building it raised {exc}"})
    reading = verdict.status == "depends-on-reading"
    where = claim.where + (" -- the reading its search checks: " + search.note if reading
                           else "")
    text = script(claim=claim.id, where=where, equation=claim.equation or claim.statement,
                  program=rep.program, instance=inst, control=ctrl, rtol=rtol,
                  atol=float(search.atol),
                  float64={"lhs": float(lhs[worst]), "rhs": float(rhs[worst])})
    ev = _write_and_run(claim.id, text, program=rep.program, control=ctrl is not None,
                        out_dir=out_dir)
    if reading:
        ev["reading"] = f"the violated reading the search checks ({search.note})"
    out = verdict.with_evidence(replay=ev)
    code = ev["exit"]
    if code != 0:
        from boundbench.framework.verdicts.rules import Verdict

        out = Verdict(out.status, f"{out.reason}; its standalone replay at 50 digits "
                      f"{EXIT_WORDS.get(code, 'failed')} ({ev['path']})", out.evidence,
                      out.figure, out.table)
    return out


def witness_replay(*, name: str, claim: Any, equation: str, program: str,
                   instance: dict[str, Any], control: dict[str, Any] | None, rtol: float,
                   atol: float, out_dir: Path | None) -> dict[str, Any]:
    """A replay of a worst case that is not a search instance (a performance-estimation
    problem's primal solution, say): written to ``out_dir/replay/<name>.py``, run here on the
    instance and the control; its evidence."""
    text = script(claim=name, where=claim.where, equation=equation, program=program,
                  instance=instance, control=control, rtol=rtol, atol=atol, float64=None)
    return _write_and_run(name, text, program=program, control=control is not None,
                          out_dir=out_dir)


def _write_and_run(name: str, text: str, *, program: str, control: bool,
                   out_dir: Path | None) -> dict[str, Any]:
    """A replay's text run here on its instance and its control, written (atomically) to
    ``out_dir/replay/<name>.py`` when there is an ``out_dir``: its evidence."""
    from boundbench.framework.files.atomic import write_atomic

    code, said = run(text)
    ccode = run(text, control=True)[0] if control else None
    if out_dir is not None:
        write_atomic(Path(out_dir) / REPLAY_DIR / f"{name}.py", lambda p: p.write_text(text))
    return {"written": out_dir is not None, "path": f"{REPLAY_DIR}/{name}.py",
            "program": program, "exit": code, "result": EXIT_WORDS.get(code),
            "control_exit": ccode, "digits": 50,
            "last_line": said.strip().splitlines()[-1] if said.strip() else ""}


def certify(c: Any, verdict: Any, found: Any, ctx: Any) -> Any:
    """What makes ``verdict`` checkable without boundbench, in its evidence (the registry calls
    this for every claim): a violation's replay (or a violated reading's its search decided) from
    the search's worst instance when that alone breaks the bound, its control the
    characterization's holding instance; a holding bound's certification (a proof, or the
    evaluations that did not refute it, :func:`boundbench.framework.certificates.proofs.certification`)."""
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL

    s = c.search
    if c.kind == "bound" and verdict.status == "holds" and "certification" not in \
            verdict.evidence:
        from boundbench.framework.certificates.levels import certification

        return verdict.with_evidence(certification=certification(
            verdict, s, proof=s.proof if s is not None else None))
    if s is None or s.replay is None or verdict.status not in ("violated", "depends-on-reading"):
        return verdict
    rtol = float(verdict.evidence.get("rtol", NUMERIC_RTOL))
    params = dict(found.instance) if found.worst_ratio > 1 + rtol else None
    boundary = (verdict.evidence.get("characterization") or {}).get("failure_boundary") or {}
    from boundbench.framework.search.targeted import instance_sides

    return attach(verdict, claim=c, search=s, params=params,
                  control=boundary.get("control_instance"), out_dir=ctx.out_dir,
                  score=instance_sides(s, ctx))
