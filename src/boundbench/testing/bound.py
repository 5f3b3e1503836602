"""``@bound``: a property test of an inequality ``lhs <= rhs`` that searches for its worst case.

Under pytest the decorated function becomes a test. Hypothesis draws instances from the given
strategy; besides plain generation it steers toward larger ``lhs / rhs`` with
``hypothesis.target``, so the search climbs toward the corner where the bound is tightest (or
broken). A violation fails the test with the shrunk instance, both sides, the ratio and a
one-line reproducer; every run records the worst ratio it saw, which the pytest plugin prints
as a tightness table at the end of the session.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from boundbench.errors import InvalidArgument
from boundbench.testing._ratios import worst_element  # noqa: F401 - its public home


class BoundViolation(AssertionError):
    """A bound failed on an instance: ``lhs > rhs (1 + rtol) + atol`` somewhere."""


class BoundRaised(Exception):
    """The user's bound raised, or returned something that is not a finite ``(lhs, rhs)``, on
    an instance (named in the message)."""


@dataclass
class Tightness:
    """What a ``@bound`` test saw. Two worst cases, which differ: ``worst_ratio`` (with
    ``instance``, ``lhs``, ``rhs``) is the *largest* ``lhs / rhs`` over every example tried
    (``inf``: lhs > 0 where rhs <= 0), what the tightness table prints; ``shrunk_*`` is the
    *smallest reproducer* of a failure, the example hypothesis shrank it to and replayed last,
    whose ratio is usually far smaller (only set when the bound was violated)."""

    name: str
    worst_ratio: float = -math.inf
    instance: str = ""
    lhs: float = math.nan
    rhs: float = math.nan
    examples: int = 0
    violated: bool = False
    shrunk_ratio: float = math.nan
    shrunk_instance: str = ""
    shrunk_lhs: float = math.nan
    shrunk_rhs: float = math.nan
    #: the first exception the bound raised, with its instance ("" if none): a bound that never
    #: returned a value is "not tested", never "holds"
    raised: str = ""
    #: violations float64 reported that vanished in high precision (testing._precision):
    #: floating-point artifacts of the bound's code, counted and the first one described
    artifacts: int = 0
    artifact: str = ""
    #: the extended-precision recheck of the last violation reported
    recheck: dict | None = None
    #: the instance with the largest ratio itself (``instance`` is its repr)
    value: Any = None
    #: under ``pytest --prove``: the prover's certificate level on the declared space (one of
    #: :class:`boundbench.framework.certificates.levels.Level`) and its sentence; "" when not run
    certificate: str = ""
    certificate_status: str = ""
    #: float64 violations that could not be rechecked (the code leaves numpy's ufuncs) where
    #: float64 was out of its depth (subnormal sides, extreme floats): not findings
    unconfirmed: int = 0
    unconfirmed_first: str = ""

    @property
    def verdict(self) -> str:
        """``violated``, ``holds`` (some example returned both sides) or ``not tested``."""
        return "violated" if self.violated else ("holds" if self.examples else "not tested")


#: every ``@bound`` run in this process, by test name (the pytest plugin prints it)
RESULTS: dict[str, Tightness] = {}

#: set by the pytest plugin's ``--prove``: each ``@bound(space=...)`` test is then also proven
#: on its space (``boundbench prove``'s prover), and fails where the prover refutes it
PROVE = False


def _box_strategy(space: dict) -> st.SearchStrategy:
    """Instances of a :class:`~boundbench.framework.search.targeted.Search` box as hypothesis draws them:
    a dict of each name's float (or integer) in its range, edges and special values included."""
    parts = {}
    for name, spec in space.items():
        lo, hi = spec[0], spec[1]
        axis = spec[2] if len(spec) == 3 else "lin"
        parts[name] = (st.integers(int(lo), int(hi)) if axis == "int" else
                       st.floats(float(lo), float(hi), allow_nan=False, allow_infinity=False))
    return st.fixed_dictionaries(parts)


