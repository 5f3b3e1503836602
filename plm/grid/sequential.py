"""Fine-tuning until the comparison is decided: a grid gains paired seeds until the
anytime-valid confidence sequence of every method against the baseline decides (higher,
lower, or inside the no-effect band), a futility rule shows the seeds or the time left cannot,
or the budget is spent (``boundbench plm run --until-decided``).

The cells of every seed are kept in the run's folder, so a killed run resumes without
repeating a finished seed; the budget counts the seconds its finished cells already took."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.files.atomic import write_json
from boundbench.framework.stats.decisions.paths import bounded_mean_path, metric_range
from boundbench.framework.stats.sequential import t_confidence_sequence
from boundbench.framework.stats.stopping import first_decision, futile
from boundbench.plm.grid.comparison import comparison
from boundbench.plm.grid.results import paired

PROJECTION_SEED = 0  # the continuations behind futility: the same on every machine
FIRST_SEEDS = 5  # Lai's sequence is unbounded before 5 paired seeds (rho = 1, alpha = 0.05)


def _status(diff: np.ndarray, *, band: float | None, n_max: int,
            bounds: tuple[float, float] | None = None) -> tuple[str, dict[str, Any]]:
    """One comparison's state: decided (``higher``, ``lower``, ``no-effect``, and at how many
    seeds), ``futile`` or ``open``. ``bounds``: the metric's range, where it is known: then the
    betting sequence (valid for any data in the range), else Lai's t sequence (Gaussian
    differences assumed, said in the record)."""
    if len(diff) < 2:
        return "open", {"paired_seeds": len(diff)}
    if bounds is not None:  # valid by construction for a bounded metric (issue 82)
        cs = bounded_mean_path(diff, lower=bounds[0] - bounds[1], upper=bounds[1] - bounds[0])
    else:
        cs = t_confidence_sequence(diff)
    decision, at = first_decision(cs.low, cs.high, null=0.0, expected="increase", band=band)
    info: dict[str, Any] = {"paired_seeds": len(diff), "cs_low": float(cs.low[-1]),
                            "cs_high": float(cs.high[-1]), "mean_difference": float(diff.mean())}
    if decision is not None:
        word = {"supported": "higher", "contradicted": "lower"}.get(decision, decision)
        return word, {**info, "decided_at_seeds": at}
    sd = float(np.std(diff, ddof=1))
    if bounds is not None:  # the betting sequence's own projection: resampled continuations
        from boundbench.framework.stats.decisions.probes import mean_probe

        k = mean_probe(diff, lower=bounds[0] - bounds[1], upper=bounds[1] - bounds[0],
                       expected="increase", band=band, what="", seed=PROJECTION_SEED
                       )["projected_seeds"]
        info["seeds_needed"] = k  # None: more than the projection's cap
        if n_max > len(diff) and k is not None and k <= n_max:
            return "open", info
        return "futile", {**info, "projected_at_seeds": n_max}
    if n_max > len(diff) and sd > 0 and not futile(
            n=len(diff), n_max=n_max, estimate=float(diff.mean()), spread=sd, null=0.0,
            kind="mean", band=band):
        return "open", info
    if sd == 0 and n_max > len(diff):
        return "open", info
    return "futile", {**info, "projected_at_seeds": n_max}


def run_until_decided(grid, out: str | Path, *, metric: str = "test_accuracy",
                      band: float | None = None, max_seeds: int = 50,
                      budget: float | None = None, batch: int = 1, progress: bool = True,
                      workers: int | None = None, scheduler: str | None = None,
                      runner=None) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Run ``grid`` with ``max(grid.seeds, 5)`` seeds, then add ``batch`` seeds at a time until
    every method's paired difference in ``metric`` against the first method is decided by its
    confidence sequence, or is futile within ``max_seeds`` seeds and the ``budget`` (seconds of
    fine-tuning, counted from the cells' own times, so a resumed run counts what it already
    spent). Returns the results, the comparison table (:func:`plm.comparison.comparison`) and the
    stopping record, also written as ``sequential.json`` in ``out``."""
    from boundbench.plm.grid.cells import run_grid

    runner = runner or run_grid
    if not isinstance(max_seeds, int) or isinstance(max_seeds, bool) or max_seeds < FIRST_SEEDS:
        raise InvalidArgument(f"max_seeds must be an integer >= {FIRST_SEEDS} (got {max_seeds!r})")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise InvalidArgument(f"batch must be an integer >= 1 (got {batch!r})")
    if budget is not None and not (isinstance(budget, int | float) and budget > 0
                                   and math.isfinite(budget)):
        raise InvalidArgument(f"budget must be a positive number of seconds (got {budget!r})")
    if band is not None and not (isinstance(band, int | float) and band > 0):
        raise InvalidArgument(f"band must be a positive number (got {band!r})")
    methods = [m.name if hasattr(m, "name") else str(m) for m in grid.methods]
    if len(methods) < 2:
        raise InvalidArgument("until-decided compares methods: give at least two (the first is the "
                              f"baseline; got {methods})")
    out = Path(out)
    k = min(max(grid.seeds, FIRST_SEEDS), max_seeds)
    started = time.time()
    history = []
    while True:
        df = runner(replace(grid, seeds=k), out, progress=progress, workers=workers,
                    scheduler=scheduler)
        if metric not in df.columns:
            raise InvalidArgument(f"metric must be a column of the results (got {metric!r})")
        labels = list(dict.fromkeys(df.method))
        spent = float(df.seconds.sum())
        per_seed = spent / max(1, df.seed.nunique())
        left = None if budget is None else budget - spent
        affordable = max_seeds if left is None else k + max(0, int(left // max(per_seed, 1e-9)))
        n_max = min(max_seeds, affordable)
        states = {m: _status(paired(df, metric, m, labels[0]), band=band, n_max=n_max,
                             bounds=metric_range(metric)) for m in labels[1:]}
        history.append({"seeds": k, "seconds_spent": spent,
                        "states": {m: s for m, (s, _) in states.items()}})
        if all(s != "open" for s, _ in states.values()) or k >= n_max:
            break
        k = min(k + batch, n_max)
    reason = ("every comparison decided" if all(s in ("higher", "lower", "no-effect")
                                                 for s, _ in states.values())
              else "decided or futile" if all(s != "open" for s, _ in states.values())
              else f"the maximum of {max_seeds} seeds" if k >= max_seeds
              else "the budget")
    table = comparison(df, metric=metric)
    table["until_decided"] = [states.get(m, ("", {}))[0] for m in table.method]
    record = {"metric": metric, "baseline": labels[0], "band": band, "max_seeds": max_seeds,
              "procedure": ("betting confidence sequence (Waudby-Smith & Ramdas 2024), valid for "
                            f"any paired difference in its range {metric_range(metric)}"
                            if metric_range(metric) else "Lai's t confidence sequence "
                            "(assumes Gaussian paired differences: the metric's range is "
                            "unknown)"),
              "budget_seconds": budget, "seeds": k, "seconds_spent": spent,
              "wall_seconds_this_run": time.time() - started, "stopped_because": reason,
              "comparisons": {m: {"state": s, **info} for m, (s, info) in states.items()},
              "history": history}
    write_json(out / "sequential.json", record)
    return df, table, record
