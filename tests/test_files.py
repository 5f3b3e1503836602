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

from boundbench.framework.claims import registry as claims
from boundbench.framework.files import atomic as files


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
    from boundbench.plm.grid.cells import CELL_KEYS

    cells = tmp_path / "cells"
    cells.mkdir()
    (cells / "x.json").write_text("{}")
    with pytest.warns(UserWarning, match="x.json"):
        assert files.read_json(cells / "x.json", required=CELL_KEYS) is None
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


def _hold_many(lock: str, marker: str, plain_flock: bool, result) -> None:
    import contextlib
    import fcntl

    overlaps = 0
    for _ in range(200):
        if plain_flock:  # the control: flock, then unlink, with no check of the inode
            fd0 = os.open(lock, os.O_CREAT | os.O_RDWR)
            fcntl.flock(fd0, fcntl.LOCK_EX)
            held = contextlib.nullcontext()
        else:
            held = files.key_lock(Path(lock[: -len(".lock")]))
            held.__enter__()
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            overlaps += 1
        time.sleep(0.0005)
        Path(marker).unlink(missing_ok=True)
        if plain_flock:
            Path(lock).unlink(missing_ok=True)
            os.close(fd0)
        else:
            held.__exit__(None, None, None)
    result.put(overlaps)


@pytest.mark.parametrize("plain_flock", [False, True], ids=["key_lock", "control"])
def test_a_lock_removed_on_release_still_excludes(tmp_path, plain_flock):
    """key_lock removes its lock file on release (no zero-byte *.lock left in --out); 4
    processes x 200 holds never overlap. The control, a flock that unlinks without re-checking
    the inode, lets two holders in: the test can fail."""
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    lock, marker = str(tmp_path / "entry.lock"), str(tmp_path / "held")
    procs = [ctx.Process(target=_hold_many, args=(lock, marker, plain_flock, result))
             for _ in range(4)]
    for p in procs:
        p.start()
    overlaps = sum(result.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(60)
    assert (overlaps > 0) if plain_flock else (overlaps == 0)
    assert not list(tmp_path.glob("*.lock"))


def test_no_lock_file_stays_after_a_cached_entry(tmp_path):
    _ctx(tmp_path).cached("t", {"x": 1}, _table)
    assert not list(tmp_path.rglob("*.lock"))
    # an older version's lock files are swept at the next run; a held one stays
    (tmp_path / ".cache").mkdir(exist_ok=True)
    old, held = tmp_path / ".cache" / "a.parquet.lock", tmp_path / "b.json"
    old.touch()
    with files.key_lock(held):
        assert files.sweep_temporaries(tmp_path) == 1
        assert not old.exists() and (tmp_path / "b.json.lock").exists()


def test_surt_stage_without_its_manifest_is_set_aside(tmp_path):
    pytest.importorskip("transformers")
    from boundbench.plm.methods import surt

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
    from boundbench.framework.files.atomic import KEEP_BAD, set_aside

    f = tmp_path / "table.parquet"
    for i in range(5):
        f.write_text(f"corrupt {i}")
        with pytest.warns(UserWarning, match=str(tmp_path)):
            set_aside(f, "corrupt")
    left = sorted(tmp_path.glob("table.parquet.bad-*"))
    assert len(left) == KEEP_BAD
    assert {p.read_text() for p in left} == {"corrupt 2", "corrupt 3", "corrupt 4"}


def test_a_link_planted_at_a_guessable_temporary_name_is_not_followed(tmp_path):
    """Issue 41: links at every name the old ``.<stem>.<pid>.tmp<suffix>`` scheme could use
    (this pid and the next thousand) redirect nothing: the temporary's name is unpredictable and
    created exclusively, and a link at the final name is replaced, not followed."""
    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious")
    for pid in range(os.getpid(), os.getpid() + 1000):
        (out / f".ad.thm2.{pid}.tmp.json").symlink_to(victim)
    files.write_atomic(out / "ad.thm2.json", lambda t: t.write_text("{}"))
    assert victim.read_text() == "precious" and (out / "ad.thm2.json").read_text() == "{}"
    (out / "fig.png").symlink_to(victim)
    files.write_atomic(out / "fig.png", lambda t: t.write_bytes(b"png"))
    assert victim.read_text() == "precious" and not (out / "fig.png").is_symlink()
    # no temporary is left behind, and the planted links are not ours to sweep
    assert not [p for p in out.iterdir() if p.is_dir()]


def test_temporary_folders_of_dead_writers_are_swept(tmp_path):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    box = tmp_path / f".table.{dead}.tmpab12cd"
    box.mkdir()
    (box / ".table.tmp.parquet").write_bytes(b"half")
    assert files.sweep_temporaries(tmp_path) == 1 and not box.exists()


def test_a_cache_that_links_outside_the_folder_is_refused_by_name(tmp_path):
    from boundbench.framework.execution.context import CheckContext

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / ".cache").symlink_to(elsewhere)
    ctx = CheckContext(out_dir=out)
    with pytest.raises(ValueError, match=r"\.cache .* outside the output folder"):
        ctx.cached("t", {"a": 1}, lambda: pytest.fail("computed"))
    assert list(elsewhere.iterdir()) == []
    with pytest.raises(ValueError, match="outside the output folder"):
        files.within(out, "../secret.csv", what="table")
    assert files.within(out, "a/b.csv") == (out / "a" / "b.csv").resolve()


