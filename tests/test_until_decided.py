"""``plm run --until-decided``: seeds are added until the confidence sequence decides, a killed
run resumes without repeating a finished seed, and the budget counts what was already spent.
The fine-tuning is replaced by a fake runner that writes one cell file per run, as
``run_grid`` does, with a planted effect (the real runner is exercised by test_plm_claims)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from boundbench.framework.stats.stopping import duration_seconds
from boundbench.plm.grid.sequential import run_until_decided


@dataclass(frozen=True)
class FakeGrid:
    methods: tuple[str, ...] = ("finetune", "mhloss")
    seeds: int = 3


class FakeRunner:
    """Cells of (method, seed): accuracy = 0.80 + effect[method] + noise(seed), 10 s each;
    written under ``out/cells`` and read back when present. ``kill_after`` raises
    KeyboardInterrupt after that many fresh cells (a Ctrl-C mid-run)."""

    def __init__(self, effect: dict[str, float], sd: float = 0.01, kill_after: int | None = None):
        self.effect, self.sd, self.kill_after = effect, sd, kill_after
        self.computed: list[tuple[str, int]] = []

    def __call__(self, grid, out, **_):
        cells = Path(out) / "cells"
        cells.mkdir(parents=True, exist_ok=True)
        rows = []
        for m in grid.methods:
            for s in range(grid.seeds):
                path = cells / f"{m}-{s}.json"
                if path.exists():
                    rows.append(json.loads(path.read_text()))
                    continue
                if self.kill_after is not None and len(self.computed) >= self.kill_after:
                    raise KeyboardInterrupt
                rng = np.random.default_rng([s, len(m)])
                acc = 0.80 + self.effect.get(m, 0.0) + self.sd * rng.standard_normal()
                row = dict(method=m, seed=s, level=None, test_accuracy=acc, test_f1=0.8,
                           test_mcc=0.6, seconds=10.0)
                path.write_text(json.dumps(row))
                self.computed.append((m, s))
                rows.append(row)
        return pd.DataFrame(rows)


def test_a_large_effect_stops_early_and_a_nil_one_is_futile(tmp_path):
    # the betting sequence is valid for any accuracy difference in [-1, 1], and pays for it:
    # a 0.3 difference at SD 0.014 decides at about 27 seeds (0.05 would need about 150)
    runner = FakeRunner({"mhloss": 0.3, "mmr": 0.0})
    grid = FakeGrid(methods=("finetune", "mhloss", "mmr"))
    _, table, rec = run_until_decided(grid, tmp_path, max_seeds=40, runner=runner,
                                      progress=False)
    states = rec["comparisons"]
    assert states["mhloss"]["state"] == "higher"
    assert states["mhloss"]["decided_at_seeds"] <= 35
    assert states["mmr"]["state"] == "futile"  # a nil effect, no band: never decidable
    assert rec["seeds"] < 40 and rec["stopped_because"] == "decided or futile"
    assert rec["procedure"].startswith("betting confidence sequence")
    assert set(table.until_decided) == {"higher", "futile"}
    saved = json.loads((tmp_path / "sequential.json").read_text())
    assert saved["seeds"] == rec["seeds"]


def test_a_nil_effect_with_a_band_ends_as_no_effect(tmp_path):
    runner = FakeRunner({"mhloss": 0.0}, sd=0.002)
    _, _, rec = run_until_decided(FakeGrid(), tmp_path, band=0.1, max_seeds=90,
                                  runner=runner, progress=False)
    assert rec["comparisons"]["mhloss"]["state"] == "no-effect"


def test_the_budget_stops_the_run_and_counts_finished_cells(tmp_path):
    """A 0.3-SD effect cannot be decided in 2 minutes of 10-s cells: the run stops for the
    budget (or as futile within it), having spent no more than the budget."""
    runner = FakeRunner({"mhloss": 0.003})
    _, _, rec = run_until_decided(FakeGrid(), tmp_path, budget=120.0, max_seeds=50,
                                  runner=runner, progress=False)
    assert rec["seconds_spent"] <= 120.0
    state = rec["comparisons"]["mhloss"]
    # 120 s buys 6 seeds of two 10-s cells: futile as projected to 6 seeds, at 5 already
    assert state["state"] == "futile" and state["projected_at_seeds"] == 6
    assert rec["seeds"] == 5


def test_a_killed_run_resumes_without_repeating_a_seed(tmp_path):
    first = FakeRunner({"mhloss": 0.3}, kill_after=13)
    with pytest.raises(KeyboardInterrupt):
        run_until_decided(FakeGrid(), tmp_path, max_seeds=30, runner=first, progress=False)
    done = set(first.computed)
    assert len(done) == 13
    again = FakeRunner({"mhloss": 0.3})
    _, _, rec = run_until_decided(FakeGrid(), tmp_path, max_seeds=30, runner=again,
                                  progress=False)
    assert not done & set(again.computed)  # nothing finished is run twice
    # the budget counts what the killed run spent: every cell's seconds, old and new
    assert rec["seconds_spent"] == pytest.approx(10.0 * 2 * rec["seeds"])
    fresh = FakeRunner({"mhloss": 0.3})
    _, _, once = run_until_decided(FakeGrid(), tmp_path / "fresh", max_seeds=30, runner=fresh,
                                   progress=False)
    assert once["comparisons"] == rec["comparisons"]  # the same answer as an unbroken run


@pytest.mark.parametrize("kw,match", [
    (dict(max_seeds=3), "max_seeds must be an integer >= 5"),
    (dict(batch=0), "batch must be an integer >= 1"),
    (dict(budget=-1.0), "budget must be a positive number"),
    (dict(band=0.0), "band must be a positive number"),
])
def test_bad_settings_are_refused_by_name(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        run_until_decided(FakeGrid(), tmp_path, runner=FakeRunner({}), **kw)


def test_one_method_is_refused():
    with pytest.raises(ValueError, match="at least two"):
        run_until_decided(replace(FakeGrid(), methods=("finetune",)), "x",
                          runner=FakeRunner({}))


@pytest.mark.parametrize("text,seconds", [("90m", 5400), ("1h30m", 5400), ("45s", 45),
                                          ("2h", 7200), ("600", 600), ("1.5h", 5400)])
def test_durations(text, seconds):
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "fast", "0", "-5m", "5x", "m"])
def test_bad_durations_are_refused(text):
    with pytest.raises(ValueError, match="budget must be"):
        duration_seconds(text)
