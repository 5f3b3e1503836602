"""``boundbench falsify TARGET``: the worst case of one bound within a time budget.

TARGET is a registered claim id (its declared :class:`~boundbench.framework.search.targeted.Search`, the
engine the audit uses, run with doubling evaluation budgets while time remains) or
``path/to/file.py:function`` for a ``@bound`` test (hypothesis with ``target``, as many
examples as the budget allows).
"""

from __future__ import annotations

import importlib.util
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from boundbench import catalogue
from boundbench.errors import InvalidArgument
from boundbench.framework.claims import registry
from boundbench.testing._isolated import DEFAULT_EVAL_TIMEOUT
from boundbench.testing._lattice import lattice_round
from boundbench.testing._portfolio import search_round
from boundbench.testing._sizing import sizing


def falsify(target: str, *, budget: float = 30.0, seed: int = 0,
            evaluations: int | None = None, eval_timeout: float = DEFAULT_EVAL_TIMEOUT,
            isolate: bool = True) -> dict[str, Any]:
    """``{"target", "worst_ratio", "violated", "instance", "evaluations", "seconds",
    "reproduce", "method"}`` for a claim id or ``FILE.py:FUNCTION``.

    Parameters
    ----------
    target : str
        A bound claim's id, or ``FILE.py:FUNCTION`` naming a ``@bound`` test.
    budget : float, default 30.0
        Seconds of search (a claim's search runs at least its declared least budget).
    seed : int, default 0
        The search's seed.
    evaluations : int, optional
        An exact budget of evaluations of the bound instead of seconds (every call counts,
        shrinking included): the same run on any machine.
    eval_timeout : float, default 10.0
        Seconds one evaluation of a ``FILE.py:FUNCTION`` bound may run: past it the run stops
        and reports that instance (a :class:`~boundbench.testing.bound.BoundRaised`).
    isolate : bool, default True
        Run a ``FILE.py:FUNCTION`` bound in a forked child process, so that a hang
        (``eval_timeout``) or an ``os._exit`` in it is reported as that instance's error
        (where ``fork`` exists; elsewhere, and with ``False``, in this process, unguarded).

    Returns
    -------
    dict
        The worst ``lhs / rhs`` found, whether it violates, the instance, the evaluations and
        seconds, and the command that reproduces it.

    Examples
    --------
    >>> import boundbench as bb
    >>> bb.search_worst_case("fu.lemma-a.1.2", budget=5)["violated"]  # doctest: +SKIP
    False
    """
    if not (isinstance(budget, int | float) and not isinstance(budget, bool)
            and math.isfinite(budget) and budget > 0):
        raise InvalidArgument(f"budget must be a number of seconds > 0 (got {budget!r})")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidArgument(f"seed must be an integer >= 0 (got {seed!r})")
    if evaluations is not None and (isinstance(evaluations, bool)
                                    or not isinstance(evaluations, int) or evaluations < 1):
        raise InvalidArgument(f"evaluations must be an integer >= 1 (got {evaluations!r})")
    if ".py:" in target:
        from boundbench.testing._isolated import isolated, supported

        def run() -> dict[str, Any]:
            return _falsify_file(target, budget=float(budget), seed=seed,
                                 evaluations=evaluations)

        if not (isolate and supported()):
            return {**run(), "isolation": "none: the bound ran in this process, unguarded"}
        from boundbench.testing.bound import BoundRaised

        out = isolated(run, target=target, eval_timeout=eval_timeout, error=BoundRaised)
        return {**out, "isolation": (f"a forked child process; one evaluation may run "
                                     f"{eval_timeout:g} s")}
    return _falsify_claim(target, budget=float(budget), seed=seed, evaluations=evaluations)