def test_cli_refuses_an_out_whose_cache_leaves_it(tmp_path):
    import subprocess
    import sys

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / ".cache").symlink_to(elsewhere)
    res = subprocess.run([sys.executable, "-m", "boundbench.cli", "check", "fu.lemma-a.1.2",
                          "--out", str(out)], capture_output=True, text=True)
    assert res.returncode == 2 and "--out" in res.stderr and ".cache" in res.stderr
    assert len(res.stderr.strip().splitlines()) <= 2
    assert list(elsewhere.iterdir()) == []


def test_errata_reads_no_table_outside_the_folder(tmp_path):
    from boundbench.audit import run_audit
    from boundbench.report import errata

    out = tmp_path / "out"
    run_audit(out_dir=out, only=["fu.lemma-a.1.2"], progress=False)
    secret = tmp_path / "secret.csv"
    secret.write_text("lhs,rhs\n42,1\n")
    report = json.loads((out / "audit.json").read_text())
    report["claims"][0]["table"] = "../secret.csv"
    report["claims"][0]["verdict"] = "violated"
    (out / "audit.json").write_text(json.dumps(report))
    # a path that leaves the folder is no plain name: the report is refused as it is read
    with pytest.raises(ValueError, match="its table must be a plain file name"):
        errata.write(out)
    # a plain name that is a link out of the folder: refused where the table is read
    (out / "link.csv").symlink_to(secret)
    report["claims"][0]["table"] = "link.csv"
    (out / "audit.json").write_text(json.dumps(report))
    with pytest.raises(ValueError, match="outside the output folder"):
        errata.write(out)


def _partial_audit(out, cid, signals, role):
    """A partial audit of ``cid``. As ``"a"`` its merge is held up after reading the old report:
    it touches ``a-has-read``, waits for the other audit to reach the report lock, then gives it
    up to 3 s to finish (without the lock it does, and its claim would be lost when A writes).
    As ``"b"`` it touches ``b-at-lock`` on reaching the lock and ``b-done`` when written."""
    from boundbench import audit

    signals = Path(signals)

    def wait_for(name, seconds):
        t0 = time.time()
        while not (signals / name).exists() and time.time() - t0 < seconds:
            time.sleep(0.05)

    if role == "a":
        read = audit._previous_report

        def slow(folder):
            rep = read(folder)
            (signals / "a-has-read").touch()
            wait_for("b-at-lock", 120)
            wait_for("b-done", 3)
            return rep

        audit._previous_report = slow
    else:
        write = audit._write_report

        def announced(*args, **kwargs):
            (signals / "b-at-lock").touch()  # the report lock is taken first thing in there
            return write(*args, **kwargs)

        audit._write_report = announced
    audit.run_audit(out_dir=out, only=[cid], progress=False)
    if role == "b":
        (signals / "b-done").touch()


