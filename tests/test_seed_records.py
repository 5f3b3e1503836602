"""Issue 85 item 2: the fine-tuning claims' per-seed records. A grid continued from the record
over two runs is the grid of one run (its table, and the betting sequence read off it), a
record of another config is not taken, and the record says where each run trained."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from boundbench.framework.execution.context import CheckContext
from boundbench.framework.stats.decisions.paths import bounded_mean_path
from boundbench.plm.grid import cells, records


def _value(*key) -> float:
    h = hashlib.sha256(repr(key).encode()).digest()
    return 0.7 + 0.2 * int.from_bytes(h[:4], "little") / 2**32


@pytest.fixture
def fake_training(monkeypatch):
    """``run_grid`` as a deterministic function of (method, seed): what a seed's run gives on
    any machine, alone or beside others (tests/test_batched_seeds.py checks that of the real
    one); the seeds each call was asked for."""
    asked: list[list[int]] = []

    def run_grid(grid, out, progress=True, **kw):
        from boundbench.plm.grid.experiments import method_labels

        seeds = list(grid.run_seeds())
        asked.append(seeds)
        rows = [{"method": m, "level": None, "seed": s, "task": grid.task,
                 "test_accuracy": _value(m, s), "test_f1": _value(m, s, "f1"),
                 "seconds": 1.5, "device": "cpu"}
                for m in method_labels(grid.methods) for s in seeds]
        return pd.DataFrame(rows)

    monkeypatch.setattr(cells, "run_grid", run_grid)
    return asked


def _grid_table(folder, seeds, claim="fu.plm.mhloss-std"):
    from boundbench.papers.fu.plm_stability import _grid
    from boundbench.papers.shared.fine_tuning import cached_grid

    ctx = CheckContext(scale="standard", seeds=seeds, seed_records=folder, claim_id=claim)
    grid = _grid(ctx, ("finetune", "mhloss"))
    return cached_grid(ctx, grid), grid


def _diffs(df):
    t = df[df.method == "mhloss"].sort_values("seed").test_accuracy.to_numpy()
    c = df[df.method == "finetune"].sort_values("seed").test_accuracy.to_numpy()
    return t - c


def test_a_sequence_split_over_two_runs_equals_one_run(tmp_path, fake_training):
    whole, grid = _grid_table(tmp_path / "one", 8)
    assert fake_training == [list(range(8))]
    first, _ = _grid_table(tmp_path / "two", 4)
    later, _ = _grid_table(tmp_path / "two", 8)
    assert fake_training[1:] == [list(range(4)), list(range(4, 8))]  # the record's 4 not again
    cols = ["method", "seed", "test_accuracy", "test_f1"]
    key = ["method", "seed"]
    pd.testing.assert_frame_equal(whole[cols].sort_values(key).reset_index(drop=True),
                                  later[cols].sort_values(key).reset_index(drop=True))
    a = bounded_mean_path(_diffs(whole), lower=-1.0, upper=1.0)
    b = bounded_mean_path(_diffs(later), lower=-1.0, upper=1.0)
    assert np.array_equal(a.low, b.low) and np.array_equal(a.high, b.high)
    rec = records.read_record(records.record_path(tmp_path / "two", "fu.plm.mhloss-std"))
    assert len(rec) == 16 and set(rec.config_hash) == {grid.key(seeds=False)}
    assert rec.machine.notna().all() and {"commit", "seconds", "device"} <= set(rec.columns)
    assert later.recorded.sum() == 8 and (~later.recorded).sum() == 8


def test_a_record_of_another_config_is_not_taken(tmp_path, fake_training):
    folder = tmp_path / "r"
    _grid_table(folder, 4)
    path = records.record_path(folder, "fu.plm.mhloss-std")
    rec = pd.read_csv(path)
    rec["config_hash"] = "another"
    rec.to_csv(path, index=False)
    _grid_table(folder, 4)
    assert fake_training == [list(range(4)), list(range(4))]  # trained again: not its config


def test_a_gap_in_the_record_is_trained_from_the_gap():
    rec = pd.DataFrame({"config_hash": "k", "method": ["a", "a", "b", "b", "a"],
                        "level": np.nan, "seed": [0, 1, 0, 1, 3], "machine": "x",
                        "commit": "c", "test_accuracy": 0.5})
    taken, k = records.recorded_prefix(rec, config_hash="k", methods=["a", "b"], levels=[None],
                                       first_seed=0, seeds=6)
    assert k == 2 and sorted(taken.seed) == [0, 0, 1, 1]
    assert records.recorded_prefix(rec, config_hash="k", methods=["a", "b"], levels=[None],
                                   first_seed=1, seeds=6)[1] == 1


def test_a_run_trained_again_with_other_numbers_keeps_the_record_and_says_so(tmp_path):
    path = tmp_path / "x.csv"
    runs = pd.DataFrame({"method": ["a"], "level": [None], "seed": [0], "test_accuracy": [0.5]})
    records.append_runs(path, runs, config_hash="k", machine="cpu", commit="c")
    with pytest.warns(UserWarning, match="trained again gave other numbers"):
        out = records.append_runs(path, runs.assign(test_accuracy=0.6), config_hash="k",
                                  machine="gpu", commit="d")
    assert out.test_accuracy.tolist() == [0.5] and out.machine.tolist() == ["cpu"]


def test_the_verdict_says_how_many_seeds_came_from_the_record_and_from_where(tmp_path,
                                                                           fake_training):
    from boundbench.framework.stats.decisions.probes import mean_probe
    from boundbench.papers.shared.bounded import bounded_verdict

    _grid_table(tmp_path / "r", 4)
    df, _ = _grid_table(tmp_path / "r", 6)
    p = mean_probe(_diffs(df), lower=-1.0, upper=1.0, expected="increase", band=None,
                   what="accuracy", seed=0)
    v = bounded_verdict(CheckContext(claim_id="x.plm.y"), [p], df, what="accuracy",
                        evidence={}, grid_key=None, band=None)
    assert v.evidence["seeds_from_record"] == 4
    assert sum(v.evidence["seeds_by_machine"].values()) == 6
