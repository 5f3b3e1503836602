"""Targeted search for a bound's worst case: maximize ``lhs/rhs`` over the claim's assumption
space within a fixed budget.

Random instance families understate how tight (or how wrong) a bound is; a derivative-free
optimizer climbing ``lhs/rhs`` finds the corners they miss. A claim declares its search as a
:class:`Search`: a box of named parameters (linear, logarithmic or integer axes) and a function
of those parameters that returns both sides of the inequality (arrays count their worst
element). :func:`worst_case` runs scipy's differential evolution on the unit cube for a fixed
number of evaluations (not seconds: the same seed gives the same instance on any machine) and
returns the worst instance found. The registry runs every bound claim's
search beside its random family (``registry.run``), so the evidence carries
``worst_found_by_search`` and its instance, and "loose by x k" is computed from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.executors import one_torch_thread
from boundbench.framework.inputs.boxes import decode_box

AXES = ("lin", "log", "int")


@dataclass(frozen=True)
class Search:
    """A bound's assumption space and both sides of it.

    ``space``: name -> ``(low, high)`` or ``(low, high, axis)`` with axis ``"lin"`` (default),
    ``"log"`` or ``"int"`` (inclusive integers). ``sides(params) -> (lhs, rhs)``: scalars or
    arrays (the worst element counts). ``budget``: evaluations at ``(quick, paper)`` scale, sized
    so that the quick search takes a few seconds on 2 cores (at most 30).
    ``batched``: ``sides`` takes arrays of parameters (one entry per candidate) and returns
    ``(lhs, rhs)`` of shape ``(candidates, ...)``, so a whole population is scored in one call.

    Parameters
    ----------
    space : mapping of str to tuple
        Name -> ``(low, high)`` or ``(low, high, axis)``, axis ``"lin"``, ``"log"`` or ``"int"``.
    sides : callable
        ``params -> (lhs, rhs)`` (with ``with_context``, ``(params, ctx) -> (lhs, rhs)``).
    budget : tuple of int, default (1000, 20000)
        Evaluations at quick and paper scale.
    batched : bool, default False
        ``sides`` scores arrays of candidates at once.
    note : str
        The space in words, for the report.
    atol : float, default 0
        An excess ``lhs - rhs`` up to this is rounding, not a violation.
    with_context : bool, default False
        ``sides`` reads the check's cached tables.
    symmetry : callable, optional
        ``(params, k) -> params``, an exact map of instances followed from the worst one.
    symmetry_note : str
        The map in words.
    maps : mapping of str to callable, optional
        Name -> ``(params, k) -> params``: maps of the claim's data that are not symmetries
        (translating a dataset along its separating line, say), defined for every ``k > 0``
        with ``k = 1`` the identity; the characterization stage
        (:mod:`boundbench.framework.search.characterize`) follows them beside every axis.
    quantities : callable, optional
        ``params -> {name: value}``: an instance in its assumptions' own terms (``B``,
        ``lam``, ``n``), how a violation's instances and boundary are quoted.
    replay : Replay, optional
        How a violating instance becomes a standalone script (:mod:`boundbench.framework.search.replay`):
        the program that recomputes both sides in mpmath and the instance's data.
    readings : mapping of str to callable, optional
        The statement's other plausible readings, name -> sides; searched beside this one for
        a bound that holds (:func:`boundbench.framework.search.verdict.apply_readings`).
    reading : str
        This search's own reading, by name (required with ``readings``).
    scales : tuple of Scale, optional
        Scales of the instances (:class:`boundbench.framework.search.region.Scale`) in which a
        violation's region (the scale's infimum or supremum over every violating instance) is
        found.

    References
    ----------
    R. Storn and K. Price, Differential evolution, J. Global Optimization 11 (1997): the search
    (``scipy.optimize.differential_evolution``).

    Examples
    --------
    >>> import numpy as np
    >>> import boundbench as bb
    >>> s = bb.Search({"x": (0.0, 1.0)}, lambda p: (p["x"] ** 2, p["x"]), budget=(50, 500))
    >>> sorted(s.space)
    ['x']
    """

    space: Mapping[str, tuple]
    # (params) -> (lhs, rhs), or (params, check context) -> (lhs, rhs) with ``with_context``
    sides: Callable[..., tuple[Any, Any]] = field(repr=False)
    budget: tuple[int, int] = (1000, 20000)
    batched: bool = False
    note: str = ""
    atol: float = 0.0  # an excess lhs - rhs up to this (rounding in the sides) is not a violation
    # sides(params, ctx): the space is a claim's own measured instances (e.g. its trained
    # models), which the check context's cached tables hold
    with_context: bool = False
    # a known symmetry of the statement: (params, k) -> params, an exact map of instances that
    # the characterization stage follows from the worst instance, outside the box too (a box
    # caps what the search finds; along a symmetry the ratio may grow without limit, which the
    # evidence then says); ``symmetry_note`` names the map
    symmetry: Callable[[dict[str, Any], float], dict[str, Any]] | None = field(default=None,
                                                                                 repr=False)
    symmetry_note: str = ""
    # maps of the data that are not symmetries: name -> (params, k) -> params, k = 1 the identity
    maps: Mapping[str, Callable[[dict[str, Any], float], dict[str, Any]]] = field(
        default_factory=dict, repr=False)
    # params -> {name: value}: an instance in its assumptions' terms (B, lam, n), for the report
    quantities: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None,
                                                                            repr=False)
    # params -> a standalone replay's input (framework.search.replay.Replay): a violation found in this
    # space is written out as a script that needs neither boundbench nor a solver
    replay: Any = field(default=None, repr=False)
    # the sides again in ball arithmetic (framework.certificates.proofs.Proof): a "holds" proven on the box
    proof: Any = field(default=None, repr=False)
    # scales of the instances (framework.search.region.Scale: B, a norm, lam) in which a violation's
    # region is found over all instances, not along one ray
    scales: tuple[Any, ...] = field(default=(), repr=False)
    # the statement's other plausible readings: name -> sides (as ``sides``), searched beside
    # the primary one (named ``reading``) for a bound that holds: its size is the largest over
    # them all, and a reading that breaks it makes the verdict depend on the reading
    readings: Mapping[str, Callable[..., tuple[Any, Any]]] = field(default_factory=dict,
                                                                  repr=False)
    reading: str = ""
    # a structural parameter of the statement (depth, width): framework.search.structure.Structure
    structure: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.space:
            raise InvalidArgument("space must name at least one parameter")
        for name, spec in self.space.items():
            if len(spec) not in (2, 3) or (len(spec) == 3 and spec[2] not in AXES):
                raise InvalidArgument(f"space[{name!r}] must be (low, high) or (low, high, axis) with "
                                      f"axis in {AXES} (got {spec!r})")
            lo, hi = float(spec[0]), float(spec[1])
            if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
                raise InvalidArgument(f"space[{name!r}] must have finite low <= high (got {spec!r})")
            if len(spec) == 3 and spec[2] == "log" and lo <= 0:
                raise InvalidArgument(f"space[{name!r}] is logarithmic: low must be > 0 (got {lo})")
        for name, fn in dict(self.maps or {}).items():
            if not isinstance(name, str) or not callable(fn):
                raise InvalidArgument(f"maps must map names to callables (params, k) -> params (got "
                                      f"{name!r}: {fn!r})")
        if not all(callable(getattr(x, "at", None)) and callable(getattr(x, "of", None))
                   for x in self.scales):
            raise InvalidArgument(f"scales must hold Scale values (got {self.scales!r})")
        for name, fn in dict(self.readings or {}).items():
            if not isinstance(name, str) or not name or not callable(fn):
                raise InvalidArgument(f"readings must map names to sides callables (got "
                                      f"{name!r}: {fn!r})")
        if self.readings and not self.reading:
            raise InvalidArgument("a search with other readings must name its own (reading=)")
        if self.quantities is not None and not callable(self.quantities):
            raise InvalidArgument(f"quantities must be a callable params -> dict (got "
                                  f"{self.quantities!r})")
        if len(self.budget) != 2 or min(self.budget) < 1:
            raise InvalidArgument(f"budget must be (quick_evaluations, paper_evaluations) >= 1 (got "
                                  f"{self.budget!r})")

    def decode(self, u: np.ndarray) -> dict[str, Any]:
        """Parameters from points ``u`` of the unit cube (last axis: one entry per name)."""
        return decode_box(self.space, u)


def element_ratios(lhs: np.ndarray, rhs: np.ndarray, *, atol: float = 0.0,
                   rel: float = 0.0) -> np.ndarray:
    """``lhs / rhs`` element by element where ``rhs > 0``; where ``rhs <= 0``, ``inf`` if ``lhs``
    exceeds it beyond ``atol + rel * max(|lhs|, |rhs|)``, else 0. The one rule by which the
    search, ``boundbench.testing`` and the benchmarks score a bound's sides."""
    beyond = lhs - rhs > atol + rel * np.maximum(np.abs(lhs), np.abs(rhs))
    pos = rhs > 0
    return np.where(pos, lhs / np.where(pos, rhs, 1.0), np.where(beyond, np.inf, 0.0))