def _falsify_claim(cid: str, *, budget: float, seed: int,
                   evaluations: int | None = None) -> dict[str, Any]:
    """A claim's declared box searched by the portfolio (:func:`_run_file_test`): hypothesis
    over the box and the claim's own differential evolution, each round seeding the other."""
    catalogue.load()
    if cid not in catalogue.registry() and ":" in cid:
        raise InvalidArgument(f"unknown claim id {cid!r}: a file target is FILE.py:FUNCTION (a "
                              "path ending in .py), a claim id is one `boundbench claims` lists")
    claim = registry.get(cid)
    if claim.search is None:
        raise InvalidArgument(f"claim {cid!r} declares no targeted search (only bound claims do; "
                              "`boundbench claims` lists them)")
    from boundbench.framework.search.targeted import instance_sides
    from boundbench.framework.verdicts.rules import NUMERIC_RTOL
    from boundbench.testing.bound import bound

    s = claim.search
    ctx = registry.CheckContext(seed=seed, scale="quick", claim_id=cid)

    one = instance_sides(s, ctx)

    def sides(p: dict) -> tuple[Any, Any]:
        return one(p)

    sides.__name__ = sides.__qualname__ = cid
    # outside the assumptions (non-separable data, a solver that gives up): rejected, as the
    # search scores them 0
    test = bound(space=dict(s.space), rtol=NUMERIC_RTOL, atol=float(s.atol),
                 outside=(ValueError, ArithmeticError, np.linalg.LinAlgError))(sides)
    test.reproduce = lambda seed_value: f"boundbench falsify {cid} --seed {seed_value}"  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    # first the audit's own search at its declared least budget: falsify never finds less
    from boundbench.framework.search.targeted import worst_case

    least = int(s.budget[0]) if evaluations is None else min(int(s.budget[0]), evaluations)
    res = worst_case(s, max_evals=least, seed=seed, context=ctx)
    from boundbench.testing._precision import recheck, unconfirmed
    from boundbench.testing.bound import worst_element

    try:  # the worst element's two sides: one call more, counted
        _, lhs, rhs = worst_element(*sides(res.instance))
    except (KeyError, ValueError, ArithmeticError, np.linalg.LinAlgError):
        lhs = rhs = float("nan")  # outside the assumptions (or nothing was evaluated)
    chk = recheck(sides, res.instance, rtol=NUMERIC_RTOL, atol=float(s.atol), space=s.space
                  ) if res.worst_ratio > 1 + NUMERIC_RTOL else {"status": "artifact"}
    confirmed = chk["status"] != "artifact" and not unconfirmed(chk, lhs, rhs)
    prior = {"ratio": res.worst_ratio, "instance": res.instance, "evaluations": res.n_evals + 1,
             "lhs": lhs, "rhs": rhs, "confirmed": confirmed}
    out = _run_file_test(test, target=cid, budget=budget, seed=seed, t0=t0, prior=prior,
                         evaluations=evaluations)
    out["worst_is"] = "the largest lhs/rhs found in this budget (hypothesis and the search)"
    return out


def _falsify_file(target: str, *, budget: float, seed: int,
                  evaluations: int | None = None) -> dict[str, Any]:
    test, path = load_bound(target)
    t0 = time.perf_counter()
    from boundbench.testing.bound import BoundRaised

    try:
        return _run_file_test(test, target=target, budget=budget, seed=seed, t0=t0,
                              evaluations=evaluations)
    except BoundRaised as exc:  # a value that is not a finite (lhs, rhs): exit 3, the instance
        raise BoundRaised(f"{target}: {exc}") from None
    except Exception as outer:  # noqa: BLE001 - the user's bound raised, not the package
        # hypothesis wraps what the bound raised (a FlakyFailure, an ExceptionGroup when a
        # replay did not raise again): the bound's own exception is inside (issue 81)
        inner = _innermost(outer)
        if isinstance(inner, BoundRaised):
            raise BoundRaised(f"{target}: {inner}") from None
        if _where(inner, path) == "not in the file":
            raise
        from boundbench.testing.bound import RESULTS

        rec = RESULTS.get(test.bound_name)
        on = (f" on {rec.raised.rpartition(' on ')[2]}" if rec is not None and " on " in
              rec.raised else "")
        raise BoundRaised(f"{target} raised {type(inner).__name__}: {inner} ({_where(inner, path)})"
                          f"{on}") from None


