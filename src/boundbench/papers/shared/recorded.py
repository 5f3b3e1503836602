"""A fine-tuning grid continued from the committed per-seed records (issue 85 item 2,
:mod:`boundbench.plm.grid.records`): the seeds recorded for its config are read, the rest
trained and recorded."""

from __future__ import annotations

import pandas as pd

from boundbench.errors import InvalidArgument
from boundbench.framework.execution.context import CheckContext

__all__ = ["recorded_grid"]


def recorded_grid(ctx: CheckContext, grid, train) -> pd.DataFrame:
    """``grid``'s results with the seeds recorded in ``ctx.seed_records`` for its config taken
    from the record and the rest trained by ``train(grid)`` (a grid of the seeds left) and
    added to it (:mod:`boundbench.plm.grid.records`, issue 85): the same table whether its seeds
    came in one run or several. Its rows say where each came from (``machine``,
    ``recorded``)."""
    from dataclasses import replace

    from boundbench.framework.files.meta import commit
    from boundbench.plm.grid import records
    from boundbench.plm.grid.experiments import method_labels

    if ctx.seed_records is None:
        raise InvalidArgument("recorded_grid needs ctx.seed_records, the records' folder")
    path = records.record_path(ctx.seed_records, ctx.claim_id)
    labels = list(method_labels(grid.methods))
    levels = list(grid.levels) if grid.vary else [None]
    have, k = records.recorded_prefix(records.read_record(path), config_hash=grid.key(seeds=False),
                                      methods=labels, levels=levels,
                                      first_seed=grid.first_seed, seeds=grid.seeds)
    parts = [have.assign(recorded=True)] if k else []
    if k < grid.seeds:
        rest = train(replace(grid, first_seed=grid.first_seed + k, seeds=grid.seeds - k))
        here = records.machine_name()
        records.append_runs(path, rest, config_hash=grid.key(seeds=False), machine=here,
                            commit=commit())
        parts.append(rest.assign(machine=here, recorded=False))
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values(["method", "level", "seed"], kind="stable").reset_index(drop=True)