def worst_ratio(lhs: Any, rhs: Any, atol: float = 0.0) -> float:
    """The worst ``lhs/rhs`` of one instance: ``inf`` where ``rhs <= 0`` and ``lhs`` exceeds it
    beyond rounding (``atol`` plus 1e-9 relative), 0 where nothing can be compared; a ratio
    above 1 within that rounding counts as 1."""
    lhs = np.asarray(lhs, dtype=np.float64).ravel()
    rhs = np.asarray(rhs, dtype=np.float64).ravel()
    ok = np.isfinite(lhs) & np.isfinite(rhs)
    lhs, rhs = lhs[ok], rhs[ok]
    if lhs.size == 0:
        return 0.0
    beyond = lhs - rhs > atol + 1e-9 * np.maximum(np.abs(lhs), np.abs(rhs))
    r = element_ratios(lhs, rhs, atol=atol, rel=1e-9)
    r = np.where(beyond, r, np.minimum(r, 1.0))
    return float(r.max())


SYMMETRY_STEPS = 10  # k up to 2^10 beyond the box (framework.search.characterize)
# each of the last three doublings of k multiplies the ratio by at least this: power growth of
# at least k^0.25 sustained (a ratio that levels off shows factors falling to 1; k^0.5 growth,
# as Theorem 2.2's main form under the local-L reading as dist0 -> 0, shows 1.41)
UNBOUNDED_GROWTH = 2.0**0.25


