"""Fine-tuning verdicts read off procedures valid by construction (issue 82,
:mod:`boundbench.framework.stats.decisions`), and what a seed of a grid costs (the seconds a budget
allocates by, the device that measured them)."""

from __future__ import annotations

import pandas as pd

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.stats.bands import Band
from boundbench.framework.verdicts.rules import Verdict

__all__ = ["bounded_verdict", "projection_seed", "seconds_per_seed", "trained_on"]


def projection_seed(ctx: CheckContext, what: str) -> int:
    """The seed of a probe's projection (its resampled continuations), drawn from the claim's."""
    return int(ctx.rng(f"projection {what}").integers(2**31))


def bounded_verdict(ctx: CheckContext, probes: list[dict], df: pd.DataFrame, *, what: str,
                    evidence: dict, grid_key: str | None, band: Band | None) -> Verdict:
    """A verdict read off probes decided by procedures valid by construction (issue 82), in a
    fixed and a budgeted audit alike (every look keeps the error at alpha, so the seeds a later
    run adds continue the same sequence): :func:`sequential_verdict`'s words, each probe's
    procedure, validity condition and projection in the evidence."""
    from boundbench.framework.stats.stopping import sequential_verdict

    ev = {**evidence, "procedure": "; ".join(dict.fromkeys(p["procedure"] for p in probes)),
          "validity": "; ".join(dict.fromkeys(p["validity"] for p in probes)),
          "calibration_not_applicable": "valid by construction: the error is at most 5% for "
          "any data meeting the validity condition, at any look (measured on six null families "
          "in benchmarks/bench_decisions.py)"}
    if band is not None:
        ev["band"] = band.to_dict()
    if "machine" in df.columns:  # continued from the seed records (issue 85): where seeds came from
        ev["seeds_by_machine"] = {str(k): int(v) for k, v in
                                  df.groupby("machine").seed.nunique().items()}
        if "recorded" in df.columns:
            ev["seeds_from_record"] = int(df[df.recorded.astype(bool)].seed.nunique())
    p0 = probes[0]
    ev.update(ci_low=p0["cs_low"], ci_high=p0["cs_high"])
    ev["mean_difference" if p0["kind"] == "mean" else "std_ratio"] = p0["estimate"]
    need = [p.get("projected_seeds") for p in probes if not p["decision"]]
    known = [int(k) for k in need if k is not None]
    # the claim needs every open probe decided: the most any needs (None: one is past the cap)
    ev["seeds_needed"] = max(known) if known and len(known) == len(need) else None
    reach = next((p["reach"] for p in probes if not p["decision"] and p.get("reach")), None)
    if reach is not None:  # the smallest effect it detects, under the worst noise shape
        ev.update(min_detectable_effect=reach["effect"], min_detectable_units=reach["units"],
                  min_detectable_under=reach["under"],
                  min_detectable_by_family=reach["by_family"])
    return sequential_verdict(probes, what=what, evidence=ev,
                              seconds_per_seed=seconds_per_seed(df),
                              grid_seeds=int(df.seed.nunique()), grid_key=grid_key,
                              device=trained_on(df))


def seconds_per_seed(df: pd.DataFrame) -> float:
    """The fine-tuning seconds one more seed of this grid costs: every run's time over the
    seeds (what a budgeted audit allocates by)."""
    if "seconds" not in df.columns or df.seed.nunique() == 0:
        return float("nan")
    return float(df.seconds.sum() / df.seed.nunique())


def trained_on(df: pd.DataFrame) -> str | None:
    """The device type the grid's runs trained on (``"cuda"``, ``"cpu"``), what its seconds a
    seed were measured on; ``None`` where the runs do not say or used several."""
    if "device" not in df.columns or df.empty:
        return None
    kinds = {str(d).split(":")[0] for d in df.device.dropna()}
    return kinds.pop() if len(kinds) == 1 else None
