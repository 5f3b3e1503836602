"""Crash-safety drill: SIGKILL ``boundbench figures --only ...`` at random times, then finish
the run, and check what the kills left behind.

Counts: kills, files present after the kills, files a rerun could not read (should be 0; a bad
cache entry is detected by its hash and set aside, which is counted separately), leftover
temporary files (hidden ``.*.tmp*``, never read), and whether the final tables equal those of
an uninterrupted run in a fresh folder.

    python benchmarks/kill_loop.py [--kills 20] [--only fu.lemma-a.2.5 fu.cor2.5] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

DEFAULT = ["fu.lemma-a.2.4", "fu.lemma-a.2.5", "fu.cor2.5", "fu.thm2.4.second-term"]


def _figures(out: Path, only: list[str], *, force: bool = False) -> subprocess.Popen:
    # --force during the kills: every run recomputes and rewrites its tables, so the kills
    # land in writes, not only in reads of a finished cache
    return subprocess.Popen([sys.executable, "-m", "boundbench.cli", "figures", "--only", *only,
                             "--out", str(out), *(["--force"] if force else [])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _readable(path: Path) -> bool:
    try:
        if path.suffix == ".parquet":
            pd.read_parquet(path)
        elif path.suffix == ".csv":
            pd.read_csv(path)
        elif path.suffix in (".json",):
            json.loads(path.read_text())
        elif path.suffix == ".png":
            return path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        return True
    except Exception:  # noqa: BLE001 - any failure to read is what is counted
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--only", nargs="+", default=DEFAULT)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="killloop-"))
    ref, out = root / "reference", root / "killed"

    t0 = time.perf_counter()
    p = _figures(ref, args.only)
    p.wait()
    full = time.perf_counter() - t0
    print(f"uninterrupted run: {full:.1f} s, rc {p.returncode}")

    kills = 0
    for _ in range(args.kills):
        p = _figures(out, args.only, force=True)
        time.sleep(rnd.uniform(0.3 * full, full))  # past the imports, into the work
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            kills += 1
        p.wait()
    files = [f for f in out.rglob("*") if f.is_file()]
    tmp = [f for f in files if ".tmp" in f.name]
    bad_before = [f for f in files if f not in tmp and ".bad-" not in f.name
                  and not f.name.endswith((".lock", ".sha256")) and not _readable(f)]
    print(f"{kills} kills; {len(files)} files after them, {len(tmp)} leftover temporaries, "
          f"{len(bad_before)} unreadable: {[f.name for f in bad_before]}")

    p = _figures(out, args.only)
    _, err = p.communicate()
    set_aside = sorted(f.name for f in out.rglob("*.bad-*"))
    print(f"rerun: rc {p.returncode}; entries set aside by their hash check: {len(set_aside)}"
          + (f" {set_aside}" if set_aside else ""))
    same = []
    for cid in args.only:
        a = pd.read_csv(ref / f"{cid}.csv")
        b = pd.read_csv(out / f"{cid}.csv")
        same.append(a.equals(b))
        ja = json.loads((ref / f"{cid}.json").read_text())
        jb = json.loads((out / f"{cid}.json").read_text())
        same.append(ja["config"] == jb["config"])
    print(f"tables and configs identical to the uninterrupted run: {all(same)} "
          f"({sum(same)}/{len(same)})")
    print(f"folder: {root}")


if __name__ == "__main__":
    main()
