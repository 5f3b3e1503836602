"""Committed per-seed records of the fine-tuning claims (issue 85 item 2): every run a claim's
grid trains, kept in ``<folder>/<claim>.csv`` (``docs/seeds/`` in the repository), so that a
later audit on any machine continues the claim's sequence from the seeds already recorded
instead of training them again.

A row is one run: the grid's results columns (``method``, ``level``, ``seed``, the metrics,
``seconds``, ``device``) with ``config_hash`` (the grid's key without its seed count and first
seed, :meth:`~boundbench.plm.grid.experiments.StabilityGrid.key`), ``machine`` (the CPU or GPU
it trained on) and ``commit``. Runs enter a grid only where their ``config_hash`` is the grid's:
the same model, task, sizes, methods and optimizer, whatever machine trained them (the record
says which, and the evidence counts seeds by machine). A grid takes the recorded seeds from its
first seed on, as far as every method and level has them without a gap, and trains the rest:
the sequences its procedures read (:mod:`boundbench.framework.stats.decisions`, valid at any look)
are then the same whether the seeds came in one run or several.

The file is rewritten whole, atomically, on every append; a run already recorded (the same
config, method, level and seed) is kept as it was (one trained again whose numbers differ, on
another machine, is named in a warning): the record holds one value per run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from boundbench.errors import InvalidArgument

__all__ = ["KEY", "append_runs", "machine_name", "recorded_prefix", "record_path", "read_record"]

KEY = ("config_hash", "method", "level", "seed")  # one row per run


def record_path(folder: str | Path, claim_id: str) -> Path:
    """``<folder>/<claim_id>.csv``."""
    from boundbench.framework.files.escape import safe_name

    return Path(folder) / f"{safe_name(claim_id, what='a claim id')}.csv"


def machine_name() -> str:
    """The device a run trains on, in words: the first GPU torch sees, else the CPU's model, as
    the results' machine record names them (:func:`boundbench.framework.files.meta.machine`)."""
    import torch  # noqa: F401 (meta.gpus reads the devices of an imported torch)

    from boundbench.framework.files.meta import machine

    m = machine()
    gpus = m.get("gpus")
    if isinstance(gpus, list) and gpus:
        return str(gpus[0])
    return str(m.get("cpu_model") or m.get("processor") or m.get("machine") or "unknown")


def read_record(path: str | Path) -> pd.DataFrame:
    """The record at ``path`` (an empty table where there is none yet), its key columns
    checked."""
    path = Path(path)
    if not path.exists():
        return pd.DataFrame(columns=[*KEY, "machine", "commit"])
    try:
        df = pd.read_csv(path, keep_default_na=True)
    except (ValueError, pd.errors.ParserError) as exc:
        raise InvalidArgument(f"seed record {str(path)!r} is not a CSV ({exc})") from None
    missing = [c for c in (*KEY, "machine", "commit") if c not in df.columns]
    if missing:
        raise InvalidArgument(f"seed record {str(path)!r} has no column {missing[0]!r} (a record "
                              f"has {', '.join((*KEY, 'machine', 'commit'))} and the metrics)")
    df["config_hash"] = df["config_hash"].astype(str)
    return df


def _level(df: pd.DataFrame) -> pd.DataFrame:
    # a grid that varies nothing has no level: recorded as empty, read back as NaN
    out = df.copy()
    if "level" not in out.columns:
        out["level"] = np.nan
    out["level"] = pd.to_numeric(out["level"], errors="coerce")
    return out


def recorded_prefix(record: pd.DataFrame, *, config_hash: str, methods: list[str],
                    levels: list, first_seed: int, seeds: int) -> tuple[pd.DataFrame, int]:
    """The recorded runs a grid takes: its config's rows of seeds ``first_seed, first_seed + 1,
    ...`` as far as every (method, level) has each, at most ``seeds`` of them; and how many seeds
    that is (the grid trains the rest, from ``first_seed`` plus that)."""
    rows = _level(record[record["config_hash"].astype(str) == str(config_hash)])
    have = set(zip(rows["method"], rows["level"].fillna(-1.0), rows["seed"].astype(int),
                   strict=True))
    want = [(m, -1.0 if lv is None else float(lv)) for m in methods for lv in levels]
    k = 0
    while k < seeds and all((m, lv, first_seed + k) in have for m, lv in want):
        k += 1
    taken = rows[rows["seed"].astype(int).between(first_seed, first_seed + k - 1)]
    return taken.drop(columns=["config_hash"]).reset_index(drop=True), k


def append_runs(path: str | Path, runs: pd.DataFrame, *, config_hash: str, machine: str,
                commit: str | None) -> pd.DataFrame:
    """Add ``runs`` (a grid's results rows) to the record at ``path`` under ``config_hash``;
    runs already there are kept, one whose metrics differ from the record's is refused by name.
    The record after it."""
    from boundbench.framework.files.atomic import write_atomic

    path = Path(path)
    old = _level(read_record(path))
    new = _level(runs).assign(config_hash=str(config_hash), machine=machine, commit=commit or "")
    merged = pd.concat([old, new], ignore_index=True)
    dup = merged.duplicated(list(KEY), keep=False)
    if dup.any():
        metrics = [c for c in runs.columns if c not in (*KEY, "seconds", "device", "machine",
                                                          "commit")
                   and pd.api.types.is_numeric_dtype(runs[c])]
        clash = merged[dup].groupby(list(KEY), dropna=False)[metrics].nunique(dropna=False)
        bad = clash[(clash > 1).any(axis=1)]
        if not bad.empty:  # trained twice (another machine's float order): the first is kept
            import warnings

            key = dict(zip(KEY, bad.index[0], strict=True))
            warnings.warn(f"seed record {str(path)!r}: {len(bad)} run(s) trained again gave other "
                          f"numbers (first: {key}); the recorded ones are kept", stacklevel=2)
        merged = merged.drop_duplicates(list(KEY), keep="first")
    merged = merged.sort_values(["config_hash", "method", "level", "seed"], kind="stable")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = merged.to_csv(index=False)
    write_atomic(path, lambda t: t.write_text(text))
    return merged.reset_index(drop=True)
