"""The claims registry: every bound and effect the project tests, with the check that tests it.

Adding a claim takes one function and one decorator::

    @claim("fu.lemma-a.1.3", paper="fu", where="Lemma A.1.3", kind="bound",
           statement="...", equation="...")
    def _check(ctx: CheckContext) -> Outcome:
        x = ctx.rng().standard_normal(ctx.pick(quick=100, paper=10_000))
        verdict = bound_verdict(BoundSides(lhs, rhs), evidence={"n_draws": x.size})
        return Outcome(verdict, table=df, figure=fig, config={...})

The registry does the rest: the claim's id, a generator seeded from (seed, claim id), the PNG,
CSV and JSON outputs, timing and error capture. The registry knows no claim module: the
application's catalogue (``boundbench.catalogue``) hands it the list to import with
:func:`load`. A check runs in a :class:`~boundbench.framework.execution.context.CheckContext` (its seed,
scale, output folder and shared tables), which this module re-exports beside :func:`run`.
"""

from __future__ import annotations

import importlib
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from boundbench.errors import ClaimError, InvalidArgument
from boundbench.framework.claims import sources as _papers
from boundbench.framework.claims.outcome import Block, Erratum, Outcome
from boundbench.framework.claims.outputs import save as _save
from boundbench.framework.claims.outputs import say_what_was_decided as _say_what_was_decided
from boundbench.framework.claims.sources import (  # noqa: F401 (the registry's names, as before)
    Paper,
    paper_titles,
    papers,
    register_paper,
    titles_of,
)
from boundbench.framework.execution.context import CheckContext, salt
from boundbench.framework.execution.executors import one_torch_thread
from boundbench.framework.execution.time_limit import DEFAULTS, TimeLimitExceeded, time_limit
from boundbench.framework.search.characterize import apply_characterization, not_probed, quantities
from boundbench.framework.search.region import apply_region
from boundbench.framework.search.structure import apply_structure
from boundbench.framework.search.targeted import Search, worst_case
from boundbench.framework.search.verdict import apply_readings, apply_search
from boundbench.framework.verdicts.rules import STATUSES, Verdict

KINDS = ("bound", "equality", "trend")
#: Where a claim is measured: on synthetic instances (the theorems' own settings: random
#: instances, separable data, GD heads, MLPs), on a pretrained encoder's frozen features, or by
#: fine-tuning a pretrained transformer (seeds, a GPU's work; the budgeted audit extends these)
SETTINGS = ("synthetic", "features", "fine-tuning")

_HELPERS: set[Any] = set()  # code objects of functions that register claims for their caller


def registers_claims(fn: Callable) -> Callable:
    """Mark ``fn`` as a helper that registers claims on its caller's behalf (as
    ``boundbench.papers.shared.fine_tuning.paired_claim``): a claim's origin is then its caller's line."""
    _HELPERS.add(fn.__code__)
    return fn


def _origin(depth: int) -> str:
    """``package/module.py:line`` of the statement that registers a claim: the first frame
    outside :func:`claim` and the helpers (a path from the package's name, the same on every
    machine)."""
    import sys

    frame: Any = sys._getframe(depth + 1)
    while frame is not None and frame.f_code in _HELPERS:
        frame = frame.f_back
    if frame is None:  # pragma: no cover - a registration with no caller
        return ""
    module = str(frame.f_globals.get("__name__", "?"))
    path = module.replace(".", "/") + ("/__init__.py" if frame.f_globals.get("__path__")
                                       else ".py")
    return f"{path}:{frame.f_lineno}"