def load_bound(target: str) -> tuple[Any, Path]:
    """``FILE.py:FUNCTION`` as its ``@bound`` test and the file's path (the file imported as
    pytest imports a test module: an error in it is the user's, one line naming the line)."""
    path_text, _, name = target.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise InvalidArgument(f"no such file {str(path)!r} (TARGET is a claim id or FILE.py:FUNCTION)")
    spec = importlib.util.spec_from_file_location(f"falsify_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise InvalidArgument(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise InvalidArgument(f"{str(path)!r} has a syntax error at line {exc.lineno}: "
                              f"{exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code raised while importing
        raise InvalidArgument(f"importing {str(path)!r} raised {type(exc).__name__}: {exc} "
                              f"({_where(exc, path)})") from None
    test = getattr(module, name, None)
    if test is None or not hasattr(test, "run"):
        raise InvalidArgument(f"{target!r} is not a function decorated with boundbench.testing.bound")
    return test, path


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside nested exception groups (``exc`` itself if none), through
    hypothesis's own wrappers (a ``SystemExit`` comes wrapped, as its cause)."""
    for _ in range(64):
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif type(exc).__module__.startswith("hypothesis") and exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return exc


def _where(exc: BaseException, path: Path) -> str:
    """The line of the user's file a traceback passes through last, in words."""
    import traceback

    lines = [f for f in traceback.extract_tb(exc.__traceback__)
             if Path(f.filename).resolve() == path.resolve()]
    return f"{path.name}, line {lines[-1].lineno}" if lines else "not in the file"


@dataclass
class _Tally:
    """What the portfolio's rounds found so far: the largest ratio's record, the first
    violation's (its reproducer), what the bound raised, the artifacts, the search's share."""

    total: int = 0
    best: Any = None
    first: Any = None
    raised: str = ""
    artifacts: int = 0
    artifact: str = ""
    unconfirmed: int = 0
    unconfirmed_first: str = ""
    found: list = field(default_factory=list)  # the search's best: hypothesis's examples
    sized: bool = False  # the sizing stage ran (once)
    latticed: bool = False  # the climb on the box's lattice ran (once, after the first round)
    searched: dict = field(default_factory=lambda: {"evaluations": 0, "best": -math.inf,
                                                    "violations": 0})

    def hypothesis(self, rec: Any) -> None:
        self.total += rec.examples
        self.raised = self.raised or rec.raised
        self.artifacts += rec.artifacts
        self.artifact = self.artifact or rec.artifact
        self.unconfirmed += rec.unconfirmed
        self.unconfirmed_first = self.unconfirmed_first or rec.unconfirmed_first
        if self.best is None or rec.worst_ratio > self.best.worst_ratio:
            self.best = rec
        if rec.violated and self.first is None:
            self.first = rec

    def search(self, test: Any, hit: dict[str, Any]) -> None:
        self.total += hit["evaluations"]
        s = self.searched
        s["evaluations"] += hit["evaluations"]
        s["best"] = max(s["best"], hit["ratio"])
        self.found.append(hit["instance"])
        if self.best is None or hit["ratio"] > self.best.worst_ratio:
            self.best = _as_record(test, hit)
        if hit["confirmed"]:
            s["violations"] += 1
            self.first = self.first or _as_record(test, hit)


def _run_file_test(test: Any, *, target: str, budget: float, seed: int,
                   t0: float, prior: dict[str, Any] | None = None,
                   evaluations: int | None = None) -> dict[str, Any]:
    """Rounds of hypothesis (seeds ``seed``, ``seed + 1``, ...; 50 examples, then twice as many
    each round) and, where the bound declares a box, of differential evolution over it, each
    seeding the next, until ``budget`` seconds are spent (spent, not estimated from a cold first
    run) or exactly ``evaluations`` calls are made. Once a violation is found, or half the budget
    is spent, a box's rest goes to sizing (:func:`~boundbench.testing._sizing.sizing`). A
    violation found in any round is kept (its reproducer the first one's) whatever a later
    round does; a raise beside it is noted."""
    from boundbench.testing._observe import observing

    with observing() as obs:
        out = _rounds(test, target=target, budget=budget, seed=seed, t0=t0, prior=prior,
                      evaluations=evaluations)
        first = out.pop("_first")
    from boundbench.testing._rechecked import rechecked

    # a budget of seconds is kept by the rechecks too (the largest and the first violation
    # are rechecked whatever the time); --evaluations rechecks all: the same run anywhere
    out = rechecked(test, out, obs, first,
                    deadline=None if evaluations is not None else t0 + budget)
    return {**out, "seconds": round(time.perf_counter() - t0, 2)}  # the rechecks counted


def _rounds(test: Any, *, target: str, budget: float, seed: int, t0: float,
            prior: dict[str, Any] | None, evaluations: int | None) -> dict[str, Any]:
    from boundbench.testing.bound import RESULTS, BoundViolation

    t, rounds, chunk, space = _Tally(), 0, 50, getattr(test, "space", None)
    if prior is not None:  # a search already run (a claim's own, at its declared budget)
        t.search(test, prior)
    # an exact budget of evaluations (every call of the bound, shrinking included), or seconds
    calls = [evaluations - t.total] if evaluations is not None else None

    def more() -> bool:
        if calls is not None:
            return calls[0] > 0
        return rounds == 0 or time.perf_counter() - t0 < budget * 0.97

    if space is not None and more():  # first the corners and the centre, where bounds bind
        _lattice(test, space, t, calls, seed=seed, chunk=3, starts_only=True)

    while more():
        left = budget - (time.perf_counter() - t0) if calls is None else math.inf
        n = chunk if calls is None else max(1, min(chunk, calls[0]))
        try:
            rec = test.run(max_examples=n, seed_value=seed + rounds, deadline_s=max(left, 0.05),
                           examples=[e for e in t.found[-3:] if set(e) == set(space or ())],
                           calls_left=calls)
        except BoundViolation:
            rec = RESULTS[test.bound_name]
        except Exception:
            rec = RESULTS[test.bound_name]
            if not (t.first or rec.violated):
                raise  # the bound raised and nothing was found: the caller says so (exit 3)
        rounds += 1
        t.hypothesis(rec)
        if space is not None and not t.latticed and more():
            # early: the corners, face centres and centre, where bounds bind (issue 81)
            t.latticed = True
            _lattice(test, space, t, calls, seed=seed,
                     chunk=n if calls is None else int(LATTICE_SHARE * (evaluations or 0)))
        if space is not None and not t.sized and more() and (
                t.first is not None or _spent(t0, budget, calls, evaluations) >= SIZING_AFTER):
            # the rest of the budget sizes the worst case (and finds it, if nothing did yet)
            left_calls = calls[0] if calls is not None else _calls_for(t0, budget, t.total)
            used = sizing(test, space, t, calls=left_calls, seed=seed + rounds,
                          run_seed=seed, steps=evaluations or left_calls)
            if calls is not None:
                calls[0] -= used
            continue
        if space is not None and more():
            hit = search_round(test, space, chunk=n if calls is None else min(n, calls[0]),
                                seed=seed + rounds,
                                start=[rec.value] if isinstance(rec.value, dict) else [])
            if calls is not None:
                calls[0] -= hit["evaluations"]
            t.search(test, hit)
        chunk = _next_chunk(chunk, counted=calls is not None, t0=t0, budget=budget,
                            total=t.total)
    if calls is not None and evaluations is not None:
        # every call, rejected and shrinking ones too; more than asked only where a claim's own
        # search (its declared budget, whole generations) already took more
        t.total = evaluations - calls[0]
    out = _result(test, target=target, budget=budget, seed=seed, t0=t0, best=t.best,
                  first=t.first, total=t.total, rounds=rounds, evaluations=evaluations)
    if space is not None:
        out["method"] = ("a portfolio in one budget: hypothesis with target(lhs/rhs), a climb "
                         "on the box's lattice of corners, face centres and centre, and "
                         "differential evolution over the declared box, each round seeding the "
                         "other; violations rechecked in high precision (mpmath at 50 digits)")
        out["search"] = t.searched
    if t.raised:
        out["raised"] = t.raised
    if t.artifacts:
        out["floating_point_artifacts"] = {"count": t.artifacts, "first": t.artifact}
    if t.unconfirmed:
        out["unconfirmed_violations"] = {"count": t.unconfirmed, "first": t.unconfirmed_first}
    out["_first"] = t.first
    return out


SIZING_AFTER = 0.5  # the share of the budget after which the rest sizes, if nothing was found
LATTICE_SHARE = 1 / 20  # the share of an exact budget the lattice's climb spends, once


def _next_chunk(chunk: int, *, counted: bool, t0: float, budget: float, total: int) -> int:
    """The next round's examples: twice as many; under a budget of seconds, no more than the
    time left allows at this run's pace (hypothesis generates a round's examples even past the
    deadline); under --evaluations, never the clock: the same calls on any machine and load."""
    if counted:
        return min(chunk * 2, 20_000)
    per = (time.perf_counter() - t0) / max(total, 1)
    left = budget - (time.perf_counter() - t0)
    return max(5, min(chunk * 2, 20_000, int(0.9 * left / max(per, 1e-5))))


def _lattice(test: Any, space: dict, t: _Tally, calls: list[int] | None, *, seed: int,
             chunk: int, starts_only: bool = False) -> None:
    """One climb on the box's lattice (:func:`~boundbench.testing._lattice.lattice_round`),
    its calls taken from an exact budget, its best kept and two other basins handed on."""
    chunk = max(1, chunk if calls is None else min(calls[0], chunk))
    hit = lattice_round(test, space, seed=seed, chunk=chunk, starts_only=starts_only)
    if calls is not None:
        calls[0] -= hit["evaluations"]
    t.search(test, hit)
    if not starts_only:
        t.found.extend(hit["candidates"][1:3])


def _spent(t0: float, budget: float, calls: list[int] | None, evaluations: int | None) -> float:
    """The share of the budget spent: calls made of an exact budget, or seconds."""
    if calls is not None and evaluations:
        return 1.0 - calls[0] / evaluations
    return (time.perf_counter() - t0) / budget


def _calls_for(t0: float, budget: float, done: int) -> int:
    """The calls the seconds left allow at this run's pace (90% of them: the rounds' overhead)."""
    elapsed = time.perf_counter() - t0
    per = elapsed / max(done, 1)
    return int(max(0.0, 0.9 * (budget * 0.97 - elapsed)) / max(per, 1e-6))


def _as_record(test: Any, hit: dict[str, Any]) -> Any:
    """The search's instance as a :class:`~boundbench.testing.bound.Tightness` record (its own
    reproducer: the search does not shrink)."""
    from boundbench.testing.bound import Tightness

    return Tightness(test.bound_name, hit["ratio"], repr(hit["instance"]), hit["lhs"],
                     hit["rhs"], 0, hit["confirmed"], hit["ratio"], repr(hit["instance"]),
                     hit["lhs"], hit["rhs"], value=hit["instance"])


def _result(test: Any, *, target: str, budget: float, seed: int, t0: float, best: Any,
            first: Any, total: int, rounds: int, evaluations: int | None = None
            ) -> dict[str, Any]:
    """The record of a falsify run: the largest ratio, the first violation's reproducer."""
    shrunk = first if first is not None else best
    return {"target": target, "worst_ratio": best.worst_ratio,
            "worst_is": "the largest lhs/rhs found over every example of this run",
            "violated": first is not None, "instance": best.instance, "lhs": best.lhs,
            "rhs": best.rhs,
            # the failure pytest reports: hypothesis's shrunk example, another instance
            "reproducer": ({"ratio": shrunk.shrunk_ratio, "lhs": shrunk.shrunk_lhs,
                           "rhs": shrunk.shrunk_rhs, "instance": shrunk.shrunk_instance,
                           "is": "the smallest reproducer (hypothesis's shrunk failure)",
                           "extended_precision": shrunk.recheck}
                           if first is not None else None),
            "verdict": "violated" if first is not None else ("holds" if total else "not tested"),
            "evaluations": total, "rounds": rounds,
            "seconds": round(time.perf_counter() - t0, 2),
            "method": "hypothesis with target(lhs/rhs), rounds of fresh seeds until the budget is "
                     "spent, shrunk on failure; violations rechecked in high precision (mpmath at 50 digits)",
            "reproduce": f"{test.reproduce(seed)} " + (f"--evaluations {evaluations}"
                                                       if evaluations else f"--budget {budget:g}")}