@dataclass(frozen=True)
class SearchResult:
    worst_ratio: float
    instance: dict[str, Any]
    n_evals: int
    method: str = ("differential evolution (scipy), unit-cube encoding, then bounded Nelder-Mead "
                   "from its best instance (a quarter of the evaluations more)")
    n_refused: int = 0  # instances whose sides raised (outside the assumptions, solver failure)


def instance_sides(search: Search, context: Any = None
                   ) -> Callable[[dict[str, Any]], tuple[np.ndarray, np.ndarray]]:
    """``params -> (lhs, rhs)`` of one instance as flat float arrays (a batched search scores a
    population of one), raising where the sides do (outside the assumptions): how the
    characterization, the replays and ``falsify`` evaluate single instances."""
    if search.with_context and context is None:
        raise InvalidArgument("this search's sides take the check context: pass context=")

    def sides(params: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        if search.batched:  # a population of one
            params = {k: np.asarray([v]) for k, v in params.items()}
        lhs, rhs = search.sides(params, context) if search.with_context else search.sides(params)
        return (np.ravel(np.asarray(lhs, dtype=np.float64)),
                np.ravel(np.asarray(rhs, dtype=np.float64)))

    return sides


def scorer(search: Search, context: Any = None) -> Callable[[dict[str, Any]], float]:
    """``params -> lhs/rhs`` of one instance (:func:`worst_ratio` of its sides), raising where
    the sides do (outside the assumptions): what the characterization stage scores with."""
    sides = instance_sides(search, context)

    def score(params: dict[str, Any]) -> float:
        return worst_ratio(*sides(params), search.atol)

    return score


class _Stop(Exception):
    pass


class Spent(_Stop):
    """Raised by a search's ``sides`` to end :func:`worst_case` where it is (its best so far is
    kept): a caller whose own count of calls is spent, where ``max_evals`` counts more than
    the calls it makes (a caller that answers repeated instances from its memory)."""


def initial_population(dim: int, size: int, seed: int) -> np.ndarray:
    """The search's first generation in the unit cube: a quarter on the box's boundary, the rest
    a scrambled Sobol sequence. Bounds fail at the edges of their assumptions (a radius reached,
    a parameter at its limit), which a space-filling design alone samples last; hypothesis's
    generators put weight there too. The boundary part holds every corner where there are few
    (2^dim <= a quarter), else the two extreme corners and points with each coordinate at 0,
    1 or in the interior, drawn from ``seed``."""
    from scipy.stats import qmc

    size = max(size, 5)
    rng = np.random.default_rng([seed, dim])
    n_edge = max(2, size // 4)
    if 2**dim <= n_edge:
        edge = ((np.arange(2**dim)[:, None] >> np.arange(dim)) & 1).astype(float)
    else:
        pick = rng.integers(0, 3, (n_edge - 2, dim))  # 0: at 0, 1: at 1, 2: interior
        edge = np.where(pick == 2, rng.random((n_edge - 2, dim)), pick.astype(float))
        edge = np.vstack([np.zeros(dim), np.ones(dim), edge])
    if dim > 1:  # a power of two keeps Sobol's balance (and scipy quiet); take its prefix
        k = size - len(edge)
        fill = qmc.Sobol(dim, scramble=True, seed=rng).random_base2(int(np.ceil(np.log2(k))))[:k]
    else:
        fill = qmc.LatinHypercube(dim, seed=rng).random(size - len(edge))
    return np.vstack([edge, fill])


def worst_case(search: Search, *, max_evals: int, seed: int = 0, context: Any = None,
               start: list[dict[str, Any]] | None = None,
               polish: float | None = None) -> SearchResult:
    """Maximize the worst ``lhs/rhs`` of ``search`` by differential evolution for ``max_evals``
    evaluations (deterministic for a seed; it stops early once the whole population sits at one
    value, or at a violation with ``rhs <= 0``); instances where ``sides`` raises
    ``ValueError`` (outside the assumptions, e.g. non-separable data, or a solver that gives
    up) score 0, and are counted (``n_refused``). On one torch thread, as a claim's check runs
    (:func:`~boundbench.framework.claims.registry.run`): the audit's search and ``boundbench falsify``
    find the same worst case on any core count. ``polish``: the polish's evaluations as a share
    of ``max_evals`` (default :data:`POLISH_SHARE`; a search started from good instances, as the
    region's levels are, spends more there)."""
    with one_torch_thread():
        return _worst_case(search, max_evals=max_evals, seed=seed, context=context, start=start,
                           polish=POLISH_SHARE if polish is None else float(polish))


def encode(search: Search, params: dict[str, Any]) -> np.ndarray:
    """The unit-cube point of ``params`` (:meth:`Search.decode`'s inverse, clipped to the box):
    how an instance found by another engine (hypothesis) joins the search's population."""
    u = []
    for name, spec in search.space.items():
        lo, hi = float(spec[0]), float(spec[1])
        axis = spec[2] if len(spec) == 3 else "lin"
        x = float(params[name])
        if axis == "log":
            t = (np.log(max(x, lo)) - np.log(lo)) / max(np.log(hi) - np.log(lo), 1e-300)
        elif axis == "int":
            t = (x - lo + 0.5) / (hi - lo + 1)
        else:
            t = (x - lo) / (hi - lo) if hi > lo else 0.5
        u.append(float(np.clip(t, 0.0, 1.0)))
    return np.array(u)


def _worst_case(search: Search, *, max_evals: int, seed: int, context: Any,
                start: list[dict[str, Any]] | None = None,
                polish: float = 0.25) -> SearchResult:
    from scipy.optimize import differential_evolution

    if isinstance(max_evals, bool) or not isinstance(max_evals, int) or max_evals < 1:
        raise InvalidArgument(f"max_evals must be an integer >= 1 (got {max_evals!r})")
    dim = len(search.space)
    best: dict[str, Any] = {"ratio": -np.inf, "u": np.full(dim, 0.5), "n": 0, "refused": 0,
                            "limit": max_evals}
    if search.with_context:
        if context is None:
            raise InvalidArgument("this search's sides take the check context: pass context=")
        def sides(p: dict[str, Any], f: Callable[..., Any] = search.sides) -> Any:
            return f(p, context)

        search = replace(search, sides=sides, with_context=False)

    def score_one(u: np.ndarray) -> float:
        params = {k: (v.item() if hasattr(v, "item") else v) for k, v in search.decode(u).items()}
        try:
            return worst_ratio(*search.sides(params), search.atol)
        except (ValueError, np.linalg.LinAlgError, ArithmeticError):
            best["refused"] += 1
            return 0.0

    def score(U: np.ndarray) -> np.ndarray:
        # U: (dim, S) when vectorized, else (dim,)
        cols = U.T if U.ndim == 2 else U[None]
        if search.batched:
            params = search.decode(cols)
            try:
                lhs, rhs = search.sides(params)
                lhs = np.asarray(lhs, dtype=np.float64).reshape(len(cols), -1)
                rhs = np.asarray(rhs, dtype=np.float64).reshape(len(cols), -1)
                r = np.array([worst_ratio(a, b, search.atol)
                              for a, b in zip(lhs, rhs, strict=True)])
            except (ValueError, np.linalg.LinAlgError, ArithmeticError):
                r = np.array([score_one(c) for c in cols])
        else:
            r = np.array([score_one(c) for c in cols])
        best["n"] += len(cols)
        j = int(np.argmax(np.where(np.isnan(r), -np.inf, r)))
        if r[j] > best["ratio"]:
            best["ratio"], best["u"] = float(r[j]), cols[j].copy()
        if best["n"] >= best["limit"] or best["ratio"] == np.inf:
            raise _Stop
        return -np.nan_to_num(r, nan=0.0, posinf=1e300)

    popsize = max(5, 40 // max(dim, 1))
    init = initial_population(dim, popsize * dim, seed)
    for j, p in enumerate((start or [])[: len(init) // 4]):  # instances found elsewhere
        init[-1 - j] = encode(search, p)
    try:
        differential_evolution(score, [(0.0, 1.0)] * dim, seed=seed, maxiter=100_000,
                               popsize=popsize, tol=0, atol=0, polish=False,
                               init=init,
                               vectorized=True, updating="deferred", mutation=(0.5, 1.0),
                               recombination=0.7)
    except _Stop:
        pass
    if np.isfinite(best["ratio"]) and best["ratio"] > 0:
        _polish(score, best, max_evals=max_evals, share=polish)
    params = {k: (v.item() if hasattr(v, "item") else v)
              for k, v in search.decode(best["u"]).items()}
    return SearchResult(max(best["ratio"], 0.0), params, int(best["n"]),
                        n_refused=int(best["refused"]))


POLISH_SHARE = 0.25  # evaluations of the polish, beyond the population search's max_evals
POLISH_WIDTHS = (0.05, 5e-3)  # its rounds' first simplex half-widths (unit coordinates)


def _polish(score: Callable[[np.ndarray], np.ndarray], best: dict[str, Any], *,
            max_evals: int, share: float = 0.25) -> None:
    """Bounded Nelder-Mead from the population search's best instance, for
    :data:`POLISH_SHARE` of ``max_evals`` more evaluations (the population search's own are
    unchanged, so its result is a lower bound of this one): a supremum on a face or at a
    corner of the box, where differential evolution's trial points rarely land exactly
    (``ad.thm1.block.as-written``: 1.11 inside, 1.21 with two coordinates on their faces),
    is reached (issue 80)."""
    from scipy.optimize import minimize

    per = max(10, int(max_evals * share) // len(POLISH_WIDTHS))
    for width in POLISH_WIDTHS:
        start, stop = best["n"], best["n"] + per
        best["limit"] = stop
        u0 = best["u"].copy()
        dim = len(u0)
        simplex = np.vstack([u0] + [np.clip(u0 + width * np.eye(dim)[j] * (
            1 if u0[j] + width <= 1 else -1), 0.0, 1.0) for j in range(dim)])

        def one(u: np.ndarray) -> float:
            return float(score(np.clip(u, 0.0, 1.0)[:, None])[0])

        try:
            minimize(one, u0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * dim,
                     options={"initial_simplex": simplex, "maxfev": stop - start,
                              "xatol": 1e-15, "fatol": 0.0})
        except _Stop:
            pass
        if best["ratio"] == np.inf:  # a violation with rhs <= 0: nothing larger
            break