def _checked(strategy: st.SearchStrategy | None, space: dict | None, *, rtol: float,
             atol: float, max_examples: int) -> tuple[st.SearchStrategy, dict | None]:
    """``bound``'s arguments checked (a ``ValueError`` naming the parameter), the strategy
    derived from the box where none is given."""
    if space is not None:
        from boundbench.framework.search.targeted import Search

        Search(space, lambda p: (0.0, 0.0))  # its checks: a ValueError naming the bad entry
        space = dict(space)
        if strategy is None:
            strategy = _box_strategy(space)
    if not isinstance(strategy, st.SearchStrategy):
        raise InvalidArgument(f"strategy must be a hypothesis strategy, or space a box (got "
                              f"{type(strategy).__name__})")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not (isinstance(value, int | float) and value >= 0):
            raise InvalidArgument(f"{name} must be a number >= 0 (got {value!r})")
    if isinstance(max_examples, bool) or not isinstance(max_examples, int) or max_examples < 1:
        raise InvalidArgument(f"max_examples must be an integer >= 1 (got {max_examples!r})")
    return strategy, space


def bound(strategy: st.SearchStrategy | None = None, *, space: dict | None = None,
          rtol: float = 1e-9, atol: float = 0.0, max_examples: int = 200, seed: int = 0,
          outside: tuple[type[BaseException], ...] = ()
          ) -> Callable[[Callable], Callable[[], None]]:
    """Turn ``fn(instance) -> (lhs, rhs)`` into a test of ``lhs <= rhs (1 + rtol) + atol`` over
    ``strategy``'s instances, searched for the worst ratio with ``hypothesis.target``. The
    default ``rtol`` forgives float64 rounding where a bound is attained (an equality case).

    ``max_examples``: instances per run; ``seed``: hypothesis's seed (the same seed, the same
    instances, so a failure reproduces). The returned test keeps ``fn`` as ``.fn`` and the
    strategy as ``.strategy`` (``boundbench falsify FILE:FUNC`` reuses them).

    Parameters
    ----------
    strategy : hypothesis.strategies.SearchStrategy, optional
        The instances (:mod:`boundbench.testing.strategies` has the papers' families).
    space : dict, optional
        A box of named parameters, as a :class:`~boundbench.framework.search.targeted.Search` declares
        it (``name -> (low, high)`` or ``(low, high, "log" | "int")``): ``fn`` then takes a dict
        of them, hypothesis draws from the box (when no ``strategy`` is given), and ``boundbench
        falsify FILE:FUNC`` runs a global search over it beside hypothesis, each seeding the
        other.
    rtol, atol : float
        The tolerance of ``lhs <= rhs (1 + rtol) + atol``.
    max_examples : int, default 200
        Instances per run.
    seed : int, default 0
        Hypothesis's seed.
    outside : tuple of exception types, default ()
        What ``fn`` raises on an instance outside the bound's assumptions (a claim's search
        raises ``ValueError`` on non-separable data): such instances are rejected, not errors.

    Returns
    -------
    callable
        A decorator turning ``fn(instance) -> (lhs, rhs)`` into a pytest test.

    References
    ----------
    D. R. MacIver et al., Hypothesis: A new approach to property-based testing, JOSS 4(43), 2019.

    Examples
    --------
    >>> from hypothesis import strategies as st
    >>> from boundbench.testing import bound
    >>> @bound(st.floats(0, 1), max_examples=20)
    ... def test_square_below_identity(x):
    ...     return x * x, x
    >>> test_square_below_identity()
    >>> test_square_below_identity.fn(0.5)
    (0.25, 0.5)
    """
    strategy, space = _checked(strategy, space, rtol=rtol, atol=atol, max_examples=max_examples)
    def decorate(fn: Callable) -> Callable[[], None]:
        name = f"{fn.__module__}.{fn.__qualname__}"

        reproduce = functools.partial(_reproduce, fn)

        @functools.wraps(fn)
        def test() -> None:
            __tracebackhide__ = True  # pytest shows the violation, not our frames (issue 84)
            _prove(fn, space, run(max_examples=max_examples, seed_value=seed), reproduce(seed))

        def run(*, max_examples: int, seed_value: int, deadline_s: float | None = None,
                examples: list | None = None, calls_left: list[int] | None = None
                ) -> Tightness:
            import time

            __tracebackhide__ = True
            rec = RESULTS[name] = Tightness(name)
            stop = time.perf_counter() + deadline_s if deadline_s else math.inf

            def prop(instance: Any) -> None:
                __tracebackhide__ = True
                # past the deadline nothing is scored, not even a shrink: hypothesis then calls
                # a recorded violation flaky, and run() reports it (never lost)
                if _spent(stop, calls_left):  # an exact budget of calls, shrinking included
                    return
                try:
                    ratio, lhs, rhs = _score(fn, instance, rec, outside)
                except _Outside:
                    from hypothesis import reject

                    reject()
                rec.examples += 1
                allowed = rhs * (1 + rtol) + atol if rhs >= 0 else rhs + atol
                if lhs > allowed and _artifact(fn, instance, lhs, rhs, rtol, atol, rec, space):
                    return  # never invent: it vanished in high precision
                # target a finite score: inf (a violated rhs <= 0) maps to a large number
                target(min(ratio, 1e12) if np.isfinite(ratio) else 1e12, label="lhs/rhs")
                if ratio > rec.worst_ratio:
                    rec.worst_ratio, rec.instance, rec.lhs, rec.rhs = ratio, repr(instance), lhs, rhs
                    rec.value = instance
                if lhs > allowed:
                    rec.violated = True
                    # hypothesis replays the shrunk failure last: the last one kept is it
                    rec.shrunk_ratio, rec.shrunk_instance = ratio, repr(instance)
                    rec.shrunk_lhs, rec.shrunk_rhs = lhs, rhs
                    raise BoundViolation(
                        f"{name} ({_where(fn)}): lhs <= rhs fails on {instance!r}: lhs = "
                        f"{lhs:.6g}, rhs = {rhs:.6g}, lhs/rhs = {ratio:.6g} (rtol {rtol:g}, "
                        f"atol {atol:g}); reproduce: {reproduce(seed_value)}")

            def lost(exc: BaseException) -> BoundViolation:
                return BoundViolation(
                    f"{name}: lhs <= rhs fails on {rec.shrunk_instance}: lhs = "
                    f"{rec.shrunk_lhs:.6g}, rhs = {rec.shrunk_rhs:.6g}, lhs/rhs = "
                    f"{rec.shrunk_ratio:.6g} (rtol {rtol:g}, atol {atol:g}; then hypothesis "
                    f"stopped on {type(exc).__name__}); reproduce: {reproduce(seed_value)}")

            _drive(prop, strategy, rec, examples=examples or [], max_examples=max_examples,
                   seed_value=seed_value, lost=lost, counted=calls_left is not None, source=fn)
            return rec

        # a test of no arguments: pytest must not read fn's parameter as a fixture
        del test.__wrapped__
        test.__signature__ = inspect.Signature()  # type: ignore[attr-defined]
        test.fn = fn  # type: ignore[attr-defined]
        test.strategy = strategy  # type: ignore[attr-defined]
        test.run = run  # type: ignore[attr-defined]
        test.bound_name = name  # type: ignore[attr-defined]
        test.reproduce = reproduce  # type: ignore[attr-defined]
        test.space, test.rtol, test.atol = space, rtol, atol  # type: ignore[attr-defined]
        return test

    return decorate