@contextmanager
def loading(package: str) -> Iterator[None]:
    """Register what happens inside as ``package``'s; if it raises, take back every paper and
    claim it registered (a plugin that fails half-way leaves nothing behind)."""
    papers_before, claims_before = dict(_papers._PAPERS), dict(_REGISTRY)
    _papers._LOADING.append(package)
    try:
        yield
        unknown = sorted(f"{c.id} (paper {c.paper!r})" for c in _REGISTRY.values()
                         if c.id not in claims_before and c.paper not in _papers._PAPERS)
        if unknown:  # a claim names a paper no package registered
            raise ClaimError(f"claims of package {package!r} name no registered paper: "
                             f"{', '.join(unknown)}; call boundbench.register_paper first")
    except BaseException:
        _papers._PAPERS.clear()
        _papers._PAPERS.update(papers_before)
        _REGISTRY.clear()
        _REGISTRY.update(claims_before)
        raise
    finally:
        _papers._LOADING.pop()


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    where: str
    statement: str
    equation: str
    kind: str
    check: Callable[[CheckContext], Outcome] = field(repr=False, compare=False)
    notes: str = ""
    correction: str = ""  # the corrected statement, where one is known (the errata sheet's)
    search: Search | None = field(default=None, repr=False, compare=False)  # a bound's worst case
    # the library functions that state the claim's inequality or formula (theory/*)
    functions: tuple[Callable, ...] = field(default=(), repr=False, compare=False)
    erratum: Erratum | None = None  # what exactly fails, where it goes against its paper
    # the blocks of its experiment that can run as separate tasks (ctx -> list of Block)
    blocks: Callable[[CheckContext], list[Block]] | None = field(default=None, repr=False,
                                                                  compare=False)
    package: str = ""  # the installed package that registered it (boundbench, or a plugin's)
    # a self-test's expected verdict: a planted-wrong variant or a control of the package's own
    # checks, reported as "self-test passed / failed", never as a finding against its paper
    self_test: str | None = None
    time_limit: float | None = None  # seconds at every scale, else time_limit.DEFAULTS
    setting: str = "synthetic"  # one of SETTINGS: an attribute, never read from the id
    origin: str = ""  # "package/module.py:line" of its registration (`boundbench claims`)

    @property
    def function_names(self) -> list[str]:
        """The dotted import paths of :attr:`functions`."""
        return [f"{f.__module__}.{f.__qualname__}" for f in self.functions]

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "paper": self.paper,
            "paper_title": (_papers._PAPERS[self.paper].title if self.paper in _papers._PAPERS
                            else self.paper),
            "package": self.package,
            "package_version": _papers.package_version(self.package),
            **({"self_test": self.self_test} if self.self_test else {}),
            "where": self.where,
            "kind": self.kind,
            "setting": self.setting,
            "origin": self.origin,
            "statement": self.statement,
            "equation": self.equation,
            "notes": self.notes,
            "correction": self.correction,
            "functions": self.function_names,
            **({"erratum": {"fails": self.erratum.fails, "part": self.erratum.part,
                            "constants": self.erratum.constants,
                            "downstream": self.erratum.downstream}} if self.erratum else {}),
        }


_REGISTRY: dict[str, Claim] = {}
#: The longest claim id: the files named after it add up to 20 characters to the 200 a name may
MAX_ID = 180


