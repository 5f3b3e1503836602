"""Interrupt drill (issue 65): the issue's double Ctrl-C, a terminal's double Ctrl-C (to the
process group), a single Ctrl-C and a ``kill -9``, each ``--tries`` times on a run whose two
pool workers are computing, with counts of the tries that exited in time, in one line, with no
worker left alive.

    python benchmarks/ctrl_c_drill.py [--tries 10] [--kinds double group single kill]

Pass: every count equals the tries. Run it under load (e.g. beside the test suite) as well: the
CI machine is where two of the tests once timed out.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLAIMS = ["fu.fig5.heads", "fu.fig7.margin", "fu.fig9.bound"]


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _start(out: Path, command: str) -> tuple[subprocess.Popen, list[int]]:
    # faulthandler: a run that hangs is sent SIGABRT and prints every thread's stack
    env = {**os.environ, "BOUNDBENCH_PLUGINS": "none", "PYTHONFAULTHANDLER": "1"}
    p = subprocess.Popen([sys.executable, "-c", "import sys; from boundbench._entry import run;"
                          " sys.exit(run())", command, "--scale", "quick", "--only", *CLAIMS,
                          "--out", str(out), "--processes", "2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(workers) < 2 and p.poll() is None:
        time.sleep(0.5)
        workers = [c for c in _children(p.pid)
                   if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    time.sleep(5)  # the workers import and start their claims
    return p, workers


def one(kind: str, out: Path) -> dict[str, object]:
    p, workers = _start(out, "figures" if kind == "kill" else "audit")
    if p.poll() is not None or len(workers) < 2:
        p.kill()
        return {"started": False}
    t0 = time.monotonic()
    if kind == "kill":
        p.kill()
        p.wait()
        time.sleep(10)
        return {"started": True, "in_time": True, "one_line": True,
                "no_worker": not [w for w in workers if _alive(w)]}
    send = (lambda: os.killpg(p.pid, signal.SIGINT)) if kind == "group" else \
        (lambda: p.send_signal(signal.SIGINT))
    send()
    if kind != "single":
        time.sleep(0.3)
        send()
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        for pid in [p.pid, *_children(p.pid)]:
            os.kill(pid, signal.SIGABRT)
        _, err = p.communicate(timeout=30)
        os.killpg(p.pid, signal.SIGKILL)
        return {"started": True, "in_time": False, "one_line": False, "no_worker": False,
                "stacks": err[-6000:]}
    took = time.monotonic() - t0
    time.sleep(1)
    lines = [ln for ln in err.splitlines() if ln.strip() and "audit:" not in ln]
    return {"started": True, "in_time": took < 10, "seconds": round(took, 1),
            "one_line": len(lines) == 1 and "interrupted" in lines[0] and p.returncode == 130,
            "no_worker": not [w for w in workers if _alive(w)], "stderr": err[-300:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--kinds", nargs="+", default=["double", "group", "single", "kill"],
                    choices=["double", "group", "single", "kill"])
    args = ap.parse_args()
    for kind in args.kinds:
        rows = []
        for i in range(args.tries):
            with tempfile.TemporaryDirectory() as d:
                r = one(kind, Path(d) / "D")
            rows.append(r)
            if not all(r.get(k, True) for k in ("in_time", "one_line", "no_worker")):
                stacks = r.pop("stacks", "")
                print(f"  {kind} try {i}: {r}", flush=True)
                if stacks:
                    print(f"  its threads when it hung:\n{stacks}", flush=True)
        started = [r for r in rows if r["started"]]
        counts = {k: sum(bool(r[k]) for r in started) for k in ("in_time", "one_line",
                                                                 "no_worker")}
        secs = [r["seconds"] for r in started if "seconds" in r]
        print(f"{kind}: {len(started)} of {len(rows)} tries reached the workers; exited within"
              f" 10 s {counts['in_time']}, one line {counts['one_line']}, no worker left "
              f"{counts['no_worker']}" + (f"; seconds to exit max {max(secs)}" if secs else ""),
              flush=True)


if __name__ == "__main__":
    main()