def _prove(fn: Callable, space: dict | None, rec: Tightness, falsify: str) -> None:
    """``--prove``: the prover's level on the declared space, in the record (the tightness
    table prints it); a refutation fails the test with the prover's counterexample and the
    command that writes its bare replay (``falsify``'s, with ``prove`` for ``falsify``). Without
    ``--prove`` (or a declared space), nothing."""
    from boundbench.framework.certificates.user_proofs import prove_function

    if not PROVE or space is None:
        return
    command = falsify.replace(" falsify ", " prove ", 1).rsplit(" --seed", 1)[0]
    res = prove_function(fn, space)
    rec.certificate, rec.certificate_status = res["level"], res["status"]
    if res["level"] == "refuted":
        raise BoundViolation(f"{rec.name}: refuted by the prover on its space: {res['status']};"
                             f" a replay without boundbench: {command}")


def _artifact(fn: Callable, instance: Any, lhs: float, rhs: float, rtol: float, atol: float,
              rec: Tightness, space: dict | None = None) -> bool:
    """Whether a float64 violation vanishes when the bound's own code runs in extended
    precision (:func:`boundbench.testing._precision.recheck`): then it is recorded as a
    floating-point artifact, not a finding."""
    from boundbench.testing._precision import recheck, unconfirmed

    chk = recheck(fn, instance, rtol=rtol, atol=atol, space=space)
    if unconfirmed(chk, lhs, rhs):  # float64 out of its depth, in code that leaves numpy
        rec.unconfirmed += 1
        rec.unconfirmed_first = rec.unconfirmed_first or (
            f"{instance!r}: float64 gives lhs = {lhs!r} > rhs = {rhs!r}, not rechecked in high "
            f"precision ({chk.get('why', 'the code leaves numpy')})"
            + (f"; it holds at {chk['holds_nearby']['instance']!r}, a few units in the last "
               f"place away" if chk.get("holds_nearby") else ""))
        return True
    if chk["status"] != "artifact":
        rec.recheck = chk
        return False
    rec.artifacts += 1
    rec.artifact = rec.artifact or (
        f"{instance!r}: float64 gives lhs = {lhs!r} > rhs = {rhs!r}; {chk['precision']} gives "
        f"lhs = {chk['lhs']!r} <= rhs = {chk['rhs']!r}"
        + (f" (extreme floats in the instance: {chk['extreme_floats']})"
           if chk["extreme_floats"] else ""))
    return True