def claim(
    id: str,
    *,
    paper: str,
    where: str,
    kind: str,
    statement: str,
    equation: str,
    notes: str = "",
    correction: str = "",
    search: Search | None = None,
    functions: tuple[Callable, ...] = (),
    erratum: Erratum | None = None,
    blocks: Callable[[CheckContext], list[Block]] | None = None,
    self_test: str | None = None,
    time_limit: float | None = None,
    setting: str = "synthetic",
) -> Callable[[Callable[[CheckContext], Outcome]], Callable[[CheckContext], Outcome]]:
    """Register the decorated function as the check of claim ``id`` (each argument below).

    Parameters
    ----------
    id : str
        ``<paper key>.<name>``, unique among every installed package's claims.
    paper : str
        A registered paper's key (:func:`boundbench.register_paper`).
    where : str
        The theorem, equation or figure in the paper.
    kind : {"bound", "equality", "trend"}
        What is checked: an inequality, an identity or a predicted effect.
    statement, equation : str
        The claim in words and as the paper writes it.
    notes, correction : str, optional
        Readings the code follows; the corrected statement where one is known.
    search : Search, optional
        A bound's assumption space, searched for its worst case whenever the claim runs.
    functions : tuple of callable, optional
        The library functions that state the inequality.
    erratum : Erratum, optional
        What exactly fails where the claim goes against its paper.
    blocks : callable, optional
        ``ctx -> [Block]``, the pieces a cluster may compute first.
    self_test : str, optional
        The verdict this claim must get when it is a self-test of the package's checks (a
        planted-wrong variant: "violated"; a control: "holds"): reported as "self-test passed"
        or "failed", never counted as a finding against the paper.
    time_limit : float, optional
        Seconds the check may take at every scale; by default
        :data:`~boundbench.framework.execution.time_limit.DEFAULTS` by scale. Past it the claim is
        ``inconclusive``, with the reason.
    setting : {"synthetic", "features", "fine-tuning"}, default "synthetic"
        Where it is measured (:data:`SETTINGS`): the report groups claims by it, and the
        budgeted audit extends the fine-tuning ones.

    Returns
    -------
    callable
        A decorator that registers ``check(ctx) -> Outcome`` and returns it unchanged.

    References
    ----------
    ``docs/your-own-paper.md`` (the checklist per claim); ``docs/contributing.md``.

    Examples
    --------
    >>> import numpy as np
    >>> import boundbench as bb
    >>> from boundbench.framework.claims import registry
    >>> with registry.loading("my-notes"):
    ...     _ = bb.register_paper("mynotes", "My notes (2026)")
    ...     @bb.claim("mynotes.am-gm", paper="mynotes", where="eq. (1)", kind="bound",
    ...               statement="AM-GM", equation="sqrt(ab) <= (a + b)/2")
    ...     def _check(ctx):
    ...         a, b = ctx.rng().uniform(0, 1, (2, 100))
    ...         v = bb.bound_verdict(bb.BoundSides(np.sqrt(a * b), (a + b) / 2))
    ...         return bb.Outcome(v)
    >>> bb.run_claim("mynotes.am-gm", bb.CheckContext(seed=0)).verdict.status
    'holds'
    """
    if kind not in KINDS:
        raise ClaimError(f"kind must be one of {KINDS} (got {kind!r})")
    if setting not in SETTINGS:
        raise ClaimError(f"setting must be one of {SETTINGS} (got {setting!r} for claim {id!r})")
    origin = _origin(1)
    from boundbench.framework.files.escape import safe_name

    # both name files (``<id>.png``, ``summary-<paper>.md``): plain names only (issue 65)
    safe_name(id, what="a claim's id")
    if len(id) > MAX_ID:  # issue 84: a 200-character id's figure left the audit unreported
        raise ClaimError(f"a claim's id must be at most {MAX_ID} characters, so that its files' "
                         f"names are at most 200 (got {len(id)}: {id[:40]!r}...)")
    safe_name(paper, what=f"paper of claim {id!r}")
    for f in functions:
        if not callable(f):
            raise ClaimError(f"functions must hold callables (got {f!r} for claim {id!r})")
    if time_limit is not None and not (isinstance(time_limit, int | float) and time_limit > 0):
        raise ClaimError(f"time_limit must be a number of seconds > 0 (got {time_limit!r})")
    if self_test is not None and self_test not in STATUSES:
        raise ClaimError(f"self_test must be the verdict the self-test expects, one of "
                         f"{STATUSES} (got {self_test!r} for claim {id!r})")

    def register(fn: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
        package = _papers.current_package() or fn.__module__.split(".")[0]
        if id in _REGISTRY:
            raise ClaimError(f"claim id {id!r} of package {package!r} clashes with the one "
                             f"package {_REGISTRY[id].package!r} registered")
        _REGISTRY[id] = Claim(id, paper, where, statement, equation, kind, fn, notes,
                              correction, search, tuple(functions), erratum, blocks, package,
                              self_test, time_limit, setting, origin)
        return fn

    return register


_MODULES: list[str] = []  # claim modules in load order: the report's order


def load(modules: Iterable[str]) -> None:
    """Import the claim modules ``modules`` (the application's catalogue) so they register."""
    for name in modules:
        if name not in _MODULES:
            importlib.import_module(name)
            _MODULES.append(name)


def registry() -> dict[str, Claim]:
    """All registered claims by id: in the order their modules were loaded (:func:`load`), then
    registration order (independent of which module happened to be imported first)."""

    def module_rank(c: Claim) -> int:
        mod = c.check.__module__
        return _MODULES.index(mod) if mod in _MODULES else len(_MODULES)

    order = {cid: i for i, cid in enumerate(_REGISTRY)}
    ranked = sorted(_REGISTRY.values(), key=lambda c: (module_rank(c), order[c.id]))
    return {c.id: c for c in ranked}


def setting_of(entry: Mapping[str, Any]) -> str:
    """A report entry's setting (:data:`SETTINGS`): its own ``setting``, or, in a report
    written before claims had one, its registered claim's (``synthetic`` for a claim no
    longer installed)."""
    if entry.get("setting") in SETTINGS:
        return str(entry["setting"])
    c = _REGISTRY.get(str(entry.get("id")))
    return c.setting if c is not None else "synthetic"


def get(claim_id: str) -> Claim:
    reg = registry()
    if claim_id not in reg:
        raise InvalidArgument(f"unknown claim id {claim_id!r}; `boundbench claims` lists them")
    return reg[claim_id]


@dataclass(frozen=True)
class Result:
    """One claim's outcome as the audit reports it."""

    claim: Claim
    verdict: Verdict
    seconds: float
    seed: int
    scale: str
    error: str | None = None
    figure_files: tuple[str, ...] = ()
    layout_problems: tuple[str, ...] = ()
    # what the figure says and shows, for the check that it says what was decided
    figure_title: str | None = None
    figure_shows_search_worst: bool = False
    # how to remake the figure: command, commit, config hash, versions (meta.figure_provenance)
    provenance: dict[str, str] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = self.claim.describe()
        d.update(
            verdict=self.verdict.status,
            reason=self.verdict.reason,
            evidence=dict(self.verdict.evidence),
            figure=self.verdict.figure,
            table=self.verdict.table,
            seconds=round(self.seconds, 3),
            seed=self.seed,
            scale=self.scale,
            figure_files=list(self.figure_files),
            layout_problems=list(self.layout_problems),
            figure_title=self.figure_title,
            figure_shows_search_worst=self.figure_shows_search_worst,
            provenance=self.provenance,
        )
        if self.error:
            d["error"] = self.error
        return d


def run(claim_id: str, ctx: CheckContext, *, catch: bool = False) -> Result:
    """Run one claim's check with ``ctx`` bound to the claim, save its outputs and time it.
    With ``catch``, a raising check is reported, not re-raised: its verdict is
    ``inconclusive`` and the traceback is kept in ``error``.

    Parameters
    ----------
    claim_id : str
        A registered claim's id (``boundbench claims`` lists them).
    ctx : CheckContext
        Seed, scale, output folder and formats.
    catch : bool, default False
        Report a raising check as ``inconclusive`` instead of raising.

    Returns
    -------
    Result
        The verdict, seconds, seed and scale, the figure's files and layout problems, and how to
        remake the figure; ``.to_dict()`` is the report's entry.

    Examples
    --------
    >>> import boundbench as bb
    >>> bb.load_claims()
    >>> bb.run_claim("ad.thm2", bb.CheckContext(seed=0)).verdict.status
    'holds'
    """
    c = get(claim_id)
    ctx = replace(ctx, claim_id=c.id)
    t0 = time.perf_counter()
    from boundbench.framework.files.plotting import style

    try:
        # one torch thread wherever a claim runs (its search, worst_case, pins its own): MKL's
        # dgemm sums the inner dimension in another order on two threads at some shapes, and
        # torch's elementwise kernels take another path for each thread's last elements, so a
        # claim's last bits would follow the caller's core count
        limit = c.time_limit or DEFAULTS.get(ctx.scale)
        with style(), one_torch_thread(), time_limit(limit):  # a hang ends as inconclusive
            outcome = c.check(ctx)
        if isinstance(outcome, Verdict):  # nothing measured, nothing to draw (not-testable)
            outcome = Outcome(outcome)
        if not isinstance(outcome, Outcome):
            raise ClaimError(f"the check of {c.id!r} returned {type(outcome).__name__}, not an "
                             "Outcome")
        if c.search is not None and outcome.verdict.status != "not-testable":
            found = worst_case(c.search, max_evals=int(ctx.pick(*c.search.budget)),
                               seed=salt(f"{ctx.seed}/{c.id}/search") % 2**32, context=ctx)
            named = quantities(c.search, found.instance) if c.search.quantities else None
            outcome = replace(outcome, verdict=apply_search(outcome.verdict, found, named=named))
            outcome = replace(outcome, verdict=apply_readings(
                outcome.verdict, c.search, found, max_evals=int(ctx.pick(*c.search.budget)),
                seed=salt(f"{ctx.seed}/{c.id}/readings") % 2**32, context=ctx))
            outcome = replace(outcome, verdict=apply_characterization(
                outcome.verdict, c.search, found, ctx))
            outcome = replace(outcome, verdict=apply_region(outcome.verdict, c, found, ctx))
            outcome = replace(outcome, verdict=apply_structure(outcome.verdict, c, ctx))
            from boundbench.framework.search.replay import certify

            outcome = replace(outcome, verdict=certify(c, outcome.verdict, found, ctx))
        elif c.kind == "bound" and outcome.verdict.status in ("violated", "ill-posed"):
            # no claim skips the characterization silently (framework.search.characterize)
            outcome = replace(outcome, verdict=outcome.verdict.with_evidence(
                characterization=not_probed(
                    "it declares no search space (Search): its instances are not points of a "
                    "parameter box the stage could walk out of; its own evidence gives the "
                    "measured sizes")))
        if c.search is None:
            from boundbench.framework.search.replay import certify

            outcome = replace(outcome, verdict=certify(c, outcome.verdict, None, ctx))
        title, marked = _say_what_was_decided(c, outcome)
        with style():
            figure, table, files, layout, prov = _save(ctx, outcome)
        verdict = outcome.verdict.with_outputs(figure, table)
        err = None
    except TimeLimitExceeded:
        verdict = Verdict("inconclusive", f"the check ran past its time limit of {limit:g} s at "
                          f"scale {ctx.scale!r} and was stopped: a claim's time_limit, or a "
                          "faster machine, would let it finish", {"stopped_by_time_limit": limit})
        err, files, layout, title, marked, prov = None, [], [], None, False, None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported in full below; a
        # check's sys.exit too (issue 84: it ended `check` with the finding status, unsaid)
        if not catch:
            raise
        verdict = Verdict("inconclusive", f"the check raised {type(exc).__name__}: {exc}")
        err, files, layout, title, marked, prov = traceback.format_exc(), [], [], None, False, None
    return Result(c, verdict, time.perf_counter() - t0, ctx.seed, ctx.scale, err, tuple(files),
                  tuple(layout), title, marked, prov)
