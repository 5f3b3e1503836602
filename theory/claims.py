"""The claims registry: every bound and effect the project tests, with the check that tests it.

A claim is registered by decorating its check function::

    @claim("fu.lemma-a.1.3", paper="fu", where="Lemma A.1.3", kind="bound",
           statement="...", equation="...")
    def _check(ctx: CheckContext) -> Verdict: ...

Checks receive a :class:`CheckContext` (seed, scale, output folder) and return a
:class:`~theory.verdicts.Verdict`. Modules that register claims are listed in
``CLAIM_MODULES``; later packages (``synthetic``, ``plm``) add theirs there.
"""

from __future__ import annotations

import hashlib
import importlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from theory.verdicts import Verdict

KINDS = ("bound", "equality", "trend")
SCALES = ("quick", "paper")

PAPERS: dict[str, str] = {
    "fu": "Fu, So & Collier: A Stability Analysis of Fine-Tuning a Pre-Trained Model (003)",
    "ad": "Activation Decay by Loss Smoothing to Enhance Generalization (002)",
    "jachess": "Jukic & Snajder: From Robustness to Improved Generalization and Calibration "
    "in PLMs (000)",
    "uegr": "Sun et al.: Unified Enhancement of Generalization and Robustness of LMs via "
    "Bi-Stage Optimization (001)",
    "soudry": "Soudry et al. (2018): The Implicit Bias of Gradient Descent on Separable Data",
}

# Imported on first use of the registry; a module that does not exist yet is skipped.
CLAIM_MODULES: tuple[str, ...] = (
    "theory.checks_stability",
    "theory.checks_smoothing",
    "theory.checks_masked_gradient",
    "theory.checks_curvature",
    "synthetic.claims",
    "synthetic.claims_smoothing",
    "plm.claims",
    "plm.claims_smoothness",
)


_MEMO: dict[str, Any] = {}  # experiment tables shared by the claims of one process
_FRESH: set[str] = set()  # tables computed (not loaded) in this process: `force` redoes them once


@dataclass(frozen=True)
class CheckContext:
    """What a check may depend on: the seed, the scale, and where to write its outputs."""

    seed: int = 0
    scale: str = "quick"
    out_dir: Path | None = None
    force: bool = False  # recompute cached experiment tables
    progress: bool = False  # progress bars on long work

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale must be one of {SCALES} (got {self.scale!r})")

    def rng(self, claim_id: str) -> np.random.Generator:
        """A generator that depends on the seed and the claim only, not on run order."""
        salt = int.from_bytes(hashlib.sha256(claim_id.encode()).digest()[:8], "little")
        return np.random.default_rng([self.seed, salt])

    def pick(self, quick: Any, paper: Any) -> Any:
        return quick if self.scale == "quick" else paper

    def cached(self, name: str, config: dict[str, Any], compute: Callable[[], Any]) -> Any:
        """The DataFrame ``compute()`` returns for ``config``, cached as parquet under
        ``out_dir/.cache`` by a hash of the config (and the package version), so re-plotting
        never recomputes, and in memory for the claims of one process that share a table;
        ``force`` recomputes."""
        import json

        import pandas as pd

        from theory._meta import version

        blob = json.dumps({"name": name, "config": config, "version": version()}, sort_keys=True,
                          default=str)
        key = hashlib.sha256(blob.encode()).hexdigest()[:16]
        if key in _MEMO and (not self.force or key in _FRESH):
            return _MEMO[key]
        path = self.out_dir / ".cache" / f"{name}-{key}.parquet" if self.out_dir else None
        if path is not None and path.exists() and not self.force:
            _MEMO[key] = pd.read_parquet(path)
            return _MEMO[key]
        df = _MEMO[key] = compute()
        _FRESH.add(key)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            df.to_parquet(path, index=False)
            path.with_suffix(".json").write_text(blob + "\n")
        return df

    def save(
        self, claim_id: str, table: Any = None, figure: Any = None, config: Any = None
    ) -> dict[str, str | None]:
        """Write ``table`` (DataFrame, CSV) and ``figure`` (matplotlib, PNG) as ``<id>.*``, and
        ``<id>.json``: the experiment ``config``, seed, scale and package versions."""
        paths: dict[str, str | None] = {"figure": None, "table": None}
        if self.out_dir is None:
            if figure is not None:
                import matplotlib.pyplot as plt

                plt.close(figure)
            return paths
        self.out_dir.mkdir(parents=True, exist_ok=True)
        import json

        from theory._meta import environment

        meta = {"claim": claim_id, "seed": self.seed, "scale": self.scale, "config": config,
                "environment": environment()}
        (self.out_dir / f"{claim_id}.json").write_text(json.dumps(meta, indent=2, default=str))
        if table is not None:
            p = self.out_dir / f"{claim_id}.csv"
            table.to_csv(p, index=False)
            paths["table"] = p.name
        if figure is not None:
            import matplotlib.pyplot as plt

            p = self.out_dir / f"{claim_id}.png"
            figure.savefig(p, dpi=130, bbox_inches="tight")
            plt.close(figure)
            paths["figure"] = p.name
        return paths


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    where: str
    statement: str
    equation: str
    kind: str
    check: Callable[[CheckContext], Verdict] = field(repr=False, compare=False)
    notes: str = ""

    def describe(self) -> dict[str, str]:
        return {
            "id": self.id,
            "paper": self.paper,
            "paper_title": PAPERS[self.paper],
            "where": self.where,
            "kind": self.kind,
            "statement": self.statement,
            "equation": self.equation,
            "notes": self.notes,
        }


_REGISTRY: dict[str, Claim] = {}
_loaded = False


def claim(
    id: str,
    *,
    paper: str,
    where: str,
    kind: str,
    statement: str,
    equation: str,
    notes: str = "",
) -> Callable[[Callable[[CheckContext], Verdict]], Callable[[CheckContext], Verdict]]:
    """Register the decorated function as the check of claim ``id``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS} (got {kind!r})")
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {sorted(PAPERS)} (got {paper!r})")

    def register(fn: Callable[[CheckContext], Verdict]) -> Callable[[CheckContext], Verdict]:
        if id in _REGISTRY:
            raise ValueError(f"claim id {id!r} is registered twice")
        _REGISTRY[id] = Claim(id, paper, where, statement, equation, kind, fn, notes)
        return fn

    return register


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for name in CLAIM_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real missing dependency inside the module
                raise
    _loaded = True


def registry() -> dict[str, Claim]:
    """All registered claims by id: in ``CLAIM_MODULES`` order, then registration order
    (independent of which module happened to be imported first)."""
    _load()

    def module_rank(c: Claim) -> int:
        mod = c.check.__module__
        return CLAIM_MODULES.index(mod) if mod in CLAIM_MODULES else len(CLAIM_MODULES)

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
        )
        if self.error:
            d["error"] = self.error
        return d


def run(claim_id: str, ctx: CheckContext, *, catch: bool = False) -> Result:
    """Run one claim's check. With ``catch``, a raising check is reported, not re-raised:
    its verdict is ``inconclusive`` and the traceback is kept in ``error``."""
    c = get(claim_id)
    t0 = time.perf_counter()
    try:
        verdict = c.check(ctx)
        err = None
    except Exception as exc:  # noqa: BLE001 - reported in full below
        if not catch:
            raise
        verdict = Verdict("inconclusive", f"the check raised {type(exc).__name__}: {exc}")
        err = traceback.format_exc()
    return Result(c, verdict, time.perf_counter() - t0, ctx.seed, ctx.scale, err)