def _drive(prop: Callable[[Any], None], strategy: st.SearchStrategy, rec: Tightness, *,
           examples: list, max_examples: int, seed_value: int,
           lost: Callable[[BaseException], BoundViolation], counted: bool = False,
           source: Callable | None = None) -> None:
    """Run ``prop`` under hypothesis: ``examples`` first (another engine's best instances),
    then ``max_examples`` drawn from ``strategy`` at ``seed_value``. A violation recorded
    before hypothesis stops on something else (a flaky replay while shrinking, the bound
    raising elsewhere) is raised as ``lost(exc)``: never lost.

    ``counted`` (a budget of calls): hypothesis's two clocks are kept out, so its calls are a
    function of the seed alone, as on any machine under any load: it stops generating at the
    first failure (else it goes on until 10 s after it, fewer calls on a slower machine), and
    its shrinking has no limit of seconds (300 s), only the budget's calls; and every run
    draws local constants from the bound's (``source``'s) module alone
    (:func:`boundbench.testing._pinned.pinned`)."""
    from hypothesis import example

    from boundbench.testing._pinned import pinned

    __tracebackhide__ = True
    test_fn = given(strategy)(prop)
    for e in examples:
        test_fn = example(e)(test_fn)
    # every setting that changes which calls are made is pinned here, whatever profile the
    # caller loaded (a test suite's derandomize=True would replace the seed: another run)
    test_fn = hypothesis_seed(seed_value)(settings(
        max_examples=max_examples, deadline=None, database=None, report_multiple_bugs=not counted,
        derandomize=False, backend="hypothesis",
        # hypothesis's "explain" lists the lines only failing cases ran: ours, not the
        # user's; kept under a budget of calls, whose count it is part of
        phases=tuple(Phase) if counted else tuple(p for p in Phase if p != Phase.explain),
        suppress_health_check=list(HealthCheck), print_blob=False)(test_fn))
    try:
        with pinned(source or prop, counted=counted):
            test_fn()
    except BoundViolation:
        raise
    except Exception as exc:  # noqa: BLE001 - never lose a violation found before it
        if rec.violated:
            raise lost(exc) from exc
        raise


