"""Crash-safe results: atomic writes, hash-verified reads that set bad files aside, per-key
locks. Each test fails on a plain read/write of the final name."""

import json
import multiprocessing as mp
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from boundbench.framework import files
from boundbench.framework import registry as claims


def _table(n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"a": np.arange(n, dtype=float), "b": np.arange(n) % 3})


def _ctx(tmp_path: Path) -> claims.CheckContext:
    return claims.CheckContext(out_dir=tmp_path, progress=False)


def test_write_verified_round_trip_and_sidecar(tmp_path):
    p = tmp_path / "t.parquet"
    files.write_verified(p, lambda t: _table().to_parquet(t))
    assert (tmp_path / "t.parquet.sha256").read_text().split()[0] == files.sha256_file(p)
    pd.testing.assert_frame_equal(files.read_verified(p, pd.read_parquet), _table())
    assert not list(tmp_path.glob(".*tmp*"))  # no temporary left behind


@pytest.mark.parametrize("damage", ["truncate", "edit", "no-sidecar"])
def test_a_bad_cache_entry_is_named_set_aside_and_recomputed(tmp_path, damage):
    calls = []

    def compute():
        calls.append(1)
        return _table()

    _ctx(tmp_path).cached("demo", {"x": 1}, compute)
    (path,) = (tmp_path / ".cache").glob("demo-*.parquet")
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "edit":  # a valid parquet with other content (one column x 1000)
        pd.DataFrame({"a": np.zeros(1000)}).to_parquet(path)
    else:
        path.with_name(path.name + ".sha256").unlink()
    with pytest.warns(UserWarning, match=path.name):
        df = _ctx(tmp_path).cached("demo", {"x": 1}, compute)
    pd.testing.assert_frame_equal(df, _table())
    assert len(calls) == 2
    assert list((tmp_path / ".cache").glob("demo-*.parquet.bad-*"))
    # and the recomputed entry now reads back without recomputing
    _ctx(tmp_path).cached("demo", {"x": 1}, compute)
    assert len(calls) == 2


def test_read_json_rejects_empty_and_truncated_cells(tmp_path):
    cell = tmp_path / "cell.json"
    files.write_json(cell, {})
    with pytest.warns(UserWarning, match=r"cell\.json.*missing keys"):
        assert files.read_json(cell, required=("method", "seed")) is None
    files.write_json(cell, {"method": "finetune", "seed": 0})
    cell.write_text(cell.read_text()[:10])  # a kill mid-write without the atomic rename
    with pytest.warns(UserWarning, match=r"cell\.json.*sha256"):
        assert files.read_json(cell, required=("method", "seed")) is None
    files.write_json(cell, {"method": "finetune", "seed": 0})
    assert files.read_json(cell, required=("method", "seed")) == {"method": "finetune", "seed": 0}


def test_a_cell_without_the_cell_keys_is_set_aside(tmp_path):
    """A `{}` cell (or a truncated one) is named and re-run, never a silent NaN row."""
    from boundbench.plm import experiments

    cells = tmp_path / "cells"
    cells.mkdir()
    (cells / "x.json").write_text("{}")
    with pytest.warns(UserWarning, match="x.json"):
        assert files.read_json(cells / "x.json", required=experiments.CELL_KEYS) is None
    assert not (cells / "x.json").exists()


def _compute_once(out: str, log: str) -> None:
    ctx = claims.CheckContext(out_dir=Path(out), progress=False)

    def compute():
        with open(log, "a") as f:
            f.write("computed\n")
        time.sleep(0.5)
        return _table()

    ctx.cached("race", {"x": 1}, compute)


def test_two_processes_never_compute_one_entry_at_once(tmp_path):
    log = tmp_path / "log.txt"
    procs = [mp.get_context("spawn").Process(target=_compute_once, args=(str(tmp_path), str(log)))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert log.read_text().count("computed") == 1


def test_surt_stage_without_its_manifest_is_set_aside(tmp_path):
    pytest.importorskip("transformers")
    from boundbench.plm import surt

    stage = tmp_path / "abc"
    stage.mkdir()
    (stage / "config.json").write_text(json.dumps({}))  # what a save killed between its steps leaves
    with pytest.warns(UserWarning, match="SURT"):
        assert not surt._verified(stage)
    assert not stage.exists()


def test_temporaries_of_dead_writers_are_swept(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / ".cache" / f".table-abc.{dead}.tmp.parquet"
    live = tmp_path / f".fig.{os.getpid()}.tmp.png"
    stale.parent.mkdir()
    stale.write_bytes(b"half")
    live.write_bytes(b"being written")
    assert files.sweep_temporaries(tmp_path) == 1
    assert not stale.exists() and live.exists()


def test_set_aside_copies_do_not_pile_up(tmp_path):
    """Five corrupt versions of one file leave only the newest KEEP_BAD set-aside copies, and
    the warning says where they are."""
    from boundbench.framework.files import KEEP_BAD, set_aside

    f = tmp_path / "table.parquet"
    for i in range(5):
        f.write_text(f"corrupt {i}")
        with pytest.warns(UserWarning, match=str(tmp_path)):
            set_aside(f, "corrupt")
    left = sorted(tmp_path.glob("table.parquet.bad-*"))
    assert len(left) == KEEP_BAD
    assert {p.read_text() for p in left} == {"corrupt 2", "corrupt 3", "corrupt 4"}
