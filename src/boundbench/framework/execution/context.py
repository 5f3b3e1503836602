"""The context a claim's check runs in (:class:`CheckContext`): its seed and the generators drawn
from (seed, claim id), its scale and what each scale picks, the output folder and formats, and the
experiment tables it shares with other claims, cached in memory and on disk by config hash,
hash-verified and schema-checked when read back (:class:`TableCache`)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.profiles import COLUMNS, Profile, get_profile
from boundbench.framework.files.atomic import (
    key_lock,
    read_verified,
    within,
    write_atomic,
    write_verified,
)

SCALES = COLUMNS
"""The built-in scales (profiles, :mod:`boundbench.framework.execution.profiles`: one table of what each
means): ``quick`` (CI, seconds to a few minutes on 2 cores; fine-tuning claims are smoke runs
there), ``standard`` (``quick``, except that the fine-tuning claims are sized from their
measured effects and paired SDs to decide, or to say what they would need, in about 90 minutes
on 2 CPU cores) and ``paper`` (the papers' sizes where stated). A user's profile
(:func:`~boundbench.framework.execution.profiles.register_profile`) is a scale too."""


def check_scale(scale: str) -> str:
    """``scale`` if it names a registered profile, else an error naming the ones there are."""
    return get_profile(scale).name


def salt(text: str) -> int:
    """A 64-bit integer from ``text`` (a claim id), stable across processes and machines."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _as_path(name: str, value: Any) -> Path | None:
    """``value`` (None, a non-empty string or path) as a Path, else an error naming ``name``."""
    if value is None:
        return None
    if isinstance(value, str | os.PathLike) and str(value):
        return Path(value)
    raise InvalidArgument(f"{name} must be None or a non-empty path (got {value!r})")


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
    """What a check may depend on: the seed, the scale, and where to write its outputs.

    Parameters
    ----------
    seed : int, default 0
        Every random draw of a check comes from it (:meth:`rng`).
    scale : {"quick", "standard", "paper"}, default "quick"
        The sizes a check runs at (:meth:`pick`).
    out_dir : str or pathlib.Path, optional
        Where the claim's figure, table and config are written (none when ``None``); a string
        is taken as a path.
    force : bool, default False
        Recompute cached experiment tables.
    progress : bool, default False
        Progress bars on long work.
    claim_id : str
        Set by the registry when it runs a check.
    formats : tuple of str, default ("png",)
        Figure formats written (png, pdf, svg).
    seeds : int, optional
        A budgeted audit's seed count for the fine-tuning claims.
    sequential : bool, default False
        Judge the fine-tuning claims by anytime-valid confidence sequences.
    datasets : int, optional
        Datasets per reading where a claim declares a count (Fig. 5).
    seed_records : str or pathlib.Path, optional
        A folder of per-seed records of the fine-tuning claims (``docs/seeds``): their grids
        take the seeds recorded there for their config and record the seeds they train
        (:mod:`boundbench.plm.grid.records`, issue 85).

    Examples
    --------
    >>> import boundbench as bb
    >>> ctx = bb.CheckContext(seed=3, scale="paper")
    >>> ctx.pick(100, 3000)
    3000
    >>> bb.CheckContext(seed=-1)
    Traceback (most recent call last):
    ...
    boundbench.errors.InvalidArgument: seed must be an integer in [0, ...] (got -1)
    """

    seed: int = 0
    scale: str = "quick"
    out_dir: Path | None = None
    force: bool = False  # recompute cached experiment tables
    progress: bool = False  # progress bars on long work
    claim_id: str = ""  # set by the registry when it runs a check
    formats: tuple[str, ...] = ("png",)  # figure formats written (png, pdf, svg)
    # a budgeted audit: fine-tuning claims run this many seeds (None: their scale's count)
    # and are judged by anytime-valid confidence sequences (framework.stats.sequential)
    seeds: int | None = None
    sequential: bool = False
    # datasets per reading of an experiment that declares a dataset count it may be run at
    # (Fig. 5's heads: --datasets; None: its scale's count)
    datasets: int | None = None
    # per-seed records the fine-tuning grids continue from and add to (issue 85)
    seed_records: Path | None = None
    tables: TableCache = field(default_factory=TableCache, compare=False, repr=False)

    def __post_init__(self) -> None:
        check_scale(self.scale)
        # frozen: a string is stored as the Path every writer and reader expects
        for name in ("out_dir", "seed_records"):
            object.__setattr__(self, name, _as_path(name, getattr(self, name)))
        if (isinstance(self.formats, str) or not self.formats
                or any(f not in FIGURE_FORMATS for f in self.formats)):
            raise InvalidArgument(f"formats must be a non-empty tuple of {FIGURE_FORMATS} "
                                  f"(got {self.formats!r})")
        from boundbench.framework.inputs.validate import MAX_SEED

        if isinstance(self.seed, bool) or not isinstance(self.seed, int | np.integer) \
                or not 0 <= self.seed <= MAX_SEED:
            raise InvalidArgument(f"seed must be an integer in [0, {MAX_SEED}] (got {self.seed!r})")
        if self.seeds is not None and (isinstance(self.seeds, bool) or not isinstance(
                self.seeds, int | np.integer) or self.seeds < 2):
            raise InvalidArgument(f"seeds must be None or an integer >= 2 (got {self.seeds!r})")
        if self.datasets is not None and (isinstance(self.datasets, bool) or not isinstance(
                self.datasets, int | np.integer) or self.datasets < 1):
            raise InvalidArgument(f"datasets must be None or an integer >= 1 (got "
                                  f"{self.datasets!r})")

    @property
    def spec(self) -> RunSpec:
        """The run's options as one value (:class:`RunSpec`): what this context shares with
        every other claim of its run."""
        return RunSpec(**{k: getattr(self, k) for k in RUN_FIELDS})

    def seed_count(self, quick: int, paper: int, *, standard: Any = _AS_QUICK) -> int:
        """How many seeds a fine-tuning grid runs: the budgeted audit's :attr:`seeds` where it
        sets them, else :meth:`pick`'s value for this scale."""
        return int(self.seeds) if self.seeds is not None else self.pick(quick, paper,
                                                                        standard=standard)

    def rng(self, *streams: str) -> np.random.Generator:
        """A generator that depends on the seed and the claim only (not on run order); named
        ``streams`` give independent generators within one claim."""
        if not self.claim_id:
            raise InvalidArgument("CheckContext.rng needs claim_id (the registry sets it)")
        return np.random.default_rng([self.seed, salt(self.claim_id), *map(salt, streams)])

    def table_rng(self, table: str) -> np.random.Generator:
        """A generator for an experiment table several claims share: it depends on the seed and
        the table's name, so the cached table is the same whichever claim computes it first."""
        return np.random.default_rng([self.seed, salt(table)])

    @property
    def profile(self) -> Profile:
        """This scale's profile: the column of a claim's own sizes it takes, the fine-tuning
        sizes every run shares, whether fine-tuning claims are smoke runs
        (:mod:`boundbench.framework.execution.profiles`)."""
        return get_profile(self.scale)

    def pick(self, quick: Any, paper: Any, *, standard: Any = _AS_QUICK) -> Any:
        """The value for this scale's column (:attr:`profile`): ``quick``, ``paper``, or at
        ``standard`` the ``standard`` value where a check gives one and ``quick`` where it does
        not."""
        column = self.profile.column
        if column == "paper":
            return paper
        if column == "standard" and standard is not _AS_QUICK:
            return standard
        return quick

    def _entry(self, name: str, config: dict[str, Any]) -> tuple[str, str, Path | None]:
        """A cache entry's key, the blob it hashes and its file (``None`` without out_dir)."""
        from boundbench.framework.files.meta import RESULTS_VERSION, compute_context, version

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


#: The fields of a run's options (:class:`RunSpec`), which every claim's context of the run holds
RUN_FIELDS = ("seed", "scale", "force", "formats", "seeds", "sequential", "datasets",
              "seed_records")


@dataclass(frozen=True)
class RunSpec:
    """A run's options as one frozen, validated value (issue 83): everything that changes its
    numbers or files, carried whole to every claim's :class:`CheckContext`, the local pool and
    Dask's workers (:meth:`context`), and recorded whole in every result (:meth:`to_dict`).

    Parameters
    ----------
    seed, scale, force, formats, seeds, sequential, datasets, seed_records
        As :class:`CheckContext`'s, and checked as it checks them. ``scale``'s profile is
        carried with the spec (a process that never registered a user's profile, a pool or
        Dask worker, gets it from the spec) and recorded in :meth:`to_dict`.

    Examples
    --------
    >>> from boundbench.framework.execution.context import RunSpec
    >>> spec = RunSpec(seed=7, scale="standard", seeds=12, sequential=True)
    >>> ctx = spec.context(out_dir="figures")
    >>> (ctx.seed, ctx.seeds, ctx.sequential, ctx.spec == spec)
    (7, 12, True, True)
    """

    seed: int = 0
    scale: str = "quick"
    force: bool = False
    formats: tuple[str, ...] = ("png",)
    seeds: int | None = None
    sequential: bool = False
    datasets: int | None = None
    seed_records: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seed_records", _as_path("seed_records", self.seed_records))
        if isinstance(self.formats, list):
            object.__setattr__(self, "formats", tuple(self.formats))
        object.__setattr__(self, "_profile", get_profile(self.scale))  # travels when pickled
        self.context()  # CheckContext's checks, the one place they are written

    def context(self, *, out_dir: Path | str | None = None, progress: bool = False,
                claim_id: str = "", tables: TableCache | None = None) -> CheckContext:
        """A claim's context of this run: these options, and where it writes."""
        from boundbench.framework.execution.profiles import PROFILES

        PROFILES.setdefault(self.scale, self.__dict__["_profile"])  # a worker learns a user's
        extra: dict[str, Any] = {} if tables is None else {"tables": tables}
        # a string is checked and made a Path by CheckContext itself (an empty one refused)
        where: Any = out_dir
        return CheckContext(out_dir=where, progress=progress, claim_id=claim_id,
                            **{k: getattr(self, k) for k in RUN_FIELDS}, **extra)

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON values (``formats`` a list), the scale's profile whole."""
        return {**{k: (list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v)
                   for k, v in ((k, getattr(self, k)) for k in RUN_FIELDS)},
                "profile": self.__dict__["_profile"].to_dict()}