def _reproduce(fn: Callable, seed_value: int) -> str:
    """The ``falsify`` command that replays ``fn``'s run at ``seed_value``."""
    try:
        where = inspect.getsourcefile(fn) or fn.__module__
    except TypeError:
        where = fn.__module__
    return f"boundbench falsify {where}:{fn.__name__} --seed {seed_value}"


def _where(fn: Callable) -> str:
    """``file:line`` of the user's bound function (what a failure points at)."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else repr(fn)


def _spent(stop: float, calls_left: list[int] | None) -> bool:
    """Past the deadline, or no call left (else one is taken)."""
    import time

    if time.perf_counter() > stop or (calls_left is not None and calls_left[0] <= 0):
        return True
    if calls_left is not None:
        calls_left[0] -= 1
    return False


class _Outside(Exception):
    """An instance outside the bound's assumptions (``bound(outside=...)``)."""


def _score(fn: Callable, instance: Any, rec: Tightness,
           outside: tuple[type[BaseException], ...] = ()) -> tuple[float, float, float]:
    """``worst_element`` of ``fn(instance)``; what the bound raises, or a value that is not a
    finite ``(lhs, rhs)``, is a :class:`BoundRaised` naming the instance (recorded first)."""
    from boundbench.testing._observe import call

    try:
        out = call(fn, instance)
    except outside:
        raise _Outside from None
    except Exception as exc:
        if not rec.raised:
            rec.raised = f"{type(exc).__name__}: {exc} on {instance!r}"
        raise
    try:
        if not (isinstance(out, tuple | list) and len(out) == 2):
            size = f" of length {len(out)}" if isinstance(out, tuple | list) else ""
            raise InvalidArgument(f"a bound must return (lhs, rhs), a pair (got "
                                  f"{type(out).__name__}{size})")
        return worst_element(*out)
    except ValueError as exc:
        if not rec.raised:
            rec.raised = f"{exc} on {instance!r}"
        raise BoundRaised(f"{exc}, on {instance!r}") from None


def tightness_table(results: dict[str, Tightness] | None = None) -> str:
    """Each ``@bound``'s largest ``lhs / rhs`` found over all its examples, tightest first, as
    a text table; a violated bound also gives the ratio of its smallest reproducer (the shrunk
    failure pytest reports), which is a different instance.

    Parameters
    ----------
    results : dict of str to Tightness, optional
        The bounds to list (by default every ``@bound`` run in this process).

    Returns
    -------
    str
        The table, empty when no bound ran.

    Examples
    --------
    >>> from boundbench.testing import tightness_table
    >>> print(tightness_table({}))
    <BLANKLINE>
    """
    rows = sorted((results if results is not None else RESULTS).values(),
                  key=lambda r: -r.worst_ratio)
    if not rows:
        return ""
    width = max(len(r.name) for r in rows)
    lines = [f"{'bound':<{width}}  {'largest lhs/rhs found':>21}  {'examples':>8}  verdict"]
    for r in rows:
        verdict = (f"VIOLATED (smallest reproducer: lhs/rhs = {r.shrunk_ratio:.6g})"
                   if r.violated else "holds" if r.examples else
                   f"NOT TESTED (every call raised: {r.raised})" if r.raised else "NOT TESTED")
        if r.artifacts and not r.violated:
            verdict += (f"; {r.artifacts} float64 violation(s) vanished in high precision "
                        f"(floating-point artifacts), e.g. {r.artifact}")
        if r.unconfirmed and not r.violated:
            verdict += (f"; {r.unconfirmed} float64 violation(s) not confirmed (subnormal or "
                        f"extreme floats, code that leaves numpy), e.g. {r.unconfirmed_first}")
        if r.certificate:
            verdict += f"; certificate: {r.certificate}"
        lines.append(f"{r.name:<{width}}  {r.worst_ratio:>21.6g}  {r.examples:>8}  {verdict}")
    return "\n".join(lines)
