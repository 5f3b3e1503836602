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
:func:`load`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from boundbench.framework.files import (
    key_lock,
    read_verified,
    within,
    write_atomic,
    write_verified,
)
from boundbench.framework.search import Search, apply_search, worst_case
from boundbench.framework.verdicts import Verdict

KINDS = ("bound", "equality", "trend")
SCALES = ("quick", "standard", "paper")
"""Every scale a check, an experiment or the command line knows: ``quick`` (CI, seconds to a
few minutes on 2 cores; fine-tuning claims are smoke runs there), ``standard`` (``quick``, except
that the fine-tuning claims are sized from their measured effects and paired SDs to decide, or to
say what they would need, in about 90 minutes on 2 CPU cores) and ``paper`` (the papers' sizes
where stated)."""

PAPERS: dict[str, str] = {
    "fu": "Fu, So & Collier: A Stability Analysis of Fine-Tuning a Pre-Trained Model",
    "ad": "Activation Decay by Loss Smoothing to Enhance Generalization",
    "jachess": "Jukic & Snajder: From Robustness to Improved Generalization and Calibration "
    "in PLMs",
    "uegr": "Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via "
    "Bi-Stage Optimization",
    "soudry": "Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data",
}


def check_scale(scale: str) -> str:
    """``scale`` if it is one of :data:`SCALES`, else a ``ValueError`` naming it."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES} (got {scale!r})")
    return scale


def _salt(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


_AS_QUICK = object()  # pick()'s marker: no standard value given, use the quick one
class TableCache:
    """The experiment tables of one run, in memory: the claims that share a table compute it
    once. A check context carries one (contexts derived from it share it); it never travels
    with a pickled context (a Dask worker starts with an empty one).

    ``shared``, where a distributed run shares tables between workers (set on a worker by the
    application's task; None in a serial run): ``lock(key)`` (a cluster-wide lock),
    ``get(key) -> bytes | None`` and ``put(key, bytes)``, so two workers never compute one table
    at once and the second reuses the first one's."""

    def __init__(self, shared: Any = None) -> None:
        self.memo: dict[str, Any] = {}
        self.fresh: set[str] = set()  # computed (not loaded) here: `force` redoes them once
        self.shared = shared

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"TableCache({len(self.memo)} tables)"


FIGURE_FORMATS = ("png", "pdf", "svg")  # what a claim's figure can be saved as


@dataclass(frozen=True)
class CheckContext:
    """What a check may depend on: the seed, the scale, and where to write its outputs."""

    seed: int = 0
    scale: str = "quick"
    out_dir: Path | None = None
    force: bool = False  # recompute cached experiment tables
    progress: bool = False  # progress bars on long work
    claim_id: str = ""  # set by the registry when it runs a check
    formats: tuple[str, ...] = ("png",)  # figure formats written (png, pdf, svg)
    # a budgeted audit: fine-tuning claims run this many seeds (None: their scale's count)
    # and are judged by anytime-valid confidence sequences (framework.sequential)
    seeds: int | None = None
    sequential: bool = False
    # datasets per reading of an experiment that declares a dataset count it may be run at
    # (Fig. 5's heads: --datasets; None: its scale's count)
    datasets: int | None = None
    tables: TableCache = field(default_factory=TableCache, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_scale(self.scale)
        if (isinstance(self.formats, str) or not self.formats
                or any(f not in FIGURE_FORMATS for f in self.formats)):
            raise ValueError(f"formats must be a non-empty tuple of {FIGURE_FORMATS} "
                             f"(got {self.formats!r})")
        from boundbench.framework.validate import MAX_SEED

        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer) \
                or not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be an integer in [0, {MAX_SEED}] (got {self.seed!r})")
        if self.seeds is not None and (isinstance(self.seeds, bool) or not isinstance(
                self.seeds, int | np.integer) or self.seeds < 2):
            raise ValueError(f"seeds must be None or an integer >= 2 (got {self.seeds!r})")
        if self.datasets is not None and (isinstance(self.datasets, bool) or not isinstance(
                self.datasets, int | np.integer) or self.datasets < 1):
            raise ValueError(f"datasets must be None or an integer >= 1 (got "
                             f"{self.datasets!r})")

    def seed_count(self, quick: int, paper: int, *, standard: Any = _AS_QUICK) -> int:
        """How many seeds a fine-tuning grid runs: the budgeted audit's :attr:`seeds` where it
        sets them, else :meth:`pick`'s value for this scale."""
        return int(self.seeds) if self.seeds is not None else self.pick(quick, paper,
                                                                        standard=standard)

    def rng(self, *streams: str) -> np.random.Generator:
        """A generator that depends on the seed and the claim only (not on run order); named
        ``streams`` give independent generators within one claim."""
        if not self.claim_id:
            raise ValueError("CheckContext.rng needs claim_id (the registry sets it)")
        return np.random.default_rng([self.seed, _salt(self.claim_id), *map(_salt, streams)])

    def table_rng(self, table: str) -> np.random.Generator:
        """A generator for an experiment table several claims share: it depends on the seed and
        the table's name, so the cached table is the same whichever claim computes it first."""
        return np.random.default_rng([self.seed, _salt(table)])

    def pick(self, quick: Any, paper: Any, *, standard: Any = _AS_QUICK) -> Any:
        """The value for this scale: ``quick``, ``paper``, or at ``standard`` the ``standard``
        value where a check gives one and ``quick`` where it does not."""
        if self.scale == "paper":
            return paper
        if self.scale == "standard" and standard is not _AS_QUICK:
            return standard
        return quick

    def _entry(self, name: str, config: dict[str, Any]) -> tuple[str, str, Path | None]:
        """A cache entry's key, the blob it hashes and its file (``None`` without out_dir)."""
        from boundbench.framework.meta import RESULTS_VERSION, compute_context, version

        blob = json.dumps({"name": name, "config": config, "version": version(),
                           "results": RESULTS_VERSION, "computed_on": compute_context()},
                          sort_keys=True, default=str)
        key = hashlib.sha256(blob.encode()).hexdigest()[:16]
        path = None
        if self.out_dir:
            # a .cache that is a link elsewhere would take every table out of the folder
            within(self.out_dir, Path(self.out_dir) / ".cache", what=".cache")
            path = Path(self.out_dir) / ".cache" / f"{name}-{key}.parquet"
        return key, blob, path

    def is_cached(self, name: str, config: dict[str, Any]) -> bool:
        """Whether :meth:`cached` would read ``name``/``config`` rather than compute it (held
        in memory, or a file that reads back verified; ``force`` recomputes)."""
        import pandas as pd

        key, _, path = self._entry(name, config)
        if key in self.tables.memo and (not self.force or key in self.tables.fresh):
            return True
        if self.force or path is None:
            return False
        return read_verified(path, pd.read_parquet, check=_schema_check(path)) is not None

    def cached(self, name: str, config: dict[str, Any], compute: Callable[[], Any]) -> Any:
        """The DataFrame ``compute()`` returns for ``config``, cached as parquet under
        ``out_dir/.cache`` by a hash of the config (and the package version), so re-plotting
        never recomputes, and in memory for the claims of one process that share a table;
        ``force`` recomputes."""
        import pandas as pd

        key, blob, path = self._entry(name, config)
        memo = self.tables.memo
        if key in memo and (not self.force or key in self.tables.fresh):
            return memo[key]
        if path is None:
            df = memo[key] = compute()
            self.tables.fresh.add(key)
            return df
        # one process computes an entry at a time; a second waits and then reads its result
        with key_lock(path):
            if not self.force:
                # a truncated, edited or unverifiable file is named, set aside and recomputed
                df = read_verified(path, pd.read_parquet, check=_schema_check(path))
                if df is not None:
                    memo[key] = df
                    return df
            shared = self.tables.shared
            if shared is not None and not self.force:
                with shared.lock(key):
                    data = shared.get(key)
                    if data is not None:  # another worker computed it meanwhile
                        write_verified(path, lambda t: t.write_bytes(data))
                        df = read_verified(path, pd.read_parquet)
                        if df is not None:
                            memo[key] = df
                            write_atomic(path.with_suffix(".json"),
                                         lambda t: t.write_text(blob + "\n"))
                            return df
                    df = self._compute_and_write(key, path, blob, compute)
                    shared.put(key, path.read_bytes())
                    return df
            return self._compute_and_write(key, path, blob, compute)

    def _compute_and_write(self, key: str, path: Path, blob: str,
                           compute: Callable[[], Any]) -> Any:
        df = self.tables.memo[key] = compute()
        self.tables.fresh.add(key)
        write_verified(path, lambda t: df.to_parquet(t, index=False))
        meta = {**json.loads(blob), "schema": _schema(df)}
        write_atomic(path.with_suffix(".json"), lambda t: t.write_text(
            json.dumps(meta, sort_keys=True, default=str) + "\n"))
        return df


def _schema(df: Any) -> dict[str, str] | None:
    """A table's columns and their dtypes, in order (``None`` for what is not a DataFrame)."""
    cols = getattr(df, "dtypes", None)
    return {str(c): str(t) for c, t in cols.items()} if cols is not None else None


def _schema_check(path: Path) -> Callable[[Any], str | None]:
    """The check :func:`read_verified` runs on a cached table: its columns and dtypes must be
    the ones recorded beside it when it was computed (``<entry>.json``'s ``schema``). The
    sha256 sidecar catches a truncated or corrupted file, not a deliberate edit with a new
    sidecar; this catches an edit that changes the table's shape (a hash-valid table with other
    columns failed its claim with an AttributeError), not one that changes a value."""
    def check(df: Any) -> str | None:
        try:
            want = json.loads(path.with_suffix(".json").read_text()).get("schema")
        except (OSError, ValueError, AttributeError):
            return None  # an entry of an earlier version, or written by a worker: no schema
        got = _schema(df)
        if want is None or got == want:
            return None
        have = got or {}
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        changed = [c for c in want if c in have and have[c] != want[c]]
        return (f"its columns do not match the schema recorded when it was computed (missing "
                f"{missing}, extra {extra}, other dtype {changed})")

    return check


@dataclass(frozen=True)
class Block:
    """One piece of a claim's experiment that can run anywhere: the cache entry
    ``name``/``config`` it fills and ``run``, a picklable callable that computes its table. A
    claim that declares its blocks (``@claim(blocks=...)``) reads them with
    :meth:`CheckContext.cached`, so blocks a Dask cluster computed first
    (:func:`boundbench.audit.run_claims`) are read, not recomputed."""

    name: str
    config: dict[str, Any]
    run: Callable[[], Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Outcome:
    """What a check returns: its verdict, the tidy table its figure was drawn from, the figure
    (matplotlib) and the experiment's config; the registry saves them as ``<claim id>.*``."""

    verdict: Verdict
    table: Any = None  # pandas DataFrame
    figure: Any = None  # matplotlib Figure
    config: Any = None


def _save(ctx: CheckContext, outcome: Outcome) -> tuple[str | None, str | None, list[str],
                                                       list[str]]:
    """Write ``<id>.json`` (config, seed, scale, versions), ``<id>.csv`` and the figure in each
    of ``ctx.formats`` into ``ctx.out_dir``; return the figure's first file name, the table's,
    every figure file, and the figure's layout problems
    (:func:`boundbench.framework.plotting.layout_problems`: overlapping or clipped text, fonts
    too small to print), checked whether or not anything is written."""
    fig_name = table_name = None
    fig_files: list[str] = []
    layout: list[str] = []
    if outcome.figure is not None:
        import matplotlib.pyplot as plt

        from boundbench.framework import plotting

        plotting.finalize(outcome.figure)
        layout = plotting.layout_problems(outcome.figure, drawn=True)
        # the layout checked is the layout saved: the engine is not run again for each format
        outcome.figure.set_layout_engine("none")
    if ctx.out_dir is not None:
        import json

        from boundbench.framework.meta import compute_context, environment

        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        meta = {"claim": ctx.claim_id, "seed": ctx.seed, "scale": ctx.scale,
                "config": outcome.config, "environment": environment(),
                "computed_on": compute_context()}
        text = json.dumps(meta, indent=2, default=str)
        write_atomic(ctx.out_dir / f"{ctx.claim_id}.json", lambda t: t.write_text(text))
        if outcome.table is not None:
            write_atomic(ctx.out_dir / f"{ctx.claim_id}.csv",
                         lambda t: outcome.table.to_csv(t, index=False))
            table_name = f"{ctx.claim_id}.csv"
        if outcome.figure is not None:
            for fmt in ctx.formats:
                write_atomic(ctx.out_dir / f"{ctx.claim_id}.{fmt}",
                             partial(plotting.savefig, outcome.figure, fmt=fmt,
                                     claim_id=ctx.claim_id))
                fig_files.append(f"{ctx.claim_id}.{fmt}")
            # reports embed the PNG where there is one (markdown viewers show it), else the first
            fig_name = next((f for f in fig_files if f.endswith(".png")), fig_files[0])
    if outcome.figure is not None:
        plt.close(outcome.figure)
    return fig_name, table_name, fig_files, layout


@dataclass(frozen=True)
class Erratum:
    """What exactly fails when a claim goes against its paper, for the errata sheet.

    ``fails``: which part of the paper fails: ``"statement"`` (as displayed), ``"proof step"``
    (a step of its proof, the statement itself being true or unfalsifiable) or ``"use"`` (a use
    of it elsewhere). ``part``: that part in words, with its equation. ``constants``: how the
    statement's existential constants ("for some constants C, lam") are read, since read
    existentially it could not fail. ``downstream``: what follows for the results built on it.
    """

    fails: str
    part: str
    constants: str = ""
    downstream: str = ""

    PARTS = ("statement", "proof step", "use")

    def __post_init__(self) -> None:
        if self.fails not in self.PARTS:
            raise ValueError(f"fails must be one of {self.PARTS} (got {self.fails!r})")
        if not self.part:
            raise ValueError("part must name what fails")


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

    @property
    def function_names(self) -> list[str]:
        """The dotted import paths of :attr:`functions`."""
        return [f"{f.__module__}.{f.__qualname__}" for f in self.functions]

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "paper": self.paper,
            "paper_title": PAPERS[self.paper],
            "where": self.where,
            "kind": self.kind,
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
) -> Callable[[Callable[[CheckContext], Outcome]], Callable[[CheckContext], Outcome]]:
    """Register the decorated function as the check of claim ``id``; ``correction`` is the
    corrected statement where one is known (shown on the errata sheet when the claim fails);
    ``search``: the bound's assumption space, searched for its worst case beside the check's
    random family whenever the claim runs (:mod:`boundbench.framework.search`); ``functions``:
    the library functions that state its inequality or formula, for the claim -> function
    table (``boundbench claims --functions``); ``erratum``: what exactly fails where the claim
    goes against its paper (:class:`Erratum`); ``blocks``: ``ctx -> [Block]``, the pieces of
    its experiment a cluster may compute first (:class:`Block`)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)} (got {paper!r})")
    for f in functions:
        if not callable(f):
            raise ValueError(f"functions must hold callables (got {f!r} for claim {id!r})")

    def register(fn: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
        if id in _REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        _REGISTRY[id] = Claim(id, paper, where, statement, equation, kind, fn, notes,
                              correction, search, tuple(functions), erratum, blocks)
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


def get(claim_id: str) -> Claim:
    reg = registry()
    if claim_id not in reg:
        raise ValueError(f"unknown claim id {claim_id!r}; `boundbench claims` lists them")
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
        )
        if self.error:
            d["error"] = self.error
        return d


def run(claim_id: str, ctx: CheckContext, *, catch: bool = False) -> Result:
    """Run one claim's check with ``ctx`` bound to the claim, save its outputs and time it.
    With ``catch``, a raising check is reported, not re-raised: its verdict is
    ``inconclusive`` and the traceback is kept in ``error``."""
    c = get(claim_id)
    ctx = replace(ctx, claim_id=c.id)
    t0 = time.perf_counter()
    from boundbench.framework.plotting import style

    try:
        with style():  # every figure of every check in the project's print style
            outcome = c.check(ctx)
        if isinstance(outcome, Verdict):  # nothing measured, nothing to draw (not-testable)
            outcome = Outcome(outcome)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"the check of {c.id!r} returned {type(outcome).__name__}, not an "
                            "Outcome")
        if c.search is not None and outcome.verdict.status != "not-testable":
            found = worst_case(c.search, max_evals=int(ctx.pick(*c.search.budget)),
                               seed=_salt(f"{ctx.seed}/{c.id}/search") % 2**32, context=ctx)
            outcome = replace(outcome, verdict=apply_search(outcome.verdict, found))
        title, marked = _say_what_was_decided(c, outcome)
        with style():
            figure, table, files, layout = _save(ctx, outcome)
        verdict = outcome.verdict.with_outputs(figure, table)
        err = None
    except Exception as exc:  # noqa: BLE001 - reported in full below
        if not catch:
            raise
        verdict = Verdict("inconclusive", f"the check raised {type(exc).__name__}: {exc}")
        err = traceback.format_exc()
        files, layout, title, marked = [], [], None, False
    return Result(c, verdict, time.perf_counter() - t0, ctx.seed, ctx.scale, err, tuple(files),
                  tuple(layout), title, marked)


def _say_what_was_decided(c: Claim, outcome: Outcome) -> tuple[str | None, bool]:
    """The figure's title is the final verdict, and a searched bound's figure draws the search's
    worst instance (the instance that decided it, where it did). Returns the title and whether
    the instance is drawn."""
    if outcome.figure is None:
        return None, False
    from boundbench.framework import plotting

    ev = outcome.verdict.evidence
    marked = False
    if c.search is not None and isinstance(ev.get("search_alone_worst_ratio"), int | float):
        with plotting.style():
            plotting.search_strip(outcome.figure, worst_ratio=float(ev["search_alone_worst_ratio"]),
                                  instance=ev.get("worst_instance"),
                                  random_worst=ev.get("random_family_worst_ratio"),
                                  decided=bool(ev.get("decided_by_search")))
        marked = True
    return plotting.headline(outcome.figure, c.id, outcome.verdict.status), marked