def test_two_partial_audits_that_finish_together_keep_both_claims(tmp_path):
    """Issue 41: the read-merge-write of audit.json is under the folder's report lock. A has
    read the old report and merges slowly; B starts then and finishes meanwhile; without the
    lock one claim vanished from the report (this test fails with the lock taken out). Spawned
    processes: a fork of a process that has run torch can hang."""
    from boundbench.audit import run_audit

    out = tmp_path / "out"
    run_audit(out_dir=out, only=["fu.lemma-a.1.3"], progress=False)  # a report to merge into
    ctx = mp.get_context("spawn")
    a = ctx.Process(target=_partial_audit, args=(out, "fu.lemma-a.1.2", str(tmp_path), "a"))
    a.start()
    t0 = time.time()
    while not (tmp_path / "a-has-read").exists() and time.time() - t0 < 120:
        time.sleep(0.1)
    assert (tmp_path / "a-has-read").exists(), "the first audit never reached its merge"
    b = ctx.Process(target=_partial_audit, args=(out, "ad.gelu-lipschitz", str(tmp_path), "b"))
    b.start()
    for p in (a, b):
        p.join(300)
        assert p.exitcode == 0
    assert (tmp_path / "b-at-lock").exists(), "the second audit never reached the report lock"
    ids = {c["id"] for c in json.loads((out / "audit.json").read_text())["claims"]}
    assert {"fu.lemma-a.1.3", "fu.lemma-a.1.2", "ad.gelu-lipschitz"} <= ids


def test_a_malformed_report_is_set_aside_before_any_work_is_lost(tmp_path):
    from boundbench.audit import run_audit

    out = tmp_path / "out"
    out.mkdir()
    (out / "audit.json").write_text(json.dumps({"meta": {}, "claims": [{"id": "x"}]}))
    with pytest.warns(UserWarning, match="is not one this version reads: meta.created"):
        rep = run_audit(out_dir=out, only=["fu.lemma-a.1.2"], progress=False)
    assert [c["id"] for c in rep["claims"]] == ["fu.lemma-a.1.2"]


def test_a_cached_table_with_other_columns_is_set_aside_and_recomputed(tmp_path):
    """Issue 41: a hash-valid table whose columns were changed (its sidecar recomputed) failed
    its claim with an AttributeError; its schema is now checked against the one recorded."""
    from boundbench.framework.files.atomic import write_verified

    ctx = claims.CheckContext(out_dir=tmp_path)
    first = ctx.cached("t", {"a": 1}, lambda: pd.DataFrame({"lhs": [1.0], "rhs": [2.0]}))
    (path,) = (tmp_path / ".cache").glob("t-*.parquet")
    write_verified(path, lambda t: pd.DataFrame({"other": ["x"]}).to_parquet(t, index=False))
    fresh = claims.CheckContext(out_dir=tmp_path)
    with pytest.warns(UserWarning, match=r"missing \['lhs', 'rhs'\], extra \['other'\]"):
        again = fresh.cached("t", {"a": 1}, lambda: pd.DataFrame({"lhs": [1.0], "rhs": [2.0]}))
    assert again.equals(first)


def test_files_written_together_replace_none_when_one_fails(tmp_path, monkeypatch):
    """Issue 84: the reports of one audit are replaced together or not at all; a full disk
    halfway names the file asked for and leaves every old file as it was, and no temporary."""
    import errno
    from pathlib import Path

    from boundbench.framework.files.atomic import write_together

    a, b = tmp_path / "audit.md", tmp_path / "audit.html"
    a.write_text("old md")
    b.write_text("old html")
    real = Path.write_text
    calls = []

    def full_disk(self, text, *args, **kwargs):
        calls.append(self)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError) as exc:
        write_together({a: "new md", b: "new html"})
    monkeypatch.undo()
    assert exc.value.filename == str(b) and exc.value.errno == errno.ENOSPC
    assert (a.read_text(), b.read_text()) == ("old md", "old html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.html", "audit.md"]
    write_together({a: "new md", b: "new html"})
    assert (a.read_text(), b.read_text()) == ("new md", "new html")
    with pytest.raises(ValueError, match="one folder"):
        write_together({a: "x", tmp_path / "sub" / "y.md": "y"})
